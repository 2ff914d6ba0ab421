/* store: the SQLite database shared by the engine and the web thread (each
 * with its own connection). Schema versions are an ordered list of SQL
 * scripts applied through PRAGMA user_version; events form one append-only
 * sha256 hash chain across all plans. Nothing here logs: errors go back to
 * the caller through its error buffer. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "store.h"
#include "hex.h"
#include "store_int.h"

#define BUSY_TIMEOUT_MS 5000
#define ZERO_HASH \
	"0000000000000000000000000000000000000000000000000000000000000000"


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

	/* 1 -> 2: operator commands and alerts (store_engine.c). */
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
};

#define NMIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

_Static_assert(NMIGRATIONS == STORE_SCHEMA_VERSION,
    "one migration script per schema version");

/* "WHAT: sqlite's message". Call before anything else touches the
 * connection, or the message is lost. */
void
store_dberr(struct store *s, char *err, size_t errlen, const char *what)
{
	int code = sqlite3_extended_errcode(s->db) & 0xff;

	if (code == SQLITE_BUSY || code == SQLITE_LOCKED)
		s->transient = 1;
	store_seterr(err, errlen, "%s: %s", what, sqlite3_errmsg(s->db));
}

int
store_transient(const struct store *s)
{
	return s->transient;
}

void
store_transient_clear(struct store *s)
{
	s->transient = 0;
}

void
store_copystr(char *dst, size_t dstlen, const unsigned char *src)
{
	snprintf(dst, dstlen, "%s", src != NULL ? (const char *)src : "");
}

char *
store_dupcol(sqlite3_stmt *st, int col)
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
store_prepare(struct store *s, const char *sql, sqlite3_stmt **st, const char *what,
    char *err, size_t errlen)
{
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK) {
		store_dberr(s, err, errlen, what);
		*st = NULL;
		return -1;
	}
	return 0;
}

int
store_exec(struct store *s, const char *sql, const char *what, char *err,
    size_t errlen)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) != SQLITE_OK) {
		store_dberr(s, err, errlen, what);
		return -1;
	}
	return 0;
}

/* Runs a pragma that returns one integer (or text when TEXT is not NULL). */
static int
pragma(struct store *s, const char *sql, int64_t *num, char *text,
    size_t textlen, const char *what, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	if (sqlite3_step(st) != SQLITE_ROW) {
		store_dberr(s, err, errlen, what);
		goto done;
	}
	if (num != NULL)
		*num = sqlite3_column_int64(st, 0);
	if (text != NULL)
		store_copystr(text, textlen, sqlite3_column_text(st, 0));
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

static int
check_version(const char *path, int64_t v, char *err, size_t errlen)
{
	if (v > STORE_SCHEMA_VERSION) {
		store_seterr(err, errlen, "database %s has schema version %" PRId64
		    "; this cutover knows up to %d: upgrade cutover",
		    path, v, STORE_SCHEMA_VERSION);
		return -1;
	}
	if (v < 0) {
		store_seterr(err, errlen, "database %s has schema version %" PRId64
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

	if (store_exec(s, "BEGIN IMMEDIATE", "migrating schema: begin", err,
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
		if (store_exec(s, migrations[v], what, err, errlen) == -1)
			goto done;
	}
	/* PRAGMA takes no parameters; the number is ours. */
	snprintf(what, sizeof(what), "PRAGMA user_version = %d",
	    STORE_SCHEMA_VERSION);
	if (store_exec(s, what, "migrating schema: setting user_version", err,
	    errlen) == -1)
		goto done;
	if (store_exec(s, "COMMIT", "migrating schema: commit", err, errlen) == -1)
		goto done;
	rc = 0;
done:
	if (rc == -1 && !sqlite3_get_autocommit(s->db))
		sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

int
store_open(const char *path, struct store **out, char *err, size_t errlen)
{
	struct store *s;
	char mode[16];
	int64_t v, fk;
	int rc = -1, src;

	*out = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		store_seterr(err, errlen, "opening database %s: out of memory", path);
		return -1;
	}
	src = sqlite3_open_v2(path, &s->db,
	    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
	if (src != SQLITE_OK) {
		store_seterr(err, errlen, "opening database %s: %s", path,
		    s->db != NULL ? sqlite3_errmsg(s->db) :
		    sqlite3_errstr(src));
		goto done;
	}
	sqlite3_extended_result_codes(s->db, 1);
	sqlite3_busy_timeout(s->db, BUSY_TIMEOUT_MS);

	/* The first read of the file: tells a non-database apart, and a newer
	 * schema, before anything (journal mode included) writes to it. */
	src = sqlite3_exec(s->db, "SELECT count(*) FROM sqlite_schema",
	    NULL, NULL, NULL);
	if ((src & 0xff) == SQLITE_NOTADB) {
		store_seterr(err, errlen, "database %s: not a SQLite database (%s)",
		    path, sqlite3_errmsg(s->db));
		goto done;
	}
	if (src != SQLITE_OK) {
		store_seterr(err, errlen, "opening database %s: %s", path,
		    sqlite3_errmsg(s->db));
		goto done;
	}
	if (pragma(s, "PRAGMA user_version", &v, NULL, 0,
	    "reading user_version", err, errlen) == -1)
		goto done;
	if (check_version(path, v, err, errlen) == -1)
		goto done;

	/* WAL: the web thread reads while the engine writes. */
	if (pragma(s, "PRAGMA journal_mode = WAL", NULL, mode, sizeof(mode),
	    "setting journal_mode", err, errlen) == -1)
		goto done;
	if (strcmp(mode, "wal") != 0) {
		store_seterr(err, errlen, "database %s: journal_mode is %s, not wal",
		    path, mode);
		goto done;
	}
	/*
	 * FULL, not NORMAL: in WAL mode NORMAL may lose the last commits on
	 * power loss. Those commits record actions on other systems that
	 * cannot be re-derived (a flag flipped, an old queue deleted), and the
	 * history is the audit trail; the engine commits a few times per watch
	 * interval, so one fsync per commit costs nothing that matters.
	 */
	if (store_exec(s, "PRAGMA synchronous = FULL", "setting synchronous", err,
	    errlen) == -1)
		goto done;
	if (store_exec(s, "PRAGMA foreign_keys = ON", "enabling foreign_keys", err,
	    errlen) == -1)
		goto done;
	if (pragma(s, "PRAGMA foreign_keys", &fk, NULL, 0,
	    "reading foreign_keys", err, errlen) == -1)
		goto done;
	if (fk != 1) {
		store_seterr(err, errlen, "database %s: this SQLite does not enforce "
		    "foreign keys", path);
		goto done;
	}
	if (v < STORE_SCHEMA_VERSION && migrate(s, path, err, errlen) == -1)
		goto done;
	*out = s;
	rc = 0;
done:
	if (rc == -1)
		store_close(s);
	return rc;
}

void
store_close(struct store *s)
{
	if (s == NULL)
		return;
	sqlite3_close_v2(s->db);
	free(s);
}

int
store_begin(struct store *s, char *err, size_t errlen)
{
	return store_exec(s, "BEGIN IMMEDIATE", "beginning transaction", err, errlen);
}

int
store_commit(struct store *s, char *err, size_t errlen)
{
	if (store_exec(s, "COMMIT", "committing transaction", err, errlen) == 0)
		return 0;
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

/* sha256 of N bytes at P, as lowercase hex. */
static int
sha256_hex(const void *p, size_t n, char out[STORE_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;

	if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return -1;
	hex_encode(md, mdlen, out);
	return 0;
}

int
store_plan_insert(struct store *s, const char *name, const char *yaml,
    size_t yaml_len, int64_t now_ms, int64_t *id, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO plans (name, yaml, sha256, status, created_ms)"
	    " VALUES (?1, ?2, ?3, 'running', ?4)";
	sqlite3_stmt *st = NULL;
	char hex[STORE_HASH_HEX];
	int rc = -1;

	if (name == NULL || yaml == NULL) {
		store_seterr(err, errlen, "inserting plan: no %s",
		    name == NULL ? "name" : "yaml");
		return -1;
	}
	if (sha256_hex(yaml, yaml_len, hex) == -1) {
		store_seterr(err, errlen, "inserting plan %s: sha256 failed", name);
		return -1;
	}
	if (store_prepare(s, sql, &st, "inserting plan", err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_bind_text64(st, 2, yaml, yaml_len, SQLITE_STATIC,
	    SQLITE_UTF8) != SQLITE_OK) {
		store_dberr(s, err, errlen, "inserting plan: binding yaml");
		goto done;
	}
	sqlite3_bind_text(st, 3, hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_dberr(s, err, errlen, "inserting plan");
		goto done;
	}
	if (id != NULL)
		*id = sqlite3_last_insert_rowid(s->db);
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

static void
read_plan(sqlite3_stmt *st, struct store_plan *out)
{
	memset(out, 0, sizeof(*out));
	out->id = sqlite3_column_int64(st, 0);
	store_copystr(out->name, sizeof(out->name), sqlite3_column_text(st, 1));
	store_copystr(out->sha256, sizeof(out->sha256), sqlite3_column_text(st, 2));
	store_copystr(out->status, sizeof(out->status), sqlite3_column_text(st, 3));
	out->created_ms = sqlite3_column_int64(st, 4);
}

/* Steps ST (bound, one row expected) into OUT: 0, 1 for no row, -1. */
static int
plan_row(struct store *s, sqlite3_stmt *st, struct store_plan *out,
    const char *what, char *err, size_t errlen)
{
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		read_plan(st, out);
		return 0;
	case SQLITE_DONE:
		return 1;
	default:
		store_dberr(s, err, errlen, what);
		return -1;
	}
}

int
store_plan_get(struct store *s, int64_t id, struct store_plan *out,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, name, sha256, status, created_ms FROM plans"
	    " WHERE id = ?1";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "reading plan", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, id);
	rc = plan_row(s, st, out, "reading plan", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_plan_find(struct store *s, const char *name, struct store_plan *out,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, name, sha256, status, created_ms FROM plans"
	    " WHERE name = ?1 ORDER BY id DESC LIMIT 1";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "finding plan", err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	rc = plan_row(s, st, out, "finding plan", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_plan_yaml(struct store *s, int64_t id, char **yaml, size_t *len,
    char *err, size_t errlen)
{
	static const char sql[] = "SELECT yaml FROM plans WHERE id = ?1";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	*yaml = NULL;
	if (len != NULL)
		*len = 0;
	if (store_prepare(s, sql, &st, "reading plan yaml", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, id);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		rc = 1;
		goto done;
	default:
		store_dberr(s, err, errlen, "reading plan yaml");
		goto done;
	}
	if ((*yaml = store_dupcol(st, 0)) == NULL) {
		store_seterr(err, errlen, "reading plan yaml: out of memory");
		goto done;
	}
	if (len != NULL)
		*len = (size_t)sqlite3_column_bytes(st, 0);
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* Steps a bound UPDATE; no row changed is an error naming MISSING. */
int
store_update_one(struct store *s, sqlite3_stmt *st, const char *what,
    const char *missing, char *err, size_t errlen)
{
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_dberr(s, err, errlen, what);
		return -1;
	}
	if (sqlite3_changes(s->db) == 0) {
		store_seterr(err, errlen, "%s: %s", what, missing);
		return -1;
	}
	return 0;
}

int
store_plan_set_status(struct store *s, int64_t id, const char *status,
    char *err, size_t errlen)
{
	static const char sql[] = "UPDATE plans SET status = ?1 WHERE id = ?2";
	sqlite3_stmt *st = NULL;
	char what[64];
	int rc = -1;

	snprintf(what, sizeof(what), "setting status of plan %" PRId64, id);
	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, id);
	rc = store_update_one(s, st, what, "no such plan", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_step_insert(struct store *s, int64_t plan_id, int idx, const char *kind,
    int gate, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO steps (plan_id, idx, kind, gate, status)"
	    " VALUES (?1, ?2, ?3, ?4, 'pending')";
	sqlite3_stmt *st = NULL;
	char what[80];
	int rc = -1;

	snprintf(what, sizeof(what), "inserting step %d of plan %" PRId64,
	    idx, plan_id);
	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_int(st, 2, idx);
	sqlite3_bind_text(st, 3, kind, -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 4, gate != 0);
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_dberr(s, err, errlen, what);
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_step_update(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE steps SET status = coalesce(?1, status),"
	    " started_ms = coalesce(?2, started_ms),"
	    " ended_ms = coalesce(?3, ended_ms),"
	    " result_json = coalesce(?4, result_json),"
	    " error = coalesce(?5, error)"
	    " WHERE plan_id = ?6 AND idx = ?7";
	sqlite3_stmt *st = NULL;
	char what[80];
	int rc = -1;

	snprintf(what, sizeof(what), "updating step %d of plan %" PRId64,
	    idx, plan_id);
	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	/* Unbound parameters are NULL: "leave unchanged". */
	if (status != NULL)
		sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
	if (started_ms != 0)
		sqlite3_bind_int64(st, 2, started_ms);
	if (ended_ms != 0)
		sqlite3_bind_int64(st, 3, ended_ms);
	if (result_json != NULL)
		sqlite3_bind_text(st, 4, result_json, -1, SQLITE_STATIC);
	if (error != NULL)
		sqlite3_bind_text(st, 5, error, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 6, plan_id);
	sqlite3_bind_int(st, 7, idx);
	rc = store_update_one(s, st, what, "no such step", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

/* Runs SQL, which selects kind, gate, status, started_ms, ended_ms, idx,
 * result_json and error with ?1 the plan and ?2 IDX (left unbound, so
 * NULL, when IDX < 0: no step has a NULL index), and
 * reads its first row into OUT; WHAT says what is read. Returns 0, 1 when
 * there is no row, or -1 with ERR. */
static int
step_read(struct store *s, const char *sql, int64_t plan_id, int idx,
    const char *what, struct store_step *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	if (idx >= 0)
		sqlite3_bind_int(st, 2, idx);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		rc = 1;
		goto done;
	default:
		store_dberr(s, err, errlen, what);
		goto done;
	}
	out->plan_id = plan_id;
	store_copystr(out->kind, sizeof(out->kind), sqlite3_column_text(st, 0));
	out->gate = sqlite3_column_int(st, 1);
	store_copystr(out->status, sizeof(out->status), sqlite3_column_text(st, 2));
	out->started_ms = sqlite3_column_int64(st, 3);     /* NULL reads 0 */
	out->ended_ms = sqlite3_column_int64(st, 4);
	out->idx = sqlite3_column_int(st, 5);
	if ((sqlite3_column_type(st, 6) != SQLITE_NULL &&
	    (out->result_json = store_dupcol(st, 6)) == NULL) ||
	    (sqlite3_column_type(st, 7) != SQLITE_NULL &&
	    (out->error = store_dupcol(st, 7)) == NULL)) {
		store_seterr(err, errlen, "%s: out of memory", what);
		store_step_clear(out);
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_step_get(struct store *s, int64_t plan_id, int idx,
    struct store_step *out, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT kind, gate, status, started_ms, ended_ms, idx, result_json,"
	    " error FROM steps WHERE plan_id = ?1 AND idx = ?2";
	char what[80];

	snprintf(what, sizeof(what), "reading step %d of plan %" PRId64,
	    idx, plan_id);
	return step_read(s, sql, plan_id, idx, what, out, err, errlen);
}

int
store_step_current(struct store *s, int64_t plan_id, struct store_step *out,
    char *err, size_t errlen)
{
	/* Steps not yet succeeded first, lowest first; then the succeeded
	 * ones, highest first. No result or error. */
	static const char sql[] =
	    "SELECT kind, gate, status, started_ms, ended_ms, idx, NULL, NULL"
	    " FROM steps WHERE plan_id = ?1 ORDER BY status = 'succeeded',"
	    " CASE WHEN status = 'succeeded' THEN -idx ELSE idx END LIMIT 1";
	char what[80];

	snprintf(what, sizeof(what), "reading the current step of plan %" PRId64,
	    plan_id);
	return step_read(s, sql, plan_id, -1, what, out, err, errlen);
}

void
store_step_clear(struct store_step *st)
{
	if (st == NULL)
		return;
	free(st->result_json);
	free(st->error);
	st->result_json = NULL;
	st->error = NULL;
}

/*
 * The event hash: sha256, as lowercase hex, over the fields below in this
 * order, each written as a netstring — its length in bytes in decimal, ':',
 * the bytes, ',' — so that no two different rows serialize alike:
 *
 *	prev_hash, id, plan_id, ts_ms, actor, kind, details_json
 *
 * Integers are written in decimal. The first event's prev_hash is 64 zeros.
 */
static int
hash_field(EVP_MD_CTX *ctx, const void *p, size_t n)
{
	char len[32];
	int k;

	k = snprintf(len, sizeof(len), "%zu:", n);
	if (EVP_DigestUpdate(ctx, len, (size_t)k) != 1 ||
	    (n > 0 && EVP_DigestUpdate(ctx, p, n) != 1) ||
	    EVP_DigestUpdate(ctx, ",", 1) != 1)
		return -1;
	return 0;
}

static int
hash_int(EVP_MD_CTX *ctx, int64_t v)
{
	char buf[32];
	int k;

	k = snprintf(buf, sizeof(buf), "%" PRId64, v);
	return hash_field(ctx, buf, (size_t)k);
}

static int
event_hash(const char *prev_hash, int64_t id, int64_t plan_id, int64_t ts_ms,
    const char *actor, size_t actor_len, const char *kind, size_t kind_len,
    const char *details, size_t details_len, char out[STORE_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	int rc = -1;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    hash_field(ctx, prev_hash, strlen(prev_hash)) == -1 ||
	    hash_int(ctx, id) == -1 ||
	    hash_int(ctx, plan_id) == -1 ||
	    hash_int(ctx, ts_ms) == -1 ||
	    hash_field(ctx, actor, actor_len) == -1 ||
	    hash_field(ctx, kind, kind_len) == -1 ||
	    hash_field(ctx, details, details_len) == -1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		goto done;
	hex_encode(md, mdlen, out);
	rc = 0;
done:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/*
 * Reading the last event and inserting the next must be one write
 * transaction. Inside the caller's (store_begin is BEGIN IMMEDIATE) a
 * savepoint scopes our part. Standalone we take BEGIN IMMEDIATE rather than a
 * bare SAVEPOINT: that would be a deferred transaction, and in WAL a reader
 * that tries to become a writer after another connection committed fails at
 * once with SQLITE_BUSY_SNAPSHOT instead of waiting out the busy timeout.
 */
int
store_append_event(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *actor, const char *kind, const char *details_json,
    int64_t *id, char *err, size_t errlen)
{
	static const char last_sql[] =
	    "SELECT id, hash FROM events ORDER BY id DESC LIMIT 1";
	static const char insert_sql[] =
	    "INSERT INTO events (id, plan_id, ts_ms, actor, kind, details_json,"
	    " prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
	sqlite3_stmt *st = NULL;
	char prev[STORE_HASH_HEX], hash[STORE_HASH_HEX];
	int64_t next = 1;
	int nested, rc = -1, src;

	if (details_json == NULL)
		details_json = "{}";
	if (actor == NULL || kind == NULL) {
		store_seterr(err, errlen, "appending event: no %s",
		    actor == NULL ? "actor" : "kind");
		return -1;
	}
	nested = !sqlite3_get_autocommit(s->db);
	if (store_exec(s, nested ? "SAVEPOINT store_event" : "BEGIN IMMEDIATE",
	    "appending event: begin", err, errlen) == -1)
		return -1;

	if (store_prepare(s, last_sql, &st, "appending event: reading last event",
	    err, errlen) == -1)
		goto done;
	snprintf(prev, sizeof(prev), "%s", ZERO_HASH);
	src = sqlite3_step(st);
	if (src == SQLITE_ROW) {
		next = sqlite3_column_int64(st, 0) + 1;
		store_copystr(prev, sizeof(prev), sqlite3_column_text(st, 1));
	} else if (src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "appending event: reading last event");
		goto done;
	}
	sqlite3_finalize(st);
	st = NULL;

	if (event_hash(prev, next, plan_id, ts_ms, actor, strlen(actor), kind,
	    strlen(kind), details_json, strlen(details_json), hash) == -1) {
		store_seterr(err, errlen, "appending event: sha256 failed");
		goto done;
	}
	if (store_prepare(s, insert_sql, &st, "appending event", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, next);
	sqlite3_bind_int64(st, 2, plan_id);
	sqlite3_bind_int64(st, 3, ts_ms);
	sqlite3_bind_text(st, 4, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, details_json, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, prev, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, hash, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_dberr(s, err, errlen, "appending event");
		goto done;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (store_exec(s, nested ? "RELEASE store_event" : "COMMIT",
	    "appending event: commit", err, errlen) == -1)
		goto done;
	if (id != NULL)
		*id = next;
	rc = 0;
done:
	sqlite3_finalize(st);
	if (rc == -1) {
		if (nested) {
			sqlite3_exec(s->db, "ROLLBACK TO store_event",
			    NULL, NULL, NULL);
			sqlite3_exec(s->db, "RELEASE store_event",
			    NULL, NULL, NULL);
		} else
			store_rollback(s);
	}
	return rc;
}

int
store_each_event(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_event *ev, void *arg), void *arg,
    char *err, size_t errlen)
{
	static const char all_sql[] =
	    "SELECT id, plan_id, ts_ms, actor, kind, details_json, prev_hash,"
	    " hash FROM events ORDER BY id";
	static const char plan_sql[] =
	    "SELECT id, plan_id, ts_ms, actor, kind, details_json, prev_hash,"
	    " hash FROM events WHERE plan_id = ?1 ORDER BY id";
	struct store_event ev;
	sqlite3_stmt *st = NULL;
	int rc = -1, src, stop;

	if (store_prepare(s, plan_id == 0 ? all_sql : plan_sql, &st, "reading events",
	    err, errlen) == -1)
		goto done;
	if (plan_id != 0)
		sqlite3_bind_int64(st, 1, plan_id);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&ev, 0, sizeof(ev));
		ev.id = sqlite3_column_int64(st, 0);
		ev.plan_id = sqlite3_column_int64(st, 1);
		ev.ts_ms = sqlite3_column_int64(st, 2);
		store_copystr(ev.actor, sizeof(ev.actor), sqlite3_column_text(st, 3));
		store_copystr(ev.kind, sizeof(ev.kind), sqlite3_column_text(st, 4));
		store_copystr(ev.prev_hash, sizeof(ev.prev_hash),
		    sqlite3_column_text(st, 6));
		store_copystr(ev.hash, sizeof(ev.hash), sqlite3_column_text(st, 7));
		if ((ev.details_json = store_dupcol(st, 5)) == NULL) {
			store_seterr(err, errlen, "reading events: out of memory");
			goto done;
		}
		stop = fn(&ev, arg);
		free(ev.details_json);
		if (stop)
			break;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "reading events");
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* Walks the chain from its start (one statement: one snapshot). Returns
 * 0 when every event verifies, with the last one's id and hash in LAST_ID
 * and LAST (64 zeros when there is none); 1 when one does not (RES says
 * which and why); -1 when the database could not be read. */
static int
verify_chain(struct store *s, struct store_verify *res, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, plan_id, ts_ms, actor, kind, details_json, prev_hash,"
	    " hash FROM events ORDER BY id";
	sqlite3_stmt *st = NULL;
	char prev[STORE_HASH_HEX], hash[STORE_HASH_HEX];
	const char *actor, *kind, *details, *stored_prev, *stored_hash;
	size_t actor_len, kind_len, details_len;
	int64_t prev_id = 0, id;
	int rc = -1, src;

	snprintf(prev, sizeof(prev), "%s", ZERO_HASH);
	if (store_prepare(s, sql, &st, "verifying events", err, errlen) == -1)
		goto done;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		/* Text first, then its length: the documented safe order. The
		 * tables are STRICT, so no column is converted. */
		id = sqlite3_column_int64(st, 0);
		actor = (const char *)sqlite3_column_text(st, 3);
		actor_len = (size_t)sqlite3_column_bytes(st, 3);
		kind = (const char *)sqlite3_column_text(st, 4);
		kind_len = (size_t)sqlite3_column_bytes(st, 4);
		details = (const char *)sqlite3_column_text(st, 5);
		details_len = (size_t)sqlite3_column_bytes(st, 5);
		stored_prev = (const char *)sqlite3_column_text(st, 6);
		stored_hash = (const char *)sqlite3_column_text(st, 7);
		if (stored_prev == NULL)
			stored_prev = "";
		if (stored_hash == NULL)
			stored_hash = "";
		if (event_hash(prev, id, sqlite3_column_int64(st, 1),
		    sqlite3_column_int64(st, 2), actor, actor_len, kind,
		    kind_len, details, details_len, hash) == -1) {
			store_seterr(err, errlen, "verifying events: sha256 failed");
			goto done;
		}
		res->checked++;

		res->bad_id = id;
		if (id != prev_id + 1) {
			if (prev_id == 0)
				snprintf(res->reason, sizeof(res->reason),
				    "the first event has id %" PRId64
				    ", not 1: earlier events are missing", id);
			else
				snprintf(res->reason, sizeof(res->reason),
				    "event %" PRId64 " follows event %" PRId64
				    ": events in between are missing",
				    id, prev_id);
			rc = 1;
			goto done;
		}
		if (strcmp(stored_prev, prev) != 0) {
			if (prev_id == 0)
				snprintf(res->reason, sizeof(res->reason),
				    "prev_hash is not the chain start "
				    "(64 zeros)");
			else
				snprintf(res->reason, sizeof(res->reason),
				    "prev_hash does not match the hash of "
				    "event %" PRId64, prev_id);
			rc = 1;
			goto done;
		}
		if (strcmp(stored_hash, hash) != 0) {
			snprintf(res->reason, sizeof(res->reason),
			    "hash does not match the event's content");
			rc = 1;
			goto done;
		}
		res->bad_id = 0;
		prev_id = id;
		memcpy(prev, hash, sizeof(prev));
	}
	if (src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "verifying events");
		goto done;
	}
	*last_id = prev_id;
	memcpy(last, prev, STORE_HASH_HEX);
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* Reads the chain head: how many events the chain held after the last
 * append, and that event's id and hash. Returns 0, 1 when the head row
 * is gone, -1 on failure. */
static int
read_head(struct store *s, int64_t *events, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT events, last_id, last_hash FROM chain_head WHERE id = 1";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "verifying events: reading the chain head",
	    err, errlen) == -1)
		return -1;
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		*events = sqlite3_column_int64(st, 0);
		*last_id = sqlite3_column_int64(st, 1);
		store_copystr(last, STORE_HASH_HEX, sqlite3_column_text(st, 2));
		rc = 0;
		break;
	case SQLITE_DONE:
		rc = 1;
		break;
	default:
		store_dberr(s, err, errlen, "verifying events: reading the chain head");
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * The walk proves each event follows the one before; only the head says
 * where the chain ended. Both are read in one read transaction, so an
 * append in between cannot look like a difference.
 */
int
store_verify_events(struct store *s, struct store_verify *res,
    char *err, size_t errlen)
{
	char last[STORE_HASH_HEX], head_hash[STORE_HASH_HEX];
	int64_t last_id = 0, head_events = 0, head_id = 0;
	int own = sqlite3_get_autocommit(s->db), rc = -1, hr;

	memset(res, 0, sizeof(*res));
	if (own && store_exec(s, "BEGIN", "verifying events: begin", err, errlen) == -1)
		return -1;
	if ((hr = read_head(s, &head_events, &head_id, head_hash, err, errlen)) < 0)
		goto done;
	if ((rc = verify_chain(s, res, &last_id, last, err, errlen)) != 0)
		goto done;
	rc = 1;
	if (hr == 1) {
		snprintf(res->reason, sizeof(res->reason), "the chain head is missing: "
		    "where the history ended cannot be checked");
	} else if (res->checked < head_events) {
		res->bad_id = last_id + 1;
		snprintf(res->reason, sizeof(res->reason), "truncated: the chain head "
		    "records %" PRId64 " events up to event %" PRId64 "; %" PRId64
		    " are left, the last %" PRId64 " were cut off", head_events, head_id,
		    res->checked, head_events - res->checked);
	} else if (res->checked != head_events || last_id != head_id ||
	    strcmp(last, head_hash) != 0) {
		res->bad_id = last_id;
		snprintf(res->reason, sizeof(res->reason), "the chain ends at event %"
		    PRId64 " (%" PRId64 " events); its head records event %" PRId64
		    " (%" PRId64 " events) with another hash", last_id, res->checked,
		    head_id, head_events);
	} else
		rc = 0;
done:
	if (own)
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	return rc;
}

int
store_sample_insert(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *metric, const char *label, double value, char *err,
    size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO samples (plan_id, ts_ms, metric, label, value)"
	    " VALUES (?1, ?2, ?3, ?4, ?5)";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "inserting sample", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_int64(st, 2, ts_ms);
	sqlite3_bind_text(st, 3, metric, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 4, label != NULL ? label : "", -1, SQLITE_STATIC);
	sqlite3_bind_double(st, 5, value);
	if (sqlite3_step(st) != SQLITE_DONE) {
		store_dberr(s, err, errlen, "inserting sample");
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_each_sample(struct store *s, int64_t plan_id, int64_t since_ms,
    int (*fn)(int64_t ts_ms, const char *metric, const char *label,
    double value, void *arg), void *arg, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT ts_ms, metric, label, value FROM samples"
	    " WHERE plan_id = ?1 AND ts_ms >= ?2 ORDER BY ts_ms, rowid";
	sqlite3_stmt *st = NULL;
	int rc = -1, src;

	if (store_prepare(s, sql, &st, "reading samples", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_int64(st, 2, since_ms);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (fn(sqlite3_column_int64(st, 0),
		    (const char *)sqlite3_column_text(st, 1),
		    (const char *)sqlite3_column_text(st, 2),
		    sqlite3_column_double(st, 3), arg))
			break;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "reading samples");
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}
