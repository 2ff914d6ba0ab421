/* store_notify: what the notifier thread records (schema version 5) — each
 * notifier's cursor over the events, one delivery per event and notifier,
 * and every attempt at it — so that a restart neither sends again what was
 * delivered nor loses what was not. A notifier is recorded by its name,
 * never its URL. */
#ifndef CUTOVER_STORE_NOTIFY_H
#define CUTOVER_STORE_NOTIFY_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct store_delivery {
	int64_t id, event_id, plan_id;
	char notifier[65];
	char kind[16];			/* webhook, slack */
	char event[24];			/* gate_waiting, step_failed, alert_opened, plan_finished */
	char status[16];		/* pending, delivered, failed */
	int attempts;
	int64_t next_ms, created_ms, done_ms;	/* done_ms 0 while pending */
	char plan_name[65];
	char history_kind[48];		/* the event's kind: step.failed, … */
	int64_t event_ts_ms;
	char *details_json;		/* the event's details; owned */
	char *attempts_json;		/* [{attempt, ts_ms, http_status, error}]; owned */
};

/* Frees what D owns. */
void store_delivery_clear(struct store_delivery *d);

/* NOTIFIER's cursor into *LAST_ID: the last event it has looked at. A
 * notifier seen for the first time starts at the newest event (the past
 * is not sent). Returns 0 or -1 with ERR. */
int store_notify_cursor(struct store *s, const char *notifier, int64_t *last_id,
    char *err, size_t errlen);

/* Calls FN for each event after AFTER_ID, oldest first, at most LIMIT;
 * FN returns non-zero to stop. Returns 0 or -1 with ERR. */
int store_notify_events_after(struct store *s, int64_t after_id, int limit,
    int (*fn)(const struct store_event *ev, void *arg), void *arg, char *err,
    size_t errlen);

/* Records a pending delivery of event EVENT_ID (of PLAN_ID), notifier event
 * EVENT, to NOTIFIER of KIND, due at NOW_MS; one already recorded stays as
 * it is. Returns 0 or -1. */
int store_notify_enqueue(struct store *s, const char *notifier, const char *kind,
    int64_t event_id, int64_t plan_id, const char *event, int64_t now_ms, char *err,
    size_t errlen);

/* Moves NOTIFIER's cursor to LAST_ID. Returns 0 or -1. */
int store_notify_cursor_set(struct store *s, const char *notifier, int64_t last_id,
    char *err, size_t errlen);

/* NOTIFIER's oldest pending delivery due by NOW_MS into OUT (cleared with
 * store_delivery_clear), OUT->id 0 when none is due. Returns 0 or -1. */
int store_notify_due(struct store *s, const char *notifier, int64_t now_ms,
    struct store_delivery *out, char *err, size_t errlen);

/* Records attempt ATTEMPT of delivery ID at TS_MS — HTTP_STATUS (0: no
 * answer), ERROR (NULL when delivered; no URL in it) — and the delivery's
 * new STATUS, due again at NEXT_MS while pending, in one transaction.
 * Returns 0 or -1. */
int store_notify_attempt(struct store *s, int64_t id, int attempt, int64_t ts_ms,
    int http_status, const char *error, const char *status, int64_t next_ms, char *err,
    size_t errlen);

/* The id of the newest event into *LAST_ID (0: none). Returns 0 or -1. */
int store_notify_last_event(struct store *s, int64_t *last_id, char *err,
    size_t errlen);

/* One notifier's deliveries, counted by status. */
struct store_notify_count {
	char notifier[65];
	int64_t pending, delivered, failed;
};

/* Calls FN for each notifier, by name, with its deliveries counted: those
 * of PLAN_ID, or of every plan when PLAN_ID is 0 (then every notifier that
 * has a cursor, with no delivery yet or none, is counted too). At most
 * LIMIT notifiers. FN returns non-zero to stop. Returns 0 or -1. */
int store_notify_counts(struct store *s, int64_t plan_id, int limit,
    int (*fn)(const struct store_notify_count *c, void *arg), void *arg, char *err,
    size_t errlen);

/* Calls FN for each delivery of PLAN_ID, oldest first, with its attempts.
 * Returns 0 or -1. */
int store_notify_each(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_delivery *d, void *arg), void *arg, char *err,
    size_t errlen);

#endif
