/* step_kinds: the engine's columns of the step-kind table (step_kinds.def):
 * how to run a step of each kind, what inputs to prepare for it, and how
 * the engine treats it. */
#ifndef CUTOVER_STEP_KINDS_H
#define CUTOVER_STEP_KINDS_H

#include "step.h"

/* FLAGS of a row. */
#define STEP_KIND_BROKER		0x1	/* the engine opens the broker
						 * connections before it runs */
#define STEP_KIND_OUTLIVES_BROKER	0x2	/* an unreachable broker raises
						 * broker_unreachable and the step
						 * goes on (as if it set
						 * ctx.again) */
#define STEP_KIND_RECORDS_REMOVED	0x4	/* its result's entries are
						 * recorded as removals */

struct step_kind {
	const char *name;
	step_fn run;
	step_prepare_fn prepare;	/* NULL: nothing to prepare */
	unsigned flags;			/* STEP_KIND_* */
};

/* The row of KIND. Returns NULL for a value that is not a kind. */
const struct step_kind *step_kind_of(enum plan_step_kind kind);

/* What a step of KIND would do now, run by the engine while the step waits
 * at its gate (its result's "preview"): a step_fn that changes nothing, or
 * NULL when the kind has none. */
step_fn step_kind_preview(enum plan_step_kind kind);

#endif
