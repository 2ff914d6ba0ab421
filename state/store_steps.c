/* store_steps: the steps table — each step of a plan with its status,
 * times, result and error, and the reset a retry starts from. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"
#include "store_int.h"

/* Writes what a call does to step IDX of plan PLAN_ID ("DOING step 2 of
 * plan 7") into WHAT, for its errors. */
static void
step_what(char *what, size_t len, const char *doing, int idx, int64_t plan_id)
{
	snprintf(what, len, "%s step %d of plan %" PRId64, doing, idx, plan_id);
}

int
store_step_insert(struct store *s, int64_t plan_id, int idx, const char *kind,
    int gate, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO steps (plan_id, idx, kind, gate, status)"
	    " VALUES (?1, ?2, ?3, ?4, 'pending')";
	char what[80];

	step_what(what, sizeof(what), "inserting", idx, plan_id);
	return store__write(s, what, NULL, err, errlen, sql, "Iiti", plan_id, idx, kind,
	    gate != 0);
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

	step_what(what, sizeof(what), "updating", idx, plan_id);
	/* Unbound parameters are NULL: "leave unchanged". */
	return store__write_one(s, what, "no such step", err, errlen, sql, "tppttIi",
	    status, started_ms, ended_ms, result_json, error, plan_id, idx);
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
	static const char sql[] =
	    "SELECT kind, gate, status, started_ms, ended_ms, idx, result_json,"
	    " error FROM steps WHERE plan_id = ?1 AND idx = ?2";
	char what[80];

	step_what(what, sizeof(what), "reading", idx, plan_id);
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

	step_what(what, sizeof(what), "resetting", idx, plan_id);
	return store__write_one(s, what, "no such step", err, errlen, sql, "tIi", status,
	    plan_id, idx);
}
