/* test_strblocks: short strings copied into large blocks. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "strblocks.h"

/* Enough names to fill several blocks: every copy reads back as it was
 * put, where it was put, after the blocks that followed it were made. */
static void
test_copies_stay(void **state)
{
	enum { N = 20000 };
	struct strblocks *b = NULL;
	const char **at = calloc(N, sizeof(*at));
	char name[64];

	(void)state;
	assert_non_null(at);
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "delay.queue.%05d.ms", i);
		assert_non_null(at[i] = strblocks_put(&b, name));
		assert_ptr_not_equal(at[i], name);
	}
	for (int i = 0; i < N; i++) {
		snprintf(name, sizeof(name), "delay.queue.%05d.ms", i);
		assert_string_equal(at[i], name);
	}
	strblocks_free(&b);
	assert_null(b);
	free(at);
}

/* A string longer than a block gets a block of its own; the empty string
 * is a string too; the blocks go on after both. */
static void
test_long_and_empty(void **state)
{
	struct strblocks *b = NULL;
	char *big = malloc(STRBLOCKS_SIZE * 2);
	const char *a, *e, *c;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', STRBLOCKS_SIZE * 2 - 1);
	big[STRBLOCKS_SIZE * 2 - 1] = '\0';
	assert_non_null(a = strblocks_put(&b, "before"));
	assert_non_null(c = strblocks_put(&b, big));
	assert_non_null(e = strblocks_put(&b, ""));
	assert_string_equal(a, "before");
	assert_int_equal(strlen(c), STRBLOCKS_SIZE * 2 - 1);
	assert_memory_equal(c, big, STRBLOCKS_SIZE * 2);
	assert_string_equal(e, "");
	assert_string_equal(strblocks_put(&b, "after"), "after");
	strblocks_free(&b);
	strblocks_free(&b);	/* none left: nothing to do */
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copies_stay),
		cmocka_unit_test(test_long_and_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
