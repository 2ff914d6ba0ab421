/* store_schema: the store's schema, as the ordered list of SQL scripts
 * that take a database from one user_version to the next, and applying
 * them when a database is opened (store.c). */
#include <inttypes.h>
#include <stdio.h>

#include <sqlite3.h>

#include "errbuf.h"
#include "store.h"
#include "store_int.h"

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

int
store__check_version(const char *path, int64_t v, char *err, size_t errlen)
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

int
store__migrate(struct store *s, const char *path, char *err, size_t errlen)
{
	char what[96];
	int64_t v;
	int rc = -1;

	if (store__exec(s, "BEGIN IMMEDIATE", "migrating schema: begin", err,
	    errlen) == -1)
		return -1;
	if (store__read_one(s, "migrating schema: reading user_version",
	    store__row_int64, &v, err, errlen, "PRAGMA user_version", "") != 0)
		goto done;
	if (store__check_version(path, v, err, errlen) == -1)
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
