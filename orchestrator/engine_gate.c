/* engine_gate: a gated step reached (the approval given ahead, or the
 * wait) and the preview of what approving it would do now. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "step_kinds.h"

/* Step IDX waits at its gate: when its kind has a preview and one is due,
 * runs it — the engine, never the web thread, reads the broker — and
 * stores it as the step's result {"preview": …, "preview_ms",
 * "preview_error"}, so that the page can say what approving it would do
 * now. A preview is due every watch interval, at least 5 s apart and at
 * least 20 times as long as the last one took (at 10,000 old queues the
 * dry run's passive declares take seconds: the broker is not kept busy by
 * a page). Returns 0, or -1 when the store failed. */
int
engine__preview_gate(struct run *r, int idx)
{
	const struct step_kind *sk = step_kind_of(r->plan->steps[idx].kind);
	step_fn fn = sk != NULL ? sk->preview : NULL;
	json_t *res = NULL, *doc;
	char *text;
	int64_t now = clock_now_ms(), t0 = clock_mono_ms(), gap;
	int rc, pr;

	if (fn == NULL || t0 < r->preview_due_ms)
		return 0;
	pr = engine__run_step(r, idx, NULL, NULL, fn, &res);
	step_ctx_end_run(&r->ctx);	/* a preview changes nothing: it hands over nothing */
	gap = 20 * (clock_mono_ms() - t0);
	if (gap < r->plan->watch.interval_ms)
		gap = r->plan->watch.interval_ms;
	r->preview_due_ms = clock_mono_ms() + (gap > 5000 ? gap : 5000);
	doc = json_pack("{s:o,s:I,s:o}", "preview", res, "preview_ms", (json_int_t)now,
	    "preview_error", pr == 0 ? json_null() : json_string(r->err));
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	rc = store_step_update(r->s, r->id, idx, NULL, 0, 0, text, NULL, r->err, r->errlen);
	free(text);
	return rc;
}

/* The first approval given ahead for step N (1-based), found in the
 * plan's history. */
struct ahead {
	int n;
	int found;
	char actor[65];
	char comment[1001];
	int64_t given_ms;
};

static int
ahead_event(const struct store_event *ev, void *arg)
{
	struct ahead *a = arg;
	json_t *d;

	if (strcmp(ev->kind, "step.approved_ahead") != 0 ||
	    (d = json_loads(ev->details_json, 0, NULL)) == NULL)
		return 0;
	if (json_integer_value(json_object_get(d, "step")) == a->n) {
		a->found = 1;
		snprintf(a->actor, sizeof(a->actor), "%s", ev->actor);
		snprintf(a->comment, sizeof(a->comment), "%s",
		    json_string_value(json_object_get(d, "comment")) ?
		    json_string_value(json_object_get(d, "comment")) : "");
		a->given_ms = ev->ts_ms;
	}
	json_decref(d);
	return a->found;
}

/* Step IDX, gated and pending, is reached: starts it when an operator
 * approved it ahead (step.approved by that operator, "ahead": true),
 * otherwise sets it waiting. Returns 0 or -1. */
int
engine__reach_gate(struct run *r, int idx)
{
	struct ahead a = { .n = idx + 1 };

	if (store_each_event(r->s, r->id, ahead_event, &a, r->err, r->errlen) != 0)
		return -1;
	if (!a.found)
		return engine__transition(r, idx, STEP_STATUS_WAITING_APPROVAL, 0, 0, NULL, NULL, ACTOR,
		    "step.waiting_approval", NULL);
	return engine__transition(r, idx, STEP_STATUS_RUNNING, clock_now_ms(), 0, NULL, NULL, a.actor,
	    "step.approved", json_pack("{s:s,s:b,s:I}", "comment", a.comment, "ahead", 1,
	    "given_ms", (json_int_t)a.given_ms));
}
