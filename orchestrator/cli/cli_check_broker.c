/* cli_check_broker: `cutover check --broker` — after a plan passes check,
 * contacts its broker (and its target, when it names one) read-only
 * through the management API and reports each one's RabbitMQ version and
 * whether the feature flags the plan needs are enabled (broker_needs.c);
 * a broker that cannot honour the plan fails the check, naming the
 * missing flag. For a plan that moves old messages
 * it also says whether the broker stamps arrivals, which move_old's
 * `from: arrival` needs (arrival_stamp.c: the one write, a queue of its
 * own for two messages, deleted at once). */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "arrival_stamp.h"
#include "broker_needs.h"
#include "cli.h"
#include "plan.h"
#include "step.h"

#define CHECK_BROKER_TIMEOUT_MS 10000

/* Prints REPORT (needs_check's) of broker section SECTION for a person. */
static void
print_report(const char *section, const json_t *report, FILE *out)
{
	const json_t *row;
	size_t i;

	fprintf(out, "%s: RabbitMQ %s", section, json_string_value(json_object_get(report,
	    "version")));
	if (json_is_string(json_object_get(report, "erlang")))
		fprintf(out, " (Erlang %s)", json_string_value(json_object_get(report,
		    "erlang")));
	fprintf(out, "\n");
	json_array_foreach(json_object_get(report, "needs"), i, row) {
		const char *flag = json_string_value(json_object_get(row, "flag"));
		const char *state = json_string_value(json_object_get(row, "state"));
		const char *ok = json_is_true(json_object_get(row, "ok")) ? "ok" : "MISSING";

		if (flag != NULL)
			fprintf(out, "  %-7s %s: feature flag %s %s\n", ok,
			    json_string_value(json_object_get(row, "need")), flag, state);
		else
			fprintf(out, "  %-7s %s: RabbitMQ %s or later (it is %s)\n", ok,
			    json_string_value(json_object_get(row, "need")),
			    json_string_value(json_object_get(row, "min_version")), state);
	}
}

/* For a plan with a move_old step: asks P's broker whether it stamps
 * arrivals (arrival_stamp.h), into REPORT's "arrival_stamps" ({"state",
 * "meaning"}, or {"error"} when the broker could not be asked: a word, not
 * a failed check, since nothing of the plan's is missing then), and prints
 * it unless JSON. */
static void
arrival_report(const struct plan *p, json_t *report, int json, FILE *out)
{
	enum arrival_stamping st;
	struct broker *b = NULL;
	char why[1024];
	json_t *a;

	if (report == NULL || plan_find_step(p, PLAN_STEP_MOVE_OLD) < 0)
		return;
	if (step_broker_open(&p->broker, CHECK_BROKER_TIMEOUT_MS, &b, why,
	    sizeof(why)) != 0 ||
	    arrival_probe(b, p->name, &st, why, sizeof(why)) != 0) {
		a = json_pack("{s:s}", "error", why);
		if (!json)
			fprintf(out, "  ?       arrival stamps (timestamp_in_ms): not "
			    "known: %s\n", why);
	} else {
		a = json_pack("{s:s,s:s}", "state", arrival_stamping_name(st), "meaning",
		    arrival_stamping_meaning(st));
		if (!json)
			fprintf(out, "  info    arrival stamps (timestamp_in_ms): %s: %s\n",
			    arrival_stamping_name(st), arrival_stamping_meaning(st));
	}
	json_object_set_new(report, "arrival_stamps", a);
	broker_close(b);
}

/* Checks broker B of plan P (its broker or its target; FILE names the
 * plan): *REPORT gets needs_check's report (NULL when the broker could not
 * be asked), ERR the reason it fails. Returns 0 or -1. */
static int
check_one(const char *file, const struct plan *p, const struct plan_broker *b,
    json_t **report, char *err, size_t errlen)
{
	struct broker_url u;
	struct mgmt *m = NULL;
	char why[512];
	int rc = -1;

	*report = NULL;
	if (broker_url_parse(b->amqp, &u, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s: %s.amqp: %s", file, b->section, why);
		goto done;
	}
	if (mgmt_open(b->management, u.vhost, b->username, b->password,
	    CHECK_BROKER_TIMEOUT_MS, &m, why, sizeof(why)) != 0) {
		if (b == &p->target)
			snprintf(err, errlen, "%s: opening the target broker's "
			    "management API: %s", file, why);
		else
			snprintf(err, errlen, "%s: opening the management API: %s",
			    file, why);
		goto done;
	}
	rc = needs_check(m, p, report, why, sizeof(why));
	if (rc != 0 && b == &p->target)
		snprintf(err, errlen, "%s: the target broker: %s", file, why);
	else if (rc != 0)
		snprintf(err, errlen, "%s: %s", file, why);
done:
	mgmt_close(m);
	return rc;
}

/* Sets ENTRY's member KEY to REPORT (or {"ok":false}) with ERR when RC
 * says it failed. */
static void
entry_report(json_t *entry, const char *key, json_t *report, int rc,
    const char *err)
{
	if (entry == NULL)
		return;
	report = report != NULL ? json_incref(report) : json_pack("{s:b}", "ok", 0);
	if (rc != 0)
		json_object_set_new(report, "error", json_string(err));
	json_object_set_new(entry, key, report);
	if (rc != 0)
		json_object_set_new(entry, "valid", json_false());
}

int
cli_check_broker(const char *file, int json, FILE *out, FILE *errout,
    json_t *entry)
{
	struct plan *p = NULL;
	struct plan_errors errs = { 0 };
	json_t *report = NULL, *treport = NULL;
	char err[1024] = "", terr[1024] = "";
	int rc = -1, trc = 0;

	if (plan_load_file(file, &p, &errs) != 0) {
		snprintf(err, sizeof(err), "%s: the plan does not load", file);
		goto done;
	}
	rc = check_one(file, p, &p->broker, &report, err, sizeof(err));
	if (!json && json_is_string(json_object_get(report, "version")))
		print_report("broker", report, out);
	if (json_is_string(json_object_get(report, "version")))
		arrival_report(p, report, json, out);
	if (p->has_target) {
		trc = check_one(file, p, &p->target, &treport, terr, sizeof(terr));
		if (!json && json_is_string(json_object_get(treport, "version")))
			print_report("target", treport, out);
	}
done:
	if (rc != 0 && !json)
		fprintf(errout, "cutover check: %s\n", err);
	if (trc != 0 && !json)
		fprintf(errout, "cutover check: %s\n", terr);
	entry_report(entry, "broker", report, rc, err);
	if (p != NULL && p->has_target)
		entry_report(entry, "target", treport, trc, terr);
	json_decref(report);
	json_decref(treport);
	plan_free(p);
	plan_errors_free(&errs);
	return rc != 0 ? rc : trc;
}
