/* engine: runs plans step by step out of the store. Each step goes
 * pending -> waiting_approval (if gated) -> running -> succeeded | failed,
 * and the plan running -> succeeded | failed | aborted; every transition is
 * written in the same transaction as its event in the append-only history.
 * Operators act through command rows (approve, retry, abort, ack) that the
 * engine picks up, in order, each checked against the state it finds;
 * nothing else drives it. A database busy or locked past its timeout is
 * retried with backoff rather than failing the step, for up to
 * BUSY_BUDGET_MS (engine_busy.c) in a row; busy longer than that, the step
 * fails as on any other error. Killed at any instant, a run
 * resumes from the store: a running step starts again (each step is
 * written to be run again; flip and rollback read the flag before sending
 * again, step.h says how far that goes), a finished one never runs twice. */
#ifndef CUTOVER_ENGINE_H
#define CUTOVER_ENGINE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"
#include "store.h"

enum engine_outcome {
	ENGINE_SUCCEEDED,      /* every step succeeded */
	ENGINE_FAILED,         /* a step failed: waiting for retry or abort */
	ENGINE_ABORTED,        /* an operator aborted the plan */
	ENGINE_WAITING,        /* a gated step waits for approval */
	ENGINE_STOPPED,        /* asked to stop; resumes on the next run */
	ENGINE_DISK_FULL       /* the database's disk is full: stopped where it
	                        * was, resumes on the next run */
};

/* serve's workers: how many plans' turns run at once (engine_serve). */
#define ENGINE_WORKERS_DEFAULT	32
#define ENGINE_WORKERS_MAX	64

struct engine_opts {
	int poll_ms;                      /* command polling while blocked; 0: 500 */
	int workers;                      /* engine_serve: its workers, at most
	                                   * ENGINE_WORKERS_MAX; 0: the default */
	bool return_when_blocked;         /* return ENGINE_WAITING / ENGINE_FAILED
	                                   * instead of waiting for an operator */
	volatile sig_atomic_t *stop;      /* non-zero: return at the next safe point */
	/* Called (NULL: never) when the service itself is in trouble its
	 * database cannot record, and when that ends: EVENT "database_lost",
	 * "disk_full" or "disk_full_resolved", TEXT what and what to do
	 * (notify_service). */
	void (*service)(void *arg, const char *event, const char *text);
	void *service_arg;
};

/* Runs plan PLAN_ID until it ends, or, with O->return_when_blocked, until
 * it waits for an operator; or until *O->stop. Returns 0 and the outcome in
 * *OUTCOME, or -1 when the store or the plan could not be read (ERR). */
int engine_run(struct store *s, int64_t plan_id, const struct engine_opts *o,
    enum engine_outcome *outcome, char *err, size_t errlen);

/* The engine of `cutover serve` (engine_serve.c): a scheduler and a
 * bounded pool of workers. */
struct engine_pool;

/* Opens serve's engine on S with O->workers workers. A worker opens its
 * own connection to S's database at its first turn (store_open_again: on
 * the file S opened, or not at all), and only as many workers take turns
 * as there are turns due at once. Returns 0 and *OUT (engine_serve_close
 * frees it, also after -1), or -1 with ERR. */
int engine_serve_open(struct store *s, const struct engine_opts *o, struct engine_pool **out,
    char *err, size_t errlen);

/* Runs every plan of the store that is running (or failed, waiting for a
 * retry or an abort), picking up plans submitted meanwhile, until *O->stop
 * (O as given to engine_serve_open). The workers, each on its own
 * connection, turn the plans: each plan is turned by one worker at a
 * time, so its steps never run twice at once, and a plan whose broker or
 * flag service is slow to answer holds up only the worker turning it. A
 * plan that cannot run is logged and left; the others go on. Returns 0
 * when stopped, -1 when the store failed. */
int engine_serve(struct engine_pool *p, char *err, size_t errlen);

/* Stops P's workers once each has ended the turn it is in (a step in
 * flight runs to its end, or resumes on the next start), then closes
 * every run and connection and frees P (NULL is fine). */
void engine_serve_close(struct engine_pool *p);

/* The outcome's name ("succeeded", "waiting for approval", ...). */
const char *engine_outcome_name(enum engine_outcome o);

/* Finds a plan by REF: its numeric id, or its name (the newest plan of that
 * name). Returns 0, STORE_NOT_FOUND when there is none, -1 on failure. */
int engine_find_plan(struct store *s, const char *ref, struct store_plan *out,
    char *err, size_t errlen);

#endif
