/* watch_old: the watch's look at the old path — a full pass (one listing
 * with statistics) or a light one (passive declares of the queues that
 * held messages), as watch_old_pass.c decides, exact depths by passive
 * declares, publishes into the old path, unmeasured and vanished old
 * queues — and the old path's part of the state (struct wold, persisted
 * as "old"). Internal to the watch (watch_int.h). */
#include "watch_int.h"

/* ---- the old path ---- */

/* Reads old queues exactly: every one when ALL, else, past OLD_EXACT_MAX
 * queues, only those the listing shows non-empty (up to OLD_EXACT_MAX).
 * Recomputes the depth figures. Returns 0, or -1 when the broker failed
 * (alerted). */
int
watch_old_exact(struct tick *t, bool all)
{
	struct broker_queue_info qi;
	size_t budget = OLD_EXACT_MAX;
	char why[512], what[LADDER_NAME_MAX + 64];
	int r;

	if (t->old.nq <= OLD_EXACT_MAX)
		all = true;
	for (size_t i = 0; i < t->old.nq; i++) {
		struct oldq *q = &t->old.q[i];

		if (q->exact >= 0)
			continue;
		if (!all && (q->listed <= 0 || budget == 0))
			continue;
		budget -= budget > 0;
		r = broker_queue_inspect(t->c->old_amqp, q->name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			q->exact = 0;
			q->gone = true;
			t->old.gone++;
			continue;
		}
		if (r != 0) {
			snprintf(what, sizeof(what), "reading old queue '%s'", q->name);
			watch_unreachable(t, what, why);
			return -1;
		}
		q->exact = qi.messages;
	}
	t->old.depth = t->old.nonempty = 0;
	t->old.exact_all = true;
	for (size_t i = 0; i < t->old.nq; i++) {
		int64_t d = t->old.q[i].exact >= 0 ? t->old.q[i].exact : t->old.q[i].listed;

		if (t->old.q[i].exact < 0)
			t->old.exact_all = false;
		if (d > 0) {
			t->old.depth += d;
			t->old.nonempty++;
		}
	}
	return 0;
}

/* The old path is the selection, not a snapshot: libraries declare a
 * delay queue when a delay is first used and let it expire after its last
 * message, so queues join the old path and leave it as the application
 * runs. A selected queue that measure_horizon did not measure joins the
 * old path (its TTL counts in the horizon, remove_old takes it by the same
 * rules) silently when it was there by the time the watch first looked or
 * the flip's statistics window was still open; one that appears between
 * two looks after that window was created after the flip, which only a
 * publish into the old path does: old_new_queue. A member that vanishes
 * empty is counted as gone; one holding messages raises old_vanished. */
struct members {
	const struct seen_table *prev;	/* the last full pass's counters, or
					 * NULL (the first look) */
	const json_t *joined_prev;	/* members joined so far, or NULL */
	size_t nnew;			/* created after the flip, to alert */
	char names[400];		/* the first NAMES_LISTED of those */
	int64_t ttl;			/* the largest TTL among the joined, -1 */
	const char *ttl_queue;		/* whose (borrowed from the listing) */
	int64_t created;		/* publishes into queues created after
					 * the flip */
	int64_t grown;			/* counter growth on queues seen before */
	int64_t late;			/* counters that first showed now */
	int64_t deeper;			/* of those, in queues that hold more
					 * now than at the last tick */
	int64_t reset;			/* counters that went down or vanished */
};

/* Lists the vhost's queues into T->old.listing, a table of the columns
 * the watch reads (the listing's JSON is never held: about 1.1 KB a
 * queue). Returns 0, or -1 when the broker did not answer (alerted). */
static int
old_list(struct tick *t)
{
	char why[768];

	/* Statistics on (message_stats needs them), only the columns used;
	 * in one request up to 20,000 queues, by name past that
	 * (mgmt_list_queues_all). A queue created or deleted during the
	 * listing may be missing, one there throughout never is: a queue
	 * created meanwhile shows at the next full pass, as one created just
	 * after this would. */
	if (old_listing_read(t->c->old_mgmt, OLD_WATCH_COLUMNS
	    ",messages_dlx,head_message_timestamp", &t->old.listing, why,
	    sizeof(why)) != 0) {
		watch_unreachable(t, "listing the old queues", why);
		return -1;
	}
	t->old.listed = true;
	return 0;
}

/* Was the last full pass made once the flip's statistics window had
 * closed, and did its listing count the watch's own markers from after
 * the flip (watch_stats.c)? Then whatever the statistics show first since
 * (a publish, a new queue, a counter that was not there) happened after
 * the flip; until then it may predate it. */
static bool
since_after_window(const struct tick *t)
{
	const struct wpass *p = &t->w->old.pass;

	return p->full_ms >= t->w->flip_ms + OLD_STATS_LAG_MS &&
	    p->fresh_ms >= t->w->flip_ms;
}

/* The TTL by which joining old queue E (listed) counts in the horizon: its
 * x-message-ttl argument, else old.max_message_ttl, else -1. */
static int64_t
joined_ttl(const struct tick *t, const struct old_listed *e)
{
	int64_t ttl = e->ttl_ms;

	return ttl >= 0 ? ttl : (t->p->old.max_message_ttl_ms > 0 ?
	    t->p->old.max_message_ttl_ms : -1);
}

/* Old queue NAME (listed as E), not measured, is a member of the old path:
 * recorded in T->joined (a copy of the members so far, made at the first
 * joiner) unless it is there already; CREATED: it appeared after the flip
 * (named for the alert in M). */
static void
note_joined(struct tick *t, const struct old_listed *e, const char *name,
    bool created, struct members *m)
{
	struct wstate *w = t->w;
	int64_t ttl = joined_ttl(t, e);

	if (ttl > m->ttl) {
		m->ttl = ttl;
		m->ttl_queue = name;
	}
	if (created) {
		if (m->nnew++ < NAMES_LISTED)
			sentences_add(m->names, sizeof(m->names), "'%s'", name);
		if (w->old.nknown_new < NEW_KNOWN_MAX)
			snprintf(w->old.known_new[w->old.nknown_new++], LADDER_NAME_MAX, "%s",
			    name);
	}
	if (json_object_get(t->old.joined != NULL ? t->old.joined : m->joined_prev, name) != NULL)
		return;
	if (t->old.joined == NULL)
		t->old.joined = m->joined_prev != NULL ? json_deep_copy(m->joined_prev) :
		    json_object();
	if (t->old.joined == NULL || json_object_size(t->old.joined) >= JOINED_MAX) {
		w->old.joined_over++;
		return;
	}
	json_object_set_new(t->old.joined, name, ttl >= 0 ? json_integer(ttl) : json_null());
}

/* Compares queue Q's publish counter now with the last full pass's (PV,
 * NULL when it was not listed then) into M. Returns whether it is new
 * since that pass.
 *
 * A counter that went down, or vanished and came back, was reset (a
 * management agent that restarted starts every counter again: from zero,
 * or from the whole count of a channel that stayed open, published
 * before the flip as much as after): what it shows is a new baseline,
 * never publishes. Only the queue's depth can still tell of messages
 * that entered since (late_or_after). */
static bool
compare_counter(struct oldq *q, const struct seen_row *pv, struct members *m)
{
	if (pv == NULL) {
		m->created += q->publish > 0 ? q->publish : 0;
		return true;
	}
	if (pv->kind == SEEN_LOST) {
		q->rebased = true;
		return false;
	}
	if (pv->kind == SEEN_COUNT && q->publish < pv->publish) {
		m->reset++;
		q->rebased = true;
		return false;
	}
	if (pv->kind != SEEN_COUNT) {
		/* No counter then: an idle queue's, or statistics that had not
		 * caught up (they can lag a minute for a queue published to
		 * once). What shows now may predate the last look, unless its
		 * depth says otherwise (late_or_after). */
		q->first_count = q->publish > 0 ? q->publish : 0;
		m->late += q->first_count;
		return false;
	}
	m->grown += q->publish - pv->publish;
	return false;
}

/* What the pass records of queue Q (PV: the last full pass's row): its
 * counter, or, without one, SEEN_LOST when it had one (or had lost it)
 * and SEEN_NONE when it never had. */
static void
seen_entry(struct oldq *q, const struct seen_row *pv)
{
	q->seen_publish = q->publish;
	if (q->publish >= 0)
		q->seen = SEEN_COUNT;
	else if (pv != NULL && pv->kind != SEEN_NONE)
		q->seen = SEEN_LOST;
	else
		q->seen = SEEN_NONE;
}

/* Fills T->old.q with the listed queues SEL selects (whether each was
 * measured: T->mq), in the listing's order (by name), their publish
 * counters summed into *TOTAL and recorded in each (seen), each compared
 * with the last full pass into M, the unmeasured ones joined. Returns 0,
 * or -1 with ERR (memory, a name the selection cannot decide). */
static int
select_listed(struct tick *t, struct old_selector *sel, int64_t *total,
    struct members *m, char *err, size_t errlen)
{
	const struct seen_row *pv;
	bool selected, fresh;

	if ((t->old.q = calloc(t->old.listing.n + 1, sizeof(*t->old.q))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < t->old.listing.n; i++) {
		const struct old_listed *e = &t->old.listing.v[i];
		const char *name = e->name;
		struct oldq *q;

		if (old_selector_test(sel, name, &selected, err, errlen) != 0)
			return -1;
		if (!selected)
			continue;
		q = &t->old.q[t->old.nq++];
		q->name = name;
		q->listed = e->messages >= 0 ? e->messages : 0;
		q->exact = -1;
		q->publish = e->publish;
		q->measured = old_measured_find(t->mq, name) != NULL;
		*total += e->publish >= 0 ? e->publish : 0;
		pv = watch_seen_find(m->prev, name);
		seen_entry(q, pv);
		fresh = m->prev != NULL && compare_counter(q, pv, m);
		if (!q->measured)
			note_joined(t, e, name, fresh && since_after_window(t), m);
	}
	return 0;
}

/* A counter that shows for the first time is after the flip even within
 * its statistics window when its queue holds more messages now, by exact
 * reads where made, than at the last tick (whose depths are in the
 * state's "held"): messages that arrived since a look made after the
 * flip. Counts those into M's deeper. A reset counter's queue that holds
 * more now counts that growth, at least what entered, as publishes since
 * the last look (late, and deeper: after the flip). */
static void
late_or_after(struct tick *t, struct members *m)
{
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"),
	    "held");

	for (size_t i = 0; i < t->old.nq; i++) {
		const struct oldq *q = &t->old.q[i];
		int64_t d = q->exact >= 0 ? q->exact : q->listed;
		int64_t before = json_integer_value(json_object_get(held, q->name));

		if (q->first_count > 0 && d > before)
			m->deeper += q->first_count;
		if (q->rebased && d > before) {
			m->late += d - before;
			m->deeper += d - before;
		}
	}
}

/* Members of the last full pass (M->prev) that this listing no longer
 * shows: gone (the ones that held messages are old_vanished's). */
static void
count_gone(struct tick *t, const struct members *m)
{
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"),
	    "held");
	size_t j = 0;
	int c = 0;

	/* Both in name order: one walk. */
	for (size_t i = 0; i < m->prev->n; i++) {
		const char *name = m->prev->v[i].name;

		while (j < t->old.nq && (c = strcmp(t->old.q[j].name, name)) < 0)
			j++;
		if ((j == t->old.nq || c != 0) &&
		    json_integer_value(json_object_get(held, name)) <= 0)
			t->w->old.gone_empty++;
	}
}

/* Raises old_new_queue for old queues created after the flip; the largest
 * TTL among the joined counts when it is the largest. */
static void
alert_joined(struct tick *t, const struct members *m)
{
	struct wstate *w = t->w;

	if (m->nnew > 0)
		watch_alert(t, "old_new_queue", "%zu old queue%s appeared after the flip: "
		    "%s%s; the old path is still in use (a producer not switched to the "
		    "ladder declares them as it publishes). They are watched and "
		    "removed like the others, their TTLs count in the deadline",
		    m->nnew, m->nnew == 1 ? "" : "s", m->names, m->nnew > NAMES_LISTED ?
		    " and more" : "");
	if (m->ttl > w->max_ttl_ms) {
		w->max_ttl_ms = m->ttl;
		snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s", m->ttl_queue);
		t->deadline_moved = true;
		snprintf(t->moved_why, sizeof(t->moved_why), "old queue '%.100s', which "
		    "joined the old path, has a longer TTL", m->ttl_queue);
	}
}

/* The first look at the old path's publishes: TOTAL is the counters' sum
 * now. Publishes between the flip and now that the statistics show
 * already cannot be told from earlier ones when the flip is longer ago
 * than the lag: assume the last came just now, unless move_old's last
 * pass saw the same total. */
static void
first_publishes(struct tick *t, int64_t total)
{
	struct wstate *w = t->w;

	if (w->moved_publishes >= 0 && total == w->moved_publishes)
		return;
	if (t->now >= w->flip_ms + OLD_STATS_LAG_MS && w->last_old_entry_ms < t->now) {
		w->last_old_entry_ms = t->now;
		t->deadline_moved = true;
		snprintf(t->moved_why, sizeof(t->moved_why), "first look at the old "
		    "path's publishes more than %d s after the flip",
		    OLD_STATS_LAG_MS / 1000);
	}
}

/* Publishes into the old path since the last full pass, queue by queue
 * (M): a queue's counter can only be compared with its own, since queues
 * come and go and a sum of them moves with every queue that expires. Each
 * moves the last entry (and the deadline) to now. What the statistics
 * show first since a pass made within the flip's window may predate the
 * flip: settled, no alert (unless a queue's depth grew since the last
 * tick); since a pass made after it, old_publish. */
static void
count_publishes(struct tick *t, const struct members *m)
{
	struct wstate *w = t->w;
	int64_t all = m->grown + m->created + m->late;
	int64_t after = since_after_window(t) ? all : m->deeper;
	char tbuf[40], d1[32];

	w->old.resets += m->reset;
	if (all == 0)
		return;
	w->last_old_entry_ms = t->now;
	t->deadline_moved = true;
	w->old.late += m->late;
	if (after == 0) {
		w->old.settled += all;
		snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s counted "
		    "within the flip's statistics window (they may predate it)",
		    (long long)all, all == 1 ? "" : "es");
		return;
	}
	w->old.after_flip += after;
	w->old.settled += all - after;
	watch_deadline_update(w);
	watch_alert(t, "old_publish", "%lld message%s entered the old path after the "
	    "flip (%lld in all so far): some producer still publishes to old queues; "
	    "the deadline moves to %s (last entry + largest TTL %s + allowance)",
	    (long long)after, after == 1 ? "" : "s", (long long)w->old.after_flip,
	    old_time_format(w->deadline_ms, tbuf, sizeof(tbuf)),
	    duration_format(w->max_ttl_ms, d1, sizeof(d1)));
	snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s into the old "
	    "path after the flip", (long long)after, after == 1 ? "" : "es");
}

/* A queue of measure_horizon's result, by name (the light pass's index). */
/* The light pass: T->old.q becomes the old queues that held messages at the
 * last look (old.held) and the old queues they dead-letter into (from
 * measure_horizon), each read exactly by a passive declare. Every other
 * old queue was empty then, and only a publish (the exchanges' counters
 * show it, and a full pass follows) or a dead-letter from one of those
 * can have filled it. Returns 0, or -1 when the broker did not answer
 * (alerted) or memory ran out (T->old.seen stays false). */
static int
old_light(struct tick *t)
{
	const json_t *held = json_object_get(json_object_get(t->c->state, "old"), "held");
	const struct old_measured_queue *mq;
	const json_t *v;
	const char **names = NULL, *name;
	size_t n = 0, cap = 0, i, k;
	int rc = -1;

	json_object_foreach((json_t *)held, name, v) {
		mq = old_measured_find(t->mq, name);
		cap += 1 + (mq != NULL ? mq->nto : 0);
	}
	if ((names = calloc(cap + 1, sizeof(*names))) == NULL ||
	    (t->old.q = calloc(cap + 1, sizeof(*t->old.q))) == NULL)
		goto done;
	json_object_foreach((json_t *)held, name, v) {
		names[n++] = name;
		if ((mq = old_measured_find(t->mq, name)) != NULL)
			for (i = 0; i < mq->nto; i++)
				names[n++] = mq->to[i];
	}
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i = k) {
		struct oldq *q = &t->old.q[t->old.nq++];

		for (k = i + 1; k < n && strcmp(names[k], names[i]) == 0; k++)
			;
		q->name = names[i];
		q->listed = jint(held, names[i], 0);
		q->exact = -1;
		q->publish = -1;
		q->measured = old_measured_find(t->mq, names[i]) != NULL;
	}
	if (watch_old_exact(t, true) != 0)
		goto done;
	t->old.seen = true;
	rc = 0;
done:
	free(names);
	return rc;
}

/* Looks at the old path: on a full pass (watch_old_pass_full), one
 * management listing with statistics (depths, cumulative publishes,
 * arguments) restricted to the old selection, then exact depths; on a
 * light pass, exact depths of the queues that held messages
 * (old_light). Raises old_publish when the publish total grew after the
 * settle window, and old_new_queue for a selected queue measure_horizon
 * did not measure. Returns 0, or -1 with ERR on a local failure (memory,
 * a selection PCRE2 cannot decide); a broker failure is an alert and returns 0. */
static int
old_sample(struct tick *t, char *err, size_t errlen)
{
	const json_t *old = json_object_get(t->c->state, "old");
	struct members m = { .ttl = -1 };
	struct old_selector sel = { 0 };
	struct seen_table prev = { 0 };
	int64_t total = 0;
	int rc = -1;

	t->old.queues = t->w->old.pass.nqueues;
	if (!watch_old_pass_full(t)) {
		(void)old_light(t);
		return 0;
	}
	if (watch_seen_read(t->c, &prev, err, errlen) != 0)
		goto done;
	m.prev = prev.have ? &prev : NULL;
	m.joined_prev = json_is_object(json_object_get(old, "joined")) ?
	    json_object_get(old, "joined") : NULL;
	if (old_selector_init(&sel, t->p, err, errlen) != 0)
		goto done;
	if (old_list(t) != 0) {
		rc = 0;
		goto done;
	}
	watch_stats_read(t, &t->old.listing);
	if (select_listed(t, &sel, &total, &m, err, errlen) != 0)
		goto done;
	t->old.counted = true;
	t->old.seen = true;
	t->old.queues = (int64_t)t->old.nq;
	t->w->old.unmeasured_seen = (int64_t)(t->old.joined != NULL ?
	    json_object_size(t->old.joined) : json_object_size(m.joined_prev));
	alert_joined(t, &m);
	(void)watch_old_exact(t, false);
	if (m.prev == NULL || t->w->old.publishes < 0)
		first_publishes(t, total);
	else {
		count_gone(t, &m);
		late_or_after(t, &m);
		count_publishes(t, &m);
	}
	t->w->old.publishes = total;
	watch_deadline_update(t->w);
	watch_old_pass_done(t);
	rc = 0;
done:
	old_selector_free(&sel);
	watch_seen_free(&prev);
	return rc;
}

/* Old queues that held messages at the last tick (PREV, its old.held) and
 * are gone now (not listed, or not found by a passive declare): deleted by
 * hand, or by their x-expires, with those messages. Raises old_vanished
 * naming them, then remembers the queues that hold messages now. */
static void
old_vanished(struct tick *t)
{
	const json_t *prev = json_object_get(json_object_get(t->c->state, "old"), "held");
	const char **present = NULL, *name;
	char names[400] = "";
	const json_t *v;
	size_t np = 0, n = 0;
	int64_t lost = 0;

	if (!t->old.seen) {
		/* Nothing seen this tick: keep what was known. */
		t->old.held = json_is_object(prev) ? json_deep_copy(prev) : json_object();
		return;
	}
	t->old.held = json_object();
	if ((present = calloc(t->old.nq + 1, sizeof(*present))) == NULL)
		return;
	for (size_t i = 0; i < t->old.nq; i++) {
		const struct oldq *q = &t->old.q[i];
		int64_t d = q->exact >= 0 ? q->exact : q->listed;

		if (q->gone)
			continue;
		present[np++] = q->name;
		if (d > 0 && json_object_size(t->old.held) < HELD_MAX)
			json_object_set_new(t->old.held, q->name, json_integer(d));
	}
	qsort(present, np, sizeof(*present), cmp_str);
	json_object_foreach((json_t *)prev, name, v) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    bsearch(&name, present, np, sizeof(*present), cmp_str) != NULL)
			continue;
		lost += json_integer_value(v);
		if (n++ < NAMES_LISTED)
			sentences_add(names, sizeof(names), "'%s' (%lld)", name,
			    (long long)json_integer_value(v));
	}
	free(present);
	if (n > 0)
		watch_alert(t, "old_vanished", "%zu old queue%s vanished while holding "
		    "messages (%lld when last sampled): %s%s; deleted by hand or by "
		    "its x-expires (or a policy's expires), its messages are gone "
		    "unless someone moved them", n, n == 1 ? "" : "s", (long long)lost,
		    names, n > NAMES_LISTED ? " and more" : "");
}

/* This tick's reading of the old path (old_sample), then the queues that
 * vanished holding messages (old_vanished). Returns 0, or -1 with ERR on
 * a local failure (memory, a selection PCRE2 cannot decide); a broker
 * failure is an alert and returns 0. */
int
watch_old_read(struct tick *t, char *err, size_t errlen)
{
	if (old_sample(t, err, errlen) != 0)
		return -1;
	old_vanished(t);
	return 0;
}

/* A new watch's: no publishes counted yet. */
void
watch_old_init(struct wold *o)
{
	o->publishes = -1;
}

/* The old path's samples this tick, when it was seen: its depth
 * (old.depth), its non-empty queues (old.nonempty) and the publishes into
 * it (old.publishes). Returns 0, or -1 when out of memory. */
int
watch_old_samples(struct tick *t)
{
	if (t->old.seen && (watch_sample(t, t->now, "old.depth", "",
	    (double)t->old.depth) ||
	    watch_sample(t, t->now, "old.nonempty", "", (double)t->old.nonempty) ||
	    watch_sample(t, t->now, "old.publishes", "", (double)t->w->old.publishes)))
		return -1;
	return 0;
}

/* The persisted "old" member, a new reference: the counts, the unmeasured
 * queues alerted already (new_queues), the passes' schedule (pass); the
 * queues that hold messages (held), how many old queues the last full
 * pass counted (seen_n: the result's rows, watch_old_rows) and the
 * members measure_horizon did not measure, with their TTLs (joined:
 * remove_old takes them as it takes the measured), each from this tick
 * or, when it did not read them, carried forward from the last state
 * (and a state from before the rows, its counters themselves: seen);
 * and those members' counts. */
json_t *
watch_old_json(const struct tick *t, const struct wold *o)
{
	const json_t *prev = json_object_get(t->c->state, "old");
	const json_t *seen = t->old.counted ? NULL : json_object_get(prev, "seen");
	const json_t *seen_n = t->old.counted ? NULL : json_object_get(prev, "seen_n");
	const json_t *joined = t->old.joined != NULL ? t->old.joined :
	    json_object_get(prev, "joined");
	json_t *j, *known = json_array();

	for (size_t i = 0; i < o->nknown_new; i++)
		json_array_append_new(known, json_string(o->known_new[i]));
	j = json_pack("{s:o,s:I,s:I,s:I,s:I,s:o}",
	    "publishes", int_or_null(o->publishes, o->publishes >= 0),
	    "after_flip", (json_int_t)o->after_flip,
	    "settled", (json_int_t)o->settled,
	    "resets", (json_int_t)o->resets,
	    "unmeasured_queues", (json_int_t)o->unmeasured_seen,
	    "new_queues", known);
	if (j == NULL)
		return NULL;
	json_object_set_new(j, "pass", watch_old_pass_json(&o->pass));
	json_object_set(j, "held", t->old.held != NULL ? t->old.held :
	    json_object_get(prev, "held"));
	if (t->old.counted)
		json_object_set_new(j, "seen_n", json_integer((json_int_t)t->old.nq));
	else if (json_is_integer(seen_n))
		json_object_set(j, "seen_n", (json_t *)seen_n);
	else if (json_is_object(seen))
		json_object_set(j, "seen", (json_t *)seen);
	json_object_set_new(j, "joined", json_is_object(joined) ?
	    json_incref((json_t *)joined) : json_object());
	json_object_set_new(j, "late", json_integer(o->late));
	json_object_set_new(j, "gone_empty", json_integer(o->gone_empty));
	json_object_set_new(j, "joined_unnamed", json_integer(o->joined_over));
	return j;
}

/* Old queue Q's last reading, an element of the watch's last sample:
 * {"name", "publish" (message_stats.publish, null when the statistics had
 * none), "messages" (exact when read so)}. */
static json_t *
last_element(const struct oldq *q)
{
	return json_pack("{s:s,s:o,s:I}", "name", q->name,
	    "publish", int_or_null(q->publish, q->publish >= 0),
	    "messages", (json_int_t)(q->exact >= 0 ? q->exact : q->listed));
}

/* The last tick's reading of each old queue, which remove_old compares
 * with its own before deleting (the state's "old_last", a new reference):
 * {"at_ms", "queues_in": "entries"}, its list handed over as the result's
 * rows by watch_old_last_rows (at 100,000 old queues a tree of it would
 * cost some 50 MB at the watch's last tick). */
json_t *
watch_old_last_json(const struct tick *t)
{
	return json_pack("{s:I,s:s}", "at_ms", (json_int_t)t->now, "queues_in",
	    OLD_LAST_IN_ENTRIES);
}

/* The ended watch's rows: an element of its last sample per old queue,
 * handed over one at a time as the tick's counters are (watch_old_rows),
 * when RESULT has that sample ("old_last"); else none. When a row cannot
 * be written (the temporary file's disk full, memory), the sample is put
 * in "old_last" itself as "queues", which every reader also takes: the
 * watch still ends, and remove_old still has what it compares with. */
void
watch_old_last_rows(struct tick *t, json_t *result)
{
	struct step_ctx *c = t->c;
	json_t *list = json_array(), *last = json_object_get(result, "old_last"), *qs;

	if (json_object_set_new(result, "entries", list) != 0 || !json_is_object(last))
		return;
	for (size_t i = 0; i < t->old.nq; i++)
		if (step_rows_put(c->rows_wanted ? &c->rows : NULL, list,
		    last_element(&t->old.q[i])) != 0)
			goto inline_sample;
	return;
inline_sample:
	step_rows_clear(&c->rows);
	json_array_clear(list);
	if ((qs = json_array()) == NULL)
		return;
	for (size_t i = 0; i < t->old.nq; i++)
		json_array_append_new(qs, last_element(&t->old.q[i]));
	json_object_set_new(last, "queues", qs);
	json_object_del(last, "queues_in");
}

/* Hands this tick's counters over as the result's rows, an element
 * {"name", "publish"} per old queue (its counter, COUNTER_LOST or null),
 * when its full pass counted them: into C's rows when the engine takes
 * them (c->rows_wanted), else into RESULT's "entries". Otherwise the last
 * pass's stay: the engine keeps its rows (c->rows_kept), and a caller
 * that keeps the result whole finds them carried in "entries". RESULT
 * always has "entries" (the rows' place). Returns 0, or -1 with the
 * reason in the rows (out of memory, the rows' file). */
int
watch_old_rows(struct tick *t, json_t *result)
{
	struct step_ctx *c = t->c;
	json_t *list = json_array(), *last;

	if (list == NULL || json_object_set_new(result, "entries", list) != 0)
		return -1;
	if (!t->old.counted) {
		last = json_object_get(c->state, "entries");
		if (c->rows_wanted)
			c->rows_kept = true;
		else if (json_is_array(last))
			json_object_set(result, "entries", last);
		return 0;
	}
	for (size_t i = 0; i < t->old.nq; i++) {
		const struct oldq *q = &t->old.q[i];

		if (step_rows_put(c->rows_wanted ? &c->rows : NULL, list,
		    json_pack("{s:s,s:o}", "name", q->name, "publish",
		    watch_seen_value(q->seen, q->seen_publish))) != 0)
			return -1;
	}
	return 0;
}

/* The integer members of the persisted "old". */
static const struct jfield old_fields[] = {
	JFIELD(struct wold, publishes, "publishes", -1),
	JFIELD(struct wold, after_flip, "after_flip", 0),
	JFIELD(struct wold, settled, "settled", 0),
	JFIELD(struct wold, resets, "resets", 0),
	JFIELD(struct wold, late, "late", 0),
	JFIELD(struct wold, gone_empty, "gone_empty", 0),
	JFIELD(struct wold, joined_over, "joined_unnamed", 0),
	JFIELD(struct wold, unmeasured_seen, "unmeasured_queues", 0),
};

/* Reads the persisted "old" member J into O (held, seen and joined stay
 * in the JSON, where this tick's look reads them: watch_old_read). */
void
watch_old_load(struct wold *o, const json_t *j)
{
	const json_t *e;
	size_t i;

	jint_fields(o, j, old_fields, JFIELDS_N(old_fields));
	watch_old_pass_load(&o->pass, json_object_get(j, "pass"));
	json_array_foreach(json_object_get(j, "new_queues"), i, e)
		if (json_is_string(e) && o->nknown_new < NEW_KNOWN_MAX)
			snprintf(o->known_new[o->nknown_new++], LADDER_NAME_MAX, "%s",
			    json_string_value(e));
}
