/* cli_restore: `cutover restore BACKUP --db FILE` — a backup made by
 * `cutover backup` made into a new database FILE that serve or run then
 * resumes from. The backup is checked first (SQLite's full integrity
 * check and the whole history chain) and never changed: it is copied,
 * the copy migrated to this binary's schema, and each plan's history
 * given a state.restored event naming the backup's last event, so that
 * the gap between the backup and the restore is in the record and the
 * engine treats what happened in it as unknown (the flag read before any
 * switch, probes in flight forgotten, remove_old on a fresh baseline).
 * FILE appears whole or not at all; an existing FILE is refused. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "clock.h"
#include "errbuf.h"
#include "store.h"

static const char usage_line[] = "cutover restore --db FILE [--json] BACKUP";

/* Copies the file FROM into TO, a new file, and forces it to the disk.
 * Returns 0, or -1 with ERR (TO may be left half written: the caller
 * removes it). */
static int
copy_file(const char *from, const char *to, char *err, size_t errlen)
{
	char buf[65536];
	int in = -1, out = -1, rc = -1;
	ssize_t n;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0) {
		errbuf_set(err, errlen, "reading %s: %s", from, strerror(errno));
		goto done;
	}
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		errbuf_set(err, errlen, "writing %s: %s", to, strerror(errno));
		goto done;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			errbuf_set(err, errlen, "copying %s to %s: %s", from, to,
			    strerror(errno));
			goto done;
		}
	}
	if (fsync(out) != 0) {
		errbuf_set(err, errlen, "syncing %s: %s", to, strerror(errno));
		goto done;
	}
	rc = 0;
done:
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0 && rc == 0) {
		errbuf_set(err, errlen, "writing %s: %s", to, strerror(errno));
		rc = -1;
	}
	return rc;
}

/* Whether FILE's write-ahead log (FILE-wal) is absent or empty. */
static bool
log_empty(const char *file)
{
	char wal[4200];
	struct stat st;

	snprintf(wal, sizeof(wal), "%s-wal", file);
	return stat(wal, &st) != 0 || st.st_size == 0;
}

/* Removes FILE and what SQLite keeps beside it. */
static void
remove_db(const char *file)
{
	static const char *const sides[] = { "", "-wal", "-shm", "-journal" };
	char name[4200];

	for (size_t i = 0; i < sizeof(sides) / sizeof(sides[0]); i++) {
		snprintf(name, sizeof(name), "%s%s", file, sides[i]);
		(void)unlink(name);
	}
}

/* Refuses a BACKUP that is not one file standing alone: a write-ahead log
 * beside it holds pages the file lacks (a live database, or a copy taken
 * without `cutover backup`). Returns 0, or -1 with ERR. */
static int
standalone(const char *backup, char *err, size_t errlen)
{
	struct stat st;

	if (stat(backup, &st) != 0) {
		errbuf_set(err, errlen, "%s: %s", backup, strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		errbuf_set(err, errlen, "%s is not a file", backup);
		return -1;
	}
	if (!log_empty(backup)) {
		errbuf_set(err, errlen, "%s has a write-ahead log beside it (%s-wal): it is "
		    "a database in use, or a copy of one taken without cutover backup; "
		    "restore from a copy `cutover backup` made", backup, backup);
		return -1;
	}
	return 0;
}

/* Records state.restored in the history of each plan of H not archived
 * (HASH: the chain's hash at the backup's last event), in one
 * transaction. Returns 0, or -1 with ERR. */
static int
record_restored(struct store *s, const char *backup, const struct cli_held *h,
    const char *hash, char *err, size_t errlen)
{
	char when[32], gap[512], *text;
	time_t t = (time_t)(h->last_ts / 1000);
	int64_t now = clock_now_ms();
	struct tm tm;
	json_t *p, *d;
	size_t i;
	int rc = 0;

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(gap, sizeof(gap), "what happened after event #%" PRId64 " (%s, %s) "
	    "until this restore is not recorded: the flag is read before any switch, "
	    "the watch forgets the probes it had in flight, remove_old takes a fresh "
	    "baseline", h->last_id, h->last_kind, when);
	if (store_begin(s, err, errlen) != 0)
		return -1;
	json_array_foreach(h->plans, i, p) {
		if (json_is_true(json_object_get(p, "archived")))
			continue;
		d = json_pack("{s:s,s:{s:I,s:I,s:s,s:s},s:s}", "backup", backup,
		    "backup_last_event", "id", (json_int_t)h->last_id, "ts_ms",
		    (json_int_t)h->last_ts, "kind", h->last_kind, "hash", hash,
		    "gap", gap);
		text = json_dumps(d, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(d);
		rc = text == NULL ? -1 : store_append_event(s, (int64_t)json_integer_value(
		    json_object_get(p, "id")), now, "cutover restore", STORE_EVENT_RESTORED,
		    text, NULL, err, errlen);
		free(text);
		if (rc != 0)
			break;
	}
	if (rc != 0) {
		if (err[0] == '\0')
			errbuf_set(err, errlen, "out of memory");
		store_rollback(s);
		return -1;
	}
	return store_commit(s, err, errlen);
}

/* Makes the checked, migrated and marked copy of BACKUP at TMP; fills H.
 * Returns 0, or -1 with ERR. */
static int
restore_into(const char *backup, const char *tmp, struct cli_held *h, char *err,
    size_t errlen)
{
	struct store *s = NULL;
	char hash[STORE_HASH_HEX];
	int64_t nevents;
	int rc = -1;

	if (standalone(backup, err, errlen) != 0 || copy_file(backup, tmp, err, errlen) != 0)
		return -1;
	/* Opening migrates the copy, never the backup; a newer schema is
	 * refused before anything is written. */
	if (store_open(tmp, &s, err, errlen) != 0 ||
	    store_backup_verify(s, tmp, err, errlen) != 0)
		goto done;
	if (cli_held_read(s, h, err, errlen) != 0 ||
	    store_chain_head(s, &nevents, &h->last_id, hash, err, errlen) != 0 ||
	    record_restored(s, backup, h, hash, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	store_close(s);
	/* Closing checkpoints the log into the file; a log left behind
	 * would hold pages the file that is named FILE lacks. */
	if (rc == 0 && !log_empty(tmp)) {
		errbuf_set(err, errlen, "the restored copy %s kept a write-ahead log after "
		    "closing", tmp);
		rc = -1;
	}
	return rc;
}

static void
print_held(const char *backup, const char *db, const struct cli_held *h, int json)
{
	if (json) {
		json_t *o = json_pack("{s:s,s:s,s:b,s:O,s:{s:I,s:I,s:s}}", "db", db,
		    "backup", backup, "verified", 1, "plans", h->plans, "last_event", "id",
		    (json_int_t)h->last_id, "ts_ms", (json_int_t)h->last_ts, "kind",
		    h->last_kind);

		json_dumpf(o, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
		printf("\n");
		json_decref(o);
		return;
	}
	printf("%s: restored from %s (integrity and history verified)\n", db, backup);
	cli_held_print(h, "the backup's last event:");
	printf("What happened after it is unknown to the record: each plan's history "
	    "says so (state.restored). Start `cutover serve` or `cutover run` on %s: "
	    "each plan resumes where the backup left it, reading the flag before any "
	    "switch, forgetting the watch's probes in flight and taking a fresh baseline "
	    "before remove_old deletes anything.\n", db);
}

int
cli_restore(int argc, char **argv)
{
	struct cli_db_file a = { .verb = "restore", .usage = usage_line,
	    .db_what = " (the new database to restore into)", .file_what = "BACKUP" };
	struct cli_held h = { 0 };
	const char *db, *backup;
	char err[1024] = "", tmp[4096];
	int rc;

	if ((rc = cli_db_file_args(&a, argc, argv)) != CLI_GO_ON)
		return rc;
	rc = CLI_FAIL;
	h.plans = json_array();
	db = a.db;
	backup = a.file;
	if (access(db, F_OK) == 0) {
		errbuf_set(err, sizeof(err), "%s exists: a restore never replaces a "
		    "database; give a new file", db);
		goto fail;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.restoring", db) >= sizeof(tmp)) {
		errbuf_set(err, sizeof(err), "%s: the name is too long", db);
		goto fail;
	}
	remove_db(tmp);
	/* link() fails on a FILE made meanwhile, where rename() would
	 * replace it. */
	if (restore_into(backup, tmp, &h, err, sizeof(err)) != 0 || link(tmp, db) != 0) {
		if (err[0] == '\0')
			errbuf_set(err, sizeof(err), "naming the restored database %s: %s",
			    db, strerror(errno));
		remove_db(tmp);
		goto fail;
	}
	remove_db(tmp);
	print_held(backup, db, &h, a.json);
	rc = CLI_OK;
	goto done;
fail:
	fprintf(stderr, "cutover restore: %s\n", err);
done:
	json_decref(h.plans);
	return rc;
}
