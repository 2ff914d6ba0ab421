/* cli_serve: `cutover serve` — the service. Its settings come from the
 * flags and --config's serve.yaml (serve_config.h; a flag wins), checked
 * alone by --check-config. The engine runs every active plan of the
 * database: this thread picks them up, --workers threads turn them
 * (engine_serve); libmicrohttpd's threads answer the JSON API,
 * and the notifiers' thread (notify.h) delivers webhooks, each from its
 * own connection to the same database (WAL); SQLite is all they share.
 * SIGTERM or SIGINT stops the engine at its next safe point (a step in
 * flight resumes on restart), then the HTTP server and the notifiers; a
 * second signal stops at once. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "backup_schedule.h"
#include "cli.h"
#include "engine.h"
#include "errbuf.h"
#include "heap.h"
#include "log.h"
#include "notify.h"
#include "serve_config.h"
#include "server.h"
#include "store.h"

#define DEFAULT_LISTEN	"127.0.0.1:8080"

_Static_assert(SERVE_WORKERS_MAX == ENGINE_WORKERS_MAX,
    "serve.yaml's workers and the engine's bound are one bound");

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig)
{
	if (stop_flag) {
		/* Asked twice: the default action, now. */
		signal(sig, SIG_DFL);
		raise(sig);
		return;
	}
	stop_flag = 1;
}

static const char serve_usage[] =
    "cutover serve [--config FILE] [--check-config] [--db FILE] [--listen HOST:PORT]\n"
    "    [--operators FILE] [--log-level LEVEL] [--poll-ms N] [--workers N]";

static const char serve_help[] =
    "  Runs every plan in FILE and serves the JSON API on HOST:PORT (default "
    DEFAULT_LISTEN ").\n"
    "  --config FILE     serve.yaml: listen, db, operators, log_level, notifiers\n"
    "                    (webhooks), backup (checked copies of the database at an\n"
    "                    interval); a flag given as well overrides its key\n"
    "  --check-config    validate the configuration (with the flags) and exit:\n"
    "                    0 when serve would start with it, 1 with FILE:LINE:COL errors\n"
    "  --operators FILE  lines `name:sha256hex` — the sha256 of each operator's token,\n"
    "                    e.g. printf %s \"$TOKEN\" | sha256sum. Every POST needs\n"
    "                    Authorization: Bearer TOKEN of one of them; without the\n"
    "                    file every POST is refused (401).\n"
    "  Reads are open on a loopback address; on any other address every request\n"
    "  but /healthz needs a token, and --operators is required.\n"
    "  --log-level LEVEL debug, info (default), warn or error\n"
    "  --poll-ms N       how often the engine looks for commands and new plans (500)\n"
    "  --workers N       how many plans' steps and watch ticks run at once, 1 to 64\n"
    "                    (32): a plan whose broker is slow holds up one worker";

/* What the command line and the configuration file asked for. */
struct serve_args {
	const char *db, *listen, *operators, *log_level, *config;
	int check;
	long poll;
	long workers;
	struct serve_config *cfg;	/* owned; NULL without --config */
	struct sockaddr_storage ss;
	socklen_t sslen;
	int loopback;
};

/* Reads --config's file into A->cfg and takes from it what no flag gave.
 * Returns 0, or -1 after printing every error as FILE:LINE:COL. */
static int
read_config(struct serve_args *a)
{
	struct plan_errors errs = { 0 };

	if (serve_config_load_file(a->config, &a->cfg, &errs) != 0) {
		cli_plan_errors(&errs);
		return -1;
	}
	if (a->db == NULL)
		a->db = a->cfg->db;
	if (a->listen == NULL)
		a->listen = a->cfg->listen;
	if (a->operators == NULL)
		a->operators = a->cfg->operators;
	if (a->log_level == NULL)
		a->log_level = a->cfg->log_level;
	if (a->workers == 0)
		a->workers = a->cfg->workers;
	return 0;
}

/* Prints what `serve --help` says after the usage line. */
static void
print_help(void *data)
{
	(void)data;
	printf("\n%s\n", serve_help);
}

/* cli_options' take: --poll-ms's or --workers's ARG into DATA, a struct
 * serve_args. Returns CLI_GO_ON, or CLI_USAGE once it has said that the
 * value is out of range. */
static int
take_option(int c, char *arg, void *data)
{
	struct serve_args *a = data;
	char *end;

	if (c == 'p') {
		a->poll = strtol(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || a->poll < 10 || a->poll > 60000)
			return cli_usage_error("serve", serve_usage,
			    "--poll-ms takes 10 to 60000");
	} else {
		a->workers = strtol(arg, &end, 10);
		if (*arg == '\0' || *end != '\0' || a->workers < 1 ||
		    a->workers > ENGINE_WORKERS_MAX)
			return cli_usage_error("serve", serve_usage, "--workers "
			    "takes 1 to %d", ENGINE_WORKERS_MAX);
	}
	return CLI_GO_ON;
}

/* Reads the options into A. Returns 0 to go on, or -1 with *EXIT_CODE
 * what cutover serve exits with (--help, or a usage error said). */
static int
parse_args(int argc, char **argv, struct serve_args *a, int *exit_code)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("db", 'd', struct serve_args, db),
		CLI_TEXT("listen", 'l', struct serve_args, listen),
		CLI_TEXT("operators", 'o', struct serve_args, operators),
		CLI_TAKE("poll-ms", 'p', true),
		CLI_TAKE("workers", 'w', true),
		CLI_TEXT("config", 'c', struct serve_args, config),
		CLI_FLAG("check-config", 'k', struct serve_args, check),
		CLI_TEXT("log-level", 'v', struct serve_args, log_level),
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = "serve", .usage = serve_usage,
	    .opts = opts, .take = take_option, .help = print_help, .data = a };
	int rc;

	memset(a, 0, sizeof(*a));
	if ((rc = cli_options_read(&o, argc, argv)) != CLI_GO_ON) {
		*exit_code = rc;
		return -1;
	}
	if (optind != argc)
		*exit_code = cli_usage_error("serve", serve_usage, "unexpected argument '%s'",
		    argv[optind]);
	else if (a->check && a->config == NULL)
		*exit_code = cli_usage_error("serve", serve_usage, "--check-config needs "
		    "--config FILE");
	else
		return 0;
	return -1;
}

/* Checks what the flags and the file say together, as serve needs it: a
 * database, a listen address, operators off loopback, a log level, every
 * notifier's env:NAME set. Returns 0, or -1 with ERR. */
static int
settle_args(struct serve_args *a, char *err, size_t errlen)
{
	char why[512];

	if (a->listen == NULL)
		a->listen = DEFAULT_LISTEN;
	if (a->db == NULL) {
		errbuf_set(err, errlen, "--db FILE (or db: in --config FILE) is required");
		return -1;
	}
	if (server_listen_parse(a->listen, &a->ss, &a->sslen, &a->loopback, why,
	    sizeof(why)) != 0) {
		errbuf_set(err, errlen, "%s", why);
		return -1;
	}
	if (!a->loopback && a->operators == NULL) {
		errbuf_set(err, errlen, "listening on %s, which is not a loopback address, "
		    "needs --operators (or operators: in --config FILE): there every request "
		    "but /healthz needs an operator's token", a->listen);
		return -1;
	}
	if (a->log_level != NULL && log_set_level(a->log_level) != 0) {
		errbuf_set(err, errlen, "log level '%s' is unknown; expected debug, info, "
		    "warn or error", a->log_level);
		return -1;
	}
	if (a->cfg != NULL && serve_config_check_env(a->cfg, err, errlen) != 0)
		return -1;
	return 0;
}

/* --check-config: prints what serve would run with, after the checks it
 * would make before starting (the operators file included). */
static int
check_config(const struct serve_args *a)
{
	struct auth *ops = NULL;
	char err[1024];
	size_t i;

	if (a->operators != NULL && auth_load(a->operators, &ops, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover serve: %s: %s\n", a->config, err);
		return CLI_FAIL;
	}
	printf("%s: ok\n  listen     %s\n  db         %s\n  operators  %s", a->config,
	    a->listen, a->db, a->operators != NULL ? a->operators : "(none: every change "
	    "is refused)");
	if (ops != NULL)
		printf(" (%zu)", auth_count(ops));
	printf("\n  log_level  %s\n  notifiers  %zu\n", a->log_level != NULL ?
	    a->log_level : "info", a->cfg->nnotifiers);
	for (i = 0; i < a->cfg->nnotifiers; i++) {
		const struct serve_notifier *n = &a->cfg->notifiers[i];

		printf("    %s (%s, %d attempts):", n->name, serve_notify_kind_name(n->kind),
		    n->attempts);
		for (int e = 0; e < NOTIFY_NEVENTS; e++)
			if (n->events & (1u << e))
				printf(" %s", serve_notify_event_name((enum notify_event)e));
		printf("\n");
	}
	printf("  workers    %ld\n", a->workers != 0 ? a->workers :
	    (long)ENGINE_WORKERS_DEFAULT);
	if (a->cfg->backup.directory != NULL)
		printf("  backup     %s every %lld s, keeping %d\n", a->cfg->backup.directory,
		    (long long)(a->cfg->backup.interval_ms / 1000), a->cfg->backup.keep);
	else
		printf("  backup     (none)\n");
	auth_free(ops);
	return CLI_OK;
}

/* SIGINT and SIGTERM stop the engine at its next safe point (on_signal);
 * a peer gone away is not a signal. */
static void
catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The log line that says what is served and who may change it. */
static void
log_serving(const struct server *sv, const struct auth *ops, const struct serve_args *a)
{
	if (ops != NULL)
		log_event("info", NULL, NULL, "serving %s on port %u: %zu operators from %s%s",
		    a->db, (unsigned)server_port(sv), auth_count(ops), a->operators,
		    a->loopback ? "; reads open on loopback" : "; every request needs a token");
	else
		log_event("info", NULL, NULL, "serving %s on port %u: no operators file, so "
		    "every change is refused (start with --operators FILE)", a->db,
		    (unsigned)server_port(sv));
}

int
cli_serve(int argc, char **argv)
{
	struct serve_args a;
	struct server_config cfg = { 0 };
	struct engine_opts eo = { 0 };
	struct engine_pool *engine = NULL;
	struct server *sv = NULL;
	struct notify *nf = NULL;
	struct backup_schedule *bs = NULL;
	struct auth *ops = NULL;
	struct store *s = NULL;
	struct store_lock lock = { -1 };
	char err[1024];
	int rc = CLI_FAIL;

	if (parse_args(argc, argv, &a, &rc) != 0)
		return rc;
	heap_bound_maps();
	if (a.config != NULL && read_config(&a) != 0)
		goto done;
	if (settle_args(&a, err, sizeof(err)) != 0) {
		if (a.check || a.config != NULL)
			goto fail;
		rc = cli_usage_error("serve", serve_usage, "%s", err);
		goto done;
	}
	if (a.check) {
		rc = check_config(&a);
		goto done;
	}
	if (a.operators != NULL && auth_load(a.operators, &ops, err, sizeof(err)) != 0)
		goto fail;
	/* One engine per database: a second serve, or a run beside it, exits. */
	if (store_lock_take(a.db, &lock, err, sizeof(err)) != 0)
		goto fail;
	if (store_open(a.db, &s, err, sizeof(err)) != 0)
		goto fail;
	catch_signals();

	/* The notifiers' and the backups' connections before the HTTP
	 * server's answers: once /healthz answers, every connection serve
	 * makes is open on the file it locked, so a file removed from then on
	 * is one serve notices (a connection opened later would create an
	 * empty database in its place). The engine's workers open theirs at
	 * their first turn, without creating a file and on the one S opened
	 * (store_open_again). */
	if (a.cfg != NULL && a.cfg->nnotifiers > 0 && notify_start(a.db, a.cfg, &nf, err,
	    sizeof(err)) != 0)
		goto fail;
	if (a.cfg != NULL && a.cfg->backup.directory != NULL &&
	    backup_schedule_start(a.db, a.cfg->backup.directory, a.cfg->backup.interval_ms,
	    a.cfg->backup.keep, &bs, err, sizeof(err)) != 0)
		goto fail;
	eo.poll_ms = (int)a.poll;
	eo.workers = (int)a.workers;
	eo.stop = &stop_flag;
	eo.service = notify_service_cb;
	eo.service_arg = nf;
	if (engine_serve_open(s, &eo, &engine, err, sizeof(err)) != 0)
		goto fail;
	cfg.db = a.db;
	cfg.listen = a.listen;
	cfg.operators = ops;
	if (server_start(&cfg, &sv, err, sizeof(err)) != 0)
		goto fail;
	log_serving(sv, ops, &a);

	if (engine_serve(engine, err, sizeof(err)) != 0) {
		log_event("error", NULL, NULL, "engine: %s", err);
		engine_serve_close(engine);
		engine = NULL;
		server_stop(sv);
		sv = NULL;
		goto fail;
	}
	engine_serve_close(engine);
	engine = NULL;
	log_event("info", NULL, NULL, "stopping: the engine is stopped; closing the "
	    "HTTP server");
	server_stop(sv);
	sv = NULL;
	notify_stop(nf);
	nf = NULL;
	backup_schedule_stop(bs);
	bs = NULL;
	log_event("info", NULL, NULL, "stopped");
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover serve: %s\n", err);
done:
	engine_serve_close(engine);
	backup_schedule_stop(bs);
	notify_stop(nf);
	server_stop(sv);
	store_close(s);
	store_lock_release(&lock);
	auth_free(ops);
	serve_config_free(a.cfg);
	return rc;
}
