/* watch_old_pass: which look the watch takes at the old path this tick —
 * a full pass (the listing with statistics) or a light one (passive
 * declares of the old queues that hold messages, and the publish
 * counters of the exchanges that can route into old queues), both made
 * by watch_old.c — and the schedule's part of the state (struct wpass,
 * persisted as old.pass). The schedule and why it counts every publish
 * within a minute are in watch_int.h (PASS_*). Internal to the watch. */
#include <stddef.h>

#include "watch_int.h"

/* The shortest time between two full passes that exchange growth asks
 * for: OLD_STATS_LAG_MS + an interval + this is PASS_BOUND_MS, at most
 * four intervals, at least one. */
static int64_t
full_min_ms(const struct tick *t)
{
	int64_t i = t->p->watch.interval_ms, m = PASS_BOUND_MS - OLD_STATS_LAG_MS - i;

	if (m > 4 * i)
		m = 4 * i;
	return m > i ? m : i;
}

/* The longest time between two full passes. */
static int64_t
full_max_ms(const struct tick *t)
{
	int64_t m = PASS_MAX_TICKS * t->p->watch.interval_ms;

	return m > full_min_ms(t) ? m : full_min_ms(t);
}

/* Is exchange NAME the ladder's own (a level exchange, the delivery or
 * the parking exchange)? Those route only into the ladder; verify_ladder
 * and the watch's re-verification call any other binding on them drift. */
static bool
ladder_own(const struct tick *t, const char *name)
{
	const struct ladder *l = &t->p->ladder;
	char x[LADDER_NAME_MAX];

	if (strcmp(name, t->delivery) == 0 ||
	    strcmp(name, ladder_parking_exchange(l, x, sizeof(x))) == 0)
		return true;
	for (int k = 0; k < l->levels; k++)
		if (strcmp(name, ladder_level_exchange(l, k, x, sizeof(x))) == 0)
			return true;
	return false;
}

/* The client publishes into every exchange that can route into an old
 * queue: all of the vhost's (the default one included) but the ladder's
 * own and the watch's statistics exchange (its markers). Returns the sum, or -1 when the exchanges could not be listed. */
static int64_t
feeding_publishes(struct tick *t)
{
	char why[768];
	const json_t *e;
	int64_t total = 0;
	size_t i;

	if (watch_old_exchanges(t, why, sizeof(why)) != 0)
		return -1;
	json_array_foreach(t->old_exchanges, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n != NULL && !ladder_own(t, n) && strcmp(n, t->stats_exchange) != 0)
			total += jint(json_object_get(e, "message_stats"), "publish_in", 0);
	}
	return total;
}

/* Why this tick must make a full pass (X: feeding_publishes now), or
 * NULL when a light one does. */
static const char *
full_why(const struct tick *t, int64_t x)
{
	const struct wpass *p = &t->w->old.pass;
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"), "held");

	if (p->full_ms == 0 || t->w->old.publishes < 0)
		return "the first look";
	if (t->now < p->full_ms)
		return "the clock went back";
	if (x < 0)
		return "the exchanges' publish counters could not be read";
	if (watch_deadline_past(t))
		return "past the deadline: every old queue is read before the end";
	if (json_object_size(held) > OLD_EXACT_MAX)
		return "more old queues hold messages than a light pass reads";
	if (p->grow_first_ms != 0 && t->now >= p->full_ms + full_min_ms(t))
		return "publishes into an exchange that routes into old queues";
	if (t->now >= p->full_ms + full_max_ms(t))
		return "the longest time between full passes";
	return NULL;
}

/* Decides this tick's pass (T->old.full), after noting growth of the
 * feeding exchanges' publish counters; counts a light one. Returns T->old.full. */
bool
watch_old_pass_full(struct tick *t)
{
	struct wpass *p = &t->w->old.pass;
	int64_t x = feeding_publishes(t);
	const char *why;

	/* Unreadable counters may hide growth: count it as growth. */
	if (x < 0 || (p->xpub >= 0 && x != p->xpub)) {
		if (p->grow_first_ms == 0)
			p->grow_first_ms = t->now;
		p->grow_last_ms = t->now;
	}
	if (x >= 0)
		p->xpub = x;
	why = full_why(t, x);
	t->old.full = why != NULL;
	if (why != NULL)
		snprintf(p->why, sizeof(p->why), "%s", why);
	else
		p->light++;	/* watch_old.c makes it */
	return t->old.full;
}

/* After a full pass that answered: growth seen by the time the
 * statistics count every publish to (watch_stats_counted_to) is counted
 * now; later growth needs another full pass. */
void
watch_old_pass_done(struct tick *t)
{
	struct wpass *p = &t->w->old.pass;
	int64_t to = watch_stats_counted_to(t);

	p->full_ms = t->now;
	p->fresh_ms = t->w->stats.fresh_ms;
	p->nqueues = (int64_t)t->old.nq;
	p->full++;
	if (p->grow_last_ms != 0 && p->grow_last_ms > to)
		p->grow_first_ms = to + 1;
	else
		p->grow_first_ms = p->grow_last_ms = 0;
}

/* The persisted counters of struct wpass, by key: one table for writing
 * and reading them back. */
static const struct {
	const char *key;
	size_t off;
	int64_t dflt;			/* when absent; -1 is written as null */
} pass_fields[] = {
	{ "full_ms", offsetof(struct wpass, full_ms), 0 },
	{ "counted_to_ms", offsetof(struct wpass, fresh_ms), 0 },
	{ "exchange_publishes", offsetof(struct wpass, xpub), -1 },
	{ "growth_first_ms", offsetof(struct wpass, grow_first_ms), 0 },
	{ "growth_last_ms", offsetof(struct wpass, grow_last_ms), 0 },
	{ "queues", offsetof(struct wpass, nqueues), 0 },
	{ "full", offsetof(struct wpass, full), 0 },
	{ "light", offsetof(struct wpass, light), 0 },
};
#define NPASS_FIELDS (sizeof(pass_fields) / sizeof(pass_fields[0]))

#define PASS_FIELD(p, i) ((int64_t *)(void *)((char *)(p) + pass_fields[i].off))

/* The persisted old.pass: the counters above and "why", a new reference. */
json_t *
watch_old_pass_json(const struct wpass *p)
{
	json_t *j = json_pack("{s:s}", "why", p->why);

	for (size_t i = 0; j != NULL && i < NPASS_FIELDS; i++) {
		int64_t v = *PASS_FIELD(p, i);

		json_object_set_new(j, pass_fields[i].key, int_or_null(v, v >= 0 ||
		    pass_fields[i].dflt >= 0));
	}
	return j;
}

/* Reads the persisted old.pass J into P. */
void
watch_old_pass_load(struct wpass *p, const json_t *j)
{
	const char *why = json_string_value(json_object_get(j, "why"));

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < NPASS_FIELDS; i++)
		*PASS_FIELD(p, i) = jint(j, pass_fields[i].key, pass_fields[i].dflt);
	snprintf(p->why, sizeof(p->why), "%s", why != NULL ? why : "");
}
