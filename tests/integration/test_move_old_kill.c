/* test_move_old_kill (integration): move_old killed and run again: the
 * first sighting of what is left and of what moves kept, and a kill after
 * the confirm counting and marking duplicates. */
#include "itest_move_old.h"

/* ---- killed and started again ---- */

/* The state a run killed while it passed queue Q had persisted: R (a
 * finished run's result) with Q's pass not done and the step not over.
 * The broker has given back what the killed run held unacked. */
static json_t *
killed_in(const json_t *r, const char *q)
{
	json_t *st = json_deep_copy(r);

	json_object_set_new(st, "ok", json_false());
	json_object_set_new((json_t *)imove_queue_entry(st, q), "pass_done", json_integer(0));
	return st;
}

/* A run killed while its pass held a queue's unstamped messages (entry
 * unknown, the queue's TTL over the bound: left), started again 74 s
 * later: they come back redelivered, and each entered no later than the
 * pass that first saw it, so what the move leaves is due by that sighting
 * + TTL, not by the restart + TTL; the horizon stays below the old
 * path's own (never worse than not moving) and never before the truth. */
static void
test_kill_keeps_the_first_sighting_of_what_is_left(void **state)
{
	json_t *m, *r1, *r2, *st, *list;
	const json_t *e;
	int64_t put_at, t1;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "5s");
	imove_old_queue("old.a.60s", 60 * SEC, DEST);
	imove_old_queue("old.k.20s", 20 * SEC, DEST);
	put_at = clock_now_ms();
	imove_put("old.a.60s", "a-1", (uint64_t)(put_at / 1000), 0, NULL,
	    (put_at / 1000 + 1) * 1000 + 60 * SEC);
	imove_put("old.k.20s", "k-1", 0, 0, NULL, 0);
	imove_put("old.k.20s", "k-2", 0, 0, NULL, 0);
	m = imove_measure();
	imove_ctx.measured = m;
	t1 = imove_ctx.now_ms = clock_now_ms();
	r1 = imove_move();
	e = imove_queue_entry(r1, "old.k.20s");
	assert_int_equal(imove_count_of(e, "left"), 2);
	assert_int_equal(imove_count_of(e, "left_until_ms"), t1 + 20 * SEC);
	imove_wait_depth("old.k.20s", 2);
	/* Killed as the pass of old.k.20s had taken both (old.a.60s done). */
	st = killed_in(r1, "old.k.20s");
	/* One sighting each (a-1's entry is known), and what a damaged state
	 * might hold besides: an earlier sighting of the same key never wins,
	 * what is not a sighting is dropped. */
	list = json_object_get(st, "seen");
	assert_int_equal(json_array_size(list), 2);
	for (size_t k = 0; k < 2; k++)
		json_array_append_new(list, json_pack("[O,I]", json_array_get(
		    json_array_get(list, k), 0), (json_int_t)(t1 - 50 * SEC)));
	json_array_append_new(list, json_string("junk"));
	json_array_append_new(list, json_pack("[s,I]", "short", (json_int_t)t1));
	imove_ctx.state = st;
	imove_ctx.now_ms = t1 + 74 * SEC;
	r2 = imove_move();
	imove_ctx.state = NULL;
	imove_ctx.now_ms = 0;
	e = imove_queue_entry(r2, "old.k.20s");
	fprintf(stderr, "after the restart: left %lld until %+lld ms from the first "
	    "pass; horizon %+lld ms, old horizon %+lld ms, saved %lld ms\n",
	    (long long)imove_count_of(e, "left"), (long long)(imove_count_of(e,
	    "left_until_ms") - t1), (long long)(imove_count_of(r2, "horizon_ms") - t1),
	    (long long)(imove_count_of(r2, "old_horizon_ms") - t1),
	    (long long)imove_count_of(r2, "saved_ms"));
	assert_int_equal(imove_count_of(e, "left"), 2);
	assert_int_equal(imove_count_of(json_object_get(e, "left_why"), "unknown_entry"), 2);
	/* Never before the truth: they entered before PUT_AT's moment ended. */
	assert_true(imove_count_of(e, "left_until_ms") >= put_at + 20 * SEC);
	/* The first sighting's, not the restart's. */
	assert_int_equal(imove_count_of(e, "left_until_ms"), t1 + 20 * SEC);
	assert_int_equal(imove_count_of(r2, "horizon_ms"), t1 + 20 * SEC +
	    imove_plan->watch.allowance_ms);
	assert_true(imove_count_of(r2, "old_horizon_ms") > imove_count_of(r2, "horizon_ms"));
	assert_true(imove_count_of(r2, "saved_ms") >= 20 * SEC);
	imove_wait_depth("old.k.20s", 2);
	json_decref(r2);
	json_decref(st);
	json_decref(r1);
	json_decref(m);
}

/* An unstamped message of a queue within the bound that could not go at
 * the first look (the ladder returned it) and goes at the next one, 3 s
 * later, after a restart: its not-before is the first look's + TTL, not
 * the second's, and it still arrives no earlier than it entered + TTL. */
static void
test_kill_keeps_the_first_sighting_of_what_moves(void **state)
{
	char name[LADDER_NAME_MAX], err[1024];
	const struct broker_header *h;
	struct broker_delivery d = { 0 };
	json_t *r1, *r2, *st;
	int64_t put_at, t1_end, until;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	imove_old_queue("old.u.15s", 15 * SEC, DEST);
	put_at = clock_now_ms();
	imove_put("old.u.15s", "u-1", 0, 0, NULL, put_at + 15 * SEC);
	for (int k = 0; k < imove_plan->ladder.levels; k++)
		assert_int_equal(broker_queue_delete(imove_ctx.amqp, ladder_level_queue(
		    &imove_plan->ladder, k, name, sizeof(name)), 0, NULL, err, sizeof(err)), 0);
	r1 = imove_move();
	t1_end = clock_now_ms();
	assert_int_equal(imove_count_of(json_object_get(imove_queue_entry(r1, "old.u.15s"),
	    "left_why"), "not_confirmed"), 1);
	imove_wait_depth("old.u.15s", 1);
	assert_int_equal(step_declare_ladder(&imove_ctx, &r2, err, sizeof(err)), 0);
	json_decref(r2);
	usleep(3000 * 1000);
	st = killed_in(r1, "old.u.15s");
	imove_ctx.state = st;
	r2 = imove_move();
	imove_ctx.state = NULL;
	assert_int_equal(imove_count_of(imove_queue_entry(r2, "old.u.15s"), "moved"), 1);
	assert_int_equal(broker_consume(imove_ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	until = clock_mono_ms() + 40 * SEC;
	while (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
		if (clock_mono_ms() > until)
			fail_msg("u-1 never arrived");
	assert_string_equal(d.body, "u-1");
	assert_true(clock_now_ms() >= put_at + 15 * SEC);
	h = broker_header_find(&d, "x-cutover-not-before");
	assert_non_null(h);
	fprintf(stderr, "u-1: not before %+lld ms from its publish; the first look "
	    "ended %+lld ms from it\n", (long long)(h->num - put_at),
	    (long long)(t1_end - put_at));
	assert_true(h->num >= put_at + 15 * SEC);
	assert_true(h->num <= t1_end + 15 * SEC);
	assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	json_decref(r2);
	json_decref(st);
	json_decref(r1);
}

/* A run killed after the ladder confirmed a batch and before the batch
 * was acked in its old queue (crash point move_old.confirmed, in a child
 * process): the broker gives the batch back and the run started again
 * (with the state the killed one persisted before it published: the
 * batch in flight) moves it a second time. Its result says how many may
 * be duplicated, and both copies of each message carry the same
 * x-cutover-move-id, so a consumer can drop the second; neither is early. */
static void
test_kill_after_confirm_counts_and_marks_duplicates(void **state)
{
	char body[32];
	int64_t now = clock_now_ms(), t_s = now / 1000;
	const int64_t due = (t_s + 1) * 1000 + 8 * SEC;
	const int64_t not_before[3] = { due, due, due };
	json_t *st, *r;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "1m");
	imove_old_queue("old.d.8s", 8 * SEC, DEST);
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "d-%d", i);
		imove_put("old.d.8s", body, (uint64_t)t_s, 0, NULL, due);
	}
	imove_crash_after_confirm(now);
	imove_wait_depth("old.d.8s", 3);
	st = json_pack("{s:b,s:I,s:I,s:[{s:s,s:I,s:I,s:I,s:I,s:I}]}", "ok", 0,
	    "pass", (json_int_t)1, "pass_started_ms", (json_int_t)now, "queues",
	    "name", "old.d.8s", "moved", (json_int_t)0, "left", (json_int_t)0,
	    "skipped", (json_int_t)0, "pass_done", (json_int_t)0, "in_flight",
	    (json_int_t)3);
	imove_ctx.state = st;
	r = imove_move();
	imove_ctx.state = NULL;
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.d.8s"), "moved"), 3);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.d.8s"), "may_duplicate"), 3);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "may_duplicate"), 3);
	assert_int_equal(imove_depth("old.d.8s"), 0);
	/* Each message twice, with one id. */
	imove_expect_twice_one_id(DEST, "d-", not_before);
	json_decref(r);
	json_decref(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_kill_keeps_the_first_sighting_of_what_is_left, imove_setup,
		    imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_kill_keeps_the_first_sighting_of_what_moves, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_kill_after_confirm_counts_and_marks_duplicates, imove_setup,
		    imove_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
