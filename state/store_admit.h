/* store_admit: what the store accepts from outside the engine, under the
 * engine's rules — a submitted plan (validated, recorded with its steps)
 * and an operator command (checked against the state it finds, then
 * recorded for the engine to act on). The API, the CLI and the engine
 * share these, so web/ needs nothing of the engine to write. */
#ifndef CUTOVER_STORE_ADMIT_H
#define CUTOVER_STORE_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "store.h"

/* Validates the plan in YAML (FILE names it in errors) and records it with
 * its steps, all pending, and the event "plan.submitted" by ACTOR (the
 * operator, or "cli" for a local run), in one transaction. Returns 0 and
 * the new id in *PLAN_ID; STORE_INVALID when the plan is invalid (ERRS
 * says why; free it with plan_errors_free); STORE_RUNNING when a plan of
 * the same name is still running (its id in *PLAN_ID, ERR says so);
 * STORE_UNARCHIVED when a finished plan of that name is not archived (its
 * id in *PLAN_ID, ERR says so: a name is unique among plans not
 * archived); -1 on failure with ERR. FLAGS: STORE_SUBMIT_NEW records
 * (in plan.submitted's details, "new": true) that the operator starts
 * the plan anew on a broker that may show an earlier run of it which
 * this database has no record of (prior_run.h). */
#define STORE_SUBMIT_NEW	1u
int store_plan_submit(struct store *s, const char *file, const char *yaml, size_t len,
    const char *actor, unsigned flags, int64_t *plan_id, struct plan_errors *errs,
    char *err, size_t errlen);

/* Whether plan PLAN_ID was submitted with STORE_SUBMIT_NEW (*NEW), and
 * whether this database holds a plan of the same name older than it
 * (*EARLIER). Returns 0, or -1 with ERR. */
int store_plan_origin(struct store *s, int64_t plan_id, bool *is_new, bool *earlier,
    char *err, size_t errlen);

/* Archives finished plan PLAN_ID (succeeded or aborted) for ACTOR, with
 * the event "plan.archived": its name may then be submitted again, and
 * status NAME and /metrics show the new plan. Returns 0, STORE_REFUSED
 * (ERR says why: no such plan, not finished, archived already), -1 on
 * failure. */
int store_plan_archive(struct store *s, int64_t plan_id, const char *actor,
    const char *comment, char *err, size_t errlen);

/* Does command KIND (with STEP_IDX or ALERT_ID) make sense against plan P
 * as the store holds it now? Returns 0 when it does, STORE_REFUSED when
 * not (WHY says why), -1 when the store failed (ERR). */
int store_command_refusal(struct store *s, const struct store_plan *p, const char *kind,
    int step_idx, int64_t alert_id, char *why, size_t whylen, char *err, size_t errlen);

/* Records an operator command after checking it makes sense now: approve
 * needs the plan running and STEP_IDX (0-based) waiting for approval, or
 * gated and still pending (an approval ahead of time, which the engine
 * records as step.approved_ahead and applies when the gate is reached),
 * retry a failed plan and a failed step, abort a plan not yet finished,
 * ack an open alert. The engine checks it again by the same rules when it
 * acts on it, against the state the commands before it left (an abort
 * queued first ends the plan), and records one that no longer applies as
 * refused: the event command.refused and the outcome "refused: why"
 * (store_command_get). Returns 0 and the command's id, STORE_REFUSED when
 * refused now (ERR says why, for a 409), -1 on failure. */
int store_command_record(struct store *s, int64_t plan_id, const char *kind, int step_idx,
    int64_t alert_id, const char *actor, const char *comment, int64_t *id,
    char *err, size_t errlen);

#endif
