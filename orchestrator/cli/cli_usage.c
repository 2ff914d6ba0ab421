/* cli_usage: what every verb says the same way: its options read (--help,
 * an unknown or incomplete option), a usage error (the verb, the message
 * and its usage line, exit status CLI_USAGE), and who the user is, for the
 * hints that must run as printed. */
#include <getopt.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"

/* Whether an option of OPTS takes a value: then what getopt_long refuses
 * may be one given without it. */
static bool
takes_values(const struct option *opts)
{
	for (; opts->name != NULL; opts++)
		if (opts->has_arg != no_argument)
			return true;
	return false;
}

int
cli_options_read(const struct cli_options *o, int argc, char **argv)
{
	const char *missing;
	int c, rc;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", o->opts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: %s\n", o->usage);
			if (o->help != NULL)
				o->help(o->data);
			return CLI_OK;
		}
		if (c != '?') {
			if ((rc = o->take(c, optarg, o->data)) != CLI_GO_ON)
				return rc;
			continue;
		}
		/* getopt_long names in optopt a known option that lacked its
		 * value, and leaves it 0 for one it does not know. */
		if (optopt != 0 && o->incomplete != NULL &&
		    (missing = o->incomplete(optopt)) != NULL)
			return cli_usage_error(o->verb, o->usage, "%s", missing);
		return cli_usage_error(o->verb, o->usage, takes_values(o->opts) ?
		    "unknown or incomplete option '%s'" : "unknown option '%s'",
		    argv[optind - 1]);
	}
	return CLI_GO_ON;
}

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
