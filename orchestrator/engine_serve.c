/* engine_serve: the engine of `cutover serve`: every plan of the store
 * that is running, picked up as it is submitted, turned by a bounded pool
 * of workers, and what is said of one that cannot run. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "engine_int.h"
#include "log.h"
#include "store_admit.h"

/* How long a turn waits when its worker could not open its connection to
 * the database (out of file descriptors, say) before it is tried again. */
#define OPEN_RETRY_MS	5000

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

/* A plan serve runs, as the workers share it. */
struct slot {
	struct run r;
	int64_t next_ms;               /* mono: when its next turn is due */
	bool busy;                     /* a worker is turning it: no other may */
};

struct engine_pool;

/* One worker: its thread, its own connection to the database (a SQLite
 * connection is one thread's at a time), opened at its first turn, and its
 * own error buffer. */
struct worker {
	struct engine_pool *p;
	struct store *s;               /* NULL until its first turn */
	pthread_cond_t cv;             /* it is the leader now, or the stop */
	pthread_t thread;
	bool started;
	char err[1024];
};

/* The plans and the workers that turn them. The scheduler (engine_serve's
 * thread) adds plans; a worker takes the plan whose turn is due first and
 * no other worker has, turns it once and puts it back, or removes it when
 * its run is over. So a plan's turns never overlap (one engine per plan),
 * and a plan whose broker is slow to answer holds up one worker, not the
 * others' plans, until every worker is held.
 *
 * The idle workers are a stack: only its top, the leader, waits for the
 * next turn due; the others sleep until they are the top. A worker that
 * takes a turn wakes the next one to lead, and one back from its turn
 * leads again. So the workers that ever run are as many as the turns ever
 * taken at once, not the pool's size, and only they open a connection to
 * the database (each one's page cache and schema, ~150 KB). */
struct engine_pool {
	pthread_mutex_t mu;
	struct slot **slots;
	size_t nslots, cap;
	struct worker *w;
	int nworkers;
	int *idle;                     /* the idle workers' indexes; the top last */
	int nidle;
	bool held;                     /* the database file is lost: no turns */
	bool stop;
	const struct engine_opts *o;   /* &opts */
	struct engine_opts opts;
	struct store *s;               /* the scheduler's connection */
};

static int
poll_of(const struct engine_opts *o)
{
	return o->poll_ms > 0 ? o->poll_ms : 500;
}

/* Turns slot SL once on worker W's connection, outside the pool's lock,
 * and sets when its next turn is due: at its own due time or one poll
 * later, whichever comes first (commands are looked at every poll).
 * Returns true when its run is over. */
static bool
turn_slot(struct worker *w, struct slot *sl)
{
	struct run *r = &sl->r;
	enum engine_outcome outcome;
	bool over = false;
	int64_t next;
	int t;

	/* The connection is opened on the file serve locked, or not at all
	 * (store_open_again checks it after the open); a database removed
	 * meanwhile is the scheduler's to say, and holds every turn. */
	if (w->s == NULL && store_open_again(w->p->s, &w->s, w->err, sizeof(w->err)) != 0) {
		log_event("error", r->plan->name, NULL, "%s; trying again in %d s", w->err,
		    OPEN_RETRY_MS / 1000);
		sl->next_ms = clock_mono_ms() + OPEN_RETRY_MS;
		return false;
	}
	r->s = w->s;
	r->inputs.s = w->s;
	r->err = w->err;
	r->errlen = sizeof(w->err);
	t = engine__turn(r, &outcome, &over);
	if (t < 0 && !engine__busy_retry(r, "store"))
		log_event("error", r->plan->name, NULL, "%s", w->err);
	engine__busy_settle(r, t);
	if (over) {
		if (!r->ended_at_open || r->settle_open_seen)
			log_event("info", r->plan->name, NULL, "run ended: %s",
			    engine_outcome_name(outcome));
		return true;
	}
	next = clock_mono_ms() + poll_of(w->p->o);
	if (r->due_ms > 0 && r->due_ms < next)
		next = r->due_ms;
	sl->next_ms = next;
	return false;
}

/* The slot due first that no worker has, or NULL; *WAKE is when the
 * earliest of the others is due, if sooner than it was. Under the lock. */
static struct slot *
due_slot(struct engine_pool *p, int64_t now, int64_t *wake)
{
	struct slot *best = NULL;

	if (p->held)
		return NULL;
	for (size_t i = 0; i < p->nslots; i++) {
		struct slot *sl = p->slots[i];

		if (sl->busy)
			continue;
		if (sl->next_ms > now) {
			if (sl->next_ms < *wake)
				*wake = sl->next_ms;
		} else if (best == NULL || sl->next_ms < best->next_ms)
			best = sl;
	}
	return best;
}

/* Removes slot SL from the pool. Under the lock. */
static void
slot_remove(struct engine_pool *p, struct slot *sl)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i] == sl) {
			p->slots[i] = p->slots[--p->nslots];
			return;
		}
}

/* Waits on W's condition until mono time WAKE at the latest. Under the
 * lock. */
static void
wait_until(struct worker *w, int64_t wake)
{
	struct timespec ts;

	ts.tv_sec = (time_t)(wake / 1000);
	ts.tv_nsec = (long)(wake % 1000) * 1000000L;
	(void)pthread_cond_timedwait(&w->cv, &w->p->mu, &ts);
}

/* Wakes the leader, the idle worker on top, if there is one. Under the
 * lock. */
static void
wake_leader(struct engine_pool *p)
{
	if (p->nidle > 0)
		pthread_cond_signal(&p->w[p->idle[p->nidle - 1]].cv);
}

/* A worker's thread: turns the plans due, one at a time, until the stop
 * (pool_stop; the signal's flag is the scheduler's to read: a
 * sig_atomic_t is safe only in the thread the handler interrupts). */
static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct engine_pool *p = w->p;
	int self = (int)(w - p->w);

	pthread_mutex_lock(&p->mu);
	p->idle[p->nidle++] = self;
	while (!p->stop) {
		int64_t now, wake;
		struct slot *sl;

		if (p->idle[p->nidle - 1] != self) {
			pthread_cond_wait(&w->cv, &p->mu);
			continue;
		}
		now = clock_mono_ms();
		wake = now + poll_of(p->o);
		if ((sl = due_slot(p, now, &wake)) == NULL) {
			wait_until(w, wake);
			continue;
		}
		sl->busy = true;
		p->nidle--;
		wake_leader(p);
		pthread_mutex_unlock(&p->mu);
		if (turn_slot(w, sl)) {
			pthread_mutex_lock(&p->mu);
			slot_remove(p, sl);
			pthread_mutex_unlock(&p->mu);
			/* Closing its connections may wait on a slow broker:
			 * outside the lock. */
			engine__run_close(&sl->r);
			free(sl);
			pthread_mutex_lock(&p->mu);
		} else {
			pthread_mutex_lock(&p->mu);
			sl->busy = false;
		}
		p->idle[p->nidle++] = self;
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

int
engine_serve_open(struct store *s, const struct engine_opts *o, struct engine_pool **out,
    char *err, size_t errlen)
{
	pthread_condattr_t ca;
	struct engine_pool *p;
	int n = o->workers > 0 ? o->workers : ENGINE_WORKERS_DEFAULT;

	*out = NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->w = calloc((size_t)n, sizeof(*p->w))) == NULL ||
	    (p->idle = calloc((size_t)n, sizeof(*p->idle))) == NULL) {
		if (p != NULL)
			free(p->w);
		free(p);
		snprintf(err, errlen, "opening the engine's workers: out of memory");
		return -1;
	}
	p->opts = *o;
	p->opts.return_when_blocked = false;
	p->o = &p->opts;
	p->s = s;
	p->nworkers = n;
	pthread_condattr_init(&ca);
	/* Deadlines are monotonic, as the schedule is (clock_mono_ms). */
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		p->w[i].p = p;
		pthread_cond_init(&p->w[i].cv, &ca);
	}
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&p->mu, NULL);
	*out = p;
	return 0;
}

/* Starts P's workers. Returns 0, or -1 with ERR (those started are
 * stopped by engine_serve_close). */
static int
pool_start(struct engine_pool *p, char *err, size_t errlen)
{
	for (int i = 0; i < p->nworkers; i++) {
		struct worker *w = &p->w[i];
		int e;

		if ((e = pthread_create(&w->thread, NULL, worker_main, w)) != 0) {
			snprintf(err, errlen, "starting the engine's worker %d of %d: %s",
			    i + 1, p->nworkers, strerror(e));
			return -1;
		}
		w->started = true;
	}
	return 0;
}

void
engine_serve_close(struct engine_pool *p)
{
	if (p == NULL)
		return;
	pthread_mutex_lock(&p->mu);
	p->stop = true;
	for (int i = 0; i < p->nworkers; i++)
		pthread_cond_signal(&p->w[i].cv);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nworkers; i++) {
		if (p->w[i].started)
			pthread_join(p->w[i].thread, NULL);
		p->w[i].started = false;
		store_close(p->w[i].s);
		p->w[i].s = NULL;
		pthread_cond_destroy(&p->w[i].cv);
	}
	for (size_t i = 0; i < p->nslots; i++) {
		engine__run_close(&p->slots[i]->r);
		free(p->slots[i]);
	}
	free(p->slots);
	free(p->w);
	free(p->idle);
	pthread_mutex_destroy(&p->mu);
	free(p);
}

/* Whether plan ID has a slot. Under the lock. */
static bool
has_slot(const struct engine_pool *p, int64_t id)
{
	for (size_t i = 0; i < p->nslots; i++)
		if (p->slots[i]->r.id == id)
			return true;
	return false;
}

/* Opens a run of plan ID on S and gives it to the workers, due now.
 * What cannot run is said (U) and left. Returns 0, or -1 when out of
 * memory (ERR). */
static int
pool_add(struct engine_pool *p, struct store *s, struct unrunnable *u, int64_t id,
    char *err, size_t errlen)
{
	struct slot *sl, **grown;
	struct store_plan sp;
	char perr[1024];
	bool ended;

	if ((sl = calloc(1, sizeof(*sl))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	ended = store_plan_get(s, id, &sp, perr, sizeof(perr)) == 0 &&
	    (plan_status_of(sp.status) == PLAN_STATUS_ABORTED ||
	    plan_status_of(sp.status) == PLAN_STATUS_SUCCEEDED);
	if (engine__run_open(&sl->r, s, id, p->o, perr, sizeof(perr)) != 0) {
		/* An ended plan is only looked at for its settle window: one
		 * an older version stored is left. */
		if (!ended)
			engine__plan_cannot_run(s, u, id, perr);
		engine__run_close(&sl->r);
		free(sl);
		return 0;
	}
	engine__plan_can_run(s, u, id);
	sl->r.ended_at_open = ended;
	sl->next_ms = clock_mono_ms();
	pthread_mutex_lock(&p->mu);
	if (p->nslots == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;

		if ((grown = realloc(p->slots, cap * sizeof(*grown))) == NULL) {
			pthread_mutex_unlock(&p->mu);
			engine__run_close(&sl->r);
			free(sl);
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		p->slots = grown;
		p->cap = cap;
	}
	p->slots[p->nslots++] = sl;
	wake_leader(p);
	pthread_mutex_unlock(&p->mu);
	return 0;
}

/* Lists the plans of S to run into ACT and keeps, of them, those no worker
 * has yet. The listing is read under the pool's lock: a run a worker ends
 * meanwhile has recorded its end before it leaves the pool, so it is
 * either still there or no longer listed, never opened twice. Returns 0,
 * or -1 with ERR. */
static int
new_plans(struct engine_pool *p, struct store *s, struct active *act, char *err, size_t errlen)
{
	size_t k = 0;
	int rc;

	act->n = 0;
	pthread_mutex_lock(&p->mu);
	rc = store_each_plan(s, collect_active, act, err, errlen);
	for (size_t i = 0; rc == 0 && i < act->n; i++)
		if (!has_slot(p, act->ids[i]))
			act->ids[k++] = act->ids[i];
	pthread_mutex_unlock(&p->mu);
	act->n = k;
	return rc;
}

int
engine_serve(struct engine_pool *p, char *err, size_t errlen)
{
	const struct engine_opts *so = p->o;
	struct store *s = p->s;
	struct active act = { 0 };
	struct unrunnable unrun = { 0 };
	char perr[1024];
	bool file_lost = false;
	int rc = -1;

	if (pool_start(p, err, errlen) != 0)
		goto done;
	/* The first listing takes the plans that have ended too: one whose
	 * flag's settle window was open when the last serve stopped goes on
	 * reading it; the others end at their first turn. */
	act.ended = true;
	while (!(so->stop != NULL && *so->stop)) {
		/* A removed or replaced database: no step runs on a record no one
		 * will read (or on someone else's); said once, and on /healthz. */
		if (store_file_check(s, perr, sizeof(perr)) != 0) {
			if (!file_lost) {
				char text[1400];

				snprintf(text, sizeof(text), "%s; cutover takes no action "
				    "until it is restarted on a restored file", perr);
				log_event("error", NULL, NULL, "%s", text);
				engine__service_say(so, "database_lost", text);
				pthread_mutex_lock(&p->mu);
				p->held = true;
				pthread_mutex_unlock(&p->mu);
			}
			file_lost = true;
			clock_sleep_ms(poll_of(so));
			continue;
		}
		if (new_plans(p, s, &act, err, errlen) != 0)
			goto done;
		act.ended = false;
		for (size_t i = 0; i < act.n; i++)
			if (pool_add(p, s, &unrun, act.ids[i], err, errlen) != 0)
				goto done;
		clock_sleep_ms(poll_of(so));
	}
	rc = 0;
done:
	free(act.ids);
	engine__unrunnable_free(&unrun);
	return rc;
}
