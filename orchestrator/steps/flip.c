/* flip: turns the plan's feature flag on (flip) or off (rollback) with the
 * intent recorded before the call and the confirmation after, so that a
 * transition is never recorded without a read-back and not sent again
 * once the flag reads as wanted: once any switch is recorded, or the
 * database was restored from a backup (a switch may have been made after
 * the backup's last event), the flag is read before each send, and a flag already as wanted is not sent again
 * (a toggle-style service would undo it). flag_switch itself repeats a
 * write that got a 5xx only after reading it back not taken, and never
 * one that got no answer (flag.h): that write is in doubt, recorded as
 * flag.in_doubt, and until its settle window (flag.settle) ends nothing
 * is confirmed against it and no other write is sent the same way: the
 * flip waits (runs again) reading the flag, a rollback answers
 * STEP_FLAG_IN_DOUBT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "errbuf.h"
#include "fault.h"
#include "flag.h"
#include "step.h"

struct intent {
	const char *names[4];      /* the event kinds looked for */
	int last;                  /* index into NAMES of the latest, or -1 */
	bool restored;             /* a restore is recorded after it (or with
	                            * none of them) */
};

static int
scan_event(const struct store_event *ev, void *arg)
{
	struct intent *in = arg;

	if (strcmp(ev->kind, STORE_EVENT_RESTORED) == 0)
		in->restored = true;
	for (int i = 0; i < 4; i++)
		if (strcmp(ev->kind, in->names[i]) == 0) {
			in->last = i;
			in->restored = false;
		}
	return 0;
}

/* The latest of the four flag events of PLAN_ID: 0 flip.requested,
 * 1 flip.confirmed, 2 rollback.requested, 3 rollback.confirmed; -1 none.
 * *RESTORED: the database was restored from a backup after it (or with
 * none recorded), so the flag may have been switched since. */
static int
last_intent(struct store *s, int64_t plan_id, int *last, bool *restored, char *err,
    size_t errlen)
{
	struct intent in = { { "flip.requested", "flip.confirmed", "rollback.requested",
	    "rollback.confirmed" }, -1, false };

	if (store_each_event(s, plan_id, scan_event, &in, err, errlen) != 0)
		return -1;
	*last = in.last;
	*restored = in.restored;
	return 0;
}

int
step_flip_is_on(struct store *s, int64_t plan_id, bool *on, char *err, size_t errlen)
{
	int last;
	bool restored;

	*on = false;
	if (last_intent(s, plan_id, &last, &restored, err, errlen) != 0)
		return -1;
	/* A rollback requested but not confirmed may or may not have taken,
	 * and a flip may have been made after the backup a restore came
	 * from: believe the flag on until a read-back says otherwise. */
	*on = last == 0 || last == 1 || last == 2 || restored;
	return 0;
}

static int
append(struct step_ctx *c, const char *kind, json_t *details)
{
	char err[256], *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc = store_append_event(c->store, c->plan_id, clock_now_ms(), "engine", kind,
	    text != NULL ? text : "{}", NULL, err, sizeof(err));

	free(text);
	json_decref(details);
	return rc;
}

/* After a recorded intent (any of the four events) the flag may be in
 * either state whatever the history says last: a kill or a store error
 * can fall between the flag service taking a switch and its record, or
 * between the confirmation and the step's record. Reads the flag: returns
 * 0 with *ALREADY true when it already is as wanted (*RESULT set), false
 * when it is the other way (send); -1 when it cannot be told (an unread
 * flag is never switched blind: a toggle-style service would undo a
 * switch that took). */
static int
already_switched(struct step_ctx *c, bool on, bool *already, json_t **result,
    char *err, size_t errlen)
{
	json_t *read = NULL;
	int state;

	*already = false;
	if (flag_read(c->plan, &state, &read, err, errlen) != 0) {
		json_decref(read);
		return -1;
	}
	if (state < 0) {
		errbuf_set(err, errlen, "the flag reads neither on nor off; it is not switched "
		    "%s blind", on ? "on" : "off");
		json_decref(read);
		return -1;
	}
	if (state != (on ? 1 : 0)) {
		json_decref(read);
		return 0;
	}
	*result = json_pack("{s:b,s:s,s:o,s:o}", "ok", 1, "confirmed_by",
	    "read-back before sending: the flag was already so", "flag", flag_history(c->plan),
	    "read_back", read);
	*already = true;
	return 0;
}

/* The switch to ON waits for a write in doubt (REC): sets C to run
 * again with a result saying why. Returns 0, or STEP_FLAG_IN_DOUBT for a
 * rollback (an abort, which does not wait). */
static int
wait_doubt(struct step_ctx *c, bool on, const struct step_flag_record *rec,
    json_t **result, const char *reads)
{
	char until[64], status[512];
	time_t t = (time_t)(rec->doubt_until_ms / 1000);
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(status, sizeof(status), "waiting: a write turning the flag %s got no "
	    "answer and may still land until %s (flag.settle %lld s); the flag reads %s, "
	    "and nothing is sent while the write is in doubt", rec->doubt_want ? "on" : "off",
	    until, (long long)(c->plan->flag.settle_ms / 1000), reads);
	json_decref(*result);
	*result = json_pack("{s:b,s:s,s:b,s:I,s:I,s:o}", "ok", 0, "status", status,
	    "in_doubt", 1, "doubt_until_ms", (json_int_t)rec->doubt_until_ms, "settle_ms",
	    (json_int_t)c->plan->flag.settle_ms, "flag", flag_history(c->plan));
	if (!on)
		return STEP_FLAG_IN_DOUBT;
	c->again = true;
	return 0;
}

static int
switch_recorded(struct step_ctx *c, bool on, json_t **result, char *err, size_t errlen)
{
	const char *req = on ? "flip.requested" : "rollback.requested";
	const char *conf = on ? "flip.confirmed" : "rollback.confirmed";
	const char *failed = on ? "flip.failed" : "rollback.failed";
	struct step_flag_record rec;
	int want = on ? STEP_FLAG_ON : STEP_FLAG_OFF;
	bool done, doubt, restored;
	int last, rc;

	*result = NULL;
	if (!flag_configured(c->plan)) {
		errbuf_set(err, errlen, "the plan has no flag to switch");
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	if (c->store == NULL)
		return flag_switch(c->plan, on, result, err, errlen);
	if (last_intent(c->store, c->plan_id, &last, &restored, err, errlen) != 0 ||
	    step_flag_record(c->store, c->plan, c->plan_id, &rec, err, errlen) != 0)
		return -1;
	doubt = step_flag_in_doubt(&rec, clock_now_ms());
	if (last >= 0 || doubt || restored) {
		/* Read first; send only if it is not yet as wanted. */
		if (already_switched(c, on, &done, result, err, errlen) != 0) {
			*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
			return -1;
		}
		/* As wanted, but a write the other way may still land: not
		 * confirmed until the settle window says. */
		if (done && doubt && rec.doubt_want != want) {
			if (last != (on ? 0 : 2) && append(c, req, json_pack("{s:o,s:b}",
			    "flag", flag_history(c->plan), "on", on)) != 0)
				return -1;
			return wait_doubt(c, on, &rec, result, on ? "on" : "off");
		}
		if (done && last == (on ? 1 : 3))
			return 0;               /* confirmed and recorded already */
		if (done)
			return append(c, conf, json_deep_copy(*result)) == 0 ? 0 : -1;
		/* Not as wanted while a write this way is in doubt: another
		 * would be a second in flight. */
		if (doubt && rec.doubt_want == want)
			return wait_doubt(c, on, &rec, result, on ? "off" : "on");
		if (json_is_true(json_object_get(c->state, "in_doubt"))) {
			errbuf_set(err, errlen, "the write turning the flag %s got no answer, and "
			    "the flag still reads %s at the end of its settle window (%lld s): "
			    "it did not take. Retry the step to send it again, or abort the plan",
			    on ? "on" : "off", on ? "off" : "on",
			    (long long)(c->plan->flag.settle_ms / 1000));
			*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
			append(c, failed, json_pack("{s:s}", "error", err));
			return -1;
		}
	}
	if (last != (on ? 0 : 2) && append(c, req, json_pack("{s:o,s:b}", "flag",
	    flag_history(c->plan), "on", on)) != 0) {
		errbuf_set(err, errlen, "recording the %s request failed", on ? "flip" : "rollback");
		return -1;
	}
	if ((rc = flag_switch(c->plan, on, result, err, errlen)) != 0) {
		if (rc == FLAG_ERR_UNCONFIRMED &&
		    json_is_true(json_object_get(*result, "in_doubt"))) {
			if (step_flag_doubt_record(c, on, *result, err, err, errlen) != 0 ||
			    step_flag_record(c->store, c->plan, c->plan_id, &rec, err,
			    errlen) != 0)
				return -1;
			return wait_doubt(c, on, &rec, result, on ? "off" : "on");
		}
		/* Each write's outcome goes into the history, not only the
		 * step's result. */
		append(c, failed, json_pack("{s:s,s:O?}", "error", err, "attempts",
		    json_object_get(*result, "attempts")));
		return -1;
	}
	json_object_set_new(*result, "flag", flag_history(c->plan));
	fault_point(conf);              /* the flag took it; the record has not */
	if (append(c, conf, json_deep_copy(*result)) != 0)
		return -1;
	/* Confirmed and recorded; the step's own record has not been made. */
	fault_point(on ? "flip.confirmed.recorded" : "rollback.confirmed.recorded");
	return 0;
}

int
step_flip(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	return switch_recorded(c, true, result, err, errlen);
}

int
step_rollback(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	return switch_recorded(c, false, result, err, errlen);
}
