/* watch: the watch step — from the flip until the old path's deadline, one
 * tick per call (the engine calls it again one watch.interval later with
 * the state this tick returned): samples the old path (total depth,
 * non-empty queues, cumulative publishes) and the ladder (depth per level,
 * parking depth, cumulative publishes into the level exchanges), sends and
 * collects probes through the ladder, re-verifies the ladder, raises
 * alerts, downsamples old samples, and finishes only when the deadline has
 * passed, the old path is empty and no alert is open. Each tick also reads
 * the plan's flag back: off (someone turned it off: producers are back on
 * the old path) or unreadable, it raises flag_off or flag_unreadable and
 * the watch cannot end that tick, whatever was acknowledged; read on again
 * after reading off, the last entry into the old path is that moment.
 *
 * The deadline is max(flip, last entry into the old path) + the largest
 * old TTL + watch.allowance, and never moves earlier. Everything a resumed
 * watch needs (its start, its deadline, the counters it compares against,
 * the probes in flight) is in the state it returns, so a watch killed at
 * any instant resumes where it was.
 *
 * The deadline must have passed on the wall clock and in monotonic time
 * since the flip (the state keeps how long the watch has run, measured
 * on CLOCK_MONOTONIC), so a clock jumped forward cannot end the watch
 * early. Probe timing and lateness are monotonic too.
 *
 * Parking holds only what no destination takes; cutover's own messages
 * that end there (a killed canary's, probes parked while the probe queue
 * was missing) are taken out and accounted for, and only the others
 * raise the parking alert. A restart of a broker node (watch_nodes) or a
 * level queue's new leader raises broker_restart with the old-path
 * messages exposed to at-most-once dead-lettering, which holds the watch
 * until acknowledged. */
#include <sys/types.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "fault.h"
#include "ladder.h"
#include "old_path.h"
#include "parking.h"
#include "publish.h"
#include "sentences.h"
#include "clock.h"
#include "step.h"
#include "topology.h"
#include "watch_nodes.h"


#define WATCH_STATE_VERSION	1
#define ACTOR			"engine"

/* Management statistics (queue message_stats.publish, exchange
 * publish_in, and the listing's depths) lag the broker by up to about
 * 5-10 s (DESIGN §3). How the watch lives with that:
 *   - a publish into the old path is counted when the statistics show it,
 *     and last_old_entry_ms is stamped with the moment the watch saw it,
 *     never earlier than it happened: a late count moves the deadline
 *     later, never earlier;
 *   - publishes made just before the flip show up to this long after it
 *     and cannot be told apart from publishes just after it, so growth
 *     seen in this window moves the deadline without an alert (the
 *     deadline then covers them either way); the window also holds the
 *     watch open at least this long after the flip, so every pre-flip
 *     publish has been counted before it can end;
 *   - depths come from exact AMQP passive declares wherever it matters
 *     (every old queue up to OLD_EXACT_MAX, the non-empty ones beyond,
 *     and every old queue before the watch may end), not from the
 *     statistics;
 *   - watch.allowance (30 s by default) is the margin after the largest
 *     TTL for the broker to forward what expires, and the lag never eats
 *     into it: an entry is stamped when the statistics show it, up to a
 *     lag after it happened, so each message's real margin is the
 *     allowance plus that delay. What the lag can hide is an entry in the
 *     last seconds before the end; the end needs an old path that exact
 *     passive declares find empty, so such a message still waiting holds
 *     the watch, and its publish, shown seconds later, raises old_publish
 *     and moves the deadline. */
#define OLD_STATS_LAG_MS	10000

/* Old queues read with an exact passive declare each tick: all of them up
 * to this many, else the non-empty ones (by the listing) up to this many.
 * Before ending, every old queue is read exactly, however many. */
#define OLD_EXACT_MAX		1000

/* Probes. A probe is due at its not-before time; the watch looks for it
 * until not-before + canary.max_lateness + this grace (the canary's), and
 * then calls it lost. */
#define PROBE_GRACE_MS		1000
#define PROBE_OUTSTANDING_MAX	32	/* in flight at once, at most */
#define PROBE_DRAIN_MAX		1000	/* read from the probe queue per tick, at most */
#define PROBE_POLL_MS		20	/* while waiting for a due probe */
#define PROBE_AWAIT_MIN_MS	1000
#define PROBE_RECENT_MAX	64	/* latenesses kept for the median */
#define PROBE_PUBLISH_TIMEOUT_MS 5000
#define PROBE_QUEUE_EXPIRES_MIN_MS (60 * 60 * 1000)

/* Parking. The watch looks through the parking queue (parking_walk) only
 * when its depth differs from what the last walk left there, reading at
 * most PARK_WALK_READ messages. Each walk that leaves foreign messages
 * redelivers them, which a quorum queue counts against its delivery-limit
 * (20 by default on RabbitMQ 4.0, then dropped): after PARK_REQUEUES_MAX
 * such walks in a row the watch stops looking until parking is empty. */
#define PARK_WALK_READ		PARKING_WALK_MAX
#define PARK_REQUEUES_MAX	5
#define PARK_LISTED		5	/* own messages named in the event */

/* Downsampling: every DS_EVERY_MS of watch time, samples older than
 * DS_AFTER_MS are folded into one per DS_BUCKET_MS bucket and series,
 * keeping the largest value (store_samples_downsample: depths, lateness
 * and cumulative counts all read right as a maximum). The last hour stays
 * at the watch's interval; older samples keep ten-minute resolution, which
 * is what a chart of a 12-day watch shows anyway, with every peak kept.
 * At 34 series and a 10 s interval, 12 days leave about
 * 34 x (420 + 1,728) = 73,000 rows instead of 3,440,000:
 * bench/watch_samples.c measured 4.4 MB against 178 MB.
 *
 * One fold, not a finer one for the last day and a coarser one beyond:
 * store_samples_downsample reads every row of the plan older than its
 * limit (samples_plan_ts), folded or not, and looks each one's bucket up
 * in its temporary table's index (temp.fold_key, store_engine.c), so each
 * run costs about the rows older than the limit; a second tier would add
 * a second such pass over the past at its own, shorter period. */
#define DS_EVERY_MS		(10 * 60 * 1000)
#define DS_AFTER_MS		(60 * 60 * 1000)
#define DS_BUCKET_MS		(10 * 60 * 1000)

#define NAMES_LISTED		5	/* names an alert message lists at most */
#define NEW_KNOWN_MAX		32	/* unmeasured old queues remembered */
#define ALERTS_MAX		16	/* kinds pending in one tick */
#define ALERT_MSG_MAX		500
#define HELD_MAX		10000	/* non-empty old queues remembered */

struct probe {
	int64_t seq, sent_ms, not_before_ms;	/* wall clock, as stamped */
	int64_t sent_mono, not_before_mono;	/* clock_mono_ms */
};

/* What persists from tick to tick (the state JSON, as a struct). */
struct wstate {
	int64_t started_ms, flip_ms, max_ttl_ms, allowance_ms;
	char max_ttl_queue[LADDER_NAME_MAX];
	int64_t last_old_entry_ms, deadline_ms, ticks, last_tick_ms;
	int64_t old_publishes;		/* cumulative, as last seen; -1: not yet */
	int64_t old_after_flip;		/* publishes counted after the settle window */
	int64_t old_settled;		/* publishes counted within it */
	int64_t old_resets;		/* times the total went down */
	char known_new[NEW_KNOWN_MAX][LADDER_NAME_MAX]; /* unmeasured queues
					 * alerted already */
	size_t nknown_new;
	int64_t unmeasured_seen;	/* unmeasured old queues last seen */
	int64_t ladder_publishes;	/* cumulative; -1: not yet */
	int64_t probe_delay_ms, probe_seq, probe_next_ms, probe_checked_ms;
	struct probe out[PROBE_OUTSTANDING_MAX];
	size_t nout;
	int64_t sent, arrived, lost, late, early, unmeasured, stale, foreign;
	int64_t recent[PROBE_RECENT_MAX];
	size_t nrecent;
	int64_t last_late, max_late;
	bool have_late;
	int64_t verify_next_ms, verify_last_ms;
	int verify_ok;			/* 1, 0, or -1 when not run yet */
	int64_t ds_last_ms;
	int flag_state;			/* STEP_FLAG_* as last read */
	int64_t flag_checked_ms;	/* when (0: not yet) */
	int64_t flag_not_on_ms;		/* since when it has not read on, 0 */
	char flag_detail[300];		/* what the last read saw */

	/* Monotonic time (clock_mono_ms) of the boot BOOT_ID: the watch's
	 * age since the flip, at the last tick, and when the last entry
	 * into the old path was seen. probe_next_ms, probe_checked_ms and
	 * the probes' *_mono are on this clock too. */
	char boot_id[40];
	int64_t mono_last_ms, elapsed_ms, entry_elapsed_ms;
	int64_t probe_parked;		/* probes found in parking */

	/* Parking: what the last walk left, and cutover's own messages
	 * taken out so far. */
	int64_t park_known, park_foreign, park_unread, park_requeues, park_walks;
	int64_t park_canary, park_probe;

	/* The broker's nodes at the last look, and the old-path messages
	 * exposed to at-most-once dead-lettering (classic old queues) at
	 * the last sample. */
	struct watch_nodes nodes;
	bool have_nodes;
	int64_t amo_depth, amo_at_ms;
	/* The level queues' leaders (classic: nodes) at the last look, and
	 * when to look again (monotonic). */
	char leaders[LADDER_MAX_LEVELS][WATCH_NODE_NAME_MAX];
	bool have_leaders;
	int64_t places_next_ms;
};

struct sample {
	int64_t ts;
	const char *metric;
	char label[8];
	double v;
};

struct pending {
	char kind[32];
	char msg[ALERT_MSG_MAX + 1];
};

/* One old queue as this tick sees it. */
struct oldq {
	const char *name;		/* borrowed from the listing */
	int64_t listed;			/* depth by the statistics */
	int64_t exact;			/* by a passive declare, -1 when not read */
	int64_t publish;		/* message_stats.publish, -1 when absent */
	bool measured;
	bool gone;			/* the passive declare found no queue */
};

/* One tick. */
struct tick {
	struct step_ctx *c;
	const struct plan *p;
	struct wstate *w;
	int64_t now;			/* the step clock (deadline, samples) */
	int64_t mono;			/* clock_mono_ms at the tick's start */
	bool failed;			/* a broker call failed: never done */
	char vhost[3 * 256 + 1];	/* escaped for paths */
	char probe_queue[LADDER_NAME_MAX], probe_pattern[LADDER_NAME_MAX];
	char canary_queue[LADDER_NAME_MAX];
	char delivery[LADDER_NAME_MAX], parking[LADDER_NAME_MAX];
	bool probe_ready;		/* the probe queue is declared and bound */
	struct topology topo;		/* names the old selection must not catch */

	/* The old path. */
	json_t *listing;
	struct oldq *q;
	size_t nq;
	bool old_seen;			/* the listing answered */
	bool old_exact_all;		/* every old queue was read exactly */
	int64_t old_depth, old_nonempty, old_gone;

	/* The ladder. */
	int64_t depth[LADDER_MAX_LEVELS];
	bool depth_seen, parking_seen;
	int64_t parking_depth;

	struct sample *s;
	size_t ns, scap;
	struct pending a[ALERTS_MAX];
	size_t na;
	bool deadline_moved;
	char moved_why[200];
	bool flag_held;			/* the flag did not read on this tick */
	json_t *held;			/* old queues holding messages now:
					 * name -> depth (persisted as old.held) */
	json_t *park_taken;		/* own messages taken from parking this
					 * tick, for the event; NULL when none */
};

static void appendf(char *, size_t, const char *, ...)
    __attribute__((format(printf, 3, 4)));
static void alert(struct tick *, const char *, const char *, ...)
    __attribute__((format(printf, 3, 4)));
static int probe_drain(struct tick *);

/* Appends to BUF, separating from what is there with "; ". */
static void
appendf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sentences_vadd(buf, len, fmt, ap);
	va_end(ap);
}

/* Queues an alert of KIND for this tick; a second one of the same kind in
 * the same tick is appended to the first (one raise per kind and tick). */
static void
alert(struct tick *t, const char *kind, const char *fmt, ...)
{
	struct pending *pa = NULL;
	char msg[ALERT_MSG_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < t->na; i++)
		if (strcmp(t->a[i].kind, kind) == 0)
			pa = &t->a[i];
	if (pa != NULL) {
		appendf(pa->msg, sizeof(pa->msg), "%s", msg);
		return;
	}
	if (t->na == ALERTS_MAX)
		return;
	pa = &t->a[t->na++];
	snprintf(pa->kind, sizeof(pa->kind), "%s", kind);
	snprintf(pa->msg, sizeof(pa->msg), "%s", msg);
}

/* A broker or management call failed: alert, and the watch cannot end
 * this tick. */
static void
unreachable(struct tick *t, const char *what, const char *why)
{
	t->failed = true;
	alert(t, "broker_unreachable", "%s: %s", what, why);
}

static int
sample(struct tick *t, int64_t ts, const char *metric, const char *label, double v)
{
	struct sample *ns;

	if (t->ns == t->scap) {
		size_t cap = t->scap ? 2 * t->scap : 64;

		if ((ns = realloc(t->s, cap * sizeof(*ns))) == NULL)
			return -1;
		t->s = ns;
		t->scap = cap;
	}
	t->s[t->ns].ts = ts;
	t->s[t->ns].metric = metric;
	snprintf(t->s[t->ns].label, sizeof(t->s[t->ns].label), "%s", label);
	t->s[t->ns++].v = v;
	return 0;
}

static int64_t
jint(const json_t *o, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static json_t *
int_or_null(int64_t v, bool have)
{
	return have ? json_integer(v) : json_null();
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- state ---- */

/* The deadline the state's figures give, never earlier than the last. */
static void
update_deadline(struct wstate *w)
{
	int64_t from = w->last_old_entry_ms > w->flip_ms ? w->last_old_entry_ms : w->flip_ms;
	int64_t d = from + w->max_ttl_ms + w->allowance_ms;

	if (d > w->deadline_ms)
		w->deadline_ms = d;
}

/* measure_horizon's largest TTL and its queue. Returns 0 or -1. */
static int
measured_ttl(const json_t *measured, int64_t *ttl, const char **queue)
{
	const json_t *sum = json_object_get(measured, "summary");

	*ttl = jint(sum, "max_ttl_ms", -1);
	*queue = json_string_value(json_object_get(sum, "max_ttl_queue"));
	return *ttl >= 0 ? 0 : -1;
}

/* The probe's delay: one watch.interval rounded up to whole units (at
 * least one unit, at most the ladder's largest delay). Sent at the end of
 * a tick, a probe is then due about when the next tick starts, which
 * reads it within the tick's own latency of its arrival (or waits a
 * moment for it): its lateness is measured, not blurred by a whole
 * interval between looks. One interval is short (few probes in flight,
 * a lost one known within an interval and the lateness bound) and still
 * crosses the levels of the bits of interval / unit (10 s on a 1 s
 * ladder: levels 3 and 1), through waiting and bypass bindings down to
 * the delivery exchange, as every delayed message ends; the canary
 * checked the other paths before the flip, and verify_ladder re-checks
 * every binding each probe_every. */
static int64_t
probe_delay(const struct plan *p)
{
	const struct ladder *l = &p->ladder;
	uint64_t units = (uint64_t)((p->watch.interval_ms + l->unit_ms - 1) / l->unit_ms);

	if (units < 1)
		units = 1;
	if (units > ladder_max_units(l))
		units = ladder_max_units(l);
	return (int64_t)units * l->unit_ms;
}

static void
state_init(struct wstate *w, const struct step_ctx *c, int64_t now, int64_t ttl,
    const char *ttl_queue)
{
	memset(w, 0, sizeof(*w));
	w->flip_ms = c->flip_ms > 0 ? c->flip_ms : now;
	w->started_ms = w->flip_ms;
	w->max_ttl_ms = ttl;
	snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
	    ttl_queue ? ttl_queue : "");
	w->allowance_ms = c->plan->watch.allowance_ms;
	w->last_old_entry_ms = w->flip_ms;
	w->old_publishes = -1;
	w->ladder_publishes = -1;
	w->probe_delay_ms = probe_delay(c->plan);
	w->verify_ok = -1;
	w->flag_state = STEP_FLAG_ON;	/* the flip read it back on */
	w->elapsed_ms = -1;
	update_deadline(w);
}

/* The names of the STEP_FLAG_* states in the persisted state. */
static const struct {
	int state;
	const char *name;
} flag_states[] = {
	{ STEP_FLAG_ON, "on" },
	{ STEP_FLAG_OFF, "off" },
	{ STEP_FLAG_UNREADABLE, "unreadable" },
};

static const char *
flag_state_name(int state)
{
	for (size_t i = 0; i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (flag_states[i].state == state)
			return flag_states[i].name;
	return "unreadable";
}

/* Reads the persisted "flag" member F into W; a state without one (written
 * before the watch read the flag) is "on", as the flip left it. */
static void
flag_state_read(struct wstate *w, const json_t *f)
{
	const char *name = json_string_value(json_object_get(f, "state"));
	const char *detail = json_string_value(json_object_get(f, "detail"));

	w->flag_state = STEP_FLAG_ON;
	for (size_t i = 0; name != NULL &&
	    i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (strcmp(flag_states[i].name, name) == 0)
			w->flag_state = flag_states[i].state;
	w->flag_checked_ms = jint(f, "checked_ms", 0);
	w->flag_not_on_ms = jint(f, "not_on_since_ms", 0);
	snprintf(w->flag_detail, sizeof(w->flag_detail), "%s", detail ? detail : "");
}

/* Reads the parts of a persisted state J that issue 14 added (a state
 * without them reads as a new watch would start them). */
static void
state_read_more(struct wstate *w, const json_t *j)
{
	const json_t *clk = json_object_get(j, "clock"), *pk = json_object_get(j, "parking");
	const json_t *amo = json_object_get(j, "old_at_most_once");
	const char *boot = json_string_value(json_object_get(clk, "boot_id"));
	const json_t *o;
	size_t i;

	snprintf(w->boot_id, sizeof(w->boot_id), "%s", boot ? boot : "");
	w->mono_last_ms = jint(clk, "mono_last_ms", 0);
	w->elapsed_ms = jint(clk, "elapsed_ms", -1);
	w->entry_elapsed_ms = jint(clk, "entry_elapsed_ms", 0);
	w->park_known = jint(pk, "known_depth", 0);
	w->park_foreign = jint(pk, "foreign", 0);
	w->park_unread = jint(pk, "unread", 0);
	w->park_requeues = jint(pk, "requeues", 0);
	w->park_walks = jint(pk, "walks", 0);
	w->park_canary = jint(json_object_get(pk, "own_taken"), "canary", 0);
	w->park_probe = jint(json_object_get(pk, "own_taken"), "probe", 0);
	w->have_nodes = json_is_array(json_object_get(j, "nodes"));
	watch_nodes_parse(json_object_get(j, "nodes"), &w->nodes);
	w->amo_depth = jint(amo, "depth", -1);
	w->amo_at_ms = jint(amo, "at_ms", 0);
	w->have_leaders = json_is_array(json_object_get(j, "level_leaders"));
	json_array_foreach(json_object_get(j, "level_leaders"), i, o)
		if (i < LADDER_MAX_LEVELS && json_is_string(o))
			snprintf(w->leaders[i], sizeof(w->leaders[i]), "%s",
			    json_string_value(o));
	w->places_next_ms = jint(j, "places_next_mono_ms", 0);
}

/* Brings the watch's monotonic times to this tick (wall clock WALL,
 * monotonic MONO): adds the monotonic time since the last tick to the
 * watch's age. Across a reboot (another boot id, or a clock behind the
 * last tick's) monotonic stamps mean nothing: the age grows by the wall
 * clock's difference instead (never by less than zero), and the probes'
 * monotonic times are rebased from their wall-clock stamps. */
static void
clock_tick(struct wstate *w, int64_t wall, int64_t mono)
{
	char boot[sizeof(w->boot_id)];
	bool same;

	(void)clock_boot_id(boot, sizeof(boot));
	same = strcmp(w->boot_id, boot) == 0 && w->mono_last_ms > 0 &&
	    mono >= w->mono_last_ms;
	if (w->elapsed_ms < 0) {
		/* The first tick (or a state from before): the flip and the
		 * last entry are known only on the wall clock. */
		w->elapsed_ms = wall > w->flip_ms ? wall - w->flip_ms : 0;
		w->entry_elapsed_ms = w->last_old_entry_ms > w->flip_ms ?
		    w->last_old_entry_ms - w->flip_ms : 0;
	} else if (same)
		w->elapsed_ms += mono - w->mono_last_ms;
	else if (wall > w->last_tick_ms)
		w->elapsed_ms += wall - w->last_tick_ms;
	if (!same) {
		w->probe_next_ms = 0;
		w->probe_checked_ms = 0;
		w->places_next_ms = 0;
		for (size_t i = 0; i < w->nout; i++) {
			w->out[i].sent_mono = mono + (w->out[i].sent_ms - wall);
			w->out[i].not_before_mono = mono + (w->out[i].not_before_ms - wall);
		}
	}
	snprintf(w->boot_id, sizeof(w->boot_id), "%s", boot);
	w->mono_last_ms = mono;
}

/* The deadline in the watch's monotonic age: the last entry's age + the
 * largest TTL + the allowance, and at least the statistics' lag. */
static int64_t
mono_deadline(const struct wstate *w)
{
	int64_t d = w->entry_elapsed_ms + w->max_ttl_ms + w->allowance_ms;

	return d > OLD_STATS_LAG_MS ? d : OLD_STATS_LAG_MS;
}

/* Reads a persisted state J into W. Returns 0, or -1 with ERR. */
static int
state_read(struct wstate *w, const json_t *j, char *err, size_t errlen)
{
	const json_t *old = json_object_get(j, "old"), *lad = json_object_get(j, "ladder");
	const json_t *pr = json_object_get(j, "probe"), *ver = json_object_get(j, "verify");
	const json_t *o, *ok;
	size_t i;

	memset(w, 0, sizeof(*w));
	if (jint(j, "version", -1) != WATCH_STATE_VERSION) {
		snprintf(err, errlen, "the persisted watch state has version %lld, this "
		    "binary reads version %d", (long long)jint(j, "version", -1),
		    WATCH_STATE_VERSION);
		return -1;
	}
	w->started_ms = jint(j, "started_ms", 0);
	w->flip_ms = jint(j, "flip_ms", 0);
	w->max_ttl_ms = jint(j, "max_ttl_ms", -1);
	snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
	    json_string_value(json_object_get(j, "max_ttl_queue")) ?
	    json_string_value(json_object_get(j, "max_ttl_queue")) : "");
	w->allowance_ms = jint(j, "allowance_ms", 0);
	w->last_old_entry_ms = jint(j, "last_old_entry_ms", 0);
	w->deadline_ms = jint(j, "deadline_ms", 0);
	w->ticks = jint(j, "ticks", 0);
	w->last_tick_ms = jint(j, "last_tick_ms", 0);
	w->old_publishes = jint(old, "publishes", -1);
	w->old_after_flip = jint(old, "after_flip", 0);
	w->old_settled = jint(old, "settled", 0);
	w->old_resets = jint(old, "resets", 0);
	w->unmeasured_seen = jint(old, "unmeasured_queues", 0);
	json_array_foreach(json_object_get(old, "new_queues"), i, o)
		if (json_is_string(o) && w->nknown_new < NEW_KNOWN_MAX)
			snprintf(w->known_new[w->nknown_new++], LADDER_NAME_MAX, "%s",
			    json_string_value(o));
	w->ladder_publishes = jint(lad, "publishes", -1);
	w->probe_delay_ms = jint(pr, "delay_ms", 0);
	w->probe_seq = jint(pr, "next_seq", 0);
	w->probe_next_ms = jint(pr, "next_mono_ms", 0);
	w->probe_checked_ms = jint(pr, "checked_mono_ms", 0);
	json_array_foreach(json_object_get(pr, "outstanding"), i, o) {
		if (w->nout == PROBE_OUTSTANDING_MAX)
			break;
		w->out[w->nout].seq = jint(o, "seq", -1);
		w->out[w->nout].sent_ms = jint(o, "sent_ms", 0);
		w->out[w->nout].not_before_ms = jint(o, "not_before_ms", 0);
		w->out[w->nout].sent_mono = jint(o, "sent_mono_ms", 0);
		w->out[w->nout++].not_before_mono = jint(o, "not_before_mono_ms", 0);
	}
	w->sent = jint(pr, "sent", 0);
	w->arrived = jint(pr, "arrived", 0);
	w->lost = jint(pr, "lost", 0);
	w->late = jint(pr, "late", 0);
	w->early = jint(pr, "early", 0);
	w->unmeasured = jint(pr, "unmeasured", 0);
	w->stale = jint(pr, "stale", 0);
	w->foreign = jint(pr, "foreign", 0);
	json_array_foreach(json_object_get(pr, "recent_lateness_ms"), i, o)
		if (json_is_integer(o) && w->nrecent < PROBE_RECENT_MAX)
			w->recent[w->nrecent++] = json_integer_value(o);
	w->have_late = json_is_integer(json_object_get(pr, "last_lateness_ms"));
	w->last_late = jint(pr, "last_lateness_ms", 0);
	w->max_late = jint(pr, "max_lateness_ms", 0);
	w->verify_next_ms = jint(ver, "next_ms", 0);
	w->verify_last_ms = jint(ver, "last_ms", 0);
	ok = json_object_get(ver, "ok");
	w->verify_ok = json_is_boolean(ok) ? json_is_true(ok) : -1;
	w->ds_last_ms = jint(j, "downsample_last_ms", 0);
	flag_state_read(w, json_object_get(j, "flag"));
	w->probe_parked = jint(pr, "parked", 0);
	state_read_more(w, j);
	if (w->started_ms <= 0 || w->max_ttl_ms < 0 || w->deadline_ms <= 0 ||
	    w->probe_delay_ms <= 0) {
		snprintf(err, errlen, "the persisted watch state lacks its start, "
		    "largest TTL, deadline or probe delay");
		return -1;
	}
	return 0;
}

/* Adds to J the parts of the state that issue 14 added. */
static void
state_json_more(json_t *j, const struct wstate *w)
{
	json_t *leaders;

	json_object_set_new(json_object_get(j, "probe"), "parked",
	    json_integer(w->probe_parked));
	json_object_set_new(j, "clock", json_pack("{s:s,s:I,s:I,s:I}",
	    "boot_id", w->boot_id, "mono_last_ms", (json_int_t)w->mono_last_ms,
	    "elapsed_ms", (json_int_t)w->elapsed_ms,
	    "entry_elapsed_ms", (json_int_t)w->entry_elapsed_ms));
	json_object_set_new(j, "parking", json_pack("{s:{s:I,s:I},s:I,s:I,s:I,s:I,s:I}",
	    "own_taken", "canary", (json_int_t)w->park_canary,
	    "probe", (json_int_t)w->park_probe,
	    "foreign", (json_int_t)w->park_foreign,
	    "unread", (json_int_t)w->park_unread,
	    "known_depth", (json_int_t)w->park_known,
	    "requeues", (json_int_t)w->park_requeues,
	    "walks", (json_int_t)w->park_walks));
	json_object_set_new(j, "nodes", w->have_nodes ? watch_nodes_json(&w->nodes) :
	    json_null());
	json_object_set_new(j, "old_at_most_once", json_pack("{s:o,s:I}",
	    "depth", int_or_null(w->amo_depth, w->amo_depth >= 0),
	    "at_ms", (json_int_t)w->amo_at_ms));
	if (w->have_leaders && (leaders = json_array()) != NULL) {
		int last = LADDER_MAX_LEVELS - 1;

		while (last >= 0 && w->leaders[last][0] == '\0')
			last--;
		for (int k = 0; k <= last; k++)
			json_array_append_new(leaders, json_string(w->leaders[k]));
		json_object_set_new(j, "level_leaders", leaders);
	}
	json_object_set_new(j, "places_next_mono_ms", json_integer(w->places_next_ms));
}

static int64_t
p50(const struct wstate *w)
{
	int64_t v[PROBE_RECENT_MAX];

	memcpy(v, w->recent, w->nrecent * sizeof(v[0]));
	qsort(v, w->nrecent, sizeof(v[0]), cmp_i64);
	return v[(50 * w->nrecent + 99) / 100 - 1];
}

/* The last tick's reading of each old queue, which remove_old compares
 * with its own before deleting: {"at_ms", "queues": [{"name", "publish"
 * (message_stats.publish, null when the statistics had none), "messages"
 * (exact when read so)}]}. */
static json_t *
last_sample_json(const struct tick *t)
{
	json_t *qs = json_array();

	for (size_t i = 0; i < t->nq; i++)
		json_array_append_new(qs, json_pack("{s:s,s:o,s:I}", "name", t->q[i].name,
		    "publish", int_or_null(t->q[i].publish, t->q[i].publish >= 0),
		    "messages", (json_int_t)(t->q[i].exact >= 0 ? t->q[i].exact :
		    t->q[i].listed)));
	return json_pack("{s:I,s:o}", "at_ms", (json_int_t)t->now, "queues", qs);
}

/* The state as JSON (what the engine persists), with the summary the
 * status page shows. */
static json_t *
state_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status, bool done)
{
	json_t *j, *outs = json_array(), *recent = json_array(), *depths = json_array();
	json_t *pr, *sum, *known = json_array();
	int64_t left = w->deadline_ms - t->now;

	if (w->elapsed_ms >= 0 && mono_deadline(w) - w->elapsed_ms > left)
		left = mono_deadline(w) - w->elapsed_ms;

	for (size_t i = 0; i < w->nknown_new; i++)
		json_array_append_new(known, json_string(w->known_new[i]));

	for (size_t i = 0; i < w->nout; i++)
		json_array_append_new(outs, json_pack("{s:I,s:I,s:I,s:I,s:I}", "seq",
		    (json_int_t)w->out[i].seq, "sent_ms", (json_int_t)w->out[i].sent_ms,
		    "not_before_ms", (json_int_t)w->out[i].not_before_ms,
		    "sent_mono_ms", (json_int_t)w->out[i].sent_mono,
		    "not_before_mono_ms", (json_int_t)w->out[i].not_before_mono));
	for (size_t i = 0; i < w->nrecent; i++)
		json_array_append_new(recent, json_integer(w->recent[i]));
	if (t->depth_seen)
		for (int k = 0; k < t->p->ladder.levels; k++)
			json_array_append_new(depths, json_integer(t->depth[k]));
	pr = json_pack("{s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
	    "s:o,s:o,s:o}",
	    "queue", t->probe_queue,
	    "delay_ms", (json_int_t)w->probe_delay_ms,
	    "next_seq", (json_int_t)w->probe_seq,
	    "next_mono_ms", (json_int_t)w->probe_next_ms,
	    "checked_mono_ms", (json_int_t)w->probe_checked_ms,
	    "outstanding", outs,
	    "sent", (json_int_t)w->sent, "arrived", (json_int_t)w->arrived,
	    "lost", (json_int_t)w->lost, "late", (json_int_t)w->late,
	    "early", (json_int_t)w->early, "unmeasured", (json_int_t)w->unmeasured,
	    "stale", (json_int_t)w->stale, "foreign", (json_int_t)w->foreign,
	    "recent_lateness_ms", recent,
	    "last_lateness_ms", int_or_null(w->last_late, w->have_late),
	    "max_lateness_ms", int_or_null(w->max_late, w->have_late));
	sum = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:i,s:I}",
	    "status", status,
	    "time_left_ms", (json_int_t)(left > 0 ? left : 0),
	    "old_depth", int_or_null(t->old_depth, t->old_seen),
	    "old_nonempty", int_or_null(t->old_nonempty, t->old_seen),
	    "old_queues", int_or_null((int64_t)t->nq, t->old_seen),
	    "ladder_depth", t->depth_seen ? depths : json_null(),
	    "parking_depth", int_or_null(t->parking_depth, t->parking_seen),
	    "probes_in_flight", json_integer((json_int_t)w->nout),
	    "probe_lateness_ms",
	    "last", int_or_null(w->last_late, w->have_late),
	    "p50", int_or_null(w->nrecent ? p50(w) : 0, w->nrecent > 0),
	    "max", int_or_null(w->max_late, w->have_late),
	    "open_alerts", open_alerts,
	    "at_ms", (json_int_t)t->now);
	if (!t->depth_seen)
		json_decref(depths);
	j = json_pack("{s:i,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,"
	    "s:{s:o,s:I,s:I,s:I,s:I,s:o},s:{s:o},s:o,s:{s:I,s:I,s:o},s:I,s:o,s:b}",
	    "version", WATCH_STATE_VERSION,
	    "started_ms", (json_int_t)w->started_ms,
	    "flip_ms", (json_int_t)w->flip_ms,
	    "max_ttl_ms", (json_int_t)w->max_ttl_ms,
	    "max_ttl_queue", w->max_ttl_queue,
	    "allowance_ms", (json_int_t)w->allowance_ms,
	    "last_old_entry_ms", (json_int_t)w->last_old_entry_ms,
	    "deadline_ms", (json_int_t)w->deadline_ms,
	    "ticks", (json_int_t)w->ticks,
	    "last_tick_ms", (json_int_t)w->last_tick_ms,
	    "old",
	    "publishes", int_or_null(w->old_publishes, w->old_publishes >= 0),
	    "after_flip", (json_int_t)w->old_after_flip,
	    "settled", (json_int_t)w->old_settled,
	    "resets", (json_int_t)w->old_resets,
	    "unmeasured_queues", (json_int_t)w->unmeasured_seen,
	    "new_queues", known,
	    "ladder",
	    "publishes", int_or_null(w->ladder_publishes, w->ladder_publishes >= 0),
	    "probe", pr,
	    "verify",
	    "next_ms", (json_int_t)w->verify_next_ms,
	    "last_ms", (json_int_t)w->verify_last_ms,
	    "ok", w->verify_ok < 0 ? json_null() : json_boolean(w->verify_ok),
	    "downsample_last_ms", (json_int_t)w->ds_last_ms,
	    "summary", sum,
	    "done", done);
	if (j != NULL) {
		state_json_more(j, w);
		json_object_set_new(j, "flag", json_pack("{s:s,s:o,s:o,s:s}",
		    "state", flag_state_name(w->flag_state),
		    "checked_ms", int_or_null(w->flag_checked_ms, w->flag_checked_ms > 0),
		    "not_on_since_ms", int_or_null(w->flag_not_on_ms,
		    w->flag_not_on_ms > 0), "detail", w->flag_detail));
		json_object_set_new(json_object_get(j, "summary"), "flag",
		    json_string(flag_state_name(w->flag_state)));
		json_object_set(json_object_get(j, "old"), "held",
		    t->held != NULL ? t->held : json_object_get(json_object_get(
		    t->c->state, "old"), "held"));
		if (done && t->old_seen)
			json_object_set_new(j, "old_last", last_sample_json(t));
	}
	return j;
}

/* ---- names ---- */

/* Fills T's names and the topology whose queues the old selection must
 * not catch. Returns 0 or -1 with ERR. */
static int
names(struct tick *t, char *err, size_t errlen)
{
	const struct ladder *l = &t->p->ladder;
	char why[512];

	if (mgmt_escape(mgmt_vhost(t->c->mgmt), t->vhost, sizeof(t->vhost)) < 0) {
		snprintf(err, errlen, "the vhost name is too long");
		return -1;
	}
	plan_probe_queue(t->p, t->probe_queue, sizeof(t->probe_queue));
	plan_canary_queue(t->p, t->canary_queue, sizeof(t->canary_queue));
	if (ladder_check_destination(l, t->probe_queue, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "the probe destination of plan '%s': %s",
		    t->p->name, why);
		return -1;
	}
	for (size_t i = 0; i < t->p->ndestinations; i++)
		if (strcmp(t->p->destinations[i], t->probe_queue) == 0) {
			snprintf(err, errlen, "ladder.destinations lists '%s', which "
			    "the watch's probes need for themselves; rename that "
			    "destination", t->probe_queue);
			return -1;
		}
	ladder_delivery_exchange(l, t->delivery, sizeof(t->delivery));
	ladder_parking_queue(l, t->parking, sizeof(t->parking));
	ladder_destination_pattern(l, t->probe_queue, t->probe_pattern,
	    sizeof(t->probe_pattern));
	return topology_build(t->p, &t->topo, err, errlen);
}

/* ---- the old path ---- */

/* Reads old queues exactly: every one when ALL, else, past OLD_EXACT_MAX
 * queues, only those the listing shows non-empty (up to OLD_EXACT_MAX).
 * Recomputes the depth figures. Returns 0, or -1 when the broker failed
 * (alerted). */
static int
old_exact(struct tick *t, bool all)
{
	struct broker_queue_info qi;
	size_t budget = OLD_EXACT_MAX;
	char why[512], what[LADDER_NAME_MAX + 64];
	int r;

	if (t->nq <= OLD_EXACT_MAX)
		all = true;
	for (size_t i = 0; i < t->nq; i++) {
		struct oldq *q = &t->q[i];

		if (q->exact >= 0)
			continue;
		if (!all && (q->listed <= 0 || budget == 0))
			continue;
		budget -= budget > 0;
		r = broker_queue_inspect(t->c->amqp, q->name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			q->exact = 0;
			q->gone = true;
			t->old_gone++;
			continue;
		}
		if (r != 0) {
			snprintf(what, sizeof(what), "reading old queue '%s'", q->name);
			unreachable(t, what, why);
			return -1;
		}
		q->exact = qi.messages;
	}
	t->old_depth = t->old_nonempty = 0;
	t->old_exact_all = true;
	for (size_t i = 0; i < t->nq; i++) {
		int64_t d = t->q[i].exact >= 0 ? t->q[i].exact : t->q[i].listed;

		if (t->q[i].exact < 0)
			t->old_exact_all = false;
		if (d > 0) {
			t->old_depth += d;
			t->old_nonempty++;
		}
	}
	return 0;
}

/* Samples the old path: one management listing with statistics (depths,
 * cumulative publishes, arguments) restricted to the old selection, then
 * exact depths. Raises old_publish when the publish total grew after the
 * settle window, and old_new_queue for a selected queue measure_horizon
 * did not measure. Returns 0, or -1 with ERR on a local failure (memory,
 * a selection PCRE2 cannot decide); a broker failure is an alert and returns 0. */
static int
watch_old(struct tick *t, char *err, size_t errlen)
{
	const struct plan *p = t->p;
	struct wstate *w = t->w;
	const json_t *mq = json_object_get(t->c->measured, "queues"), *e;
	const char **measured = NULL;
	char path[900], why[768], newnames[400] = "", tbuf[40], d1[32];
	size_t nmeasured = 0, nnew = 0, nunmeasured = 0, i;
	int64_t total = 0, newttl = -1;
	const char *newttl_queue = NULL;
	struct old_selector sel = { 0 };
	int rc = -1, m;

	if (old_selector_init(&sel, p, err, errlen) != 0)
		goto done;
	if ((measured = calloc(json_array_size(mq) + 1, sizeof(*measured))) == NULL)
		goto nomem;
	json_array_foreach(mq, i, e)
		if (json_is_string(json_object_get(e, "name")))
			measured[nmeasured++] = json_string_value(json_object_get(e, "name"));
	qsort(measured, nmeasured, sizeof(*measured), cmp_str);

	/* One unpaginated request, statistics on (message_stats needs them),
	 * only the columns used: at 10,000 queues one walk of the queue
	 * table, where pages would walk it once per page. */
	snprintf(path, sizeof(path), "/api/queues/%s?columns=" OLD_WATCH_COLUMNS,
	    t->vhost);
	if (mgmt_request(t->c->mgmt, "GET", path, NULL, &t->listing, NULL, why,
	    sizeof(why)) != 0 || !json_is_array(t->listing)) {
		unreachable(t, "listing the old queues", t->listing == NULL ? why :
		    "the answer is not a list");
		rc = 0;
		goto done;
	}
	if ((t->q = calloc(json_array_size(t->listing) + 1, sizeof(*t->q))) == NULL)
		goto nomem;
	json_array_foreach(t->listing, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const json_t *ms = json_object_get(e, "message_stats");
		struct oldq *q;

		if (name == NULL)
			continue;
		if ((m = old_selector_test(&sel, name, err, errlen)) < 0)
			goto done;
		if (m == 0)
			continue;
		q = &t->q[t->nq++];
		q->name = name;
		q->listed = jint(e, "messages", 0);
		q->exact = -1;
		q->publish = jint(ms, "publish", -1);
		q->measured = bsearch(&name, measured, nmeasured, sizeof(*measured),
		    cmp_str) != NULL;
		total += jint(ms, "publish", 0);
		if (!q->measured) {
			int64_t ttl = jint(json_object_get(e, "arguments"), "x-message-ttl", -1);
			bool known = false;

			nunmeasured++;
			if (ttl > newttl) {
				newttl = ttl;
				newttl_queue = name;
			}
			for (size_t k = 0; k < w->nknown_new && !known; k++)
				known = strcmp(w->known_new[k], name) == 0;
			if (known)
				continue;
			/* New to the watch: alerted once (remembered while there is
			 * room, past that by their count), so that an acknowledged
			 * alert stays acknowledged while the queue stays. */
			if (w->nknown_new < NEW_KNOWN_MAX)
				snprintf(w->known_new[w->nknown_new++], LADDER_NAME_MAX, "%s",
				    name);
			else if (nunmeasured <= (size_t)w->unmeasured_seen)
				continue;
			if (nnew < NAMES_LISTED)
				appendf(newnames, sizeof(newnames), "'%s'", name);
			nnew++;
		}
	}
	t->old_seen = true;
	w->unmeasured_seen = (int64_t)nunmeasured;
	if (nnew > 0) {
		alert(t, "old_new_queue", "%zu queue%s matching the old selection %s not "
		    "measured by measure_horizon: %s%s; a producer still creates old "
		    "queues? Their publishes and depths are watched, but their TTLs are "
		    "not in the horizon%s", nnew, nnew == 1 ? "" : "s",
		    nnew == 1 ? "was" : "were", newnames, nnew > NAMES_LISTED ?
		    " and more" : "", newttl > w->max_ttl_ms ?
		    " (the largest x-message-ttl among them now counts)" : "");
		if (newttl > w->max_ttl_ms) {
			w->max_ttl_ms = newttl;
			snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
			    newttl_queue);
			t->deadline_moved = true;
			snprintf(t->moved_why, sizeof(t->moved_why), "unmeasured old "
			    "queue '%.100s' has a longer TTL", newttl_queue);
		}
	}

	/* Publishes into the old path since the last tick. */
	if (w->old_publishes < 0) {
		/* The first look. Publishes between the flip and now that the
		 * statistics show already cannot be told from earlier ones when
		 * the flip is longer ago than the lag: assume the last came
		 * just now. */
		if (t->now > w->flip_ms + OLD_STATS_LAG_MS && w->last_old_entry_ms < t->now) {
			w->last_old_entry_ms = t->now;
			t->deadline_moved = true;
			snprintf(t->moved_why, sizeof(t->moved_why), "first look at the "
			    "old path's publishes more than %d s after the flip",
			    OLD_STATS_LAG_MS / 1000);
		}
	} else if (total > w->old_publishes) {
		int64_t n = total - w->old_publishes;

		w->last_old_entry_ms = t->now;
		t->deadline_moved = true;
		if (t->now < w->flip_ms + OLD_STATS_LAG_MS) {
			w->old_settled += n;
			snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s counted "
			    "within %d s of the flip (they may predate it)", (long long)n,
			    n == 1 ? "" : "es", OLD_STATS_LAG_MS / 1000);
		} else {
			w->old_after_flip += n;
			update_deadline(w);
			alert(t, "old_publish", "%lld message%s entered the old path after "
			    "the flip (%lld in all so far): some producer still publishes to "
			    "old queues; the deadline moves to %s (last entry + largest TTL "
			    "%s + allowance)", (long long)n, n == 1 ? "" : "s",
			    (long long)w->old_after_flip,
			    old_time_format(w->deadline_ms, tbuf, sizeof(tbuf)),
			    duration_format(w->max_ttl_ms, d1, sizeof(d1)));
			snprintf(t->moved_why, sizeof(t->moved_why), "%lld publish%s into "
			    "the old path after the flip", (long long)n, n == 1 ? "" : "es");
		}
	} else if (total < w->old_publishes)
		w->old_resets++;	/* a queue deleted, or statistics reset */
	w->old_publishes = total;
	update_deadline(w);

	(void)old_exact(t, false);
	rc = 0;
	goto done;
nomem:
	snprintf(err, errlen, "out of memory");
done:
	old_selector_free(&sel);
	free(measured);
	return rc;
}

/* Old queues that held messages at the last tick (PREV, its old.held) and
 * are gone now (not listed, or not found by a passive declare): deleted by
 * hand, or by their x-expires, with those messages. Raises old_vanished
 * naming them, then remembers the queues that hold messages now. */
static void
old_vanished(struct tick *t)
{
	const json_t *prev = json_object_get(json_object_get(t->c->state, "old"), "held");
	const char **present = NULL, *name;
	char names[400] = "";
	const json_t *v;
	size_t np = 0, n = 0;
	int64_t lost = 0;

	if (!t->old_seen) {
		/* Nothing seen this tick: keep what was known. */
		t->held = json_is_object(prev) ? json_deep_copy(prev) : json_object();
		return;
	}
	t->held = json_object();
	if ((present = calloc(t->nq + 1, sizeof(*present))) == NULL)
		return;
	for (size_t i = 0; i < t->nq; i++) {
		const struct oldq *q = &t->q[i];
		int64_t d = q->exact >= 0 ? q->exact : q->listed;

		if (q->gone)
			continue;
		present[np++] = q->name;
		if (d > 0 && json_object_size(t->held) < HELD_MAX)
			json_object_set_new(t->held, q->name, json_integer(d));
	}
	qsort(present, np, sizeof(*present), cmp_str);
	json_object_foreach((json_t *)prev, name, v) {
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    bsearch(&name, present, np, sizeof(*present), cmp_str) != NULL)
			continue;
		lost += json_integer_value(v);
		if (n++ < NAMES_LISTED)
			appendf(names, sizeof(names), "'%s' (%lld)", name,
			    (long long)json_integer_value(v));
	}
	free(present);
	if (n > 0)
		alert(t, "old_vanished", "%zu old queue%s vanished while holding "
		    "messages (%lld when last sampled): %s%s; deleted by hand or by "
		    "its x-expires (or a policy's expires), its messages are gone "
		    "unless someone moved them", n, n == 1 ? "" : "s", (long long)lost,
		    names, n > NAMES_LISTED ? " and more" : "");
}

/* ---- the flag ---- */

/* Reads the plan's flag back (one bounded GET). Off or unreadable: the
 * alert flag_off or flag_unreadable (raised again every tick, so an
 * acknowledgement does not outlast the condition) and the watch cannot end
 * this tick. While the flag reads off producers publish into the old path,
 * so when it reads on again, that moment is the last entry into the old
 * path and the deadline moves to it + the largest TTL + allowance. (While
 * it cannot be read nothing is known of the producers; publishes they make
 * into the old path show in the statistics as old_publish.) */
static void
watch_flag(struct tick *t)
{
	struct wstate *w = t->w;
	char why[800], desc[400], since[40];
	int st = step_flag_check(t->p, why, sizeof(why));
	bool was_off = w->flag_state == STEP_FLAG_OFF;

	w->flag_state = st;
	w->flag_checked_ms = t->now;
	snprintf(w->flag_detail, sizeof(w->flag_detail), "%s", why);
	if (st == STEP_FLAG_ON) {
		w->flag_not_on_ms = 0;
		if (was_off && w->last_old_entry_ms < t->now) {
			w->last_old_entry_ms = t->now;
			t->deadline_moved = true;
			snprintf(t->moved_why, sizeof(t->moved_why), "the flag reads on "
			    "again after reading off: producers used the old path until "
			    "now");
		}
		return;
	}
	t->flag_held = true;
	if (w->flag_not_on_ms == 0)
		w->flag_not_on_ms = t->now;
	step_flag_describe(t->p, desc, sizeof(desc));
	old_time_format(w->flag_not_on_ms, since, sizeof(since));
	if (st == STEP_FLAG_OFF)
		alert(t, "flag_off", "%s reads off (not on since %s): producers publish "
		    "into the old path again. The watch does not end and remove_old "
		    "deletes nothing until it reads on again (then the deadline moves "
		    "to that moment + the largest TTL + allowance), or abort the plan",
		    desc, since);
	else
		alert(t, "flag_unreadable", "%s cannot be read (not on since %s): %s. "
		    "The watch does not end and remove_old deletes nothing until it "
		    "reads on again, or abort the plan", desc, since, why);
}

/* ---- the ladder ---- */

/* What a walk through parking takes: this plan's own canary and probe
 * messages. A parked probe still in flight is no longer awaited (it
 * came, to parking, because the probe queue was missing). */
static enum parking_pick
pick_own(const struct broker_delivery *d, void *arg)
{
	struct tick *t = arg;
	struct wstate *w = t->w;
	struct publish_info pi;

	if (!parking_own(d, t->p->name, &pi))
		return PARKING_LEAVE;
	if (strcmp(pi.purpose, PUBLISH_PROBE) == 0) {
		w->park_probe++;
		for (size_t i = 0; i < w->nout; i++)
			if (w->out[i].seq == pi.seq &&
			    w->out[i].not_before_ms == pi.not_before_ms) {
				w->out[i] = w->out[--w->nout];
				w->probe_parked++;
				break;
			}
	} else
		w->park_canary++;
	if (t->park_taken == NULL)
		t->park_taken = json_array();
	if (json_array_size(t->park_taken) < PARK_LISTED)
		json_array_append_new(t->park_taken, json_pack("{s:s,s:I,s:s}",
		    "purpose", pi.purpose, "seq", (json_int_t)pi.seq, "message_id",
		    d->message_id ? d->message_id : ""));
	return PARKING_TAKE;
}

/* The parking queue holds DEPTH messages: takes cutover's own out (a walk
 * when the depth is not what the last walk left), and raises parking for
 * the others, which stay where they are. */
static void
parking_sweep(struct tick *t, int64_t depth)
{
	struct wstate *w = t->w;
	struct parking_walk pw;
	int64_t before = w->park_canary + w->park_probe, left;
	char why[768], extra[300] = "";

	if (depth == 0) {
		w->park_known = w->park_foreign = w->park_unread = 0;
		w->park_requeues = 0;
		return;
	}
	if (depth != w->park_known && w->park_requeues < PARK_REQUEUES_MAX) {
		w->park_walks++;
		if (parking_walk(t->c->amqp, t->parking, PARK_WALK_READ, pick_own, t,
		    &pw, why, sizeof(why)) != 0) {
			unreachable(t, "looking through the parking queue", why);
			return;
		}
		w->park_foreign = (int64_t)pw.left;
		w->park_unread = pw.end || pw.behind < 0 ? 0 : pw.behind;
		w->park_known = w->park_foreign + w->park_unread;
		w->park_requeues = pw.left > 0 ? w->park_requeues + 1 : 0;
		t->parking_depth = w->park_known;
	} else if (depth != w->park_known) {
		/* Not looked through: all of it may be foreign. */
		w->park_foreign = 0;
		w->park_unread = depth;
	}
	left = w->park_foreign + w->park_unread;
	if (left == 0)
		return;
	if (w->park_canary + w->park_probe > before)
		appendf(extra, sizeof(extra), "%lld of cutover's own messages taken "
		    "out of it this tick", (long long)(w->park_canary + w->park_probe -
		    before));
	if (w->park_unread > 0)
		appendf(extra, sizeof(extra), "%lld not looked through%s", (long long)
		    w->park_unread, w->park_requeues >= PARK_REQUEUES_MAX ? ": the "
		    "watch gave the foreign ones back often enough (a quorum queue "
		    "drops a message past its delivery-limit) and looks again once "
		    "parking is empty; remove them by hand" : "");
	alert(t, "parking", "%lld message%s in the parking queue '%s' %s not "
	    "cutover's own: a delayed message no destination takes (its routing "
	    "key names the destination); its expected depth is zero%s%s%s",
	    (long long)left, left == 1 ? "" : "s", t->parking, left == 1 ? "is" :
	    "are", extra[0] ? " (" : "", extra, extra[0] ? ")" : "");
}

/* Depth of each level queue and of the parking queue (passive declares,
 * exact), and cumulative publishes into the level exchanges (one
 * exchange listing). Raises parking and ladder_drift (a level queue
 * gone). */
static void
watch_ladder(struct tick *t)
{
	const struct ladder *l = &t->p->ladder;
	struct broker_queue_info qi;
	char name[LADDER_NAME_MAX], path[900], why[768];
	char xs[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	json_t *ans = NULL, *e;
	int64_t total = 0;
	size_t i;
	int r;

	t->depth_seen = true;
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		r = broker_queue_inspect(t->c->amqp, name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			t->depth[k] = 0;
			alert(t, "ladder_drift", "level %d's queue '%s' does not exist: "
			    "messages whose bit %d is 1 have nowhere to wait", k, name, k);
			continue;
		}
		if (r != 0) {
			snprintf(path, sizeof(path), "reading level queue '%s'", name);
			unreachable(t, path, why);
			t->depth_seen = false;
			break;
		}
		t->depth[k] = qi.messages;
	}
	r = broker_queue_inspect(t->c->amqp, t->parking, &qi, why, sizeof(why));
	if (r == BROKER_NOT_FOUND)
		alert(t, "ladder_drift", "the parking queue '%s' does not exist: what "
		    "no destination takes is dropped", t->parking);
	else if (r != 0) {
		snprintf(path, sizeof(path), "reading the parking queue '%s'", t->parking);
		unreachable(t, path, why);
	} else {
		t->parking_seen = true;
		t->parking_depth = qi.messages;
		parking_sweep(t, qi.messages);
	}

	for (int k = 0; k < l->levels; k++)
		ladder_level_exchange(l, k, xs[k], sizeof(xs[k]));
	snprintf(path, sizeof(path), "/api/exchanges/%s?columns=name,"
	    "message_stats.publish_in", t->vhost);
	if (mgmt_request(t->c->mgmt, "GET", path, NULL, &ans, NULL, why,
	    sizeof(why)) != 0 || !json_is_array(ans)) {
		unreachable(t, "listing the ladder's exchanges", ans == NULL ? why :
		    "the answer is not a list");
		json_decref(ans);
		return;
	}
	json_array_foreach(ans, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		for (int k = 0; n != NULL && k < l->levels; k++)
			if (strcmp(n, xs[k]) == 0)
				total += jint(json_object_get(e, "message_stats"),
				    "publish_in", 0);
	}
	json_decref(ans);
	t->w->ladder_publishes = total;
}

/* ---- broker restarts ---- */

struct typed {
	const char *name, *type;
};

static int
cmp_typed(const void *a, const void *b)
{
	return strcmp(((const struct typed *)a)->name, ((const struct typed *)b)->name);
}

/* The old-path messages exposed to at-most-once dead-lettering now: the
 * depth of the old queues measure_horizon found classic, or did not
 * measure (their type is not known). -1 when the old path was not seen
 * this tick, or out of memory. */
static int64_t
old_at_most_once(const struct tick *t)
{
	const json_t *mq = json_object_get(t->c->measured, "queues"), *e;
	struct typed *v, key, *hit;
	size_t n = 0, i;
	int64_t total = 0;

	if (!t->old_seen || (v = calloc(json_array_size(mq) + 1, sizeof(*v))) == NULL)
		return -1;
	json_array_foreach(mq, i, e)
		if (json_is_string(json_object_get(e, "name"))) {
			v[n].name = json_string_value(json_object_get(e, "name"));
			v[n++].type = json_string_value(json_object_get(e, "type"));
		}
	qsort(v, n, sizeof(*v), cmp_typed);
	for (size_t k = 0; k < t->nq; k++) {
		int64_t d = t->q[k].exact >= 0 ? t->q[k].exact : t->q[k].listed;

		if (d <= 0)
			continue;
		key.name = t->q[k].name;
		hit = bsearch(&key, v, n, sizeof(*v), cmp_typed);
		if (hit == NULL || hit->type == NULL || strcmp(hit->type, "classic") == 0)
			total += d;
	}
	free(v);
	return total;
}

/* Reads where each level queue runs (every probe_every, and whenever a
 * node changed): one without a leader or an online member is down
 * (ladder_drift, by name: a quorum queue can stay so after a node
 * restart while the API says "live"); a leader that moved since the last
 * look is a change, said in WHAT. Returns the number of changes. */
static int
watch_places(struct tick *t, char *what, size_t whatlen)
{
	const struct ladder *l = &t->p->ladder;
	struct wstate *w = t->w;
	struct mgmt_queue_place_list pl;
	const struct mgmt_queue_place *q;
	char name[LADDER_NAME_MAX], why[512];
	int changes = 0;

	w->places_next_ms = t->mono + (t->p->watch.probe_every_ms > t->p->watch.interval_ms ?
	    t->p->watch.probe_every_ms : t->p->watch.interval_ms);
	if (mgmt_list_queue_places(t->c->mgmt, &pl, why, sizeof(why)) != 0) {
		unreachable(t, "reading where the level queues run", why);
		return 0;
	}
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		if ((q = mgmt_queue_place_find(&pl, name)) == NULL)
			continue;	/* watch_ladder says it is missing */
		if (q->leader == NULL || q->online == 0) {
			alert(t, "ladder_drift", "level %d's queue '%s' is down: no "
			    "leader, %zu of %zu members online (a quorum queue can stay "
			    "so after a node restart although the API says it is live; "
			    "rabbitmqctl list_queues name state): messages whose bit %d "
			    "is 1 cannot wait there", k, name, q->online, q->members, k);
			continue;
		}
		if (w->have_leaders && w->leaders[k][0] != '\0' &&
		    strcmp(w->leaders[k], q->leader) != 0) {
			sentences_add(what, whatlen, "level queue '%s' has a new leader "
			    "'%s' (was '%s')", name, q->leader, w->leaders[k]);
			changes++;
		}
		snprintf(w->leaders[k], sizeof(w->leaders[k]), "%s", q->leader);
	}
	w->have_leaders = true;
	mgmt_queue_place_list_free(&pl);
	return changes;
}

/* Looks at the broker's nodes (watch_nodes) and where the level queues
 * run (watch_places): a node that restarted, is down, joined or left, or
 * a level queue's new leader raises broker_restart, saying how many old-path
 * messages were in classic old queues at the last sample before it, all
 * exposed to at-most-once dead-lettering. Then remembers this tick's
 * nodes and old-path figure for the next. */
static void
watch_restart(struct tick *t)
{
	struct wstate *w = t->w;
	struct watch_nodes now;
	char why[512], what[ALERT_MSG_MAX] = "", tb[40];
	int64_t amo = old_at_most_once(t);
	int changes = 0;

	if (watch_nodes_read(t->c->mgmt, &now, why, sizeof(why)) != 0)
		unreachable(t, "reading the broker's nodes", why);
	else {
		if (w->have_nodes)
			changes = watch_nodes_compare(&w->nodes, &now, what, sizeof(what));
		w->nodes = now;
		w->have_nodes = true;
	}
	if (changes > 0 || t->mono >= w->places_next_ms)
		changes += watch_places(t, what, sizeof(what));
	if (changes > 0) {
		if (w->amo_depth >= 0)
			alert(t, "broker_restart", "%s: %lld old-path message%s %s "
			    "in classic old queues at the last sample before it "
			    "(%s), exposed to at-most-once dead-lettering: any that "
			    "expired while the node was down or recovering may be "
			    "lost, although the old path still drains to 0; compare "
			    "what the destinations received, then acknowledge", what,
			    (long long)w->amo_depth, w->amo_depth == 1 ? "" : "s",
			    w->amo_depth == 1 ? "was" : "were",
			    old_time_format(w->amo_at_ms, tb, sizeof(tb)));
		else
			alert(t, "broker_restart", "%s: the old path was not seen "
			    "before it, so how many of its messages were exposed to "
			    "at-most-once dead-lettering is not known; compare what "
			    "the destinations received, then acknowledge", what);
	}
	if (amo >= 0) {
		w->amo_depth = amo;
		w->amo_at_ms = t->now;
	}
}

/* Re-verifies the whole ladder every probe_every (and at the first tick).
 * Raises ladder_drift naming what differs. */
static void
watch_verify(struct tick *t)
{
	struct wstate *w = t->w;
	const json_t *o, *counts;
	json_t *r = NULL;
	char why[1024], list[ALERT_MSG_MAX] = "";
	int64_t missing, drift;
	size_t i, n = 0;

	if (w->verify_next_ms != 0 && t->now < w->verify_next_ms)
		return;
	w->verify_next_ms = t->now + (t->p->watch.probe_every_ms > t->p->watch.interval_ms ?
	    t->p->watch.probe_every_ms : t->p->watch.interval_ms);
	if (step_verify_ladder(t->c, &r, why, sizeof(why)) == 0) {
		w->verify_ok = 1;
		w->verify_last_ms = t->now;
		json_decref(r);
		return;
	}
	counts = json_object_get(r, "counts");
	missing = jint(counts, "missing", 0);
	drift = jint(counts, "drift", 0);
	if (missing + drift == 0) {
		unreachable(t, "verifying the ladder", why);
		json_decref(r);
		return;
	}
	w->verify_ok = 0;
	w->verify_last_ms = t->now;
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *st = json_string_value(json_object_get(o, "status"));

		if (st == NULL || strcmp(st, "ok") == 0)
			continue;
		if (n++ < NAMES_LISTED)
			appendf(list, sizeof(list), "%s %s: %s (%s)",
			    json_string_value(json_object_get(o, "kind")),
			    json_string_value(json_object_get(o, "name")), st,
			    json_string_value(json_object_get(o, "detail")));
	}
	alert(t, "ladder_drift", "the ladder no longer verifies (%lld missing, %lld "
	    "drifted): %s%s", (long long)missing, (long long)drift, list,
	    n > NAMES_LISTED ? "; and more (cutover ladder verify)" : "");
	json_decref(r);
}

/* ---- probes ---- */

/* Declares the probe queue and binds it to the delivery exchange like a
 * destination. Durable, of the plan's queue type (like the destination
 * queues declare_ladder makes): a broker restart keeps it, its binding
 * and the probes in it, so a probe in flight across a restart arrives
 * instead of being parked, and on a quorum ladder the last hop from
 * level 0 is at-least-once and replicated, as the destinations' is. It
 * expires when unused (x-expires), so a watch that never ends leaves
 * nothing behind for long. A probe queue of another shape (a
 * non-durable one, from before) is read out, deleted if empty and
 * declared again. Idempotent; every tick. */
static void
probe_queue(struct tick *t)
{
	struct topology_arg qargs[2];
	int64_t expires = 10 * t->p->watch.interval_ms;
	char why[768], what[LADDER_NAME_MAX + 64];
	int r;

	if (expires < PROBE_QUEUE_EXPIRES_MIN_MS)
		expires = PROBE_QUEUE_EXPIRES_MIN_MS;
	memset(qargs, 0, sizeof(qargs));
	snprintf(qargs[0].key, sizeof(qargs[0].key), "x-expires");
	qargs[0].is_int = true;
	qargs[0].num = expires;
	snprintf(qargs[1].key, sizeof(qargs[1].key), "x-queue-type");
	snprintf(qargs[1].str, sizeof(qargs[1].str), "%s",
	    t->p->queue_type == PLAN_QUEUE_QUORUM ? "quorum" : "classic");
	r = broker_queue_declare(t->c->amqp, t->probe_queue, true, qargs, 2, why,
	    sizeof(why));
	if (r == BROKER_EPRECONDITION) {
		t->probe_ready = true;	/* to read it out */
		(void)probe_drain(t);
		t->probe_ready = false;
		if (broker_queue_delete(t->c->amqp, t->probe_queue, BROKER_IF_EMPTY,
		    NULL, why, sizeof(why)) == 0)
			r = broker_queue_declare(t->c->amqp, t->probe_queue, true, qargs,
			    2, why, sizeof(why));
	}
	if (r != 0) {
		snprintf(what, sizeof(what), "declaring the probe queue '%s'",
		    t->probe_queue);
		unreachable(t, what, why);
		return;
	}
	if (broker_queue_bind(t->c->amqp, t->probe_queue, t->delivery,
	    t->probe_pattern, why, sizeof(why)) != 0) {
		snprintf(what, sizeof(what), "binding the probe queue to '%s' (is the "
		    "ladder declared?)", t->delivery);
		unreachable(t, what, why);
		return;
	}
	t->probe_ready = true;
}

static void
remember_lateness(struct wstate *w, int64_t late)
{
	if (w->nrecent == PROBE_RECENT_MAX) {
		memmove(w->recent, w->recent + 1, (PROBE_RECENT_MAX - 1) * sizeof(w->recent[0]));
		w->nrecent--;
	}
	w->recent[w->nrecent++] = late;
	w->last_late = late;
	if (!w->have_late || late > w->max_late)
		w->max_late = late;
	w->have_late = true;
}

/* Takes one probe message D, read at OBS (monotonic), when the probe
 * queue was last seen empty at CHECKED: it arrived in (max(CHECKED,
 * sent), OBS], all on the monotonic clock. */
static void
probe_take(struct tick *t, const struct broker_delivery *d, int64_t obs)
{
	struct wstate *w = t->w;
	struct publish_info pi;
	int64_t ml = t->p->canary.max_lateness_ms, lo, up;
	char why[256];
	size_t i;

	if (publish_read(d, &pi, why, sizeof(why)) != 0 ||
	    strcmp(pi.plan, t->p->name) != 0 || strcmp(pi.purpose, PUBLISH_PROBE) != 0) {
		w->foreign++;
		return;
	}
	for (i = 0; i < w->nout; i++)
		if (w->out[i].seq == pi.seq && w->out[i].not_before_ms == pi.not_before_ms)
			break;
	if (i == w->nout) {
		/* A duplicate (at-least-once dead-lettering), one already called
		 * lost, or one sent by a tick whose state was never saved. */
		w->stale++;
		return;
	}
	lo = w->probe_checked_ms > w->out[i].sent_mono ? w->probe_checked_ms :
	    w->out[i].sent_mono;
	lo -= w->out[i].not_before_mono;	/* lateness is above this ... */
	up = obs - w->out[i].not_before_mono;	/* ... and at most this */
	w->arrived++;
	if (up < 0) {
		w->early++;
		remember_lateness(w, up);
		(void)sample(t, obs, "probe.lateness_ms", "", (double)up);
		alert(t, "probe", "probe #%lld arrived at least %lld ms before its "
		    "not-before time: a level's TTL is shorter than the plan says (a "
		    "policy? cutover ladder verify)", (long long)pi.seq, (long long)-up);
	} else if (lo > ml) {
		w->late++;
		remember_lateness(w, up);
		(void)sample(t, obs, "probe.lateness_ms", "", (double)up);
		alert(t, "probe", "probe #%lld arrived %lld to %lld ms after its "
		    "not-before time, later than canary.max_lateness %lld ms: the "
		    "ladder is slow (broker load, a queue leader election?)",
		    (long long)pi.seq, (long long)lo, (long long)up, (long long)ml);
	} else if (up <= ml) {
		remember_lateness(w, up);
		(void)sample(t, obs, "probe.lateness_ms", "", (double)up);
	} else
		w->unmeasured++;	/* looked at too seldom to tell */
	w->out[i] = w->out[--w->nout];
}

/* Keeps D (only what acknowledging it needs) to be acknowledged at the
 * next tick. Returns 0, or -1 when out of memory (D is then acknowledged
 * now, as before). */
static int
probe_hold(struct tick *t, const struct broker_delivery *d)
{
	struct step_ctx *c = t->c;

	if (c->nheld == c->capheld) {
		size_t cap = c->capheld ? c->capheld * 2 : 16;
		struct broker_delivery *grown = realloc(c->held, cap * sizeof(*grown));

		if (grown == NULL)
			return -1;
		c->held = grown;
		c->capheld = cap;
	}
	memset(&c->held[c->nheld], 0, sizeof(c->held[0]));
	c->held[c->nheld].tag = d->tag;
	c->held[c->nheld].epoch = d->epoch;
	c->held[c->nheld++].unacked = d->unacked;
	return 0;
}

/* Acknowledges the probes the last tick read: its state, which accounts
 * for them, is recorded by now. One whose channel closed since comes back
 * and is read again as a duplicate. */
static void
probe_settle(struct tick *t)
{
	struct step_ctx *c = t->c;
	char why[256];

	for (size_t i = 0; i < c->nheld; i++)
		(void)broker_ack(c->amqp, &c->held[i], why, sizeof(why));
	c->nheld = 0;
}

/* Reads every message waiting in the probe queue, acknowledging each only
 * at the next tick: a kill before the engine records this tick leaves
 * them in the queue for the restarted watch, which still waits for them,
 * instead of gone. Returns 0, or -1 when the broker failed (alerted). */
static int
probe_drain(struct tick *t)
{
	struct broker_delivery d;
	char why[768];
	int r;

	for (int n = 0; n < PROBE_DRAIN_MAX; n++) {
		memset(&d, 0, sizeof(d));
		r = broker_get(t->c->amqp, t->probe_queue, true, &d, why, sizeof(why));
		if (r == BROKER_EMPTY) {
			t->w->probe_checked_ms = clock_mono_ms();
			return 0;
		}
		if (r != 0) {
			unreachable(t, "reading the probe queue", why);
			return -1;
		}
		probe_take(t, &d, clock_mono_ms());
		if (probe_hold(t, &d) != 0)
			(void)broker_ack(t->c->amqp, &d, why, sizeof(why));
		broker_delivery_free(&d);
		fault_point("watch.probe_taken");	/* read; the tick not recorded */
	}
	return 0;
}

/* Waits for the probes due within the next moment (or overdue and not yet
 * past their bound), reading the probe queue every PROBE_POLL_MS, so that
 * their lateness is measured to within that. Bounded: at most the await
 * window plus max_lateness and the grace, and only while a probe is due. */
static void
probe_await(struct tick *t)
{
	struct wstate *w = t->w;
	int64_t ml = t->p->canary.max_lateness_ms, start = clock_mono_ms(), now = start;
	int64_t window = t->p->ladder.unit_ms > PROBE_AWAIT_MIN_MS ?
	    t->p->ladder.unit_ms : PROBE_AWAIT_MIN_MS, until;

	if (window > t->p->watch.interval_ms)
		window = t->p->watch.interval_ms;
	for (;;) {
		until = 0;
		for (size_t i = 0; i < w->nout; i++) {
			int64_t bound = w->out[i].not_before_mono + ml + PROBE_GRACE_MS;

			if (w->out[i].not_before_mono <= start + window && bound > until)
				until = bound;
		}
		if (until > start + window + ml + PROBE_GRACE_MS)
			until = start + window + ml + PROBE_GRACE_MS;
		if (until == 0 || now >= until)
			return;
		clock_sleep_ms(PROBE_POLL_MS);
		if (probe_drain(t) != 0)
			return;
		now = clock_mono_ms();
	}
}

/* Calls lost every probe not read by its bound although the probe queue
 * was seen empty after it. */
static void
probe_lost(struct tick *t)
{
	struct wstate *w = t->w;
	int64_t ml = t->p->canary.max_lateness_ms;
	char levels[160], tb[40];

	for (size_t i = 0; i < w->nout;) {
		struct probe *pr = &w->out[i];
		uint64_t units;

		if (pr->not_before_mono + ml + PROBE_GRACE_MS >= w->probe_checked_ms) {
			i++;
			continue;
		}
		levels[0] = '\0';
		units = (uint64_t)((w->probe_delay_ms + t->p->ladder.unit_ms - 1) /
		    t->p->ladder.unit_ms);
		for (int k = t->p->ladder.levels - 1; k >= 0; k--)
			if (units >> k & 1)
				appendf(levels, sizeof(levels), "%d", k);
		w->lost++;
		alert(t, "probe", "probe #%lld (not before %s) did not arrive within "
		    "canary.max_lateness %lld ms + %d ms grace: lost or stuck on its "
		    "path (levels %s, then '%s' to '%s')", (long long)pr->seq,
		    old_time_format(pr->not_before_ms, tb, sizeof(tb)), (long long)ml,
		    PROBE_GRACE_MS, levels[0] ? levels : "none", t->delivery,
		    t->probe_queue);
		*pr = w->out[--w->nout];
	}
}

/* Publishes the next probe when one is due. */
static void
probe_send(struct tick *t)
{
	struct wstate *w = t->w;
	struct publish_request r;
	struct publish_receipt rc;
	int64_t now = clock_mono_ms();
	char body[96], why[1024];
	int st;

	if (now < w->probe_next_ms || w->nout == PROBE_OUTSTANDING_MAX)
		return;
	snprintf(body, sizeof(body), "{\"probe\":%lld}", (long long)w->probe_seq);
	memset(&r, 0, sizeof(r));
	r.plan = t->p->name;
	r.purpose = PUBLISH_PROBE;
	r.seq = w->probe_seq;
	r.delay_ms = w->probe_delay_ms;
	r.destination = t->probe_queue;
	r.body = body;
	r.len = strlen(body);
	r.content_type = "application/json";
	r.timeout_ms = PROBE_PUBLISH_TIMEOUT_MS;
	st = publish_delayed(t->c->amqp, &t->p->ladder, &r, &rc, why, sizeof(why));
	w->probe_seq++;
	w->probe_next_ms += t->p->watch.probe_every_ms;
	if (w->probe_next_ms <= now)
		w->probe_next_ms = now + t->p->watch.probe_every_ms;
	if (st == PUBLISH_OK) {
		w->sent++;
		w->out[w->nout].seq = r.seq;
		w->out[w->nout].sent_ms = rc.sent_ms;
		w->out[w->nout].not_before_ms = rc.not_before_ms;
		w->out[w->nout].sent_mono = rc.sent_mono_ms;
		w->out[w->nout++].not_before_mono = rc.not_before_mono_ms;
		return;
	}
	if (st == PUBLISH_ECONNECT || st == PUBLISH_ELOST || st == PUBLISH_ETIMEOUT)
		unreachable(t, "publishing a probe", why);
	else
		alert(t, "probe", "probe #%lld could not enter the ladder: %s",
		    (long long)r.seq, why);
}

/* Unbinds and deletes the probe queue. Returns 0, or -1 (alerted). */
static int
probe_remove(struct tick *t)
{
	char why[768];

	if (broker_queue_unbind(t->c->amqp, t->probe_queue, t->delivery,
	    t->probe_pattern, why, sizeof(why)) != 0 ||
	    broker_queue_delete(t->c->amqp, t->probe_queue, 0, NULL, why,
	    sizeof(why)) != 0) {
		unreachable(t, "removing the probe queue", why);
		return -1;
	}
	return 0;
}

/* ---- recording ---- */

int64_t
step_watch_downsample(struct store *s, int64_t plan_id, int64_t now_ms,
    int64_t *last_ms, char *err, size_t errlen)
{
	int64_t n;

	if (*last_ms != 0 && now_ms - *last_ms < DS_EVERY_MS)
		return 0;
	if ((n = store_samples_downsample(s, plan_id, now_ms - DS_AFTER_MS,
	    DS_BUCKET_MS, err, errlen)) < 0)
		return -1;
	*last_ms = now_ms;
	return n;
}

/* Writes the tick's samples (and downsamples) in one transaction. */
static int
write_samples(struct tick *t, char *err, size_t errlen)
{
	struct step_ctx *c = t->c;
	char label[8];

	if (t->old_seen && (sample(t, t->now, "old.depth", "", (double)t->old_depth) ||
	    sample(t, t->now, "old.nonempty", "", (double)t->old_nonempty) ||
	    sample(t, t->now, "old.publishes", "", (double)t->w->old_publishes)))
		goto nomem;
	for (int k = 0; t->depth_seen && k < t->p->ladder.levels; k++) {
		snprintf(label, sizeof(label), "%d", k);
		if (sample(t, t->now, "ladder.depth", label, (double)t->depth[k]))
			goto nomem;
	}
	if (t->parking_seen && sample(t, t->now, "parking.depth", "",
	    (double)t->parking_depth))
		goto nomem;
	if (t->w->ladder_publishes >= 0 && sample(t, t->now, "ladder.publishes", "",
	    (double)t->w->ladder_publishes))
		goto nomem;
	if (store_begin(c->store, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < t->ns; i++)
		if (store_sample_insert(c->store, c->plan_id, t->s[i].ts, t->s[i].metric,
		    t->s[i].label, t->s[i].v, err, errlen) != 0)
			goto fail;
	if (step_watch_downsample(c->store, c->plan_id, t->now, &t->w->ds_last_ms, err,
	    errlen) < 0)
		goto fail;
	return store_commit(c->store, err, errlen);
nomem:
	snprintf(err, errlen, "out of memory");
	return -1;
fail:
	store_rollback(c->store);
	return -1;
}

/* Appends event KIND with DETAILS (stolen). Inside a transaction. */
static int
event(struct tick *t, const char *kind, json_t *details, char *err, size_t errlen)
{
	char *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	json_decref(details);
	if (text == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	rc = store_append_event(t->c->store, t->c->plan_id, t->now, ACTOR, kind, text,
	    NULL, err, errlen);
	free(text);
	return rc;
}

/* Raises the tick's pending alerts, each with its "alert.raised" event
 * when it is new, and records a moved deadline; then forgets them (a later
 * call writes only what was added since). Returns 0 or -1 with ERR. */
static int
write_alerts(struct tick *t, char *err, size_t errlen)
{
	struct store *s = t->c->store;
	char tb[40];
	int64_t id;
	int r;

	for (size_t i = 0; i < t->na; i++) {
		if (store_begin(s, err, errlen) != 0)
			return -1;
		r = store_alert_raise(s, t->c->plan_id, t->a[i].kind, t->a[i].msg, t->now,
		    &id, err, errlen);
		if (r < 0 || (r == 1 && event(t, "alert.raised", json_pack("{s:s,s:s,s:I}",
		    "alert", t->a[i].kind, "message", t->a[i].msg, "alert_id",
		    (json_int_t)id), err, errlen) != 0)) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
	}
	t->na = 0;
	if (t->deadline_moved) {
		if (store_begin(s, err, errlen) != 0)
			return -1;
		if (event(t, "watch.deadline_moved", json_pack("{s:I,s:s,s:I,s:I,s:s}",
		    "deadline_ms", (json_int_t)t->w->deadline_ms, "deadline",
		    old_time_format(t->w->deadline_ms, tb, sizeof(tb)),
		    "last_old_entry_ms", (json_int_t)t->w->last_old_entry_ms,
		    "max_ttl_ms", (json_int_t)t->w->max_ttl_ms, "why", t->moved_why),
		    err, errlen) != 0) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
		t->deadline_moved = false;
	}
	if (t->park_taken != NULL) {
		json_t *taken = t->park_taken;

		t->park_taken = NULL;
		if (store_begin(s, err, errlen) != 0) {
			json_decref(taken);
			return -1;
		}
		if (event(t, "watch.parking_taken", json_pack("{s:o,s:{s:I,s:I},s:I}",
		    "taken", taken, "own_taken", "canary", (json_int_t)t->w->park_canary,
		    "probe", (json_int_t)t->w->park_probe, "foreign",
		    (json_int_t)t->w->park_foreign), err, errlen) != 0) {
			store_rollback(s);
			return -1;
		}
		if (store_commit(s, err, errlen) != 0)
			return -1;
	}
	return 0;
}

static int
count_open(struct tick *t, char *err, size_t errlen)
{
	return store_each_alert(t->c->store, t->c->plan_id, 1, NULL, NULL, err, errlen);
}

/* ---- the step ---- */

int
step_watch(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct wstate w;
	struct tick t;
	const char *ttl_queue = NULL, *status = "watching";
	int64_t ttl, prev_deadline, entry_before;
	int open = 0, rc = -1;
	bool ready = false, done = false, alerted = false;

	*result = NULL;
	err[0] = '\0';
	memset(&t, 0, sizeof(t));
	memset(&w, 0, sizeof(w));
	t.c = c;
	t.p = c->plan;
	t.w = &w;
	t.now = old_now_ms(c);
	t.mono = clock_mono_ms();
	if (c->store == NULL || c->amqp == NULL || c->mgmt == NULL) {
		snprintf(err, errlen, "the watch needs the store and the broker "
		    "connections (it is run by the engine)");
		goto done;
	}
	if (measured_ttl(c->measured, &ttl, &ttl_queue) != 0) {
		snprintf(err, errlen, "the watch needs measure_horizon's result with the "
		    "largest old TTL (summary.max_ttl_ms), and has none");
		goto done;
	}
	if (json_is_object(c->state) && json_object_get(c->state, "version") != NULL) {
		if (state_read(&w, c->state, err, errlen) != 0)
			goto done;
		if (ttl > w.max_ttl_ms) {
			w.max_ttl_ms = ttl;
			snprintf(w.max_ttl_queue, sizeof(w.max_ttl_queue), "%s",
			    ttl_queue ? ttl_queue : "");
		}
	} else
		state_init(&w, c, t.now, ttl, ttl_queue);
	prev_deadline = w.deadline_ms;
	if (names(&t, err, errlen) != 0)
		goto done;
	clock_tick(&w, t.now, t.mono);
	w.ticks++;
	w.last_tick_ms = t.now;
	if (w.probe_next_ms == 0)
		w.probe_next_ms = t.mono;

	/* Probes that arrived since the last tick, first: their arrival
	 * is then read closest to when it happened. */
	probe_settle(&t);
	probe_queue(&t);
	if (t.probe_ready)
		(void)probe_drain(&t);
	entry_before = w.last_old_entry_ms;
	if (watch_old(&t, err, errlen) != 0)
		goto done;
	old_vanished(&t);
	watch_flag(&t);
	if (w.last_old_entry_ms != entry_before)
		w.entry_elapsed_ms = w.elapsed_ms;
	watch_ladder(&t);
	watch_restart(&t);
	watch_verify(&t);
	if (t.probe_ready) {
		probe_await(&t);
		probe_lost(&t);
	}
	update_deadline(&w);
	if (w.deadline_ms != prev_deadline && !t.deadline_moved) {
		t.deadline_moved = true;
		snprintf(t.moved_why, sizeof(t.moved_why), "largest TTL now %lld ms",
		    (long long)w.max_ttl_ms);
	}

	/* May it end? The deadline has passed (and the statistics have had
	 * time to show every publish before the flip), nothing failed, and the
	 * old path is empty by exact counts, every queue read. */
	if ((open = count_open(&t, err, errlen)) < 0)
		goto done;
	if (t.failed)
		status = "waiting: the broker did not answer every question this tick";
	else if (t.flag_held)
		status = "waiting: the flag does not read on (see the flag alert)";
	else if (t.now < w.deadline_ms || t.now < w.flip_ms + OLD_STATS_LAG_MS ||
	    w.elapsed_ms < mono_deadline(&w))
		status = "waiting for the deadline";
	else if (old_exact(&t, true) != 0)
		status = "waiting: the broker did not answer every question this tick";
	else if (t.old_depth > 0) {
		status = "waiting for the old path to drain";
		if (t.now >= w.deadline_ms + (w.allowance_ms > OLD_STATS_LAG_MS ?
		    w.allowance_ms : OLD_STATS_LAG_MS))
			alert(&t, "old_not_drained", "%lld message%s still in %lld old "
			    "queue%s past the deadline: a TTL longer than measured, a "
			    "policy or a consumer holding them? (cutover old)",
			    (long long)t.old_depth, t.old_depth == 1 ? "" : "s",
			    (long long)t.old_nonempty, t.old_nonempty == 1 ? "" : "s");
	} else
		ready = true;
	if (ready && (open > 0 || t.na > 0))
		status = "waiting: an alert is open (acknowledge it once understood)";
	else if (ready && w.nout > 0)
		status = "finishing: waiting for the probes in flight";
	if (t.probe_ready && !(ready && open == 0 && t.na == 0))
		probe_send(&t);

	alerted = t.na > 0;
	if (write_samples(&t, err, errlen) != 0 || write_alerts(&t, err, errlen) != 0)
		goto done;
	if ((open = count_open(&t, err, errlen)) < 0)
		goto done;
	if (ready && open == 0 && w.nout == 0 && !alerted) {
		if (probe_remove(&t) == 0) {
			done = true;
			status = "done";
		} else if (write_alerts(&t, err, errlen) != 0 ||
		    (open = count_open(&t, err, errlen)) < 0)
			goto done;
	}
	rc = done ? 0 : 1;
done:
	if (w.started_ms != 0)
		*result = state_json(&t, &w, open >= 0 ? open : 0, rc < 0 ? "failed" :
		    status, done);
	else
		*result = json_object();
	if (*result == NULL)
		*result = json_object();
	json_object_set_new(*result, "ok", json_boolean(rc >= 0));
	if (rc < 0)
		json_object_set_new(*result, "error", json_string(err));
	topology_free(&t.topo);
	json_decref(t.held);
	json_decref(t.park_taken);
	json_decref(t.listing);
	free(t.q);
	free(t.s);
	return rc;
}
