/* plan_yaml: the plan loader's YAML reader — libyaml's document nodes,
 * their positions and the errors recorded at them, the keys of a mapping,
 * and scalars converted (text, durations, integers, booleans, env:
 * references, URLs, JSON) into what the plan holds, each refused with what
 * was expected. Reading the file and its one document is plan_yaml_read.c's.
 * Shared with the rest of the loader by plan_load_int.h. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "duration.h"
#include "plan.h"
#include "plan_load_int.h"

int
py_mark_num(size_t v)
{
	return v < INT_MAX ? (int)v + 1 : INT_MAX;
}

/* Records an error about node N (NULL: no position). */
void
py_err_at(struct loader *ld, const yaml_node_t *n, const char *fmt, ...)
{
	char msg[sizeof(((struct plan_error *)0)->message)];
	va_list ap;
	int line = 0, col = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (n != NULL) {
		line = py_mark_num(n->start_mark.line);
		col = py_mark_num(n->start_mark.column);
	}
	if (plan_errors_add(ld->errs, line, col, "%s", msg) == -1)
		ld->oom = 1;
}

char *
py_copy(struct loader *ld, const char *s)
{
	char *d;

	if ((d = strdup(s)) == NULL)
		ld->oom = 1;
	return d;
}

yaml_node_t *
py_node_at(struct loader *ld, int i)
{
	return yaml_document_get_node(ld->doc, i);
}

const char *
py_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static bool
plain(const yaml_node_t *n)
{
	return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

const char *
py_kind_name(const yaml_node_t *n)
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
bool
py_is_null(const yaml_node_t *n)
{
	const char *t;

	if (n->type != YAML_SCALAR_NODE || !plain(n))
		return false;
	t = py_text(n);
	return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
	    strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

const char *
py_label(char *buf, size_t len, const struct sect *s, const char *key)
{
	if (s->path[0] == '\0')
		snprintf(buf, len, "%s", key);
	else
		snprintf(buf, len, "%s.%s", s->path, key);
	return buf;
}

static const char *
where(const struct loader *ld, const struct sect *s)
{
	if (s->path[0] != '\0')
		return s->path;
	return ld->root_name != NULL ? ld->root_name : "the plan";
}

yaml_node_pair_t *
py_find_pair(struct loader *ld, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *pair;
	yaml_node_t *k;

	for (pair = map->data.mapping.pairs.start;
	    pair < map->data.mapping.pairs.top; pair++) {
		k = py_node_at(ld, pair->key);
		if (k != NULL && k->type == YAML_SCALAR_NODE && strcmp(py_text(k), key) == 0)
			return pair;
	}
	return NULL;
}

/* Reports keys of S that are not scalars, repeated, or (when KEYS is not
 * NULL) not among KEYS. */
void
py_check_keys(struct loader *ld, const struct sect *s, const char *const *keys)
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
		if ((k = py_node_at(ld, pair->key)) == NULL)
			continue;
		if (k->type != YAML_SCALAR_NODE) {
			py_err_at(ld, k, "a key in %s is %s; expected a plain name",
			    where(ld, s), py_kind_name(k));
			continue;
		}
		pk = NULL;
		for (prev = s->map->data.mapping.pairs.start; prev < pair; prev++) {
			pk = py_node_at(ld, prev->key);
			if (pk != NULL && pk->type == YAML_SCALAR_NODE &&
			    strcmp(py_text(pk), py_text(k)) == 0)
				break;
			pk = NULL;
		}
		if (pk != NULL) {
			py_err_at(ld, k, "duplicate key '%.64s' in %s (first at line %d); "
			    "expected each key once", py_text(k), where(ld, s),
			    py_mark_num(pk->start_mark.line));
			continue;
		}
		if (keys == NULL)
			continue;
		for (i = 0; keys[i] != NULL; i++)
			if (strcmp(keys[i], py_text(k)) == 0)
				break;
		if (keys[i] == NULL)
			py_err_at(ld, k, "unknown key '%.64s' in %s; expected one of: %s",
			    py_text(k), where(ld, s), list);
	}
}

/* The value of KEY in S, or NULL. A missing KEY is reported when REQUIRED,
 * EXPECT saying what it should hold. */
yaml_node_t *
py_field(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect)
{
	yaml_node_pair_t *pair;

	if ((pair = py_find_pair(ld, s->map, key)) != NULL)
		return py_node_at(ld, pair->value);
	if (required)
		py_err_at(ld, s->map, "missing required key '%s' in %s; expected %s: %s",
		    key, where(ld, s), key, expect);
	return NULL;
}

/* Fills SUB with KEY of S when it is a mapping and returns 0; returns 0
 * with SUB->map NULL when it is absent (reported when REQUIRED), -1 when it
 * is not a mapping. */
int
py_get_map(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, const char *path, struct sect *sub)
{
	yaml_node_t *n;

	sub->map = NULL;
	sub->path = path;
	if ((n = py_field(ld, s, key, required, expect)) == NULL)
		return 0;
	if (n->type != YAML_MAPPING_NODE) {
		py_err_at(ld, n, "%s %s; expected %s", path,
		    py_is_null(n) ? "has no value" : n->type == YAML_SCALAR_NODE ?
		    "is a scalar" : "is a list", expect);
		return -1;
	}
	sub->map = n;
	return 0;
}

/* The text of scalar N, or NULL after reporting that WHAT is not a
 * non-empty string. */
const char *
py_conv_text(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect)
{
	if (n->type != YAML_SCALAR_NODE) {
		py_err_at(ld, n, "%s is %s; expected %s", what, py_kind_name(n), expect);
		return NULL;
	}
	if (py_is_null(n)) {
		py_err_at(ld, n, "%s has no value; expected %s", what, expect);
		return NULL;
	}
	if (n->data.scalar.length == 0) {
		py_err_at(ld, n, "%s is empty; expected %s", what, expect);
		return NULL;
	}
	if (strlen(py_text(n)) != n->data.scalar.length) {
		py_err_at(ld, n, "%s contains a NUL character; expected %s", what, expect);
		return NULL;
	}
	return py_text(n);
}

int
py_conv_dup(struct loader *ld, const yaml_node_t *n, const char *what, const char *expect,
    char **out)
{
	const char *t;

	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	free(*out);
	*out = py_copy(ld, t);
	return 0;
}

/* A duration greater than zero. */
int
py_conv_duration(struct loader *ld, const yaml_node_t *n, const char *what, int64_t *out)
{
	const char *t;
	char err[256];
	int64_t ms;

	if ((t = py_conv_text(ld, n, what, "a duration such as 500ms, 10s, 2m, 1h or 12d")) == NULL)
		return -1;
	if (duration_parse(t, &ms, err, sizeof(err)) == -1) {
		py_err_at(ld, n, "%s is not a valid duration: %s", what, err);
		return -1;
	}
	if (ms <= 0) {
		py_err_at(ld, n, "%s is %s; expected a duration greater than 0", what, t);
		return -1;
	}
	*out = ms;
	return 0;
}

/* An unquoted decimal integer from LO to HI. */
int
py_conv_int(struct loader *ld, const yaml_node_t *n, const char *what, int lo, int hi,
    int *out)
{
	const char *t, *d;
	char expect[64];
	long long v = 0;

	snprintf(expect, sizeof(expect), "an integer from %d to %d", lo, hi);
	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	d = t[0] == '-' ? t + 1 : t;
	if (!plain(n) || *d == '\0' || strspn(d, "0123456789") != strlen(d)) {
		py_err_at(ld, n, "%s '%.40s' is not an integer; expected %s, unquoted",
		    what, t, expect);
		return -1;
	}
	for (; *d != '\0' && v <= (long long)INT_MAX; d++)
		v = v * 10 + (*d - '0');
	if (t[0] == '-')
		v = -v;
	if (*d != '\0' || v < lo || v > hi) {
		py_err_at(ld, n, "%s %.40s is out of range; expected %s", what, t, expect);
		return -1;
	}
	*out = (int)v;
	return 0;
}

int
py_conv_bool(struct loader *ld, const yaml_node_t *n, const char *what, bool *out)
{
	const char *t;

	if ((t = py_conv_text(ld, n, what, "true or false")) == NULL)
		return -1;
	if (plain(n) && strcmp(t, "true") == 0)
		*out = true;
	else if (plain(n) && strcmp(t, "false") == 0)
		*out = false;
	else {
		py_err_at(ld, n, "%s '%.40s' is not a boolean; expected true or false, "
		    "unquoted", what, t);
		return -1;
	}
	return 0;
}

/* NAME of env:NAME: [A-Za-z_][A-Za-z0-9_]*. */
static bool
env_name_ok(const char *s)
{
	size_t i;

	if (!((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (i = 1; s[i] != '\0'; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

/* Checks an env:NAME reference written at N. Returns 0 or -1. */
int
py_check_env_ref(struct loader *ld, const yaml_node_t *n, const char *what, const char *t)
{
	if (env_name_ok(t + 4))
		return 0;
	py_err_at(ld, n, "%s '%.64s' is not a valid env reference; expected env:NAME, "
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
	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	if (strncmp(t, "env:", 4) != 0) {
		py_err_at(ld, n, "%s is a literal value; secrets must be env:NAME "
		    "references, expected e.g. %s", what, example);
		return -1;
	}
	if (py_check_env_ref(ld, n, what, t) == -1)
		return -1;
	free(*out);
	*out = py_copy(ld, t);
	return 0;
}

static bool
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool
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

const char *
py_url_problem(const char *url, enum url_kind kind, int *secret)
{
	return check_url(url, kind, secret);
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

	if ((t = py_conv_text(ld, n, what, url_expect(kind))) == NULL)
		return -1;
	if ((why = check_url(t, kind, &secret)) != NULL) {
		if (secret)
			py_err_at(ld, n, "%s %s; expected %s, with credentials given "
			    "separately (%s)", what, why, url_expect(kind),
			    kind == URL_HTTP ? "in flag.headers as env:NAME references" :
			    "broker.username and broker.password");
		else
			py_err_at(ld, n, "%s '%.100s' %s; expected %s", what, t, why,
			    url_expect(kind));
		return -1;
	}
	free(*out);
	*out = py_copy(ld, t);
	return 0;
}

/* get_*: KEY of S, converted. Return 0 when set or absent (*OUT then
 * untouched; reported when REQUIRED), -1 when invalid. */

int
py_get_text(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *expect, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = py_field(ld, s, key, required, expect)) == NULL)
		return 0;
	return py_conv_dup(ld, n, py_label(what, sizeof(what), s, key), expect, out) == 0 ? 0 : -1;
}

int
py_get_duration(struct loader *ld, const struct sect *s, const char *key, int required,
    int64_t *out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = py_field(ld, s, key, required, "a duration such as 10s")) == NULL)
		return 0;
	return py_conv_duration(ld, n, py_label(what, sizeof(what), s, key), out) == 0 ? 0 : -1;
}

int
py_get_secret(struct loader *ld, const struct sect *s, const char *key, int required,
    const char *example, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = py_field(ld, s, key, required, example)) == NULL)
		return 0;
	return conv_secret(ld, n, py_label(what, sizeof(what), s, key), example, out) == 0 ?
	    0 : -1;
}

int
py_get_url(struct loader *ld, const struct sect *s, const char *key, int required,
    enum url_kind kind, char **out)
{
	yaml_node_t *n;
	char what[128];

	if ((n = py_field(ld, s, key, required, url_expect(kind))) == NULL)
		return 0;
	return conv_url(ld, n, py_label(what, sizeof(what), s, key), kind, out) == 0 ? 0 : -1;
}

/* The vhost part of an AMQP URL that check_url accepted: what follows the
 * first '/' after "://". */
static const char *
amqp_vhost_part(const char *url)
{
	const char *p = strstr(url, "://");

	p = strchr(p != NULL ? p + 3 : url, '/');
	return p != NULL ? p + 1 : "";
}

/* Reads item I of the URL list N (or N itself, a single string) into
 * V[*COUNT]: a valid URL of KIND, not listed before, and for AMQP naming
 * the vhost of V[0]. Returns 0, or -1 after reporting. */
static int
conv_url_item(struct loader *ld, yaml_node_t *n, const char *what, enum url_kind kind,
    char **v, size_t *count)
{
	char *u = NULL;

	if (conv_url(ld, n, what, kind, &u) != 0 || u == NULL)
		return -1;
	for (size_t j = 0; j < *count; j++)
		if (strcmp(v[j], u) == 0) {
			py_err_at(ld, n, "%s '%.100s' is listed twice; expected each "
			    "node once", what, u);
			free(u);
			return -1;
		}
	if (kind == URL_AMQP && *count > 0 &&
	    strcmp(amqp_vhost_part(v[0]), amqp_vhost_part(u)) != 0) {
		py_err_at(ld, n, "%s '%.100s' names vhost '%.100s', the first URL "
		    "'%.100s'; expected every node of one broker with the same vhost",
		    what, u, amqp_vhost_part(u), amqp_vhost_part(v[0]));
		free(u);
		return -1;
	}
	v[(*count)++] = u;
	return 0;
}

int
py_get_urls(struct loader *ld, const struct sect *s, const char *key, int required,
    enum url_kind kind, size_t max, char ***out, size_t *nout)
{
	yaml_node_t *n;
	char what[128], item[160], expect[256];
	size_t count, i;
	int bad = 0;

	snprintf(expect, sizeof(expect), "%s, or a list of up to %zu of them tried "
	    "in order", url_expect(kind), max);
	if ((n = py_field(ld, s, key, required, expect)) == NULL)
		return 0;
	py_label(what, sizeof(what), s, key);
	if (n->type != YAML_SEQUENCE_NODE)
		count = 1;
	else if ((count = py_seq_items(ld, n, what, expect)) == 0)
		return -1;
	if (count > max) {
		py_err_at(ld, n, "%s lists %zu URLs; expected at most %zu", what, count, max);
		return -1;
	}
	if ((*out = calloc(count, sizeof(char *))) == NULL) {
		ld->oom = 1;
		return -1;
	}
	*nout = 0;
	if (n->type != YAML_SEQUENCE_NODE)
		return conv_url_item(ld, n, what, kind, *out, nout) == 0 ? 0 : -1;
	for (i = 0; i < count; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", what, i);
		if (conv_url_item(ld, py_seq_item(ld, n, i), item, kind, *out, nout) != 0)
			bad = 1;
	}
	return bad ? -1 : 0;
}

/* The node of KEY itself, for errors about a key that should not be there. */
yaml_node_t *
py_key_node(struct loader *ld, yaml_node_pair_t *pair)
{
	return py_node_at(ld, pair->key);
}

/* Items of a sequence: a list that must not be empty. Returns the count, or
 * 0 after reporting. */
size_t
py_seq_items(struct loader *ld, yaml_node_t *n, const char *what, const char *expect)
{
	size_t count;

	if (n->type != YAML_SEQUENCE_NODE) {
		py_err_at(ld, n, "%s %s; expected %s", what, py_is_null(n) ? "has no value" :
		    n->type == YAML_SCALAR_NODE ? "is a scalar" : "is a mapping", expect);
		return 0;
	}
	count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
	if (count == 0)
		py_err_at(ld, n, "%s is empty; expected %s", what, expect);
	return count;
}

yaml_node_t *
py_seq_item(struct loader *ld, yaml_node_t *n, size_t i)
{
	return py_node_at(ld, n->data.sequence.items.start[i]);
}

/* Converts a YAML scalar to the JSON text it stands for: unquoted true,
 * false, null and numbers stay what they are; anything else is a string. */
int
py_conv_json(struct loader *ld, const yaml_node_t *n, const char *what, char **out)
{
	static const char expect[] = "a JSON scalar: true, false, a number or a string";
	const char *t, *d;
	size_t len, i, o;
	char *s;

	if (n->type != YAML_SCALAR_NODE) {
		py_err_at(ld, n, "%s is %s; expected %s", what, py_kind_name(n), expect);
		return -1;
	}
	t = py_text(n);
	len = n->data.scalar.length;
	if (plain(n)) {
		if (len == 0 || strcmp(t, "~") == 0) {
			py_err_at(ld, n, "%s has no value; expected %s", what, expect);
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
	*out = py_copy(ld, t);
	return 0;
}
