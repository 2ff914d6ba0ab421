/* test_ladder: the ladder's arithmetic — levels for a maximum delay, the
 * limits and overflow guards of ladder_init, TTLs, encoding a delay into a
 * routing key and back at every boundary, destinations and malformed
 * keys. The names are test_ladder_naming.c's, the routing
 * test_ladder_routing.c's. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "duration.h"
#include "ladder.h"
#include "lt.h"

/* A number of units and what a function of it must give. */
struct units_want {
	uint64_t units;
	int want;
};

/* Fails, naming FN_NAME, the units and both results, unless FN gives
 * each of the N CASES what it wants. */
static void
expect_each(int (*fn)(uint64_t), const char *fn_name, const struct units_want *cases,
    size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int got = fn(cases[i].units);

		if (got != cases[i].want)
			fail_msg("%s(%llu) is %d, not %d", fn_name,
			    (unsigned long long)cases[i].units, got, cases[i].want);
	}
}

static void
test_levels_for(void **state)
{
	/* units: the longest delay, in units; levels: what it takes (-1:
	 * more than the ladder's 32 levels). */
	static const struct units_want cases[] = {
		{ 0, 1 }, { 1, 1 }, { 2, 2 }, { 3, 2 }, { 4, 3 }, { 4095, 12 }, { 4096, 13 },
		{ ((uint64_t)1 << 28) - 1, 28 }, { ((uint64_t)1 << 32) - 1, 32 },
		{ (uint64_t)1 << 32, -1 }, { UINT64_MAX, -1 },
	};

	(void)state;
	expect_each(ladder_levels_for, "ladder_levels_for", cases,
	    sizeof(cases) / sizeof(cases[0]));
}

static void
test_levels_for_12d(void **state)
{
	char err[256] = "";
	struct ladder l;
	int64_t ms;
	uint64_t units;
	int levels;

	(void)state;
	assert_int_equal(duration_parse("12d", &ms, err, sizeof(err)), 0);
	assert_int_equal(ms, 1036800000);
	levels = ladder_levels_for((uint64_t)(ms / 1000));
	assert_int_equal(levels, 20);
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, levels);
	assert_int_equal(ladder_encode(&l, ms, &units, err, sizeof(err)), 0);
	assert_int_equal(units, 1036800);
	assert_int_equal(ladder_max_units(&l), 1048575);
	assert_int_equal(ladder_max_delay_ms(&l), 1048575000);
	/* 19 levels are not enough. */
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 19);
	assert_int_equal(ladder_encode(&l, ms, &units, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 12d is beyond the ladder's maximum of "
	    "524287s (19 levels of 1s)");
}

/* A plan's max_delay limits ladder_encode below the ladder's maximum. */
static void
test_limit(void **state)
{
	char err[256] = "";
	struct ladder l;
	uint64_t units;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_int_equal(ladder_limit_ms(&l), ladder_max_delay_ms(&l));
	assert_int_equal(ladder_set_limit(&l, 30 * 86400000LL, err, sizeof(err)), 0);
	assert_int_equal(ladder_limit_ms(&l), 30 * 86400000LL);
	assert_int_equal(ladder_encode(&l, 30 * 86400000LL, &units, err, sizeof(err)), 0);
	assert_int_equal(units, 30 * 86400);
	assert_int_equal(ladder_encode(&l, 31 * 86400000LL, &units, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 31d is beyond max_delay 30d (the ladder "
	    "itself reaches 268435455s); expected at most 30d");
	assert_int_equal(ladder_encode(&l, 30 * 86400000LL + 1, &units, err,
	    sizeof(err)), -1);
	/* A limit is at least 1 ms and at most what the ladder reaches. */
	assert_int_equal(ladder_set_limit(&l, 0, err, sizeof(err)), -1);
	assert_int_equal(ladder_set_limit(&l, ladder_max_delay_ms(&l) + 1, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "expected 1ms to 268435455s"));
	assert_int_equal(ladder_limit_ms(&l), 30 * 86400000LL);
}

static void
test_init_checks(void **state)
{
	/* Prefixes refused, and a piece of what the refusal says ("": any). */
	static const struct {
		const char *prefix, *why;
	} bad_prefixes[] = {
		{ "a..b", "empty word" },
		{ ".a", "" },
		{ "a.", "" },
		{ ".", "" },
		{ "a b", "position 2" },
		{ "a/b", "'/'" },
		{ "a*", "" },
		{ "a#", "" },
	};
	char err[256], prefix[80];
	struct ladder l;

	(void)state;
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12,
	    err, sizeof(err)), 0);
	assert_int_equal(l.naming, LADDER_NAMING_CUTOVER);
	assert_string_equal(l.prefix, "delay");
	assert_int_equal(l.unit_ms, 1000);
	assert_int_equal(l.levels, 12);

	/* Prefix: [A-Za-z0-9_-] words separated by '.', 1 .. 64 characters. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "orders.delay",
	    1000, 12, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "A-z_9.x", 1000,
	    12, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, NULL, 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "prefix"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "", 1000, 12,
	    err, sizeof(err)), -1);
	memset(prefix, 'p', 64);
	prefix[64] = '\0';
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, prefix, 1000, 12,
	    err, sizeof(err)), 0);
	assert_string_equal(l.prefix, prefix);
	prefix[64] = 'p';
	prefix[65] = '\0';
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, prefix, 1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "65"));
	assert_non_null(strstr(err, "64"));
	for (size_t i = 0; i < sizeof(bad_prefixes) / sizeof(bad_prefixes[0]); i++) {
		err[0] = '\0';
		if (ladder_init(&l, LADDER_NAMING_CUTOVER, bad_prefixes[i].prefix, 1000, 12,
		    err, sizeof(err)) != -1 || strstr(err, bad_prefixes[i].why) == NULL)
			fail_msg("prefix '%s' was not refused saying '%s' ('%s')",
			    bad_prefixes[i].prefix, bad_prefixes[i].why, err);
	}

	/* The library styles ignore the prefix. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_NSERVICEBUS, "a..b", 1000,
	    28, err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, (enum ladder_naming)7, "delay", 1000, 12,
	    err, sizeof(err)), -1);

	/* Levels and unit. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, 0,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0 levels"));
	assert_non_null(strstr(err, "1 to 32"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, 33,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "33 levels"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1000, -1,
	    err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 32,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 0, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "0ms"));
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", -1000, 12,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "-1000ms"));
	assert_int_equal(ladder_init(NULL, LADDER_NAMING_CUTOVER, "d", 1000, 12,
	    err, sizeof(err)), -1);
	/* A NULL error buffer is allowed. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 0, 12,
	    NULL, 0), -1);
}

static void
test_overflow_guards(void **state)
{
	const uint64_t max32 = ((uint64_t)1 << 32) - 1;
	char err[512];
	struct ladder l;
	uint64_t units;
	int64_t unit;

	(void)state;
	/* One level of the largest unit: 1 x INT64_MAX fits. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", INT64_MAX, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_max_delay_ms(&l), INT64_MAX);
	assert_int_equal(ladder_level_ttl_ms(&l, 0), INT64_MAX);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", INT64_MAX, 2,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "overflows"));

	/* 32 levels: the unit may be at most INT64_MAX / (2^32 - 1). */
	unit = (int64_t)((uint64_t)INT64_MAX / max32);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", unit, 32,
	    err, sizeof(err)), 0);
	assert_true(ladder_max_delay_ms(&l) > 0);
	assert_int_equal(ladder_max_delay_ms(&l), (int64_t)max32 * unit);
	assert_int_equal(ladder_level_ttl_ms(&l, 31), ((int64_t)1 << 31) * unit);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_encode(&l, ladder_max_delay_ms(&l), &units, err,
	    sizeof(err)), 0);
	assert_int_equal(units, max32);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", unit + 1, 32,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "32 levels"));
	assert_non_null(strstr(err, "4294967295 units"));
	{
		char figure[32];

		snprintf(figure, sizeof(figure), "at most %" PRId64 "ms", unit);
		assert_non_null(strstr(err, figure));
	}

	/* Largest delay on a 1 ms ladder, and the ceiling at INT64_MAX. */
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 1, 32,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "d", 3, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &units, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "rounds up to 3074457345618258603 units"));

	/* A hand-built ladder that ladder_init would refuse is refused. */
	memset(&l, 0, sizeof(l));
	l.naming = LADDER_NAMING_CUTOVER;
	snprintf(l.prefix, sizeof(l.prefix), "d");
	l.unit_ms = INT64_MAX;
	l.levels = 32;
	assert_int_equal(ladder_max_units(&l), 0);
	assert_int_equal(ladder_max_delay_ms(&l), -1);
	assert_int_equal(ladder_level_ttl_ms(&l, 31), -1);
	assert_int_equal(ladder_encode(&l, 1, &units, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not valid"));
	l.unit_ms = 1000;
	l.levels = 40;
	assert_int_equal(ladder_encode(&l, 1, &units, err, sizeof(err)), -1);
	assert_int_equal(ladder_max_delay_ms(NULL), -1);
	assert_int_equal(ladder_encode(NULL, 1, &units, err, sizeof(err)), -1);
}

static void
test_max_and_ttl(void **state)
{
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_max_units(&l), 4095);
	assert_int_equal(ladder_max_delay_ms(&l), 4095000);
	assert_int_equal(ladder_level_ttl_ms(&l, 0), 1000);
	assert_int_equal(ladder_level_ttl_ms(&l, 1), 2000);
	assert_int_equal(ladder_level_ttl_ms(&l, 11), 2048000);
	assert_int_equal(ladder_level_ttl_ms(&l, 12), -1);
	assert_int_equal(ladder_level_ttl_ms(&l, -1), -1);
	lt_ladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_int_equal(ladder_max_units(&l), 268435455);
	assert_int_equal(ladder_level_ttl_ms(&l, 27), INT64_C(134217728000));
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "d", 1, 32);
	assert_int_equal(ladder_max_units(&l), UINT64_C(4294967295));
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "d", 250, 1);
	assert_int_equal(ladder_max_units(&l), 1);
	assert_int_equal(ladder_max_delay_ms(&l), 250);
}

static void
test_encode_boundaries(void **state)
{
	/* Delays a ladder of LEVELS levels of UNIT_MS takes, in whole units. */
	static const struct {
		int64_t unit_ms;
		int levels;
		int64_t ms;
		uint64_t units;
	} takes[] = {
		{ 1000, 12, 0, 0 },
		{ 1000, 12, 1, 1 },		/* sub-unit rounds up, never down */
		{ 1000, 12, 999, 1 },
		{ 1000, 12, 1000, 1 },
		{ 1000, 12, 1001, 2 },
		{ 1000, 12, 1200, 2 },
		{ 1000, 12, 2000, 2 },
		{ 1000, 12, 42000, 42 },
		{ 1000, 12, 4094001, 4095 },
		{ 1000, 12, 4095000, 4095 },	/* 2^L - 1 */
		{ 250, 4, 251, 2 },
		{ 250, 4, 3750, 15 },
	};
	char err[256];
	struct ladder l;
	uint64_t u;

	(void)state;
	for (size_t i = 0; i < sizeof(takes) / sizeof(takes[0]); i++) {
		lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", takes[i].unit_ms, takes[i].levels);
		u = UINT64_MAX;
		err[0] = '\0';
		if (ladder_encode(&l, takes[i].ms, &u, err, sizeof(err)) != 0 ||
		    u != takes[i].units)
			fail_msg("takes[%zu]: %" PRId64 " ms on %d levels of %" PRId64 " ms gave "
			    "%" PRIu64 " units ('%s'), want %" PRIu64, i, takes[i].ms,
			    takes[i].levels, takes[i].unit_ms, u, err, takes[i].units);
	}
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_encode(&l, 4095000, NULL, err, sizeof(err)), 0);

	u = 77;
	assert_int_equal(ladder_encode(&l, 4095001, &u, err, sizeof(err)), -1);
	assert_int_equal(u, 77);		/* untouched on error */
	assert_string_equal(err, "delay 4095001ms rounds up to 4096 units of 1s, "
	    "beyond the ladder's maximum of 4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, 4096000, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 4096s is beyond the ladder's maximum of "
	    "4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, 5000000, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 5000s is beyond the ladder's maximum of "
	    "4095s (12 levels of 1s)");
	assert_int_equal(ladder_encode(&l, -1, &u, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "-1ms is negative"));
	assert_int_equal(ladder_encode(&l, INT64_MIN, &u, err, sizeof(err)), -1);
	assert_int_equal(ladder_encode(&l, INT64_MAX, &u, err, sizeof(err)), -1);

	/* A 250 ms unit. */
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 250, 4);
	assert_int_equal(ladder_encode(&l, 3751, &u, err, sizeof(err)), -1);
	assert_string_equal(err, "delay 3751ms rounds up to 16 units of 250ms, "
	    "beyond the ladder's maximum of 3750ms (4 levels of 250ms)");
}

static void
test_entry_level(void **state)
{
	/* units: a delay, in units; want: the level it enters at, its
	 * highest set bit (-1: none). */
	static const struct units_want cases[] = {
		{ 0, -1 }, { 1, 0 }, { 2, 1 }, { 3, 1 }, { 42, 5 }, { 4095, 11 }, { 4096, 12 },
		{ UINT64_MAX, 63 },
	};

	(void)state;
	expect_each(ladder_entry_level, "ladder_entry_level", cases,
	    sizeof(cases) / sizeof(cases[0]));
}

static void
test_round_trip_all(void **state)
{
	char key[LADDER_KEY_MAX + 1], dest[LADDER_NAME_MAX], err[256] = "";
	struct ladder l;
	uint64_t n, back;
	int k;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	for (n = 0; n <= 4095; n++) {
		if (ladder_routing_key(&l, n, "email.delivery", key, sizeof(key),
		    err, sizeof(err)) != 0)
			fail_msg("key of %" PRIu64 ": %s", n, err);
		assert_int_equal(strlen(key), 24 + strlen("email.delivery"));
		for (k = 0; k < 12; k++) {
			assert_int_equal(key[2 * k], (n >> (11 - k)) & 1 ? '1' : '0');
			assert_int_equal(key[2 * k + 1], '.');
		}
		back = UINT64_MAX;
		dest[0] = '\0';
		if (ladder_parse_key(&l, key, &back, dest, sizeof(dest), err,
		    sizeof(err)) != 0)
			fail_msg("parse of %s: %s", key, err);
		assert_int_equal(back, n);
		assert_string_equal(dest, "email.delivery");
	}
	/* The extremes of the widest ladder. */
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	assert_int_equal(ladder_routing_key(&l, UINT64_C(4294967295), "d", key,
	    sizeof(key), err, sizeof(err)), 0);
	assert_int_equal(ladder_parse_key(&l, key, &back, dest, sizeof(dest), err,
	    sizeof(err)), 0);
	assert_int_equal(back, UINT64_C(4294967295));
	assert_int_equal(ladder_routing_key(&l, UINT64_C(4294967296), "d", key,
	    sizeof(key), err, sizeof(err)), -1);
	assert_non_null(strstr(err, "4294967296 units"));
	assert_non_null(strstr(err, "4294967295"));
}

static void
test_routing_key_examples(void **state)
{
	char key[LADDER_KEY_MAX + 1], err[256];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 6);
	assert_int_equal(ladder_routing_key(&l, 42, "email.delivery", key,
	    sizeof(key), err, sizeof(err)), 0);
	assert_string_equal(key, "1.0.1.0.1.0.email.delivery");
	assert_int_equal(ladder_routing_key(&l, 0, "q", key, sizeof(key), err,
	    sizeof(err)), 0);
	assert_string_equal(key, "0.0.0.0.0.0.q");
	assert_int_equal(ladder_routing_key(&l, 63, "q", key, sizeof(key), err,
	    sizeof(err)), 0);
	assert_string_equal(key, "1.1.1.1.1.1.q");
	assert_int_equal(ladder_routing_key(&l, 64, "q", key, sizeof(key), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "64 units"));
	assert_non_null(strstr(err, "at most 63"));
	assert_int_equal(ladder_routing_key(&l, 1, "a..b", key, sizeof(key), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));

	/* The buffer must hold the whole key; no key is ever cut short. */
	assert_int_equal(ladder_routing_key(&l, 1, "email", key, 17, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "18 bytes"));
	assert_int_equal(ladder_routing_key(&l, 1, "email", key, 18, err,
	    sizeof(err)), 0);
	assert_string_equal(key, "0.0.0.0.0.1.email");
	assert_int_equal(ladder_routing_key(&l, 1, "email", NULL, 0, err,
	    sizeof(err)), -1);
}

static void
test_destinations(void **state)
{
	char dest[300], key[300], got[LADDER_NAME_MAX], err[512];
	struct ladder l;
	uint64_t u;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_int_equal(ladder_check_destination(&l, "email", err, sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "email.delivery", err,
	    sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "a-b_c.d:e", err,
	    sizeof(err)), 0);
	assert_int_equal(ladder_check_destination(&l, "", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty"));
	assert_int_equal(ladder_check_destination(&l, NULL, err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, ".email", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "empty word"));
	assert_int_equal(ladder_check_destination(&l, "email.", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "a..b", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, ".", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "*", err, sizeof(err)), -1);
	assert_int_equal(ladder_check_destination(&l, "email.*", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'*' at byte 7"));
	assert_int_equal(ladder_check_destination(&l, "#.email", err, sizeof(err)), -1);
	assert_non_null(strstr(err, "'#' at byte 1"));
	assert_int_equal(ladder_check_destination(&l, "em#ail", err, sizeof(err)), -1);

	/* 12 levels take 24 bytes of the 255: a destination of 231 fits. */
	memset(dest, 'a', 231);
	dest[231] = '\0';
	dest[100] = '.';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), 0);
	assert_int_equal(ladder_routing_key(&l, 4095, dest, key, LADDER_KEY_MAX + 1,
	    err, sizeof(err)), 0);
	assert_int_equal(strlen(key), 255);
	assert_int_equal(ladder_parse_key(&l, key, &u, got, sizeof(got), err,
	    sizeof(err)), 0);
	assert_int_equal(u, 4095);
	assert_string_equal(got, dest);
	dest[231] = 'a';
	dest[232] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "232 bytes"));
	assert_non_null(strstr(err, "256-byte routing key"));
	assert_non_null(strstr(err, "at most 255"));
	assert_non_null(strstr(err, "at most 231"));
	assert_int_equal(ladder_routing_key(&l, 1, dest, key, sizeof(key), err,
	    sizeof(err)), -1);
	/* The same 256-byte key is refused when parsed. */
	memcpy(key, "0.0.0.0.0.0.0.0.0.0.0.1.", 24);
	memcpy(key + 24, dest, 233);
	assert_int_equal(strlen(key), 256);
	assert_int_equal(ladder_parse_key(&l, key, &u, got, sizeof(got), err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "256 bytes"));
	assert_non_null(strstr(err, "at most 255"));

	/* 32 levels take 64 bytes: 191 is the limit. */
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1, 32);
	dest[191] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), 0);
	dest[191] = 'a';
	dest[192] = '\0';
	assert_int_equal(ladder_check_destination(&l, dest, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 191"));
}

static void
test_parse_malformed(void **state)
{
	static const char *bad[] = {
		"",			/* no words */
		"0.1",			/* too few words */
		"0.1.0",		/* bit words only, no destination */
		"0.1.0.",		/* empty destination */
		"2.0.0.d",		/* bit word not 0/1 */
		"0.1.2.d",
		"01.0.0.d",		/* two digits */
		"0.10.0.d",
		"00.0.d",
		"..0.0.d",		/* empty bit word */
		"0..0.d",
		"0.1.0.d.",		/* trailing dot */
		"0.1.0.d..e",		/* empty word in destination */
		"0.1.0..d",		/* empty first destination word */
		"0.1.0.d*",		/* wildcard in destination */
		"0.1.0.#",
		"a.b.c.d",
		" 0.1.0.d",
	};
	/* What the error of a refused key says: which word, and why. */
	static const struct {
		const char *key;
		const char *phrases[2];	/* NULL: no second phrase */
	} says[] = {
		{ "0.1", { "too few words", "3 bit words" } },
		{ "0.1.2.d", { "word 3 is \"2\"", "expected \"0\" or \"1\"" } },
		{ "01.0.0.d", { "word 1 is \"01\"", NULL } },
		{ "0..0.d", { "word 2 is \"\"", NULL } },
		{ "0.1.0.", { "no destination", NULL } },
		{ "0.1.0.d.", { "empty word", NULL } },
	};
	char dest[LADDER_NAME_MAX], err[256];
	struct ladder l;
	uint64_t u;
	size_t i;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 3);
	assert_int_equal(ladder_parse_key(&l, "1.0.1.d", &u, dest, sizeof(dest),
	    err, sizeof(err)), 0);
	assert_int_equal(u, 5);
	assert_string_equal(dest, "d");
	assert_int_equal(ladder_parse_key(&l, "1.1.1.a.b.c", &u, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(u, 7);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		u = 99;
		err[0] = '\0';
		if (ladder_parse_key(&l, bad[i], &u, dest, sizeof(dest), err,
		    sizeof(err)) != -1)
			fail_msg("key \"%s\" was accepted", bad[i]);
		assert_int_equal(u, 99);
		assert_true(err[0] != '\0');
	}
	for (i = 0; i < sizeof(says) / sizeof(says[0]); i++) {
		err[0] = '\0';
		if (ladder_parse_key(&l, says[i].key, &u, dest, sizeof(dest), err,
		    sizeof(err)) != -1)
			fail_msg("key \"%s\" was accepted", says[i].key);
		for (int k = 0; k < 2 && says[i].phrases[k] != NULL; k++)
			if (strstr(err, says[i].phrases[k]) == NULL)
				fail_msg("key \"%s\": the error \"%s\" does not say \"%s\"",
				    says[i].key, err, says[i].phrases[k]);
	}
	assert_int_equal(ladder_parse_key(&l, NULL, &u, dest, sizeof(dest),
	    err, sizeof(err)), -1);
	/* A destination buffer too small is an error, not a cut name. */
	assert_int_equal(ladder_parse_key(&l, "0.1.0.email", &u, dest, 5,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "6 bytes"));
	assert_int_equal(ladder_parse_key(&l, "0.1.0.email", &u, dest, 6,
	    err, sizeof(err)), 0);
	assert_string_equal(dest, "email");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_levels_for),
	cmocka_unit_test(test_levels_for_12d),
	cmocka_unit_test(test_limit),
	cmocka_unit_test(test_init_checks),
	cmocka_unit_test(test_overflow_guards),
	cmocka_unit_test(test_max_and_ttl),
	cmocka_unit_test(test_encode_boundaries),
	cmocka_unit_test(test_entry_level),
	cmocka_unit_test(test_round_trip_all),
	cmocka_unit_test(test_routing_key_examples),
	cmocka_unit_test(test_destinations),
	cmocka_unit_test(test_parse_malformed))
