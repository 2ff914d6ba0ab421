/* fuzz_plan_load: libFuzzer target over the plan loader (plan_load_buffer:
 * YAML, every key and value, plan_validate, the old selection's patterns).
 * Any input must end in a plan or in errors with a position, within
 * libFuzzer's time and memory limits, and clean under ASan and UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char line[512];

	if (plan_load_buffer("fuzz.yaml", (const char *)data, size, &p, &errs) == 0) {
		if (p == NULL || errs.n != 0)
			abort();	/* success means a plan and no errors */
	} else {
		if (p != NULL || errs.n == 0)
			abort();	/* failure means errors and no plan */
		for (size_t i = 0; i < errs.n; i++)
			(void)plan_error_format(&errs, i, line, sizeof(line));
	}
	plan_free(p);
	plan_errors_free(&errs);
	return 0;
}
