/* fuzz_export: libFuzzer target over the offline check of a history
 * export (export_verify: JSON or CSV read from untrusted bytes, then the
 * chain walked); it must answer 0 or 1, never crash or run away. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "export_verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct export_check c;
	char err[256];

	if (export_verify((const char *)data, size, &c, err, sizeof(err)) == -1 &&
	    size < 1024 * 1024)
		abort();	/* out of memory on a small input */
	return 0;
}
