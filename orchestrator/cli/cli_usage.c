/* cli_usage: what every verb says the same way: a usage error (the verb,
 * the message and its usage line, exit status CLI_USAGE), and who the
 * user is, for the hints that must run as printed. */
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

const char *
cli_user_name(void)
{
	const struct passwd *pw = getpwuid(geteuid());
	const char *u = getenv("USER");

	if (u != NULL && *u != '\0')
		return u;
	return pw != NULL && pw->pw_name != NULL ? pw->pw_name : "operator";
}
