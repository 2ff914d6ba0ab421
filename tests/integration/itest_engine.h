/* itest_engine: what the engine tests (test_engine*.c) share: the test's
 * names and files, its plan's ladder and canary, its broker connections
 * and the status of its steps as the database has them. Names from here
 * are prefixed ieng_. */
#ifndef CUTOVER_ITEST_ENGINE_H
#define CUTOVER_ITEST_ENGINE_H

#include <stddef.h>

#include "itest_plan.h"
#include "itest_run.h"
#include "step.h"

/* The test program's temporary directory (its main makes it), and the
 * current test's files and names there (ieng_set_names). */
extern char ieng_dir[256];
extern char ieng_db[300];
extern char ieng_planfile[300];
extern char ieng_plan_name[64];
extern char ieng_prefix[64];

/* Names the test's broker objects itestPID.TEST.*, its plan itestPID-TEST
 * and its files ieng_dir/TEST.db and ieng_dir/TEST.yaml. */
void ieng_set_names(const char *test);

/* Starts B as the test's plan (ieng_plan_name on the test's node): the old
 * queue PREFIX.old, a ladder of 6 levels of 100 ms into PREFIX.dest
 * (created by the plan) and a canary of CANARY (a YAML list's items); the
 * caller adds the rest and the steps. Fails the test when the environment
 * the tests run in (CUTOVER_TEST_* and CUTOVER_BINARY) is not set. */
void ieng_plan_begin(struct itest_plan *b, const char *canary);

/* Loads the test's plan into *P and opens its broker connections into C;
 * fails the test when either fails. The caller closes C and frees *P. */
void ieng_open_ctx(struct step_ctx *c, struct plan **p);

/* Declares the test's level queue 2 (its name into NAME) without the
 * ladder's arguments, through C: a queue in the way, on which
 * declare_ladder fails. Fails the test when it cannot. */
void ieng_queue_in_the_way(struct step_ctx *c, char *name, size_t namelen);

/* The status of step IDX (0-based) of the test's plan into OUT, "(none)"
 * while the database, the plan or the step is not there (or the database
 * cannot be opened). */
void ieng_step_status(int idx, char *out, size_t outlen);

/* Waits (TIMEOUT_MS at most, looking every 20 ms) until step IDX
 * (0-based) of the test's plan is STATUS; fails the test, naming the
 * status it has, otherwise. */
void ieng_wait_step(int idx, const char *status, int timeout_ms);

/* The test's old path: one classic delay queue PREFIX.old of 1 s into
 * PREFIX.dest, both declared through the test's plan's broker. Fails the
 * test when it cannot. */
void ieng_make_old_path(void);

/* Removes what the test made on the broker: its queues first, whatever
 * they hold (a run killed mid-canary leaves messages in the ladder, which
 * teardown refuses), then the ladder's exchanges; forgets the plan file.
 * Safe to call when some of it is not there, or no plan was written. */
void ieng_cleanup_broker(void);

/* Runs `cutover run --db DB PLANFILE` on the test's database and plan
 * file. Returns its exit status. */
int ieng_run(void);

/* Reads the test's plan's history into T; fails the test unless the plan
 * is STATUS. */
void ieng_history(struct itest_history *t, const char *status);

/* Runs the N tests in TESTS as a test_engine*.c program's main does:
 * itest_main in a temporary directory of their own (ieng_dir), removed
 * after; returns its exit status. */
int ieng_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

#endif
