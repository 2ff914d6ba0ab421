/* cli: the verbs of the `cutover` command. Each takes the arguments after
 * its name and returns the process exit status. */
#ifndef CUTOVER_CLI_H
#define CUTOVER_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

enum cli_exit {
	CLI_OK = 0,        /* done, or the check passed */
	CLI_FAIL = 1,      /* the input is wrong or a check failed */
	CLI_USAGE = 2,     /* the command line itself is wrong */
	CLI_GO_ON = -1     /* not an exit status: the verb goes on */
};

int cli_encode(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_ladder(int argc, char **argv);
int cli_old(int argc, char **argv);
int cli_publish(int argc, char **argv);
int cli_canary(int argc, char **argv);
int cli_run(int argc, char **argv);
/* approve, retry, abort, archive and ack: the operator's command named by
 * ARGV[0] (the verb), recorded for the engine. */
int cli_command(int argc, char **argv);
int cli_history(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_submit(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_operators(int argc, char **argv);
int cli_backup(int argc, char **argv);
int cli_restore(int argc, char **argv);

struct store;

/* cli_file.c: what a database copy holds, as backup and restore say it:
 * its plans ({id, name, status, archived} each) and its last event. */
struct cli_held {
	json_t *plans;             /* owned; json_array() before the read */
	int64_t last_id, last_ts, last_plan;
	char last_kind[48];
};

/* Reads S's plans and last event into H. Returns 0, or -1 with ERR. */
int cli_held_read(struct store *s, struct cli_held *h, char *err, size_t errlen);

/* Prints H for a person: a line per plan (id, name, status, archived),
 * then "LAST_LABEL #id kind at time". */
void cli_held_print(const struct cli_held *h, const char *last_label);

/* The command line of a verb on a database and one file: "--db FILE
 * [--json] OPERAND". VERB, USAGE, DB_WHAT (added to "--db FILE is
 * required") and FILE_WHAT (the operand's name) are the caller's; DB,
 * FILE and JSON are what the command line said. */
struct cli_db_file {
	const char *verb, *usage, *db_what, *file_what;
	const char *db, *file;
	int json;
};

/* Reads ARGV into A. Returns CLI_GO_ON, or the exit status once it has
 * said what was wrong (or printed --help). */
int cli_db_file_args(struct cli_db_file *a, int argc, char **argv);

/* cli_check_broker.c: `check --broker` for plan FILE (already checked
 * valid): reads its broker's version and feature flags read-only and
 * prints them (unless JSON) or why the broker cannot honour the plan (on
 * ERROUT). With ENTRY (the plan's object of `check --json`), sets its
 * "broker" (the report) and, on failure, "valid": false. Returns 0 when
 * the broker honours the plan, -1 otherwise. */
int cli_check_broker(const char *file, int json, FILE *out, FILE *errout,
    json_t *entry);

/* cli_remote.c: the verbs above against a running `cutover serve` at
 * SERVER (NULL: $CUTOVER_SERVER, else http://127.0.0.1:8080), with the
 * operator's token from $CUTOVER_TOKEN. PLAN is an id or a name; STEP a
 * number (1-based) or a step kind; with JSON the API's answer is printed
 * as it came, else a readable table. A command with WAIT is followed
 * until the engine has done or refused it (a minute at most), and that
 * outcome printed (with JSON, the command's document) and returned. Each prints what went wrong (the
 * API's error) and returns the exit status: CLI_OK, or CLI_FAIL when the
 * server refused or could not be reached. */
/* TLS for an https:// --server: WHICH 'C' (--cacert FILE: the CA bundle
 * to verify it against; else $CUTOVER_CACERT, else the system's CA store),
 * 'c' (--cert FILE) or 'k' (--key FILE: a client certificate and its
 * unencrypted key). FILE must stay valid until the verb ends. */
void cli_remote_tls(char which, const char *file);
int cli_remote_submit(const char *server, const char *file, const char *yaml,
    size_t len, int json, int fresh);
int cli_remote_command(const char *verb, const char *server, const char *plan,
    const char *arg, const char *comment, int json, int wait);
int cli_remote_status(const char *server, const char *plan, int json);
int cli_remote_history(const char *server, const char *plan, int json);

struct plan;

/* cli_step.c: the verbs that run one step by hand. */
/* Reads ARGV's options, [--json] [--help], into *JSON. Returns CLI_GO_ON,
 * or the exit status after --help (usage printed) or a usage error. */
int cli_step_options(const char *verb, const char *usage, int argc, char **argv,
    int *json);
/* Runs FN, a step (step.h's step_fn), on the plan in PATH with the code the
 * engine runs: prints its result as JSON (with JSON), else with PRINT (OK:
 * the step succeeded), and what failed to stderr as "cutover WHAT: ...".
 * Returns CLI_OK, or CLI_FAIL when the plan does not load, the broker
 * cannot be reached or the step fails. */
struct step_ctx;
int cli_step_run(const char *what, const char *path,
    int (*fn)(struct step_ctx *c, json_t **result, char *err, size_t errlen),
    int json, void (*print)(json_t *result, int ok));

struct plan_errors;

/* Prints every error of ERRS, "FILE:LINE:COLUMN: message", to stderr, and
 * frees them (ERRS is empty again). */
void cli_plan_errors(struct plan_errors *errs);

/* Loads and validates the plan in PATH. Returns it (free with plan_free),
 * or NULL after printing every error, "FILE:LINE:COLUMN: message", to
 * stderr. */
struct plan *cli_load_plan(const char *path);

/* Reads PATH whole into *OUT (malloc'ed, NUL-terminated; *LEN bytes
 * without the NUL), refusing a file of more than MAX bytes. Errors start
 * with WHAT (naming the file as the verb's user gave it). Returns 0, or
 * -1 with ERR. */
int cli_read_file(const char *path, const char *what, size_t max, char **out,
    size_t *len, char *err, size_t errlen);

struct store;

/* Opens the database DB for a verb that reads or changes what is in it:
 * one that is not there is an error (a mistyped path must not leave an
 * empty database behind), never created. Returns 0 with *OUT, or -1 with
 * ERR. */
int cli_store_open_existing(const char *db, struct store **out, char *err,
    size_t errlen);

/* More steps than a plan can have: each step kind at most once. */
#define CLI_STEPS_MAX	64

/* An open alert, as a reference to one is resolved against. */
struct cli_alert {
	long long id;
	const char *kind;
};

/* More open alerts than a reference is looked for among. */
#define CLI_ALERTS_MAX	256

/* cli_ref.c: the open alert REF names among the N OPEN alerts of plan
 * PLAN: its number, or its kind ('-' for '_' and any case accepted) when
 * exactly one open alert is of that kind. Returns its id, or -1 with ERR
 * listing the open alerts and naming the kind most likely meant. */
int64_t cli_alert_ref(const char *plan, const struct cli_alert *open, size_t n,
    const char *ref, char *err, size_t errlen);

/* cli_ref.c: the step REF names among the N step KINDS of plan PLAN
 * (its number from 1, or its kind, '-' for '_' and any case accepted).
 * Returns its 0-based index, or -1 with ERR listing the plan's steps and
 * naming the kind most likely meant. */
int cli_step_ref(const char *plan, const char *const *kinds, size_t n, const char *ref,
    char *err, size_t errlen);

/* The user's login name, for the --as of a hint printed to be run as it
 * is ($USER, else the password file's, else "operator"). */
const char *cli_user_name(void);

/* Where an option's value goes: a cli_option's STORE. */
enum cli_store {
	CLI_STORE_TAKE,		/* to the verb's take */
	CLI_STORE_TEXT,		/* the value into the const char * at AT */
	CLI_STORE_FLAG		/* 1 into the int at AT (no value) */
};

/* One option of a verb: --NAME, its CODE (as getopt_long's val; 'h' is
 * --help), whether it takes a VALUE, and where that goes in the verb's
 * DATA (STORE, at offset AT). A verb's table is a row per option made
 * with the macros below (which check the field's type), ended by
 * CLI_OPTIONS_END. */
struct cli_option {
	const char *name;
	int code;
	bool value;
	enum cli_store store;
	size_t at;
};
#define CLI_TEXT(name, code, type, field) { name, code, true, CLI_STORE_TEXT,	\
	_Generic(((type *)0)->field, const char *: offsetof(type, field)) }
#define CLI_FLAG(name, code, type, field) { name, code, false, CLI_STORE_FLAG,	\
	_Generic(((type *)0)->field, int: offsetof(type, field)) }
#define CLI_TAKE(name, code, value) { name, code, value, CLI_STORE_TAKE, 0 }
#define CLI_OPTIONS_END CLI_TAKE("help", 'h', false), { NULL, 0, false, 0, 0 }
#define CLI_OPTIONS_MAX	32	/* options a verb may have, --help included */

/* One verb's options, as cli_options_read reads them. */
struct cli_options {
	const char *verb;
	const char *usage;		/* the usage line */
	const struct cli_option *opts;	/* the verb's table */
	/* Takes option C (a CLI_TAKE row's, not 'h') with its value ARG
	 * (NULL for one that takes none) into DATA. Returns CLI_GO_ON, or the
	 * exit status once it has said what was wrong. NULL: the table has
	 * no such row. */
	int (*take)(int c, char *arg, void *data);
	/* Prints what --help says after the usage line; NULL: nothing. */
	void (*help)(void *data);
	/* The usage error for option C given without its value; NULL, or
	 * NULL returned: the one for an unknown option. */
	const char *(*incomplete)(int c);
	void *data;
};

/* Reads ARGV's options with O, leaving optind at the first operand:
 * stores each CLI_TEXT and CLI_FLAG option's value in O->data, hands the
 * others to O->take. Returns CLI_GO_ON; CLI_OK after --help ("usage:
 * USAGE", then O->help); what O->take returned other than CLI_GO_ON; or CLI_USAGE after an
 * option O does not know or one without its value ("unknown or incomplete
 * option" where some option of O takes a value, else "unknown option"). */
int cli_options_read(const struct cli_options *o, int argc, char **argv);

/* Prints "cutover VERB: MESSAGE" and the verb's usage line to stderr;
 * returns CLI_USAGE. */
int cli_usage_error(const char *verb, const char *usage, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
