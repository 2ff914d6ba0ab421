/* test_store_alerts: the alerts table — an alert raised once per kind
 * while open, counted as it recurs, and acknowledged. */

#include <stdbool.h>

#include "cm.h"
#include "fx.h"
#include "store.h"

static int
count_alert(const struct store_alert *a, void *arg)
{
	struct store_alert *last = arg;

	*last = *a;
	return 0;
}

static void
test_alerts_raise_update_ack(void **state)
{
	struct fx *fx = *state;
	struct store_alert last;
	int64_t plan, id = 0, id2 = 0;
	bool raised = false;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "1 message parked",
	    100, &id, &raised, FX_ERR(fx)), 0);
	assert_true(raised);
	/* The same condition seen again updates the open alert. */
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "2 messages parked",
	    200, &id2, &raised, FX_ERR(fx)), 0);
	assert_false(raised);
	assert_int_equal(store_each_alert(fx->s, plan, 1, count_alert, &last, FX_ERR(fx)), 1);
	assert_int_equal(last.id, id);
	assert_int_equal(last.count, 2);
	assert_int_equal(last.raised_ms, 100);
	assert_int_equal(last.last_ms, 200);
	assert_string_equal(last.message, "2 messages parked");

	assert_int_equal(store_alert_ack(fx->s, plan, id, "carol", "drained by hand", 300,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_alert_ack(fx->s, plan, id, "carol", NULL, 301, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_each_alert(fx->s, plan, 1, NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_each_alert(fx->s, plan, 0, count_alert, &last, FX_ERR(fx)), 1);
	assert_string_equal(last.acked_by, "carol");
	assert_int_equal(last.acked_ms, 300);

	/* After an acknowledgement the condition raises a new alert. */
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "again", 400, &id2,
	    &raised, FX_ERR(fx)), 0);
	assert_true(raised);
	assert_true(id2 != id);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_alerts_raise_update_ack))
