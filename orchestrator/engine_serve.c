/* engine_serve: the engine of `cutover serve`: every plan of the store
 * that is running, picked up as it is submitted, and what is said of one
 * that cannot run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"
#include "store_admit.h"

struct active {
	int64_t *ids;
	size_t n, cap;
	bool ended;                    /* take ended plans too (not archived) */
};

static int
collect_active(const struct store_plan *p, void *arg)
{
	struct active *a = arg;
	enum plan_status st = plan_status_of(p->status);

	if (st != PLAN_STATUS_RUNNING && st != PLAN_STATUS_FAILED && (!a->ended ||
	    p->archived_ms != 0 || (st != PLAN_STATUS_ABORTED &&
	    st != PLAN_STATUS_SUCCEEDED)))
		return 0;
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		int64_t *ids = realloc(a->ids, cap * sizeof(*ids));

		if (ids == NULL)
			return -1;	/* out of memory: stops the listing */
		a->ids = ids;
		a->cap = cap;
	}
	a->ids[a->n++] = p->id;
	return 0;
}

/* The plans serve could not open, each with why: what was said about
 * one is not said again until the reason changes. */
struct unrunnable {
	struct {
		int64_t id;
		char why[1024];
	} *v;
	size_t n, cap;
};

/* The entry of U for plan ID, added empty when there is none; NULL when
 * out of memory. */
static char *
unrunnable_why(struct unrunnable *u, int64_t id)
{
	size_t i;

	for (i = 0; i < u->n && u->v[i].id != id; i++)
		;
	if (i < u->n)
		return u->v[i].why;
	if (u->n == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 8;
		void *v = realloc(u->v, cap * sizeof(*u->v));

		if (v == NULL)
			return NULL;
		u->v = v;
		u->cap = cap;
	}
	u->v[u->n].id = id;
	u->v[u->n].why[0] = '\0';
	return u->v[u->n++].why;
}

/* The open plan_cannot_run alert of a plan, if any. */
struct cannot_run_alert {
	int64_t id;
	char message[512];
};

static int
find_cannot_run(const struct store_alert *a, void *arg)
{
	struct cannot_run_alert *c = arg;

	if (strcmp(a->kind, STORE_ALERT_CANNOT_RUN) != 0)
		return 0;
	c->id = a->id;
	snprintf(c->message, sizeof(c->message), "%s", a->message);
	return 1;
}

/* Serve cannot run plan ID because of WHY: the first time, and whenever
 * the reason changes, says so once in the log and in the store — the
 * alert plan_cannot_run with what to do (the page and /metrics show it)
 * and the event plan.cannot_run — never at every turn. Unless the
 * process already said it, an open alert with that message (an earlier
 * process's) is kept as it is. */
static void
plan_cannot_run(struct store *s, struct unrunnable *u, int64_t id, const char *why)
{
	struct cannot_run_alert open = { 0 };
	struct store_plan p;
	char message[512], err[512], *said = unrunnable_why(u, id), *text = NULL;
	const char *name = NULL;
	json_t *details = NULL;
	int64_t alert = 0;
	bool raised = false;
	int room;

	if (said != NULL && strcmp(said, why) == 0)
		return;
	if (said != NULL)
		snprintf(said, sizeof(u->v[0].why), "%s", why);
	if (store_plan_get(s, id, &p, err, sizeof(err)) == 0)
		name = p.name;
	log_event("error", name, NULL, "plan %lld cannot run: %s; what to do: %s",
	    (long long)id, why, STORE_CANNOT_RUN_ACTION);
	/* An alert's message is at most 511 bytes: the reason is cut to leave
	 * room for what to do (the event and the log have it whole). */
	room = (int)(sizeof(message) - 1 - strlen("; what to do: ") -
	    strlen(STORE_CANNOT_RUN_ACTION));
	snprintf(message, sizeof(message), "%.*s%s; what to do: %s",
	    (int)strlen(why) > room ? room - 3 : room, why,
	    (int)strlen(why) > room ? "..." : "", STORE_CANNOT_RUN_ACTION);
	if (store_each_alert(s, id, 1, find_cannot_run, &open, err, sizeof(err)) < 0)
		goto failed;
	if (open.id != 0 && strcmp(open.message, message) == 0)
		goto done;
	if ((details = json_pack("{s:s,s:s}", "error", why, "what_to_do",
	    STORE_CANNOT_RUN_ACTION)) == NULL ||
	    (text = json_dumps(details, JSON_COMPACT)) == NULL) {
		snprintf(err, sizeof(err), "out of memory");
		goto failed;
	}
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_raise(s, id, STORE_ALERT_CANNOT_RUN, message, clock_now_ms(),
	    &alert, &raised, err, sizeof(err)) != 0 ||
	    store_append_event(s, id, clock_now_ms(), ACTOR, "plan.cannot_run", text, NULL,
	    err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) == 0)
		goto done;
failed:
	log_event("error", name, NULL, "recording that plan %lld cannot run: %s",
	    (long long)id, err);
done:
	free(text);
	json_decref(details);
}

/* Plan ID runs (again), under serve (U: what serve said of the plans it
 * could not run) or `cutover run` (U NULL): what plan_cannot_run said of
 * it is over, and its open plan_cannot_run alert, if any, closes with a
 * word in the history (alert.acked by the engine) — commands for the
 * plan are then taken again. */
void
engine__plan_can_run(struct store *s, struct unrunnable *u, int64_t id)
{
	struct cannot_run_alert open = { 0 };
	char err[512], details[128];
	size_t i;

	for (i = 0; u != NULL && i < u->n && u->v[i].id != id; i++)
		;
	if (u != NULL && i < u->n)
		u->v[i] = u->v[--u->n];
	if (store_each_alert(s, id, 1, find_cannot_run, &open, err, sizeof(err)) < 0)
		goto failed;
	if (open.id == 0)
		return;
	snprintf(details, sizeof(details), "{\"alert\":%lld,\"comment\":\"the stored plan "
	    "loads again\"}", (long long)open.id);
	if (store_begin(s, err, sizeof(err)) != 0)
		goto failed;
	if (store_alert_ack(s, id, open.id, ACTOR, "the stored plan loads again",
	    clock_now_ms(), err, sizeof(err)) != 0 ||
	    store_append_event(s, id, clock_now_ms(), ACTOR, "alert.acked", details,
	    NULL, err, sizeof(err)) != 0) {
		store_rollback(s);
		goto failed;
	}
	if (store_commit(s, err, sizeof(err)) == 0) {
		log_event("info", NULL, NULL, "plan %lld loads again: its %s alert is closed",
		    (long long)id, STORE_ALERT_CANNOT_RUN);
		return;
	}
failed:
	log_event("error", NULL, NULL, "closing plan %lld's %s alert: %s", (long long)id,
	    STORE_ALERT_CANNOT_RUN, err);
}

int
engine_serve(struct store *s, const struct engine_opts *o, char *err, size_t errlen)
{
	struct engine_opts so = *o;
	struct active act = { 0 };
	struct unrunnable unrun = { 0 };
	struct run *runs = NULL;
	size_t nruns = 0;
	char perr[1024];
	bool file_lost = false;
	int rc = -1;

	so.return_when_blocked = false;
	/* The first listing takes the plans that have ended too: one whose
	 * flag's settle window was open when the last serve stopped goes on
	 * reading it; the others end at their first turn. */
	act.ended = true;
	for (;;) {
		int64_t next = clock_mono_ms() + (so.poll_ms > 0 ? so.poll_ms : 500);
		enum engine_outcome outcome;

		if (so.stop != NULL && *so.stop)
			break;
		/* A removed or replaced database: no step runs on a record no one
		 * will read (or on someone else's); said once, and on /healthz. */
		if (store_file_check(s, perr, sizeof(perr)) != 0) {
			if (!file_lost) {
				char text[1400];

				snprintf(text, sizeof(text), "%s; cutover takes no action "
				    "until it is restarted on a restored file", perr);
				log_event("error", NULL, NULL, "%s", text);
				engine__service_say(&so, "database_lost", text);
			}
			file_lost = true;
			clock_sleep_ms(so.poll_ms > 0 ? so.poll_ms : 500);
			continue;
		}
		act.n = 0;
		if (store_each_plan(s, collect_active, &act, err, errlen) != 0)
			goto done;
		act.ended = false;
		/* Start runs for plans submitted since the last turn. */
		for (size_t i = 0; i < act.n; i++) {
			size_t j;
			struct run *grown;
			struct store_plan sp;
			bool ended;

			for (j = 0; j < nruns && runs[j].id != act.ids[i]; j++)
				;
			if (j < nruns)
				continue;
			if ((grown = realloc(runs, (nruns + 1) * sizeof(*runs))) == NULL) {
				snprintf(err, errlen, "out of memory");
				goto done;
			}
			runs = grown;
			ended = store_plan_get(s, act.ids[i], &sp, perr, sizeof(perr)) == 0 &&
			    (plan_status_of(sp.status) == PLAN_STATUS_ABORTED ||
			    plan_status_of(sp.status) == PLAN_STATUS_SUCCEEDED);
			if (engine__run_open(&runs[nruns], s, act.ids[i], &so, perr, sizeof(perr)) != 0) {
				/* An ended plan is only looked at for its settle
				 * window: one an older version stored is left. */
				if (!ended)
					plan_cannot_run(s, &unrun, act.ids[i], perr);
				engine__run_close(&runs[nruns]);
				continue;
			}
			engine__plan_can_run(s, &unrun, act.ids[i]);
			runs[nruns++].ended_at_open = ended;
		}
		for (size_t j = 0; j < nruns; ) {
			struct run *r = &runs[j];
			bool over = false;
			int t;

			/* Each run writes its errors into its own buffer. */
			r->err = perr;
			r->errlen = sizeof(perr);
			t = engine__turn(r, &outcome, &over);
			if (t < 0 && !engine__busy_retry(r, "store"))
				log_event("error", r->plan->name, NULL, "%s", perr);
			engine__busy_settle(r, t);
			if (over) {
				if (!r->ended_at_open || r->settle_open_seen)
					log_event("info", r->plan->name, NULL, "run ended: %s",
					    engine_outcome_name(outcome));
				engine__run_close(r);
				runs[j] = runs[--nruns];
				continue;
			}
			if (r->due_ms > 0 && r->due_ms < next)
				next = r->due_ms;
			j++;
		}
		{
			int64_t wait = next - clock_mono_ms();

			if (wait > 0)
				clock_sleep_ms((int)wait);
		}
	}
	rc = 0;
done:
	for (size_t j = 0; j < nruns; j++)
		engine__run_close(&runs[j]);
	free(runs);
	free(act.ids);
	free(unrun.v);
	return rc;
}
