/* test_plan_ladder: the ladder and canary sections — levels from
 * max_delay and its limits, the canary's defaults, the naming styles' rules
 * and a destination's long form. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "ladder.h"
#include "plan.h"
#include "pt.h"

#define S(n)	((int64_t)(n) * 1000)

/* The ladder section of the base plan replaced by LADDER, canary by CANARY. */
static struct plan *
with_ladder(const char *ladder, const char *canary)
{
	struct plan *p;
	char *t = pt_subst(pt_base_plan, "  unit: 1s\n  max_delay: 12d\n", ladder);

	pt_edit(&t, "flag:\n", canary);
	p = pt_expect_valid(t);
	free(t);
	return p;
}

static void
test_canary_defaults(void **state)
{
	struct plan *p;

	(void)state;
	/* 1s, 2s, 4s, 8s, 16s fit in 30s; 32s does not. */
	p = with_ladder("  unit: 1s\n  levels: 20\n", "canary:\n  budget: 30s\nflag:\n");
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(p->canary.delays_ms[i], S(1) << i);
	assert_int_equal(p->canary.budget_ms, S(30));
	plan_free(p);

	/* Three levels of 10s: all within the default 2 minutes. */
	p = with_ladder("  unit: 10s\n  levels: 3\n", "flag:\n");
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 3);
	assert_int_equal(p->canary.delays_ms[0], S(10));
	assert_int_equal(p->canary.delays_ms[1], S(20));
	assert_int_equal(p->canary.delays_ms[2], S(40));
	plan_free(p);

	/* A budget exactly at a level's TTL includes that level. */
	p = with_ladder("  unit: 250ms\n  max_delay: 1h\n", "canary:\n  budget: 1s\nflag:\n");
	assert_int_equal(p->canary.ndelays, 3);
	assert_int_equal(p->canary.delays_ms[0], 250);
	assert_int_equal(p->canary.delays_ms[1], 500);
	assert_int_equal(p->canary.delays_ms[2], 1000);
	plan_free(p);

	/* Written delays are kept as written. */
	p = with_ladder("  unit: 1s\n  levels: 4\n", "canary:\n  delays: [15s, 1500ms]\nflag:\n");
	assert_false(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 2);
	assert_int_equal(p->canary.delays_ms[0], S(15));
	assert_int_equal(p->canary.delays_ms[1], 1500);
	plan_free(p);
}

static void
test_levels_from_max_delay(void **state)
{
	static const struct {
		const char *ladder;
		int levels;
		int64_t max_delay_ms;
	} cases[] = {
		{ "  unit: 1s\n  max_delay: 7s\n", 3, S(7) },
		{ "  unit: 1s\n  max_delay: 8s\n", 4, S(8) },
		{ "  unit: 1s\n  max_delay: 1500ms\n", 2, 1500 },	/* ceil: 2 units */
		{ "  unit: 1s\n  max_delay: 1ms\n", 1, 1 },
		{ "  unit: 1m\n  max_delay: 365d\n", 20, S(365 * 86400) },
		{ "  unit: 1ms\n  max_delay: 49d\n", 32, S(49 * 86400) },
		{ "  unit: 1s\n  levels: 5\n", 5, 0 },
	};
	struct plan *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = with_ladder(cases[i].ladder, "flag:\n");
		assert_int_equal(p->ladder.levels, cases[i].levels);
		assert_int_equal(p->max_delay_ms, cases[i].max_delay_ms);
		plan_free(p);
	}
}

static void
test_ladder_naming_rules(void **state)
{
	struct plan *p;

	(void)state;
	/* kombu: unit 1s and levels 28 may be written; max_delay within 28 levels. */
	p = with_ladder("  naming: kombu\n  unit: 1s\n  levels: 28\n", "flag:\n");
	assert_int_equal(p->ladder.levels, 28);
	plan_free(p);
	p = with_ladder("  naming: nservicebus\n  max_delay: 12d\n", "flag:\n");
	assert_int_equal(p->ladder.levels, 28);
	assert_int_equal(p->max_delay_ms, S(12 * 86400));
	plan_free(p);

	/* kombu takes Kombu's prefix; nservicebus no classic level queues,
	 * said where queue_type is written. */
	p = with_ladder("  naming: kombu\n  prefix: orders\n  levels: 28\n", "flag:\n");
	assert_string_equal(p->ladder.prefix, "orders");
	plan_free(p);
	p = with_ladder("  naming: kombu\n  queue_type: classic\n", "flag:\n");
	assert_int_equal(p->queue_type, PLAN_QUEUE_CLASSIC);
	plan_free(p);
	pt_expect_edit_error("  unit: 1s\n  max_delay: 12d\n",
	    "  naming: nservicebus\n  queue_type: classic\n",
	    11, 15, "ladder.queue_type classic is not used with "
	    "nservicebus naming");
	pt_expect_edit_error("  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  prefix: 'a b'\n", 11, 11, "ladder.prefix is not valid");

	/* 3200 days is more than 2^28 - 1 seconds (about 3106 days). */
	pt_expect_edit_error("  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  max_delay: 3200d\n",
	    11, 14, "needs more than 28 levels of 1s");
	pt_expect_edit_error("  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  levels: 28\n  max_delay: 1d\n",
	    12, 3, "ladder has both max_delay and levels");
	/* A unit so large the ladder overflows 64-bit milliseconds. */
	pt_expect_edit_error("  unit: 1s\n  max_delay: 12d\n", "  unit: 36500d\n  levels: 32\n",
	    10, 9, "is not valid");
}

/* The plan's max_delay is the most publishing takes:
 * the ladder holds it as its limit, the default canary stays within it. */
static void
test_max_delay_limits(void **state)
{
	struct plan *p;
	char *t;

	(void)state;
	p = with_ladder("  naming: kombu\n  max_delay: 30d\n", "flag:\n");
	assert_int_equal(ladder_limit_ms(&p->ladder), S(30 * 86400));
	assert_int_equal(ladder_encode(&p->ladder, S(31 * 86400), NULL, NULL, 0), -1);
	plan_free(p);
	/* levels: the ladder's own maximum. */
	p = with_ladder("  naming: kombu\n  levels: 28\n", "flag:\n");
	assert_int_equal(ladder_limit_ms(&p->ladder), ladder_max_delay_ms(&p->ladder));
	plan_free(p);
	/* 10s on 28 levels: canary 1s, 2s, 4s, 8s, then 10s itself. */
	p = with_ladder("  naming: kombu\n  max_delay: 10s\n", "flag:\n");
	assert_int_equal(p->canary.ndelays, 5);
	assert_int_equal(p->canary.delays_ms[3], S(8));
	assert_int_equal(p->canary.delays_ms[4], S(10));
	plan_free(p);
	/* Explicit canary delays beyond it are refused where written. */
	t = pt_subst(pt_base_plan, "  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  max_delay: 10s\n");
	pt_edit(&t, "flag:\n", "canary:\n  delays: [1s, 11s]\nflag:\n");
	pt_expect_error(t, 14, 16, "canary.delays[1] 11s is beyond the ladder's largest "
	    "delay 10s");
	free(t);
	pt_expect_edit_error("  max_delay: 12d\n", "  max_delay: 0s\n",
	    11, 14, "ladder.max_delay is 0s; expected a duration greater than 0");
}

/* A destination whose routing key is not its queue's name, or reaches an
 * exchange: the long form beside the short one, each
 * error at its line and column. */
static void
test_destination_long_form(void **state)
{
	static const char from[] = "  destinations: [email.delivery, billing.retry]\n";
	static const struct {
		const char *to;
		int line, column;
		const char *msg;
	} bad[] = {
		{ "  destinations: [a, { key: b }]\n", 12, 21,
		  "ladder.destinations[1] has neither queue nor exchange" },
		{ "  destinations: [a, { key: b, queue: q, exchange: e }]\n", 12, 41,
		  "ladder.destinations[1] has both queue and exchange" },
		{ "  destinations: [a, { queue: q }]\n", 12, 21,
		  "missing required key 'key' in ladder.destinations[1]" },
		{ "  destinations: [a, { key: 'b.*', queue: q }]\n", 12, 28,
		  "ladder.destinations[1].key is not valid" },
		{ "  destinations: [a, { key: b, queue: q, bogus: 1 }]\n", 12, 41,
		  "unknown key 'bogus' in ladder.destinations[1]" },
		{ "  destinations: [a, { key: b, queue: '' }]\n", 12, 38,
		  "ladder.destinations[1].queue is empty" },
		{ "  destinations: [a, { key: b, exchange: delay.delivery }]\n", 12, 41,
		  "ladder.destinations[1].exchange 'delay.delivery' is one of the ladder's own" },
		{ "  destinations: [q, { key: b, queue: q }]\n", 12, 21,
		  "ladder.destinations[1] reaches queue 'q', as the destination at line 12 column 18 does" },
		{ "  destinations: [a, { key: a, queue: q }]\n", 12, 28,
		  "'a' is listed twice" },
	};
	struct plan *p;
	bool ex;
	char *t;

	(void)state;
	t = pt_subst(pt_base_plan, from, "  destinations:\n    - email.delivery\n"
	    "    - { key: destination_route, queue: destination }\n"
	    "    - { key: k.x, exchange: tasks }\n"
	    "    - { key: tasks, queue: tasks }\n");
	p = pt_expect_valid(t);
	free(t);
	assert_int_equal(p->ndestinations, 4);
	assert_string_equal(p->destinations[1], "destination_route");
	assert_string_equal(plan_destination_target(p, 0, &ex), "email.delivery");
	assert_false(ex);
	assert_string_equal(plan_destination_target(p, 1, &ex), "destination");
	assert_false(ex);
	assert_string_equal(plan_destination_target(p, 2, &ex), "tasks");
	assert_true(ex);
	/* An exchange and a queue may share a name (Kombu's task exchange). */
	assert_string_equal(plan_destination_target(p, 3, &ex), "tasks");
	assert_false(ex);
	assert_true(plan_names_destination(p, "destination"));
	assert_true(plan_names_destination(p, "destination_route"));
	assert_false(plan_names_destination(p, "k"));
	plan_free(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		pt_expect_edit_error(from, bad[i].to, bad[i].line, bad[i].column, bad[i].msg);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_canary_defaults),
	cmocka_unit_test(test_levels_from_max_delay),
	cmocka_unit_test(test_max_delay_limits),
	cmocka_unit_test(test_destination_long_form),
	cmocka_unit_test(test_ladder_naming_rules))
