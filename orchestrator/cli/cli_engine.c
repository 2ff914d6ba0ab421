/* cli_engine: the verbs that work on a plan's run — run, submit, approve,
 * retry, abort, ack, status, history. With --db FILE they work on the
 * database directly, each from any process: the engine in one, operators'
 * commands from another, SQLite between them. Without --db (all but run)
 * they ask a running `cutover serve` (--server URL) through cli_remote.c,
 * and the server records the operator whose token ($CUTOVER_TOKEN) was
 * presented. run --config FILE reads serve.yaml's notifiers and notifies
 * as serve does (notify.h), waiting for them a bounded time at its end,
 * and its backup section, backing the database up as serve does. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "alert_kinds.h"
#include "backup_schedule.h"
#include "cli.h"
#include "engine.h"
#include "errbuf.h"
#include "near.h"
#include "log.h"
#include "notify.h"
#include "plan.h"
#include "serve_config.h"
#include "store.h"
#include "store_admit.h"
#include "store_notify.h"
#include "view.h"
#include "export_verify.h"

#define CLI_WAITING 3      /* cutover run: a gated step waits for approval */
#define CLI_STOPPED 4      /* cutover run: stopped by a signal; run again to resume */
#define CLI_PLANS_NEAR_MAX 1000	/* plans a suggestion looks through */

static volatile sig_atomic_t stop_flag;

static void
on_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* Options every verb here shares. */
struct common {
	const char *verb;	/* the verb read for, and its usage line */
	const char *usage;
	const char *db;
	const char *server;
	const char *as;
	const char *comment;
	const char *config;
	int json;
	int verify;
	int fresh;	/* --new: the plan starts anew (STORE_SUBMIT_NEW) */
	int wait;	/* --wait / --no-wait: follow a command to its outcome */
	int ok;
};

/* Prints TEXT in lines of at most WIDTH columns, each indented by
 * INDENT, broken at spaces (a word longer than a line stands alone). */
static void
help_wrap(const char *text, int indent, int width)
{
	const char *p = text;

	while (*p != '\0') {
		int room = width - indent, n = (int)strlen(p);

		if (n > room) {
			for (n = room; n > 0 && p[n] != ' '; n--)
				;
			if (n == 0)
				n = (int)strcspn(p, " ");
		}
		printf("%*s%.*s\n", indent, "", n, p);
		p += n;
		while (*p == ' ')
			p++;
	}
}

/* `cutover ack --help`'s list of the alert kinds (alert_kinds.def): each
 * with what it means and whether the engine closes it by itself. */
static void
alert_kinds_help(void)
{
	static const char *const closes[] = {
		[ALERT_CLOSES_NEVER] = "acknowledge once understood",
		[ALERT_CLOSES_SELF] = "closes by itself once its cause is gone",
		[ALERT_CLOSES_FOLLOWED] = "acknowledge it; it returns while its cause is there",
	};
	const struct alert_kind *k;

	printf("\nALERT is the alert's number or its kind ('-' for '_', any case).\n"
	    "The kinds (docs/alerts.md says how to check and clear each):\n");
	char text[1024];

	for (size_t i = 0; (k = alert_kind_at(i)) != NULL; i++) {
		snprintf(text, sizeof(text), "%s (%s)", k->means, closes[k->closes]);
		printf("  %s\n", k->name);
		help_wrap(text, 6, 78);
	}
}

/* cli_options' take: option C (one the table does not store) with its
 * value ARG into DATA, a struct common (its verb and usage set). */
static int
take_common(int c, char *arg, void *data)
{
	struct common *o = data;

	switch (c) {
	case 'C': cli_remote_tls('C', arg); break;
	case 'E': cli_remote_tls('c', arg); break;
	case 'K': cli_remote_tls('k', arg); break;
	case 'f':
		/* serve.yaml's notifiers: only run has an engine to notify of. */
		if (strcmp(o->verb, "run") != 0)
			return cli_usage_error(o->verb, o->usage, "--config is for run "
			    "and serve");
		o->config = arg;
		break;
	case 'W': o->wait = 0; break;
	case 'n':
		if (strcmp(o->verb, "run") != 0 && strcmp(o->verb, "submit") != 0)
			return cli_usage_error(o->verb, o->usage, "--new is for run and "
			    "submit");
		o->fresh = 1;
		break;
	}
	return CLI_GO_ON;
}

/* cli_options' help: ack's also lists the alert kinds. */
static void
help_common(void *data)
{
	const struct common *o = data;

	if (strcmp(o->verb, "ack") == 0)
		alert_kinds_help();
}

/* Parses the options; NEED_DB: the verb has no remote form. Sets o->ok
 * when the verb should go on, else returns its exit status. */
static int
parse_common(const char *verb, const char *usage, int argc, char **argv, int need_db,
    struct common *o)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("db", 'd', struct common, db),
		CLI_TEXT("server", 's', struct common, server),
		CLI_TAKE("cacert", 'C', true),
		CLI_TAKE("cert", 'E', true),
		CLI_TAKE("key", 'K', true),
		CLI_TEXT("as", 'a', struct common, as),
		CLI_TEXT("comment", 'c', struct common, comment),
		CLI_TAKE("config", 'f', true),
		CLI_FLAG("json", 'j', struct common, json),
		CLI_FLAG("verify", 'v', struct common, verify),
		CLI_TAKE("new", 'n', false),
		CLI_FLAG("wait", 'w', struct common, wait),
		CLI_TAKE("no-wait", 'W', false),
		CLI_OPTIONS_END
	};
	const struct cli_options opt = { .verb = verb, .usage = usage, .opts = opts,
	    .take = take_common, .help = help_common, .data = o };
	int rc;

	memset(o, 0, sizeof(*o));
	o->verb = verb;
	o->usage = usage;
	/* A person at a terminal wants to see what their command did. */
	o->wait = isatty(STDOUT_FILENO);
	if ((rc = cli_options_read(&opt, argc, argv)) != CLI_GO_ON)
		return rc;
	if (o->db == NULL && need_db && o->config == NULL)
		return cli_usage_error(verb, usage, "--db FILE is required");
	if (o->db != NULL && o->server != NULL)
		return cli_usage_error(verb, usage, "give --db FILE (this machine's "
		    "database) or --server URL (a running cutover serve), not both");
	o->ok = 1;
	return CLI_OK;
}

/* The usage lines' forms: against a server first, where most people are
 * (the token in CUTOVER_TOKEN, the server in CUTOVER_SERVER or --server);
 * a command followed to its outcome at a terminal. */
#define REMOTE_FORM	"[--server URL [--cacert FILE]]"
#define WAIT_FORM	"[--wait | --no-wait] [--json]"

/* A plan file read whole for `run` and `submit` (the loader reads it
 * again, checking it; this is the text that is stored). */
#define PLAN_TEXT_MAX	(4u * 1024 * 1024)

/* Is the newest plan named like YAML's the same text and succeeded?
 * Returns 0 with the answer in *SAME (and the plan in *OUT when true), or
 * -1. Parses only the name. */
static int
same_plan_done(struct store *s, const char *yaml, size_t len, struct store_plan *out,
    bool *same, char *err, size_t errlen)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *stored = NULL;
	size_t slen;
	int rc = 0, r;

	*same = false;
	if (plan_load_buffer("plan", yaml, len, &p, &errs) != 0)
		goto done;                  /* store_plan_submit reports the errors */
	r = store_plan_find(s, p->name, out, err, errlen);
	if (r != 0) {
		rc = r == STORE_NOT_FOUND ? 0 : -1;
		goto done;
	}
	if (strcmp(out->status, "succeeded") != 0 || out->archived_ms != 0)
		goto done;
	if (store_plan_yaml(s, out->id, &stored, &slen, err, errlen) != 0) {
		rc = -1;
		goto done;
	}
	*same = slen == len && memcmp(stored, yaml, len) == 0;
done:
	free(stored);
	plan_free(p);
	plan_errors_free(&errs);
	return rc;
}

/* Plan ID, submitted before and still running, under the same name as
 * YAML: the same text resumes it (*RESUME true), another is refused
 * (*RESUME false: the running one must finish or be aborted first, in
 * database DB); both said on stderr. Returns 0, or -1 with ERR. */
static int
resume_check(struct store *s, int64_t id, const char *yaml, size_t len, const char *db,
    bool *resume, char *err, size_t errlen)
{
	struct store_plan sp;
	char *stored = NULL;
	size_t slen;

	if (store_plan_get(s, id, &sp, err, errlen) != 0 ||
	    store_plan_yaml(s, id, &stored, &slen, err, errlen) != 0)
		return -1;
	*resume = slen == len && memcmp(stored, yaml, len) == 0;
	free(stored);
	if (!*resume) {
		fprintf(stderr, "cutover run: plan '%s' is already running (id %lld) with "
		    "a different text; abort it (cutover abort --db %s --as %s %s) or "
		    "let it finish\n", sp.name, (long long)id, db, cli_user_name(), sp.name);
		return 0;
	}
	fprintf(stderr, "cutover run: resuming plan '%s' (id %lld)\n", sp.name,
	    (long long)id);
	return 0;
}

/* Prints how the run of plan ID ended (OUTCOME), as JSON or text, and
 * returns the exit code that goes with it. */
static int
outcome_report(int json, int64_t id, enum engine_outcome outcome)
{
	if (json)
		printf("{\"plan\":%lld,\"outcome\":\"%s\"}\n", (long long)id,
		    engine_outcome_name(outcome));
	else
		printf("plan %lld: %s\n", (long long)id, engine_outcome_name(outcome));
	switch (outcome) {
	case ENGINE_SUCCEEDED: return CLI_OK;
	case ENGINE_WAITING: return CLI_WAITING;
	case ENGINE_STOPPED: return CLI_STOPPED;
	case ENGINE_DISK_FULL:
		fprintf(stderr, "cutover run: the disk holding the database is full: free "
		    "space there and run the same command again; the plan resumes where it "
		    "stopped\n");
		return CLI_STOPPED;
	default: return CLI_FAIL;
	}
}

/* Submits the plan YAML (LEN bytes, read from PATH) to the store S as the
 * CLI (FRESH: it starts anew, STORE_SUBMIT_NEW) into *ID; a plan that
 * does not validate has its errors printed. Returns store_plan_submit's
 * answer. */
static int
submit_plan(struct store *s, const char *path, const char *yaml, size_t len, int fresh,
    int64_t *id, char *err, size_t errlen)
{
	struct plan_errors errs = { 0 };
	int r = store_plan_submit(s, path, yaml, len, "cli", fresh ? STORE_SUBMIT_NEW : 0,
	    id, &errs, err, errlen);

	if (r == STORE_INVALID)
		cli_plan_errors(&errs);
	plan_errors_free(&errs);
	return r;
}

static const char run_usage[] =
    "cutover run --db FILE [--config FILE] [--new] [--json] PLAN.yaml";

/* run --config FILE: serve.yaml into *CFG; its db and log_level where no
 * flag gave them (its listen and operators are serve's alone); every
 * notifier's env:NAME checked as serve checks it. Returns 0, or -1 after
 * printing the errors. */
static int
run_config(struct common *o, struct serve_config **cfg)
{
	struct plan_errors errs = { 0 };
	char err[1024];

	if (serve_config_load_file(o->config, cfg, &errs) != 0) {
		cli_plan_errors(&errs);
		return -1;
	}
	if (o->db == NULL)
		o->db = (*cfg)->db;
	if (o->db == NULL) {
		fprintf(stderr, "cutover run: --db FILE (or db: in --config FILE) is "
		    "required\n");
		return -1;
	}
	if ((*cfg)->log_level != NULL && log_set_level((*cfg)->log_level) != 0) {
		fprintf(stderr, "cutover run: %s: log level '%s' is unknown\n", o->config,
		    (*cfg)->log_level);
		return -1;
	}
	if (serve_config_check_env(*cfg, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover run: %s\n", err);
		return -1;
	}
	return 0;
}

/* What the notifiers of a run still have to send of the events recorded
 * so far, given NOTIFY_FLUSH_MS at most (or until a signal), then stopped:
 * what is left pending goes at the next run or serve. */
static void
run_notify_end(struct notify *nf, struct store *s)
{
	char err[512];
	int64_t upto;

	if (nf == NULL)
		return;
	if (store_notify_last_event(s, &upto, err, sizeof(err)) != 0)
		log_event("warn", NULL, NULL, "notify: %s", err);
	else
		notify_flush(nf, upto, NOTIFY_FLUSH_MS, &stop_flag);
	notify_stop(nf);
}

int
cli_run(int argc, char **argv)
{
	struct engine_opts eo = { 0 };
	struct store_plan sp;
	struct common o;
	struct store *s = NULL;
	struct store_lock lock = { -1 };
	struct serve_config *cfg = NULL;
	struct notify *nf = NULL;
	struct backup_schedule *bs = NULL;
	enum engine_outcome outcome;
	char err[1024], *yaml = NULL;
	size_t len;
	int64_t id = 0;
	bool done_already;
	int rc = CLI_FAIL, r;

	r = parse_common("run", run_usage, argc, argv, 1, &o);
	if (!o.ok)
		return r;
	if (argc - optind != 1)
		return cli_usage_error("run", run_usage, "expected one plan file");
	if (o.config != NULL && run_config(&o, &cfg) != 0)
		goto done;
	if (cli_read_file(argv[optind], argv[optind], PLAN_TEXT_MAX, &yaml, &len, err,
	    sizeof(err)) != 0)
		goto fail;
	/* One engine per database, taken before anything is written. */
	if (store_lock_take(o.db, &lock, err, sizeof(err)) != 0)
		goto fail;
	if (store_open(o.db, &s, err, sizeof(err)) != 0)
		goto fail;
	/* Before the plan is submitted: a notifier new here starts at the
	 * newest event, so this run's are all its own. */
	if (cfg != NULL && cfg->nnotifiers > 0 &&
	    notify_start(o.db, cfg, &nf, err, sizeof(err)) != 0)
		goto fail;
	/* A plan run for a whole horizon is backed up as serve's would be. */
	if (cfg != NULL && cfg->backup.directory != NULL &&
	    backup_schedule_start(o.db, cfg->backup.directory, cfg->backup.interval_ms,
	    cfg->backup.keep, &bs, err, sizeof(err)) != 0)
		goto fail;
	if (same_plan_done(s, yaml, len, &sp, &done_already, err, sizeof(err)) != 0)
		goto fail;
	if (done_already) {
		/* Running a finished plan again is not a new migration. */
		printf("plan %lld: %s already (submit it under another name to run it "
		    "again)\n", (long long)sp.id, sp.status);
		rc = strcmp(sp.status, "succeeded") == 0 ? CLI_OK : CLI_FAIL;
		goto done;
	}
	r = submit_plan(s, argv[optind], yaml, len, o.fresh, &id, err, sizeof(err));
	if (r == STORE_INVALID)
		goto done;
	if (r == STORE_RUNNING) {
		bool resume;

		if (resume_check(s, id, yaml, len, o.db, &resume, err, sizeof(err)) != 0)
			goto fail;
		if (!resume)
			goto done;
	} else if (r == STORE_UNARCHIVED) {
		fprintf(stderr, "cutover run: %s\n  to archive it: cutover archive --db %s "
		    "--as %s %lld\n", err, o.db, cli_user_name(), (long long)id);
		goto done;
	} else if (r != 0)
		goto fail;

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	eo.return_when_blocked = true;
	eo.stop = &stop_flag;
	eo.service = notify_service_cb;
	eo.service_arg = nf;
	if (engine_run(s, id, &eo, &outcome, err, sizeof(err)) != 0)
		goto fail;
	rc = outcome_report(o.json, id, outcome);
	goto done;
fail:
	fprintf(stderr, "cutover run: %s\n", err);
done:
	/* Whatever the end, what was recorded is an event to notify of. */
	run_notify_end(nf, s);
	backup_schedule_stop(bs);
	serve_config_free(cfg);
	store_close(s);
	store_lock_release(&lock);
	free(yaml);
	return rc;
}

/* The names of the plans a database holds, for a suggestion. */
struct plan_names {
	char *v[CLI_PLANS_NEAR_MAX];
	size_t n;
};

static int
plan_name_add(const struct store_plan *p, void *arg)
{
	struct plan_names *pn = arg;

	if (pn->n < CLI_PLANS_NEAR_MAX && (pn->v[pn->n] = strdup(p->name)) != NULL)
		pn->n++;
	return 0;
}

/* Finds plan REF (an id or a name) in S, the database DB. Returns 0 with
 * *P, or -1 with ERR: one that is not there is named with the plan most
 * likely meant. */
static int
find_plan(struct store *s, const char *ref, const char *db, struct store_plan *p,
    char *err, size_t errlen)
{
	struct plan_names pn = { .n = 0 };
	const char *near;
	int r = engine_find_plan(s, ref, p, err, errlen);

	if (r != STORE_NOT_FOUND)
		return r == 0 ? 0 : -1;
	(void)store_each_plan(s, plan_name_add, &pn, err, errlen);
	near = near_word(ref, (const char *const *)pn.v, pn.n);
	errbuf_set(err, errlen, "no plan '%s' in %s%s%s%s", ref, db,
	    near != NULL ? " (did you mean '" : "", near != NULL ? near : "",
	    near != NULL ? "'?)" : "");
	for (size_t i = 0; i < pn.n; i++)
		free(pn.v[i]);
	return -1;
}

/* Resolves a step reference of plan P (its number from 1 or its kind,
 * cli_step_ref). Returns the 0-based index, or -1 with ERR. */
static int
step_ref(struct store *s, const struct store_plan *p, const char *ref, char *err,
    size_t errlen)
{
	struct store_step st;
	char *kinds[CLI_STEPS_MAX];
	size_t n = 0;
	int r = -1;

	while (n < CLI_STEPS_MAX) {
		int g = store_step_get(s, p->id, (int)n, &st, err, errlen);

		if (g == STORE_NOT_FOUND)
			break;
		if (g != 0)
			goto done;
		kinds[n] = strdup(st.kind);
		store_step_clear(&st);
		if (kinds[n] == NULL) {
			errbuf_set(err, errlen, "out of memory");
			goto done;
		}
		n++;
	}
	r = cli_step_ref(p->name, (const char *const *)kinds, n, ref, err, errlen);
done:
	for (size_t i = 0; i < n; i++)
		free(kinds[i]);
	return r;
}

/* The open alerts of a plan, as alert_ref reads them. */
struct open_alerts {
	struct cli_alert v[CLI_ALERTS_MAX];
	size_t n;
};

static int
open_alert_add(const struct store_alert *a, void *arg)
{
	struct open_alerts *oa = arg;

	if (oa->n < CLI_ALERTS_MAX && (oa->v[oa->n].kind = strdup(a->kind)) != NULL)
		oa->v[oa->n++].id = a->id;
	return 0;
}

/* Resolves an alert reference of plan P (its number, or the kind of its
 * one open alert of that kind: cli_alert_ref). Returns the alert's id, or
 * -1 with ERR. */
static int64_t
alert_ref(struct store *s, const struct store_plan *p, const char *ref, char *err,
    size_t errlen)
{
	struct open_alerts *oa = calloc(1, sizeof(*oa));
	int64_t id = -1;

	if (oa == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	if (store_each_alert(s, p->id, 1, open_alert_add, oa, err, errlen) >= 0)
		id = cli_alert_ref(p->name, oa->v, oa->n, ref, err, errlen);
	for (size_t i = 0; i < oa->n; i++)
		free((char *)oa->v[i].kind);
	free(oa);
	return id;
}

/* An acknowledgement of alert ALERT of plan PLAN was recorded: when the
 * engine saw the alert's cause last, and not gone since, says that the
 * alert returns until that cause is cleared, and how to clear it. */
static void
ack_cause_say(struct store *s, int64_t plan, int64_t alert)
{
	struct store_alert a;
	const struct alert_kind *k;
	char err[256], text[1024];

	if (store_alert_get(s, plan, alert, &a, err, sizeof(err)) != 0 || !a.cause_present ||
	    (k = alert_kind_find(a.kind)) == NULL)
		return;
	printf("note: %s\n", alert_still_there(k, (long long)a.id, text, sizeof(text)));
}

/* approve, retry, abort, ack: one operator command, recorded for the engine. */
static int
command(const char *verb, const char *usage, int argc, char **argv, int want_args)
{
	struct store_plan p;
	struct common o;
	struct store *s = NULL;
	char err[1024];
	int64_t id = 0, alert = 0;
	int rc = CLI_FAIL, r, idx = -1;

	r = parse_common(verb, usage, argc, argv, 0, &o);
	if (!o.ok)
		return r;
	if (argc - optind != want_args)
		return cli_usage_error(verb, usage, "expected %s", want_args == 1 ? "PLAN" :
		    strcmp(verb, "ack") == 0 ? "PLAN and ALERT" : "PLAN and STEP");
	if (o.db == NULL) {
		if (o.as != NULL)
			return cli_usage_error(verb, usage, "--as is for --db: the server "
			    "records the operator whose token CUTOVER_TOKEN holds");
		return cli_remote_command(verb, o.server, argv[optind],
		    want_args == 2 ? argv[optind + 1] : NULL, o.comment, o.json, o.wait);
	}
	if (o.as == NULL || *o.as == '\0')
		return cli_usage_error(verb, usage, "--as NAME is required: the history "
		    "records who decided");
	if (cli_store_open_existing(o.db, &s, err, sizeof(err)) != 0)
		goto fail;
	if (find_plan(s, argv[optind], o.db, &p, err, sizeof(err)) != 0)
		goto fail;
	if (want_args == 2 && strcmp(verb, "ack") == 0) {
		if ((alert = alert_ref(s, &p, argv[optind + 1], err, sizeof(err))) < 0)
			goto fail;
	} else if (want_args == 2 &&
	    (idx = step_ref(s, &p, argv[optind + 1], err, sizeof(err))) < 0)
		goto fail;
	if (strcmp(verb, "archive") == 0) {
		/* Not a command for the engine: the name is freed at once. */
		if (store_plan_archive(s, p.id, o.as, o.comment, err, sizeof(err)) != 0)
			goto fail;
		printf("plan '%s' (id %lld) archived; its name may be submitted again\n",
		    p.name, (long long)p.id);
		rc = CLI_OK;
		goto done;
	}
	r = store_command_record(s, p.id, verb, idx, alert, o.as, o.comment, &id, err,
	    sizeof(err));
	if (r != 0)
		goto fail;
	printf("%s recorded (command %lld); the engine acts on it at its next turn\n", verb,
	    (long long)id);
	if (alert > 0)
		ack_cause_say(s, p.id, alert);
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover %s: %s\n", verb, err);
done:
	store_close(s);
	return rc;
}

/* The verbs command() records, with their usage lines and how many
 * arguments each takes (PLAN, or PLAN and STEP or ALERT). */
static const struct command_verb {
	const char *verb;
	const char *usage;
	int want_args;
} command_verbs[] = {
	{ "approve", "cutover approve " REMOTE_FORM " PLAN STEP [--comment TEXT] " WAIT_FORM
	    "\n   or: cutover approve --db FILE --as NAME PLAN STEP [--comment TEXT] [--json]",
	    2 },
	{ "retry", "cutover retry " REMOTE_FORM " PLAN STEP [--comment TEXT] " WAIT_FORM
	    "\n   or: cutover retry --db FILE --as NAME PLAN STEP [--comment TEXT] [--json]", 2 },
	{ "abort", "cutover abort " REMOTE_FORM " PLAN [--comment TEXT] " WAIT_FORM
	    "\n   or: cutover abort --db FILE --as NAME PLAN [--comment TEXT] [--json]", 1 },
	{ "archive", "cutover archive " REMOTE_FORM " PLAN [--comment TEXT] [--json]"
	    "\n   or: cutover archive --db FILE --as NAME PLAN [--comment TEXT] [--json]", 1 },
	{ "ack", "cutover ack " REMOTE_FORM " PLAN ALERT [--comment TEXT] " WAIT_FORM
	    "\n   or: cutover ack --db FILE --as NAME PLAN ALERT [--comment TEXT] [--json]", 2 },
};

int
cli_command(int argc, char **argv)
{
	for (size_t i = 0; i < sizeof(command_verbs) / sizeof(command_verbs[0]); i++)
		if (strcmp(argv[0], command_verbs[i].verb) == 0)
			return command(command_verbs[i].verb, command_verbs[i].usage, argc,
			    argv, command_verbs[i].want_args);
	fprintf(stderr, "cutover: '%s' is not an operator's command\n", argv[0]);
	return CLI_USAGE;
}

static int
history_event(const struct store_event *ev, void *arg)
{
	json_t *a = arg;

	if (a != NULL) {
		json_t *d = json_loads(ev->details_json, 0, NULL);

		json_array_append_new(a, json_pack("{s:I,s:I,s:s,s:s,s:o,s:s,s:s}", "id",
		    (json_int_t)ev->id, "ts_ms", (json_int_t)ev->ts_ms, "actor", ev->actor,
		    "kind", ev->kind, "details", d != NULL ? d : json_object(), "prev_hash",
		    ev->prev_hash, "hash", ev->hash));
	} else {
		char ts[32];
		time_t t = (time_t)(ev->ts_ms / 1000);
		struct tm tm;

		gmtime_r(&t, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%5lld  %s.%03dZ  %-10s %-24s %s\n", (long long)ev->id, ts,
		    (int)(ev->ts_ms % 1000), ev->actor, ev->kind, ev->details_json);
	}
	return 0;
}

static const char history_usage[] =
    "cutover history " REMOTE_FORM " PLAN [--json]\n"
    "   or: cutover history --db FILE (PLAN | --verify) [--json]\n"
    "   or: cutover history --verify EXPORT [--json]";

/* history --verify EXPORT: the offline check of a downloaded export. */
static int
verify_export(const char *path, int json)
{
	struct export_check c;
	char err[1024], *text = NULL;
	size_t len = 0;
	int r;

	if (cli_read_file(path, path, EXPORT_FILE_MAX, &text, &len, err, sizeof(err)) != 0 ||
	    (r = export_verify(text, len, &c, err, sizeof(err))) < 0) {
		free(text);
		fprintf(stderr, "cutover history: %s\n", err);
		return CLI_FAIL;
	}
	free(text);
	if (json) {
		json_t *doc = json_pack("{s:s,s:b,s:s,s:I,s:s,s:I,s:I,s:{s:I,s:I,s:s},s:o,"
		    "s:o,s:o}", "file", path, "verified", c.verified, "format", c.format,
		    "plan", (json_int_t)c.plan_id, "name", c.plan_name, "plan_events",
		    (json_int_t)c.plan_events, "links", (json_int_t)c.links, "head",
		    "events", (json_int_t)c.head_events, "last_id", (json_int_t)c.head_id,
		    "last_hash", c.head_hash, "bad_event", c.bad_id != 0 ?
		    json_integer((json_int_t)c.bad_id) : json_null(), "line", c.line != 0 ?
		    json_integer(c.line) : json_null(), "reason", c.verified ? json_null() :
		    json_string(c.reason));

		json_dumpf(doc, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else if (c.verified)
		printf("%s verifies: plan '%s' (id %lld), %lld events of the plan and %lld "
		    "links, up to the chain head: event %lld, hash %s\n", path, c.plan_name,
		    (long long)c.plan_id, (long long)c.plan_events, (long long)c.links,
		    (long long)c.head_id, c.head_hash);
	else if (c.bad_id != 0)
		printf("%s does NOT verify: event %lld%s%.0ld: %s\n", path,
		    (long long)c.bad_id, c.line != 0 ? ", line " : "", c.line, c.reason);
	else
		printf("%s does NOT verify: %s\n", path, c.reason);
	return c.verified ? CLI_OK : CLI_FAIL;
}

int
cli_history(int argc, char **argv)
{
	struct store_verify v = { 0 };
	struct store_plan p;
	struct common o;
	struct store *s = NULL;
	json_t *events = NULL;
	char err[1024];
	int rc = CLI_FAIL, r;

	r = parse_common("history", history_usage, argc, argv, 0, &o);
	if (!o.ok)
		return r;
	if (argc - optind != (o.verify && o.db != NULL ? 0 : 1))
		return cli_usage_error("history", history_usage, o.verify ? "--verify "
		    "checks --db FILE, or an export file given alone" :
		    "expected PLAN or --verify");
	if (o.db == NULL) {
		if (o.verify)
			return verify_export(argv[optind], o.json);
		return cli_remote_history(o.server, argv[optind], o.json);
	}
	if (cli_store_open_existing(o.db, &s, err, sizeof(err)) != 0)
		goto fail;
	/* The chain is only as good as the file it is read from: the full
	 * check (indexes against their tables) before the hashes. */
	if (o.verify && store_integrity(s, o.db, true, err, sizeof(err)) != 0)
		goto fail;
	if (store_verify_events(s, &v, err, sizeof(err)) != 0)
		goto fail;
	if (o.verify) {
		if (o.json)
			printf("{\"verified\":%s,\"checked\":%lld,\"bad_event\":%lld,"
			    "\"reason\":\"%s\"}\n", v.verified ? "true" : "false",
			    (long long)v.checked, (long long)v.bad_id, v.reason);
		else if (v.verified) {
			char head[STORE_HASH_HEX] = "";
			int64_t n = 0, last = 0;

			store_chain_head(s, &n, &last, head, err, sizeof(err));
			printf("history verifies: %lld events, hash chain intact; its head: "
			    "event %lld, hash %s (an export's head matches it, or an earlier "
			    "one in this chain)\n", (long long)v.checked, (long long)last, head);
		}
		else
			printf("history does NOT verify: event %lld: %s\n", (long long)v.bad_id,
			    v.reason);
		rc = v.verified ? CLI_OK : CLI_FAIL;
		goto done;
	}
	if (find_plan(s, argv[optind], o.db, &p, err, sizeof(err)) != 0)
		goto fail;
	if (o.json)
		events = json_array();
	if (store_each_event(s, p.id, history_event, events, err, sizeof(err)) != 0)
		goto fail;
	if (o.json) {
		json_t *doc = json_pack("{s:I,s:s,s:s,s:o,s:{s:b,s:I,s:I,s:s}}", "plan",
		    (json_int_t)p.id, "name", p.name, "status", p.status, "events", events,
		    "verification", "verified", v.verified, "checked", (json_int_t)v.checked,
		    "bad_event", (json_int_t)v.bad_id, "reason", v.reason);

		events = NULL;
		json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(doc);
	} else if (v.verified)
		printf("history verifies (%lld events in the chain)\n", (long long)v.checked);
	else
		printf("history does NOT verify: event %lld: %s\n", (long long)v.bad_id,
		    v.reason);
	rc = v.verified ? CLI_OK : CLI_FAIL;
	goto done;
fail:
	fprintf(stderr, "cutover history: %s\n", err);
done:
	json_decref(events);
	store_close(s);
	return rc;
}

static int
status_plan(const struct store_plan *p, void *arg)
{
	(void)arg;
	printf("%5lld  %-32s %-10s%s\n", (long long)p->id, p->name, p->status,
	    p->archived_ms != 0 ? " archived" : "");
	return 0;
}

static const char status_usage[] =
    "cutover status " REMOTE_FORM " [PLAN] [--json]\n"
    "   or: cutover status --db FILE [PLAN] [--json]";

/* status --json with --db: the documents the API serves. */
static int
status_json(struct store *s, const char *ref, char *err, size_t errlen)
{
	struct store_plan p;
	json_t *doc = NULL;
	int r;

	if (ref == NULL)
		r = view_plan_list(s, NULL, &doc, err, errlen);
	else if ((r = find_plan(s, ref, "the database", &p, err, errlen)) == 0)
		r = view_plan(s, p.id, &doc, err, errlen);
	if (r != 0)
		return -1;
	json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	printf("\n");
	json_decref(doc);
	return 0;
}

int
cli_status(int argc, char **argv)
{
	struct store_plan p;
	struct store_step st;
	struct common o;
	struct store *s = NULL;
	char err[1024];
	int rc = CLI_FAIL, r;

	r = parse_common("status", status_usage, argc, argv, 0, &o);
	if (!o.ok)
		return r;
	if (argc - optind > 1)
		return cli_usage_error("status", status_usage, "expected at most one PLAN");
	if (o.db == NULL)
		return cli_remote_status(o.server, argc == optind ? NULL : argv[optind],
		    o.json);
	if (cli_store_open_existing(o.db, &s, err, sizeof(err)) != 0)
		goto fail;
	if (o.json) {
		if (status_json(s, argc == optind ? NULL : argv[optind], err,
		    sizeof(err)) != 0)
			goto fail;
		rc = CLI_OK;
		goto done;
	}
	if (argc == optind) {
		printf("%5s  %-32s %-10s\n", "id", "plan", "status");
		if (store_each_plan(s, status_plan, NULL, err, sizeof(err)) != 0)
			goto fail;
		rc = CLI_OK;
		goto done;
	}
	if (find_plan(s, argv[optind], o.db, &p, err, sizeof(err)) != 0)
		goto fail;
	printf("plan %s (id %lld): %s%s\n", p.name, (long long)p.id, p.status,
	    p.archived_ms != 0 ? " (archived)" : "");
	for (int i = 0; store_step_get(s, p.id, i, &st, err, sizeof(err)) == 0; i++) {
		printf("  %d. %-16s %-17s%s%s%s\n", i + 1, st.kind, st.status,
		    st.gate ? " [gate]" : "", st.error ? "  " : "", st.error ? st.error : "");
		store_step_clear(&st);
	}
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover status: %s\n", err);
done:
	store_close(s);
	return rc;
}

static const char submit_usage[] =
    "cutover submit " REMOTE_FORM " [--new] [--json] PLAN.yaml\n"
    "   or: cutover submit --db FILE [--new] [--json] PLAN.yaml";

int
cli_submit(int argc, char **argv)
{
	struct store_plan p;
	struct common o;
	struct store *s = NULL;
	char err[1024], *yaml = NULL;
	size_t len;
	int64_t id = 0;
	int rc = CLI_FAIL, r;

	r = parse_common("submit", submit_usage, argc, argv, 0, &o);
	if (!o.ok)
		return r;
	if (argc - optind != 1)
		return cli_usage_error("submit", submit_usage, "expected one plan file");
	if (o.as != NULL || o.comment != NULL || o.verify)
		return cli_usage_error("submit", submit_usage, "submit takes --db or "
		    "--server, and --json");
	if (cli_read_file(argv[optind], argv[optind], PLAN_TEXT_MAX, &yaml, &len, err,
	    sizeof(err)) != 0)
		goto fail;
	if (o.db == NULL) {
		rc = cli_remote_submit(o.server, argv[optind], yaml, len, o.json, o.fresh);
		goto done;
	}
	/* Locally: recorded for the engine of `cutover serve --db FILE`. */
	if (store_open(o.db, &s, err, sizeof(err)) != 0)
		goto fail;
	r = submit_plan(s, argv[optind], yaml, len, o.fresh, &id, err, sizeof(err));
	if (r == STORE_INVALID)
		goto done;
	if (r == STORE_UNARCHIVED) {
		fprintf(stderr, "cutover submit: %s\n  to archive it: cutover archive --db "
		    "%s --as %s %lld\n", err, o.db, cli_user_name(), (long long)id);
		goto done;
	}
	if (r != 0 || store_plan_get(s, id, &p, err, sizeof(err)) != 0)
		goto fail;
	if (o.json)
		printf("{\"id\":%lld,\"name\":\"%s\",\"status\":\"%s\",\"sha256\":\"%s\"}\n",
		    (long long)p.id, p.name, p.status, p.sha256);
	else
		printf("plan %lld submitted: %s (%s); cutover serve --db %s runs it\n",
		    (long long)p.id, p.name, p.status, o.db);
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover submit: %s\n", err);
done:
	store_close(s);
	free(yaml);
	return rc;
}
