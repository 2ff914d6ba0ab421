/* test_ladder_naming: the naming styles' table (ladder_naming.c) — the
 * styles' names and their list, and every name each style gives: level,
 * delivery, parking, dead-letter and entry exchanges, and the bindings'
 * patterns. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "duration.h"
#include "ladder.h"
#include "lt.h"

static void
test_naming_names(void **state)
{
	enum ladder_naming n;

	(void)state;
	assert_string_equal(ladder_naming_name(LADDER_NAMING_CUTOVER), "cutover");
	assert_string_equal(ladder_naming_name(LADDER_NAMING_KOMBU), "kombu");
	assert_string_equal(ladder_naming_name(LADDER_NAMING_NSERVICEBUS), "nservicebus");
	assert_int_equal(ladder_naming_parse("cutover", &n), 0);
	assert_int_equal(n, LADDER_NAMING_CUTOVER);
	assert_int_equal(ladder_naming_parse("kombu", &n), 0);
	assert_int_equal(n, LADDER_NAMING_KOMBU);
	assert_int_equal(ladder_naming_parse("nservicebus", &n), 0);
	assert_int_equal(n, LADDER_NAMING_NSERVICEBUS);
	assert_int_equal(ladder_naming_parse("Kombu", &n), -1);
	assert_int_equal(ladder_naming_parse("", &n), -1);
	assert_int_equal(ladder_naming_parse(NULL, &n), -1);
	assert_int_equal(ladder_naming_parse("celery", &n), -1);
}

/* The list of styles, as messages and the usage line print it. */
static void
test_naming_list(void **state)
{
	char out[64], tiny[8];

	(void)state;
	assert_string_equal(ladder_naming_list(", ", " or ", out, sizeof(out)),
	    "cutover, kombu or nservicebus");
	assert_string_equal(ladder_naming_list("|", "|", out, sizeof(out)),
	    "cutover|kombu|nservicebus");
	assert_string_equal(ladder_naming_list(", ", " or ", tiny, sizeof(tiny)), "");
	assert_null(ladder_naming_list(", ", " or ", NULL, 0));
}

/* Which of a ladder's names a case asks for, and how it is asked: each
 * kind's function by the one argument it takes (a level, a delay in
 * units, or none), the other two NULL; its name for the messages. */
enum name_kind {
	LEVEL_EXCHANGE, LEVEL_QUEUE, DEAD_LETTER, WAIT, BYPASS, ENTRY,
	DELIVERY, PARKING_EXCHANGE, PARKING_QUEUE,
};
static const struct {
	const char *fn;
	char *(*by_level)(const struct ladder *, int, char *, size_t);
	char *(*by_units)(const struct ladder *, uint64_t, char *, size_t);
	char *(*whole)(const struct ladder *, char *, size_t);
} name_kinds[] = {
	[LEVEL_EXCHANGE] = { "ladder_level_exchange", ladder_level_exchange, NULL, NULL },
	[LEVEL_QUEUE] = { "ladder_level_queue", ladder_level_queue, NULL, NULL },
	[DEAD_LETTER] = { "ladder_dead_letter_exchange", ladder_dead_letter_exchange, NULL, NULL },
	[WAIT] = { "ladder_wait_pattern", ladder_wait_pattern, NULL, NULL },
	[BYPASS] = { "ladder_bypass_pattern", ladder_bypass_pattern, NULL, NULL },
	[ENTRY] = { "ladder_entry_exchange", NULL, ladder_entry_exchange, NULL },
	[DELIVERY] = { "ladder_delivery_exchange", NULL, NULL, ladder_delivery_exchange },
	[PARKING_EXCHANGE] = { "ladder_parking_exchange", NULL, NULL, ladder_parking_exchange },
	[PARKING_QUEUE] = { "ladder_parking_queue", NULL, NULL, ladder_parking_queue },
};

#define CUTOVER LADDER_NAMING_CUTOVER
#define KOMBU LADDER_NAMING_KOMBU
#define NSB LADDER_NAMING_NSERVICEBUS

/* Every name a ladder gives, each style's: on the ladder of NAMING, PREFIX
 * (NULL for none) and LEVELS levels of 1s, the KIND name for ARG (a level,
 * or for ENTRY a delay in units; the ladder-wide names take none) is WANT,
 * "" where there is none. */
static const struct {
	enum ladder_naming naming;
	const char *prefix;
	int levels;
	enum name_kind kind;
	int64_t arg;
	const char *want;
} names[] = {
	{ CUTOVER, "delay", 12, LEVEL_EXCHANGE, 0, "delay.level.00" },
	{ CUTOVER, "delay", 12, LEVEL_QUEUE, 0, "delay.level.00" },
	{ CUTOVER, "delay", 12, LEVEL_EXCHANGE, 7, "delay.level.07" },
	{ CUTOVER, "delay", 12, LEVEL_QUEUE, 11, "delay.level.11" },
	{ CUTOVER, "delay", 12, LEVEL_EXCHANGE, 12, "" },
	{ CUTOVER, "delay", 12, LEVEL_EXCHANGE, -1, "" },
	{ CUTOVER, "delay", 12, DELIVERY, 0, "delay.delivery" },
	{ CUTOVER, "delay", 12, PARKING_EXCHANGE, 0, "delay.parking" },
	{ CUTOVER, "delay", 12, PARKING_QUEUE, 0, "delay.parking" },
	{ CUTOVER, "delay", 12, DEAD_LETTER, 0, "delay.delivery" },
	{ CUTOVER, "delay", 12, DEAD_LETTER, 1, "delay.level.00" },
	{ CUTOVER, "delay", 12, DEAD_LETTER, 11, "delay.level.10" },
	{ CUTOVER, "delay", 12, DEAD_LETTER, 12, "" },
	/* The exchange a delay of so many units enters the ladder at. */
	{ CUTOVER, "delay", 12, ENTRY, 0, "delay.delivery" },
	{ CUTOVER, "delay", 12, ENTRY, 1, "delay.level.00" },
	{ CUTOVER, "delay", 12, ENTRY, 42, "delay.level.05" },
	{ CUTOVER, "delay", 12, ENTRY, 4095, "delay.level.11" },
	{ CUTOVER, "delay", 12, ENTRY, 4096, "" },
	/* The bindings' patterns, level by level, on a ladder of 6. */
	{ CUTOVER, "delay", 6, WAIT, 5, "1.#" },
	{ CUTOVER, "delay", 6, WAIT, 4, "*.1.#" },
	{ CUTOVER, "delay", 6, WAIT, 0, "*.*.*.*.*.1.#" },
	{ CUTOVER, "delay", 6, BYPASS, 5, "0.#" },
	{ CUTOVER, "delay", 6, BYPASS, 0, "*.*.*.*.*.0.#" },
	{ CUTOVER, "delay", 6, WAIT, 6, "" },
	{ CUTOVER, "delay", 6, BYPASS, -1, "" },
	{ CUTOVER, "orders.delay", 32, LEVEL_EXCHANGE, 31, "orders.delay.level.31" },
	{ CUTOVER, "orders.delay", 32, DELIVERY, 0, "orders.delay.delivery" },
	{ KOMBU, NULL, 28, LEVEL_EXCHANGE, 0, "celery_delayed_0" },
	{ KOMBU, NULL, 28, LEVEL_QUEUE, 0, "celery_delayed_0" },
	{ KOMBU, NULL, 28, LEVEL_EXCHANGE, 9, "celery_delayed_9" },
	{ KOMBU, NULL, 28, LEVEL_QUEUE, 10, "celery_delayed_10" },
	{ KOMBU, NULL, 28, LEVEL_EXCHANGE, 27, "celery_delayed_27" },
	{ KOMBU, NULL, 28, LEVEL_EXCHANGE, 28, "" },
	{ KOMBU, NULL, 28, DELIVERY, 0, "celery_delayed_delivery" },
	{ KOMBU, NULL, 28, PARKING_EXCHANGE, 0, "celery_delayed_parking" },
	{ KOMBU, NULL, 28, PARKING_QUEUE, 0, "celery_delayed_parking" },
	{ KOMBU, NULL, 28, DEAD_LETTER, 0, "celery_delayed_delivery" },
	{ KOMBU, NULL, 28, DEAD_LETTER, 27, "celery_delayed_26" },
	{ KOMBU, NULL, 28, ENTRY, 268435455, "celery_delayed_27" },
	/* Kombu's prefix P (native_delayed_delivery.py):
	 * P_celery_delayed_K and P_celery_delayed_delivery. */
	{ KOMBU, "p", 28, LEVEL_EXCHANGE, 3, "p_celery_delayed_3" },
	{ KOMBU, "p", 28, LEVEL_QUEUE, 27, "p_celery_delayed_27" },
	{ KOMBU, "p", 28, DELIVERY, 0, "p_celery_delayed_delivery" },
	{ KOMBU, "p", 28, DEAD_LETTER, 0, "p_celery_delayed_delivery" },
	{ KOMBU, "p", 28, PARKING_QUEUE, 0, "p_celery_delayed_parking" },
	/* An empty prefix is none, as in Kombu. */
	{ KOMBU, "", 28, LEVEL_EXCHANGE, 3, "celery_delayed_3" },
	{ NSB, NULL, 28, LEVEL_EXCHANGE, 0, "nsb.v2.delay-level-00" },
	{ NSB, NULL, 28, LEVEL_QUEUE, 0, "nsb.v2.delay-level-00" },
	{ NSB, NULL, 28, LEVEL_EXCHANGE, 9, "nsb.v2.delay-level-09" },
	{ NSB, NULL, 28, LEVEL_QUEUE, 27, "nsb.v2.delay-level-27" },
	{ NSB, NULL, 28, DELIVERY, 0, "nsb.v2.delay-delivery" },
	{ NSB, NULL, 28, PARKING_EXCHANGE, 0, "nsb.v2.delay-parking" },
	{ NSB, NULL, 28, PARKING_QUEUE, 0, "nsb.v2.delay-parking" },
	{ NSB, NULL, 28, DEAD_LETTER, 0, "nsb.v2.delay-delivery" },
	{ NSB, NULL, 28, DEAD_LETTER, 10, "nsb.v2.delay-level-09" },
};

/* Each row of names on its own ladder; a failure names the row (its
 * index, ladder, function and argument), what it gave and what it wants. */
static void
test_names(void **state)
{
	char got[LADDER_NAME_MAX];
	const char *gave;
	struct ladder l;

	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		lt_ladder(&l, names[i].naming, names[i].prefix, 1000, names[i].levels);
		if (name_kinds[names[i].kind].by_level != NULL)
			gave = name_kinds[names[i].kind].by_level(&l, (int)names[i].arg,
			    got, sizeof(got));
		else if (name_kinds[names[i].kind].by_units != NULL)
			gave = name_kinds[names[i].kind].by_units(&l, (uint64_t)names[i].arg,
			    got, sizeof(got));
		else
			gave = name_kinds[names[i].kind].whole(&l, got, sizeof(got));
		if (gave == NULL || strcmp(gave, names[i].want) != 0)
			fail_msg("names[%zu] (%s, prefix '%s', %d levels): %s(%" PRId64
			    ") gave '%s', want '%s'", i, ladder_naming_name(names[i].naming),
			    names[i].prefix ? names[i].prefix : "(none)", names[i].levels,
			    name_kinds[names[i].kind].fn, names[i].arg,
			    gave ? gave : "(null)", names[i].want);
	}
}

/* A name that does not fit is left empty, never cut short. */
static void
test_name_that_does_not_fit(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "orders.delay", 1000, 32);
	assert_string_equal(ladder_level_exchange(&l, 31, n, 21), "");
	assert_string_equal(ladder_level_exchange(&l, 31, n, 22),
	    "orders.delay.level.31");
	assert_string_equal(ladder_delivery_exchange(&l, n, 5), "");
	assert_null(ladder_delivery_exchange(&l, NULL, 0));
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_naming_names),
	cmocka_unit_test(test_naming_list),
	cmocka_unit_test(test_names),
	cmocka_unit_test(test_name_that_does_not_fit))
