/* engine_command: the operators' commands (abort, ack, approve, retry),
 * taken in order, each checked against the state it finds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "alert_kinds.h"
#include "clock.h"
#include "engine_int.h"
#include "flag.h"
#include "log.h"
#include "step_kinds.h"
#include "store_admit.h"

/* Has a step that takes the old path away (STEP_KIND_ENDS_OLD_PATH)
 * started? Sets *GOING. Returns 0, or -1 when the store could not say:
 * the abort then waits rather than rolling producers back onto queues
 * that may be going. */
static int
old_path_going(struct run *r, bool *going)
{
	*going = false;
	for (size_t i = 0; i < r->plan->nsteps && !*going; i++) {
		const struct step_kind *sk = step_kind_of(r->plan->steps[i].kind);
		struct store_step st = { 0 };
		enum step_status rs;

		if (sk == NULL || !(sk->flags & STEP_KIND_ENDS_OLD_PATH))
			continue;
		if (store_step_get(r->s, r->id, (int)i, &st, r->err, r->errlen) != 0)
			return -1;
		rs = step_status_of(st.status);
		*going = rs == STEP_STATUS_RUNNING || rs == STEP_STATUS_SUCCEEDED ||
		    rs == STEP_STATUS_FAILED;
		store_step_clear(&st);
	}
	return 0;
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
	const char *rollback = "not needed: the flag was never turned on";
	bool removing;
	int rc;
	bool flipped;
	json_t *res = NULL;
	char doubt[512];

	if (old_path_going(r, &removing) != 0 ||
	    step_flip_is_on(r->s, r->id, &flipped, r->err, r->errlen) != 0)
		return -2;
	/* A plan without a flag has none to roll back, restored or not. */
	flipped = flipped && flag_configured(r->plan);
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
	return engine__plan_transition(r, PLAN_STATUS_ABORTED, cmd->actor, "plan.aborted",
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
		return engine__event(r, c->actor, "abort.failed", json_pack("{s:s}", "error", outcome));
	return 0;
}

/* An acknowledged alert whose cause the engine saw last and not gone
 * since is not over: the outcome says so, and what clears it, so that its
 * return at the next look is no surprise. */
static int
apply_ack(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	struct store_alert a = { 0 };
	const struct alert_kind *k;

	if (store_alert_get(r->s, r->id, c->alert_id, &a, r->err, r->errlen) != 0 ||
	    a.acked_ms != 0 || store_alert_ack(r->s, r->id, c->alert_id, c->actor,
	    c->comment, clock_now_ms(), r->err, r->errlen) != 0) {
		snprintf(outcome, outlen, "refused: no open alert %lld", (long long)c->alert_id);
		return 0;
	}
	if (a.cause_present && (k = alert_kind_find(a.kind)) != NULL) {
		snprintf(outcome, outlen, "done; ");
		alert_still_there(k, (long long)a.id, outcome + strlen(outcome),
		    outlen - strlen(outcome));
	}
	return engine__event(r, c->actor, "alert.acked", json_pack("{s:I,s:s,s:b}", "alert",
	    (json_int_t)c->alert_id, "comment", c->comment, "cause_present",
	    a.cause_present));
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
		return engine__event(r, c->actor, "step.approved_ahead", json_pack("{s:i,s:s,s:s,s:I}",
		    "step", c->step_idx + 1, "kind", plan_step_kind_name(
		    r->plan->steps[c->step_idx].kind), "comment", c->comment, "command",
		    (json_int_t)c->id));
	}
	return engine__transition(r, c->step_idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, c->actor,
	    "step.approved", json_pack("{s:s}", "comment", c->comment));
}

/* A retry starts the step again from its beginning; the operator's
 * command stands for the gate's approval. A kind that keeps its state
 * across a retry (STEP_KIND_KEEPS_STATE: the watch, whose start, last
 * entry into the old path and so deadline must survive) starts from its
 * last result, with the rows kept for it (the watch's last full pass's
 * counters). */
static int
apply_retry(struct run *r, const struct store_command *c, char *outcome, size_t outlen)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[c->step_idx].kind);
	const char *kind = plan_step_kind_name(r->plan->steps[c->step_idx].kind);
	const char *running = step_status_name(STEP_STATUS_RUNNING);
	int64_t now = clock_now_ms();
	int rc;

	(void)outcome;
	(void)outlen;
	if (store_begin(r->s, r->err, r->errlen) != 0)
		return -1;
	if (sk != NULL && (sk->flags & STEP_KIND_KEEPS_STATE))
		rc = store_step_restart(r->s, r->id, c->step_idx, running, now, r->err,
		    r->errlen);
	else
		rc = store_step_reset(r->s, r->id, c->step_idx, running, r->err,
		    r->errlen) != 0 || store_step_update(r->s, r->id, c->step_idx, NULL,
		    now, 0, NULL, NULL, r->err, r->errlen) != 0 ? -1 : 0;
	if (rc != 0 ||
	    store_plan_set_status(r->s, r->id, plan_status_name(PLAN_STATUS_RUNNING), r->err,
	    r->errlen) != 0 ||
	    engine__event(r, c->actor, "step.retry", json_pack("{s:i,s:s,s:s}", "step",
	    c->step_idx + 1, "kind", kind, "comment", c->comment)) != 0 ||
	    store_commit(r->s, r->err, r->errlen) != 0) {
		store_rollback(r->s);
		return -1;
	}
	log_event("info", r->plan->name, kind, "step.retry by %s", c->actor);
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
	if (engine__event(r, ACTOR, "command.refused", d) != 0 ||
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
int
engine__handle_commands(struct run *r)
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
