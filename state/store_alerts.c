/* store_alerts: the alerts table — what the engine raises for the
 * operators to see (one open alert per plan and kind, counted as it
 * recurs), whether each one's cause is still there, and their
 * acknowledgements. */
#include <stdbool.h>
#include <string.h>

#include "alert_kinds.h"
#include "store.h"
#include "store_int.h"

int
store_alert_raise(struct store *s, int64_t plan_id, const char *kind, const char *message,
    int64_t now_ms, int64_t *id, bool *raised, char *err, size_t errlen)
{
	static const char upd[] =
	    "UPDATE alerts SET message = ?1, last_ms = ?2, count = count + 1,"
	    " cause = max(cause, ?5)"
	    " WHERE plan_id = ?3 AND kind = ?4 AND acked_ms IS NULL";
	/* A kind whose cause the engine looks for returns after the last
	 * alert acknowledged while that cause was still there (its cause is
	 * cleared on all the kind's alerts once the engine sees it gone). */
	static const char ins[] =
	    "INSERT INTO alerts (plan_id, kind, message, raised_ms, last_ms, cause,"
	    " returns_after) VALUES (?1, ?2, ?3, ?4, ?4, ?5, CASE WHEN ?5 = 1 THEN"
	    " (SELECT max(id) FROM alerts WHERE plan_id = ?1 AND kind = ?2"
	    " AND acked_ms IS NOT NULL AND cause = 1) END)";
	int cause = alert_kind_tracks_cause(kind) ? 1 : 0;

	*raised = false;
	if (store__write(s, "raising alert", NULL, err, errlen, upd, "tIIti", message,
	    now_ms, plan_id, kind, cause) != 0)
		return -1;
	if (sqlite3_changes(s->db) > 0)
		return 0;
	if (store__write(s, "raising alert", id, err, errlen, ins, "IttIi",
	    plan_id, kind, message, now_ms, cause) != 0)
		return -1;
	*raised = true;
	return 0;
}

int
store_alert_cause_gone(struct store *s, int64_t plan_id, const char *kind, char *err,
    size_t errlen)
{
	static const char sql[] =
	    "UPDATE alerts SET cause = 0 WHERE plan_id = ?1 AND kind = ?2 AND cause = 1";

	return store__write(s, "recording that an alert's cause is gone", NULL, err, errlen,
	    sql, "It", plan_id, kind);
}

int
store_alert_ack(struct store *s, int64_t plan_id, int64_t id, const char *actor,
    const char *comment, int64_t now_ms, char *err, size_t errlen)
{
	static const char sql[] =
	    "UPDATE alerts SET acked_ms = ?1, acked_by = ?2, ack_comment = ?3"
	    " WHERE id = ?4 AND plan_id = ?5 AND acked_ms IS NULL";

	if (store__write(s, "acknowledging alert", NULL, err, errlen, sql, "IttII", now_ms,
	    actor, comment != NULL ? comment : "", id, plan_id) != 0)
		return -1;
	return sqlite3_changes(s->db) > 0 ? 0 : STORE_NOT_FOUND;
}

/* store__read's FN for store_each_alert: the alert handed to the walk's
 * FN, when there is one. */
static int
alert_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;
	struct store_alert a;

	memset(&a, 0, sizeof(a));
	a.id = sqlite3_column_int64(st, 0);
	a.plan_id = w->plan_id;
	store__copystr(a.kind, sizeof(a.kind), sqlite3_column_text(st, 1));
	store__copystr(a.message, sizeof(a.message), sqlite3_column_text(st, 2));
	a.raised_ms = sqlite3_column_int64(st, 3);
	a.last_ms = sqlite3_column_int64(st, 4);
	a.count = sqlite3_column_int64(st, 5);
	a.acked_ms = sqlite3_column_int64(st, 6);
	store__copystr(a.acked_by, sizeof(a.acked_by), sqlite3_column_text(st, 7));
	store__copystr(a.ack_comment, sizeof(a.ack_comment), sqlite3_column_text(st, 8));
	a.cause_present = sqlite3_column_int(st, 9) != 0;
	a.returns_after = sqlite3_column_int64(st, 10);
	return w->fn.alert != NULL && w->fn.alert(&a, w->arg) != 0;
}

int
store_each_alert(struct store *s, int64_t plan_id, int open_only,
    int (*fn)(const struct store_alert *a, void *arg), void *arg, char *err, size_t errlen)
{
	struct store__walk w = { .fn.alert = fn, .arg = arg, .plan_id = plan_id };

	return store__read(s, "reading alerts", alert_row, &w, err, errlen,
	    "SELECT id, kind, message, raised_ms, last_ms, count, coalesce(acked_ms, 0),"
	    " coalesce(acked_by, ''), coalesce(ack_comment, ''), cause,"
	    " coalesce(returns_after, 0) FROM alerts"
	    " WHERE plan_id = ?1 AND (?2 = 0 OR acked_ms IS NULL) ORDER BY id", "Ii",
	    plan_id, open_only != 0);
}

/* store_each_alert's callback for store_alert_get: keeps the alert of the
 * id sought. */
struct alert_sought {
	int64_t id;
	struct store_alert *out;
	bool found;
};

static int
alert_sought(const struct store_alert *a, void *arg)
{
	struct alert_sought *w = arg;

	if (a->id != w->id)
		return 0;
	*w->out = *a;
	w->found = true;
	return 1;
}

int
store_alert_get(struct store *s, int64_t plan_id, int64_t id, struct store_alert *out,
    char *err, size_t errlen)
{
	struct alert_sought w = { .id = id, .out = out, .found = false };

	if (store_each_alert(s, plan_id, 0, alert_sought, &w, err, errlen) < 0)
		return -1;
	return w.found ? 0 : STORE_NOT_FOUND;
}
