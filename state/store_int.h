/* store_int: what the store's source files share and nothing else sees —
 * the connection and the small helpers around the SQLite API, named
 * store__ as internal (store_ is the public API). */
#ifndef CUTOVER_STORE_INT_H
#define CUTOVER_STORE_INT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>
#include <sys/types.h>

#include "errbuf.h"
#include "store.h"

/* The prev_hash of the first event of the chain. */
#define ZERO_HASH \
	"0000000000000000000000000000000000000000000000000000000000000000"

struct store {
	sqlite3 *db;
	char *path;                       /* the file opened, for store_file_check */
	dev_t dev;                        /* ... and what it was when opened */
	ino_t ino;
	bool held;                        /* counted among the file's open
	                                   * connections (store.c's checked) */
	int transient;                    /* a failure since the last clear was
	                                   * SQLITE_BUSY or SQLITE_LOCKED, or
	                                   * the disk full (then disk_full too) */
	int disk_full;
	sqlite3_int64 changes_at_begin;   /* sqlite3_total_changes64 at
	                                   * store_begin */
	/* store_version's: what it last saw and when (clock_mono_ms), and
	 * the number it answers, which moves on whenever either changes. */
	sqlite3_stmt *data_version;       /* kept prepared */
	int64_t version_asked_ms;
	int64_t data_version_seen;
	uint64_t commits_seen;
	uint64_t version;
};

/* The schema version the database at PATH names, read from its bytes
 * and its WAL's without SQLite (store_version.c): the largest user_version
 * of its header and of the frames of its header page in the WAL's current
 * generation. *VERSION is 0 for a file that is absent or not a SQLite
 * database. Returns 0, or -1 with ERR when a file cannot be read. */
int store__file_version(const char *path, int64_t *version, char *err, size_t errlen);

/* "WHAT: sqlite's message" into ERR, and notes whether the failure was
 * the database busy or locked (store_transient). Call before anything else
 * touches the connection, or the message is lost. */
void store__dberr(struct store *s, char *err, size_t errlen, const char *what);

/* Copies a column's text (NULL reads "") into DST, truncating to fit. */
void store__copystr(char *dst, size_t dstlen, const unsigned char *src);

/* A malloc'ed copy of column COL's text, or NULL when out of memory. */
char *store__dupcol(sqlite3_stmt *st, int col);

/* The columns of an events row, in the order store__read_event reads
 * them. */
#define STORE__EVENT_COLUMNS \
	"id, plan_id, ts_ms, actor, kind, details_json, prev_hash, hash"

/* Reads an events row selected as STORE__EVENT_COLUMNS into EV;
 * EV->details_json is malloc'ed (the caller frees it). Returns 0, or -1
 * out of memory. */
int store__read_event(sqlite3_stmt *st, struct store_event *ev);

/* Prepares SQL into *ST. Returns 0, or -1 with ERR naming WHAT. */
int store__prepare(struct store *s, const char *sql, sqlite3_stmt **st,
    const char *what, char *err, size_t errlen);

/* Runs SQL (no rows). Returns 0, or -1 with ERR naming WHAT. */
int store__exec(struct store *s, const char *sql, const char *what, char *err,
    size_t errlen);

/* Steps ST, bound, which returns no row. *ID (may be NULL) gets the rowid
 * the connection inserted last. Returns 0, or -1 with ERR naming WHAT. */
int store__run(struct store *s, sqlite3_stmt *st, const char *what, int64_t *id,
    char *err, size_t errlen);

/* Steps a bound UPDATE; no row changed is an error naming MISSING. */
int store__update_one(struct store *s, sqlite3_stmt *st, const char *what,
    const char *missing, char *err, size_t errlen);

/*
 * Prepares SQL, binds the arguments after TYPES to ?1, ?2, ... (one letter
 * each: 'i' int, 'n' int bound only when >= 0, 'I' int64_t, 'p' int64_t
 * bound only when > 0, 'd' double, 't' const char * bound only when not
 * NULL; a parameter left unbound is NULL), steps it (no row) and
 * finalizes it. *ID (may be NULL) gets the rowid inserted last;
 * sqlite3_changes tells how many rows it changed. With MISSING not NULL,
 * an UPDATE that must change a row: none changed is an error naming
 * MISSING. Returns 0, or -1 with ERR naming WHAT. Called as store__write
 * and store__write_one.
 */
int store__write_rows(struct store *s, const char *what, const char *missing,
    int64_t *id, char *err, size_t errlen, const char *sql, const char *types, ...);
/* store__write_rows with its arguments as AP (the caller's va_start and
 * va_end around it), for a caller that takes them on as its own. */
int store__write_rows_v(struct store *s, const char *what, const char *missing,
    int64_t *id, char *err, size_t errlen, const char *sql, const char *types,
    va_list ap);
#define store__write(s, what, id, err, errlen, ...)			\
	store__write_rows(s, what, NULL, id, err, errlen, __VA_ARGS__)
#define store__write_one(s, what, missing, err, errlen, ...)		\
	store__write_rows(s, what, missing, NULL, err, errlen, __VA_ARGS__)

/* Reads the current row of ST into ARG, for store__read. Returns 0 for
 * the next row, 1 to stop after this one, -1 when out of memory. */
typedef int (*store__row_fn)(sqlite3_stmt *st, void *arg);

/*
 * Prepares SQL, binds as store__write does, and calls FN for each row it
 * selects, until FN stops, or (ONE) for the first row only; finalizes it.
 * Returns how many rows FN read, or with ONE 0 when FN read one and
 * STORE_NOT_FOUND when there is none (ERR untouched); or -1 with ERR
 * naming WHAT (a failed step, or FN out of memory). Called as store__read
 * and store__read_one.
 */
int store__read_rows(struct store *s, const char *what, bool one, store__row_fn fn,
    void *arg, char *err, size_t errlen, const char *sql, const char *types, ...);
#define store__read(s, what, fn, arg, err, errlen, ...)			\
	store__read_rows(s, what, false, fn, arg, err, errlen, __VA_ARGS__)
#define store__read_one(s, what, fn, arg, err, errlen, ...)		\
	store__read_rows(s, what, true, fn, arg, err, errlen, __VA_ARGS__)

struct store_delivery;
struct store_notify_count;

/* A walk over rows that hands each, read into its struct, to a caller's
 * FN (the member for the rows walked) with ARG: what a store__row_fn
 * that calls back gets as its ARG. */
struct store__walk {
	union {
		int (*event)(const struct store_event *ev, void *arg);
		int (*delivery)(const struct store_delivery *d, void *arg);
		int (*count)(const struct store_notify_count *c, void *arg);
		int (*plan)(const struct store_plan *p, void *arg);
		int (*alert)(const struct store_alert *a, void *arg);
		int (*sample)(int64_t ts_ms, const char *metric, const char *label,
		    double value, void *arg);
	} fn;
	void *arg;
	int64_t plan_id;	/* the plan walked, for rows that do not say */
};

/* A store__row_fn for rows selected as STORE__EVENT_COLUMNS, its ARG a
 * struct store__walk: each event, read whole (store__read_event), handed
 * to the walk's fn.event, and freed once it returns. */
int store__event_row(sqlite3_stmt *st, void *arg);

/* A store__row_fn: column 0 as an integer into the int64_t at ARG. */
int store__row_int64(sqlite3_stmt *st, void *arg);

#endif
