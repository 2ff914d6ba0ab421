/* itest_run: what the tests that drive the cutover binary share — running
 * it as an operator would (CUTOVER_BINARY), starting `cutover run` in the
 * background, reading a plan's recorded history back, and cleaning up
 * after a test on every exit path (processes it started, and what
 * itest_broker registers), also when an assertion failed half-way. */
#ifndef CUTOVER_ITEST_RUN_H
#define CUTOVER_ITEST_RUN_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <sys/types.h>
#include <cmocka.h>

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

/* Starts `cutover serve --db DB` in the background, on a port of the
 * kernel's choosing on 127.0.0.1 (for a test that watches DB, not the
 * API). Returns its pid. */
pid_t itest_start_serve(const char *db);

/* Starts ARGV (ARGV[0] a path, NULL-terminated) in the background, its
 * stdout and stderr appended to OUT, killed at itest_cleanup unless
 * waited for. Returns its pid. */
pid_t itest_spawn(const char *out, char *const argv[]);

/* SIGTERM to PID (from itest_spawn or itest_start_run), then waits for it
 * and returns its exit status as itest_wait does. */
int itest_stop(pid_t pid);

/* Waits for PID and returns its exit status as itest_cutover does. */
int itest_wait(pid_t pid);

/* Whether PID (from itest_spawn) has exited, without waiting: -1 while
 * it runs, else its exit status as itest_wait returns it (and it is
 * waited for). */
int itest_exited(pid_t pid);

/* Test servers' ports start here; tests/e2e/lib.sh uses the same range. */
#define ITEST_PORT_LOW	20000

/* A port on 127.0.0.1 nothing holds now (a bind to it succeeded and was
 * closed), between ITEST_PORT_LOW and the kernel's ephemeral range: a port
 * of that range may be any client socket's by the time a server binds it. */
int itest_free_port(void);

/* A TCP connection to 127.0.0.1:PORT whose receives time out after
 * RECV_TIMEOUT_S seconds (0: they wait). Returns the socket (the caller
 * closes it), or -1 when nothing accepts there; fails the test when no
 * socket can be made. */
int itest_connect(int port, int recv_timeout_s);

/* Registers FN(ARG) to run at the next itest_cleanup (newest first). FN
 * must not use cmocka's assertions: it may run outside a test. */
void itest_on_cleanup(void (*fn)(void *), void *arg);

/* Kills (SIGKILL) and reaps every process itest_start_run started that
 * was not waited for, then runs and forgets the registered cleanups. A
 * test calls it from its teardown or at its start (for a test before it
 * that failed half-way); it also runs at exit. Processes started here
 * also die with the test process (PR_SET_PDEATHSIG). */
void itest_cleanup(void);

/* A cmocka teardown that runs itest_cleanup; STATE is not used. */
int itest_cleanup_teardown(void **state);

/* Skips the calling test because WHY (its environment is missing). Under
 * CI=true it fails the test instead: a skipped check proves nothing. */
void itest_skip(const char *why);

/* Runs the group GROUP of the N tests in TESTS as
 * cmocka_run_group_tests does, or only the part CUTOVER_TEST_PART names
 * ("K/M": every M-th test from the K-th, 1 <= K <= M): a long test
 * program is registered as M ctest tests this way, which ctest runs side
 * by side, each on a node of its own. CUTOVER_TEST_ONLY=TEXT keeps only
 * the tests whose names contain TEXT (to run one by hand). Returns what
 * cmocka returns; exits 2 on a malformed part. */
int itest_run_part(const char *group, const struct CMUnitTest *tests, size_t n,
    CMFixtureFunction setup, CMFixtureFunction teardown);

/* Makes a new directory NAME.XXXXXX under TMPDIR (/tmp without it) and
 * writes its path into DIR (DIRLEN bytes). Returns 0, or -1 with errno
 * set when it cannot. */
int itest_temp_dir(char *dir, size_t dirlen, const char *name);

/* Fills ARGV (room for 24) with BIN, ARG and the further arguments in AP
 * up to their NULL (22 at the most), and ends it with NULL. */
void itest_argv(const char **argv, const char *bin, const char *arg, va_list ap);

/* Runs the N tests in TESTS as an integration test program's main does:
 * only those ARGV[1] matches, when given, or else CUTOVER_TEST_FILTER (a
 * cmocka filter: test_own*), through itest_run_part with the group's SETUP
 * and TEARDOWN (NULL for none). Returns what cmocka returns. */
int itest_main_group(const struct CMUnitTest *tests, size_t n, int argc, char **argv,
    CMFixtureFunction setup, CMFixtureFunction teardown);

/* itest_main_group without a group setup or teardown. */
int itest_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

/* Runs the N tests in TESTS as itest_main does, in a new temporary
 * directory NAME.XXXXXX (itest_temp_dir; its path into DIR, DIRLEN bytes)
 * that the tests write their files into; after the last test, runs what it
 * left (itest_cleanup, while its files still exist) and removes the
 * directory. Returns what cmocka returns, or 1 when the directory cannot
 * be made or removed. */
int itest_main_in_temp_dir(const struct CMUnitTest *tests, size_t n, int argc,
    char **argv, char *dir, size_t dirlen, const char *name);

/* ITEST_MAIN(RUN, TEST...): main() of an integration test program — its
 * TESTs (a cmocka_unit_test or one of its kin), in order, handed with the
 * command line to RUN (itest_main, or a feature's own runner of the same
 * arguments: icut_main, iapi_main, ieng_main), whose status it returns. */
#define ITEST_MAIN(run, ...)                                                   \
	int main(int argc, char **argv)                                        \
	{                                                                      \
		const struct CMUnitTest itest_tests[] = { __VA_ARGS__ };        \
		return run(itest_tests, sizeof(itest_tests) / sizeof(itest_tests[0]), \
		    argc, argv);                                               \
	}

/* Reads the newest plan called NAME in DB: its status into STATUS and its
 * events into H; fails the test when the history does not verify. */
void itest_read_history(const char *db, const char *name, struct itest_history *h,
    char *status, size_t statuslen);

/* How many events of KIND H holds. */
int itest_count(const struct itest_history *h, const char *kind);

/* Fails the test unless H holds, for each "KIND=N" of the space-separated
 * list COUNTS, exactly N events of KIND; the failure names every kind
 * whose count is wrong, what was wanted and what H holds. */
void itest_expect_counts(const struct itest_history *h, const char *counts);

/* How many events of KIND H holds whose details name NAME. */
int itest_count_named(const struct itest_history *h, const char *kind,
    const char *name);

#endif
