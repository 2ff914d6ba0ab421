/* test_step_run: what the engine reads instead of knowing steps by name:
 * the status name tables (the names the database stores), the step-kind
 * table's columns that stood for "watch" and remove_old in the engine, and
 * a step context's run part, ended in one call. */

#include <string.h>

#include "cm.h"
#include "status.h"
#include "step.h"
#include "step_kinds.h"

/* The names are the stored ones, each read back as its enum. */
static void
test_status_names(void **state)
{
	static const char *const steps[] = {
		"pending", "waiting_approval", "running", "succeeded", "failed"
	};
	static const char *const plans[] = { "running", "succeeded", "failed", "aborted" };

	(void)state;
	assert_int_equal(STEP_STATUS_COUNT, 5);
	assert_int_equal(PLAN_STATUS_COUNT, 4);
	for (int i = 0; i < STEP_STATUS_COUNT; i++) {
		assert_string_equal(step_status_name((enum step_status)i), steps[i]);
		assert_int_equal(step_status_of(steps[i]), i);
	}
	for (int i = 0; i < PLAN_STATUS_COUNT; i++) {
		assert_string_equal(plan_status_name((enum plan_status)i), plans[i]);
		assert_int_equal(plan_status_of(plans[i]), i);
	}
	assert_int_equal(step_status_of("waiting"), STEP_STATUS_UNKNOWN);
	assert_int_equal(step_status_of("Running"), STEP_STATUS_UNKNOWN);
	assert_int_equal(plan_status_of(NULL), PLAN_STATUS_UNKNOWN);
	assert_string_equal(step_status_name(STEP_STATUS_UNKNOWN), "?");
	assert_string_equal(plan_status_name(PLAN_STATUS_COUNT), "?");
}

/* The table says what the engine did by name: the watch alone keeps its
 * state across a retry; remove_old alone records events from its result
 * and previews at its gate. */
static void
test_kind_columns(void **state)
{
	(void)state;
	for (int k = 0; k < PLAN_STEP_KIND_COUNT; k++) {
		const struct step_kind *sk = step_kind_of((enum plan_step_kind)k);

		assert_non_null(sk);
		assert_non_null(sk->run);
		assert_int_equal((sk->flags & STEP_KIND_KEEPS_STATE) != 0,
		    k == PLAN_STEP_WATCH);
		assert_int_equal(sk->events != NULL, k == PLAN_STEP_REMOVE_OLD);
		assert_int_equal(sk->preview != NULL, k == PLAN_STEP_REMOVE_OLD);
	}
	assert_ptr_equal(step_kind_of(PLAN_STEP_REMOVE_OLD)->events,
	    step_remove_old_events);
	assert_null(step_kind_of(PLAN_STEP_KIND_COUNT));
	assert_null(step_kind_of((enum plan_step_kind)-1));
}

static json_t *
result_of(void *arg, enum plan_step_kind kind)
{
	(void)kind;
	return json_incref(arg);
}

/* Ending a run zeroes its whole part, releases the inputs it fetched and
 * frees its events; what lives across runs stays. */
static void
test_end_run_in_one(void **state)
{
	struct step_ctx c = { 0 };
	struct store *s = (struct store *)&c;	/* never dereferenced */
	json_t *st = json_object(), *in = json_pack("{s:i}", "x", 1);

	(void)state;
	step_ctx_begin_run(&c, NULL, s, 7, st);
	assert_ptr_equal(c.state, st);
	assert_ptr_equal(c.run.state, st);
	c.inputs = (struct step_inputs){ .result_of = result_of, .arg = in };
	c.measured = step_input(&c.inputs, PLAN_STEP_MEASURE_HORIZON);
	assert_ptr_equal(c.measured, in);
	assert_int_equal(in->refcount, 2);
	c.flip_ms = 5;
	c.old_last_entry_ms = 6;
	c.now_ms = 8;
	c.again = true;
	assert_int_equal(step_events_add(&c.events, "a.b", NULL), 0);
	assert_int_equal(step_events_add(&c.events, "c.d", json_pack("{s:i}", "n", 2)), 0);
	assert_int_equal(c.events.n, 2);
	assert_string_equal(c.events.v[0].kind, "a.b");
	assert_int_equal(json_object_size(c.events.v[0].details), 0);
	assert_int_equal(step_input_ended(&c.inputs, PLAN_STEP_FLIP), 0);

	step_ctx_end_run(&c);
	assert_int_equal(in->refcount, 1);
	assert_null(c.state);
	assert_null(c.measured);
	assert_int_equal(c.flip_ms, 0);
	assert_int_equal(c.old_last_entry_ms, 0);
	assert_int_equal(c.now_ms, 0);
	assert_false(c.again);
	assert_int_equal(c.events.n, 0);
	assert_null(c.events.v);
	assert_null(c.inputs.result_of);
	assert_ptr_equal(c.store, s);
	assert_int_equal(c.plan_id, 7);
	step_ctx_end_run(&c);		/* safe again */
	json_decref(in);
	json_decref(st);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_status_names),
	cmocka_unit_test(test_kind_columns),
	cmocka_unit_test(test_end_run_in_one))
