/* fx: the store tests' fixture (fx.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "fx.h"
#include "store.h"

int
fx_setup(void **state)
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

int
fx_teardown(void **state)
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

void
fx_open(struct fx *fx)
{
	int rc;

	rc = store_open(fx->path, &fx->s, FX_ERR(fx));
	if (rc != 0)
		fail_msg("store_open: %s", fx->err);
	assert_non_null(fx->s);
}

int64_t
fx_plan(struct fx *fx, const char *name, const char *yaml, int64_t now)
{
	int64_t id = 0;

	if (store_plan_insert(fx->s, name, yaml, strlen(yaml), now, &id,
	    FX_ERR(fx)) != 0)
		fail_msg("store_plan_insert: %s", fx->err);
	assert_true(id > 0);
	return id;
}

int64_t
fx_open_plan(struct fx *fx, const char *yaml)
{
	fx_open(fx);
	return fx_plan(fx, "p", yaml, 1);
}

int64_t
fx_append(struct fx *fx, int64_t plan, int64_t ts, const char *actor,
    const char *kind, const char *details)
{
	int64_t id = 0;

	if (store_append_event(fx->s, plan, ts, actor, kind, details, &id,
	    FX_ERR(fx)) != 0)
		fail_msg("store_append_event: %s", fx->err);
	return id;
}

sqlite3 *
fx_raw_open(const char *path)
{
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE,
	    NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	return db;
}

int
fx_raw_exec(sqlite3 *db, const char *sql)
{
	return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

int64_t
fx_raw_int(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int64_t v;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

void
fx_raw_text(sqlite3 *db, const char *sql, char *out, size_t outlen)
{
	sqlite3_stmt *st = NULL;

	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

void
fx_assert_prefix(const char *s, const char *prefix)
{
	if (strncmp(s, prefix, strlen(prefix)) != 0)
		fail_msg("\"%s\" does not start with \"%s\"", s, prefix);
}
