/* genalerts: docs/alerts.md, from the alert kinds' table
 * (orchestrator/base/alert_kinds.def), so that the page people read and
 * the alerts the engine raises cannot differ. Writes the Markdown to
 * stdout; `build/genalerts > docs/alerts.md` after a change to the table,
 * and docs.alerts (tests/cli/test_alerts_doc.sh) fails until then. */
#include <stdio.h>

#include "alert_kinds.h"

/* Short words for the CLOSES column of the summary table. */
static const char *const closes_short[] = {
	[ALERT_CLOSES_NEVER] = "no: a person acknowledges it",
	[ALERT_CLOSES_SELF] = "yes",
	[ALERT_CLOSES_FOLLOWED] = "no: a person acknowledges it; says whether the cause is there",
};

int
main(void)
{
	const struct alert_kind *k;
	size_t i;

	printf("# Alerts\n\n"
	    "<!-- generated from orchestrator/base/alert_kinds.def by packaging/genalerts "
	    "(build/genalerts > docs/alerts.md); edit the table, not this page -->\n\n"
	    "What the engine and the watch raise for a person to see: on the plan's page, "
	    "in `cutover status PLAN`, in the API (`GET /api/plans/ID`, each of `alerts` "
	    "with `means`, `check`, `clear` and `cause_present`) and in the "
	    "notifications. An open alert holds the watch: it does not end while one is "
	    "open. Acknowledge one once understood: `cutover ack PLAN ALERT` (its number, "
	    "or its kind), `POST /api/plans/ID/alerts/ALERT/ack`.\n\n"
	    "An alert whose cause the engine follows says whether the cause is still "
	    "there (`cause_present`). Acknowledged while it is, the alert returns at the "
	    "engine's next look (its `alert.raised` names the one it returns after, "
	    "`returns_after`), and the acknowledgement's answer says so. Once the cause "
	    "is gone, a kind the engine closes closes (`alert.acked` by the engine, "
	    "with the reason); any other records it (`alert.cause_gone`, "
	    "`cause_present` false) and waits for a person's acknowledgement.\n\n"
	    "| kind | closes by itself when the cause goes | means |\n"
	    "|---|---|---|\n");
	for (i = 0; (k = alert_kind_at(i)) != NULL; i++)
		printf("| [`%s`](#%s) | %s | %s |\n", k->name, k->name,
		    closes_short[k->closes], k->means);
	for (i = 0; (k = alert_kind_at(i)) != NULL; i++)
		printf("\n## %s\n\n"
		    "- **Means:** %s.\n"
		    "- **Check:** %s.\n"
		    "- **Clear:** %s.\n"
		    "- **Closes:** %s.\n",
		    k->name, k->means, k->check, k->clear, alert_closes_text(k->closes));
	return 0;
}
