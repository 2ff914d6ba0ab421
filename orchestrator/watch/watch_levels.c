/* watch_levels: the watch's proof that every level moves — one probe per
 * level that waits in that level only (a delay of exactly 2^k units: bit
 * k alone, entering at level k and bypassing every level below), sent
 * again as soon as the last one came out; each arrival gives that
 * level's lateness, and one not out by its not-before time plus
 * watch.allowance raises level_late naming the level. A level whose TTL
 * is longer than the probe budget (the largest old TTL + the allowance:
 * the watch's own length) is reported as not probed, never as moving.
 * Also the level queues' and the parking queue's pending dead-letters
 * (quorum messages_dlx, from the tick's queue listing: held longer than
 * the allowance raises dead_letters_pending), the level exchanges'
 * client publishes (publish_in: messages entering at level k, the delay
 * band [2^k, 2^(k+1)) units), and each level's oldest age as far as it
 * is known. Level probes are probes (x-cutover-purpose "probe", plus
 * x-cutover-probe-level): the parking sweep takes them as cutover's own.
 * The levels' part of the state is struct wlevels, persisted as
 * "levels". Internal to the watch (watch_int.h). */
#include "watch_int.h"

#define LEVEL_HDR	"x-cutover-probe-level"

/* The longest level TTL the watch probes. */
int64_t
watch_levels_budget(const struct wstate *w)
{
	return w->max_ttl_ms + w->allowance_ms;
}

/* Is level K probed: is its TTL within the probe budget? */
static bool
probed(const struct tick *t, int k)
{
	return ladder_level_ttl_ms(&t->p->ladder, k) <= watch_levels_budget(t->w);
}

/* Where level K dead-letters to: the next level's exchange, or the
 * delivery exchange. */
static void
dl_target(const struct tick *t, int k, char *out, size_t outlen)
{
	if (k == 0)
		snprintf(out, outlen, "%s", t->delivery);
	else
		ladder_level_exchange(&t->p->ladder, k - 1, out, outlen);
}

/* Reads queue NAME's messages_dlx and head_message_timestamp into *DLX
 * and *HEAD by one GET of that queue (-1 when absent, or when the queue
 * does not exist: watch_ladder_read says so). Returns 0, or -1 when the broker
 * did not answer. */
static int
queue_dlx(struct tick *t, const char *name, int64_t *dlx, int64_t *head)
{
	char q[3 * LADDER_NAME_MAX + 1], path[sizeof(q) + sizeof(t->vhost) + 80];
	char why[512];
	json_t *j = NULL;
	int r;

	*dlx = *head = -1;
	if (mgmt_escape(name, q, sizeof(q)) < 0)
		return -1;
	snprintf(path, sizeof(path), "/api/queues/%s/%s?columns=name,messages_dlx,"
	    "head_message_timestamp", t->vhost, q);
	r = mgmt_request(t->c->mgmt, "GET", path, NULL, &j, NULL, why, sizeof(why));
	if (r == 0) {
		*dlx = jint(j, "messages_dlx", -1);
		*head = jint(j, "head_message_timestamp", -1);
	}
	json_decref(j);
	return r < 0 ? -1 : 0;
}

/* Without the tick's listing (a light pass of the old path): each level
 * queue and the parking queue by its own GET, at 10,000 old queues a
 * small part of one listing's cost. */
static void
levels_one_by_one(struct tick *t, char names[][LADDER_NAME_MAX])
{
	int64_t head;
	bool any = false;

	/* Each queue on its own: one missing or unanswered (the parking
	 * queue deleted) leaves the others' counts known. */
	for (int k = 0; k < t->p->ladder.levels; k++)
		if (queue_dlx(t, names[k], &t->lvl.dlx[k], &t->lvl.head_ts[k]) == 0)
			any = true;
	if (queue_dlx(t, t->parking, &t->lvl.parking_dlx, &head) == 0)
		any = true;
	t->lvl.dlx_seen = any;
}

/* Reads each level queue's and the parking queue's messages_dlx and
 * head_message_timestamp from the tick's listing (the old path's; every
 * queue of the vhost), or on a light pass (or with the ladder on a target
 * broker) one queue at a time. Nothing
 * when the broker did not answer. */
void
watch_levels_read(struct tick *t)
{
	const struct ladder *l = &t->p->ladder;
	char names[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	const struct old_listed *e;

	for (int k = 0; k < LADDER_MAX_LEVELS; k++)
		t->lvl.dlx[k] = t->lvl.head_ts[k] = -1;
	t->lvl.parking_dlx = -1;
	for (int k = 0; k < l->levels; k++)
		ladder_level_queue(l, k, names[k], sizeof(names[k]));
	/* The old path's listing holds the levels only when they share its
	 * broker. */
	if ((!t->old.full && t->old.seen) || t->p->has_target) {
		levels_one_by_one(t, names);
		return;
	}
	if (!t->old.listed)
		return;
	if ((e = old_listing_find(&t->old.listing, t->parking)) != NULL)
		t->lvl.parking_dlx = e->dlx;
	for (int k = 0; k < l->levels; k++)
		if ((e = old_listing_find(&t->old.listing, names[k])) != NULL) {
			t->lvl.dlx[k] = e->dlx;
			t->lvl.head_ts[k] = e->head_ts;
		}
	t->lvl.dlx_seen = true;
}

/* Takes level probe PI read at OBS (monotonic). Returns false when PI is
 * no level probe in flight. */
bool
watch_levels_take(struct tick *t, const struct publish_info *pi, int64_t obs)
{
	struct wstate *w = t->w;
	char q[LADDER_NAME_MAX], label[8];
	int64_t lo, up;
	int k;

	for (k = 0; k < t->p->ladder.levels; k++)
		if (w->levels.lv[k].in_flight && w->levels.lv[k].p.seq == pi->seq &&
		    w->levels.lv[k].p.not_before_ms == pi->not_before_ms)
			break;
	if (k == t->p->ladder.levels)
		return false;
	struct wlevel *lv = &w->levels.lv[k];

	watch_clock_lateness(w->probes.checked_ms, &lv->p, obs, &lo, &up);
	lv->in_flight = false;
	lv->arrived++;
	lv->next_mono = obs;		/* continuous: the next one at once */
	snprintf(label, sizeof(label), "%d", k);
	(void)watch_sample(t, t->now, "level.lateness_ms", label, (double)(up > 0 ? up : 0));
	ladder_level_queue(&t->p->ladder, k, q, sizeof(q));
	if (up < 0) {
		lv->proven = false;
		watch_alert(t, "probe", "level %d ('%s') probe #%lld came out at least "
		    "%lld ms before its not-before time: the level's TTL is shorter "
		    "than the plan says (a policy? cutover ladder verify)", k, q,
		    (long long)pi->seq, (long long)-up);
	} else if (lo > w->allowance_ms) {
		lv->late++;
		lv->proven = false;
		watch_alert(t, "level_late", "level %d ('%s') probe #%lld came out %lld "
		    "to %lld ms after its not-before time, later than watch.allowance "
		    "%lld ms: the level forwards slowly", k, q, (long long)pi->seq,
		    (long long)lo, (long long)up, (long long)w->allowance_ms);
	} else {
		lv->proven = true;
		lv->ontime++;
		lv->proven_sent_ms = lv->p.sent_ms;
		lv->last_late = up;
		lv->last_late_lo = lo > 0 ? lo : 0;
	}
	return true;
}

/* A level probe PI found in parking is no longer awaited. Returns true
 * when it was one. */
bool
watch_levels_parked(struct wlevels *ls, const struct publish_info *pi)
{
	for (int k = 0; k < LADDER_MAX_LEVELS; k++)
		if (ls->lv[k].in_flight && ls->lv[k].p.seq == pi->seq &&
		    ls->lv[k].p.not_before_ms == pi->not_before_ms) {
			ls->lv[k].in_flight = false;
			ls->lv[k].proven = false;
			return true;
		}
	return false;
}

/* Level K holds DLX pending dead-letters (-1: not reported) at MONO: keeps
 * when it started, and says for how long they have been held beyond the
 * allowance (-1: not). */
static int64_t
pending_for(int64_t *since, int64_t dlx, int64_t mono, int64_t allowance)
{
	if (dlx <= 0) {
		*since = 0;
		return -1;
	}
	if (*since == 0)
		*since = mono;
	return mono - *since > allowance ? mono - *since : -1;
}

/* The overdue level probes (the probe queue seen empty past not-before +
 * allowance: level_late, the probe given up so that the next one goes)
 * and the pending dead-letters held longer than the allowance
 * (dead_letters_pending). */
void
watch_levels_check(struct tick *t)
{
	struct wstate *w = t->w;
	const struct ladder *l = &t->p->ladder;
	char q[LADDER_NAME_MAX], to[LADDER_NAME_MAX], tb[40], pend[64];
	int64_t held;
	bool route_gap = t->lad.parking_missing || w->verify.ok == 0;
	bool pending = false, late = false;

	for (int k = 0; k < l->levels; k++) {
		struct wlevel *lv = &w->levels.lv[k];

		ladder_level_queue(l, k, q, sizeof(q));
		dl_target(t, k, to, sizeof(to));
		if (t->probe_ready && lv->in_flight &&
		    w->probes.checked_ms > lv->p.not_before_mono + w->allowance_ms) {
			lv->in_flight = false;
			lv->proven = false;
			lv->stuck++;
			lv->next_mono = t->mono;
			pend[0] = '\0';
			if (t->lvl.dlx_seen && t->lvl.dlx[k] >= 0)
				snprintf(pend, sizeof(pend), " (pending dead-letters: %lld)",
				    (long long)t->lvl.dlx[k]);
			watch_alert(t, "level_late", "level %d ('%s') is not moving: its "
			    "probe #%lld (not before %s) has not come out within "
			    "watch.allowance %lld ms of its TTL %lld ms; what expires there "
			    "does not reach '%s'%s, and every message behind it in the "
			    "level waits", k, q, (long long)lv->p.seq,
			    old_time_format(lv->p.not_before_ms, tb, sizeof(tb)),
			    (long long)w->allowance_ms, (long long)ladder_level_ttl_ms(l, k),
			    to, pend);
		}
		if (!t->lvl.dlx_seen)
			continue;
		held = pending_for(&lv->dlx_since_mono, t->lvl.dlx[k], t->mono, w->allowance_ms);
		/* Under traffic a quorum level always has a few dead-letters in
		 * flight (expired, the target's confirm not back yet: other
		 * messages at each tick), so a count that never reaches 0 is no
		 * proof of a stuck level. A probed level whose last probe came
		 * out on time is moving: its pending dead-letters are reported
		 * as stuck only once a probe is late (level_late). Unless the
		 * ladder is known not to route everything (the parking queue
		 * gone, a binding missing): then a dead-letter for a destination
		 * with no route is held in the level however well the probes
		 * (whose route stands) come out. */
		if (held >= 0 && probed(t, k) && lv->proven && !route_gap)
			held = -1;
		pending |= held >= 0;
		if (held >= 0)
			watch_alert(t, "dead_letters_pending", "level %d ('%s') has held %lld "
			    "pending dead-letter%s for %lld ms, longer than watch.allowance "
			    "%lld ms: '%s' does not take them (a binding or queue missing? "
			    "cutover ladder verify), and the level behind them waits", k, q,
			    (long long)t->lvl.dlx[k], t->lvl.dlx[k] == 1 ? "" : "s", (long long)held,
			    (long long)w->allowance_ms, to);
	}
	if (t->lvl.dlx_seen && (held = pending_for(&w->levels.park_dlx_since_mono,
	    t->lvl.parking_dlx, t->mono, w->allowance_ms)) >= 0) {
		pending = true;
		watch_alert(t, "dead_letters_pending", "the parking queue '%s' has held "
		    "%lld pending dead-letters for %lld ms", t->parking,
		    (long long)t->lvl.parking_dlx, (long long)held);
	}
	/* Dead-letters that went on (a broker too busy to move them for a
	 * while, a binding put back) leave nothing for a person to do: what
	 * they cost in lateness the probes measure. One still held keeps
	 * the alert open. */
	/* A level late or stuck once whose probe has come out on time
	 * since forwards in time again: what it cost the probes' lateness
	 * samples and the alert's record keep. */
	for (int k = 0; k < l->levels; k++) {
		struct wlevel *lv = &w->levels.lv[k];

		late |= (lv->late > 0 || lv->stuck > 0) && !lv->proven;
	}
	if (!late)
		watch_alert_over(t, "level_late", "every level that was late has had "
		    "a probe come out on time since: it forwards in time again");
	if (t->lvl.dlx_seen && !pending)
		watch_alert_over(t, "dead_letters_pending", "no pending dead-letter is "
		    "held longer than watch.allowance now in a level that is not moving: "
		    "they went on, or their route is back and the level's probes come "
		    "out on time (the broker retries what it still holds)");
}

/* Sends each probed level's next probe when it is due and none is in
 * flight, if it can come out before the watch's deadline or its TTL is
 * within the allowance: a watch held past its deadline (an old path still
 * draining, an open alert) goes on proving its short levels, and a level
 * probe holds a watch that could end by at most the allowance. Each
 * probe's number is drawn from *SEQ, the probes' sequence (watch_probe.c
 * keeps it), so that no two probes of the watch share one. */
void
watch_levels_send(struct tick *t, int64_t *seq)
{
	struct wstate *w = t->w;
	const struct ladder *l = &t->p->ladder;
	struct publish_request r;
	struct publish_receipt rc;
	struct broker_field hdr;
	int64_t now = clock_mono_ms(), left = watch_deadline_mono(w) - w->clock.elapsed_ms;
	char body[96], why[1024];
	int st;

	if (w->deadline_ms - t->now < left)
		left = w->deadline_ms - t->now;
	if (left < w->allowance_ms)
		left = w->allowance_ms;
	for (int k = 0; k < l->levels; k++) {
		struct wlevel *lv = &w->levels.lv[k];
		int64_t ttl = ladder_level_ttl_ms(l, k);

		/* A level late or stuck since its last on-time probe is
		 * probed whatever its TTL: only a probe on time closes its
		 * alert, which holds the watch meanwhile anyway. */
		bool owed = (lv->late > 0 || lv->stuck > 0) && !lv->proven;

		if (!probed(t, k) || lv->in_flight || now < lv->next_mono ||
		    (ttl > left && !owed))
			continue;
		snprintf(body, sizeof(body), "{\"probe\":%lld,\"level\":%d}",
		    (long long)*seq, k);
		memset(&r, 0, sizeof(r));
		memset(&hdr, 0, sizeof(hdr));
		hdr.key = LEVEL_HDR;
		hdr.is_int = true;
		hdr.num = k;
		r.plan = t->p->name;
		r.purpose = PUBLISH_PROBE;
		r.seq = (*seq)++;
		r.delay_ms = ttl;	/* 2^k units: bit k alone */
		r.destination = t->probe_queue;
		r.body = body;
		r.len = strlen(body);
		r.content_type = "application/json";
		r.headers = &hdr;
		r.nheaders = 1;
		r.timeout_ms = PROBE_PUBLISH_TIMEOUT_MS;
		st = publish_delayed(t->c->amqp, l, &r, &rc, why, sizeof(why));
		if (st != PUBLISH_OK) {
			lv->next_mono = now + t->p->watch.probe_every_ms;
			if (st == PUBLISH_ECONNECT || st == PUBLISH_ELOST ||
			    st == PUBLISH_ETIMEOUT)
				watch_unreachable(t, "publishing a level probe", why);
			else
				watch_alert(t, "probe", "level %d's probe #%lld could not enter "
				    "the ladder: %s", k, (long long)r.seq, why);
			continue;
		}
		lv->sent++;
		lv->in_flight = true;
		lv->p.seq = r.seq;
		lv->p.sent_ms = rc.sent_ms;
		lv->p.not_before_ms = rc.not_before_ms;
		lv->p.sent_mono = rc.sent_mono_ms;
		lv->p.not_before_mono = rc.not_before_mono_ms;
	}
}

/* How many level probes are in flight (the watch does not end while
 * any is). */
size_t
watch_levels_in_flight(const struct wlevels *ls)
{
	size_t n = 0;

	for (int k = 0; k < LADDER_MAX_LEVELS; k++)
		n += ls->lv[k].in_flight;
	return n;
}

/* Moves the level probes' monotonic stamps to this boot (see
 * watch_clock_tick): from their wall-clock stamps, WALL and MONO now. */
void
watch_levels_rebase(struct wlevels *ls, int64_t wall, int64_t mono)
{
	for (int k = 0; k < LADDER_MAX_LEVELS; k++) {
		watch_clock_stamp_rebase(&ls->lv[k].p, wall, mono);
		ls->lv[k].next_mono = 0;
		ls->lv[k].dlx_since_mono = 0;
	}
	ls->park_dlx_since_mono = 0;
}

/* Forgets the level probes in flight, as watch_probe_forget does; each
 * level sends its next one at once. Returns how many. */
size_t
watch_levels_forget(struct wlevels *ls)
{
	size_t n = 0;

	for (int k = 0; k < LADDER_MAX_LEVELS; k++) {
		n += ls->lv[k].in_flight;
		ls->lv[k].in_flight = false;
		ls->lv[k].next_mono = 0;
	}
	return n;
}

/* The tick's per-level samples: pending dead-letters (ladder.dlx,
 * parking.dlx) and publishes entering each level (ladder.band). Returns
 * 0, or -1 when out of memory. */
int
watch_levels_samples(struct tick *t)
{
	char label[8];

	for (int k = 0; k < t->p->ladder.levels; k++) {
		snprintf(label, sizeof(label), "%d", k);
		if (t->lvl.dlx_seen && t->lvl.dlx[k] >= 0 &&
		    watch_sample(t, t->now, "ladder.dlx", label, (double)t->lvl.dlx[k]) != 0)
			return -1;
		if (t->lad.band_seen && t->lad.band[k] >= 0 &&
		    watch_sample(t, t->now, "ladder.band", label, (double)t->lad.band[k]) != 0)
			return -1;
	}
	if (t->lvl.dlx_seen && t->lvl.parking_dlx >= 0 &&
	    watch_sample(t, t->now, "parking.dlx", "", (double)t->lvl.parking_dlx) != 0)
		return -1;
	return 0;
}

/* A persisted level's integer members. */
static const struct jfield level_fields[] = {
	JFIELD(struct wlevel, sent, "sent", 0),
	JFIELD(struct wlevel, arrived, "arrived", 0),
	JFIELD(struct wlevel, ontime, "on_time", 0),
	JFIELD(struct wlevel, late, "late", 0),
	JFIELD(struct wlevel, stuck, "stuck", 0),
	JFIELD(struct wlevel, last_late, "last_lateness_ms", 0),
	JFIELD(struct wlevel, last_late_lo, "last_lateness_min_ms", 0),
	JFIELD(struct wlevel, proven_sent_ms, "proven_sent_ms", 0),
	JFIELD(struct wlevel, next_mono, "next_mono_ms", 0),
	JFIELD(struct wlevel, dlx_since_mono, "dlx_since_mono_ms", 0),
};

/* Reads the persisted "levels" member J into LS. */
void
watch_levels_load(struct wlevels *ls, const json_t *j)
{
	size_t i;
	json_t *o;

	ls->park_dlx_since_mono = jint(j, "parking_dlx_since_mono_ms", 0);
	json_array_foreach(json_object_get(j, "list"), i, o) {
		if (i >= LADDER_MAX_LEVELS)
			break;
		struct wlevel *lv = &ls->lv[i];

		lv->in_flight = json_is_true(json_object_get(o, "in_flight"));
		watch_clock_stamp_load(&lv->p, json_object_get(o, "probe"));
		jint_fields(lv, o, level_fields, JFIELDS_N(level_fields));
		lv->proven = json_is_true(json_object_get(o, "proven"));
	}
}

/* The "levels" member of the persisted state, a new reference. */
json_t *
watch_levels_json(const struct wlevels *ls)
{
	json_t *list = json_array();
	int last = LADDER_MAX_LEVELS - 1;

	while (last >= 0 && ls->lv[last].sent == 0 && !ls->lv[last].in_flight &&
	    ls->lv[last].dlx_since_mono == 0)
		last--;
	for (int k = 0; k <= last; k++) {
		const struct wlevel *lv = &ls->lv[k];

		json_array_append_new(list, json_pack("{s:b,s:o,s:I,s:I,"
		    "s:I,s:I,s:I,s:I,s:I,s:b,s:I,s:I,s:I}",
		    "in_flight", lv->in_flight, "probe", watch_clock_stamp_json(&lv->p),
		    "sent", (json_int_t)lv->sent, "arrived", (json_int_t)lv->arrived,
		    "on_time", (json_int_t)lv->ontime,
		    "late", (json_int_t)lv->late, "stuck", (json_int_t)lv->stuck,
		    "last_lateness_ms", (json_int_t)lv->last_late,
		    "last_lateness_min_ms", (json_int_t)lv->last_late_lo,
		    "proven", lv->proven, "proven_sent_ms", (json_int_t)lv->proven_sent_ms,
		    "next_mono_ms", (json_int_t)lv->next_mono,
		    "dlx_since_mono_ms", (json_int_t)lv->dlx_since_mono));
	}
	return json_pack("{s:o,s:I}", "list", list, "parking_dlx_since_mono_ms",
	    (json_int_t)ls->park_dlx_since_mono);
}

/* Level K's status as the page and /metrics show it. */
static const char *
level_status(const struct tick *t, const struct wlevel *lv, int k)
{
	if (!probed(t, k))
		return "not_probed";	/* TTL beyond the probe budget */
	if (lv->proven)
		return "moving";	/* its last probe came out on time */
	if (lv->late > 0 || lv->stuck > 0)
		return "late";		/* its last probe did not */
	return lv->in_flight ? "probing" : "unproven";
}

/* Level K's oldest message: the head message's timestamp where the
 * broker gives one (classic queues, messages with a timestamp: the age
 * since the publisher stamped it), else at most the age of the last
 * probe that came out of the level on time (the level is FIFO with one
 * TTL: whatever entered before that probe left before it), else unknown.
 * Pending dead-letters are not in the depth: a level holding some is not
 * empty.
 * Sets *AGE (-1: unknown) and returns the source's name. */
static const char *
oldest(const struct tick *t, const struct wlevel *lv, int k, int64_t *age)
{
	*age = -1;
	if (t->lad.depth_seen && t->lad.depth[k] == 0 &&
	    (!t->lvl.dlx_seen || t->lvl.dlx[k] <= 0)) {
		*age = 0;
		return "empty";
	}
	if (t->lvl.dlx_seen && t->lvl.head_ts[k] >= 0) {
		*age = t->now - t->lvl.head_ts[k] * 1000;
		if (*age < 0)
			*age = 0;
		return "head_timestamp";
	}
	if (lv->proven && lv->proven_sent_ms > 0) {
		*age = t->now - lv->proven_sent_ms;
		return "probe_bound";
	}
	return "unknown";
}

/* The summary's "levels": one object per level (level, ttl_ms, status,
 * lateness_ms and lateness_min_ms (the last on-time probe's lateness is
 * between them: it came out after the probe queue was last seen empty and
 * before it was read), dead_letters, band_publishes, oldest_age_ms,
 * oldest_age_source), what the page and /metrics show. */
json_t *
watch_levels_summary(const struct tick *t, const struct wstate *w)
{
	json_t *a = json_array();
	int64_t age;
	const char *src;

	for (int k = 0; a != NULL && k < t->p->ladder.levels; k++) {
		const struct wlevel *lv = &w->levels.lv[k];

		src = oldest(t, lv, k, &age);
		json_array_append_new(a, json_pack("{s:i,s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:s,"
		    "s:I,s:I}",
		    "level", k, "ttl_ms", (json_int_t)ladder_level_ttl_ms(&t->p->ladder, k),
		    "status", level_status(t, lv, k),
		    "lateness_ms", int_or_null(lv->last_late, lv->proven),
		    "lateness_min_ms", int_or_null(lv->last_late_lo, lv->proven),
		    "dead_letters", int_or_null(t->lvl.dlx[k], t->lvl.dlx_seen && t->lvl.dlx[k] >= 0),
		    "band_publishes", int_or_null(t->lad.band[k], t->lad.band_seen &&
		    t->lad.band[k] >= 0),
		    "oldest_age_ms", int_or_null(age, age >= 0), "oldest_age_source", src,
		    "probes_sent", (json_int_t)lv->sent,
		    "probes_on_time", (json_int_t)lv->ontime));
	}
	return a;
}
