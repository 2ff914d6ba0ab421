/* fuzz_serve_config: libFuzzer target over serve.yaml's loader
 * (serve_config_load_buffer: YAML, every key and value, the notifiers).
 * Any input must end in a configuration or in errors with a position,
 * within libFuzzer's time and memory limits, and clean under ASan and
 * UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_outcome.h"
#include "serve_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;
	int rc = serve_config_load_buffer("fuzz.yaml", (const char *)data, size, &c, &errs);

	fuzz_outcome(rc, c, &errs);
	serve_config_free(c);
	plan_errors_free(&errs);
	return 0;
}
