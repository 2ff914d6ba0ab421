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
					engine__plan_cannot_run(s, &unrun, act.ids[i], perr);
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
	engine__unrunnable_free(&unrun);
	return rc;
}
