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

/* Stores option C's value ARG as O's table says, or hands it to O->take.
 * Returns CLI_GO_ON, or what O->take returned. */
static int
store(const struct cli_options *o, int c, char *arg)
{
	const struct cli_option *op = o->opts;

	while (op->name != NULL && op->code != c)
		op++;
	switch (op->store) {
	case CLI_STORE_TEXT:
		*(const char **)(void *)((char *)o->data + op->at) = arg;
		return CLI_GO_ON;
	case CLI_STORE_FLAG:
		*(int *)(void *)((char *)o->data + op->at) = 1;
		return CLI_GO_ON;
	case CLI_STORE_TAKE:
		break;
	}
	return o->take(c, arg, o->data);
}

int
cli_options_read(const struct cli_options *o, int argc, char **argv)
{
	struct option opts[CLI_OPTIONS_MAX + 1] = { { 0 } };
	bool values = false;
	const char *missing;
	size_t n;
	int c, rc;

	/* getopt_long's table, from the verb's (a longer one is cut: the
	 * bound is far above any verb's). */
	for (n = 0; n < CLI_OPTIONS_MAX && o->opts[n].name != NULL; n++) {
		opts[n].name = o->opts[n].name;
		opts[n].has_arg = o->opts[n].value ? required_argument : no_argument;
		opts[n].val = o->opts[n].code;
		values |= o->opts[n].value;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'h') {
			printf("usage: %s\n", o->usage);
			if (o->help != NULL)
				o->help(o->data);
			return CLI_OK;
		}
		if (c != '?') {
			if ((rc = store(o, c, optarg)) != CLI_GO_ON)
				return rc;
			continue;
		}
		/* getopt_long names in optopt a known option that lacked its
		 * value, and leaves it 0 for one it does not know. */
		if (optopt != 0 && o->incomplete != NULL &&
		    (missing = o->incomplete(optopt)) != NULL)
			return cli_usage_error(o->verb, o->usage, "%s", missing);
		return cli_usage_error(o->verb, o->usage, values ?
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
