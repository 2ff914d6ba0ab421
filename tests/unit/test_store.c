/* test_store: the SQLite store on a real database file in a fresh temporary
 * directory — schema and versions, plans, steps, the hash-chained event
 * history and its tamper detection, transactions, samples, and two
 * connections (threads) on one file. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "hex.h"
#include "store.h"

#define ZEROS "0000000000000000000000000000000000000000000000000000000000000000"
/* The error buffer of a fixture, as the store's last two arguments. */
#define ERR(fx) (fx)->err, sizeof((fx)->err)

#define SHA256_ABC \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

struct fx {
	char dir[PATH_MAX];
	char path[PATH_MAX + 32];
	struct store *s;
	char err[512];
};

static int
setup(void **state)
{
	struct fx *fx;
	const char *tmp;

	if ((fx = calloc(1, sizeof(*fx))) == NULL)
		return -1;
	if ((tmp = getenv("TMPDIR")) == NULL || *tmp == '\0')
		tmp = "/tmp";
	snprintf(fx->dir, sizeof(fx->dir), "%s/test_store.XXXXXX", tmp);
	if (mkdtemp(fx->dir) == NULL) {
		free(fx);
		return -1;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/cutover.db", fx->dir);
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;
	struct dirent *de;
	char p[PATH_MAX * 2];
	DIR *d;

	store_close(fx->s);
	if ((d = opendir(fx->dir)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			snprintf(p, sizeof(p), "%s/%s", fx->dir, de->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(fx->dir);
	free(fx);
	return 0;
}

/* Opens the store at fx->path into fx->s, failing the test on error. */
static void
open_store(struct fx *fx)
{
	int rc;

	rc = store_open(fx->path, &fx->s, ERR(fx));
	if (rc != 0)
		fail_msg("store_open: %s", fx->err);
	assert_non_null(fx->s);
}

static int64_t
new_plan(struct fx *fx, const char *name, const char *yaml, int64_t now)
{
	int64_t id = 0;

	if (store_plan_insert(fx->s, name, yaml, strlen(yaml), now, &id,
	    ERR(fx)) != 0)
		fail_msg("store_plan_insert: %s", fx->err);
	assert_true(id > 0);
	return id;
}

static int64_t
append(struct fx *fx, int64_t plan, int64_t ts, const char *actor,
    const char *kind, const char *details)
{
	int64_t id = 0;

	if (store_append_event(fx->s, plan, ts, actor, kind, details, &id,
	    ERR(fx)) != 0)
		fail_msg("store_append_event: %s", fx->err);
	return id;
}

/* A plain second connection, as another process or a tamperer has. */
static sqlite3 *
raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	    NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

static int
raw_exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static int64_t
raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static void
raw_text(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

/* Fails unless S starts with PREFIX. */
static void
assert_prefix(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)) != 0)
		fail_msg("\"%s\" does not start with \"%s\"", s, prefix);
}

static void
write_file(const char *path, const char *content, size_t n)
{
	FILE *f;

	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(content, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

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

static int
count_event(const struct store_event *ev, void *arg)
{
	(void)ev;
	(*(int64_t *)arg)++;
	return 0;
}

static int64_t
nevents(struct store *s, int64_t plan)
{
	char err[256];
	int64_t n = 0;

	assert_int_equal(store_each_event(s, plan, count_event, &n, err,
	    sizeof(err)), 0);
	return n;
}

/* ---- open, schema, versions ------------------------------------------ */

static void
test_open_creates_schema(void **state)
{
	struct fx *fx = *state;
	char mode[16];
	sqlite3 *db;

	open_store(fx);
	db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(db, "PRAGMA user_version"),
	    STORE_SCHEMA_VERSION);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "wal");
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'table' AND name IN"
	    " ('plans', 'steps', 'events', 'samples')"), 4);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'trigger' AND tbl_name = 'events'"), 3);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'trigger' AND tbl_name = 'chain_head'"), 3);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'index' AND name = 'samples_plan_ts'"), 1);
	sqlite3_close(db);

	/* Reopening an up-to-date database changes nothing and works. */
	store_close(fx->s);
	fx->s = NULL;
	open_store(fx);
	new_plan(fx, "p", "abc", 1);
	store_close(fx->s);
	fx->s = NULL;
	open_store(fx);
	db = raw_open(fx->path);
	assert_int_equal(raw_int(db, "PRAGMA user_version"), STORE_SCHEMA_VERSION);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM plans"), 1);
	sqlite3_close(db);
}

static void
test_open_enforces_foreign_keys(void **state)
{
	struct fx *fx = *state;

	open_store(fx);
	assert_int_equal(store_step_insert(fx->s, 42, 0, "canary", 0, ERR(fx)),
	    -1);
	assert_string_equal(fx->err,
	    "inserting step 0 of plan 42: FOREIGN KEY constraint failed");
	assert_int_equal(store_sample_insert(fx->s, 42, 1, "old.depth", "", 1,
	    ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, 42, 1, "engine", "x", NULL,
	    NULL, ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "FOREIGN KEY constraint failed"));
}

static void
test_open_refuses_newer_schema(void **state)
{
	struct fx *fx = *state;
	char want[PATH_MAX + 256], mode[16];
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(fx->path, &db), SQLITE_OK);
	assert_int_equal(raw_exec(db,
	    "CREATE TABLE t (x); PRAGMA user_version = 99"), SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_open(fx->path, &fx->s, ERR(fx)),
	    -1);
	assert_null(fx->s);
	snprintf(want, sizeof(want), "database %s has schema version 99; "
	    "this cutover knows up to %d: upgrade cutover", fx->path, STORE_SCHEMA_VERSION);
	assert_string_equal(fx->err, want);

	/* Refused before anything was written: not even the journal mode. */
	db = raw_open(fx->path);
	raw_text(db, "PRAGMA journal_mode", mode, sizeof(mode));
	assert_string_equal(mode, "delete");
	assert_int_equal(raw_int(db, "PRAGMA user_version"), 99);
	sqlite3_close(db);
}

static void
test_open_refuses_non_database(void **state)
{
	struct fx *fx = *state;
	char big[8192], want[PATH_MAX + 256];
	size_t i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = "name: orders-delays\n"[i % 20];
	write_file(fx->path, big, sizeof(big));
	assert_int_equal(store_open(fx->path, &fx->s, ERR(fx)),
	    -1);
	assert_null(fx->s);
	snprintf(want, sizeof(want), "database %s: not a SQLite database",
	    fx->path);
	assert_prefix(fx->err, want);

	/* A short file too. */
	write_file(fx->path, "hello\n", 6);
	assert_int_equal(store_open(fx->path, &fx->s, ERR(fx)),
	    -1);
	assert_prefix(fx->err, want);
}

static void
test_open_refuses_unopenable_path(void **state)
{
	struct fx *fx = *state;
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/missing/dir/cutover.db", fx->dir);
	assert_int_equal(store_open(p, &fx->s, ERR(fx)), -1);
	assert_null(fx->s);
	assert_non_null(strstr(fx->err, "opening database"));
	assert_non_null(strstr(fx->err, p));
}

/* ---- plans ------------------------------------------------------------ */

static void
test_plan_roundtrip(void **state)
{
	struct fx *fx = *state;
	static const char yaml[] =
	    "name: orders-delays\n"
	    "# ünïcode comment, tabs\tand \"quotes\"\n"
	    "steps: [measure_horizon]\n";
	struct store_plan p;
	int64_t a, b, c;
	char *y;
	size_t n;

	open_store(fx);
	a = new_plan(fx, "abc-plan", "abc", 1000);
	assert_int_equal(store_plan_get(fx->s, a, &p, ERR(fx)), 0);
	assert_int_equal(p.id, a);
	assert_string_equal(p.name, "abc-plan");
	assert_string_equal(p.sha256, SHA256_ABC);
	assert_string_equal(p.status, "running");
	assert_int_equal(p.created_ms, 1000);

	assert_int_equal(store_plan_yaml(fx->s, a, &y, &n, ERR(fx)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(y, "abc");
	free(y);

	/* Same name twice: find returns the newest. */
	b = new_plan(fx, "orders-delays", yaml, 2000);
	c = new_plan(fx, "orders-delays", yaml, 2000);
	assert_true(c > b);
	assert_int_equal(store_plan_find(fx->s, "orders-delays", &p, ERR(fx)),
	    0);
	assert_int_equal(p.id, c);
	assert_int_equal(store_plan_yaml(fx->s, c, &y, &n, ERR(fx)), 0);
	assert_int_equal(n, strlen(yaml));
	assert_memory_equal(y, yaml, n);
	assert_int_equal(y[n], '\0');
	free(y);

	/* Only the first YAML_LEN bytes are the plan. */
	assert_int_equal(store_plan_insert(fx->s, "abc.v2_x", "abcdef", 3, 3000,
	    &a, ERR(fx)), 0);
	assert_int_equal(store_plan_get(fx->s, a, &p, ERR(fx)), 0);
	assert_string_equal(p.sha256, SHA256_ABC);
	assert_string_equal(p.name, "abc.v2_x");

	/* Absent. */
	assert_int_equal(store_plan_get(fx->s, 999, &p, ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_plan_find(fx->s, "nope", &p, ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_plan_yaml(fx->s, 999, &y, &n, ERR(fx)),
	    STORE_NOT_FOUND);
	assert_null(y);
}

static void
test_plan_status_and_constraints(void **state)
{
	struct fx *fx = *state;
	struct store_plan p;
	int64_t id, other;

	open_store(fx);
	id = new_plan(fx, "p1", "abc", 1);
	assert_int_equal(store_plan_set_status(fx->s, id, "succeeded", ERR(fx)),
	    0);
	assert_int_equal(store_plan_get(fx->s, id, &p, ERR(fx)), 0);
	assert_string_equal(p.status, "succeeded");

	assert_int_equal(store_plan_set_status(fx->s, id, "bogus", ERR(fx)),
	    -1);
	assert_prefix(fx->err,
	    "setting status of plan 1: CHECK constraint failed");
	assert_int_equal(store_plan_get(fx->s, id, &p, ERR(fx)), 0);
	assert_string_equal(p.status, "succeeded");

	assert_int_equal(store_plan_set_status(fx->s, 77, "failed", ERR(fx)),
	    -1);
	assert_string_equal(fx->err, "setting status of plan 77: no such plan");

	/* Names are the plan format's: [a-z0-9._-]{1,64}. */
	assert_int_equal(store_plan_insert(fx->s, "Bad Name", "abc", 3, 1,
	    &other, ERR(fx)), -1);
	assert_prefix(fx->err, "inserting plan: CHECK constraint failed");
	assert_int_equal(store_plan_insert(fx->s, "", "abc", 3, 1, &other,
	    ERR(fx)), -1);
	assert_int_equal(store_plan_insert(fx->s,
	    "a234567890123456789012345678901234567890123456789012345678901234",
	    "abc", 3, 1, &other, ERR(fx)), 0);
	assert_int_equal(store_plan_insert(fx->s,
	    "a2345678901234567890123456789012345678901234567890123456789012345",
	    "abc", 3, 1, &other, ERR(fx)), -1);
}

/* ---- steps ------------------------------------------------------------ */

static void
test_steps(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	open_store(fx);
	plan = new_plan(fx, "p", "abc", 1);
	assert_int_equal(store_step_insert(fx->s, plan, 0, "measure_horizon", 0,
	    ERR(fx)), 0);
	assert_int_equal(store_step_insert(fx->s, plan, 1, "flip", 1,
	    ERR(fx)), 0);

	assert_int_equal(store_step_get(fx->s, plan, 1, &st, ERR(fx)), 0);
	assert_int_equal(st.plan_id, plan);
	assert_int_equal(st.idx, 1);
	assert_string_equal(st.kind, "flip");
	assert_int_equal(st.gate, 1);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	assert_int_equal(st.ended_ms, 0);
	assert_null(st.result_json);
	assert_null(st.error);
	store_step_clear(&st);

	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 5000, 0,
	    NULL, NULL, ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "succeeded", 0, 9000,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}", NULL,
	    ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, ERR(fx)), 0);
	assert_string_equal(st.kind, "measure_horizon");
	assert_int_equal(st.gate, 0);
	assert_string_equal(st.status, "succeeded");
	assert_int_equal(st.started_ms, 5000);
	assert_int_equal(st.ended_ms, 9000);
	assert_string_equal(st.result_json,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}");
	assert_null(st.error);
	store_step_clear(&st);
	assert_null(st.result_json);

	/* An error, and a NULL status that leaves the status alone. */
	assert_int_equal(store_step_update(fx->s, plan, 1, "failed", 10000,
	    11000, NULL, "flag read back off after on", ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 1, NULL, 0, 0,
	    "{}", NULL, ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 1, &st, ERR(fx)), 0);
	assert_string_equal(st.status, "failed");
	assert_string_equal(st.error, "flag read back off after on");
	assert_string_equal(st.result_json, "{}");
	assert_int_equal(st.started_ms, 10000);
	assert_int_equal(st.ended_ms, 11000);
	store_step_clear(&st);

	/* Refusals. */
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0,
	    ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "inserting step 0 of plan 1: "
	    "UNIQUE constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, NULL, 0, 0,
	    "{not json", NULL, ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, "done", 0, 0,
	    NULL, NULL, ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 7, "running", 1, 0,
	    NULL, NULL, ERR(fx)), -1);
	assert_string_equal(fx->err, "updating step 7 of plan 1: no such step");
	assert_int_equal(store_step_get(fx->s, plan, 7, &st, ERR(fx)),
	    STORE_NOT_FOUND);
	assert_null(st.result_json);
	assert_null(st.error);
}

/* ---- events ----------------------------------------------------------- */

/* Two plans, five events, interleaved. Returns the plan ids. */
static void
five_events(struct fx *fx, int64_t *p1, int64_t *p2)
{
	*p1 = new_plan(fx, "one", "abc", 1);
	*p2 = new_plan(fx, "two", "abd", 2);
	assert_int_equal(append(fx, *p1, 100, "engine", "plan.submitted",
	    "{\"sha256\":\"" SHA256_ABC "\"}"), 1);
	assert_int_equal(append(fx, *p2, 110, "engine", "plan.submitted",
	    NULL), 2);
	assert_int_equal(append(fx, *p1, 120, "operator:alice", "step.approved",
	    "{\"step\":4,\"note\":\"ok \\u00e9\"}"), 3);
	assert_int_equal(append(fx, *p1, 130, "engine", "step.succeeded",
	    "{\"step\":4}"), 4);
	assert_int_equal(append(fx, *p2, 140, "engine", "plan.aborted",
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

	open_store(fx);
	five_events(fx, &p1, &p2);

	assert_int_equal(store_each_event(fx->s, 0, collect, &l, ERR(fx)), 0);
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
	    "{\"sha256\":\"" SHA256_ABC "\"}");
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
	assert_int_equal(store_each_event(fx->s, p1, collect, &l, ERR(fx)), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.v[0].id, 1);
	assert_int_equal(l.v[1].id, 3);
	assert_int_equal(l.v[2].id, 4);
	evlist_free(&l);
	l.stop_after = 2;
	assert_int_equal(store_each_event(fx->s, 0, collect, &l, ERR(fx)), 0);
	assert_int_equal(l.n, 2);
	evlist_free(&l);

	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
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

	open_store(fx);
	/* An empty history verifies. */
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 0);

	five_events(fx, &p1, &p2);
	assert_int_equal(store_append_event(fx->s, p1, 1, "engine", "x",
	    "{not json", &id, ERR(fx)), -1);
	assert_prefix(fx->err, "appending event: CHECK constraint failed");
	assert_int_equal(id, -1);
	assert_int_equal(store_append_event(fx->s, p1, 1, "", "x", NULL, &id,
	    ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, 999, 1, "engine", "x", NULL,
	    &id, ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, p1, 1, NULL, "x", NULL, &id,
	    ERR(fx)), -1);
	assert_string_equal(fx->err, "appending event: no actor");

	/* Actor and kind are bounded in bytes (struct store_event holds them):
	 * 33 two-byte characters are 66 bytes. */
	for (i = 0; i < 33; i++)
		memcpy(actor + 2 * i, "\u00e9", 2);
	actor[66] = '\0';
	assert_int_equal(store_append_event(fx->s, p1, 1, actor, "x", NULL, &id,
	    ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	actor[64] = '\0';
	assert_int_equal(store_append_event(fx->s, p1, 1, actor, "x", NULL, &id,
	    ERR(fx)), 0);
	assert_int_equal(id, 6);
	assert_int_equal(store_each_event(fx->s, p1, collect, &l, ERR(fx)), 0);
	assert_string_equal(l.v[l.n - 1].actor, actor);
	evlist_free(&l);

	/* No id was used up, nothing half-written, no transaction left open. */
	assert_int_equal(append(fx, p2, 200, "engine", "after", NULL), 7);
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 7);
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	assert_int_equal(store_rollback(fx->s), 0);
}

static void
test_events_triggers_refuse_update_and_delete(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	int64_t p1, p2;
	sqlite3 *db;

	open_store(fx);
	five_events(fx, &p1, &p2);
	db = raw_open(fx->path);
	assert_int_equal(raw_exec(db,
	    "UPDATE events SET details_json = '{\"forged\":1}' WHERE id = 3")
	    & 0xff, SQLITE_CONSTRAINT);
	assert_string_equal(sqlite3_errmsg(db), "events are append-only");
	assert_int_equal(raw_exec(db, "DELETE FROM events WHERE id = 3") & 0xff,
	    SQLITE_CONSTRAINT);
	assert_string_equal(sqlite3_errmsg(db), "events are append-only");
	assert_int_equal(raw_exec(db, "DELETE FROM events") & 0xff,
	    SQLITE_CONSTRAINT);
	assert_int_equal(raw_int(db, "SELECT count(*) FROM events"), 5);
	sqlite3_close(db);
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);
}

/* Five events, then SQL on a second connection with the triggers dropped;
 * verify must name BAD_ID with a reason containing WHY. */
static void
tamper(struct fx *fx, const char *sql, int64_t bad_id, const char *why)
{
	struct store_verify v;
	int64_t p1, p2;
	sqlite3 *db;

	open_store(fx);
	five_events(fx, &p1, &p2);
	db = raw_open(fx->path);
	assert_int_equal(raw_exec(db, "DROP TRIGGER events_no_update;"
	    "DROP TRIGGER events_no_delete"), SQLITE_OK);
	if (raw_exec(db, sql) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);

	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
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
	tamper(*state, "UPDATE events SET hash = '" SHA256_ABC "' WHERE id = 3",
	    3, "content");
}

static void
test_verify_detects_changed_prev_hash(void **state)
{
	tamper(*state, "UPDATE events SET prev_hash = '" SHA256_ABC "'"
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

	open_store(fx);
	five_events(fx, &p1, &p2);
	assert_int_equal(store_each_event(fx->s, 0, collect, &l, ERR(fx)), 0);
	expected_hash(l.v[2].prev_hash, 3, p1, 120, "operator:alice",
	    "step.approved", "{\"step\":5}", h);
	evlist_free(&l);

	db = raw_open(fx->path);
	assert_int_equal(raw_exec(db, "DROP TRIGGER events_no_update"),
	    SQLITE_OK);
	snprintf(sql, sizeof(sql), "UPDATE events"
	    " SET details_json = '{\"step\":5}', hash = '%s' WHERE id = 3", h);
	assert_int_equal(raw_exec(db, sql), SQLITE_OK);
	sqlite3_close(db);

	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_false(v.verified);
	assert_int_equal(v.bad_id, 4);
	assert_non_null(strstr(v.reason,
	    "prev_hash does not match the hash of event 3"));
}

/* ---- transactions ----------------------------------------------------- */

static void
test_transactions(void **state)
{
	struct fx *fx = *state;
	struct store_verify v;
	struct store_step st;
	int64_t plan, id = 0;

	open_store(fx);
	plan = new_plan(fx, "p", "abc", 1);
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0,
	    ERR(fx)), 0);

	/* Rolled back: neither the step change nor its event. */
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 100, 0,
	    NULL, NULL, ERR(fx)), 0);
	assert_int_equal(append(fx, plan, 100, "engine", "step.started",
	    "{\"step\":0}"), 1);
	assert_int_equal(store_rollback(fx->s), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, ERR(fx)), 0);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	store_step_clear(&st);
	assert_int_equal(nevents(fx->s, 0), 0);

	/* Committed: both. A refused event inside the transaction is undone
	 * by itself and leaves the rest of the transaction alone. */
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	assert_int_equal(store_begin(fx->s, ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "beginning transaction: "));
	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 200, 0,
	    NULL, NULL, ERR(fx)), 0);
	assert_int_equal(store_append_event(fx->s, plan, 200, "engine", "bad",
	    "{", NULL, ERR(fx)), -1);
	assert_int_equal(store_append_event(fx->s, plan, 200, "engine",
	    "step.started", "{\"step\":0}", &id, ERR(fx)), 0);
	assert_int_equal(id, 1);
	assert_int_equal(append(fx, plan, 201, "engine", "step.note", NULL), 2);
	assert_int_equal(store_commit(fx->s, ERR(fx)), 0);

	assert_int_equal(store_step_get(fx->s, plan, 0, &st, ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_int_equal(st.started_ms, 200);
	store_step_clear(&st);
	assert_int_equal(nevents(fx->s, plan), 2);
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);

	/* Commit with nothing open fails with a message; rollback is a
	 * no-op. */
	assert_int_equal(store_commit(fx->s, ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "committing transaction: "));
	assert_int_equal(store_rollback(fx->s), 0);
}

/* ---- samples ---------------------------------------------------------- */

struct samples {
	int64_t ts[16];
	char metric[16][32];
	char label[16][16];
	double value[16];
	size_t n;
};

static int
collect_sample(int64_t ts, const char *metric, const char *label, double value,
    void *arg)
{
	struct samples *s = arg;

	assert_true(s->n < 16);
	s->ts[s->n] = ts;
	snprintf(s->metric[s->n], sizeof(s->metric[0]), "%s", metric);
	snprintf(s->label[s->n], sizeof(s->label[0]), "%s", label);
	s->value[s->n] = value;
	s->n++;
	return 0;
}

static void
test_samples(void **state)
{
	struct fx *fx = *state;
	struct samples got = { .n = 0 };
	int64_t p1, p2;

	open_store(fx);
	p1 = new_plan(fx, "one", "abc", 1);
	p2 = new_plan(fx, "two", "abc", 1);
#define SAMPLE(p, ts, m, l, v) assert_int_equal(store_sample_insert(fx->s, \
	(p), (ts), (m), (l), (v), ERR(fx)), 0)
	SAMPLE(p1, 3000, "ladder.depth", "3", 12);
	SAMPLE(p1, 1000, "old.depth", "", 500);
	SAMPLE(p1, 2000, "old.depth", "", 250.5);
	SAMPLE(p2, 2500, "old.depth", "", 7);
	SAMPLE(p1, 2000, "parking.depth", NULL, 0);
	SAMPLE(p1, 4000, "ladder.depth", "0", 1e15);
#undef SAMPLE

	assert_int_equal(store_each_sample(fx->s, p1, 2000, collect_sample,
	    &got, ERR(fx)), 0);
	assert_int_equal(got.n, 4);
	assert_int_equal(got.ts[0], 2000);
	assert_string_equal(got.metric[0], "old.depth");
	assert_string_equal(got.label[0], "");
	assert_true(got.value[0] == 250.5);
	assert_int_equal(got.ts[1], 2000);
	assert_string_equal(got.metric[1], "parking.depth");
	assert_string_equal(got.label[1], "");
	assert_int_equal(got.ts[2], 3000);
	assert_string_equal(got.label[2], "3");
	assert_int_equal(got.ts[3], 4000);
	assert_true(got.value[3] == 1e15);

	got.n = 0;
	assert_int_equal(store_each_sample(fx->s, p1, 0, collect_sample, &got,
	    ERR(fx)), 0);
	assert_int_equal(got.n, 5);
	assert_int_equal(got.ts[0], 1000);
	got.n = 0;
	assert_int_equal(store_each_sample(fx->s, p1, 4001, collect_sample,
	    &got, ERR(fx)), 0);
	assert_int_equal(got.n, 0);

	assert_int_equal(store_sample_insert(fx->s, p1, 1, "", "", 1, ERR(fx)),
	    -1);
	assert_prefix(fx->err, "inserting sample: CHECK constraint failed");
}

/* ---- a damaged file ---------------------------------------------------- */

/* 16 KiB of garbage in the middle of a database that holds a plan, its
 * events and a few thousand samples: the file is refused at open, with
 * SQLite's finding and what to do, and no plan is read from it. */
static void
test_damaged_file_is_refused(void **state)
{
	struct fx *fx = *state;
	unsigned char junk[16384];
	uint32_t x = 2463534242u;	/* xorshift32: the same bytes every run */
	int64_t p;
	long size;
	FILE *fp;

	open_store(fx);
	p = new_plan(fx, "one", "name: one", 1);
	append(fx, p, 2, "engine", "plan.started", NULL);
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	for (int i = 0; i < 4000; i++)
		assert_int_equal(store_sample_insert(fx->s, p, 1000 + i, "old.depth",
		    "", i, ERR(fx)), 0);
	assert_int_equal(store_commit(fx->s, ERR(fx)), 0);
	/* Whole before the damage, by the same check. */
	assert_int_equal(store_integrity(fx->s, fx->path, true, ERR(fx)), 0);
	store_close(fx->s);	/* the last connection: the WAL goes into the file */
	fx->s = NULL;

	for (size_t i = 0; i < sizeof(junk); i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		junk[i] = (unsigned char)x;
	}
	assert_non_null(fp = fopen(fx->path, "r+b"));
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	size = ftell(fp);
	assert_true(size >= 4 * (long)sizeof(junk));
	assert_int_equal(fseek(fp, size / 2, SEEK_SET), 0);
	assert_int_equal(fwrite(junk, 1, sizeof(junk), fp), sizeof(junk));
	assert_int_equal(fclose(fp), 0);

	assert_int_equal(store_open(fx->path, &fx->s, ERR(fx)), -1);
	assert_null(fx->s);
	assert_non_null(strstr(fx->err, "is damaged"));
	assert_non_null(strstr(fx->err, "restore the last good backup"));
}

/* ---- two connections -------------------------------------------------- */

static void
test_two_connections_read_while_write(void **state)
{
	struct fx *fx = *state;
	struct store *web = NULL;
	struct store_plan p;
	struct store_verify v;
	int64_t plan;

	open_store(fx);
	assert_int_equal(store_open(fx->path, &web, ERR(fx)), 0);
	plan = new_plan(fx, "p", "abc", 1);
	append(fx, plan, 1, "engine", "plan.submitted", NULL);

	/* The engine holds a write transaction; the web side still reads,
	 * and sees the last committed state. */
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	assert_int_equal(store_plan_set_status(fx->s, plan, "aborted",
	    ERR(fx)), 0);
	append(fx, plan, 2, "engine", "plan.aborted", NULL);
	assert_int_equal(store_plan_get(web, plan, &p, ERR(fx)), 0);
	assert_string_equal(p.status, "running");
	assert_int_equal(nevents(web, plan), 1);
	assert_int_equal(store_verify_events(web, &v, ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 1);
	assert_int_equal(store_commit(fx->s, ERR(fx)), 0);

	assert_int_equal(store_plan_get(web, plan, &p, ERR(fx)), 0);
	assert_string_equal(p.status, "aborted");
	assert_int_equal(nevents(web, plan), 2);

	/* The web side appends too (operator commands); one chain. */
	assert_int_equal(store_append_event(web, plan, 3, "operator:bob",
	    "plan.retry", NULL, NULL, ERR(fx)), 0);
	assert_int_equal(append(fx, plan, 4, "engine", "plan.resumed", NULL),
	    4);
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, 4);
	store_close(web);
}

#define THREAD_EVENTS 50

struct writer {
	const char *path;
	int64_t plan;
	const char *actor;
	int failed;
	char err[256];
};

/* Each writer pauses 5 ms between rounds, as the engine and the web
 * thread do between real writes: SQLite's busy wait polls, so a writer that
 * re-takes the lock in a tight loop can starve the other past the timeout
 * (it does under valgrind, which runs one thread at a time). */
static void *
writer_main(void *arg)
{
	const struct timespec pause = { 0, 5000000 };
	struct writer *w = arg;
	struct store *s = NULL;
	int i;

	if (store_open(w->path, &s, w->err, sizeof(w->err)) != 0) {
		w->failed = 1;
		return NULL;
	}
	for (i = 0; i < THREAD_EVENTS && !w->failed; i++) {
		if (store_append_event(s, w->plan, i, w->actor, "tick",
		    "{\"i\":1}", NULL, w->err, sizeof(w->err)) != 0 ||
		    store_sample_insert(s, w->plan, i, "old.depth", "", i,
		    w->err, sizeof(w->err)) != 0)
			w->failed = 1;
		/* Every tenth: a step change and its event, together. */
		if (!w->failed && i % 10 == 0 &&
		    (store_begin(s, w->err, sizeof(w->err)) != 0 ||
		    store_step_update(s, w->plan, 0, "running", i + 1, 0, NULL,
		    NULL, w->err, sizeof(w->err)) != 0 ||
		    store_append_event(s, w->plan, i, w->actor, "step.tick",
		    NULL, NULL, w->err, sizeof(w->err)) != 0 ||
		    store_commit(s, w->err, sizeof(w->err)) != 0))
			w->failed = 1;
		nanosleep(&pause, NULL);
	}
	store_close(s);
	return NULL;
}

/* Two writer threads, each with its own connection, append to the one chain
 * while this thread reads and verifies on a third. Nothing fails the test
 * before both threads are joined: they use this frame. */
static void
test_two_connections_concurrent_writers(void **state)
{
	const int64_t total = 2 * (THREAD_EVENTS + THREAD_EVENTS / 10);
	struct fx *fx = *state;
	struct writer w[2];
	struct store_verify v;
	pthread_t t[2];
	int64_t plan[2], n = 0;
	char readerr[1024] = "";
	int i, reads = 0;

	memset(&v, 0, sizeof(v));
	open_store(fx);
	plan[0] = new_plan(fx, "engine-a", "abc", 1);
	plan[1] = new_plan(fx, "engine-b", "abc", 1);
	for (i = 0; i < 2; i++) {
		assert_int_equal(store_step_insert(fx->s, plan[i], 0, "watch",
		    0, ERR(fx)), 0);
		memset(&w[i], 0, sizeof(w[i]));
		w[i].path = fx->path;
		w[i].plan = plan[i];
		w[i].actor = i == 0 ? "engine" : "operator:web";
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, writer_main,
		    &w[i]), 0);
	while (n < total && !w[0].failed && !w[1].failed) {
		if (store_each_event(fx->s, 0, count_event, &n, ERR(fx)) != 0 ||
		    store_verify_events(fx->s, &v, ERR(fx)) != 0 || !v.verified) {
			snprintf(readerr, sizeof(readerr), "%s (event %" PRId64
			    ": %s)", fx->err, v.bad_id, v.reason);
			break;
		}
		if (v.checked < n) {
			snprintf(readerr, sizeof(readerr), "verified %" PRId64
			    " of %" PRId64, v.checked, n);
			break;
		}
		reads++;
		if (n < total)
			n = 0;
	}
	for (i = 0; i < 2; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	if (readerr[0] != '\0')
		fail_msg("reading while writing: %s", readerr);
	for (i = 0; i < 2; i++)
		if (w[i].failed)
			fail_msg("writer %d: %s", i, w[i].err);
	assert_true(reads > 0);
	assert_int_equal(nevents(fx->s, 0), total);
	assert_int_equal(nevents(fx->s, plan[0]), total / 2);
	assert_int_equal(store_verify_events(fx->s, &v, ERR(fx)), 0);
	assert_true(v.verified);
	assert_int_equal(v.checked, total);
}

/* ---- the engine's tables ---- */

static void
test_commands_in_order_and_handled_once(void **state)
{
	struct fx *fx = *state;
	struct store_command c;
	int64_t plan, a, b;

	open_store(fx);
	plan = new_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_command_next(fx->s, plan, &c, ERR(fx)), STORE_NOT_FOUND);
	assert_int_equal(store_command_insert(fx->s, plan, "approve", 4, 0, "alice",
	    "looks good", 10, &a, ERR(fx)), 0);
	assert_int_equal(store_command_insert(fx->s, plan, "abort", -1, 0, "bob", NULL,
	    11, &b, ERR(fx)), 0);
	/* An unknown kind is refused by the schema. */
	assert_int_equal(store_command_insert(fx->s, plan, "explode", -1, 0, "eve", NULL,
	    12, NULL, ERR(fx)), -1);

	assert_int_equal(store_command_next(fx->s, plan, &c, ERR(fx)), 0);
	assert_int_equal(c.id, a);
	assert_string_equal(c.kind, "approve");
	assert_int_equal(c.step_idx, 4);
	assert_string_equal(c.actor, "alice");
	assert_string_equal(c.comment, "looks good");
	assert_int_equal(store_command_done(fx->s, a, 20, "done", ERR(fx)), 0);
	/* Handled twice is refused: the engine acts on a command once. */
	assert_int_equal(store_command_done(fx->s, a, 21, "done", ERR(fx)), -1);

	assert_int_equal(store_command_next(fx->s, plan, &c, ERR(fx)), 0);
	assert_int_equal(c.id, b);
	assert_int_equal(c.step_idx, -1);
	assert_string_equal(c.comment, "");
	assert_int_equal(store_command_done(fx->s, b, 22, "done", ERR(fx)), 0);
	assert_int_equal(store_command_next(fx->s, plan, &c, ERR(fx)), STORE_NOT_FOUND);
}

static int
count_alert(const struct store_alert *a, void *arg)
{
	struct store_alert *last = arg;

	*last = *a;
	return 0;
}

static void
test_alerts_raise_update_ack(void **state)
{
	struct fx *fx = *state;
	struct store_alert last;
	int64_t plan, id = 0, id2 = 0;
	bool raised = false;

	open_store(fx);
	plan = new_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "1 message parked",
	    100, &id, &raised, ERR(fx)), 0);
	assert_true(raised);
	/* The same condition seen again updates the open alert. */
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "2 messages parked",
	    200, &id2, &raised, ERR(fx)), 0);
	assert_false(raised);
	assert_int_equal(store_each_alert(fx->s, plan, 1, count_alert, &last, ERR(fx)), 1);
	assert_int_equal(last.id, id);
	assert_int_equal(last.count, 2);
	assert_int_equal(last.raised_ms, 100);
	assert_int_equal(last.last_ms, 200);
	assert_string_equal(last.message, "2 messages parked");

	assert_int_equal(store_alert_ack(fx->s, plan, id, "carol", "drained by hand", 300,
	    ERR(fx)), 0);
	assert_int_equal(store_alert_ack(fx->s, plan, id, "carol", NULL, 301, ERR(fx)),
	    STORE_NOT_FOUND);
	assert_int_equal(store_each_alert(fx->s, plan, 1, NULL, NULL, ERR(fx)), 0);
	assert_int_equal(store_each_alert(fx->s, plan, 0, count_alert, &last, ERR(fx)), 1);
	assert_string_equal(last.acked_by, "carol");
	assert_int_equal(last.acked_ms, 300);

	/* After an acknowledgement the condition raises a new alert. */
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "again", 400, &id2,
	    &raised, ERR(fx)), 0);
	assert_true(raised);
	assert_true(id2 != id);
}

static void
test_step_reset_clears_the_attempt(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	open_store(fx);
	plan = new_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0, ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "failed", 10, 20, "{\"lost\":1}",
	    "1 message lost", ERR(fx)), 0);
	assert_int_equal(store_step_reset(fx->s, plan, 0, "pending", ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, ERR(fx)), 0);
	assert_string_equal(st.status, "pending");
	assert_int_equal(st.started_ms, 0);
	assert_int_equal(st.ended_ms, 0);
	assert_null(st.result_json);
	assert_null(st.error);
	store_step_clear(&st);
}

struct series {
	int rows;
	double max_value;
	int64_t first_ts;
};

static int
collect_depth(int64_t ts, const char *metric, const char *label, double v, void *arg)
{
	struct series *s = arg;

	(void)label;
	if (strcmp(metric, "old.depth") != 0)
		return 0;
	if (s->rows++ == 0)
		s->first_ts = ts;
	if (v > s->max_value)
		s->max_value = v;
	return 0;
}

static void
test_downsample_keeps_the_maximum_per_bucket(void **state)
{
	struct fx *fx = *state;
	struct series all = { 0 }, after = { 0 };
	int64_t plan, removed;

	open_store(fx);
	plan = new_plan(fx, "p", "yaml", 1);
	/* Ten minutes of 10 s samples of two series. */
	assert_int_equal(store_begin(fx->s, ERR(fx)), 0);
	for (int i = 0; i < 60; i++) {
		assert_int_equal(store_sample_insert(fx->s, plan, 600000 + i * 10000,
		    "old.depth", "", i == 17 ? 500 : i, ERR(fx)), 0);
		assert_int_equal(store_sample_insert(fx->s, plan, 600000 + i * 10000,
		    "ladder.depth", "3", 1, ERR(fx)), 0);
	}
	assert_int_equal(store_commit(fx->s, ERR(fx)), 0);
	assert_int_equal(store_each_sample(fx->s, plan, 0, collect_depth, &all, ERR(fx)), 0);
	assert_int_equal(all.rows, 60);

	/* Fold everything older than 8 minutes in into 1-minute buckets. */
	removed = store_samples_downsample(fx->s, plan, 600000 + 8 * 60000, 60000, ERR(fx));
	/* 8 buckets of 6 rows become 8 rows, for each of the two series. */
	assert_int_equal(removed, 2 * (48 - 8));
	assert_int_equal(store_each_sample(fx->s, plan, 0, collect_depth, &after, ERR(fx)), 0);
	assert_int_equal(after.rows, 8 + 12);
	assert_true(after.max_value == 500);   /* the spike survives */
	assert_int_equal(after.first_ts, 600000);
	/* Doing it again changes nothing. */
	assert_int_equal(store_samples_downsample(fx->s, plan, 600000 + 8 * 60000, 60000,
	    ERR(fx)), 0);
}

static void
test_version_changes_with_any_writer(void **state)
{
	struct fx *fx = *state;
	struct store *other = NULL;
	uint64_t v0, v1, v2, v3;

	open_store(fx);
	assert_int_equal(store_open(fx->path, &other, ERR(fx)), 0);
	new_plan(fx, "p", "yaml", 1);
	assert_int_equal(store_version(fx->s, &v0, ERR(fx)), 0);
	assert_int_equal(store_version(fx->s, &v1, ERR(fx)), 0);
	assert_true(v0 == v1);                 /* nothing changed */
	/* Another connection writes. */
	assert_int_equal(store_plan_insert(other, "q", "y", 1, 2, NULL, ERR(fx)), 0);
	assert_int_equal(store_version(fx->s, &v2, ERR(fx)), 0);
	assert_true(v2 != v1);
	/* This connection writes. */
	new_plan(fx, "r", "z", 3);
	assert_int_equal(store_version(fx->s, &v3, ERR(fx)), 0);
	assert_true(v3 != v2);
	store_close(other);
}

static int
plan_names(const struct store_plan *p, void *arg)
{
	strcat(arg, p->name);
	strcat(arg, " ");
	return 0;
}

static void
test_plans_listed_newest_first(void **state)
{
	struct fx *fx = *state;
	char names[64] = "";

	open_store(fx);
	new_plan(fx, "first", "a", 1);
	new_plan(fx, "second", "b", 2);
	assert_int_equal(store_each_plan(fx->s, plan_names, names, ERR(fx)), 0);
	assert_string_equal(names, "second first ");
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_open_creates_schema),
		T(test_open_enforces_foreign_keys),
		T(test_open_refuses_newer_schema),
		T(test_open_refuses_non_database),
		T(test_open_refuses_unopenable_path),
		T(test_plan_roundtrip),
		T(test_plan_status_and_constraints),
		T(test_steps),
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
		T(test_verify_detects_rehashed_edit),
		T(test_transactions),
		T(test_samples),
	T(test_damaged_file_is_refused),
		T(test_two_connections_read_while_write),
		T(test_two_connections_concurrent_writers),
		T(test_commands_in_order_and_handled_once),
		T(test_alerts_raise_update_ack),
		T(test_step_reset_clears_the_attempt),
		T(test_downsample_keeps_the_maximum_per_bucket),
		T(test_plans_listed_newest_first),
		T(test_version_changes_with_any_writer),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
