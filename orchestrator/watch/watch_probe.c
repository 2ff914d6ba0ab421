/* watch_probe: the watch's probes — the probe queue, sending probes
 * through the ladder, collecting them (a level probe is handed to
 * watch_levels.c), their lateness, the lost ones — and the probes' part
 * of the state (struct wprobes, persisted as "probe"). Internal to the
 * watch (watch_int.h). */
#include "watch_int.h"

static int probe_drain(struct tick *t);

/* ---- probes ---- */

/* The probe's delay: one watch.interval rounded up to whole units (at
 * least one unit, at most the ladder's largest delay). Sent at the end of
 * a tick, a probe is then due about when the next tick starts, which
 * reads it within the tick's own latency of its arrival (or waits a
 * moment for it): its lateness is measured, not blurred by a whole
 * interval between looks. One interval is short (few probes in flight,
 * a lost one known within an interval and the lateness bound) and still
 * crosses the levels of the bits of interval / unit (10 s on a 1 s
 * ladder: levels 3 and 1), through waiting and bypass bindings down to
 * the delivery exchange, as every delayed message ends; the canary
 * checked the other paths before the flip, and verify_ladder re-checks
 * every binding each probe_every. */
static int64_t
probe_delay(const struct plan *p)
{
	const struct ladder *l = &p->ladder;
	uint64_t units = (uint64_t)((p->watch.interval_ms + l->unit_ms - 1) / l->unit_ms);

	if (units < 1)
		units = 1;
	if (units > ladder_max_units(l))
		units = ladder_max_units(l);
	/* Never beyond the plan's max_delay, which publishing refuses. */
	if ((int64_t)units * l->unit_ms > ladder_limit_ms(l))
		return ladder_limit_ms(l);
	return (int64_t)units * l->unit_ms;
}

/* A new watch's probes: none sent yet, each one interval long. */
void
watch_probe_init(struct wprobes *pr, const struct plan *p)
{
	pr->delay_ms = probe_delay(p);
}

/* Declares the probe queue and binds it to the delivery exchange like a
 * destination. Durable, of the plan's queue type (like the destination
 * queues declare_ladder makes): a broker restart keeps it, its binding
 * and the probes in it, so a probe in flight across a restart arrives
 * instead of being parked, and on a quorum ladder the last hop from
 * level 0 is at-least-once and replicated, as the destinations' is. It
 * expires when unused (x-expires), so a watch that never ends leaves
 * nothing behind for long. A probe queue of another shape (a
 * non-durable one, from before) is read out, deleted if empty and
 * declared again. Idempotent; every tick. */
static void
probe_queue(struct tick *t)
{
	struct topology_arg qargs[2];
	int64_t expires = 10 * t->p->watch.interval_ms;
	char why[768], what[LADDER_NAME_MAX + 64];
	int r;

	if (expires < PROBE_QUEUE_EXPIRES_MIN_MS)
		expires = PROBE_QUEUE_EXPIRES_MIN_MS;
	memset(qargs, 0, sizeof(qargs));
	snprintf(qargs[0].key, sizeof(qargs[0].key), "x-expires");
	qargs[0].is_int = true;
	qargs[0].num = expires;
	snprintf(qargs[1].key, sizeof(qargs[1].key), "x-queue-type");
	snprintf(qargs[1].str, sizeof(qargs[1].str), "%s",
	    t->p->queue_type == PLAN_QUEUE_QUORUM ? "quorum" : "classic");
	r = broker_queue_declare(t->c->amqp, t->probe_queue, true, qargs, 2, why,
	    sizeof(why));
	if (r == BROKER_EPRECONDITION) {
		t->probe_ready = true;	/* to read it out */
		(void)probe_drain(t);
		t->probe_ready = false;
		/* On a fresh channel: the one that read the old queue would
		 * fail reading the new one (broker_channel_renew). */
		if (broker_queue_delete(t->c->amqp, t->probe_queue, BROKER_IF_EMPTY,
		    NULL, why, sizeof(why)) == 0 &&
		    broker_channel_renew(t->c->amqp, why, sizeof(why)) == 0)
			r = broker_queue_declare(t->c->amqp, t->probe_queue, true, qargs,
			    2, why, sizeof(why));
	}
	if (r != 0) {
		snprintf(what, sizeof(what), "declaring the probe queue '%s'",
		    t->probe_queue);
		watch_unreachable(t, what, why);
		return;
	}
	if (broker_queue_bind(t->c->amqp, t->probe_queue, t->delivery,
	    t->probe_pattern, why, sizeof(why)) != 0) {
		snprintf(what, sizeof(what), "binding the probe queue to '%s' (is the "
		    "ladder declared?)", t->delivery);
		watch_unreachable(t, what, why);
		return;
	}
	t->probe_ready = true;
}

/* Keeps LATE among the recent latenesses (the oldest dropped past
 * PROBE_RECENT_MAX), as the last and, when larger, the largest. */
static void
remember_lateness(struct wprobes *pr, int64_t late)
{
	if (pr->nrecent == PROBE_RECENT_MAX) {
		memmove(pr->recent, pr->recent + 1, (PROBE_RECENT_MAX - 1) *
		    sizeof(pr->recent[0]));
		pr->nrecent--;
	}
	pr->recent[pr->nrecent++] = late;
	pr->last_late = late;
	if (!pr->have_late || late > pr->max_late)
		pr->max_late = late;
	pr->have_late = true;
}

/* Takes one probe message D, read at OBS (monotonic), when the probe
 * queue was last seen empty at CHECKED: it arrived in (max(CHECKED,
 * sent), OBS], all on the monotonic clock. */
static void
probe_take(struct tick *t, const struct broker_delivery *d, int64_t obs)
{
	struct wprobes *pr = &t->w->probes;
	struct publish_info pi;
	int64_t ml = t->p->canary.max_lateness_ms, lo, up;
	int64_t wall = clock_now_ms();	/* samples are stamped on the wall clock,
					 * as every other sample; OBS is monotonic */
	char why[256];
	size_t i;

	if (publish_read(d, &pi, why, sizeof(why)) != 0 ||
	    strcmp(pi.plan, t->p->name) != 0 || strcmp(pi.purpose, PUBLISH_PROBE) != 0) {
		pr->foreign++;
		return;
	}
	for (i = 0; i < pr->nout; i++)
		if (pr->out[i].seq == pi.seq && pr->out[i].not_before_ms == pi.not_before_ms)
			break;
	if (i == pr->nout && watch_levels_take(t, &pi, obs))
		return;
	if (i == pr->nout) {
		/* A duplicate (at-least-once dead-lettering), one already called
		 * lost, or one sent by a tick whose state was never saved. */
		pr->stale++;
		return;
	}
	watch_clock_lateness(pr->checked_ms, &pr->out[i], obs, &lo, &up);
	pr->arrived++;
	if (up < 0) {
		pr->early++;
		remember_lateness(pr, up);
		(void)watch_sample(t, wall, "probe.lateness_ms", "", (double)up);
		watch_alert(t, "probe", "probe #%lld arrived at least %lld ms before its "
		    "not-before time: a level's TTL is shorter than the plan says (a "
		    "policy? cutover ladder verify)", (long long)pi.seq, (long long)-up);
	} else if (lo > ml) {
		pr->late++;
		remember_lateness(pr, up);
		(void)watch_sample(t, wall, "probe.lateness_ms", "", (double)up);
		watch_alert(t, "probe", "probe #%lld arrived %lld to %lld ms after its "
		    "not-before time, later than canary.max_lateness %lld ms: the "
		    "ladder is slow (broker load, a queue leader election?)",
		    (long long)pi.seq, (long long)lo, (long long)up, (long long)ml);
	} else if (up <= ml) {
		remember_lateness(pr, up);
		(void)watch_sample(t, wall, "probe.lateness_ms", "", (double)up);
	} else
		pr->unmeasured++;	/* looked at too seldom to tell */
	pr->out[i] = pr->out[--pr->nout];
}

/* Keeps D (only what acknowledging it needs) to be acknowledged at the
 * next tick. Returns 0, or -1 when out of memory (D is then acknowledged
 * now, as before). */
static int
probe_hold(struct tick *t, const struct broker_delivery *d)
{
	struct step_ctx *c = t->c;

	if (c->nheld == c->capheld) {
		size_t cap = c->capheld ? c->capheld * 2 : 16;
		struct broker_delivery *grown = realloc(c->held, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		c->held = grown;
		c->capheld = cap;
	}
	memset(&c->held[c->nheld], 0, sizeof(c->held[0]));
	c->held[c->nheld].tag = d->tag;
	c->held[c->nheld].epoch = d->epoch;
	c->held[c->nheld++].unacked = d->unacked;
	return 0;
}

/* Acknowledges the probes the last tick read: its state, which accounts
 * for them, is recorded by now. One whose channel closed since comes back
 * and is read again as a duplicate. */
static void
probe_settle(struct tick *t)
{
	struct step_ctx *c = t->c;
	char why[256];

	for (size_t i = 0; i < c->nheld; i++)
		(void)broker_ack(c->amqp, &c->held[i], why, sizeof(why));
	c->nheld = 0;
}

/* Reads every message waiting in the probe queue, acknowledging each only
 * at the next tick: a kill before the engine records this tick leaves
 * them in the queue for the restarted watch, which still waits for them,
 * instead of gone. Returns 0, or -1 when the broker failed (alerted). */
static int
probe_drain(struct tick *t)
{
	struct broker_delivery d;
	char why[768];
	int r;

	for (int n = 0; n < PROBE_DRAIN_MAX; n++) {
		memset(&d, 0, sizeof(d));
		r = broker_get(t->c->amqp, t->probe_queue, true, &d, why, sizeof(why));
		if (r == BROKER_EMPTY) {
			t->w->probes.checked_ms = clock_mono_ms();
			return 0;
		}
		if (r != 0) {
			watch_unreachable(t, "reading the probe queue", why);
			return -1;
		}
		probe_take(t, &d, clock_mono_ms());
		if (probe_hold(t, &d) != 0)
			(void)broker_ack(t->c->amqp, &d, why, sizeof(why));
		broker_delivery_free(&d);
		fault_point("watch.probe_taken");	/* read; the tick not recorded */
	}
	return 0;
}

/* This tick's first reading: the first probe due now when none is due
 * yet (a new watch, or after a reboot); acknowledges what the last tick read
 * (recorded by now), declares the probe queue (T->probe_ready) and reads
 * the probes that arrived since, first of all the looks, so that their
 * arrival is read closest to when it happened. */
void
watch_probe_read(struct tick *t)
{
	struct wprobes *pr = &t->w->probes;

	if (pr->next_ms == 0)
		pr->next_ms = t->mono;	/* the first probe at once */
	probe_settle(t);
	probe_queue(t);
	if (t->probe_ready)
		(void)probe_drain(t);
}

/* Waits for the probes due within the next moment (or overdue and not yet
 * past their bound; level probes too), reading the probe queue every
 * PROBE_POLL_MS, so that their lateness is measured to within that.
 * Bounded: at most the await window plus max_lateness and the grace, and
 * only while a probe is due. */
void
watch_probe_await(struct tick *t)
{
	struct wstate *w = t->w;
	struct wprobes *pr = &w->probes;
	int64_t ml = t->p->canary.max_lateness_ms, start = clock_mono_ms(), now = start;
	int64_t window = t->p->ladder.unit_ms > PROBE_AWAIT_MIN_MS ?
	    t->p->ladder.unit_ms : PROBE_AWAIT_MIN_MS, until;

	if (window > t->p->watch.interval_ms)
		window = t->p->watch.interval_ms;
	for (;;) {
		until = 0;
		for (size_t i = 0; i < pr->nout; i++) {
			int64_t bound = pr->out[i].not_before_mono + ml + PROBE_GRACE_MS;

			if (pr->out[i].not_before_mono <= start + window && bound > until)
				until = bound;
		}
		for (int k = 0; k < t->p->ladder.levels; k++) {
			/* The level probes due now too: their lateness read as
			 * closely. */
			const struct wlevel *lv = &w->levels.lv[k];
			int64_t bound = lv->p.not_before_mono + ml + PROBE_GRACE_MS;

			if (lv->in_flight && lv->p.not_before_mono <= start + window &&
			    bound > until)
				until = bound;
		}
		if (until > start + window + ml + PROBE_GRACE_MS)
			until = start + window + ml + PROBE_GRACE_MS;
		if (until == 0 || now >= until)
			return;
		clock_sleep_ms(PROBE_POLL_MS);
		if (probe_drain(t) != 0)
			return;
		now = clock_mono_ms();
	}
}

/* Calls lost every probe not read by its bound although the probe queue
 * was seen empty after it. */
void
watch_probe_lost(struct tick *t)
{
	struct wprobes *pr = &t->w->probes;
	int64_t ml = t->p->canary.max_lateness_ms;
	char levels[160], tb[40];

	for (size_t i = 0; i < pr->nout;) {
		struct probe *op = &pr->out[i];
		uint64_t units;

		if (op->not_before_mono + ml + PROBE_GRACE_MS >= pr->checked_ms) {
			i++;
			continue;
		}
		levels[0] = '\0';
		units = (uint64_t)((pr->delay_ms + t->p->ladder.unit_ms - 1) /
		    t->p->ladder.unit_ms);
		for (int k = t->p->ladder.levels - 1; k >= 0; k--)
			if (units >> k & 1)
				sentences_add(levels, sizeof(levels), "%d", k);
		pr->lost++;
		watch_alert(t, "probe", "probe #%lld (not before %s) did not arrive within "
		    "canary.max_lateness %lld ms + %d ms grace: lost or stuck on its "
		    "path (levels %s, then '%s' to '%s')", (long long)op->seq,
		    old_time_format(op->not_before_ms, tb, sizeof(tb)), (long long)ml,
		    PROBE_GRACE_MS, levels[0] ? levels : "none", t->delivery,
		    t->probe_queue);
		*op = pr->out[--pr->nout];
	}
}

/* Publishes the next probe when one is due. */
void
watch_probe_send(struct tick *t)
{
	struct wprobes *pr = &t->w->probes;
	struct publish_request r;
	struct publish_receipt rc;
	int64_t now = clock_mono_ms();
	char body[96], why[1024];
	int st;

	if (now < pr->next_ms || pr->nout == PROBE_OUTSTANDING_MAX)
		return;
	snprintf(body, sizeof(body), "{\"probe\":%lld}", (long long)pr->seq);
	memset(&r, 0, sizeof(r));
	r.plan = t->p->name;
	r.purpose = PUBLISH_PROBE;
	r.seq = pr->seq;
	r.delay_ms = pr->delay_ms;
	r.destination = t->probe_queue;
	r.body = body;
	r.len = strlen(body);
	r.content_type = "application/json";
	r.timeout_ms = PROBE_PUBLISH_TIMEOUT_MS;
	st = publish_delayed(t->c->amqp, &t->p->ladder, &r, &rc, why, sizeof(why));
	pr->seq++;
	pr->next_ms += t->p->watch.probe_every_ms;
	if (pr->next_ms <= now)
		pr->next_ms = now + t->p->watch.probe_every_ms;
	if (st == PUBLISH_OK) {
		pr->sent++;
		pr->out[pr->nout].seq = r.seq;
		pr->out[pr->nout].sent_ms = rc.sent_ms;
		pr->out[pr->nout].not_before_ms = rc.not_before_ms;
		pr->out[pr->nout].sent_mono = rc.sent_mono_ms;
		pr->out[pr->nout++].not_before_mono = rc.not_before_mono_ms;
		return;
	}
	if (st == PUBLISH_ECONNECT || st == PUBLISH_ELOST || st == PUBLISH_ETIMEOUT)
		watch_unreachable(t, "publishing a probe", why);
	else
		watch_alert(t, "probe", "probe #%lld could not enter the ladder: %s",
		    (long long)r.seq, why);
}

/* Unbinds and deletes the probe queue. Returns 0, or -1 (alerted). */
int
watch_probe_remove(struct tick *t)
{
	char why[768];

	if (broker_queue_unbind(t->c->amqp, t->probe_queue, t->delivery,
	    t->probe_pattern, why, sizeof(why)) != 0 ||
	    broker_queue_delete(t->c->amqp, t->probe_queue, 0, NULL, why,
	    sizeof(why)) != 0) {
		watch_unreachable(t, "removing the probe queue", why);
		return -1;
	}
	return 0;
}

/* A probe PI found in parking is no longer awaited: LEVEL, when
 * watch_levels_parked knew it as a level probe, or one in flight here.
 * Counts it as parked. */
void
watch_probe_parked(struct wprobes *pr, const struct publish_info *pi, bool level)
{
	if (level)
		pr->parked++;
	for (size_t i = 0; i < pr->nout; i++)
		if (pr->out[i].seq == pi->seq && pr->out[i].not_before_ms == pi->not_before_ms) {
			pr->out[i] = pr->out[--pr->nout];
			pr->parked++;
			break;
		}
}

/* Moves the probes' monotonic times to this boot (see watch_clock_tick):
 * those in flight from their wall-clock stamps (WALL and MONO now), the
 * probe queue's last look from the last tick's start (LAST_TICK_WALL,
 * watch_clock_checked_rebase); the next one is due at once. */
void
watch_probe_rebase(struct wprobes *pr, int64_t last_tick_wall, int64_t wall, int64_t mono)
{
	pr->next_ms = 0;
	pr->checked_ms = watch_clock_checked_rebase(pr->checked_ms, last_tick_wall, wall,
	    mono);
	for (size_t i = 0; i < pr->nout; i++)
		watch_clock_stamp_rebase(&pr->out[i], wall, mono);
}

/* Forgets the probes in flight (a state restored from a backup: the
 * process that went on after the backup read them, and would be taken
 * for lost). A straggler among them arrives as stale. Returns how many. */
size_t
watch_probe_forget(struct wprobes *pr)
{
	size_t n = pr->nout;

	pr->nout = 0;
	pr->next_ms = 0;
	pr->checked_ms = 0;
	return n;
}

/* The median of the recent latenesses (PR->nrecent > 0). */
int64_t
watch_probe_p50(const struct wprobes *pr)
{
	int64_t v[PROBE_RECENT_MAX];

	memcpy(v, pr->recent, pr->nrecent * sizeof(v[0]));
	qsort(v, pr->nrecent, sizeof(v[0]), cmp_i64);
	return v[(50 * pr->nrecent + 99) / 100 - 1];
}

/* The persisted "probe" member: the probe queue (T's), the next probe,
 * those in flight, the counts and the latenesses, a new reference. */
json_t *
watch_probe_json(const struct tick *t, const struct wprobes *pr)
{
	json_t *outs = json_array(), *recent = json_array(), *j;

	for (size_t i = 0; i < pr->nout; i++)
		json_array_append_new(outs, watch_clock_stamp_json(&pr->out[i]));
	for (size_t i = 0; i < pr->nrecent; i++)
		json_array_append_new(recent, json_integer(pr->recent[i]));
	j = json_pack("{s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
	    "s:o,s:o,s:o}",
	    "queue", t->probe_queue,
	    "delay_ms", (json_int_t)pr->delay_ms,
	    "next_seq", (json_int_t)pr->seq,
	    "next_mono_ms", (json_int_t)pr->next_ms,
	    "checked_mono_ms", (json_int_t)pr->checked_ms,
	    "outstanding", outs,
	    "sent", (json_int_t)pr->sent, "arrived", (json_int_t)pr->arrived,
	    "lost", (json_int_t)pr->lost, "late", (json_int_t)pr->late,
	    "early", (json_int_t)pr->early, "unmeasured", (json_int_t)pr->unmeasured,
	    "stale", (json_int_t)pr->stale, "foreign", (json_int_t)pr->foreign,
	    "recent_lateness_ms", recent,
	    "last_lateness_ms", int_or_null(pr->last_late, pr->have_late),
	    "max_lateness_ms", int_or_null(pr->max_late, pr->have_late));
	if (j != NULL)
		json_object_set_new(j, "parked", json_integer(pr->parked));
	return j;
}

/* The integer members of the persisted "probe". */
#define P(M, KEY)	JFIELD(struct wprobes, M, KEY, 0)
static const struct jfield probe_fields[] = {
	P(delay_ms, "delay_ms"), P(seq, "next_seq"), P(next_ms, "next_mono_ms"),
	P(checked_ms, "checked_mono_ms"),
	P(sent, "sent"), P(arrived, "arrived"), P(lost, "lost"),
	P(late, "late"), P(early, "early"),
	P(unmeasured, "unmeasured"), P(stale, "stale"),
	P(foreign, "foreign"), P(last_late, "last_lateness_ms"),
	P(max_late, "max_lateness_ms"), P(parked, "parked"),
};
#undef P

/* Reads the persisted "probe" member J into PR. */
void
watch_probe_load(struct wprobes *pr, const json_t *j)
{
	const json_t *o;
	size_t i;

	jint_fields(pr, j, probe_fields, JFIELDS_N(probe_fields));
	json_array_foreach(json_object_get(j, "outstanding"), i, o) {
		if (pr->nout == PROBE_OUTSTANDING_MAX)
			break;
		watch_clock_stamp_load(&pr->out[pr->nout++], o);
	}
	json_array_foreach(json_object_get(j, "recent_lateness_ms"), i, o)
		if (json_is_integer(o) && pr->nrecent < PROBE_RECENT_MAX)
			pr->recent[pr->nrecent++] = json_integer_value(o);
	pr->have_late = json_is_integer(json_object_get(j, "last_lateness_ms"));
}
