/* engine_busy: a database busy or locked (retried with backoff for a
 * while) or its disk full (held until space returns), and the service
 * callback that says so. */
#include <stdio.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"

/* A database busy or locked (another connection holding it past the busy
 * timeout) is retried with backoff, the step left where it was; only one
 * that stays so this long fails the step, or the run. */
#define BUSY_BUDGET_MS		(10 * 60 * 1000)
#define BUSY_BACKOFF_MIN_MS	250
#define BUSY_BACKOFF_MAX_MS	5000

/* Says EVENT and TEXT through O's service callback, when there is one. */
void
engine__service_say(const struct engine_opts *o, const char *event, const char *text)
{
	if (o->service != NULL)
		o->service(o->service_arg, event, text);
}

/* WHAT failed because the disk holding the database is full: nothing was
 * written, so the step holds where it was and runs again when space
 * returns, with no time limit (a person frees space; cutover cannot).
 * Said once, loudly, then retried every BUSY_BACKOFF_MAX_MS. Returns
 * true (the failure is held, not the step's). */
static bool
disk_full_hold(struct run *r, const char *what)
{
	char text[1400];

	if (!r->disk_full) {
		snprintf(text, sizeof(text), "%s: %s: the disk holding the database is "
		    "full; the plan is held where it was and goes on by itself once "
		    "space is freed there (nothing was recorded that did not happen)",
		    what, r->err);
		log_event("error", r->plan->name, NULL, "%s", text);
		engine__service_say(r->o, "disk_full", text);
	}
	r->disk_full = true;
	r->due_ms = clock_mono_ms() + BUSY_BACKOFF_MAX_MS;
	r->busy_now = 1;
	return true;
}

/* After a failure of WHAT: when it was the store busy or locked and has
 * not stayed so for BUSY_BUDGET_MS, schedules the next try (r->due_ms,
 * with backoff) and returns true; otherwise false (a real failure). */
bool
engine__busy_retry(struct run *r, const char *what)
{
	int64_t now = clock_mono_ms();

	if (!store_transient(r->s))
		return false;
	if (store_disk_full(r->s)) {
		store_transient_clear(r->s);
		return disk_full_hold(r, what);
	}
	store_transient_clear(r->s);
	if (r->busy_since_ms == 0) {
		r->busy_since_ms = now;
		r->busy_wait_ms = BUSY_BACKOFF_MIN_MS;
	} else if (now - r->busy_since_ms > BUSY_BUDGET_MS) {
		log_event("error", r->plan->name, NULL, "%s: the database has been busy for "
		    "%d s: %s", what, BUSY_BUDGET_MS / 1000, r->err);
		r->busy_since_ms = 0;
		return false;
	} else if ((r->busy_wait_ms *= 2) > BUSY_BACKOFF_MAX_MS)
		r->busy_wait_ms = BUSY_BACKOFF_MAX_MS;
	log_event("warn", r->plan->name, NULL, "%s: %s; trying again in %d ms (busy for "
	    "%lld ms)", what, r->err, r->busy_wait_ms, (long long)(now - r->busy_since_ms));
	r->due_ms = now + r->busy_wait_ms;
	r->busy_now = 1;
	return true;
}

/* After a turn: a turn that ended without a busy retry ends the streak. */
void
engine__busy_settle(struct run *r, int t)
{
	if (t >= 0 && !r->busy_now) {
		r->busy_since_ms = 0;
		if (r->disk_full) {
			r->disk_full = false;
			store_disk_full_resolved();
			log_event("info", r->plan->name, NULL, "the database's disk has "
			    "space again: the plan goes on");
			engine__service_say(r->o, "disk_full_resolved", "the database's disk has "
			    "space again: the plans held by it go on");
		}
	}
}
