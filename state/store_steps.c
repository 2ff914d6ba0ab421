/* store_steps: the steps table — each step of a plan with its status,
 * times, result and error, and the reset a retry starts from — and the
 * rows a long result list is kept in (step_entries). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
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

/* Writes step IDX of PLAN_ID with SQL, an UPDATE that must change its
 * row, bound as store__write_rows binds TYPES and the arguments after it;
 * DOING names the write in errors ("DOING step 2 of plan 7"). With DROP
 * (the step's result written whole, or cleared) the rows
 * store_step_save_entries kept for it are deleted in one transaction with
 * the update: its own, or the caller's when one is open. Returns 0, or -1
 * with ERR. */
static int
step_write(struct store *s, int64_t plan_id, int idx, bool drop, const char *doing,
    char *err, size_t errlen, const char *sql, const char *types, ...)
{
	char what[80];
	bool own = false;
	va_list ap;
	int rc;

	step_what(what, sizeof(what), doing, idx, plan_id);
	if (drop && own_begin(s, &own, err, errlen) != 0)
		return -1;
	va_start(ap, types);
	rc = store__write_rows_v(s, what, "no such step", NULL, err, errlen, sql, types,
	    ap);
	va_end(ap);
	if (rc == 0 && drop)
		rc = entries_drop(s, plan_id, idx, err, errlen);
	return own_end(s, own, rc, err, errlen);
}

/* store_step_update, the rows kept for the step deleted when DROP. */
static int
step_update(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, bool drop, char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE steps SET status = coalesce(?1, status),"
	    " started_ms = coalesce(?2, started_ms),"
	    " ended_ms = coalesce(?3, ended_ms),"
	    " result_json = coalesce(?4, result_json),"
	    " error = coalesce(?5, error)"
	    " WHERE plan_id = ?6 AND idx = ?7";

	/* Unbound parameters are NULL: "leave unchanged". */
	return step_write(s, plan_id, idx, drop, "updating", err, errlen,
	    sql, "tppttIi", status, started_ms, ended_ms, result_json, error, plan_id,
	    idx);
}

int
store_step_update(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, char *err, size_t errlen)
{
	/* A whole result replaces the rows. */
	return step_update(s, plan_id, idx, status, started_ms, ended_ms, result_json,
	    error, result_json != NULL, err, errlen);
}

int
store_entry_of_array(void *arg, size_t i, struct store_entry *out)
{
	*out = ((const struct store_entry *)arg)[i];
	return 0;
}

/* Writes the N rows GET reads from ARG as step IDX of plan PLAN_ID's rows
 * (one inserted, one at the same place replaced), inside the caller's
 * transaction; WHAT says what is written. Returns 0, or -1 with ERR. */
static int
rows_write(struct store *s, int64_t plan_id, int idx, store_entry_fn get, void *arg,
    size_t n, const char *what, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO step_entries (plan_id, step_idx, name, ord, entry_json)"
	    " VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (plan_id, step_idx, ord)"
	    " DO UPDATE SET name = excluded.name, entry_json = excluded.entry_json";
	struct store_entry e;
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (n == 0)
		return 0;
	if (store__prepare(s, sql, &st, what, err, errlen) != 0)
		return -1;
	/* One statement for every row: a batch's few, or a whole list. */
	for (size_t i = 0; i < n; i++) {
		if (get(arg, i, &e) != 0) {
			errbuf_set(err, errlen, "%s: row %zu of %zu could not be read: %s",
			    what, i + 1, n, strerror(errno));
			goto done;
		}
		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, plan_id);
		sqlite3_bind_int(st, 2, idx);
		sqlite3_bind_text(st, 3, e.name, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, e.ord);
		sqlite3_bind_text(st, 5, e.json, -1, SQLITE_STATIC);
		if (store__run(s, st, what, NULL, err, errlen) != 0)
			goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

int
store_step_save_entries(struct store *s, int64_t plan_id, int idx,
    const char *result_json, const struct store_entry *v, size_t n, char *err,
    size_t errlen)
{
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
	rc = rows_write(s, plan_id, idx, store_entry_of_array, (void *)v, n, what, err,
	    errlen);
done:
	return own_end(s, own, rc, err, errlen);
}

int
store_step_update_rows(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json, const char *error,
    store_entry_fn get, void *arg, size_t n, char *err, size_t errlen)
{
	char what[120];
	bool own = false;
	int rc = -1;

	if (get == NULL)
		return step_update(s, plan_id, idx, status, started_ms, ended_ms,
		    result_json, error, false, err, errlen);
	if (n == 0)
		return store_step_update(s, plan_id, idx, status, started_ms, ended_ms,
		    result_json, error, err, errlen);
	if (own_begin(s, &own, err, errlen) != 0)
		return -1;
	snprintf(what, sizeof(what), "writing the result rows of step %d of plan %"
	    PRId64, idx, plan_id);
	/* The rows of the result before go with it; these replace them. */
	if (store_step_update(s, plan_id, idx, status, started_ms, ended_ms, result_json,
	    error, err, errlen) == 0)
		rc = rows_write(s, plan_id, idx, get, arg, n, what, err, errlen);
	return own_end(s, own, rc, err, errlen);
}

/* The columns read_step reads, in its order: a query selects them, then
 * result_json and error (or NULL, NULL when it leaves those out). */
#define STEP_SELECT "SELECT kind, gate, status, started_ms, ended_ms, idx, "

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

/* Runs SQL, which selects STEP_SELECT's columns, result_json and error
 * with ?1 the plan and ?2 IDX (left unbound, so
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

/* The rows' elements joined by commas, in their order (join_row). */
struct joined {
	char *text;
	size_t len, cap;
	int64_t n;
};

/* store__read's FN for entries_join: appends the row's element to the
 * struct joined at ARG. Returns 0, or -1 out of memory. */
static int
join_row(sqlite3_stmt *st, void *arg)
{
	struct joined *j = arg;
	const void *t = sqlite3_column_text(st, 0);
	size_t n = (size_t)sqlite3_column_bytes(st, 0);
	char *grown;

	if (j->len + n + 2 > j->cap) {
		size_t cap = j->cap * 2 > j->len + n + 2 ? j->cap * 2 : j->len + n + 4096;

		if ((grown = realloc(j->text, cap)) == NULL)
			return -1;
		j->text = grown;
		j->cap = cap;
	}
	if (j->n++ > 0)
		j->text[j->len++] = ',';
	memcpy(j->text + j->len, t != NULL ? t : "null", t != NULL ? n : 4);
	j->len += t != NULL ? n : 4;
	return 0;
}

/* The index just past the JSON string that starts at R[I] (a '"'), or 0
 * when it does not end. */
static size_t
string_end(const char *r, size_t i)
{
	for (i++; r[i] != '\0'; i++) {
		if (r[i] == '"')
			return i + 1;
		if (r[i] == '\\' && r[i + 1] != '\0')
			i++;
	}
	return 0;
}

/* Skips blanks in R from I. Returns the first offset that is not one. */
static size_t
blanks_end(const char *r, size_t i)
{
	while (r[i] == ' ' || r[i] == '\n' || r[i] == '\t' || r[i] == '\r')
		i++;
	return i;
}

/* Where valid JSON object R has the array PATH: a top-level member's
 * name, or names joined by dots for a member of a member's object
 * ("old_last.queues"): the offset of the array's '[' into *AT and the
 * offset just past its ']' into *END. A scan of the text, strings
 * skipped whole: no parse of a result that may be megabytes. Returns 0,
 * or -1 when it has none. */
static int
member_array(const char *r, const char *path, size_t *at, size_t *end)
{
	const char *name = path, *dot = strchr(path, '.');
	size_t i = 0, e, v, len = dot != NULL ? (size_t)(dot - path) : strlen(path);
	int depth = 0, from = -1, inside = 1;	/* the object NAME is sought in */

	while (r[i] != '\0') {
		if (r[i] == '"') {
			if ((e = string_end(r, i)) == 0)
				return -1;
			v = blanks_end(r, e);
			/* A string followed by ':' is a key. */
			if (from < 0 && depth == inside && r[v] == ':' && e - i == len + 2 &&
			    memcmp(r + i + 1, name, len) == 0) {
				v = blanks_end(r, v + 1);
				if (r[v] != (dot != NULL ? '{' : '['))
					return -1;
				if (dot != NULL) {	/* into the member's object */
					name = dot + 1;
					dot = strchr(name, '.');
					len = dot != NULL ? (size_t)(dot - name) : strlen(name);
					inside++;
				} else {
					*at = v;
					from = depth;
				}
				i = v;
				continue;
			}
			i = e;
			continue;
		}
		if (r[i] == '{' || r[i] == '[')
			depth++;
		else if (r[i] == '}' || r[i] == ']') {
			if (--depth == from) {
				*end = i + 1;
				return 0;
			}
			if (from < 0 && depth < inside)
				return -1;	/* the object sought in ended */
		}
		i++;
	}
	return -1;
}

/* The members a step's rows (store_step_save_entries) may be kept in: the
 * first of them its result has at the top level holds them (move_old's
 * "queues", remove_old's "entries"; no result has both). */
static const char *const row_members[] = { "queues", "entries" };

/* The member of valid JSON object R its rows go in: the offsets of its
 * '[' and just past its ']' into *AT and *END (member_array's). Returns
 * the member's name, or NULL when R has none of row_members. */
static const char *
row_member(const char *r, size_t *at, size_t *end)
{
	for (size_t i = 0; i < sizeof(row_members) / sizeof(row_members[0]); i++)
		if (member_array(r, row_members[i], at, end) == 0)
			return row_members[i];
	return NULL;
}

/* Puts the rows store_step_save_entries kept for OUT's step into its
 * result, as its "queues" or "entries" (row_member), in their order
 * (none kept: the result as it is). Returns 0, or -1 with ERR. */
static int
entries_join(struct store *s, struct store_step *out, const char *what, char *err,
    size_t errlen)
{
	static const char sql[] =
	    "SELECT entry_json FROM step_entries WHERE plan_id = ?1 AND step_idx = ?2"
	    " ORDER BY ord";
	struct joined j = { 0 };
	size_t at = 0, end = 0, rlen;
	char *whole = NULL;
	int rc = -1;

	if (store__read(s, what, join_row, &j, err, errlen, sql, "Ii", out->plan_id,
	    out->idx) < 0)
		goto done;
	rc = 0;
	if (j.n == 0)
		goto done;
	rc = -1;
	if (out->result_json == NULL || row_member(out->result_json, &at, &end) == NULL) {
		errbuf_set(err, errlen, "%s: its result has no list (\"queues\" or "
		    "\"entries\") for its %" PRId64 " rows", what, j.n);
		goto done;
	}
	rlen = strlen(out->result_json);
	if ((whole = malloc(rlen - (end - at) + j.len + 3)) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		goto done;
	}
	memcpy(whole, out->result_json, at);
	whole[at] = '[';
	memcpy(whole + at + 1, j.text, j.len);
	whole[at + 1 + j.len] = ']';
	memcpy(whole + at + 2 + j.len, out->result_json + end, rlen - end + 1);
	free(out->result_json);
	out->result_json = whole;
	rc = 0;
done:
	free(j.text);
	return rc;
}

/* Reads step IDX of plan PLAN_ID into OUT, with its result and error as
 * stored when RESULT, else without (NULL); WHAT says what is read. Returns
 * 0, STORE_NOT_FOUND when absent, or -1 with ERR. */
static int
step_by_idx(struct store *s, int64_t plan_id, int idx, bool result, const char *what,
    struct store_step *out, char *err, size_t errlen)
{
	static const char with[] =
	    STEP_SELECT "result_json, error FROM steps WHERE plan_id = ?1 AND idx = ?2";
	static const char without[] =
	    STEP_SELECT "NULL, NULL FROM steps WHERE plan_id = ?1 AND idx = ?2";

	return step_read(s, result ? with : without, plan_id, idx, what, out, err, errlen);
}

int
store_step_get(struct store *s, int64_t plan_id, int idx,
    struct store_step *out, char *err, size_t errlen)
{
	char what[80];
	bool own = sqlite3_get_autocommit(s->db) != 0;
	int r;

	step_what(what, sizeof(what), "reading", idx, plan_id);
	/* The step and its rows of one moment. */
	if (own && store__exec(s, "BEGIN", what, err, errlen) != 0)
		return -1;
	r = step_by_idx(s, plan_id, idx, true, what, out, err, errlen);
	if (r == 0 && entries_join(s, out, what, err, errlen) != 0) {
		store_step_clear(out);
		r = -1;
	}
	if (own)
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	return r;
}

int
store_step_get_apart(struct store *s, int64_t plan_id, int idx, struct store_step *out,
    char *err, size_t errlen)
{
	char what[80];

	step_what(what, sizeof(what), "reading", idx, plan_id);
	return step_by_idx(s, plan_id, idx, true, what, out, err, errlen);
}

/* store__read_one's FN for store_step_rows_size: the count and the bytes
 * into the two int64_t at ARG. */
static int
rows_size(sqlite3_stmt *st, void *arg)
{
	int64_t *v = arg;

	v[0] = sqlite3_column_int64(st, 0);
	v[1] = sqlite3_column_int64(st, 1);
	return 0;
}

int
store_step_rows_size(struct store *s, int64_t plan_id, int idx, int64_t *n,
    int64_t *bytes, char *err, size_t errlen)
{
	int64_t v[2] = { 0, 0 };
	char what[80];
	int r;

	step_what(what, sizeof(what), "counting the result rows of", idx, plan_id);
	r = store__read_one(s, what, rows_size, v, err, errlen,
	    "SELECT count(*), coalesce(sum(length(entry_json)), 0) FROM step_entries"
	    " WHERE plan_id = ?1 AND step_idx = ?2", "Ii", plan_id, idx);
	*n = v[0];
	*bytes = v[1];
	return r == 0 ? 0 : -1;
}

const char *
store_json_rows_member(const char *text)
{
	size_t at, end;

	return text != NULL ? row_member(text, &at, &end) : NULL;
}

/* What rows_each hands store__read: the reader and how it went. */
struct rows_each {
	store_each_fn fn;
	void *arg;
	int rc;			/* FN's when not 0 */
	bool bad;		/* an element did not parse */
};

/* store__read's FN for store_step_rows_each: the row's element, parsed,
 * to the reader at ARG. Returns 0 to go on, else 1 (stopped). */
static int
row_each(sqlite3_stmt *st, void *arg)
{
	struct rows_each *re = arg;
	const char *t = (const char *)sqlite3_column_text(st, 0);
	json_t *e = t != NULL ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;

	if (e == NULL) {
		re->bad = true;
		return 1;
	}
	re->rc = re->fn(e, re->arg);
	json_decref(e);
	return re->rc != 0 ? 1 : 0;
}

int
store_step_rows_each(struct store *s, int64_t plan_id, int idx, store_each_fn fn,
    void *arg, bool *bad, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT entry_json FROM step_entries WHERE plan_id = ?1 AND step_idx = ?2"
	    " ORDER BY ord";
	struct rows_each re = { .fn = fn, .arg = arg };
	char what[80];
	int r;

	step_what(what, sizeof(what), "reading the result rows of", idx, plan_id);
	r = store__read(s, what, row_each, &re, err, errlen, sql, "Ii", plan_id, idx);
	*bad = re.bad;
	if (re.bad) {
		errbuf_set(err, errlen, "%s: a row does not parse", what);
		return -1;
	}
	if (re.rc != 0)
		return re.rc;
	return r < 0 ? -1 : 0;
}

/* Hands FN each element of the array R[AT..END) (as member_array found
 * it), parsed one at a time. Returns 0, what FN returned when not 0, or
 * -1 with *BAD set when an element does not parse. */
static int
each_element(const char *r, size_t at, size_t end, store_each_fn fn, void *arg,
    bool *bad)
{
	json_error_t je;
	json_t *e;
	size_t i = at + 1;
	int rc;

	for (;;) {
		while (i < end && strchr(" \t\r\n,", r[i]) != NULL)
			i++;
		if (i + 1 >= end)
			return 0;	/* at the closing ']' */
		if ((e = json_loadb(r + i, end - 1 - i, JSON_DISABLE_EOF_CHECK |
		    JSON_DECODE_ANY, &je)) == NULL) {
			*bad = true;
			return -1;
		}
		rc = fn(e, arg);
		json_decref(e);
		if (rc != 0)
			return rc;
		/* A scalar's end may be read one byte past: elements are
		 * objects here, whose last byte ends them. */
		i += (size_t)je.position;
	}
}

int
store_json_each(const char *text, const char *member, store_each_fn fn, void *arg,
    bool *bad)
{
	size_t at, end;

	*bad = false;
	if (member_array(text, member, &at, &end) != 0)
		return 0;
	return each_element(text, at, end, fn, arg, bad);
}

/* Empties the array TEXT[AT..END) in place (member_array's). */
static void
empty_at(char *text, size_t at, size_t end)
{
	size_t len = strlen(text);

	text[at + 1] = ']';
	memmove(text + at + 2, text + end, len - end + 1);
}

void
store_json_empty(char *text, const char *member)
{
	size_t at, end;

	if (member_array(text, member, &at, &end) == 0)
		empty_at(text, at, end);
}

const char *
store_json_empty_rows(char *text)
{
	size_t at, end;
	const char *member = row_member(text, &at, &end);

	if (member != NULL)
		empty_at(text, at, end);
	return member;
}

/* store_step_each inside the transaction its caller opened. */
static int
step_each(struct store *s, int64_t plan_id, int idx, const char *path,
    store_each_fn fn, void *arg, char **rest, char *err, size_t errlen)
{
	struct store_step st;
	const char *rows;
	size_t at, end, rat, rend;
	bool bad = false;
	int r;

	*rest = NULL;
	/* As written: rows kept for a list are read only for that list, so
	 * that the rest is never a tree of them. */
	if ((r = store_step_get_apart(s, plan_id, idx, &st, err, errlen)) != 0)
		return r == STORE_NOT_FOUND ? 0 : -1;
	if (st.result_json == NULL)
		goto done;
	rows = row_member(st.result_json, &rat, &rend);
	if (member_array(st.result_json, path, &at, &end) == 0) {
		if (fn != NULL && (each_element(st.result_json, at, end, fn, arg, &bad) != 0 ||
		    (rows != NULL && strcmp(rows, path) == 0 &&
		    store_step_rows_each(s, plan_id, idx, fn, arg, &bad, err, errlen) != 0))) {
			errbuf_set(err, errlen, "reading step %d of plan %" PRId64 "'s "
			    "result: %s", idx, plan_id, bad ? "an element of its "
			    "list does not parse" : "its reader stopped");
			store_step_clear(&st);
			return -1;
		}
		/* The rest: the list emptied in place. */
		empty_at(st.result_json, at, end);
	}
	*rest = st.result_json;
	st.result_json = NULL;
done:
	store_step_clear(&st);
	return 0;
}

int
store_step_each(struct store *s, int64_t plan_id, int idx, const char *path,
    store_each_fn fn, void *arg, char **rest, char *err, size_t errlen)
{
	bool own = sqlite3_get_autocommit(s->db) != 0;
	int r;

	/* The result and its rows of one moment. */
	if (own && store__exec(s, "BEGIN", "reading a step's result", err, errlen) != 0)
		return -1;
	r = step_each(s, plan_id, idx, path, fn, arg, rest, err, errlen);
	if (own)
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	return r;
}

int
store_step_times(struct store *s, int64_t plan_id, int idx, struct store_step *out,
    char *err, size_t errlen)
{
	char what[80];

	step_what(what, sizeof(what), "reading", idx, plan_id);
	return step_by_idx(s, plan_id, idx, false, what, out, err, errlen);
}

int
store_step_current(struct store *s, int64_t plan_id, struct store_step *out,
    char *err, size_t errlen)
{
	/* Steps not yet succeeded first, lowest first; then the succeeded
	 * ones, highest first. No result or error. */
	static const char sql[] =
	    STEP_SELECT "NULL, NULL FROM steps WHERE plan_id = ?1"
	    " ORDER BY status = 'succeeded',"
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

	return step_write(s, plan_id, idx, true, "resetting", err, errlen, sql, "tIi",
	    status, plan_id, idx);
}

int
store_step_restart(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE steps SET status = ?1, started_ms = ?2, ended_ms = NULL,"
	    " error = NULL WHERE plan_id = ?3 AND idx = ?4";

	return step_write(s, plan_id, idx, false, "restarting", err, errlen, sql, "tIIi",
	    status, started_ms, plan_id, idx);
}
