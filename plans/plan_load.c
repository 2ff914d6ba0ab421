/* plan_load: reads a migration plan (DESIGN.md §2) from YAML into struct
 * plan with libyaml's document API. Every key, type and value is checked
 * where it is written, and every error is collected with the line and
 * column of the node it is about: the key for an unknown or refused key,
 * the value for a bad value, the mapping for a missing key. This file holds
 * the section loaders and plan_load_buffer/file; the YAML reader and scalar
 * conversions are plan_yaml.c's, the checks across sections plan_check.c's,
 * plan_section.h's helpers plan_section.c's (plan_load_int.h between them).
 * The checks on the plan as a whole are plan_validate's, in plan.c. */
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
#include "plan_library.h"
#include "plan_load_int.h"
#include "plan_section.h"

static void
load_name(struct loader *ld, const struct sect *root)
{
	static const char expect[] = "1 to 64 characters of [a-z0-9._-]";
	const char *t;
	yaml_node_t *n;
	size_t len, i;

	if ((n = py_field(ld, root, "name", 1, "a plan name of 1 to 64 characters "
	    "[a-z0-9._-]")) == NULL)
		return;
	if ((t = py_conv_text(ld, n, "name", expect)) == NULL)
		return;
	len = strlen(t);
	if (len > PLAN_NAME_MAX) {
		py_err_at(ld, n, "name is %zu characters long; expected %s", len, expect);
		return;
	}
	for (i = 0; i < len; i++) {
		if ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
		    t[i] == '.' || t[i] == '_' || t[i] == '-')
			continue;
		if (t[i] > ' ' && t[i] < 0x7f)
			py_err_at(ld, n, "name '%s' contains '%c'; expected %s", t, t[i], expect);
		else
			py_err_at(ld, n, "name '%s' contains byte 0x%02x; expected %s", t,
			    (unsigned char)t[i], expect);
		return;
	}
	memcpy(ld->p->name, t, len + 1);
}

static void
load_broker(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "amqp", "management", "username",
	    "password", "tls", "return_after", NULL };
	struct plan *p = ld->p;
	struct sect s;
	const char *urls[2 * BROKER_URLS_MAX];
	size_t nurls = 0;

	if (py_get_map(ld, root, "broker", 1, "a mapping with amqp, management "
	    "(each a URL or a list of a cluster's URLs), username and password",
	    "broker", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	if (py_get_urls(ld, &s, "amqp", 1, URL_AMQP, BROKER_URLS_MAX,
	    &p->broker.amqp_urls, &p->broker.namqp) == 0 && p->broker.namqp > 0)
		p->broker.amqp = py_copy(ld, p->broker.amqp_urls[0]);
	if (py_get_urls(ld, &s, "management", 1, URL_HTTP_BASE, BROKER_URLS_MAX,
	    &p->broker.management_urls, &p->broker.nmanagement) == 0 &&
	    p->broker.nmanagement > 0)
		p->broker.management = py_copy(ld, p->broker.management_urls[0]);
	py_get_text(ld, &s, "username", 1, "the user for AMQP and the management API",
	    &p->broker.username);
	py_get_secret(ld, &s, "password", 1, "env:RABBIT_PASSWORD", &p->broker.password);
	pt_load_tls(ld, &s, "broker.tls", &p->broker.tls);
	py_get_duration(ld, &s, "return_after", 0, &p->broker.return_after_ms);
	for (size_t i = 0; i < p->broker.namqp && nurls < 2 * BROKER_URLS_MAX; i++)
		urls[nurls++] = p->broker.amqp_urls[i];
	for (size_t i = 0; i < p->broker.nmanagement && nurls < 2 * BROKER_URLS_MAX; i++)
		urls[nurls++] = p->broker.management_urls[i];
	pt_check_used(ld, &s, "broker.tls", &p->broker.tls, urls, nurls);
}

/* Does PAT, matched against a NAME_MAX_LEN-byte name of every byte the
 * pattern itself holds (the worst case of nested repetition is a long run
 * of what it repeats), stay within PCRE2's limits? Returns 0, or -1 with
 * WHY naming the subject that hit one. */
static int
match_cost_ok(struct pattern *pat, const char *t, char *why, size_t whylen)
{
	char subject[QUEUE_NAME_MAX + 1], seen[256] = { 0 }, msg[128];
	bool matched;

	for (const unsigned char *c = (const unsigned char *)t; *c != '\0'; c++) {
		if (seen[*c] || *c < 0x20 || *c == 0x7f)
			continue;
		seen[*c] = 1;
		memset(subject, *c, QUEUE_NAME_MAX - 1);
		subject[QUEUE_NAME_MAX - 1] = '!';
		subject[QUEUE_NAME_MAX] = '\0';
		if (pattern_match(pat, subject, &matched, msg, sizeof(msg)) != 0) {
			snprintf(why, whylen, "%s on a %d-byte name of '%c' repeated", msg,
			    QUEUE_NAME_MAX, *c);
			return -1;
		}
	}
	return 0;
}

int
pl_conv_pattern(struct loader *ld, yaml_node_t *n, const char *what, char **out)
{
	static const char expect[] = "a PCRE2 pattern over queue names of at most "
	    "1024 bytes, such as '^delay\\.[0-9]+s$'";
	struct pattern *pat = NULL;
	const char *t;
	char why[256];
	int rc = -1;

	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	if (pattern_compile(t, &pat, why, sizeof(why)) != 0) {
		py_err_at(ld, n, "%s '%.100s%s' is not a valid regex (%s); "
		    "expected %s", what, t, strlen(t) > 100 ? "..." : "", why, expect);
		return -1;
	}
	if (match_cost_ok(pat, t, why, sizeof(why)) != 0)
		py_err_at(ld, n, "%s '%.100s%s' costs too much to match (%s); "
		    "expected a pattern without nested repetition", what, t,
		    strlen(t) > 100 ? "..." : "", why);
	else if ((*out = py_copy(ld, t)) != NULL)
		rc = 0;
	pattern_free(pat);
	return rc;
}

static void
load_match(struct loader *ld, yaml_node_t *n)
{
	if (pl_conv_pattern(ld, n, "old.queues.match", &ld->p->old.match) == 0)
		ld->match = n;
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

	if ((count = py_seq_items(ld, n, "old.queues.names", expect)) == 0)
		return;
	ld->names = n;
	if ((p->old.names = calloc(count, sizeof(char *))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(what, sizeof(what), "old.queues.names[%zu]", i);
		if ((t = py_conv_text(ld, item, what, "a queue name")) == NULL)
			continue;
		if (strlen(t) > QUEUE_NAME_MAX) {
			py_err_at(ld, item, "%s is %zu bytes long; expected a queue name of "
			    "at most %d bytes", what, strlen(t), QUEUE_NAME_MAX);
			continue;
		}
		for (j = 0; j < p->old.nnames; j++)
			if (strcmp(p->old.names[j], t) == 0)
				break;
		if (j < p->old.nnames) {
			py_err_at(ld, item, "%s '%.100s' is listed twice; expected distinct "
			    "queue names", what, t);
			continue;
		}
		if ((p->old.names[p->old.nnames] = py_copy(ld, t)) != NULL)
			p->old.nnames++;
	}
}

/* old.library: a row of the library table (plan_library.h), whose node
 * is kept for errors about the selection it implies. Returns whether the
 * key is written at all (valid or not). */
static bool
load_library(struct loader *ld, const struct sect *s)
{
	char names[128];
	yaml_node_t *n;
	const char *t;

	if ((n = py_field(ld, s, "library", 0, NULL)) == NULL)
		return false;
	plan_library_names(names, sizeof(names));
	if ((t = py_conv_text(ld, n, "old.library", names)) == NULL)
		return true;
	if ((ld->p->old.library = plan_library_find(t)) == NULL)
		py_err_at(ld, n, "old.library '%.40s' is unknown; expected %s", t, names);
	else
		ld->library = n;
	return true;
}

static void
load_old(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "queues", "max_message_ttl",
	    "allow_expiring", "library", NULL };
	static const char *const qkeys[] = { "match", "names", NULL };
	static const char qexpect[] = "{ match: REGEX } or { names: [queue, ...] }";
	yaml_node_pair_t *pm, *pn;
	yaml_node_t *n;
	struct sect s, q;
	bool library;

	if (py_get_map(ld, root, "old", 1, "a mapping with queues and optionally "
	    "max_message_ttl", "old", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	/* A library's queues are its selection unless the plan says. */
	library = load_library(ld, &s);
	if (py_get_map(ld, &s, "queues", !library, qexpect, "old.queues", &q) == 0 &&
	    q.map != NULL) {
		py_check_keys(ld, &q, qkeys);
		pm = py_find_pair(ld, q.map, "match");
		pn = py_find_pair(ld, q.map, "names");
		if (pm == NULL && pn == NULL)
			py_err_at(ld, q.map, "old.queues has neither match nor names; "
			    "expected exactly one of them: %s", qexpect);
		if (pm != NULL && pn != NULL)
			py_err_at(ld, py_key_node(ld, pm < pn ? pn : pm), "old.queues has both "
			    "match and names; expected exactly one of them");
		if (pm != NULL)
			load_match(ld, py_node_at(ld, pm->value));
		if (pn != NULL)
			load_names(ld, py_node_at(ld, pn->value));
	}
	py_get_duration(ld, &s, "max_message_ttl", 0, &ld->p->old.max_message_ttl_ms);
	if ((n = py_field(ld, &s, "allow_expiring", 0, NULL)) != NULL)
		(void)py_conv_bool(ld, n, "old.allow_expiring", &ld->p->old.allow_expiring);
}

/* What old.library sets that the plan does not write itself: the
 * selection (old.queues) and move_old.entry, one rule per kind of queue in
 * the table's order. Runs once every section is read. */
static void
apply_library(struct loader *ld)
{
	const struct plan_library *l = ld->p->old.library;
	struct plan *p = ld->p;
	char match[PATTERN_LENGTH_MAX + 1];

	if (l == NULL)
		return;
	if (p->old.match == NULL && ld->names == NULL) {
		if (plan_library_match(l, match, sizeof(match)) != 0 ||
		    (p->old.match = py_copy(ld, match)) == NULL)
			return;
		p->old.match_from_library = true;
		ld->match = ld->library;
	}
	if (p->move_old.nentries > 0 || ld->entries_given)
		return;
	if ((p->move_old.entries = calloc(l->nkinds, sizeof(*p->move_old.entries))) ==
	    NULL) {
		ld->oom = 1;
		return;
	}
	for (size_t i = 0; i < l->nkinds; i++) {
		struct plan_move_entry *e = &p->move_old.entries[i];

		if ((e->match = py_copy(ld, l->kinds[i].match)) == NULL)
			return;
		e->from = l->kinds[i].from;
		e->then = l->kinds[i].then;
		p->move_old.nentries++;
	}
	p->move_old.entries_from_library = true;
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

/* Is NAME one of L's own exchanges or queues (a level's, the delivery
 * exchange, the parking exchange and queue)? A destination reaching one
 * would loop or copy delayed messages. */
static bool
ladder_own_name(const struct ladder *l, const char *name)
{
	char own[LADDER_NAME_MAX];

	for (int k = 0; k < l->levels; k++)
		if (strcmp(ladder_level_exchange(l, k, own, sizeof(own)), name) == 0)
			return true;
	return strcmp(ladder_delivery_exchange(l, own, sizeof(own)), name) == 0 ||
	    strcmp(ladder_parking_exchange(l, own, sizeof(own)), name) == 0;
}

/* The long form of destination WHAT (the mapping N): { key: K, queue: Q }
 * or { key: K, exchange: E }. Stores K's node in *KEY and the target in T
 * (its name a copy). Returns 0, or -1 after recording why. */
static int
read_destination_map(struct loader *ld, yaml_node_t *n, const char *what,
    const struct ladder *l, int ladder_ok, yaml_node_t **key, struct plan_target *t)
{
	static const char *const keys[] = { "key", "queue", "exchange", NULL };
	static const char expect[] = "{ key: ROUTING_KEY, queue: QUEUE } or "
	    "{ key: ROUTING_KEY, exchange: EXCHANGE }";
	struct sect s = { n, what };
	yaml_node_pair_t *pq, *px;
	yaml_node_t *tn;
	const char *name;
	char label[96];

	py_check_keys(ld, &s, keys);
	if ((*key = py_field(ld, &s, "key", 1, "the routing key its messages carry "
	    "after the bit words, such as destination_route")) == NULL)
		return -1;
	pq = py_find_pair(ld, n, "queue");
	px = py_find_pair(ld, n, "exchange");
	if (pq == NULL && px == NULL) {
		py_err_at(ld, n, "%s has neither queue nor exchange; expected %s", what,
		    expect);
		return -1;
	}
	if (pq != NULL && px != NULL) {
		py_err_at(ld, py_key_node(ld, pq < px ? px : pq), "%s has both queue and "
		    "exchange; expected one of them: %s", what, expect);
		return -1;
	}
	tn = py_node_at(ld, (pq != NULL ? pq : px)->value);
	snprintf(label, sizeof(label), "%s.%s", what, pq != NULL ? "queue" : "exchange");
	if ((name = py_conv_text(ld, tn, label, pq != NULL ? "the queue its messages "
	    "reach" : "the exchange its messages reach")) == NULL)
		return -1;
	if (strlen(name) > QUEUE_NAME_MAX) {
		py_err_at(ld, tn, "%s is %zu bytes long; expected at most %d", label,
		    strlen(name), QUEUE_NAME_MAX);
		return -1;
	}
	if (ladder_ok && ladder_own_name(l, name)) {
		py_err_at(ld, tn, "%s '%.100s' is one of the ladder's own; expected "
		    "the %s its consumers own", label, name, pq != NULL ? "queue" :
		    "exchange");
		return -1;
	}
	t->exchange = px != NULL;
	t->name = py_copy(ld, name);
	return t->name != NULL ? 0 : -1;
}

/* Where destination I of P's target was listed before I, or -1. */
static int
target_listed(const struct plan *p, size_t i, const char *name, bool exchange)
{
	bool ex;

	for (size_t j = 0; j < i; j++)
		if (strcmp(plan_destination_target(p, j, &ex), name) == 0 && ex == exchange)
			return (int)j;
	return -1;
}

/* Is the destination WHAT (ITEM, its key T at KEYNODE, reaching TARGET)
 * one the plan lists already, by key or by what it reaches? Then says so
 * at its place. */
static bool
destination_repeated(struct loader *ld, yaml_node_t *item, yaml_node_t *keynode,
    const char *what, const char *t, const struct plan_target *target)
{
	struct plan *p = ld->p;
	size_t j;
	bool ex;
	int dup;

	for (j = 0; j < p->ndestinations; j++)
		if (strcmp(p->destinations[j], t) == 0)
			break;
	if (j < p->ndestinations) {
		py_err_at(ld, keynode, "%s '%.100s' is listed twice; expected distinct "
		    "destinations", what, t);
		return true;
	}
	dup = target_listed(p, p->ndestinations, target->name != NULL ? target->name :
	    t, target->exchange);
	if (dup >= 0) {
		(void)plan_destination_target(p, (size_t)dup, &ex);
		py_err_at(ld, item, "%s reaches %s '%.100s', as the destination at "
		    "line %d column %d does; expected one routing key per queue or "
		    "exchange", what, ex ? "exchange" : "queue", target->name != NULL ?
		    target->name : t, p->destinations_at[dup].line,
		    p->destinations_at[dup].column);
		return true;
	}
	return false;
}

/* Reads ladder.destinations[I] (ITEM: a routing suffix, or a map with its
 * key and its queue or exchange), checked against ladder L, and appends
 * it to the plan; what is wrong with it is a plan error at its place. */
static void
load_destination(struct loader *ld, const struct ladder *l, int ladder_ok,
    yaml_node_t *item, size_t i)
{
	struct plan *p = ld->p;
	struct plan_target target;
	yaml_node_t *keynode = item;
	char what[64], keywhat[72], err[256];
	const char *t;

	snprintf(what, sizeof(what), "ladder.destinations[%zu]", i);
	memset(&target, 0, sizeof(target));
	if (item->type == YAML_MAPPING_NODE && read_destination_map(ld, item, what,
	    l, ladder_ok, &keynode, &target) != 0)
		return;
	snprintf(keywhat, sizeof(keywhat), "%s%s", what, item == keynode ? "" : ".key");
	if ((t = py_conv_text(ld, keynode, keywhat,
	    "a routing suffix such as email.delivery")) == NULL)
		goto skip;
	if (ladder_check_destination(l, t, err, sizeof(err)) == -1) {
		py_err_at(ld, keynode, "%s is not valid: %s", keywhat, err);
		goto skip;
	}
	if (destination_repeated(ld, item, keynode, what, t, &target))
		goto skip;
	if ((p->destinations[p->ndestinations] = py_copy(ld, t)) != NULL) {
		p->destination_targets[p->ndestinations] = target;
		p->destinations_at[p->ndestinations].line =
		    py_mark_num(item->start_mark.line);
		p->destinations_at[p->ndestinations].column =
		    py_mark_num(item->start_mark.column);
		p->ndestinations++;
		return;
	}
skip:
	free(target.name);
}

static void
load_destinations(struct loader *ld, const struct sect *s, int ladder_ok)
{
	static const char expect[] = "a list of destination routing suffixes, such "
	    "as [email.delivery, billing.retry], or { key: K, queue: Q } / "
	    "{ key: K, exchange: E } where the key is not the queue's name";
	struct plan *p = ld->p;
	struct ladder probe;
	const struct ladder *l = &p->ladder;
	yaml_node_t *n;
	char err[256];
	size_t count;

	if ((n = py_field(ld, s, "destinations", 1, expect)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "ladder.destinations", expect)) == 0)
		return;
	if (!ladder_ok) {
		/* Still check the words; the key length needs the real ladder. */
		if (ladder_init(&probe, LADDER_NAMING_CUTOVER, "delay", 1, 1,
		    err, sizeof(err)) == -1)
			return;
		l = &probe;
	}
	if ((p->destinations = calloc(count, sizeof(char *))) == NULL ||
	    (p->destinations_at = calloc(count, sizeof(*p->destinations_at))) == NULL ||
	    (p->destination_targets = calloc(count, sizeof(*p->destination_targets))) ==
	    NULL) {
		ld->oom = 1;
		return;
	}
	for (size_t i = 0; i < count; i++)
		load_destination(ld, l, ladder_ok, py_seq_item(ld, n, i), i);
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
	yaml_node_t		*max_node;	/* ladder.max_delay, when valid */
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
	if ((n = py_field(ld, &f->s, "naming", 0, NULL)) != NULL) {
		if ((t = py_conv_text(ld, n, "ladder.naming", names)) == NULL)
			f->naming_ok = 0;
		else if (ladder_naming_parse(t, &f->naming) == -1) {
			py_err_at(ld, n, "ladder.naming '%.40s' is unknown; expected %s",
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

	if ((ppre = py_find_pair(ld, f->s.map, "prefix")) == NULL)
		return;
	n = py_node_at(ld, ppre->value);
	if (f->style->prefix == LADDER_PREFIX_NONE) {
		py_err_at(ld, py_key_node(ld, ppre), "ladder.prefix is not used with %s "
		    "naming, whose names are fixed; expected no prefix", f->style->name);
		f->ok = 0;
	} else if ((t = py_conv_text(ld, n, "ladder.prefix", "a name prefix such "
	    "as delay")) == NULL)
		f->ok = 0;
	else if (ladder_init(&probe, f->naming, t, 1, 1, err, sizeof(err)) == -1) {
		py_err_at(ld, n, "ladder.prefix is not valid: %s", err);
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

	n = py_field(ld, &f->s, "unit", f->naming_ok && !f->fixed, "a duration such "
	    "as 1s (the ladder's resolution)");
	if (n == NULL) {
		if (f->fixed)
			f->unit_ms = f->style->fixed_unit_ms;
		else
			f->ok = 0;
		return;
	}
	f->unit_node = n;
	if (py_conv_duration(ld, n, "ladder.unit", &f->unit_ms) == -1)
		f->ok = 0;
	else if (f->fixed && f->unit_ms != f->style->fixed_unit_ms) {
		duration_format(f->style->fixed_unit_ms, a, sizeof(a));
		py_err_at(ld, n, "ladder.unit %s conflicts with %s naming; expected %s "
		    "(its ladder is %d levels of %s) or no unit", py_text(n),
		    f->style->name, a, f->style->fixed_levels, a);
		f->ok = 0;
	}
}

/* ladder.levels (the node N): 1 to LADDER_MAX_LEVELS, or the style's own. */
static void
read_levels(struct loader *ld, struct ladder_fields *f, yaml_node_t *n)
{
	if (py_conv_int(ld, n, "ladder.levels", 1, LADDER_MAX_LEVELS, &f->levels) == -1)
		f->ok = 0;
	else if (f->fixed && f->levels != f->style->fixed_levels) {
		py_err_at(ld, n, "ladder.levels %d conflicts with %s naming; expected "
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

	if (py_conv_duration(ld, n, "ladder.max_delay", &max_ms) == -1) {
		f->ok = 0;
		return;
	}
	ld->p->max_delay_ms = max_ms;
	f->max_node = n;
	if (f->unit_ms <= 0)
		return;
	units = (uint64_t)(max_ms / f->unit_ms) + (max_ms % f->unit_ms != 0);
	lv = ladder_levels_for(units);
	most = f->fixed ? f->style->fixed_levels : LADDER_MAX_LEVELS;
	if (lv == -1 || lv > most) {
		py_err_at(ld, n, "ladder.max_delay %s needs more than %d levels of %s; "
		    "expected at most %s", py_text(n), most,
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

	pmax = py_find_pair(ld, f->s.map, "max_delay");
	plev = py_find_pair(ld, f->s.map, "levels");
	if (pmax != NULL && plev != NULL) {
		py_err_at(ld, py_key_node(ld, pmax < plev ? plev : pmax), "ladder has both "
		    "max_delay and levels; expected exactly one of them");
		f->ok = 0;
	} else if (pmax == NULL && plev == NULL && f->naming_ok && !f->fixed) {
		py_err_at(ld, f->s.map, "ladder has neither max_delay nor levels; expected "
		    "exactly one: max_delay: DURATION (such as 12d) or levels: 1 to %d",
		    LADDER_MAX_LEVELS);
		f->ok = 0;
	}
	if (plev != NULL)
		read_levels(ld, f, py_node_at(ld, plev->value));
	if (pmax != NULL)
		read_max_delay(ld, f, py_node_at(ld, pmax->value), plev != NULL);
	if (f->fixed)
		f->levels = f->style->fixed_levels;
}

/* ladder.queue_type: quorum (the plan's default) or classic, unless the
 * style's library declares quorum level queues only. */
static void
read_queue_type(struct loader *ld, const struct ladder_fields *f)
{
	yaml_node_t *n;
	const char *t;

	if ((n = py_field(ld, &f->s, "queue_type", 0, NULL)) == NULL ||
	    (t = py_conv_text(ld, n, "ladder.queue_type", "quorum or classic")) == NULL)
		return;
	if (strcmp(t, "quorum") == 0)
		ld->p->queue_type = PLAN_QUEUE_QUORUM;
	else if (strcmp(t, "classic") == 0 && f->naming_ok && f->style->quorum_only)
		py_err_at(ld, n, "ladder.queue_type classic is not used with %s naming: "
		    "the library declares its level queues as quorum queues only, and "
		    "would fail against classic ones; expected quorum (or no "
		    "queue_type)", f->style->name);
	else if (strcmp(t, "classic") == 0)
		ld->p->queue_type = PLAN_QUEUE_CLASSIC;
	else
		py_err_at(ld, n, "ladder.queue_type '%.40s' is unknown; expected "
		    "quorum or classic", t);
}

/* Builds the plan's ladder from fields that were all valid. Returns true
 * when it is built, false otherwise. */
static bool
init_ladder(struct loader *ld, const struct ladder_fields *f)
{
	char err[256], unit[32];

	if (!f->ok)
		return false;
	if (ladder_init(&ld->p->ladder, f->naming, f->prefix != NULL ? f->prefix :
	    f->style->default_prefix, f->unit_ms, f->levels, err, sizeof(err)) == -1) {
		py_err_at(ld, f->unit_node != NULL ? f->unit_node : f->s.map, "ladder of "
		    "%d levels of %s is not valid: %s", f->levels,
		    duration_format(f->unit_ms, unit, sizeof(unit)), err);
		memset(&ld->p->ladder, 0, sizeof(ld->p->ladder));
		return false;
	}
	/* Publishing holds to the plan's own maximum, not the ladder's. */
	if (f->max_node != NULL && ladder_set_limit(&ld->p->ladder,
	    ld->p->max_delay_ms, err, sizeof(err)) == -1) {
		py_err_at(ld, f->max_node, "ladder.max_delay is not valid: %s", err);
		memset(&ld->p->ladder, 0, sizeof(ld->p->ladder));
		return false;
	}
	return true;
}

static void
load_ladder(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "naming", "prefix", "unit", "max_delay",
	    "levels", "queue_type", "destinations", "create_destinations", NULL };
	struct ladder_fields f = { .naming = LADDER_NAMING_CUTOVER, .naming_ok = 1,
	    .ok = 1 };
	yaml_node_t *n;

	if (py_get_map(ld, root, "ladder", 1, "a mapping with unit, max_delay or levels, "
	    "and destinations", "ladder", &f.s) != 0 || f.s.map == NULL)
		return;
	py_check_keys(ld, &f.s, keys);
	read_naming(ld, &f);
	read_prefix(ld, &f);
	read_unit(ld, &f);
	read_size(ld, &f);
	read_queue_type(ld, &f);
	load_destinations(ld, &f.s, init_ladder(ld, &f));
	if ((n = py_field(ld, &f.s, "create_destinations", 0, NULL)) != NULL)
		(void)py_conv_bool(ld, n, "ladder.create_destinations",
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

	if (py_get_map(ld, root, "canary", 0, "a mapping with delays, max_lateness "
	    "and budget", "canary", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	py_get_duration(ld, &s, "budget", 0, &p->canary.budget_ms);
	py_get_duration(ld, &s, "max_lateness", 0, &p->canary.max_lateness_ms);
	if ((n = py_field(ld, &s, "delays", 0, NULL)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "canary.delays", expect)) == 0)
		return;
	if ((p->canary.delays_ms = calloc(count, sizeof(int64_t))) == NULL) {
		ld->oom = 1;
		return;
	}
	max = p->ladder.levels > 0 ? ladder_limit_ms(&p->ladder) : -1;
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(what, sizeof(what), "canary.delays[%zu]", i);
		if (py_conv_duration(ld, item, what, &ms) == -1)
			continue;
		if (ms > p->canary.budget_ms) {
			py_err_at(ld, item, "%s %s is beyond the canary budget of %s; expected "
			    "at most %s, or a larger canary.budget", what, py_text(item),
			    duration_format(p->canary.budget_ms, a, sizeof(a)), a);
			continue;
		}
		if (max > 0 && ms > max) {
			py_err_at(ld, item, "%s %s is beyond the ladder's largest delay %s; "
			    "expected at most %s", what, py_text(item),
			    duration_format(max, b, sizeof(b)), b);
			continue;
		}
		p->canary.delays_ms[p->canary.ndelays++] = ms;
	}
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
	if (py_get_map(ld, root, "flag", 0, expect, "flag", &s) != 0 || s.map == NULL)
		return;
	if ((n = py_field(ld, &s, "kind", 1, kinds)) != NULL &&
	    (t = py_conv_text(ld, n, "flag.kind", kinds)) != NULL &&
	    (prov = plan_flag_kind_find(t)) == NULL)
		py_err_at(ld, n, "flag.kind '%.40s' is unknown; expected %s", t, kinds);
	p->flag.kind = prov != NULL ? prov->name : NULL;
	if (prov == NULL) {
		plan_flag_keys(keys, sizeof(keys) / sizeof(keys[0]));
		py_check_keys(ld, &s, keys);
		return;
	}
	ps.ld = ld;
	ps.s = &s;
	py_check_keys(ld, &s, prov->keys);
	if ((p->flag.settings = calloc(1, prov->size)) == NULL) {
		ld->oom = 1;
		return;
	}
	prov->load(&ps, p->flag.settings);
}

static void
load_watch(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "interval", "allowance", "probe_every", NULL };
	struct plan *p = ld->p;
	struct sect s;

	if (py_get_map(ld, root, "watch", 0, "a mapping with interval, allowance and "
	    "probe_every", "watch", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	py_get_duration(ld, &s, "interval", 0, &p->watch.interval_ms);
	py_get_duration(ld, &s, "allowance", 0, &p->watch.allowance_ms);
	py_get_duration(ld, &s, "probe_every", 0, &p->watch.probe_every_ms);
}

/* One item of steps as it is written: a step name or { step, gate }. */
struct step_item {
	yaml_node_t		*node;		/* the step name's node */
	const char		*name;
	enum plan_step_kind	 kind;
	bool			 gate, gate_given;
};

/* Reads ITEM (at PATH, NAMES listing the kinds) into SI, setting *BAD for
 * each error it reports. Returns 0 when ITEM names a step kind, -1 when it
 * is to be skipped. */
static int
step_item_read(struct loader *ld, yaml_node_t *item, const char *path,
    const char *names, struct step_item *si, int *bad)
{
	static const char *const keys[] = { "step", "gate", NULL };
	char what[48];
	struct sect s;

	si->gate = false;
	si->gate_given = false;
	si->node = item;
	if (item->type == YAML_MAPPING_NODE) {
		s.map = item;
		s.path = path;
		py_check_keys(ld, &s, keys);
		snprintf(what, sizeof(what), "%s.gate", path);
		if ((si->node = py_field(ld, &s, "gate", 0, NULL)) != NULL) {
			si->gate_given = true;
			if (py_conv_bool(ld, si->node, what, &si->gate) == -1)
				*bad = 1;
		}
		if ((si->node = py_field(ld, &s, "step", 1, names)) == NULL) {
			*bad = 1;
			return -1;
		}
		snprintf(what, sizeof(what), "%s.step", path);
	} else if (item->type == YAML_SCALAR_NODE)
		snprintf(what, sizeof(what), "%s", path);
	else {
		py_err_at(ld, item, "%s is a list; expected a step name or "
		    "{ step: NAME, gate: true }", path);
		*bad = 1;
		return -1;
	}
	if ((si->name = py_conv_text(ld, si->node, what, names)) == NULL) {
		*bad = 1;
		return -1;
	}
	if (plan_step_kind_parse(si->name, &si->kind) == -1) {
		py_err_at(ld, si->node, "unknown step '%.40s'; expected one of: %s",
		    si->name, names);
		*bad = 1;
		return -1;
	}
	return 0;
}

/* Appends SI, written at ITEM, to the plan's steps. Returns 0, or -1 after
 * reporting that its kind is there already. */
static int
step_add(struct loader *ld, const struct step_item *si, const yaml_node_t *item)
{
	struct plan *p = ld->p;
	struct plan_step *st;
	size_t j;

	for (j = 0; j < p->nsteps; j++)
		if (p->steps[j].kind == si->kind)
			break;
	if (j < p->nsteps) {
		py_err_at(ld, si->node, "step '%s' appears twice (first at line %d); "
		    "expected each step at most once", si->name, p->steps[j].line);
		return -1;
	}
	st = &p->steps[p->nsteps++];
	st->kind = si->kind;
	st->gate = si->gate_given ? si->gate : plan_step_kind_gated(si->kind);
	st->line = py_mark_num(item->start_mark.line);
	st->column = py_mark_num(item->start_mark.column);
	return 0;
}

static void
load_steps(struct loader *ld, const struct sect *root)
{
	static const char expect[] = "a list of steps, each a step name or "
	    "{ step: NAME, gate: true }";
	struct plan *p = ld->p;
	struct step_item si;
	yaml_node_t *n, *item;
	char path[32];
	size_t count, i;
	char names[256];
	int bad = 0;

	plan_step_kind_names(names, sizeof(names));
	if ((n = py_field(ld, root, "steps", 1, expect)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "steps", expect)) == 0)
		return;
	if ((p->steps = calloc(count, sizeof(*p->steps))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(path, sizeof(path), "steps[%zu]", i);
		if (step_item_read(ld, item, path, names, &si, &bad) == 0 &&
		    step_add(ld, &si, item) == -1)
			bad = 1;
	}
	pc_check_sections(ld, root);
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
	    "flag", "watch", "move_old", "steps", NULL };
	static const char expect[] = "a mapping with name, broker, old, ladder and steps";
	struct sect s = { root, "" };

	if (root->type != YAML_MAPPING_NODE) {
		py_err_at(ld, root, "the plan %s; expected %s", py_is_null(root) ? "is empty" :
		    root->type == YAML_SCALAR_NODE ? "is a scalar" : "is a list", expect);
		return;
	}
	py_check_keys(ld, &s, keys);
	load_name(ld, &s);
	load_broker(ld, &s);
	load_old(ld, &s);
	load_ladder(ld, &s);
	load_canary(ld, &s);
	load_flag(ld, &s);
	load_watch(ld, &s);
	pm_load_move_old(ld, &s);
	apply_library(ld);
	load_steps(ld, &s);
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
	p->broker.return_after_ms = 30 * 1000;
	p->canary.budget_ms = PLAN_DEFAULT_CANARY_BUDGET_MS;
	p->canary.max_lateness_ms = 2000;
	p->flag.kind = NULL;
	p->flag.settle_ms = PLAN_DEFAULT_FLAG_SETTLE_MS;
	p->watch.interval_ms = 10 * 1000;
	p->watch.allowance_ms = 30 * 1000;
	p->watch.probe_every_ms = 60 * 1000;
	p->move_old.rate_per_s = 500;
	p->move_old.prefetch = 100;
	p->move_old.stragglers_ms = 60 * 1000;
	return p;
}

/* Starts a load into LD: ERRS emptied and named FILE, a new plan in LD->p.
 * Returns 0, or -1 with the reason in ERRS or LD->oom. */
static int
load_begin(struct loader *ld, const char *file, const char *buf, size_t len,
    struct plan **out, struct plan_errors *errs)
{
	memset(errs, 0, sizeof(*errs));
	memset(ld, 0, sizeof(*ld));
	ld->errs = errs;
	if (file == NULL)
		file = "(plan)";
	if ((errs->file = strdup(file)) == NULL) {
		ld->oom = 1;
		return -1;
	}
	if (out == NULL || (buf == NULL && len > 0)) {
		if (plan_errors_add(errs, 0, 0, "no plan given; expected a buffer and "
		    "a place for the plan") == -1)
			ld->oom = 1;
		return -1;
	}
	if ((ld->p = plan_new(file)) == NULL) {
		ld->oom = 1;
		return -1;
	}
	return 0;
}

int
plan_load_buffer(const char *file, const char *buf, size_t len, struct plan **out,
    struct plan_errors *errs)
{
	struct plan_errors local;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	struct loader ld;
	struct plan *p;
	int have_parser = 0, have_doc = 0, rc = -1;

	if (out != NULL)
		*out = NULL;
	if (errs == NULL)
		errs = &local;
	if (load_begin(&ld, file, buf, len, out, errs) == -1)
		goto done;
	if (py_read_document(&ld, &parser, &have_parser, &doc, &have_doc, buf, len, &root,
	    "a YAML mapping with name, broker, old, ladder and steps", "plan") == -1)
		goto done;
	load_root(&ld, root);
	pc_check_own(&ld);
	if (plan_validate(ld.p, errs) == -1)
		ld.oom = 1;

done:
	if (ld.oom)
		plan_errors_add(errs, 0, 0, "out of memory while loading the plan");
	py_sort_errors(errs);
	p = ld.p;
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

int
plan_load_file(const char *path, struct plan **out, struct plan_errors *errs)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (py_read_file(path, "plan", "a plan of a few kilobytes", &buf, &len, errs) != 0)
		return -1;
	rc = plan_load_buffer(path, buf, len, out, errs);
	free(buf);
	return rc;
}
