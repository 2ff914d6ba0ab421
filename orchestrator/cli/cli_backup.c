/* cli_backup: `cutover backup --db FILE OUT` — a consistent copy of the
 * database while serve or run holds it (store_backup), then the copy
 * checked as a restore would need it: SQLite's full integrity check and
 * the whole history chain; and what it holds, said: each plan with its
 * state, and the last event recorded. A copy that does not check is
 * removed and the verb fails: a backup nobody can restore is worse than
 * none, because it is trusted. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "errbuf.h"
#include "store.h"

static const char usage_line[] = "cutover backup --db FILE [--json] OUT";

/* Opens the copy OUT and checks it whole (store_backup_verify, as serve's
 * scheduled backups do); fills H. Returns 0, or -1 with ERR. */
static int
check_copy(const char *out, struct cli_held *h, char *err, size_t errlen)
{
	struct store *c = NULL;
	int rc = -1;

	if (store_open(out, &c, err, errlen) != 0 ||
	    store_backup_verify(c, out, err, errlen) != 0)
		goto done;
	if (cli_held_read(c, h, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	store_close(c);
	return rc;
}

int
cli_backup(int argc, char **argv)
{
	struct cli_db_file a = { .verb = "backup", .usage = usage_line, .db_what = "",
	    .file_what = "OUT" };
	struct cli_held h = { 0 };
	struct store *s = NULL;
	const char *db, *out;
	char err[1024];
	int rc;
	struct timespec t0, t1;

	if ((rc = cli_db_file_args(&a, argc, argv)) != CLI_GO_ON)
		return rc;
	rc = CLI_FAIL;
	db = a.db;
	out = a.file;
	h.plans = json_array();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (cli_store_open_existing(db, &s, err, sizeof(err)) != 0 ||
	    store_backup(s, out, err, sizeof(err)) != 0)
		goto fail;
	store_close(s);
	s = NULL;
	if (check_copy(out, &h, err, sizeof(err)) != 0) {
		(void)unlink(out);
		fprintf(stderr, "cutover backup: the copy %s did not check, and is removed: %s\n",
		    out, err);
		goto done;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (a.json) {
		json_t *o = json_pack("{s:s,s:s,s:b,s:O,s:{s:I,s:I,s:I,s:s},s:I}", "backup", out,
		    "db", db, "verified", 1, "plans", h.plans, "last_event", "id",
		    (json_int_t)h.last_id, "ts_ms", (json_int_t)h.last_ts, "plan",
		    (json_int_t)h.last_plan, "kind", h.last_kind, "took_ms",
		    (json_int_t)((t1.tv_sec - t0.tv_sec) * 1000 +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000));

		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(o);
	} else {
		printf("%s: a checked copy of %s (integrity and history verified)\n", out, db);
		cli_held_print(&h, "last event");
	}
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover backup: %s\n", err);
done:
	store_close(s);
	json_decref(h.plans);
	return rc;
}
