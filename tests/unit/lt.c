/* lt: the ladder tests' shared helper (lt.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ladder.h"
#include "lt.h"

void
lt_ladder(struct ladder *l, enum ladder_naming naming, const char *prefix,
    int64_t unit_ms, int levels)
{
	char err[256] = "";

	if (ladder_init(l, naming, prefix, unit_ms, levels, err, sizeof(err)) != 0)
		fail_msg("ladder_init: %s", err);
}
