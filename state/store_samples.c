/* store_samples: the watch's samples (metric, label, value at a time). */
#include <sqlite3.h>

#include "store.h"
#include "store_int.h"

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
	if (store_run(s, st, "inserting sample", NULL, err, errlen) != 0)
		goto done;
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
