/* store_events: the append-only event history, one sha256 hash chain
 * across all plans, with its head (count and last hash), and the chain's
 * verification. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "store.h"
#include "hex.h"
#include "store_int.h"

/*
 * The event hash: sha256, as lowercase hex, over the fields below in this
 * order, each written as a netstring — its length in bytes in decimal, ':',
 * the bytes, ',' — so that no two different rows serialize alike:
 *
 *	prev_hash, id, plan_id, ts_ms, actor, kind, details_json
 *
 * Integers are written in decimal. The first event's prev_hash is 64 zeros.
 */
static int
hash_field(EVP_MD_CTX *ctx, const void *p, size_t n)
{
	char len[32];
	int k;

	k = snprintf(len, sizeof(len), "%zu:", n);
	if (EVP_DigestUpdate(ctx, len, (size_t)k) != 1 ||
	    (n > 0 && EVP_DigestUpdate(ctx, p, n) != 1) ||
	    EVP_DigestUpdate(ctx, ",", 1) != 1)
		return -1;
	return 0;
}

static int
hash_int(EVP_MD_CTX *ctx, int64_t v)
{
	char buf[32];
	int k;

	k = snprintf(buf, sizeof(buf), "%" PRId64, v);
	return hash_field(ctx, buf, (size_t)k);
}

static int
event_hash(const char *prev_hash, int64_t id, int64_t plan_id, int64_t ts_ms,
    const char *actor, size_t actor_len, const char *kind, size_t kind_len,
    const char *details, size_t details_len, char out[STORE_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	EVP_MD_CTX *ctx;
	int rc = -1;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    hash_field(ctx, prev_hash, strlen(prev_hash)) == -1 ||
	    hash_int(ctx, id) == -1 ||
	    hash_int(ctx, plan_id) == -1 ||
	    hash_int(ctx, ts_ms) == -1 ||
	    hash_field(ctx, actor, actor_len) == -1 ||
	    hash_field(ctx, kind, kind_len) == -1 ||
	    hash_field(ctx, details, details_len) == -1 ||
	    EVP_DigestFinal_ex(ctx, md, &mdlen) != 1 || mdlen != 32)
		goto done;
	hex_encode(md, mdlen, out);
	rc = 0;
done:
	EVP_MD_CTX_free(ctx);
	return rc;
}

/*
 * Reading the last event and inserting the next must be one write
 * transaction. Inside the caller's (store_begin is BEGIN IMMEDIATE) a
 * savepoint scopes our part. Standalone we take BEGIN IMMEDIATE rather than a
 * bare SAVEPOINT: that would be a deferred transaction, and in WAL a reader
 * that tries to become a writer after another connection committed fails at
 * once with SQLITE_BUSY_SNAPSHOT instead of waiting out the busy timeout.
 */
int
store_append_event(struct store *s, int64_t plan_id, int64_t ts_ms,
    const char *actor, const char *kind, const char *details_json,
    int64_t *id, char *err, size_t errlen)
{
	static const char last_sql[] =
	    "SELECT id, hash FROM events ORDER BY id DESC LIMIT 1";
	static const char insert_sql[] =
	    "INSERT INTO events (id, plan_id, ts_ms, actor, kind, details_json,"
	    " prev_hash, hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
	sqlite3_stmt *st = NULL;
	char prev[STORE_HASH_HEX], hash[STORE_HASH_HEX];
	int64_t next = 1;
	int nested, rc = -1, src;

	if (details_json == NULL)
		details_json = "{}";
	if (actor == NULL || kind == NULL) {
		errbuf_set(err, errlen, "appending event: no %s",
		    actor == NULL ? "actor" : "kind");
		return -1;
	}
	nested = !sqlite3_get_autocommit(s->db);
	if (store__exec(s, nested ? "SAVEPOINT store_event" : "BEGIN IMMEDIATE",
	    "appending event: begin", err, errlen) == -1)
		return -1;

	if (store__prepare(s, last_sql, &st, "appending event: reading last event",
	    err, errlen) == -1)
		goto done;
	snprintf(prev, sizeof(prev), "%s", ZERO_HASH);
	src = sqlite3_step(st);
	if (src == SQLITE_ROW) {
		next = sqlite3_column_int64(st, 0) + 1;
		store__copystr(prev, sizeof(prev), sqlite3_column_text(st, 1));
	} else if (src != SQLITE_DONE) {
		store__dberr(s, err, errlen, "appending event: reading last event");
		goto done;
	}
	sqlite3_finalize(st);
	st = NULL;

	if (event_hash(prev, next, plan_id, ts_ms, actor, strlen(actor), kind,
	    strlen(kind), details_json, strlen(details_json), hash) == -1) {
		errbuf_set(err, errlen, "appending event: sha256 failed");
		goto done;
	}
	if (store__prepare(s, insert_sql, &st, "appending event", err, errlen) == -1)
		goto done;
	sqlite3_bind_int64(st, 1, next);
	sqlite3_bind_int64(st, 2, plan_id);
	sqlite3_bind_int64(st, 3, ts_ms);
	sqlite3_bind_text(st, 4, actor, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 5, kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 6, details_json, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, prev, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, hash, -1, SQLITE_STATIC);
	if (store__run(s, st, "appending event", NULL, err, errlen) != 0)
		goto done;
	sqlite3_finalize(st);
	st = NULL;
	if (store__exec(s, nested ? "RELEASE store_event" : "COMMIT",
	    "appending event: commit", err, errlen) == -1)
		goto done;
	if (id != NULL)
		*id = next;
	rc = 0;
done:
	sqlite3_finalize(st);
	if (rc == -1) {
		if (nested) {
			sqlite3_exec(s->db, "ROLLBACK TO store_event",
			    NULL, NULL, NULL);
			sqlite3_exec(s->db, "RELEASE store_event",
			    NULL, NULL, NULL);
		} else
			store_rollback(s);
	}
	return rc;
}

int
store__read_event(sqlite3_stmt *st, struct store_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->id = sqlite3_column_int64(st, 0);
	ev->plan_id = sqlite3_column_int64(st, 1);
	ev->ts_ms = sqlite3_column_int64(st, 2);
	store__copystr(ev->actor, sizeof(ev->actor), sqlite3_column_text(st, 3));
	store__copystr(ev->kind, sizeof(ev->kind), sqlite3_column_text(st, 4));
	store__copystr(ev->prev_hash, sizeof(ev->prev_hash), sqlite3_column_text(st, 6));
	store__copystr(ev->hash, sizeof(ev->hash), sqlite3_column_text(st, 7));
	return (ev->details_json = store__dupcol(st, 5)) == NULL ? -1 : 0;
}

int
store__event_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;
	struct store_event ev;
	int stop;

	if (store__read_event(st, &ev) != 0)
		return -1;
	stop = w->fn.event(&ev, w->arg) != 0;
	free(ev.details_json);
	return stop;
}

int
store_each_event(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_event *ev, void *arg), void *arg,
    char *err, size_t errlen)
{
	static const char all_sql[] =
	    "SELECT " STORE__EVENT_COLUMNS " FROM events ORDER BY id";
	static const char plan_sql[] =
	    "SELECT " STORE__EVENT_COLUMNS " FROM events WHERE plan_id = ?1 ORDER BY id";
	struct store__walk w = { .fn.event = fn, .arg = arg };

	return store__read(s, "reading events", store__event_row, &w, err, errlen,
	    plan_id == 0 ? all_sql : plan_sql, plan_id == 0 ? "" : "I", plan_id) < 0 ?
	    -1 : 0;
}

/* Reads the current row of ST (the columns of verify_chain's query): its
 * id into *ID, its stored prev_hash and hash ("" when NULL), and the hash
 * its content has after PREV into HASH. Returns 0, or -1 with ERR. */
static int
row_hash(sqlite3_stmt *st, const char *prev, int64_t *id, const char **stored_prev,
    const char **stored_hash, char hash[STORE_HASH_HEX], char *err, size_t errlen)
{
	const char *actor, *kind, *details;
	size_t actor_len, kind_len, details_len;

	/* Text first, then its length: the documented safe order. The
	 * tables are STRICT, so no column is converted. */
	*id = sqlite3_column_int64(st, 0);
	actor = (const char *)sqlite3_column_text(st, 3);
	actor_len = (size_t)sqlite3_column_bytes(st, 3);
	kind = (const char *)sqlite3_column_text(st, 4);
	kind_len = (size_t)sqlite3_column_bytes(st, 4);
	details = (const char *)sqlite3_column_text(st, 5);
	details_len = (size_t)sqlite3_column_bytes(st, 5);
	*stored_prev = (const char *)sqlite3_column_text(st, 6);
	*stored_hash = (const char *)sqlite3_column_text(st, 7);
	if (*stored_prev == NULL)
		*stored_prev = "";
	if (*stored_hash == NULL)
		*stored_hash = "";
	if (event_hash(prev, *id, sqlite3_column_int64(st, 1),
	    sqlite3_column_int64(st, 2), actor, actor_len, kind,
	    kind_len, details, details_len, hash) == -1) {
		errbuf_set(err, errlen, "verifying events: sha256 failed");
		return -1;
	}
	return 0;
}

/* Does event ID, stored with STORED_PREV and STORED_HASH and hashing to
 * HASH, follow event PREV_ID (0: none) whose hash is PREV? When not, says
 * why in res->reason. */
static bool
row_follows(struct store_verify *res, int64_t id, int64_t prev_id, const char *prev,
    const char *stored_prev, const char *stored_hash, const char *hash)
{
	if (id != prev_id + 1) {
		if (prev_id == 0)
			snprintf(res->reason, sizeof(res->reason),
			    "the first event has id %" PRId64
			    ", not 1: earlier events are missing", id);
		else
			snprintf(res->reason, sizeof(res->reason),
			    "event %" PRId64 " follows event %" PRId64
			    ": events in between are missing",
			    id, prev_id);
		return false;
	}
	if (strcmp(stored_prev, prev) != 0) {
		if (prev_id == 0)
			snprintf(res->reason, sizeof(res->reason),
			    "prev_hash is not the chain start "
			    "(64 zeros)");
		else
			snprintf(res->reason, sizeof(res->reason),
			    "prev_hash does not match the hash of "
			    "event %" PRId64, prev_id);
		return false;
	}
	if (strcmp(stored_hash, hash) != 0) {
		snprintf(res->reason, sizeof(res->reason),
		    "hash does not match the event's content");
		return false;
	}
	return true;
}

/* Walks the chain from its start (one statement: one snapshot). Returns
 * 0 when every event verifies, with the last one's id and hash in LAST_ID
 * and LAST (64 zeros when there is none); 1 when one does not (RES says
 * which and why); -1 when the database could not be read. */
static int
verify_chain(struct store *s, struct store_verify *res, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen)
{
	static const char sql[] =
	    "SELECT id, plan_id, ts_ms, actor, kind, details_json, prev_hash,"
	    " hash FROM events ORDER BY id";
	sqlite3_stmt *st = NULL;
	char prev[STORE_HASH_HEX], hash[STORE_HASH_HEX];
	const char *stored_prev, *stored_hash;
	int64_t prev_id = 0, id;
	int rc = -1, src;

	snprintf(prev, sizeof(prev), "%s", ZERO_HASH);
	if (store__prepare(s, sql, &st, "verifying events", err, errlen) == -1)
		goto done;
	while ((src = sqlite3_step(st)) == SQLITE_ROW) {
		if (row_hash(st, prev, &id, &stored_prev, &stored_hash, hash, err,
		    errlen) != 0)
			goto done;
		res->checked++;

		res->bad_id = id;
		if (!row_follows(res, id, prev_id, prev, stored_prev, stored_hash, hash)) {
			rc = 1;
			goto done;
		}
		res->bad_id = 0;
		prev_id = id;
		memcpy(prev, hash, sizeof(prev));
	}
	if (src != SQLITE_DONE) {
		store__dberr(s, err, errlen, "verifying events");
		goto done;
	}
	*last_id = prev_id;
	memcpy(last, prev, STORE_HASH_HEX);
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* The chain head as read_head reads it. */
struct head {
	int64_t *events, *last_id;
	char *last;
};

/* store__read's FN for read_head. */
static int
head_row(sqlite3_stmt *st, void *arg)
{
	const struct head *h = arg;

	*h->events = sqlite3_column_int64(st, 0);
	*h->last_id = sqlite3_column_int64(st, 1);
	store__copystr(h->last, STORE_HASH_HEX, sqlite3_column_text(st, 2));
	return 0;
}

/* Reads the chain head: how many events the chain held after the last
 * append, and that event's id and hash. Returns 0, 1 when the head row
 * is gone, -1 on failure. */
static int
read_head(struct store *s, int64_t *events, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen)
{
	struct head h = { events, last_id, last };
	int r = store__read_one(s, "verifying events: reading the chain head", head_row,
	    &h, err, errlen, "SELECT events, last_id, last_hash FROM chain_head WHERE id = 1",
	    "");

	return r == STORE_NOT_FOUND ? 1 : r;
}

/*
 * The walk proves each event follows the one before; only the head says
 * where the chain ended. Both are read in one read transaction, so an
 * append in between cannot look like a difference.
 */
int
store_verify_events(struct store *s, struct store_verify *res,
    char *err, size_t errlen)
{
	char last[STORE_HASH_HEX], head_hash[STORE_HASH_HEX];
	int64_t last_id = 0, head_events = 0, head_id = 0;
	int own = sqlite3_get_autocommit(s->db), rc = -1, hr;

	memset(res, 0, sizeof(*res));
	if (own && store__exec(s, "BEGIN", "verifying events: begin", err, errlen) == -1)
		return -1;
	if ((hr = read_head(s, &head_events, &head_id, head_hash, err, errlen)) < 0)
		goto done;
	if ((rc = verify_chain(s, res, &last_id, last, err, errlen)) != 0)
		goto done;
	rc = 1;
	if (hr == 1) {
		snprintf(res->reason, sizeof(res->reason), "the chain head is missing: "
		    "where the history ended cannot be checked");
	} else if (res->checked < head_events) {
		res->bad_id = last_id + 1;
		snprintf(res->reason, sizeof(res->reason), "truncated: the chain head "
		    "records %" PRId64 " events up to event %" PRId64 "; %" PRId64
		    " are left, the last %" PRId64 " were cut off", head_events, head_id,
		    res->checked, head_events - res->checked);
	} else if (res->checked != head_events || last_id != head_id ||
	    strcmp(last, head_hash) != 0) {
		res->bad_id = last_id;
		snprintf(res->reason, sizeof(res->reason), "the chain ends at event %"
		    PRId64 " (%" PRId64 " events); its head records event %" PRId64
		    " (%" PRId64 " events) with another hash", last_id, res->checked,
		    head_id, head_events);
	} else
		rc = 0;
done:
	if (own)
		sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
	if (rc >= 0)		/* verify_chain's 1: it does not verify */
		res->verified = rc == 0;
	return rc < 0 ? -1 : 0;
}

int
store_event_hash(const char *prev_hash, int64_t id, int64_t plan_id, int64_t ts_ms,
    const char *actor, size_t actor_len, const char *kind, size_t kind_len,
    const char *details, size_t details_len, char out[STORE_HASH_HEX])
{
	return event_hash(prev_hash, id, plan_id, ts_ms, actor, actor_len, kind,
	    kind_len, details, details_len, out);
}

int
store_chain_head(struct store *s, int64_t *events, int64_t *last_id,
    char last[STORE_HASH_HEX], char *err, size_t errlen)
{
	int r = read_head(s, events, last_id, last, err, errlen);

	return r == 1 ? STORE_NOT_FOUND : r;	/* read_head's 1: the row is gone */
}

int
store_count_events(struct store *s, int64_t plan_id, const char *kind_prefix,
    int64_t *n, char *err, size_t errlen)
{
	*n = 0;
	return store__read_one(s, "counting events", store__row_int64, n, err, errlen,
	    "SELECT count(*) FROM events WHERE plan_id = ?1"
	    " AND substr(kind, 1, length(?2)) = ?2", "It", plan_id, kind_prefix) == 0 ?
	    0 : -1;
}

int
store_last_event_ms(struct store *s, int64_t plan_id, const char *kind,
    int64_t *ts_ms, char *err, size_t errlen)
{
	*ts_ms = 0;
	return store__read_one(s, "reading the last event of a kind", store__row_int64,
	    ts_ms, err, errlen, "SELECT coalesce(max(ts_ms), 0) FROM events"
	    " WHERE plan_id = ?1 AND kind = ?2", "It", plan_id, kind) == 0 ? 0 : -1;
}
