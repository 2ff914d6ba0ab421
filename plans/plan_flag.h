/* plan_flag: the plan side of each flag provider — the keys of its flag
 * section and the loader that reads them — in one table found by the name
 * flag.kind gives. The provider's operations (set, read, ...) are
 * orchestrator/flag_provider.h's, found by the same name; this half lives
 * with the plans so that admitting a plan links no flag client. */
#ifndef CUTOVER_PLAN_FLAG_H
#define CUTOVER_PLAN_FLAG_H

#include <stddef.h>

#include "plan_section.h"

/* Keys of all providers' plan sections together, at most. */
#define PLAN_FLAG_KEYS_MAX	32

struct plan_flag_kind {
	/* As written in a plan's flag.kind ("unleash"). */
	const char *name;

	/* The keys its section may have, "kind" first; NULL ends. */
	const char *const *keys;

	/* Reads its section (the keys are checked already) into the plan
	 * (plan_section_plan), reporting errors with plan_section.h. */
	void (*load)(const struct plan_section *ps);
};

/* The kind named NAME, or NULL when there is none. */
const struct plan_flag_kind *plan_flag_kind_find(const char *name);

/* The kinds' names for messages ("unleash or http") into OUT (OUTLEN
 * bytes). Returns OUT. */
const char *plan_flag_kinds(char *out, size_t outlen);

/* Every key any kind's section may have, each once, in table order, into
 * OUT (at most MAX - 1 of them, then NULL). */
void plan_flag_keys(const char **out, size_t max);

#endif
