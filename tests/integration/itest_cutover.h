/* itest_cutover: what the whole-plan tests share: the test's plan (every
 * step, gates chosen per test) and its feature on the real Unleash,
 * `cutover run` started, approved, killed and resumed, and the plan's
 * history read back. Names from here are prefixed icut_.
 *
 * test_cutover_*.c (integration): whole plans through the engine against a real
 * RabbitMQ node and a real Unleash — gates approved from another process,
 * kill -9 at the worst moments (between the flip and its record, during
 * the watch, during remove_old), abort after the flip and during the
 * watch, a flag service that is down (for the flip and for the rollback),
 * and a producer still writing into the old path after the flip.
 * The cutover binary (CUTOVER_BINARY) is run as an operator would. */
#ifndef CUTOVER_ITEST_CUTOVER_H
#define CUTOVER_ITEST_CUTOVER_H

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "engine.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "itest_unleash.h"
#include "flag.h"
#include "step.h"
#include "store.h"

#define GATES_DEFAULT	((1u << 4) | (1u << 6))

extern char icut_dir[256];
extern char icut_db[300];
extern char icut_planfile[300];
extern char icut_plan_name[64];
extern char icut_prefix[64];
extern char icut_feature[64];	/* the plan's Unleash feature: the plan's name */

int64_t icut_now_ms(void);

/* The plan's steps, and which of them wait at a gate (bit i: step i):
 * the flip and remove_old unless a test says otherwise. */
extern const char *const icut_step_names[7];

extern unsigned icut_gates;

/* The plan's watch.interval: 250ms unless a test sets another before
 * icut_begin (which writes it into the plan, then sets it back). */
extern const char *icut_interval;

/* One message into old queue NAME through the default exchange. */
void icut_publish_old(struct step_ctx *c, const char *name);

/* Reads step IDX (0-based) of the test's plan. Returns 0 when found. */
int icut_read_step(int idx, struct store_step *out);

/* How many rows of its result list (step_entries) step IDX (0-based) of
 * the test's database holds, read with SQLite alone; -1 when unreadable. */
int icut_rows_held(int idx);

/* Waits until step IDX has STATUS (up to TIMEOUT_MS). Returns 1 if it did. */
int icut_wait_step(int idx, const char *status, int timeout_ms);

/* Waits until the test's plan has STATUS (up to TIMEOUT_MS). Returns 1 if
 * it did. */
int icut_wait_plan(const char *status, int timeout_ms);

/* A number from step IDX's persisted result, or -1. KEY may name a
 * member of a member: "stats.counted_to_ms". */
int64_t icut_step_number(int idx, const char *key);

/* Waits until the watch (step 6) has ticked N times (up to TIMEOUT_MS).
 * Returns 1 if it did. */
int icut_wait_ticks(int64_t n, int timeout_ms);

/* The flag as Unleash has it now: 1 on, 0 off. */
int icut_flag_now(const struct plan *p);

/* Sets up a test: names, plan, the flag off, the old path with messages.
 * What an earlier test left (it failed half-way) is cleaned up first; what
 * this one makes on the broker (all named after its prefix and plan) is
 * removed by itest_cleanup whatever happens. */
void icut_begin(const char *test, struct plan **p, struct step_ctx *c, const char *flag_url,
    const char *allowance);

/* Runs the test's plan up to the flip's gate and approves the flip. */
void icut_run_to_the_flip_and_approve(void);

/* icut_run_to_the_flip_and_approve, then `cutover run` again in the
 * background until the watch runs (30 s at most) and has ticked TICKS
 * times (60 s at most; 0: no tick waited for). Returns the run's pid;
 * fails saying which wait ran out. */
pid_t icut_run_into_the_watch(int64_t ticks);

/* Ends a test that passed: its handles closed, then what it started and
 * made removed (itest_cleanup; a test that failed is cleaned up by the
 * next one's begin, or at exit). */
void icut_end(struct plan *p, struct step_ctx *c);

/* Asserts that the test's plan is aborted with its rollback confirmed
 * (the flag read back off from Unleash: P's flag) and no old queue
 * removed. */
void icut_assert_rolled_back(const struct plan *p);

/* test_disk_full_during_the_watch's teardown, also when it failed: its
 * tmpfs unmounted. */
int icut_unmount_small(void **state);

extern pid_t icut_flagoff_pid;

/* Stops the background run, removes the broker objects of
 * test_flag_turned_off_during_the_watch, passed or not. */
int icut_flagoff_teardown(void **state);

/* Runs the N tests in TESTS as a test_cutover_*.c program's main does:
 * itest_main in a temporary directory of their own, removed after; returns
 * its exit status. */
int icut_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

#endif
