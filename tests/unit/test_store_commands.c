/* test_store_commands: the commands table — operators' commands read in
 * the order given and marked handled once. */

#include "cm.h"
#include "fx.h"
#include "store.h"

static void
test_commands_in_order_and_handled_once(void **state)
{
	struct fx *fx = *state;
	struct store_command c;
	int64_t plan, a, b;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_command_next(fx->s, plan, &c, FX_ERR(fx)), STORE_NOT_FOUND);
	assert_int_equal(store_command_insert(fx->s, plan, "approve", 4, 0, "alice",
	    "looks good", 10, &a, FX_ERR(fx)), 0);
	assert_int_equal(store_command_insert(fx->s, plan, "abort", -1, 0, "bob", NULL,
	    11, &b, FX_ERR(fx)), 0);
	/* An unknown kind is refused by the schema. */
	assert_int_equal(store_command_insert(fx->s, plan, "explode", -1, 0, "eve", NULL,
	    12, NULL, FX_ERR(fx)), -1);

	assert_int_equal(store_command_next(fx->s, plan, &c, FX_ERR(fx)), 0);
	assert_int_equal(c.id, a);
	assert_string_equal(c.kind, "approve");
	assert_int_equal(c.step_idx, 4);
	assert_string_equal(c.actor, "alice");
	assert_string_equal(c.comment, "looks good");
	assert_int_equal(store_command_done(fx->s, a, 20, "done", FX_ERR(fx)), 0);
	/* Handled twice is refused: the engine acts on a command once. */
	assert_int_equal(store_command_done(fx->s, a, 21, "done", FX_ERR(fx)), -1);

	assert_int_equal(store_command_next(fx->s, plan, &c, FX_ERR(fx)), 0);
	assert_int_equal(c.id, b);
	assert_int_equal(c.step_idx, -1);
	assert_string_equal(c.comment, "");
	assert_int_equal(store_command_done(fx->s, b, 22, "done", FX_ERR(fx)), 0);
	assert_int_equal(store_command_next(fx->s, plan, &c, FX_ERR(fx)), STORE_NOT_FOUND);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_commands_in_order_and_handled_once))
