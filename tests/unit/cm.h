/* cm: the one main() of a cmocka test program — its tests, in order, run
 * as one group, so a program lists its tests and nothing else. */
#ifndef CUTOVER_TEST_CM_H
#define CUTOVER_TEST_CM_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

/* CM_MAIN(SETUP, TEARDOWN, TEST...): main() running each TEST (a
 * cmocka_unit_test or one of its kin) as one group, with the group's SETUP
 * and TEARDOWN (NULL for none); it exits with the number that failed, and
 * cmocka names each failed test and says why. */
#define CM_MAIN(setup, teardown, ...)                                          \
	int main(void)                                                         \
	{                                                                      \
		const struct CMUnitTest cm_tests[] = { __VA_ARGS__ };           \
		return cmocka_run_group_tests(cm_tests, setup, teardown);      \
	}

#endif
