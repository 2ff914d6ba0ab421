/* remove_old: deletes the old delay queues, each only once it is empty and
 * past its own deadline (last entry + its chain's TTL + allowance, or,
 * after move_old emptied it, what its last pass left + allowance), nothing has been published into it since the
 * watch's last sample (old_counters.c) and every old queue that
 * dead-letters into it is gone (in waves); a quorum queue, which refuses
 * if-empty, only behind a fence (old_fence.c). Records every decision. A
 * handful of AMQP connections work through the queues in parallel, so that
 * ten thousand old queues go in seconds, not minutes. An old ladder's
 * exchanges go after its level queues (remove_old_exchanges.c). */
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "errbuf.h"
#include "fault.h"
#include "old_path.h"
#include "sentences.h"
#include "remove_old_int.h"
#include "step.h"

#define QUEUES_PER_CONNECTION 64	/* below this, one connection is enough */
#define FAILURES_MAX 3			/* broker failures in a row that stop a worker */
#define LEFT_IN_ERR 5			/* left queues an error message names */
#define RUN_SPACING 20			/* a waiting run's time to the next, at
					 * least, in multiples of its own (as
					 * the gate's previews) */

static const char *const outcome_names[OUT_COUNT] = {
	"left", "removed", "gone", "left", "would_remove", "waiting"
};

struct worker;

/* The queues to check and delete, shared by the workers. */
struct work {
	struct step_ctx *c;
	struct rm_run *r;
	const struct old_remove_opts *o;
	void (*pass)(struct worker *, struct item *);
	struct item **todo;
	size_t ntodo;
	atomic_size_t next;		/* next index of TODO to take */
	atomic_bool stop;		/* the broker keeps failing: take no more */
	atomic_int connected;		/* connections that worked */
};

struct worker {
	struct work *w;
	struct broker *b;		/* the step's own for worker 0 */
	bool own;			/* B opened by this worker */
	pthread_t th;
	int failures;			/* broker failures in a row */
};

/* Notes a broker failure; after FAILURES_MAX in a row, stops every worker
 * (the broker is gone or refusing: better to stop than to fail 10,000
 * times). */
static void
failed(struct worker *wk)
{
	if (++wk->failures >= FAILURES_MAX)
		atomic_store(&wk->w->stop, true);
}

/* Checks IT; deletes it when empty and unused if classic (with if-empty
 * and if-unused), or marks it to be fenced first. Returns -1 when a broker
 * call failed on it (its reason says why), else 0. */
static int
check_queue(struct worker *wk, struct item *it)
{
	struct step_ctx *c = wk->w->c;
	const struct old_remove_opts *o = wk->w->o;
	struct broker_queue_info qi;
	bool classic = strcmp(it->type, "classic") == 0;
	uint32_t purged = 0;
	char why[512], when[40], basis[BASIS_MAX];
	int r;

	r = broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why));
	it->at_ms = old_now_ms(c);
	if (r == BROKER_NOT_FOUND) {
		rm_set_reason(it, OUT_GONE, "already gone");
		return 0;
	}
	if (r != 0) {
		rm_set_reason(it, OUT_LEFT, "checking it failed: %s", why);
		return -1;
	}
	it->seen = qi.messages;
	if (qi.messages > 0) {
		rm_held(wk->w->r, it, qi.messages);
		return 0;
	}
	if (qi.consumers > 0) {
		rm_set_reason(it, OUT_LEFT, "has %u consumer%s (which may hold unacknowledged "
		    "messages): not a delay queue to remove", qi.consumers,
		    qi.consumers == 1 ? "" : "s");
		return 0;
	}
	if (o->dry_run) {
		rm_set_reason(it, OUT_WOULD, "empty, unused and past its deadline; would be "
		    "deleted %s", classic ? "with if-empty and if-unused" :
		    "after fencing it (a policy: max-length 0, reject-publish) and "
		    "checking it again, without if-empty/if-unused (not supported by "
		    "this queue type)");
		rm_add_reason(wk->w->r, it, "its deadline: %s (%s)",
		    old_time_format(it->deadline_ms, when, sizeof(when)),
		    rm_basis(wk->w->r, it, basis, sizeof(basis)));
		return 0;
	}
	if (!classic) {
		it->fence_wanted = true;	/* fenced_pass deletes it */
		return 0;
	}
	if (o->between != NULL)
		o->between(o->arg, it->name);
	r = broker_queue_delete(wk->b, it->name, BROKER_IF_EMPTY | BROKER_IF_UNUSED,
	    &purged, why, sizeof(why));
	it->at_ms = old_now_ms(c);
	if (r == 0) {
		fault_point("remove_old.deleted");	/* deleted, not yet recorded */
		rm_set_reason(it, OUT_REMOVED, "empty, unused and past its deadline; deleted "
		    "with if-empty and if-unused");
		return 0;
	}
	if (r == BROKER_EPRECONDITION) {
		/* The broker's own check: something entered or attached since ours. */
		if (broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why)) == 0)
			rm_set_reason(it, OUT_LEFT, "a message arrived or a consumer attached "
			    "between the check and the delete: the broker refused the "
			    "if-empty/if-unused delete (now %u message%s, %u consumer%s)",
			    qi.messages, qi.messages == 1 ? "" : "s", qi.consumers,
			    qi.consumers == 1 ? "" : "s");
		else
			rm_set_reason(it, OUT_LEFT, "a message arrived or a consumer attached "
			    "between the check and the delete: the broker refused the "
			    "if-empty/if-unused delete");
		return 0;
	}
	rm_set_reason(it, OUT_LEFT, "deleting it failed: %s", why);
	return -1;
}

/* check_queue on IT, counting the queues on which the broker failed in a
 * row (a delete refused after a check that worked is one too). */
static void
check_pass(struct worker *wk, struct item *it)
{
	if (check_queue(wk, it) != 0)
		failed(wk);
	else
		wk->failures = 0;
}

/* Takes back IT's markers; says so in its reason when it cannot. */
static void
unseal(struct worker *wk, struct item *it)
{
	char why[512];

	if (it->markers == 0 ||
	    old_fence_unseal(wk->b, it->name, it->fence->policy, &it->markers, why,
	    sizeof(why)) == 0)
		return;
	rm_add_reason(wk->w->r, it, "%d marker message%s "
	    "(id '%s') could not be taken back and will dead-letter with its TTL: %s",
	    it->markers, it->markers == 1 ? "" : "s", it->fence->policy, why);
}

/* Deletes fenced IT: seals the fence (old_fence_seal), checks again that
 * nothing but the marker is in it and nothing consumes it, and deletes
 * it; any message beyond the marker that the delete took is counted in
 * "purged" and fails the step. */
static void
fenced_pass(struct worker *wk, struct item *it)
{
	struct step_ctx *c = wk->w->c;
	const struct old_remove_opts *o = wk->w->o;
	struct broker_queue_info qi;
	uint32_t purged = 0;
	char why[512];
	bool sealed = false;
	int r;

	it->at_ms = old_now_ms(c);
	if (!it->fence->effective) {
		rm_set_reason(it, OUT_LEFT, "checked empty, but not deleted: %s",
		    it->fence->why);
		return;
	}
	r = old_fence_seal(wk->b, it->name, it->fence->policy, &it->markers, &sealed,
	    why, sizeof(why));
	if (r != 0 || !sealed) {
		rm_set_reason(it, OUT_LEFT, "fenced (policy '%s'), then not deleted: %s",
		    it->fence->policy, why);
		if (r < 0)
			failed(wk);
		return;
	}
	r = broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why));
	if (r != 0) {
		rm_set_reason(it, OUT_LEFT, "fenced, then checking it again failed: %s", why);
		unseal(wk, it);
		failed(wk);
		return;
	}
	if (qi.messages > (uint32_t)it->markers || qi.consumers > 0) {
		it->seen = (int64_t)qi.messages - it->markers;
		rm_set_reason(it, OUT_LEFT, "fenced, then found holding %lld message%s besides "
		    "remove_old's marker and %u consumer%s: something entered or attached "
		    "before the fence took effect (its publish counter now counts the "
		    "marker too: a later run leaves it until the old path is watched "
		    "again)", (long long)it->seen, it->seen == 1 ? "" : "s", qi.consumers,
		    qi.consumers == 1 ? "" : "s");
		unseal(wk, it);
		return;
	}
	if (o->between != NULL)
		o->between(o->arg, it->name);
	r = broker_queue_delete(wk->b, it->name, 0, &purged, why, sizeof(why));
	it->at_ms = old_now_ms(c);
	if (r != 0) {
		rm_set_reason(it, OUT_LEFT, "fenced and checked, then deleting it failed: %s",
		    why);
		unseal(wk, it);
		failed(wk);
		return;
	}
	fault_point("remove_old.deleted");	/* deleted, not yet recorded */
	it->purged = purged > (uint32_t)it->markers ? purged - (uint32_t)it->markers : 0;
	if (it->purged == 0)
		rm_set_reason(it, OUT_REMOVED, "%s queue: checked empty and unused, fenced "
		    "(policy '%s': max-length 0, overflow reject-publish; a publish was "
		    "refused, so it was in force), checked again, then deleted without "
		    "if-empty/if-unused, which %s queues do not support; the delete took "
		    "only remove_old's marker", it->type, it->fence->policy, it->type);
	else
		rm_set_reason(it, OUT_REMOVED, "%s queue: checked empty and unused, fenced, "
		    "checked again, then deleted without if-empty/if-unused (not "
		    "supported); %lld message%s that entered despite the fence %s deleted "
		    "with it", it->type, (long long)it->purged, it->purged == 1 ? "" : "s",
		    it->purged == 1 ? "was" : "were");
}

static void *
work_loop(void *arg)
{
	struct worker *wk = arg;
	struct work *w = wk->w;
	const struct plan *p = w->c->plan;
	char why[512];
	size_t i;

	if (wk->b == NULL) {
		if (step_broker_open(&p->broker, STEP_BROKER_TIMEOUT_MS, &wk->b, why, sizeof(why)) != 0)
			return NULL;	/* the other connections do its share */
		wk->own = true;
	}
	atomic_fetch_add(&w->connected, 1);
	while (!atomic_load(&w->stop) &&
	    (i = atomic_fetch_add(&w->next, 1)) < w->ntodo)
		w->pass(wk, w->todo[i]);
	return NULL;
}

/* Checks and deletes W's queues over N connections: the step's own in this
 * thread, the others opened by their threads. Returns how many connections
 * worked. */
static int
run_workers(struct work *w, int n)
{
	struct worker one = { 0 }, *wk = &one;
	int i, started = 1;

	if (n > 1 && (wk = calloc((size_t)n, sizeof(*wk))) == NULL) {
		wk = &one;
		n = 1;
	}
	for (i = 0; i < n; i++)
		wk[i].w = w;
	wk[0].b = w->c->old_amqp;
	for (i = 1; i < n; i++) {
		if (pthread_create(&wk[i].th, NULL, work_loop, &wk[i]) != 0)
			break;
		started++;
	}
	work_loop(&wk[0]);
	for (i = 1; i < started; i++)
		pthread_join(wk[i].th, NULL);
	for (i = 0; i < started; i++)
		if (wk[i].own)
			broker_close(wk[i].b);
	if (wk != &one)
		free(wk);
	return atomic_load(&w->connected);
}

static json_t *
int_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

/* Runs PASS over the N items of LIST on the connections O asks for.
 * Returns how many connections worked. */
static int
run_pass(struct rm_run *r, void (*pass)(struct worker *, struct item *),
    struct item **list, size_t n)
{
	struct step_ctx *c = r->c;
	const struct old_remove_opts *o = r->o;
	struct work w;
	int k, nconn;

	if (n == 0)
		return 0;
	k = o->connections > 0 ? o->connections :
	    (int)((n + QUEUES_PER_CONNECTION - 1) / QUEUES_PER_CONNECTION);
	if (k > OLD_CONNECTIONS_MAX)
		k = OLD_CONNECTIONS_MAX;
	if ((size_t)k > n)
		k = (int)n;
	w = (struct work){ .c = c, .r = r, .o = o, .pass = pass, .todo = list,
	    .ntodo = n };
	atomic_init(&w.next, 0);
	atomic_init(&w.stop, false);
	atomic_init(&w.connected, 0);
	nconn = run_workers(&w, k);
	for (size_t i = 0; i < n; i++)
		if (list[i]->outcome == OUT_NONE && (pass == fenced_pass ||
		    !list[i]->fence_wanted))
			rm_set_reason(list[i], OUT_LEFT, "not attempted: the broker failed "
			    "on %d queues in a row just before (see the entries with "
			    "\"failed\")", FAILURES_MAX);
	return nconn;
}

/* The item named NAME: a measured queue's at its place in the measure's
 * list (R->mq), any other found by a scan. */
static struct item *
find_item(const struct rm_run *r, struct item *items, size_t nitems, const char *name)
{
	const struct old_measured_queue *m = old_measured_find(r->mq, name);

	if (m != NULL && m->ord < nitems && strcmp(items[m->ord].name, name) == 0)
		return &items[m->ord];
	for (size_t i = 0; i < nitems; i++)
		if (strcmp(items[i].name, name) == 0)
			return &items[i];
	return NULL;
}

/* Sets each item's wave from its feeders (measured "fed_by"). Returns the
 * largest wave, or -1 on a cycle (measure_horizon refuses those). */
static int
set_waves(const struct rm_run *r, struct item *items, size_t nitems)
{
	int top = 0;
	bool changed = true;

	for (size_t round = 0; changed; round++) {
		if (round > nitems)
			return -1;
		changed = false;
		for (size_t i = 0; i < nitems; i++) {
			for (size_t k = 0; k < rm_nfed(&items[i]); k++) {
				struct item *src = find_item(r, items, nitems,
				    rm_fed_by(&items[i], k));

				if (src != NULL && src != &items[i] &&
				    src->wave + 1 > items[i].wave) {
					items[i].wave = src->wave + 1;
					changed = true;
					if (items[i].wave > top)
						top = items[i].wave;
				}
			}
		}
	}
	return top;
}

/* Leaves IT when an old queue that dead-letters into it is still there.
 * Returns true when it was left. */
static bool
feeder_left(const struct rm_run *r, struct item *items, size_t nitems, struct item *it)
{
	for (size_t k = 0; k < rm_nfed(it); k++) {
		const struct item *src = find_item(r, items, nitems, rm_fed_by(it, k));

		if (src == NULL || src == it || src->outcome == OUT_REMOVED ||
		    src->outcome == OUT_GONE || (r->o->dry_run && src->outcome == OUT_WOULD))
			continue;
		if (src->outcome == OUT_WAIT) {
			rm_set_reason(it, OUT_WAIT, "old queue '%s' dead-letters into it "
			    "and waits: a queue is deleted only after every old queue "
			    "that feeds it is gone", src->name);
			it->wait = WAIT_DEADLINE;
			it->wait_since_ms = src->wait_since_ms;
			it->wait_until_ms = src->wait_until_ms;
			return true;
		}
		rm_set_reason(it, OUT_LEFT, "old queue '%s' dead-letters into it and is %s: "
		    "a queue is deleted only after every old queue that feeds it is gone",
		    src->name, src->outcome == OUT_NONE ? "not yet checked" : "left");
		return true;
	}
	return false;
}

/* Fences the checked non-classic queues of LIST, deletes them behind
 * their fences, and removes the fences. Returns the connections used; a
 * fence that could not be removed is named in FENCE_ERR. */
static int
fence_and_delete(struct rm_run *r, const struct old_selection *s,
    struct item **list, size_t n, char *fence_err, size_t felen)
{
	struct step_ctx *c = r->c;
	struct old_fence *f = NULL;
	const char **own = NULL;
	struct item **fl = NULL;
	char why[512];
	size_t nf = 0, want = 0;
	int nconn = 0;

	/* A fence is over 600 bytes: as many as there are queues to fence,
	 * not as there are queues (classic ones, the most, need none). */
	for (size_t i = 0; i < n; i++)
		want += list[i]->fence_wanted;
	if (want == 0)
		return 0;
	f = calloc(want, sizeof(*f));
	own = calloc(want, sizeof(*own));
	fl = calloc(want, sizeof(*fl));
	if (f == NULL || own == NULL || fl == NULL) {
		for (size_t i = 0; i < n; i++)
			if (list[i]->fence_wanted)
				rm_set_reason(list[i], OUT_LEFT, "out of memory for its fence");
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		const struct mgmt_queue *q;

		if (!list[i]->fence_wanted)
			continue;
		q = mgmt_queue_list_find(&s->list, list[i]->name);
		f[nf].queue = list[i]->name;
		own[nf] = q != NULL ? q->policy : NULL;
		list[i]->fence = &f[nf];
		fl[nf++] = list[i];
	}
	if (nf == 0)
		goto done;
	if (old_fence_put(c->old_mgmt, c->plan->name, f, own, nf, why, sizeof(why)) != 0) {
		for (size_t i = 0; i < nf; i++)
			rm_set_reason(fl[i], OUT_LEFT, "checked empty, but not fenced: %s", why);
		goto done;
	}
	nconn = run_pass(r, fenced_pass, fl, nf);
	if (old_fence_remove(c->old_mgmt, f, nf, why, sizeof(why)) != 0)
		snprintf(fence_err, felen, "%s", why);
done:
	for (size_t i = 0; i < nf; i++)
		fl[i]->fence = NULL;
	free(f);
	free(own);
	free(fl);
	return nconn;
}

/* Checks and deletes TODO in waves: a queue fed by other old queues only
 * once they are gone. Sets *NCONN to the most connections that worked.
 * Returns 0, or -1 when a fence could not be removed (FENCE_ERR). */
static int
run_waves(struct rm_run *r, const struct old_selection *s, struct item *items,
    size_t nitems, struct item **todo, size_t ntodo, int *nconn, char *fence_err,
    size_t felen)
{
	struct item **list = calloc(ntodo + 1, sizeof(*list));
	int top = set_waves(r, items, nitems), k;

	if (list == NULL)
		return -1;
	if (top < 0) {
		for (size_t i = 0; i < ntodo; i++)
			if (rm_nfed(todo[i]) > 0)
				rm_set_reason(todo[i], OUT_LEFT, "its dead-letter feeders form a "
				    "cycle: not touched");
		top = 0;
	}
	for (int wave = 0; wave <= top; wave++) {
		size_t n = 0;

		for (size_t i = 0; i < ntodo; i++)
			if (todo[i]->wave == wave && todo[i]->outcome == OUT_NONE &&
			    !feeder_left(r, items, nitems, todo[i]))
				list[n++] = todo[i];
		if ((k = run_pass(r, check_pass, list, n)) > *nconn)
			*nconn = k;
		if ((k = fence_and_delete(r, s, list, n, fence_err, felen)) > *nconn)
			*nconn = k;
	}
	free(list);
	return fence_err[0] != '\0' ? -1 : 0;
}

/* step_input_apart's FN: an element of the watch's last sample into the
 * counters at ARG. */
static int
counter_add(const json_t *e, void *arg)
{
	return old_counters_add(arg, e);
}

/* What remove_old keeps of the watch's result, read from IN: its last
 * sample of every old queue ("old_last") as a table (C->watched_last),
 * its queues the ended watch's rows, read an element at a time (at
 * 100,000 old queues the sample's tree would be some 45 MB), or the
 * state's own "queues" as an earlier version wrote them; and the rest
 * (the last entry, the members that joined) as a tree, without them.
 * When that read fails, the whole result's tree, as step_input gives it
 * (rm_baseline then reads the sample from it, or says what it lacks).
 * Returns what C->watched is to be. */
static const json_t *
watched_kept(struct step_ctx *c, struct step_inputs *in)
{
	struct old_counters *o = calloc(1, sizeof(*o));
	const json_t *rest = NULL, *last, *e;
	json_t *queues;
	size_t i;

	if (o == NULL)
		return step_input(in, PLAN_STEP_WATCH);
	/* Kept across runs (step_old_inputs), it outlives the counters. */
	o->names_from = c->measured_queues;
	if (step_input_apart(in, PLAN_STEP_WATCH, "entries", counter_add, o,
	    &rest) != 0)
		goto whole;
	last = json_object_get(rest, "old_last");
	if (!old_last_in_entries(last)) {
		/* The rows were a running watch's counters, or none: the sample
		 * is the state's own list, as an earlier version wrote it. */
		old_counters_free(o);
		o->names_from = c->measured_queues;
		if (!json_is_array(queues = json_object_get(last, "queues"))) {
			free(o);
			return rest;
		}
		json_array_foreach(queues, i, e)
			if (counter_add(e, o) != 0)
				goto whole;
		json_array_clear(queues);
	}
	o->at_ms = json_integer_value(json_object_get(last, "at_ms"));
	/* Written only by the tick that ends the watch, which read every old
	 * queue with a passive declare (watch.c, tick_status). */
	o->exact = true;
	old_counters_end(o);
	c->watched_last = o;
	return rest;
whole:
	old_counters_free(o);
	free(o);
	return step_input(in, PLAN_STEP_WATCH);
}

int
step_remove_old_prepare(struct step_ctx *c, struct step_inputs *in, json_t **result,
    char *err, size_t errlen)
{
	const json_t *watch;

	c->flip_ms = step_input_ended(in, PLAN_STEP_FLIP);
	if (step_old_inputs(c, in, true, err, errlen) != 0) {
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	watch = watched_kept(c, in);
	c->watched = watch;
	if (step_restored(c, err, errlen) != 0) {
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	c->old_last_entry_ms = json_integer_value(json_object_get(watch,
	    "last_old_entry_ms"));
	if (c->old_last_entry_ms < c->flip_ms)
		c->old_last_entry_ms = c->flip_ms;
	if (c->measured == NULL || c->old_last_entry_ms == 0) {
		errbuf_set(err, errlen, "remove_old needs the results of "
		    "measure_horizon and the flip, and this plan has none recorded");
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	return 0;
}

int
step_remove_old(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	if (step_flag_require_on(c, result, err, errlen) != 0)
		return -1;
	return old_remove(c, NULL, result, err, errlen);
}

int
step_remove_old_preview(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	static const struct old_remove_opts dry = { .dry_run = true };

	return old_remove(c, &dry, result, err, errlen);
}

/* Points R->mq at measure_horizon's queues (C->measured, which must have
 * succeeded): C->measured_queues, else read from its tree into R->mq_own;
 * and R->moved at move_old's likewise (NULL when it has none, or out of
 * memory: no queue then takes move_old's deadline, the later one from the
 * last entry stands). Returns 0, or -1 with ERR. */
static int
measured_queues(struct rm_run *r, char *err, size_t errlen)
{
	const struct step_ctx *c = r->c;

	if (!json_is_array(json_object_get(c->measured, "queues"))) {
		errbuf_set(err, errlen, "remove_old needs measure_horizon's result: it "
		    "removes only queues that were measured");
		return -1;
	}
	if (!json_is_true(json_object_get(c->measured, "ok"))) {
		errbuf_set(err, errlen, "measure_horizon did not succeed: nothing is removed "
		    "on the strength of a failed measure");
		return -1;
	}
	r->mq = c->measured_queues;
	if (r->mq == NULL) {
		if (old_measured_read(c->measured, &r->mq_own) != 0) {
			errbuf_set(err, errlen, "out of memory for the measured queues");
			return -1;
		}
		r->mq = &r->mq_own;
	}
	r->moved = c->moved_queues;
	if (r->moved == NULL && c->moved != NULL &&
	    old_moved_read(c->moved, &r->moved_own) == 0)
		r->moved = &r->moved_own;
	return 0;
}

/* A queue an earlier run of this step removed is gone now: it keeps that
 * run's outcome and reason, so the result still says what was deleted. */
static void
carry_removed(const struct rm_run *r, struct item *items, size_t nitems)
{
	const struct rm_removed *e;

	for (size_t i = 0; i < nitems && r->nremoved > 0; i++) {
		if (items[i].outcome != OUT_GONE ||
		    (e = rm_removed_find(r, items[i].name)) == NULL)
			continue;
		rm_set_reason(&items[i], OUT_REMOVED, "%s", e->reason);
		if (e->at_ms != 0)
			items[i].at_ms = e->at_ms;
	}
}

/* IT's entry of the step's result (a new reference, NULL out of memory):
 * with "wait" when it waits, which the next run reads. */
static json_t *
entry_json(const struct rm_run *r, const struct item *it)
{
	char reason[REASON_MAX], basis[BASIS_MAX];
	const char *why = rm_basis(r, it, basis, sizeof(basis));
	int64_t bp, bm;
	json_t *e = json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:I,s:s}", "name", it->name,
	    "type", it->type, "outcome", outcome_names[it->outcome],
	    "messages_seen", int_or_null(it->seen), "ttl_ms", int_or_null(it->ttl_ms),
	    "deadline_ms", int_or_null(it->deadline_ms), "at_ms", (json_int_t)it->at_ms,
	    "reason", rm_reason(r, it, reason, sizeof(reason)));

	if (e != NULL && it->purged >= 0)
		json_object_set_new(e, "purged", json_integer(it->purged));
	if (e != NULL && why[0] != '\0')
		json_object_set_new(e, "deadline_why", json_string(why));
	/* The baseline the next run compares this queue with. */
	if (e != NULL && rm_kept_counter(r, it->name, &bp, &bm)) {
		json_object_set_new(e, "baseline_publish", int_or_null(bp));
		json_object_set_new(e, "baseline_messages", int_or_null(bm));
	}
	/* What the next run reads back (rm_last_read). */
	if (e != NULL && it->outcome == OUT_WAIT)
		json_object_set_new(e, "wait", json_pack("{s:s,s:I,s:I}",
		    "kind", rm_wait_name(it->wait), "since_ms", (json_int_t)it->wait_since_ms,
		    "until_ms", (json_int_t)it->wait_until_ms));
	return e;
}

/* Hands over one entry per item: into ROWS, an entry's text at a time,
 * when not NULL (the engine writes them a row each: no tree of every
 * entry is made), else appended to ENTRIES; and counts the outcomes into
 * COUNTS. Returns the messages deleted with quorum queues ("purged"), or
 * -1 when out of memory. */
static int64_t
entries_add(const struct rm_run *r, struct step_rows *rows, json_t *entries,
    const struct item *items, size_t nitems, size_t *counts)
{
	int64_t lost = 0;

	for (size_t i = 0; i < nitems; i++) {
		const struct item *it = &items[i];

		counts[it->outcome]++;
		if (it->purged > 0)
			lost += it->purged;
		if (step_rows_put(rows, entries, entry_json(r, it)) != 0)
			return -1;
	}
	return lost;
}

/* Writes into ERR (emptied first) what went wrong: LOST messages deleted
 * with their queues, the NLEFT queues left (the first LEFT_IN_ERR named
 * with their reasons), and FENCE_ERR. ERR stays empty when all is well. */
static void
summary_err(const struct rm_run *r, char *err, size_t errlen, const struct item *items,
    size_t nitems, size_t nleft, int64_t lost, bool dry_run, const char *fence_err)
{
	char reason[REASON_MAX];
	size_t off, named = 0;

	err[0] = '\0';
	if (lost > 0)
		sentences_add(err, errlen, "%lld message%s entered quorum old "
		    "queues between the check and the delete and %s deleted with them "
		    "(see \"purged\")", (long long)lost, lost == 1 ? "" : "s",
		    lost == 1 ? "was" : "were");
	if (nleft > 0) {
		sentences_add(err, errlen, "%zu of %zu old queues "
		    "%s left:", nleft, nitems, dry_run ? "would be" : "are");
		off = strlen(err);
		for (size_t i = 0; i < nitems && off < errlen; i++) {
			if (items[i].outcome != OUT_LEFT && items[i].outcome != OUT_NONE)
				continue;
			if (named == LEFT_IN_ERR) {
				snprintf(err + off, errlen - off, " and %zu more",
				    nleft - named);
				break;
			}
			off += (size_t)snprintf(err + off, errlen - off, "%s %s (%s)",
			    named ? ";" : "", items[i].name,
			    rm_reason(r, &items[i], reason, sizeof(reason)));
			named++;
		}
	}
	if (fence_err[0] != '\0')
		sentences_add(err, errlen, "%s", fence_err);
}

/* The step's result: OK, the counts, the connections used, the time taken
 * since STARTED and ENTRIES (stolen). */
static json_t *
result_json(const struct step_ctx *c, const struct old_remove_opts *o, bool ok,
    int nconn, int64_t started, const size_t *counts, json_t *entries)
{
	return json_pack("{s:b,s:b,s:o,s:I,s:i,s:I,s:{s:i,s:i,s:i,s:i,s:i},s:o}",
	    "ok", ok, "dry_run", o->dry_run,
	    "last_entry_ms", int_or_null(c->old_last_entry_ms > 0 ?
	    c->old_last_entry_ms : -1),
	    "allowance_ms", (json_int_t)c->plan->watch.allowance_ms,
	    "connections", nconn, "elapsed_ms", (json_int_t)(old_now_ms(NULL) - started),
	    "counts", "removed", (int)counts[OUT_REMOVED], "gone", (int)counts[OUT_GONE],
	    "left", (int)counts[OUT_LEFT], "would_remove", (int)counts[OUT_WOULD],
	    "waiting", (int)counts[OUT_WAIT],
	    "entries", entries);
}

/* The end of a run, ELAPSED_MS long, whose only queues left wait for
 * something time resolves: the step goes on (ctx.again) and its result
 * says so and when it looks again: after watch.interval, or RUN_SPACING
 * times this run's time when that is longer, so that waiting runs take
 * about a twentieth of the broker's time (a run reads every old queue's
 * counters, some of them at once: at 100,000 queues about a minute of the
 * broker's CPU). A queue then goes up to that much after its deadline,
 * never before. Returns 0; a dry run has no later run, so it returns -1
 * (ERR names the waits). */
static int
waiting_end(struct step_ctx *c, const struct old_remove_opts *o, size_t nwait,
    int64_t elapsed_ms, json_t *result, char *err, size_t errlen)
{
	int64_t after = RUN_SPACING * elapsed_ms;
	char what[400];

	if (after < c->plan->watch.interval_ms)
		after = c->plan->watch.interval_ms;
	snprintf(what, sizeof(what), "waiting: %zu old queue%s not yet ready to go "
	    "(see each entry's reason); checked again after watch.interval, or %d "
	    "times a run's time when that is longer (\"again_after_ms\")", nwait,
	    nwait == 1 ? "" : "s", RUN_SPACING);
	json_object_set_new(result, "again_after_ms", json_integer(after));
	json_object_set_new(result, "status", json_string(what));
	if (o->dry_run) {
		errbuf_set(err, errlen, "%s", what);
		return -1;
	}
	c->again = true;
	c->again_after_ms = after;
	err[0] = '\0';
	return 0;
}

int
old_remove(struct step_ctx *c, const struct old_remove_opts *opts, json_t **result,
    char *err, size_t errlen)
{
	static const struct old_remove_opts defaults = { 0 };
	const struct old_remove_opts *o = opts != NULL ? opts : &defaults;
	struct rm_run r = { .c = c, .o = o, .now = old_now_ms(c) };
	struct old_selection s = { 0 };
	struct item *items = NULL, **todo = NULL;
	char fence_err[600] = "", xerr[1024] = "";
	json_t *entries = json_array(), *xs = json_object();
	int64_t started = old_now_ms(NULL), lost = 0;
	size_t i, nitems = 0, nmembers, ntodo = 0, counts[OUT_COUNT] = { 0 };
	int rc = -1, nconn = 0;

	*result = NULL;
	/* This step's own last result, when it runs again after a wait: what
	 * each queue waits for and the baseline since. */
	r.prev = o->dry_run ? NULL : c->state;
	if (measured_queues(&r, err, errlen) != 0 || rm_last_read(&r, err, errlen) != 0)
		goto done;
	if (c->old_last_entry_ms > 0 && rm_baseline(&r, err, errlen) != 0)
		goto done;
	/* The selection's listing carries the publish counters compared
	 * with that baseline: one listing, not two. */
	if (c->old_last_entry_ms > 0 && old_select_counted(c, &s, err, errlen) != 0)
		goto done;
	/* What reading the listing let go (at 100,000 queues the names read
	 * by name, each queue's answer) goes back before the items are made:
	 * freed small blocks are no room for one large table. */
	malloc_trim(0);
	/* Fences (and their markers) that a run killed mid-way left. */
	if (!o->dry_run && old_fence_sweep(c->old_mgmt, c->old_amqp, c->plan->name, err,
	    errlen) < 0)
		goto done;
	/* Counted first: an array for every queue listed and measured
	 * would be twice the size, and memory malloc hands back from a
	 * freed listing is cleared whole by calloc, touched or not. */
	nmembers = rm_items(&r, &s, NULL);
	if ((items = calloc(nmembers + 1, sizeof(*items))) == NULL ||
	    (todo = calloc(nmembers + 1, sizeof(*todo))) == NULL) {
		errbuf_set(err, errlen, "out of memory for %zu queues", nmembers);
		goto done;
	}
	nitems = rm_items(&r, &s, items);
	if (c->old_last_entry_ms <= 0) {
		for (i = 0; i < nitems; i++)
			rm_set_reason(&items[i], OUT_LEFT, "the last entry into the old path "
			    "is unknown, so no deadline is known: nothing is removed");
	} else if (!rm_restarted(&r, &s, items, nitems))
		ntodo = rm_triage(&r, &s, items, nitems, todo);
	if (ntodo > 0 && run_waves(&r, &s, items, nitems, todo, ntodo, &nconn,
	    fence_err, sizeof(fence_err)) != 0 && fence_err[0] == '\0')
		snprintf(fence_err, sizeof(fence_err), "out of memory");
	for (i = 0; i < nitems; i++)
		if (items[i].outcome == OUT_NONE)
			rm_set_reason(&items[i], OUT_LEFT, "not checked");
	carry_removed(&r, items, nitems);
	rm_keep_baseline(&r, &s);
	if ((lost = entries_add(&r, c->rows_wanted && !o->dry_run ? &c->rows : NULL, entries,
	    items, nitems, counts)) < 0) {
		errbuf_set(err, errlen, "the result's %zu entries: %s", nitems,
		    c->rows.err[0] != '\0' ? c->rows.err : "out of memory");
		step_rows_clear(&c->rows);	/* none rather than some */
		goto done;
	}
	summary_err(&r, err, errlen, items, nitems, counts[OUT_LEFT], lost, o->dry_run,
	    fence_err);
	if (rm_exchanges(&r, &s, items, nitems, xs, xerr, sizeof(xerr)) != 0)
		sentences_add(err, errlen, "%s", xerr);
	if (lost > 0 || counts[OUT_LEFT] > 0 || fence_err[0] != '\0' || xerr[0] != '\0')
		goto done;
	rc = 0;
done:
	*result = result_json(c, o, rc == 0, nconn, started, counts, entries);
	json_object_update(*result, xs);
	json_decref(xs);
	if (nitems > 0)
		rm_state_json(&r, *result);
	if (rc == 0 && counts[OUT_WAIT] > 0)
		rc = waiting_end(c, o, counts[OUT_WAIT], old_now_ms(NULL) - started, *result,
		    err, errlen);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	free(todo);
	rm_items_free(items, nitems);
	free(items);
	old_selection_free(&s);
	old_counters_free(&r.base);
	old_measured_free(&r.mq_own);
	old_moved_free(&r.moved_own);
	rm_last_free(&r);
	return rc;
}
