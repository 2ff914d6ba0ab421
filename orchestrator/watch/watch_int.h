/* watch_int: what the watch's files share (internal to orchestrator/watch/):
 * its limits, the persisted state (struct wstate), one tick (struct tick),
 * and the functions one file of the watch calls in another. watch.c runs
 * the tick; see its comment for what the watch does. */
#ifndef CUTOVER_WATCH_INT_H
#define CUTOVER_WATCH_INT_H
#include <sys/types.h>

#include <inttypes.h>
#include <stddef.h>
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
#include "strblocks.h"
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

/* The lag is measured too (watch_stats.c): the watch does not take a
 * listing as counting every publish up to OLD_STATS_LAG_MS before it
 * unless its own markers show that it does, and holds its end until they
 * show it (a busy node's collectors have been seen a minute behind). It
 * remembers the times of this many markers; a counter further behind
 * than that counts as not current. */
#define STATS_MARKS		64

/* Old queues read with an exact passive declare on a full pass: all of
 * them up to this many, else the non-empty ones (by the listing) up to
 * this many; a light pass reads those that held messages, and more than
 * this many makes the tick a full pass. Before ending, every old queue is
 * read exactly, however many. */
#define OLD_EXACT_MAX		1000

/* The old path's two passes (watch_old_pass.c). A full pass is the
 * listing with statistics (every queue's depth and cumulative publish
 * counter: at 10,000 queues about 1-1.6 s of broker CPU, whatever the
 * columns, since RabbitMQ filters them after building every queue's
 * statistics); a light pass reads exactly, by passive declares, only the
 * old queues that held messages at the last look and those they
 * dead-letter into, and watches the publish_in counters of every exchange
 * that can route into an old queue (all of the vhost's but the ladder's
 * own: one short listing). A full pass runs on the first tick; once the
 * deadline has passed (every queue is read before the end); when more
 * queues hold messages than OLD_EXACT_MAX; when the exchange counters
 * cannot be read; when they grew (a publish through them may have entered
 * an old queue), no sooner than FULL_MIN after the last full pass and
 * again until one ran at least OLD_STATS_LAG_MS after the growth was
 * last seen (the queue's counter then shows it); and at the latest
 * FULL_MAX after the last. A publish at time p shows in the exchange
 * counter by p + lag, is seen by the next tick, and is counted by a full
 * pass at most FULL_MIN later: within lag + interval + FULL_MIN, one
 * minute at a 10 s interval. */
#define PASS_BOUND_MS		60000	/* a publish is counted within this */
#define PASS_MAX_TICKS		30	/* FULL_MAX: this many intervals */

/* Probes. A probe is due at its not-before time; the watch looks for it
 * until not-before + canary.max_lateness + this grace (the canary's), and
 * then calls it lost. */
#define PROBE_GRACE_MS		1000
#define PROBE_OUTSTANDING_MAX	32	/* in flight at once, at most */
#define PROBE_NEVER_CHECKED	INT64_MIN /* the probe queue's last look, when
					 * a rebooted watch had none: before
					 * every rebased stamp */
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
 * in its temporary table's index (temp.fold_key, store_samples.c), so each
 * run costs about the rows older than the limit; a second tier would add
 * a second such pass over the past at its own, shorter period. */
#define DS_EVERY_MS		(10 * 60 * 1000)
#define DS_AFTER_MS		(60 * 60 * 1000)
#define DS_BUCKET_MS		(10 * 60 * 1000)

#define NAMES_LISTED		5	/* names an alert message lists at most */
#define NEW_KNOWN_MAX		32	/* old queues created after the flip,
					 * named in the state */
#define JOINED_MAX		10000	/* members beyond the measured, named
					 * in the state (beyond that, counted) */
#define ALERTS_MAX		16	/* kinds pending in one tick */
#define ALERT_MSG_MAX		500
#define HELD_MAX		10000	/* non-empty old queues remembered */

/* ---- the persisted state: one part per file ----
 *
 * Each part of the watch keeps its own persisted state in its own struct,
 * owned by its file: only that file writes it, and that file reads it
 * back from the state JSON (X_load), writes it out (X_json) and adds its
 * figures to the tick's sample row (X_samples). What one part needs of
 * another it reads, never writes; what several parts write (the deadline's
 * figures) is in struct wstate itself, said there. */

/* One probe's stamps, on both clocks (watch_clock.c persists and rebases
 * them): the wall clock's, as stamped, and clock_mono_ms's. */
struct probe {
	int64_t seq, sent_ms, not_before_ms;	/* wall clock, as stamped */
	int64_t sent_mono, not_before_mono;	/* clock_mono_ms */
};

/* The watch's age on the monotonic clock of the boot BOOT_ID
 * (watch_clock.c, persisted as "clock"): since the flip, at the last
 * tick, and when the last entry into the old path was seen. */
struct wclock {
	char boot_id[40];
	int64_t mono_last_ms, elapsed_ms, entry_elapsed_ms;
};

/* The probes through the ladder (watch_probe.c, persisted as "probe").
 * next_ms, checked_ms and the probes' *_mono are on clock_mono_ms. */
struct wprobes {
	int64_t delay_ms;
	int64_t seq;			/* the next probe's number; the level
					 * probes draw from it too */
	int64_t next_ms, checked_ms;	/* next due; the probe queue last seen
					 * empty (0, or after a reboot
					 * PROBE_NEVER_CHECKED: not yet) */
	struct probe out[PROBE_OUTSTANDING_MAX];
	size_t nout;
	int64_t sent, arrived, lost, late, early, unmeasured, stale, foreign;
	int64_t recent[PROBE_RECENT_MAX];
	size_t nrecent;
	int64_t last_late, max_late;
	bool have_late;
	int64_t parked;			/* probes found in parking */
};

/* One level's proof of movement (watch_levels.c): the probe that waits in
 * that level only (bit k alone), its last outcome, and how long the level
 * has held pending dead-letters. Times *_mono are on clock_mono_ms. */
struct wlevel {
	bool in_flight;
	struct probe p;
	int64_t sent, arrived, ontime, late, stuck;	/* cumulative */
	int64_t last_late, last_late_lo;	/* bounds, ms; valid when proven */
	int64_t proven_sent_ms;			/* wall: entry of the last on-time probe */
	bool proven;				/* the last probe out came on time */
	int64_t next_mono;			/* the next probe is due then */
	int64_t dlx_since_mono;			/* pending dead-letters seen since, 0 */
};

/* Every level's proof, and since when parking has held pending
 * dead-letters (watch_levels.c, persisted as "levels"). */
struct wlevels {
	struct wlevel lv[LADDER_MAX_LEVELS];
	int64_t park_dlx_since_mono;
};

/* The plan's flag as the watch last read it back (watch_flag.c,
 * persisted as "flag"). */
struct wflag {
	int state;			/* STEP_FLAG_* as last read */
	int64_t checked_ms;		/* when (0: not yet) */
	int64_t not_on_ms;		/* since when it has not read on, 0 */
	char detail[300];		/* what the last read saw */
};

/* Parking: what the last walk left, and cutover's own messages taken out
 * so far (watch_parking.c, persisted as "parking"). */
struct wparking {
	int64_t known, foreign, unread, requeues, walks;
	int64_t canary, probe;		/* own_taken */
};

/* The broker's nodes at the last look, the old-path messages exposed to
 * at-most-once dead-lettering (classic old queues) at the last sample,
 * and the level queues' leaders (classic: nodes) at the last look, with
 * when to look again, monotonic (watch_restart.c, persisted as "nodes",
 * "old_at_most_once", "level_leaders" and "places_next_mono_ms"). */
struct wnodes {
	struct watch_nodes last;
	bool have_last;
	struct watch_nodes target_last;	/* the target broker's, when the plan
					 * has one (persisted as "target_nodes") */
	bool have_target_last;
	int64_t amo_depth, amo_at_ms;
	char leaders[LADDER_MAX_LEVELS][WATCH_NODE_NAME_MAX];
	bool have_leaders;
	int64_t places_next_ms;
};

/* The ladder's periodic re-verification (watch_verify.c, persisted as
 * "verify"). */
struct wverify {
	int64_t next_ms, last_ms;
	int ok;				/* 1, 0, or -1 when not run yet */
};

/* The ladder's cumulative publishes into the level exchanges
 * (watch_ladder.c, persisted as "ladder"); -1: not yet. */
struct wladder {
	int64_t publishes;
};

/* How current the management statistics are (watch_stats.c, persisted as
 * "stats"): the markers sent into this generation's statistics queue, the
 * step-clock time of each of the last STATS_MARKS, the counter the last
 * full pass saw, and the time up to which the statistics have been seen to
 * count every publish (the newest marker counted). */
struct wstats {
	int64_t gen;			/* the queue's generation */
	int64_t sent;			/* markers sent into it */
	int64_t marks[STATS_MARKS];	/* marker k (0-based) at [k % STATS_MARKS] */
	int64_t counted;		/* its counter at the last full pass, -1 */
	int64_t fresh_ms;		/* step clock; 0: not yet measured */
	int64_t restarts;		/* counters that did not match, so far */
	int64_t behind_ms;		/* step clock since when they have been
					 * behind (watch_stats_read), 0 */
	bool restart;			/* the next tick starts a new generation */
};

/* The schedule of the old path's passes (watch_old_pass.c, persisted as
 * old.pass). */
struct wpass {
	int64_t full_ms;		/* step clock of the last full pass, 0 */
	int64_t fresh_ms;		/* what the statistics had counted to
					 * then (struct wstats), 0 */
	int64_t xpub;			/* publish_in of the exchanges that can
					 * route into old queues, -1 unknown */
	int64_t grow_first_ms;		/* growth not yet counted by a full */
	int64_t grow_last_ms;		/* pass: first and last seen, 0 none */
	int64_t nqueues;		/* old queues at the last full pass */
	int64_t full, light;		/* passes so far */
	char why[96];			/* why the last full pass ran */
};

/* The old path's counts (watch_old.c, persisted as "old", with the
 * schedule of its passes as old.pass). */
struct wold {
	int64_t publishes;		/* cumulative, as last seen; -1: not yet */
	int64_t after_flip;		/* publishes counted after the settle window */
	int64_t settled;		/* publishes counted within it */
	int64_t resets;			/* counters that went down or vanished */
	int64_t late;			/* publishes counted when a queue's
					 * counter first showed: stamped as
					 * entries, never alerted */
	int64_t gone_empty;		/* members that vanished empty */
	int64_t joined_over;		/* members past JOINED_MAX, unnamed */
	char known_new[NEW_KNOWN_MAX][LADDER_NAME_MAX]; /* unmeasured queues
					 * alerted already */
	size_t nknown_new;
	int64_t unmeasured_seen;	/* unmeasured old queues last seen */
	struct wpass pass;
};

/* What persists from tick to tick (the state JSON, as a struct): the
 * figures the deadline is made of, which several parts move, and one
 * member per part. Who writes the shared ones:
 *   - max_ttl_ms, max_ttl_queue: tick_begin (measure_horizon's largest)
 *     and the old path (an old queue that joined with a longer TTL);
 *   - last_old_entry_ms: the old path (a publish counted) and the flag
 *     (read on again after reading off);
 *   - deadline_ms: watch_deadline.c alone, from the others;
 *   - moved_*: watch_deadline.c, from move_old's result;
 *   - ds_last_ms: watch_record.c (the last downsampling). */
struct wstate {
	int64_t started_ms, flip_ms, max_ttl_ms, allowance_ms;
	char max_ttl_queue[LADDER_NAME_MAX];
	int64_t last_old_entry_ms, deadline_ms;
	int64_t moved_horizon_ms;	/* move_old's horizon (what stayed in the
					 * old path + the allowance), 0: none */
	int64_t moved_at_ms;		/* when its last pass began */
	int64_t moved_publishes;	/* the old path's publish counters then,
					 * -1: unknown */
	const json_t *moved;		/* move_old's result this tick (borrowed
					 * from the step's inputs), or NULL */
	int64_t ticks, last_tick_ms, ds_last_ms;

	struct wclock clock;
	struct wold old;
	struct wladder ladder;
	struct wparking park;
	struct wprobes probes;
	struct wlevels levels;
	struct wflag flag;
	struct wnodes nodes;
	struct wverify verify;
	struct wstats stats;
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
/* What a full pass records of an old queue's publish counter (kept as
 * an integer, COUNTER_LOST or null: watch_seen_value). */
enum seen_kind {
	SEEN_NONE,			/* it never had one */
	SEEN_COUNT,			/* its counter */
	SEEN_LOST			/* it had one (or had lost it) and
					 * shows none now: the management
					 * agent restarted */
};

/* What "seen" holds for a queue whose counter was there and is gone,
 * until one shows again. */
#define COUNTER_LOST "lost"

struct oldq {
	const char *name;		/* borrowed from the listing */
	int64_t listed;			/* depth by the statistics */
	int64_t exact;			/* by a passive declare, -1 when not read */
	int64_t publish;		/* message_stats.publish, -1 when absent */
	bool measured;
	bool gone;			/* the passive declare found no queue */
	int64_t first_count;		/* publishes its counter shows for the
					 * first time since the last full pass */
	bool rebased;			/* its counter was reset or lost: what
					 * it shows is a new baseline */
	enum seen_kind seen;		/* what this full pass records of it */
	int64_t seen_publish;		/* with SEEN_COUNT, the counter */
};

/* The last full pass's counters, by name (watch_seen.c). */
struct seen_row {
	const char *name;		/* in the table's TEXT */
	enum seen_kind kind;
	int64_t publish;		/* with SEEN_COUNT */
};

struct seen_table {
	struct seen_row *v;		/* sorted by name */
	size_t n, cap;
	struct strblocks *text;
	bool have;			/* a last full pass is known (else the
					 * next is a first look) */
};

/* The old path as this tick sees it (watch_old.c; its schedule,
 * watch_old_pass.c, decides FULL). */
struct old_look {
	struct old_listing listing;	/* a full pass's listing of the vhost's
					 * queues (the levels read it too) */
	bool listed;			/* LISTING was read this tick */
	struct oldq *q;
	size_t nq;
	bool seen;			/* the listing (or, light, every passive
					 * declare) answered */
	bool full;			/* this tick makes a full pass */
	int64_t queues;			/* old queues, as the last full pass saw */
	bool exact_all;			/* every old queue was read exactly */
	int64_t depth, nonempty, gone;
	bool counted;			/* this tick's full pass read every
					 * selected queue's counter into Q:
					 * they replace the last pass's rows
					 * (watch_old_rows) */
	json_t *joined;			/* the old path's members measure_horizon
					 * did not measure, {name: TTL ms}, when
					 * this tick added some, or NULL */
	json_t *held;			/* old queues holding messages now:
					 * name -> depth (persisted as old.held) */
};

/* The ladder as this tick sees it (watch_ladder.c). */
struct ladder_look {
	int64_t depth[LADDER_MAX_LEVELS];
	bool depth_seen, parking_seen;
	bool parking_missing;		/* the parking queue does not exist */
	int64_t parking_depth;
	int64_t band[LADDER_MAX_LEVELS];	/* publish_in per level exchange */
	bool band_seen;
};

/* The levels' and parking's pending dead-letters as this tick sees them
 * (watch_levels.c). */
struct levels_look {
	int64_t dlx[LADDER_MAX_LEVELS];		/* messages_dlx, -1 when absent */
	int64_t head_ts[LADDER_MAX_LEVELS];	/* head_message_timestamp s, -1 */
	bool dlx_seen;
	int64_t parking_dlx;			/* -1 when absent */
};

/* One tick: what every part shares (the plan, the names, the clocks, the
 * alerts and samples it collects), and each part's reading of the broker
 * this tick, written by that part's file alone. */
struct tick {
	struct step_ctx *c;
	const struct plan *p;
	struct wstate *w;
	int64_t now;			/* the step clock (deadline, samples) */
	int64_t mono;			/* clock_mono_ms at the tick's start */
	bool failed;			/* a broker call failed: never done */
	char vhost[3 * 256 + 1];	/* the ladder's, escaped for paths */
	char old_vhost[3 * 256 + 1];	/* the old path's (the same vhost
					 * unless the plan has a target) */
	char probe_queue[LADDER_NAME_MAX], probe_pattern[LADDER_NAME_MAX];
	char canary_queue[LADDER_NAME_MAX];
	char stats_exchange[LADDER_NAME_MAX], stats_queue[LADDER_NAME_MAX];
	char delivery[LADDER_NAME_MAX], parking[LADDER_NAME_MAX];
	struct topology topo;		/* names the old selection must not catch */
	const struct old_measured *mq;	/* measure_horizon's queues by name:
					 * the context's, kept across ticks,
					 * or OWN_MQ read from C->measured */
	struct old_measured own_mq;
	json_t *exchanges;		/* the vhost's exchanges with publish_in,
					 * NULL until listed (watch_ladder_exchanges:
					 * the ladder's bands read it) */
	json_t *old_exchanges;		/* the old path's vhost's, for its pass
					 * schedule: the same listing as
					 * EXCHANGES unless the plan has a
					 * target (watch_old_exchanges) */

	struct sample *s;
	size_t ns, scap;
	struct pending a[ALERTS_MAX];
	size_t na;
	struct pending over[ALERTS_MAX]; /* kinds whose cause this tick saw
					 * gone (watch_alert_over) */
	size_t nover;
	bool deadline_moved;
	char moved_why[200];

	/* Each part's reading. */
	bool probe_ready;		/* watch_probe.c: the probe queue is
					 * declared and bound */
	struct old_look old;
	struct ladder_look lad;
	struct levels_look lvl;
	bool flag_held;			/* watch_flag.c: the flag did not read
					 * on this tick */
	json_t *park_taken;		/* watch_parking.c: own messages taken
					 * from parking this tick, for the
					 * event; NULL when none */
	char agent_back[400];		/* watch_restart.c: nodes whose
					 * management agent, not the node,
					 * restarted: for the event, "" when
					 * none */
};

static inline int64_t
jint(const json_t *o, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(o, key);

	return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* One integer member of a persisted object: KEY, read into the int64_t
 * member at OFF of a struct, DFLT when it is absent or not an integer.
 * JFIELD(T, M, KEY, DFLT) makes a row (the build fails if T's M is not
 * an int64_t); jint_fields reads a table of them, jint_fields_put writes
 * it, so that what is persisted and what is read back are one list. */
struct jfield {
	const char *key;
	size_t off;
	int64_t dflt;
};
#define JFIELD(T, M, KEY, DFLT) { (KEY), offsetof(T, M) + 0 * sizeof(char[ \
	sizeof(((T *)0)->M) == sizeof(int64_t) ? 1 : -1]), (DFLT) }
#define JFIELDS_N(t)	(sizeof(t) / sizeof((t)[0]))

/* Reads the N members F of object O into the struct at BASE. */
static inline void
jint_fields(void *base, const json_t *o, const struct jfield *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		*(int64_t *)(void *)((char *)base + f[i].off) =
		    jint(o, f[i].key, f[i].dflt);
}

/* Sets the N members F of object O from the struct at BASE, in F's order
 * (a member O has already keeps its place). */
static inline void
jint_fields_put(json_t *o, const void *base, const struct jfield *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, f[i].key, json_integer(*(const int64_t *)
		    (const void *)((const char *)base + f[i].off)));
}

static inline json_t *
int_or_null(int64_t v, bool have)
{
	return have ? json_integer(v) : json_null();
}

static inline int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static inline int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}


/* The files call one another only downwards, never back (none calls
 * watch.c or watch_state.c, and the leaves call no other file of the
 * watch):
 *   watch.c -> watch_state.c -> every part;
 *   watch_old.c -> watch_old_pass.c -> watch_ladder.c -> watch_parking.c
 *     -> watch_probe.c -> watch_levels.c;
 *   watch_restart.c -> watch_nodes.c; watch_flag.c, watch_verify.c;
 *   watch_stats.c -> watch_record.c;
 *   the leaves: watch_record.c, watch_clock.c, watch_deadline.c, watch_seen.c,
 *   watch_nodes.c. */

/* watch_record.c: alerts, samples and their recording */
void watch_alert(struct tick *t, const char *kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void watch_unreachable(struct tick *t, const char *what, const char *why);
void watch_alert_over(struct tick *t, const char *kind, const char *why);
int watch_sample(struct tick *t, int64_t ts, const char *metric, const char *label,
    double v);
int watch_write_samples(struct tick *t, char *err, size_t errlen);
int watch_write_alerts(struct tick *t, char *err, size_t errlen);
int watch_count_open(struct tick *t, char *err, size_t errlen);

/* watch_clock.c: the watch's time */
int64_t watch_clock_now(const struct step_ctx *c);
void watch_clock_init(struct wclock *k);
bool watch_clock_tick(struct wstate *w, int64_t wall, int64_t mono);
void watch_clock_entry(struct wclock *k);
json_t *watch_clock_json(const struct wclock *k);
void watch_clock_load(struct wclock *k, const json_t *j);
json_t *watch_clock_stamp_json(const struct probe *p);
void watch_clock_stamp_load(struct probe *p, const json_t *o);
void watch_clock_stamp_rebase(struct probe *p, int64_t wall, int64_t mono);
int64_t watch_clock_checked_rebase(int64_t checked, int64_t last_tick_wall,
    int64_t wall, int64_t mono);
void watch_clock_lateness(int64_t checked, const struct probe *p, int64_t obs,
    int64_t *lo, int64_t *up);

/* watch_deadline.c: the deadline */
bool watch_deadline_moved(struct wstate *w, const json_t *moved);
void watch_deadline_update(struct wstate *w);
int watch_deadline_measured(const json_t *measured, int64_t *ttl, const char **queue);
int64_t watch_deadline_mono(const struct wstate *w);
bool watch_deadline_past(const struct tick *t);

/* watch_state.c: the state as a whole */
void watch_state_init(struct wstate *w, const struct step_ctx *c, int64_t now,
    int64_t ttl, const char *ttl_queue);
int watch_state_load(struct wstate *w, const json_t *j, char *err, size_t errlen);
json_t *watch_state_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status, bool done);

/* watch_old.c: the old path (struct wold) */
void watch_old_init(struct wold *o);
int watch_old_read(struct tick *t, char *err, size_t errlen);
int watch_old_exact(struct tick *t, bool all);
int watch_old_samples(struct tick *t);
json_t *watch_old_json(const struct tick *t, const struct wold *o);
json_t *watch_old_last_json(const struct tick *t);
void watch_old_last_rows(struct tick *t, json_t *result);
int watch_old_rows(struct tick *t, json_t *result);
void watch_old_load(struct wold *o, const json_t *j);

/* watch_seen.c: the last full pass's counters (a leaf). Reads them, from
 * C's state's rows ("entries", counted by old.seen_n) or the old.seen of
 * a state from before, into S (freed with watch_seen_free); S->have is
 * false when there is no last pass, or its rows are not all there.
 * Returns 0, or -1 with ERR. */
int watch_seen_read(const struct step_ctx *c, struct seen_table *s, char *err,
    size_t errlen);
const struct seen_row *watch_seen_find(const struct seen_table *s, const char *name);
/* KIND and PUBLISH as the row's "publish" (a new reference). */
json_t *watch_seen_value(enum seen_kind kind, int64_t publish);
void watch_seen_free(struct seen_table *s);

/* watch_old_pass.c: the old path's passes (struct wpass) */
bool watch_old_pass_full(struct tick *t);
void watch_old_pass_done(struct tick *t);
json_t *watch_old_pass_json(const struct wpass *p);
void watch_old_pass_load(struct wpass *p, const json_t *j);

/* watch_stats.c: how current the statistics are (struct wstats) */
void watch_stats_init(struct wstats *s);
/* T's statistics exchange and queue names, from the state's generation. */
void watch_stats_names(struct tick *t);
/* Declares the statistics exchange and queue (a new generation first when
 * the last counter did not match) and sends this tick's marker, stamped
 * with T->now; a broker failure is watch_unreachable's. */
void watch_stats_mark(struct tick *t);
/* Reads the statistics queue's counter in a full pass's LISTING: the
 * newest marker it counts moves the time the statistics are current to;
 * a counter that does not match the markers sent asks for a new
 * generation. */
void watch_stats_read(struct tick *t, const struct old_listing *listing);
/* Have the statistics been seen to count every publish up to the
 * deadline (from which the old path must be quiet: a publish after it
 * that they do not show yet would be missed), and up to OLD_STATS_LAG_MS
 * and one interval before T->now? (The markers go out once a tick.) */
bool watch_stats_current(const struct tick *t);
/* The time up to which the statistics count every publish, at best: the
 * measured one, never later than OLD_STATS_LAG_MS before T->now. */
int64_t watch_stats_counted_to(const struct tick *t);
/* Deletes the statistics queue and exchange (the watch's end). Returns 0,
 * or -1 (watch_unreachable's). */
int watch_stats_remove(struct tick *t);
json_t *watch_stats_json(const struct tick *t, const struct wstats *s);
void watch_stats_load(struct wstats *s, const json_t *j);

/* watch_flag.c: the flag (struct wflag) */
void watch_flag_init(struct wflag *f);
void watch_flag_read(struct tick *t);
const char *watch_flag_name(int state);
json_t *watch_flag_json(const struct wflag *f);
void watch_flag_load(struct wflag *f, const json_t *j);

/* watch_ladder.c: the ladder (struct wladder) */
void watch_ladder_init(struct wladder *l);
int watch_ladder_exchanges(struct tick *t, char *why, size_t whylen);
int watch_old_exchanges(struct tick *t, char *why, size_t whylen);
void watch_ladder_read(struct tick *t);
int watch_ladder_samples(struct tick *t);
json_t *watch_ladder_json(const struct wladder *l);
void watch_ladder_load(struct wladder *l, const json_t *j);

/* watch_parking.c: parking (struct wparking) */
int64_t watch_parking_read(struct tick *t, int64_t depth);
json_t *watch_parking_json(const struct wparking *k);
void watch_parking_load(struct wparking *k, const json_t *j);

/* watch_restart.c: the nodes (struct wnodes) */
void watch_restart_read(struct tick *t);
void watch_restart_rebase(struct wnodes *n);
void watch_restart_json(json_t *j, const struct wnodes *n);
void watch_restart_load(struct wnodes *n, const json_t *j);

/* watch_verify.c: the ladder's re-verification (struct wverify) */
void watch_verify_init(struct wverify *v);
void watch_verify_read(struct tick *t);
json_t *watch_verify_json(const struct wverify *v);
void watch_verify_load(struct wverify *v, const json_t *j);

/* watch_probe.c: the probes (struct wprobes) */
void watch_probe_init(struct wprobes *pr, const struct plan *p);
void watch_probe_read(struct tick *t);
void watch_probe_await(struct tick *t);
void watch_probe_lost(struct tick *t);
void watch_probe_send(struct tick *t);
int watch_probe_remove(struct tick *t);
void watch_probe_parked(struct wprobes *pr, const struct publish_info *pi, bool level);
void watch_probe_rebase(struct wprobes *pr, int64_t last_tick_wall, int64_t wall,
    int64_t mono);
size_t watch_probe_forget(struct wprobes *pr);
int64_t watch_probe_p50(const struct wprobes *pr);
json_t *watch_probe_json(const struct tick *t, const struct wprobes *pr);
void watch_probe_load(struct wprobes *pr, const json_t *j);

/* watch_levels.c: the levels (struct wlevels) */
int64_t watch_levels_budget(const struct wstate *w);
void watch_levels_read(struct tick *t);
bool watch_levels_take(struct tick *t, const struct publish_info *pi, int64_t obs);
bool watch_levels_parked(struct wlevels *ls, const struct publish_info *pi);
void watch_levels_check(struct tick *t);
void watch_levels_send(struct tick *t, int64_t *seq);
size_t watch_levels_in_flight(const struct wlevels *ls);
void watch_levels_rebase(struct wlevels *ls, int64_t wall, int64_t mono);
size_t watch_levels_forget(struct wlevels *ls);
int watch_levels_samples(struct tick *t);
json_t *watch_levels_json(const struct wlevels *ls);
void watch_levels_load(struct wlevels *ls, const json_t *j);
json_t *watch_levels_summary(const struct tick *t, const struct wstate *w);

#endif
