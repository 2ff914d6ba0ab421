/* store_admit_command: the rules an operator command must meet against the
 * state it finds (approve, retry, abort, ack), shared by the API, the CLI
 * and the engine, and the recording of a command that meets them
 * (store_admit.h). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "store_admit.h"

/* store_each_alert callback: clears *ARG when the alert is the one sought. */
static int
alert_is(const struct store_alert *a, void *arg)
{
	int64_t *want = arg;

	if (a->id == *want) {
		*want = 0;
		return 1;
	}
	return 0;
}

/* store_each_alert callback: sets *ARG when the alert is an open
 * plan_cannot_run. */
static int
alert_cannot_run(const struct store_alert *a, void *arg)
{
	bool *found = arg;

	*found = strcmp(a->kind, STORE_ALERT_CANNOT_RUN) == 0;
	return *found;
}

/* What each operator command needs of the state it finds: the plan's
 * status, and the step's (approve, retry) or an open alert (ack). */
struct command_rule {
	const char *kind;
	const char *plan_ok[2];        /* the plan statuses it applies to; NULL: any */
	const char *plan_desc;         /* ... said as "needs it PLAN_DESC" */
	const char *step_want;         /* the step status it needs, or NULL */
	const char *step_ahead;        /* ... or this one, when the step is gated:
	                                * the command given ahead of time */
	const char *step_desc;
	int alert;                     /* needs an open alert */
};

static const struct command_rule command_rules[] = {
	{ "approve", { "running", NULL }, "running", "waiting_approval", "pending",
	    "waiting for approval (or a gated step not reached yet, approved ahead)",
	    0 },
	{ "retry", { "failed", NULL }, "failed", "failed", NULL, "failed", 0 },
	{ "abort", { "running", "failed" }, "running or failed", NULL, NULL, NULL, 0 },
	{ "ack", { NULL, NULL }, NULL, NULL, NULL, NULL, 1 },
};

static const struct command_rule *
command_rule(const char *kind)
{
	for (size_t i = 0; i < sizeof(command_rules) / sizeof(command_rules[0]); i++)
		if (strcmp(command_rules[i].kind, kind) == 0)
			return &command_rules[i];
	return NULL;
}

int
store_command_refusal(struct store *s, const struct store_plan *p, const char *kind,
    int step_idx, int64_t alert_id, char *why, size_t whylen, char *err, size_t errlen)
{
	const struct command_rule *cr = command_rule(kind);
	struct store_step st = { 0 };
	int64_t want = alert_id;
	bool cannot_run = false;
	int r;

	if (cr == NULL) {
		snprintf(why, whylen, "unknown command '%s'", kind);
		return STORE_REFUSED;
	}
	/* No engine would ever answer it: said now, not left waiting. */
	if (store_each_alert(s, p->id, 1, alert_cannot_run, &cannot_run, err, errlen) < 0)
		return -1;
	if (cannot_run) {
		snprintf(why, whylen, "plan '%s' cannot run: the plan it stored no longer "
		    "loads (its %s alert says why); %s", p->name, STORE_ALERT_CANNOT_RUN,
		    STORE_CANNOT_RUN_ACTION);
		return STORE_REFUSED;
	}
	if (cr->plan_ok[0] != NULL && strcmp(p->status, cr->plan_ok[0]) != 0 &&
	    (cr->plan_ok[1] == NULL || strcmp(p->status, cr->plan_ok[1]) != 0)) {
		snprintf(why, whylen, "plan '%s' is %s; %s needs it %s", p->name, p->status,
		    kind, cr->plan_desc);
		return STORE_REFUSED;
	}
	if (cr->step_want != NULL) {
		if ((r = store_step_get(s, p->id, step_idx, &st, err, errlen)) != 0 &&
		    r != STORE_NOT_FOUND)
			return -1;
		if (r == STORE_NOT_FOUND || step_idx < 0) {
			snprintf(why, whylen, "plan '%s' has no step %d", p->name, step_idx + 1);
			return STORE_REFUSED;
		}
		r = strcmp(st.status, cr->step_want) != 0 && !(cr->step_ahead != NULL &&
		    st.gate && strcmp(st.status, cr->step_ahead) == 0);
		if (r && cr->step_ahead != NULL && strcmp(st.status, cr->step_ahead) == 0)
			snprintf(why, whylen, "step %d (%s) of plan '%s' has no gate: "
			    "there is nothing to approve", step_idx + 1, st.kind, p->name);
		else if (r)
			snprintf(why, whylen, "step %d (%s) of plan '%s' is %s, not %s",
			    step_idx + 1, st.kind, p->name, st.status, cr->step_desc);
		store_step_clear(&st);
		return r ? STORE_REFUSED : 0;
	}
	if (cr->alert) {
		if (store_each_alert(s, p->id, 1, alert_is, &want, err, errlen) < 0)
			return -1;
		if (want != 0) {
			snprintf(why, whylen, "plan '%s' has no open alert %lld", p->name,
			    (long long)alert_id);
			return STORE_REFUSED;
		}
	}
	return 0;
}

int
store_command_record(struct store *s, int64_t plan_id, const char *kind, int step_idx,
    int64_t alert_id, const char *actor, const char *comment, int64_t *id, char *err,
    size_t errlen)
{
	struct store_plan p;
	int r;

	if ((r = store_plan_get(s, plan_id, &p, err, errlen)) != 0) {
		if (r == STORE_NOT_FOUND)
			snprintf(err, errlen, "no plan %lld", (long long)plan_id);
		return r == STORE_NOT_FOUND ? STORE_REFUSED : -1;
	}
	if ((r = store_command_refusal(s, &p, kind, step_idx, alert_id, err, errlen, err,
	    errlen)) != 0)
		return r;
	return store_command_insert(s, plan_id, kind, step_idx, alert_id, actor, comment,
	    clock_now_ms(), id, err, errlen);
}
