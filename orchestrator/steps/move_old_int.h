/* move_old_int: what the files of the move_old step share (move_old.c:
 * the step and its passes; move_old_dest.c: where each old queue's
 * messages go in the ladder; move_old_id.c: each message's move id;
 * move_old_ladder.c: an old path that is a ladder; move_old_progress.c:
 * what is left to take and when it will be; move_old_rule.c: the entry
 * rules; move_old_state.c: the step's state across runs;
 * move_old_entries.c: its entries, a text each between uses;
 * move_old_rows.c: the state written, each queue's entry a row). */
#ifndef CUTOVER_MOVE_OLD_INT_H
#define CUTOVER_MOVE_OLD_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "move_entry.h"
#include "old_path.h"
#include "step.h"

/* A dead-letter exchange some old queue names: its type and bindings. */
struct move_exchange {
	char *name;
	char *type;
	struct mgmt_binding_list bindings;
};

/* What every old queue's dead-letter target is worked out from, read once
 * a run (move_old_dest.c): the policies, and each dead-letter exchange
 * when a queue first names it. */
struct move_targets {
	struct mgmt_policy_list pl;
	struct move_exchange **x;	/* each its own allocation: targets
					 * point into it */
	size_t nx, cap;
};

/* Reads the policies into TS (free with move_targets_free, also after a
 * failure). Returns 0, or -1 with ERR. */
int move_targets_read(struct step_ctx *c, struct move_targets *ts, char *err,
    size_t errlen);
void move_targets_free(struct move_targets *ts);

/* Where old queue Q would dead-letter its messages: its effective
 * dead-letter exchange and routing key. */
struct move_target {
	char *exchange;		/* "" the default exchange; NULL: none */
	char *key;		/* NULL: the message's own routing key */
	int dest;		/* the plan's destination it maps onto when the
				 * key is fixed, else -1 */
	const char *exchange_type; /* of EXCHANGE (the move_targets' own),
				 * NULL for the default one */
	const struct mgmt_binding_list *bindings; /* of EXCHANGE (the
				 * move_targets' own), when it has a name */
};

/* Works out queue Q's dead-letter target (its listing's arguments win
 * over its policy's, from TS) and, when its key is fixed, maps it onto
 * one of the plan's destinations; a dead-letter exchange not yet in TS is
 * read into it. Returns 0 and fills T (free with move_target_free; it
 * borrows from TS), or -1 with ERR naming the queue and its target when
 * it has no dead-letter exchange or its fixed target maps onto no
 * destination (or onto more than one). */
int move_target_read(struct step_ctx *c, struct move_targets *ts,
    const struct mgmt_queue *q, struct move_target *t, char *err, size_t errlen);

/* The destination T sends a message with routing key KEY to (T's fixed
 * key, else KEY), or -1 with WHY. */
int move_target_dest(const struct step_ctx *c, const struct move_target *t,
    const char *key, char *why, size_t whylen);

void move_target_free(struct move_target *t);

#define MOVE_ID_LEN 32		/* hex digits of a move id */

/* D's move id into OUT (move_old_id.c): MOVE_ID_LEN hex digits of the
 * SHA-256 of QUEUE and of all of D that stays the same each time old queue
 * QUEUE delivers it (exchange, routing key, message id, content type,
 * timestamp, body and headers, less the redelivery count a quorum queue
 * adds), so that every copy a crash makes of a message carries the same
 * one. With LEVELS, QUEUE names an old ladder rather than one of its
 * levels, the exchange and the headers dead-lettering adds are left out
 * and the other headers are taken in their keys' order (a broker may sort
 * them when it dead-letters): the same id wherever in that ladder the
 * message is taken, for a copy given back by a crash may be passed down a
 * level before the next run moves it again. Two messages alike in all of that share it: nothing
 * tells them apart. Returns 0, or -1 when the digest fails. */
int move_old__id(const char *queue, bool levels, const struct broker_delivery *d,
    char out[MOVE_ID_LEN + 1]);

/* The plan's first move_old.entry rule matching queue NAME
 * (move_old_rule.c): its index, or -1 (none: the entry is unknown); -2
 * with ERR when a pattern cannot decide. */
int move_old__entry_for(const struct plan *p, const char *name, char *err,
    size_t errlen);

/* Whether any entry rule of P reads the broker's arrival stamp. */
bool move_old__uses_arrival(const struct plan *p);

/* For a message with routing KEY in level queue LEVEL of the old ladder
 * (move_old_ladder.c): what it owes after that level (the lower levels its
 * key's bits name) into *REST_MS, and the plan's destination its key ends
 * with. Returns that destination's index, or -1 with WHY (a key that is no
 * ladder key, or a destination the plan does not list). */
int move_old__level_key(const struct plan *p, int level, const char *key,
    int64_t *rest_ms, char *why, size_t whylen);

/* Checks that every destination old.ladder's delivery exchange delivers
 * to (its bindings, on the old path's broker) is one of the plan's
 * destinations, so that nothing is moved when some of its messages could
 * not be. Returns 0, or -1 with ERR naming each one that is not, and what
 * to do. */
int move_old__ladder_dests(struct step_ctx *c, char *err, size_t errlen);

/* How far a run of move_old has come with its pass (move_old_progress.c). */
struct move_progress {
	int64_t remaining;	/* messages still to take, over every queue */
	int64_t taken;		/* messages taken by this run */
	int64_t t0_mono;	/* when this run began */
};

/* Starts PG at nothing remaining, the pace counted from now. */
void move_old__progress_start(struct move_progress *pg);

/* A queue the pass had counted as holding *HAD messages to take now holds
 * NOW_HOLDS (what a basic.get says it left; 0 once its pass is over):
 * corrects the remaining count and *HAD. */
void move_old__progress_queue(struct move_progress *pg, int64_t *had,
    int64_t now_holds);

/* Writes PG into STATE's "progress": remaining, taken, per_s (taken a
 * second by this run), eta_ms (from now until every remaining message is
 * taken at that pace: 0 when none remains, null until the pace is
 * measured) and updated_ms. */
void move_old__progress_write(const struct move_progress *pg, json_t *state);

#define SEEN_KEY_LEN 16		/* digits of a move id keying a first sighting */
#define SEEN_MAX 20000		/* first sightings the state keeps */

/* The step's state across runs (move_old_state.c). */

/* The integer at KEY of O (0 when absent); sets it to V. */
int64_t move_old__jint(const json_t *o, const char *key);
void move_old__set_int(json_t *o, const char *key, int64_t v);

/* The step's entries, one per old queue, each kept as its text between
 * the moments a run works on it (move_old_entries.c), with the figures
 * the run sums over them all. */
struct move_entry {
	char *text;			/* the entry, compact JSON */
	const char *name;		/* its queue's, in the table's blocks */
	int64_t moved, left, skipped, dup; /* its counts, as TEXT has them */
	int64_t left_until_ms;		/* INT64_MIN: none */
	int64_t pass_done;
};

struct move_entries {
	struct move_entry *v;		/* in the state's order */
	size_t n, cap;
	size_t *by_name;		/* places in V, by name, of those there
					 * at the last move_old__entries_index */
	size_t nby;
	struct strblocks *names;
	char *buf;			/* where move_old__entries_put writes */
	size_t bufcap;
};

/* Appends entry E (an object; its "name" may be missing) to ES. Returns
 * 0, or -1 when out of memory or E is no object. */
int move_old__entries_add(struct move_entries *es, const json_t *e);

/* Indexes ES by name for move_old__entries_of. Returns 0 or -1. */
int move_old__entries_index(struct move_entries *es);

/* The place in ES of queue NAME's entry (the first of that name), a new
 * one appended when there is none; -1 when out of memory. */
int64_t move_old__entries_of(struct move_entries *es, const char *name);

/* Entry ORD of ES as a tree (a new reference, NULL when out of memory),
 * and E written back as its text and figures (0, or -1 out of memory:
 * the text stands). */
json_t *move_old__entries_open(const struct move_entries *es, int64_t ord);
int move_old__entries_put(struct move_entries *es, int64_t ord, const json_t *e);

/* Every entry of ES as an array, for a run without the engine (a new
 * reference, NULL when out of memory). */
json_t *move_old__entries_array(const struct move_entries *es);

void move_old__entries_free(struct move_entries *es);

/* The step's state: C->state resumed, or a new one begun at NOW, its
 * "queues" empty and their entries in ES (zeroed before), each taken up
 * after a kill (move_old__after_kill). NULL with ERR when it cannot be
 * read. */
json_t *move_old__state_of(struct step_ctx *c, int64_t now, struct move_entries *es,
    char *err, size_t errlen);

/* The queues' counts, summed over their entries. */
struct move_counts {
	int64_t moved, left, skipped, dup;
};

/* Adds ENTRY's counts to T, or takes them off (SIGN -1): a queue's pass
 * takes off its entry's counts before and adds them after, so that the
 * totals cost a queue nothing of the selection's size. */
void move_old__count(struct move_counts *t, const json_t *entry, int sign);

/* T into STATE's "counts". */
void move_old__counts_set(json_t *state, const struct move_counts *t);

/* Totals of every entry's counts (ES) into T and STATE's "counts". */
void move_old__totals(json_t *state, const struct move_entries *es,
    struct move_counts *t);

/* The horizon left once the last pass (begun at LAST_PASS_MS) is done
 * with the entries ES, and what the old path alone would have needed:
 * into STATE. */
void move_old__horizon(struct step_ctx *c, json_t *state, const struct move_entries *es,
    int64_t last_pass_ms);

/* Records in the plan's history what the move did ("move_old.done"). */
void move_old__record_done(struct step_ctx *c, const json_t *state);

/* Takes up what a run killed mid-batch left in entry E, for the run that
 * begins at NOW: unrecorded gets and batches that may be moved twice. */
void move_old__after_kill(json_t *e, int64_t now);

/* The first sightings of STATE by key (each value the state's own
 * element); NULL when out of memory. */
json_t *move_old__seen_index(json_t *state);

/* The moment the message D (move id ID) was first seen in its queue (its
 * ENTRY of STATE), as far as the step knows: 0 unless the broker says it
 * delivered D before (only move_old takes from an old queue) and the step
 * recorded a message with its id then (in SEEN, move_old__seen_index).
 * Messages alike share an id, so the record is the latest sighting of any
 * of them; and no earlier than the moment by which a killed run's
 * unrecorded gets from the queue were over. */
int64_t move_old__first_seen(const json_t *state, const json_t *seen,
    const json_t *entry, const struct broker_delivery *d, const char *id);

/* Records in STATE and SEEN that a message of unknown entry with id ID was
 * in its queue at NOW, so entered no later (FIRST: move_old__first_seen's
 * answer). A message seen again keeps its record; any other sets its id's
 * record to NOW, the latest sighting of the messages alike. Once
 * SEEN_MAX ids are kept, a new one is not and no record is trusted any
 * more ("seen_full"): a message alike to one recorded could be taken for
 * it. */
void move_old__record_seen(json_t *state, json_t *seen, const char *id,
    int64_t first, int64_t now);

/* What the step writes of its state, and when (move_old_rows.c): the
 * state but its "queues" as the step's result, each entry that changed as
 * a row (store_step_save_entries), in one transaction. */
struct move_rows {
	struct store *store;		/* NULL: nothing is written (a step run
					 * without the engine) */
	int64_t plan_id;
	int step_idx;
	bool all;			/* the next write writes every entry (the
					 * run's first: the engine's write of the
					 * whole result took the rows away) */
	int64_t *changed;		/* places of the entries changed since
					 * the last write */
	size_t nchanged, cap;
};

/* Starts R for C's step, every entry to be written at the first write,
 * room for NQUEUES changed ones. Returns 0, or -1 out of memory. */
int move_old__rows_start(struct move_rows *r, struct step_ctx *c, size_t nqueues);
void move_old__rows_free(struct move_rows *r);

/* Notes that the entry at ORD changed (its text in the entries), for the
 * next write. */
void move_old__rows_changed(struct move_rows *r, int64_t ord);

/* Writes STATE (its "queues" empty) as the step's result and, as rows,
 * ENTRY (at ORD, the queue whose pass runs; NULL: none) and every entry
 * of ES noted changed (every entry at the run's first write), in one
 * transaction. A write that fails is done again, whole, by the next. */
void move_old__rows_write(struct move_rows *r, json_t *state,
    const struct move_entries *es, const json_t *entry, int64_t ord);

/* The old queues' publish counters of SEL (a selection on the statistics
 * listing: old_select_counted), summed as the watch sums them, into
 * STATE's "old_publishes" as the last pass begins. */
void move_old__publishes_at_last_pass(const struct old_selection *sel,
    json_t *state);

/* Whether the broker stamps arrivals, asked once a call, into STATE. */
void move_old__probe_arrival(struct step_ctx *c, json_t *state);

#endif
