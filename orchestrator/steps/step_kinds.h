/* step_kinds: the engine's columns of the step-kind table (step_kinds.def):
 * how to run a step of each kind, what inputs to prepare for it, what it
 * shows at its gate, what it records when it ends, and how the engine
 * treats it. */
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
#define STEP_KIND_KEEPS_STATE		0x4	/* a retry keeps its last result
						 * as the state it starts from
						 * (the watch: its start and the
						 * last entry into the old path,
						 * so its deadline, survive) */
#define STEP_KIND_ENDS_OLD_PATH		0x8	/* once it has started, an abort
						 * leaves producers on the
						 * ladder: it takes away the old
						 * path a rollback would send
						 * them back to (remove_old) */
#define STEP_KIND_STATE_ENTRIES		0x10	/* its last result's long
						 * list, an entry per old
						 * queue, is read a part at a
						 * time (step_state_each): its
						 * state's tree has it empty
						 * (move_old's "queues", the
						 * watch's and remove_old's
						 * "entries") */
#define STEP_KIND_RESULT_ROWS		0x20	/* its result's long list (an
						 * entry per old queue) is
						 * handed over and stored a row
						 * each (ctx.rows_wanted):
						 * measure_horizon's and
						 * move_old's "queues",
						 * remove_old's "entries" */

struct step_kind {
	const char *name;
	step_fn run;
	step_prepare_fn prepare;	/* NULL: nothing to prepare */
	step_fn preview;		/* NULL: nothing to show at its gate */
	step_events_fn events;		/* NULL: its result records no events */
	unsigned flags;			/* STEP_KIND_* */
};

/* The row of KIND. Returns NULL for a value that is not a kind. */
const struct step_kind *step_kind_of(enum plan_step_kind kind);

/* A step of KIND's last result TEXT as the tree it runs from (C->state):
 * whole, or, for a kind that reads its long list apart
 * (STEP_KIND_STATE_ENTRIES: the list its rows are kept in), with that
 * list empty (the step reads it from TEXT, which the caller hands it as
 * C->state_text: step_state_each). A new reference, NULL when TEXT does
 * not parse. */
json_t *step_state_load(enum plan_step_kind kind, const char *text);

#endif
