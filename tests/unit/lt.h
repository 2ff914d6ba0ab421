/* lt: what the ladder's test files share — a ladder made or the test
 * failed. */
#ifndef CUTOVER_TEST_LT_H
#define CUTOVER_TEST_LT_H

#include <stdint.h>

#include "ladder.h"

/* ladder_init of L with these arguments; fails the test, with
 * ladder_init's message, when it refuses them. */
void lt_ladder(struct ladder *l, enum ladder_naming naming, const char *prefix,
    int64_t unit_ms, int levels);

#endif
