/* flag_settle: what a plan's history says its flag must be, which of its
 * writes are in doubt, and the settle window: after a write in doubt,
 * after a rollback and after the plan ends, the engine keeps reading the
 * flag for flag.settle, and puts it back (one write at a time) when it
 * reads other than the recorded state says it must be. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "flag.h"
#include "log.h"
#include "step.h"

/* The event kinds that open (or extend) the settle window from their
 * time: a write in doubt, a rollback confirmed, the engine's own
 * restoring write and what it saw (and plan.aborted, below). A rollback
 * requested or failed alone does not: the abort was refused, the plan
 * goes on with its flag on, and any write of it that may still land is
 * a flag.in_doubt of its own. */
static const char *const window_kinds[] = {
	"flag.in_doubt", "rollback.confirmed", "flag.changed", "flag.restored",
	"flag.restore_failed", NULL
};

/* How late after its end a window may still be closed by a look (an
 * engine busy with other plans' steps looks late): later, it is left. */
#define SETTLE_GRACE_MS		(60 * 1000)

struct scan {
	struct step_flag_record *rec;
	int64_t settle_ms;
	bool flipped;                   /* a flip was ever requested */
	int64_t settled_until;          /* of the last flag.settled */
};

static bool
is_window_kind(const char *kind)
{
	for (size_t i = 0; window_kinds[i] != NULL; i++)
		if (strcmp(kind, window_kinds[i]) == 0)
			return true;
	return false;
}

static void
widen(struct scan *sc, int64_t ts)
{
	if (ts + sc->settle_ms > sc->rec->settle_until_ms)
		sc->rec->settle_until_ms = ts + sc->settle_ms;
}

static int
scan_event(const struct store_event *ev, void *arg)
{
	struct scan *sc = arg;
	struct step_flag_record *rec = sc->rec;
	const char *k = ev->kind, *rb;
	json_t *d = NULL;

	if (strncmp(k, "flip.", 5) != 0 && strncmp(k, "rollback.", 9) != 0 &&
	    strncmp(k, "flag.", 5) != 0 && strcmp(k, "plan.aborted") != 0)
		return 0;
	d = json_loads(ev->details_json, 0, NULL);
	/* The rollback the window itself confirms at its end does not open
	 * another. */
	if (is_window_kind(k) && !json_is_true(json_object_get(d, "by_settle")))
		widen(sc, ev->ts_ms);
	if (strcmp(k, "flip.requested") == 0) {
		sc->flipped = true;
		rec->must_be = STEP_FLAG_OFF;   /* not switched until confirmed */
		rec->why = "the flip is not confirmed: producers publish to the old path";
	} else if (strcmp(k, "flip.confirmed") == 0) {
		rec->must_be = STEP_FLAG_ON;
		rec->why = "the flip is confirmed: producers publish to the ladder";
		if (rec->doubt_want == STEP_FLAG_ON)
			rec->doubt_want = -1;   /* read as wanted: resolved */
	} else if (strcmp(k, "flip.failed") == 0) {
		rec->must_be = STEP_FLAG_OFF;
		rec->why = "the flip failed: producers publish to the old path";
	} else if (strcmp(k, "rollback.confirmed") == 0) {
		rec->must_be = STEP_FLAG_OFF;
		rec->why = "the flag was rolled back: producers publish to the old path";
		rec->rollback_unconfirmed = false;
		if (rec->doubt_want == STEP_FLAG_OFF)
			rec->doubt_want = -1;
	} else if (strcmp(k, "flag.in_doubt") == 0) {
		rec->doubt_want = json_is_true(json_object_get(d, "on")) ? STEP_FLAG_ON :
		    STEP_FLAG_OFF;
		rec->doubt_until_ms = ev->ts_ms + sc->settle_ms;
	} else if (strcmp(k, "flag.restored") == 0) {
		if (rec->doubt_want == rec->must_be)
			rec->doubt_want = -1;
	} else if (strcmp(k, "flag.settled") == 0) {
		sc->settled_until = json_integer_value(json_object_get(d, "until_ms"));
	} else if (strcmp(k, "plan.aborted") == 0 && sc->flipped) {
		/* The plan's end: the window runs on past it. */
		widen(sc, ev->ts_ms);
		rb = json_string_value(json_object_get(d, "rollback"));
		if (rb != NULL && strncmp(rb, "skipped", 7) == 0) {
			rec->must_be = STEP_FLAG_ON;
			rec->why = "the plan was aborted while old queues were being removed: "
			    "producers stay on the ladder";
		} else {
			rec->must_be = STEP_FLAG_OFF;
			rec->why = "the plan was aborted: producers publish to the old path";
			rec->rollback_unconfirmed = rb != NULL &&
			    strncmp(rb, "in doubt", 8) == 0;
		}
	}
	json_decref(d);
	return 0;
}

int
step_flag_record(struct store *s, const struct plan *p, int64_t plan_id,
    struct step_flag_record *rec, char *err, size_t errlen)
{
	struct scan sc = { rec, p->flag.settle_ms, false, 0 };

	memset(rec, 0, sizeof(*rec));
	rec->must_be = -1;
	rec->doubt_want = -1;
	if (store_each_event(s, plan_id, scan_event, &sc, err, errlen) != 0)
		return -1;
	if (rec->doubt_want < 0)
		rec->doubt_until_ms = 0;
	rec->settled = rec->settle_until_ms == 0 || sc.settled_until >= rec->settle_until_ms;
	return 0;
}

bool
step_flag_in_doubt(const struct step_flag_record *rec, int64_t now_ms)
{
	return rec->doubt_want >= 0 && rec->doubt_until_ms > now_ms;
}

/* Appends KIND with DETAILS (stolen) to C's plan. Returns 0 or -1. */
static int
append(struct step_ctx *c, const char *kind, json_t *details, char *err, size_t errlen)
{
	char *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc = store_append_event(c->store, c->plan_id, clock_now_ms(), "engine", kind,
	    text != NULL ? text : "{}", NULL, err, errlen);

	free(text);
	json_decref(details);
	return rc;
}

int
step_flag_doubt_record(struct step_ctx *c, bool on, const json_t *result,
    const char *why, char *err, size_t errlen)
{
	int64_t until = clock_now_ms() + c->plan->flag.settle_ms;

	return append(c, "flag.in_doubt", json_pack("{s:b,s:s,s:s,s:I,s:I,s:O?}", "on", on,
	    "want", on ? "on" : "off", "error", why, "settle_ms",
	    (json_int_t)c->plan->flag.settle_ms, "settle_until_ms", (json_int_t)until,
	    "attempts", json_object_get(result, "attempts")), err, errlen);
}

/* Raises the alert flag_changed with MSG, and records alert.raised when it
 * is new. Returns 0 or -1. */
static int
alert_changed(struct step_ctx *c, const char *msg, char *err, size_t errlen)
{
	int64_t id = 0;
	bool raised = false;

	if (store_alert_raise(c->store, c->plan_id, "flag_changed", msg, clock_now_ms(),
	    &id, &raised, err, errlen) != 0)
		return -1;
	if (!raised)
		return 0;
	log_event("warn", c->plan->name, NULL, "alert flag_changed raised (id %lld): %s; "
	    "once understood: cutover ack %s %lld", (long long)id, msg, c->plan->name,
	    (long long)id);
	return append(c, "alert.raised", json_pack("{s:s,s:s,s:I}", "alert", "flag_changed",
	    "message", msg, "alert_id", (json_int_t)id), err, errlen);
}

/* The flag reads ST (on or off) where REC says it must be the other way:
 * says so (alert, flag.changed) and writes it back, one write: unless a
 * write that way is in doubt still (it may yet land; another would be a
 * second in flight). Returns 0 or -1 when the store failed. */
static int
put_back(struct step_ctx *c, const struct step_flag_record *rec, int st, int64_t now,
    char *err, size_t errlen)
{
	bool on = rec->must_be == STEP_FLAG_ON;
	char desc[400], msg[1200], ferr[1024];
	json_t *res = NULL;
	int rc;

	if (step_flag_in_doubt(rec, now) && rec->doubt_want == rec->must_be)
		return 0;
	step_flag_describe(c->plan, desc, sizeof(desc));
	snprintf(msg, sizeof(msg), "%s reads %s, but the recorded state says it must be %s "
	    "(%s): turning it %s again", desc, st == STEP_FLAG_ON ? "on" : "off",
	    on ? "on" : "off", rec->why != NULL ? rec->why : "", on ? "on" : "off");
	if (alert_changed(c, msg, err, errlen) != 0 ||
	    append(c, "flag.changed", json_pack("{s:s,s:s,s:s}", "read", st == STEP_FLAG_ON ?
	    "on" : "off", "must_be", on ? "on" : "off", "message", msg), err, errlen) != 0)
		return -1;
	log_event("warn", c->plan->name, NULL, "flag.changed: %s", msg);
	if ((rc = flag_switch(c->plan, on, &res, ferr, sizeof(ferr))) == 0) {
		log_event("info", c->plan->name, NULL, "flag.restored: %s", on ? "on" : "off");
		rc = append(c, "flag.restored", json_pack("{s:s,s:O?}", "to", on ? "on" : "off",
		    "result", res), err, errlen);
	} else if (json_is_true(json_object_get(res, "in_doubt"))) {
		log_event("warn", c->plan->name, NULL, "flag.in_doubt: %s", ferr);
		rc = step_flag_doubt_record(c, on, res, ferr, err, errlen);
	} else {
		log_event("error", c->plan->name, NULL, "flag.restore_failed: %s", ferr);
		rc = append(c, "flag.restore_failed", json_pack("{s:s,s:s,s:O?}", "to",
		    on ? "on" : "off", "error", ferr, "result", res), err, errlen);
	}
	json_decref(res);
	return rc;
}

int
step_flag_settle(struct step_ctx *c, bool *open, int64_t *until_ms, char *err,
    size_t errlen)
{
	struct step_flag_record rec;
	int64_t now = clock_now_ms();
	char why[800];
	int st;

	*open = false;
	*until_ms = 0;
	if (!flag_configured(c->plan) ||
	    step_flag_record(c->store, c->plan, c->plan_id, &rec, err, errlen) != 0)
		return flag_configured(c->plan) ? -1 : 0;
	/* A window that ended more than a grace ago ended while no engine
	 * ran: nothing can be told of it now, and a write now could undo
	 * what was done to the flag since (by another plan on it). */
	if (rec.must_be < 0 || rec.settled || now >= rec.settle_until_ms + SETTLE_GRACE_MS)
		return 0;
	*open = true;
	*until_ms = rec.settle_until_ms;
	st = step_flag_check(c->plan, why, sizeof(why));
	if (st == STEP_FLAG_UNREADABLE) {
		if (now < rec.settle_until_ms)
			return 0;
		/* The window is over and the flag cannot be told: say so and
		 * stop, rather than keep a finished plan's run forever. */
		*open = false;
		return append(c, "flag.settled", json_pack("{s:s,s:s,s:s,s:I,s:I}", "must_be",
		    rec.must_be ? "on" : "off", "read", "unreadable", "why", why, "settle_ms",
		    (json_int_t)c->plan->flag.settle_ms, "until_ms",
		    (json_int_t)rec.settle_until_ms), err, errlen);
	}
	if (st != rec.must_be)
		return put_back(c, &rec, st, now, err, errlen);
	if (now < rec.settle_until_ms)
		return 0;
	*open = false;
	if (append(c, "flag.settled", json_pack("{s:s,s:s,s:I,s:I}", "must_be",
	    rec.must_be ? "on" : "off", "read", rec.must_be ? "on" : "off", "settle_ms",
	    (json_int_t)c->plan->flag.settle_ms, "until_ms", (json_int_t)rec.settle_until_ms),
	    err, errlen) != 0)
		return -1;
	if (!rec.rollback_unconfirmed)
		return 0;
	return append(c, "rollback.confirmed", json_pack("{s:b,s:b,s:s,s:I,s:o}", "ok", 1,
	    "by_settle", 1, "confirmed_by", "settle window: no write in doubt can land any more, and the "
	    "flag reads off", "settle_ms", (json_int_t)c->plan->flag.settle_ms, "flag",
	    flag_history(c->plan)), err, errlen);
}
