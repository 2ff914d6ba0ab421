/* fuzz_outcome: what every loader the fuzz targets drive must end in. */
#ifndef CUTOVER_FUZZ_OUTCOME_H
#define CUTOVER_FUZZ_OUTCOME_H

#include <stdlib.h>

#include "plan.h"

/* Aborts (a finding) unless a loader's outcome holds together: status RC 0
 * with what it made (MADE non-NULL) and no errors, or else errors and
 * nothing made; each error is formatted, as a person would read it, so
 * that a bad position or message is found too. */
static inline void
fuzz_outcome(int rc, const void *made, const struct plan_errors *errs)
{
	char line[512];

	if (rc == 0) {
		if (made == NULL || errs->n != 0)
			abort();	/* success means something made and no errors */
		return;
	}
	if (made != NULL || errs->n == 0)
		abort();	/* failure means errors and nothing made */
	for (size_t i = 0; i < errs->n; i++)
		(void)plan_error_format(errs, i, line, sizeof(line));
}

#endif
