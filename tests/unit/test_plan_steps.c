/* test_plan_steps: the plan's steps — the step-kind table's names and
 * columns, and the order rules a plan's steps must follow. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "pt.h"

static void
test_step_kind_names(void **state)
{
	enum plan_step_kind k;
	int i;

	(void)state;
	for (i = 0; i < PLAN_STEP_KIND_COUNT; i++) {
		assert_int_equal(plan_step_kind_parse(plan_step_kind_name(i), &k), 0);
		assert_int_equal(k, i);
	}
	assert_string_equal(plan_step_kind_name(PLAN_STEP_MEASURE_HORIZON), "measure_horizon");
	assert_string_equal(plan_step_kind_name(PLAN_STEP_REMOVE_OLD), "remove_old");
	assert_string_equal(plan_step_kind_name(PLAN_STEP_KIND_COUNT), "unknown");
	assert_int_equal(plan_step_kind_parse("verify", &k), -1);
	assert_int_equal(plan_step_kind_parse("Canary", &k), -1);
	assert_int_equal(plan_step_kind_parse("", &k), -1);
	assert_int_equal(plan_step_kind_parse(NULL, &k), -1);
}

/* The step-kind table's other columns: the names listed for messages, in
 * table order; gates and sections; SHOWS pairs as the API serves them. */
static void
test_step_kind_table(void **state)
{
	const char *cur = "removed=/counts/removed, left=/counts/left", *why = NULL;
	char names[256], label[32], pointer[64];

	(void)state;
	assert_string_equal(plan_step_kind_names(names, sizeof(names)),
	    "measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old, "
	    "watch, remove_old");
	for (int i = 0; i < PLAN_STEP_KIND_COUNT; i++)
		assert_false(plan_step_kind_gated((enum plan_step_kind)i));
	assert_string_equal(plan_step_kind_section(PLAN_STEP_FLIP, &why), "flag");
	assert_non_null(strstr(why, "to switch producers"));
	assert_null(plan_step_kind_section(PLAN_STEP_WATCH, NULL));
	assert_null(plan_step_kind_section(PLAN_STEP_KIND_COUNT, NULL));
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), 0);
	assert_string_equal(label, "removed");
	assert_string_equal(pointer, "/counts/removed");
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), 0);
	assert_string_equal(label, "left");
	assert_string_equal(pointer, "/counts/left");
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
	cur = "no pair here";
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
	cur = NULL;
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
}

static void
test_step_order(void **state)
{
	static const struct {
		const char *steps;
		int line, column;	/* 0: valid */
		const char *msg;
	} cases[] = {
		{ "steps: [verify_ladder]\n", 0, 0, NULL },
		{ "steps: [declare_ladder, verify_ladder]\n", 0, 0, NULL },
		{ "steps: [measure_horizon]\n", 0, 0, NULL },
		{ "steps: [canary, declare_ladder]\n", 20, 9, "step 'canary' comes before step 'declare_ladder'" },
		{ "steps: [verify_ladder, declare_ladder]\n", 20, 9, "step 'verify_ladder' comes before step 'declare_ladder'" },
		{ "steps: [declare_ladder, verify_ladder, canary, flip]\n", 20, 48, "step 'flip' without step 'measure_horizon'" },
		{ "steps: [measure_horizon, verify_ladder, flip]\n", 20, 41, "step 'flip' without step 'canary'" },
		{ "steps: [measure_horizon, verify_ladder, canary, flip, remove_old]\n", 20, 55, "step 'remove_old' without step 'watch'" },
		{ "steps: [watch]\n", 20, 9, "step 'watch' without step 'flip'" },
		{ "steps: [flip, measure_horizon, verify_ladder, canary]\n", 20, 9, "step 'flip' comes before step 'measure_horizon'" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = strdup(pt_base_plan);
		*strstr(t, "steps:\n") = '\0';
		t = realloc(t, strlen(t) + strlen(cases[i].steps) + 1);
		strcat(t, cases[i].steps);
		if (cases[i].msg == NULL) {
			p = pt_expect_valid(t);
			plan_free(p);
		} else
			pt_expect_error(t, cases[i].line, cases[i].column, cases[i].msg);
		free(t);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_step_kind_names),
	cmocka_unit_test(test_step_kind_table),
	cmocka_unit_test(test_step_order))
