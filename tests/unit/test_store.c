/* test_store: the store's connection on a real database file in a fresh
 * temporary directory — schema and versions, transactions, a damaged file,
 * and two connections (threads) on one file; each table's functions have
 * a test file of their own (test_store_*.c). */

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "clock.h"
#include "cm.h"
#include "fx.h"
#include "store.h"

static void
write_file(const char *path, const char *content, size_t n)
{
	FILE *f;

	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(content, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

static int
count_event(const struct store_event *ev, void *arg)
{
	(void)ev;
	(*(int64_t *)arg)++;
	return 0;
}

static int64_t
nevents(struct store *s, int64_t plan)
{
	char err[256];
	int64_t n = 0;

	assert_int_equal(store_each_event(s, plan, count_event, &n, err,
	    sizeof(err)), 0);
	return n;
}

/* ---- open, schema, versions ------------------------------------------ */

static void
test_open_creates_schema(void **state)
{
	struct fx *fx = *state;
	char mode[16];
	sqlite3 *db;

	fx_open(fx);
	db = fx_raw_open(fx->path);
	assert_int_equal(fx_raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(fx_raw_int(db, "PRAGMA user_version"),
	    STORE_SCHEMA_VERSION);
	fx_raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'table' AND name IN"
	    " ('plans', 'steps', 'events', 'samples')"), 4);
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'trigger' AND tbl_name = 'events'"), 3);
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'trigger' AND tbl_name = 'chain_head'"), 3);
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'index' AND name = 'samples_plan_ts'"), 1);
	sqlite3_close(db);

	/* Reopening an up-to-date database changes nothing and works. */
	store_close(fx->s);
	fx->s = NULL;
	fx_open(fx);
	fx_plan(fx, "p", "abc", 1);
	store_close(fx->s);
	fx->s = NULL;
	fx_open(fx);
	db = fx_raw_open(fx->path);
	assert_int_equal(fx_raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM plans"), 1);
	sqlite3_close(db);
}

static void
test_open_enforces_foreign_keys(void **state)
{
	struct fx *fx = *state;

	fx_open(fx);
	assert_int_equal(store_step_insert(fx->s, 42, 0, "canary", 0, FX_ERR(fx)),
	    -1);
	assert_string_equal(fx->err,
	    "inserting step 0 of plan 42: FOREIGN KEY constraint failed");
	assert_int_equal(store_sample_insert(fx->s, 42, 1, "old.depth", "", 1,
	    FX_ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, 42, 1, "engine", "x", NULL,
	    NULL, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "FOREIGN KEY constraint failed"));
}

static void
test_open_refuses_newer_schema(void **state)
{
	struct fx *fx = *state;
	char want[PATH_MAX + 256], mode[16];
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(fx_raw_exec(db,
	    "CREATE TABLE t (x); PRAGMA user_version = 99"), SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)),
	    -1);
	assert_null(fx->s);
	snprintf(want, sizeof(want), "database %s has schema version 99; "
	    "this cutover knows up to %d: upgrade cutover", fx->path, STORE_SCHEMA_VERSION);
	assert_string_equal(fx->err, want);

	/* Refused before anything was written: not even the journal mode. */
	db = fx_raw_open(fx->path);
	fx_raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "delete");
	assert_int_equal(fx_raw_int(db, "PRAGMA user_version"), 99);
	sqlite3_close(db);
}

/* The version read before SQLite opens the file is the WAL's current
 * generation's: frames an earlier one left past its end (here page 1 at
 * version 99, then set back and checkpointed) are not the database's, and
 * it opens; a frame of the current generation at 99 is refused. */
static void
test_open_reads_the_current_wal_generation(void **state)
{
	struct fx *fx = *state;
	char want[PATH_MAX + 256];
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	/* The raw connection stays open: its close would checkpoint the WAL
	 * and remove it. */
	assert_int_equal(fx_raw_exec(db, "PRAGMA journal_mode = WAL;"
	    "PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x);"
	    "PRAGMA user_version = 99; PRAGMA user_version = 6;"
	    "PRAGMA wal_checkpoint(PASSIVE);"
	    /* The next write starts the WAL over, with new salts, over the
	     * first frame only. */
	    "INSERT INTO t VALUES (1);"), SQLITE_OK);
	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)), 0);
	store_close(fx->s);
	fx->s = NULL;

	assert_int_equal(fx_raw_exec(db, "PRAGMA user_version = 99"), SQLITE_OK);
	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)), -1);
	snprintf(want, sizeof(want), "database %s has schema version 99; "
	    "this cutover knows up to %d: upgrade cutover", fx->path, STORE_SCHEMA_VERSION);
	assert_string_equal(fx->err, want);
	sqlite3_close(db);
}

static void
test_open_refuses_non_database(void **state)
{
	struct fx *fx = *state;
	char big[8192], want[PATH_MAX + 256];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = "name: orders-delays\n"[i % 20];
	write_file(fx->path, big, sizeof(big));
	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)),
	    -1);
	assert_null(fx->s);
	snprintf(want, sizeof(want), "database %s: not a SQLite database",
	    fx->path);
	fx_assert_prefix(fx->err, want);

	/* A short file too. */
	write_file(fx->path, "hello\n", 6);
	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)),
	    -1);
	fx_assert_prefix(fx->err, want);
}

static void
test_open_refuses_unopenable_path(void **state)
{
	struct fx *fx = *state;
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/missing/dir/cutover.db", fx->dir);
	assert_int_equal(store_open(p, &fx->s, FX_ERR(fx)), -1);
	assert_null(fx->s);
	assert_non_null(strstr(fx->err, "opening database"));
	assert_non_null(strstr(fx->err, p));
}

static void
test_version_changes_with_any_writer(void **state)
{
	struct fx *fx = *state;
	struct store *other = NULL;
	uint64_t v0, v1, v2, v3;

	fx_open(fx);
	assert_int_equal(store_open(fx->path, &other, FX_ERR(fx)), 0);
	fx_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_version(fx->s, &v0, FX_ERR(fx)), 0);
	assert_int_equal(store_version(fx->s, &v1, FX_ERR(fx)), 0);
	assert_true(v0 == v1);                 /* nothing changed */
	/* Another connection writes. */
	assert_int_equal(store_plan_insert(other, "q", "y", 1, 2, NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_version(fx->s, &v2, FX_ERR(fx)), 0);
	assert_true(v2 != v1);
	/* This connection writes. */
	fx_plan(fx, "r", "z", 3);
	assert_int_equal(store_version(fx->s, &v3, FX_ERR(fx)), 0);
	assert_true(v3 != v2);
	store_close(other);
}

/* store_version's WAL hook replaces SQLite's own, which checkpoints: the
 * WAL must still be checkpointed, not grow with every commit. 200 commits
 * of 64 KiB would leave ~3,400 frames (14 MB) without; with the checkpoint
 * at 1,000 frames the file stays near 4 MB. */
static void
test_wal_is_checkpointed(void **state)
{
	struct fx *fx = *state;
	char wal[600], *yaml = malloc(64 * 1024 + 1);
	struct stat sb;

	assert_non_null(yaml);
	memset(yaml, 'y', 64 * 1024);
	yaml[64 * 1024] = '\0';
	fx_open(fx);
	for (int i = 0; i < 200; i++) {
		char name[16];

		snprintf(name, sizeof(name), "p%d", i);
		fx_plan(fx, name, yaml, i + 1);
	}
	free(yaml);
	snprintf(wal, sizeof(wal), "%s-wal", fx->path);
	assert_int_equal(stat(wal, &sb), 0);
	if (sb.st_size > 6 * 1024 * 1024)
		fail_msg("the WAL holds %lld bytes after 200 commits: never checkpointed",
		    (long long)sb.st_size);
}

/* Another process's commit is not counted by this one's WAL hook: it shows
 * once PRAGMA data_version is asked again, STORE_VERSION_ASK_MS later. */
static void
test_version_changes_with_another_process(void **state)
{
	struct fx *fx = *state;
	uint64_t v0, v1;
	int64_t t0;
	pid_t pid;
	int status;

	fx_open(fx);
	fx_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_version(fx->s, &v0, FX_ERR(fx)), 0);
	if ((pid = fork()) == 0) {
		struct store *child = NULL;
		char err[256];

		_exit(store_open(fx->path, &child, err, sizeof(err)) != 0 ||
		    store_plan_insert(child, "q", "y", 1, 2, NULL, err, sizeof(err)) != 0);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	t0 = clock_mono_ms();
	while (clock_mono_ms() - t0 <= STORE_VERSION_ASK_MS)
		nanosleep(&(struct timespec){ .tv_nsec = 500000 }, NULL);
	assert_int_equal(store_version(fx->s, &v1, FX_ERR(fx)), 0);
	assert_true(v1 != v0);
}

/* ---- transactions ----------------------------------------------------- */

static void
test_transactions(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	struct store_step st;
	int64_t plan, id = 0;

	plan = fx_open_plan(fx, "abc");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0,
	    FX_ERR(fx)), 0);

	/* Rolled back: neither the step change nor its event. */
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 100, 0,
	    NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(fx_append(fx, plan, 100, "engine", "step.started",
	    "{\"step\":0}"), 1);
	assert_int_equal(store_rollback(fx->s), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	store_step_clear(&st);
	assert_int_equal(nevents(fx->s, 0), 0);

	/* Committed: both. A refused event inside the transaction is undone
	 * by itself and leaves the rest of the transaction alone. */
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "beginning transaction: "));
	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 200, 0,
	    NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_append_event(fx->s, plan, 200, "engine", "bad",
	    "{", NULL, FX_ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, plan, 200, "engine",
	    "step.started", "{\"step\":0}", &id, FX_ERR(fx)), 0);
	assert_int_equal(id, 1);
	assert_int_equal(fx_append(fx, plan, 201, "engine", "step.note", NULL), 2);
	assert_int_equal(store_commit(fx->s, FX_ERR(fx)), 0);

	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_int_equal(st.started_ms, 200);
	store_step_clear(&st);
	assert_int_equal(nevents(fx->s, plan), 2);
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);

	/* Commit with nothing open fails with a message; rollback is a
	 * no-op. */
	assert_int_equal(store_commit(fx->s, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "committing transaction: "));
	assert_int_equal(store_rollback(fx->s), 0);
}

/* ---- a damaged file ---------------------------------------------------- */

/* 16 KiB of garbage in the middle of a database that holds a plan, its
 * events and a few thousand samples: the file is refused at open, with
 * SQLite's finding and what to do, and no plan is read from it. */
static void
test_damaged_file_is_refused(void **state)
{
	struct fx *fx = *state;
	unsigned char junk[16384];
	uint32_t x = 2463534242u;	/* xorshift32: the same bytes every run */
	int64_t p;
	long size;
	FILE *fp;

	fx_open(fx);
	p = fx_plan(fx, "one", "name: one", 1);
	fx_append(fx, p, 2, "engine", "plan.started", NULL);
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	for (int i = 0; i < 4000; i++)
		assert_int_equal(store_sample_insert(fx->s, p, 1000 + i, "old.depth",
		    "", i, FX_ERR(fx)), 0);
	assert_int_equal(store_commit(fx->s, FX_ERR(fx)), 0);
	/* Whole before the damage, by the same check. */
	assert_int_equal(store_integrity(fx->s, fx->path, true, FX_ERR(fx)), 0);
	store_close(fx->s);	/* the last connection: the WAL goes into the file */
	fx->s = NULL;

	for (size_t i = 0; i < sizeof(junk); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		junk[i] = (unsigned char)x;
	}
	assert_non_null(fp = fopen(fx->path, "r+b"));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	size = ftell(fp);
	assert_true(size >= 4 * (long)sizeof(junk));
	assert_int_equal(fseek(fp, size / 2, SEEK_SET), 0);
	assert_int_equal(fwrite(junk, 1, sizeof(junk), fp), sizeof(junk));
	assert_int_equal(fclose(fp), 0);

	assert_int_equal(store_open(fx->path, &fx->s, FX_ERR(fx)), -1);
	assert_null(fx->s);
	assert_non_null(strstr(fx->err, "is damaged"));
	assert_non_null(strstr(fx->err, "restore the last good backup"));
}

/* ---- two connections -------------------------------------------------- */

static void
test_two_connections_read_while_write(void **state)
{
	struct fx *fx = *state;
	struct store *web = NULL;
	struct store_plan p;
	struct store_verify v;
	int64_t plan;

	fx_open(fx);
	assert_int_equal(store_open(fx->path, &web, FX_ERR(fx)), 0);
	plan = fx_plan(fx, "p", "abc", 1);
	fx_append(fx, plan, 1, "engine", "plan.submitted", NULL);

	/* The engine holds a write transaction; the web side still reads,
	 * and sees the last committed state. */
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	assert_int_equal(store_plan_set_status(fx->s, plan, "aborted",
	    FX_ERR(fx)), 0);
	fx_append(fx, plan, 2, "engine", "plan.aborted", NULL);
	assert_int_equal(store_plan_get(web, plan, &p, FX_ERR(fx)), 0);
	assert_string_equal(p.status, "running");
	assert_int_equal(nevents(web, plan), 1);
	assert_int_equal(store_verify_events(web, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 1);
	assert_int_equal(store_commit(fx->s, FX_ERR(fx)), 0);

	assert_int_equal(store_plan_get(web, plan, &p, FX_ERR(fx)), 0);
	assert_string_equal(p.status, "aborted");
	assert_int_equal(nevents(web, plan), 2);

	/* The web side appends too (operator commands); one chain. */
	assert_int_equal(store_append_event(web, plan, 3, "operator:bob",
	    "plan.retry", NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(fx_append(fx, plan, 4, "engine", "plan.resumed", NULL),
	    4);
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 4);
	store_close(web);
}

#define THREAD_EVENTS 50

struct writer {
	const char *path;
	int64_t plan;
	const char *actor;
	int failed;
	char err[256];
};

/* Each writer pauses 5 ms between rounds, as the engine and the web
 * thread do between real writes: SQLite's busy wait polls, so a writer that
 * re-takes the lock in a tight loop can starve the other past the timeout
 * (it does under valgrind, which runs one thread at a time). */
static void *
writer_main(void *arg)
{
	const struct timespec pause = { 0, 5000000 };
	struct writer *w = arg;
	struct store *s = NULL;
	int i;

	if (store_open(w->path, &s, w->err, sizeof(w->err)) != 0) {
		w->failed = 1;
		return NULL;
	}
	for (i = 0; i < THREAD_EVENTS && !w->failed; i++) {
		if (store_append_event(s, w->plan, i, w->actor, "tick",
		    "{\"i\":1}", NULL, w->err, sizeof(w->err)) != 0 ||
		    store_sample_insert(s, w->plan, i, "old.depth", "", i,
		    w->err, sizeof(w->err)) != 0)
			w->failed = 1;
		/* Every tenth: a step change and its event, together. */
		if (!w->failed && i % 10 == 0 &&
		    (store_begin(s, w->err, sizeof(w->err)) != 0 ||
		    store_step_update(s, w->plan, 0, "running", i + 1, 0, NULL,
		    NULL, w->err, sizeof(w->err)) != 0 ||
		    store_append_event(s, w->plan, i, w->actor, "step.tick",
		    NULL, NULL, w->err, sizeof(w->err)) != 0 ||
		    store_commit(s, w->err, sizeof(w->err)) != 0))
			w->failed = 1;
		nanosleep(&pause, NULL);
	}
	store_close(s);
	return NULL;
}

/* Two writer threads, each with its own connection, append to the one chain
 * while this thread reads and verifies on a third. Nothing fails the test
 * before both threads are joined: they use this frame. */
static void
test_two_connections_concurrent_writers(void **state)
{
	const int64_t total = 2 * (THREAD_EVENTS + THREAD_EVENTS / 10);
	struct fx *fx = *state;
	struct writer w[2];
	struct store_verify v;
	pthread_t t[2];
	int64_t plan[2], n = 0;
	char readerr[1024] = "";
	int i, reads = 0;

	memset(&v, 0, sizeof(v));
	fx_open(fx);
	plan[0] = fx_plan(fx, "engine-a", "abc", 1);
	plan[1] = fx_plan(fx, "engine-b", "abc", 1);
	for (i = 0; i < 2; i++) {
		assert_int_equal(store_step_insert(fx->s, plan[i], 0, "watch",
		    0, FX_ERR(fx)), 0);
		memset(&w[i], 0, sizeof(w[i]));
		w[i].path = fx->path;
		w[i].plan = plan[i];
		w[i].actor = i == 0 ? "engine" : "operator:web";
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer_main,
		    &w[i]), 0);
	while (n < total && !w[0].failed && !w[1].failed) {
		if (store_each_event(fx->s, 0, count_event, &n, FX_ERR(fx)) != 0 ||
		    store_verify_events(fx->s, &v, FX_ERR(fx)) != 0 || !v.verified) {
			snprintf(readerr, sizeof(readerr), "%s (event %" PRId64
			    ": %s)", fx->err, v.bad_id, v.reason);
			break;
		}
		if (v.checked < n) {
			snprintf(readerr, sizeof(readerr), "verified %" PRId64
			    " of %" PRId64, v.checked, n);
			break;
		}
		reads++;
		if (n < total)
			n = 0;
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	if (readerr[0] != '\0')
		fail_msg("reading while writing: %s", readerr);
	for (i = 0; i < 2; i++)
		if (w[i].failed)
			fail_msg("writer %d: %s", i, w[i].err);
	assert_true(reads > 0);
	assert_int_equal(nevents(fx->s, 0), total);
	assert_int_equal(nevents(fx->s, plan[0]), total / 2);
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, total);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_open_creates_schema),
	T(test_open_enforces_foreign_keys),
	T(test_open_refuses_newer_schema),
	T(test_open_reads_the_current_wal_generation),
	T(test_open_refuses_non_database),
	T(test_open_refuses_unopenable_path),
	T(test_transactions),
	T(test_damaged_file_is_refused),
	T(test_two_connections_read_while_write),
	T(test_two_connections_concurrent_writers),
	T(test_version_changes_with_any_writer),
	T(test_version_changes_with_another_process),
	T(test_wal_is_checkpointed))
