/* plan_flag: the flag section of a plan, per provider (see plan_flag.h):
 * unleash and http, one row each. */
#include <stdio.h>
#include <string.h>

#include "plan_flag.h"

static const char *const unleash_keys[] = { "kind", "url", "project",
    "environment", "feature", "token", "tls", NULL };

static void
unleash_load(const struct plan_section *ps)
{
	struct plan *p = plan_section_plan(ps);

	plan_section_url(ps, "url", true, true, &p->flag.url);
	plan_section_text(ps, "project", true, "the Unleash project, such as "
	    "default", &p->flag.project);
	plan_section_text(ps, "environment", true, "the Unleash environment, "
	    "such as production", &p->flag.environment);
	plan_section_text(ps, "feature", true, "the feature toggle's name",
	    &p->flag.feature);
	plan_section_secret(ps, "token", true, "env:UNLEASH_TOKEN",
	    &p->flag.token);
	plan_section_flag_tls(ps);
}

static const char *const http_keys[] = { "kind", "on", "off", "read",
    "headers", "tls", NULL };

static void
http_load(const struct plan_section *ps)
{
	struct plan *p = plan_section_plan(ps);

	plan_section_http_call(ps, "on", "flag.on", &p->flag.on);
	plan_section_http_call(ps, "off", "flag.off", &p->flag.off);
	plan_section_flag_read(ps);
	plan_section_flag_headers(ps);
	plan_section_flag_tls(ps);
}

/* Every flag kind a plan may name, by flag.kind. */
static const struct plan_flag_kind kinds[] = {
	{ "unleash", unleash_keys, unleash_load },
	{ "http", http_keys, http_load },
};

#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

const struct plan_flag_kind *
plan_flag_kind_find(const char *name)
{
	if (name == NULL)
		return NULL;
	for (size_t i = 0; i < NKINDS; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

const char *
plan_flag_kinds(char *out, size_t outlen)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NKINDS && off < outlen; i++)
		off += (size_t)snprintf(out + off, outlen - off, "%s%s",
		    i == 0 ? "" : i + 1 == NKINDS ? " or " : ", ", kinds[i].name);
	return out;
}

void
plan_flag_keys(const char **out, size_t max)
{
	size_t i, j, k, n = 0;

	for (i = 0; i < NKINDS; i++)
		for (j = 0; kinds[i].keys[j] != NULL && n + 1 < max; j++) {
			for (k = 0; k < n; k++)
				if (strcmp(out[k], kinds[i].keys[j]) == 0)
					break;
			if (k == n)
				out[n++] = kinds[i].keys[j];
		}
	out[n] = NULL;
}
