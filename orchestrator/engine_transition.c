/* engine_transition: the engine's writes to the store: an event, a step's
 * or the plan's status with its event, each in one transaction with the
 * events a step's run handed over. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"
#include "step_kinds.h"

/* Appends an event with DETAILS (stolen; NULL: {}). Returns 0 or -1. */
int
engine__event(struct run *r, const char *actor, const char *kind, json_t *details)
{
	char *text = NULL;
	int rc;

	if (details != NULL)
		text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	rc = store_append_event(r->s, r->id, clock_now_ms(), actor, kind,
	    text != NULL ? text : "{}", NULL, r->err, r->errlen);
	free(text);
	json_decref(details);
	return rc;
}

/* step_event_sink_fn of the events a kind's EVENTS hook finds: each
 * recorded as it is found, in the open transaction of the run (ARG). */
static int
record_found(void *arg, const char *kind, json_t *details)
{
	return engine__event(arg, ACTOR, kind, details);
}

/* Records, inside the open transaction, the events step IDX's run handed
 * over (r->ctx.events), then, when the step has ENDED, those its kind's
 * EVENTS hook finds in RESULT (the run's result), each as it is found.
 * Returns 0 or -1. */
int
engine__record_step_events(struct run *r, int idx, const json_t *result, bool ended)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);
	struct step_events *ev = &r->ctx.events;
	int rc;

	for (size_t i = 0; i < ev->n; i++)
		if (engine__event(r, ACTOR, ev->v[i].kind, json_incref(ev->v[i].details)) != 0)
			return -1;
	if (!ended || sk == NULL || sk->events == NULL)
		return 0;
	ev->sink = record_found;
	ev->sink_arg = r;
	rc = sk->events(&r->ctx, result, r->err, r->errlen);
	ev->sink = NULL;
	ev->sink_arg = NULL;
	return rc;
}

/* Sets step IDX's status (times, result, error as store_step_update) and
 * appends event KIND with DETAILS, in one transaction; with RAN (the
 * result of the run of the step that ended it, or NULL), the rows (its
 * "entries": r->ctx.rows) and the events that run hands over are recorded
 * in that same transaction, before KIND.
 * Returns 0 or -1. */
int
engine__transition_ran(struct run *r, int idx, enum step_status status, int64_t started,
    int64_t ended, const char *result, const char *error, const char *actor,
    const char *kind, json_t *details, const json_t *ran)
{
	const struct plan_step *ps = &r->plan->steps[idx];

	if (details == NULL)
		details = json_object();
	json_object_set_new(details, "step", json_integer(idx + 1));
	json_object_set_new(details, "kind", json_string(plan_step_kind_name(ps->kind)));
	if (store_begin(r->s, r->err, r->errlen) != 0) {
		json_decref(details);
		return -1;
	}
	/* A run's result comes with the rows its list was handed as. */
	if (store_step_update_rows(r->s, r->id, idx, step_status_name(status), started,
	    ended, result, error, ran != NULL ? step_rows_source(&r->ctx.rows,
	    r->ctx.rows_kept) : step_rows_get, &r->ctx.rows,
	    ran != NULL ? r->ctx.rows.n : 0, r->err, r->errlen) != 0 ||
	    (ran != NULL && engine__record_step_events(r, idx, ran, true) != 0)) {
		json_decref(details);
		store_rollback(r->s);
		return -1;
	}
	if (engine__event(r, actor, kind, details) != 0) {
		store_rollback(r->s);
		return -1;
	}
	if (store_commit(r->s, r->err, r->errlen) != 0)
		return -1;
	log_event(status == STEP_STATUS_FAILED ? "error" : "info", r->plan->name,
	    plan_step_kind_name(ps->kind), "%s%s%s", kind, error ? ": " : "",
	    error ? error : "");
	return 0;
}

/* transition_ran for a transition no run of the step made. */
int
engine__transition(struct run *r, int idx, enum step_status status, int64_t started,
    int64_t ended,
    const char *result, const char *error, const char *actor, const char *kind,
    json_t *details)
{
	return engine__transition_ran(r, idx, status, started, ended, result, error, actor,
	    kind, details, NULL);
}

/* Sets the plan's status and appends event KIND, in one transaction. */
int
engine__plan_transition(struct run *r, enum plan_status status, const char *actor,
    const char *kind, json_t *details)
{
	if (store_begin(r->s, r->err, r->errlen) != 0) {
		json_decref(details);
		return -1;
	}
	if (store_plan_set_status(r->s, r->id, plan_status_name(status), r->err,
	    r->errlen) != 0 || engine__event(r, actor, kind, details) != 0) {
		store_rollback(r->s);
		return -1;
	}
	if (store_commit(r->s, r->err, r->errlen) != 0)
		return -1;
	log_event("info", r->plan->name, NULL, "%s", kind);
	return 0;
}

/* store_each_alert's callback: the open alert of ARG's kind. */
static int
open_of_kind(const struct store_alert *a, void *arg)
{
	struct engine_open_alert *o = arg;

	if (strcmp(a->kind, o->kind) != 0)
		return 0;
	o->id = a->id;
	snprintf(o->message, sizeof(o->message), "%s", a->message);
	return 1;
}

int
engine__alert_find_open(struct store *s, int64_t plan_id, struct engine_open_alert *o,
    char *err, size_t errlen)
{
	o->id = 0;
	o->message[0] = '\0';
	return store_each_alert(s, plan_id, 1, open_of_kind, o, err, errlen) < 0 ? -1 : 0;
}

void
engine__alert_close(struct store *s, int64_t plan_id, const char *plan_name,
    const char *kind, const char *why)
{
	struct engine_open_alert open = { .kind = kind };
	json_t *d = NULL;
	char err[512], *text = NULL;

	if (engine__alert_find_open(s, plan_id, &open, err, sizeof(err)) != 0)
		goto failed;
	if (open.id == 0)
		return;
	if ((d = json_pack("{s:I,s:s,s:s}", "alert", (json_int_t)open.id, "kind", kind,
	    "comment", why)) == NULL || (text = json_dumps(d, JSON_COMPACT)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_ack(s, plan_id, open.id, ACTOR, why, clock_now_ms(), err,
	    sizeof(err)) != 0 || store_alert_cause_gone(s, plan_id, kind, err,
	    sizeof(err)) != 0 || store_append_event(s, plan_id, clock_now_ms(), ACTOR,
	    "alert.acked", text, NULL, err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) != 0)
		goto failed;
	log_event("info", plan_name, NULL, "plan %lld: alert %s (id %lld) closed: %s",
	    (long long)plan_id, kind, (long long)open.id, why);
	goto done;
failed:
	log_event("error", plan_name, NULL, "closing plan %lld's %s alert: %s",
	    (long long)plan_id, kind, err);
done:
	free(text);
	json_decref(d);
}
