/* engine_broker: a broker that does not answer a step. The watch, which
 * outlives it, goes on; any other step that failed because the broker went
 * silent or away during its run is run again, from what it last recorded
 * (as after a restart), with backoff, until the broker answers or a budget
 * is spent. A broker restarted, paused for a garbage collection or cut
 * off for a minute is a hold that time resolves, not a failure an
 * operator must retry. */
#include <stdio.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"
#include "step_kinds.h"

/* A step whose broker has not answered it for this long fails, as a
 * database busy for as long does: past it, a person has to look. */
#define BROKER_BUDGET_MS	(10 * 60 * 1000)
#define BROKER_BACKOFF_MIN_MS	1000
#define BROKER_BACKOFF_MAX_MS	30000

void
engine__broker_unreachable(struct run *r, const char *message)
{
	int64_t alert = 0;
	bool raised = false;
	char why[512];

	r->broker_alert_check = true;
	if (store_alert_raise(r->s, r->id, "broker_unreachable", message,
	    clock_now_ms(), &alert, &raised, why, sizeof(why)) != 0 || !raised)
		return;
	engine__event(r, ACTOR, "alert.raised", json_pack("{s:s,s:s,s:I}", "alert",
	    "broker_unreachable", "message", message, "alert_id", (json_int_t)alert));
	log_event("warn", r->plan->name, NULL, "alert broker_unreachable raised "
	    "(id %lld): %s; it closes once the broker answers a step again",
	    (long long)alert, message);
}

/* Records that step IDX runs again after ERROR: the events its run RESULT
 * handed over and step.broker_retry, in one transaction. Returns 0 or -1. */
static int
record_retry(struct run *r, int idx, const json_t *result, const char *error,
    int64_t silent_ms)
{
	if (store_begin(r->s, r->err, r->errlen) != 0)
		return -1;
	if (engine__record_step_events(r, idx, result, false) != 0 ||
	    engine__event(r, ACTOR, "step.broker_retry", json_pack("{s:i,s:s,s:s,s:I,s:i,s:i}",
	    "step", idx + 1, "kind", plan_step_kind_name(r->plan->steps[idx].kind),
	    "error", error, "silent_ms", (json_int_t)silent_ms, "next_in_ms",
	    r->broker_wait_ms, "budget_ms", BROKER_BUDGET_MS)) != 0 ||
	    store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		return -1;
	}
	return 0;
}

int
engine__broker_retry(struct run *r, int idx, const json_t *result)
{
	int64_t now = clock_mono_ms();
	char error[1024];

	if (!r->broker_lost)
		return 0;
	snprintf(error, sizeof(error), "%s", r->err);
	if (r->broker_since_ms == 0) {
		r->broker_since_ms = now;
		r->broker_wait_ms = BROKER_BACKOFF_MIN_MS;
	} else if (now - r->broker_since_ms > BROKER_BUDGET_MS) {
		snprintf(r->err, r->errlen, "%s (the broker has not answered the step "
		    "for %d s of tries)", error, BROKER_BUDGET_MS / 1000);
		r->broker_since_ms = 0;
		return 0;
	} else if ((r->broker_wait_ms *= 2) > BROKER_BACKOFF_MAX_MS)
		r->broker_wait_ms = BROKER_BACKOFF_MAX_MS;
	engine__broker_unreachable(r, error);
	/* The next run starts on new connections, as after a restart. */
	if (record_retry(r, idx, result, error, now - r->broker_since_ms) != 0)
		return -1;
	step_ctx_close(&r->ctx);
	r->ctx_step = -1;
	log_event("warn", r->plan->name, plan_step_kind_name(r->plan->steps[idx].kind),
	    "%s; the broker did not answer: the step runs again from where it was "
	    "in %d ms (unanswered for %lld s; it fails after %d s)", error,
	    r->broker_wait_ms, (long long)((now - r->broker_since_ms) / 1000),
	    BROKER_BUDGET_MS / 1000);
	r->due_ms = now + r->broker_wait_ms;
	return 1;
}

void
engine__broker_answered(struct run *r, int idx)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);

	r->broker_since_ms = 0;
	/* The watch follows the alert itself, tick by tick. */
	if (r->broker_lost || !r->broker_alert_check || sk == NULL ||
	    !(sk->flags & STEP_KIND_BROKER) || (sk->flags & STEP_KIND_OUTLIVES_BROKER))
		return;
	r->broker_alert_check = false;
	engine__alert_close(r->s, r->id, r->plan->name, "broker_unreachable",
	    "the broker answers the steps again");
}
