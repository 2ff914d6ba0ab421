/* cli: the verbs of the `cutover` command. Each takes the arguments after
 * its name and returns the process exit status. */
#ifndef CUTOVER_CLI_H
#define CUTOVER_CLI_H

#include <stdio.h>

enum cli_exit {
	CLI_OK = 0,        /* done, or the check passed */
	CLI_FAIL = 1,      /* the input is wrong or a check failed */
	CLI_USAGE = 2      /* the command line itself is wrong */
};

int cli_encode(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_ladder(int argc, char **argv);
int cli_old(int argc, char **argv);
int cli_publish(int argc, char **argv);
int cli_canary(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_approve(int argc, char **argv);
int cli_retry(int argc, char **argv);
int cli_abort(int argc, char **argv);
int cli_ack(int argc, char **argv);
int cli_history(int argc, char **argv);
int cli_status(int argc, char **argv);

/* Prints "cutover VERB: MESSAGE" and the verb's usage line to stderr;
 * returns CLI_USAGE. */
int cli_usage_error(const char *verb, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
