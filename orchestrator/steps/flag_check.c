/* flag_check: reads the plan's feature flag back while the old path is
 * being retired (every watch tick, and before remove_old deletes
 * anything): one GET, no retry, bounded by a short timeout, so that a flag
 * someone else turned off, or a flag service that does not answer, is seen
 * within one tick and never stalls the watch for long. */
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "flag.h"
#include "step.h"

#define CHECK_CONNECT_TIMEOUT_MS	2000L
#define CHECK_TIMEOUT_MS		5000L

int
step_flag_check(const struct plan *p, char *why, size_t whylen)
{
	struct flag_options o;
	json_t *r = NULL;
	char err[768];
	int state = -1, rc;

	if (!flag_configured(p)) {
		snprintf(why, whylen, "the plan has no flag");
		return STEP_FLAG_ON;
	}
	flag_options_default(&o);
	o.connect_timeout_ms = CHECK_CONNECT_TIMEOUT_MS;
	o.timeout_ms = CHECK_TIMEOUT_MS;
	o.attempts = 1;
	o.budget_ms = CHECK_TIMEOUT_MS;
	rc = flag_read_with(p, &o, &state, &r, err, sizeof(err));
	json_decref(r);
	if (rc != 0) {
		snprintf(why, whylen, "%s", err);
		return STEP_FLAG_UNREADABLE;
	}
	if (state == 1) {
		snprintf(why, whylen, "it reads on");
		return STEP_FLAG_ON;
	}
	if (state == 0) {
		snprintf(why, whylen, "it reads off");
		return STEP_FLAG_OFF;
	}
	snprintf(why, whylen, "it reads neither on nor off");
	return STEP_FLAG_UNREADABLE;
}

const char *
step_flag_describe(const struct plan *p, char *out, size_t outlen)
{
	return flag_describe(p, out, outlen);
}

int
step_flag_require_on(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	char why[800], desc[400];
	int st = step_flag_check(c->plan, why, sizeof(why));

	*result = NULL;
	if (st == STEP_FLAG_ON)
		return 0;
	step_flag_describe(c->plan, desc, sizeof(desc));
	errbuf_set(err, errlen, "remove_old deletes nothing: %s %s, so producers may "
	    "still publish into the old queues; %s and retry this step, or abort "
	    "the plan", desc, st == STEP_FLAG_OFF ? "reads off" :
	    "cannot be read", st == STEP_FLAG_OFF ? "turn it on again" :
	    "make it readable (and on)");
	if (st != STEP_FLAG_OFF && strlen(err) + 4 < errlen)
		snprintf(err + strlen(err), errlen - strlen(err), " (%s)", why);
	*result = json_pack("{s:b,s:s,s:s}", "ok", 0, "flag",
	    st == STEP_FLAG_OFF ? "off" : "unreadable", "error", err);
	return -1;
}
