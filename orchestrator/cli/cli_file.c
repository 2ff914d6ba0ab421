/* cli_file: the files a verb reads: a plan (loaded and validated, its
 * errors printed), a file read whole (a message body, an export), with
 * a bound on its size, a database that must already be there, and what a
 * database copy holds (backup and restore). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "errbuf.h"
#include "file_read.h"
#include "plan.h"
#include "store.h"

int
cli_read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
    char *err, size_t errlen)
{
	int rc = file_read(path, max, out, len);

	if (rc == FILE_READ_EBIG)
		errbuf_set(err, errlen, "%s: larger than %zu bytes", what, max);
	else if (rc != FILE_READ_OK)
		errbuf_set(err, errlen, "%s: %s", what, file_read_status_name(rc));
	return rc == FILE_READ_OK ? 0 : -1;
}

void
cli_plan_errors(struct plan_errors *errs)
{
	char line[512];

	for (size_t i = 0; i < errs->n; i++)
		fprintf(stderr, "%s\n", plan_error_format(errs, i, line, sizeof(line)));
	plan_errors_free(errs);
}

struct plan *
cli_load_plan(const char *path)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (plan_load_file(path, &p, &errs) != 0)
		cli_plan_errors(&errs);
	plan_errors_free(&errs);
	return p;
}

int
cli_store_open_existing(const char *db, struct store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (access(db, F_OK) != 0) {
		errbuf_set(err, errlen, "%s does not exist: give the database cutover serve or "
		    "cutover run uses (--db FILE), or talk to a server without --db", db);
		return -1;
	}
	return store_open(db, out, err, errlen);
}

static int
held_plan(const struct store_plan *p, void *arg)
{
	struct cli_held *h = arg;

	json_array_append_new(h->plans, json_pack("{s:I,s:s,s:s,s:b}", "id",
	    (json_int_t)p->id, "name", p->name, "status", p->status, "archived",
	    p->archived_ms != 0));
	return 0;
}

static int
held_event(const struct store_event *ev, void *arg)
{
	struct cli_held *h = arg;

	h->last_id = ev->id;
	h->last_ts = ev->ts_ms;
	h->last_plan = ev->plan_id;
	snprintf(h->last_kind, sizeof(h->last_kind), "%s", ev->kind);
	return 0;
}

int
cli_held_read(struct store *s, struct cli_held *h, char *err, size_t errlen)
{
	return store_each_plan(s, held_plan, h, err, errlen) != 0 ||
	    store_each_event(s, 0, held_event, h, err, errlen) != 0 ? -1 : 0;
}

void
cli_held_print(const struct cli_held *h, const char *last_label)
{
	time_t t = (time_t)(h->last_ts / 1000);
	char when[32] = "-";
	struct tm tm;
	json_t *p;
	size_t i;

	if (h->last_id != 0 && gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%SZ", &tm);
	json_array_foreach(h->plans, i, p)
		printf("  plan %-4lld %-32s %s%s\n",
		    (long long)json_integer_value(json_object_get(p, "id")),
		    json_string_value(json_object_get(p, "name")),
		    json_string_value(json_object_get(p, "status")),
		    json_is_true(json_object_get(p, "archived")) ? " (archived)" : "");
	printf("  %s #%" PRId64 " %s at %s\n", last_label, h->last_id, h->last_kind, when);
}

/* cli_options' incomplete for cli_db_file_args: only --db takes a value. */
static const char *
db_without_file(int c)
{
	(void)c;
	return "--db needs the database's file name";
}

int
cli_db_file_args(struct cli_db_file *a, int argc, char **argv)
{
	static const struct cli_option opts[] = {
		CLI_TEXT("db", 'd', struct cli_db_file, db),
		CLI_FLAG("json", 'j', struct cli_db_file, json),
		CLI_OPTIONS_END
	};
	const struct cli_options o = { .verb = a->verb, .usage = a->usage,
	    .opts = opts, .incomplete = db_without_file,
	    .data = a };
	int rc;

	a->db = NULL;
	a->json = 0;
	if ((rc = cli_options_read(&o, argc, argv)) != CLI_GO_ON)
		return rc;
	if (a->db == NULL)
		return cli_usage_error(a->verb, a->usage, "--db FILE is required%s",
		    a->db_what);
	if (argc - optind != 1)
		return cli_usage_error(a->verb, a->usage, "expected the backup's file name, %s",
		    a->file_what);
	a->file = argv[optind];
	return CLI_GO_ON;
}
