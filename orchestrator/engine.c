/* engine: the step state machine over the store. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "engine.h"
#include "fault.h"
#include "log.h"
#include "status.h"
#include "step.h"
#include "step_kinds.h"
#include "store_admit.h"

#define ACTOR "engine"

/* A database busy or locked (another connection holding it past the busy
 * timeout) is retried with backoff, the step left where it was; only one
 * that stays so this long fails the step, or the run. */
#define BUSY_BUDGET_MS		(10 * 60 * 1000)
#define BUSY_BACKOFF_MIN_MS	250
#define BUSY_BACKOFF_MAX_MS	5000

/* How often the settle window reads the flag: each read is one bounded
 * GET, and a write landing late is put back within about this long. */
#define SETTLE_READ_MS		1000

struct run {
	struct store *s;
	int64_t id;
	struct plan *plan;
	const struct engine_opts *o;
	struct step_ctx ctx;           /* broker connections, kept across watch ticks */
	int ctx_step;                  /* the step CTX was opened for, or -1 */
	/* The schedule is kept on the monotonic clock (clock_mono_ms): a wall
	 * clock stepped back an hour must not hold every step for that hour,
	 * nor one stepped forward fire them early. Times recorded and shown
	 * stay wall-clock (clock_now_ms). */
	int64_t due_ms;                /* mono: when the state machine next has work */
	int64_t busy_since_ms;         /* mono: first of consecutive busy failures, or 0 */
	int busy_wait_ms;              /* the backoff after the latest one */
	int busy_now;                  /* this turn ended in a busy retry */
	bool disk_full;                /* held: the database's disk is full */
	int64_t preview_due_ms;        /* mono: when the waiting gate's preview is due */
	int64_t settle_due_ms;         /* mono: when the settle window is next looked at */
	bool settle_open;              /* it was open at the last look */
	bool settle_open_seen;         /* it has been open in this run */
	bool ended_at_open;            /* the plan had ended when the run began */
	char *err;
	size_t errlen;
};

const char *
engine_outcome_name(enum engine_outcome o)
{
	switch (o) {
	case ENGINE_SUCCEEDED: return "succeeded";
	case ENGINE_FAILED: return "failed";
	case ENGINE_ABORTED: return "aborted";
	case ENGINE_WAITING: return "waiting for approval";
	case ENGINE_STOPPED: return "stopped";
	case ENGINE_DISK_FULL: return "stopped: the database's disk is full";
	}
	return "?";
}

static int
stopping(const struct run *r)
{
	return r->o->stop != NULL && *r->o->stop;
}

/* Appends an event with DETAILS (stolen; NULL: {}). Returns 0 or -1. */
static int
event(struct run *r, const char *actor, const char *kind, json_t *details)
{
	char *text = NULL;
	int rc;

	if (details != NULL)
		text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	rc = store_append_event(r->s, r->id, clock_now_ms(), actor, kind,
	    text != NULL ? text : "{}", NULL, r->err, r->errlen);
	free(text);
	json_decref(details);
	return rc;
}

/* Records, inside the open transaction, the events step IDX's run handed
 * over (r->ctx.events), after adding those its kind's EVENTS hook finds in
 * RESULT (the run's result) when the step has ENDED. Returns 0 or -1. */
static int
record_step_events(struct run *r, int idx, const json_t *result, bool ended)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);
	const struct step_events *ev = &r->ctx.events;

	if (ended && sk != NULL && sk->events != NULL &&
	    sk->events(&r->ctx, result, r->err, r->errlen) != 0)
		return -1;
	for (size_t i = 0; i < ev->n; i++)
		if (event(r, ACTOR, ev->v[i].kind, json_incref(ev->v[i].details)) != 0)
			return -1;
	return 0;
}

/* Sets step IDX's status (times, result, error as store_step_update) and
 * appends event KIND with DETAILS, in one transaction; with RAN (the
 * result of the run of the step that ended it, or NULL), the events that
 * run hands over are recorded in that same transaction, before KIND.
 * Returns 0 or -1. */
static int
transition_ran(struct run *r, int idx, enum step_status status, int64_t started,
    int64_t ended, const char *result, const char *error, const char *actor,
    const char *kind, json_t *details, const json_t *ran)
{
	const struct plan_step *ps = &r->plan->steps[idx];

	if (details == NULL)
		details = json_object();
	json_object_set_new(details, "step", json_integer(idx + 1));
	json_object_set_new(details, "kind", json_string(plan_step_kind_name(ps->kind)));
	if (store_begin(r->s, r->err, r->errlen) != 0) {
		json_decref(details);
		return -1;
	}
	if (store_step_update(r->s, r->id, idx, step_status_name(status), started, ended,
	    result, error, r->err, r->errlen) != 0 ||
	    (ran != NULL && record_step_events(r, idx, ran, true) != 0)) {
		json_decref(details);
		store_rollback(r->s);
		return -1;
	}
	if (event(r, actor, kind, details) != 0) {
		store_rollback(r->s);
		return -1;
	}
	if (store_commit(r->s, r->err, r->errlen) != 0)
		return -1;
	log_event(status == STEP_STATUS_FAILED ? "error" : "info", r->plan->name,
	    plan_step_kind_name(ps->kind), "%s%s%s", kind, error ? ": " : "",
	    error ? error : "");
	return 0;
}

/* transition_ran for a transition no run of the step made. */
static int
transition(struct run *r, int idx, enum step_status status, int64_t started,
    int64_t ended,
    const char *result, const char *error, const char *actor, const char *kind,
    json_t *details)
{
	return transition_ran(r, idx, status, started, ended, result, error, actor,
	    kind, details, NULL);
}

/* Sets the plan's status and appends event KIND, in one transaction. */
static int
plan_transition(struct run *r, enum plan_status status, const char *actor,
    const char *kind, json_t *details)
{
	if (store_begin(r->s, r->err, r->errlen) != 0) {
		json_decref(details);
		return -1;
	}
	if (store_plan_set_status(r->s, r->id, plan_status_name(status), r->err,
	    r->errlen) != 0 || event(r, actor, kind, details) != 0) {
		store_rollback(r->s);
		return -1;
	}
	if (store_commit(r->s, r->err, r->errlen) != 0)
		return -1;
	log_event("info", r->plan->name, NULL, "%s", kind);
	return 0;
}

int
engine_find_plan(struct store *s, const char *ref, struct store_plan *out, char *err,
    size_t errlen)
{
	char *end;
	long long id;

	if (*ref >= '0' && *ref <= '9') {
		id = strtoll(ref, &end, 10);
		if (*end == '\0')
			return store_plan_get(s, id, out, err, errlen);
	}
	return store_plan_find(s, ref, out, err, errlen);
}

/* The persisted result of the plan's step of KIND (a new reference), or
 * NULL; *ENDED_MS gets when that step ended (0: it has not). */
static json_t *
step_result(struct run *r, enum plan_step_kind kind, int64_t *ended_ms)
{
	struct store_step st;
	json_t *j = NULL;
	int idx = plan_find_step(r->plan, kind);

	*ended_ms = 0;
	if (idx < 0 || store_step_get(r->s, r->id, idx, &st, r->err, r->errlen) != 0)
		return NULL;
	if (st.result_json != NULL)
		j = json_loads(st.result_json, 0, NULL);
	*ended_ms = st.ended_ms;
	store_step_clear(&st);
	return j;
}

/* Opens the broker connections for step IDX, reusing them when they were
 * opened for it already (the watch's ticks). Returns 0 or -1 with ERR. */
static int
open_ctx(struct run *r, int idx)
{
	if (r->ctx_step == idx && r->ctx.amqp != NULL)
		return 0;
	step_ctx_close(&r->ctx);
	r->ctx_step = -1;
	if (step_ctx_open(&r->ctx, r->plan, r->err, r->errlen) != 0)
		return -1;
	r->ctx_step = idx;
	return 0;
}

/* step_inputs' RESULT_OF: the persisted result of R's step of KIND. */
static json_t *
input_of(void *arg, enum plan_step_kind kind)
{
	int64_t ended;

	return step_result(arg, kind, &ended);
}

/* step_inputs' ENDED_OF: when R's step of KIND ended, 0 if it has not. */
static int64_t
input_ended(void *arg, enum plan_step_kind kind)
{
	int64_t ended;

	json_decref(step_result(arg, kind, &ended));
	return ended;
}

/* The broker cannot be reached for step IDX, which outlives that (the
 * watch): raises broker_unreachable, and the step goes on from STATE
 * (returns 0 with r->ctx.again set). */
static int
step_unreachable(struct run *r, const json_t *state, json_t **result)
{
	char message[1024];
	int64_t alert = 0;
	bool raised = false;

	snprintf(message, sizeof(message), "%s", r->err);
	if (store_alert_raise(r->s, r->id, "broker_unreachable", message,
	    clock_now_ms(), &alert, &raised, r->err, r->errlen) == 0 && raised) {
		event(r, ACTOR, "alert.raised", json_pack("{s:s,s:s,s:I}", "alert",
		    "broker_unreachable", "message", message, "alert_id",
		    (json_int_t)alert));
		log_event("warn", r->plan->name, NULL, "alert broker_unreachable raised "
		    "(id %lld): %s; once understood: cutover ack PLAN %lld",
		    (long long)alert, message, (long long)alert);
	}
	*result = state != NULL ? json_deep_copy(state) : json_object();
	r->ctx.again = true;
	return 0;
}

/* Runs step IDX once, as its row of the step-kind table says: the broker
 * connections first, then its inputs, then the step (FN, or its run
 * function when NULL). STATE is its last persisted result (borrowed, may
 * be NULL). Returns what the step returns (0, with r->ctx.again set when
 * it must run again; -1 failed) and its result in *RESULT; the run stays
 * begun in r->ctx (what it hands over, r->ctx.events) until the caller
 * ends it (step_ctx_end_run), after recording what came of it and before
 * freeing STATE. */
static int
run_step_fn(struct run *r, int idx, const json_t *state, step_fn fn, json_t **result)
{
	enum plan_step_kind kind = r->plan->steps[idx].kind;
	const struct step_kind *sk = step_kind_of(kind);
	struct step_ctx *c = &r->ctx;
	int rc = -1;

	*result = NULL;
	step_ctx_end_run(c);
	if (sk == NULL) {
		snprintf(r->err, r->errlen, "unknown step kind %d", (int)kind);
		*result = json_object();
		return -1;
	}
	if ((sk->flags & STEP_KIND_BROKER) && open_ctx(r, idx) != 0) {
		if (sk->flags & STEP_KIND_OUTLIVES_BROKER)
			return step_unreachable(r, state, result);
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", r->err);
		return -1;
	}
	step_ctx_begin_run(c, r->plan, r->s, r->id, state);
	c->inputs = (struct step_inputs){ .result_of = input_of, .ended_of = input_ended,
	    .arg = r };
	if (sk->prepare == NULL ||
	    (rc = sk->prepare(c, &c->inputs, result, r->err, r->errlen)) == 0)
		rc = (fn != NULL ? fn : sk->run)(c, result, r->err, r->errlen);
	if (*result == NULL)
		*result = json_object();
	return rc;
}

/* Step IDX waits at its gate: when its kind has a preview and one is due,
 * runs it — the engine, never the web thread, reads the broker — and
 * stores it as the step's result {"preview": …, "preview_ms",
 * "preview_error"}, so that the page can say what approving it would do
 * now. A preview is due every watch interval, at least 5 s apart and at
 * least 20 times as long as the last one took (at 10,000 old queues the
 * dry run's passive declares take seconds: the broker is not kept busy by
 * a page). Returns 0, or -1 when the store failed. */
static int
preview_gate(struct run *r, int idx)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);
	step_fn fn = sk != NULL ? sk->preview : NULL;
	json_t *res = NULL, *doc;
	char *text;
	int64_t now = clock_now_ms(), t0 = clock_mono_ms(), gap;
	int rc, pr;

	if (fn == NULL || t0 < r->preview_due_ms)
		return 0;
	pr = run_step_fn(r, idx, NULL, fn, &res);
	step_ctx_end_run(&r->ctx);	/* a preview changes nothing: it hands over nothing */
	gap = 20 * (clock_mono_ms() - t0);
	if (gap < r->plan->watch.interval_ms)
		gap = r->plan->watch.interval_ms;
	r->preview_due_ms = clock_mono_ms() + (gap > 5000 ? gap : 5000);
	doc = json_pack("{s:o,s:I,s:o}", "preview", res, "preview_ms", (json_int_t)now,
	    "preview_error", pr == 0 ? json_null() : json_string(r->err));
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	rc = store_step_update(r->s, r->id, idx, NULL, 0, 0, text, NULL, r->err, r->errlen);
	free(text);
	return rc;
}

/* Handles an abort by ACTOR: flips producers back when the flag was
 * turned on and the old queues still exist, then marks the plan aborted.
 * Writes what happened into OUTCOME. Returns 0, -1 when the rollback
 * could not be confirmed (the plan is left as it was), -2 when the store
 * failed (the command stays waiting: the rollback, if confirmed, is read
 * back and not sent again). */
static int
do_abort(struct run *r, const struct store_command *cmd, char *outcome, size_t outlen)
{
	struct store_step rm = { 0 };
	const char *rollback = "not needed: the flag was never turned on";
	int remove_idx = plan_find_step(r->plan, PLAN_STEP_REMOVE_OLD);
	enum step_status rs;
	bool removing = false;
	int rc;
	bool flipped;
	json_t *res = NULL;
	char doubt[512];

	if (remove_idx >= 0 && store_step_get(r->s, r->id, remove_idx, &rm, r->err,
	    r->errlen) == 0) {
		rs = step_status_of(rm.status);
		removing = rs == STEP_STATUS_RUNNING || rs == STEP_STATUS_SUCCEEDED ||
		    rs == STEP_STATUS_FAILED;
	}
	store_step_clear(&rm);
	if (step_flip_is_on(r->s, r->id, &flipped, r->err, r->errlen) != 0)
		return -2;
	if (flipped && removing)
		rollback = "skipped: old queues are being removed, producers stay on the ladder";
	else if (flipped) {
		step_ctx_begin_run(&r->ctx, r->plan, r->s, r->id, NULL);
		rc = step_rollback(&r->ctx, &res, r->err, r->errlen);
		step_ctx_end_run(&r->ctx);
		json_decref(res);
		if (rc == STEP_FLAG_IN_DOUBT) {
			/* Not confirmed, and not a failure: the settle window reads
			 * the flag on after the plan ends and confirms it, or puts
			 * the flag back off. */
			snprintf(doubt, sizeof(doubt), "in doubt: a write to the flag got no "
			    "answer and may still land; the engine reads the flag for "
			    "flag.settle (%lld s) after it and turns it off again if it "
			    "reads on, and records rollback.confirmed when that window ends",
			    (long long)(r->plan->flag.settle_ms / 1000));
			rollback = doubt;
		} else if (rc != 0) {
			snprintf(outcome, outlen, "refused: rolling the flag back failed: %s",
			    r->err);
			return store_transient(r->s) ? -2 : -1;
		} else
			rollback = "confirmed: the flag is off, producers publish to the old path";
	}
	snprintf(outcome, outlen, "aborted; rollback %s", rollback);
	r->settle_due_ms = 0;           /* the window opens now */
	return plan_transition(r, PLAN_STATUS_ABORTED, cmd->actor, "plan.aborted",
	    json_pack("{s:s,s:s,s:I}", "comment", cmd->comment, "rollback", rollback,
	    "settle_ms", (json_int_t)r->plan->flag.settle_ms)) == 0 ? 0 : -2;
}

/* apply_*: what each command does once store_command_refusal let it through.
 * Write what happened into OUTCOME ("done" already). Return 0 when the
 * command was handled, -1 when the store failed. */
static int
apply_abort(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	int rc = do_abort(r, c, outcome, outlen);

	if (rc == -2)
		return -1;
	if (rc != 0)
		return event(r, c->actor, "abort.failed", json_pack("{s:s}", "error", outcome));
	return 0;
}

static int
apply_ack(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	if (store_alert_ack(r->s, r->id, c->alert_id, c->actor, c->comment, clock_now_ms(),
	    r->err, r->errlen) != 0) {
		snprintf(outcome, outlen, "refused: no open alert %lld", (long long)c->alert_id);
		return 0;
	}
	return event(r, c->actor, "alert.acked", json_pack("{s:I,s:s}", "alert",
	    (json_int_t)c->alert_id, "comment", c->comment));
}

/* An approval of a step waiting at its gate starts it; one of a gated
 * step not reached yet is recorded as given ahead (step.approved_ahead)
 * and opens the gate when the plan gets there (ahead_approval). */
static int
apply_approve(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	struct store_step st;
	bool pending;

	if (store_step_get(r->s, r->id, c->step_idx, &st, r->err, r->errlen) != 0)
		return -1;
	pending = step_status_of(st.status) == STEP_STATUS_PENDING;
	store_step_clear(&st);
	if (pending) {
		snprintf(outcome, outlen, "done: approved ahead; the gate opens when the "
		    "plan reaches step %d", c->step_idx + 1);
		return event(r, c->actor, "step.approved_ahead", json_pack("{s:i,s:s,s:s,s:I}",
		    "step", c->step_idx + 1, "kind", plan_step_kind_name(
		    r->plan->steps[c->step_idx].kind), "comment", c->comment, "command",
		    (json_int_t)c->id));
	}
	return transition(r, c->step_idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, c->actor,
	    "step.approved", json_pack("{s:s}", "comment", c->comment));
}

/* The first approval given ahead for step N (1-based), found in the
 * plan's history. */
struct ahead {
	int n;
	int found;
	char actor[65];
	char comment[1001];
	int64_t given_ms;
};

static int
ahead_event(const struct store_event *ev, void *arg)
{
	struct ahead *a = arg;
	json_t *d;

	if (strcmp(ev->kind, "step.approved_ahead") != 0 ||
	    (d = json_loads(ev->details_json, 0, NULL)) == NULL)
		return 0;
	if (json_integer_value(json_object_get(d, "step")) == a->n) {
		a->found = 1;
		snprintf(a->actor, sizeof(a->actor), "%s", ev->actor);
		snprintf(a->comment, sizeof(a->comment), "%s",
		    json_string_value(json_object_get(d, "comment")) ?
		    json_string_value(json_object_get(d, "comment")) : "");
		a->given_ms = ev->ts_ms;
	}
	json_decref(d);
	return a->found;
}

/* Step IDX, gated and pending, is reached: starts it when an operator
 * approved it ahead (step.approved by that operator, "ahead": true),
 * otherwise sets it waiting. Returns 0 or -1. */
static int
reach_gate(struct run *r, int idx)
{
	struct ahead a = { .n = idx + 1 };

	if (store_each_event(r->s, r->id, ahead_event, &a, r->err, r->errlen) != 0)
		return -1;
	if (!a.found)
		return transition(r, idx, STEP_STATUS_WAITING_APPROVAL, 0, 0, NULL, NULL, ACTOR,
		    "step.waiting_approval", NULL);
	return transition(r, idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, a.actor,
	    "step.approved", json_pack("{s:s,s:b,s:I}", "comment", a.comment, "ahead", 1,
	    "given_ms", (json_int_t)a.given_ms));
}

/* A retry starts the step again from its beginning; the operator's
 * command stands for the gate's approval. A kind that keeps its state
 * across a retry (STEP_KIND_KEEPS_STATE: the watch, whose start, last
 * entry into the old path and so deadline must survive) starts from its
 * last result. */
static int
apply_retry(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	struct store_step st;
	const struct step_kind *sk = step_kind_of(r->plan->steps[c->step_idx].kind);
	const char *keep;
	int64_t now = clock_now_ms();

	(void)outcome;
	(void)outlen;
	if (store_step_get(r->s, r->id, c->step_idx, &st, r->err, r->errlen) != 0)
		return -1;
	keep = sk != NULL && (sk->flags & STEP_KIND_KEEPS_STATE) ? st.result_json : NULL;
	if (store_begin(r->s, r->err, r->errlen) != 0 ||
	    store_step_reset(r->s, r->id, c->step_idx, step_status_name(STEP_STATUS_RUNNING),
	    r->err, r->errlen) != 0 ||
	    store_step_update(r->s, r->id, c->step_idx, NULL, now, 0, keep, NULL, r->err,
	    r->errlen) != 0 ||
	    store_plan_set_status(r->s, r->id, plan_status_name(PLAN_STATUS_RUNNING), r->err,
	    r->errlen) != 0 ||
	    event(r, c->actor, "step.retry", json_pack("{s:i,s:s,s:s}", "step",
	    c->step_idx + 1, "kind", st.kind, "comment", c->comment)) != 0 ||
	    store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		store_step_clear(&st);
		return -1;
	}
	log_event("info", r->plan->name, st.kind, "step.retry by %s", c->actor);
	store_step_clear(&st);
	return 0;
}

static const struct {
	const char *kind;
	int (*apply)(struct run *, const struct store_command *, char *, size_t);
} command_apply[] = {
	{ "abort", apply_abort },
	{ "ack", apply_ack },
	{ "approve", apply_approve },
	{ "retry", apply_retry },
};

/* Records that command C was refused because of WHY: the event
 * command.refused and the command marked, in one transaction. */
static int
refuse_command(struct run *r, const struct store_command *c, const char *why)
{
	char outcome[1200];
	json_t *d = json_pack("{s:I,s:s,s:s,s:s}", "command", (json_int_t)c->id, "kind",
	    c->kind, "by", c->actor, "reason", why);

	if (c->step_idx >= 0)
		json_object_set_new(d, "step", json_integer(c->step_idx + 1));
	snprintf(outcome, sizeof(outcome), "refused: %s", why);
	log_event("warn", r->plan->name, NULL, "%s by %s %s", c->kind, c->actor, outcome);
	if (store_begin(r->s, r->err, r->errlen) != 0) {
		json_decref(d);
		return -1;
	}
	if (event(r, ACTOR, "command.refused", d) != 0 ||
	    store_command_done(r->s, c->id, clock_now_ms(), outcome, r->err,
	    r->errlen) != 0 || store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		return -1;
	}
	return 0;
}

/* Acts on every command waiting for this plan, oldest first, each against
 * the state the ones before it left: an abort followed by a retry leaves
 * the plan aborted and the retry refused. Returns 0 or -1 when the store
 * failed. */
static int
handle_commands(struct run *r)
{
	struct store_command c;
	struct store_plan p;
	char outcome[1200], why[512];
	size_t i;
	int got, rf;

	while ((got = store_command_next(r->s, r->id, &c, r->err, r->errlen)) == 0) {
		if (store_plan_get(r->s, r->id, &p, r->err, r->errlen) != 0)
			return -1;
		rf = store_command_refusal(r->s, &p, c.kind, c.step_idx, c.alert_id, why,
		    sizeof(why), r->err, r->errlen);
		if (rf != 0 && rf != STORE_REFUSED)
			return -1;
		for (i = 0; rf == 0 && i < sizeof(command_apply) / sizeof(command_apply[0]) &&
		    strcmp(command_apply[i].kind, c.kind) != 0; i++)
			;
		if (rf == 0 && i == sizeof(command_apply) / sizeof(command_apply[0])) {
			snprintf(why, sizeof(why), "unknown command '%s'", c.kind);
			rf = STORE_REFUSED;
		}
		if (rf == STORE_REFUSED) {
			if (refuse_command(r, &c, why) != 0)
				return -1;
			continue;
		}
		snprintf(outcome, sizeof(outcome), "done");
		if (command_apply[i].apply(r, &c, outcome, sizeof(outcome)) != 0)
			return -1;
		if (strncmp(outcome, "refused", 7) == 0)
			log_event("warn", r->plan->name, NULL, "%s by %s %s", c.kind, c.actor,
			    outcome);
		if (store_command_done(r->s, c.id, clock_now_ms(), outcome, r->err,
		    r->errlen) != 0)
			return -1;
	}
	return got == STORE_NOT_FOUND ? 0 : -1;
}

static int
poll_ms(const struct run *r)
{
	return r->o->poll_ms > 0 ? r->o->poll_ms : 500;
}

/* Says EVENT and TEXT through O's service callback, when there is one. */
static void
service_say(const struct engine_opts *o, const char *event, const char *text)
{
	if (o->service != NULL)
		o->service(o->service_arg, event, text);
}

/* WHAT failed because the disk holding the database is full: nothing was
 * written, so the step holds where it was and runs again when space
 * returns, with no time limit (a person frees space; cutover cannot).
 * Said once, loudly, then retried every BUSY_BACKOFF_MAX_MS. Returns
 * true (the failure is held, not the step's). */
static bool
disk_full_hold(struct run *r, const char *what)
{
	char text[1400];

	if (!r->disk_full) {
		snprintf(text, sizeof(text), "%s: %s: the disk holding the database is "
		    "full; the plan is held where it was and goes on by itself once "
		    "space is freed there (nothing was recorded that did not happen)",
		    what, r->err);
		log_event("error", r->plan->name, NULL, "%s", text);
		service_say(r->o, "disk_full", text);
	}
	r->disk_full = true;
	r->due_ms = clock_mono_ms() + BUSY_BACKOFF_MAX_MS;
	r->busy_now = 1;
	return true;
}

/* After a failure of WHAT: when it was the store busy or locked and has
 * not stayed so for BUSY_BUDGET_MS, schedules the next try (r->due_ms,
 * with backoff) and returns true; otherwise false (a real failure). */
static bool
busy_retry(struct run *r, const char *what)
{
	int64_t now = clock_mono_ms();

	if (!store_transient(r->s))
		return false;
	if (store_disk_full(r->s)) {
		store_transient_clear(r->s);
		return disk_full_hold(r, what);
	}
	store_transient_clear(r->s);
	if (r->busy_since_ms == 0) {
		r->busy_since_ms = now;
		r->busy_wait_ms = BUSY_BACKOFF_MIN_MS;
	} else if (now - r->busy_since_ms > BUSY_BUDGET_MS) {
		log_event("error", r->plan->name, NULL, "%s: the database has been busy for "
		    "%d s: %s", what, BUSY_BUDGET_MS / 1000, r->err);
		r->busy_since_ms = 0;
		return false;
	} else if ((r->busy_wait_ms *= 2) > BUSY_BACKOFF_MAX_MS)
		r->busy_wait_ms = BUSY_BACKOFF_MAX_MS;
	log_event("warn", r->plan->name, NULL, "%s: %s; trying again in %d ms (busy for "
	    "%lld ms)", what, r->err, r->busy_wait_ms, (long long)(now - r->busy_since_ms));
	r->due_ms = now + r->busy_wait_ms;
	r->busy_now = 1;
	return true;
}

/* After a turn: a turn that ended without a busy retry ends the streak. */
static void
busy_settle(struct run *r, int t)
{
	if (t >= 0 && !r->busy_now) {
		r->busy_since_ms = 0;
		if (r->disk_full) {
			r->disk_full = false;
			store_disk_full_resolved();
			log_event("info", r->plan->name, NULL, "the database's disk has "
			    "space again: the plan goes on");
			service_say(r->o, "disk_full_resolved", "the database's disk has "
			    "space again: the plans held by it go on");
		}
	}
}

/* Reads the plan's steps in order into *ST until the first that has not
 * succeeded; *I is its index, or nsteps when all have (*ST then holds the
 * last). Returns 0, or -1 with r->err. */
static int
first_unfinished(struct run *r, struct store_step *st, size_t *i)
{
	for (*i = 0; *i < r->plan->nsteps; (*i)++) {
		store_step_clear(st);
		if (store_step_get(r->s, r->id, (int)*i, st, r->err, r->errlen) != 0)
			return -1;
		if (step_status_of(st->status) != STEP_STATUS_SUCCEEDED)
			break;
	}
	return 0;
}

/* Step IDX is pending: it reaches its gate, or starts. Returns 0, or -1. */
static int
step_begin(struct run *r, int idx)
{
	if (r->plan->steps[idx].gate)
		return reach_gate(r, idx);
	return transition(r, idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, ACTOR,
	    "step.started", NULL);
}

/* The settle window of a plan no step of which reads its flag now (ended,
 * failed or at a gate): one look (step_flag_settle) every SETTLE_READ_MS.
 * Sets *OPEN while the window is open, and r->due_ms to the next look.
 * Returns 0, or -1 when the store failed. */
static int
settle(struct run *r, bool *open)
{
	int64_t now = clock_mono_ms(), until;
	bool was = r->settle_open;
	char when[40];
	int rc;
	time_t t;
	struct tm tm;

	if (now >= r->settle_due_ms) {
		step_ctx_begin_run(&r->ctx, r->plan, r->s, r->id, NULL);
		rc = step_flag_settle(&r->ctx, &r->settle_open, &until, r->err, r->errlen);
		step_ctx_end_run(&r->ctx);
		if (rc != 0)
			return -1;
		r->settle_due_ms = clock_mono_ms() + SETTLE_READ_MS;
		r->settle_open_seen = r->settle_open_seen || r->settle_open;
		if (r->settle_open && !was) {
			/* Otherwise a finished `cutover run` seems to hang. */
			t = (time_t)(until / 1000);
			gmtime_r(&t, &tm);
			strftime(when, sizeof(when), "%H:%M:%SZ", &tm);
			log_event("info", r->plan->name, NULL, "settle window: reading the "
			    "flag every %d ms until about %s (flag.settle %lld s)",
			    SETTLE_READ_MS, when, (long long)(r->plan->flag.settle_ms / 1000));
		}
	}
	*open = r->settle_open;
	if (*open)
		r->due_ms = r->settle_due_ms;
	return 0;
}

/* Step IDX waits for approval or has failed (STATUS): its gate's preview
 * is kept current, then the run is over (*OVER, *OUTCOME) when the options
 * say so, or looks again after a poll. Returns 0, or -1 on failure. */
static int
step_blocked(struct run *r, int idx, enum step_status status,
    enum engine_outcome *outcome, bool *over)
{
	bool open;

	if (status == STEP_STATUS_WAITING_APPROVAL && preview_gate(r, idx) != 0)
		return -1;
	if (settle(r, &open) != 0)
		return -1;
	if (r->o->return_when_blocked && !open) {
		*outcome = status == STEP_STATUS_WAITING_APPROVAL ? ENGINE_WAITING :
		    ENGINE_FAILED;
		*over = true;
		return 0;
	}
	if (r->due_ms == 0 || r->due_ms > clock_mono_ms() + poll_ms(r))
		r->due_ms = clock_mono_ms() + poll_ms(r);
	fault_point("engine.blocked");	/* the next look scheduled, not taken */
	return 0;
}

/* Step IDX failed with r->err and its result RESULT (TEXT as stored):
 * records the step, with the events its run hands over, and the plan as
 * failed. Returns 0, or -1. */
static int
step_failed(struct run *r, int idx, const json_t *result, const char *text)
{
	char error[1024];

	snprintf(error, sizeof(error), "%s", r->err);
	if (transition_ran(r, idx, STEP_STATUS_FAILED, 0, clock_now_ms(), text, error,
	    ACTOR, "step.failed", json_pack("{s:s}", "error", error), result) != 0 ||
	    plan_transition(r, PLAN_STATUS_FAILED, ACTOR, "plan.failed",
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
 * with the events its run (RESULT) handed over in the same transaction.
 * Returns 0 or -1. */
static int
step_continues(struct run *r, int idx, const json_t *result, const char *text)
{
	if (r->ctx.events.n == 0)
		return store_step_update(r->s, r->id, idx, NULL, 0, 0, text, NULL, r->err,
		    r->errlen);
	if (store_begin(r->s, r->err, r->errlen) != 0)
		return -1;
	if (store_step_update(r->s, r->id, idx, NULL, 0, 0, text, NULL, r->err,
	    r->errlen) != 0 || record_step_events(r, idx, result, false) != 0 ||
	    store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		return -1;
	}
	return 0;
}

/* Step IDX is running: starts it, resumes it after a restart from its
 * persisted state STATE_TEXT (or NULL), or continues the watch; then
 * records what came of it and ends the run. Returns 0, or -1. */
static int
step_advance(struct run *r, int idx, const char *state_text)
{
	json_t *state = NULL, *result = NULL;
	char *text = NULL;
	int rc = -1, sr;

	if (state_text != NULL)
		state = json_loads(state_text, 0, NULL);
	sr = run_step_fn(r, idx, state, NULL, &result);
	log_waiting(r, idx, state, result);
	if (sr < 0 && busy_retry(r, plan_step_kind_name(r->plan->steps[idx].kind))) {
		/* Not the step's failure: it runs again from its last state. */
		rc = 0;
		goto done;
	}
	text = json_dumps(result, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (sr == 0 && r->ctx.again) {
		if (step_continues(r, idx, result, text) != 0)
			goto done;
		r->due_ms = clock_mono_ms() + r->plan->watch.interval_ms;
		rc = 0;
		goto done;
	}
	if (sr == 0)
		rc = transition_ran(r, idx, STEP_STATUS_SUCCEEDED, 0, clock_now_ms(), text,
		    NULL, ACTOR, "step.succeeded", NULL, result);
	else
		rc = step_failed(r, idx, result, text);
done:
	step_ctx_end_run(&r->ctx);
	free(text);
	json_decref(result);
	json_decref(state);
	return rc;
}

/* One turn of the state machine: acts on waiting commands, then, when the
 * plan has work due, does the next piece of it (one transition, one step,
 * one watch tick) without sleeping, and sets r->due_ms to when it next has
 * work. Returns 0, with *OVER set when the run is over and *OUTCOME says
 * how, or -1 on failure. */
static int
turn(struct run *r, enum engine_outcome *outcome, bool *over)
{
	struct store_plan p;
	struct store_step st = { 0 };
	enum plan_status ps;
	enum step_status ss;
	int idx, rc = -1;
	bool open;
	size_t i;

	r->busy_now = 0;
	store_transient_clear(r->s);     /* only this turn's failures count */
	if (handle_commands(r) != 0)
		return -1;
	if (store_plan_get(r->s, r->id, &p, r->err, r->errlen) != 0)
		return -1;
	ps = plan_status_of(p.status);
	if (ps == PLAN_STATUS_ABORTED || ps == PLAN_STATUS_SUCCEEDED) {
		/* The run goes on while the flag's settle window is open; an
		 * archived plan's ends: the operator has moved on, and the flag
		 * may be another plan's now. */
		if (p.archived_ms == 0 && settle(r, &open) != 0)
			return -1;
		if (p.archived_ms == 0 && open)
			return 0;
		*outcome = ps == PLAN_STATUS_ABORTED ? ENGINE_ABORTED : ENGINE_SUCCEEDED;
		*over = true;
		return 0;
	}
	if (clock_mono_ms() < r->due_ms)
		return 0;
	r->due_ms = 0;
	if (first_unfinished(r, &st, &i) != 0)
		goto done;
	if (i == r->plan->nsteps) {
		if (plan_transition(r, PLAN_STATUS_SUCCEEDED, ACTOR, "plan.succeeded", NULL) != 0)
			goto done;
		*outcome = ENGINE_SUCCEEDED;
		*over = true;
		rc = 0;
		goto done;
	}
	idx = (int)i;
	ss = step_status_of(st.status);
	if (ss == STEP_STATUS_PENDING)
		rc = step_begin(r, idx);
	else if (ss == STEP_STATUS_WAITING_APPROVAL || ss == STEP_STATUS_FAILED)
		rc = step_blocked(r, idx, ss, outcome, over);
	else
		rc = step_advance(r, idx, st.result_json);
done:
	store_step_clear(&st);
	return rc;
}

/* Prepares R to run plan PLAN_ID: loads the stored plan text. Returns 0,
 * or -1 with ERR. */
static int
run_open(struct run *r, struct store *s, int64_t plan_id, const struct engine_opts *o,
    char *err, size_t errlen)
{
	struct plan_errors errs = { 0 };
	char *yaml = NULL, file[64], line[512];
	size_t len;
	int rc = -1, t;

	memset(r, 0, sizeof(*r));
	r->s = s;
	r->id = plan_id;
	r->o = o;
	r->ctx_step = -1;
	r->err = err;
	r->errlen = errlen;
	if ((t = store_plan_yaml(s, plan_id, &yaml, &len, err, errlen)) != 0) {
		if (t == STORE_NOT_FOUND)
			snprintf(err, errlen, "no plan %lld", (long long)plan_id);
		goto done;
	}
	snprintf(file, sizeof(file), "plan %lld", (long long)plan_id);
	if (plan_load_buffer(file, yaml, len, &r->plan, &errs) != 0) {
		snprintf(err, errlen, "the stored plan no longer loads: %s",
		    errs.n ? plan_error_format(&errs, 0, line, sizeof(line)) : "?");
		goto done;
	}
	rc = 0;
done:
	plan_errors_free(&errs);
	free(yaml);
	return rc;
}

static void
run_close(struct run *r)
{
	step_ctx_close(&r->ctx);
	plan_free(r->plan);
	r->plan = NULL;
}

struct unrunnable;
static void plan_can_run(struct store *s, struct unrunnable *u, int64_t id);

int
engine_run(struct store *s, int64_t plan_id, const struct engine_opts *o,
    enum engine_outcome *outcome, char *err, size_t errlen)
{
	struct run r;
	int rc = -1, t;

	if (run_open(&r, s, plan_id, o, err, errlen) != 0)
		goto done;
	plan_can_run(s, NULL, plan_id);
	for (;;) {
		int64_t wait;
		bool over = false;

		if (stopping(&r)) {
			*outcome = ENGINE_STOPPED;
			break;
		}
		if (store_file_check(s, err, errlen) != 0)
			goto done;	/* a removed or replaced record: nothing more */
		t = turn(&r, outcome, &over);
		if (t < 0 && !busy_retry(&r, "store"))
			goto done;
		busy_settle(&r, t);
		if (over)
			break;
		/* A run that returns when blocked (cutover run) stops here, to
		 * be run again once space is freed: nothing it did is lost. */
		if (r.disk_full && r.o->return_when_blocked) {
			*outcome = ENGINE_DISK_FULL;
			break;
		}
		/* Commands are looked at every poll interval, also while a watch
		 * waits for its next tick. */
		wait = r.due_ms - clock_mono_ms();
		if (wait > 0)
			clock_sleep_ms((int)(wait < poll_ms(&r) ? wait : poll_ms(&r)));
	}
	rc = 0;
done:
	run_close(&r);
	return rc;
}

struct active {
	int64_t *ids;
	size_t n, cap;
	bool ended;                    /* take ended plans too (not archived) */
};

static int
collect_active(const struct store_plan *p, void *arg)
{
	struct active *a = arg;
	enum plan_status st = plan_status_of(p->status);

	if (st != PLAN_STATUS_RUNNING && st != PLAN_STATUS_FAILED && (!a->ended ||
	    p->archived_ms != 0 || (st != PLAN_STATUS_ABORTED &&
	    st != PLAN_STATUS_SUCCEEDED)))
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		int64_t *ids = realloc(a->ids, cap * sizeof(*ids));

		if (ids == NULL)
			return -1;	/* out of memory: stops the listing */
		a->ids = ids;
		a->cap = cap;
	}
	a->ids[a->n++] = p->id;
	return 0;
}

/* The plans serve could not open, each with why: what was said about
 * one is not said again until the reason changes. */
struct unrunnable {
	struct {
		int64_t id;
		char why[1024];
	} *v;
	size_t n, cap;
};

/* The entry of U for plan ID, added empty when there is none; NULL when
 * out of memory. */
static char *
unrunnable_why(struct unrunnable *u, int64_t id)
{
	size_t i;

	for (i = 0; i < u->n && u->v[i].id != id; i++)
		;
	if (i < u->n)
		return u->v[i].why;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 8;
		void *v = realloc(u->v, cap * sizeof(*u->v));

		if (v == NULL)
			return NULL;
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n].id = id;
	u->v[u->n].why[0] = '\0';
	return u->v[u->n++].why;
}

/* The open plan_cannot_run alert of a plan, if any. */
struct cannot_run_alert {
	int64_t id;
	char message[512];
};

static int
find_cannot_run(const struct store_alert *a, void *arg)
{
	struct cannot_run_alert *c = arg;

	if (strcmp(a->kind, STORE_ALERT_CANNOT_RUN) != 0)
		return 0;
	c->id = a->id;
	snprintf(c->message, sizeof(c->message), "%s", a->message);
	return 1;
}

/* Serve cannot run plan ID because of WHY: the first time, and whenever
 * the reason changes, says so once in the log and in the store — the
 * alert plan_cannot_run with what to do (the page and /metrics show it)
 * and the event plan.cannot_run — never at every turn. Unless the
 * process already said it, an open alert with that message (an earlier
 * process's) is kept as it is. */
static void
plan_cannot_run(struct store *s, struct unrunnable *u, int64_t id, const char *why)
{
	struct cannot_run_alert open = { 0 };
	struct store_plan p;
	char message[512], err[512], *said = unrunnable_why(u, id), *text = NULL;
	const char *name = NULL;
	json_t *details = NULL;
	int64_t alert = 0;
	bool raised = false;
	int room;

	if (said != NULL && strcmp(said, why) == 0)
		return;
	if (said != NULL)
		snprintf(said, sizeof(u->v[0].why), "%s", why);
	if (store_plan_get(s, id, &p, err, sizeof(err)) == 0)
		name = p.name;
	log_event("error", name, NULL, "plan %lld cannot run: %s; what to do: %s",
	    (long long)id, why, STORE_CANNOT_RUN_ACTION);
	/* An alert's message is at most 511 bytes: the reason is cut to leave
	 * room for what to do (the event and the log have it whole). */
	room = (int)(sizeof(message) - 1 - strlen("; what to do: ") -
	    strlen(STORE_CANNOT_RUN_ACTION));
	snprintf(message, sizeof(message), "%.*s%s; what to do: %s",
	    (int)strlen(why) > room ? room - 3 : room, why,
	    (int)strlen(why) > room ? "..." : "", STORE_CANNOT_RUN_ACTION);
	if (store_each_alert(s, id, 1, find_cannot_run, &open, err, sizeof(err)) < 0)
		goto failed;
	if (open.id != 0 && strcmp(open.message, message) == 0)
		goto done;
	if ((details = json_pack("{s:s,s:s}", "error", why, "what_to_do",
	    STORE_CANNOT_RUN_ACTION)) == NULL ||
	    (text = json_dumps(details, JSON_COMPACT)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_raise(s, id, STORE_ALERT_CANNOT_RUN, message, clock_now_ms(),
	    &alert, &raised, err, sizeof(err)) != 0 ||
	    store_append_event(s, id, clock_now_ms(), ACTOR, "plan.cannot_run", text, NULL,
	    err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) == 0)
		goto done;
failed:
	log_event("error", name, NULL, "recording that plan %lld cannot run: %s",
	    (long long)id, err);
done:
	free(text);
	json_decref(details);
}

/* Plan ID runs (again), under serve (U: what serve said of the plans it
 * could not run) or `cutover run` (U NULL): what plan_cannot_run said of
 * it is over, and its open plan_cannot_run alert, if any, closes with a
 * word in the history (alert.acked by the engine) — commands for the
 * plan are then taken again. */
static void
plan_can_run(struct store *s, struct unrunnable *u, int64_t id)
{
	struct cannot_run_alert open = { 0 };
	char err[512], details[128];
	size_t i;

	for (i = 0; u != NULL && i < u->n && u->v[i].id != id; i++)
		;
	if (u != NULL && i < u->n)
		u->v[i] = u->v[--u->n];
	if (store_each_alert(s, id, 1, find_cannot_run, &open, err, sizeof(err)) < 0)
		goto failed;
	if (open.id == 0)
		return;
	snprintf(details, sizeof(details), "{\"alert\":%lld,\"comment\":\"the stored plan "
	    "loads again\"}", (long long)open.id);
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_ack(s, id, open.id, ACTOR, "the stored plan loads again",
	    clock_now_ms(), err, sizeof(err)) != 0 ||
	    store_append_event(s, id, clock_now_ms(), ACTOR, "alert.acked", details,
	    NULL, err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) == 0) {
		log_event("info", NULL, NULL, "plan %lld loads again: its %s alert is closed",
		    (long long)id, STORE_ALERT_CANNOT_RUN);
		return;
	}
failed:
	log_event("error", NULL, NULL, "closing plan %lld's %s alert: %s", (long long)id,
	    STORE_ALERT_CANNOT_RUN, err);
}
int
engine_serve(struct store *s, const struct engine_opts *o, char *err, size_t errlen)
{
	struct engine_opts so = *o;
	struct active act = { 0 };
	struct unrunnable unrun = { 0 };
	struct run *runs = NULL;
	size_t nruns = 0;
	char perr[1024];
	bool file_lost = false;
	int rc = -1;

	so.return_when_blocked = false;
	/* The first listing takes the plans that have ended too: one whose
	 * flag's settle window was open when the last serve stopped goes on
	 * reading it; the others end at their first turn. */
	act.ended = true;
	for (;;) {
		int64_t next = clock_mono_ms() + (so.poll_ms > 0 ? so.poll_ms : 500);
		enum engine_outcome outcome;

		if (so.stop != NULL && *so.stop)
			break;
		/* A removed or replaced database: no step runs on a record no one
		 * will read (or on someone else's); said once, and on /healthz. */
		if (store_file_check(s, perr, sizeof(perr)) != 0) {
			if (!file_lost) {
				char text[1400];

				snprintf(text, sizeof(text), "%s; cutover takes no action "
				    "until it is restarted on a restored file", perr);
				log_event("error", NULL, NULL, "%s", text);
				service_say(&so, "database_lost", text);
			}
			file_lost = true;
			clock_sleep_ms(so.poll_ms > 0 ? so.poll_ms : 500);
			continue;
		}
		act.n = 0;
		if (store_each_plan(s, collect_active, &act, err, errlen) != 0)
			goto done;
		act.ended = false;
		/* Start runs for plans submitted since the last turn. */
		for (size_t i = 0; i < act.n; i++) {
			size_t j;
			struct run *grown;
			struct store_plan sp;
			bool ended;

			for (j = 0; j < nruns && runs[j].id != act.ids[i]; j++)
				;
			if (j < nruns)
				continue;
			if ((grown = realloc(runs, (nruns + 1) * sizeof(*runs))) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto done;
			}
			runs = grown;
			ended = store_plan_get(s, act.ids[i], &sp, perr, sizeof(perr)) == 0 &&
			    (plan_status_of(sp.status) == PLAN_STATUS_ABORTED ||
			    plan_status_of(sp.status) == PLAN_STATUS_SUCCEEDED);
			if (run_open(&runs[nruns], s, act.ids[i], &so, perr, sizeof(perr)) != 0) {
				/* An ended plan is only looked at for its settle
				 * window: one an older version stored is left. */
				if (!ended)
					plan_cannot_run(s, &unrun, act.ids[i], perr);
				run_close(&runs[nruns]);
				continue;
			}
			plan_can_run(s, &unrun, act.ids[i]);
			runs[nruns++].ended_at_open = ended;
		}
		for (size_t j = 0; j < nruns; ) {
			struct run *r = &runs[j];
			bool over = false;
			int t;

			/* Each run writes its errors into its own buffer. */
			r->err = perr;
			r->errlen = sizeof(perr);
			t = turn(r, &outcome, &over);
			if (t < 0 && !busy_retry(r, "store"))
				log_event("error", r->plan->name, NULL, "%s", perr);
			busy_settle(r, t);
			if (over) {
				if (!r->ended_at_open || r->settle_open_seen)
					log_event("info", r->plan->name, NULL, "run ended: %s",
					    engine_outcome_name(outcome));
				run_close(r);
				runs[j] = runs[--nruns];
				continue;
			}
			if (r->due_ms > 0 && r->due_ms < next)
				next = r->due_ms;
			j++;
		}
		{
			int64_t wait = next - clock_mono_ms();

			if (wait > 0)
				clock_sleep_ms((int)wait);
		}
	}
	rc = 0;
done:
	for (size_t j = 0; j < nruns; j++)
		run_close(&runs[j]);
	free(runs);
	free(act.ids);
	free(unrun.v);
	return rc;
}
