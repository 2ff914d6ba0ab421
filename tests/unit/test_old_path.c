/* test_old_path: the pure parts of the old path — reading the operator's
 * --last-entry time and the deadlines that follow from it. A time read
 * wrongly puts deadlines in the past, and remove_old then deletes queues
 * that can still hold messages, so every misreading must be refused. */

#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "ct.h"
#include "old_path.h"

static void
test_time_parse_good(void **state)
{
	static const struct ct_good cases[] = {
		{ "1795003200000", 1795003200000LL },
		{ "2026-11-30T12:00:00Z", 1796040000000LL },
		{ "2026-11-30t12:00:00.5z", 1796040000500LL },
		{ "2026-11-30T12:00:00.123Z", 1796040000123LL },
		{ "2000-01-01T00:00:00Z", 946684800000LL },
		{ "2024-02-29T23:59:59Z", 1709251199000LL },
	};

	(void)state;
	ct_good(old_time_parse, cases, CT_COUNT(cases));
}

/* An epoch in seconds, read as milliseconds, is a time in January 1970:
 * every deadline computed from it is decades past. Refused, saying so. */
static void
test_time_parse_bad(void **state)
{
	static const struct ct_bad cases[] = {
		{ "1796040000", "seconds" },		/* 2026 in seconds */
		{ "1795003200.5", "not a time" },
		{ "1970-01-01T00:00:01Z", "before 2000" },
		{ "1999-12-31T23:59:59.999Z", "before 2000" },
		{ "946684799999", "seconds" },
		{ "0", "not a time" },
		{ "", "not a time" },
		{ "-1795003200000", "not a time" },
		{ "2026-02-29T00:00:00Z", "not a time" },
		{ "2026-11-30T12:00:00", "not a time" },
		{ "2026-11-30T12:00:00.1234Z", "not a time" },
		{ "9999999999999999", "not a time" },
	};

	(void)state;
	ct_bad(old_time_parse, cases, CT_COUNT(cases), NULL);
}

static void
test_deadline(void **state)
{
	(void)state;
	assert_int_equal(old_deadline_ms(1795003200000LL, 60000, 30000),
	    1795003290000LL);
	assert_int_equal(old_deadline_ms(0, 60000, 30000), -1);
	assert_int_equal(old_deadline_ms(1795003200000LL, -1, 30000), -1);
}

/* move_old's horizon stands only for a move that succeeded with a horizon
 * and a last pass, and only while nothing entered the old path after that
 * pass began: the watch and remove_old both ask this one function. */
static void
test_moved_stands(void **state)
{
	json_t *ok = json_pack("{s:b,s:I,s:I}", "ok", 1, "horizon_ms",
	    (json_int_t)1795003260000LL, "pass_started_ms", (json_int_t)1795003200000LL);
	json_t *failed = json_pack("{s:b,s:I,s:I}", "ok", 0, "horizon_ms",
	    (json_int_t)1795003260000LL, "pass_started_ms", (json_int_t)1795003200000LL);
	json_t *no_pass = json_pack("{s:b,s:I}", "ok", 1, "horizon_ms",
	    (json_int_t)1795003260000LL);
	json_t *no_horizon = json_pack("{s:b,s:I,s:I}", "ok", 1, "horizon_ms",
	    (json_int_t)0, "pass_started_ms", (json_int_t)1795003200000LL);

	(void)state;
	assert_true(old_moved_stands(ok, 0));
	assert_true(old_moved_stands(ok, 1795003100000LL));
	assert_true(old_moved_stands(ok, 1795003200000LL));	/* at the pass's start */
	assert_false(old_moved_stands(ok, 1795003200001LL));	/* entered after it */
	assert_false(old_moved_stands(NULL, 0));
	assert_false(old_moved_stands(failed, 0));
	assert_false(old_moved_stands(no_pass, 0));
	assert_false(old_moved_stands(no_horizon, 0));
	json_decref(ok);
	json_decref(failed);
	json_decref(no_pass);
	json_decref(no_horizon);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_time_parse_good),
	cmocka_unit_test(test_time_parse_bad),
	cmocka_unit_test(test_deadline),
	cmocka_unit_test(test_moved_stands))
