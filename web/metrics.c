/* metrics: Prometheus text from the store (plans, steps, the watch's state
 * and samples, the canary's summary, move_old's progress, history events,
 * alerts, the notifiers' deliveries), and serve's scheduled backups. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backup_schedule.h"
#include "build_info.h"
#include "clock.h"
#include "metrics.h"
#include "store_notify.h"
#include "textbuf.h"
#include "view_result.h"

#define PLANS_MAX	1000	/* plan names shown; the newest first */
#define STEPS_MAX	1000
#define NOTIFIERS_MAX	64	/* notifier names shown: serve has at most 16, the
				 * rest are ones it had before */

static const char *const plan_states[] = {
	"running", "succeeded", "failed", "aborted", NULL
};
static const char *const step_states[] = {
	"pending", "waiting_approval", "running", "succeeded", "failed", NULL
};
/* History event kinds of the flag calls: the call, and its outcome
 * (NULL: the request itself, counted apart from its outcome). */
static const char *const flag_events[][3] = {
	{ "flip.requested", "flip", NULL }, { "flip.confirmed", "flip", "confirmed" },
	{ "flip.failed", "flip", "failed" }, { "rollback.requested", "rollback", NULL },
	{ "rollback.confirmed", "rollback", "confirmed" },
	{ "rollback.failed", "rollback", "failed" }
};
#define NFLAG	(sizeof(flag_events) / sizeof(flag_events[0]))
/* The alert kinds (the watch's, flag_changed of the settle window and
 * serve's plan_cannot_run, kept last but "other": ALERT_CANNOT_RUN); any
 * other is counted as "other". */
static const char *const alert_kinds[] = {
	"broker_unreachable", "old_new_queue", "old_publish", "ladder_drift", "parking",
	"probe", "flag_off", "flag_unreadable", "flag_changed", "old_vanished", "level_late",
	"dead_letters_pending", STORE_ALERT_CANNOT_RUN, "other", NULL
};
#define NALERT	14
#define ALERT_CANNOT_RUN	(NALERT - 2)
/* Probe lateness buckets, in seconds. */
static const double buckets[] = { 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300 };
#define NBUCKET	(sizeof(buckets) / sizeof(buckets[0]))

/* A plan name as a label value, escaped (names are [a-z0-9._-], but the
 * format's escapes cost nothing). */
static const char *
esc(const char *s, char *o, size_t olen)
{
	size_t n = 0;

	for (; *s != '\0' && n + 3 < olen; s++) {
		if (*s == '\\' || *s == '"') {
			o[n++] = '\\';
			o[n++] = *s;
		} else if (*s == '\n') {
			o[n++] = '\\';
			o[n++] = 'n';
		} else
			o[n++] = *s;
	}
	o[n] = '\0';
	return o;
}

struct step_m {
	char kind[24];
	char status[24];
	int64_t started, ended;
};

struct plan_m {
	struct store_plan p;
	char name[160];			/* escaped */
	struct step_m *steps;
	int nsteps;
	json_t *watch;			/* the watch step's state, or NULL */
	json_t *canary;			/* the canary's summary, or NULL */
	json_t *move;			/* the last move_old's counts, progress
					 * and pass, or NULL */
	int64_t flag[NFLAG];
	int64_t *waiting;		/* per step: when it last began waiting, or 0 */
	int64_t alerts_seen[NALERT], alerts_open[NALERT];
	int have_hist;
	int64_t hist[NBUCKET + 1];	/* the last is +Inf */
	double hist_sum;
	int64_t lag_ts;			/* the latest tick-lag sample's time, 0: none */
	double lag_ms;			/* ... and how late that tick started */
};

struct plans {
	struct plan_m *v;
	size_t n, cap;
	bool file_ok;		/* the database file is still the one opened */
	struct store_notify_count notify[NOTIFIERS_MAX];	/* every plan's */
	size_t nnotify;
};

static int
each_plan(const struct store_plan *p, void *arg)
{
	struct plans *ps = arg;

	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->v[i].p.name, p->name) == 0)
			return 0;	/* an older plan of the same name */
	if (ps->n == PLANS_MAX)
		return 1;
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? ps->cap * 2 : 16;
		struct plan_m *grown = realloc(ps->v, cap * sizeof(*grown));

		if (grown == NULL)
			return 1;
		ps->v = grown;
		ps->cap = cap;
	}
	memset(&ps->v[ps->n], 0, sizeof(ps->v[ps->n]));
	ps->v[ps->n].p = *p;
	esc(p->name, ps->v[ps->n].name, sizeof(ps->v[ps->n].name));
	ps->n++;
	return 0;
}

static int
each_event(const struct store_event *ev, void *arg)
{
	struct plan_m *pm = arg;

	for (size_t i = 0; i < NFLAG; i++)
		if (strcmp(ev->kind, flag_events[i][0]) == 0)
			pm->flag[i]++;
	if (strcmp(ev->kind, "step.waiting_approval") == 0) {
		json_t *d = json_loads(ev->details_json, 0, NULL);
		json_int_t n = json_integer_value(json_object_get(d, "step"));

		if (n >= 1 && n <= pm->nsteps && pm->waiting != NULL)
			pm->waiting[n - 1] = ev->ts_ms;
		json_decref(d);
	}
	return 0;
}

static int
each_alert(const struct store_alert *a, void *arg)
{
	struct plan_m *pm = arg;
	size_t k;

	for (k = 0; k < NALERT - 1 && strcmp(alert_kinds[k], a->kind) != 0; k++)
		;
	pm->alerts_seen[k] += a->count;
	if (a->acked_ms == 0)
		pm->alerts_open[k]++;
	return 0;
}

static int
each_sample(int64_t ts, const char *metric, const char *label, double v, void *arg)
{
	struct plan_m *pm = arg;
	double s = v / 1000.0;
	size_t k;

	(void)label;
	if (strcmp(metric, "tick.lag_ms") == 0) {
		if (ts >= pm->lag_ts) {
			pm->lag_ts = ts;
			pm->lag_ms = v;
		}
		return 0;
	}
	if (strcmp(metric, "probe.lateness_ms") != 0)
		return 0;
	pm->have_hist = 1;
	for (k = 0; k < NBUCKET; k++)
		if (s <= buckets[k])
			pm->hist[k]++;
	pm->hist[NBUCKET]++;
	pm->hist_sum += s;
	return 0;
}

/* Step result TEXT parsed for the metrics: without its lists of over
 * VIEW_LIST_INLINE entries when it is long (view_result_brief), since
 * no metric reads one, and the watch's per-queue lists at 100,000 old
 * queues would make each scrape parse tens of megabytes. A new
 * reference, or NULL. */
static json_t *
result_parsed(const char *text)
{
	json_t *brief = NULL, *elided = NULL;

	view_result_brief(text, &brief, &elided);
	json_decref(elided);
	return brief != NULL ? brief : json_loads(text, 0, NULL);
}

/* Reads what the metrics need about plan PM. */
static int
load(struct store *s, struct plan_m *pm, char *err, size_t errlen)
{
	struct store_step st;
	int r;

	/* Each result as written, without the rows of its long list (no
	 * metric reads one). */
	for (int i = 0; i < STEPS_MAX; i++) {
		if ((r = store_step_get_apart(s, pm->p.id, i, &st, err, errlen)) ==
		    STORE_NOT_FOUND)
			break;
		if (r != 0)
			return -1;
		struct step_m *grown = realloc(pm->steps, (size_t)(i + 1) * sizeof(*grown));

		if (grown == NULL) {
			store_step_clear(&st);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		pm->steps = grown;
		snprintf(pm->steps[i].kind, sizeof(pm->steps[i].kind), "%s", st.kind);
		snprintf(pm->steps[i].status, sizeof(pm->steps[i].status), "%s", st.status);
		pm->steps[i].started = st.started_ms;
		pm->steps[i].ended = st.ended_ms;
		pm->nsteps = i + 1;
		if (st.result_json != NULL && (strcmp(st.kind, "watch") == 0 ||
		    strcmp(st.kind, "canary") == 0 || strcmp(st.kind, "move_old") == 0)) {
			json_t *j = result_parsed(st.result_json);

			if (strcmp(st.kind, "watch") == 0) {
				json_decref(pm->watch);
				pm->watch = j;
			} else if (strcmp(st.kind, "move_old") == 0) {
				json_decref(pm->move);
				pm->move = json_pack("{s:O?,s:O?,s:O?}", "counts",
				    json_object_get(j, "counts"), "progress",
				    json_object_get(j, "progress"), "pass",
				    json_object_get(j, "pass"));
				json_decref(j);
			} else {
				json_decref(pm->canary);
				pm->canary = json_incref(json_object_get(j, "summary"));
				json_decref(j);
			}
		}
		store_step_clear(&st);
	}
	if (pm->nsteps > 0 &&
	    (pm->waiting = calloc((size_t)pm->nsteps, sizeof(*pm->waiting))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (store_each_event(s, pm->p.id, each_event, pm, err, errlen) != 0 ||
	    store_each_alert(s, pm->p.id, 0, each_alert, pm, err, errlen) < 0 ||
	    store_each_sample(s, pm->p.id, 0, each_sample, pm, err, errlen) != 0)
		return -1;
	return 0;
}

static void
family(struct textbuf *b, const char *name, const char *type, const char *help)
{
	textbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A number of JSON object O's member at PATH ("a.b"), or 0 when absent. */
static bool
num(const json_t *o, const char *a, const char *k, double *v)
{
	const json_t *j = a != NULL ? json_object_get(o, a) : o;

	j = json_object_get(j, k);
	if (!json_is_number(j))
		return false;
	*v = json_number_value(j);
	return true;
}

/* Whether a step after step N of PM is of the same kind. */
static bool
later_of_kind(const struct plan_m *pm, int n)
{
	for (int m = n + 1; m < pm->nsteps; m++)
		if (strcmp(pm->steps[m].kind, pm->steps[n].kind) == 0)
			return true;
	return false;
}

/* Which step's result a one-number family reads. */
enum number_doc { DOC_WATCH, DOC_CANARY, DOC_MOVE };

/* A family with one number per plan: its name, type and help, where the
 * number is (the document DOC, its object OBJ (NULL: the document itself)
 * and KEY), and the scale and decimals it is given in. */
struct number_family {
	const char *name, *type, *help;
	enum number_doc doc;
	const char *obj, *key;
	double scale;
	int decimals;
};

/* The document DOC of PM: the watch's result, the canary's summary or
 * move_old's counts, progress and pass; NULL until the step has one. */
static const json_t *
doc_of(const struct plan_m *pm, enum number_doc doc)
{
	return doc == DOC_WATCH ? pm->watch : doc == DOC_CANARY ? pm->canary : pm->move;
}

/* Prometheus families: the N of F, a line per plan that has the number. */
static void
render_numbers(struct textbuf *b, const struct plans *ps, const struct number_family *f,
    size_t n)
{
	double v;

	for (size_t k = 0; k < n; k++) {
		family(b, f[k].name, f[k].type, f[k].help);
		for (size_t i = 0; i < ps->n; i++)
			if (num(doc_of(&ps->v[i], f[k].doc), f[k].obj, f[k].key, &v))
				textbuf_printf(b, "%s{plan=\"%s\"} %.*f\n", f[k].name, ps->v[i].name,
				    f[k].decimals, v / f[k].scale);
	}
}
#define RENDER_NUMBERS(b, ps, f) render_numbers(b, ps, f, sizeof(f) / sizeof(f[0]))

/* Prometheus families: the plans and their steps' states. */
static void
render_plans(struct textbuf *b, const struct plans *ps)
{
	double now = (double)(clock_now_ms() / 1000);	/* whole seconds, as before */

	textbuf_printf(b, "# cutover metrics: one set per plan name (its newest plan)\n");
	family(b, "cutover_plans", "gauge", "Plan names known to the store.");
	textbuf_printf(b, "cutover_plans %zu\n", ps->n);

	family(b, "cutover_plan_state", "gauge",
	    "1 for the plan's state, 0 for the others.");
	for (size_t i = 0; i < ps->n; i++)
		for (int k = 0; plan_states[k] != NULL; k++)
			textbuf_printf(b, "cutover_plan_state{plan=\"%s\",state=\"%s\"} %d\n",
			    ps->v[i].name, plan_states[k],
			    strcmp(ps->v[i].p.status, plan_states[k]) == 0);

	family(b, "cutover_plan_cannot_run", "gauge",
	    "1 while serve cannot run the plan: the plan it stored no longer loads. "
	    "What to do: " STORE_CANNOT_RUN_ACTION ". Its plan_cannot_run alert on "
	    "the page says why.");
	for (size_t i = 0; i < ps->n; i++)
		textbuf_printf(b, "cutover_plan_cannot_run{plan=\"%s\"} %d\n", ps->v[i].name,
		    ps->v[i].alerts_open[ALERT_CANNOT_RUN] > 0);

	family(b, "cutover_step_state", "gauge",
	    "1 for the step's state, 0 for the others.");
	for (size_t i = 0; i < ps->n; i++)
		for (int n = 0; n < ps->v[i].nsteps; n++) {
			const struct step_m *st = &ps->v[i].steps[n];

			if (later_of_kind(&ps->v[i], n))
				continue;	/* the last step of a kind speaks */
			for (int k = 0; step_states[k] != NULL; k++)
				textbuf_printf(b, "cutover_step_state{plan=\"%s\",step=\"%s\","
				    "state=\"%s\"} %d\n", ps->v[i].name, st->kind,
				    step_states[k], strcmp(st->status, step_states[k]) == 0);
		}

	family(b, "cutover_step_duration_seconds", "gauge",
	    "How long the step ran (until now while it runs).");
	for (size_t i = 0; i < ps->n; i++)
		for (int n = 0; n < ps->v[i].nsteps; n++) {
			const struct step_m *st = &ps->v[i].steps[n];

			if (later_of_kind(&ps->v[i], n) || st->started == 0)
				continue;
			textbuf_printf(b, "cutover_step_duration_seconds{plan=\"%s\",step=\"%s\"} %.3f\n",
			    ps->v[i].name, st->kind, st->ended != 0 ?
			    (double)(st->ended - st->started) / 1000.0 :
			    now - (double)st->started / 1000.0);
		}

	family(b, "cutover_gate_waiting_seconds", "gauge",
	    "How long a gated step has been waiting for an operator's approval.");
	for (size_t i = 0; i < ps->n; i++)
		for (int n = 0; n < ps->v[i].nsteps; n++) {
			const struct step_m *st = &ps->v[i].steps[n];

			if (strcmp(st->status, "waiting_approval") != 0 ||
			    ps->v[i].waiting == NULL || ps->v[i].waiting[n] == 0)
				continue;
			textbuf_printf(b, "cutover_gate_waiting_seconds{plan=\"%s\",step=\"%s\"} %.3f\n",
			    ps->v[i].name, st->kind, now - (double)ps->v[i].waiting[n] / 1000.0);
		}
}

/* The watch's one-number families after its depths. */
static const struct number_family watch_numbers[] = {
	{ "cutover_old_nonempty_queues", "gauge", "Old-path queues still holding "
	    "messages, at the latest sample.", DOC_WATCH, "summary", "old_nonempty", 1, 0 },
	{ "cutover_old_publishes_after_flip_total", "counter", "Client publishes into the "
	    "old path seen after the flip.", DOC_WATCH, "old", "after_flip", 1, 0 },
	{ "cutover_watch_time_left_seconds", "gauge", "Time left until the watch's "
	    "deadline.", DOC_WATCH, "summary", "time_left_ms", 1000, 3 },
};

/* Prometheus families: the watch's latest depths. */
static void
render_depths(struct textbuf *b, const struct plans *ps)
{
	double v;

	family(b, "cutover_depth_messages", "gauge",
	    "Messages waiting, by path, at the watch's latest sample.");
	for (size_t i = 0; i < ps->n; i++) {
		const json_t *sum = json_object_get(ps->v[i].watch, "summary");
		const json_t *lad = json_object_get(sum, "ladder_depth");
		double total = 0;

		if (num(sum, NULL, "old_depth", &v))
			textbuf_printf(b, "cutover_depth_messages{plan=\"%s\",path=\"old\"} %.0f\n",
			    ps->v[i].name, v);
		if (json_is_array(lad)) {
			size_t k;
			json_t *d;

			json_array_foreach(lad, k, d)
				total += json_is_number(d) ? json_number_value(d) : 0;
			textbuf_printf(b, "cutover_depth_messages{plan=\"%s\",path=\"ladder\"} %.0f\n",
			    ps->v[i].name, total);
		}
		if (num(sum, NULL, "parking_depth", &v))
			textbuf_printf(b, "cutover_depth_messages{plan=\"%s\",path=\"parking\"} %.0f\n",
			    ps->v[i].name, v);
	}

	family(b, "cutover_ladder_depth_messages", "gauge",
	    "Messages waiting in each ladder level's queue, at the latest sample.");
	for (size_t i = 0; i < ps->n; i++) {
		const json_t *lad = json_object_get(json_object_get(ps->v[i].watch,
		    "summary"), "ladder_depth");
		size_t k;
		json_t *d;

		json_array_foreach(lad, k, d)
			if (json_is_number(d))
				textbuf_printf(b, "cutover_ladder_depth_messages{plan=\"%s\",level=\"%zu\"} "
				    "%.0f\n", ps->v[i].name, k, json_number_value(d));
	}

	RENDER_NUMBERS(b, ps, watch_numbers);
	family(b, "cutover_watch_tick_lag_seconds", "gauge",
	    "How late the plan's latest watch tick started against when it was due "
	    "(serve's workers all busy, or the engine held up).");
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].lag_ts != 0)
			textbuf_printf(b, "cutover_watch_tick_lag_seconds{plan=\"%s\"} %.3f\n",
			    ps->v[i].name, ps->v[i].lag_ms / 1000.0);
}

/* The probes' one-number family. */
static const struct number_family probe_numbers[] = {
	{ "cutover_probes_sent_total", "counter", "Watch probes sent.", DOC_WATCH, "probe",
	    "sent", 1, 0 },
};

/* Prometheus families: the watch's probes. */
static void
render_probes(struct textbuf *b, const struct plans *ps)
{
	double v;

	family(b, "cutover_probe_lateness_seconds", "histogram",
	    "How long after its not-before time each watch probe arrived.");
	for (size_t i = 0; i < ps->n; i++) {
		const struct plan_m *pm = &ps->v[i];

		if (!pm->have_hist)
			continue;
		for (size_t k = 0; k < NBUCKET; k++)
			textbuf_printf(b, "cutover_probe_lateness_seconds_bucket{plan=\"%s\",le=\"%g\"} "
			    "%lld\n", pm->name, buckets[k], (long long)pm->hist[k]);
		textbuf_printf(b, "cutover_probe_lateness_seconds_bucket{plan=\"%s\",le=\"+Inf\"} "
		    "%lld\n", pm->name, (long long)pm->hist[NBUCKET]);
		textbuf_printf(b, "cutover_probe_lateness_seconds_sum{plan=\"%s\"} %.3f\n", pm->name,
		    pm->hist_sum);
		textbuf_printf(b, "cutover_probe_lateness_seconds_count{plan=\"%s\"} %lld\n", pm->name,
		    (long long)pm->hist[NBUCKET]);
	}

	RENDER_NUMBERS(b, ps, probe_numbers);
	family(b, "cutover_probes_total", "counter",
	    "Watch probes by outcome (arrived, late, early, lost).");
	for (size_t i = 0; i < ps->n; i++) {
		static const char *const o[] = { "arrived", "late", "early", "lost", NULL };

		for (int k = 0; o[k] != NULL; k++)
			if (num(ps->v[i].watch, "probe", o[k], &v))
				textbuf_printf(b, "cutover_probes_total{plan=\"%s\",outcome=\"%s\"} %.0f\n",
				    ps->v[i].name, o[k], v);
	}
}

/* The canary's one-number families: before its outcomes, and after. */
static const struct number_family canary_sent[] = {
	{ "cutover_canary_messages_sent", "gauge", "The canary's messages sent.", DOC_CANARY,
	    NULL, "count", 1, 0 },
};
static const struct number_family canary_lateness[] = {
	{ "cutover_canary_lateness_p50_seconds", "gauge", "Median lateness of the canary's "
	    "messages.", DOC_CANARY, NULL, "p50_ms", 1000, 3 },
	{ "cutover_canary_lateness_p99_seconds", "gauge", "99th percentile lateness of the "
	    "canary's messages.", DOC_CANARY, NULL, "p99_ms", 1000, 3 },
};

/* Prometheus families: the canary's summary. */
static void
render_canary(struct textbuf *b, const struct plans *ps)
{
	double v;

	RENDER_NUMBERS(b, ps, canary_sent);
	family(b, "cutover_canary_messages", "gauge",
	    "The canary's messages by outcome.");
	for (size_t i = 0; i < ps->n; i++) {
		static const char *const o[][2] = {
			{ "arrived", "arrived" }, { "early", "early" },
			{ "late", "late" }, { "lost", "lost" }, { "wrong_path", "wrong_path" },
			{ "unconfirmed", "unconfirmed" }
		};

		for (size_t k = 0; k < sizeof(o) / sizeof(o[0]); k++)
			if (num(ps->v[i].canary, NULL, o[k][0], &v))
				textbuf_printf(b, "cutover_canary_messages{plan=\"%s\",outcome=\"%s\"} %.0f\n",
				    ps->v[i].name, o[k][1], v);
	}
	RENDER_NUMBERS(b, ps, canary_lateness);
}

/* move_old's one-number families. */
static const struct number_family move_numbers[] = {
	{ "cutover_move_old_remaining_messages", "gauge", "Messages move_old's pass has "
	    "still to take from the old queues", DOC_MOVE, "progress", "remaining", 1, 0 },
	{ "cutover_move_old_messages_per_second", "gauge", "Messages move_old takes from "
	    "the old queues a second, since its run began", DOC_MOVE, "progress", "per_s",
	    1, 3 },
	{ "cutover_move_old_eta_seconds", "gauge", "Seconds until move_old's pass has taken "
	    "every remaining message at its pace (absent until the pace is measured)",
	    DOC_MOVE, "progress", "eta_ms", 1000, 3 },
	{ "cutover_move_old_may_duplicate_messages", "gauge", "Messages move_old moved that "
	    "may arrive twice: published into the ladder by a run killed before it acked "
	    "them in their old queue (each carries its x-cutover-move-id)", DOC_MOVE,
	    "counts", "may_duplicate", 1, 0 },
	{ "cutover_move_old_pass", "gauge", "move_old's pass: 1 at once, 2 once the "
	    "stragglers' window is over", DOC_MOVE, NULL, "pass", 1, 0 },
};

/* Prometheus families: move_old's counts, what it has still to take, its
 * pace and the time to go at that pace. */
static void
render_move(struct textbuf *b, const struct plans *ps)
{
	static const char *const o[] = { "moved", "left", "skipped" };
	double v;

	family(b, "cutover_move_old_messages", "gauge", "move_old's messages by "
	    "outcome: moved into the ladder, left in their old queue, skipped (their "
	    "queue not touched)");
	for (size_t i = 0; i < ps->n; i++)
		for (size_t k = 0; k < sizeof(o) / sizeof(o[0]); k++)
			if (num(ps->v[i].move, "counts", o[k], &v))
				textbuf_printf(b, "cutover_move_old_messages{plan=\"%s\",outcome=\"%s\"} "
				    "%.0f\n", ps->v[i].name, o[k], v);
	RENDER_NUMBERS(b, ps, move_numbers);
}

/* Prometheus families: flag calls and alerts from the history. */
static void
render_events(struct textbuf *b, const struct plans *ps)
{
	family(b, "cutover_flag_requests_total", "counter",
	    "Feature-flag calls requested (flip, rollback), recorded in the history.");
	for (size_t i = 0; i < ps->n; i++)
		for (size_t k = 0; k < NFLAG; k++)
			if (flag_events[k][2] == NULL)
				textbuf_printf(b, "cutover_flag_requests_total{plan=\"%s\",call=\"%s\"} "
				    "%lld\n", ps->v[i].name, flag_events[k][1],
				    (long long)ps->v[i].flag[k]);
	family(b, "cutover_flag_calls_total", "counter",
	    "Feature-flag calls by call (flip, rollback) and outcome (confirmed, failed).");
	for (size_t i = 0; i < ps->n; i++)
		for (size_t k = 0; k < NFLAG; k++)
			if (flag_events[k][2] != NULL)
				textbuf_printf(b, "cutover_flag_calls_total{plan=\"%s\",call=\"%s\","
				    "outcome=\"%s\"} %lld\n", ps->v[i].name, flag_events[k][1],
				    flag_events[k][2], (long long)ps->v[i].flag[k]);

	family(b, "cutover_broker_errors_total", "counter",
	    "Times the watch could not reach the broker (its broker_unreachable alerts).");
	for (size_t i = 0; i < ps->n; i++)
		textbuf_printf(b, "cutover_broker_errors_total{plan=\"%s\"} %lld\n", ps->v[i].name,
		    (long long)ps->v[i].alerts_seen[0]);

	family(b, "cutover_alerts_seen_total", "counter",
	    "Times each kind of alert was raised or seen again.");
	for (size_t i = 0; i < ps->n; i++)
		for (int k = 0; k < NALERT; k++)
			textbuf_printf(b, "cutover_alerts_seen_total{plan=\"%s\",kind=\"%s\"} %lld\n",
			    ps->v[i].name, alert_kinds[k], (long long)ps->v[i].alerts_seen[k]);
	family(b, "cutover_alerts_open", "gauge",
	    "Alerts not acknowledged, by kind.");
	for (size_t i = 0; i < ps->n; i++)
		for (int k = 0; k < NALERT; k++)
			textbuf_printf(b, "cutover_alerts_open{plan=\"%s\",kind=\"%s\"} %lld\n",
			    ps->v[i].name, alert_kinds[k], (long long)ps->v[i].alerts_open[k]);
}

/* Each level's oldest message age, in two families by where it comes
 * from: the head message's timestamp, or at most the age of the last
 * on-time level probe (an upper bound). */
static void
render_oldest(struct textbuf *b, const struct plans *ps)
{
	static const char *const fam[2][3] = {
		{ "cutover_ladder_oldest_age_ms", "head_timestamp", "Age of the level's "
		    "head message by its timestamp property (classic queues)." },
		{ "cutover_ladder_oldest_age_bound_ms", "probe_bound", "At most this old: "
		    "the level's oldest message entered after its last on-time probe." },
	};

	for (int f = 0; f < 2; f++) {
		family(b, fam[f][0], "gauge", fam[f][2]);
		for (size_t i = 0; i < ps->n; i++) {
			const json_t *lv = json_object_get(json_object_get(ps->v[i].watch,
			    "summary"), "levels"), *e;
			size_t k;

			json_array_foreach(lv, k, e) {
				const char *src = json_string_value(json_object_get(e,
				    "oldest_age_source"));
				const json_t *v = json_object_get(e, "oldest_age_ms");

				if (src != NULL && strcmp(src, fam[f][1]) == 0 &&
				    json_is_number(v))
					textbuf_printf(b, "%s{plan=\"%s\",level=\"%zu\"} %.0f\n", fam[f][0],
					    ps->v[i].name, k, json_number_value(v));
			}
		}
	}
}

/* One per-level family: NAME (TYPE, HELP), level by level, the value of
 * member KEY of each entry of the watch summary's "levels" (skipped when
 * not a number); when STATUS is set, 1 for entries whose status is it and
 * 0 for the others instead. */
static void
level_family(struct textbuf *b, const struct plans *ps, const char *name, const char *type,
    const char *help, const char *key, const char *status)
{
	family(b, name, type, help);
	for (size_t i = 0; i < ps->n; i++) {
		const json_t *lv = json_object_get(json_object_get(ps->v[i].watch,
		    "summary"), "levels"), *e;
		size_t k;

		json_array_foreach(lv, k, e) {
			const json_t *v = json_object_get(e, key);
			double x;

			if (status != NULL)
				x = json_is_string(v) && strcmp(json_string_value(v), status) == 0;
			else if (json_is_number(v))
				x = json_number_value(v);
			else
				continue;
			textbuf_printf(b, "%s{plan=\"%s\",level=\"%zu\"} %.0f\n", name, ps->v[i].name,
			    k, x);
		}
	}
}

/* Prometheus families: each level's proof of movement, pending
 * dead-letters, publishes entering it (its delay band) and oldest age.
 * Labels: plan and level only. */
static void
render_levels(struct textbuf *b, const struct plans *ps)
{
	static const struct {
		const char *name, *type, *help, *key, *status;
	} fams[] = {
		{ "cutover_ladder_level_moving", "gauge", "1 when the level's last probe "
		    "(waiting in that level only) came out on time.", "status", "moving" },
		{ "cutover_ladder_level_late", "gauge", "1 when the level's last probe came "
		    "out later than its TTL + watch.allowance, or not at all.", "status",
		    "late" },
		{ "cutover_ladder_level_not_probed", "gauge", "1 when the level's TTL is "
		    "beyond the watch's probe budget: never proven by a probe.", "status",
		    "not_probed" },
		{ "cutover_ladder_level_lateness_ms", "gauge", "The level probe's last "
		    "lateness after its not-before time (an upper bound).", "lateness_ms",
		    NULL },
		{ "cutover_ladder_dead_letters_pending", "gauge", "Dead-letters the level's "
		    "next hop has not accepted yet (quorum messages_dlx).", "dead_letters",
		    NULL },
		{ "cutover_ladder_band_publishes_total", "counter", "Client publishes "
		    "entering at the level: delays of [2^k, 2^(k+1)) units (the level "
		    "exchange's publish_in; the watch's own probes included).",
		    "band_publishes", NULL },
	};

	for (size_t f = 0; f < sizeof(fams) / sizeof(fams[0]); f++)
		level_family(b, ps, fams[f].name, fams[f].type, fams[f].help, fams[f].key,
		    fams[f].status);
	family(b, "cutover_parking_dead_letters_pending", "gauge",
	    "Dead-letters the parking queue holds pending (quorum messages_dlx).");
	for (size_t i = 0; i < ps->n; i++) {
		double v;

		if (num(json_object_get(ps->v[i].watch, "summary"), NULL,
		    "parking_dead_letters", &v))
			textbuf_printf(b, "cutover_parking_dead_letters_pending{plan=\"%s\"} %.0f\n",
			    ps->v[i].name, v);
	}
	render_oldest(b, ps);
}

/* Prometheus family: every plan's notifications, counted by notifier (its
 * name in serve.yaml, never its URL) and state. */
static void
render_notify(struct textbuf *b, const struct plans *ps)
{
	char name[160];

	family(b, "cutover_notify_deliveries", "gauge",
	    "Notifications by notifier and state: pending (not sent yet, or to be "
	    "tried again), delivered, failed (attempts spent, or refused).");
	for (size_t i = 0; i < ps->nnotify; i++) {
		const struct store_notify_count *c = &ps->notify[i];

		esc(c->notifier, name, sizeof(name));
		textbuf_printf(b, "cutover_notify_deliveries{notifier=\"%s\",state=\"pending\"} %lld\n",
		    name, (long long)c->pending);
		textbuf_printf(b, "cutover_notify_deliveries{notifier=\"%s\",state=\"delivered\"} %lld\n",
		    name, (long long)c->delivered);
		textbuf_printf(b, "cutover_notify_deliveries{notifier=\"%s\",state=\"failed\"} %lld\n",
		    name, (long long)c->failed);
	}
}

/* cutover_build_info: one series, 1, its labels the version, the commit and
 * the version of each library the binary was compiled against. */
static void
render_build(struct textbuf *b, const struct plans *ps)
{
	const struct build_info *bi = build_info_get();
	char v[3][64];

	(void)ps;
	family(b, "cutover_build_info", "gauge", "cutover's version, commit and the "
	    "versions of the libraries it was built with");
	textbuf_printf(b, "cutover_build_info{version=\"%s\",commit=\"%s\"", esc(bi->version, v[0],
	    sizeof(v[0])), esc(bi->commit, v[1], sizeof(v[1])));
	for (size_t i = 0; i < BUILD_LIBS; i++)
		textbuf_printf(b, ",%s=\"%s\"", bi->libs[i].name, esc(bi->libs[i].built, v[2],
		    sizeof(v[2])));
	textbuf_printf(b, "} 1\n");
}

/* cutover_database_file_ok: 0 once the database file was removed or
 * replaced under the running service (the engine then takes no action);
 * cutover_database_disk_full: 1 while writes find the disk full. */
static void
render_file(struct textbuf *b, const struct plans *ps)
{
	family(b, "cutover_database_file_ok", "gauge", "1 while the database file "
	    "is the one cutover opened; 0 once it was removed or replaced (cutover "
	    "takes no action: restore it from a backup and restart)");
	textbuf_printf(b, "cutover_database_file_ok %d\n", ps->file_ok ? 1 : 0);
	family(b, "cutover_database_disk_full", "gauge", "1 while the disk holding "
	    "the database is full: the plans are held where they were and go on by "
	    "themselves once space is freed there");
	textbuf_printf(b, "cutover_database_disk_full %d\n", store_disk_full_since() != 0 ? 1 : 0);
}

/* serve's scheduled backups (backup_schedule.h), only while a backup
 * section runs them: a missing family says no schedule, where a 0 would
 * read as a backup that never succeeded. */
static void
render_backup(struct textbuf *b, const struct plans *ps)
{
	struct backup_figures f;

	(void)ps;
	if (!backup_schedule_figures(&f))
		return;
	const struct {
		const char *name, *type, *help;
		double v;
	} rows[] = {
		{ "cutover_backup_interval_seconds", "gauge", "serve.yaml's backup.interval: "
		    "a checked copy of the database is made this often",
		    (double)f.interval_ms / 1000 },
		{ "cutover_backup_last_success_timestamp_seconds", "gauge", "When the last "
		    "checked copy was made (Unix time); 0 before the first",
		    (double)f.last_success_ms / 1000 },
		{ "cutover_backup_age_seconds", "gauge", "Seconds since the last checked copy "
		    "was made; before the first, since serve started", (double)f.age_ms / 1000 },
		{ "cutover_backup_failures_total", "counter", "Backups that failed or whose "
		    "copy did not check (and was removed), since serve started",
		    (double)f.failures },
		{ "cutover_backup_duration_seconds", "gauge", "How long the last backup took, "
		    "copy and check, whether it checked or not; 0 before the first",
		    (double)f.last_duration_ms / 1000 },
		{ "cutover_backup_size_bytes", "gauge", "The size of the last checked copy; 0 "
		    "before the first", (double)f.last_size },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		family(b, rows[i].name, rows[i].type, rows[i].help);
		textbuf_printf(b, "%s %.15g\n", rows[i].name, rows[i].v);
	}
}

/* The sections of the text, in order. */
static void (*const sections[])(struct textbuf *, const struct plans *) = {
	render_build, render_file, render_backup, render_plans, render_depths, render_probes,
	render_canary, render_move, render_events,
	render_levels, render_notify,
};

/* store_notify_counts's FN: one notifier into the plans' counts. */
static int
each_count(const struct store_notify_count *c, void *arg)
{
	struct plans *ps = arg;

	if (ps->nnotify == NOTIFIERS_MAX)
		return 1;
	ps->notify[ps->nnotify++] = *c;
	return 0;
}

int
metrics_render(struct store *s, char **text, size_t *len, char *err, size_t errlen)
{
	struct plans ps = { 0 };
	struct textbuf b = { .first = 16384 };
	int rc = -1;

	*text = NULL;
	*len = 0;
	ps.file_ok = store_file_check(s, err, errlen) == 0;
	if (store_each_plan(s, each_plan, &ps, err, errlen) != 0)
		goto done;
	for (size_t i = 0; i < ps.n; i++)
		if (load(s, &ps.v[i], err, errlen) != 0)
			goto done;
	if (store_notify_counts(s, 0, NOTIFIERS_MAX, each_count, &ps, err, errlen) != 0)
		goto done;
	for (size_t k = 0; k < sizeof(sections) / sizeof(sections[0]); k++)
		sections[k](&b, &ps);
	if (b.failed) {
		snprintf(err, errlen, "out of memory");
		free(b.p);
		goto done;
	}
	*text = b.p;
	*len = b.len;
	rc = 0;
done:
	for (size_t i = 0; i < ps.n; i++) {
		free(ps.v[i].steps);
		free(ps.v[i].waiting);
		json_decref(ps.v[i].watch);
		json_decref(ps.v[i].canary);
		json_decref(ps.v[i].move);
	}
	free(ps.v);
	return rc;
}
