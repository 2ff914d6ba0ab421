/* view: JSON documents of the store's plans, steps, history and samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alert_kinds.h"
#include "errbuf.h"
#include "export.h"
#include "plan.h"
#include "view.h"
#include "view_result.h"
#include "view_gate.h"
#include "view_notify.h"
#include "view_holds.h"

#define STEPS_MAX	1000	/* as the CLI: no plan has more */

/* A time in ms, or null for "not yet" (0). */
static json_t *
ms_or_null(int64_t ms)
{
	return ms != 0 ? json_integer((json_int_t)ms) : json_null();
}

/* Parsed JSON text, or (when it does not parse) the text as a string. */
static json_t *
parsed(const char *text)
{
	json_t *j;

	if (text == NULL)
		return json_null();
	if ((j = json_loads(text, JSON_DECODE_ANY, NULL)) != NULL)
		return j;
	return view_string(text);
}

static json_t *
plan_summary(const struct store_plan *p)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer((json_int_t)p->id));
	json_object_set_new(o, "name", view_string(p->name));
	json_object_set_new(o, "status", view_string(p->status));
	json_object_set_new(o, "created_ms", json_integer((json_int_t)p->created_ms));
	json_object_set_new(o, "sha256", view_string(p->sha256));
	json_object_set_new(o, "archived_ms", ms_or_null(p->archived_ms));
	return o;
}

struct list {
	struct store *s;
	const char *name;
	json_t *plans;
	char *err;
	size_t errlen;
	int failed;
};

/* The step plan ID is at, as {"n", "kind", "status", "started_ms"}, or
 * JSON null when it has no steps: read without the steps' results, which
 * can be megabytes. Returns it, or NULL with ERR. */
static json_t *
current_step(struct store *s, int64_t id, char *err, size_t errlen)
{
	struct store_step st;
	int r;

	if ((r = store_step_current(s, id, &st, err, errlen)) == STORE_NOT_FOUND)
		return json_null();
	if (r != 0)
		return NULL;
	return json_pack("{s:i,s:o,s:o,s:o}", "n", st.idx + 1, "kind",
	    view_string(st.kind), "status", view_string(st.status), "started_ms",
	    ms_or_null(st.started_ms));
}

/* Adds open alert A to the JSON array ARG (defined with the plan's
 * document, below). */
static int open_alert(const struct store_alert *a, void *arg);

/* Adds P to the list with "current", so that a list of plans never needs
 * their documents. */
static int
list_plan(const struct store_plan *p, void *arg)
{
	struct list *l = arg;
	json_t *o, *cur, *alerts = NULL;

	if (l->name != NULL && strcmp(l->name, p->name) != 0)
		return 0;
	if ((cur = current_step(l->s, p->id, l->err, l->errlen)) == NULL) {
		l->failed = 1;
		return 1;
	}
	o = plan_summary(p);
	json_object_set_new(o, "current", cur);
	if ((alerts = json_array()) == NULL ||
	    store_each_alert(l->s, p->id, 1, open_alert, alerts, l->err, l->errlen) < 0) {
		json_decref(alerts);
		json_decref(o);
		l->failed = 1;
		return 1;
	}
	/* The holds read the alerts; the list carries only their count. */
	json_object_set_new(o, "alerts", alerts);
	if (view_holds(o) != 0) {
		json_decref(o);
		errbuf_set(l->err, l->errlen, "out of memory");
		l->failed = 1;
		return 1;
	}
	json_object_set_new(o, "alerts_open", json_integer((json_int_t)json_array_size(alerts)));
	json_object_del(o, "alerts");
	json_object_set_new(o, "attention", json_string(view_holds_rank_name(
	    view_holds_rank(o))));
	json_array_append_new(l->plans, o);
	return 0;
}

/* PLANS (newest first) in the order a person should look at them
 * (view_holds_rank), newest first within each rank: a new reference. */
static json_t *
by_need(json_t *plans)
{
	json_t *sorted = json_array(), *o;
	size_t i;

	for (int rank = VIEW_HOLD_GATE; sorted != NULL && rank < VIEW_HOLD_RANKS; rank++)
		json_array_foreach(plans, i, o)
			if ((int)view_holds_rank(o) == rank)
				json_array_append(sorted, o);
	return sorted;
}

int
view_plan_list(struct store *s, const char *name, json_t **out, char *err, size_t errlen)
{
	struct list l = { s, name, json_array(), err, errlen, 0 };
	json_t *counts = NULL, *sorted;

	*out = NULL;
	if (l.plans == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	if (store_each_plan(s, list_plan, &l, err, errlen) != 0 || l.failed ||
	    view_notify_counts(s, 0, &counts, err, errlen) != 0) {
		json_decref(l.plans);
		return -1;
	}
	sorted = by_need(l.plans);
	json_decref(l.plans);
	*out = json_pack("{s:o,s:o}", "plans", sorted, "deliveries", counts);
	if (*out == NULL)
		errbuf_set(err, errlen, "out of memory");
	return *out != NULL ? 0 : -1;
}

/* What the history says about each step: who approved or retried it. */
struct decisions {
	json_t *steps;                 /* the plan's step objects, borrowed */
};

static int
decision(const struct store_event *ev, void *arg)
{
	struct decisions *d = arg;
	const char *who, *when, *comment = NULL;
	json_t *details, *step, *c;
	json_int_t n;

	if (strcmp(ev->kind, "step.approved") == 0 ||
	    strcmp(ev->kind, "step.approved_ahead") == 0) {
		who = "approved_by";
		when = "approved_ms";
		comment = "approval_comment";
	} else if (strcmp(ev->kind, "step.retry") == 0) {
		who = "retried_by";
		when = "retried_ms";
	} else
		return 0;
	if ((details = json_loads(ev->details_json, 0, NULL)) == NULL)
		return 0;
	n = json_integer_value(json_object_get(details, "step"));
	if (n >= 1 && (size_t)n <= json_array_size(d->steps)) {
		step = json_array_get(d->steps, (size_t)n - 1);
		json_object_set_new(step, who, view_string(ev->actor));
		json_object_set_new(step, when, json_integer((json_int_t)ev->ts_ms));
		if (comment != NULL) {
			c = json_object_get(details, "comment");
			json_object_set(step, comment, json_is_string(c) ? c : json_null());
			/* given before the step was reached (recorded as such) */
			if (strcmp(ev->kind, "step.approved_ahead") == 0 ||
			    json_is_true(json_object_get(details, "ahead")))
				json_object_set_new(step, "approved_ahead", json_true());
		}
	}
	json_decref(details);
	return 0;
}

/* The gate of a step object, from its gate, status and the decisions. */
static const char *
gate_state(const json_t *step)
{
	const char *status = json_string_value(json_object_get(step, "status"));

	if (!json_is_true(json_object_get(step, "gate")))
		return "none";
	if (status != NULL && strcmp(status, "waiting_approval") == 0)
		return "waiting";
	if (status != NULL && strcmp(status, "pending") == 0)
		return json_is_true(json_object_get(step, "approved_ahead")) ?
		    "approved_ahead" : "closed";
	if (!json_is_null(json_object_get(step, "approved_by")) ||
	    !json_is_null(json_object_get(step, "retried_by")))
		return "approved";
	return "open";
}

/* What the page shows of a step of KIND that has no view of its own there
 * (the step-kind table's SHOWS) as [{"label","pointer"}], or NULL. */
static json_t *
step_shows(const char *kind)
{
	enum plan_step_kind k;
	const char *cur;
	char label[64], pointer[128];
	json_t *a;

	if (plan_step_kind_parse(kind, &k) != 0 || (cur = plan_step_kind_shows(k)) == NULL)
		return NULL;
	a = json_array();
	while (plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)) == 0)
		json_array_append_new(a, json_pack("{s:s,s:s}", "label", label, "pointer",
		    pointer));
	return a;
}

/* Reads step IDX of plan ID into ST for the plan document: apart from
 * the rows of its long list when the document would leave that list out
 * anyway (*NROWS of them, in its member *MEMBER), else whole. At 100,000
 * old queues, joining the rows is tens of megabytes of text for every
 * reader of the document. Returns store_step_get's codes. */
static int
step_read(struct store *s, int64_t id, int idx, struct store_step *st,
    const char **member, int64_t *nrows, char *err, size_t errlen)
{
	int64_t n = 0, bytes = 0;
	int r;

	*nrows = 0;
	if ((r = store_step_get_apart(s, id, idx, st, err, errlen)) != 0)
		return r;
	/* Without the member its rows go in, it keeps none; without rows,
	 * the text is the whole result. */
	if ((*member = store_json_rows_member(st->result_json)) == NULL)
		return 0;
	if (store_step_rows_size(s, id, idx, &n, &bytes, err, errlen) != 0) {
		store_step_clear(st);
		return -1;
	}
	if (n == 0)
		return 0;
	if (VIEW_ROWS_APART(n, bytes, (int64_t)strlen(st->result_json))) {
		*nrows = n;
		return 0;
	}
	store_step_clear(st);
	return store_step_get(s, id, idx, st, err, errlen);
}

/* Step ST as the plan document carries it; its list MEMBER was left in
 * the store's NROWS rows (0: none left out, step_read). */
static json_t *
step_object(const struct store_step *st, const char *member, int64_t nrows)
{
	json_t *o = json_object(), *shows, *brief, *elided;

	json_object_set_new(o, "n", json_integer(st->idx + 1));
	json_object_set_new(o, "kind", view_string(st->kind));
	json_object_set_new(o, "status", view_string(st->status));
	json_object_set_new(o, "gate", json_boolean(st->gate));
	json_object_set_new(o, "gate_state", json_null());
	json_object_set_new(o, "started_ms", ms_or_null(st->started_ms));
	json_object_set_new(o, "ended_ms", ms_or_null(st->ended_ms));
	if (nrows > 0)
		view_result_brief_apart(st->result_json, member, nrows, &brief, &elided);
	else
		view_result_brief(st->result_json, &brief, &elided);
	json_object_set_new(o, "result", brief != NULL ? brief : parsed(st->result_json));
	if (elided != NULL) {
		char url[96];

		snprintf(url, sizeof(url), "/api/plans/%lld/steps/%d/result",
		    (long long)st->plan_id, st->idx + 1);
		json_object_set_new(o, "result_elided", elided);
		json_object_set_new(o, "result_url", json_string(url));
	}
	json_object_set_new(o, "error", view_string(st->error));
	json_object_set_new(o, "approved_by", json_null());
	json_object_set_new(o, "approved_ms", json_null());
	json_object_set_new(o, "approval_comment", json_null());
	json_object_set_new(o, "approved_ahead", json_false());
	json_object_set_new(o, "retried_by", json_null());
	json_object_set_new(o, "retried_ms", json_null());
	if ((shows = step_shows(st->kind)) != NULL)
		json_object_set_new(o, "shows", shows);
	return o;
}

static int
open_alert(const struct store_alert *a, void *arg)
{
	json_t *o = json_object();

	json_object_set_new(o, "id", json_integer((json_int_t)a->id));
	json_object_set_new(o, "kind", view_string(a->kind));
	json_object_set_new(o, "message", view_string(a->message));
	json_object_set_new(o, "raised_ms", json_integer((json_int_t)a->raised_ms));
	json_object_set_new(o, "last_ms", json_integer((json_int_t)a->last_ms));
	json_object_set_new(o, "count", json_integer((json_int_t)a->count));
	view_alert_facts(o, a->kind, a->cause_present);
	json_array_append_new(arg, o);
	return 0;
}

void
view_alert_facts(json_t *o, const char *kind, bool cause)
{
	const struct alert_kind *k = alert_kind_find(kind);

	/* A kind the table lacks (an older cutover's) has nothing to say;
	 * one the engine does not follow has no cause to say gone. */
	if (k == NULL)
		return;
	json_object_set_new(o, "means", view_string(k->means));
	json_object_set_new(o, "check", view_string(k->check));
	json_object_set_new(o, "clear", view_string(k->clear));
	if (k->closes != ALERT_CLOSES_NEVER)
		json_object_set_new(o, "cause_present", json_boolean(cause));
}

void
view_ack_cause(struct store *s, int64_t plan, int64_t alert, json_t *doc)
{
	struct store_alert a;
	const struct alert_kind *k;
	char err[256], text[1024];

	if (store_alert_get(s, plan, alert, &a, err, sizeof(err)) != 0)
		return;
	json_object_set_new(doc, "cause_present", json_boolean(a.cause_present));
	if (!a.cause_present || (k = alert_kind_find(a.kind)) == NULL)
		return;
	json_object_set_new(doc, "cause", view_string(alert_still_there(k, (long long)a.id,
	    text, sizeof(text))));
}

int
view_plan(struct store *s, int64_t id, json_t **out, char *err, size_t errlen)
{
	struct store_plan p;
	struct store_step st;
	struct decisions d;
	json_t *doc = NULL, *steps = NULL, *alerts = NULL, *cur = NULL, *deliveries = NULL;
	const char *member = NULL;
	int64_t nrows;
	int r, rc = -1;
	size_t i;

	*out = NULL;
	if ((r = store_plan_get(s, id, &p, err, errlen)) != 0)
		return r;
	if ((steps = json_array()) == NULL || (alerts = json_array()) == NULL)
		goto nomem;
	for (i = 0; i < STEPS_MAX; i++) {
		if ((r = step_read(s, id, (int)i, &st, &member, &nrows, err, errlen)) ==
		    STORE_NOT_FOUND)
			break;
		if (r != 0)
			goto done;
		json_array_append_new(steps, step_object(&st, member, nrows));
		store_step_clear(&st);
	}
	d.steps = steps;
	if (store_each_event(s, id, decision, &d, err, errlen) != 0)
		goto done;
	for (i = 0; i < json_array_size(steps); i++) {
		json_t *o = json_array_get(steps, i);

		json_object_set_new(o, "gate_state", json_string(gate_state(o)));
	}
	if (store_each_alert(s, id, 1, open_alert, alerts, err, errlen) < 0)
		goto done;
	if ((cur = current_step(s, id, err, errlen)) == NULL ||
	    view_notify_counts(s, id, &deliveries, err, errlen) != 0)
		goto done;
	if ((doc = plan_summary(&p)) == NULL)
		goto nomem;
	json_object_set_new(doc, "current", cur);
	json_object_set_new(doc, "steps", steps);
	json_object_set_new(doc, "alerts", alerts);
	json_object_set_new(doc, "deliveries", deliveries);
	steps = alerts = cur = deliveries = NULL;
	if (view_holds(doc) != 0) {
		errbuf_set(err, errlen, "out of memory");
		json_decref(doc);
		goto done;
	}
	if (view_gate_facts(s, id, doc, err, errlen) != 0) {
		json_decref(doc);
		goto done;
	}
	*out = doc;
	rc = 0;
	goto done;
nomem:
	errbuf_set(err, errlen, "out of memory");
done:
	json_decref(steps);
	json_decref(alerts);
	json_decref(cur);
	json_decref(deliveries);
	return rc;
}

/* The history as view_history builds it. */
struct history {
	json_t *events;
	int step;		/* the step the plan is at (export_step_of) */
};

static int
history_event(const struct store_event *ev, void *arg)
{
	struct history *h = arg;
	json_t *o = json_object();
	char utc[EXPORT_TIME_MAX];
	int step = export_step_of(ev->kind, ev->details_json, &h->step);

	export_time_utc(ev->ts_ms, utc);
	json_object_set_new(o, "id", json_integer((json_int_t)ev->id));
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)ev->ts_ms));
	json_object_set_new(o, "time_utc", json_string(utc));
	json_object_set_new(o, "step", step > 0 ? json_integer(step) : json_null());
	json_object_set_new(o, "actor", view_string(ev->actor));
	json_object_set_new(o, "kind", view_string(ev->kind));
	json_object_set_new(o, "details", parsed(ev->details_json));
	json_object_set_new(o, "prev_hash", view_string(ev->prev_hash));
	json_object_set_new(o, "hash", view_string(ev->hash));
	json_array_append_new(h->events, o);
	return 0;
}

int
view_history(struct store *s, int64_t id, json_t **out, char *err, size_t errlen)
{
	struct store_verify v = { 0 };
	struct store_plan p;
	struct history h = { NULL, 0 };
	char *yaml = NULL;
	size_t ylen = 0;
	int r;

	*out = NULL;
	if ((r = store_plan_get(s, id, &p, err, errlen)) != 0 ||
	    (r = store_plan_yaml(s, id, &yaml, &ylen, err, errlen)) != 0)
		return r;
	if ((h.events = json_array()) == NULL) {
		free(yaml);
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	if (store_each_event(s, id, history_event, &h, err, errlen) != 0 ||
	    store_verify_events(s, &v, err, errlen) != 0) {
		json_decref(h.events);
		free(yaml);
		return -1;
	}
	*out = json_pack("{s:I,s:o,s:o,s:o,s:o,s:o,s:{s:b,s:I,s:o,s:o}}",
	    "plan", (json_int_t)p.id, "name", view_string(p.name),
	    "status", view_string(p.status), "sha256", view_string(p.sha256),
	    "yaml", view_string(yaml), "events", h.events,
	    "verification", "verified", v.verified, "checked", (json_int_t)v.checked,
	    "bad_event", v.bad_id != 0 ? json_integer((json_int_t)v.bad_id) : json_null(),
	    "reason", v.verified ? json_null() : view_string(v.reason));
	free(yaml);
	if (*out == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	return 0;
}
