/* test_watch_old (integration): the old queues under the watch: one that
 * vanishes, one not drained, one that joins before the flip and one created
 * after it; each raises its alert and holds the watch until acknowledged. */
#include "itest_watch.h"

/* An old queue deleted by hand while it holds messages (as x-expires
 * would) raises old_vanished naming it and its depth; one deleted once
 * empty does not. */
static void
test_vanished_old_queue_raises_an_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048], want[LADDER_NAME_MAX + 16];
	int64_t until;

	iwatch_start(f, "vanish", 2, 3, NULL);
	iwatch_tick_after_the_flip(f);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 6);
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[0], 0, NULL, err,
	    sizeof(err)), 0);
	iwatch_tick_until_alert(f, "old_vanished", 3000, &a);
	fprintf(stderr, "# old_vanished: %s\n", a.message);
	snprintf(want, sizeof(want), "'%s' (3)", f->old[0]);
	assert_non_null(strstr(a.message, want));
	assert_null(strstr(a.message, f->old[1]));
	assert_int_equal(iwatch_events(f, "alert.raised", "old_vanished"), 1);

	/* The other drains (its TTL), then goes: no second alert. */
	until = now_ms() + 20000;
	while (ijson_int(iwatch_obj(f->state, "summary"), "old_depth") > 0) {
		if (now_ms() > until)
			fail_msg("old queue '%s' did not drain", f->old[1]);
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[1], 0, NULL, err,
	    sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
	assert_int_equal(iwatch_events(f, "alert.raised", "old_vanished"), 1);
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 20000);
}

/* The watch's main stop condition: old queues still holding messages
 * past the deadline (here the old queue was redeclared with a TTL far
 * longer than measured, and holds two messages) keep the watch going,
 * "waiting for the old path to drain", and raise old_not_drained naming
 * the count; once drained and the alert acknowledged, it ends. */
static void
test_old_not_drained_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct broker_delivery d;
	char err[2048];
	int64_t deadline, until;
	const char *status;

	iwatch_start_undrained(f, "undrained", 2);
	assert_int_equal(ijson_int(f->state, "max_ttl_ms"), OLD_TTL_MS);

	/* Past the deadline, the messages still there: it goes on. The two
	 * publishes may still move the deadline when the statistics count
	 * them (late, on a loaded machine: a deadline read before a tick
	 * can be moved by that tick), so it ticks until a tick is past the
	 * deadline as that tick saw it. */
	until = now_ms() + 2 * ALERT_CEILING_MS;
	for (;;) {
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		status = json_string_value(json_object_get(iwatch_obj(f->state, "summary"),
		    "status"));
		assert_non_null(status);
		if (strcmp(status, "waiting for the deadline") != 0)
			break;
		if (now_ms() > until)
			fail_msg("still waiting for the deadline %lld ms after the flip",
			    (long long)(now_ms() - f->flip_ms));
	}
	assert_true(now_ms() > ijson_int(f->state, "deadline_ms"));
	assert_int_equal(ijson_int(f->state, "max_ttl_ms"), OLD_TTL_MS);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 2);
	assert_string_equal(status, "waiting for the old path to drain");
	iwatch_tick_until_alert(f, "old_not_drained", ALERT_CEILING_MS, &a);
	deadline = ijson_int(f->state, "deadline_ms");
	assert_true(a.raised_ms >= deadline);
	assert_non_null(strstr(a.message, "2 messages still in 1 old queue past the "
	    "deadline"));
	assert_int_equal(iwatch_events(f, "alert.raised", "old_not_drained"), 1);
	assert_false(json_is_true(json_object_get(f->state, "done")));

	/* Drained by hand: still held until the alert is acknowledged. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(broker_get(f->c.amqp, f->old[0], false, &d, err,
		    sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	until = now_ms() + ALERT_CEILING_MS;
	do {
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		if (now_ms() > until)
			fail_msg("the watch never saw the old queue empty");
	} while (ijson_int(iwatch_obj(f->state, "summary"), "old_depth") != 0);
	iwatch_tick_past_stats_lag(f);
	assert_non_null(strstr(json_string_value(json_object_get(iwatch_obj(f->state,
	    "summary"), "status")), "alert is open"));
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 5000);
	assert_true(json_is_true(json_object_get(f->state, "done")));
}

/* ARGV[1], when given, runs only the tests whose name matches it. */
/* The old path is the selection, not a snapshot: a queue the selection
 * takes that appears before the flip (a library declares one when a delay
 * is first used) joins the old path. The watch raises nothing for it,
 * counts its TTL in the deadline and records it among the members;
 * remove_old then removes it like a measured one. */
static void
test_queue_joining_before_the_flip_is_a_member(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	json_t *r = NULL, *whole;
	const json_t *joined;
	int64_t joined_ttl = OLD_TTL_MS + 1500;

	iwatch_start(f, "join", 1, 1, NULL);
	/* After the measure, before the flip: a delay first used now. */
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.joined", iwatch_prefix);
	f->extra = true;
	iwatch_old_queue_ttl(&f->c, f->old[f->nold], joined_ttl);
	iwatch_publish_to(&f->c, "", f->old[f->nold], 2);
	f->flip_ms = now_ms();
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	joined = json_object_get(iwatch_obj(f->state, "old"), "joined");
	assert_int_equal(json_integer_value(json_object_get(joined, f->old[f->nold])),
	    joined_ttl);
	assert_int_equal(ijson_int(f->state, "max_ttl_ms"), joined_ttl);
	assert_true(ijson_int(f->state, "deadline_ms") >= f->flip_ms + joined_ttl +
	    ALLOWANCE_MS);
	/* Nothing to acknowledge: it ends by itself once both drained. */
	iwatch_tick_until_done(f, 30000);
	assert_int_equal(iwatch_events(f, "alert.raised", "old_new_queue"), 0);
	assert_int_equal(iwatch_events(f, "alert.raised", NULL), 0);

	/* remove_old takes the member as it takes the measured queue. */
	f->c.measured = f->measured;
	whole = iwatch_result_whole(f);
	f->c.watched = whole;
	f->c.old_last_entry_ms = ijson_int(f->state, "last_old_entry_ms");
	f->c.state = NULL;
	f->c.now_ms = 0;
	if (step_remove_old(&f->c, &r, err, sizeof(err)) != 0)
		fail_msg("remove_old: %s", err);
	assert_false(f->c.again);
	assert_int_equal(ijson_int(iwatch_obj(r, "counts"), "removed"), 2);
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[f->nold], NULL, err,
	    sizeof(err)), BROKER_NOT_FOUND);
	json_decref(r);
	f->c.watched = NULL;
	json_decref(whole);
}

/* Past the flip's statistics window, a queue that appears between two
 * looks was created by a publish after the flip: old_new_queue names it,
 * and it is a member all the same (its TTL counts). */
static void
test_queue_created_after_the_flip_is_alerted(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;

	iwatch_start(f, "created", 1, 0, NULL);
	iwatch_tick_after_the_flip(f);
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.late", iwatch_prefix);
	f->extra = true;
	iwatch_old_queue_ttl(&f->c, f->old[f->nold], OLD_TTL_MS + 500);
	iwatch_tick_until_alert(f, "old_new_queue", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, ".old.late'"));
	assert_non_null(strstr(a.message, "appeared after the flip"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(iwatch_obj(f->state,
	    "old"), "joined"), f->old[f->nold])), OLD_TTL_MS + 500);
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 30000);
	assert_int_equal(iwatch_events(f, "alert.raised", "old_new_queue"), 1);
}

IWATCH_MAIN(
	IWATCH_TEST(test_vanished_old_queue_raises_an_alert),
	IWATCH_TEST(test_old_not_drained_holds_the_watch),
	IWATCH_TEST(test_queue_joining_before_the_flip_is_a_member),
	IWATCH_TEST(test_queue_created_after_the_flip_is_alerted))
