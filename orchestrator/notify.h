/* notify: the serve configuration's notifiers, delivered by threads of
 * their own so that the engine never waits on a webhook, and each notifier
 * by a thread of its own so that no receiver waits on another: one that
 * takes a request and never answers holds up only its own deliveries. A
 * notifier's thread reads what to send from the events table (through its
 * own SQLite connection), records one delivery per event and notifier and
 * each attempt at it (store_notify.h), and POSTs the body (notify_body.h),
 * retrying with a bounded, doubling backoff. The deliveries waiting are
 * rows in the database, not memory: a thread holds one at a time. A
 * notifier is named in logs and records, its URL never: an env:NAME
 * reference is resolved at each attempt and wiped. */
#ifndef CUTOVER_NOTIFY_H
#define CUTOVER_NOTIFY_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "serve_config.h"

/* How long notify_flush waits at most by default: one request's timeout
 * and some, so that a receiver that never answers costs it once. */
#define NOTIFY_FLUSH_MS		15000

struct notify;

/* Starts delivering C's notifiers (borrowed: it must outlive notify_stop)
 * from the database DB_PATH: each notifier's cursor is set before this
 * returns (a new notifier starts at the newest event), then its thread
 * runs. Returns 0 and *OUT to stop with notify_stop, or -1 with ERR. */
int notify_start(const char *db_path, const struct serve_config *c, struct notify **out,
    char *err, size_t errlen);

/* Waits until every notifier has looked at the events up to UPTO (an
 * event id) and has nothing due left to send: each delivery tried at
 * least once, a failed try waiting for its backoff. Gives up after
 * TIMEOUT_MS, or once *STOP (NULL: never) is set. What `cutover run` calls
 * before it exits, so that what its run recorded is sent. Returns how many
 * notifiers had not settled (0: all had). */
size_t notify_flush(struct notify *n, int64_t upto, int64_t timeout_ms,
    const volatile sig_atomic_t *stop);

/* Says EVENT ("database_lost", "disk_full", "disk_full_resolved") with
 * TEXT (what happened and what to do) to every notifier, whatever events
 * it takes: a condition of the service itself, which the database cannot
 * record because it is the database that failed. So it is held in memory
 * only, one per notifier (a newer one replaces one not yet delivered),
 * tried with the notifier's attempts and backoff, and each outcome
 * logged. The event said last is not said again: several plans held by
 * one full disk make one notification, and a "_resolved" one goes only
 * after its condition was said. N NULL: nothing. */
void notify_service(struct notify *n, const char *event, const char *text);

/* notify_service with N as ARG: the engine's service callback
 * (engine_opts.service). */
void notify_service_cb(void *arg, const char *event, const char *text);

/* Stops the threads (a request in flight is abandoned, its delivery left
 * pending for the next start), joins them and frees N (NULL is fine). */
void notify_stop(struct notify *n);

#endif
