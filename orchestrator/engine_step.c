/* engine_step: runs a step as its row of the step-kind table says (broker
 * connections, inputs, the step) and records what came of it. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"
#include "step_kinds.h"
#include "store_admit.h"

/* The sample of how late each run of a step that runs again (the watch's
 * ticks) began against when it was due, in ms: what shows that one plan
 * of a serve does not hold up another's ticks (bench/fleet reads it). */
#define TICK_LAG_METRIC		"tick.lag_ms"

/* Opens the broker connections for step IDX, reusing them when they were
 * opened for it already (the watch's ticks). Returns 0, or step_ctx_open's
 * failure with ERR. */
static int
open_ctx(struct run *r, int idx)
{
	int rc;

	if (r->ctx_step == idx && r->ctx.amqp != NULL)
		return 0;
	step_ctx_close(&r->ctx);
	r->ctx_step = -1;
	if ((rc = step_ctx_open(&r->ctx, r->plan, r->err, r->errlen)) != 0)
		return rc;
	r->ctx.stop = r->o->stop;
	r->ctx_step = idx;
	return 0;
}

/* The broker cannot be reached for step IDX, which outlives that (the
 * watch): raises broker_unreachable, and the step goes on from STATE
 * (returns 0 with r->ctx.again set), its last result's rows with it. */
static int
step_unreachable(struct run *r, const json_t *state, json_t **result)
{
	char message[1024];

	snprintf(message, sizeof(message), "%s", r->err);
	engine__broker_unreachable(r, message);
	*result = state != NULL ? json_deep_copy(state) : json_object();
	r->ctx.again = true;
	r->ctx.rows_kept = true;
	return 0;
}

/* Runs step IDX once, as its row of the step-kind table says: the broker
 * connections first, then its inputs, then the step (FN, or its run
 * function when NULL). STATE is its last persisted result (borrowed, may
 * be NULL), read from STATE_TEXT (step_state_load; borrowed, NULL when
 * none). Returns what the step returns (0, with r->ctx.again set when
 * it must run again; -1 failed, with r->broker_lost set when the broker
 * went silent or away meanwhile) and its result in *RESULT; the run stays
 * begun in r->ctx (what it hands over, r->ctx.events) until the caller
 * ends it (step_ctx_end_run), after recording what came of it and before
 * freeing STATE. */
int
engine__run_step(struct run *r, int idx, const json_t *state, const char *state_text,
    step_fn fn, json_t **result)
{
	enum plan_step_kind kind = r->plan->steps[idx].kind;
	const struct step_kind *sk = step_kind_of(kind);
	struct step_ctx *c = &r->ctx;
	unsigned long losses = 0;
	int rc = -1, orc;

	*result = NULL;
	r->broker_lost = false;
	step_ctx_end_run(c);
	if (sk == NULL) {
		snprintf(r->err, r->errlen, "unknown step kind %d", (int)kind);
		*result = json_object();
		return -1;
	}
	if ((sk->flags & STEP_KIND_BROKER) && (orc = open_ctx(r, idx)) != 0) {
		if (sk->flags & STEP_KIND_OUTLIVES_BROKER)
			return step_unreachable(r, state, result);
		r->broker_lost = orc == STEP_CTX_UNREACHABLE;
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", r->err);
		return -1;
	}
	if (sk->flags & STEP_KIND_BROKER)
		losses = step_ctx_losses(c);
	step_ctx_begin_run(c, r->plan, r->s, r->id, state);
	if (state != NULL && (sk->flags & STEP_KIND_STATE_ENTRIES)) {
		c->state_text = state_text;
		c->state_idx = idx;
	}
	c->rows_wanted = (sk->flags & STEP_KIND_RESULT_ROWS) != 0;
	c->inputs = step_inputs_of_store(&r->inputs);
	if (sk->prepare != NULL &&
	    (rc = sk->prepare(c, &c->inputs, result, r->err, r->errlen)) == 0)
		/* What the prepare read and let go (remove_old's copy of the
		 * watch's last sample: a tree of about 40 MB at 100,000 old
		 * queues, kept as a table) goes back before the run allocates
		 * its own: else the run's peak is both, as after a run. */
		malloc_trim(0);
	if (sk->prepare == NULL || rc == 0)
		rc = (fn != NULL ? fn : sk->run)(c, result, r->err, r->errlen);
	if (*result == NULL)
		*result = json_object();
	r->broker_lost = rc < 0 && (sk->flags & STEP_KIND_BROKER) &&
	    step_ctx_losses(c) > losses;
	return rc;
}

/* Step IDX failed with r->err and its result RESULT (TEXT as stored):
 * records the step, with the events its run hands over, and the plan as
 * failed. Returns 0, or -1. */
static int
step_failed(struct run *r, int idx, const json_t *result, const char *text)
{
	char error[1024];

	snprintf(error, sizeof(error), "%s", r->err);
	if (engine__transition_ran(r, idx, STEP_STATUS_FAILED, 0, clock_now_ms(), text, error,
	    ACTOR, "step.failed", json_pack("{s:s}", "error", error), result) != 0 ||
	    engine__plan_transition(r, PLAN_STATUS_FAILED, ACTOR, "plan.failed",
	    json_pack("{s:i,s:s}", "step", idx + 1, "error", error)) != 0)
		return -1;
	return 0;
}

/* A step's own word on what it waits for: its result's "status", or its
 * summary's (the watch's), or NULL. */
static const char *
result_status(const json_t *result)
{
	const json_t *st = json_object_get(result, "status");

	if (!json_is_string(st))
		st = json_object_get(json_object_get(result, "summary"), "status");
	return json_string_value(st);
}

/* Logs what step IDX waits for when that changed since STATE (its last
 * result): `cutover run` on a terminal then says why nothing moves (an
 * open alert, the deadline, queues that wait), as the page does. */
static void
log_waiting(struct run *r, int idx, const json_t *state, const json_t *result)
{
	const char *now = result_status(result), *before = result_status(state);

	if (now == NULL || strncmp(now, "waiting", 7) != 0 ||
	    (before != NULL && strcmp(now, before) == 0))
		return;
	log_event("info", r->plan->name, plan_step_kind_name(r->plan->steps[idx].kind),
	    "%s", now);
}

/* Step IDX runs again later: its result TEXT is stored as its state,
 * with the rows (r->ctx.rows) and the events its run (RESULT) handed
 * over and, when LAG_MS >= 0, how late this run began against when it
 * was due (TICK_LAG_METRIC at STARTED_MS, wall clock), in the same
 * transaction. Returns 0 or -1. */
static int
step_continues(struct run *r, int idx, const json_t *result, const char *text,
    int64_t lag_ms, int64_t started_ms)
{
	struct step_rows *rows = &r->ctx.rows;

	if (r->ctx.events.n == 0 && lag_ms < 0)
		return store_step_update_rows(r->s, r->id, idx, NULL, 0, 0, text, NULL,
		    step_rows_source(rows, r->ctx.rows_kept), rows, rows->n, r->err,
		    r->errlen);
	if (store_begin(r->s, r->err, r->errlen) != 0)
		return -1;
	if (store_step_update_rows(r->s, r->id, idx, NULL, 0, 0, text, NULL,
	    step_rows_source(rows, r->ctx.rows_kept), rows, rows->n, r->err,
	    r->errlen) != 0 ||
	    engine__record_step_events(r, idx, result, false) != 0 ||
	    (lag_ms >= 0 && store_sample_insert(r->s, r->id, started_ms, TICK_LAG_METRIC,
	    "", (double)lag_ms, r->err, r->errlen) != 0) ||
	    store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		return -1;
	}
	return 0;
}

/* Step IDX is running: starts it, resumes it after a restart from its
 * persisted state STATE_TEXT (or NULL), or continues the watch; then
 * records what came of it and ends the run. Returns 0, or -1. */
int
engine__step_advance(struct run *r, int idx, const char *state_text)
{
	json_t *state = NULL, *result = NULL;
	char *text = NULL;
	int64_t started_ms = clock_now_ms(), lag_ms = -1;
	int rc = -1, sr, br;

	/* Due only when this step's last run asked to run again: not on its
	 * first run, nor on the first after serve started. */
	if (r->tick_due_ms > 0 && r->tick_step == idx) {
		lag_ms = clock_mono_ms() - r->tick_due_ms;
		if (lag_ms < 0)
			lag_ms = 0;
	}
	if (state_text != NULL)
		state = step_state_load(r->plan->steps[idx].kind, state_text);
	sr = engine__run_step(r, idx, state, state_text, NULL, &result);
	if (sr < 0 && r->ctx.stopped) {
		/* Given up for the stop: recorded as a kill there would be,
		 * that is not at all; it resumes at the next start. */
		log_event("info", r->plan->name, plan_step_kind_name(r->plan->steps[idx].kind),
		    "%s", r->err);
		rc = 0;
		goto done;
	}
	log_waiting(r, idx, state, result);
	if (sr < 0 && engine__busy_retry(r, plan_step_kind_name(r->plan->steps[idx].kind))) {
		/* Not the step's failure: it runs again from its last state, and
		 * its lag is still counted from when it was due. */
		rc = 0;
		goto done;
	}
	if (sr < 0 && (br = engine__broker_retry(r, idx, result)) != 0) {
		/* Not the step's failure either: the broker's silence, which
		 * time may end. */
		rc = br > 0 ? 0 : -1;
		goto done;
	}
	engine__broker_answered(r, idx);
	r->tick_due_ms = 0;
	/* What the run read is not needed to record what came of it: its
	 * inputs and its last state go before its result is written out as
	 * text (at 100,000 old queues, remove_old's last result and the
	 * watch's are hundreds of megabytes of trees beside its own). */
	step_ctx_drop_inputs(&r->ctx);
	json_decref(state);
	state = NULL;
	text = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (sr == 0 && r->ctx.again) {
		if (step_continues(r, idx, result, text, lag_ms, started_ms) != 0)
			goto done;
		r->due_ms = clock_mono_ms() + (r->ctx.again_after_ms > r->plan->watch.interval_ms ?
		    r->ctx.again_after_ms : r->plan->watch.interval_ms);
		r->tick_due_ms = r->due_ms;
		r->tick_step = idx;
		rc = 0;
		goto done;
	}
	if (sr == 0)
		rc = engine__transition_ran(r, idx, STEP_STATUS_SUCCEEDED, 0, clock_now_ms(), text,
		    NULL, ACTOR, "step.succeeded", NULL, result);
	else
		rc = step_failed(r, idx, result, text);
done:
	step_ctx_end_run(&r->ctx);
	free(text);
	json_decref(result);
	json_decref(state);
	/* What the run left free goes back to the system: a step over
	 * 10,000 old queues allocates tens of megabytes of trees for a
	 * moment, and malloc would keep them as the start of every later
	 * step's peak (under a millisecond, as web/server.c's trim). */
	malloc_trim(0);
	return rc;
}
