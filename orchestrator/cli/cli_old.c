/* cli_old: `cutover old measure|remove` — the measure_horizon and
 * remove_old steps run by hand, with the same code the engine runs:
 * measure prints each old queue's TTL and the horizon it implies; remove
 * measures again, then deletes what is empty and past its deadline. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "duration.h"
#include "engine.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"
#include "store.h"

static const char usage_line[] =
    "cutover old measure [--json] PLAN.yaml\n"
    "       cutover old remove --last-entry TIME [--dry-run] [--json] PLAN.yaml\n"
    "       cutover old remove --db FILE [--dry-run] [--json] PLAN.yaml\n"
    "TIME: epoch milliseconds or RFC 3339 UTC (2026-11-30T12:00:00Z), the last "
    "time a message entered the old path; --db FILE: the plan's database, whose "
    "measure, move_old and watch give the queues, the last entry and move_old's "
    "deadlines";

/* Writes the integer member KEY of O as a duration, or "-" when null. */
static const char *
dur_or_dash(const json_t *o, const char *key, char *out, size_t outlen)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return "-";
	return duration_format(json_integer_value(v), out, outlen);
}

static const char *
int_or_dash(const json_t *o, const char *key, char *out, size_t outlen)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		return "-";
	snprintf(out, outlen, "%lld", (long long)json_integer_value(v));
	return out;
}

static const char *
str_or_dash(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL && *s != '\0' ? s : "-";
}

/* The width of the widest "name" in array A, at least MIN. */
static int
name_width(const json_t *a, int min)
{
	const json_t *o;
	size_t i;
	int w = min;

	json_array_foreach(a, i, o) {
		const char *n = json_string_value(json_object_get(o, "name"));

		if (n != NULL && (int)strlen(n) > w)
			w = (int)strlen(n);
	}
	return w;
}

static void
print_measure(const json_t *r)
{
	const json_t *qs = json_object_get(r, "queues"), *sum, *o;
	char ttl[32], exp[32], depth[32], cons[32], t[40];
	size_t i;
	int w = name_width(qs, 5);

	if (json_array_size(qs) > 0)
		printf("%-*s  %-7s  %-8s  %-24s  %-8s  %7s  %9s  %s\n", w, "QUEUE", "TYPE",
		    "TTL", "SOURCE", "EXPIRES", "DEPTH", "CONSUMERS", "NOTE");
	json_array_foreach(qs, i, o)
		printf("%-*s  %-7s  %-8s  %-24s  %-8s  %7s  %9s  %s\n", w,
		    str_or_dash(o, "name"), str_or_dash(o, "type"),
		    dur_or_dash(o, "ttl_ms", ttl, sizeof(ttl)), str_or_dash(o, "ttl_source"),
		    dur_or_dash(o, "expires_ms", exp, sizeof(exp)),
		    int_or_dash(o, "messages", depth, sizeof(depth)),
		    int_or_dash(o, "consumers", cons, sizeof(cons)),
		    json_is_string(json_object_get(o, "note")) ?
		    json_string_value(json_object_get(o, "note")) : "");
	if (json_array_size(json_object_get(r, "missing")) > 0) {
		printf("not on the broker:");
		json_array_foreach(json_object_get(r, "missing"), i, o)
			printf(" %s", json_string_value(o));
		printf("\n");
	}
	sum = json_object_get(r, "summary");
	if (sum == NULL)
		return;
	printf("\n%lld queues, %lld non-empty, %lld messages; largest TTL %s",
	    (long long)json_integer_value(json_object_get(sum, "queues")),
	    (long long)json_integer_value(json_object_get(sum, "non_empty")),
	    (long long)json_integer_value(json_object_get(sum, "total_messages")),
	    dur_or_dash(sum, "max_ttl_ms", ttl, sizeof(ttl)));
	if (json_is_string(json_object_get(sum, "max_ttl_queue")))
		printf(" (%s)", json_string_value(json_object_get(sum, "max_ttl_queue")));
	printf("\n");
	if (json_is_integer(json_object_get(sum, "horizon_ms")))
		printf("horizon (provisional, until the flip): %s\n",
		    old_time_format(json_integer_value(json_object_get(sum, "horizon_ms")),
		    t, sizeof(t)));
	if (*str_or_dash(sum, "reasoning") != '-')
		printf("%s\n", json_string_value(json_object_get(sum, "reasoning")));
}

static void
print_remove(const json_t *r)
{
	const json_t *es = json_object_get(r, "entries"), *o, *cn;
	char depth[32];
	size_t i;
	int w = name_width(es, 5);

	if (json_array_size(es) > 0)
		printf("%-12s  %-*s  %5s  %s\n", "OUTCOME", w, "QUEUE", "DEPTH", "REASON");
	json_array_foreach(es, i, o)
		printf("%-12s  %-*s  %5s  %s\n", str_or_dash(o, "outcome"), w,
		    str_or_dash(o, "name"), int_or_dash(o, "messages_seen", depth,
		    sizeof(depth)), str_or_dash(o, "reason"));
	cn = json_object_get(r, "counts");
	if (json_is_true(json_object_get(r, "dry_run")))
		printf("\ndry run: %lld would be removed, %lld gone already, %lld would "
		    "wait, %lld would be left; nothing was deleted\n",
		    (long long)json_integer_value(json_object_get(cn, "would_remove")),
		    (long long)json_integer_value(json_object_get(cn, "gone")),
		    (long long)json_integer_value(json_object_get(cn, "waiting")),
		    (long long)json_integer_value(json_object_get(cn, "left")));
	else
		printf("\n%lld removed, %lld gone already, %lld waiting, %lld left (%lld "
		    "ms, %lld AMQP connection%s)\n",
		    (long long)json_integer_value(json_object_get(cn, "removed")),
		    (long long)json_integer_value(json_object_get(cn, "gone")),
		    (long long)json_integer_value(json_object_get(cn, "waiting")),
		    (long long)json_integer_value(json_object_get(cn, "left")),
		    (long long)json_integer_value(json_object_get(r, "elapsed_ms")),
		    (long long)json_integer_value(json_object_get(r, "connections")),
		    json_integer_value(json_object_get(r, "connections")) == 1 ? "" : "s");
}

static void
print_json(json_t *j)
{
	json_dumpf(j, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
	printf("\n");
}

/* What the command line asked for. */
struct old_args {
	const char *action;		/* "measure" or "remove" */
	const char *plan;
	int json, remove;
	const char *last_entry;		/* --last-entry, for remove */
	int64_t last_ms;		/* what it says */
	const char *db;			/* --db, for remove */
	struct old_remove_opts ro;
};

/* cli_options' take: --dry-run (a bool of the remove options) into DATA,
 * a struct old_args. */
static int
take_option(int c, char *arg, void *data)
{
	struct old_args *a = data;

	(void)c;
	(void)arg;
	a->ro.dry_run = true;
	return CLI_GO_ON;
}

/* cli_options' incomplete: --last-entry says what it needs. */
static const char *
incomplete(int c)
{
	return c == 'l' ? "--last-entry needs a time" : NULL;
}

/* Reads the command line into A. Returns 0 to go on, or -1 with *RC set
 * (CLI_OK after --help, else a usage error). */
static int
args_parse(int argc, char **argv, struct old_args *a, int *rc)
{
	static const struct cli_option opts[] = {
		CLI_FLAG("json", 'j', struct old_args, json),
		CLI_TAKE("dry-run", 'n', false),
		CLI_TEXT("last-entry", 'l', struct old_args, last_entry),
		CLI_TEXT("db", 'd', struct old_args, db),
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = "old", .usage = usage_line,
	    .opts = opts, .take = take_option, .incomplete = incomplete, .data = a };
	char err[2048];
	int r;

	if ((r = cli_options_read(&o, argc, argv)) != CLI_GO_ON) {
		*rc = r;
		return -1;
	}
	if (argc - optind != 2) {
		*rc = cli_usage_error("old", usage_line, "expected an action and a plan");
		return -1;
	}
	a->action = argv[optind];
	a->plan = argv[optind + 1];
	if (strcmp(a->action, "measure") == 0)
		a->remove = 0;
	else if (strcmp(a->action, "remove") == 0)
		a->remove = 1;
	else {
		*rc = cli_usage_error("old", usage_line, "unknown action '%s'", a->action);
		return -1;
	}
	if (!a->remove && (a->last_entry != NULL || a->ro.dry_run || a->db != NULL)) {
		*rc = cli_usage_error("old", usage_line, "--last-entry, --db and "
		    "--dry-run are for remove");
		return -1;
	}
	if (a->remove && (a->last_entry == NULL) == (a->db == NULL)) {
		*rc = cli_usage_error("old", usage_line, "remove needs either --db FILE "
		    "(the plan's database) or --last-entry TIME (the last time a message "
		    "entered the old path)");
		return -1;
	}
	if (a->last_entry == NULL)
		return 0;
	if (a->remove && old_time_parse(a->last_entry, &a->last_ms, err, sizeof(err)) != 0) {
		*rc = cli_usage_error("old", usage_line, "--last-entry: %s", err);
		return -1;
	}
	return 0;
}

/* Prints measure_horizon's result MEASURED: as JSON (under "measure" for
 * remove) or as a table. */
static void
show_measure(const struct old_args *a, json_t *measured)
{
	if (a->json && a->remove) {
		json_t *m = json_pack("{s:O}", "measure", measured);

		print_json(m);
		json_decref(m);
	} else if (a->json)
		print_json(measured);
	else
		print_measure(measured);
}

/* Prints remove's result REMOVED (after MEASURED, for JSON). */
static void
show_remove(const struct old_args *a, json_t *measured, json_t *removed)
{
	if (a->json) {
		json_t *both = json_pack("{s:O,s:O}", "measure", measured, "remove", removed);

		print_json(both);
		json_decref(both);
	} else
		print_remove(removed);
}

/* Opens database DB (which must exist: a read never creates one) and finds
 * plan P's newest run in it, into D. Before any broker is contacted, so a
 * wrong file says so at once. Returns 0, or -1 with ERR. */
static int
db_open(const char *db, const struct plan *p, struct step_store_inputs *d, char *err,
    size_t errlen)
{
	struct store_plan sp;
	int r;

	if (cli_store_open_existing(db, &d->s, err, errlen) != 0)
		return -1;
	if ((r = engine_find_plan(d->s, p->name, &sp, err, errlen)) != 0) {
		if (r == STORE_NOT_FOUND)
			snprintf(err, errlen, "%s holds no plan '%s'", db, p->name);
		return -1;
	}
	d->plan_id = sp.id;
	d->p = p;
	return 0;
}

/* Gives CTX remove_old's inputs from D's plan, as the engine does
 * (step_remove_old_prepare): the measured queues, move_old's result with
 * its deadlines, the watch's last state (its joined queues and last
 * sample) and the last entry into the old path. Returns 0, or -1 with ERR. */
static int
db_inputs(struct step_store_inputs *d, struct step_ctx *ctx, struct step_inputs *in,
    char *err, size_t errlen)
{
	json_t *ignored = NULL;
	int r;

	*in = step_inputs_of_store(d);
	r = step_remove_old_prepare(ctx, in, &ignored, err, errlen);
	json_decref(ignored);
	return r;
}

int
cli_old(int argc, char **argv)
{
	struct old_args a = { 0 };
	struct step_ctx ctx = { 0 };
	struct step_inputs in = { 0 };
	struct step_store_inputs d = { 0 };
	struct plan *p = NULL;
	json_t *measured = NULL, *removed = NULL;
	char err[2048];
	int rc = CLI_FAIL;

	if (args_parse(argc, argv, &a, &rc) != 0)
		return rc;
	if ((p = cli_load_plan(a.plan)) == NULL)
		goto done;
	if (a.db != NULL && db_open(a.db, p, &d, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover old remove: %s\n", err);
		goto done;
	}
	if (step_ctx_open(&ctx, p, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover old %s: %s\n", a.action, err);
		goto done;
	}
	if (a.db != NULL) {
		if (db_inputs(&d, &ctx, &in, err, sizeof(err)) != 0) {
			fprintf(stderr, "cutover old remove: %s\n", err);
			goto done;
		}
		measured = json_incref((json_t *)ctx.measured);
		goto remove;
	}
	if (step_measure_horizon(&ctx, &measured, err, sizeof(err)) != 0) {
		show_measure(&a, measured);
		fprintf(stderr, "cutover old %s: %s\n", a.action, err);
		goto done;
	}
	if (!a.remove) {
		show_measure(&a, measured);
		rc = CLI_OK;
		goto done;
	}
	ctx.measured = measured;
	ctx.old_last_entry_ms = a.last_ms;
remove:
	rc = old_remove(&ctx, &a.ro, &removed, err, sizeof(err)) == 0 ? CLI_OK : CLI_FAIL;
	if (rc == CLI_OK && ctx.again) {
		/* Nothing here runs it again: say what it waits for. */
		rc = CLI_FAIL;
		snprintf(err, sizeof(err), "%s; run it again then",
		    json_string_value(json_object_get(removed, "status")));
	}
	show_remove(&a, measured, removed);
	if (rc != CLI_OK)
		fprintf(stderr, "cutover old remove: %s\n", err);
done:
	json_decref(removed);
	json_decref(measured);
	step_inputs_release(&in);
	store_close(d.s);
	step_ctx_close(&ctx);
	plan_free(p);
	return rc;
}
