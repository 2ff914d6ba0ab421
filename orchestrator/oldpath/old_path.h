/* old_path: what measure_horizon, remove_old, the engine and `cutover old`
 * share about the old delay queues: which queues the plan selects, each
 * one's effective TTL, the deadlines and the horizon that follow from the
 * last entry into the old path, and the removal with its options. The
 * selection is old_select.c, the times old_time.c, then old_chain.c,
 * old_counters.c and old_fence.c; old_remove is the remove_old step's
 * (steps/remove_old.c). */
#ifndef CUTOVER_OLD_PATH_H
#define CUTOVER_OLD_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "broker/mgmt.h"
#include "pattern.h"
#include "step.h"

/* The columns of the listing the watch makes of the vhost's queues each
 * tick (statistics on: message_stats needs them). */
#define OLD_WATCH_COLUMNS "name,messages,message_stats.publish,arguments"

#define OLD_SOURCE_MAX 300	/* "operator-policy:" + a policy name */
#define OLD_SOURCES_SEEN 16	/* distinct TTL sources a selection shares
				 * (more are each copied) */
#define OLD_NOTE_MAX 640

/* One selected old queue. Its two texts are its own allocations, made
 * only when there is something to say: a selection holds one of these per
 * queue of the vhost, and two fixed buffers cost about 1 KB a queue. */
struct old_queue {
	const struct mgmt_queue *q;	/* borrowed from the selection's list */
	int64_t ttl_ms;			/* effective TTL, -1 when it has none */
	int64_t expires_ms;		/* effective x-expires, -1 when none */
	const char *ttl_source;		/* "argument", "policy:NAME",
					 * "operator-policy:NAME",
					 * "max_message_ttl"; NULL when none
					 * (at most OLD_SOURCE_MAX - 1 bytes;
					 * in the selection's SOURCES) */
	char *note;			/* NULL or "; "-separated remarks (at
					 * most OLD_NOTE_MAX - 1 bytes) */
};

/* Adds a remark to OQ's note (sentences_add: joined with "; ", cut at
 * OLD_NOTE_MAX - 1 bytes); out of memory leaves the note as it was. */
void old_queue_note(struct old_queue *oq, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The plan's old queues as the broker has them now. */
struct old_selection {
	struct mgmt_queue_list list;	/* every queue of the vhost */
	struct old_queue *v;		/* the selected ones, in name order */
	size_t n;
	const char **missing;		/* old.queues.names not on the broker
					 * (borrowed from the plan) */
	size_t nmissing;
	size_t nottl;			/* selected queues with no TTL at all
					 * (ttl_ms -1: no max_message_ttl) */
	int64_t at_ms;			/* the step clock when listed */
	struct strblocks *sources;	/* the queues' TTL sources, each text
					 * once: 100,000 queues share a few */
	const char *source_seen[OLD_SOURCES_SEEN];	/* those texts */
	size_t nsource_seen;
};

/* Which queue names the plan's old selection selects: old.queues.match
 * (PCRE2 through pattern.h, bounded) or old.queues.names, and never one
 * of the plan's own queues (plan_own_queues: ladder, parking,
 * destinations, probe, canary), whatever the plan says. measure_horizon,
 * remove_old and the watch all select through it. */
struct old_selector {
	struct pattern *re;		/* old.queues.match, or NULL */
	const char **names;		/* old.queues.names, sorted (borrowed) */
	size_t nnames;
	char **own;			/* the plan's own queues, sorted */
	size_t nown;
	char stats_prefix[LADDER_NAME_MAX];	/* the watch's statistics queues:
					 * every generation's name starts so */
};

/* Prepares S for plan P. Returns 0, or -1 with ERR (a pattern that does
 * not compile, memory); S is then empty. */
int old_selector_init(struct old_selector *s, const struct plan *p, char *err,
    size_t errlen);

/* Is queue NAME selected? Returns 0 with the answer in *SELECTED, or -1
 * with ERR when the match could not be decided (a PCRE2 limit hit): never
 * a silent "no". */
int old_selector_test(struct old_selector *s, const char *name, bool *selected,
    char *err, size_t errlen);

/* Is NAME one of the plan's own queues, which S never selects? */
bool old_selector_own(const struct old_selector *s, const char *name);

/* Frees what S holds and empties it. S may be empty. */
void old_selector_free(struct old_selector *s);

/* The step's clock: C->now_ms when set (tests), else the real time, in
 * epoch milliseconds. */
int64_t old_now_ms(const struct step_ctx *c);

/* Lists the vhost's queues once (mgmt_list_queues, the fast unpaginated
 * listing), selects the plan's old queues through an old_selector (never
 * the plan's own queues; a name old.queues.names lists that is one of
 * them is neither selected nor missing), and works out each one's effective TTL: the
 * lowest of its x-message-ttl argument, its policy's message-ttl and the
 * matching operator policy's message-ttl (read from
 * /api/operator-policies, since the fast listing does not name operator
 * policies), or old.max_message_ttl for a queue with none of them. A
 * selection that matches nothing is not an error here (S->n is 0).
 * Returns 0 and fills S (free with old_selection_free), or -1 with ERR;
 * S is then empty. */
int old_select(struct step_ctx *c, struct old_selection *s, char *err,
    size_t errlen);

/* old_select on the statistics listing (mgmt_list_queues_counted): every
 * queue of S->list also carries its publish counter and depth, read at
 * S->at_ms, so that the selection serves as a counter reading without a
 * listing of its own (remove_old judges each queue by them). */
int old_select_counted(struct step_ctx *c, struct old_selection *s, char *err,
    size_t errlen);

/* Frees what S holds and empties it. S may be empty. */
void old_selection_free(struct old_selection *s);

/* The selected queue NAME of S (binary search), or NULL. */
const struct old_queue *old_sel_find(const struct old_selection *s,
    const char *name);

/* The first object of array ARR whose "name" is NAME, or NULL (a linear
 * scan: for listings read once per step). */
const json_t *old_json_by_name(const json_t *arr, const char *name);

/* Each name of array ARR's objects and its place in ARR (a new object,
 * the first of a name; the caller releases it), or NULL when out of
 * memory: for a list whose elements are looked up by name per queue (a
 * scan would cost each queue the list's length) and written by place. */
json_t *old_json_positions(const json_t *arr);

/* measure_horizon's old queues as the watch and remove_old look them up
 * (old_measured.c): sorted by name, their strings in blocks of text. */
struct old_measured_queue {
	const char *name;
	const char *type;		/* "classic", "quorum"…; NULL when the
					 * result recorded none */
	const char **to;		/* the old queues it dead-letters into */
	size_t nto;
	const char **fed_by;		/* the old queues that dead-letter
					 * into it */
	size_t nfed;
	int64_t ttl_ms;			/* -1: none recorded */
	int64_t chain_ttl_ms;		/* its dead-letter chain's, -1: none */
	size_t ord;			/* its place in the result's list */
};

struct strblocks;

struct old_measured {
	struct old_measured_queue *v;	/* in name order */
	size_t n, cap;
	const char **to;		/* every queue's targets and feeders,
					 * in one array */
	size_t nto, capto;
	struct strblocks *text;	/* every string above, in blocks */
};

/* Reads MEASURED's "queues" (measure_horizon's result; NULL or without
 * "queues": none) into M, which then borrows nothing from it. Returns 0,
 * or -1 when out of memory (M empty). Free with old_measured_free. */
int old_measured_read(const json_t *measured, struct old_measured *m);

/* The same a queue at a time, for a reader that never holds the list:
 * adds entry E of "queues" (one without a name is left out) to M (zeroed
 * before the first), then old_measured_end once the last is in. Returns 0,
 * or -1 when out of memory (free M then). */
int old_measured_add(struct old_measured *m, const json_t *e);
void old_measured_end(struct old_measured *m);

/* The queue NAME of M (binary search), or NULL; M may be NULL. */
const struct old_measured_queue *old_measured_find(const struct old_measured *m,
    const char *name);

/* Frees what M holds and empties it; M may be NULL or empty. */
void old_measured_free(struct old_measured *m);


/* move_old's entry for an old queue as remove_old weighs its deadline
 * (old_measured.c): what its last pass left in it. */
struct old_moved_queue {
	const char *name;
	int64_t ttl_ms;			/* the TTL the move saw, -1: none */
	int64_t skipped;		/* messages its pass skipped */
	int64_t pass_done;		/* the last pass that covered it */
	int64_t left;			/* messages its pass left in it */
	int64_t left_until_ms;		/* their latest not-before, -1: none */
	bool skipped_why;		/* a reason for skipping it is recorded */
};

struct old_moved {
	struct old_moved_queue *v;	/* in name order */
	size_t n, cap;
	struct strblocks *text;
	const struct old_measured *names_from; /* set: a name it holds is
					 * borrowed from it (it outlives the
					 * table), not copied, NULL: none */
};

/* As old_measured_read, _add, _end, _find and _free, for move_old's
 * result's "queues". */
int old_moved_read(const json_t *moved, struct old_moved *m);
int old_moved_add(struct old_moved *m, const json_t *e);
void old_moved_end(struct old_moved *m);
const struct old_moved_queue *old_moved_find(const struct old_moved *m,
    const char *name);
void old_moved_free(struct old_moved *m);

/* What the watch and remove_old read of measure_horizon's and move_old's
 * results, read once and kept across their runs (the step context's
 * KEPT): each result without its per-queue list, measure_horizon's queues
 * as a table and, for remove_old, move_old's too. Both results parsed
 * whole at every tick cost each tick their trees (about 1.4 KB a queue
 * each) and the parse. Which ends of those steps they were read at is the
 * key: a step run again ends anew. */
struct old_inputs {
	int64_t measured_end_ms, moved_end_ms;
	json_t *measured;		/* owned, "queues" empty; NULL when
					 * it has none */
	json_t *moved;			/* owned, likewise */
	struct old_measured queues;
	bool with_moved;		/* MOVED_QUEUES was read */
	struct old_moved moved_queues;
};

/* Frees IN (NULL: nothing). */
void old_inputs_free(struct old_inputs *in);

/* Queue Q's effective dead-letter exchange and routing key (old_chain.c)
 * into *X and *K (NULL: none), from its listing's arguments and, where
 * they name none, its policy's definition in PL (RabbitMQ resolves these
 * two keys so: the argument wins; an operator policy cannot set them).
 * The strings are Q's or PL's. */
void old_dead_letter_of(const struct mgmt_policy_list *pl, const struct mgmt_queue *q,
    const char **x, const char **k);

/* Dead-letter chains among the selected old queues (old_chain.c). */
struct old_chain {
	size_t n;			/* S->n */
	int64_t *ttl_ms;		/* per selected queue: its TTL plus the
					 * longest chain TTL of its feeders */
	json_t **to;			/* per queue: names of the old queues it
					 * dead-letters into, NULL for none (two
					 * empty arrays cost a queue 200 bytes) */
	json_t **from;			/* per queue: names of those feeding
					 * it, NULL for none */
};

/* Reads each selected queue's effective dead-letter exchange and routing
 * key (argument, as S's own listing carries it, else its policy's;
 * no second queue listing), follows them through the exchanges'
 * bindings (and exchange-to-exchange bindings and alternate exchanges;
 * a key that is unknown or an exchange type other than direct and topic
 * counts as reaching every bound queue) to the other old queues they
 * feed, and sums the TTLs along each chain. Needs every TTL known.
 * Returns 0 and fills CH (free with old_chain_free), or -1 with ERR: a
 * management read failed, or the chains form a cycle (named). */
int old_chain_compute(struct step_ctx *c, const struct old_selection *s,
    struct old_chain *ch, char *err, size_t errlen);

void old_chain_free(struct old_chain *ch);

/* Queue Q's effective dead-letter exchange: its x-dead-letter-exchange
 * argument, else its policy's "dead-letter-exchange" (the policy Q names,
 * looked up in PL); NULL when it has none. */
const char *old_dead_letter_exchange(const struct mgmt_policy_list *pl,
    const struct mgmt_queue *q);

/* Does a binding of an exchange of TYPE with key BK take routing key K
 * (NULL: unknown, i.e. any)? direct: equal; topic: '*' one word, '#'
 * zero or more; types this does not know take everything. */
bool old_binding_takes(const char *type, const char *bk, const char *k);

/* The moment after which no message can still come out of an old queue of
 * TTL_MS: LAST_ENTRY_MS (the last time a message entered the old path)
 * + TTL_MS + ALLOWANCE_MS (forwarding). Returns it, or -1 when it cannot
 * be known: LAST_ENTRY_MS <= 0 (unknown) or TTL_MS < 0 (no TTL). */
int64_t old_deadline_ms(int64_t last_entry_ms, int64_t ttl_ms,
    int64_t allowance_ms);

/* The horizon of the whole old path given MEASURED (measure_horizon's
 * result, of which it reads the summary's largest TTL, a chain's where
 * longer): LAST_ENTRY_MS + that TTL + ALLOWANCE_MS. Returns it, or -1 when
 * it cannot be known (no last entry, or a queue without a TTL). */
int64_t old_horizon_ms(const json_t *measured, int64_t last_entry_ms,
    int64_t allowance_ms);

/* Whether move_old's horizon stands, the one rule the watch's deadline
 * and remove_old's deadlines both follow: MOVED (move_old's result, or
 * NULL when the plan has no move) says it succeeded ("ok"), with a horizon
 * ("horizon_ms" > 0) and the start of its last pass ("pass_started_ms" >
 * 0), and nothing entered the old path after that pass began
 * (LAST_ENTRY_MS, the last entry the watch saw, <= the pass's start; 0 or
 * earlier: none since). Otherwise the old deadline (last entry + TTL +
 * allowance) stands. */
bool old_moved_stands(const json_t *moved, int64_t last_entry_ms);



/* Writes epoch milliseconds MS as RFC 3339 UTC ("2026-11-30T12:00:00Z",
 * with ".123" when MS is not a whole second) into OUT. Returns OUT. */
char *old_time_format(int64_t ms, char *out, size_t outlen);

/* The earliest time old_time_parse accepts: 2000-01-01T00:00:00Z. An
 * epoch in seconds read as milliseconds falls in January 1970, and every
 * deadline computed from it is decades past: refused, never used. */
#define OLD_TIME_MIN_MS 946684800000LL

/* Parses TEXT, epoch milliseconds ("1795000000000") or RFC 3339 UTC
 * ("2026-11-30T12:00:00Z", optionally with a fraction of a second of up
 * to 3 digits), no earlier than OLD_TIME_MIN_MS. Returns 0 and stores
 * *MS, or -1 with ERR saying what is expected (and, for a number that
 * reads as a time before 2000, that it looks like seconds), *MS untouched. */
int old_time_parse(const char *text, int64_t *ms, char *err, size_t errlen);

/* How remove_old runs; zero-initialised means the step's defaults. */
struct old_remove_opts {
	bool dry_run;		/* check everything, delete nothing: the
				 * entries say "would_remove" */
	int connections;	/* AMQP connections working in parallel; 0:
				 * one per 64 queues to remove, at most
				 * OLD_CONNECTIONS_MAX */
	/* Tests only: called after a queue was checked (empty, unused; a
	 * quorum queue also fenced, sealed and checked again) and before it
	 * is deleted, with ARG and the queue's name; from a worker thread
	 * when CONNECTIONS > 1. */
	void (*between)(void *arg, const char *queue);
	void *arg;
};

#define OLD_CONNECTIONS_MAX 12

/* ---- fences (old_fence.c) ---- */

#define OLD_FENCE_PREFIX "cutover.fence="	/* + plan name + "=" + n */
#define OLD_FENCE_NAME_MAX 96

/* One queue's fence: a policy for exactly that name, max-length 0 and
 * overflow reject-publish, above every other policy of the vhost. */
struct old_fence {
	const char *queue;		/* borrowed */
	char policy[OLD_FENCE_NAME_MAX];
	bool put;			/* the policy exists (until removed) */
	bool effective;			/* the queue listing names it as the
					 * queue's policy */
	char why[512];			/* why not put or not effective */
};

/* Removes every fence policy of plan PLAN that an earlier run left (a
 * crash between fencing and cleaning up), first taking back over B (NULL:
 * not) the markers such a run may have left in the fenced queue. Returns
 * how many fences it removed, or -1 with ERR. */
int old_fence_sweep(struct mgmt *m, struct broker *b, const char *plan,
    char *err, size_t errlen);

/* Puts the fence of each F[i].queue (named OLD_FENCE_PREFIX PLAN "=" i),
 * carrying the definition of the queue's own policy OWN[i] (NULL: none;
 * the fence displaces it, and a queue that is left must keep its TTL and
 * dead-lettering) with max-length 0 and overflow reject-publish, then
 * waits up to 30 s for the queue listing to name each as its queue's
 * policy. Sets F[i].put, .effective and .why. Returns 0, or -1 with ERR
 * when the policies cannot be read (nothing put). */
int old_fence_put(struct mgmt *m, const char *plan, struct old_fence *f,
    const char *const *own, size_t n, char *err, size_t errlen);

/* Removes the fences of F that are put. Returns 0, or -1 with ERR naming
 * the first that could not be removed (old_fence_sweep gets it later). */
int old_fence_remove(struct mgmt *m, struct old_fence *f, size_t n, char *err,
    size_t errlen);

/* Seals fenced, empty QUEUE: publishes a marker (message id ID, with
 * confirms) that takes it over its zero limit, then a second that the
 * broker must refuse. Returns 0 with *SEALED true when sealed (*MARKERS
 * is 1: the marker is in the queue); 0 with *SEALED false when it must be
 * left (WHY: it refused the first marker, so it holds something, or took
 * the second, so the fence was not in force; markers taken back as far as
 * possible, *MARKERS says how many remain); or -1 with WHY (a broker
 * failure). */
int old_fence_seal(struct broker *b, const char *queue, const char *id,
    int *markers, bool *sealed, char *why, size_t whylen);

/* Takes back *MARKERS markers of ID from the head of QUEUE (another
 * message found there is requeued). Returns 0 when none remain, else -1
 * with WHY. */
int old_fence_unseal(struct broker *b, const char *queue, const char *id,
    int *markers, char *why, size_t whylen);

/* ---- a statistics listing as a table (old_listing.c) ---- */

/* What the watch's full pass and its levels read of a listed queue. */
struct old_listed {
	const char *name;		/* in the listing's blocks */
	int64_t messages;		/* the statistics' depth, -1 absent */
	int64_t publish;		/* message_stats.publish, -1 absent */
	int64_t ttl_ms;			/* its x-message-ttl argument, -1 */
	int64_t dlx;			/* messages_dlx, -1 absent */
	int64_t head_ts;		/* head_message_timestamp, -1 absent */
};

/* Every queue of a vhost as one statistics listing showed it, kept as a
 * table instead of the listing's JSON (about 1.1 KB a queue there, under
 * 100 bytes here with its name): at 100,000 queues the difference is
 * most of what a full pass holds. */
struct old_listing {
	struct old_listed *v;		/* in name order (strcmp), each once */
	size_t n, cap;
	struct strblocks *text;		/* the names */
};

/* Lists every queue of M's vhost with COLUMNS (name, messages,
 * message_stats.publish, arguments, messages_dlx, head_message_timestamp
 * as wanted) into L, each queue as it is read (mgmt_list_queues_each:
 * statistics on, by name past MGMT_ONE_LISTING_MAX, none missed that was
 * there throughout). Returns 0, or mgmt's code with ERR and L empty. */
int old_listing_read(struct mgmt *m, const char *columns, struct old_listing *l,
    char *err, size_t errlen);

/* Queue NAME of L (binary search), or NULL. */
const struct old_listed *old_listing_find(const struct old_listing *l,
    const char *name);

/* Frees what L holds and empties it; L may be empty. */
void old_listing_free(struct old_listing *l);

/* ---- publish counters (old_counters.c) ---- */

struct old_counter {
	const char *name;		/* in the counters' blocks, or borrowed
					 * from a selection */
	int64_t publish;		/* message_stats.publish, -1 absent */
	int64_t messages;		/* -1 absent */
};

/* Old queue counters at one moment, sorted by name. */
struct old_counters {
	struct old_counter *v;
	size_t n;
	size_t cap;			/* V's room (old_counters_add) */
	int64_t at_ms;
	bool exact;			/* depths by passive declares (the
					 * watch's), not by the statistics */
	struct strblocks *text;		/* the names, or NULL: borrowed */
	const struct old_measured *names_from; /* NULL, or a table that
					 * outlives these counters whose names
					 * old_counters_put borrows: at 100,000
					 * queues a copy of each is 2.5 MB */
};

/* Reads every queue's counters of C's vhost (one listing, statistics on).
 * Returns 0 and fills O (free with old_counters_free), or -1 with ERR. */
int old_counters_read(struct step_ctx *c, struct old_counters *o, char *err,
    size_t errlen);

/* Adds to O (emptied before the first) the counters of E, an element of
 * a sample's "queues" ({"name", "publish" or "message_stats": {"publish"},
 * "messages"}; one without a name is passed over), its name copied: for
 * a sample read an element at a time. Returns 0, or -1 out of memory.
 * Then old_counters_end. */
int old_counters_add(struct old_counters *o, const json_t *e);

/* Adds to O queue NAME's counters (-1: none), as old_counters_add does
 * an element's: the name borrowed from O->names_from when it is there,
 * else copied. Returns 0, or -1 out of memory. */
int old_counters_put(struct old_counters *o, const char *name, int64_t publish,
    int64_t messages);

/* Sorts O's counters by name, as every other reading is: after its last
 * old_counters_add. */
void old_counters_end(struct old_counters *o);

/* What an ended watch's last sample ("old_last") says in its "queues_in"
 * when its queues are the result's rows ("entries"), not its own
 * "queues" (which an earlier version wrote, and a watch whose rows could
 * not be written still does). */
#define OLD_LAST_IN_ENTRIES "entries"

/* Whether the watch's last sample LAST keeps its queues in the result's
 * "entries". */
bool old_last_in_entries(const json_t *last);

/* The watch's last sample ("old_last" of its state WATCHED, its queues
 * where old_last_in_entries says). Returns 0 and fills O, or -1 with ERR
 * when the state has none. */
int old_counters_from_watch(const json_t *watched, struct old_counters *o,
    char *err, size_t errlen);

/* The counters of NAME in O, or NULL. */
const struct old_counter *old_counters_find(const struct old_counters *o,
    const char *name);

void old_counters_free(struct old_counters *o);

/* What queue NAME's counters in NOW say of its use since BASE (BASE_WHAT
 * says what BASE is, e.g. "the watch's last sample"). */
enum old_use {
	OLD_USE_NONE,		/* no evidence of use: both counters equal, or
				 * neither shows one (an idle queue's, or any
				 * queue's after a restart: the exact empty
				 * check and the if-empty delete or the fence
				 * stand for them) */
	OLD_USE_PUBLISHED,	/* its counter grew, or first shows publishes,
				 * or (depths of one kind) it holds more */
	OLD_USE_UNCOUNTED	/* the baseline cannot be compared: the counter
				 * went backwards or vanished (statistics reset,
				 * node restarted) */
};

/* Compares queue NAME's counters now, NOW (NULL: none; exact when
 * NOW_EXACT), with BASE. Depths are compared only when both are of one
 * kind (both exact, or both from the statistics): a statistics depth is
 * seconds old, so against the watch's exact one it shows messages that
 * have since expired; the exact check remove_old makes next leaves any
 * queue that holds a message. Returns the verdict, with WHY saying what
 * was seen unless OLD_USE_NONE. */
enum old_use old_counters_judge(const struct old_counters *base,
    const struct old_counter *now, bool now_exact, const char *name,
    const char *base_what, char *why, size_t whylen);

/* Fills O from SAMPLE, {"at_ms", "exact", "queues": [{"name", "publish",
 * "messages"}]}, as an earlier version of remove_old wrote its baseline
 * (and the watch its "old_last"). Returns 0, or -1 with ERR. */
int old_counters_from_sample(const json_t *sample, struct old_counters *o,
    char *err, size_t errlen);

/* How long remove_old waits, with a fresh baseline of the publish
 * counters, after the old ones stopped being comparable (statistics reset,
 * a node restarted): twice the statistics' lag, so that a publish made
 * just before the new baseline shows in the counters by the check after. */
#define OLD_BASELINE_WINDOW_MS	20000

/* remove_old with options: step_remove_old is old_remove(C, NULL, ...).
 * Unless a dry run, once it has read the baseline counters and the
 * selection and before checking any queue, it removes the fences (and
 * their markers) a killed run of the plan left. A queue is checked only when past its deadline (its
 * chain TTL), once every old queue that dead-letters into it is gone, and
 * when its publish counter and depth have not moved since C->watched's
 * last sample (without one: since remove_old's first reading); quorum
 * queues are fenced (old_fence_put), sealed, checked again and deleted,
 * and their fences removed.
 * The result is {"ok", "dry_run", "last_entry_ms", "allowance_ms",
 * "connections", "elapsed_ms", "counts": {"removed", "gone", "left",
 * "would_remove"}, "entries": [{"name", "type", "outcome" ("removed",
 * "gone", "left", or "would_remove" in a dry run), "messages_seen" (the
 * passive declare's count, or null when not checked), "ttl_ms",
 * "deadline_ms" (or null), "at_ms", "reason", and "purged" for a queue
 * deleted without if-empty}]}, with an old ladder (old.ladder) its
 * exchanges' "exchanges" and "exchange_counts" (remove_old_exchanges.c),
 * plus "error" when it fails. Returns 0 when
 * nothing is left (in a dry run: nothing would be), no message went with
 * a deleted quorum queue and every fence came off; otherwise -1 with ERR
 * naming what was left and why, the messages deleted ("purged") and the
 * fence that stayed. */
int old_remove(struct step_ctx *c, const struct old_remove_opts *o,
    json_t **result, char *err, size_t errlen);

#endif
