/* test_watch_drift (integration): ladder_drift: a binding, a level queue or
 * the parking queue deleted under the watch raises it and holds the watch. */
#include "itest_watch.h"

/* A level binding deleted under the watch raises ladder_drift naming it,
 * at the next verification (every probe_every). */
static void
test_deleted_binding_raises_ladder_drift(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char x[LADDER_NAME_MAX], key[LADDER_NAME_MAX], want[4 * LADDER_NAME_MAX];
	char err[2048];

	iwatch_start(f, "drift", 1, 0, NULL);
	iwatch_tick_after_the_flip(f);
	assert_true(json_is_true(json_object_get(iwatch_obj(f->state, "verify"), "ok")));
	/* Level 3's wait binding: off the probes' path (2 units: level 1). */
	ladder_level_exchange(&f->p->ladder, 3, x, sizeof(x));
	ladder_wait_pattern(&f->p->ladder, 3, key, sizeof(key));
	assert_int_equal(broker_queue_unbind(f->c.amqp, x, x, key, err, sizeof(err)), 0);
	iwatch_tick_until_alert(f, "ladder_drift", ALERT_CEILING_MS, &a);
	snprintf(want, sizeof(want), "%s -> queue %s '%s'", x, x, key);
	assert_non_null(strstr(a.message, want));
	assert_non_null(strstr(a.message, "missing"));
	assert_true(json_is_false(json_object_get(iwatch_obj(f->state, "verify"), "ok")));
	assert_int_equal(iwatch_events(f, "alert.raised", "ladder_drift"), 1);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "probe"), "lost"), 0);
}

/* Deletes level 3's queue (PARKING: the parking queue) under a running
 * watch of test TEST: the next tick raises ladder_drift naming it (the
 * watch inspects every level and the parking queue every tick), and the
 * watch goes on. */
static void
delete_under_the_watch(struct fixture *f, const char *test, bool parking)
{
	char q[LADDER_NAME_MAX], want[2 * LADDER_NAME_MAX], err[2048];

	iwatch_start(f, test, 1, 0, NULL);
	iwatch_tick_after_the_flip(f);
	if (parking) {
		ladder_parking_queue(&f->p->ladder, q, sizeof(q));
		snprintf(want, sizeof(want), "the parking queue '%s' does not exist", q);
	} else {
		ladder_level_queue(&f->p->ladder, 3, q, sizeof(q));
		snprintf(want, sizeof(want), "level 3's queue '%s' does not exist", q);
	}
	assert_int_equal(broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	iwatch_assert_open_alert_with(f, "ladder_drift", want);
	assert_int_equal(iwatch_events(f, "alert.raised", "ladder_drift"), 1);
	assert_false(json_is_true(json_object_get(f->state, "done")));
}

/* A level queue deleted under the watch raises ladder_drift naming it. */
static void
test_deleted_level_queue_raises_ladder_drift(void **state)
{
	delete_under_the_watch(*state, "nolevel", false);
}

/* The parking queue deleted under the watch: ladder_drift naming it. */
static void
test_deleted_parking_queue_raises_ladder_drift(void **state)
{
	delete_under_the_watch(*state, "nopark", true);
}

IWATCH_MAIN(
	IWATCH_TEST(test_deleted_binding_raises_ladder_drift),
	IWATCH_TEST(test_deleted_level_queue_raises_ladder_drift),
	IWATCH_TEST(test_deleted_parking_queue_raises_ladder_drift))
