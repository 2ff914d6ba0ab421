/* remove_old_int: what remove_old.c (the checks and deletes) and
 * remove_old_when.c (which queues, their deadlines, the evidence of use
 * and the waits) share. Internal to remove_old. */
#ifndef CUTOVER_REMOVE_OLD_INT_H
#define CUTOVER_REMOVE_OLD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "old_path.h"

#define REASON_MAX 640
#define BASIS_MAX 200

/* What became of a queue. OUT_WAIT is a wait that time resolves: the step
 * runs again (ctx.again) instead of failing. */
enum outcome { OUT_NONE, OUT_REMOVED, OUT_GONE, OUT_LEFT, OUT_WOULD, OUT_WAIT,
	OUT_COUNT };

/* How an item holds its reason or what its deadline is made of. The
 * shapes every queue of a large old path shares (waiting for a deadline
 * made of the last entry and its TTL, deleted with if-empty) are no text
 * of their own: they are written from the item's figures when its entry
 * is (rm_reason, rm_basis), so that 100,000 waiting queues hold 100,000
 * numbers rather than 100,000 near-copies of one sentence. */
enum text_kind {
	TEXT_NONE,		/* nothing: "" */
	TEXT_OWN,		/* a text of its own (allocated) */
	TEXT_FIXED,		/* a string literal, not copied */
	TEXT_DEADLINE,		/* reason: not yet past its deadline */
	TEXT_ENTRY,		/* basis: last entry + TTL + allowance */
	TEXT_MOVED,		/* basis: move_old's last pass left nothing */
	TEXT_MOVED_LEFT		/* basis: move_old's last pass left messages */
};

/* Why a queue waits; each kind's deadline and words are a row of
 * remove_old_when.c's wait table. */
enum wait_kind {
	WAIT_NONE,
	WAIT_DEADLINE,		/* not yet past its deadline */
	WAIT_NEW,		/* appeared after the watch's last look */
	WAIT_USED,		/* a publish into it was seen: its own TTL again */
	WAIT_HELD,		/* held messages past its deadline: TTL again */
	WAIT_BASELINE		/* counters not comparable: a fresh baseline */
};

/* One old queue and what became of it (the figures first, the small
 * fields last: 100,000 of them are held at once, so no padding between). */
struct item {
	const char *name;		/* borrowed: measured, the watch's state,
					 * or the selection */
	const char *type;		/* "" when unknown */
	int64_t ttl_ms;			/* -1 unknown */
	int64_t deadline_ms;		/* -1 unknown */
	const char *basis;		/* what the deadline is made of, as
					 * BASIS_IS says (rm_basis) */
	int64_t seen;			/* depth the passive declare saw, -1: not checked */
	int64_t purged;			/* deleted with it (no if-empty), -1: n/a */
	int64_t at_ms;
	const char *reason;		/* why, as REASON_IS says (rm_reason) */
	struct old_fence *fence;	/* its fence, or NULL */
	const struct old_measured_queue *m; /* its measure (the old queues
					 * that dead-letter into it), or NULL */
	int64_t wait_since_ms;		/* when its wait began */
	int64_t wait_until_ms;		/* when it is checked again */
	int markers;			/* remove_old's markers in it */
	int wave;			/* 0: fed by no old queue; else 1 + its
					 * feeders' largest wave */
	unsigned char outcome;		/* enum outcome */
	unsigned char wait;		/* enum wait_kind: why it waits
					 * (OUT_WAIT), or WAIT_NONE */
	unsigned char waited;		/* enum wait_kind: the wait an earlier
					 * run gave it */
	unsigned char reason_is;	/* enum text_kind of REASON */
	unsigned char basis_is;		/* enum text_kind of BASIS */
	bool fence_wanted;		/* checked; to be fenced before the delete */
};

/* A queue an earlier run of this step removed, as its last result's entry
 * says (its texts in the run's TEXTS). */
struct rm_removed {
	const char *name, *type, *reason;
	int64_t ttl_ms, at_ms;
};

/* What an earlier run of this step said a queue waits for, as its last
 * result's entry says (the name the measured table's, else in the run's
 * TEXTS: one of these a waiting queue, 100,000 at once). */
struct rm_waited {
	const char *name;
	int64_t since_ms, until_ms;
	unsigned char kind;		/* enum wait_kind */
};

/* One run of old_remove: its inputs and what the waits need. */
struct rm_run {
	struct step_ctx *c;
	const struct old_remove_opts *o;
	const json_t *prev;		/* this step's last result when it runs
					 * again (never in a dry run), or NULL */
	struct old_counters base;	/* the counters compared with */
	const char *base_what;
	bool base_own;			/* BASE is this step's own, from PREV */
	struct old_counters prev_base;	/* the baseline PREV's entries carry
					 * (rm_last_read), until BASE takes it */
	const struct old_counters *kept_base; /* what this run's entries
					 * carry for the next: BASE, */
	const struct old_selection *kept_listed; /* or the selection's
					 * counters (rm_keep_baseline) */
	bool new_baseline;		/* take the selection's counters as the
					 * next run's baseline */
	int64_t now;
	const struct old_measured *mq;	/* measure_horizon's queues:
					 * C->measured_queues, else MQ_OWN */
	struct old_measured mq_own;	/* read from C->measured's tree */
	const struct old_moved *moved;	/* move_old's queues:
					 * C->moved_queues, else MOVED_OWN */
	struct old_moved moved_own;	/* read from C->moved's tree */
	struct rm_removed *removed;	/* PREV's entries that say "removed",
					 * by name (rm_last_read) */
	size_t nremoved, capremoved;
	struct rm_waited *waited;	/* PREV's entries' waits, by name
					 * (rm_last_read) */
	size_t nwaited, capwaited;
	struct strblocks *texts;	/* REMOVED's and WAITED's texts */
};

/* Reads into R->removed the entries of R->prev (its last result) that say
 * a queue was removed, and into R->waited what the others wait for, a
 * part at a time (step_state_each): of a result with an entry per old
 * queue, only those are kept (remove_old_last.c). Returns 0, or -1 with
 * ERR. */
int rm_last_read(struct rm_run *r, char *err, size_t errlen);

/* The queue an earlier run removed named NAME, or NULL. */
const struct rm_removed *rm_removed_find(const struct rm_run *r, const char *name);

/* What queue NAME waited for after the earlier run, or NULL. */
const struct rm_waited *rm_waited_find(const struct rm_run *r, const char *name);

/* Frees R->removed, R->waited and their texts. */
void rm_last_free(struct rm_run *r);

/* How many old queues dead-letter into IT (as measured). */
static inline size_t
rm_nfed(const struct item *it)
{
	return it->m != NULL ? it->m->nfed : 0;
}

/* The K-th of them (K < rm_nfed(IT)). */
static inline const char *
rm_fed_by(const struct item *it, size_t k)
{
	return it->m->fed_by[k];
}

/* The name of wait K ("deadline", "baseline"…), as results write it. */
const char *rm_wait_name(enum wait_kind k);

/* The wait named NAME, as results write it; WAIT_NONE when none is. */
enum wait_kind rm_wait_of(const char *name);

/* What the deadline of wait K is made of, the wait's start to follow
 * ("a publish into it seen, + TTL + allowance:"); "" for none. */
const char *rm_wait_basis(enum wait_kind k);

/* Does wait K run the queue's TTL (+ allowance), not a baseline window? */
bool rm_wait_runs_ttl(enum wait_kind k);

/* Sets IT's outcome to O and its reason (printf; cut at REASON_MAX - 1
 * bytes, as every text of an item is cut at its _MAX); a FMT without a
 * conversion is kept as it is, not copied (the compiler holds every FMT
 * to a literal). Out of memory leaves the reason empty. */
void rm_set_reason(struct item *it, enum outcome o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds a sentence to IT's reason (sentences_add), R's run's. */
void rm_add_reason(const struct rm_run *r, struct item *it, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets what IT's deadline is made of (printf, cut at BASIS_MAX - 1). */
void rm_set_basis(struct item *it, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Sets what IT's deadline is made of to one of the shared shapes
 * (TEXT_ENTRY, TEXT_MOVED, TEXT_MOVED_LEFT), written when it is read. */
void rm_basis_is(struct item *it, enum text_kind k);

/* IT's reason, and what its deadline is made of, in R's run: "" when
 * none. A shape made from the item's figures is written into BUF (LEN
 * bytes: REASON_MAX for a reason, BASIS_MAX for a basis), otherwise the
 * text IT holds is returned. */
const char *rm_reason(const struct rm_run *r, const struct item *it, char *buf,
    size_t len);
const char *rm_basis(const struct rm_run *r, const struct item *it, char *buf,
    size_t len);

/* Frees the texts of the N items of ITEMS. */
void rm_items_free(struct item *items, size_t n);

/* Makes IT wait (OUT_WAIT) for KIND from R->now, with REASON (printf). */
void rm_wait(const struct rm_run *r, struct item *it, enum wait_kind kind,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Reads R's baseline: this step's own (R->prev "baseline": its time, the
 * counters its entries carry, or, as an earlier version wrote it, its own
 * list), else the watch's last sample, else the counters now (R->c's
 * vhost). Returns 0, or -1 with ERR. */
int rm_baseline(struct rm_run *r, char *err, size_t errlen);

/* Makes every item of ITEMS that selection S holds wait with a fresh
 * baseline when R's baseline is not to be trusted: the database was
 * restored from a backup after it was read (what happened between the
 * backup and the restore is not recorded), or a node of the broker
 * started after it (its counters began again from zero). Returns true
 * when either did. */
bool rm_restarted(struct rm_run *r, const struct old_selection *s,
    struct item *items, size_t nitems);

/* Fills ITEMS with the old path's members: the queues R->mq (measured)
 * lists, in the measure's order, those the watch saw join it, those
 * selection S holds beyond both, and those an earlier run of the step
 * removed; each takes the wait an earlier run gave it. Returns how many;
 * with ITEMS NULL, only counts them (the items are then allocated to
 * size: of 100,000 queues, the ones measured are also selected). */
size_t rm_items(struct rm_run *r, const struct old_selection *s, struct item *items);

/* Decides, without touching the broker, what can be checked: selected,
 * with a known TTL, past its deadline (or its wait), and no evidence of use
 * since the baseline in S's counters. Returns how many of ITEMS it put in
 * TODO. */
size_t rm_triage(struct rm_run *r, const struct old_selection *s,
    struct item *items, size_t nitems, struct item **todo);

/* What a queue found holding messages past its deadline becomes: a wait
 * for its TTL once, then left. */
void rm_held(struct rm_run *r, struct item *it, uint32_t messages);

/* Decides the baseline the next run compares with: S's counters (its
 * listing's) when R took a new one, else R's own, else none (the next
 * run compares with the watch's sample again). Each entry carries its
 * queue's counters of it ("baseline_publish", "baseline_messages") and
 * the result only when it was read (rm_state_json): at 100,000 queues a
 * list of its own would be a tree of some 45 MB to read and one to
 * write. */
void rm_keep_baseline(struct rm_run *r, const struct old_selection *s);

/* Queue NAME's counters in the baseline R keeps, into *PUBLISH and
 * *MESSAGES (-1: none). Returns false when it keeps none for NAME. */
bool rm_kept_counter(const struct rm_run *r, const char *name, int64_t *publish,
    int64_t *messages);

/* Adds to RESULT what the next run needs besides its entries (which say
 * each queue's wait and baseline): "baseline" ({"at_ms", "exact",
 * "in_entries": true}) when R keeps one. */
void rm_state_json(const struct rm_run *r, json_t *result);

/* When the old path is a ladder (old.ladder) and every old level queue of
 * ITEMS is gone: deletes the old ladder's level and delivery exchanges
 * that nothing but the old ladder uses (no other binding from or into
 * it, no queue dead-lettering into it, no exchange naming it as its
 * alternate exchange; its own bindings taken off first,
 * then exchange.delete with if-unused; put back when refused), never the
 * default or an amq.* exchange, a destination's exchange or, on the same
 * broker, one the new ladder's topology names. S is the run's selection
 * (the vhost's queues: none may dead-letter into a deleted exchange).
 * Adds to RESULT "exchanges" (an entry per exchange: name, role, level,
 * outcome (removed, gone, left, kept, would_remove, waiting), at_ms,
 * reason) and "exchange_counts". An exchange left in use fails nothing.
 * Returns 0, or -1 with ERR when the broker failed on one. */
int rm_exchanges(struct rm_run *r, const struct old_selection *s,
    const struct item *items, size_t nitems, json_t *result, char *err,
    size_t errlen);

/* Writes MS, rounded up to a second, as "1h21m51s". Returns OUT. */
char *rm_to_go(int64_t ms, char *out, size_t outlen);

#endif
