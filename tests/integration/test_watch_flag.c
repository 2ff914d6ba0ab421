/* test_watch_flag (integration): the plan's flag (a feature of the real
 * Unleash) read every tick: turned off or made unreadable under the watch
 * it holds the watch, and remove_old refuses while it is off; the token is
 * never written anywhere. */
#include "itest_watch.h"

/* store_each_event callback: counts events whose details contain *ARG. */
static int
event_quotes(const struct store_event *ev, void *arg)
{
	const char **needle = arg;

	if (strstr(ev->details_json, needle[0]) != NULL)
		needle[1] = ev->kind;
	return 0;
}

/* Fails when the Unleash token is in the watch's state, an open alert or
 * the plan's history. */
static void
assert_token_nowhere(struct fixture *f)
{
	const char *needle[2] = { itest_need_env("CUTOVER_TEST_UNLEASH_TOKEN"), NULL };
	struct alerts al;
	char *text = json_dumps(f->state, JSON_COMPACT), err[512];

	assert_non_null(text);
	assert_null(strstr(text, needle[0]));
	free(text);
	iwatch_open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		assert_null(strstr(al.v[i].message, needle[0]));
	if (store_each_event(f->s, f->plan_id, event_quotes, needle, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	if (needle[1] != NULL)
		fail_msg("event '%s' quotes the Unleash token", needle[1]);
}

/* The flag's state as the last tick read it ("on", "off", "unreadable"). */
static const char *
flag_seen(struct fixture *f)
{
	const char *s = json_string_value(json_object_get(iwatch_obj(f->state, "flag"), "state"));

	return s != NULL ? s : "";
}

/* Ticks for as long as TIMEOUT_MS, every tick going on (the watch must
 * not end), and at least until the step clock passes UNTIL. */
static void
tick_held_until(struct fixture *f, int64_t until, const char *why)
{
	char err[2048];

	while (now_ms() <= until) {
		if (iwatch_tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch ended (or failed: %s) although %s", err, why);
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

/* Someone turns the plan's flag off behind the watch's back (producers go
 * back to the old path): the next tick raises flag_off, the deadline moves
 * with it, the watch does not end past the deadline it had (nor after an
 * acknowledgement while the flag reads off: raised again), and remove_old
 * deletes nothing, saying why. Read on again and acknowledged, the watch
 * ends and remove_old removes the old queue. The token is nowhere. */
static void
test_flag_off_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	struct broker_queue_info qi;
	char err[2048];
	int64_t d0, off_at, on_at;

	iwatch_start(f, "flagoff", 1, 0, NULL);
	iwatch_tick_after_the_flip(f);
	d0 = ijson_int(f->state, "deadline_ms");

	itest_feature_set(f->feature, false);
	off_at = now_ms();
	iwatch_tick_until_alert(f, "flag_off", 5000, &a);
	assert_non_null(strstr(a.message, f->feature));
	assert_string_equal(flag_seen(f), "off");
	assert_true(ijson_int(iwatch_obj(f->state, "flag"), "not_on_since_ms") >= off_at);
	tick_held_until(f, d0 + 1000, "the flag reads off");

	/* Acknowledged while still off: raised again, still held. */
	iwatch_ack_all(f);
	iwatch_tick_until_alert(f, "flag_off", 5000, &b);
	assert_true(b.id != a.id);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_non_null(strstr(json_string_value(json_object_get(iwatch_obj(f->state,
	    "summary"), "status")), "flag"));

	/* remove_old refuses while the flag is off: nothing deleted. */
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "flag"));
	assert_non_null(strstr(err, "off"));
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[0], &qi, err,
	    sizeof(err)), 0);

	/* On again: the old path was in use until now, so the deadline moves
	 * to now + TTL + allowance; the alerts stay until acknowledged, then
	 * it ends. */
	itest_feature_set(f->feature, true);
	on_at = now_ms();
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_string_equal(flag_seen(f), "on");
	assert_true(ijson_int(f->state, "last_old_entry_ms") >= on_at);
	assert_true(ijson_int(f->state, "deadline_ms") >= on_at + OLD_TTL_MS + ALLOWANCE_MS);
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 20000);
	assert_true(iwatch_events(f, "alert.raised", "flag_off") >= 2);
	assert_token_nowhere(f);
	/* remove_old leaves a queue with no publish counter to compare. */
	itest_give_publish_counter(f->c.amqp, f->c.mgmt, f->old[0]);
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[0], &qi, err,
	    sizeof(err)), BROKER_NOT_FOUND);
}

/* A flag that cannot be read (the feature deleted in Unleash: 404) raises
 * flag_unreadable and holds the watch past its deadline; readable and on
 * again, and acknowledged, the watch ends. */
static void
test_unreadable_flag_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];
	int64_t d0;

	iwatch_start(f, "flaggone", 1, 0, NULL);
	iwatch_tick_after_the_flip(f);
	d0 = ijson_int(f->state, "deadline_ms");
	itest_feature_delete(f->feature);
	iwatch_tick_until_alert(f, "flag_unreadable", 5000, &a);
	assert_non_null(strstr(a.message, "404"));
	assert_string_equal(flag_seen(f), "unreadable");
	tick_held_until(f, d0 + 1000, "the flag cannot be read");
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "flag"));

	itest_feature_create(f->feature);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_string_equal(flag_seen(f), "on");
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 20000);
	assert_token_nowhere(f);
}

/* remove_old with the flag off (turned off after the watch, while its gate
 * waited) deletes nothing and fails saying so; on again, it removes. */
static void
test_remove_old_refuses_while_the_flag_is_off(void **state)
{
	struct fixture *f = *state;
	struct broker_queue_info qi;
	char err[2048];

	iwatch_start(f, "rmflag", 2, 0, NULL);
	f->flip_ms = now_ms() - 60000;
	itest_feature_set(f->feature, false);
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "deletes nothing"));
	assert_non_null(strstr(err, f->feature));
	for (int i = 0; i < 2; i++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[i], &qi, err,
		    sizeof(err)), 0);
	itest_feature_set(f->feature, true);
	for (int i = 0; i < 2; i++)
		itest_give_publish_counter(f->c.amqp, f->c.mgmt, f->old[i]);
	assert_int_equal(iwatch_remove_old(f, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[i], &qi, err,
		    sizeof(err)), BROKER_NOT_FOUND);
}

IWATCH_MAIN(
	IWATCH_TEST(test_flag_off_holds_the_watch),
	IWATCH_TEST(test_unreadable_flag_holds_the_watch),
	IWATCH_TEST(test_remove_old_refuses_while_the_flag_is_off))
