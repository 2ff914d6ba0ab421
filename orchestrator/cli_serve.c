/* cli_serve: `cutover serve` — the service. The engine runs every active
 * plan of the database in this thread; libmicrohttpd's threads answer the
 * JSON API from their own connections to the same database (WAL); SQLite
 * is all they share. SIGTERM or SIGINT stops the engine at its next safe
 * point (a step in flight resumes on restart), then the HTTP server; a
 * second signal stops at once. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "cli.h"
#include "engine.h"
#include "log.h"
#include "server.h"
#include "store.h"

#define DEFAULT_LISTEN	"127.0.0.1:8080"

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
    "cutover serve --db FILE [--listen HOST:PORT] [--operators FILE] [--poll-ms N]";

static const char serve_help[] =
    "  Runs every plan in FILE and serves the JSON API on HOST:PORT (default "
    DEFAULT_LISTEN ").\n"
    "  --operators FILE  lines `name:sha256hex` — the sha256 of each operator's token,\n"
    "                    e.g. printf %s \"$TOKEN\" | sha256sum. Every POST needs\n"
    "                    Authorization: Bearer TOKEN of one of them; without the\n"
    "                    file every POST is refused (401).\n"
    "  Reads are open on a loopback address; on any other address every request\n"
    "  but /healthz needs a token, and --operators is required.\n"
    "  --poll-ms N       how often the engine looks for commands and new plans (500)";

int
cli_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "listen", required_argument, NULL, 'l' },
		{ "operators", required_argument, NULL, 'o' },
		{ "poll-ms", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct server_config cfg = { 0 };
	struct engine_opts eo = { 0 };
	struct sockaddr_storage ss;
	struct sigaction sa;
	struct server *sv = NULL;
	struct auth *ops = NULL;
	struct store *s = NULL;
	struct store_lock lock = { -1 };
	const char *db = NULL, *listen = DEFAULT_LISTEN, *operators = NULL;
	char err[1024], *end;
	socklen_t sslen;
	long poll = 0;
	int c, loopback, rc = CLI_FAIL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd': db = optarg; break;
		case 'l': listen = optarg; break;
		case 'o': operators = optarg; break;
		case 'p':
			poll = strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || poll < 10 || poll > 60000)
				return cli_usage_error("serve", serve_usage,
				    "--poll-ms takes 10 to 60000");
			break;
		case 'h':
			printf("usage: %s\n\n%s\n", serve_usage, serve_help);
			return CLI_OK;
		default:
			return cli_usage_error("serve", serve_usage,
			    "unknown or incomplete option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error("serve", serve_usage, "unexpected argument '%s'",
		    argv[optind]);
	if (db == NULL)
		return cli_usage_error("serve", serve_usage, "--db FILE is required");
	if (server_listen_parse(listen, &ss, &sslen, &loopback, err, sizeof(err)) != 0)
		return cli_usage_error("serve", serve_usage, "%s", err);
	if (!loopback && operators == NULL)
		return cli_usage_error("serve", serve_usage, "listening on %s, which is not "
		    "a loopback address, needs --operators: there every request but "
		    "/healthz needs an operator's token", listen);
	if (operators != NULL && auth_load(operators, &ops, err, sizeof(err)) != 0)
		goto fail;
	/* One engine per database: a second serve, or a run beside it, exits. */
	if (store_lock_take(db, &lock, err, sizeof(err)) != 0)
		goto fail;
	if (store_open(db, &s, err, sizeof(err)) != 0)
		goto fail;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	cfg.db = db;
	cfg.listen = listen;
	cfg.operators = ops;
	if (server_start(&cfg, &sv, err, sizeof(err)) != 0)
		goto fail;
	if (ops != NULL)
		log_event("info", NULL, NULL, "serving %s on port %u: %zu operators from %s%s",
		    db, (unsigned)server_port(sv), auth_count(ops), operators,
		    loopback ? "; reads open on loopback" : "; every request needs a token");
	else
		log_event("info", NULL, NULL, "serving %s on port %u: no operators file, so "
		    "every change is refused (start with --operators FILE)", db,
		    (unsigned)server_port(sv));

	eo.poll_ms = (int)poll;
	eo.stop = &stop_flag;
	if (engine_serve(s, &eo, err, sizeof(err)) != 0) {
		log_event("error", NULL, NULL, "engine: %s", err);
		server_stop(sv);
		sv = NULL;
		goto fail;
	}
	log_event("info", NULL, NULL, "stopping: the engine is stopped; closing the "
	    "HTTP server");
	server_stop(sv);
	sv = NULL;
	log_event("info", NULL, NULL, "stopped");
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover serve: %s\n", err);
done:
	server_stop(sv);
	store_close(s);
	store_lock_release(&lock);
	auth_free(ops);
	return rc;
}
