/* test_store_steps: the steps table — a plan's steps inserted, updated,
 * read back, refused when wrong, and reset for a retry. */

#include <string.h>

#include "cm.h"
#include "fx.h"
#include "store.h"

static void
test_steps(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	plan = fx_open_plan(fx, "abc");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "measure_horizon", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_insert(fx->s, plan, 1, "flip", 1,
	    FX_ERR(fx)), 0);

	assert_int_equal(store_step_get(fx->s, plan, 1, &st, FX_ERR(fx)), 0);
	assert_int_equal(st.plan_id, plan);
	assert_int_equal(st.idx, 1);
	assert_string_equal(st.kind, "flip");
	assert_int_equal(st.gate, 1);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	assert_int_equal(st.ended_ms, 0);
	assert_null(st.result_json);
	assert_null(st.error);
	store_step_clear(&st);

	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 5000, 0,
	    NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "succeeded", 0, 9000,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}", NULL,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.kind, "measure_horizon");
	assert_int_equal(st.gate, 0);
	assert_string_equal(st.status, "succeeded");
	assert_int_equal(st.started_ms, 5000);
	assert_int_equal(st.ended_ms, 9000);
	assert_string_equal(st.result_json,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}");
	assert_null(st.error);
	store_step_clear(&st);
	assert_null(st.result_json);

	/* An error, and a NULL status that leaves the status alone. */
	assert_int_equal(store_step_update(fx->s, plan, 1, "failed", 10000,
	    11000, NULL, "flag read back off after on", FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 1, NULL, 0, 0,
	    "{}", NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 1, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "failed");
	assert_string_equal(st.error, "flag read back off after on");
	assert_string_equal(st.result_json, "{}");
	assert_int_equal(st.started_ms, 10000);
	assert_int_equal(st.ended_ms, 11000);
	store_step_clear(&st);

	/* Refusals. */
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0,
	    FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "inserting step 0 of plan 1: "
	    "UNIQUE constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, NULL, 0, 0,
	    "{not json", NULL, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, "done", 0, 0,
	    NULL, NULL, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 7, "running", 1, 0,
	    NULL, NULL, FX_ERR(fx)), -1);
	assert_string_equal(fx->err, "updating step 7 of plan 1: no such step");
	assert_int_equal(store_step_get(fx->s, plan, 7, &st, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_null(st.result_json);
	assert_null(st.error);
}

static void
test_step_reset_clears_the_attempt(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0, FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "failed", 10, 20, "{\"lost\":1}",
	    "1 message lost", FX_ERR(fx)), 0);
	assert_int_equal(store_step_reset(fx->s, plan, 0, "pending", FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	assert_int_equal(st.ended_ms, 0);
	assert_null(st.result_json);
	assert_null(st.error);
	store_step_clear(&st);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_steps),
	T(test_step_reset_clears_the_attempt))
