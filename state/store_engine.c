/* store_engine: the tables the engine and the operators share — commands
 * (approve, retry, abort, ack) and alerts — plus step resets, plan listing
 * and the downsampling that keeps a long watch's samples bounded. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

int
store_command_insert(struct store *s, int64_t plan_id, const char *kind, int step_idx,
    int64_t alert_id, const char *actor, const char *comment, int64_t now_ms,
    int64_t *id, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO commands (plan_id, kind, step_idx, alert_id, actor, comment,"
	    " created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "recording command", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	if (step_idx >= 0)
		sqlite3_bind_int(st, 3, step_idx);
	if (alert_id > 0)
		sqlite3_bind_int64(st, 4, alert_id);
	sqlite3_bind_text(st, 5, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, comment != NULL ? comment : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 7, now_ms);
	if (store_run(s, st, "recording command", id, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* Reads the one command that WHERE (with ?1 the plan, ?2 ARG) selects.
 * Returns 0, STORE_NOT_FOUND when none, -1 on failure. */
static int
command_row(struct store *s, const char *where, int64_t plan_id, int64_t arg,
    struct store_command *out, char *err, size_t errlen)
{
	char sql[512];
	sqlite3_stmt *st = NULL;
	int rc = -1;

	snprintf(sql, sizeof(sql), "SELECT id, kind, coalesce(step_idx, -1),"
	    " coalesce(alert_id, 0), actor, comment, created_ms, coalesce(handled_ms, 0),"
	    " coalesce(outcome, '') FROM commands WHERE %s", where);
	memset(out, 0, sizeof(*out));
	if (store_prepare(s, sql, &st, "reading commands", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_int64(st, 2, arg);
	switch (sqlite3_step(st)) {
	case SQLITE_ROW:
		break;
	case SQLITE_DONE:
		rc = STORE_NOT_FOUND;
		goto done;
	default:
		store_dberr(s, err, errlen, "reading commands");
		goto done;
	}
	out->id = sqlite3_column_int64(st, 0);
	out->plan_id = plan_id;
	store_copystr(out->kind, sizeof(out->kind), sqlite3_column_text(st, 1));
	out->step_idx = sqlite3_column_int(st, 2);
	out->alert_id = sqlite3_column_int64(st, 3);
	store_copystr(out->actor, sizeof(out->actor), sqlite3_column_text(st, 4));
	store_copystr(out->comment, sizeof(out->comment), sqlite3_column_text(st, 5));
	out->created_ms = sqlite3_column_int64(st, 6);
	out->handled_ms = sqlite3_column_int64(st, 7);
	store_copystr(out->outcome, sizeof(out->outcome), sqlite3_column_text(st, 8));
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_command_next(struct store *s, int64_t plan_id, struct store_command *out,
    char *err, size_t errlen)
{
	return command_row(s, "plan_id = ?1 AND handled_ms IS NULL AND ?2 = 0"
	    " ORDER BY id LIMIT 1", plan_id, 0, out, err, errlen);
}

int
store_command_get(struct store *s, int64_t plan_id, int64_t id,
    struct store_command *out, char *err, size_t errlen)
{
	return command_row(s, "plan_id = ?1 AND id = ?2", plan_id, id, out, err, errlen);
}

int
store_command_done(struct store *s, int64_t id, int64_t now_ms, const char *outcome,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE commands SET handled_ms = ?1, outcome = ?2"
	    " WHERE id = ?3 AND handled_ms IS NULL";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "marking command handled", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, outcome, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 3, id);
	rc = store_update_one(s, st, "marking command handled",
	    "no such command waiting", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_alert_raise(struct store *s, int64_t plan_id, const char *kind, const char *message,
    int64_t now_ms, int64_t *id, bool *raised, char *err, size_t errlen)
{
	static const char upd[] =
	    "UPDATE alerts SET message = ?1, last_ms = ?2, count = count + 1"
	    " WHERE plan_id = ?3 AND kind = ?4 AND acked_ms IS NULL";
	static const char ins[] =
	    "INSERT INTO alerts (plan_id, kind, message, raised_ms, last_ms)"
	    " VALUES (?1, ?2, ?3, ?4, ?4)";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	*raised = false;
	if (store_prepare(s, upd, &st, "raising alert", err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, now_ms);
	sqlite3_bind_int64(st, 3, plan_id);
	sqlite3_bind_text(st, 4, kind, -1, SQLITE_STATIC);
	if (store_run(s, st, "raising alert", NULL, err, errlen) != 0)
		goto done;
	if (sqlite3_changes(s->db) > 0) {
		rc = 0;
		goto done;
	}
	sqlite3_finalize(st);
	if (store_prepare(s, ins, &st, "raising alert", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_text(st, 2, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, message, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	if (store_run(s, st, "raising alert", id, err, errlen) != 0)
		goto done;
	*raised = true;
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_alert_ack(struct store *s, int64_t plan_id, int64_t id, const char *actor,
    const char *comment, int64_t now_ms, char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE alerts SET acked_ms = ?1, acked_by = ?2, ack_comment = ?3"
	    " WHERE id = ?4 AND plan_id = ?5 AND acked_ms IS NULL";
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, sql, &st, "acknowledging alert", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, now_ms);
	sqlite3_bind_text(st, 2, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 3, comment != NULL ? comment : "", -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, id);
	sqlite3_bind_int64(st, 5, plan_id);
	if (store_run(s, st, "acknowledging alert", NULL, err, errlen) != 0)
		goto done;
	rc = sqlite3_changes(s->db) > 0 ? 0 : STORE_NOT_FOUND;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_each_alert(struct store *s, int64_t plan_id, int open_only,
    int (*fn)(const struct store_alert *a, void *arg), void *arg, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, kind, message, raised_ms, last_ms, count, coalesce(acked_ms, 0),"
	    " coalesce(acked_by, ''), coalesce(ack_comment, '') FROM alerts"
	    " WHERE plan_id = ?1 AND (?2 = 0 OR acked_ms IS NULL) ORDER BY id";
	struct store_alert a;
	sqlite3_stmt *st = NULL;
	int rc = -1, n = 0, src;

	if (store_prepare(s, sql, &st, "reading alerts", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	sqlite3_bind_int(st, 2, open_only != 0);
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&a, 0, sizeof(a));
		a.id = sqlite3_column_int64(st, 0);
		a.plan_id = plan_id;
		store_copystr(a.kind, sizeof(a.kind), sqlite3_column_text(st, 1));
		store_copystr(a.message, sizeof(a.message), sqlite3_column_text(st, 2));
		a.raised_ms = sqlite3_column_int64(st, 3);
		a.last_ms = sqlite3_column_int64(st, 4);
		a.count = sqlite3_column_int64(st, 5);
		a.acked_ms = sqlite3_column_int64(st, 6);
		store_copystr(a.acked_by, sizeof(a.acked_by), sqlite3_column_text(st, 7));
		store_copystr(a.ack_comment, sizeof(a.ack_comment), sqlite3_column_text(st, 8));
		n++;
		if (fn != NULL && fn(&a, arg))
			break;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "reading alerts");
		goto done;
	}
	rc = n;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_step_reset(struct store *s, int64_t plan_id, int idx, const char *status,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE steps SET status = ?1, started_ms = NULL, ended_ms = NULL,"
	    " result_json = NULL, error = NULL WHERE plan_id = ?2 AND idx = ?3";
	sqlite3_stmt *st = NULL;
	char what[80];
	int rc = -1;

	snprintf(what, sizeof(what), "resetting step %d of plan %" PRId64, idx, plan_id);
	if (store_prepare(s, sql, &st, what, err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, status, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 2, plan_id);
	sqlite3_bind_int(st, 3, idx);
	rc = store_update_one(s, st, what, "no such step", err, errlen);
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_version(struct store *s, uint64_t *version, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (store_prepare(s, "PRAGMA data_version", &st, "reading the data version", err,
	    errlen) == -1)
		goto done;
	if (sqlite3_step(st) != SQLITE_ROW) {
		store_dberr(s, err, errlen, "reading the data version");
		goto done;
	}
	*version = (uint64_t)sqlite3_column_int64(st, 0) << 32 ^
	    (uint64_t)sqlite3_total_changes64(s->db);
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_each_plan(struct store *s, int (*fn)(const struct store_plan *p, void *arg),
    void *arg, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, name, sha256, status, created_ms, archived_ms FROM plans ORDER BY id DESC";
	struct store_plan p;
	sqlite3_stmt *st = NULL;
	int rc = -1, src;

	if (store_prepare(s, sql, &st, "listing plans", err, errlen) == -1)
		goto done;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		store_read_plan(st, &p);
		if (fn(&p, arg))
			break;
	}
	if (src != SQLITE_ROW && src != SQLITE_DONE) {
		store_dberr(s, err, errlen, "listing plans");
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int64_t
store_samples_downsample(struct store *s, int64_t plan_id, int64_t before_ms,
    int64_t bucket_ms, char *err, size_t errlen)
{
	/* Buckets holding more than one row of a series are replaced by one
	 * row at the bucket's start with the largest value. */
	static const char agg[] =
	    "CREATE TEMP TABLE IF NOT EXISTS fold (ts INTEGER, metric TEXT, label TEXT,"
	    " v REAL);"
	    "CREATE INDEX IF NOT EXISTS temp.fold_key ON fold (ts, metric, label);"
	    "DELETE FROM temp.fold;";
	static const char fill[] =
	    "INSERT INTO temp.fold SELECT (ts_ms / ?2) * ?2, metric, label, max(value)"
	    " FROM samples WHERE plan_id = ?1 AND ts_ms < ?3"
	    " GROUP BY (ts_ms / ?2), metric, label HAVING count(*) > 1";
	static const char del[] =
	    "DELETE FROM samples WHERE plan_id = ?1 AND ts_ms < ?3 AND EXISTS ("
	    " SELECT 1 FROM temp.fold f WHERE f.ts = (samples.ts_ms / ?2) * ?2"
	    " AND f.metric = samples.metric AND f.label = samples.label)";
	static const char put[] =
	    "INSERT INTO samples (plan_id, ts_ms, metric, label, value)"
	    " SELECT ?1, ts, metric, label, v FROM temp.fold";
	const char *sqls[] = { fill, del, put };
	sqlite3_stmt *st = NULL;
	int64_t removed = 0, added = 0;
	int rc = -1;

	if (bucket_ms <= 0) {
		errbuf_set(err, errlen, "downsampling: bucket must be positive");
		return -1;
	}
	before_ms = before_ms / bucket_ms * bucket_ms;
	if (store_exec(s, "SAVEPOINT downsample", "downsampling", err, errlen) == -1)
		return -1;
	if (store_exec(s, agg, "downsampling", err, errlen) == -1)
		goto done;
	for (size_t i = 0; i < 3; i++) {
		if (store_prepare(s, sqls[i], &st, "downsampling", err, errlen) == -1)
			goto done;
		sqlite3_bind_int64(st, 1, plan_id);
		if (i < 2) {
			sqlite3_bind_int64(st, 2, bucket_ms);
			sqlite3_bind_int64(st, 3, before_ms);
		}
		if (sqlite3_step(st) != SQLITE_DONE) {
			store_dberr(s, err, errlen, "downsampling");
			goto done;
		}
		if (i == 1)
			removed = sqlite3_changes(s->db);
		if (i == 2)
			added = sqlite3_changes(s->db);
		sqlite3_finalize(st);
		st = NULL;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	if (rc == 0)
		rc = store_exec(s, "RELEASE downsample", "downsampling", err, errlen);
	else {
		sqlite3_exec(s->db, "ROLLBACK TO downsample; RELEASE downsample", NULL, NULL,
		    NULL);
	}
	return rc == 0 ? removed - added : -1;
}
