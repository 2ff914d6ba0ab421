/* watch_old_pass: which look the watch takes at the old path this tick —
 * a full pass (watch_old.c: the listing with statistics) or a light one
 * (passive declares of the old queues that hold messages, and the
 * publish counters of the exchanges that can route into old queues) —
 * the light pass itself, and the schedule's persisted state (old.pass).
 * The schedule and why it counts every publish within a minute are in
 * watch_int.h (PASS_*). Internal to the watch. */
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
 * own. Returns the sum, or -1 when the exchanges could not be listed. */
static int64_t
feeding_publishes(struct tick *t)
{
	char why[768];
	const json_t *e;
	int64_t total = 0;
	size_t i;

	if (watch_exchanges(t, why, sizeof(why)) != 0)
		return -1;
	json_array_foreach(t->exchanges, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n != NULL && !ladder_own(t, n))
			total += jint(json_object_get(e, "message_stats"), "publish_in", 0);
	}
	return total;
}

/* Why this tick must make a full pass (X: feeding_publishes now), or
 * NULL when a light one does. */
static const char *
full_why(const struct tick *t, int64_t x)
{
	const struct wpass *p = &t->w->pass;
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"), "held");

	if (p->full_ms == 0 || t->w->old_publishes < 0)
		return "the first look";
	if (t->now < p->full_ms)
		return "the clock went back";
	if (x < 0)
		return "the exchanges' publish counters could not be read";
	if (watch_past_deadline(t))
		return "past the deadline: every old queue is read before the end";
	if (json_object_size(held) > OLD_EXACT_MAX)
		return "more old queues hold messages than a light pass reads";
	if (p->grow_first_ms != 0 && t->now >= p->full_ms + full_min_ms(t))
		return "publishes into an exchange that routes into old queues";
	if (t->now >= p->full_ms + full_max_ms(t))
		return "the longest time between full passes";
	return NULL;
}

/* Decides this tick's pass (T->old_full), after noting growth of the
 * feeding exchanges' publish counters. Returns T->old_full. */
bool
watch_old_pass_full(struct tick *t)
{
	struct wpass *p = &t->w->pass;
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
	t->old_full = why != NULL;
	if (why != NULL)
		snprintf(p->why, sizeof(p->why), "%s", why);
	return t->old_full;
}

/* After a full pass that answered: growth seen at least the statistics'
 * lag ago is counted now; later growth needs another full pass. */
void
watch_old_pass_done(struct tick *t)
{
	struct wpass *p = &t->w->pass;

	p->full_ms = t->now;
	p->nqueues = (int64_t)t->nq;
	p->full++;
	if (p->grow_last_ms != 0 && p->grow_last_ms > t->now - OLD_STATS_LAG_MS)
		p->grow_first_ms = t->now - OLD_STATS_LAG_MS + 1;
	else
		p->grow_first_ms = p->grow_last_ms = 0;
}

struct named {
	const char *name;
	const json_t *e;
};

static int
cmp_named(const void *a, const void *b)
{
	return strcmp(((const struct named *)a)->name, ((const struct named *)b)->name);
}

/* The queues of MEASURED by name, sorted, into a new *OUT (*N of them).
 * Returns 0 or -1 (out of memory). */
static int
measured_index(const json_t *measured, struct named **out, size_t *n)
{
	const json_t *mq = json_object_get(measured, "queues"), *e;
	size_t i;

	*n = 0;
	if ((*out = calloc(json_array_size(mq) + 1, sizeof(**out))) == NULL)
		return -1;
	json_array_foreach(mq, i, e)
		if (json_is_string(json_object_get(e, "name"))) {
			(*out)[*n].name = json_string_value(json_object_get(e, "name"));
			(*out)[(*n)++].e = e;
		}
	qsort(*out, *n, sizeof(**out), cmp_named);
	return 0;
}

static const json_t *
measured_find(const struct named *v, size_t n, const char *name)
{
	struct named key = { name, NULL }, *hit;

	hit = bsearch(&key, v, n, sizeof(*v), cmp_named);
	return hit != NULL ? hit->e : NULL;
}

/* The light pass: T->q becomes the old queues that held messages at the
 * last look (old.held) and the old queues they dead-letter into (from
 * measure_horizon), each read exactly by a passive declare. Every other
 * old queue was empty then, and only a publish (the exchanges' counters
 * show it, and a full pass follows) or a dead-letter from one of those
 * can have filled it. Returns 0, or -1 when the broker did not answer
 * (alerted) or memory ran out (T->old_seen stays false). */
int
watch_old_light(struct tick *t)
{
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"), "held");
	const json_t *v, *to, *d;
	struct named *idx = NULL;
	const char **names = NULL, *name;
	size_t nidx = 0, n = 0, cap = 0, i, k;
	int rc = -1;

	if (json_object_size(held) > 0 && measured_index(t->c->measured, &idx, &nidx) != 0)
		goto done;
	json_object_foreach((json_t *)held, name, v) {
		to = json_object_get(measured_find(idx, nidx, name), "dead_letters_to");
		cap += 1 + json_array_size(to);
	}
	if ((names = calloc(cap + 1, sizeof(*names))) == NULL ||
	    (t->q = calloc(cap + 1, sizeof(*t->q))) == NULL)
		goto done;
	json_object_foreach((json_t *)held, name, v) {
		names[n++] = name;
		to = json_object_get(measured_find(idx, nidx, name), "dead_letters_to");
		json_array_foreach(to, i, d)
			if (json_is_string(d))
				names[n++] = json_string_value(d);
	}
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i = k) {
		struct oldq *q = &t->q[t->nq++];

		for (k = i + 1; k < n && strcmp(names[k], names[i]) == 0; k++)
			;
		q->name = names[i];
		q->listed = jint(held, names[i], 0);
		q->exact = -1;
		q->publish = -1;
		q->measured = measured_find(idx, nidx, names[i]) != NULL;
	}
	t->w->pass.light++;
	if (watch_old_exact(t, true) != 0)
		goto done;
	t->old_seen = true;
	rc = 0;
done:
	free(names);
	free(idx);
	return rc;
}

/* The persisted counters of struct wpass, by key: one table for writing
 * and reading them back. */
static const struct {
	const char *key;
	size_t off;
	int64_t dflt;			/* when absent; -1 is written as null */
} pass_fields[] = {
	{ "full_ms", offsetof(struct wpass, full_ms), 0 },
	{ "exchange_publishes", offsetof(struct wpass, xpub), -1 },
	{ "growth_first_ms", offsetof(struct wpass, grow_first_ms), 0 },
	{ "growth_last_ms", offsetof(struct wpass, grow_last_ms), 0 },
	{ "queues", offsetof(struct wpass, nqueues), 0 },
	{ "full", offsetof(struct wpass, full), 0 },
	{ "light", offsetof(struct wpass, light), 0 },
};
#define NPASS_FIELDS (sizeof(pass_fields) / sizeof(pass_fields[0]))

#define PASS_FIELD(p, i) ((int64_t *)(void *)((char *)(p) + pass_fields[i].off))

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

void
watch_old_pass_read(struct wpass *p, const json_t *j)
{
	const char *why = json_string_value(json_object_get(j, "why"));

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < NPASS_FIELDS; i++)
		*PASS_FIELD(p, i) = jint(j, pass_fields[i].key, pass_fields[i].dflt);
	snprintf(p->why, sizeof(p->why), "%s", why != NULL ? why : "");
}
