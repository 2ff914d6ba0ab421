/* store_steps: the steps table — each step of a plan with its status,
 * times, result and error, and the reset a retry starts from — and the
 * rows a long result list is kept in (step_entries). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"
#include "store_int.h"

int
store_step_insert(struct store *s, int64_t plan_id, int idx, const char *kind,
    int gate, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO steps (plan_id, idx, kind, gate, status)"
	    " VALUES (?1, ?2, ?3, ?4, 'pending')";
	char what[80];

	snprintf(what, sizeof(what), "inserting step %d of plan %" PRId64,
	    idx, plan_id);
	return store__write(s, what, NULL, err, errlen, sql, "Iiti", plan_id, idx, kind,
	    gate != 0);
}

/* Deletes the rows store_step_save_entries kept for step IDX of PLAN_ID
 * (its result is written whole, or reset). Returns 0, or -1 with ERR. */
static int
entries_drop(struct store *s, int64_t plan_id, int idx, char *err, size_t errlen)
{
	static const char sql[] =
	    "DELETE FROM step_entries WHERE plan_id = ?1 AND step_idx = ?2";
	char what[80];

	snprintf(what, sizeof(what), "deleting the result rows of step %d of plan %"
	    PRId64, idx, plan_id);
	return store__write(s, what, NULL, err, errlen, sql, "Ii", plan_id, idx);
}

/* Begins a transaction when none is open (*OWN then set: the caller ends
 * it with own_end); inside the caller's, its writes are the caller's to
 * commit or roll back. Returns 0, or -1 with ERR. */
static int
own_begin(struct store *s, bool *own, char *err, size_t errlen)
{
	*own = sqlite3_get_autocommit(s->db) != 0;
	return *own ? store_begin(s, err, errlen) : 0;
}

/* Ends the transaction own_begin began (OWN): committed when RC is 0,
 * else rolled back. Returns RC, or -1 when the commit fails (ERR). */
static int
own_end(struct store *s, bool own, int rc, char *err, size_t errlen)
{
	if (!own)
		return rc;
	if (rc != 0) {
		store_rollback(s);
		return rc;
	}
	return store_commit(s, err, errlen);
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
	char what[80];
	bool own = false;
	int rc;

	snprintf(what, sizeof(what), "updating step %d of plan %" PRId64,
	    idx, plan_id);
	/* A whole result replaces the rows, in one transaction with them. */
	if (result_json != NULL && own_begin(s, &own, err, errlen) != 0)
		return -1;
	/* Unbound parameters are NULL: "leave unchanged". */
	rc = store__write_one(s, what, "no such step", err, errlen, sql, "tppttIi",
	    status, started_ms, ended_ms, result_json, error, plan_id, idx);
	if (rc == 0 && result_json != NULL)
		rc = entries_drop(s, plan_id, idx, err, errlen);
	return result_json != NULL ? own_end(s, own, rc, err, errlen) : rc;
}

int
store_step_save_entries(struct store *s, int64_t plan_id, int idx,
    const char *result_json, const struct store_entry *v, size_t n, char *err,
    size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO step_entries (plan_id, step_idx, name, ord, entry_json)"
	    " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (plan_id, step_idx, name)"
	    " DO UPDATE SET ord = excluded.ord, entry_json = excluded.entry_json";
	sqlite3_stmt *st = NULL;
	char what[120];
	bool own = false;
	int rc = -1;

	if (own_begin(s, &own, err, errlen) != 0)
		return -1;
	snprintf(what, sizeof(what), "updating step %d of plan %" PRId64, idx, plan_id);
	if (store__write_one(s, what, "no such step", err, errlen,
	    "UPDATE steps SET result_json = ?1 WHERE plan_id = ?2 AND idx = ?3", "tIi",
	    result_json, plan_id, idx) != 0)
		goto done;
	snprintf(what, sizeof(what), "writing the result rows of step %d of plan %"
	    PRId64, idx, plan_id);
	if (store__prepare(s, sql, &st, what, err, errlen) != 0)
		goto done;
	/* One statement for every row: a batch's few, or a whole list. */
	for (size_t i = 0; i < n; i++) {
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, plan_id);
		sqlite3_bind_int(st, 2, idx);
		sqlite3_bind_text(st, 3, v[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, v[i].ord);
		sqlite3_bind_text(st, 5, v[i].json, -1, SQLITE_STATIC);
		if (store__run(s, st, what, NULL, err, errlen) != 0)
			goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return own_end(s, own, rc, err, errlen);
}

/* store__read's FN for step_read: the row into the struct store_step at
 * ARG (its result and error malloc'ed, freed again when out of memory). */
static int
read_step(sqlite3_stmt *st, void *arg)
{
	struct store_step *out = arg;

	store__copystr(out->kind, sizeof(out->kind), sqlite3_column_text(st, 0));
	out->gate = sqlite3_column_int(st, 1);
	store__copystr(out->status, sizeof(out->status), sqlite3_column_text(st, 2));
	out->started_ms = sqlite3_column_int64(st, 3);     /* NULL reads 0 */
	out->ended_ms = sqlite3_column_int64(st, 4);
	out->idx = sqlite3_column_int(st, 5);
	if ((sqlite3_column_type(st, 6) != SQLITE_NULL &&
	    (out->result_json = store__dupcol(st, 6)) == NULL) ||
	    (sqlite3_column_type(st, 7) != SQLITE_NULL &&
	    (out->error = store__dupcol(st, 7)) == NULL)) {
		store_step_clear(out);
		return -1;
	}
	return 0;
}

/* Runs SQL, which selects kind, gate, status, started_ms, ended_ms, idx,
 * result_json and error with ?1 the plan and ?2 IDX (left unbound, so
 * NULL, when IDX < 0: no step has a NULL index), and
 * reads its first row into OUT; WHAT says what is read. Returns 0, STORE_NOT_FOUND when
 * there is no row, or -1 with ERR. */
static int
step_read(struct store *s, const char *sql, int64_t plan_id, int idx,
    const char *what, struct store_step *out, char *err, size_t errlen)
{
	int r;

	memset(out, 0, sizeof(*out));
	r = store__read_one(s, what, read_step, out, err, errlen, sql, "In", plan_id, idx);
	if (r == 0)
		out->plan_id = plan_id;
	return r;
}

int
store_step_get(struct store *s, int64_t plan_id, int idx,
    struct store_step *out, char *err, size_t errlen)
{
	/* The rows, when there are any, are the result's "queues" in their
	 * order (json() keeps the list JSON through the subquery). */
	static const char sql[] =
	    "SELECT kind, gate, status, started_ms, ended_ms, idx,"
	    " CASE WHEN EXISTS (SELECT 1 FROM step_entries"
	    "  WHERE plan_id = ?1 AND step_idx = ?2)"
	    " THEN json_set(result_json, '$.queues', json((SELECT"
	    "  json_group_array(json(entry_json)) FROM (SELECT entry_json"
	    "  FROM step_entries WHERE plan_id = ?1 AND step_idx = ?2 ORDER BY ord))))"
	    " ELSE result_json END,"
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

int
store_step_reset(struct store *s, int64_t plan_id, int idx, const char *status,
    char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE steps SET status = ?1, started_ms = NULL, ended_ms = NULL,"
	    " result_json = NULL, error = NULL WHERE plan_id = ?2 AND idx = ?3";
	char what[80];

	bool own = false;
	int rc;

	snprintf(what, sizeof(what), "resetting step %d of plan %" PRId64, idx, plan_id);
	if (own_begin(s, &own, err, errlen) != 0)
		return -1;
	rc = store__write_one(s, what, "no such step", err, errlen, sql, "tIi", status,
	    plan_id, idx);
	if (rc == 0)
		rc = entries_drop(s, plan_id, idx, err, errlen);
	return own_end(s, own, rc, err, errlen);
}
