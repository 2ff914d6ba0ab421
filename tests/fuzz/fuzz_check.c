/* fuzz_check: libFuzzer target over `cutover check`'s whole path for one
 * plan (check_plan: load, validate, build the topology, render the dry run
 * and the design review as text, and the JSON result as --json prints it),
 * output to /dev/null. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	json_t *results;
	char *text;

	if (devnull == NULL && (devnull = fopen("/dev/null", "w")) == NULL)
		abort();
	if ((results = json_array()) == NULL)
		abort();
	(void)check_plan("fuzz.yaml", (const char *)data, size, 0, devnull, devnull,
	    results);
	if (json_array_size(results) != 1)
		abort();	/* every plan gets a result */
	if ((text = json_dumps(results, JSON_INDENT(2) | JSON_PRESERVE_ORDER)) == NULL)
		abort();
	fputs(text, devnull);
	free(text);
	json_decref(results);
	return 0;
}
