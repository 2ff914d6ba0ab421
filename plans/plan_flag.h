/* plan_flag: the plan side of each flag provider — the keys of its flag
 * section and the loader that reads them — in one table found by the name
 * flag.kind gives. The provider's operations (set, read, ...) are
 * orchestrator/flag/flag_provider.h's, found by the same name; this half
 * lives with the plans so that admitting a plan links no flag client. */
#ifndef CUTOVER_PLAN_FLAG_H
#define CUTOVER_PLAN_FLAG_H

#include <stddef.h>

#include "plan_section.h"

/* Keys of all providers' plan sections together, at most. */
#define PLAN_FLAG_KEYS_MAX	32

/* Each provider's settings, its plan section as loaded: what
 * p->flag.settings points to when p->flag.kind names it. A new provider
 * adds its own struct and row here, and no field to plan.h. */
struct plan_flag_unleash {
	char *url, *project, *environment, *feature, *token;
};

struct plan_flag_http {
	struct plan_http_call on, off;
	char *read_url, *read_pointer;
	char *read_on, *read_off;	/* expected JSON values, as JSON text */
	struct plan_header *headers;
	size_t nheaders;
};

struct plan_flag_kind {
	/* As written in a plan's flag.kind ("unleash"). */
	const char *name;

	/* The keys its section may have, "kind" first; NULL ends. */
	const char *const *keys;

	/* The size of its settings struct, allocated zeroed as
	 * p->flag.settings before LOAD runs. */
	size_t size;

	/* Reads its section (the keys are checked already) into SETTINGS,
	 * reporting errors with plan_section.h. */
	void (*load)(const struct plan_section *ps, void *settings);

	/* Frees what SETTINGS holds (not SETTINGS itself). */
	void (*release)(void *settings);

	/* Its URLs (NULL when absent) into OUT, at most MAX. Returns how
	 * many: what flag.tls is checked against. */
	size_t (*urls)(const void *settings, const char **out, size_t max);
};

/* P's settings when its flag is of kind unleash, else NULL. */
struct plan_flag_unleash *plan_flag_unleash(const struct plan *p);

/* P's settings when its flag is of kind http, else NULL. */
struct plan_flag_http *plan_flag_http(const struct plan *p);

/* The URLs of P's flag (its kind's urls) into OUT, at most MAX. Returns
 * how many (0 without a flag). */
size_t plan_flag_urls(const struct plan *p, const char **out, size_t max);

/* Frees P's flag settings (plan_free does). */
void plan_flag_free(struct plan *p);

/* The kind named NAME, or NULL when there is none. */
const struct plan_flag_kind *plan_flag_kind_find(const char *name);

/* The kinds' names for messages ("unleash or http") into OUT (OUTLEN
 * bytes). Returns OUT. */
const char *plan_flag_kinds(char *out, size_t outlen);

/* Every key any kind's section may have, each once, in table order, into
 * OUT (at most MAX - 1 of them, then NULL). */
void plan_flag_keys(const char **out, size_t max);

#endif
