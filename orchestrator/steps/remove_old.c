/* remove_old: deletes the old delay queues, each only once it is empty and
 * past its own deadline (last entry + its chain's TTL + allowance, or,
 * after move_old emptied it, what its last pass left + allowance), nothing has been published into it since the
 * watch's last sample (old_counters.c) and every old queue that
 * dead-letters into it is gone (in waves); a quorum queue, which refuses
 * if-empty, only behind a fence (old_fence.c). Records every decision. A
 * handful of AMQP connections work through the queues in parallel, so that
 * ten thousand old queues go in seconds, not minutes. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "fault.h"
#include "old_path.h"
#include "sentences.h"
#include "step.h"

#define REASON_MAX 512
#define QUEUES_PER_CONNECTION 64	/* below this, one connection is enough */
#define FAILURES_MAX 3			/* broker failures in a row that stop a worker */
#define LEFT_IN_ERR 5			/* left queues an error message names */
#define BASIS_MAX 200

enum outcome { OUT_NONE, OUT_REMOVED, OUT_GONE, OUT_LEFT, OUT_WOULD };

static const char *const outcome_names[] = {
	"left", "removed", "gone", "left", "would_remove"
};

/* One old queue and what became of it. */
struct item {
	const char *name;		/* borrowed: the measured result or the selection */
	const char *type;		/* "" when unknown */
	int64_t ttl_ms;			/* -1 unknown */
	int64_t deadline_ms;		/* -1 unknown */
	char basis[BASIS_MAX];		/* what the deadline is made of */
	enum outcome outcome;
	int64_t seen;			/* depth the passive declare saw, -1: not checked */
	int64_t purged;			/* deleted with it (no if-empty), -1: n/a */
	int64_t at_ms;
	char reason[REASON_MAX];
	bool fence_wanted;		/* checked; to be fenced before the delete */
	struct old_fence *fence;	/* its fence, or NULL */
	int markers;			/* remove_old's markers in it */
	const json_t *fed_by;		/* measured: old queues that dead-letter
					 * into it (array of names), or NULL */
	int wave;			/* 0: fed by no old queue; else 1 + its
					 * feeders' largest wave */
};

struct worker;

/* The queues to check and delete, shared by the workers. */
struct work {
	struct step_ctx *c;
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

static void set_reason(struct item *it, enum outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
set_reason(struct item *it, enum outcome o, const char *fmt, ...)
{
	va_list ap;

	it->outcome = o;
	va_start(ap, fmt);
	vsnprintf(it->reason, sizeof(it->reason), fmt, ap);
	va_end(ap);
}

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
	char why[512], when[40];
	int r;

	r = broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why));
	it->at_ms = old_now_ms(c);
	if (r == BROKER_NOT_FOUND) {
		set_reason(it, OUT_GONE, "already gone");
		return 0;
	}
	if (r != 0) {
		set_reason(it, OUT_LEFT, "checking it failed: %s", why);
		return -1;
	}
	it->seen = qi.messages;
	if (qi.messages > 0) {
		set_reason(it, OUT_LEFT, "holds %u message%s although past its deadline: "
		    "something still publishes into it, or its messages do not expire",
		    qi.messages, qi.messages == 1 ? "" : "s");
		return 0;
	}
	if (qi.consumers > 0) {
		set_reason(it, OUT_LEFT, "has %u consumer%s (which may hold unacknowledged "
		    "messages): not a delay queue to remove", qi.consumers,
		    qi.consumers == 1 ? "" : "s");
		return 0;
	}
	if (o->dry_run) {
		set_reason(it, OUT_WOULD, "empty, unused and past its deadline; would be "
		    "deleted %s", classic ? "with if-empty and if-unused" :
		    "after fencing it (a policy: max-length 0, reject-publish) and "
		    "checking it again, without if-empty/if-unused (not supported by "
		    "this queue type)");
		sentences_add(it->reason, sizeof(it->reason), "its deadline: %s (%s)",
		    old_time_format(it->deadline_ms, when, sizeof(when)), it->basis);
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
		set_reason(it, OUT_REMOVED, "empty, unused and past its deadline; deleted "
		    "with if-empty and if-unused");
		return 0;
	}
	if (r == BROKER_EPRECONDITION) {
		/* The broker's own check: something entered or attached since ours. */
		if (broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why)) == 0)
			set_reason(it, OUT_LEFT, "a message arrived or a consumer attached "
			    "between the check and the delete: the broker refused the "
			    "if-empty/if-unused delete (now %u message%s, %u consumer%s)",
			    qi.messages, qi.messages == 1 ? "" : "s", qi.consumers,
			    qi.consumers == 1 ? "" : "s");
		else
			set_reason(it, OUT_LEFT, "a message arrived or a consumer attached "
			    "between the check and the delete: the broker refused the "
			    "if-empty/if-unused delete");
		return 0;
	}
	set_reason(it, OUT_LEFT, "deleting it failed: %s", why);
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
	sentences_add(it->reason, sizeof(it->reason), "%d marker message%s "
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
		set_reason(it, OUT_LEFT, "checked empty, but not deleted: %s",
		    it->fence->why);
		return;
	}
	r = old_fence_seal(wk->b, it->name, it->fence->policy, &it->markers, &sealed,
	    why, sizeof(why));
	if (r != 0 || !sealed) {
		set_reason(it, OUT_LEFT, "fenced (policy '%s'), then not deleted: %s",
		    it->fence->policy, why);
		if (r < 0)
			failed(wk);
		return;
	}
	r = broker_queue_inspect(wk->b, it->name, &qi, why, sizeof(why));
	if (r != 0) {
		set_reason(it, OUT_LEFT, "fenced, then checking it again failed: %s", why);
		unseal(wk, it);
		failed(wk);
		return;
	}
	if (qi.messages > (uint32_t)it->markers || qi.consumers > 0) {
		it->seen = (int64_t)qi.messages - it->markers;
		set_reason(it, OUT_LEFT, "fenced, then found holding %lld message%s besides "
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
		set_reason(it, OUT_LEFT, "fenced and checked, then deleting it failed: %s",
		    why);
		unseal(wk, it);
		failed(wk);
		return;
	}
	fault_point("remove_old.deleted");	/* deleted, not yet recorded */
	it->purged = purged > (uint32_t)it->markers ? purged - (uint32_t)it->markers : 0;
	if (it->purged == 0)
		set_reason(it, OUT_REMOVED, "%s queue: checked empty and unused, fenced "
		    "(policy '%s': max-length 0, overflow reject-publish; a publish was "
		    "refused, so it was in force), checked again, then deleted without "
		    "if-empty/if-unused, which %s queues do not support; the delete took "
		    "only remove_old's marker", it->type, it->fence->policy, it->type);
	else
		set_reason(it, OUT_REMOVED, "%s queue: checked empty and unused, fenced, "
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
		if (step_broker_open(p, STEP_BROKER_TIMEOUT_MS, &wk->b, why, sizeof(why)) != 0)
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
	wk[0].b = w->c->amqp;
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

/* Writes MS, rounded up to a second, as "1h21m51s". Returns OUT. */
static char *
to_go(int64_t ms, char *out, size_t outlen)
{
	static const struct { const char *unit; int64_t s; } parts[] = {
		{ "d", 86400 }, { "h", 3600 }, { "m", 60 }, { "s", 1 }
	};
	int64_t left = (ms + 999) / 1000;
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < 4 && off < outlen; i++) {
		if (left < parts[i].s && !(i == 3 && off == 0))
			continue;
		off += (size_t)snprintf(out + off, outlen - off, "%lld%s",
		    (long long)(left / parts[i].s), parts[i].unit);
		left %= parts[i].s;
	}
	return out;
}

static json_t *
int_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static int64_t
jint(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* The deadline move_old gives IT, selected as OQ (issue 18): when the
 * plan's move succeeded, its last pass covered the queue (not skipped),
 * its TTL is not higher than the move saw, and the watch (whose counters
 * start from that pass) saw nothing enter the old path after the pass
 * began, the later of the not-before of what the pass left in it
 * ("left_until_ms") and the pass's start, + the allowance. A message
 * entering later is the watch's and the publish counters' to catch (and
 * the exact empty check's), as ever. Writes what it is made of into
 * IT->basis. Returns it, or -1 when the old deadline stands. */
static int64_t
moved_deadline(const struct step_ctx *c, const struct old_queue *oq, struct item *it)
{
	const json_t *m = c->moved, *e;
	int64_t at = jint(m, "pass_started_ms"), from = at;
	char t1[40], a[32];

	if (m == NULL || c->watched == NULL || !json_is_true(json_object_get(m, "ok")) ||
	    at <= 0 || c->old_last_entry_ms > at)
		return -1;
	e = old_json_by_name(json_object_get(m, "queues"), it->name);
	if (e == NULL || json_object_get(e, "skipped_why") != NULL ||
	    jint(e, "skipped") > 0 || jint(e, "pass_done") < jint(m, "pass") ||
	    !json_is_integer(json_object_get(e, "ttl_ms")) ||
	    oq->ttl_ms > jint(e, "ttl_ms"))
		return -1;
	duration_format(c->plan->watch.allowance_ms, a, sizeof(a));
	if (jint(e, "left") > 0) {
		if (!json_is_integer(json_object_get(e, "left_until_ms")))
			return -1;
		if (jint(e, "left_until_ms") > from)
			from = jint(e, "left_until_ms");
		snprintf(it->basis, sizeof(it->basis), "move_old's last pass left %lld "
		    "message%s not before %s, + allowance %s", (long long)jint(e, "left"),
		    jint(e, "left") == 1 ? "" : "s", old_time_format(from, t1, sizeof(t1)),
		    a);
	} else
		snprintf(it->basis, sizeof(it->basis), "move_old's last pass, begun %s, "
		    "left nothing in it and nothing entered the old path since, + "
		    "allowance %s", old_time_format(at, t1, sizeof(t1)), a);
	return from + c->plan->watch.allowance_ms;
}

/* Sets IT's deadline (selected as OQ): move_old's (moved_deadline), else
 * last entry + its TTL + allowance. */
static void
set_deadline(const struct step_ctx *c, const struct old_queue *oq, struct item *it)
{
	char a[32], b[32], t2[40];

	if ((it->deadline_ms = moved_deadline(c, oq, it)) >= 0)
		return;
	it->deadline_ms = old_deadline_ms(c->old_last_entry_ms, it->ttl_ms,
	    c->plan->watch.allowance_ms);
	snprintf(it->basis, sizeof(it->basis), "last entry %s + TTL %s + allowance %s",
	    old_time_format(c->old_last_entry_ms, t2, sizeof(t2)),
	    duration_format(it->ttl_ms, a, sizeof(a)),
	    duration_format(c->plan->watch.allowance_ms, b, sizeof(b)));
}

/* Decides, without touching the broker, what can be checked: measured and
 * still selected, with a known TTL and past its deadline. Returns how many
 * of ITEMS it put in TODO; MEASURED[i] tells whether selected queue i is
 * among ITEMS. */
static size_t
triage(struct step_ctx *c, const struct old_selection *s, struct item *items,
    size_t nitems, struct item **todo, bool *measured, int64_t now)
{
	char d[32], t1[40];
	size_t i, n = 0;

	for (i = 0; i < nitems; i++) {
		struct item *it = &items[i];
		const struct old_queue *oq = old_sel_find(s, it->name);

		it->at_ms = now;
		if (oq == NULL) {
			if (mgmt_queue_list_find(&s->list, it->name) != NULL)
				set_reason(it, OUT_LEFT, "no longer selected by old.queues: "
				    "not touched");
			else
				set_reason(it, OUT_GONE, "already gone (not in the queue "
				    "listing)");
			continue;
		}
		measured[oq - s->v] = true;
		it->type = oq->q->type;
		/* A TTL raised since the measure moves the deadline later. */
		if (oq->ttl_ms > it->ttl_ms)
			it->ttl_ms = oq->ttl_ms;
		set_deadline(c, oq, it);
		if (it->deadline_ms < 0) {
			set_reason(it, OUT_LEFT, "no TTL is known for it, so it has no "
			    "deadline");
			continue;
		}
		if (now < it->deadline_ms) {
			set_reason(it, OUT_LEFT, "not yet past its deadline %s (%s): %s to go",
			    old_time_format(it->deadline_ms, t1, sizeof(t1)), it->basis,
			    to_go(it->deadline_ms - now, d, sizeof(d)));
			continue;
		}
		todo[n++] = it;
	}
	return n;
}

/* Runs PASS over the N items of LIST on the connections O asks for.
 * Returns how many connections worked. */
static int
run_pass(struct step_ctx *c, const struct old_remove_opts *o,
    void (*pass)(struct worker *, struct item *), struct item **list, size_t n)
{
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
	w = (struct work){ .c = c, .o = o, .pass = pass, .todo = list, .ntodo = n };
	atomic_init(&w.next, 0);
	atomic_init(&w.stop, false);
	atomic_init(&w.connected, 0);
	nconn = run_workers(&w, k);
	for (size_t i = 0; i < n; i++)
		if (list[i]->outcome == OUT_NONE && (pass == fenced_pass ||
		    !list[i]->fence_wanted))
			set_reason(list[i], OUT_LEFT, "not attempted: the broker failed "
			    "on %d queues in a row just before (see the entries with "
			    "\"failed\")", FAILURES_MAX);
	return nconn;
}

/* Leaves every queue of TODO whose publish counter or depth says that
 * something may have entered it since the baseline (the watch's last
 * sample, C->watched, or else PRE, read when remove_old started), read
 * now from selection S's listing (old_select_counted), after the
 * baseline and before any delete. Returns how many remain in TODO
 * (compacted). */
static size_t
check_counters(struct step_ctx *c, const struct old_counters *pre,
    const struct old_selection *s, struct item **todo, size_t ntodo)
{
	struct old_counters base = { 0 }, now = { 0 };
	const struct old_counters *b = pre;
	const char *what = "remove_old's first reading";
	char why[REASON_MAX];
	size_t i, n = 0;

	if (c->watched != NULL) {
		if (old_counters_from_watch(c->watched, &base, why, sizeof(why)) != 0) {
			for (i = 0; i < ntodo; i++)
				set_reason(todo[i], OUT_LEFT, "no baseline for its publish "
				    "counter: %s", why);
			return 0;
		}
		b = &base;
		what = "the watch's last sample";
	}
	if (old_counters_from_selection(s, &now, why, sizeof(why)) != 0) {
		for (i = 0; i < ntodo; i++)
			set_reason(todo[i], OUT_LEFT, "%s", why);
		old_counters_free(&base);
		return 0;
	}
	for (i = 0; i < ntodo; i++) {
		if (old_counters_changed(b, &now, todo[i]->name, what, why, sizeof(why)))
			set_reason(todo[i], OUT_LEFT, "%s", why);
		else
			todo[n++] = todo[i];
	}
	old_counters_free(&base);
	old_counters_free(&now);
	return n;
}

static struct item *
find_item(struct item *items, size_t nitems, const char *name)
{
	for (size_t i = 0; i < nitems; i++)
		if (strcmp(items[i].name, name) == 0)
			return &items[i];
	return NULL;
}

/* Sets each item's wave from its feeders (measured "fed_by"). Returns the
 * largest wave, or -1 on a cycle (measure_horizon refuses those). */
static int
set_waves(struct item *items, size_t nitems)
{
	int top = 0;
	bool changed = true;

	for (size_t round = 0; changed; round++) {
		if (round > nitems)
			return -1;
		changed = false;
		for (size_t i = 0; i < nitems; i++) {
			const json_t *f;
			size_t k;

			json_array_foreach(items[i].fed_by, k, f) {
				struct item *src = json_is_string(f) ? find_item(items, nitems,
				    json_string_value(f)) : NULL;

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
feeder_left(struct item *items, size_t nitems, struct item *it, bool dry_run)
{
	const json_t *f;
	size_t k;

	json_array_foreach(it->fed_by, k, f) {
		const struct item *src = json_is_string(f) ? find_item(items, nitems,
		    json_string_value(f)) : NULL;

		if (src == NULL || src == it || src->outcome == OUT_REMOVED ||
		    src->outcome == OUT_GONE || (dry_run && src->outcome == OUT_WOULD))
			continue;
		set_reason(it, OUT_LEFT, "old queue '%s' dead-letters into it and is %s: "
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
fence_and_delete(struct step_ctx *c, const struct old_remove_opts *o,
    const struct old_selection *s, struct item **list, size_t n, char *fence_err,
    size_t felen)
{
	struct old_fence *f = calloc(n + 1, sizeof(*f));
	const char **own = calloc(n + 1, sizeof(*own));
	struct item **fl = calloc(n + 1, sizeof(*fl));
	char why[512];
	size_t nf = 0;
	int nconn = 0;

	if (f == NULL || own == NULL || fl == NULL) {
		for (size_t i = 0; i < n; i++)
			if (list[i]->fence_wanted)
				set_reason(list[i], OUT_LEFT, "out of memory for its fence");
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
	if (old_fence_put(c->mgmt, c->plan->name, f, own, nf, why, sizeof(why)) != 0) {
		for (size_t i = 0; i < nf; i++)
			set_reason(fl[i], OUT_LEFT, "checked empty, but not fenced: %s", why);
		goto done;
	}
	nconn = run_pass(c, o, fenced_pass, fl, nf);
	if (old_fence_remove(c->mgmt, f, nf, why, sizeof(why)) != 0)
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
run_waves(struct step_ctx *c, const struct old_remove_opts *o,
    const struct old_selection *s, struct item *items, size_t nitems,
    struct item **todo, size_t ntodo, int *nconn, char *fence_err, size_t felen)
{
	struct item **list = calloc(ntodo + 1, sizeof(*list));
	int top = set_waves(items, nitems), k;

	if (list == NULL)
		return -1;
	if (top < 0) {
		for (size_t i = 0; i < ntodo; i++)
			if (todo[i]->fed_by != NULL && json_array_size(todo[i]->fed_by) > 0)
				set_reason(todo[i], OUT_LEFT, "its dead-letter feeders form a "
				    "cycle: not touched");
		top = 0;
	}
	for (int wave = 0; wave <= top; wave++) {
		size_t n = 0;

		for (size_t i = 0; i < ntodo; i++)
			if (todo[i]->wave == wave && todo[i]->outcome == OUT_NONE &&
			    !feeder_left(items, nitems, todo[i], o->dry_run))
				list[n++] = todo[i];
		if ((k = run_pass(c, o, check_pass, list, n)) > *nconn)
			*nconn = k;
		if ((k = fence_and_delete(c, o, s, list, n, fence_err, felen)) > *nconn)
			*nconn = k;
	}
	free(list);
	return fence_err[0] != '\0' ? -1 : 0;
}

int
step_remove_old_prepare(struct step_ctx *c, struct step_inputs *in, json_t **result,
    char *err, size_t errlen)
{
	const json_t *watch;

	c->measured = step_input(in, PLAN_STEP_MEASURE_HORIZON);
	c->moved = step_input(in, PLAN_STEP_MOVE_OLD);
	watch = step_input(in, PLAN_STEP_WATCH);
	c->watched = watch;
	c->old_last_entry_ms = json_integer_value(json_object_get(watch,
	    "last_old_entry_ms"));
	if (c->old_last_entry_ms < c->flip_ms)
		c->old_last_entry_ms = c->flip_ms;
	if (c->measured == NULL || c->old_last_entry_ms == 0) {
		snprintf(err, errlen, "remove_old needs the results of "
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

/* Points *MQ at the measured queues of MEASURED (measure_horizon's
 * result), which must have succeeded. Returns 0, or -1 with ERR. */
static int
measured_queues(const json_t *measured, const json_t **mq, char *err, size_t errlen)
{
	*mq = json_object_get(measured, "queues");
	if (!json_is_array(*mq)) {
		snprintf(err, errlen, "remove_old needs measure_horizon's result: it "
		    "removes only queues that were measured");
		return -1;
	}
	if (!json_is_true(json_object_get(measured, "ok"))) {
		snprintf(err, errlen, "measure_horizon did not succeed: nothing is removed "
		    "on the strength of a failed measure");
		return -1;
	}
	return 0;
}

/* Fills ITEMS with the measured queues MQ (each one's TTL the larger of
 * its own and its dead-letter chain's), skipping entries without a name.
 * Returns how many it filled. */
static size_t
items_from_measured(const json_t *mq, struct item *items, int64_t now)
{
	const json_t *q;
	size_t i, nitems = 0;

	json_array_foreach(mq, i, q) {
		struct item *it = &items[nitems];

		if ((it->name = json_string_value(json_object_get(q, "name"))) == NULL)
			continue;
		it->type = json_string_value(json_object_get(q, "type"));
		if (it->type == NULL)
			it->type = "";
		it->ttl_ms = json_is_integer(json_object_get(q, "ttl_ms")) ?
		    json_integer_value(json_object_get(q, "ttl_ms")) : -1;
		/* Fed by other old queues: its messages can come out as late as
		 * the whole chain allows. */
		if (json_is_integer(json_object_get(q, "chain_ttl_ms")) &&
		    json_integer_value(json_object_get(q, "chain_ttl_ms")) > it->ttl_ms)
			it->ttl_ms = json_integer_value(json_object_get(q, "chain_ttl_ms"));
		it->fed_by = json_object_get(q, "fed_by");
		it->deadline_ms = -1;
		it->seen = -1;
		it->purged = -1;
		it->at_ms = now;
		nitems++;
	}
	return nitems;
}

/* Appends to ITEMS (NITEMS so far) every queue of S that is selected now
 * but was not measured (KNOWN[i] false), left untouched. Returns the new
 * count. */
static size_t
add_unmeasured(const struct old_selection *s, const bool *known, struct item *items,
    size_t nitems, int64_t now)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct old_queue *oq = &s->v[i];

		if (known[i])
			continue;
		items[nitems] = (struct item){ .name = oq->q->name, .type = oq->q->type,
		    .ttl_ms = oq->ttl_ms, .deadline_ms = -1, .seen = -1, .purged = -1,
		    .at_ms = now };
		set_reason(&items[nitems++], OUT_LEFT, "selected now but not measured: "
		    "not touched; measure again (a new old queue means the old path "
		    "is still in use)");
	}
	return nitems;
}

/* Appends one entry per item to ENTRIES and counts the outcomes into
 * COUNTS. Returns the messages deleted with quorum queues ("purged"). */
static int64_t
entries_add(json_t *entries, const struct item *items, size_t nitems, size_t *counts)
{
	int64_t lost = 0;

	for (size_t i = 0; i < nitems; i++) {
		const struct item *it = &items[i];

		counts[it->outcome]++;
		if (it->purged > 0)
			lost += it->purged;
		json_array_append_new(entries, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:I,"
		    "s:s}", "name", it->name, "type", it->type,
		    "outcome", outcome_names[it->outcome],
		    "messages_seen", int_or_null(it->seen),
		    "ttl_ms", int_or_null(it->ttl_ms),
		    "deadline_ms", int_or_null(it->deadline_ms),
		    "at_ms", (json_int_t)it->at_ms, "reason", it->reason));
		if (it->purged >= 0)
			json_object_set_new(json_array_get(entries, json_array_size(entries) - 1),
			    "purged", json_integer(it->purged));
		if (it->basis[0] != '\0')
			json_object_set_new(json_array_get(entries, json_array_size(entries) - 1),
			    "deadline_why", json_string(it->basis));
	}
	return lost;
}

/* Writes into ERR (emptied first) what went wrong: LOST messages deleted
 * with their queues, the NLEFT queues left (the first LEFT_IN_ERR named
 * with their reasons), and FENCE_ERR. ERR stays empty when all is well. */
static void
summary_err(char *err, size_t errlen, const struct item *items, size_t nitems,
    size_t nleft, int64_t lost, bool dry_run, const char *fence_err)
{
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
			    named ? ";" : "", items[i].name, items[i].reason);
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
	return json_pack("{s:b,s:b,s:o,s:I,s:i,s:I,s:{s:i,s:i,s:i,s:i},s:o}",
	    "ok", ok, "dry_run", o->dry_run,
	    "last_entry_ms", int_or_null(c->old_last_entry_ms > 0 ?
	    c->old_last_entry_ms : -1),
	    "allowance_ms", (json_int_t)c->plan->watch.allowance_ms,
	    "connections", nconn, "elapsed_ms", (json_int_t)(old_now_ms(NULL) - started),
	    "counts", "removed", (int)counts[OUT_REMOVED], "gone", (int)counts[OUT_GONE],
	    "left", (int)counts[OUT_LEFT], "would_remove", (int)counts[OUT_WOULD],
	    "entries", entries);
}

int
old_remove(struct step_ctx *c, const struct old_remove_opts *opts, json_t **result,
    char *err, size_t errlen)
{
	static const struct old_remove_opts defaults = { 0 };
	const struct old_remove_opts *o = opts != NULL ? opts : &defaults;
	const json_t *mq;
	struct old_selection s = { 0 };
	struct item *items = NULL, **todo = NULL;
	bool *known = NULL;
	struct old_counters pre = { 0 };
	char fence_err[600] = "";
	json_t *entries = json_array();
	int64_t now = old_now_ms(c), started = old_now_ms(NULL);
	size_t i, nitems = 0, nmeasured, ntodo = 0, counts[5] = { 0 };
	int64_t lost = 0;
	int rc = -1, nconn = 0;

	*result = NULL;
	if (measured_queues(c->measured, &mq, err, errlen) != 0)
		goto done;
	nmeasured = json_array_size(mq);
	/* Without the watch's last sample, the counters now are the baseline
	 * that the reading just before deleting is compared with. */
	if (c->old_last_entry_ms > 0 && c->watched == NULL &&
	    old_counters_read(c, &pre, err, errlen) != 0)
		goto done;
	/* The selection's listing carries the publish counters compared
	 * with that baseline (check_counters): one listing, not two. */
	if (c->old_last_entry_ms > 0 && old_select_counted(c, &s, err, errlen) != 0)
		goto done;
	/* Fences (and their markers) that a run killed mid-way left. */
	if (!o->dry_run && old_fence_sweep(c->mgmt, c->amqp, c->plan->name, err,
	    errlen) < 0)
		goto done;
	if ((items = calloc(nmeasured + s.n + 1, sizeof(*items))) == NULL ||
	    (todo = calloc(nmeasured + 1, sizeof(*todo))) == NULL ||
	    (known = calloc(s.n + 1, sizeof(*known))) == NULL) {
		snprintf(err, errlen, "out of memory for %zu queues", nmeasured);
		goto done;
	}
	nitems = items_from_measured(mq, items, now);
	if (c->old_last_entry_ms <= 0) {
		for (i = 0; i < nitems; i++)
			set_reason(&items[i], OUT_LEFT, "the last entry into the old path is "
			    "unknown, so no deadline is known: nothing is removed");
	} else {
		ntodo = triage(c, &s, items, nitems, todo, known, now);
		/* Selected now, but not measured: a new old queue. */
		nitems = add_unmeasured(&s, known, items, nitems, now);
	}
	if (ntodo > 0)
		ntodo = check_counters(c, &pre, &s, todo, ntodo);
	if (ntodo > 0 && run_waves(c, o, &s, items, nitems, todo, ntodo, &nconn,
	    fence_err, sizeof(fence_err)) != 0 && fence_err[0] == '\0')
		snprintf(fence_err, sizeof(fence_err), "out of memory");
	lost = entries_add(entries, items, nitems, counts);
	counts[OUT_LEFT] += counts[OUT_NONE];
	summary_err(err, errlen, items, nitems, counts[OUT_LEFT], lost, o->dry_run,
	    fence_err);
	if (lost > 0 || counts[OUT_LEFT] > 0 || fence_err[0] != '\0')
		goto done;
	rc = 0;
done:
	*result = result_json(c, o, rc == 0, nconn, started, counts, entries);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	free(known);
	free(todo);
	free(items);
	old_selection_free(&s);
	old_counters_free(&pre);
	return rc;
}
