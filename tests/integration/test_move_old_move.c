/* test_move_old_move (integration): move_old moving old queues onto the
 * ladder: never early, what cannot go left where it was, a target no
 * destination reaches refused, a returned publish leaving the message, a
 * queue taken from a consumer keeping what stays, and a resume where it
 * was. */
#include "itest_move_old.h"

/* Consumes DEST until every message expected to move has arrived (within
 * CEILING_MS), checking each: expected, never early, intact. */
static void
receive_all(int64_t ceiling_ms)
{
	int64_t until = clock_mono_ms() + ceiling_ms;
	size_t want = 0, got = 0;
	char err[1024];

	for (size_t i = 0; i < imove_nsent; i++)
		want += imove_sent[i].not_before_ms != 0;
	assert_int_equal(broker_consume(imove_ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	while (got < want && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		const struct broker_header *h;
		int64_t at;
		size_t i;

		if (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		at = clock_now_ms();
		for (i = 0; i < imove_nsent && strcmp(imove_sent[i].body, d.body) != 0; i++)
			;
		if (i == imove_nsent || imove_sent[i].arrived)
			fail_msg("message '%s' arrived and was not expected (or twice)", d.body);
		if (imove_sent[i].not_before_ms == 0) {
			/* Left: it drains through its old queue, never moved. */
			assert_null(broker_header_find(&d, "x-cutover-moved-from"));
			assert_true(d.ndeaths > 0);
			assert_string_equal(d.deaths[d.ndeaths - 1].queue, imove_sent[i].queue);
			imove_sent[i].arrived = true;
			assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
			broker_delivery_free(&d);
			continue;
		}
		if (at < imove_sent[i].not_before_ms)
			fail_msg("message '%s' from %s arrived %lld ms early", d.body,
			    imove_sent[i].queue, (long long)(imove_sent[i].not_before_ms - at));
		h = broker_header_find(&d, "x-app");
		assert_non_null(h);
		assert_string_equal(h->str, d.body);
		assert_string_equal(d.message_id, d.body);
		assert_string_equal(d.content_type, "text/plain");
		h = broker_header_find(&d, "x-cutover-moved-from");
		assert_non_null(h);
		assert_string_equal(h->str, imove_sent[i].queue);
		/* The step's not-before is the test's (stamped) or later
		 * (unknown: from the move's own clock). */
		h = broker_header_find(&d, "x-cutover-not-before");
		assert_non_null(h);
		assert_true(h->num >= imove_sent[i].not_before_ms);
		/* The ladder's own x-death (levels waited in) only: never the
		 * old queues'. */
		for (size_t k = 0; k < d.ndeaths; k++) {
			assert_null(strstr(d.deaths[k].queue, "old."));
			assert_null(strstr(d.deaths[k].queue, "pre."));
		}
		imove_sent[i].arrived = true;
		got++;
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	for (size_t i = 0; i < imove_nsent; i++)
		if (imove_sent[i].not_before_ms != 0 && !imove_sent[i].arrived)
			fail_msg("message '%s' from %s never arrived", imove_sent[i].body,
			    imove_sent[i].queue);
}

/* Old queues of every kind: what goes arrives never early, what cannot
 * stays where it was. */
static void
test_moves_never_early_and_leaves_the_rest(void **state)
{
	int64_t now, t_s;
	char rfc[40], body[32];
	json_t *r;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.ts\\.' }, from: timestamp }\n"
	    "    - { queues: { match: '^old\\.hdr' }, from: header, header: x-sent-at }\n"
	    "    - { queues: { match: '^old\\.long' }, from: timestamp }\n", "8s");
	imove_old_queue("old.ts.12s", 12 * SEC, DEST);
	imove_old_queue("old.hdr.10s", 10 * SEC, DEST);
	imove_old_queue("old.unk.6s", 6 * SEC, DEST);
	imove_old_queue("old.unk.10m", 10 * MIN, DEST);
	imove_old_queue("old.long.10m", 10 * MIN, DEST);
	/* A pre-queue that dead-letters into old.ts.12s at once: what it
	 * sends on carries x-death. */
	{
		struct topology_arg a[3];
		char err[512];

		itest_arg_int(&a[0], "x-message-ttl", 1);
		itest_arg_str(&a[1], "x-dead-letter-exchange", "");
		itest_arg_str(&a[2], "x-dead-letter-routing-key", "old.ts.12s");
		assert_int_equal(broker_queue_declare(imove_ctx.amqp, "pre.1ms", true, a, 3,
		    err, sizeof(err)), 0);
	}
	now = clock_now_ms();
	t_s = now / 1000;
	/* Stamped with the timestamp: not before the end of its second + TTL. */
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "ts-%d", i);
		imove_put("old.ts.12s", body, (uint64_t)t_s, 0, NULL, (t_s + 1) * 1000 + 12 * SEC);
	}
	imove_put("pre.1ms", "ts-dead", (uint64_t)t_s, 0, NULL, (t_s + 1) * 1000 + 12 * SEC);
	imove_sent[imove_nsent - 1].queue = "old.ts.12s";	/* where it waits */
	/* Unstamped in a timestamp queue whose TTL (12 s) is over the bound (8 s). */
	imove_put("old.ts.12s", "ts-none", 0, 0, NULL, 0);
	/* Header stamps, ms and RFC 3339 (2 s ago). */
	imove_put("old.hdr.10s", "hdr-ms", 0, now - 1500, NULL, now - 1500 + 10 * SEC);
	old_time_format((now / 1000 - 2) * 1000, rfc, sizeof(rfc));
	imove_put("old.hdr.10s", "hdr-rfc", 0, 0, rfc, (now / 1000 - 2) * 1000 + 10 * SEC);
	/* Unknown, TTL within the bound: the full TTL from the move. The
	 * move's clock is later than NOW: NOW + TTL is a floor. */
	imove_put("old.unk.6s", "unk-short", 0, 0, NULL, now + 6 * SEC);
	/* Unknown over the bound: the queue is not touched. */
	imove_put("old.unk.10m", "unk-long-1", 0, 0, NULL, 0);
	imove_put("old.unk.10m", "unk-long-2", 0, 0, NULL, 0);
	/* Beyond the ladder's 127 s: left; one stamped 9 min 50 s ago goes. */
	imove_put("old.long.10m", "long-1", (uint64_t)t_s, 0, NULL, 0);
	imove_put("old.long.10m", "long-2", (uint64_t)t_s, 0, NULL, 0);
	imove_put("old.long.10m", "long-old", (uint64_t)(t_s - 590), 0, NULL,
	    (t_s - 589) * 1000 + 10 * MIN);
	/* The pre-queue's message has moved on into old.ts.12s. */
	for (int64_t until = clock_mono_ms() + 30 * SEC; imove_depth("old.ts.12s") < 5; ) {
		if (clock_mono_ms() > until)
			fail_msg("the dead-lettered message never reached old.ts.12s");
		usleep(50 * 1000);
	}

	r = imove_move();
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ts.12s"), "moved"), 4);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ts.12s"), "left"), 1);
	assert_int_equal(imove_count_of(json_object_get(imove_queue_entry(r, "old.ts.12s"),
	    "left_why"), "unknown_entry"), 1);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.hdr.10s"), "moved"), 2);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.unk.6s"), "moved"), 1);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.unk.10m"), "skipped"), 2);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.long.10m"), "moved"), 1);
	assert_int_equal(imove_count_of(json_object_get(imove_queue_entry(r, "old.long.10m"),
	    "left_why"), "too_long"), 2);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "moved"), 8);
	assert_true(json_is_true(json_object_get(r, "ok")));
	/* Every message of the queues it passed was taken once (the skipped
	 * queue's two were not), and nothing remains to take. */
	assert_int_equal(imove_count_of(json_object_get(r, "progress"), "taken"), 11);
	assert_int_equal(imove_count_of(json_object_get(r, "progress"), "remaining"), 0);
	assert_int_equal(imove_count_of(json_object_get(r, "progress"), "eta_ms"), 0);
	/* What stayed is still in its old queue, right away. */
	imove_wait_depth("old.ts.12s", 1);
	assert_int_equal(imove_depth("old.hdr.10s"), 0);
	assert_int_equal(imove_depth("old.unk.6s"), 0);
	assert_int_equal(imove_depth("old.unk.10m"), 2);
	imove_wait_depth("old.long.10m", 2);
	/* The horizon left: the latest of what stayed (10 min from now),
	 * below the old one. */
	assert_true(imove_count_of(r, "horizon_ms") >= now + 10 * MIN);
	json_decref(r);
	receive_all(60 * SEC);
}

/* A queue whose dead-letter target no destination reaches: the step
 * refuses, naming it and its target, and moves nothing anywhere. */
static void
test_refuses_a_target_without_destination(void **state)
{
	json_t *r = NULL;
	char err[2048];

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	imove_old_queue("old.good.5s", 5 * SEC, DEST);
	imove_old_queue("old.lost.5s", 5 * SEC, "nowhere.queue");
	imove_put("old.good.5s", "good", 0, 0, NULL, 0);
	imove_put("old.lost.5s", "lost", 0, 0, NULL, 0);
	imove_ctx.flip_ms = clock_now_ms() - 10 * SEC;
	assert_int_equal(step_move_old(&imove_ctx, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "old.lost.5s"));
	assert_non_null(strstr(err, "nowhere.queue"));
	assert_null(strstr(err, "old.good.5s"));
	assert_int_equal(imove_depth("old.good.5s"), 1);
	assert_int_equal(imove_depth("old.lost.5s"), 1);
	json_decref(r);
}

/* A publish the ladder returns (its level queues gone): the messages stay
 * in the old queue; once the ladder is back, they move. */
static void
test_returned_publish_leaves_the_message(void **state)
{
	char name[LADDER_NAME_MAX], err[1024];
	json_t *r;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	imove_old_queue("old.ret.20s", 20 * SEC, DEST);
	imove_put("old.ret.20s", "ret-1", 0, 0, NULL, 0);
	imove_put("old.ret.20s", "ret-2", 0, 0, NULL, 0);
	for (int k = 0; k < imove_plan->ladder.levels; k++)
		assert_int_equal(broker_queue_delete(imove_ctx.amqp, ladder_level_queue(
		    &imove_plan->ladder, k, name, sizeof(name)), 0, NULL, err, sizeof(err)), 0);
	r = imove_move();
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ret.20s"), "moved"), 0);
	assert_int_equal(imove_count_of(json_object_get(imove_queue_entry(r, "old.ret.20s"),
	    "left_why"), "not_confirmed"), 2);
	imove_wait_depth("old.ret.20s", 2);
	json_decref(r);
	assert_int_equal(step_declare_ladder(&imove_ctx, &r, err, sizeof(err)), 0);
	json_decref(r);
	r = imove_move();
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ret.20s"), "moved"), 2);
	assert_int_equal(imove_depth("old.ret.20s"), 0);
	json_decref(r);
}

/* A queue of more than two batches (move_old.prefetch 4): taken with gets,
 * then from a consumer (a window of 8), messages that stay among those
 * that go. Each that stays is held unacked until the pass ends: a batch's
 * acks, one multiple ack where they can, never reach it; the consumer
 * stops at the first one held, and what it had delivered is examined, not
 * given back. Every message is taken once, what goes moves, what stays is
 * still in its old queue. */
static void
test_consumer_keeps_what_stays(void **state)
{
	int64_t t_s = clock_now_ms() / 1000;
	int left = 0, go = 0;
	char body[32];
	const json_t *e;
	json_t *r;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.long' }, from: timestamp }\n", "8s");
	imove_old_queue("old.long.10m", 10 * MIN, DEST);
	for (int i = 0; i < 30; i++) {
		/* Stamped now, it owes 10 min, beyond the ladder's 127 s. */
		if (i >= 8 && i % 3 == 0) {
			snprintf(body, sizeof(body), "stay-%d", i);
			imove_put("old.long.10m", body, (uint64_t)t_s, 0, NULL, 0);
			left++;
			continue;
		}
		snprintf(body, sizeof(body), "go-%d", i);
		imove_put("old.long.10m", body, (uint64_t)(t_s - 590), 0, NULL,
		    (t_s - 589) * 1000 + 10 * MIN);
		go++;
	}
	imove_wait_depth("old.long.10m", 30);
	r = imove_move();
	e = imove_queue_entry(r, "old.long.10m");
	assert_int_equal(imove_count_of(e, "moved"), go);
	assert_int_equal(imove_count_of(e, "left"), left);
	assert_int_equal(imove_count_of(json_object_get(e, "left_why"), "too_long"), left);
	assert_int_equal(imove_count_of(e, "may_duplicate"), 0);
	assert_int_equal(imove_count_of(json_object_get(r, "progress"), "taken"), 30);
	imove_wait_depth("old.long.10m", (uint32_t)left);
	json_decref(r);
	receive_all(60 * SEC);
}

/* Resumed with the state of a run killed after its pass finished one
 * queue: that queue is not passed again, its count is kept, the other
 * queue is moved; resumed before the stragglers' window is over, it asks
 * to be called again. */
static void
test_resumes_where_it_was(void **state)
{
	json_t *r = NULL, *st;
	char err[2048];

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	imove_old_queue("old.a.5s", 5 * SEC, DEST);
	imove_old_queue("old.b.5s", 5 * SEC, DEST);
	imove_put("old.a.5s", "a-1", 0, 0, NULL, 0);
	imove_put("old.b.5s", "b-1", 0, 0, NULL, clock_now_ms() + 5 * SEC);
	st = json_pack("{s:b,s:I,s:I,s:[{s:s,s:I,s:I,s:I,s:I}]}", "ok", 0,
	    "pass", (json_int_t)1, "pass_started_ms", (json_int_t)clock_now_ms(),
	    "queues", "name", "old.a.5s", "moved", (json_int_t)7, "left",
	    (json_int_t)0, "skipped", (json_int_t)0, "pass_done", (json_int_t)1);
	imove_ctx.state = st;
	r = imove_move();
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.a.5s"), "moved"), 7);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.b.5s"), "moved"), 1);
	imove_wait_depth("old.a.5s", 1);
	assert_int_equal(imove_depth("old.b.5s"), 0);
	json_decref(r);
	imove_sent[0].not_before_ms = clock_now_ms() + 5 * SEC;
	/* Within the stragglers' window: one pass, then "call me again". */
	imove_ctx.flip_ms = clock_now_ms();
	imove_ctx.state = NULL;
	imove_ctx.again = false;
	assert_int_equal(step_move_old(&imove_ctx, &r, err, sizeof(err)), 0);
	assert_true(imove_ctx.again);
	assert_int_equal(imove_count_of(r, "pass"), 2);
	assert_int_equal(imove_depth("old.a.5s"), 0);
	/* Called again before the window is over (the engine does, each
	 * watch.interval): nothing yet, and "call me again", not a failure. */
	imove_ctx.state = r;
	imove_ctx.again = false;
	imove_ctx.flip_ms = clock_now_ms();
	{
		json_t *r2 = NULL;

		assert_int_equal(step_move_old(&imove_ctx, &r2, err, sizeof(err)), 0);
		assert_true(imove_ctx.again);
		assert_int_equal(imove_count_of(r2, "pass"), 2);
		json_decref(r2);
	}
	imove_ctx.state = NULL;
	json_decref(st);
	json_decref(r);
	receive_all(30 * SEC);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_moves_never_early_and_leaves_the_rest,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_refuses_a_target_without_destination,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_returned_publish_leaves_the_message,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_consumer_keeps_what_stays,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_resumes_where_it_was, imove_setup,
		    imove_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
