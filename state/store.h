/* store: the SQLite database that is the single source of truth between the
 * engine and the web thread — plans, steps, the append-only hash-chained
 * event history, and watch samples. WAL, busy timeout, foreign keys; schema
 * versions through PRAGMA user_version. */
#ifndef CUTOVER_STORE_H
#define CUTOVER_STORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errbuf.h"

#define STORE_SCHEMA_VERSION 7

/* Return codes: every function returns 0 or a negative code; failures
 * write ERR. The codes below -1 are ordinary answers, not failures (ERR
 * untouched unless the function says otherwise): a caller tests for them
 * before it treats a negative code as a failure. */
#define STORE_STATUS_MAP(X)						\
	X(STORE_OK, 0, "done")						\
	/* failure: ERR says why */					\
	X(STORE_ERR, -1, "failed")					\
	/* no such plan, step, command or alert */			\
	X(STORE_NOT_FOUND, -2, "not found")				\
	/* store_plan_submit: the plan is invalid */			\
	X(STORE_INVALID, -3, "invalid plan")				\
	/* store_plan_submit: one of that name runs */			\
	X(STORE_RUNNING, -4, "running")					\
	/* store_plan_submit: one of that name is finished but not	\
	 * archived */							\
	X(STORE_UNARCHIVED, -5, "not archived")				\
	/* an archive or command refused now (ERR says why) */		\
	X(STORE_REFUSED, -6, "refused")					\
	/* store_lock_take: another process holds the lock */		\
	X(STORE_LOCKED, -7, "locked")

/* enum store_status, and store_status_name(RC): what store code RC means,
 * in a word or two; "unknown" for any other value. */
ERRBUF_CODES(store_status, STORE_STATUS_MAP, store_status_name);

#define STORE_HASH_HEX 65             /* sha256 as lowercase hex, NUL included */

struct store;

struct store_plan {
	int64_t id;
	char name[65];
	char sha256[STORE_HASH_HEX];      /* of the YAML as submitted */
	char status[24];                  /* running, succeeded, failed, aborted */
	int64_t created_ms;
	int64_t archived_ms;              /* 0: not archived */
};

struct store_step {
	int64_t plan_id;
	int idx;                          /* 0-based position in the plan */
	char kind[24];
	int gate;
	char status[24];                  /* pending, waiting_approval, running, succeeded, failed */
	int64_t started_ms, ended_ms;     /* 0 when not yet */
	char *result_json;                /* owned; NULL when none */
	char *error;                      /* owned; NULL when none */
};

struct store_event {
	int64_t id;
	int64_t plan_id;
	int64_t ts_ms;
	char actor[65];
	char kind[48];
	char *details_json;               /* owned */
	char prev_hash[STORE_HASH_HEX];
	char hash[STORE_HASH_HEX];
};

struct store_verify {
	bool verified;                    /* every event verifies, chain whole */
	int64_t checked;                  /* events whose hash was recomputed */
	int64_t bad_id;                   /* first event that does not verify, or 0 */
	char reason[160];
};

/* ---- the connection and its transactions (store.c) ---- */

/* Opens (creating if absent) the database at PATH and migrates it to
 * STORE_SCHEMA_VERSION. Refuses a database whose user_version is newer than
 * this binary's. Returns 0 and a store the caller closes, or -1 with ERR. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);

/* Opens another connection to the database S has open, for another
 * thread: without S's checks and migration (its open ran them), in the
 * same modes. Refuses (-1 with ERR) when the file at S's path is gone or
 * is no longer the one S opened. Returns 0 and a store the caller closes. */
int store_open_again(const struct store *s, struct store **out, char *err,
    size_t errlen);

/* ---- backups (store_backup.c) ---- */

/* Writes a consistent copy of S's database into OUT, a new file (one that
 * exists is refused): one read transaction, so that the engine and the
 * API go on writing meanwhile; the copy is whole and on the disk when
 * this returns 0, and absent after -1 (with ERR). */
int store_backup(struct store *s, const char *out, char *err, size_t errlen);

/* Checks a copy store_backup made, C (opened from PATH), as a restore
 * would need it: SQLite's full integrity check and the whole history
 * chain. A copy that fails this is worse than none, because it is
 * trusted: the caller removes it. Returns 0, or -1 with ERR. */
int store_backup_verify(struct store *c, const char *path, char *err, size_t errlen);

/* Checks the database file of S (opened from PATH) for damage: SQLite's
 * quick_check, or its full integrity_check (indexes against their tables
 * too) when FULL. Returns 0 when the file is whole, or -1 with ERR saying
 * what SQLite found and what to do (restore a backup). store_open runs
 * the quick one. */
int store_integrity(struct store *s, const char *path, bool full, char *err,
    size_t errlen);

/* Whether the file S was opened from is still that file: neither removed
 * nor replaced (another inode at its path). A process that goes on
 * writing to a removed file writes into nothing anyone will read, and
 * one whose file was replaced reads a record that is not its own.
 * Returns 0, or -1 with ERR saying which. */
int store_file_check(struct store *s, char *err, size_t errlen);

/* Closes S (NULL is fine). */
void store_close(struct store *s);

/* From now on, a statement running on S stops with an error ("interrupted")
 * soon after *STOP becomes non-zero (SQLite's progress handler, looked at
 * every few thousand steps), so that another thread can end a long read (a
 * backup, its check) promptly at shutdown. STOP NULL: never. */
void store_stop_on(struct store *s, const atomic_int *stop);

/* Whether any failure on S since store_transient_clear was the database
 * busy or locked (SQLITE_BUSY, SQLITE_LOCKED: another connection holds it
 * past the busy timeout), a condition that passes and is worth retrying
 * rather than failing a step for. */
bool store_transient(const struct store *s);
void store_transient_clear(struct store *s);

/* Whether any failure on S since store_transient_clear was the disk
 * holding the database full (SQLITE_FULL, or ENOSPC under an I/O error):
 * store_transient too, but one that lasts until someone frees space, so
 * it is waited out with no time limit and said loudly. */
bool store_disk_full(const struct store *s);

/* Since when (epoch ms) a write of this process's has found the disk
 * full with no write succeeding after it (store_disk_full_resolved), or
 * 0: what /healthz and /metrics say. */
int64_t store_disk_full_since(void);

/* A write after a full disk succeeded: space has returned. */
void store_disk_full_resolved(void);

/* Explicit transactions (BEGIN IMMEDIATE / COMMIT / ROLLBACK), so that a
 * state change and its event land together. Return 0 or -1 with ERR; a
 * failed commit rolls the transaction back, and rolling back when none is
 * open is a no-op. */
int store_begin(struct store *s, char *err, size_t errlen);
int store_commit(struct store *s, char *err, size_t errlen);
int store_rollback(struct store *s);

/* A number that changes whenever the database may have changed since the
 * last call on this connection: at once for a commit by any connection of
 * this process (counted after the commit, by SQLite's WAL hook), within
 * STORE_VERSION_ASK_MS for one by another process (PRAGMA data_version,
 * asked at most that often: asking takes SQLite's file locks, which every
 * thread of the process shares). Readers keep what they built from the
 * database until it changes. Returns 0 and sets *VERSION, or -1 with ERR. */
#define STORE_VERSION_ASK_MS	2
int store_version(struct store *s, uint64_t *version, char *err, size_t errlen);

/* Bounds S's page cache to KIB kibibytes (SQLite's own is 2 MB a
 * connection): for connections that read rows larger than that (a step's
 * result of megabytes) but rarely the same pages twice, which the
 * operating system's file cache keeps anyway. Returns 0 or -1 with ERR. */
int store_cache_limit(struct store *s, int kib, char *err, size_t errlen);

/* ---- the engine's lock (store_lock.c) ---- */

/* The engine's lock on database DB_PATH (store_lock.c): only the process
 * holding it may run plans from that database. An exclusive fcntl lock on
 * DB_PATH.lock, which holds the holder's pid; the kernel releases it when
 * the process dies. Returns 0 with the lock in *OUT (release it with
 * store_lock_release, or let the process end); STORE_LOCKED when another
 * process holds it, ERR naming that pid; -1 on failure with ERR. OUT->fd is -1
 * unless the lock was taken. */
struct store_lock {
	int fd;
};
int store_lock_take(const char *db_path, struct store_lock *out, char *err,
    size_t errlen);

/* Releases L if held (again is fine). */
void store_lock_release(struct store_lock *l);

/* ---- plans (store_plans.c) ---- */

/* Inserts a plan: NAME, the YAML verbatim, its sha256 computed here, status
 * "running". Returns 0 and the new id in *ID, or -1 with ERR. */
int store_plan_insert(struct store *s, const char *name, const char *yaml,
    size_t yaml_len, int64_t now_ms, int64_t *id, char *err, size_t errlen);

/* Reads plan ID into *OUT. Returns 0, STORE_NOT_FOUND when there is no such
 * plan, or -1. */
int store_plan_get(struct store *s, int64_t id, struct store_plan *out,
    char *err, size_t errlen);

/* Newest plan called NAME. Returns 0, STORE_NOT_FOUND when none, or -1. */
int store_plan_find(struct store *s, const char *name, struct store_plan *out,
    char *err, size_t errlen);

/* The YAML of plan ID, as submitted; the caller frees *YAML. Returns 0,
 * STORE_NOT_FOUND, or -1. */
int store_plan_yaml(struct store *s, int64_t id, char **yaml, size_t *len,
    char *err, size_t errlen);

/* Marks plan ID archived at NOW_MS (its name is free again). Returns 0 or
 * -1. Callers check the rule first: store_plan_archive_as (store_admit.h). */
int store_plan_set_archived(struct store *s, int64_t id, int64_t now_ms,
    char *err, size_t errlen);

/* Sets plan ID's status. Returns 0 or -1. */
int store_plan_set_status(struct store *s, int64_t id, const char *status,
    char *err, size_t errlen);

/* Calls FN for each plan, newest first, until FN returns non-zero.
 * Returns 0 or -1. */
int store_each_plan(struct store *s, int (*fn)(const struct store_plan *p, void *arg),
    void *arg, char *err, size_t errlen);

/* ---- steps (store_steps.c) ---- */

/* Inserts step IDX of plan PLAN_ID with status "pending". Returns 0 or -1. */
int store_step_insert(struct store *s, int64_t plan_id, int idx, const char *kind,
    int gate, char *err, size_t errlen);

/* Sets a step's status and times (a time of 0 leaves it unchanged), and
 * its result and error (NULL leaves it unchanged). A result given is the
 * whole result: the rows store_step_save_entries kept for the step go, in
 * the same transaction. Returns 0 or -1. */
int store_step_update(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, char *err, size_t errlen);

/* One element of a step's result kept as a row of its own
 * (store_step_save_entries). */
struct store_entry {
	const char *name;                 /* the element's "name" */
	int64_t ord;                      /* its place in the list, >= 0: its
	                                   * key among the step's rows */
	const char *json;                 /* the element, valid JSON */
};

/* A step whose result holds a long list under "queues" (move_old's: an
 * entry per old queue; or under "entries": the first of the two its
 * result has) writes its result as RESULT_JSON, with that list empty,
 * and the elements that changed, V[0..N-1], each as a row keyed by its
 * place (a new one inserted, one there replaced, the rest kept), in one
 * transaction (the caller's when one is open): a write costs what changed,
 * not the list's length, and a kill -9 leaves the result and its rows of
 * one moment. Until the next store_step_update or store_step_reset of the
 * step, store_step_get gives its result with that list made of the rows
 * in their order (RESULT_JSON must have it as a top-level array to put
 * them in). Returns 0, or -1 with ERR. */
int store_step_save_entries(struct store *s, int64_t plan_id, int idx,
    const char *result_json, const struct store_entry *v, size_t n, char *err,
    size_t errlen);

/* Sets *OUT to element I of a list (ARG) of N, I from 0 to N-1 in turn,
 * its texts valid until the next call. Returns 0, or -1 with errno. */
typedef int (*store_entry_fn)(void *arg, size_t i, struct store_entry *out);

/* store_entry_fn of an array of struct store_entry (ARG). */
int store_entry_of_array(void *arg, size_t i, struct store_entry *out);

/* store_step_update of a run's whole result, RESULT_JSON, whose long
 * list "entries" (remove_old's: an entry per old queue) it holds empty,
 * and that list's N elements, each as a row read through GET (ARG; the
 * row at I has ord I), all in one transaction (the caller's when one is
 * open): the rows of the result before go, these take their place. A
 * list of 100,000 entries is then never one text of tens of megabytes
 * that SQLite copies (its bind, its record, its json_valid) or a reader
 * parses whole, and the caller need not hold its rows in memory either;
 * store_step_get puts the rows back in "entries". With N = 0, exactly
 * store_step_update; with GET NULL, the same but the rows there stay
 * (the list unchanged since: the watch's light tick). Returns 0, or -1
 * with ERR. */
int store_step_update_rows(struct store *s, int64_t plan_id, int idx,
    const char *status, int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, store_entry_fn get, void *arg, size_t n, char *err,
    size_t errlen);

/* Reads step IDX of plan PLAN_ID (its result with the rows
 * store_step_save_entries kept put back in). Returns 0, STORE_NOT_FOUND
 * when absent, or -1. Free with store_step_clear. */
int store_step_get(struct store *s, int64_t plan_id, int idx, struct store_step *out,
    char *err, size_t errlen);
void store_step_clear(struct store_step *st);

/* What store_step_each hands each element of a result's "queues" (E,
 * borrowed for the call): 0 to go on, else stop with that. */
struct json_t;
typedef int (*store_each_fn)(const struct json_t *e, void *arg);

/* Reads step IDX of plan PLAN_ID's result a part at a time: FN (NULL:
 * none) gets each element of its array PATH (a top-level member, "queues",
 * or a member of members' objects joined by dots, "old_last.queues"; the
 * rows store_step_save_entries kept for it included), parsed one at a
 * time, and *REST the result's text with that array empty, and the one
 * rows are kept for too (owned; NULL when the step or its result is
 * absent). A reader of a long list that needs a
 * few figures of each element holds the text, never the list's tree
 * (about 1.4 KB an element for measure_horizon's). Returns 0, or -1 with
 * ERR (FN's stop included). */
int store_step_each(struct store *s, int64_t plan_id, int idx, const char *path,
    store_each_fn fn, void *arg, char **rest, char *err, size_t errlen);

/* Hands FN (NULL: none) each element of the array MEMBER (a path, as
 * store_step_each's) of the JSON object TEXT (a step's result as stored),
 * parsed one at a time, as store_step_each does. Returns 0 (also when TEXT
 * has no such member), what FN returned when not 0, or -1 with *BAD set
 * when an element does not parse. */
int store_json_each(const char *text, const char *member, store_each_fn fn, void *arg,
    bool *bad);

/* Empties the array MEMBER (a path, as store_step_each's) of the JSON
 * object TEXT in place ("[]"), when it has one: the rest of a result
 * whose long list is read apart (store_json_each). */
void store_json_empty(char *text, const char *member);

/* Empties, likewise, the list of TEXT a step's rows are kept in (its
 * "queues" or "entries", the first of them it has at the top level).
 * Returns that member's name, or NULL when TEXT has neither. */
const char *store_json_empty_rows(char *text);

/* Reads step IDX of plan PLAN_ID as store_step_get does, but its result
 * as written, without the rows store_step_save_entries or
 * store_step_update_rows kept for it (its long list empty then): a reader
 * of that list reads the rows apart (store_step_rows_each), never one
 * text of them all. Returns 0, STORE_NOT_FOUND when absent, or -1. */
int store_step_get_apart(struct store *s, int64_t plan_id, int idx,
    struct store_step *out, char *err, size_t errlen);

/* How many rows the store keeps for step IDX of plan PLAN_ID's result
 * list (*N) and the bytes of their texts (*BYTES), without reading them.
 * Returns 0, or -1 with ERR. */
int store_step_rows_size(struct store *s, int64_t plan_id, int idx, int64_t *n,
    int64_t *bytes, char *err, size_t errlen);

/* The member of result TEXT (as store_step_get_apart reads it) its rows
 * go in: its "queues" or "entries", the first it has at the top level;
 * NULL when it has neither (or TEXT is NULL). */
const char *store_json_rows_member(const char *text);

/* Hands FN each row kept for step IDX of plan PLAN_ID's result list, in
 * its order, parsed one at a time (none: FN is not called). Returns 0, what
 * FN returned when not 0, or -1 with ERR (*BAD set when a row does not
 * parse). */
int store_step_rows_each(struct store *s, int64_t plan_id, int idx, store_each_fn fn,
    void *arg, bool *bad, char *err, size_t errlen);

/* Reads step IDX of plan PLAN_ID without its result and error (OUT's
 * result_json and error stay NULL): its status and times, which a step
 * asks of another whose result can be megabytes. Returns 0,
 * STORE_NOT_FOUND when absent, or -1. */
int store_step_times(struct store *s, int64_t plan_id, int idx, struct store_step *out,
    char *err, size_t errlen);

/* Reads the step plan PLAN_ID is at: its first step that has not
 * succeeded, or its last one when all have. Without the result and the
 * error (which can be megabytes: OUT's result_json and error stay NULL).
 * Returns 0, STORE_NOT_FOUND when the plan has no steps, or -1. */
int store_step_current(struct store *s, int64_t plan_id, struct store_step *out,
    char *err, size_t errlen);

/* Puts step IDX of PLAN_ID back to STATUS with no times, result (nor
 * the result's rows) or error (a retry starts it from the beginning).
 * Returns 0 or -1. */
int store_step_reset(struct store *s, int64_t plan_id, int idx, const char *status,
    char *err, size_t errlen);

/* Puts step IDX of PLAN_ID back to STATUS, started at STARTED_MS, with no
 * end or error, its result and its rows as they are (a retry of a step
 * that goes on from its last result: the watch). Returns 0 or -1. */
int store_step_restart(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, char *err, size_t errlen);

/* ---- the event history (store_events.c) ---- */

/* Appends an event to the history: its hash is sha256 over the previous
 * event's hash and this event's content (id, plan, time, actor, kind,
 * details). DETAILS_JSON must be valid JSON (NULL means "{}").
 * Returns 0 and the event id in *ID (may be NULL), or -1 with ERR. */
int store_append_event(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *actor, const char *kind, const char *details_json,
    int64_t *id, char *err, size_t errlen);

/* Calls FN for each event of PLAN_ID (0: all plans) in order; FN returns
 * non-zero to stop. The event is only valid during the call. Returns 0 or -1. */
int store_each_event(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_event *ev, void *arg), void *arg,
    char *err, size_t errlen);

/* Recomputes the whole chain (every plan's events share one chain) and
 * checks that it ends where its head (the count and last hash each append
 * records) says: events cut off the end are reported as "truncated: …".
 * Returns 0 with RES->verified true when every event verifies, false
 * when one does not or the chain is cut short (RES says which and why);
 * -1 when the database could not be read. */
int store_verify_events(struct store *s, struct store_verify *res,
    char *err, size_t errlen);

/* The hash store_append_event gives an event with these fields after the
 * event whose hash is PREV_HASH (64 hex digits; 64 zeros for the first),
 * into OUT as lowercase hex: what an offline check of an export recomputes.
 * Returns 0, or -1 when sha256 fails. */
int store_event_hash(const char *prev_hash, int64_t id, int64_t plan_id, int64_t ts_ms,
    const char *actor, size_t actor_len, const char *kind, size_t kind_len,
    const char *details, size_t details_len, char out[STORE_HASH_HEX]);

/* Reads the chain head: the number of events after the last append, and
 * that event's id and hash. Returns 0, STORE_NOT_FOUND when the head row
 * is gone, or -1. */
int store_chain_head(struct store *s, int64_t *events, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen);

/* How many events of PLAN_ID have a kind starting with KIND_PREFIX, into
 * *N. Returns 0 or -1 with ERR. */
int store_count_events(struct store *s, int64_t plan_id, const char *kind_prefix,
    int64_t *n, char *err, size_t errlen);

/* The event `cutover restore` records in each plan's history: the
 * database was restored from a backup, and whatever happened after the
 * backup's last event (up to this one) is not recorded. */
#define STORE_EVENT_RESTORED "state.restored"

/* When the latest event of PLAN_ID of kind KIND was recorded (epoch ms),
 * into *TS_MS; 0 when there is none. Returns 0 or -1 with ERR. */
int store_last_event_ms(struct store *s, int64_t plan_id, const char *kind,
    int64_t *ts_ms, char *err, size_t errlen);

/* ---- samples (store_samples.c) ---- */

/* Records one sample of a bounded metric (METRIC like "old.depth",
 * "ladder.depth", "parking.depth"; LABEL bounded, like a level number, or
 * ""). Returns 0 or -1. */
int store_sample_insert(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *metric, const char *label, double value, char *err, size_t errlen);

/* Calls FN for each sample of PLAN_ID with ts_ms >= SINCE_MS, oldest first. */
int store_each_sample(struct store *s, int64_t plan_id, int64_t since_ms,
    int (*fn)(int64_t ts_ms, const char *metric, const char *label, double value, void *arg),
    void *arg, char *err, size_t errlen);

/* Folds PLAN_ID's samples older than BEFORE_MS into one sample per metric,
 * label and BUCKET_MS-wide bucket, keeping the largest value (depths,
 * lateness and cumulative counts all read right as a maximum), so a long
 * watch keeps its shape in bounded space. Returns the number of rows
 * removed, or -1. */
int64_t store_samples_downsample(struct store *s, int64_t plan_id, int64_t before_ms,
    int64_t bucket_ms, char *err, size_t errlen);

/* ---- operator commands (store_commands.c) ---- */

struct store_command {
	int64_t id;
	int64_t plan_id;
	char kind[16];                    /* approve, retry, abort, ack */
	int step_idx;                     /* approve, retry; -1 otherwise */
	int64_t alert_id;                 /* ack; 0 otherwise */
	char actor[65];
	char comment[1001];
	int64_t created_ms;
	int64_t handled_ms;               /* 0 while the engine has not acted on it */
	char outcome[1200];               /* "done", "refused: why", ...; "" until then */
};

/* Records an operator command for plan PLAN_ID: KIND is approve or retry
 * (with STEP_IDX), abort, or ack (with ALERT_ID). The engine acts on it.
 * Returns 0 and its id in *ID (may be NULL), or -1 with ERR. */
int store_command_insert(struct store *s, int64_t plan_id, const char *kind,
    int step_idx, int64_t alert_id, const char *actor, const char *comment,
    int64_t now_ms, int64_t *id, char *err, size_t errlen);

/* The oldest command of PLAN_ID not handled yet. Returns 0 and fills OUT,
 * STORE_NOT_FOUND when there is none, -1 on failure. */
int store_command_next(struct store *s, int64_t plan_id, struct store_command *out,
    char *err, size_t errlen);

/* Command ID of PLAN_ID, handled or not. Returns 0 and fills OUT,
 * STORE_NOT_FOUND when there is none, -1 on failure. */
int store_command_get(struct store *s, int64_t plan_id, int64_t id,
    struct store_command *out, char *err, size_t errlen);

/* Marks command ID handled at NOW_MS with OUTCOME ("done", "refused: …").
 * Returns 0 or -1. */
int store_command_done(struct store *s, int64_t id, int64_t now_ms,
    const char *outcome, char *err, size_t errlen);

/* ---- alerts (store_alerts.c) ---- */

struct store_alert {
	int64_t id;
	int64_t plan_id;
	char kind[48];
	char message[512];
	int64_t raised_ms, last_ms;       /* first and latest time it was seen */
	int64_t count;                    /* how many times it was seen */
	int64_t acked_ms;                 /* 0 while open */
	char acked_by[65];
	char ack_comment[256];
	bool cause_present;               /* the engine saw its cause last,
					   * and not gone since */
	int64_t returns_after;            /* 0, or the alert acknowledged
					   * while its cause was there that
					   * this one returns after */
};

/* The alert serve raises for a plan it cannot run: the plan it stored no
 * longer loads (a plan written for another version of cutover, or a
 * database edited by hand). The engine cannot act on such a plan, nor on
 * the commands given for it, so the alert says what to do instead, and
 * closes by itself once the plan loads again. */
#define STORE_ALERT_CANNOT_RUN	"plan_cannot_run"
#define STORE_CANNOT_RUN_ACTION \
	"this cutover cannot read the plan it stored, so it neither runs it " \
	"nor acts on its commands: run the cutover version that submitted it " \
	"(or one that reads it) to finish or abort it; this alert then closes " \
	"by itself"

/* Raises an alert of KIND for PLAN_ID, or, when one of that kind is still
 * open, updates its message, last time and count. Returns 0 with *RAISED
 * true when a new alert was raised (its id in *ID), false when an open one
 * was updated; -1 on failure. For a kind whose cause the engine looks for
 * (alert_kind_tracks_cause), the alert's cause is marked present, and a
 * new one records the alert acknowledged while that cause was still there
 * that it returns after (store_alert.returns_after). */
int store_alert_raise(struct store *s, int64_t plan_id, const char *kind,
    const char *message, int64_t now_ms, int64_t *id, bool *raised, char *err,
    size_t errlen);

/* The engine looked and the cause of alert KIND of PLAN_ID is gone: none
 * of the plan's alerts of that kind, open or acknowledged, has its cause
 * present any more (a later one of that kind is a new occurrence, not a
 * return). Returns 0 or -1 on failure. */
int store_alert_cause_gone(struct store *s, int64_t plan_id, const char *kind,
    char *err, size_t errlen);

/* Alert ID of PLAN_ID, open or not, into *OUT. Returns 0, STORE_NOT_FOUND,
 * or -1 on failure. */
int store_alert_get(struct store *s, int64_t plan_id, int64_t id, struct store_alert *out,
    char *err, size_t errlen);

/* Acknowledges open alert ID of PLAN_ID. Returns 0, STORE_NOT_FOUND when
 * there is no such open alert, -1 on failure. */
int store_alert_ack(struct store *s, int64_t plan_id, int64_t id, const char *actor,
    const char *comment, int64_t now_ms, char *err, size_t errlen);

/* Calls FN for each alert of PLAN_ID (only open ones when OPEN_ONLY), oldest
 * first; FN returns non-zero to stop. Returns the number of alerts seen, or
 * -1 on failure. */
int store_each_alert(struct store *s, int64_t plan_id, int open_only,
    int (*fn)(const struct store_alert *a, void *arg), void *arg,
    char *err, size_t errlen);

#endif
