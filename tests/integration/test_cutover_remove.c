/* test_cutover_remove (integration): remove_old through the engine: the
 * removals recorded when a queue is left, and a publish at the remove gate
 * that makes it wait for that queue. */
#include "itest_cutover.h"

/* `cutover VERB remove_old --as bob` (approve or retry), then the plan runs
 * to exit RUN_RC, ending with STATUS; *T gets its history. */
static void
remove_old_then_run(const char *verb, int run_rc, const char *status,
    struct itest_history *t)
{
	char got[32];

	assert_int_equal(itest_cutover(verb, "--db", icut_db, icut_plan_name, "remove_old", "--as",
	    "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), run_rc);
	itest_read_history(icut_db, icut_plan_name, t, got, sizeof(got));
	assert_string_equal(got, status);
}

/* remove_old leaves an old queue that has a consumer and fails; the two
 * it deleted are in the history all the same, and a retry records the
 * third, each deletion exactly once. */
static void
test_removals_recorded_when_one_is_left(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker *consumer = NULL;
	char err[1024], name[3][160];

	(void)state;
	icut_begin("leftone", &p, &c, NULL, "1s");
	for (int s = 1; s <= 3; s++)
		snprintf(name[s - 1], sizeof(name[0]), "%s.old.%d", icut_prefix, s);
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(broker_open(getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 5000, &consumer, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(consumer, name[1], 1, err, sizeof(err)), 0);
	remove_old_then_run("approve", 1, "failed", &t);
	assert_int_equal(itest_count(&t, "step.failed"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 2);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[0]), 1);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[1]), 0);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[2]), 1);

	/* The consumer goes; the retried step removes the last one. */
	assert_int_equal(broker_cancel(consumer, err, sizeof(err)), 0);
	broker_close(consumer);
	remove_old_then_run("retry", 0, "succeeded", &t);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	for (int s = 0; s < 3; s++)
		assert_int_equal(itest_count_named(&t, "old.queue_removed", name[s]), 1);
	/* The retry found the first two gone: already recorded, not again. */
	assert_int_equal(itest_count(&t, "old.queue_gone"), 0);
	assert_int_equal(itest_cutover("history", "--db", icut_db, "--verify", NULL), 0);
	icut_end(p, &c);
}

#define INTERVAL_MS 20	/* the plan's watch.interval in the test that waits */

/* The waiting entry of queue NAME in remove_old's result J: when that
 * run began (its at_ms), or -1. */
static int64_t
run_began(const json_t *j, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(j, "entries"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "outcome")), "waiting") == 0)
			return json_integer_value(json_object_get(e, "at_ms"));
	return -1;
}

/* While remove_old (step 7) waits for queue NAME, its runs, as their
 * results show them one after another: each says when the next is
 * (again_after_ms: watch.interval, INTERVAL_MS, or twenty times the run's
 * own time when that is longer), and the next does not begin sooner. At least two
 * runs seen, the step still running when this returns or not. */
static void
runs_spaced(const char *name)
{
	struct store_step st;
	json_t *j;
	int64_t began, last = -1, after = -1, elapsed = -1;
	int runs = 0;

	for (int tries = 0; tries < 600; tries++) {
		itest_sleep_ms(20);
		if (icut_read_step(6, &st) != 0)
			continue;
		if (st.result_json == NULL || strcmp(st.status, "running") != 0) {
			bool over = strcmp(st.status, "running") != 0;

			store_step_clear(&st);
			if (over)
				break;
			continue;
		}
		j = json_loads(st.result_json, 0, NULL);
		store_step_clear(&st);
		began = run_began(j, name);
		if (began > last && began >= 0) {
			if (last >= 0)
				/* 5 ms: the wall clock's steps against the engine's
				 * monotonic one. */
				assert_true(began - last >= after - 5);
			last = began;
			elapsed = json_integer_value(json_object_get(j, "elapsed_ms"));
			after = json_integer_value(json_object_get(j, "again_after_ms"));
			assert_true(after >= INTERVAL_MS);
			assert_true(after >= 20 * elapsed);
			runs++;
		}
		json_decref(j);
		if (runs >= 4)
			break;
	}
	assert_true(runs >= 2);
}

/* Through the engine: the watch ends and records its last sample of each
 * old queue; while remove_old waits at its gate, a message goes into old
 * queue 2 and out again. The old path was used after the watch: remove_old
 * deletes the other two and makes that one wait its TTL again from then
 * (the step's result says so while it runs, and the run says what it waits
 * for; its runs while it waits are spaced as each one says); with nothing
 * more published, it goes too and the plan succeeds, without anyone
 * acting. */
static void
test_publish_at_the_remove_gate_waits_for_the_queue(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_delivery d;
	struct broker_queue_info qi;
	struct store_step st;
	json_t *j = NULL, *q = NULL;
	const json_t *e, *found = NULL;
	const char *why;
	char err[1024], name[160], path[256], status[32];
	size_t i;
	int tries;
	pid_t pid;

	(void)state;
	/* Short, so that twenty times a run's time is longer. */
	icut_interval = "20ms";	/* INTERVAL_MS */
	icut_begin("gatepub", &p, &c, NULL, "1s");
	snprintf(name, sizeof(name), "%s.old.2", icut_prefix);
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	icut_publish_old(&c, name);
	assert_int_equal(broker_get(c.amqp, name, false, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	/* The statistics show it: 3 publishes before the flip, now 4. */
	snprintf(path, sizeof(path), "/api/queues/%%2F/%s", name);
	for (tries = 0; ; tries++) {
		assert_int_equal(mgmt_request(c.mgmt, "GET", path, NULL, &q, NULL, err,
		    sizeof(err)), 0);
		if (json_integer_value(json_object_get(json_object_get(q, "message_stats"),
		    "publish")) == 4)
			break;
		json_decref(q);
		if (tries == 120)
			fail_msg("the statistics never counted the publish into %s", name);
		itest_sleep_ms(500);
	}
	json_decref(q);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	pid = itest_start_run(icut_db, icut_planfile, NULL);
	for (tries = 0; found == NULL; tries++) {
		if (tries == 600)
			fail_msg("remove_old never said it waits for %s", name);
		itest_sleep_ms(100);
		if (icut_read_step(6, &st) != 0 || st.result_json == NULL ||
		    strcmp(st.status, "running") != 0) {
			store_step_clear(&st);
			continue;
		}
		json_decref(j);
		j = json_loads(st.result_json, 0, NULL);
		store_step_clear(&st);
		json_array_foreach(json_object_get(j, "entries"), i, e)
			if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0 &&
			    strcmp(json_string_value(json_object_get(e, "outcome")),
			    "waiting") == 0)
				found = e;
	}
	/* The run that saw the publish says so; a later one, that the wait is
	 * for it (the poll may come after the first). */
	why = json_string_value(json_object_get(found, "reason"));
	if (strstr(why, "1 publish into it since the watch's last sample") == NULL &&
	    strstr(why, "(a publish into it seen, + TTL + allowance") == NULL)
		fail_msg("%s waits, but not for the publish: %s", name, why);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"),
	    "removed")), 2);
	json_decref(j);
	runs_spaced(name);
	assert_int_equal(itest_wait(pid), 0);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name), 1);
	assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	/* The measure's queues and remove_old's entries are kept a row
	 * each, and read back whole. */
	assert_int_equal(icut_rows_held(0), 3);
	assert_int_equal(icut_read_step(0, &st), 0);
	j = json_loads(st.result_json, 0, NULL);
	store_step_clear(&st);
	assert_int_equal(json_array_size(json_object_get(j, "queues")), 3);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "summary"),
	    "queues")), 3);
	json_decref(j);
	assert_int_equal(icut_rows_held(6), 3);
	assert_int_equal(icut_read_step(6, &st), 0);
	j = json_loads(st.result_json, 0, NULL);
	store_step_clear(&st);
	assert_int_equal(json_array_size(json_object_get(j, "entries")), 3);
	json_array_foreach(json_object_get(j, "entries"), i, e)
		assert_string_equal(json_string_value(json_object_get(e, "outcome")),
		    "removed");
	json_decref(j);
	icut_end(p, &c);
}

ITEST_MAIN(icut_main,
	cmocka_unit_test(test_removals_recorded_when_one_is_left),
	cmocka_unit_test(test_publish_at_the_remove_gate_waits_for_the_queue))
