/* watch_record: what a watch tick collects and records — its pending
 * alerts (one per kind and tick), its samples, and writing both, with
 * their events, to the store. A leaf: every part calls it, and it calls
 * no other file of the watch (watch_int.h). */
#include "alert_kinds.h"
#include "log.h"
#include "watch_int.h"

/* Adds alert KIND with MSG to the N pending ones in V (ALERTS_MAX at
 * most: a tick that raises more keeps the first). */
static void
pending_add(struct pending *v, size_t *n, const char *kind, const char *msg)
{
	if (*n == ALERTS_MAX)
		return;
	snprintf(v[*n].kind, sizeof(v[*n].kind), "%s", kind);
	snprintf(v[*n].msg, sizeof(v[*n].msg), "%s", msg);
	(*n)++;
}

/* Queues an alert of KIND for this tick; a second one of the same kind in
 * the same tick is appended to the first (one raise per kind and tick). */
void
watch_alert(struct tick *t, const char *kind, const char *fmt, ...)
{
	struct pending *pa = NULL;
	char msg[ALERT_MSG_MAX + 1];
	va_list ap;

	msg[0] = '\0';
	va_start(ap, fmt);
	sentences_vadd(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < t->na; i++)
		if (strcmp(t->a[i].kind, kind) == 0)
			pa = &t->a[i];
	if (pa != NULL) {
		sentences_add(pa->msg, sizeof(pa->msg), "%s", msg);
		return;
	}
	pending_add(t->a, &t->na, kind, msg);
}

/* The cause of alert KIND is gone this tick (WHY says how it cleared), as
 * the part that looks for it has just seen: at watch_write_alerts, unless
 * this tick raises KIND again, no alert of KIND has its cause present any
 * more, and its open alert closes with the reason in the history when the
 * kind's row (alert_kinds.def) says the engine closes it, else records
 * that its cause is gone and stays for a person. Only
 * from a look that saw the cause gone, never from one that could not look. */
void
watch_alert_over(struct tick *t, const char *kind, const char *why)
{
	pending_add(t->over, &t->nover, kind, why);
}

/* A broker or management call failed: alert, and the watch cannot end
 * this tick. */
void
watch_unreachable(struct tick *t, const char *what, const char *why)
{
	t->failed = true;
	watch_alert(t, "broker_unreachable", "%s: %s", what, why);
}

/* Adds one sample (METRIC, LABEL, V at TS) to the tick's row, written by
 * watch_write_samples. Returns 0, or -1 when out of memory. */
int
watch_sample(struct tick *t, int64_t ts, const char *metric, const char *label,
    double v)
{
	struct sample *ns;

	if (t->ns == t->scap) {
		size_t cap = t->scap ? 2 * t->scap : 64;

		if ((ns = realloc(t->s, cap * sizeof(*ns))) == NULL)
			return -1;
		t->s = ns;
		t->scap = cap;
	}
	t->s[t->ns].ts = ts;
	t->s[t->ns].metric = metric;
	snprintf(t->s[t->ns].label, sizeof(t->s[t->ns].label), "%s", label);
	t->s[t->ns++].v = v;
	return 0;
}


/* ---- recording ---- */

int64_t
step_watch_downsample(struct store *s, int64_t plan_id, int64_t now_ms,
    int64_t *last_ms, char *err, size_t errlen)
{
	int64_t n;

	if (*last_ms != 0 && now_ms - *last_ms < DS_EVERY_MS)
		return 0;
	if ((n = store_samples_downsample(s, plan_id, now_ms - DS_AFTER_MS,
	    DS_BUCKET_MS, err, errlen)) < 0)
		return -1;
	*last_ms = now_ms;
	return n;
}

/* Writes the tick's samples, those each part added (watch_sample), and
 * downsamples, in one transaction. Returns 0 or -1 with ERR. */
int
watch_write_samples(struct tick *t, char *err, size_t errlen)
{
	struct step_ctx *c = t->c;

	if (store_begin(c->store, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < t->ns; i++)
		if (store_sample_insert(c->store, c->plan_id, t->s[i].ts, t->s[i].metric,
		    t->s[i].label, t->s[i].v, err, errlen) != 0)
			goto fail;
	if (step_watch_downsample(c->store, c->plan_id, t->now, &t->w->ds_last_ms, err,
	    errlen) < 0)
		goto fail;
	return store_commit(c->store, err, errlen);
fail:
	store_rollback(c->store);
	return -1;
}

/* Appends event KIND with DETAILS (stolen). Inside a transaction. */
static int
event(struct tick *t, const char *kind, json_t *details, char *err, size_t errlen)
{
	char *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	json_decref(details);
	if (text == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = store_append_event(t->c->store, t->c->plan_id, t->now, ACTOR, kind, text,
	    NULL, err, errlen);
	free(text);
	return rc;
}

/* The alerts of one kind, as find_open reads them. */
struct open_alert {
	const char *kind;
	int64_t id;			/* the open one; 0: none open */
	bool cause;			/* its cause was present */
	int64_t returns_after;		/* it returns after an acknowledgement */
	bool any_cause;			/* one of the kind, open or not, has
					 * its cause present */
};

/* store_each_alert's callback: notes the open alert of ARG's kind and
 * whether one of that kind has its cause present. */
static int
find_open(const struct store_alert *a, void *arg)
{
	struct open_alert *o = arg;

	if (strcmp(a->kind, o->kind) != 0)
		return 0;
	o->any_cause |= a->cause_present;
	if (a->acked_ms == 0) {
		o->id = a->id;
		o->cause = a->cause_present;
		o->returns_after = a->returns_after;
	}
	return 0;
}

/* Does the open alert O close now that its cause is gone? When its
 * kind's row says the engine closes it; a kind the table lacks closes, as
 * before the table. Any other waits for a person, who may want to know why
 * the cause went (messages dropped rather than moved, say). */
static bool
closes_now(const struct open_alert *o)
{
	const struct alert_kind *k = alert_kind_find(o->kind);

	return k == NULL || k->closes == ALERT_CLOSES_SELF;
}

/* What the cause of T->over[I] being gone does, in one transaction: no
 * alert of its kind has its cause present any more; its open alert, if
 * any, closes (acknowledged by the engine with the reason, recorded as
 * alert.acked) when closes_now says so, else stays for a person, its
 * cause recorded gone (alert.cause_gone, once). Returns 0 or -1 with ERR. */
static int
cause_gone(struct tick *t, size_t i, char *err, size_t errlen)
{
	struct store *s = t->c->store;
	struct open_alert open = { .kind = t->over[i].kind };
	const char *why = t->over[i].msg;
	bool close;

	if (store_each_alert(s, t->c->plan_id, 0, find_open, &open, err, errlen) < 0)
		return -1;
	close = open.id != 0 && closes_now(&open);
	if (!close && !open.any_cause)
		return 0;		/* said already: nothing to write */
	if (store_begin(s, err, errlen) != 0)
		return -1;
	if (store_alert_cause_gone(s, t->c->plan_id, open.kind, err, errlen) != 0)
		goto fail;
	if (close && (store_alert_ack(s, t->c->plan_id, open.id, ACTOR, why, t->now, err,
	    errlen) != 0 || event(t, "alert.acked", json_pack("{s:I,s:s,s:s}", "alert",
	    (json_int_t)open.id, "kind", open.kind, "comment", why), err, errlen) != 0))
		goto fail;
	if (!close && open.id != 0 && open.cause && event(t, "alert.cause_gone",
	    json_pack("{s:I,s:s,s:s,s:s}", "alert", (json_int_t)open.id, "kind", open.kind,
	    "why", why, "what", "the alert stays open until a person acknowledges it"),
	    err, errlen) != 0)
		goto fail;
	if (store_commit(s, err, errlen) != 0)
		return -1;
	if (close)
		log_event("info", t->p->name, "watch", "alert %s (id %lld) closed: %s",
		    open.kind, (long long)open.id, why);
	else if (open.id != 0 && open.cause)
		log_event("info", t->p->name, "watch", "alert %s (id %lld): its cause is "
		    "gone (%s); it stays open until acknowledged", open.kind,
		    (long long)open.id, why);
	return 0;
fail:
	store_rollback(s);
	return -1;
}

/* The kinds T->over names and this tick did not raise: their causes are
 * gone (cause_gone). Returns 0 or -1 with ERR. */
static int
close_over(struct tick *t, char *err, size_t errlen)
{
	size_t i, j;

	for (i = 0; i < t->nover; i++) {
		for (j = 0; j < t->na && strcmp(t->a[j].kind, t->over[i].kind) != 0; j++)
			;
		if (j < t->na)
			continue;
		if (cause_gone(t, i, err, errlen) != 0)
			return -1;
	}
	t->nover = 0;
	return 0;
}

/* Raises the tick's pending alerts, each with its "alert.raised" event
 * when it is new, and records a moved deadline; then forgets them (a later
 * call writes only what was added since). Returns 0 or -1 with ERR. */
int
watch_write_alerts(struct tick *t, char *err, size_t errlen)
{
	struct store *s = t->c->store;
	char tb[40];
	int64_t id;
	bool raised;
	int r;

	for (size_t i = 0; i < t->na; i++) {
		const struct alert_kind *k = alert_kind_find(t->a[i].kind);
		struct store_alert a = { 0 };

		if (store_begin(s, err, errlen) != 0)
			return -1;
		r = store_alert_raise(s, t->c->plan_id, t->a[i].kind, t->a[i].msg, t->now,
		    &id, &raised, err, errlen);
		if (r == 0 && raised)
			r = store_alert_get(s, t->c->plan_id, id, &a, err, errlen);
		/* One that returns after an acknowledgement says so: its cause
		 * was never gone. */
		if (r != 0 || (raised && event(t, "alert.raised", json_pack("{s:s,s:s,s:I,s:o}",
		    "alert", t->a[i].kind, "message", t->a[i].msg, "alert_id",
		    (json_int_t)id, "returns_after", a.returns_after != 0 ?
		    json_integer((json_int_t)a.returns_after) : json_null()), err,
		    errlen) != 0)) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
		/* Said where `cutover run` is watched too, not only on the page:
		 * an open alert holds the watch until someone acknowledges it. */
		if (raised && a.returns_after != 0)
			log_event("warn", t->p->name, "watch", "alert %s raised again (id %lld): "
			    "%s. Its cause is still there after alert %lld was acknowledged: "
			    "the watch cannot end until it is cleared (%s)", t->a[i].kind, (long long)id, t->a[i].msg,
			    (long long)a.returns_after, k != NULL ? k->clear : "see docs/alerts.md");
		else if (raised && k != NULL && k->closes == ALERT_CLOSES_SELF)
			log_event("warn", t->p->name, "watch", "alert %s raised (id %lld): "
			    "%s. The watch cannot end while it is open; it closes by itself "
			    "once its cause is gone", t->a[i].kind, (long long)id, t->a[i].msg);
		else if (raised)
			log_event("warn", t->p->name, "watch", "alert %s raised (id %lld): "
			    "%s. The watch cannot end while it is open; once understood: "
			    "cutover ack %s %lld", t->a[i].kind, (long long)id,
			    t->a[i].msg, t->p->name, (long long)id);
	}
	if (close_over(t, err, errlen) != 0)
		return -1;
	t->na = 0;
	if (t->deadline_moved) {
		if (store_begin(s, err, errlen) != 0)
			return -1;
		if (event(t, "watch.deadline_moved", json_pack("{s:I,s:s,s:I,s:I,s:s}",
		    "deadline_ms", (json_int_t)t->w->deadline_ms, "deadline",
		    old_time_format(t->w->deadline_ms, tb, sizeof(tb)),
		    "last_old_entry_ms", (json_int_t)t->w->last_old_entry_ms,
		    "max_ttl_ms", (json_int_t)t->w->max_ttl_ms, "why", t->moved_why),
		    err, errlen) != 0) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
		t->deadline_moved = false;
	}
	if (t->agent_back[0] != '\0') {
		if (store_begin(s, err, errlen) != 0)
			return -1;
		if (event(t, "watch.statistics_restarted", json_pack("{s:s,s:s}",
		    "nodes", t->agent_back, "what", "the management agent restarted, "
		    "not the node (its uptime went on and its process is the same): no "
		    "broker restart; the old queues' publish counters start again from "
		    "a new baseline, not counted as publishes"), err, errlen) != 0) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
		t->agent_back[0] = '\0';
	}
	if (t->park_taken != NULL) {
		json_t *taken = t->park_taken;

		t->park_taken = NULL;
		if (store_begin(s, err, errlen) != 0) {
			json_decref(taken);
			return -1;
		}
		if (event(t, "watch.parking_taken", json_pack("{s:o,s:{s:I,s:I},s:I}",
		    "taken", taken, "own_taken", "canary", (json_int_t)t->w->park.canary,
		    "probe", (json_int_t)t->w->park.probe, "foreign",
		    (json_int_t)t->w->park.foreign), err, errlen) != 0) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
	}
	return 0;
}

/* How many of the plan's alerts are open, or -1 with ERR. */
int
watch_count_open(struct tick *t, char *err, size_t errlen)
{
	return store_each_alert(t->c->store, t->c->plan_id, 1, NULL, NULL, err, errlen);
}
