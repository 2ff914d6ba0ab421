/* test_watch_end (integration): when the watch ends: never before its
 * deadline, the deadline moved by a publish into the old path, a wall clock
 * that jumps, and the light and full passes over the old queues that let it
 * end. */
#include "itest_watch.h"

/* Samples, by series. */
struct series {
	int n;
	double first, last, max;
	int64_t first_ts, last_ts;
};

struct samples {
	struct series old_depth, old_nonempty, old_publishes, parking, ladder_pub,
	    lateness, level[LADDER_MAX_LEVELS], band[LADDER_MAX_LEVELS],
	    dlx[LADDER_MAX_LEVELS], level_late[LADDER_MAX_LEVELS], parking_dlx;
};

static void
add(struct series *s, int64_t ts, double v)
{
	if (s->n++ == 0) {
		s->first = s->max = v;
		s->first_ts = ts;
	}
	if (v > s->max)
		s->max = v;
	s->last = v;
	s->last_ts = ts;
}

/* Which series of struct samples each metric goes into; a per-level
 * metric's label is its level, the index into its array. */
static const struct {
	const char *metric;
	size_t at;
	bool per_level;
} sample_series[] = {
	{ "old.depth", offsetof(struct samples, old_depth), false },
	{ "old.nonempty", offsetof(struct samples, old_nonempty), false },
	{ "old.publishes", offsetof(struct samples, old_publishes), false },
	{ "parking.depth", offsetof(struct samples, parking), false },
	{ "ladder.publishes", offsetof(struct samples, ladder_pub), false },
	{ "probe.lateness_ms", offsetof(struct samples, lateness), false },
	{ "parking.dlx", offsetof(struct samples, parking_dlx), false },
	{ "ladder.depth", offsetof(struct samples, level), true },
	{ "ladder.band", offsetof(struct samples, band), true },
	{ "ladder.dlx", offsetof(struct samples, dlx), true },
	{ "level.lateness_ms", offsetof(struct samples, level_late), true },
};

static int
collect_sample(int64_t ts, const char *metric, const char *label, double v, void *arg)
{
	struct series *series;
	size_t i;
	int k = 0;

	for (i = 0; i < sizeof(sample_series) / sizeof(sample_series[0]); i++)
		if (strcmp(metric, sample_series[i].metric) == 0)
			break;
	if (i == sizeof(sample_series) / sizeof(sample_series[0]))
		fail_msg("unexpected metric '%s'", metric);
	if (sample_series[i].per_level) {
		k = atoi(label);
		if (k < 0 || k >= LADDER_MAX_LEVELS)
			fail_msg("%s: level '%s' out of range", metric, label);
	}
	series = (struct series *)((char *)arg + sample_series[i].at);
	add(&series[k], ts, v);
	return 0;
}

/* The whole watch: old queues holding messages drain, the ladder is
 * sampled level by level, probes arrive and are measured, the deadline is
 * flip + largest TTL + allowance (moved by publishes the statistics count
 * only after the flip), the watch does not end before it, the state
 * survives the store and a restart unchanged, and the probe queue is
 * removed at the end. */
static void
test_watch_runs_to_its_deadline(void **state)
{
	struct fixture *f = *state;
	struct samples sm;
	struct alerts al;
	const json_t *sum, *pr;
	json_t *before = NULL;
	char err[2048];
	int64_t started, deadline0, done_at, last_deadline = 0, t;
	int rc, ticks = 0, restart_at = 8, bounded = 0;

	iwatch_start(f, "run", 3, 3, NULL);
	f->flip_ms = now_ms();
	for (;;) {
		if (ticks == restart_at) {
			/* A restart: new connections, the state only from the store. */
			before = json_deep_copy(f->state);
			step_ctx_close(&f->c);
			if (step_ctx_open(&f->c, f->p, err, sizeof(err)) != 0)
				fail_msg("%s", err);
		}
		t = now_ms();
		rc = iwatch_tick(f, err, sizeof(err));
		ticks++;
		if (rc < 0)
			fail_msg("the watch failed: %s", err);
		if (ticks == 1) {
			started = ijson_int(f->state, "started_ms");
			deadline0 = ijson_int(f->state, "deadline_ms");
			assert_int_equal(started, f->flip_ms);
			assert_int_equal(ijson_int(f->state, "flip_ms"), f->flip_ms);
			assert_int_equal(ijson_int(f->state, "max_ttl_ms"), OLD_TTL_MS);
			assert_int_equal(ijson_int(f->state, "last_old_entry_ms"), f->flip_ms);
			assert_int_equal(deadline0, f->flip_ms + OLD_TTL_MS + ALLOWANCE_MS);
			sum = iwatch_obj(f->state, "summary");
			assert_int_equal(ijson_int(sum, "old_depth"), 9);
			assert_int_equal(ijson_int(sum, "old_nonempty"), 3);
			assert_int_equal(ijson_int(sum, "old_queues"), 3);
			assert_int_equal(json_array_size(json_object_get(sum, "ladder_depth")), 5);
			assert_int_equal(ijson_int(sum, "parking_depth"), 0);
			assert_int_equal(ijson_int(sum, "open_alerts"), 0);
			pr = iwatch_obj(f->state, "probe");
			assert_int_equal(ijson_int(pr, "delay_ms"), INTERVAL_MS);
			assert_int_equal(json_array_size(json_object_get(pr, "outstanding")), 1);
			assert_true(json_is_true(json_object_get(iwatch_obj(f->state, "verify"),
			    "ok")));
		}
		if (ticks == restart_at + 1) {
			/* Resumed where it was: same start, deadline not earlier. */
			assert_int_equal(ijson_int(f->state, "started_ms"),
			    ijson_int(before, "started_ms"));
			assert_true(ijson_int(f->state, "deadline_ms") >= ijson_int(before,
			    "deadline_ms"));
			assert_int_equal(ijson_int(f->state, "ticks"),
			    ijson_int(before, "ticks") + 1);
			json_decref(before);
			before = NULL;
		}
		/* The deadline never moves earlier; it moves only when the
		 * statistics count the publishes made before the flip, and never
		 * past that time + TTL + allowance. */
		assert_true(ijson_int(f->state, "deadline_ms") >= last_deadline);
		last_deadline = ijson_int(f->state, "deadline_ms");
		/* A level holding a probe in flight after an earlier one came
		 * out on time: its oldest age is the bound that probe gives. */
		for (size_t k = 0; k < json_array_size(json_object_get(iwatch_obj(f->state,
		    "summary"), "levels")); k++) {
			const json_t *lv = json_array_get(json_object_get(iwatch_obj(f->state,
			    "summary"), "levels"), k);
			const char *src = json_string_value(json_object_get(lv,
			    "oldest_age_source"));

			assert_non_null(src);
			if (strcmp(src, "probe_bound") == 0) {
				assert_true(ijson_int(lv, "oldest_age_ms") >= 0);
				bounded++;
			}
			assert_true(strcmp(src, "head_timestamp") != 0);	/* quorum */
		}
		assert_true(last_deadline <= ijson_int(f->state,
		    "last_old_entry_ms") + OLD_TTL_MS +
		    ALLOWANCE_MS);
		if (rc == 0) {
			/* Never before its deadline, nor within the lag. */
			assert_true(t >= last_deadline);
			assert_true(t >= f->flip_ms + STATS_LAG_MS);
			break;
		}
		if (now_ms() > f->flip_ms + 30000)
			fail_msg("the watch did not end within 30 s: %s",
			    json_string_value(json_object_get(iwatch_obj(f->state, "summary"),
			    "status")));
		iwatch_sleep_ms(INTERVAL_MS);
	}
	done_at = now_ms();
	assert_true(done_at >= last_deadline);
	assert_true(done_at >= f->flip_ms + STATS_LAG_MS);
	assert_true(json_is_true(json_object_get(f->state, "done")));
	assert_true(json_is_true(json_object_get(f->state, "ok")));
	assert_int_equal(ijson_int(f->state, "started_ms"), f->flip_ms);
	assert_true(ijson_int(f->state, "last_old_entry_ms") >= f->flip_ms);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "after_flip"), 0);
	sum = iwatch_obj(f->state, "summary");
	assert_string_equal(json_string_value(json_object_get(sum, "status")), "done");
	assert_int_equal(ijson_int(sum, "old_depth"), 0);
	assert_int_equal(ijson_int(sum, "time_left_ms"), 0);
	iwatch_open_alerts(f, &al);
	assert_int_equal(al.n, 0);

	/* Probes: sent about every second, every one arrived, none lost, and
	 * the lateness figures agree with the samples. */
	pr = iwatch_obj(f->state, "probe");
	assert_true(ijson_int(pr, "sent") >= 8);
	assert_int_equal(ijson_int(pr, "arrived"), ijson_int(pr, "sent"));
	assert_int_equal(ijson_int(pr, "lost"), 0);
	assert_int_equal(ijson_int(pr, "early"), 0);
	assert_int_equal(ijson_int(pr, "late"), 0);
	assert_int_equal(json_array_size(json_object_get(pr, "outstanding")), 0);

	memset(&sm, 0, sizeof(sm));
	if (store_each_sample(f->s, f->plan_id, 0, collect_sample, &sm, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(sm.old_depth.n, ticks);
	assert_true(sm.old_depth.first == 9);
	assert_true(sm.old_depth.last == 0);
	assert_true(sm.old_nonempty.first == 3 && sm.old_nonempty.last == 0);
	assert_int_equal(sm.old_publishes.n, ticks);
	assert_int_equal(sm.parking.n, ticks);
	assert_true(sm.parking.max == 0);
	assert_int_equal(sm.ladder_pub.n, ticks);
	assert_true(sm.ladder_pub.last >= sm.ladder_pub.first);
	for (int k = 0; k < 5; k++)
		assert_int_equal(sm.level[k].n, ticks);
	assert_int_equal(sm.level[5].n, 0);
	/* Every level within the probe budget (largest old TTL + allowance,
	 * 3 s: all five, up to 1.6 s) proven by a probe that waited in it
	 * alone, on time; pending dead-letters and band counters sampled per
	 * level at every tick. */
	assert_int_equal(ijson_int(sum, "probe_budget_ms"), OLD_TTL_MS + ALLOWANCE_MS);
	for (int k = 0; k < 5; k++) {
		const json_t *lv = json_array_get(json_object_get(sum, "levels"), (size_t)k);
		const json_t *st = json_array_get(json_object_get(iwatch_obj(f->state, "levels"),
		    "list"), (size_t)k);

		assert_non_null(lv);
		assert_string_equal(json_string_value(json_object_get(lv, "status")),
		    "moving");
		assert_true(ijson_int(st, "on_time") >= 1);
		assert_int_equal(ijson_int(st, "stuck"), 0);
		assert_int_equal(ijson_int(st, "late"), 0);
		assert_true(sm.level_late[k].n >= 1);
		assert_int_equal(sm.band[k].n, ticks);
		/* Once the statistics show the queue (seconds after its
		 * declaration): none held. A probe crossing a quorum level is
		 * pending between its expiry and the next queue's confirm, and a
		 * sample can catch it there (RabbitMQ 4.0's one-queue reads did,
		 * 4 runs in 20): at most the probes of one round, never stuck
		 * (above). */
		assert_true(sm.dlx[k].n >= 1);
		assert_true(sm.dlx[k].max <= 2);
		fprintf(stderr, "# level %d: %lld probes on time, last lateness <= %lld ms\n",
		    k, (long long)ijson_int(st, "on_time"),
		    (long long)ijson_int(lv, "lateness_ms"));
	}
	assert_int_equal(sm.lateness.n, ijson_int(pr, "arrived") - ijson_int(pr, "unmeasured"));
	assert_true(sm.lateness.n >= 5);
	/* The plan's own bound (canary.max_lateness), not a tighter one. */
	assert_true(sm.lateness.max <= (double)f->p->canary.max_lateness_ms);
	assert_true(sm.lateness.last == (double)ijson_int(pr, "last_lateness_ms"));
	assert_true(sm.lateness.max == (double)ijson_int(pr, "max_lateness_ms"));
	assert_true(ijson_int(iwatch_obj(sum, "probe_lateness_ms"), "p50") <= ijson_int(pr,
	    "max_lateness_ms"));
	fprintf(stderr, "# watch: %d ticks, ended %lld ms after the flip (deadline "
	    "+%lld ms); %lld probes, lateness p50 %lld ms, max %lld ms, %lld "
	    "unmeasured\n", ticks, (long long)(done_at - f->flip_ms),
	    (long long)(last_deadline - f->flip_ms), (long long)ijson_int(pr, "sent"),
	    (long long)ijson_int(iwatch_obj(sum, "probe_lateness_ms"), "p50"),
	    (long long)ijson_int(pr, "max_lateness_ms"), (long long)ijson_int(pr, "unmeasured"));
	assert_true(bounded >= 1);
	iwatch_assert_probe_queue_gone(f);
}

/* A publish into the old path after the flip raises old_publish and moves
 * the deadline to that moment + TTL + allowance; a queue matching the
 * selection that was not measured raises old_new_queue; the watch waits
 * past its deadline until both are acknowledged, then ends. */
static void
test_old_publish_moves_the_deadline(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, n;
	struct alerts al;
	char err[2048];
	int64_t d0, sent, entry;

	iwatch_start(f, "late", 2, 0, NULL);
	/* The flip was confirmed a while ago: the settle window is over. */
	iwatch_tick_after_the_flip(f);
	d0 = ijson_int(f->state, "deadline_ms");
	/* First look long after the flip: as if the last entry were now. */
	assert_true(ijson_int(f->state, "last_old_entry_ms") > f->flip_ms);
	assert_int_equal(d0, ijson_int(f->state, "last_old_entry_ms") + OLD_TTL_MS +
	    ALLOWANCE_MS);

	/* A producer that was not flipped, and one still creating queues,
	 * strictly after the entry the deadline was computed from. */
	while (now_ms() <= ijson_int(f->state, "last_old_entry_ms"))
		iwatch_sleep_ms(1);
	sent = now_ms();
	iwatch_publish_to(&f->c, "", f->old[1], 2);
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.new", iwatch_prefix);
	f->extra = true;
	iwatch_old_queue(&f->c, f->old[f->nold]);

	iwatch_tick_until_alert(f, "old_publish", ALERT_CEILING_MS, &a);
	entry = ijson_int(f->state, "last_old_entry_ms");
	assert_true(entry >= sent);
	assert_int_equal(ijson_int(f->state, "deadline_ms"), entry + OLD_TTL_MS + ALLOWANCE_MS);
	assert_true(ijson_int(f->state, "deadline_ms") > d0);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "after_flip"), 2);
	assert_non_null(strstr(a.message, "2 messages entered the old path after the flip"));
	assert_non_null(strstr(a.message, "the deadline moves to"));
	assert_true(iwatch_events(f, "alert.raised", "old_publish") == 1);
	assert_true(iwatch_events(f, "watch.deadline_moved", NULL) >= 1);
	iwatch_open_alerts(f, &al);
	if (iwatch_find_alert(&al, "old_new_queue") == NULL)
		iwatch_tick_until_alert(f, "old_new_queue", ALERT_CEILING_MS, &n);
	else
		n = *iwatch_find_alert(&al, "old_new_queue");
	assert_non_null(strstr(n.message, ".old.new'"));

	/* Past the new deadline, the old queue drained: it still waits, and
	 * once the statistics count up to the deadline (watch_stats.c), for
	 * the alert alone. */
	iwatch_tick_past_deadline(f, 1000);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	iwatch_tick_past_stats_lag(f);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(iwatch_obj(f->state, "summary"),
	    "status")), "alert is open"));

	/* Acknowledged: it ends, and the new queue is not alerted again. */
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 5000);
	assert_true(iwatch_events(f, "alert.raised", "old_new_queue") == 1);
	assert_true(json_is_true(json_object_get(f->state, "done")));
	assert_int_equal(ijson_int(f->state, "last_old_entry_ms"), entry);
	iwatch_assert_probe_queue_gone(f);
}

/* The wall clock jumps an hour forward two ticks into the watch (through
 * the step clock, as a test can): the watch still does not end before
 * its deadline has passed in monotonic time. */
static void
test_clock_jump_does_not_end_the_watch(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	int64_t done_at;

	iwatch_start(f, "jump", 1, 0, NULL);
	f->flip_ms = now_ms();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	f->jump_ms = 60 * 60 * 1000;
	done_at = iwatch_tick_until_done(f, 30000);
	fprintf(stderr, "# clock jump: ended %lld ms after the flip\n",
	    (long long)(done_at - f->flip_ms));
	assert_true(done_at >= f->flip_ms + STATS_LAG_MS);
	assert_true(done_at >= f->flip_ms + OLD_TTL_MS + ALLOWANCE_MS);
}

/* ---- the old path's light and full passes (watch_old_pass.c) ---- */

#define PASS_BOUND_MS	60000	/* a publish is counted within this */

static const char *
pass_why(struct fixture *f)
{
	const char *s = json_string_value(json_object_get(iwatch_pass_of(f), "why"));

	assert_non_null(s);
	return s;
}

/* Ticks until a tick makes a light pass (and returns), within the
 * ceiling. */
static void
tick_until_light(struct fixture *f)
{
	int64_t until = now_ms() + ALERT_CEILING_MS, light;
	char err[2048];

	for (;;) {
		light = f->state != NULL ? ijson_int(iwatch_pass_of(f), "light") : 0;
		switch (iwatch_tick(f, err, sizeof(err))) {
		case 1:
			break;
		case 0:
			fail_msg("the watch ended %lld ms after the flip, before any light "
			    "pass (last full pass: %s)", (long long)(now_ms() - f->flip_ms),
			    pass_why(f));
			break;
		default:
			fail_msg("the watch failed: %s", err);
		}
		if (ijson_int(iwatch_pass_of(f), "light") > light)
			return;
		if (now_ms() > until)
			fail_msg("no light pass within %d ms (last full pass: %s)",
			    ALERT_CEILING_MS, pass_why(f));
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

/* Ticks until no growth of the exchanges' publish counters is left to
 * count (the test's own publishes before the watch), then until a light
 * pass. */
static void
tick_until_settled(struct fixture *f)
{
	int64_t until = now_ms() + 2 * ALERT_CEILING_MS;
	char err[2048];

	do {
		if (now_ms() > until)
			fail_msg("the exchanges' publishes never counted by a full pass");
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	} while (ijson_int(iwatch_pass_of(f), "growth_last_ms") != 0);
	tick_until_light(f);
}

/* (a) A publish into an old queue that is empty and past its own deadline,
 * which light passes do not read: the exchanges' counters show it, a full
 * pass counts it against the last full pass's counters (kept as the
 * step's rows, untouched by the light ticks between), and old_publish is
 * raised within the bound, while another old queue's long TTL keeps the
 * watch's deadline far. */
static void
test_light_pass_counts_a_publish_into_an_empty_queue(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct alerts al;
	char err[2048], rows[1024], rows_after[1024];
	int64_t sent, until, light;
	bool growth = false;

	iwatch_old_ttl_ms = 600000;
	iwatch_start(f, "lightpub", 2, 0, NULL);
	/* old[1]: 2 s, so that its own deadline passes during the test. */
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[1], 0, NULL, err,
	    sizeof(err)), 0);
	iwatch_old_queue_ttl(&f->c, f->old[1], OLD_TTL_MS);
	iwatch_tick_after_the_flip(f);
	assert_int_equal(ijson_int(iwatch_pass_of(f), "full"), 1);
	assert_string_equal(pass_why(f), "the first look");
	assert_int_equal(ijson_int(iwatch_pass_of(f), "queues"), 2);
	tick_until_settled(f);
	while (now_ms() <= ijson_int(f->state, "last_old_entry_ms") + OLD_TTL_MS + ALLOWANCE_MS)
		tick_until_light(f);
	/* Light passes read no queue: every old queue is empty. */
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 0);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_queues"), 2);
	assert_int_equal(json_object_size(iwatch_obj(iwatch_obj(f->state, "old"), "held")), 0);
	light = ijson_int(iwatch_pass_of(f), "light");
	/* The last full pass's counters stay as rows of their own, one per
	 * old queue, through light ticks: not in the result a tick rewrites. */
	assert_true(light > 0);
	assert_int_equal(iwatch_rows(f, rows, sizeof(rows)), 2);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "seen_n"), 2);
	assert_null(json_object_get(iwatch_obj(f->state, "old"), "seen"));
	assert_non_null(strstr(f->state_text, "\"entries\":[]"));
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	if (ijson_int(iwatch_pass_of(f), "light") > light) {
		assert_int_equal(iwatch_rows(f, rows_after, sizeof(rows_after)), 2);
		assert_string_equal(rows_after, rows);
	}
	light = ijson_int(iwatch_pass_of(f), "light");

	sent = now_ms();
	iwatch_publish_to(&f->c, "", f->old[1], 1);
	until = sent + ALERT_CEILING_MS;
	for (;;) {
		const struct store_alert *x;

		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		growth |= ijson_int(iwatch_pass_of(f), "growth_last_ms") >= sent;
		iwatch_open_alerts(f, &al);
		if ((x = iwatch_find_alert(&al, "old_publish")) != NULL) {
			a = *x;
			break;
		}
		if (now_ms() > until)
			fail_msg("no old_publish within %d ms", ALERT_CEILING_MS);
	}
	assert_true(growth);
	assert_true(a.raised_ms - sent <= PASS_BOUND_MS);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "after_flip"), 1);
	assert_non_null(strstr(a.message, "1 message entered the old path after the flip"));
	assert_true(ijson_int(f->state, "last_old_entry_ms") >= sent);
	assert_true(ijson_int(iwatch_pass_of(f), "light") >= light);
	assert_true(ijson_int(iwatch_pass_of(f), "full") >= 2);
}

/* (b) Queues holding messages are read exactly on every light pass: a
 * message taken from one, or published into another, shows in the very
 * next tick's depth, before the statistics could. */
static void
test_light_pass_reads_nonempty_queues_exactly(void **state)
{
	struct fixture *f = *state;
	struct broker_delivery d;
	char err[2048];
	int64_t depth = 6;
	int light_checked = 0;

	iwatch_old_ttl_ms = 600000;
	iwatch_start(f, "lightexact", 2, 3, NULL);
	iwatch_tick_after_the_flip(f);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 6);
	tick_until_settled(f);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 6);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_nonempty"), 2);
	/* Take messages one by one: each next tick says exactly how many are
	 * left, at least twice on a light pass. */
	for (int i = 0; i < 5 && light_checked < 2; i++) {
		int64_t light = ijson_int(iwatch_pass_of(f), "light");

		assert_int_equal(broker_get(f->c.amqp, f->old[i % 2], false, &d, err,
		    sizeof(err)), 0);
		broker_delivery_free(&d);
		depth--;
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), depth);
		if (ijson_int(iwatch_pass_of(f), "light") > light)
			light_checked++;
		iwatch_sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(light_checked, 2);
	/* Drained: the queue drops out of what light passes read. */
	while (depth > 0) {
		assert_int_equal(broker_get(f->c.amqp, f->old[(int)depth % 2], false, &d,
		    err, sizeof(err)), 0);
		broker_delivery_free(&d);
		depth--;
	}
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 0);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_nonempty"), 0);
	assert_int_equal(json_object_size(iwatch_obj(iwatch_obj(f->state, "old"), "held")), 0);
}

/* (c) However many light passes ran, the watch ends on a full pass, so
 * that its last sample (what remove_old compares against) has every old
 * queue's publish counter and exact depth; remove_old then removes them. */
static void
test_watch_ends_on_a_full_pass(void **state)
{
	struct fixture *f = *state;
	const json_t *qs, *e;
	json_t *whole;
	char err[2048];
	int64_t until;
	size_t i;

	/* Light passes happen before the deadline only, and none while the
	 * feeding exchanges' counters still grow: the flip once the
	 * statistics count the test's own publishes, or their late count
	 * (on a loaded machine) holds full passes past the deadline. */
	iwatch_old_ttl_ms = 8000;
	iwatch_start(f, "lightend", 2, 1, NULL);
	until = now_ms() + ALERT_CEILING_MS;
	while (iwatch_api_publishes(f, f->old[0]) != 1 ||
	    iwatch_api_publishes(f, f->old[1]) != 1) {
		if (now_ms() > until)
			fail_msg("the statistics never showed the test's publishes");
		iwatch_sleep_ms(INTERVAL_MS);
	}
	f->flip_ms = now_ms();
	tick_until_light(f);
	iwatch_tick_until_done(f, 3 * ALERT_CEILING_MS);
	assert_true(ijson_int(iwatch_pass_of(f), "light") >= 1);
	assert_string_equal(pass_why(f), "past the deadline: every old queue is read "
	    "before the end");
	/* The last sample's queues are the ended watch's rows, which the
	 * result read whole carries back in its entries. */
	assert_string_equal(json_string_value(json_object_get(iwatch_obj(f->state,
	    "old_last"), "queues_in")), "entries");
	assert_null(json_object_get(iwatch_obj(f->state, "old_last"), "queues"));
	whole = iwatch_result_whole(f);
	qs = json_object_get(whole, "entries");
	assert_int_equal(json_array_size(qs), 2);
	json_array_foreach(qs, i, e) {
		assert_true(json_is_integer(json_object_get(e, "publish")));
		assert_int_equal(ijson_int(e, "publish"), 1);
		assert_int_equal(ijson_int(e, "messages"), 0);
	}
	f->c.watched = whole;
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), 0);
	f->c.watched = NULL;
	json_decref(whole);
	for (int k = 0; k < 2; k++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[k], NULL, err,
		    sizeof(err)), BROKER_NOT_FOUND);
}

IWATCH_MAIN(
	IWATCH_TEST(test_watch_runs_to_its_deadline),
	IWATCH_TEST(test_old_publish_moves_the_deadline),
	IWATCH_TEST(test_clock_jump_does_not_end_the_watch),
	IWATCH_TEST(test_light_pass_counts_a_publish_into_an_empty_queue),
	IWATCH_TEST(test_light_pass_reads_nonempty_queues_exactly),
	IWATCH_TEST(test_watch_ends_on_a_full_pass))
