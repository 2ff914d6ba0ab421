/* test_duration: parsing and printing plan durations, exactly and without rounding. */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "ct.h"
#include "duration.h"

static void
test_parse_good(void **state)
{
	static const struct ct_good cases[] = {
		{ "500ms", 500 },
		{ "1.2s", 1200 },
		{ "90s", 90000 },
		{ "15m", 900000 },
		{ "2h", 7200000 },
		{ "12d", 1036800000 },
		{ "0s", 0 },
		{ "0ms", 0 },
		{ "0.0d", 0 },
		{ "1.5m", 90000 },
		{ "1ms", 1 },
		{ "0.001s", 1 },
		{ "1.50s", 1500 },
		{ "1.000000000000000000000000000000s", 1000 },
		{ "0.00005m", 3 },		/* 3 ms exactly */
		{ "0.5h", 1800000 },
		{ "0.25d", 21600000 },
		{ "0.03125d", 2700000 },
		{ "007s", 7000 },
		{ "36500d", DURATION_MAX_MS },
		{ "3153600000000ms", DURATION_MAX_MS },
		{ "36499.5d", DURATION_MAX_MS - 43200000 },
	};
	char err[256];

	(void)state;
	ct_good(duration_parse, cases, CT_COUNT(cases));
	assert_int_equal(duration_parse("5s", NULL, err, sizeof(err)), 0);
}

static void
test_parse_bad(void **state)
{
	static const struct ct_bad cases[] = {
		{ "", "empty" },
		{ "s", "does not start with a digit" },
		{ ".5s", "does not start with a digit" },
		{ "5", "no unit" },
		{ "5.5", "no unit" },
		{ "5x", "unknown unit \"x\"" },
		{ "5S", "unknown unit \"S\"" },
		{ "5sec", "unknown unit \"sec\"" },
		{ "5mss", "unknown unit \"mss\"" },
		{ "5sm", "unknown unit \"sm\"" },
		{ "1e3s", "unknown unit \"e3s\"" },
		{ "1.2.3s", "unknown unit \".3s\"" },
		{ "5s5s", "unknown unit" },
		{ "-1s", "sign" },
		{ "+1s", "sign" },
		{ "1.0005s", "not a whole number of milliseconds" },
		{ "0.5ms", "not a whole number of milliseconds" },
		{ "1.1ms", "not a whole number of milliseconds" },
		{ "0.0000001d", "not a whole number of milliseconds" },
		{ "1.0000000000000000000000000000001s", "not a whole number" },
		{ "1.s", "no digits after '.'" },
		{ " 5s", "whitespace" },
		{ "5s ", "whitespace" },
		{ "5 s", "whitespace" },
		{ "5\ts", "whitespace" },
		{ "5s\n", "whitespace" },
		{ "99999999999999999d", "too large" },
		{ "99999999999999999999999999999999ms", "too large" },
		{ "36501d", "too large" },
		{ "36500.5d", "too large" },
		{ "3153600000001ms", "too large" },
		{ "876001h", "too large" },
	};
	char err[256];
	int64_t ms;

	(void)state;
	/* Every message says what was expected. */
	ct_bad(duration_parse, cases, CT_COUNT(cases), "expected");
	assert_int_equal(duration_parse(NULL, &ms, err, sizeof(err)), -1);
	assert_int_equal(duration_parse("x", &ms, NULL, 0), -1);

	/* The figures in the messages. */
	assert_int_equal(duration_parse("99999999999999999d", &ms, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "36500d"));
	assert_int_equal(duration_parse("5x", &ms, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "ms, s, m, h or d"));
	/* A short buffer holds a cut message, never an overrun. */
	assert_int_equal(duration_parse("5x", &ms, err, 8), -1);
	assert_int_equal(strlen(err), 7);
}

static void
test_format(void **state)
{
	static const struct ct_good cases[] = {
		{ "0s", 0 },
		{ "1ms", 1 },
		{ "999ms", 999 },
		{ "1s", 1000 },
		{ "1500ms", 1500 },
		{ "42s", 42000 },
		{ "90s", 90000 },
		{ "1m", 60000 },
		{ "15m", 900000 },
		{ "2h", 7200000 },
		{ "25h", 90000000 },
		{ "1d", 86400000 },
		{ "12d", 1036800000 },
		{ "4095s", 4095000 },
		{ "36500d", DURATION_MAX_MS },
		{ "-1500ms", -1500 },
		{ "-2h", -7200000 },
		{ "9223372036854775807ms", INT64_MAX },
		{ "-9223372036854775808ms", INT64_MIN },
	};
	char out[32];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		duration_format(cases[i].ms, out, sizeof(out));
		if (strcmp(out, cases[i].text) != 0)
			fail_msg("%" PRId64 "ms printed as \"%s\"; expected \"%s\"",
			    cases[i].ms, out, cases[i].text);
	}
	assert_ptr_equal(duration_format(90000, out, sizeof(out)), out);
	/* Too small a buffer gives an empty string, never a cut figure. */
	assert_string_equal(duration_format(1500, out, 6), "");
	assert_string_equal(duration_format(1500, out, 7), "1500ms");
	assert_null(duration_format(1500, NULL, 0));
}

static void
test_describe(void **state)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{ 0, "0ms" },
		{ 250, "250ms" },
		{ 1000, "1s" },
		{ 1500, "1.5s" },
		{ 61001, "1m 1.001s" },
		{ 6553500, "1h 49m 13.5s" },
		{ 1048575000, "12d 3h 16m 15s" },
		{ 86400000, "1d" },
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_string_equal(duration_describe(cases[i].ms, out, sizeof(out)),
		    cases[i].want);
}

static void
test_round_trip(void **state)
{
	static const int64_t values[] = {
		0, 1, 7, 999, 1000, 1001, 1200, 1500, 59999, 60000, 90000, 3599000,
		3600000, 7200000, 86399999, 86400000, 1036800000, 1036800001,
		INT64_C(1) << 32, DURATION_MAX_MS - 1, DURATION_MAX_MS,
	};
	char out[32], err[256];
	int64_t back, v;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		duration_format(values[i], out, sizeof(out));
		if (duration_parse(out, &back, err, sizeof(err)) != 0)
			fail_msg("%" PRId64 " printed as \"%s\", refused: %s",
			    values[i], out, err);
		assert_int_equal(back, values[i]);
	}
	/* A sweep across unit boundaries. */
	for (v = 0; v <= 200000; v += 7) {
		duration_format(v, out, sizeof(out));
		assert_int_equal(duration_parse(out, &back, err, sizeof(err)), 0);
		assert_int_equal(back, v);
	}
	for (v = 0; v <= 100; v++) {
		duration_format(v * 1800000, out, sizeof(out));
		assert_int_equal(duration_parse(out, &back, err, sizeof(err)), 0);
		assert_int_equal(back, v * 1800000);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_parse_good),
	cmocka_unit_test(test_parse_bad),
	cmocka_unit_test(test_format),
	cmocka_unit_test(test_round_trip),
	cmocka_unit_test(test_describe))
