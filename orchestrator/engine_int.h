/* engine_int: what the engine's files share: one plan's run (struct run)
 * and the engine's internal calls, each defined (with its contract) in the
 * file named above it. engine.c: the turn and the run loop;
 * engine_transition.c: the store writes, each with its event;
 * engine_step.c: running a step as its row of the step-kind table says;
 * engine_gate.c: a gated step's approval given ahead and its preview;
 * engine_command.c: the operators' commands; engine_busy.c: a database
 * busy or its disk full; engine_broker.c: a broker that does not answer a
 * step; engine_serve.c: every plan of a store. */
#ifndef CUTOVER_ENGINE_INT_H
#define CUTOVER_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "engine.h"
#include "status.h"
#include "step.h"

#define ACTOR "engine"

struct run {
	struct store *s;
	int64_t id;
	struct plan *plan;
	const struct engine_opts *o;
	struct step_ctx ctx;           /* broker connections, kept across watch
	                                * ticks; the run's part between a step's
	                                * run and the record of what came of it */
	int ctx_step;                  /* the step CTX was opened for, or -1 */
	struct step_store_inputs inputs; /* where a step's prepare reads the
	                                * earlier steps: this plan's store */
	/* The schedule is kept on the monotonic clock (clock_mono_ms): a wall
	 * clock stepped back an hour must not hold every step for that hour,
	 * nor one stepped forward fire them early. Times recorded and shown
	 * stay wall-clock (clock_now_ms). */
	int64_t due_ms;                /* mono: when the state machine next has work */
	int64_t tick_due_ms;           /* mono: when step TICK_STEP, run again (the
	                                * watch's ticks), was due to run next, or 0 */
	int tick_step;
	int64_t busy_since_ms;         /* mono: first of consecutive busy failures, or 0 */
	int busy_wait_ms;              /* the backoff after the latest one */
	int busy_now;                  /* this turn ended in a busy retry */
	bool disk_full;                /* held: the database's disk is full */
	bool broker_lost;              /* the last step run failed on a broker
	                                * that went silent or away */
	int64_t broker_since_ms;       /* mono: first of consecutive such
	                                * failures, or 0 */
	int broker_wait_ms;            /* the backoff after the latest one */
	bool broker_alert_check;       /* broker_unreachable may be open: the
	                                * next step the broker answers closes
	                                * it */
	int64_t preview_due_ms;        /* mono: when the waiting gate's preview is due */
	int64_t settle_due_ms;         /* mono: when the settle window is next looked at */
	bool settle_open;              /* it was open at the last look */
	bool settle_open_seen;         /* it has been open in this run */
	bool ended_at_open;            /* the plan had ended when the run began */
	char *err;
	size_t errlen;
};

/* engine.c */
int engine__turn(struct run *r, enum engine_outcome *outcome, bool *over);
int engine__run_open(struct run *r, struct store *s, int64_t plan_id,
    const struct engine_opts *o, char *err, size_t errlen);
void engine__run_close(struct run *r);

/* engine_transition.c */
int engine__event(struct run *r, const char *actor, const char *kind, json_t *details);
int engine__record_step_events(struct run *r, int idx, const json_t *result, bool ended);
int engine__transition_ran(struct run *r, int idx, enum step_status status,
    int64_t started, int64_t ended, const char *result, const char *error,
    const char *actor, const char *kind, json_t *details, const json_t *ran);
int engine__transition(struct run *r, int idx, enum step_status status, int64_t started,
    int64_t ended, const char *result, const char *error, const char *actor,
    const char *kind, json_t *details);
int engine__plan_transition(struct run *r, enum plan_status status, const char *actor,
    const char *kind, json_t *details);
/* An open alert of a kind: KIND is the caller's; ID (0: none open) and
 * MESSAGE are filled in. */
struct engine_open_alert {
	const char *kind;
	int64_t id;
	char message[512];
};
/* Finds plan PLAN_ID's open alert of O->kind into O. Returns 0, or -1 with
 * ERR. */
int engine__alert_find_open(struct store *s, int64_t plan_id, struct engine_open_alert *o,
    char *err, size_t errlen);
/* Closes plan PLAN_ID's open alert of KIND, if any, because WHY: its
 * cause recorded gone and the alert acknowledged by the engine (alert.acked
 * with WHY), in one transaction, and logged (for PLAN_NAME, may be NULL).
 * A failure is logged; the alert then stays open. */
void engine__alert_close(struct store *s, int64_t plan_id, const char *plan_name,
    const char *kind, const char *why);

/* engine_step.c */
int engine__run_step(struct run *r, int idx, const json_t *state, const char *state_text,
    step_fn fn, json_t **result);
int engine__step_advance(struct run *r, int idx, const char *state_text);

/* engine_gate.c */
int engine__preview_gate(struct run *r, int idx);
int engine__reach_gate(struct run *r, int idx);

/* engine_command.c */
int engine__handle_commands(struct run *r);

/* engine_busy.c */
void engine__service_say(const struct engine_opts *o, const char *event,
    const char *text);
bool engine__busy_retry(struct run *r, const char *what);
void engine__busy_settle(struct run *r, int t);

/* engine_broker.c */
/* Raises broker_unreachable with MESSAGE, unless it is open already (the
 * event alert.raised and a log line when it is raised). */
void engine__broker_unreachable(struct run *r, const char *message);
/* After step IDX's run failed (r->err, its result RESULT): when it failed
 * on the broker's silence (r->broker_lost) and the broker has not been
 * silent for the step's budget, raises broker_unreachable, records the
 * events the run handed over and step.broker_retry, closes the broker
 * connections and schedules the step to run again from its last recorded
 * state (r->due_ms, with backoff): returns 1. Returns 0 when the failure
 * is the step's (past the budget, r->err then says so), -1 when the store
 * failed. */
int engine__broker_retry(struct run *r, int idx, const json_t *result);
/* Step IDX ran and its broker answered (the run did not fail on its
 * silence): ends the streak of failures, and closes broker_unreachable
 * when it may be open and the step is not the watch (which follows the
 * alert tick by tick). */
void engine__broker_answered(struct run *r, int idx);

/* engine_cannot_run.c */
/* The plans serve could not open, each with why: what was said about
 * one is not said again until the reason changes. */
struct unrunnable {
	struct {
		int64_t id;
		char why[1024];
	} *v;
	size_t n, cap;
};

void engine__plan_cannot_run(struct store *s, struct unrunnable *u, int64_t id,
    const char *why);
void engine__plan_can_run(struct store *s, struct unrunnable *u, int64_t id);
/* Frees what U holds; U is empty again. */
void engine__unrunnable_free(struct unrunnable *u);

#endif
