/* store_samples: the samples table — the watch's samples (metric, label,
 * value at a time), and the downsampling that keeps a long watch's
 * samples in bounded space. */
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

	return store__write(s, "inserting sample", NULL, err, errlen, sql, "IIttd", plan_id,
	    ts_ms, metric, label != NULL ? label : "", value);
}

/* store__read's FN for store_each_sample: the sample handed to the walk's
 * FN. */
static int
sample_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;

	return w->fn.sample(sqlite3_column_int64(st, 0),
	    (const char *)sqlite3_column_text(st, 1),
	    (const char *)sqlite3_column_text(st, 2),
	    sqlite3_column_double(st, 3), w->arg) != 0;
}

int
store_each_sample(struct store *s, int64_t plan_id, int64_t since_ms,
    int (*fn)(int64_t ts_ms, const char *metric, const char *label,
    double value, void *arg), void *arg, char *err, size_t errlen)
{
	struct store__walk w = { .fn.sample = fn, .arg = arg };

	return store__read(s, "reading samples", sample_row, &w, err, errlen,
	    "SELECT ts_ms, metric, label, value FROM samples"
	    " WHERE plan_id = ?1 AND ts_ms >= ?2 ORDER BY ts_ms, rowid", "II", plan_id,
	    since_ms) < 0 ? -1 : 0;
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
	if (store__exec(s, "SAVEPOINT downsample", "downsampling", err, errlen) == -1)
		return -1;
	if (store__exec(s, agg, "downsampling", err, errlen) == -1)
		goto done;
	for (size_t i = 0; i < 3; i++) {
		if (store__prepare(s, sqls[i], &st, "downsampling", err, errlen) == -1)
			goto done;
		sqlite3_bind_int64(st, 1, plan_id);
		if (i < 2) {
			sqlite3_bind_int64(st, 2, bucket_ms);
			sqlite3_bind_int64(st, 3, before_ms);
		}
		if (sqlite3_step(st) != SQLITE_DONE) {
			store__dberr(s, err, errlen, "downsampling");
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
		rc = store__exec(s, "RELEASE downsample", "downsampling", err, errlen);
	else {
		sqlite3_exec(s->db, "ROLLBACK TO downsample; RELEASE downsample", NULL, NULL,
		    NULL);
	}
	return rc == 0 ? removed - added : -1;
}
