/* view: the JSON documents the API serves, read from the store — the plan
 * list, one plan with its steps, approvals and open alerts, its history
 * with the hash chain's verification, its watch samples. Read-only; the
 * caller owns the store connection and each document returned. */
#ifndef CUTOVER_VIEW_H
#define CUTOVER_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store.h"
#include "view_json.h"	/* view_string, for the API's own documents */

#define VIEW_SAMPLES_MAX	5000	/* samples per answer; the rest on the next
					 * (next_since): bounds what one answer costs */

/* {"plans":[{id,name,status,created_ms,sha256,archived_ms,current,
 * alerts_open,holds,needs_person,attention}],"deliveries":[...]}, in the
 * order a person should look at them (a gate waiting for approval, failed,
 * alerts open, running, finished: view_holds.h; "attention" names which),
 * newest first within each; only those
 * called NAME when NAME is not NULL; deliveries
 * are every plan's counted by notifier (view_notify_counts). Returns 0 and
 * *OUT, or -1 with ERR. */
int view_plan_list(struct store *s, const char *name, json_t **out, char *err,
    size_t errlen);

/* Plan ID: {id,name,status,created_ms,sha256,steps:[{n,kind,status,gate,
 * gate_state,started_ms,ended_ms,result,error,approved_by,approved_ms,
 * approval_comment,retried_by,retried_ms}],alerts:[open alerts],
 * holds:[what holds it for a person],needs_person (view_holds.h),
 * deliveries:[{notifier,pending,delivered,failed}]} (the plan's
 * notifications counted by notifier: view_notify_counts). The
 * result is the step's recorded JSON, parsed; a large one without its long
 * lists (view_result.h), each named in result_elided [{pointer,count}],
 * with result_url, the route that serves it whole. Who approved comes from
 * the history. Returns 0 and *OUT, STORE_NOT_FOUND when there is no such plan,
 * -1 with ERR. */
int view_plan(struct store *s, int64_t id, json_t **out, char *err, size_t errlen);

/* Adds to alert object O what the alert kinds' table says of KIND
 * (alert_kinds.def): "means", "check" and "clear" (none for a kind the
 * table lacks), and, for a kind whose cause the engine follows,
 * "cause_present" (CAUSE: the engine saw its cause last, and not gone
 * since). Every alert of a plan's "alerts" has them. */
void view_alert_facts(json_t *o, const char *kind, bool cause);

/* The answer DOC to an acknowledgement of alert ALERT of plan PLAN: adds
 * "cause_present" and, when the cause is still there, "cause", the
 * sentence that says the alert returns until the cause is cleared (and
 * how). Nothing when the store cannot say (the answer stands without). */
void view_ack_cause(struct store *s, int64_t plan, int64_t alert, json_t *doc);

/* Plan ID's history: {plan,name,status,sha256,yaml,events:[{id,ts_ms,
 * time_utc,step,actor,kind,details,prev_hash,hash}],verification:{verified,
 * checked,bad_event,reason}} — step is the step the event belongs to
 * (export_step_of; null: the plan's own), yaml the plan as submitted; the
 * verification covers the whole chain, which every plan's events share.
 * Returns 0, STORE_NOT_FOUND or -1 with ERR. */
int view_history(struct store *s, int64_t id, json_t **out, char *err, size_t errlen);

/* Plan ID's samples with ts_ms >= SINCE_MS, oldest first, at most
 * VIEW_SAMPLES_MAX, as the API's JSON text with its final newline:
 * {plan,since,samples:[{ts_ms,metric,label,value}],truncated,next_since}
 * (view_samples.c writes it from the rows, without a jansson document).
 * Returns 0 with *OUT (malloc'd, *OUTLEN bytes, NUL-terminated), or
 * STORE_NOT_FOUND, or -1 with ERR. */
int view_samples_text(struct store *s, int64_t id, int64_t since_ms, char **out,
    size_t *outlen, char *err, size_t errlen);

#endif
