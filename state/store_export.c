/* store_export: the chain's rows and head for an export of one plan's
 * history, read in one read transaction (store_export.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store_export.h"
#include "store_int.h"

/* Steps ST (events from the plan's first on, bound) calling FN. Returns 0,
 * 1 when FN stopped it, -1 on a database failure. */
static int
walk(struct store *s, sqlite3_stmt *st, int64_t plan_id,
    int (*fn)(const struct store_event *ev, int own, void *arg), void *arg,
    char *err, size_t errlen)
{
	struct store_event ev;
	int src, stop;

	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (store__read_event(st, &ev) != 0) {
			errbuf_set(err, errlen, "reading the export: out of memory");
			return 1;
		}
		stop = fn(&ev, ev.plan_id == plan_id, arg);
		free(ev.details_json);
		if (stop) {
			errbuf_set(err, errlen, "reading the export: out of memory");
			return 1;
		}
	}
	if (src != SQLITE_DONE) {
		store__dberr(s, err, errlen, "reading the export");
		return -1;
	}
	return 0;
}

int
store_export_read(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_event *ev, int own, void *arg), void *arg,
    struct store_head *head, char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, plan_id, ts_ms, actor, kind,"
	    " CASE WHEN plan_id = ?1 THEN details_json ELSE '' END, prev_hash, hash"
	    " FROM events WHERE id >= (SELECT min(id) FROM events WHERE plan_id = ?1)"
	    " ORDER BY id";
	sqlite3_stmt *st = NULL;
	int own = sqlite3_get_autocommit(s->db), rc = -1, r;

	memset(head, 0, sizeof(*head));
	if (own && store__exec(s, "BEGIN", "reading the export: begin", err, errlen) == -1)
		return -1;
	if (store__prepare(s, sql, &st, "reading the export", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, plan_id);
	if ((r = walk(s, st, plan_id, fn, arg, err, errlen)) != 0) {
		rc = r == 1 ? -1 : r;
		goto done;
	}
	r = store_chain_head(s, &head->events, &head->last_id, head->last_hash, err,
	    errlen);
	if (r == STORE_NOT_FOUND) {
		errbuf_set(err, errlen, "the chain head is missing: where the history "
		    "ended cannot be exported");
		r = -1;
	}
	rc = r;
done:
	sqlite3_finalize(st);
	if (own)
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	return rc;
}
