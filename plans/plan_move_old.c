/* plan_move_old: the move_old section of a plan:
 *
 *   move_old:
 *     rate: 500/s                      # or N/m; at most this many moved
 *     prefetch: 100                    # taken before confirms are awaited
 *     unknown_entry_max_lateness: 2m   # unstamped: full TTL only up to this
 *     stragglers: 1m                   # producers' lag after the flip
 *     entry:                           # first matching entry wins
 *       - { queues: { match: REGEX }, from: timestamp }
 *       - { queues: { match: REGEX }, from: header, header: x-sent-at }
 *       - { queues: { match: REGEX }, from: unknown }
 *       - { queues: { match: REGEX }, from: [arrival, timestamp] }
 *
 * A selected queue no entry matches is `unknown`; a list of two sources
 * tries the second for a message the first gives no time for. Without
 * entry, old.library's rules apply (plan_load.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan_load_int.h"
#include "move_entry.h"

static const char *const from_names[] = {
	[MOVE_FROM_UNKNOWN] = "unknown",
	[MOVE_FROM_TIMESTAMP] = "timestamp",
	[MOVE_FROM_HEADER] = "header",
	[MOVE_FROM_ARRIVAL] = "arrival",
	[MOVE_FROM_DEATH] = "death",
};

#define NFROM (sizeof(from_names) / sizeof(from_names[0]))

const char *
move_from_name(enum move_from f)
{
	return (unsigned)f < NFROM ? from_names[f] : "?";
}
#define RATE_MAX 1000000

/* "N/s", "N/m" or a bare N (per second). */
static void
load_rate(struct loader *ld, const struct sect *s)
{
	static const char expect[] = "a rate such as 500/s or 3000/m (1 to 1000000 "
	    "per second)";
	yaml_node_t *n;
	const char *t;
	char *end;
	long long v;
	int64_t per_s;

	if ((n = py_field(ld, s, "rate", 0, NULL)) == NULL ||
	    (t = py_conv_text(ld, n, "move_old.rate", expect)) == NULL)
		return;
	v = strtoll(t, &end, 10);
	if (end == t || v <= 0 || v > RATE_MAX * 60LL)
		goto bad;
	if (*end == '\0' || strcmp(end, "/s") == 0)
		per_s = v;
	else if (strcmp(end, "/m") == 0)
		per_s = (v + 59) / 60;
	else
		goto bad;
	if (per_s > RATE_MAX)
		goto bad;
	ld->p->move_old.rate_per_s = per_s;
	return;
bad:
	py_err_at(ld, n, "move_old.rate '%.40s' is not a rate; expected %s", t, expect);
}

#define FROM_EXPECT "timestamp, header, arrival, death or unknown, or a list of two"

/* The source of entry times written at N (WHAT names it), or -1 after
 * saying why. */
static int
from_of(struct loader *ld, yaml_node_t *n, const char *what)
{
	const char *t;
	size_t k;

	if ((t = py_conv_text(ld, n, what, FROM_EXPECT)) == NULL)
		return -1;
	for (k = 0; k < NFROM && strcmp(t, from_names[k]) != 0; k++)
		;
	if (k == NFROM) {
		py_err_at(ld, n, "%s '%.40s' is not a source of entry times; expected "
		    "timestamp, header, arrival, death or unknown", what, t);
		return -1;
	}
	return (int)k;
}

/* One item of move_old.entry at N into E. */
static void
load_entry(struct loader *ld, yaml_node_t *n, size_t i, struct plan_move_entry *e)
{
	static const char *const keys[] = { "queues", "from", "header", NULL };
	static const char *const qkeys[] = { "match", NULL };
	char path[48], qpath[64], what[80], what2[88];
	struct sect s = { n, path }, q;
	yaml_node_t *f, *m;
	const char *t;

	snprintf(path, sizeof(path), "move_old.entry[%zu]", i);
	e->line = py_mark_num(n->start_mark.line);
	e->column = py_mark_num(n->start_mark.column);
	if (n->type != YAML_MAPPING_NODE) {
		py_err_at(ld, n, "%s is not a mapping; expected { queues: { match: REGEX "
		    "}, from: timestamp|header|arrival|unknown }", path);
		return;
	}
	py_check_keys(ld, &s, keys);
	snprintf(qpath, sizeof(qpath), "%s.queues", path);
	if (py_get_map(ld, &s, "queues", 1, "{ match: REGEX }", qpath, &q) == 0 &&
	    q.map != NULL) {
		py_check_keys(ld, &q, qkeys);
		snprintf(what, sizeof(what), "%s.queues.match", path);
		if ((m = py_field(ld, &q, "match", 1, "a PCRE2 pattern")) != NULL)
			(void)pl_conv_pattern(ld, m, what, &e->match);
	}
	snprintf(what, sizeof(what), "%s.from", path);
	if ((f = py_field(ld, &s, "from", 1, FROM_EXPECT)) == NULL)
		return;
	if (f->type == YAML_SEQUENCE_NODE) {
		if (f->data.sequence.items.top - f->data.sequence.items.start != 2) {
			py_err_at(ld, f, "%s is a list of %d; expected two sources, the "
			    "second for a message the first gives no time for", what,
			    (int)(f->data.sequence.items.top - f->data.sequence.items.start));
			return;
		}
		snprintf(what2, sizeof(what2), "%s[0]", what);
		if ((e->from = from_of(ld, py_seq_item(ld, f, 0), what2)) < 0)
			return;
		snprintf(what2, sizeof(what2), "%s[1]", what);
		if ((e->then = from_of(ld, py_seq_item(ld, f, 1), what2)) < 0)
			return;
		if (e->from == MOVE_FROM_UNKNOWN || e->then == MOVE_FROM_UNKNOWN ||
		    e->from == e->then) {
			py_err_at(ld, f, "%s lists %s and %s; expected two different "
			    "sources other than unknown", what, from_names[e->from],
			    from_names[e->then]);
			return;
		}
	} else if ((e->from = from_of(ld, f, what)) < 0)
		return;
	t = from_names[e->from];
	if (e->from == MOVE_FROM_HEADER || e->then == MOVE_FROM_HEADER)
		(void)py_get_text(ld, &s, "header", 1, "the header's name, such as "
		    "x-sent-at", &e->header);
	else if (py_find_pair(ld, n, "header") != NULL)
		py_err_at(ld, n, "%s has a header but from: %s; expected a header only "
		    "with from: header", path, t);
}

void
pm_load_move_old(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "rate", "prefetch",
	    "unknown_entry_max_lateness", "stragglers", "entry", NULL };
	static const char expect[] = "a list of { queues: { match: REGEX }, from: "
	    "timestamp|header|arrival|unknown }";
	struct plan *p = ld->p;
	yaml_node_t *n;
	size_t count;
	struct sect s;

	if (py_get_map(ld, root, "move_old", 0, "a mapping with rate, prefetch, "
	    "unknown_entry_max_lateness, stragglers and entry", "move_old", &s) != 0 ||
	    s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	load_rate(ld, &s);
	if ((n = py_field(ld, &s, "prefetch", 0, NULL)) != NULL)
		(void)py_conv_int(ld, n, "move_old.prefetch", 1, 10000,
		    &p->move_old.prefetch);
	py_get_duration(ld, &s, "unknown_entry_max_lateness", 0,
	    &p->move_old.unknown_max_lateness_ms);
	py_get_duration(ld, &s, "stragglers", 0, &p->move_old.stragglers_ms);
	if ((n = py_field(ld, &s, "entry", 0, NULL)) != NULL)
		ld->entries_given = true;
	if (n == NULL || (count = py_seq_items(ld, n, "move_old.entry", expect)) == 0)
		return;
	if ((p->move_old.entries = calloc(count, sizeof(*p->move_old.entries))) == NULL) {
		ld->oom = 1;
		return;
	}
	p->move_old.nentries = count;
	for (size_t i = 0; i < count; i++)
		load_entry(ld, py_seq_item(ld, n, i), i, &p->move_old.entries[i]);
}
