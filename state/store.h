/* store: the SQLite database that is the single source of truth between the
 * engine and the web thread — plans, steps, the append-only hash-chained
 * event history, and watch samples. WAL, busy timeout, foreign keys; schema
 * versions through PRAGMA user_version. */
#ifndef CUTOVER_STORE_H
#define CUTOVER_STORE_H

#include <stddef.h>
#include <stdint.h>

#define STORE_SCHEMA_VERSION 1
#define STORE_HASH_HEX 65             /* sha256 as lowercase hex, NUL included */

struct store;

struct store_plan {
	int64_t id;
	char name[65];
	char sha256[STORE_HASH_HEX];      /* of the YAML as submitted */
	char status[24];                  /* running, succeeded, failed, aborted */
	int64_t created_ms;
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
	int64_t checked;                  /* events whose hash was recomputed */
	int64_t bad_id;                   /* first event that does not verify, or 0 */
	char reason[160];
};

/* Opens (creating if absent) the database at PATH and migrates it to
 * STORE_SCHEMA_VERSION. Refuses a database whose user_version is newer than
 * this binary's. Returns 0 and a store the caller closes, or -1 with ERR. */
int store_open(const char *path, struct store **out, char *err, size_t errlen);

/* Closes S (NULL is fine). */
void store_close(struct store *s);

/* Explicit transactions (BEGIN IMMEDIATE / COMMIT / ROLLBACK), so that a
 * state change and its event land together. Return 0 or -1 with ERR; a
 * failed commit rolls the transaction back, and rolling back when none is
 * open is a no-op. */
int store_begin(struct store *s, char *err, size_t errlen);
int store_commit(struct store *s, char *err, size_t errlen);
int store_rollback(struct store *s);

/* Inserts a plan: NAME, the YAML verbatim, its sha256 computed here, status
 * "running". Returns 0 and the new id in *ID, or -1 with ERR. */
int store_plan_insert(struct store *s, const char *name, const char *yaml,
    size_t yaml_len, int64_t now_ms, int64_t *id, char *err, size_t errlen);

/* Reads plan ID into *OUT. Returns 0, 1 when there is no such plan, or -1. */
int store_plan_get(struct store *s, int64_t id, struct store_plan *out,
    char *err, size_t errlen);

/* Newest plan called NAME. Returns 0, 1 when none, or -1. */
int store_plan_find(struct store *s, const char *name, struct store_plan *out,
    char *err, size_t errlen);

/* The YAML of plan ID, as submitted; the caller frees *YAML. Returns 0, 1, -1. */
int store_plan_yaml(struct store *s, int64_t id, char **yaml, size_t *len,
    char *err, size_t errlen);

/* Sets plan ID's status. Returns 0 or -1. */
int store_plan_set_status(struct store *s, int64_t id, const char *status,
    char *err, size_t errlen);

/* Inserts step IDX of plan PLAN_ID with status "pending". Returns 0 or -1. */
int store_step_insert(struct store *s, int64_t plan_id, int idx, const char *kind,
    int gate, char *err, size_t errlen);

/* Sets a step's status and times (a time of 0 leaves it unchanged), and
 * its result and error (NULL leaves it unchanged). Returns 0 or -1. */
int store_step_update(struct store *s, int64_t plan_id, int idx, const char *status,
    int64_t started_ms, int64_t ended_ms, const char *result_json,
    const char *error, char *err, size_t errlen);

/* Reads step IDX of plan PLAN_ID. Returns 0, 1 when absent, or -1. Free
 * with store_step_clear. */
int store_step_get(struct store *s, int64_t plan_id, int idx, struct store_step *out,
    char *err, size_t errlen);
void store_step_clear(struct store_step *st);

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

/* Recomputes the whole chain (every plan's events share one chain).
 * Returns 0 when every event verifies, 1 when one does not (RES says which
 * and why), -1 when the database could not be read. */
int store_verify_events(struct store *s, struct store_verify *res,
    char *err, size_t errlen);

/* Records one sample of a bounded metric (METRIC like "old.depth",
 * "ladder.depth", "parking.depth"; LABEL bounded, like a level number, or
 * ""). Returns 0 or -1. */
int store_sample_insert(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *metric, const char *label, double value, char *err, size_t errlen);

/* Calls FN for each sample of PLAN_ID with ts_ms >= SINCE_MS, oldest first. */
int store_each_sample(struct store *s, int64_t plan_id, int64_t since_ms,
    int (*fn)(int64_t ts_ms, const char *metric, const char *label, double value, void *arg),
    void *arg, char *err, size_t errlen);

#endif
