/* test_store_plans: the plans table — a plan as submitted read back by id
 * and by name, its status and the schema's constraints, and plans listed
 * newest first. */

#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "fx.h"
#include "store.h"

static void
test_plan_roundtrip(void **state)
{
	struct fx *fx = *state;
	static const char yaml[] =
	    "name: orders-delays\n"
	    "# ünïcode comment, tabs\tand \"quotes\"\n"
	    "steps: [measure_horizon]\n";
	struct store_plan p;
	int64_t a, b, c;
	char *y;
	size_t n;

	fx_open(fx);
	a = fx_plan(fx, "abc-plan", "abc", 1000);
	assert_int_equal(store_plan_get(fx->s, a, &p, FX_ERR(fx)), 0);
	assert_int_equal(p.id, a);
	assert_string_equal(p.name, "abc-plan");
	assert_string_equal(p.sha256, FX_SHA256_ABC);
	assert_string_equal(p.status, "running");
	assert_int_equal(p.created_ms, 1000);

	assert_int_equal(store_plan_yaml(fx->s, a, &y, &n, FX_ERR(fx)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(y, "abc");
	free(y);

	/* Same name twice: find returns the newest. */
	b = fx_plan(fx, "orders-delays", yaml, 2000);
	c = fx_plan(fx, "orders-delays", yaml, 2000);
	assert_true(c > b);
	assert_int_equal(store_plan_find(fx->s, "orders-delays", &p, FX_ERR(fx)),
	    0);
	assert_int_equal(p.id, c);
	assert_int_equal(store_plan_yaml(fx->s, c, &y, &n, FX_ERR(fx)), 0);
	assert_int_equal(n, strlen(yaml));
	assert_memory_equal(y, yaml, n);
	assert_int_equal(y[n], '\0');
	free(y);

	/* Only the first YAML_LEN bytes are the plan. */
	assert_int_equal(store_plan_insert(fx->s, "abc.v2_x", "abcdef", 3, 3000,
	    &a, FX_ERR(fx)), 0);
	assert_int_equal(store_plan_get(fx->s, a, &p, FX_ERR(fx)), 0);
	assert_string_equal(p.sha256, FX_SHA256_ABC);
	assert_string_equal(p.name, "abc.v2_x");

	/* Absent. */
	assert_int_equal(store_plan_get(fx->s, 999, &p, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_plan_find(fx->s, "nope", &p, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_plan_yaml(fx->s, 999, &y, &n, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_null(y);
}

static void
test_plan_status_and_constraints(void **state)
{
	struct fx *fx = *state;
	struct store_plan p;
	int64_t id, other;

	fx_open(fx);
	id = fx_plan(fx, "p1", "abc", 1);
	assert_int_equal(store_plan_set_status(fx->s, id, "succeeded", FX_ERR(fx)),
	    0);
	assert_int_equal(store_plan_get(fx->s, id, &p, FX_ERR(fx)), 0);
	assert_string_equal(p.status, "succeeded");

	assert_int_equal(store_plan_set_status(fx->s, id, "bogus", FX_ERR(fx)),
	    -1);
	fx_assert_prefix(fx->err,
	    "setting status of plan 1: CHECK constraint failed");
	assert_int_equal(store_plan_get(fx->s, id, &p, FX_ERR(fx)), 0);
	assert_string_equal(p.status, "succeeded");

	assert_int_equal(store_plan_set_status(fx->s, 77, "failed", FX_ERR(fx)),
	    -1);
	assert_string_equal(fx->err, "setting status of plan 77: no such plan");

	/* Names are the plan format's: [a-z0-9._-]{1,64}. */
	assert_int_equal(store_plan_insert(fx->s, "Bad Name", "abc", 3, 1,
	    &other, FX_ERR(fx)), -1);
	fx_assert_prefix(fx->err, "inserting plan: CHECK constraint failed");
	assert_int_equal(store_plan_insert(fx->s, "", "abc", 3, 1, &other,
	    FX_ERR(fx)), -1);
	assert_int_equal(store_plan_insert(fx->s,
	    "a234567890123456789012345678901234567890123456789012345678901234",
	    "abc", 3, 1, &other, FX_ERR(fx)), 0);
	assert_int_equal(store_plan_insert(fx->s,
	    "a2345678901234567890123456789012345678901234567890123456789012345",
	    "abc", 3, 1, &other, FX_ERR(fx)), -1);
}

static int
plan_names(const struct store_plan *p, void *arg)
{
	strcat(arg, p->name);
	strcat(arg, " ");
	return 0;
}

static void
test_plans_listed_newest_first(void **state)
{
	struct fx *fx = *state;
	char names[64] = "";

	fx_open(fx);
	fx_plan(fx, "first", "a", 1);
	fx_plan(fx, "second", "b", 2);
	assert_int_equal(store_each_plan(fx->s, plan_names, names, FX_ERR(fx)), 0);
	assert_string_equal(names, "second first ");
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_plan_roundtrip),
	T(test_plan_status_and_constraints),
	T(test_plans_listed_newest_first))
