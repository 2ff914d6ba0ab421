/* plan_section: plan_section.h — what the flag kinds' section loaders
 * (plan_flag.c) read their section with: keys, text, secrets, URLs, HTTP
 * calls, the flag read and headers, on top of plan_yaml.c's reader. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "plan.h"
#include "plan_load_int.h"
#include "plan_flag.h"
#include "plan_section.h"

static void
load_call(struct loader *ld, const struct sect *flag, const char *key, const char *path,
    struct plan_http_call *call)
{
	static const char *const keys[] = { "method", "url", "body", NULL };
	static const char *const methods[] = { "GET", "POST", "PUT", "PATCH", "DELETE", NULL };
	static const char mexpect[] = "GET, POST, PUT, PATCH or DELETE";
	yaml_node_t *n;
	const char *t;
	char what[64];
	size_t i;
	struct sect s;

	if (py_get_map(ld, flag, key, 1, "{ method: PUT, url: http://..., body: '...' }",
	    path, &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	if ((n = py_field(ld, &s, "method", 1, mexpect)) != NULL &&
	    (t = py_conv_text(ld, n, py_label(what, sizeof(what), &s, "method"), mexpect)) != NULL) {
		for (i = 0; methods[i] != NULL; i++)
			if (strcmp(methods[i], t) == 0)
				break;
		if (methods[i] == NULL)
			py_err_at(ld, n, "%s '%.40s' is not supported; expected %s", what, t,
			    mexpect);
		else
			call->method = py_copy(ld, t);
	}
	py_get_url(ld, &s, "url", 1, URL_HTTP, &call->url);
	if ((n = py_field(ld, &s, "body", 0, NULL)) != NULL)
		py_conv_dup(ld, n, py_label(what, sizeof(what), &s, "body"), "the request body "
		    "as a string, such as '{\"enabled\":true}'", &call->body);
}

static void
load_read(struct loader *ld, const struct sect *flag, struct plan_flag_http *h)
{
	static const char *const keys[] = { "url", "pointer", "on", "off", NULL };
	static const char pexpect[] = "a JSON pointer such as /enabled, or '' for the "
	    "whole document";
	yaml_node_t *n, *on, *off;
	const char *t;
	size_t i;
	struct sect s;

	if (py_get_map(ld, flag, "read", 1, "{ url: http://..., pointer: /enabled, on: "
	    "true, off: false }", "flag.read", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	py_get_url(ld, &s, "url", 1, URL_HTTP, &h->read_url);
	if ((n = py_field(ld, &s, "pointer", 1, pexpect)) != NULL) {
		if (n->type != YAML_SCALAR_NODE)
			py_err_at(ld, n, "flag.read.pointer is %s; expected %s", py_kind_name(n),
			    pexpect);
		else if (py_is_null(n))
			py_err_at(ld, n, "flag.read.pointer has no value; expected %s", pexpect);
		else {
			t = py_text(n);
			for (i = 0; t[i] != '\0'; i++)
				if (t[i] == '~' && t[i + 1] != '0' && t[i + 1] != '1')
					break;
			if (t[0] != '\0' && t[0] != '/')
				py_err_at(ld, n, "flag.read.pointer '%.60s' does not start with "
				    "'/'; expected %s", t, pexpect);
			else if (t[i] != '\0')
				py_err_at(ld, n, "flag.read.pointer '%.60s' has a '~' not "
				    "followed by 0 or 1; expected %s", t, pexpect);
			else if (strlen(t) != n->data.scalar.length)
				py_err_at(ld, n, "flag.read.pointer contains a NUL character; "
				    "expected %s", pexpect);
			else
				h->read_pointer = py_copy(ld, t);
		}
	}
	on = py_field(ld, &s, "on", 1, "the JSON value read when the flag is on, such as true");
	off = py_field(ld, &s, "off", 1, "the JSON value read when the flag is off, such "
	    "as false");
	if (on != NULL)
		py_conv_json(ld, on, "flag.read.on", &h->read_on);
	if (off != NULL)
		py_conv_json(ld, off, "flag.read.off", &h->read_off);
	if (h->read_on != NULL && h->read_off != NULL &&
	    strcmp(h->read_on, h->read_off) == 0)
		py_err_at(ld, off, "flag.read.on and flag.read.off are both %.60s; expected "
		    "two different values", h->read_on);
}

/* Header names whose values are credentials. */
static bool
secret_header(const char *name)
{
	static const char *const words[] = { "auth", "token", "secret", "passw",
	    "cookie", "session", "api-key", "apikey", "api_key", NULL };
	size_t i, j, len = strlen(name), wl;

	for (i = 0; words[i] != NULL; i++) {
		wl = strlen(words[i]);
		for (j = 0; j + wl <= len; j++)
			if (strncasecmp(name + j, words[i], wl) == 0)
				return true;
	}
	return false;
}

static bool
token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static void
load_headers(struct loader *ld, yaml_node_t *n, struct plan_flag_http *hs)
{
	static const char expect[] = "a mapping of header name to value, such as "
	    "{ Authorization: env:FLAG_AUTH }";
	struct plan_header *h;
	yaml_node_pair_t *pair;
	yaml_node_t *k, *v;
	const char *name, *t;
	char what[96];
	size_t count, i;
	struct sect s = { n, "flag.headers" };

	if (n->type != YAML_MAPPING_NODE) {
		py_err_at(ld, n, "flag.headers is %s; expected %s", py_kind_name(n), expect);
		return;
	}
	py_check_keys(ld, &s, NULL);
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (count == 0)
		return;
	if ((hs->headers = calloc(count, sizeof(*h))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		k = py_node_at(ld, pair->key);
		v = py_node_at(ld, pair->value);
		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
			continue;	/* reported by check_keys */
		name = py_text(k);
		if (name[0] == '\0' || strlen(name) != k->data.scalar.length) {
			py_err_at(ld, k, "a header name in flag.headers is empty; expected "
			    "a header name such as Authorization");
			continue;
		}
		for (i = 0; name[i] != '\0' && token_char(name[i]); i++)
			;
		if (name[i] != '\0') {
			py_err_at(ld, k, "header name '%.60s' in flag.headers has '%c'; "
			    "expected letters, digits and !#$%%&'*+-.^_`|~", name, name[i]);
			continue;
		}
		for (i = 0; i < hs->nheaders; i++)
			if (strcasecmp(hs->headers[i].name, name) == 0)
				break;
		if (i < hs->nheaders) {
			if (strcmp(hs->headers[i].name, name) != 0)
				py_err_at(ld, k, "header '%.60s' in flag.headers repeats '%.60s' "
				    "(names are case-insensitive); expected each header once",
				    name, hs->headers[i].name);
			continue;
		}
		snprintf(what, sizeof(what), "flag.headers.%.60s", name);
		if ((t = py_conv_text(ld, v, what, "a header value or an env:NAME "
		    "reference")) == NULL)
			continue;
		if (strncmp(t, "env:", 4) == 0) {
			if (py_check_env_ref(ld, v, what, t) == -1)
				continue;
		} else if (secret_header(name) || strncasecmp(t, "Bearer ", 7) == 0 ||
		    strncasecmp(t, "Basic ", 6) == 0) {
			py_err_at(ld, v, "%s is a literal value; secrets must be env:NAME "
			    "references, expected e.g. env:FLAG_AUTH", what);
			continue;
		}
		h = &hs->headers[hs->nheaders];
		h->name = py_copy(ld, name);
		h->value = py_copy(ld, t);
		if (h->name == NULL || h->value == NULL) {
			free(h->name);
			free(h->value);
			h->name = h->value = NULL;
			continue;
		}
		hs->nheaders++;
	}
}

struct plan *
plan_section_plan(const struct plan_section *ps)
{
	return ps->ld->p;
}

void
plan_section_keys(const struct plan_section *ps, const char *const *keys)
{
	py_check_keys(ps->ld, ps->s, keys);
}

void
plan_section_text(const struct plan_section *ps, const char *key, bool required,
    const char *expect, char **out)
{
	py_get_text(ps->ld, ps->s, key, required, expect, out);
}

void
plan_section_secret(const struct plan_section *ps, const char *key, bool required,
    const char *example, char **out)
{
	py_get_secret(ps->ld, ps->s, key, required, example, out);
}

void
plan_section_url(const struct plan_section *ps, const char *key, bool required,
    bool base, char **out)
{
	py_get_url(ps->ld, ps->s, key, required, base ? URL_HTTP_BASE : URL_HTTP, out);
}

void
plan_section_http_call(const struct plan_section *ps, const char *key,
    const char *path, struct plan_http_call *call)
{
	load_call(ps->ld, ps->s, key, path, call);
}

void
plan_section_flag_read(const struct plan_section *ps, struct plan_flag_http *h)
{
	load_read(ps->ld, ps->s, h);
}

void
plan_section_flag_headers(const struct plan_section *ps, struct plan_flag_http *h)
{
	yaml_node_t *n;

	if ((n = py_field(ps->ld, ps->s, "headers", 0, NULL)) != NULL)
		load_headers(ps->ld, n, h);
}

void
plan_section_flag_settle(const struct plan_section *ps)
{
	struct plan *p = ps->ld->p;
	yaml_node_t *n;

	if ((n = py_field(ps->ld, ps->s, "settle", 0, NULL)) == NULL ||
	    py_conv_duration(ps->ld, n, "flag.settle", &p->flag.settle_ms) != 0)
		return;
	if (p->flag.settle_ms < PLAN_MIN_FLAG_SETTLE_MS)
		py_err_at(ps->ld, n, "flag.settle must be at least 15s: the flag client "
		    "waits 10 s for a write's answer, and a write it gave up on may "
		    "still be applied after that");
}

void
plan_section_flag_tls(const struct plan_section *ps, const char *const *urls,
    size_t n)
{
	struct plan *p = ps->ld->p;

	pt_load_tls(ps->ld, ps->s, "flag.tls", &p->flag.tls);
	pt_check_used(ps->ld, ps->s, "flag.tls", &p->flag.tls, urls, n);
}
