/* step_kinds: the engine's columns of the step-kind table, built from
 * step_kinds.def (one row per kind; see there how to add one). */
#include <stddef.h>

#include "step_kinds.h"

/* Each row's run function, declared from the table (step.h's signature). */
#define STEP_KIND(id, name, run, ...) \
	int run(struct step_ctx *c, json_t **result, char *err, size_t errlen);
#include "step_kinds.def"
#undef STEP_KIND

static const struct step_kind kinds[PLAN_STEP_KIND_COUNT] = {
#define STEP_KIND(id, name, run, prepare, preview, events, flags, ...) \
	[PLAN_STEP_##id] = { #name, run, prepare, preview, events, flags },
#include "step_kinds.def"
#undef STEP_KIND
};

const struct step_kind *
step_kind_of(enum plan_step_kind kind)
{
	if ((int)kind < 0 || kind >= PLAN_STEP_KIND_COUNT)
		return NULL;
	return &kinds[kind];
}
