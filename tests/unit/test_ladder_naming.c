/* test_ladder_naming: the naming styles' table (ladder_naming.c) — the
 * styles' names and their list, and the level, delivery and parking names
 * each style gives. */

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

static void
test_names_cutover(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_CUTOVER, "delay", 1000, 12);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)), "delay.level.00");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)), "delay.level.00");
	assert_string_equal(ladder_level_exchange(&l, 7, n, sizeof(n)), "delay.level.07");
	assert_string_equal(ladder_level_queue(&l, 11, n, sizeof(n)), "delay.level.11");
	assert_string_equal(ladder_level_exchange(&l, 12, n, sizeof(n)), "");
	assert_string_equal(ladder_level_exchange(&l, -1, n, sizeof(n)), "");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)), "delay.delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)), "delay.parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)), "delay.parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "delay.delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 1, n, sizeof(n)),
	    "delay.level.00");
	assert_string_equal(ladder_dead_letter_exchange(&l, 11, n, sizeof(n)),
	    "delay.level.10");
	assert_string_equal(ladder_dead_letter_exchange(&l, 12, n, sizeof(n)), "");

	lt_ladder(&l, LADDER_NAMING_CUTOVER, "orders.delay", 1000, 32);
	assert_string_equal(ladder_level_exchange(&l, 31, n, sizeof(n)),
	    "orders.delay.level.31");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "orders.delay.delivery");

	/* A name that does not fit is left empty, never cut short. */
	assert_string_equal(ladder_level_exchange(&l, 31, n, 21), "");
	assert_string_equal(ladder_level_exchange(&l, 31, n, 22),
	    "orders.delay.level.31");
	assert_string_equal(ladder_delivery_exchange(&l, n, 5), "");
	assert_null(ladder_delivery_exchange(&l, NULL, 0));
}

static void
test_names_kombu(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_KOMBU, NULL, 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)), "celery_delayed_0");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)), "celery_delayed_0");
	assert_string_equal(ladder_level_exchange(&l, 9, n, sizeof(n)), "celery_delayed_9");
	assert_string_equal(ladder_level_queue(&l, 10, n, sizeof(n)), "celery_delayed_10");
	assert_string_equal(ladder_level_exchange(&l, 27, n, sizeof(n)), "celery_delayed_27");
	assert_string_equal(ladder_level_exchange(&l, 28, n, sizeof(n)), "");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "celery_delayed_delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)),
	    "celery_delayed_parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "celery_delayed_parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "celery_delayed_delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 27, n, sizeof(n)),
	    "celery_delayed_26");
	assert_string_equal(ladder_entry_exchange(&l, 268435455, n, sizeof(n)),
	    "celery_delayed_27");
	/* Kombu's prefix P (native_delayed_delivery.py):
	 * P_celery_delayed_K and P_celery_delayed_delivery. */
	lt_ladder(&l, LADDER_NAMING_KOMBU, "p", 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 3, n, sizeof(n)), "p_celery_delayed_3");
	assert_string_equal(ladder_level_queue(&l, 27, n, sizeof(n)), "p_celery_delayed_27");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "p_celery_delayed_delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "p_celery_delayed_delivery");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "p_celery_delayed_parking");
	/* An empty prefix is none, as in Kombu. */
	lt_ladder(&l, LADDER_NAMING_KOMBU, "", 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 3, n, sizeof(n)), "celery_delayed_3");
}

static void
test_names_nservicebus(void **state)
{
	char n[LADDER_NAME_MAX];
	struct ladder l;

	(void)state;
	lt_ladder(&l, LADDER_NAMING_NSERVICEBUS, NULL, 1000, 28);
	assert_string_equal(ladder_level_exchange(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-level-00");
	assert_string_equal(ladder_level_queue(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-level-00");
	assert_string_equal(ladder_level_exchange(&l, 9, n, sizeof(n)),
	    "nsb.v2.delay-level-09");
	assert_string_equal(ladder_level_queue(&l, 27, n, sizeof(n)),
	    "nsb.v2.delay-level-27");
	assert_string_equal(ladder_delivery_exchange(&l, n, sizeof(n)),
	    "nsb.v2.delay-delivery");
	assert_string_equal(ladder_parking_exchange(&l, n, sizeof(n)),
	    "nsb.v2.delay-parking");
	assert_string_equal(ladder_parking_queue(&l, n, sizeof(n)),
	    "nsb.v2.delay-parking");
	assert_string_equal(ladder_dead_letter_exchange(&l, 0, n, sizeof(n)),
	    "nsb.v2.delay-delivery");
	assert_string_equal(ladder_dead_letter_exchange(&l, 10, n, sizeof(n)),
	    "nsb.v2.delay-level-09");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_naming_names),
	cmocka_unit_test(test_naming_list),
	cmocka_unit_test(test_names_cutover),
	cmocka_unit_test(test_names_kombu),
	cmocka_unit_test(test_names_nservicebus))
