/* itest_run: what the tests that drive the cutover binary share — running
 * it as an operator would (CUTOVER_BINARY), starting `cutover run` in the
 * background, reading a plan's recorded history back, and cleaning up
 * after a test on every exit path (processes it started, objects it
 * made), also when an assertion failed half-way. */
#ifndef CUTOVER_ITEST_RUN_H
#define CUTOVER_ITEST_RUN_H

#include <stddef.h>
#include <sys/types.h>

#define ITEST_EVENTS_MAX 256

/* The kinds, actors and details' "name" ("" when none) of a plan's
 * events, in order (the first ITEST_EVENTS_MAX of them; N counts them
 * all). */
struct itest_history {
	int n;
	char kinds[ITEST_EVENTS_MAX][48];
	char actors[ITEST_EVENTS_MAX][65];
	char names[ITEST_EVENTS_MAX][160];
};

/* Sleeps MS milliseconds. */
void itest_sleep_ms(int ms);

/* Runs the cutover binary with the NULL-terminated arguments, its output
 * on the test's stderr, and returns its exit status (128 + signal when it
 * was killed). */
int itest_cutover(const char *arg, ...);

/* Starts `cutover run --db DB PLANFILE` in the background, with
 * CUTOVER_FAULT=FAULT when FAULT is not NULL. Returns its pid. */
pid_t itest_start_run(const char *db, const char *planfile, const char *fault);

/* Waits for PID and returns its exit status as itest_cutover does. */
int itest_wait(pid_t pid);

/* Registers FN(ARG) to run at the next itest_cleanup (newest first). FN
 * must not use cmocka's assertions: it may run outside a test. */
void itest_on_cleanup(void (*fn)(void *), void *arg);

/* Kills (SIGKILL) and reaps every process itest_start_run started that
 * was not waited for, then runs and forgets the registered cleanups. A
 * test calls it from its teardown or at its start (for a test before it
 * that failed half-way); it also runs at exit. Processes started here
 * also die with the test process (PR_SET_PDEATHSIG). */
void itest_cleanup(void);

/* This run's unique name, "itest<pid>x<8 hex digits>" (the same for the
 * whole process): the start of the names of the policies, vhosts and other
 * broker-wide objects a test makes, so that concurrent or leftover runs
 * never share one. */
const char *itest_run_id(void);

/* Creates vhost NAME on the test broker (CUTOVER_TEST_MGMT) with every
 * permission for CUTOVER_TEST_USER, registers its deletion (and with it
 * everything in it) with itest_on_cleanup, and writes the AMQP URL of the
 * vhost (CUTOVER_TEST_AMQP with NAME as its path) into URL. For objects
 * whose names cannot carry a prefix (kombu's celery_delayed_*, NServiceBus's
 * nsb.v2.*). Fails the test when the broker refuses. */
void itest_vhost(const char *name, char *url, size_t urllen);

/* Register, with itest_on_cleanup, the deletion on the test broker's
 * vhost "/" of policy NAME, of queue NAME, or of every queue, exchange,
 * policy and operator policy whose name starts with PREFIX and a dot
 * (queues first, whatever they hold): a test that fails half-way leaves
 * nothing behind. */
void itest_policy_cleanup(const char *name);
void itest_queue_cleanup(const char *name);
void itest_prefix_cleanup(const char *prefix);

/* itest_prefix_cleanup(PREFIX), and the queues the engine names after plan
 * PLAN_NAME: its canary's cutover.canary.PLAN_NAME and its watch's probes'
 * cutover.probe.PLAN_NAME. */
void itest_plan_cleanup(const char *prefix, const char *plan_name);

/* Creates feature NAME in project "default" of the test Unleash
 * (CUTOVER_TEST_UNLEASH_URL, admin token CUTOVER_TEST_UNLEASH_TOKEN),
 * disabled, with a 100% rollout strategy in "production" (as
 * scripts/unleash makes delay-ladder), and registers its archiving and
 * deletion with itest_on_cleanup: a test flips a feature of its own, not
 * one the whole suite shares. Fails the test when Unleash refuses. */
void itest_unleash_feature(const char *name);

/* Skips the calling test because WHY (its environment is missing). Under
 * CI=true it fails the test instead: a skipped check proves nothing. */
void itest_skip(const char *why);

/* Reads the newest plan called NAME in DB: its status into STATUS and its
 * events into H; fails the test when the history does not verify. */
void itest_read_history(const char *db, const char *name, struct itest_history *h,
    char *status, size_t statuslen);

/* How many events of KIND H holds. */
int itest_count(const struct itest_history *h, const char *kind);

/* How many events of KIND H holds whose details name NAME. */
int itest_count_named(const struct itest_history *h, const char *kind,
    const char *name);

#endif
