/* view_holds: what holds a plan for a person — a gate waiting for
 * approval, a failed step, an open alert, a plan the engine cannot run —
 * said once, here, for the plan's document and the plan list, so that the
 * page's top, its badges and the list's order all read the same answer. */
#ifndef CUTOVER_VIEW_HOLDS_H
#define CUTOVER_VIEW_HOLDS_H

#include <jansson.h>

/* How soon a person must look at a plan, the plan list's order: a gate
 * waiting for approval first, then a failed plan (or one the engine cannot
 * run), then open alerts, then the plans running, then those finished
 * (succeeded or aborted, or archived). */
enum view_hold_rank {
	VIEW_HOLD_GATE = 0,
	VIEW_HOLD_FAILED = 1,
	VIEW_HOLD_ALERT = 2,
	VIEW_HOLD_RUNNING = 3,
	VIEW_HOLD_FINISHED = 4,
	VIEW_HOLD_RANKS = 5
};

/* Sets DOC's "holds" and "needs_person" from its "status", "archived_ms",
 * "current" ({n,kind,status}), "alerts" (open alerts {id,kind,message})
 * and, when present, "steps" (for a failed step's error). Each hold is
 * {"what": "gate"|"failed"|"cannot_run"|"alert", "step": n or null,
 * "kind": the step's or the alert's kind, "alert": id or null, "says":
 * what holds it, "todo": what a person does about it}, in the order a
 * person should take them. An archived plan has none. DOC keeps its
 * other members; returns 0, or -1 when out of memory. */
int view_holds(json_t *doc);

/* DOC's rank once view_holds has set its "holds" (and from its "status"
 * and "archived_ms" when nothing holds it). */
enum view_hold_rank view_holds_rank(const json_t *doc);

/* The name the plan list gives RANK as a plan's "attention" (the page's
 * filter by state): "approval", "failed", "alert", "running",
 * "finished". */
const char *view_holds_rank_name(enum view_hold_rank rank);

#endif
