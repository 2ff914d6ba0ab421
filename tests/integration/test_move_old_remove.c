/* test_move_old_remove (integration): remove_old after move_old: an emptied
 * queue deleted early, what was left kept, a queue published into kept, a
 * queue fed by one the move did not cover waits for its feeder. */
#include "itest_move_old.h"

/* ---- remove_old after move_old ---- */

/* Waits (60 s at most: the statistics lag) until old queue NAMES[i]'s
 * publish counter reads PUBLISH[i], for each of the N. */
static void
await_publishes(const char *const *names, const int64_t *publish, size_t n)
{
	int64_t until = clock_mono_ms() + 60 * SEC;
	char err[1024];

	for (;;) {
		struct old_counters oc = { 0 };
		size_t ok = 0;

		if (old_counters_read(&imove_ctx, &oc, err, sizeof(err)) != 0)
			fail_msg("reading the counters: %s", err);
		for (size_t i = 0; i < n; i++) {
			const struct old_counter *k = old_counters_find(&oc, names[i]);

			ok += k != NULL && k->publish == publish[i];
		}
		old_counters_free(&oc);
		if (ok == n)
			return;
		if (clock_mono_ms() > until)
			fail_msg("the publish counters never reached what was published");
		usleep(200 * 1000);
	}
}

/* One message BODY into old queue Q and straight out again, as a producer
 * still using it and its consumer would; then waits (await_publishes)
 * until Q's publish counter reads PUBLISHED. */
static void
in_and_out(const char *q, const char *body, int64_t published)
{
	struct broker_delivery d = { 0 };
	char err[1024];

	imove_put(q, body, (uint64_t)(clock_now_ms() / 1000), 0, NULL, 0);
	if (broker_get(imove_ctx.amqp, q, false, &d, err, sizeof(err)) != 0)
		fail_msg("taking '%s' back out of %s: %s", body, q, err);
	broker_delivery_free(&d);
	await_publishes(&q, &published, 1);
}

/* The watch's last sample, as its state has it, of queues NAMES[i] with
 * publish counters PUBLISH[i] (once the statistics show them). */
static json_t *
watch_sample(const char *const *names, const int64_t *publish, size_t n)
{
	json_t *qs = json_array();

	await_publishes(names, publish, n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(qs, json_pack("{s:s,s:I,s:I}", "name", names[i],
		    "publish", (json_int_t)publish[i], "messages",
		    (json_int_t)imove_depth(names[i])));
	return json_pack("{s:{s:I,s:o}}", "old_last", "at_ms",
	    (json_int_t)clock_now_ms(), "queues", qs);
}

/* Runs remove_old (old_remove: the step less its flag check; a dry run
 * when DRY) with the move's result MOVED, MEASURED and the watch's
 * WATCHED, the watch's last entry being the flip unless the test set one
 * (nothing entered the old path after it). Returns its result; *RC its
 * return. */
static json_t *
remove_run(const json_t *measured, const json_t *moved, const json_t *watched,
    bool dry, int *rc)
{
	const struct old_remove_opts o = { .dry_run = dry };
	json_t *r = NULL;
	char err[4096];

	imove_ctx.measured = measured;
	imove_ctx.moved = moved;
	imove_ctx.watched = watched;
	if (imove_ctx.old_last_entry_ms == 0)
		imove_ctx.old_last_entry_ms = imove_ctx.flip_ms;
	*rc = old_remove(&imove_ctx, &o, &r, err, sizeof(err));
	if (*rc != 0)
		fprintf(stderr, "remove_old: %s\n", err);
	return r;
}

static json_t *
remove_after(const json_t *measured, const json_t *moved, const json_t *watched,
    int *rc)
{
	return remove_run(measured, moved, watched, false, rc);
}

static const json_t *
removal_of(const json_t *r, const char *name)
{
	return imove_entry_in(r, "entries", name);
}

static const char *
text_of(const json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(e, key));

	return s != NULL ? s : "";
}

/* The entry of old queue NAME in remove_old's result R, which must have
 * OUTCOME and a reason that says REASON; fails the test, naming what it
 * has, otherwise. */
static const json_t *
expect_removal(const json_t *r, const char *name, const char *outcome, const char *reason)
{
	const json_t *e = removal_of(r, name);

	if (strcmp(text_of(e, "outcome"), outcome) != 0 ||
	    strstr(text_of(e, "reason"), reason) == NULL)
		fail_msg("%s: %s (%s), not %s saying '%s'", name, text_of(e, "outcome"),
		    text_of(e, "reason"), outcome, reason);
	return e;
}

static bool
queue_exists(const char *q)
{
	struct broker_queue_info qi = { 0 };
	char err[1024];
	int r = broker_queue_inspect(imove_ctx.amqp, q, &qi, err, sizeof(err));

	if (r != 0 && r != BROKER_NOT_FOUND)
		fail_msg("inspecting %s: %s", q, err);
	return r == 0;
}

/* Waits until the clock is past MS (ceiling: 60 s past it). */
static void
await_clock(int64_t ms)
{
	int64_t ceiling = clock_mono_ms() + (ms - clock_now_ms()) + 60 * SEC;

	while (clock_now_ms() <= ms) {
		if (clock_mono_ms() > ceiling)
			fail_msg("the clock never passed %lld", (long long)ms);
		usleep(100 * 1000);
	}
}

/* A test plan (entry times from the timestamp) with one 10-minute old
 * queue Q holding N messages stamped AGO_S[i] seconds ago, measured, then
 * moved: *M measure_horizon's result, *R move_old's. */
static void
start_moved(const char *q, const int64_t *ago_s, size_t n, json_t **m, json_t **r)
{
	int64_t t_s;
	char body[64];

	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "1m");
	imove_old_queue(q, 10 * MIN, DEST);
	t_s = clock_now_ms() / 1000;
	for (size_t i = 0; i < n; i++) {
		snprintf(body, sizeof(body), "%s-%zu", q, i);
		imove_put(q, body, (uint64_t)(t_s - ago_s[i]), 0, NULL, 0);
	}
	*m = imove_measure();
	*r = imove_move();
}

/* The move left nothing in a 10-minute queue: remove_old deletes it once
 * the last pass + the allowance are over, long before last entry + its
 * TTL + allowance. */
static void
test_remove_after_move_deletes_an_emptied_queue(void **state)
{
	static const char *const names[] = { "old.ra.10m" };
	const int64_t pub[] = { 2 };
	json_t *m, *r, *w, *rr;
	const json_t *e;
	int64_t old_deadline;
	int rc;

	(void)state;
	start_moved("old.ra.10m", (const int64_t[]){ 590, 595 }, 2, &m, &r);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ra.10m"), "moved"), 2);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.ra.10m"), "left"), 0);
	w = watch_sample(names, pub, 1);
	old_deadline = imove_ctx.flip_ms + 10 * MIN + imove_plan->watch.allowance_ms;
	await_clock(imove_count_of(r, "pass_started_ms") + imove_plan->watch.allowance_ms);
	/* The dry run (the step's preview) says so, and why. */
	rr = remove_run(m, r, w, true, &rc);
	e = removal_of(rr, "old.ra.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "would_remove");
	assert_non_null(strstr(text_of(e, "deadline_why"), "move_old's last pass"));
	assert_non_null(strstr(text_of(e, "reason"), "its deadline: "));
	assert_non_null(strstr(text_of(e, "reason"), "move_old's last pass"));
	assert_true(queue_exists("old.ra.10m"));
	json_decref(rr);
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.ra.10m");
	fprintf(stderr, "old.ra.10m: %s: %s\n", text_of(e, "outcome"),
	    text_of(e, "reason"));
	assert_true(clock_now_ms() < old_deadline);
	assert_string_equal(text_of(e, "outcome"), "removed");
	assert_int_equal(rc, 0);
	assert_false(queue_exists("old.ra.10m"));
	assert_true(imove_count_of(e, "deadline_ms") == imove_count_of(r, "pass_started_ms") +
	    imove_plan->watch.allowance_ms);
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* The move left a message (its remaining delay beyond the ladder): the
 * queue is kept until its not-before + the allowance, and past that still
 * kept while it holds the message. */
static void
test_remove_after_move_keeps_what_was_left(void **state)
{
	static const char *const names[] = { "old.rl.10m" };
	const int64_t pub[] = { 2 };
	json_t *m, *r, *w, *rr, *rr2;
	const json_t *e;
	int64_t t_s = clock_now_ms() / 1000, until;
	int rc;

	(void)state;
	start_moved("old.rl.10m", (const int64_t[]){ 590, 0 }, 2, &m, &r);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.rl.10m"), "moved"), 1);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.rl.10m"), "left"), 1);
	until = imove_count_of(imove_queue_entry(r, "old.rl.10m"), "left_until_ms");
	assert_true(until >= (t_s + 1) * 1000 + 10 * MIN - 1000);
	imove_wait_depth("old.rl.10m", 1);
	w = watch_sample(names, pub, 1);
	imove_ctx.again = false;
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rl.10m");
	assert_int_equal(rc, 0);
	assert_true(imove_ctx.again);		/* a wait time resolves: the step goes on */
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_int_equal(imove_count_of(e, "deadline_ms"), until + imove_plan->watch.allowance_ms);
	assert_non_null(strstr(text_of(e, "reason"), "not yet past its deadline"));
	assert_true(queue_exists("old.rl.10m"));
	assert_int_equal(imove_depth("old.rl.10m"), 1);
	json_decref(rr);
	/* Past that deadline (the step's clock moved on), it still holds the
	 * message: it waits its TTL once more, and then, still holding it,
	 * is left for a person, with the step failing. */
	imove_ctx.now_ms = until + imove_plan->watch.allowance_ms + SEC;
	rr = remove_after(m, r, w, &rc);
	assert_int_equal(rc, 0);
	e = expect_removal(rr, "old.rl.10m", "waiting", "holds 1 message");
	imove_ctx.state = rr;
	imove_ctx.now_ms += 10 * MIN + imove_plan->watch.allowance_ms + SEC;
	imove_ctx.again = false;
	rr2 = remove_after(m, r, w, &rc);
	imove_ctx.now_ms = 0;
	imove_ctx.state = NULL;
	e = removal_of(rr2, "old.rl.10m");
	assert_int_not_equal(rc, 0);
	assert_false(imove_ctx.again);
	assert_string_equal(text_of(e, "outcome"), "left");
	assert_non_null(strstr(text_of(e, "reason"), "after waiting its TTL once more"));
	assert_int_equal(imove_depth("old.rl.10m"), 1);
	json_decref(rr2);
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* A publish into an emptied old queue after the move (and after the
 * watch's last sample) keeps it: its counter moved. And when the watch
 * saw something enter the old path after the last pass, the queue keeps
 * its old deadline (last entry + TTL + allowance), as the watch does. */
static void
test_remove_after_move_keeps_a_queue_published_into(void **state)
{
	static const char *const names[] = { "old.rp.10m" };
	int64_t pub[] = { 1 };
	json_t *m, *r, *w, *rr, *rr2;
	const json_t *e;
	int rc;

	(void)state;
	start_moved("old.rp.10m", (const int64_t[]){ 590 }, 1, &m, &r);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.rp.10m"), "left"), 0);
	w = watch_sample(names, pub, 1);
	await_clock(imove_count_of(r, "pass_started_ms") + imove_plan->watch.allowance_ms);
	/* After the watch's last sample: one message in and out. */
	in_and_out("old.rp.10m", "rp-late", 2);
	rr = remove_after(m, r, w, &rc);
	assert_int_equal(rc, 0);
	e = expect_removal(rr, "old.rp.10m", "waiting", "since the watch's last sample");
	assert_non_null(strstr(text_of(e, "reason"), "now + its TTL + allowance"));
	assert_true(queue_exists("old.rp.10m"));
	/* Published into again after that wait began: a producer still uses
	 * it, which a person must see to: left, the step fails. */
	imove_ctx.state = rr;
	in_and_out("old.rp.10m", "rp-later", 3);
	rr2 = remove_after(m, r, w, &rc);
	imove_ctx.state = NULL;
	assert_int_not_equal(rc, 0);
	e = expect_removal(rr2, "old.rp.10m", "left", "switch it to the ladder");
	assert_true(queue_exists("old.rp.10m"));
	json_decref(rr2);
	json_decref(rr);
	json_decref(w);
	/* The watch saw that publish (its last entry after the pass): the
	 * old deadline again. */
	pub[0] = 3;
	w = watch_sample(names, pub, 1);
	imove_ctx.old_last_entry_ms = clock_now_ms();
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rp.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_int_equal(imove_count_of(e, "deadline_ms"), imove_ctx.old_last_entry_ms + 10 * MIN +
	    imove_plan->watch.allowance_ms);
	assert_non_null(strstr(text_of(e, "reason"), "not yet past its deadline"));
	assert_true(queue_exists("old.rp.10m"));
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* A queue the move emptied, fed by an old queue the move did not cover
 * (declared after it, holding a message): the feeder keeps its old
 * deadline and the fed queue waits for it. */
static void
test_remove_after_move_waits_for_the_feeder(void **state)
{
	static const char *const names[] = { "old.rx.10m", "old.ry.10m" };
	const int64_t pub[] = { 1, 1 };
	json_t *m, *r, *w, *rr;
	const json_t *e;
	int rc;

	(void)state;
	start_moved("old.rx.10m", (const int64_t[]){ 590 }, 1, &m, &r);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "old.rx.10m"), "left"), 0);
	imove_old_queue("old.ry.10m", 10 * MIN, "old.rx.10m");
	imove_put("old.ry.10m", "ry-1", (uint64_t)(clock_now_ms() / 1000), 0, NULL, 0);
	json_decref(m);
	m = imove_measure();
	w = watch_sample(names, pub, 2);
	await_clock(imove_count_of(r, "pass_started_ms") + imove_plan->watch.allowance_ms);
	rr = remove_after(m, r, w, &rc);
	assert_int_equal(rc, 0);
	e = removal_of(rr, "old.ry.10m");
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_true(queue_exists("old.ry.10m"));
	e = removal_of(rr, "old.rx.10m");
	fprintf(stderr, "old.rx.10m: %s: %s\n", text_of(e, "outcome"),
	    text_of(e, "reason"));
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_non_null(strstr(text_of(e, "reason"), "old.ry.10m"));
	assert_true(queue_exists("old.rx.10m"));
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_deletes_an_emptied_queue, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_keeps_what_was_left, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_keeps_a_queue_published_into, imove_setup,
		    imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_waits_for_the_feeder, imove_setup, imove_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
