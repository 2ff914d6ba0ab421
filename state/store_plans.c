/* store_plans: the plans table — plans as submitted (name, YAML, sha256,
 * status, archived), read one at a time or listed newest first. Their
 * steps are store_steps.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sqlite3.h>

#include "store.h"
#include "hex.h"
#include "store_int.h"

/* sha256 of N bytes at P, as lowercase hex. */
static int
sha256_hex(const void *p, size_t n, char out[STORE_HASH_HEX])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen;

	if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 ||
	    mdlen != 32)
		return -1;
	hex_encode(md, mdlen, out);
	return 0;
}

int
store_plan_insert(struct store *s, const char *name, const char *yaml,
    size_t yaml_len, int64_t now_ms, int64_t *id, char *err, size_t errlen)
{
	static const char sql[] =
	    "INSERT INTO plans (name, yaml, sha256, status, created_ms)"
	    " VALUES (?1, ?2, ?3, 'running', ?4)";
	sqlite3_stmt *st = NULL;
	char hex[STORE_HASH_HEX];
	int rc = -1;

	if (name == NULL || yaml == NULL) {
		errbuf_set(err, errlen, "inserting plan: no %s",
		    name == NULL ? "name" : "yaml");
		return -1;
	}
	if (sha256_hex(yaml, yaml_len, hex) == -1) {
		errbuf_set(err, errlen, "inserting plan %s: sha256 failed", name);
		return -1;
	}
	if (store__prepare(s, sql, &st, "inserting plan", err, errlen) == -1)
		goto done;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	if (sqlite3_bind_text64(st, 2, yaml, yaml_len, SQLITE_STATIC,
	    SQLITE_UTF8) != SQLITE_OK) {
		store__dberr(s, err, errlen, "inserting plan: binding yaml");
		goto done;
	}
	sqlite3_bind_text(st, 3, hex, -1, SQLITE_STATIC);
	sqlite3_bind_int64(st, 4, now_ms);
	if (store__run(s, st, "inserting plan", id, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	sqlite3_finalize(st);
	return rc;
}

/* The columns read_plan reads, in its order. */
#define PLAN_COLUMNS	"id, name, sha256, status, created_ms, archived_ms"

/* store__read's FN: a plans row selected as PLAN_COLUMNS into the struct
 * store_plan at ARG. */
static int
read_plan(sqlite3_stmt *st, void *arg)
{
	struct store_plan *out = arg;

	memset(out, 0, sizeof(*out));
	out->id = sqlite3_column_int64(st, 0);
	store__copystr(out->name, sizeof(out->name), sqlite3_column_text(st, 1));
	store__copystr(out->sha256, sizeof(out->sha256), sqlite3_column_text(st, 2));
	store__copystr(out->status, sizeof(out->status), sqlite3_column_text(st, 3));
	out->created_ms = sqlite3_column_int64(st, 4);
	out->archived_ms = sqlite3_column_int64(st, 5);
	return 0;
}

int
store_plan_get(struct store *s, int64_t id, struct store_plan *out,
    char *err, size_t errlen)
{
	return store__read_one(s, "reading plan", read_plan, out, err, errlen,
	    "SELECT " PLAN_COLUMNS " FROM plans WHERE id = ?1", "I", id);
}

int
store_plan_find(struct store *s, const char *name, struct store_plan *out,
    char *err, size_t errlen)
{
	return store__read_one(s, "finding plan", read_plan, out, err, errlen,
	    "SELECT " PLAN_COLUMNS " FROM plans WHERE name = ?1 ORDER BY id DESC LIMIT 1",
	    "t", name);
}

/* A plan's text as store_plan_yaml reads it. */
struct yaml_text {
	char **yaml;
	size_t *len;
};

/* store__read's FN for store_plan_yaml: a malloc'ed copy of the text,
 * and its length. */
static int
read_yaml(sqlite3_stmt *st, void *arg)
{
	const struct yaml_text *y = arg;

	if ((*y->yaml = store__dupcol(st, 0)) == NULL)
		return -1;
	if (y->len != NULL)
		*y->len = (size_t)sqlite3_column_bytes(st, 0);
	return 0;
}

int
store_plan_yaml(struct store *s, int64_t id, char **yaml, size_t *len,
    char *err, size_t errlen)
{
	struct yaml_text y = { yaml, len };

	*yaml = NULL;
	if (len != NULL)
		*len = 0;
	return store__read_one(s, "reading plan yaml", read_yaml, &y, err, errlen,
	    "SELECT yaml FROM plans WHERE id = ?1", "I", id);
}

int
store_plan_set_archived(struct store *s, int64_t id, int64_t now_ms, char *err,
    size_t errlen)
{
	static const char sql[] =
	    "UPDATE plans SET archived_ms = ?1 WHERE id = ?2 AND archived_ms IS NULL";
	char what[64];

	snprintf(what, sizeof(what), "archiving plan %" PRId64, id);
	return store__write_one(s, what, "no such plan, or archived already", err, errlen,
	    sql, "II", now_ms, id);
}

int
store_plan_set_status(struct store *s, int64_t id, const char *status,
    char *err, size_t errlen)
{
	static const char sql[] = "UPDATE plans SET status = ?1 WHERE id = ?2";
	char what[64];

	snprintf(what, sizeof(what), "setting status of plan %" PRId64, id);
	return store__write_one(s, what, "no such plan", err, errlen, sql, "tI", status, id);
}

/* store__read's FN for store_each_plan: the plan handed to the walk's FN. */
static int
plan_walk_row(sqlite3_stmt *st, void *arg)
{
	const struct store__walk *w = arg;
	struct store_plan p;

	read_plan(st, &p);
	return w->fn.plan(&p, w->arg) != 0;
}

int
store_each_plan(struct store *s, int (*fn)(const struct store_plan *p, void *arg),
    void *arg, char *err, size_t errlen)
{
	struct store__walk w = { .fn.plan = fn, .arg = arg };

	return store__read(s, "listing plans", plan_walk_row, &w, err, errlen,
	    "SELECT " PLAN_COLUMNS " FROM plans ORDER BY id DESC", "") < 0 ? -1 : 0;
}
