/* test_watch_levels (integration): every level of the ladder proven moving:
 * a stuck level raises level_late, pending and unroutable dead-letters are
 * held and named, the bands count publishes entering each level, the oldest
 * age comes from the head's timestamp, and a held watch keeps proving short
 * levels; a quiet old path proves nothing while a level has stopped. */
#include "itest_watch.h"

/* Level K's entry in the summary's "levels", and its persisted state. */
#define level_summary(f, k)	iwatch_entry((f), "summary", "levels", (k))

#define level_state(f, k)	iwatch_entry((f), "levels", "list", (k))

/* Ticks until an open alert of KIND says TEXT (the alert of a kind is
 * one, its message the last raise's), into *A, within the ceiling. */
static void
tick_until_alert_says(struct fixture *f, const char *kind, const char *text,
    struct store_alert *a)
{
	int64_t until = now_ms() + ALERT_CEILING_MS;

	for (;;) {
		iwatch_tick_until_alert(f, kind, ALERT_CEILING_MS, a);
		if (strstr(a->message, text) != NULL)
			return;
		if (now_ms() > until)
			fail_msg("no %s alert saying \"%s\" within %d ms (last: %s)", kind,
			    text, ALERT_CEILING_MS, a->message);
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

/* Ticks until level K's probe has come out on time once. */
static void
tick_until_level_proven(struct fixture *f, int k)
{
	int64_t until = now_ms() + ALERT_CEILING_MS;
	char err[2048];

	for (;;) {
		if (iwatch_tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped before level %d was proven: %s", k, err);
		if (json_array_size(json_object_get(iwatch_obj(f->state, "levels"), "list")) >
		    (size_t)k && ijson_int(level_state(f, k), "on_time") >= 1)
			return;
		if (now_ms() > until)
			fail_msg("level %d not proven within %d ms", k, ALERT_CEILING_MS);
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

/* Level 2's bypass binding (exchange 2 -> exchange 1, bit 2 = 0) deleted
 * under the watch: what expires in level 3 (and 4) then routes nowhere,
 * stays in the level as a pending dead-letter (quorum, at-least-once),
 * and the level behind it waits. The level probe of level 3 does not
 * come out: level_late names level 3 (the time from the deletion to the
 * alert is printed: its TTL 800 ms + allowance 1 s + ticks); the pending
 * dead-letters held longer than the allowance raise dead_letters_pending
 * with their count; the level reads "late", and the watch holds. Once
 * the binding is back and level 3's probes come out on time, both alerts
 * close by themselves. */
static void
test_stuck_level_raises_level_late(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	char x2[LADDER_NAME_MAX], x1[LADDER_NAME_MAX], key[LADDER_NAME_MAX];
	char want[LADDER_NAME_MAX + 32], err[2048];
	int64_t cut;

	iwatch_start(f, "stuck", 1, 0, NULL);
	f->flip_ms = now_ms();
	tick_until_level_proven(f, 3);
	ladder_level_exchange(&f->p->ladder, 2, x2, sizeof(x2));
	ladder_level_exchange(&f->p->ladder, 1, x1, sizeof(x1));
	ladder_bypass_pattern(&f->p->ladder, 2, key, sizeof(key));
	assert_int_equal(broker_exchange_unbind(f->c.amqp, x1, x2, key, err,
	    sizeof(err)), 0);
	cut = now_ms();
	snprintf(want, sizeof(want), "level 3 ('%s.level.03') is not moving", iwatch_prefix);
	tick_until_alert_says(f, "level_late", want, &a);
	fprintf(stderr, "# stuck level: level_late naming level 3 %lld ms after the "
	    "binding was deleted (level 3: TTL 800 ms + allowance %d ms): %s\n",
	    (long long)(now_ms() - cut), ALLOWANCE_MS, a.message);
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 3),
	    "status")), "late");
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 1),
	    "status")), "moving");
	snprintf(want, sizeof(want), "level 3 ('%s.level.03') has held ", iwatch_prefix);
	tick_until_alert_says(f, "dead_letters_pending", want, &b);
	fprintf(stderr, "# pending dead-letters: %lld ms after the deletion: %s\n",
	    (long long)(now_ms() - cut), b.message);
	assert_non_null(strstr(b.message, "pending dead-letter"));
	assert_true(ijson_int(level_summary(f, 3), "dead_letters") >= 1);
	/* Pending dead-letters are not in the depth: the level is not empty. */
	assert_true(strcmp(json_string_value(json_object_get(level_summary(f, 3),
	    "oldest_age_source")), "empty") != 0);
	assert_true(ijson_int(level_state(f, 3), "stuck") >= 1);
	assert_int_equal(iwatch_events(f, "alert.raised", "level_late"), 1);
	assert_int_equal(iwatch_events(f, "alert.raised", "parking"), 0);
	/* /metrics: by level only. */
	assert_true(iwatch_metric(f, "cutover_ladder_dead_letters_pending", "level=\"3\"") >= 1);
	assert_true(iwatch_metric(f, "cutover_ladder_level_late", "level=\"3\"") == 1);
	assert_true(iwatch_metric(f, "cutover_ladder_level_moving", "level=\"1\"") == 1);
	assert_true(iwatch_metric(f, "cutover_alerts_open", "kind=\"level_late\"") == 1);
	assert_true(iwatch_metric(f, "cutover_alerts_open",
	    "kind=\"dead_letters_pending\"") == 1);

	/* The binding put back: level 3's probes come out on time again and
	 * both alerts close by themselves, each with its record. */
	assert_int_equal(broker_exchange_bind(f->c.amqp, x1, x2, key, err,
	    sizeof(err)), 0);
	for (int64_t until = now_ms() + 2 * ALERT_CEILING_MS; ; iwatch_sleep_ms(INTERVAL_MS)) {
		struct alerts al;

		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_open_alerts(f, &al);
		if (iwatch_find_alert(&al, "level_late") == NULL &&
		    iwatch_find_alert(&al, "dead_letters_pending") == NULL)
			break;
		if (now_ms() > until)
			fail_msg("level_late or dead_letters_pending still open %d ms "
			    "after the binding came back", 2 * ALERT_CEILING_MS);
	}
	assert_int_equal(iwatch_events(f, "alert.acked", NULL), 2);
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 3),
	    "status")), "moving");
}

/* Client publishes entering at level 2 (500 ms = 5 units = bits 2 and 0)
 * show up in band 2's counter (level 2 exchange's publish_in), not in
 * band 3's, which counts only the watch's own level-3 probes. 200 of
 * them: more than the level probes of level 2 (one in flight at a time,
 * 400 ms each) can add within the ceiling. A foreign message in parking
 * holds the watch open meanwhile. */
static void
test_band_counts_publishes_entering_each_level(void **state)
{
	struct fixture *f = *state;
	struct publish_receipt rc;
	char dest[LADDER_NAME_MAX], x[LADDER_NAME_MAX], err[2048];
	int64_t until, band2 = -1, band3 = -1;
	const json_t *b2, *b3;

	iwatch_start(f, "band", 1, 0, NULL);
	f->flip_ms = now_ms();
	ladder_parking_exchange(&f->p->ladder, x, sizeof(x));
	iwatch_publish_to(&f->c, x, "1.0.1.0.0.nobody.takes.this", 1);
	snprintf(dest, sizeof(dest), "%s.dest", iwatch_prefix);
	for (int i = 0; i < 200; i++) {
		iwatch_publish_own(f, "itest-band", PUBLISH_MANUAL, i, 500, dest, "band",
		    &rc);
		if (i == 0) {
			ladder_level_exchange(&f->p->ladder, 2, x, sizeof(x));
			assert_string_equal(rc.exchange, x);
		}
	}
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		if (iwatch_tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped: %s", err);
		b2 = json_object_get(level_summary(f, 2), "band_publishes");
		b3 = json_object_get(level_summary(f, 3), "band_publishes");
		band2 = json_is_integer(b2) ? json_integer_value(b2) : -1;
		band3 = json_is_integer(b3) ? json_integer_value(b3) : -1;
		if (band2 >= 200)
			break;
		if (now_ms() > until)
			fail_msg("band 2 counted %lld of 200 within %d ms", (long long)band2,
			    ALERT_CEILING_MS);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# bands: level 2 %lld (200 + %lld level probes sent), level 3 "
	    "%lld (%lld level probes sent)\n", (long long)band2,
	    (long long)ijson_int(level_state(f, 2), "sent"), (long long)band3,
	    (long long)ijson_int(level_state(f, 3), "sent"));
	assert_true(band2 <= 200 + ijson_int(level_state(f, 2), "sent"));
	assert_true(band3 >= 0);
	assert_true(band3 <= ijson_int(level_state(f, 3), "sent"));
	assert_true(iwatch_metric(f, "cutover_ladder_band_publishes_total", "level=\"2\"") ==
	    (double)band2);
}

/* A classic ladder whose level 4 holds a message with a timestamp
 * property (published 100 s ago by its stamp, re-sent every tick so that
 * the level always holds one): the oldest age comes from the broker's
 * head_message_timestamp and says so; levels the management API reports
 * no head timestamp for do not claim one. */
static void
test_oldest_age_from_the_head_timestamp(void **state)
{
	struct fixture *f = *state;
	char x[LADDER_NAME_MAX], path[512], vh[64], key[128], err[2048];
	int64_t until, sent4;
	json_t *body;
	const json_t *lv;

	iwatch_queue_type = "classic";
	/* The statistics show a head timestamp only when, at one of their
	 * samples (every 5 s), a stamped message is at the level's head; the
	 * watch's own level-4 probe, unstamped, took the head part of each
	 * cycle, and on a loaded machine sample after sample missed it. A
	 * watch held past its deadline by an old queue that does not drain
	 * sends no level-4 probe (its TTL is beyond the allowance), so the
	 * level holds only the test's messages. */
	iwatch_start_undrained(f, "oldest", 1);
	/* Past the deadline (which the publish moves when the statistics
	 * count it), the probe sent before it has come out. */
	while (now_ms() <= ijson_int(f->state, "deadline_ms") + STATS_LAG_MS) {
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
	sent4 = ijson_int(level_summary(f, 4), "probes_sent");
	ladder_level_exchange(&f->p->ladder, 4, x, sizeof(x));
	assert_true(mgmt_escape(mgmt_vhost(f->c.mgmt), vh, sizeof(vh)) >= 0);
	snprintf(path, sizeof(path), "/api/exchanges/%s/%s/publish", vh, x);
	snprintf(key, sizeof(key), "1.0.0.0.0.%s.dest", iwatch_prefix);
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		body = json_pack("{s:{s:I},s:s,s:s,s:s}", "properties", "timestamp",
		    (json_int_t)(now_ms() / 1000 - 100), "routing_key", key, "payload",
		    "old", "payload_encoding", "string");
		assert_int_equal(mgmt_request(f->c.mgmt, "POST", path, body, NULL, NULL,
		    err, sizeof(err)), 0);
		json_decref(body);
		if (iwatch_tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped: %s", err);
		lv = level_summary(f, 4);
		if (strcmp(json_string_value(json_object_get(lv, "oldest_age_source")),
		    "head_timestamp") == 0)
			break;
		if (now_ms() > until)
			fail_msg("no head timestamp for level 4 within %d ms",
			    ALERT_CEILING_MS);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# oldest age of level 4 by its head timestamp: %lld ms\n",
	    (long long)ijson_int(lv, "oldest_age_ms"));
	assert_int_equal(ijson_int(lv, "probes_sent"), sent4);
	assert_true(ijson_int(lv, "oldest_age_ms") >= 100000);
	/* Classic: no pending dead-letters reported, none claimed. */
	assert_true(json_is_null(json_object_get(lv, "dead_letters")));
	assert_true(iwatch_metric(f, "cutover_ladder_oldest_age_ms", "level=\"4\"") >= 100000);
}

/* A watch held past its deadline (an old queue that does not drain) goes
 * on proving the levels whose TTL is within the allowance (1 s: levels
 * 0-3), and past the deadline sends no probe of a longer level (level 4,
 * 1.6 s), which could hold a watch that may end. */
static void
test_held_watch_keeps_proving_short_levels(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	int64_t sent4, on3, until;

	iwatch_start_undrained(f, "held", 1);
	/* Past the deadline (which the publish moves when the statistics
	 * count it). */
	while (now_ms() <= ijson_int(f->state, "deadline_ms") + STATS_LAG_MS) {
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
	sent4 = ijson_int(level_summary(f, 4), "probes_sent");
	on3 = ijson_int(level_summary(f, 3), "probes_on_time");
	until = now_ms() + ALERT_CEILING_MS;
	while (ijson_int(level_summary(f, 3), "probes_on_time") < on3 + 2) {
		if (now_ms() > until)
			fail_msg("level 3 not proven again past the deadline");
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
	for (int k = 0; k < 4; k++)
		assert_string_equal(json_string_value(json_object_get(level_summary(f, k),
		    "status")), "moving");
	assert_int_equal(ijson_int(level_summary(f, 4), "probes_sent"), sent4);
	assert_false(json_is_true(json_object_get(f->state, "done")));
}

/* Starts watch TEST whose old path does not end meanwhile, then holds a
 * dead-letter in level 0: the parking queue deleted, a message for a
 * destination nobody binds expires there and has nowhere to go. Ticks
 * until dead_letters_pending names level 0 (into *A). */
static void
hold_a_dead_letter(struct fixture *f, const char *test, struct store_alert *a)
{
	char q[LADDER_NAME_MAX], x[LADDER_NAME_MAX], key[128], err[2048];

	iwatch_old_ttl_ms = 600000;
	iwatch_start(f, test, 1, 0, NULL);
	iwatch_flip_long_ago(f);
	tick_until_level_proven(f, 0);
	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	assert_int_equal(broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	ladder_level_exchange(&f->p->ladder, 0, x, sizeof(x));
	snprintf(key, sizeof(key), "0.0.0.0.1.%s.nobody.binds.this", iwatch_prefix);
	iwatch_publish_to(&f->c, x, key, 1);
	tick_until_alert_says(f, "dead_letters_pending", "level 0 (", a);
}

/* A dead-letter that has nowhere to go (a destination nobody binds, and
 * the parking queue gone): RabbitMQ keeps it in the quorum level's
 * dead-letter buffer, retrying. The watch reads every level's pending
 * dead-letters although the parking queue is missing, names level 0 and
 * its count while level 0's own probes still come out on time, and the
 * parking queue's drift alert says the message is held, not dropped. */
static void
test_unroutable_dead_letter_is_held_and_named(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];
	int64_t light, until;
	const json_t *dl;

	hold_a_dead_letter(f, "heldlvl", &a);
	fprintf(stderr, "# held dead-letter: %s\n", a.message);
	assert_non_null(strstr(a.message, "1 pending dead-letter "));
	iwatch_assert_open_alert_with(f, "ladder_drift", "is held in the level");
	/* Read on a light pass too (each queue by its own GET). */
	light = ijson_int(iwatch_pass_of(f), "light");
	until = now_ms() + ALERT_CEILING_MS;
	do {
		if (now_ms() > until)
			fail_msg("no light pass within %d ms", ALERT_CEILING_MS);
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	} while (ijson_int(iwatch_pass_of(f), "light") == light);
	dl = json_object_get(level_summary(f, 0), "dead_letters");
	if (!json_is_integer(dl) || json_integer_value(dl) < 1)
		fail_msg("level 0's dead_letters on a light pass: %s",
		    json_is_null(dl) ? "null" : "not 1 or more");
	assert_true(iwatch_metric(f, "cutover_ladder_dead_letters_pending", "level=\"0\"") >= 1);
}

/* A dead-letter held in a level (the parking queue deleted: what no
 * destination takes has nowhere to go) raises dead_letters_pending; once
 * it can move on (the parking queue declared again, the level's probes
 * on time), the watch closes that alert itself, recorded as alert.acked by the engine with
 * the reason, so a watch held only by it can end without a person. */
static void
test_pending_dead_letters_that_move_on_close_their_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct alerts al;
	char err[2048];
	int64_t until;
	json_t *r = NULL;

	hold_a_dead_letter(f, "dlpover", &a);
	assert_int_equal(iwatch_events(f, "alert.acked", NULL), 0);

	if (step_declare_ladder(&f->c, &r, err, sizeof(err)) != 0)
		fail_msg("declare_ladder: %s", err);
	json_decref(r);
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_open_alerts(f, &al);
		if (iwatch_find_alert(&al, "dead_letters_pending") == NULL)
			break;
		if (now_ms() > until)
			fail_msg("dead_letters_pending still open %d ms after the parking "
			    "queue came back", ALERT_CEILING_MS);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(iwatch_events(f, "alert.acked", NULL), 1);
	assert_int_equal(iwatch_events(f, "alert.raised", "dead_letters_pending"), 1);
	/* With its route back the level is moving (its probes come out on
	 * time): what it still holds is retried by the broker. */
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 0),
	    "status")), "moving");
}

IWATCH_MAIN(
	IWATCH_TEST(test_stuck_level_raises_level_late),
	IWATCH_TEST(test_pending_dead_letters_that_move_on_close_their_alert),
	IWATCH_TEST(test_band_counts_publishes_entering_each_level),
	IWATCH_TEST(test_oldest_age_from_the_head_timestamp),
	IWATCH_TEST(test_held_watch_keeps_proving_short_levels),
	IWATCH_TEST(test_unroutable_dead_letter_is_held_and_named))
