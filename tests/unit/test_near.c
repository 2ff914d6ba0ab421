/* test_near: the word a mistyped one most likely meant (base/near.c):
 * distances with swaps, case and '-' for '_', the bound a third of the
 * word, no guess on a tie or past the bound. */

#include <string.h>

#include "cm.h"
#include "near.h"

static void
test_distance(void **state)
{
	static const struct {
		const char *a, *b;
		size_t d;
	} cases[] = {
		{ "status", "status", 0 },
		{ "remove-old", "remove_old", 0 },	/* '-' is '_' */
		{ "Remove_Old", "remove_old", 0 },	/* case */
		{ "stauts", "status", 1 },		/* a swap is one slip */
		{ "statsu", "status", 1 },
		{ "aprove", "approve", 1 },		/* a letter left out */
		{ "approvee", "approve", 1 },		/* one too many */
		{ "flap", "flip", 1 },			/* one changed */
		{ "", "run", 3 },
		{ "measure_horizon", "flip", 6 },	/* beyond the limit: limit + 1 */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t d = near_distance(cases[i].a, cases[i].b, 5);

		if (d != cases[i].d)
			fail_msg("distance('%s', '%s') is %zu, expected %zu", cases[i].a,
			    cases[i].b, d, cases[i].d);
	}
	/* Words over 64 letters are never near anything. */
	{
		char long_word[80];

		memset(long_word, 'a', sizeof(long_word) - 1);
		long_word[sizeof(long_word) - 1] = '\0';
		assert_int_equal(near_distance(long_word, long_word, 3), 4);
	}
}

static void
test_word(void **state)
{
	static const char *const verbs[] = { "check", "status", "serve", "submit", "run",
		"approve", "retry", "abort", "ack", "archive", "history", "operators" };
	static const char *const kinds[] = { "measure_horizon", "flip", "watch",
		"move_old", "remove_old" };
	static const char *const plans[] = { "demo", "demi", "orders" };
	const size_t nv = sizeof(verbs) / sizeof(verbs[0]);

	(void)state;
	assert_string_equal(near_word("statsu", verbs, nv), "status");
	assert_string_equal(near_word("histroy", verbs, nv), "history");
	assert_string_equal(near_word("operator", verbs, nv), "operators");
	assert_string_equal(near_word("rnu", verbs, nv), "run");
	assert_string_equal(near_word("remove-old", kinds, 5), "remove_old");
	assert_string_equal(near_word("remove_olf", kinds, 5), "remove_old");
	/* Too far: no guess. */
	assert_null(near_word("xyzzy", verbs, nv));
	assert_null(near_word("x", verbs, nv));
	assert_null(near_word("measure", kinds, 5));
	/* Two as near as each other: no guess either. */
	assert_null(near_word("dema", plans, 3));
	assert_string_equal(near_word("ordres", plans, 3), "orders");
	/* NULL entries are passed over. */
	{
		const char *some[] = { NULL, "flip", NULL };

		assert_string_equal(near_word("flap", some, 3), "flip");
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_distance),
	cmocka_unit_test(test_word))
