/* test_old_inputs: what the watch and remove_old read of
 * measure_horizon's and move_old's results: their queues as tables looked
 * up by name, and both results read once and kept across runs until
 * either step ends anew; and remove_old's table of the watch's last
 * sample. */

#include <string.h>

#include "cm.h"
#include "old_path.h"
#include "step.h"

/* A measure_horizon result of three queues (out of name order, one that
 * dead-letters into two others) and an entry without a name. */
static json_t *
measured_result(const char *first)
{
	return json_pack("{s:b,s:{s:I,s:s},s:[{s:s,s:s,s:[s,s]},{s:s,s:s,s:[]},"
	    "{s:s},{s:i}]}", "ok", 1, "summary", "max_ttl_ms", (json_int_t)60000,
	    "max_ttl_queue", first, "queues",
	    "name", first, "type", "classic", "dead_letters_to", "delay.b", "delay.a",
	    "name", "delay.a", "type", "quorum", "dead_letters_to",
	    "name", "delay.b",
	    "messages", 3);
}

/* The table holds every named queue in name order, its type (NULL when
 * none was recorded) and its dead-letter targets; the JSON it was read
 * from can go. */
static void
test_measured_table(void **state)
{
	struct old_measured m;
	const struct old_measured_queue *q;
	json_t *r = measured_result("delay.c");

	(void)state;
	assert_int_equal(old_measured_read(r, &m), 0);
	json_decref(r);
	assert_int_equal(m.n, 3);
	assert_string_equal(m.v[0].name, "delay.a");
	assert_string_equal(m.v[1].name, "delay.b");
	assert_string_equal(m.v[2].name, "delay.c");
	q = old_measured_find(&m, "delay.c");
	assert_non_null(q);
	assert_string_equal(q->type, "classic");
	assert_int_equal(q->nto, 2);
	assert_string_equal(q->to[0], "delay.b");
	assert_string_equal(q->to[1], "delay.a");
	q = old_measured_find(&m, "delay.a");
	assert_string_equal(q->type, "quorum");
	assert_int_equal(q->nto, 0);
	assert_null(old_measured_find(&m, "delay.b")->type);
	assert_null(old_measured_find(&m, "delay.d"));
	assert_null(old_measured_find(NULL, "delay.a"));
	old_measured_free(&m);
	assert_int_equal(old_measured_read(NULL, &m), 0);
	assert_int_equal(m.n, 0);
	assert_null(old_measured_find(&m, "delay.a"));
	old_measured_free(&m);
	/* No queue dead-letters into another: no targets at all. */
	r = json_pack("{s:[{s:s},{s:s,s:[]}]}", "queues", "name", "delay.y", "name",
	    "delay.x", "dead_letters_to");
	assert_int_equal(old_measured_read(r, &m), 0);
	json_decref(r);
	assert_int_equal(m.n, 2);
	assert_string_equal(m.v[0].name, "delay.x");
	assert_int_equal(old_measured_find(&m, "delay.y")->nto, 0);
	old_measured_free(&m);
}

/* The table keeps what remove_old weighs: each queue's TTL and its
 * chain's (-1 when none was recorded), the queues that feed it, apart
 * from those it feeds, and its place in the result's list. */
static void
test_measured_remove_fields(void **state)
{
	struct old_measured m;
	const struct old_measured_queue *q;
	json_t *r = json_pack("{s:[{s:s,s:I,s:[s],s:[]},{s:s,s:I,s:I,s:[],s:[s,s]},"
	    "{s:i},{s:s,s:n}]}", "queues",
	    "name", "delay.z", "ttl_ms", (json_int_t)1000, "dead_letters_to", "delay.m",
	    "fed_by",
	    "name", "delay.m", "ttl_ms", (json_int_t)5000, "chain_ttl_ms",
	    (json_int_t)6000, "dead_letters_to", "fed_by", "delay.z", "delay.a",
	    "messages", 1,
	    "name", "delay.a", "ttl_ms");

	(void)state;
	assert_int_equal(old_measured_read(r, &m), 0);
	json_decref(r);
	assert_int_equal(m.n, 3);
	q = old_measured_find(&m, "delay.z");
	assert_int_equal(q->ord, 0);
	assert_int_equal(q->ttl_ms, 1000);
	assert_int_equal(q->chain_ttl_ms, -1);
	assert_int_equal(q->nto, 1);
	assert_string_equal(q->to[0], "delay.m");
	assert_int_equal(q->nfed, 0);
	q = old_measured_find(&m, "delay.m");
	assert_int_equal(q->ord, 1);
	assert_int_equal(q->ttl_ms, 5000);
	assert_int_equal(q->chain_ttl_ms, 6000);
	assert_int_equal(q->nto, 0);
	assert_int_equal(q->nfed, 2);
	assert_string_equal(q->fed_by[0], "delay.z");
	assert_string_equal(q->fed_by[1], "delay.a");
	/* The entry without a name takes no place. */
	q = old_measured_find(&m, "delay.a");
	assert_int_equal(q->ord, 2);
	assert_int_equal(q->ttl_ms, -1);
	assert_int_equal(q->nfed, 0);
	old_measured_free(&m);
}

/* move_old's queues as remove_old weighs their deadlines: what each
 * pass left, -1 for a TTL or a not-before not recorded, and whether a
 * reason for skipping it was. */
static void
test_moved_table(void **state)
{
	struct old_moved m;
	const struct old_moved_queue *q;
	json_t *r = json_pack("{s:[{s:s,s:I,s:i,s:i,s:I},{s:s,s:n,s:s,s:i},{s:b}]}",
	    "queues",
	    "name", "delay.b", "ttl_ms", (json_int_t)60000, "pass_done", 2, "left", 3,
	    "left_until_ms", (json_int_t)123456,
	    "name", "delay.a", "left_until_ms", "skipped_why", "entry time unknown",
	    "skipped", 4,
	    "ok", 1);

	(void)state;
	assert_int_equal(old_moved_read(r, &m), 0);
	json_decref(r);
	assert_int_equal(m.n, 2);
	assert_string_equal(m.v[0].name, "delay.a");
	q = old_moved_find(&m, "delay.b");
	assert_int_equal(q->ttl_ms, 60000);
	assert_int_equal(q->pass_done, 2);
	assert_int_equal(q->left, 3);
	assert_int_equal(q->left_until_ms, 123456);
	assert_int_equal(q->skipped, 0);
	assert_false(q->skipped_why);
	q = old_moved_find(&m, "delay.a");
	assert_int_equal(q->ttl_ms, -1);
	assert_int_equal(q->left_until_ms, -1);
	assert_int_equal(q->skipped, 4);
	assert_true(q->skipped_why);
	assert_int_equal(q->pass_done, 0);
	assert_null(old_moved_find(&m, "delay.c"));
	assert_null(old_moved_find(NULL, "delay.a"));
	old_moved_free(&m);
	assert_int_equal(old_moved_read(NULL, &m), 0);
	assert_int_equal(m.n, 0);
	old_moved_free(&m);
}

/* A move_old result whose one queue's pass left LEFT messages in it. */
static json_t *
moved_result(int left)
{
	return json_pack("{s:b,s:I,s:I,s:[{s:s,s:i}]}", "ok", 1, "horizon_ms",
	    (json_int_t)90000, "pass_started_ms", (json_int_t)4000, "queues",
	    "name", "delay.a", "left", left);
}

/* Step inputs that count what they are asked. */
struct fake {
	json_t *measured, *moved, *watch;
	int64_t measured_end, moved_end;
	int reads;			/* results read whole */
};

static json_t *
fake_result_of(void *arg, enum plan_step_kind kind)
{
	struct fake *f = arg;

	f->reads++;
	if (kind == PLAN_STEP_MEASURE_HORIZON)
		return json_incref(f->measured);
	if (kind == PLAN_STEP_MOVE_OLD)
		return json_incref(f->moved);
	if (kind == PLAN_STEP_WATCH)
		return json_incref(f->watch);
	return NULL;
}

static int64_t
fake_ended_of(void *arg, enum plan_step_kind kind)
{
	struct fake *f = arg;

	if (kind == PLAN_STEP_MEASURE_HORIZON)
		return f->measured_end;
	if (kind == PLAN_STEP_MOVE_OLD)
		return f->moved_end;
	return kind == PLAN_STEP_FLIP ? 5000 : 0;
}

/* One tick's prepare in C, as the engine runs it: a run begun, the
 * prepare, the run ended. Returns what the prepare returned. */
static int
tick(struct step_ctx *c, struct fake *f, const char *expect_first)
{
	json_t *result = NULL;
	char err[256];
	int rc;

	step_ctx_begin_run(c, NULL, NULL, 1, NULL);
	c->inputs = (struct step_inputs){ .result_of = fake_result_of,
	    .ended_of = fake_ended_of, .arg = f };
	rc = step_watch_prepare(c, &c->inputs, &result, err, sizeof(err));
	assert_null(result);
	assert_int_equal(c->flip_ms, 5000);
	/* The results without their lists; the queues as the table. */
	assert_int_equal(json_array_size(json_object_get(c->measured, "queues")), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    c->measured, "summary"), "max_ttl_queue")), expect_first);
	assert_int_equal(json_array_size(json_object_get(c->moved, "queues")), 0);
	assert_int_equal(json_integer_value(json_object_get(c->moved, "horizon_ms")),
	    90000);
	assert_non_null(old_measured_find(c->measured_queues, expect_first));
	assert_int_equal(c->measured_queues->n, 3);
	step_ctx_end_run(c);
	return rc;
}

/* The results are read whole at the first tick and not again until
 * measure_horizon or move_old ends anew; what is kept outlives the
 * results it was read from and goes with the context. */
static void
test_kept_across_ticks(void **state)
{
	struct step_ctx c = { 0 };
	struct fake f = {
		.measured = measured_result("delay.c"),
		.moved = moved_result(0),
		.measured_end = 1000, .moved_end = 2000,
	};

	(void)state;
	assert_int_equal(tick(&c, &f, "delay.c"), 0);
	assert_int_equal(f.reads, 2);
	for (int i = 0; i < 3; i++)
		assert_int_equal(tick(&c, &f, "delay.c"), 0);
	assert_int_equal(f.reads, 2);
	/* measure_horizon run again (a retry): read anew. */
	json_decref(f.measured);
	f.measured = measured_result("delay.d");
	f.measured_end = 1500;
	assert_int_equal(tick(&c, &f, "delay.d"), 0);
	assert_int_equal(f.reads, 4);
	assert_null(old_measured_find(c.kept != NULL ? &c.kept->queues : NULL,
	    "delay.c"));
	/* And move_old's end alone is enough. */
	f.moved_end = 2500;
	assert_int_equal(tick(&c, &f, "delay.d"), 0);
	assert_int_equal(f.reads, 6);
	/* The kept inputs own what they hold. */
	json_decref(f.measured);
	json_decref(f.moved);
	f.measured = f.moved = NULL;
	assert_int_equal(json_integer_value(json_object_get(c.kept->moved,
	    "horizon_ms")), 90000);
	step_ctx_close(&c);
	assert_null(c.kept);
}

/* remove_old's prepare reads move_old's queues as a table too: what the
 * watch kept without it is read again once, then kept; the watch after it
 * takes what remove_old kept. */
static void
test_remove_old_reads_moved(void **state)
{
	struct step_ctx c = { 0 };
	struct fake f = {
		.measured = measured_result("delay.c"),
		.moved = moved_result(2),
		.measured_end = 1000, .moved_end = 2000,
	};
	json_t *result = NULL;
	char err[256];

	(void)state;
	assert_int_equal(tick(&c, &f, "delay.c"), 0);
	assert_int_equal(f.reads, 2);
	assert_false(c.kept->with_moved);
	for (int i = 0; i < 2; i++) {
		step_ctx_begin_run(&c, NULL, NULL, 1, NULL);
		c.inputs = (struct step_inputs){ .result_of = fake_result_of,
		    .ended_of = fake_ended_of, .arg = &f };
		/* No watch result: the last entry is the flip's end. */
		assert_int_equal(step_remove_old_prepare(&c, &c.inputs, &result, err,
		    sizeof(err)), 0);
		assert_null(result);
		assert_int_equal(c.old_last_entry_ms, 5000);
		assert_non_null(c.moved_queues);
		assert_int_equal(old_moved_find(c.moved_queues, "delay.a")->left, 2);
		/* Its names are the measured table's, not copies. */
		assert_ptr_equal(old_moved_find(c.moved_queues, "delay.a")->name,
		    old_measured_find(c.measured_queues, "delay.a")->name);
		assert_int_equal(json_array_size(json_object_get(c.moved, "queues")), 0);
		assert_int_equal(c.measured_queues->n, 3);
		step_ctx_end_run(&c);
	}
	/* Once for the watch, once more for remove_old's table, then kept (the
	 * watch result the prepare asked for each time is a read too). */
	assert_int_equal(f.reads, 2 + 2 + 2);
	assert_int_equal(tick(&c, &f, "delay.c"), 0);
	assert_int_equal(f.reads, 6);
	json_decref(f.measured);
	json_decref(f.moved);
	step_ctx_close(&c);
}

/* Runs remove_old's prepare into C over F's results, whose watch's last
 * sample is of delay.a (no publish counter, 2 messages) and delay.b (3
 * publishes, empty), taken at 8000 after a last entry at 7000: the table
 * it keeps of them is in name order, exact, with its time and each
 * queue's counters (-1 for none). */
static void
prepare_with_sample(struct step_ctx *c, struct fake *f)
{
	const struct old_counter *q;
	json_t *result = NULL;
	char err[256];

	f->measured = measured_result("delay.c");
	f->moved = moved_result(0);
	f->measured_end = 1000;
	f->moved_end = 2000;
	step_ctx_begin_run(c, NULL, NULL, 1, NULL);
	c->inputs = (struct step_inputs){ .result_of = fake_result_of,
	    .ended_of = fake_ended_of, .arg = f };
	assert_int_equal(step_remove_old_prepare(c, &c->inputs, &result, err,
	    sizeof(err)), 0);
	assert_null(result);
	assert_int_equal(c->old_last_entry_ms, 7000);
	assert_non_null(c->watched_last);
	assert_int_equal(c->watched_last->n, 2);
	assert_int_equal(c->watched_last->at_ms, 8000);
	assert_true(c->watched_last->exact);
	assert_string_equal(c->watched_last->v[0].name, "delay.a");
	q = old_counters_find(c->watched_last, "delay.a");
	assert_int_equal(q->publish, -1);
	assert_int_equal(q->messages, 2);
	q = old_counters_find(c->watched_last, "delay.b");
	assert_int_equal(q->publish, 3);
	assert_int_equal(q->messages, 0);
}

/* Ends what prepare_with_sample began. */
static void
prepared_end(struct step_ctx *c, struct fake *f)
{
	step_ctx_end_run(c);
	json_decref(f->measured);
	json_decref(f->moved);
	json_decref(f->watch);
	step_ctx_close(c);
}

/* remove_old's prepare reads the watch's last sample ("old_last") into a
 * table, and keeps of the watch's result the rest without the sample's
 * list: the last entry and the members that joined. */
static void
test_remove_old_reads_watch_sample(void **state)
{
	struct step_ctx c = { 0 };
	struct fake f = { 0 };

	(void)state;
	f.watch = json_pack("{s:b,s:I,s:{s:{s:I}},s:{s:I,s:[{s:s,s:i,s:i},"
	    "{s:s,s:n,s:i},{s:i}]}}", "ok", 1, "last_old_entry_ms", (json_int_t)7000,
	    "old", "joined", "delay.z", (json_int_t)60000,
	    "old_last", "at_ms", (json_int_t)8000, "queues",
	    "name", "delay.b", "publish", 3, "messages", 0,
	    "name", "delay.a", "publish", "messages", 2,
	    "messages", 1);
	prepare_with_sample(&c, &f);
	assert_int_equal(json_array_size(json_object_get(json_object_get(c.watched,
	    "old_last"), "queues")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    json_object_get(c.watched, "old"), "joined"), "delay.z")), 60000);
	/* The watch's own result is as it was: the rest is a copy. */
	assert_int_equal(json_array_size(json_object_get(json_object_get(f.watch,
	    "old_last"), "queues")), 3);
	prepared_end(&c, &f);
}

/* An ended watch hands its last sample over as its rows ("entries"),
 * "old_last" saying so: remove_old's prepare reads the table from them
 * as it does from the sample's own list, and keeps the rest without
 * them. */
static void
test_remove_old_reads_watch_rows(void **state)
{
	struct step_ctx c = { 0 };
	struct fake f = { 0 };

	(void)state;
	f.watch = json_pack("{s:b,s:I,s:{s:I,s:s},s:[{s:s,s:i,s:i},{s:s,s:n,s:i}]}",
	    "ok", 1, "last_old_entry_ms", (json_int_t)7000,
	    "old_last", "at_ms", (json_int_t)8000, "queues_in", "entries",
	    "entries", "name", "delay.b", "publish", 3, "messages", 0,
	    "name", "delay.a", "publish", "messages", 2);
	prepare_with_sample(&c, &f);
	assert_int_equal(json_array_size(json_object_get(c.watched, "entries")), 0);
	prepared_end(&c, &f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_measured_table),
		cmocka_unit_test(test_measured_remove_fields),
		cmocka_unit_test(test_moved_table),
		cmocka_unit_test(test_kept_across_ticks),
		cmocka_unit_test(test_remove_old_reads_moved),
		cmocka_unit_test(test_remove_old_reads_watch_sample),
		cmocka_unit_test(test_remove_old_reads_watch_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
