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
#define STEP_KIND(id, name, run, prepare, flags, ...) \
	[PLAN_STEP_##id] = { #name, run, prepare, flags },
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

/* The kinds that can say, before approval, what they would do now. */
static const struct {
	enum plan_step_kind kind;
	step_fn preview;
} previews[] = {
	{ PLAN_STEP_REMOVE_OLD, step_remove_old_preview },
};

step_fn
step_kind_preview(enum plan_step_kind kind)
{
	for (size_t i = 0; i < sizeof(previews) / sizeof(previews[0]); i++)
		if (previews[i].kind == kind)
			return previews[i].preview;
	return NULL;
}
