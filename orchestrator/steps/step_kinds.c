/* step_kinds: the engine's columns of the step-kind table, built from
 * step_kinds.def (one row per kind; see there how to add one). */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

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

json_t *
step_state_load(enum plan_step_kind kind, const char *text)
{
	const struct step_kind *sk = step_kind_of(kind);
	char *rest;
	json_t *j;

	if (sk == NULL || !(sk->flags & STEP_KIND_STATE_ENTRIES))
		return json_loads(text, 0, NULL);
	/* The entries' tree would be most of the run's memory. */
	if ((rest = strdup(text)) == NULL)
		return NULL;
	(void)store_json_empty_rows(rest);
	j = json_loads(rest, 0, NULL);
	free(rest);
	return j;
}
