/* step: what every step of a plan shares — the context it runs in (the plan
 * and its broker connections) and one signature, so the engine and the
 * command line run the same code. */
#ifndef CUTOVER_STEP_H
#define CUTOVER_STEP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "plan.h"
#include "store.h"

#define STEP_BROKER_TIMEOUT_MS 10000

struct old_measured;		/* oldpath/old_path.h */
struct old_counters;
struct old_inputs;

/* The results of a plan's earlier steps, as a step's prepare function reads
 * them: RESULT_OF(ARG, KIND) gives the persisted result of the plan's step
 * of KIND (a new reference) or NULL; ENDED_OF(ARG, KIND) (NULL: never
 * known) when that step ended (epoch ms), 0 when it has not. */
#define STEP_INPUTS_MAX 4
struct step_inputs {
	json_t *(*result_of)(void *arg, enum plan_step_kind kind);
	int64_t (*ended_of)(void *arg, enum plan_step_kind kind);
	/* EACH_OF(ARG, KIND, PATH, FN, FNARG, REST), NULL when not offered:
	 * the result of KIND a part at a time (step_input_each), never its
	 * list's tree. */
	int (*each_of)(void *arg, enum plan_step_kind kind, const char *path,
	    store_each_fn fn, void *fnarg, json_t **rest);
	void *arg;
	json_t *held[STEP_INPUTS_MAX];	/* fetched by step_input */
	size_t nheld;
};

/* One event a step hands the engine for the plan's history: KIND and its
 * DETAILS (owned). The engine records them, in the order handed, in the
 * same transaction as the store write that follows the run (the step's
 * state, or its end), before that transition's own event. */
struct step_event {
	char *kind;
	json_t *details;
};

/* Where an event goes at once instead of into the list: the engine's
 * record of it inside its open transaction. Takes DETAILS (stolen).
 * Returns 0, or -1 with its reason in the engine's error. */
typedef int (*step_event_sink_fn)(void *arg, const char *kind, json_t *details);

struct step_events {
	struct step_event *v;
	size_t n, cap;
	step_event_sink_fn sink;   /* set: each event is handed to it as it is
	                            * added, none kept (an ended remove_old's
	                            * event per removed queue: 100,000 trees
	                            * held at once otherwise) */
	void *sink_arg;
};

/* Appends event KIND with DETAILS (stolen; NULL: {}) to EV, or hands it
 * to EV's sink when it has one. Returns 0, or -1 when out of memory or
 * the sink failed (DETAILS freed). */
int step_events_add(struct step_events *ev, const char *kind, json_t *details);

/* Frees what EV holds and empties it. */
void step_events_clear(struct step_events *ev);

/* A run's long result list handed to the engine a row at a time
 * (step_rows.c): each element's text and name written to a temporary
 * file ($TMPDIR, else /var/tmp; gone when closed), only where each begins
 * kept in memory. The engine writes them beside the result
 * (store_step_update_rows, reading them back with step_rows_get), whose
 * list stays empty: at 100,000 old queues no tree nor text of the whole
 * list is made, and the rows' ~50 MB wait on disk, not in the process. */
struct step_rows {
	FILE *f;             /* "json\0name\0" a row, in order */
	uint64_t *at;        /* at[i]: where row I begins in F */
	uint64_t end;        /* where the next row begins */
	size_t n, cap;
	bool unflushed;      /* rows written since F was last flushed */
	char *buf;           /* the row step_rows_get read last */
	size_t bufcap;
	char err[200];       /* why the last step_rows_add failed */
};

/* Appends ELEMENT (an object with a "name"; borrowed) to ROWS as its
 * text. Returns 0, or -1 with the reason in ROWS->err (out of memory, or
 * the temporary file could not be made or written). */
int step_rows_add(struct step_rows *rows, const json_t *element);

/* The same of an element already written as TEXT (compact JSON), under
 * NAME (NULL or "": "(none)"). */
int step_rows_add_text(struct step_rows *rows, const char *name, const char *text);

/* store_entry_fn over a struct step_rows (ARG): row I read back from its
 * file into its buffer, valid until the next call. Returns 0, or -1 with
 * errno. */
int step_rows_get(void *arg, size_t i, struct store_entry *out);

/* Hands ELEMENT (stolen; NULL: out of memory) over as a row into ROWS,
 * or, when ROWS is NULL (a step run by hand), appends it to LIST.
 * Returns 0, or -1 when out of memory or the row could not be written
 * (said in ROWS->err). */
int step_rows_put(struct step_rows *rows, json_t *list, json_t *element);

/* Where the engine reads a run's ROWS: step_rows_get, or, when the run
 * KEPT its last result's rows and has none of its own (rows_kept), NULL,
 * which store_step_update_rows takes as "the rows there stay". */
store_entry_fn step_rows_source(const struct step_rows *rows, bool kept);

/* Closes ROWS's file, frees what it holds and empties it. */
void step_rows_clear(struct step_rows *rows);

/* What one run of a step reads and hands back: zeroed, released and freed
 * as one (struct step_run) by step_ctx_begin_run and step_ctx_end_run, and
 * reached by name in struct step_ctx (C->measured, C->again…). A run's
 * inputs are borrowed from JSON that lives only as long as that run: each
 * run begins with none, so none is read after it was freed. */
#define STEP_RUN_FIELDS \
	/* Inputs the engine (or the command line) gives later steps, set by \
	 * the step's prepare function (step_kinds.def's PREPARE). */ \
	const json_t *measured;    /* borrowed: measure_horizon's result, or NULL */ \
	const json_t *watched;     /* borrowed: the watch's last state (its \
	                            * "old_last" sample), or NULL */ \
	struct old_counters *watched_last; /* owned: C->watched's "old_last" \
	                            * as a table, which remove_old's prepare \
	                            * takes out of the state it keeps (a \
	                            * queue's JSON object costs about 400 \
	                            * bytes, its entry here 40), or NULL */ \
	const json_t *moved;       /* borrowed: move_old's result, or NULL */ \
	const struct old_measured *measured_queues; /* borrowed: the table \
	                            * of C->measured's queues (the watch's \
	                            * and remove_old's prepare leave \
	                            * "queues" out of C->measured and \
	                            * C->moved: step_old_inputs), or NULL */ \
	const struct old_moved *moved_queues; /* borrowed: likewise \
	                            * C->moved's, for remove_old, or NULL */ \
	int64_t old_last_entry_ms; /* last time a message entered the old path \
	                            * (epoch ms), 0 when unknown */ \
	int64_t flip_ms;           /* when the flip was confirmed (epoch ms), 0 if not */ \
	int64_t now_ms;            /* the step's clock (epoch ms), 0: the real one */ \
	int64_t restored_ms;       /* when the plan's database was last restored \
	                            * from a backup (epoch ms), 0: never; set by \
	                            * step_restored for the steps that weigh \
	                            * what they read before it */ \
	const json_t *state;       /* borrowed: this step's last persisted result \
	                            * when it is resumed or continued, else NULL */ \
	const char *state_text;    /* borrowed: C->state's text as stored, when \
	                            * its kind reads its long list ("queues" \
	                            * or "entries") apart (step_state_each; \
	                            * C->state has it empty then), else NULL */ \
	int state_idx;             /* with STATE_TEXT: the step whose rows \
	                            * in C->store hold the rest of that list \
	                            * (store_step_get_apart left them out) */ \
	bool again;                /* out: set by a step that returned 0 and must \
	                            * be run again (the watch, until its \
	                            * deadline) */ \
	int64_t again_after_ms;    /* out: with AGAIN, the least time until that \
	                            * run when longer than watch.interval (a \
	                            * run whose broker cost grows with the \
	                            * queues), 0: watch.interval */ \
	struct step_events events; /* out: events for the history (owned) */ \
	bool rows_wanted;          /* the engine takes the run's long list as \
	                            * ROWS, not in its result (its kind's \
	                            * STEP_KIND_RESULT_ROWS) */ \
	struct step_rows rows;     /* out: with ROWS_WANTED, the result's \
	                            * "queues" or "entries", which it holds \
	                            * empty (owned) */ \
	bool rows_kept;            /* out: with ROWS_WANTED and no ROWS, the \
	                            * rows of its last result stand (the \
	                            * watch's light tick: the last full pass's \
	                            * counters), not none \
	                            * (step_rows_source) */ \
	bool stopped;              /* out: the run gave up because the process \
	                            * is stopping (step_stop_asked): nothing \
	                            * of it is to be recorded */ \
	struct step_inputs inputs; /* what the engine's prepare call reads: \
	                            * the references it fetched are released \
	                            * with the run */

struct step_run {
	STEP_RUN_FIELDS
};

struct step_ctx {
	/* What lives across runs: the plan, its broker connections and the
	 * store the steps that record as they go (flip, watch) write to. */
	const struct plan *plan;   /* borrowed */
	/* The ladder's broker (plan_ladder_broker: the plan's target when it
	 * names one, else its broker): the ladder, its probes, the canary,
	 * what move_old publishes. Owned; opened by step_ctx_open. */
	struct broker *amqp;
	struct mgmt *mgmt;
	/* The old path's broker (the plan's broker): what is measured,
	 * watched, moved out of and removed there. The same objects as amqp
	 * and mgmt when the plan has no target; else owned as well. */
	struct broker *old_amqp;
	struct mgmt *old_mgmt;
	struct store *store;       /* borrowed; NULL when run by hand */
	int64_t plan_id;
	/* The watch's probes read by its last tick and not yet acknowledged
	 * (watch.c): settled at the next tick, once the engine has recorded
	 * the state that accounts for them. Freed by step_ctx_close. */
	struct broker_delivery *held;
	size_t nheld, capheld;
	/* What the watch reads of earlier steps' results, kept across its
	 * ticks (step_watch_prepare). Freed by
	 * step_ctx_close. */
	struct old_inputs *kept;
	/* Borrowed, may be NULL: non-zero once the process is asked to stop
	 * (SIGTERM). A step that waits (the canary for its messages, move_old
	 * between batches) gives its run up there (step_stop_asked) rather
	 * than hold the stop for minutes: it resumes from what it last
	 * recorded at the next start, as after a kill. */
	volatile sig_atomic_t *stop;

	/* The current run's part: RUN as one, or its fields by name. */
	union {
		struct step_run run;
		struct {
			STEP_RUN_FIELDS
		};
	};
};

/* step_ctx_open's return when a broker did not answer (refused, timed
 * out, closed), which time may mend, rather than refused what it asked. */
#define STEP_CTX_UNREACHABLE	(-2)

/* Opens the AMQP connection and the management API client of P's broker,
 * and of its target when it names one (credentials resolved from their
 * env: references now). Returns 0, or -1 (STEP_CTX_UNREACHABLE) with ERR
 * naming which failed and why; nothing stays open on failure. */
int step_ctx_open(struct step_ctx *c, const struct plan *p, char *err, size_t errlen);

/* How many times C's connections lost their broker or got no answer since
 * step_ctx_open (broker_losses and mgmt_losses of each): a step that failed
 * with more than before its run failed on the broker's silence. */
unsigned long step_ctx_losses(const struct step_ctx *c);

/* Opens an AMQP connection to broker B of a plan (its broker, its target):
 * broker_open_list over every URL of its amqp, tried in order (see
 * broker.h), back to an earlier one after its return_after. Returns what
 * it does. */
int step_broker_open(const struct plan_broker *b, int timeout_ms,
    struct broker **out, char *err, size_t errlen);

/* Whether the process is asked to stop (C->stop): when so, the current
 * run is marked given up (C->stopped), and the step returns -1 at once,
 * leaving things as a kill at that point would (the engine records
 * nothing of the run). */
bool step_stop_asked(struct step_ctx *c);

/* Closes what C holds. Safe on a zeroed or half-opened context. */
void step_ctx_close(struct step_ctx *c);

/* Begins one run of a step of plan P (id PLAN_ID in store S, S NULL when
 * run by hand) in C, whose connections stay as they are: the run's part
 * (struct step_run) ends as step_ctx_end_run ends it, then STATE
 * (borrowed, may be NULL) is set. */
void step_ctx_begin_run(struct step_ctx *c, const struct plan *p, struct store *s,
    int64_t plan_id, const json_t *state);

/* Ends the current run of C in one: releases the inputs its prepare
 * fetched (C->inputs), frees the events not taken (C->events) and zeroes
 * the rest of the run's part; what the run borrowed (its state) the caller
 * frees next. Safe on a run never begun. */
void step_ctx_end_run(struct step_ctx *c);

/* Drops what C's current run read, keeping what it hands back (C->events,
 * C->again): releases its inputs (C->inputs) and clears what points into
 * them and its state (which the caller may free then), so that a caller
 * recording a large result does not hold the inputs beside its text. */
void step_ctx_drop_inputs(struct step_ctx *c);

/* Sets C->restored_ms from the plan's history (its latest
 * state.restored event): what was recorded before it may be older than
 * what happened on the broker and the flag service, which went on while
 * the backup aged. Returns 0, or -1 with ERR when the store fails. */
int step_restored(struct step_ctx *c, char *err, size_t errlen);

/* The signature of a step: runs it in C and returns 0 when it succeeded or
 * -1 when it failed or could not be confirmed (ERR says why); a step that
 * succeeded this time but is not over sets C->again. In both cases
 * *RESULT is set to a new JSON object describing what was done and seen,
 * which the caller persists and frees. Running a step again is safe.
 * The watch sets C->again every tick until its deadline: run it again
 * later with its result as C->state (step_watch). */
typedef int (*step_fn)(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* The result of the plan's step of KIND, borrowed from IN until
 * step_inputs_release, or NULL when there is none. */
const json_t *step_input(struct step_inputs *in, enum plan_step_kind kind);

/* Puts WITH (a new reference, taken) in place of HELD, an input step_input
 * fetched into IN, and releases HELD: a prepare that keeps less of an
 * input than it read. Returns WITH, or HELD (WITH released) when IN does
 * not hold HELD. */
const json_t *step_input_replace(struct step_inputs *in, const json_t *held,
    json_t *with);

/* The result of the plan's step of KIND a part at a time: FN (NULL:
 * none) gets each element of its list PATH ("queues", or members joined
 * by dots: "old_last.queues"), one at a time, then *REST the result with
 * that list empty (a new reference; NULL when it has none). From the
 * store (IN's EACH_OF) it holds the result's text, not the list's tree;
 * else it reads RESULT_OF's tree. Returns 0, or -1 (FN stopped, memory,
 * a result that does not parse). */
int step_input_each(struct step_inputs *in, enum plan_step_kind kind, const char *path,
    store_each_fn fn, void *fnarg, json_t **rest);

/* step_input_each, with the rest held in IN as step_input's results are
 * (*REST borrowed until step_inputs_release; NULL when there is none).
 * Returns 0, or -1. */
int step_input_apart(struct step_inputs *in, enum plan_step_kind kind,
    const char *path, store_each_fn fn, void *fnarg, const json_t **rest);

/* Hands FN each element of the array MEMBER of C's last result (its
 * state), parsed one at a time from C->state_text and then the rows the
 * store keeps for it (C->state_idx's) when the engine kept the text, else
 * from C->state's tree. Returns 0 (also with no state), or -1
 * with ERR when an element does not parse or FN stopped. */
int step_state_each(const struct step_ctx *c, const char *member, store_each_fn fn,
    void *arg, char *err, size_t errlen);

/* Where step_inputs_of_store reads the earlier steps: run PLAN_ID of plan
 * P in store S (each borrowed). */
struct step_store_inputs {
	struct store *s;
	int64_t plan_id;
	const struct plan *p;
};

/* Step inputs (RESULT_OF, ENDED_OF and EACH_OF) read from SRC's store, as the
 * engine and `cutover old remove --db` give them; SRC must outlive their
 * use. A step the store cannot read counts as one with no result. */
struct step_inputs step_inputs_of_store(struct step_store_inputs *src);

/* When the plan's step of KIND ended (epoch ms), 0 when it has not or IN
 * cannot say. */
int64_t step_input_ended(struct step_inputs *in, enum plan_step_kind kind);

/* What the watch and remove_old read of measure_horizon's and move_old's
 * results, from IN a part at a time, kept in C (C->kept) across runs until
 * either step ends anew: C->measured and C->moved without their "queues",
 * C->measured_queues their table and, when WITH_MOVED, C->moved_queues
 * move_old's. Returns 0, or -1 with ERR (out of memory, the store could
 * not be read, a result does not parse). */
int step_old_inputs(struct step_ctx *c, struct step_inputs *in, bool with_moved,
    char *err, size_t errlen);

/* Releases what IN holds. */
void step_inputs_release(struct step_inputs *in);

/* The signature of a step's prepare function (the step-kind table's
 * PREPARE): sets in C the inputs its step reads (C->measured, C->watched,
 * C->old_last_entry_ms…) from IN, before the step runs. Returns 0, or -1
 * when the step cannot run (ERR says why, *RESULT may be set to the
 * step's result then). */
typedef int (*step_prepare_fn)(struct step_ctx *c, struct step_inputs *in,
    json_t **result, char *err, size_t errlen);

/* The signature of a step kind's EVENTS hook (step_kinds.def): called by
 * the engine once a step of its kind has ended (succeeded or failed),
 * inside the transaction that records that end, with the step's RESULT
 * (borrowed) and C still in the run (C->store, C->plan_id): appends to
 * C->events the events RESULT stands for, reading the history as that
 * transaction sees it. Returns 0, or -1 with ERR (the transaction is then
 * rolled back and the step runs again). */
typedef int (*step_events_fn)(struct step_ctx *c, const json_t *result, char *err,
    size_t errlen);

/* The watch's inputs: what it reads of measure_horizon's result
 * (C->measured without its "queues", which are C->measured_queues) and of
 * move_old's (C->moved, likewise), read once and kept in C across its
 * ticks until either step ends anew; the flip's end as C->flip_ms. */
int step_watch_prepare(struct step_ctx *c, struct step_inputs *in, json_t **result,
    char *err, size_t errlen);

/* move_old's inputs: measure_horizon's result as C->measured, move_old's
 * own last one as C->moved, the flip's end as C->flip_ms. */
int step_move_old_prepare(struct step_ctx *c, struct step_inputs *in,
    json_t **result, char *err, size_t errlen);

/* remove_old's inputs: measure_horizon's and move_old's results as the
 * watch has them (step_old_inputs, move_old's queues as a table too), the
 * watch's last state, the flip's end and the last entry into the old path
 * (the watch's, never before the flip); -1 when measure_horizon or the
 * flip has recorded none. */
int step_remove_old_prepare(struct step_ctx *c, struct step_inputs *in,
    json_t **result, char *err, size_t errlen);

/* remove_old's EVENTS hook: one event per old queue its RESULT says is
 * gone, with its entry (name, depth seen, time, reason) as the details:
 * old.queue_removed for each it deleted; old.queue_gone for each it found
 * already deleted, unless the history records its removal already (a
 * retried step): by an earlier run of the step killed before it could
 * record its deletions, or by someone else. Every measured queue that no
 * longer exists is thus accounted for once. A remove_old that left some
 * queues still deleted the others: both ends record them. An old ladder's
 * exchanges (RESULT's "exchanges") are recorded alike, as
 * old.exchange_removed and old.exchange_gone, and one left in use as
 * old.exchange_left. */
int step_remove_old_events(struct step_ctx *c, const json_t *result, char *err,
    size_t errlen);

/* declare_ladder: declares every object of the plan's topology: exchanges,
 * level and parking queues with their arguments, every binding, and last,
 * for a library's naming, the policy that gives its delivery exchange the
 * alternate exchange. Destination
 * queues are bound, never redeclared; a missing one fails the step before
 * anything is declared, naming it and where the plan lists it, unless
 * ladder.create_destinations lets it create them. Idempotent. A queue or
 * exchange that exists with other arguments fails the step, naming it. */
int step_declare_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* verify_ladder: reads the ladder back through the management API and
 * compares every object with the plan: existence, type, durability,
 * arguments as effective values (a policy overriding any of them is
 * drift), the exact bindings of each ladder exchange, the alternate
 * exchange and parking path, and every destination. The result is
 * {"ok":bool,"objects":[{"kind","name","status","detail"}],"counts":{…}};
 * any status other than "ok" fails the step. */
int step_verify_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* measure_horizon: selects the old queues (old.queues.match, a PCRE2
 * pattern over the vhost's queue names, or old.queues.names) with one fast listing,
 * reads each one's effective TTL (the lower of x-message-ttl and a policy's
 * message-ttl; old.max_message_ttl for a queue with neither), x-expires,
 * type, depth and consumers, and its dead-letter chain among the old
 * queues (the horizon counts the sum of the TTLs along it), and computes
 * the horizon with its reasoning. An empty selection, a queue without a
 * TTL and no max_message_ttl, a dead-letter cycle, or (unless
 * old.allow_expiring, which records "warnings" instead) a queue that
 * expires sooner than its chain's TTL + watch.allowance, fails the step,
 * naming the queue; but a classic queue whose expiry is at least its own
 * TTL is accepted with a note (declared again at each publish, it outlives
 * its last message), and a quorum queue with any expiry is refused (its
 * expiry is never renewed). */
int step_measure_horizon(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* remove_old: deletes each old queue of the old path (C->measured's, the
 * watch's joined ones in C->watched, and those selected now beyond both,
 * from when it first saw them) that is still selected, empty (an AMQP passive declare: exact and current), past its
 * own deadline (C->old_last_entry_ms + its dead-letter chain's TTL +
 * watch.allowance; or, when move_old's last pass (C->moved) covered it and
 * the watch saw nothing enter the old path since that pass began, the
 * not-before of what the pass left there, or the pass's start when it left
 * nothing, + watch.allowance: each entry's "deadline_why" says which), not
 * fed by an old queue still there, and whose publish
 * counter has not moved since C->watched's last sample. Classic queues are
 * deleted with if-empty and if-unused; quorum queues cannot be, so they are
 * fenced by a policy, checked again, then deleted (old_path.h). What time
 * resolves (a deadline not yet passed, a publish or messages seen since
 * the baseline, counters reset, a node restarted) is a wait: it returns 0
 * with C->again set, its result ("waiting", "baseline") the state of the
 * next run (C->state), which comes after watch.interval or twenty times
 * this run's time when that is longer (C->again_after_ms, the result's
 * "again_after_ms": a run reads every old queue's counters). The result has one entry per queue (removed, gone
 * already, waiting, or left with why). Fails while any is left: what a
 * person must act on, said in its reason. Before anything, the plan's flag must read on
 * (step_flag_require_on): while it reads off or cannot be read, nothing is
 * deleted. */
int step_remove_old(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* remove_old's preview: old_remove as `old remove --dry-run` (every check,
 * nothing deleted, no fence put or swept), against the watch's last
 * sample; the result is old_remove's with "dry_run": true. Returns 0 when
 * every old queue would go, -1 (ERR says which would stay and why). */
int step_remove_old_preview(struct step_ctx *c, json_t **result, char *err,
    size_t errlen);

/* canary: publishes one message per canary delay through the ladder to a
 * canary queue private to the plan, with confirms, consumes them and checks
 * each (arrived, never before its not-before time, lateness within
 * canary.max_lateness, x-death = the levels whose bits are 1, delivered by
 * the delivery exchange), sends one to an unbound destination and checks it
 * reaches the parking queue (then removes exactly that message), and removes
 * the canary queue, also after a failure. */
int step_canary(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* flip: switches new delayed publishes to the ladder by turning the plan's
 * feature flag on, then reads it back. Records its intent before calling
 * the flag service ("flip.requested") and the confirmation after
 * ("flip.confirmed") in C->store. Once any flag event of the plan is
 * recorded (a flip resumed after a crash, retried, or after a rollback),
 * the flag is read before sending: a flag already on is not sent again
 * (only the confirmation is recorded), and one that cannot be read is not
 * switched at all. Within one send, flag_switch sends the write again
 * after a 5xx only once a read-back shows it did not take (unreadable:
 * FLAG_ERR_UNCONFIRMED, the step fails without another write), so a
 * toggle-style service gets one transition per flip. A write that got no
 * answer is in doubt (flag.in_doubt): the step is not confirmed and sends
 * nothing more while it may land (flag.settle after it); it runs again
 * (C->again) reading the flag, is confirmed when it reads on, and fails
 * when the window ends with the flag off. The plan's first send is not
 * preceded by a read, unless the database was restored from a backup
 * (state.restored): the flag may have been switched after the backup.
 * Without C->store nothing is recorded and nothing read first. */
int step_flip(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* Whether the flag is believed on from the recorded history: a
 * "flip.requested" not followed by a confirmed rollback, or a restore
 * from a backup after the last switch recorded (or with none: the flag may
 * have been switched after the backup). Returns 0 with
 * the answer in *ON, or -1 when the store could not be read. */
int step_flip_is_on(struct store *s, int64_t plan_id, bool *on, char *err,
    size_t errlen);

/* rollback: the same for turning the flag off (abort after the flip),
 * recorded as "rollback.requested" / "rollback.confirmed"; it does not
 * wait for a write in doubt: when one could still land against it (or
 * its own write got no answer) it returns STEP_FLAG_IN_DOUBT, unconfirmed,
 * and the engine's settle window (step_flag_settle) decides. */
int step_rollback(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* step_rollback's answer when it could not confirm the flag off because
 * a write turning it on is in doubt (sent, no answer: it may still land):
 * not sent, not confirmed, not failed; the settle window decides. */
#define STEP_FLAG_IN_DOUBT	(-2)

/* What a plan's history records of its flag (flag_settle.c). */
struct step_flag_record {
	int must_be;               /* STEP_FLAG_ON or STEP_FLAG_OFF: where the
	                            * recorded state says the flag must be; -1:
	                            * the plan never asked for a flip */
	int doubt_want;            /* a write in doubt: STEP_FLAG_ON or _OFF,
	                            * what it would set; -1 none */
	int64_t doubt_until_ms;    /* until when it may still land (epoch ms) */
	int64_t settle_until_ms;   /* the settle window's end (epoch ms), 0 none */
	bool settled;              /* flag.settled recorded for that end */
	bool rollback_unconfirmed; /* aborted with its rollback in doubt, not
	                            * confirmed since */
	const char *why;           /* MUST_BE's reason, in words (static) */
};

/* Reads what the history of PLAN_ID (plan P) records of its flag into
 * *REC: flip and rollback events, flag.in_doubt (a write without an
 * answer: open for P's flag.settle_ms after it), the engine's own
 * flag.changed / flag.restored, and plan.aborted. Returns 0, or -1 with
 * ERR when the store could not be read. */
int step_flag_record(struct store *s, const struct plan *p, int64_t plan_id,
    struct step_flag_record *rec, char *err, size_t errlen);

/* Whether REC has a write in doubt that may still land at NOW_MS. */
bool step_flag_in_doubt(const struct step_flag_record *rec, int64_t now_ms);

/* Records flag.in_doubt for a switch to ON whose write got no answer
 * (RESULT: flag_switch's, borrowed; WHY its message): it may land until
 * now + flag.settle. Returns 0 or -1 with ERR. */
int step_flag_doubt_record(struct step_ctx *c, bool on, const json_t *result,
    const char *why, char *err, size_t errlen);

/* One look of the settle window of C's plan (C->plan, store, plan_id):
 * when the history has a window open (step_flag_record), reads the flag
 * once; one that reads other than it must be raises the alert
 * flag_changed, is recorded (flag.changed) and written back, one write,
 * recorded (flag.restored, flag.restore_failed or flag.in_doubt), unless
 * a write that way is still in doubt. A window that ended more than a
 * minute ago (no engine looked then) is left as it is, unread. Once the
 * window is over and the flag reads as it must, records flag.settled
 * (and rollback.confirmed after an abort whose rollback was in doubt).
 * *OPEN says whether the window is still open (look again later), and
 * *UNTIL_MS (epoch ms) when it ends as things stand. Returns 0, or -1
 * with ERR when the store failed. */
int step_flag_settle(struct step_ctx *c, bool *open, int64_t *until_ms, char *err,
    size_t errlen);

/* What step_flag_check found. */
#define STEP_FLAG_ON		1
#define STEP_FLAG_OFF		0
#define STEP_FLAG_UNREADABLE	(-1)

/* Reads P's flag once (flag_read_with: one GET, no retry, a few seconds at
 * most) and returns STEP_FLAG_ON, STEP_FLAG_OFF, or STEP_FLAG_UNREADABLE
 * (no answer, an error answer, or a value that is neither on nor off);
 * WHY says what was seen (the flag client's message: never a secret). A
 * plan without a flag has nothing to read: STEP_FLAG_ON. */
int step_flag_check(const struct plan *p, char *why, size_t whylen);

/* Describes P's flag for messages ("Unleash feature 'F' (URL, project P,
 * environment E)"): never its token or headers. Returns OUT. */
const char *step_flag_describe(const struct plan *p, char *out, size_t outlen);

/* The check remove_old makes before deleting anything: returns 0 when C's
 * flag reads on; else -1 with ERR saying that nothing is deleted and why,
 * and *RESULT a new {"ok":false,"flag":"off"|"unreadable","error"}. */
int step_flag_require_on(struct step_ctx *c, json_t **result, char *err,
    size_t errlen);

/* move_old: moves the messages waiting in the old queues into
 * the ladder with their remaining delay, never early (move_entry.h), each
 * acked in its old queue only after its publisher confirm; what cannot go
 * (beyond the ladder, entry unknown over the bound, no destination, not
 * confirmed) stays in its old queue. Refuses to start, moving nothing,
 * when a selected queue's dead-letter target maps onto no destination
 * (naming the queue and the target). Persists its state after each batch;
 * passes over the queues twice, at once and once flip + move_old.stragglers
 * is past, returning 0 with C->again set (the engine calls it again) until
 * then; then 0 (C->again false) with
 * "horizon_ms" (what stayed in the old path + watch.allowance),
 * "old_horizon_ms" and "saved_ms"; -1 when it cannot go on (ERR says
 * why). The result: {"ok", "pass", "counts": {"moved", "left",
 * "skipped", "may_duplicate"}, "queues": [{"name", "ttl_ms", "from",
 * "destination", "moved", "left", "left_why": {...}, "left_until_ms",
 * "skipped", "may_duplicate"}], "seen": [[key, ms], ...] (first
 * sightings of messages of unknown entry), ...}. */
int step_move_old(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* watch: one sample of both paths (old queues, ladder levels, parking,
 * probes), persisted as samples; raises alerts. Returns 0 and sets
 * C->again while the watch must go on (*RESULT is its state, which the
 * engine persists and passes back as C->state at the next call, one
 * watch.interval later); returns 0 with C->again false when the deadline
 * has passed with the old path empty and no alert open; -1 when it cannot
 * go on. */
int step_watch(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* The watch's downsampling policy, applied at most every ten minutes of
 * watch time (*LAST_MS remembers when): samples of PLAN_ID older than an
 * hour fold into 10-minute buckets. Returns the rows removed, or -1. */
int64_t step_watch_downsample(struct store *s, int64_t plan_id, int64_t now_ms,
    int64_t *last_ms, char *err, size_t errlen);

/* Removes the plan's ladder (level exchanges first, so nothing new enters,
 * then queues, then the delivery and parking objects), refusing while any
 * level or the parking queue holds a message. Destination queues are left
 * (their consumers own them). Not a plan step: `cutover ladder teardown`. */
int step_teardown_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen);

/* prior_run.c: before the plan's first measurement, whether the broker
 * and the flag service show an earlier run of it that C's database holds
 * no record of (its flag on, its levels holding messages, its fences set),
 * for a plan not submitted as new. Returns 0 when not (or C has no
 * store), or -1 with ERR saying what was found and what to do. */
int step_prior_run(struct step_ctx *c, char *err, size_t errlen);

#endif
