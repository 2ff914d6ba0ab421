/* plan_load: reads a migration plan (DESIGN.md §2) from YAML into struct
 * plan with libyaml's document API. Every key, type and value is checked
 * where it is written, and every error is collected with the line and
 * column of the node it is about: the key for an unknown or refused key,
 * the value for a bad value, the mapping for a missing key. The checks on
 * the plan as a whole are plan_validate's, in plan.c. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "duration.h"
#include "plan_flag.h"
#include "ladder.h"
#include "pattern.h"
#include "plan.h"
#include "plan_section.h"

#define PLAN_FILE_MAX		(4 * 1024 * 1024)	/* a plan is a page of text */
#define QUEUE_NAME_MAX		255			/* AMQP short string */

struct loader {
	yaml_document_t		*doc;
	struct plan		*p;
	struct plan_errors	*errs;
	int			 oom;
	yaml_node_t		*match;		/* old.queues.match, when valid */
	yaml_node_t		*names;		/* old.queues.names, when given */
};

/* A mapping being read, and its path in messages ("" for the plan itself). */
struct sect {
	yaml_node_t		*map;
	const char		*path;
};

enum url_kind {
	URL_AMQP,		/* amqp(s)://host[:port]/vhost */
	URL_HTTP_BASE,		/* http(s)://host[:port][/path] */
	URL_HTTP		/* http(s)://host[:port][/path][?query] */
};

static void err_at(struct loader *, const yaml_node_t *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

static int
mark_num(size_t v)
{
	return v < INT_MAX ? (int)v + 1 : INT_MAX;
}

/* Records an error about node N (NULL: no position). */
static void
err_at(struct loader *ld, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[sizeof(((struct plan_error *)0)->message)];
	va_list ap;
	int line = 0, col = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n != NULL) {
		line = mark_num(n->start_mark.line);
		col = mark_num(n->start_mark.column);
	}
	if (plan_errors_add(ld->errs, line, col, "%s", msg) == -1)
		ld->oom = 1;
}

static char *
copy(struct loader *ld, const char *s)
{
	char *d;

	if ((d = strdup(s)) == NULL)
		ld->oom = 1;
	return d;
}

static yaml_node_t *
node_at(struct loader *ld, int i)
{
	return yaml_document_get_node(ld->doc, i);
}

static const char *
text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static int
plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static const char *
kind_name(const yaml_node_t *n)
{
	switch (n->type) {
	case YAML_SCALAR_NODE:
		return "a scalar";
	case YAML_SEQUENCE_NODE:
		return "a list";
	case YAML_MAPPING_NODE:
		return "a mapping";
	default:
		return "nothing";
	}
}

/* YAML's null: an unquoted empty value, ~ or null. */
static int
is_null(const yaml_node_t *n)
{
	const char *t;

	if (n->type != YAML_SCALAR_NODE || !plain(n))
		return 0;
	t = text(n);
	return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
	    strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

static const char *
label(char *buf, size_t len, const struct sect *s, const char *key)
{
	if (s->path[0] == '\0')
		snprintf(buf, len, "%s", key);
	else
		snprintf(buf, len, "%s.%s", s->path, key);
	return buf;
}

static const char *
where(const struct sect *s)
{
	return s->path[0] != '\0' ? s->path : "the plan";
}

static yaml_node_pair_t *
find_pair(struct loader *ld, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *pair;
	yaml_node_t *k;

	for (pair = map->data.mapping.pairs.start;
	    pair < map->data.mapping.pairs.top; pair++) {
		k = node_at(ld, pair->key);
		if (k != NULL && k->type == YAML_SCALAR_NODE && strcmp(text(k), key) == 0)
			return pair;
	}
	return NULL;
}

/* Reports keys of S that are not scalars, repeated, or (when KEYS is not
 * NULL) not among KEYS. */
static void
check_keys(struct loader *ld, const struct sect *s, const char *const *keys)
{
	yaml_node_pair_t *pair, *prev;
	yaml_node_t *k, *pk;
	char list[256];
	size_t i, off = 0;

	list[0] = '\0';
	for (i = 0; keys != NULL && keys[i] != NULL && off < sizeof(list); i++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s",
		    i ? ", " : "", keys[i]);
	for (pair = s->map->data.mapping.pairs.start;
	    pair < s->map->data.mapping.pairs.top; pair++) {
		if ((k = node_at(ld, pair->key)) == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			err_at(ld, k, "a key in %s is %s; expected a plain name",
			    where(s), kind_name(k));
			continue;
		}
		pk = NULL;
		for (prev = s->map->data.mapping.pairs.start; prev < pair; prev++) {
			pk = node_at(ld, prev->key);
			if (pk != NULL && pk->type == YAML_SCALAR_NODE &&
			    strcmp(text(pk), text(k)) == 0)
				break;
			pk = NULL;
		}
		if (pk != NULL) {
			err_at(ld, k, "duplicate key '%.64s' in %s (first at line %d); "
			    "expected each key once", text(k), where(s),
			    mark_num(pk->start_mark.line));
			continue;
		}
		if (keys == NULL)
			continue;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], text(k)) == 0)
				break;
		if (keys[i] == NULL)
			err_at(ld, k, "unknown key '%.64s' in %s; expected one of: %s",
			    text(k), where(s), list);
	}
}

/* The value of KEY in S, or NULL. A missing KEY is reported when REQUIRED,
 * EXPECT saying what it should hold. */
static yaml_node_t *
field(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect)
{
	yaml_node_pair_t *pair;

	if ((pair = find_pair(ld, s->map, key)) != NULL)
		return node_at(ld, pair->value);
	if (required)
		err_at(ld, s->map, "missing required key '%s' in %s; expected %s: %s",
		    key, where(s), key, expect);
	return NULL;
}

/* Fills SUB with KEY of S when it is a mapping and returns 1; returns 0
 * when it is absent (reported when REQUIRED), -1 when it is not a mapping. */
static int
get_map(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, const char *path, struct sect *sub)
{
	yaml_node_t *n;

	sub->map = NULL;
	sub->path = path;
	if ((n = field(ld, s, key, required, expect)) == NULL)
		return 0;
	if (n->type != YAML_MAPPING_NODE) {
		err_at(ld, n, "%s %s; expected %s", path,
		    is_null(n) ? "has no value" : n->type == YAML_SCALAR_NODE ?
		    "is a scalar" : "is a list", expect);
		return -1;
	}
	sub->map = n;
	return 1;
}

/* The text of scalar N, or NULL after reporting that WHAT is not a
 * non-empty string. */
static const char *
conv_text(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect)
{
	if (n->type != YAML_SCALAR_NODE) {
		err_at(ld, n, "%s is %s; expected %s", what, kind_name(n), expect);
		return NULL;
	}
	if (is_null(n)) {
		err_at(ld, n, "%s has no value; expected %s", what, expect);
		return NULL;
	}
	if (n->data.scalar.length == 0) {
		err_at(ld, n, "%s is empty; expected %s", what, expect);
		return NULL;
	}
	if (strlen(text(n)) != n->data.scalar.length) {
		err_at(ld, n, "%s contains a NUL character; expected %s", what, expect);
		return NULL;
	}
	return text(n);
}

static int
conv_dup(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect,
    char **out)
{
	const char *t;

	if ((t = conv_text(ld, n, what, expect)) == NULL)
		return -1;
	free(*out);
	*out = copy(ld, t);
	return 0;
}

/* A duration greater than zero. */
static int
conv_duration(struct loader *ld, const yaml_node_t *n, const char *what, int64_t *out)
{
	const char *t;
	char err[256];
	int64_t ms;

	if ((t = conv_text(ld, n, what, "a duration such as 500ms, 10s, 2m, 1h or 12d")) == NULL)
		return -1;
	if (duration_parse(t, &ms, err, sizeof(err)) == -1) {
		err_at(ld, n, "%s is not a valid duration: %s", what, err);
		return -1;
	}
	if (ms <= 0) {
		err_at(ld, n, "%s is %s; expected a duration greater than 0", what, t);
		return -1;
	}
	*out = ms;
	return 0;
}

/* An unquoted decimal integer from LO to HI. */
static int
conv_int(struct loader *ld, const yaml_node_t *n, const char *what, int lo, int hi,
    int *out)
{
	const char *t, *d;
	char expect[64];
	long long v = 0;

	snprintf(expect, sizeof(expect), "an integer from %d to %d", lo, hi);
	if ((t = conv_text(ld, n, what, expect)) == NULL)
		return -1;
	d = t[0] == '-' ? t + 1 : t;
	if (!plain(n) || *d == '\0' || strspn(d, "0123456789") != strlen(d)) {
		err_at(ld, n, "%s '%.40s' is not an integer; expected %s, unquoted",
		    what, t, expect);
		return -1;
	}
	for (; *d != '\0' && v <= (long long)INT_MAX; d++)
		v = v * 10 + (*d - '0');
	if (t[0] == '-')
		v = -v;
	if (*d != '\0' || v < lo || v > hi) {
		err_at(ld, n, "%s %.40s is out of range; expected %s", what, t, expect);
		return -1;
	}
	*out = (int)v;
	return 0;
}

static int
conv_bool(struct loader *ld, const yaml_node_t *n, const char *what, bool *out)
{
	const char *t;

	if ((t = conv_text(ld, n, what, "true or false")) == NULL)
		return -1;
	if (plain(n) && strcmp(t, "true") == 0)
		*out = true;
	else if (plain(n) && strcmp(t, "false") == 0)
		*out = false;
	else {
		err_at(ld, n, "%s '%.40s' is not a boolean; expected true or false, "
		    "unquoted", what, t);
		return -1;
	}
	return 0;
}

/* NAME of env:NAME: [A-Za-z_][A-Za-z0-9_]*. */
static int
env_name_ok(const char *s)
{
	size_t i;

	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return 0;
	for (i = 1; s[i] != '\0'; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* Checks an env:NAME reference written at N. Returns 0 or -1. */
static int
check_env_ref(struct loader *ld, const yaml_node_t *n, const char *what, const char *t)
{
	if (env_name_ok(t + 4))
		return 0;
	err_at(ld, n, "%s '%.64s' is not a valid env reference; expected env:NAME, "
	    "NAME of letters, digits and '_' not starting with a digit", what, t);
	return -1;
}

/* A secret: an env:NAME reference, never a literal (which is not echoed). */
static int
conv_secret(struct loader *ld, const yaml_node_t *n, const char *what,
    const char *example, char **out)
{
	char expect[96];
	const char *t;

	snprintf(expect, sizeof(expect), "an env:NAME reference such as %s", example);
	if ((t = conv_text(ld, n, what, expect)) == NULL)
		return -1;
	if (strncmp(t, "env:", 4) != 0) {
		err_at(ld, n, "%s is a literal value; secrets must be env:NAME "
		    "references, expected e.g. %s", what, example);
		return -1;
	}
	if (check_env_ref(ld, n, what, t) == -1)
		return -1;
	free(*out);
	*out = copy(ld, t);
	return 0;
}

static int
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int
host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

/* Checks URL as KIND. Returns NULL, or what is wrong with it; *SECRET is
 * set when the URL carries credentials and must not be echoed. */
static const char *
check_url(const char *url, enum url_kind kind, int *secret)
{
	const char *p, *a, *host, *digits;
	long port;

	*secret = 0;
	/* Credentials first, so that no message repeats them. */
	a = strstr(url, "://");
	a = a != NULL ? a + 3 : url;
	for (p = a; *p != '\0' && *p != '/' && *p != '?' && *p != '#'; p++) {
		if (*p == '@') {
			*secret = 1;
			return "carries credentials (user:password@)";
		}
	}
	for (p = url; *p != '\0'; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return "contains a space or a control character";
	if (kind == URL_AMQP) {
		if (strncasecmp(url, "amqp://", 7) == 0)
			p = url + 7;
		else if (strncasecmp(url, "amqps://", 8) == 0)
			p = url + 8;
		else
			return "is not an amqp:// or amqps:// URL";
	} else {
		if (strncasecmp(url, "http://", 7) == 0)
			p = url + 7;
		else if (strncasecmp(url, "https://", 8) == 0)
			p = url + 8;
		else
			return "is not an http:// or https:// URL";
	}
	host = p;
	if (*p == '[') {
		for (p++; is_hex(*p) || *p == ':' || *p == '.'; p++)
			;
		if (*p != ']' || p == host + 1)
			return "has an invalid IPv6 host";
		p++;
	} else {
		while (host_char(*p))
			p++;
		if (p == host)
			return "has no host";
	}
	if (*p == ':') {
		digits = ++p;
		for (port = 0; *p >= '0' && *p <= '9' && port <= 65535; p++)
			port = port * 10 + (*p - '0');
		if (p == digits || port < 1 || port > 65535 || (*p >= '0' && *p <= '9'))
			return "has an invalid port";
	}
	if (*p != '\0' && *p != '/' && !(kind == URL_HTTP && *p == '?'))
		return "has an invalid character in its host";
	if (kind == URL_AMQP) {
		if (*p == '\0')
			return "has no vhost";
		if (*++p == '\0')
			return "has an empty vhost";
	}
	for (; *p != '\0'; p++) {
		if (*p == '%' && (!is_hex(p[1]) || !is_hex(p[2])))
			return "has a '%' that is not followed by two hex digits";
		if (*p == '#')
			return "has a fragment ('#')";
		if (kind != URL_HTTP && *p == '?')
			return "has a query ('?')";
		if (kind == URL_AMQP && *p == '/')
			return "has a '/' inside the vhost (write the vhost '/' as %2f)";
	}
	return NULL;
}

static const char *
url_expect(enum url_kind kind)
{
	switch (kind) {
	case URL_AMQP:
		return "amqp://host[:port]/vhost or amqps://host[:port]/vhost "
		    "(%2f for the vhost '/')";
	case URL_HTTP_BASE:
		return "http(s)://host[:port][/path]";
	default:
		return "http(s)://host[:port][/path][?query]";
	}
}

static int
conv_url(struct loader *ld, const yaml_node_t *n, const char *what, enum url_kind kind,
    char **out)
{
	const char *t, *why;
	int secret;

	if ((t = conv_text(ld, n, what, url_expect(kind))) == NULL)
		return -1;
	if ((why = check_url(t, kind, &secret)) != NULL) {
		if (secret)
			err_at(ld, n, "%s %s; expected %s, with credentials given "
			    "separately (%s)", what, why, url_expect(kind),
			    kind == URL_HTTP ? "in flag.headers as env:NAME references" :
			    "broker.username and broker.password");
		else
			err_at(ld, n, "%s '%.100s' %s; expected %s", what, t, why,
			    url_expect(kind));
		return -1;
	}
	free(*out);
	*out = copy(ld, t);
	return 0;
}

/* get_*: KEY of S, converted. Return 1 when set, 0 when absent (reported
 * when REQUIRED), -1 when invalid. */

static int
get_text(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = field(ld, s, key, required, expect)) == NULL)
		return 0;
	return conv_dup(ld, n, label(what, sizeof(what), s, key), expect, out) == 0 ? 1 : -1;
}

static int
get_duration(struct loader *ld, const struct sect *s, const char *key, int required,
    int64_t *out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = field(ld, s, key, required, "a duration such as 10s")) == NULL)
		return 0;
	return conv_duration(ld, n, label(what, sizeof(what), s, key), out) == 0 ? 1 : -1;
}

static int
get_secret(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *example, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = field(ld, s, key, required, example)) == NULL)
		return 0;
	return conv_secret(ld, n, label(what, sizeof(what), s, key), example, out) == 0 ?
	    1 : -1;
}

static int
get_url(struct loader *ld, const struct sect *s, const char *key, int required,
    enum url_kind kind, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = field(ld, s, key, required, url_expect(kind))) == NULL)
		return 0;
	return conv_url(ld, n, label(what, sizeof(what), s, key), kind, out) == 0 ? 1 : -1;
}

/* The node of KEY itself, for errors about a key that should not be there. */
static yaml_node_t *
key_node(struct loader *ld, yaml_node_pair_t *pair)
{
	return node_at(ld, pair->key);
}

/* Items of a sequence: a list that must not be empty. Returns the count, or
 * 0 after reporting. */
static size_t
seq_items(struct loader *ld, yaml_node_t *n, const char *what, const char *expect)
{
	size_t count;

	if (n->type != YAML_SEQUENCE_NODE) {
		err_at(ld, n, "%s %s; expected %s", what, is_null(n) ? "has no value" :
		    n->type == YAML_SCALAR_NODE ? "is a scalar" : "is a mapping", expect);
		return 0;
	}
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count == 0)
		err_at(ld, n, "%s is empty; expected %s", what, expect);
	return count;
}

static yaml_node_t *
seq_item(struct loader *ld, yaml_node_t *n, size_t i)
{
	return node_at(ld, n->data.sequence.items.start[i]);
}

static void
load_name(struct loader *ld, const struct sect *root)
{
	static const char expect[] = "1 to 64 characters of [a-z0-9._-]";
	const char *t;
	yaml_node_t *n;
	size_t len, i;

	if ((n = field(ld, root, "name", 1, "a plan name of 1 to 64 characters "
	    "[a-z0-9._-]")) == NULL)
		return;
	if ((t = conv_text(ld, n, "name", expect)) == NULL)
		return;
	len = strlen(t);
	if (len > PLAN_NAME_MAX) {
		err_at(ld, n, "name is %zu characters long; expected %s", len, expect);
		return;
	}
	for (i = 0; i < len; i++) {
		if ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
		    t[i] == '.' || t[i] == '_' || t[i] == '-')
			continue;
		if (t[i] > ' ' && t[i] < 0x7f)
			err_at(ld, n, "name '%s' contains '%c'; expected %s", t, t[i], expect);
		else
			err_at(ld, n, "name '%s' contains byte 0x%02x; expected %s", t,
			    (unsigned char)t[i], expect);
		return;
	}
	memcpy(ld->p->name, t, len + 1);
}

static void
load_broker(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "amqp", "management", "username",
	    "password", NULL };
	struct plan *p = ld->p;
	struct sect s;

	if (get_map(ld, root, "broker", 1, "a mapping with amqp, management, "
	    "username and password", "broker", &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	get_url(ld, &s, "amqp", 1, URL_AMQP, &p->broker.amqp);
	get_url(ld, &s, "management", 1, URL_HTTP_BASE, &p->broker.management);
	get_text(ld, &s, "username", 1, "the user for AMQP and the management API",
	    &p->broker.username);
	get_secret(ld, &s, "password", 1, "env:RABBIT_PASSWORD", &p->broker.password);
}

/* Does PAT, matched against a NAME_MAX_LEN-byte name of every byte the
 * pattern itself holds (the worst case of nested repetition is a long run
 * of what it repeats), stay within PCRE2's limits? Returns 0, or -1 with
 * WHY naming the subject that hit one. */
static int
match_cost_ok(struct pattern *pat, const char *t, char *why, size_t whylen)
{
	char subject[QUEUE_NAME_MAX + 1], seen[256] = { 0 }, msg[128];

	for (const unsigned char *c = (const unsigned char *)t; *c != '\0'; c++) {
		if (seen[*c] || *c < 0x20 || *c == 0x7f)
			continue;
		seen[*c] = 1;
		memset(subject, *c, QUEUE_NAME_MAX - 1);
		subject[QUEUE_NAME_MAX - 1] = '!';
		subject[QUEUE_NAME_MAX] = '\0';
		if (pattern_match(pat, subject, msg, sizeof(msg)) < 0) {
			snprintf(why, whylen, "%s on a %d-byte name of '%c' repeated", msg,
			    QUEUE_NAME_MAX, *c);
			return -1;
		}
	}
	return 0;
}

static void
load_match(struct loader *ld, yaml_node_t *n)
{
	static const char expect[] = "a PCRE2 pattern over queue names of at most "
	    "1024 bytes, such as '^delay\\.[0-9]+s$'";
	struct pattern *pat = NULL;
	const char *t;
	char why[256];

	if ((t = conv_text(ld, n, "old.queues.match", expect)) == NULL)
		return;
	if (pattern_compile(t, &pat, why, sizeof(why)) != 0) {
		err_at(ld, n, "old.queues.match '%.100s%s' is not a valid regex (%s); "
		    "expected %s", t, strlen(t) > 100 ? "..." : "", why, expect);
		return;
	}
	if (match_cost_ok(pat, t, why, sizeof(why)) != 0)
		err_at(ld, n, "old.queues.match '%.100s%s' costs too much to match (%s); "
		    "expected a pattern without nested repetition", t,
		    strlen(t) > 100 ? "..." : "", why);
	else {
		ld->p->old.match = copy(ld, t);
		ld->match = n;
	}
	pattern_free(pat);
}

static void
load_names(struct loader *ld, yaml_node_t *n)
{
	static const char expect[] = "a list of old queue names, such as [delay.5s, delay.30s]";
	struct plan *p = ld->p;
	const char *t;
	yaml_node_t *item;
	char what[64];
	size_t count, i, j;

	if ((count = seq_items(ld, n, "old.queues.names", expect)) == 0)
		return;
	ld->names = n;
	if ((p->old.names = calloc(count, sizeof(char *))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = seq_item(ld, n, i);
		snprintf(what, sizeof(what), "old.queues.names[%zu]", i);
		if ((t = conv_text(ld, item, what, "a queue name")) == NULL)
			continue;
		if (strlen(t) > QUEUE_NAME_MAX) {
			err_at(ld, item, "%s is %zu bytes long; expected a queue name of "
			    "at most %d bytes", what, strlen(t), QUEUE_NAME_MAX);
			continue;
		}
		for (j = 0; j < p->old.nnames; j++)
			if (strcmp(p->old.names[j], t) == 0)
				break;
		if (j < p->old.nnames) {
			err_at(ld, item, "%s '%.100s' is listed twice; expected distinct "
			    "queue names", what, t);
			continue;
		}
		if ((p->old.names[p->old.nnames] = copy(ld, t)) != NULL)
			p->old.nnames++;
	}
}

static void
load_old(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "queues", "max_message_ttl",
	    "allow_expiring", NULL };
	static const char *const qkeys[] = { "match", "names", NULL };
	static const char qexpect[] = "{ match: REGEX } or { names: [queue, ...] }";
	yaml_node_pair_t *pm, *pn;
	yaml_node_t *n;
	struct sect s, q;

	if (get_map(ld, root, "old", 1, "a mapping with queues and optionally "
	    "max_message_ttl", "old", &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	if (get_map(ld, &s, "queues", 1, qexpect, "old.queues", &q) > 0) {
		check_keys(ld, &q, qkeys);
		pm = find_pair(ld, q.map, "match");
		pn = find_pair(ld, q.map, "names");
		if (pm == NULL && pn == NULL)
			err_at(ld, q.map, "old.queues has neither match nor names; "
			    "expected exactly one of them: %s", qexpect);
		if (pm != NULL && pn != NULL)
			err_at(ld, key_node(ld, pm < pn ? pn : pm), "old.queues has both "
			    "match and names; expected exactly one of them");
		if (pm != NULL)
			load_match(ld, node_at(ld, pm->value));
		if (pn != NULL)
			load_names(ld, node_at(ld, pn->value));
	}
	get_duration(ld, &s, "max_message_ttl", 0, &ld->p->old.max_message_ttl_ms);
	if ((n = field(ld, &s, "allow_expiring", 0, NULL)) != NULL)
		(void)conv_bool(ld, n, "old.allow_expiring", &ld->p->old.allow_expiring);
}

/* The largest delay of LEVELS levels of UNIT_MS, as text. */
static const char *
max_delay_text(int levels, int64_t unit_ms, char *out, size_t outlen)
{
	uint64_t units = ((uint64_t)1 << levels) - 1;

	if ((uint64_t)unit_ms > (uint64_t)INT64_MAX / units)
		snprintf(out, outlen, "%llu units", (unsigned long long)units);
	else
		duration_format((int64_t)units * unit_ms, out, outlen);
	return out;
}

static void
load_destinations(struct loader *ld, const struct sect *s, int ladder_ok)
{
	static const char expect[] = "a list of destination routing suffixes, such "
	    "as [email.delivery, billing.retry]";
	struct plan *p = ld->p;
	struct ladder probe;
	const struct ladder *l = &p->ladder;
	const char *t;
	yaml_node_t *n, *item;
	char what[64], err[256];
	size_t count, i, j;

	if ((n = field(ld, s, "destinations", 1, expect)) == NULL)
		return;
	if ((count = seq_items(ld, n, "ladder.destinations", expect)) == 0)
		return;
	if (!ladder_ok) {
		/* Still check the words; the key length needs the real ladder. */
		if (ladder_init(&probe, LADDER_NAMING_CUTOVER, "delay", 1, 1,
		    err, sizeof(err)) == -1)
			return;
		l = &probe;
	}
	if ((p->destinations = calloc(count, sizeof(char *))) == NULL ||
	    (p->destinations_at = calloc(count, sizeof(*p->destinations_at))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = seq_item(ld, n, i);
		snprintf(what, sizeof(what), "ladder.destinations[%zu]", i);
		if ((t = conv_text(ld, item, what, "a routing suffix such as "
		    "email.delivery")) == NULL)
			continue;
		if (ladder_check_destination(l, t, err, sizeof(err)) == -1) {
			err_at(ld, item, "%s is not valid: %s", what, err);
			continue;
		}
		for (j = 0; j < p->ndestinations; j++)
			if (strcmp(p->destinations[j], t) == 0)
				break;
		if (j < p->ndestinations) {
			err_at(ld, item, "%s '%.100s' is listed twice; expected distinct "
			    "destinations", what, t);
			continue;
		}
		if ((p->destinations[p->ndestinations] = copy(ld, t)) != NULL) {
			p->destinations_at[p->ndestinations].line =
			    mark_num(item->start_mark.line);
			p->destinations_at[p->ndestinations].column =
			    mark_num(item->start_mark.column);
			p->ndestinations++;
		}
	}
}

/* The ladder section as load_ladder reads it, field by field. */
struct ladder_fields {
	struct sect		 s;
	enum ladder_naming	 naming;
	const struct ladder_style *style;	/* naming's row */
	int			 naming_ok;	/* ladder.naming absent or known */
	int			 fixed;		/* the style fixes levels and unit */
	int			 ok;		/* every field so far is valid */
	const char		*prefix;	/* NULL: the style's default */
	yaml_node_t		*unit_node;	/* NULL: the style's fixed unit */
	int64_t			 unit_ms;
	int			 levels;
};

/* ladder.naming: a style of the naming table, cutover when absent. */
static void
read_naming(struct loader *ld, struct ladder_fields *f)
{
	const char *t;
	yaml_node_t *n;
	char names[128];

	ladder_naming_list(", ", " or ", names, sizeof(names));
	if ((n = field(ld, &f->s, "naming", 0, NULL)) != NULL) {
		if ((t = conv_text(ld, n, "ladder.naming", names)) == NULL)
			f->naming_ok = 0;
		else if (ladder_naming_parse(t, &f->naming) == -1) {
			err_at(ld, n, "ladder.naming '%.40s' is unknown; expected %s",
			    t, names);
			f->naming_ok = 0;
		}
	}
	f->ok = f->naming_ok;
	f->style = ladder_style(f->naming);
	f->fixed = f->style->fixed_levels != 0;
}

/* ladder.prefix: only for a style that takes one, its default when absent. */
static void
read_prefix(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_pair_t *ppre;
	yaml_node_t *n;
	struct ladder probe;
	const char *t;
	char err[256];

	if ((ppre = find_pair(ld, f->s.map, "prefix")) == NULL)
		return;
	n = node_at(ld, ppre->value);
	if (f->style->prefix == LADDER_PREFIX_NONE) {
		err_at(ld, key_node(ld, ppre), "ladder.prefix is not used with %s "
		    "naming, whose names are fixed; expected no prefix", f->style->name);
		f->ok = 0;
	} else if ((t = conv_text(ld, n, "ladder.prefix", "a name prefix such "
	    "as delay")) == NULL)
		f->ok = 0;
	else if (ladder_init(&probe, f->naming, t, 1, 1, err, sizeof(err)) == -1) {
		err_at(ld, n, "ladder.prefix is not valid: %s", err);
		f->ok = 0;
	} else
		f->prefix = t;
}

/* ladder.unit: required unless the style fixes it, and then only that. */
static void
read_unit(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_t *n;
	char a[32];

	n = field(ld, &f->s, "unit", f->naming_ok && !f->fixed, "a duration such "
	    "as 1s (the ladder's resolution)");
	if (n == NULL) {
		if (f->fixed)
			f->unit_ms = f->style->fixed_unit_ms;
		else
			f->ok = 0;
		return;
	}
	f->unit_node = n;
	if (conv_duration(ld, n, "ladder.unit", &f->unit_ms) == -1)
		f->ok = 0;
	else if (f->fixed && f->unit_ms != f->style->fixed_unit_ms) {
		duration_format(f->style->fixed_unit_ms, a, sizeof(a));
		err_at(ld, n, "ladder.unit %s conflicts with %s naming; expected %s "
		    "(its ladder is %d levels of %s) or no unit", text(n),
		    f->style->name, a, f->style->fixed_levels, a);
		f->ok = 0;
	}
}

/* ladder.levels (the node N): 1 to LADDER_MAX_LEVELS, or the style's own. */
static void
read_levels(struct loader *ld, struct ladder_fields *f, yaml_node_t *n)
{
	if (conv_int(ld, n, "ladder.levels", 1, LADDER_MAX_LEVELS, &f->levels) == -1)
		f->ok = 0;
	else if (f->fixed && f->levels != f->style->fixed_levels) {
		err_at(ld, n, "ladder.levels %d conflicts with %s naming; expected "
		    "%d (or no levels)", f->levels, f->style->name,
		    f->style->fixed_levels);
		f->ok = 0;
	}
}

/* ladder.max_delay (the node N): the levels it needs of the unit, which
 * become the ladder's unless LEVELS_GIVEN. */
static void
read_max_delay(struct loader *ld, struct ladder_fields *f, yaml_node_t *n,
    int levels_given)
{
	char a[32], b[32];
	uint64_t units;
	int64_t max_ms = 0;
	int lv, most;

	if (conv_duration(ld, n, "ladder.max_delay", &max_ms) == -1) {
		f->ok = 0;
		return;
	}
	ld->p->max_delay_ms = max_ms;
	if (f->unit_ms <= 0)
		return;
	units = (uint64_t)(max_ms / f->unit_ms) + (max_ms % f->unit_ms != 0);
	lv = ladder_levels_for(units);
	most = f->fixed ? f->style->fixed_levels : LADDER_MAX_LEVELS;
	if (lv == -1 || lv > most) {
		err_at(ld, n, "ladder.max_delay %s needs more than %d levels of %s; "
		    "expected at most %s", text(n), most,
		    duration_format(f->unit_ms, a, sizeof(a)),
		    max_delay_text(most, f->unit_ms, b, sizeof(b)));
		f->ok = 0;
	} else if (!levels_given)
		f->levels = lv;
}

/* Exactly one of ladder.max_delay and ladder.levels, unless the style
 * fixes the levels. */
static void
read_size(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_pair_t *pmax, *plev;

	pmax = find_pair(ld, f->s.map, "max_delay");
	plev = find_pair(ld, f->s.map, "levels");
	if (pmax != NULL && plev != NULL) {
		err_at(ld, key_node(ld, pmax < plev ? plev : pmax), "ladder has both "
		    "max_delay and levels; expected exactly one of them");
		f->ok = 0;
	} else if (pmax == NULL && plev == NULL && f->naming_ok && !f->fixed) {
		err_at(ld, f->s.map, "ladder has neither max_delay nor levels; expected "
		    "exactly one: max_delay: DURATION (such as 12d) or levels: 1 to %d",
		    LADDER_MAX_LEVELS);
		f->ok = 0;
	}
	if (plev != NULL)
		read_levels(ld, f, node_at(ld, plev->value));
	if (pmax != NULL)
		read_max_delay(ld, f, node_at(ld, pmax->value), plev != NULL);
	if (f->fixed)
		f->levels = f->style->fixed_levels;
}

/* ladder.queue_type: quorum (the plan's default) or classic. */
static void
read_queue_type(struct loader *ld, const struct sect *s)
{
	yaml_node_t *n;
	const char *t;

	if ((n = field(ld, s, "queue_type", 0, NULL)) == NULL ||
	    (t = conv_text(ld, n, "ladder.queue_type", "quorum or classic")) == NULL)
		return;
	if (strcmp(t, "quorum") == 0)
		ld->p->queue_type = PLAN_QUEUE_QUORUM;
	else if (strcmp(t, "classic") == 0)
		ld->p->queue_type = PLAN_QUEUE_CLASSIC;
	else
		err_at(ld, n, "ladder.queue_type '%.40s' is unknown; expected "
		    "quorum or classic", t);
}

/* Builds the plan's ladder from fields that were all valid. Returns 1 when
 * it is built, 0 otherwise. */
static int
init_ladder(struct loader *ld, const struct ladder_fields *f)
{
	char err[256], unit[32];

	if (!f->ok)
		return 0;
	if (ladder_init(&ld->p->ladder, f->naming, f->prefix != NULL ? f->prefix :
	    f->style->default_prefix, f->unit_ms, f->levels, err, sizeof(err)) == -1) {
		err_at(ld, f->unit_node != NULL ? f->unit_node : f->s.map, "ladder of "
		    "%d levels of %s is not valid: %s", f->levels,
		    duration_format(f->unit_ms, unit, sizeof(unit)), err);
		memset(&ld->p->ladder, 0, sizeof(ld->p->ladder));
		return 0;
	}
	return 1;
}

static void
load_ladder(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "naming", "prefix", "unit", "max_delay",
	    "levels", "queue_type", "destinations", "create_destinations", NULL };
	struct ladder_fields f = { .naming = LADDER_NAMING_CUTOVER, .naming_ok = 1,
	    .ok = 1 };
	yaml_node_t *n;

	if (get_map(ld, root, "ladder", 1, "a mapping with unit, max_delay or levels, "
	    "and destinations", "ladder", &f.s) <= 0)
		return;
	check_keys(ld, &f.s, keys);
	read_naming(ld, &f);
	read_prefix(ld, &f);
	read_unit(ld, &f);
	read_size(ld, &f);
	read_queue_type(ld, &f.s);
	load_destinations(ld, &f.s, init_ladder(ld, &f));
	if ((n = field(ld, &f.s, "create_destinations", 0, NULL)) != NULL)
		(void)conv_bool(ld, n, "ladder.create_destinations",
		    &ld->p->create_destinations);
}

static void
load_canary(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "delays", "max_lateness", "budget", NULL };
	static const char expect[] = "a list of durations, such as [1s, 2s, 3s, 7s], "
	    "or no delays for one per level within the budget";
	struct plan *p = ld->p;
	yaml_node_t *n, *item;
	char what[64], a[32], b[32];
	int64_t ms, max;
	size_t count, i;
	struct sect s;

	if (get_map(ld, root, "canary", 0, "a mapping with delays, max_lateness "
	    "and budget", "canary", &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	get_duration(ld, &s, "budget", 0, &p->canary.budget_ms);
	get_duration(ld, &s, "max_lateness", 0, &p->canary.max_lateness_ms);
	if ((n = field(ld, &s, "delays", 0, NULL)) == NULL)
		return;
	if ((count = seq_items(ld, n, "canary.delays", expect)) == 0)
		return;
	if ((p->canary.delays_ms = calloc(count, sizeof(int64_t))) == NULL) {
		ld->oom = 1;
		return;
	}
	max = p->ladder.levels > 0 ? ladder_max_delay_ms(&p->ladder) : -1;
	for (i = 0; i < count; i++) {
		item = seq_item(ld, n, i);
		snprintf(what, sizeof(what), "canary.delays[%zu]", i);
		if (conv_duration(ld, item, what, &ms) == -1)
			continue;
		if (ms > p->canary.budget_ms) {
			err_at(ld, item, "%s %s is beyond the canary budget of %s; expected "
			    "at most %s, or a larger canary.budget", what, text(item),
			    duration_format(p->canary.budget_ms, a, sizeof(a)), a);
			continue;
		}
		if (max > 0 && ms > max) {
			err_at(ld, item, "%s %s is beyond the ladder's largest delay %s; "
			    "expected at most %s", what, text(item),
			    duration_format(max, b, sizeof(b)), b);
			continue;
		}
		p->canary.delays_ms[p->canary.ndelays++] = ms;
	}
}

/* Converts a YAML scalar to the JSON text it stands for: unquoted true,
 * false, null and numbers stay what they are; anything else is a string. */
static int
conv_json(struct loader *ld, const yaml_node_t *n, const char *what, char **out)
{
	static const char expect[] = "a JSON scalar: true, false, a number or a string";
	const char *t, *d;
	size_t len, i, o;
	char *s;

	if (n->type != YAML_SCALAR_NODE) {
		err_at(ld, n, "%s is %s; expected %s", what, kind_name(n), expect);
		return -1;
	}
	t = text(n);
	len = n->data.scalar.length;
	if (plain(n)) {
		if (len == 0 || strcmp(t, "~") == 0) {
			err_at(ld, n, "%s has no value; expected %s", what, expect);
			return -1;
		}
		if (strcmp(t, "true") == 0 || strcmp(t, "false") == 0 ||
		    strcmp(t, "null") == 0)
			goto verbatim;
		/* JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
		d = t + (t[0] == '-');
		if (*d == '0')
			d++;
		else if (*d >= '1' && *d <= '9')
			d += strspn(d, "0123456789");
		else
			goto string;
		if (*d == '.') {
			if (strspn(d + 1, "0123456789") == 0)
				goto string;
			d += 1 + strspn(d + 1, "0123456789");
		}
		if (*d == 'e' || *d == 'E') {
			d++;
			if (*d == '+' || *d == '-')
				d++;
			if (strspn(d, "0123456789") == 0)
				goto string;
			d += strspn(d, "0123456789");
		}
		if (*d == '\0' && (size_t)(d - t) == len)
			goto verbatim;
	}
string:
	if ((s = malloc(len * 6 + 3)) == NULL) {
		ld->oom = 1;
		return -1;
	}
	o = 0;
	s[o++] = '"';
	for (i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)t[i];

		if (ch == '"' || ch == '\\') {
			s[o++] = '\\';
			s[o++] = (char)ch;
		} else if (ch < 0x20) {
			o += (size_t)snprintf(s + o, 7, "\\u%04x", ch);
		} else
			s[o++] = (char)ch;
	}
	s[o++] = '"';
	s[o] = '\0';
	free(*out);
	*out = s;
	return 0;
verbatim:
	free(*out);
	*out = copy(ld, t);
	return 0;
}

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

	if (get_map(ld, flag, key, 1, "{ method: PUT, url: http://..., body: '...' }",
	    path, &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	if ((n = field(ld, &s, "method", 1, mexpect)) != NULL &&
	    (t = conv_text(ld, n, label(what, sizeof(what), &s, "method"), mexpect)) != NULL) {
		for (i = 0; methods[i] != NULL; i++)
			if (strcmp(methods[i], t) == 0)
				break;
		if (methods[i] == NULL)
			err_at(ld, n, "%s '%.40s' is not supported; expected %s", what, t,
			    mexpect);
		else
			call->method = copy(ld, t);
	}
	get_url(ld, &s, "url", 1, URL_HTTP, &call->url);
	if ((n = field(ld, &s, "body", 0, NULL)) != NULL)
		conv_dup(ld, n, label(what, sizeof(what), &s, "body"), "the request body "
		    "as a string, such as '{\"enabled\":true}'", &call->body);
}

static void
load_read(struct loader *ld, const struct sect *flag)
{
	static const char *const keys[] = { "url", "pointer", "on", "off", NULL };
	static const char pexpect[] = "a JSON pointer such as /enabled, or '' for the "
	    "whole document";
	struct plan *p = ld->p;
	yaml_node_t *n, *on, *off;
	const char *t;
	size_t i;
	struct sect s;

	if (get_map(ld, flag, "read", 1, "{ url: http://..., pointer: /enabled, on: "
	    "true, off: false }", "flag.read", &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	get_url(ld, &s, "url", 1, URL_HTTP, &p->flag.read_url);
	if ((n = field(ld, &s, "pointer", 1, pexpect)) != NULL) {
		if (n->type != YAML_SCALAR_NODE)
			err_at(ld, n, "flag.read.pointer is %s; expected %s", kind_name(n),
			    pexpect);
		else if (is_null(n))
			err_at(ld, n, "flag.read.pointer has no value; expected %s", pexpect);
		else {
			t = text(n);
			for (i = 0; t[i] != '\0'; i++)
				if (t[i] == '~' && t[i + 1] != '0' && t[i + 1] != '1')
					break;
			if (t[0] != '\0' && t[0] != '/')
				err_at(ld, n, "flag.read.pointer '%.60s' does not start with "
				    "'/'; expected %s", t, pexpect);
			else if (t[i] != '\0')
				err_at(ld, n, "flag.read.pointer '%.60s' has a '~' not "
				    "followed by 0 or 1; expected %s", t, pexpect);
			else if (strlen(t) != n->data.scalar.length)
				err_at(ld, n, "flag.read.pointer contains a NUL character; "
				    "expected %s", pexpect);
			else
				p->flag.read_pointer = copy(ld, t);
		}
	}
	on = field(ld, &s, "on", 1, "the JSON value read when the flag is on, such as true");
	off = field(ld, &s, "off", 1, "the JSON value read when the flag is off, such "
	    "as false");
	if (on != NULL)
		conv_json(ld, on, "flag.read.on", &p->flag.read_on);
	if (off != NULL)
		conv_json(ld, off, "flag.read.off", &p->flag.read_off);
	if (p->flag.read_on != NULL && p->flag.read_off != NULL &&
	    strcmp(p->flag.read_on, p->flag.read_off) == 0)
		err_at(ld, off, "flag.read.on and flag.read.off are both %.60s; expected "
		    "two different values", p->flag.read_on);
}

/* Header names whose values are credentials. */
static int
secret_header(const char *name)
{
	static const char *const words[] = { "auth", "token", "secret", "passw",
	    "cookie", "session", "api-key", "apikey", "api_key", NULL };
	size_t i, j, len = strlen(name), wl;

	for (i = 0; words[i] != NULL; i++) {
		wl = strlen(words[i]);
		for (j = 0; j + wl <= len; j++)
			if (strncasecmp(name + j, words[i], wl) == 0)
				return 1;
	}
	return 0;
}

static int
token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

static void
load_headers(struct loader *ld, yaml_node_t *n)
{
	static const char expect[] = "a mapping of header name to value, such as "
	    "{ Authorization: env:FLAG_AUTH }";
	struct plan *p = ld->p;
	struct plan_header *h;
	yaml_node_pair_t *pair;
	yaml_node_t *k, *v;
	const char *name, *t;
	char what[96];
	size_t count, i;
	struct sect s = { n, "flag.headers" };

	if (n->type != YAML_MAPPING_NODE) {
		err_at(ld, n, "flag.headers is %s; expected %s", kind_name(n), expect);
		return;
	}
	check_keys(ld, &s, NULL);
	count = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
	if (count == 0)
		return;
	if ((p->flag.headers = calloc(count, sizeof(*h))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
		k = node_at(ld, pair->key);
		v = node_at(ld, pair->value);
		if (k == NULL || v == NULL || k->type != YAML_SCALAR_NODE)
			continue;	/* reported by check_keys */
		name = text(k);
		if (name[0] == '\0' || strlen(name) != k->data.scalar.length) {
			err_at(ld, k, "a header name in flag.headers is empty; expected "
			    "a header name such as Authorization");
			continue;
		}
		for (i = 0; name[i] != '\0' && token_char(name[i]); i++)
			;
		if (name[i] != '\0') {
			err_at(ld, k, "header name '%.60s' in flag.headers has '%c'; "
			    "expected letters, digits and !#$%%&'*+-.^_`|~", name, name[i]);
			continue;
		}
		for (i = 0; i < p->flag.nheaders; i++)
			if (strcasecmp(p->flag.headers[i].name, name) == 0)
				break;
		if (i < p->flag.nheaders) {
			if (strcmp(p->flag.headers[i].name, name) != 0)
				err_at(ld, k, "header '%.60s' in flag.headers repeats '%.60s' "
				    "(names are case-insensitive); expected each header once",
				    name, p->flag.headers[i].name);
			continue;
		}
		snprintf(what, sizeof(what), "flag.headers.%.60s", name);
		if ((t = conv_text(ld, v, what, "a header value or an env:NAME "
		    "reference")) == NULL)
			continue;
		if (strncmp(t, "env:", 4) == 0) {
			if (check_env_ref(ld, v, what, t) == -1)
				continue;
		} else if (secret_header(name) || strncasecmp(t, "Bearer ", 7) == 0 ||
		    strncasecmp(t, "Basic ", 6) == 0) {
			err_at(ld, v, "%s is a literal value; secrets must be env:NAME "
			    "references, expected e.g. env:FLAG_AUTH", what);
			continue;
		}
		h = &p->flag.headers[p->flag.nheaders];
		h->name = copy(ld, name);
		h->value = copy(ld, t);
		if (h->name == NULL || h->value == NULL) {
			free(h->name);
			free(h->value);
			h->name = h->value = NULL;
			continue;
		}
		p->flag.nheaders++;
	}
}

/* ---- plan_section.h: for the section loaders of the flag providers ---- */

struct plan_section {
	struct loader		*ld;
	const struct sect	*s;
};

struct plan *
plan_section_plan(const struct plan_section *ps)
{
	return ps->ld->p;
}

void
plan_section_keys(const struct plan_section *ps, const char *const *keys)
{
	check_keys(ps->ld, ps->s, keys);
}

void
plan_section_text(const struct plan_section *ps, const char *key, bool required,
    const char *expect, char **out)
{
	get_text(ps->ld, ps->s, key, required, expect, out);
}

void
plan_section_secret(const struct plan_section *ps, const char *key, bool required,
    const char *example, char **out)
{
	get_secret(ps->ld, ps->s, key, required, example, out);
}

void
plan_section_url(const struct plan_section *ps, const char *key, bool required,
    bool base, char **out)
{
	get_url(ps->ld, ps->s, key, required, base ? URL_HTTP_BASE : URL_HTTP, out);
}

void
plan_section_http_call(const struct plan_section *ps, const char *key,
    const char *path, struct plan_http_call *call)
{
	load_call(ps->ld, ps->s, key, path, call);
}

void
plan_section_flag_read(const struct plan_section *ps)
{
	load_read(ps->ld, ps->s);
}

void
plan_section_flag_headers(const struct plan_section *ps)
{
	yaml_node_t *n;

	if ((n = field(ps->ld, ps->s, "headers", 0, NULL)) != NULL)
		load_headers(ps->ld, n);
}

/* The flag section: its kind names a provider (plan_flag.h), whose own
 * loader reads the rest. */
static void
load_flag(struct loader *ld, const struct sect *root)
{
	const char *keys[PLAN_FLAG_KEYS_MAX + 1];
	const struct plan_flag_kind *prov = NULL;
	struct plan *p = ld->p;
	char kinds[128], expect[160];
	struct plan_section ps;
	yaml_node_t *n;
	const char *t;
	struct sect s;

	plan_flag_kinds(kinds, sizeof(kinds));
	snprintf(expect, sizeof(expect), "a mapping with kind %s", kinds);
	if (get_map(ld, root, "flag", 0, expect, "flag", &s) <= 0)
		return;
	if ((n = field(ld, &s, "kind", 1, kinds)) != NULL &&
	    (t = conv_text(ld, n, "flag.kind", kinds)) != NULL &&
	    (prov = plan_flag_kind_find(t)) == NULL)
		err_at(ld, n, "flag.kind '%.40s' is unknown; expected %s", t, kinds);
	p->flag.kind = prov != NULL ? prov->name : NULL;
	if (prov == NULL) {
		plan_flag_keys(keys, sizeof(keys) / sizeof(keys[0]));
		check_keys(ld, &s, keys);
		return;
	}
	ps.ld = ld;
	ps.s = &s;
	check_keys(ld, &s, prov->keys);
	prov->load(&ps);
}

static void
load_watch(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "interval", "allowance", "probe_every", NULL };
	struct plan *p = ld->p;
	struct sect s;

	if (get_map(ld, root, "watch", 0, "a mapping with interval, allowance and "
	    "probe_every", "watch", &s) <= 0)
		return;
	check_keys(ld, &s, keys);
	get_duration(ld, &s, "interval", 0, &p->watch.interval_ms);
	get_duration(ld, &s, "allowance", 0, &p->watch.allowance_ms);
	get_duration(ld, &s, "probe_every", 0, &p->watch.probe_every_ms);
}

/* Each step whose kind cannot run without a plan section (the step-kind
 * table's SECTION) needs that section: an error at the step otherwise. */
static void
check_sections(struct loader *ld, const struct sect *root)
{
	const struct plan *p = ld->p;
	const char *section, *why;

	for (size_t i = 0; i < p->nsteps; i++) {
		const struct plan_step *st = &p->steps[i];

		if ((section = plan_step_kind_section(st->kind, &why)) == NULL ||
		    find_pair(ld, root->map, section) != NULL)
			continue;
		if (plan_errors_add(ld->errs, st->line, st->column, "step '%s' needs a "
		    "%s section %s", plan_step_kind_name(st->kind), section, why) == -1)
			ld->oom = 1;
	}
}

static void
load_steps(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "step", "gate", NULL };
	static const char expect[] = "a list of steps, each a step name or "
	    "{ step: NAME, gate: true }";
	struct plan *p = ld->p;
	enum plan_step_kind kind;
	struct plan_step *st;
	yaml_node_t *n, *item, *sn;
	const char *t;
	char path[32], what[48];
	size_t count, i, j;
	char names[256];
	bool gate, gate_given;
	int bad = 0;
	struct sect s;

	plan_step_kind_names(names, sizeof(names));
	if ((n = field(ld, root, "steps", 1, expect)) == NULL)
		return;
	if ((count = seq_items(ld, n, "steps", expect)) == 0)
		return;
	if ((p->steps = calloc(count, sizeof(*p->steps))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = seq_item(ld, n, i);
		snprintf(path, sizeof(path), "steps[%zu]", i);
		gate = false;
		gate_given = false;
		sn = item;
		if (item->type == YAML_MAPPING_NODE) {
			s.map = item;
			s.path = path;
			check_keys(ld, &s, keys);
			snprintf(what, sizeof(what), "%s.gate", path);
			if ((sn = field(ld, &s, "gate", 0, NULL)) != NULL) {
				gate_given = true;
				if (conv_bool(ld, sn, what, &gate) == -1)
					bad = 1;
			}
			if ((sn = field(ld, &s, "step", 1, names)) == NULL) {
				bad = 1;
				continue;
			}
			snprintf(what, sizeof(what), "%s.step", path);
		} else if (item->type == YAML_SCALAR_NODE)
			snprintf(what, sizeof(what), "%s", path);
		else {
			err_at(ld, item, "%s is a list; expected a step name or "
			    "{ step: NAME, gate: true }", path);
			bad = 1;
			continue;
		}
		if ((t = conv_text(ld, sn, what, names)) == NULL) {
			bad = 1;
			continue;
		}
		if (plan_step_kind_parse(t, &kind) == -1) {
			err_at(ld, sn, "unknown step '%.40s'; expected one of: %s", t, names);
			bad = 1;
			continue;
		}
		for (j = 0; j < p->nsteps; j++)
			if (p->steps[j].kind == kind)
				break;
		if (j < p->nsteps) {
			err_at(ld, sn, "step '%s' appears twice (first at line %d); "
			    "expected each step at most once", t, p->steps[j].line);
			bad = 1;
			continue;
		}
		st = &p->steps[p->nsteps++];
		st->kind = kind;
		st->gate = gate_given ? gate : plan_step_kind_gated(kind);
		st->line = mark_num(item->start_mark.line);
		st->column = mark_num(item->start_mark.column);
	}
	check_sections(ld, root);
	if (bad) {
		/* Order checks on half the steps would only add noise. */
		free(p->steps);
		p->steps = NULL;
		p->nsteps = 0;
	}
}

static void
load_root(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = { "name", "broker", "old", "ladder", "canary",
	    "flag", "watch", "steps", NULL };
	static const char expect[] = "a mapping with name, broker, old, ladder and steps";
	struct sect s = { root, "" };

	if (root->type != YAML_MAPPING_NODE) {
		err_at(ld, root, "the plan %s; expected %s", is_null(root) ? "is empty" :
		    root->type == YAML_SCALAR_NODE ? "is a scalar" : "is a list", expect);
		return;
	}
	check_keys(ld, &s, keys);
	load_name(ld, &s);
	load_broker(ld, &s);
	load_old(ld, &s);
	load_ladder(ld, &s);
	load_canary(ld, &s);
	load_flag(ld, &s);
	load_watch(ld, &s);
	load_steps(ld, &s);
}

/* What check_own looks for in a plan's own queues. */
struct own_check {
	struct loader *ld;
	struct pattern *re;		/* old.queues.match, or NULL */
	const char *name;		/* or one of old.queues.names */
	const char *found, *what;	/* the first own queue selected */
	char name_buf[QUEUE_NAME_MAX + 1];
	size_t n;			/* how many are */
	int failed;			/* a match could not be decided */
	char why[256];
};

/* plan_own_queues' callback: counts NAME when the selection takes it. */
static int
own_selected(void *arg, const char *name, const char *what)
{
	struct own_check *oc = arg;
	int m;

	if (oc->re != NULL) {
		if ((m = pattern_match(oc->re, name, oc->why, sizeof(oc->why))) < 0) {
			snprintf(oc->name_buf, sizeof(oc->name_buf), "%s", name);
			oc->failed = 1;
			return 1;
		}
	} else
		m = strcmp(oc->name, name) == 0;
	if (m == 1 && oc->n++ == 0) {
		snprintf(oc->name_buf, sizeof(oc->name_buf), "%s", name);
		oc->found = oc->name_buf;
		oc->what = what;
	}
	return 0;
}

/* The old selection must not take any of the plan's own queues (ladder,
 * parking, destinations, probe, canary): reported at old.queues.match, or
 * at the old.queues.names entry that names one. Needs the ladder loaded. */
static void
check_own(struct loader *ld)
{
	struct plan *p = ld->p;
	struct own_check oc;
	char why[256];

	if (p->ladder.levels <= 0)
		return;
	if (ld->match != NULL && p->old.match != NULL) {
		memset(&oc, 0, sizeof(oc));
		oc.ld = ld;
		if (pattern_compile(p->old.match, &oc.re, why, sizeof(why)) != 0) {
			ld->oom = 1;	/* it compiled in load_match */
			return;
		}
		plan_own_queues(p, own_selected, &oc);
		if (oc.failed)
			err_at(ld, ld->match, "old.queues.match '%.100s' cannot be decided for "
			    "this plan's own queue '%s' (%s); expected a simpler pattern",
			    p->old.match, oc.name_buf, oc.why);
		else if (oc.n > 0)
			err_at(ld, ld->match, "old.queues.match '%.100s' selects %zu of this "
			    "plan's own queues, such as the %s '%s'; expected a pattern that "
			    "selects only the old delay queues, never the ladder, its "
			    "destinations, the probe or the canary queue", p->old.match, oc.n,
			    oc.what, oc.found);
		pattern_free(oc.re);
	}
	if (ld->names == NULL)
		return;
	for (size_t i = 0; i < (size_t)(ld->names->data.sequence.items.top -
	    ld->names->data.sequence.items.start); i++) {
		yaml_node_t *item = seq_item(ld, ld->names, i);

		if (item == NULL || item->type != YAML_SCALAR_NODE)
			continue;
		memset(&oc, 0, sizeof(oc));
		oc.ld = ld;
		oc.name = text(item);
		plan_own_queues(p, own_selected, &oc);
		if (oc.n > 0)
			err_at(ld, item, "old.queues.names[%zu] '%s' is this plan's own %s; "
			    "expected only old delay queues, never the ladder, its "
			    "destinations, the probe or the canary queue", i, oc.found, oc.what);
	}
}

/* Reports what libyaml's parser refused, where it says. */
static void
syntax_error(struct loader *ld, const yaml_parser_t *ps, const char *buf, size_t len)
{
	const char *problem = ps->problem != NULL ? ps->problem : "unknown problem";
	size_t i, line = 0, col = 0, off;
	int rc;

	if (ps->error == YAML_MEMORY_ERROR) {
		ld->oom = 1;
		return;
	}
	if (ps->error == YAML_READER_ERROR) {
		/* The reader has no mark, only a byte offset. */
		off = ps->problem_offset < len ? ps->problem_offset : len;
		for (i = 0; i < off; i++) {
			if (buf[i] == '\n') {
				line++;
				col = 0;
			} else
				col++;
		}
		rc = plan_errors_add(ld->errs, mark_num(line), mark_num(col),
		    "YAML syntax error: %s (byte 0x%02x); expected UTF-8 text", problem,
		    (unsigned)ps->problem_value & 0xff);
	} else if (ps->context != NULL)
		rc = plan_errors_add(ld->errs, mark_num(ps->problem_mark.line),
		    mark_num(ps->problem_mark.column), "YAML syntax error: %s (%s at "
		    "line %d); expected well-formed YAML", problem, ps->context,
		    mark_num(ps->context_mark.line));
	else
		rc = plan_errors_add(ld->errs, mark_num(ps->problem_mark.line),
		    mark_num(ps->problem_mark.column), "YAML syntax error: %s; "
		    "expected well-formed YAML", problem);
	if (rc == -1)
		ld->oom = 1;
}

/* Orders errors by position, as a reader goes through the file; errors
 * without a position go last. Stable, so one node's errors keep their order. */
static void
sort_errors(struct plan_errors *errs)
{
	struct plan_error e;
	size_t i, j;

	for (i = 1; i < errs->n; i++) {
		e = errs->v[i];
		for (j = i; j > 0; j--) {
			const struct plan_error *d = &errs->v[j - 1];
			unsigned dl = d->line > 0 ? (unsigned)d->line : UINT_MAX;
			unsigned el = e.line > 0 ? (unsigned)e.line : UINT_MAX;

			if (dl < el || (dl == el && d->column <= e.column))
				break;
			errs->v[j] = *d;
		}
		errs->v[j] = e;
	}
}

static struct plan *
plan_new(const char *file)
{
	struct plan *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if ((p->file = strdup(file)) == NULL) {
		free(p);
		return NULL;
	}
	p->queue_type = PLAN_QUEUE_QUORUM;
	p->canary.budget_ms = PLAN_DEFAULT_CANARY_BUDGET_MS;
	p->canary.max_lateness_ms = 2000;
	p->flag.kind = NULL;
	p->watch.interval_ms = 10 * 1000;
	p->watch.allowance_ms = 30 * 1000;
	p->watch.probe_every_ms = 60 * 1000;
	return p;
}

int
plan_load_buffer(const char *file, const char *buf, size_t len, struct plan **out,
    struct plan_errors *errs)
{
	struct plan_errors local;
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	yaml_node_t *root;
	struct loader ld;
	struct plan *p = NULL;
	int have_parser = 0, have_doc = 0, rc = -1;

	if (out != NULL)
		*out = NULL;
	if (errs == NULL)
		errs = &local;
	memset(errs, 0, sizeof(*errs));
	memset(&ld, 0, sizeof(ld));
	ld.errs = errs;
	if (file == NULL)
		file = "(plan)";
	if ((errs->file = strdup(file)) == NULL) {
		ld.oom = 1;
		goto done;
	}
	if (out == NULL || (buf == NULL && len > 0)) {
		if (plan_errors_add(errs, 0, 0, "no plan given; expected a buffer and "
		    "a place for the plan") == -1)
			ld.oom = 1;
		goto done;
	}
	if ((p = plan_new(file)) == NULL) {
		ld.oom = 1;
		goto done;
	}
	ld.p = p;
	if (!yaml_parser_initialize(&parser)) {
		ld.oom = 1;
		goto done;
	}
	have_parser = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)(buf != NULL ? buf : ""),
	    len);
	if (!yaml_parser_load(&parser, &doc)) {
		syntax_error(&ld, &parser, buf, len);
		goto done;
	}
	have_doc = 1;
	ld.doc = &doc;
	if ((root = yaml_document_get_root_node(&doc)) == NULL) {
		if (plan_errors_add(errs, 1, 1, "the file is empty; expected a YAML "
		    "mapping with name, broker, old, ladder and steps") == -1)
			ld.oom = 1;
		goto done;
	}
	/* One document per plan: a second one, or a syntax error after the
	 * first, is reported along with whatever the first one holds. */
	if (!yaml_parser_load(&parser, &extra))
		syntax_error(&ld, &parser, buf, len);
	else {
		if (yaml_document_get_root_node(&extra) != NULL &&
		    plan_errors_add(errs, mark_num(extra.start_mark.line),
		    mark_num(extra.start_mark.column), "a second YAML document starts "
		    "here; expected exactly one document per plan") == -1)
			ld.oom = 1;
		yaml_document_delete(&extra);
	}
	load_root(&ld, root);
	check_own(&ld);
	if (plan_validate(p, errs) == -1)
		ld.oom = 1;

done:
	if (ld.oom)
		plan_errors_add(errs, 0, 0, "out of memory while loading the plan");
	sort_errors(errs);
	if (errs->n == 0 && !ld.oom && p != NULL) {
		*out = p;
		p = NULL;
		plan_errors_free(errs);
		rc = 0;
	}
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	plan_free(p);
	if (errs == &local)
		plan_errors_free(&local);
	return rc;
}

static int load_fail(const char *, struct plan_errors *, const char *, ...)
    __attribute__((format(printf, 3, 4)));

/* Fails a load before any YAML is read, with a message about FILE. */
static int
load_fail(const char *file, struct plan_errors *errs, const char *fmt, ...)
{
	struct plan_errors local;
	char msg[sizeof(((struct plan_error *)0)->message)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (errs == NULL)
		errs = &local;
	memset(errs, 0, sizeof(*errs));
	errs->file = strdup(file);
	plan_errors_add(errs, 0, 0, "%s", msg);
	if (errs == &local)
		plan_errors_free(&local);
	return -1;
}

int
plan_load_file(const char *path, struct plan **out, struct plan_errors *errs)
{
	FILE *f = NULL;
	char *buf = NULL, *nbuf;
	size_t len = 0, cap = 0, got;
	int rc = -1;

	if (out != NULL)
		*out = NULL;
	if (path == NULL)
		path = "(null)";
	if ((f = fopen(path, "rb")) == NULL) {
		rc = load_fail(path, errs, "cannot open the plan: %s; expected a "
		    "readable YAML file", strerror(errno));
		goto done;
	}
	for (;;) {
		if (len == cap) {
			if (cap >= PLAN_FILE_MAX) {
				rc = load_fail(path, errs, "the file is larger than %d "
				    "bytes; expected a plan of a few kilobytes", PLAN_FILE_MAX);
				goto done;
			}
			cap = cap ? cap * 2 : 8192;
			if ((nbuf = realloc(buf, cap)) == NULL) {
				rc = load_fail(path, errs, "out of memory reading the plan");
				goto done;
			}
			buf = nbuf;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0) {
			if (ferror(f)) {
				rc = load_fail(path, errs, "cannot read the plan: %s; "
				    "expected a readable YAML file", strerror(errno));
				goto done;
			}
			break;
		}
	}
	rc = plan_load_buffer(path, buf, len, out, errs);
done:
	if (f != NULL)
		fclose(f);
	free(buf);
	return rc;
}
