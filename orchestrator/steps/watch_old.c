/* watch_old: the watch's look at the old path — a full pass (one listing
 * with statistics) or a light one (watch_old_pass.c), exact depths by
 * passive declares, publishes into the old
 * path, unmeasured and vanished old queues. Internal to the watch
 * (watch_int.h). */
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

	if (t->nq <= OLD_EXACT_MAX)
		all = true;
	for (size_t i = 0; i < t->nq; i++) {
		struct oldq *q = &t->q[i];

		if (q->exact >= 0)
			continue;
		if (!all && (q->listed <= 0 || budget == 0))
			continue;
		budget -= budget > 0;
		r = broker_queue_inspect(t->c->amqp, q->name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			q->exact = 0;
			q->gone = true;
			t->old_gone++;
			continue;
		}
		if (r != 0) {
			snprintf(what, sizeof(what), "reading old queue '%s'", q->name);
			watch_unreachable(t, what, why);
			return -1;
		}
		q->exact = qi.messages;
	}
	t->old_depth = t->old_nonempty = 0;
	t->old_exact_all = true;
	for (size_t i = 0; i < t->nq; i++) {
		int64_t d = t->q[i].exact >= 0 ? t->q[i].exact : t->q[i].listed;

		if (t->q[i].exact < 0)
			t->old_exact_all = false;
		if (d > 0) {
			t->old_depth += d;
			t->old_nonempty++;
		}
	}
	return 0;
}

/* The old queues the watch did not know from measure_horizon, as one
 * listing shows them. */
struct unmeasured {
	size_t n;			/* listed now */
	size_t nnew;			/* new to the watch, to alert */
	char names[400];		/* the first NAMES_LISTED of those */
	int64_t ttl;			/* the largest x-message-ttl among them, -1 */
	const char *ttl_queue;		/* whose (borrowed from the listing) */
};

/* The names of the queues measure_horizon measured (borrowed from
 * MEASURED), sorted, into a new *OUT. Returns 0 or -1 (out of memory). */
static int
measured_names(const json_t *measured, const char ***out, size_t *n)
{
	const json_t *mq = json_object_get(measured, "queues"), *e;
	size_t i;

	*n = 0;
	if ((*out = calloc(json_array_size(mq) + 1, sizeof(**out))) == NULL)
		return -1;
	json_array_foreach(mq, i, e)
		if (json_is_string(json_object_get(e, "name")))
			(*out)[(*n)++] = json_string_value(json_object_get(e, "name"));
	qsort(*out, *n, sizeof(**out), cmp_str);
	return 0;
}

/* Lists the vhost's queues into T->listing. Returns 0, or -1 when the
 * broker did not answer (alerted). */
static int
old_list(struct tick *t)
{
	char path[900], why[768];

	/* One unpaginated request, statistics on (message_stats needs them),
	 * only the columns used: at 10,000 queues one walk of the queue
	 * table, where pages would walk it once per page. */
	snprintf(path, sizeof(path), "/api/queues/%s?columns=" OLD_WATCH_COLUMNS
	    ",messages_dlx,head_message_timestamp", t->vhost);
	if (mgmt_request(t->c->mgmt, "GET", path, NULL, &t->listing, NULL, why,
	    sizeof(why)) != 0 || !json_is_array(t->listing)) {
		watch_unreachable(t, "listing the old queues", t->listing == NULL ? why :
		    "the answer is not a list");
		return -1;
	}
	return 0;
}

/* Counts the unmeasured old queue NAME (listed as E) in U, and names it
 * for the alert when it is new to the watch. */
static void
note_unmeasured(struct tick *t, const json_t *e, const char *name,
    struct unmeasured *u)
{
	struct wstate *w = t->w;
	int64_t ttl = jint(json_object_get(e, "arguments"), "x-message-ttl", -1);
	bool known = false;

	u->n++;
	if (ttl > u->ttl) {
		u->ttl = ttl;
		u->ttl_queue = name;
	}
	for (size_t k = 0; k < w->nknown_new && !known; k++)
		known = strcmp(w->known_new[k], name) == 0;
	if (known)
		return;
	/* New to the watch: alerted once (remembered while there is
	 * room, past that by their count), so that an acknowledged
	 * alert stays acknowledged while the queue stays. */
	if (w->nknown_new < NEW_KNOWN_MAX)
		snprintf(w->known_new[w->nknown_new++], LADDER_NAME_MAX, "%s",
		    name);
	else if (u->n <= (size_t)w->unmeasured_seen)
		return;
	if (u->nnew < NAMES_LISTED)
		watch_appendf(u->names, sizeof(u->names), "'%s'", name);
	u->nnew++;
}

/* Fills T->q with the listed queues SEL selects (MEASURED, N: the sorted
 * names measure_horizon measured), their publish counters summed into
 * *TOTAL, the unmeasured ones into U. Returns 0, or -1 with ERR (memory,
 * a name the selection cannot decide). */
static int
select_listed(struct tick *t, struct old_selector *sel, const char **measured,
    size_t n, int64_t *total, struct unmeasured *u, char *err, size_t errlen)
{
	const json_t *e;
	size_t i;
	bool selected;

	if ((t->q = calloc(json_array_size(t->listing) + 1, sizeof(*t->q))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	json_array_foreach(t->listing, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const json_t *ms = json_object_get(e, "message_stats");
		struct oldq *q;

		if (name == NULL)
			continue;
		if (old_selector_test(sel, name, &selected, err, errlen) != 0)
			return -1;
		if (!selected)
			continue;
		q = &t->q[t->nq++];
		q->name = name;
		q->listed = jint(e, "messages", 0);
		q->exact = -1;
		q->publish = jint(ms, "publish", -1);
		q->measured = bsearch(&name, measured, n, sizeof(*measured),
		    cmp_str) != NULL;
		*total += jint(ms, "publish", 0);
		if (!q->measured)
			note_unmeasured(t, e, name, u);
	}
	return 0;
}

/* Raises old_new_queue for the unmeasured queues new to the watch; the
 * largest TTL among them counts when it is the largest. */
static void
alert_unmeasured(struct tick *t, const struct unmeasured *u)
{
	struct wstate *w = t->w;

	if (u->nnew == 0)
		return;
	watch_alert(t, "old_new_queue", "%zu queue%s matching the old selection %s not "
	    "measured by measure_horizon: %s%s; a producer still creates old "
	    "queues? Their publishes and depths are watched, but their TTLs are "
	    "not in the horizon%s", u->nnew, u->nnew == 1 ? "" : "s",
	    u->nnew == 1 ? "was" : "were", u->names, u->nnew > NAMES_LISTED ?
	    " and more" : "", u->ttl > w->max_ttl_ms ?
	    " (the largest x-message-ttl among them now counts)" : "");
	if (u->ttl > w->max_ttl_ms) {
		w->max_ttl_ms = u->ttl;
		snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
		    u->ttl_queue);
		t->deadline_moved = true;
		snprintf(t->moved_why, sizeof(t->moved_why), "unmeasured old "
		    "queue '%.100s' has a longer TTL", u->ttl_queue);
	}
}

/* Publishes into the old path since the last tick: TOTAL is the publish
 * counters' sum now. Moves the last entry (and the deadline) and raises
 * old_publish for those after the settle window. */
static void
count_publishes(struct tick *t, int64_t total)
{
	struct wstate *w = t->w;
	char tbuf[40], d1[32];

	if (w->old_publishes < 0) {
		/* The first look. Publishes between the flip and now that the
		 * statistics show already cannot be told from earlier ones when
		 * the flip is longer ago than the lag: assume the last came
		 * just now — unless move_old's last pass saw the same total. */
		if (w->moved_publishes >= 0 && total == w->moved_publishes)
			;
		else if (t->now > w->flip_ms + OLD_STATS_LAG_MS &&
		    w->last_old_entry_ms < t->now) {
			w->last_old_entry_ms = t->now;
			t->deadline_moved = true;
			snprintf(t->moved_why, sizeof(t->moved_why), "first look at the "
			    "old path's publishes more than %d s after the flip",
			    OLD_STATS_LAG_MS / 1000);
		}
	} else if (total > w->old_publishes) {
		int64_t n = total - w->old_publishes;

		w->last_old_entry_ms = t->now;
		t->deadline_moved = true;
		if (t->now < w->flip_ms + OLD_STATS_LAG_MS) {
			w->old_settled += n;
			snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s counted "
			    "within %d s of the flip (they may predate it)", (long long)n,
			    n == 1 ? "" : "es", OLD_STATS_LAG_MS / 1000);
		} else {
			w->old_after_flip += n;
			watch_update_deadline(w);
			watch_alert(t, "old_publish", "%lld message%s entered the old path after "
			    "the flip (%lld in all so far): some producer still publishes to "
			    "old queues; the deadline moves to %s (last entry + largest TTL "
			    "%s + allowance)", (long long)n, n == 1 ? "" : "s",
			    (long long)w->old_after_flip,
			    old_time_format(w->deadline_ms, tbuf, sizeof(tbuf)),
			    duration_format(w->max_ttl_ms, d1, sizeof(d1)));
			snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s into "
			    "the old path after the flip", (long long)n, n == 1 ? "" : "es");
		}
	} else if (total < w->old_publishes)
		w->old_resets++;	/* a queue deleted, or statistics reset */
	w->old_publishes = total;
	watch_update_deadline(w);
}

/* Samples the old path: on a full pass (watch_old_pass_full), one
 * management listing with statistics (depths, cumulative publishes,
 * arguments) restricted to the old selection, then exact depths; on a
 * light pass, exact depths of the queues that held messages
 * (watch_old_light). Raises old_publish when the publish total grew after the
 * settle window, and old_new_queue for a selected queue measure_horizon
 * did not measure. Returns 0, or -1 with ERR on a local failure (memory,
 * a selection PCRE2 cannot decide); a broker failure is an alert and returns 0. */
int
watch_old(struct tick *t, char *err, size_t errlen)
{
	struct unmeasured u = { .ttl = -1 };
	struct old_selector sel = { 0 };
	const char **measured = NULL;
	size_t nmeasured = 0;
	int64_t total = 0;
	int rc = -1;

	t->old_queues = t->w->pass.nqueues;
	if (!watch_old_pass_full(t)) {
		(void)watch_old_light(t);
		return 0;
	}
	if (old_selector_init(&sel, t->p, err, errlen) != 0)
		goto done;
	if (measured_names(t->c->measured, &measured, &nmeasured) != 0) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	if (old_list(t) != 0) {
		rc = 0;
		goto done;
	}
	if (select_listed(t, &sel, measured, nmeasured, &total, &u, err, errlen) != 0)
		goto done;
	t->old_seen = true;
	t->old_queues = (int64_t)t->nq;
	t->w->unmeasured_seen = (int64_t)u.n;
	alert_unmeasured(t, &u);
	count_publishes(t, total);
	(void)watch_old_exact(t, false);
	watch_old_pass_done(t);
	rc = 0;
done:
	old_selector_free(&sel);
	free(measured);
	return rc;
}

/* Old queues that held messages at the last tick (PREV, its old.held) and
 * are gone now (not listed, or not found by a passive declare): deleted by
 * hand, or by their x-expires, with those messages. Raises old_vanished
 * naming them, then remembers the queues that hold messages now. */
void
watch_old_vanished(struct tick *t)
{
	const json_t *prev = json_object_get(json_object_get(t->c->state, "old"), "held");
	const char **present = NULL, *name;
	char names[400] = "";
	const json_t *v;
	size_t np = 0, n = 0;
	int64_t lost = 0;

	if (!t->old_seen) {
		/* Nothing seen this tick: keep what was known. */
		t->held = json_is_object(prev) ? json_deep_copy(prev) : json_object();
		return;
	}
	t->held = json_object();
	if ((present = calloc(t->nq + 1, sizeof(*present))) == NULL)
		return;
	for (size_t i = 0; i < t->nq; i++) {
		const struct oldq *q = &t->q[i];
		int64_t d = q->exact >= 0 ? q->exact : q->listed;

		if (q->gone)
			continue;
		present[np++] = q->name;
		if (d > 0 && json_object_size(t->held) < HELD_MAX)
			json_object_set_new(t->held, q->name, json_integer(d));
	}
	qsort(present, np, sizeof(*present), cmp_str);
	json_object_foreach((json_t *)prev, name, v) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    bsearch(&name, present, np, sizeof(*present), cmp_str) != NULL)
			continue;
		lost += json_integer_value(v);
		if (n++ < NAMES_LISTED)
			watch_appendf(names, sizeof(names), "'%s' (%lld)", name,
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
