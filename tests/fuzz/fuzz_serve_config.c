/* fuzz_serve_config: libFuzzer target over serve.yaml's loader
 * (serve_config_load_buffer: YAML, every key and value, the notifiers).
 * Any input must end in a configuration or in errors with a position,
 * within libFuzzer's time and memory limits, and clean under ASan and
 * UBSan. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "serve_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;
	char line[512];

	if (serve_config_load_buffer("fuzz.yaml", (const char *)data, size, &c, &errs) == 0) {
		if (c == NULL || errs.n != 0)
			abort();	/* success means a configuration and no errors */
	} else {
		if (c != NULL || errs.n == 0)
			abort();	/* failure means errors and no configuration */
		for (size_t i = 0; i < errs.n; i++)
			(void)plan_error_format(&errs, i, line, sizeof(line));
	}
	serve_config_free(c);
	plan_errors_free(&errs);
	return 0;
}
