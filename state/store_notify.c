/* store_notify: the notifier's tables (store_notify.h): cursors, deliveries
 * and their attempts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "store.h"
#include "store_int.h"
#include "store_notify.h"

/* The columns read_delivery reads, in its order. */
#define DELIVERY_COLUMNS \
	"d.id, d.event_id, d.plan_id, d.notifier, d.kind, d.event, d.status," \
	" d.attempts, d.next_ms, d.created_ms, coalesce(d.done_ms, 0), p.name, e.kind," \
	" e.ts_ms, e.details_json, (SELECT json_group_array(json_object('attempt'," \
	" a.attempt, 'ts_ms', a.ts_ms, 'http_status', a.http_status, 'error', a.error))" \
	" FROM (SELECT * FROM delivery_attempts WHERE delivery_id = d.id" \
	" ORDER BY attempt) a)" \
	" FROM deliveries d JOIN events e ON e.id = d.event_id" \
	" JOIN plans p ON p.id = d.plan_id"

void
store_delivery_clear(struct store_delivery *d)
{
	free(d->details_json);
	free(d->attempts_json);
	memset(d, 0, sizeof(*d));
}

static int
read_delivery(sqlite3_stmt *st, struct store_delivery *d)
{
	memset(d, 0, sizeof(*d));
	d->id = sqlite3_column_int64(st, 0);
	d->event_id = sqlite3_column_int64(st, 1);
	d->plan_id = sqlite3_column_int64(st, 2);
	store__copystr(d->notifier, sizeof(d->notifier), sqlite3_column_text(st, 3));
	store__copystr(d->kind, sizeof(d->kind), sqlite3_column_text(st, 4));
	store__copystr(d->event, sizeof(d->event), sqlite3_column_text(st, 5));
	store__copystr(d->status, sizeof(d->status), sqlite3_column_text(st, 6));
	d->attempts = sqlite3_column_int(st, 7);
	d->next_ms = sqlite3_column_int64(st, 8);
	d->created_ms = sqlite3_column_int64(st, 9);
	d->done_ms = sqlite3_column_int64(st, 10);
	store__copystr(d->plan_name, sizeof(d->plan_name), sqlite3_column_text(st, 11));
	store__copystr(d->history_kind, sizeof(d->history_kind), sqlite3_column_text(st, 12));
	d->event_ts_ms = sqlite3_column_int64(st, 13);
	d->details_json = store__dupcol(st, 14);
	d->attempts_json = store__dupcol(st, 15);
	if (d->details_json == NULL || d->attempts_json == NULL) {
		store_delivery_clear(d);
		return -1;
	}
	return 0;
}

int
store_notify_cursor(struct store *s, const char *notifier, int64_t *last_id,
    char *err, size_t errlen)
{
	/* The no-op update makes RETURNING answer for a cursor already there. */
	return store__read_one(s, "reading a notifier's cursor", store__row_int64,
	    last_id, err, errlen, "INSERT INTO notify_cursors (notifier, last_event_id)"
	    " SELECT ?1, coalesce(max(id), 0) FROM events WHERE true"
	    " ON CONFLICT (notifier) DO UPDATE SET notifier = excluded.notifier"
	    " RETURNING last_event_id", "t", notifier) == 0 ? 0 : -1;
}

int
store_notify_events_after(struct store *s, int64_t after_id, int limit,
    int (*fn)(const struct store_event *ev, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct store__walk w = { .fn.event = fn, .arg = arg };

	return store__read(s, "reading new events", store__event_row, &w, err, errlen,
	    "SELECT " STORE__EVENT_COLUMNS " FROM events WHERE id > ?1"
	    " ORDER BY id LIMIT ?2", "Ii", after_id, limit) < 0 ? -1 : 0;
}

int
store_notify_enqueue(struct store *s, const char *notifier, const char *kind,
    int64_t event_id, int64_t plan_id, const char *event, int64_t now_ms, char *err,
    size_t errlen)
{
	return store__write(s, "recording a delivery", NULL, err, errlen,
	    "INSERT INTO deliveries (notifier, kind, event_id, plan_id, event, status,"
	    " next_ms, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)"
	    " ON CONFLICT (notifier, event_id) DO NOTHING", "ttIItI", notifier, kind,
	    event_id, plan_id, event, now_ms);
}

int
store_notify_cursor_set(struct store *s, const char *notifier, int64_t last_id,
    char *err, size_t errlen)
{
	return store__write_one(s, "moving a notifier's cursor", "no such notifier", err,
	    errlen, "UPDATE notify_cursors SET last_event_id = ?2 WHERE notifier = ?1",
	    "tI", notifier, last_id);
}

/* store__read's FN for DELIVERY_COLUMNS: the delivery handed to the
 * walk's FN. */
static int
delivery_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;
	struct store_delivery d;
	int stop;

	if (read_delivery(st, &d) != 0)
		return -1;
	stop = w->fn.delivery(&d, w->arg) != 0;
	store_delivery_clear(&d);
	return stop;
}

/* delivery_row's FN for store_notify_due: a copy of the first into ARG. */
static int
take_first(const struct store_delivery *d, void *arg)
{
	struct store_delivery *out = arg;

	*out = *d;
	out->details_json = strdup(d->details_json);
	out->attempts_json = strdup(d->attempts_json);
	return 1;
}

int
store_notify_due(struct store *s, const char *notifier, int64_t now_ms,
    struct store_delivery *out, char *err, size_t errlen)
{
	struct store__walk w = { .fn.delivery = take_first, .arg = out };

	memset(out, 0, sizeof(*out));
	if (store__read(s, "reading due deliveries", delivery_row, &w, err, errlen,
	    "SELECT " DELIVERY_COLUMNS " WHERE d.notifier = ?1 AND d.status = 'pending'"
	    " AND d.next_ms <= ?2 ORDER BY d.next_ms, d.id LIMIT 1", "tI", notifier,
	    now_ms) < 0)
		return -1;
	if (out->id != 0 && (out->details_json == NULL || out->attempts_json == NULL)) {
		store_delivery_clear(out);
		errbuf_set(err, errlen, "reading due deliveries: out of memory");
		return -1;
	}
	return 0;
}

int
store_notify_attempt(struct store *s, int64_t id, int attempt, int64_t ts_ms,
    int http_status, const char *error, const char *status, int64_t next_ms, char *err,
    size_t errlen)
{
	char cut[201];

	if (error != NULL)
		snprintf(cut, sizeof(cut), "%s", error);
	if (store_begin(s, err, errlen) != 0)
		return -1;
	if (store__write(s, "recording a delivery attempt", NULL, err, errlen,
	    "INSERT INTO delivery_attempts (delivery_id, attempt, ts_ms, http_status,"
	    " error) VALUES (?1, ?2, ?3, nullif(?4, 0), ?5)", "IiIit", id, attempt,
	    ts_ms, http_status, error != NULL ? cut : NULL) != 0 ||
	    store__write_one(s, "recording a delivery", "no such delivery", err, errlen,
	    "UPDATE deliveries SET status = ?2, attempts = ?3, next_ms = ?4,"
	    " done_ms = CASE WHEN ?2 = 'pending' THEN NULL ELSE ?5 END,"
	    " last_http = nullif(?6, 0), last_error = ?7 WHERE id = ?1", "ItiIIit", id,
	    status, attempt, next_ms, ts_ms, http_status, error != NULL ? cut : NULL) != 0) {
		store_rollback(s);
		return -1;
	}
	return store_commit(s, err, errlen);
}

int
store_notify_last_event(struct store *s, int64_t *last_id, char *err, size_t errlen)
{
	*last_id = 0;
	return store__read_one(s, "reading the newest event", store__row_int64, last_id,
	    err, errlen, "SELECT coalesce(max(id), 0) FROM events", "") == 0 ? 0 : -1;
}

/* store__read's FN for store_notify_counts: one notifier's counts. */
static int
count_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;
	struct store_notify_count c;

	memset(&c, 0, sizeof(c));
	store__copystr(c.notifier, sizeof(c.notifier), sqlite3_column_text(st, 0));
	c.pending = sqlite3_column_int64(st, 1);
	c.delivered = sqlite3_column_int64(st, 2);
	c.failed = sqlite3_column_int64(st, 3);
	return w->fn.count(&c, w->arg) != 0;
}

int
store_notify_counts(struct store *s, int64_t plan_id, int limit,
    int (*fn)(const struct store_notify_count *c, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct store__walk w = { .fn.count = fn, .arg = arg };

	/* The cursors name the notifiers serve knows (a new one has no
	 * delivery yet): counted with zeros when all plans are asked for. */
	return store__read(s, "counting deliveries", count_row, &w, err, errlen,
	    "SELECT notifier, sum(status = 'pending'),"
	    " sum(status = 'delivered'), sum(status = 'failed') FROM ("
	    " SELECT notifier, status FROM deliveries WHERE ?1 = 0 OR plan_id = ?1"
	    " UNION ALL SELECT notifier, NULL FROM notify_cursors WHERE ?1 = 0)"
	    " GROUP BY notifier ORDER BY notifier LIMIT ?2", "Ii", plan_id, limit) < 0 ?
	    -1 : 0;
}

int
store_notify_each(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_delivery *d, void *arg), void *arg, char *err,
    size_t errlen)
{
	struct store__walk w = { .fn.delivery = fn, .arg = arg };

	return store__read(s, "reading deliveries", delivery_row, &w, err, errlen,
	    "SELECT " DELIVERY_COLUMNS " WHERE d.plan_id = ?1 ORDER BY d.id", "I",
	    plan_id) < 0 ? -1 : 0;
}
