/* fx: the store tests' fixture — a fresh database path in a temporary
 * directory removed after each test, the store opened on it, and a plain
 * second SQLite connection to look at or tamper with the file. */
#ifndef CUTOVER_TEST_FX_H
#define CUTOVER_TEST_FX_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

/* The error buffer of a fixture, as the store's last two arguments. */
#define FX_ERR(fx) (fx)->err, sizeof((fx)->err)

/* sha256("abc"), the YAML most tests store. */
#define FX_SHA256_ABC \
	"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

struct fx {
	char dir[PATH_MAX];
	char path[PATH_MAX + 32];
	struct store *s;               /* NULL until fx_open */
	char err[512];
};

/* cmocka setup: a new fixture in *STATE with an empty temporary directory
 * and fx->path in it (no file yet). Returns 0, or -1 when it cannot. */
int fx_setup(void **state);

/* cmocka teardown: closes fx->s, removes the directory and what is in it,
 * frees the fixture. Returns 0. */
int fx_teardown(void **state);

/* Opens the store at fx->path into fx->s, failing the test on error. */
void fx_open(struct fx *fx);

/* Inserts a plan NAME with YAML at NOW; fails the test on error. Returns
 * its id. */
int64_t fx_plan(struct fx *fx, const char *name, const char *yaml, int64_t now);

/* Opens the store (fx_open) and inserts a plan "p" with YAML at time 1
 * (fx_plan), as most store tests begin; fails the test on error. Returns
 * the plan's id. */
int64_t fx_open_plan(struct fx *fx, const char *yaml);

/* Appends an event to PLAN's history; fails the test on error. Returns its
 * id. */
int64_t fx_append(struct fx *fx, int64_t plan, int64_t ts, const char *actor,
    const char *kind, const char *details);

/* A plain second connection to PATH, as another process or a tamperer has
 * (5 s busy timeout); the caller closes it. Fails the test when it cannot. */
sqlite3 *fx_raw_open(const char *path);

/* Runs SQL on DB. Returns sqlite3_exec's code. */
int fx_raw_exec(sqlite3 *db, const char *sql);

/* The first column of SQL's first row, as an integer, and as text into
 * OUT; fails the test when there is no row. */
int64_t fx_raw_int(sqlite3 *db, const char *sql);
void fx_raw_text(sqlite3 *db, const char *sql, char *out, size_t outlen);

/* Fails unless S starts with PREFIX. */
void fx_assert_prefix(const char *s, const char *prefix);

#endif
