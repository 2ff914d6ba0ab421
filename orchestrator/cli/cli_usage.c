/* cli_usage: a usage error, said the same way by every verb: the verb, the
 * message and its usage line, exit status CLI_USAGE. */
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

int
cli_usage_error(const char *verb, const char *usage_line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "cutover %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nusage: %s\n", usage_line);
	return CLI_USAGE;
}
