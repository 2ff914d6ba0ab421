/* engine: the step state machine over the store: one turn (commands,
 * then the next piece of work of the plan) and the loop of `cutover run`
 * (engine_run); what each piece does is in the files engine_int.h names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "fault.h"
#include "log.h"
#include "step_kinds.h"
#include "store_admit.h"

/* How often the settle window reads the flag: each read is one bounded
 * GET, and a write landing late is put back within about this long. */
#define SETTLE_READ_MS		1000

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

static int
poll_ms(const struct run *r)
{
	return r->o->poll_ms > 0 ? r->o->poll_ms : 500;
}

/* Reads into *ST the plan's first step that has not succeeded, without
 * its result (read only when the step runs: an earlier step's result, a
 * row per old queue, is megabytes, and this is read every tick); *I is
 * its index, or nsteps when all have succeeded. Returns 0, or -1 with
 * r->err. */
static int
first_unfinished(struct run *r, struct store_step *st, size_t *i)
{
	int rc;

	store_step_clear(st);
	rc = store_step_current(r->s, r->id, st, r->err, r->errlen);
	if (rc == STORE_NOT_FOUND || (rc == 0 &&
	    step_status_of(st->status) == STEP_STATUS_SUCCEEDED)) {
		*i = r->plan->nsteps;
		return 0;
	}
	if (rc != 0)
		return -1;
	*i = (size_t)st->idx;
	return 0;
}

/* Reads step IDX, running, with its result, the state it goes on from:
 * for a kind that reads its last result's "entries" apart
 * (STEP_KIND_STATE_ENTRIES), without the rows they are kept in, which it
 * reads from the store itself (step_state_each). Returns 0, or
 * store_step_get's failure with r->err. */
static int
state_read(struct run *r, int idx, struct store_step *st)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);

	store_step_clear(st);
	if (sk != NULL && (sk->flags & STEP_KIND_STATE_ENTRIES))
		return store_step_get_apart(r->s, r->id, idx, st, r->err, r->errlen);
	return store_step_get(r->s, r->id, idx, st, r->err, r->errlen);
}

/* Step IDX is pending: it reaches its gate, or starts. Returns 0, or -1. */
static int
step_begin(struct run *r, int idx)
{
	if (r->plan->steps[idx].gate)
		return engine__reach_gate(r, idx);
	return engine__transition(r, idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, ACTOR,
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

	if (status == STEP_STATUS_WAITING_APPROVAL && engine__preview_gate(r, idx) != 0)
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

/* One turn of the state machine: acts on waiting commands, then, when the
 * plan has work due, does the next piece of it (one transition, one step,
 * one watch tick) without sleeping, and sets r->due_ms to when it next has
 * work. Returns 0, with *OVER set when the run is over and *OUTCOME says
 * how, or -1 on failure. */
int
engine__turn(struct run *r, enum engine_outcome *outcome, bool *over)
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
	if (engine__handle_commands(r) != 0)
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
		if (engine__plan_transition(r, PLAN_STATUS_SUCCEEDED, ACTOR, "plan.succeeded", NULL) != 0)
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
	else if ((rc = state_read(r, idx, &st)) == 0)
		rc = engine__step_advance(r, idx, st.result_json);
	else
		rc = -1;	/* gone between the two reads: only a broken store */
done:
	store_step_clear(&st);
	return rc;
}

/* Prepares R to run plan PLAN_ID: loads the stored plan text. Returns 0,
 * or -1 with ERR. */
int
engine__run_open(struct run *r, struct store *s, int64_t plan_id, const struct engine_opts *o,
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
	r->broker_alert_check = true;  /* an earlier process may have left one */
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
	r->inputs = (struct step_store_inputs){ .s = s, .plan_id = plan_id,
	    .p = r->plan };
	rc = 0;
done:
	plan_errors_free(&errs);
	free(yaml);
	return rc;
}

void
engine__run_close(struct run *r)
{
	step_ctx_close(&r->ctx);
	plan_free(r->plan);
	r->plan = NULL;
}

int
engine_run(struct store *s, int64_t plan_id, const struct engine_opts *o,
    enum engine_outcome *outcome, char *err, size_t errlen)
{
	struct run r;
	int rc = -1, t;

	if (engine__run_open(&r, s, plan_id, o, err, errlen) != 0)
		goto done;
	engine__plan_can_run(s, NULL, plan_id);
	for (;;) {
		int64_t wait;
		bool over = false;

		if (stopping(&r)) {
			*outcome = ENGINE_STOPPED;
			break;
		}
		if (store_file_check(s, err, errlen) != 0)
			goto done;	/* a removed or replaced record: nothing more */
		t = engine__turn(&r, outcome, &over);
		if (t < 0 && !engine__busy_retry(&r, "store"))
			goto done;
		engine__busy_settle(&r, t);
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
	engine__run_close(&r);
	return rc;
}
