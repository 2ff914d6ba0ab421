/* plan_flag: the flag section of a plan, per provider (see plan_flag.h):
 * unleash and http, one row each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_flag.h"

/* The section's tls map, checked against the URLs its kind's URLS reads
 * out of SETTINGS (as loaded so far): the kind hands them over, so that
 * plan_section.c needs nothing of this table. */
static void
urls_tls(const struct plan_section *ps, const void *settings,
    size_t (*urls)(const void *settings, const char **out, size_t max))
{
	const char *v[8];

	plan_section_flag_tls(ps, v, urls(settings, v, sizeof(v) / sizeof(v[0])));
}

static size_t unleash_urls(const void *settings, const char **out, size_t max);
static size_t http_urls(const void *settings, const char **out, size_t max);

static const char *const unleash_keys[] = { "kind", "url", "project",
    "environment", "feature", "token", "tls", "settle", NULL };

static void
unleash_load(const struct plan_section *ps, void *settings)
{
	struct plan_flag_unleash *u = settings;

	plan_section_url(ps, "url", true, true, &u->url);
	plan_section_text(ps, "project", true, "the Unleash project, such as "
	    "default", &u->project);
	plan_section_text(ps, "environment", true, "the Unleash environment, "
	    "such as production", &u->environment);
	plan_section_text(ps, "feature", true, "the feature toggle's name",
	    &u->feature);
	plan_section_secret(ps, "token", true, "env:UNLEASH_TOKEN", &u->token);
	urls_tls(ps, settings, unleash_urls);
	plan_section_flag_settle(ps);
}

static void
unleash_release(void *settings)
{
	struct plan_flag_unleash *u = settings;

	free(u->url);
	free(u->project);
	free(u->environment);
	free(u->feature);
	free(u->token);
}

static size_t
unleash_urls(const void *settings, const char **out, size_t max)
{
	const struct plan_flag_unleash *u = settings;

	if (max < 1)
		return 0;
	out[0] = u->url;
	return 1;
}

static const char *const http_keys[] = { "kind", "on", "off", "read",
    "headers", "tls", "settle", NULL };

static void
http_load(const struct plan_section *ps, void *settings)
{
	struct plan_flag_http *h = settings;

	plan_section_http_call(ps, "on", "flag.on", &h->on);
	plan_section_http_call(ps, "off", "flag.off", &h->off);
	plan_section_flag_read(ps, h);
	plan_section_flag_headers(ps, h);
	urls_tls(ps, settings, http_urls);
	plan_section_flag_settle(ps);
}

static void
free_call(struct plan_http_call *c)
{
	free(c->method);
	free(c->url);
	free(c->body);
}

static void
http_release(void *settings)
{
	struct plan_flag_http *h = settings;

	free_call(&h->on);
	free_call(&h->off);
	free(h->read_url);
	free(h->read_pointer);
	free(h->read_on);
	free(h->read_off);
	for (size_t i = 0; i < h->nheaders; i++) {
		free(h->headers[i].name);
		free(h->headers[i].value);
	}
	free(h->headers);
}

static size_t
http_urls(const void *settings, const char **out, size_t max)
{
	const struct plan_flag_http *h = settings;
	const char *v[] = { h->on.url, h->off.url, h->read_url };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]) && n < max; i++)
		out[n++] = v[i];
	return n;
}

/* Every flag kind a plan may name, by flag.kind. */
static const struct plan_flag_kind kinds[] = {
	{ "unleash", unleash_keys, sizeof(struct plan_flag_unleash), unleash_load,
	    unleash_release, unleash_urls },
	{ "http", http_keys, sizeof(struct plan_flag_http), http_load, http_release,
	    http_urls },
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

/* P's settings when its flag is of kind NAME, else NULL. */
static void *
settings_of(const struct plan *p, const char *name)
{
	if (p == NULL || p->flag.kind == NULL || strcmp(p->flag.kind, name) != 0)
		return NULL;
	return p->flag.settings;
}

struct plan_flag_unleash *
plan_flag_unleash(const struct plan *p)
{
	return settings_of(p, "unleash");
}

struct plan_flag_http *
plan_flag_http(const struct plan *p)
{
	return settings_of(p, "http");
}

size_t
plan_flag_urls(const struct plan *p, const char **out, size_t max)
{
	const struct plan_flag_kind *k = plan_flag_kind_find(p->flag.kind);

	if (k == NULL || p->flag.settings == NULL)
		return 0;
	return k->urls(p->flag.settings, out, max);
}

void
plan_flag_free(struct plan *p)
{
	const struct plan_flag_kind *k = plan_flag_kind_find(p->flag.kind);

	if (k != NULL && p->flag.settings != NULL)
		k->release(p->flag.settings);
	free(p->flag.settings);
	p->flag.settings = NULL;
}
