/* notify: the serve configuration's notifiers, delivered by a thread of
 * their own so that the engine never waits on a webhook. The thread reads
 * what to send from the events table (through its own SQLite connection),
 * records one delivery per event and notifier and each attempt at it
 * (store_notify.h), and POSTs the body (notify_body.h), retrying with a
 * bounded, doubling backoff. A notifier is named in logs and records, its
 * URL never: an env:NAME reference is resolved at each attempt and wiped. */
#ifndef CUTOVER_NOTIFY_H
#define CUTOVER_NOTIFY_H

#include <stddef.h>

#include "serve_config.h"

struct notify;

/* Starts delivering C's notifiers (borrowed: it must outlive notify_stop)
 * from the database DB_PATH: each notifier's cursor is set before this
 * returns (a new notifier starts at the newest event), then the thread
 * runs. Returns 0 and *OUT to stop with notify_stop, or -1 with ERR. */
int notify_start(const char *db_path, const struct serve_config *c, struct notify **out,
    char *err, size_t errlen);

/* Stops the thread (a request in flight is abandoned, its delivery left
 * pending for the next start), joins it and frees N (NULL is fine). */
void notify_stop(struct notify *n);

#endif
