/* store: the SQLite database shared by the engine and the web thread (each
 * with its own connection) — opening it, its schema migrations, transactions,
 * the data version readers cache by, the words for each code, and the
 * small SQLite helpers the store's files share (store_int.h); the version a
 * file names before SQLite opens it is store_version.c's. Schema versions
 * are an ordered list of SQL scripts applied through PRAGMA user_version.
 * Each table's functions are a file of their own: store_plans.c,
 * store_steps.c, store_events.c, store_samples.c, store_commands.c,
 * store_alerts.c and store_notify.c (the deliveries). Nothing in the store
 * logs: errors go back to the caller through its error buffer. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include <sqlite3.h>

#include "clock.h"
#include "errbuf.h"
#include "store.h"
#include "store_int.h"

#define BUSY_TIMEOUT_MS 5000
/* SQLite's own WAL checkpoint threshold (frames), kept by on_wal_commit. */
#define WAL_CHECKPOINT_FRAMES 1000


/*
 * Schema migrations: migrations[i] takes a database from user_version i to
 * i + 1. Append a script to add a version; never edit a published one.
 *
 * Tables are STRICT so that a column holds the type it says. The event
 * columns that feed the hash are NOT NULL; the CHECKs keep what is read back
 * within the fixed buffers of the structs in store.h (lengths in bytes where
 * the text may be other than ASCII).
 */
static const char *const migrations[] = {
	/* 0 -> 1 */
	"CREATE TABLE plans ("
	"  id INTEGER PRIMARY KEY,"
	"  name TEXT NOT NULL"
	"    CHECK (length(name) BETWEEN 1 AND 64"
	" AND name NOT GLOB '*[^a-z0-9._-]*'),"
	"  yaml TEXT NOT NULL,"
	"  sha256 TEXT NOT NULL"
	"    CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),"
	"  status TEXT NOT NULL"
	"    CHECK (status IN ('running', 'succeeded', 'failed', 'aborted')),"
	"  created_ms INTEGER NOT NULL"
	") STRICT;"
	"CREATE INDEX plans_name ON plans (name, id);"

	"CREATE TABLE steps ("
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  idx INTEGER NOT NULL CHECK (idx >= 0),"
	"  kind TEXT NOT NULL"
	"    CHECK (length(kind) BETWEEN 1 AND 23"
	" AND kind NOT GLOB '*[^a-z_]*'),"
	"  gate INTEGER NOT NULL CHECK (gate IN (0, 1)),"
	"  status TEXT NOT NULL"
	"    CHECK (status IN ('pending', 'waiting_approval', 'running',"
	" 'succeeded', 'failed')),"
	"  started_ms INTEGER,"
	"  ended_ms INTEGER,"
	"  result_json TEXT"
	"    CHECK (result_json IS NULL OR json_valid(result_json)),"
	"  error TEXT,"
	"  PRIMARY KEY (plan_id, idx)"
	") STRICT;"

	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY,"
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  ts_ms INTEGER NOT NULL,"
	"  actor TEXT NOT NULL"
	"    CHECK (length(CAST(actor AS BLOB)) BETWEEN 1 AND 64),"
	"  kind TEXT NOT NULL"
	"    CHECK (length(CAST(kind AS BLOB)) BETWEEN 1 AND 47),"
	"  details_json TEXT NOT NULL CHECK (json_valid(details_json)),"
	"  prev_hash TEXT NOT NULL"
	"    CHECK (length(prev_hash) = 64"
	" AND prev_hash NOT GLOB '*[^0-9a-f]*'),"
	"  hash TEXT NOT NULL"
	"    CHECK (length(hash) = 64 AND hash NOT GLOB '*[^0-9a-f]*')"
	") STRICT;"
	"CREATE INDEX events_plan ON events (plan_id, id);"
	"CREATE TRIGGER events_no_update BEFORE UPDATE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"
	"CREATE TRIGGER events_no_delete BEFORE DELETE ON events"
	" BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;"

	"CREATE TABLE samples ("
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  ts_ms INTEGER NOT NULL,"
	"  metric TEXT NOT NULL CHECK (length(metric) BETWEEN 1 AND 64),"
	"  label TEXT NOT NULL CHECK (length(label) <= 64),"
	"  value REAL NOT NULL"
	") STRICT;"
	"CREATE INDEX samples_plan_ts ON samples (plan_id, ts_ms);",

	/* 1 -> 2: operator commands and alerts (store_commands.c,
	 * store_alerts.c). */
	"CREATE TABLE commands ("
	"  id INTEGER PRIMARY KEY,"
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  kind TEXT NOT NULL CHECK (kind IN ('approve', 'retry', 'abort', 'ack')),"
	"  step_idx INTEGER,"
	"  alert_id INTEGER,"
	"  actor TEXT NOT NULL CHECK (length(CAST(actor AS BLOB)) BETWEEN 1 AND 64),"
	"  comment TEXT NOT NULL DEFAULT '' CHECK (length(comment) <= 1000),"
	"  created_ms INTEGER NOT NULL,"
	"  handled_ms INTEGER,"
	"  outcome TEXT"
	") STRICT;"
	"CREATE INDEX commands_open ON commands (plan_id, handled_ms, id);"

	"CREATE TABLE alerts ("
	"  id INTEGER PRIMARY KEY,"
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  kind TEXT NOT NULL CHECK (length(kind) BETWEEN 1 AND 47),"
	"  message TEXT NOT NULL,"
	"  raised_ms INTEGER NOT NULL,"
	"  last_ms INTEGER NOT NULL,"
	"  count INTEGER NOT NULL DEFAULT 1,"
	"  acked_ms INTEGER,"
	"  acked_by TEXT,"
	"  ack_comment TEXT"
	") STRICT;"
	"CREATE INDEX alerts_plan ON alerts (plan_id, acked_ms);",

	/* 2 -> 3: the chain's head — how many events it holds and the last
	 * one's hash — moved by each append in the append's own transaction,
	 * so that verify sees events cut off the end. */
	"CREATE TABLE chain_head ("
	"  id INTEGER PRIMARY KEY CHECK (id = 1),"
	"  events INTEGER NOT NULL CHECK (events >= 0),"
	"  last_id INTEGER NOT NULL,"
	"  last_hash TEXT NOT NULL"
	"    CHECK (length(last_hash) = 64 AND last_hash NOT GLOB '*[^0-9a-f]*')"
	") STRICT;"
	"INSERT INTO chain_head (id, events, last_id, last_hash)"
	" SELECT 1, count(*), coalesce(max(id), 0), coalesce("
	"(SELECT hash FROM events ORDER BY id DESC LIMIT 1), '" ZERO_HASH "')"
	" FROM events;"
	"CREATE TRIGGER events_move_head AFTER INSERT ON events BEGIN"
	" UPDATE chain_head SET events = events + 1, last_id = NEW.id,"
	" last_hash = NEW.hash WHERE id = 1; END;"
	"CREATE TRIGGER chain_head_follows BEFORE UPDATE ON chain_head"
	" WHEN NEW.id IS NOT OLD.id OR NEW.events IS NOT OLD.events + 1"
	" OR NEW.last_id IS NOT (SELECT max(id) FROM events)"
	" OR NEW.last_hash IS NOT (SELECT hash FROM events WHERE id = NEW.last_id)"
	" BEGIN SELECT RAISE(ABORT, 'the chain head only moves with an append'); END;"
	"CREATE TRIGGER chain_head_no_insert BEFORE INSERT ON chain_head"
	" BEGIN SELECT RAISE(ABORT, 'there is one chain head'); END;"
	"CREATE TRIGGER chain_head_no_delete BEFORE DELETE ON chain_head"
	" BEGIN SELECT RAISE(ABORT, 'there is one chain head'); END;",

	/* 3 -> 4: an archived plan no longer holds its name (store_admit.c). */
	"ALTER TABLE plans ADD COLUMN archived_ms INTEGER;",

	/* 4 -> 5: notifications (store_notify.c). A notifier's cursor is the
	 * last event it has looked at; a delivery is one event for one
	 * notifier (named, never its URL), each try of it an attempt. */
	"CREATE TABLE notify_cursors ("
	"  notifier TEXT PRIMARY KEY CHECK (length(notifier) BETWEEN 1 AND 64),"
	"  last_event_id INTEGER NOT NULL"
	") STRICT;"
	"CREATE TABLE deliveries ("
	"  id INTEGER PRIMARY KEY,"
	"  notifier TEXT NOT NULL CHECK (length(notifier) BETWEEN 1 AND 64),"
	"  kind TEXT NOT NULL CHECK (kind IN ('webhook', 'slack')),"
	"  event_id INTEGER NOT NULL REFERENCES events (id),"
	"  plan_id INTEGER NOT NULL REFERENCES plans (id),"
	"  event TEXT NOT NULL CHECK (event IN ('gate_waiting', 'step_failed',"
	" 'alert_opened', 'plan_finished')),"
	"  status TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),"
	"  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),"
	"  next_ms INTEGER NOT NULL,"
	"  created_ms INTEGER NOT NULL,"
	"  done_ms INTEGER,"
	"  last_http INTEGER,"
	"  last_error TEXT CHECK (length(last_error) <= 200),"
	"  UNIQUE (notifier, event_id)"
	") STRICT;"
	"CREATE INDEX deliveries_due ON deliveries (notifier, status, next_ms);"
	"CREATE INDEX deliveries_plan ON deliveries (plan_id, id);"
	"CREATE TABLE delivery_attempts ("
	"  delivery_id INTEGER NOT NULL REFERENCES deliveries (id),"
	"  attempt INTEGER NOT NULL CHECK (attempt >= 1),"
	"  ts_ms INTEGER NOT NULL,"
	"  http_status INTEGER,"
	"  error TEXT CHECK (length(error) <= 200),"
	"  PRIMARY KEY (delivery_id, attempt)"
	") STRICT;",

	/* 5 -> 6: whether an alert's cause is still there (store_alerts.c):
	 * cause is 1 from the raise of a kind whose cause the engine looks
	 * for (alert_kinds.def) until the engine sees it gone; returns_after
	 * is the alert acknowledged while its cause was still there that
	 * this one returns after. */
	"ALTER TABLE alerts ADD COLUMN cause INTEGER NOT NULL DEFAULT 0"
	" CHECK (cause IN (0, 1));"
	"ALTER TABLE alerts ADD COLUMN returns_after INTEGER;",

	/* 6 -> 7: the elements of a step's long result list, a row each
	 * (store_steps.c: store_step_save_entries), so that a step writes what
	 * changed rather than the whole list (move_old's entry per old queue,
	 * once a batch); keyed by their place in the list, so that they are
	 * read back in its order without a sort. */
	"CREATE TABLE step_entries ("
	"  plan_id INTEGER NOT NULL,"
	"  step_idx INTEGER NOT NULL,"
	"  name TEXT NOT NULL CHECK (length(CAST(name AS BLOB)) BETWEEN 1 AND 1024),"
	"  ord INTEGER NOT NULL CHECK (ord >= 0),"
	"  entry_json TEXT NOT NULL CHECK (json_valid(entry_json)),"
	"  PRIMARY KEY (plan_id, step_idx, ord),"
	"  FOREIGN KEY (plan_id, step_idx) REFERENCES steps (plan_id, idx)"
	") STRICT, WITHOUT ROWID;",
};

#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

_Static_assert(NMIGRATIONS == STORE_SCHEMA_VERSION,
    "one migration script per schema version");

static _Atomic int64_t disk_full_since;

int64_t
store_disk_full_since(void)
{
	return disk_full_since;
}

void
store_disk_full_resolved(void)
{
	disk_full_since = 0;
}

/* "WHAT: sqlite's message". Call before anything else touches the
 * connection, or the message is lost. */
void
store__dberr(struct store *s, char *err, size_t errlen, const char *what)
{
	int code = sqlite3_extended_errcode(s->db) & 0xff;

	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		s->transient = 1;
	/* A full disk passes when space is freed: nothing was written, and
	 * what failed runs again then. SQLite says SQLITE_FULL, or an I/O
	 * error whose errno is ENOSPC (a write to the WAL). */
	if (code == SQLITE_FULL || (code == SQLITE_IOERR &&
	    (sqlite3_system_errno(s->db) == ENOSPC || sqlite3_system_errno(s->db) == EDQUOT))) {
		int64_t zero = 0;

		s->transient = s->disk_full = 1;
		atomic_compare_exchange_strong(&disk_full_since, &zero, clock_now_ms());
	}
	errbuf_set(err, errlen, "%s: %s", what, sqlite3_errmsg(s->db));
}

bool
store_transient(const struct store *s)
{
	return s->transient;
}

void
store_transient_clear(struct store *s)
{
	s->transient = 0;
	s->disk_full = 0;
}

bool
store_disk_full(const struct store *s)
{
	return s->disk_full;
}

void
store__copystr(char *dst, size_t dstlen, const unsigned char *src)
{
	snprintf(dst, dstlen, "%s", src != NULL ? (const char *)src : "");
}

char *
store__dupcol(sqlite3_stmt *st, int col)
{
	const unsigned char *p;
	char *c;
	int n;

	p = sqlite3_column_text(st, col);
	n = sqlite3_column_bytes(st, col);
	if ((c = malloc((size_t)n + 1)) == NULL)
		return NULL;
	if (n > 0)
		memcpy(c, p, (size_t)n);
	c[n] = '\0';
	return c;
}

int
store__prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what,
    char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
		store__dberr(s, err, errlen, what);
		*st = NULL;
		return -1;
	}
	return 0;
}

int
store__exec(struct store *s, const char *sql, const char *what, char *err,
    size_t errlen)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		store__dberr(s, err, errlen, what);
		return -1;
	}
	return 0;
}

int
store__run(struct store *s, sqlite3_stmt *st, const char *what, int64_t *id, char *err,
    size_t errlen)
{
	if (sqlite3_step(st) != SQLITE_DONE) {
		store__dberr(s, err, errlen, what);
		return -1;
	}
	if (id != NULL)
		*id = sqlite3_last_insert_rowid(s->db);
	return 0;
}

/* Steps a bound UPDATE; no row changed is an error naming MISSING. */
int
store__update_one(struct store *s, sqlite3_stmt *st, const char *what,
    const char *missing, char *err, size_t errlen)
{
	if (store__run(s, st, what, NULL, err, errlen) != 0)
		return -1;
	if (sqlite3_changes(s->db) == 0) {
		errbuf_set(err, errlen, "%s: %s", what, missing);
		return -1;
	}
	return 0;
}

/* Prepares SQL into *ST (finalize it whatever this returns) and binds the
 * arguments AP to its parameters ?1, ?2, ... as TYPES says, one letter
 * each (store_int.h's store__write_rows). Returns 0, or -1 with ERR naming
 * WHAT, or on a letter it does not know (a caller's mistake). */
static int
prepare_bound(struct store *s, const char *sql, const char *types, va_list ap,
    sqlite3_stmt **st, const char *what, char *err, size_t errlen)
{
	if (store__prepare(s, sql, st, what, err, errlen) != 0)
		return -1;
	for (int i = 1; types[i - 1] != '\0'; i++) {
		const char *t;
		int64_t n;
		int k;

		switch (types[i - 1]) {
		case 'i':
			sqlite3_bind_int(*st, i, va_arg(ap, int));
			break;
		case 'n':
			if ((k = va_arg(ap, int)) >= 0)
				sqlite3_bind_int(*st, i, k);
			break;
		case 'I':
			sqlite3_bind_int64(*st, i, va_arg(ap, int64_t));
			break;
		case 'p':
			if ((n = va_arg(ap, int64_t)) > 0)
				sqlite3_bind_int64(*st, i, n);
			break;
		case 'd':
			sqlite3_bind_double(*st, i, va_arg(ap, double));
			break;
		case 't':
			if ((t = va_arg(ap, const char *)) != NULL)
				sqlite3_bind_text(*st, i, t, -1, SQLITE_STATIC);
			break;
		default:
			errbuf_set(err, errlen, "store: no bind type '%c'", types[i - 1]);
			return -1;
		}
	}
	return 0;
}

int
store__write_rows(struct store *s, const char *what, const char *missing,
    int64_t *id, char *err, size_t errlen, const char *sql, const char *types, ...)
{
	va_list ap;
	int rc;

	va_start(ap, types);
	rc = store__write_rows_v(s, what, missing, id, err, errlen, sql, types, ap);
	va_end(ap);
	return rc;
}

int
store__write_rows_v(struct store *s, const char *what, const char *missing,
    int64_t *id, char *err, size_t errlen, const char *sql, const char *types,
    va_list ap)
{
	sqlite3_stmt *st = NULL;
	int rc;

	rc = prepare_bound(s, sql, types, ap, &st, what, err, errlen);
	if (rc == 0)
		rc = missing != NULL ?
		    store__update_one(s, st, what, missing, err, errlen) :
		    store__run(s, st, what, id, err, errlen);
	sqlite3_finalize(st);
	return rc;
}

int
store__read_rows(struct store *s, const char *what, bool one, store__row_fn fn,
    void *arg, char *err, size_t errlen, const char *sql, const char *types, ...)
{
	sqlite3_stmt *st = NULL;
	va_list ap;
	int rc, rows = 0, stop = 0, src = SQLITE_DONE;

	va_start(ap, types);
	rc = prepare_bound(s, sql, types, ap, &st, what, err, errlen);
	va_end(ap);
	if (rc != 0)
		goto done;
	rc = -1;
	while (!stop && (src = sqlite3_step(st)) == SQLITE_ROW) {
		rows++;
		if ((stop = fn(st, arg)) < 0) {
			errbuf_set(err, errlen, "%s: out of memory", what);
			goto done;
		}
		stop |= one;
	}
	if (!stop && src != SQLITE_DONE) {
		store__dberr(s, err, errlen, what);
		goto done;
	}
	rc = !one ? rows : rows == 0 ? STORE_NOT_FOUND : 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store__row_int64(sqlite3_stmt *st, void *arg)
{
	*(int64_t *)arg = sqlite3_column_int64(st, 0);
	return 0;
}

/* Runs a pragma that returns one integer (or text when TEXT is not NULL). */
static int
pragma(struct store *s, const char *sql, int64_t *num, char *text,
    size_t textlen, const char *what, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store__prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	if (sqlite3_step(st) != SQLITE_ROW) {
		store__dberr(s, err, errlen, what);
		goto done;
	}
	if (num != NULL)
		*num = sqlite3_column_int64(st, 0);
	if (text != NULL)
		store__copystr(text, textlen, sqlite3_column_text(st, 0));
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

static int
check_version(const char *path, int64_t v, char *err, size_t errlen)
{
	if (v > STORE_SCHEMA_VERSION) {
		errbuf_set(err, errlen, "database %s has schema version %" PRId64
		    "; this cutover knows up to %d: upgrade cutover",
		    path, v, STORE_SCHEMA_VERSION);
		return -1;
	}
	if (v < 0) {
		errbuf_set(err, errlen, "database %s has schema version %" PRId64
		    ", which no cutover writes", path, v);
		return -1;
	}
	return 0;
}

/* Applies the migrations from the database's version up to ours, in one
 * transaction that re-reads the version, so that two processes opening a
 * new file at once do not both create the schema. */
static int
migrate(struct store *s, const char *path, char *err, size_t errlen)
{
	char what[96];
	int64_t v;
	int rc = -1;

	if (store__exec(s, "BEGIN IMMEDIATE", "migrating schema: begin", err,
	    errlen) == -1)
		return -1;
	if (pragma(s, "PRAGMA user_version", &v, NULL, 0,
	    "migrating schema: reading user_version", err, errlen) == -1)
		goto done;
	if (check_version(path, v, err, errlen) == -1)
		goto done;
	for (; v < STORE_SCHEMA_VERSION; v++) {
		snprintf(what, sizeof(what),
		    "migrating schema to version %" PRId64, v + 1);
		if (store__exec(s, migrations[v], what, err, errlen) == -1)
			goto done;
	}
	/* PRAGMA takes no parameters; the number is ours. */
	snprintf(what, sizeof(what), "PRAGMA user_version = %d",
	    STORE_SCHEMA_VERSION);
	if (store__exec(s, what, "migrating schema: setting user_version", err,
	    errlen) == -1)
		goto done;
	if (store__exec(s, "COMMIT", "migrating schema: commit", err, errlen) == -1)
		goto done;
	rc = 0;
done:
	if (rc == -1 && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/* Opens the SQLite file PATH into s->db and reads it once: tells a
 * non-database apart, before anything (journal mode included) writes to
 * it. Returns 0, or -1 with ERR. */
static int
open_file(struct store *s, const char *path, char *err, size_t errlen)
{
	int src = sqlite3_open_v2(path, &s->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);

	if (src != SQLITE_OK) {
		errbuf_set(err, errlen, "opening database %s: %s", path,
		    s->db != NULL ? sqlite3_errmsg(s->db) :
		    sqlite3_errstr(src));
		return -1;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);
	src = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_schema",
	    NULL, NULL, NULL);
	if ((src & 0xff) == SQLITE_NOTADB) {
		errbuf_set(err, errlen, "database %s: not a SQLite database (%s)",
		    path, sqlite3_errmsg(s->db));
		return -1;
	}
	if (src != SQLITE_OK) {
		errbuf_set(err, errlen, "opening database %s: %s", path,
		    sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

/* Commits by this process's connections, counted once each is in the WAL
 * (store_version). */
static _Atomic uint64_t process_commits;

/* SQLite's call after each commit of a connection, its write lock
 * released: counts the commit, then checkpoints as SQLite's own hook
 * does (a hook set replaces it) once the WAL holds
 * SQLITE_DEFAULT_WAL_AUTOCHECKPOINT frames. */
static int
on_wal_commit(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)arg;
	atomic_fetch_add_explicit(&process_commits, 1, memory_order_release);
	if (frames >= WAL_CHECKPOINT_FRAMES)
		(void)sqlite3_wal_checkpoint(db, name);
	return SQLITE_OK;
}

/* Sets the connection's modes: WAL, synchronous FULL, foreign keys on
 * (and checks that they hold). Returns 0, or -1 with ERR. */
static int
set_modes(struct store *s, const char *path, char *err, size_t errlen)
{
	char mode[16];
	int64_t fk;

	/* WAL: the web thread reads while the engine writes. */
	if (pragma(s, "PRAGMA journal_mode = WAL", NULL, mode, sizeof(mode),
	    "setting journal_mode", err, errlen) == -1)
		return -1;
	if (strcmp(mode, "wal") != 0) {
		errbuf_set(err, errlen, "database %s: journal_mode is %s, not wal",
		    path, mode);
		return -1;
	}
	sqlite3_wal_hook(s->db, on_wal_commit, NULL);
	/*
	 * FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on
	 * power loss. Those commits record actions on other systems that
	 * cannot be re-derived (a flag flipped, an old queue deleted), and the
	 * history is the audit trail; the engine commits a few times per watch
	 * interval, so one fsync per commit costs nothing that matters.
	 */
	if (store__exec(s, "PRAGMA synchronous = FULL", "setting synchronous", err,
	    errlen) == -1)
		return -1;
	if (store__exec(s, "PRAGMA foreign_keys = ON", "enabling foreign_keys", err,
	    errlen) == -1)
		return -1;
	if (pragma(s, "PRAGMA foreign_keys", &fk, NULL, 0,
	    "reading foreign_keys", err, errlen) == -1)
		return -1;
	if (fk != 1) {
		errbuf_set(err, errlen, "database %s: this SQLite does not enforce "
		    "foreign keys", path);
		return -1;
	}
	return 0;
}

int
store_integrity(struct store *s, const char *path, bool full, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	const char *sql = full ? "PRAGMA integrity_check(1)" : "PRAGMA quick_check(1)";
	char first[256] = "";
	int src, rc = -1;

	if (store__prepare(s, sql, &st, full ? "checking integrity" : "quick check", err,
	    errlen) == -1)
		goto corrupt;
	src = sqlite3_step(st);
	if (src == SQLITE_ROW)
		store__copystr(first, sizeof(first), sqlite3_column_text(st, 0));
	else {
		store__copystr(first, sizeof(first),
		    (const unsigned char *)sqlite3_errmsg(s->db));
		if ((src & 0xff) != SQLITE_CORRUPT && (src & 0xff) != SQLITE_NOTADB) {
			errbuf_set(err, errlen, "database %s: %s: %s", path, sql, first);
			goto done;
		}
	}
	if (strcmp(first, "ok") == 0) {
		rc = 0;
		goto done;
	}
corrupt:
	if (first[0] == '\0')
		snprintf(first, sizeof(first), "%s", err);
	errbuf_set(err, errlen, "database %s is damaged (SQLite's %s: %s): its "
	    "record cannot be trusted, and cutover takes no action on it; restore "
	    "the last good backup of this file (or keep this copy aside for "
	    "analysis) and start again", path, full ? "integrity_check" : "quick_check",
	    first);
done:
	sqlite3_finalize(st);
	return rc;
}

/* The files this process has quick-checked and holds open, by device and
 * inode, with how many connections it holds on each: serve opens a
 * connection per thread, and reading every page of a large database once
 * per connection made it slow to start. A file is checked again once its
 * last connection is closed, and a file replaced since (a restore) is
 * another inode. */
#define CHECKED_MAX 16
static struct {
	dev_t dev;
	ino_t ino;
	int open;
} checked[CHECKED_MAX];
static pthread_mutex_t checked_lock = PTHREAD_MUTEX_INITIALIZER;

/* The entry of S's file in checked, or -1; with checked_lock held. */
static int
checked_find(const struct store *s)
{
	for (int i = 0; i < CHECKED_MAX; i++)
		if (checked[i].open > 0 && checked[i].dev == s->dev &&
		    checked[i].ino == s->ino)
			return i;
	return -1;
}

/* Whether S's file checked and is held open by another connection. */
static bool
was_checked(const struct store *s)
{
	bool found;

	pthread_mutex_lock(&checked_lock);
	found = checked_find(s) >= 0;
	pthread_mutex_unlock(&checked_lock);
	return found;
}

/* Counts S among its checked file's open connections (when there is room
 * to: else its file is simply checked again next time). */
static void
checked_hold(struct store *s)
{
	int i;

	pthread_mutex_lock(&checked_lock);
	if ((i = checked_find(s)) < 0)
		for (i = 0; i < CHECKED_MAX && checked[i].open > 0; i++)
			;
	if (i < CHECKED_MAX) {
		checked[i].dev = s->dev;
		checked[i].ino = s->ino;
		checked[i].open++;
		s->held = true;
	}
	pthread_mutex_unlock(&checked_lock);
}

/* Uncounts S, held by checked_hold. */
static void
checked_release(struct store *s)
{
	int i;

	if (!s->held)
		return;
	pthread_mutex_lock(&checked_lock);
	if ((i = checked_find(s)) >= 0)
		checked[i].open--;
	pthread_mutex_unlock(&checked_lock);
	s->held = false;
}

int
store_open(const char *path, struct store **out, char *err, size_t errlen)
{
	struct store *s;
	struct stat sb;
	int64_t v;
	int rc = -1;

	*out = NULL;
	/* A newer schema is refused before SQLite opens the file: opening
	 * and closing a database in WAL mode changes it (store_version.c). */
	if (store__file_version(path, &v, err, errlen) != 0 ||
	    check_version(path, v, err, errlen) != 0)
		return -1;
	errno = 0;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		errbuf_set(err, errlen, "opening database %s: out of memory", path);
		return -1;
	}
	if (open_file(s, path, err, errlen) != 0)
		goto done;
	if (stat(path, &sb) != 0 || (s->path = strdup(path)) == NULL) {
		errbuf_set(err, errlen, "opening database %s: %s", path,
		    s->path == NULL && errno == 0 ? "out of memory" : strerror(errno));
		goto done;
	}
	s->dev = sb.st_dev;
	s->ino = sb.st_ino;
	/* A damaged file is refused before anything reads a plan from it or
	 * writes to it: acting on a record that is partly garbage could undo
	 * a flip or delete what the record no longer shows. The quick check
	 * reads every page once (milliseconds for a plan's database), not
	 * again for a connection opened beside one still open (checked). */
	if (!was_checked(s) && store_integrity(s, path, false, err, errlen) != 0)
		goto done;
	/* The check filled this connection's page cache with pages it will
	 * mostly never read again; serve opens one connection per thread,
	 * and each kept its 2 MB of them. */
	sqlite3_db_release_memory(s->db);
	/* Read again through SQLite: what the connection will migrate. */
	if (pragma(s, "PRAGMA user_version", &v, NULL, 0,
	    "reading user_version", err, errlen) == -1)
		goto done;
	if (check_version(path, v, err, errlen) == -1)
		goto done;
	if (set_modes(s, path, err, errlen) != 0)
		goto done;
	if (v < STORE_SCHEMA_VERSION && migrate(s, path, err, errlen) == -1)
		goto done;
	checked_hold(s);
	*out = s;
	rc = 0;
done:
	if (rc == -1)
		store_close(s);
	return rc;
}

int
store_open_again(const struct store *s, struct store **out, char *err, size_t errlen)
{
	struct store *c;
	int rc = -1;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL || (c->path = strdup(s->path)) == NULL) {
		errbuf_set(err, errlen, "opening database %s again: out of memory", s->path);
		goto done;
	}
	c->dev = s->dev;
	c->ino = s->ino;
	/* Without CREATE: a file removed meanwhile is not made again, empty. */
	if (sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		errbuf_set(err, errlen, "opening database %s again: %s", s->path,
		    c->db != NULL ? sqlite3_errmsg(c->db) : "out of memory");
		goto done;
	}
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, BUSY_TIMEOUT_MS);
	/* The file at the path is the one S opened, checked after the open: a
	 * file put in its place before it would be another record. */
	if (store_file_check(c, err, errlen) != 0 || set_modes(c, s->path, err, errlen) != 0)
		goto done;
	*out = c;
	rc = 0;
done:
	if (rc == -1)
		store_close(c);
	return rc;
}

void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	checked_release(s);
	sqlite3_finalize(s->data_version);
	sqlite3_close_v2(s->db);
	free(s->path);
	free(s);
}

/* store_stop_on's progress handler: non-zero ends the statement. */
static int
stop_asked(void *arg)
{
	return atomic_load((const atomic_int *)arg) != 0;
}

void
store_stop_on(struct store *s, const atomic_int *stop)
{
	sqlite3_progress_handler(s->db, stop != NULL ? 4096 : 0, stop != NULL ? stop_asked :
	    NULL, (void *)(uintptr_t)stop);
}

int
store_file_check(struct store *s, char *err, size_t errlen)
{
	struct stat sb;

	if (stat(s->path, &sb) != 0) {
		errbuf_set(err, errlen, "the database file %s is gone (%s) while cutover "
		    "has it open: what is written now is lost at exit", s->path,
		    strerror(errno));
		return -1;
	}
	if (sb.st_dev != s->dev || sb.st_ino != s->ino) {
		errbuf_set(err, errlen, "the database file %s was replaced by another "
		    "file while cutover has it open", s->path);
		return -1;
	}
	return 0;
}

int
store_begin(struct store *s, char *err, size_t errlen)
{
	s->changes_at_begin = sqlite3_total_changes64(s->db);
	return store__exec(s, "BEGIN IMMEDIATE", "beginning transaction", err, errlen);
}

int
store_commit(struct store *s, char *err, size_t errlen)
{
	if (store__exec(s, "COMMIT", "committing transaction", err, errlen) == 0) {
		/* A transaction that wrote something reached the disk: there
		 * is space again. */
		if (sqlite3_total_changes64(s->db) > s->changes_at_begin)
			store_disk_full_resolved();
		return 0;
	}
	/* Nothing half-done stays open behind a failed commit. */
	store_rollback(s);
	return -1;
}

int
store_rollback(struct store *s)
{
	/* Some errors (busy, I/O, full) already rolled it back. */
	if (sqlite3_get_autocommit(s->db))
		return 0;
	return sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL) == SQLITE_OK ?
	    0 : -1;
}

int
store_version(struct store *s, uint64_t *version, char *err, size_t errlen)
{
	uint64_t commits = atomic_load_explicit(&process_commits, memory_order_acquire);
	int64_t now = clock_mono_ms(), dv;
	int rc = -1;

	if (commits == s->commits_seen && s->version != 0 &&
	    now - s->version_asked_ms < STORE_VERSION_ASK_MS) {
		*version = s->version;
		return 0;
	}
	if (s->data_version == NULL && sqlite3_prepare_v3(s->db, "PRAGMA data_version",
	    -1, SQLITE_PREPARE_PERSISTENT, &s->data_version, NULL) != SQLITE_OK) {
		store__dberr(s, err, errlen, "reading the data version");
		s->data_version = NULL;
		return -1;
	}
	if (sqlite3_step(s->data_version) != SQLITE_ROW) {
		store__dberr(s, err, errlen, "reading the data version");
		goto done;
	}
	dv = sqlite3_column_int64(s->data_version, 0);
	if (s->version == 0 || dv != s->data_version_seen || commits != s->commits_seen)
		s->version++;
	s->data_version_seen = dv;
	s->commits_seen = commits;
	s->version_asked_ms = now;
	*version = s->version;
	rc = 0;
done:
	sqlite3_reset(s->data_version);
	return rc;
}

int
store_cache_limit(struct store *s, int kib, char *err, size_t errlen)
{
	char sql[48];

	/* PRAGMA takes no parameters; the number is ours. */
	snprintf(sql, sizeof(sql), "PRAGMA cache_size = -%d", kib);
	return store__exec(s, sql, "bounding the page cache", err, errlen) == -1 ? -1 : 0;
}

ERRBUF_NAME_FUNCTION(store_status_name, STORE_STATUS_MAP, "unknown")
