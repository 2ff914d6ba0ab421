/* watch_stats: how current the management statistics are, measured rather
 * than assumed. Each tick the watch publishes one marker through an
 * exchange and into a queue of its own ("cutover.stats.PLAN", both); a
 * full pass's queue listing shows that queue's publish counter, and the
 * k-th marker counted means the statistics count every publish the broker
 * handled up to the moment the watch sent it. RabbitMQ adds each publish
 * to its per-channel counters as the channel routes it, and the
 * management agent's collectors fold those counters into what the API
 * shows on their own schedule, which a busy node can starve for a minute
 * or more; so the watch's own marker tells how far behind the API is for
 * every producer's publishes, not only its own. The part's state (struct
 * wstats) persists as "stats". Internal to the watch (watch_int.h); calls
 * only watch_record.c. */
#include "watch_int.h"

/* A collector folds a node's counters into the API in one walk of them:
 * a publish made during the walk, before the marker, may be seen only by
 * the next. A marker counted vouches for what came this long before it. */
#define STATS_FOLD_MS	1000

/* Statistics behind by more than the lag and an interval for this long
 * start a new generation: markers that a queue out of reach did not take
 * (its node down, the connection moved to another) leave its counter
 * short of the markers sent, and every marker it counts after is taken
 * for an older one, so the lag it shows never closes. A new queue counts
 * from nothing; statistics that are truly behind stay so in it. */
#define STATS_REGEN_MS	30000

/* The statistics queue's arguments: it drops each marker at once (the
 * counter is what is read, never the message) and expires when unused, so
 * a watch that never ends leaves nothing behind for long; its exchange
 * goes with its binding (broker_exchange_declare_auto_delete). Durable,
 * of the plan's queue type like the probe queue: RabbitMQ 4.3 refuses
 * transient queues that are not exclusive, and an exclusive one would go
 * with every reconnection. */
static void
stats_args(const struct tick *t, struct topology_arg a[3])
{
	int64_t expires = 10 * t->p->watch.interval_ms;

	if (expires < PROBE_QUEUE_EXPIRES_MIN_MS)
		expires = PROBE_QUEUE_EXPIRES_MIN_MS;
	memset(a, 0, 3 * sizeof(*a));
	snprintf(a[0].key, sizeof(a[0].key), "x-expires");
	a[0].is_int = true;
	a[0].num = expires;
	snprintf(a[1].key, sizeof(a[1].key), "x-message-ttl");
	a[1].is_int = true;
	a[1].num = 0;
	snprintf(a[2].key, sizeof(a[2].key), "x-queue-type");
	snprintf(a[2].str, sizeof(a[2].str), "%s",
	    t->p->queue_type == PLAN_QUEUE_QUORUM ? "quorum" : "classic");
}

/* Declares the statistics exchange and this generation's queue and binds
 * them; when the last counter did not match the markers sent (S->restart),
 * first moves to a new generation, whose queue no statistics have seen
 * (a queue deleted and declared again under the same name may show its
 * old counter until the collectors catch up), and deletes the old one.
 * Idempotent; every tick. Returns 0, or -1 with WHAT and WHY. */
static int
stats_declare(struct tick *t, struct wstats *s, char *what, size_t whatlen,
    char *why, size_t whylen)
{
	struct broker *b = t->c->old_amqp;
	struct topology_arg a[3];

	stats_args(t, a);
	if (s->restart) {
		snprintf(what, whatlen, "deleting the statistics queue '%s'", t->stats_queue);
		if (broker_queue_delete(b, t->stats_queue, 0, NULL, why, whylen) != 0)
			return -1;
		s->gen++;
		s->sent = 0;
		s->counted = -1;
		s->restart = false;
		plan_stats_queue(t->p, s->gen, t->stats_queue, sizeof(t->stats_queue));
	}
	snprintf(what, whatlen, "declaring the statistics exchange '%s' and queue '%s'",
	    t->stats_exchange, t->stats_queue);
	if (broker_exchange_declare_auto_delete(b, t->stats_exchange, "fanout", why,
	    whylen) != 0 ||
	    broker_queue_declare(b, t->stats_queue, true, a, 3, why, whylen) != 0 ||
	    broker_queue_bind(b, t->stats_queue, t->stats_exchange, "", why, whylen) != 0)
		return -1;
	return 0;
}

void
watch_stats_init(struct wstats *s)
{
	memset(s, 0, sizeof(*s));
	s->counted = -1;
}

void
watch_stats_names(struct tick *t)
{
	plan_stats_exchange(t->p, t->stats_exchange, sizeof(t->stats_exchange));
	plan_stats_queue(t->p, t->w->stats.gen, t->stats_queue, sizeof(t->stats_queue));
}

void
watch_stats_mark(struct tick *t)
{
	struct wstats *s = &t->w->stats;
	struct broker_message m = { 0 };
	char why[768], what[LADDER_NAME_MAX + 96];

	if (stats_declare(t, s, what, sizeof(what), why, sizeof(why)) != 0) {
		watch_unreachable(t, what, why);
		return;
	}
	m.exchange = t->stats_exchange;
	m.routing_key = "";
	m.body = "cutover statistics marker";
	m.len = strlen(m.body);
	if (broker_publish(t->c->old_amqp, &m, PROBE_PUBLISH_TIMEOUT_MS, why,
	    sizeof(why)) != 0) {
		/* Perhaps taken, perhaps not: the counter may now run one
		 * ahead of what is stamped, so a new generation. */
		s->restart = true;
		watch_unreachable(t, "publishing the statistics marker", why);
		return;
	}
	s->marks[s->sent % STATS_MARKS] = t->now;
	s->sent++;
}

/* The statistics queue's publish counter in a full pass's LISTING: 0 when
 * the listing does not show it (yet), -1 when the queue is not listed. */
static int64_t
listed_count(const struct tick *t, const struct old_listing *listing)
{
	const struct old_listed *e = old_listing_find(listing, t->stats_queue);

	if (e == NULL)
		return -1;
	return e->publish >= 0 ? e->publish : 0;
}

/* Do the statistics count every publish up to OLD_STATS_LAG_MS and one
 * interval before T->now? (The markers go out once a tick.) */
static bool
near_now(const struct tick *t)
{
	return t->w->stats.fresh_ms >= t->now - OLD_STATS_LAG_MS - t->p->watch.interval_ms;
}

/* Notes since when the statistics have been behind by more than the lag
 * and an interval, and asks for a new generation once that has lasted
 * STATS_REGEN_MS. */
static void
stats_behind(const struct tick *t, struct wstats *s)
{
	if (near_now(t))
		s->behind_ms = 0;
	else if (s->behind_ms == 0 || s->behind_ms > t->now)
		s->behind_ms = t->now;
	else if (t->now - s->behind_ms >= STATS_REGEN_MS) {
		s->restart = true;
		s->restarts++;
		s->behind_ms = 0;
	}
}

void
watch_stats_read(struct tick *t, const struct old_listing *listing)
{
	struct wstats *s = &t->w->stats;
	int64_t n = listed_count(t, listing);

	if (n < 0) {
		stats_behind(t, s);	/* not listed yet: nothing counted */
		return;
	}
	if (n > s->sent || n < s->counted) {
		/* More than was sent, or fewer than before: someone else
		 * publishes there, or the counter was reset (a restarted
		 * management agent, an expired queue). What was measured
		 * stands; a new generation measures on. */
		s->restart = true;
		s->restarts++;
		return;
	}
	s->counted = n;
	if (n > 0 && n > s->sent - STATS_MARKS &&
	    s->marks[(n - 1) % STATS_MARKS] - STATS_FOLD_MS > s->fresh_ms)
		s->fresh_ms = s->marks[(n - 1) % STATS_MARKS] - STATS_FOLD_MS;
	stats_behind(t, s);
}

bool
watch_stats_current(const struct tick *t)
{
	return t->w->stats.fresh_ms >= t->w->deadline_ms && near_now(t);
}

int64_t
watch_stats_counted_to(const struct tick *t)
{
	int64_t assumed = t->now - OLD_STATS_LAG_MS;

	return t->w->stats.fresh_ms < assumed ? t->w->stats.fresh_ms : assumed;
}

int
watch_stats_remove(struct tick *t)
{
	char why[768];

	if (broker_queue_delete(t->c->old_amqp, t->stats_queue, 0, NULL, why,
	    sizeof(why)) != 0 ||
	    broker_exchange_delete(t->c->old_amqp, t->stats_exchange, false, why,
	    sizeof(why)) != 0) {
		watch_unreachable(t, "removing the statistics queue", why);
		return -1;
	}
	return 0;
}

/* The persisted counters of struct wstats, by key. */
#define S(M, KEY, DFLT)	JFIELD(struct wstats, M, KEY, DFLT)
static const struct jfield stats_fields[] = {
	S(gen, "generation", 0), S(sent, "sent", 0), S(counted, "counted", -1),
	S(fresh_ms, "counted_to_ms", 0), S(restarts, "restarts", 0),
	S(behind_ms, "behind_since_ms", 0),
};
#undef S

json_t *
watch_stats_json(const struct tick *t, const struct wstats *s)
{
	json_t *j = json_object(), *marks = json_array();
	int64_t first = s->sent > STATS_MARKS ? s->sent - STATS_MARKS : 0;

	if (j == NULL || marks == NULL) {
		json_decref(marks);
		return j;
	}
	jint_fields_put(j, s, stats_fields, JFIELDS_N(stats_fields));
	for (int64_t k = first; k < s->sent; k++)
		json_array_append_new(marks, json_integer(s->marks[k % STATS_MARKS]));
	json_object_set_new(j, "marks", marks);
	json_object_set_new(j, "restart", json_boolean(s->restart));
	json_object_set_new(j, "lag_ms", int_or_null(t->now - s->fresh_ms, s->fresh_ms > 0));
	return j;
}

void
watch_stats_load(struct wstats *s, const json_t *j)
{
	const json_t *marks = json_object_get(j, "marks");
	int64_t first;

	watch_stats_init(s);
	if (j == NULL)
		return;		/* a state from before this part */
	jint_fields(s, j, stats_fields, JFIELDS_N(stats_fields));
	s->restart = json_is_true(json_object_get(j, "restart"));
	first = s->sent - (int64_t)json_array_size(marks);
	if (first < 0 || json_array_size(marks) > STATS_MARKS)
		s->restart = true;	/* not readable: a new generation */
	if (s->restart)
		return;
	for (size_t i = 0; i < json_array_size(marks); i++)
		s->marks[(first + (int64_t)i) % STATS_MARKS] =
		    json_integer_value(json_array_get(marks, i));
}
