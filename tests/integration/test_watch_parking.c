/* test_watch_parking (integration): the parking queue under the watch: a
 * message parked holds it, cutover's own messages leave parking, and a
 * foreign message stays parked and is alerted. */
#include "itest_watch.h"

/* Starts test TEST, its flip long ago, with one foreign message (one no
 * destination takes) published into the parking exchange; the parking
 * queue's name into Q. */
static void
start_with_a_parked_message(struct fixture *f, const char *test, char q[LADDER_NAME_MAX])
{
	char x[LADDER_NAME_MAX];

	iwatch_start(f, test, 1, 0, NULL);
	iwatch_flip_long_ago(f);
	ladder_parking_exchange(&f->p->ladder, x, sizeof(x));
	ladder_parking_queue(&f->p->ladder, q, LADDER_NAME_MAX);
	iwatch_publish_to(&f->c, x, "1.0.1.0.0.nobody.takes.this", 1);
}

/* A message in the parking queue raises "parking"; the watch does not end
 * past its deadline while the alert is open, nor after an acknowledgement
 * while parking still holds it (the alert comes back, saying that its cause
 * is still there and which alert it returns after); once parking is empty
 * the alert says its cause is gone (alert.cause_gone), and once it is
 * acknowledged the watch ends. */
static void
test_parking_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	struct broker_delivery d;
	struct alerts al;
	char q[LADDER_NAME_MAX], err[2048];

	start_with_a_parked_message(f, "park", q);
	iwatch_tick_until_alert(f, "parking", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "1 message in the parking queue"));
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "parking_depth"), 1);
	assert_int_equal(iwatch_events(f, "alert.raised", "parking"), 1);
	assert_true(a.cause_present);
	assert_int_equal(a.returns_after, 0);

	iwatch_tick_past_deadline(f, 500);
	/* Acknowledged, but parking still holds it: raised again. */
	iwatch_ack_all(f);
	iwatch_tick_until_alert(f, "parking", ALERT_CEILING_MS, &b);
	assert_true(b.id != a.id);
	assert_int_equal(iwatch_events(f, "alert.raised", "parking"), 2);
	assert_true(b.cause_present);
	assert_int_equal(b.returns_after, a.id);
	assert_int_equal(iwatch_events(f, "alert.cause_gone", NULL), 0);

	/* Parking emptied: still held until acknowledged. */
	assert_int_equal(broker_get(f->c.amqp, q, false, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "parking_depth"), 0);
	iwatch_open_alerts(f, &al);
	assert_int_equal(al.n, 1);
	assert_false(al.v[0].cause_present);
	assert_int_equal(iwatch_events(f, "alert.cause_gone", NULL), 1);
	/* The watch also waits for the statistics to count up to its
	 * deadline (up to one collection interval, 5 s by default): past
	 * that, only the acknowledgement holds it. */
	iwatch_tick_past_stats_lag(f);
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 5000);
	iwatch_assert_probe_queue_gone(f);
}

static int64_t
parking_depth(struct fixture *f)
{
	struct broker_queue_info qi;
	char q[LADDER_NAME_MAX], err[512];

	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	if (broker_queue_inspect(f->c.amqp, q, &qi, err, sizeof(err)) != 0)
		fail_msg("inspecting '%s': %s", q, err);
	return qi.messages;
}

/* Waits until the parking queue holds N messages (10 s at most). */
static void
wait_parking(struct fixture *f, int64_t n)
{
	int64_t until = now_ms() + 10000;

	while (parking_depth(f) != n) {
		if (now_ms() > until)
			fail_msg("the parking queue never held %lld messages",
			    (long long)n);
		iwatch_sleep_ms(20);
	}
}

/* What a killed canary leaves (its message to the unbound destination)
 * and a probe parked while the probe queue was missing are cutover's own:
 * the watch takes them out of parking, accounts for them, raises no
 * parking alert and ends. (On main the parking alert comes back after
 * every acknowledgement and the watch never ends.) */
static void
test_own_messages_leave_parking(void **state)
{
	struct fixture *f = *state;
	char dest[LADDER_NAME_MAX];
	const json_t *pk;

	iwatch_start(f, "own", 1, 0, NULL);
	iwatch_flip_long_ago(f);
	snprintf(dest, sizeof(dest), "cutover.canary.%s.unbound", f->p->name);
	iwatch_publish_own(f, NULL, PUBLISH_CANARY, 2, 100, dest, "own", NULL);
	/* The probe queue does not exist before the first tick. */
	snprintf(dest, sizeof(dest), "cutover.probe.%s", f->p->name);
	iwatch_publish_own(f, NULL, PUBLISH_PROBE, 41, 100, dest, "own", NULL);
	wait_parking(f, 2);

	iwatch_tick_until_done(f, 20000);
	assert_int_equal(iwatch_events(f, "alert.raised", "parking"), 0);
	assert_int_equal(parking_depth(f), 0);
	pk = iwatch_obj(f->state, "parking");
	assert_int_equal(ijson_int(iwatch_obj(pk, "own_taken"), "canary"), 1);
	assert_int_equal(ijson_int(iwatch_obj(pk, "own_taken"), "probe"), 1);
	assert_int_equal(ijson_int(pk, "foreign"), 0);
	assert_true(iwatch_events(f, "watch.parking_taken", NULL) >= 1);
	iwatch_assert_probe_queue_gone(f);
}

/* A foreign message in parking beside one of cutover's own: the own one
 * is taken, the foreign one raises the alert (counted alone) and stays in
 * the queue, tick after tick, until someone removes it. */
static void
test_foreign_parked_message_stays(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct broker_delivery d;
	struct publish_info pi;
	char q[LADDER_NAME_MAX], dest[LADDER_NAME_MAX], err[2048];

	start_with_a_parked_message(f, "foreign", q);
	snprintf(dest, sizeof(dest), "cutover.canary.%s.unbound", f->p->name);
	iwatch_publish_own(f, NULL, PUBLISH_CANARY, 2, 100, dest, "own", NULL);
	wait_parking(f, 2);

	iwatch_tick_until_alert(f, "parking", 5000, &a);
	assert_non_null(strstr(a.message, "1 message in the parking queue"));
	assert_non_null(strstr(a.message, "is not cutover's own"));
	iwatch_tick_past_deadline(f, 1000);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_int_equal(ijson_int(iwatch_obj(iwatch_obj(f->state, "parking"), "own_taken"),
	    "canary"), 1);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "parking"), "foreign"), 1);
	/* Still there, and it is the foreign one. */
	assert_int_equal(parking_depth(f), 1);
	assert_int_equal(broker_get(f->c.amqp, q, false, &d, err, sizeof(err)), 0);
	assert_int_equal(d.len, 3);
	assert_memory_equal(d.body, "old", 3);
	assert_int_not_equal(publish_read(&d, &pi, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	iwatch_tick_past_stats_lag(f);
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 5000);
	assert_int_equal(iwatch_events(f, "alert.raised", "parking"), 1);
}

IWATCH_MAIN(
	IWATCH_TEST(test_parking_holds_the_watch),
	IWATCH_TEST(test_own_messages_leave_parking),
	IWATCH_TEST(test_foreign_parked_message_stays))
