/* test_store_events: the hash-chained event history — appends read back
 * with the hashes an independent computation expects, refused appends and
 * edits that leave the chain whole, and every kind of tampering the
 * verification must detect. */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "cm.h"
#include "fx.h"
#include "hex.h"
#include "store.h"

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"
/* The error buffer of a fixture, as the store's last two arguments. */
#define FX_ERR(fx) (fx)->err, sizeof((fx)->err)

/* The canonical serialization, restated here so that a change to it (which
 * would orphan every recorded history) fails a test. */
static void
netstring(EVP_MD_CTX *ctx, const char *p)
{
	char len[32];

	snprintf(len, sizeof(len), "%zu:", strlen(p));
	EVP_DigestUpdate(ctx, len, strlen(len));
	EVP_DigestUpdate(ctx, p, strlen(p));
	EVP_DigestUpdate(ctx, ",", 1);
}

static void
expected_hash(const char *prev, int64_t id, int64_t plan, int64_t ts,
    const char *actor, const char *kind, const char *details, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n;
	char num[32];
	EVP_MD_CTX *ctx;

	assert_non_null(ctx = EVP_MD_CTX_new());
	assert_int_equal(EVP_DigestInit_ex(ctx, EVP_sha256(), NULL), 1);
	netstring(ctx, prev);
	snprintf(num, sizeof(num), "%" PRId64, id);
	netstring(ctx, num);
	snprintf(num, sizeof(num), "%" PRId64, plan);
	netstring(ctx, num);
	snprintf(num, sizeof(num), "%" PRId64, ts);
	netstring(ctx, num);
	netstring(ctx, actor);
	netstring(ctx, kind);
	netstring(ctx, details);
	assert_int_equal(EVP_DigestFinal_ex(ctx, md, &n), 1);
	EVP_MD_CTX_free(ctx);
	assert_int_equal(n, 32);
	hex_encode(md, n, out);
}

/* Events collected by store_each_event. */
struct evlist {
	struct store_event v[64];
	size_t n;
	size_t stop_after;             /* 0: never stop */
};

static int
collect(const struct store_event *ev, void *arg)
{
	struct evlist *l = arg;

	assert_true(l->n < 64);
	l->v[l->n] = *ev;
	assert_non_null(l->v[l->n].details_json = strdup(ev->details_json));
	l->n++;
	return l->stop_after != 0 && l->n >= l->stop_after;
}

static void
evlist_free(struct evlist *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i].details_json);
	l->n = 0;
}

/* Two plans, five events, interleaved. Returns the plan ids. */
static void
five_events(struct fx *fx, int64_t *p1, int64_t *p2)
{
	*p1 = fx_plan(fx, "one", "abc", 1);
	*p2 = fx_plan(fx, "two", "abd", 2);
	assert_int_equal(fx_append(fx, *p1, 100, "engine", "plan.submitted",
	    "{\"sha256\":\"" FX_SHA256_ABC "\"}"), 1);
	assert_int_equal(fx_append(fx, *p2, 110, "engine", "plan.submitted",
	    NULL), 2);
	assert_int_equal(fx_append(fx, *p1, 120, "operator:alice", "step.approved",
	    "{\"step\":4,\"note\":\"ok \\u00e9\"}"), 3);
	assert_int_equal(fx_append(fx, *p1, 130, "engine", "step.succeeded",
	    "{\"step\":4}"), 4);
	assert_int_equal(fx_append(fx, *p2, 140, "engine", "plan.aborted",
	    "[1,2,3]"), 5);
}

static void
test_events_append_and_read(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	struct evlist l = { .n = 0 };
	char h[65];
	int64_t p1, p2;
	size_t i;

	fx_open(fx);
	five_events(fx, &p1, &p2);

	assert_int_equal(store_each_event(fx->s, 0, collect, &l, FX_ERR(fx)), 0);
	assert_int_equal(l.n, 5);
	for (i = 0; i < l.n; i++) {
		assert_int_equal(l.v[i].id, (int64_t)i + 1);
		assert_string_equal(l.v[i].prev_hash, i == 0 ? ZEROS :
		    l.v[i - 1].hash);
		expected_hash(l.v[i].prev_hash, l.v[i].id, l.v[i].plan_id,
		    l.v[i].ts_ms, l.v[i].actor, l.v[i].kind,
		    l.v[i].details_json, h);
		assert_string_equal(l.v[i].hash, h);
	}
	assert_int_equal(l.v[0].plan_id, p1);
	assert_int_equal(l.v[0].ts_ms, 100);
	assert_string_equal(l.v[0].actor, "engine");
	assert_string_equal(l.v[0].kind, "plan.submitted");
	assert_string_equal(l.v[0].details_json,
	    "{\"sha256\":\"" FX_SHA256_ABC "\"}");
	assert_string_equal(l.v[1].details_json, "{}");
	assert_int_equal(l.v[2].plan_id, p1);
	assert_string_equal(l.v[2].actor, "operator:alice");
	assert_string_equal(l.v[2].details_json,
	    "{\"step\":4,\"note\":\"ok \\u00e9\"}");
	assert_int_equal(l.v[4].plan_id, p2);
	assert_string_equal(l.v[4].kind, "plan.aborted");
	assert_string_equal(l.v[4].details_json, "[1,2,3]");
	evlist_free(&l);

	/* One plan's events, in order; and stopping early. */
	assert_int_equal(store_each_event(fx->s, p1, collect, &l, FX_ERR(fx)), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.v[0].id, 1);
	assert_int_equal(l.v[1].id, 3);
	assert_int_equal(l.v[2].id, 4);
	evlist_free(&l);
	l.stop_after = 2;
	assert_int_equal(store_each_event(fx->s, 0, collect, &l, FX_ERR(fx)), 0);
	assert_int_equal(l.n, 2);
	evlist_free(&l);

	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 5);
	assert_int_equal(v.bad_id, 0);
}

static void
test_events_refused_appends_leave_chain_intact(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	struct evlist l = { .n = 0 };
	int64_t p1, p2, id = -1;
	char actor[67];
	int i;

	fx_open(fx);
	/* An empty history verifies. */
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 0);

	five_events(fx, &p1, &p2);
	assert_int_equal(store_append_event(fx->s, p1, 1, "engine", "x",
	    "{not json", &id, FX_ERR(fx)), -1);
	fx_assert_prefix(fx->err, "appending event: CHECK constraint failed");
	assert_int_equal(id, -1);
	assert_int_equal(store_append_event(fx->s, p1, 1, "", "x", NULL, &id,
	    FX_ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, 999, 1, "engine", "x", NULL,
	    &id, FX_ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, p1, 1, NULL, "x", NULL, &id,
	    FX_ERR(fx)), -1);
	assert_string_equal(fx->err, "appending event: no actor");

	/* Actor and kind are bounded in bytes (struct store_event holds them):
	 * 33 two-byte characters are 66 bytes. */
	for (i = 0; i < 33; i++)
		memcpy(actor + 2 * i, "\u00e9", 2);
	actor[66] = '\0';
	assert_int_equal(store_append_event(fx->s, p1, 1, actor, "x", NULL, &id,
	    FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	actor[64] = '\0';
	assert_int_equal(store_append_event(fx->s, p1, 1, actor, "x", NULL, &id,
	    FX_ERR(fx)), 0);
	assert_int_equal(id, 6);
	assert_int_equal(store_each_event(fx->s, p1, collect, &l, FX_ERR(fx)), 0);
	assert_string_equal(l.v[l.n - 1].actor, actor);
	evlist_free(&l);

	/* No id was used up, nothing half-written, no transaction left open. */
	assert_int_equal(fx_append(fx, p2, 200, "engine", "after", NULL), 7);
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 7);
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	assert_int_equal(store_rollback(fx->s), 0);
}

/* Opens the store, writes five_events, and returns a second connection
 * to the file, as a tamperer would have (the caller closes it); fails the
 * test when any of it fails. */
static sqlite3 *
five_events_raw(struct fx *fx)
{
	int64_t p1, p2;

	fx_open(fx);
	five_events(fx, &p1, &p2);
	return fx_raw_open(fx->path);
}

static void
test_events_triggers_refuse_update_and_delete(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	sqlite3 *db;

	db = five_events_raw(fx);
	assert_int_equal(fx_raw_exec(db,
	    "UPDATE events SET details_json = '{\"forged\":1}' WHERE id = 3")
	    & 0xff, SQLITE_CONSTRAINT);
	assert_string_equal(sqlite3_errmsg(db), "events are append-only");
	assert_int_equal(fx_raw_exec(db, "DELETE FROM events WHERE id = 3") & 0xff,
	    SQLITE_CONSTRAINT);
	assert_string_equal(sqlite3_errmsg(db), "events are append-only");
	assert_int_equal(fx_raw_exec(db, "DELETE FROM events") & 0xff,
	    SQLITE_CONSTRAINT);
	assert_int_equal(fx_raw_int(db, "SELECT count(*) FROM events"), 5);
	sqlite3_close(db);
	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_true(v.verified);
}

/* Five events, then SQL on a second connection with the triggers dropped;
 * verify must name BAD_ID with a reason containing WHY. */
static void
tamper(struct fx *fx, const char *sql, int64_t bad_id, const char *why)
{
	struct store_verify v;
	sqlite3 *db;

	db = five_events_raw(fx);
	assert_int_equal(fx_raw_exec(db, "DROP TRIGGER events_no_update;"
	    "DROP TRIGGER events_no_delete"), SQLITE_OK);
	if (fx_raw_exec(db, sql) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);

	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_false(v.verified);
	assert_int_equal(v.bad_id, bad_id);
	if (strstr(v.reason, why) == NULL)
		fail_msg("reason \"%s\" does not say \"%s\"", v.reason, why);
}

static void
test_verify_detects_edited_details(void **state)
{
	tamper(*state, "UPDATE events SET details_json = '{\"step\":5}'"
	    " WHERE id = 3", 3, "content");
}

static void
test_verify_detects_edited_actor(void **state)
{
	tamper(*state, "UPDATE events SET actor = 'operator:mallory'"
	    " WHERE id = 3", 3, "content");
}

static void
test_verify_detects_edited_time(void **state)
{
	tamper(*state, "UPDATE events SET ts_ms = ts_ms + 1 WHERE id = 4", 4,
	    "content");
}

static void
test_verify_detects_changed_hash(void **state)
{
	tamper(*state, "UPDATE events SET hash = '" FX_SHA256_ABC "' WHERE id = 3",
	    3, "content");
}

static void
test_verify_detects_changed_prev_hash(void **state)
{
	tamper(*state, "UPDATE events SET prev_hash = '" FX_SHA256_ABC "'"
	    " WHERE id = 2", 2, "prev_hash does not match the hash of event 1");
}

static void
test_verify_detects_deleted_middle_row(void **state)
{
	tamper(*state, "DELETE FROM events WHERE id = 3", 4,
	    "event 4 follows event 2");
}

static void
test_verify_detects_deleted_first_row(void **state)
{
	tamper(*state, "DELETE FROM events WHERE id = 1", 2,
	    "the first event has id 2");
}

static void
test_verify_detects_reordered_rows(void **state)
{
	/* Rows 2 and 3 trade places, hashes and all. */
	tamper(*state, "UPDATE events SET id = 100 WHERE id = 2;"
	    "UPDATE events SET id = 2 WHERE id = 3;"
	    "UPDATE events SET id = 3 WHERE id = 100", 2, "prev_hash");
}

/* An edit whose author also recomputed the edited row's hash is caught at
 * the next row, whose prev_hash no longer matches. */
static void
test_verify_detects_rehashed_edit(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	struct evlist l = { .n = 0 };
	char h[65], sql[512];
	int64_t p1, p2;
	sqlite3 *db;

	fx_open(fx);
	five_events(fx, &p1, &p2);
	assert_int_equal(store_each_event(fx->s, 0, collect, &l, FX_ERR(fx)), 0);
	expected_hash(l.v[2].prev_hash, 3, p1, 120, "operator:alice",
	    "step.approved", "{\"step\":5}", h);
	evlist_free(&l);

	db = fx_raw_open(fx->path);
	assert_int_equal(fx_raw_exec(db, "DROP TRIGGER events_no_update"),
	    SQLITE_OK);
	snprintf(sql, sizeof(sql), "UPDATE events"
	    " SET details_json = '{\"step\":5}', hash = '%s' WHERE id = 3", h);
	assert_int_equal(fx_raw_exec(db, sql), SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_verify_events(fx->s, &v, FX_ERR(fx)), 0);
	assert_false(v.verified);
	assert_int_equal(v.bad_id, 4);
	assert_non_null(strstr(v.reason,
	    "prev_hash does not match the hash of event 3"));
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_events_append_and_read),
	T(test_events_refused_appends_leave_chain_intact),
	T(test_events_triggers_refuse_update_and_delete),
	T(test_verify_detects_edited_details),
	T(test_verify_detects_edited_actor),
	T(test_verify_detects_edited_time),
	T(test_verify_detects_changed_hash),
	T(test_verify_detects_changed_prev_hash),
	T(test_verify_detects_deleted_middle_row),
	T(test_verify_detects_deleted_first_row),
	T(test_verify_detects_reordered_rows),
	T(test_verify_detects_rehashed_edit))
