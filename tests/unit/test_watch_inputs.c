/* test_watch_inputs: what the watch reads of measure_horizon's and
 * move_old's results: measure_horizon's queues as a table looked up by
 * name, and both results read once and kept across the watch's ticks
 * until either step ends anew. */

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

/* Step inputs that count what they are asked. */
struct fake {
	json_t *measured, *moved;
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
		.moved = json_pack("{s:b,s:I,s:I,s:[{s:s}]}", "ok", 1, "horizon_ms",
		    (json_int_t)90000, "pass_started_ms", (json_int_t)4000, "queues",
		    "name", "delay.a"),
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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_measured_table),
		cmocka_unit_test(test_kept_across_ticks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
