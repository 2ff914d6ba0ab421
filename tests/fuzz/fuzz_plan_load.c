/* fuzz_plan_load: libFuzzer target over the plan loader (plan_load_buffer:
 * YAML, every key and value, plan_validate, the old selection's patterns).
 * Any input must end in a plan or in errors with a position, within
 * libFuzzer's time and memory limits, and clean under ASan and UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_outcome.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	int rc = plan_load_buffer("fuzz.yaml", (const char *)data, size, &p, &errs);

	fuzz_outcome(rc, p, &errs);
	plan_free(p);
	plan_errors_free(&errs);
	return 0;
}
