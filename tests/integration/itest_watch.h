/* itest_watch: the fixture the watch tests share: a plan with a ladder, old
 * queues and a store, the watch called tick after tick as the engine calls
 * it, and reading its state, alerts, events and samples back. Names from
 * here are prefixed iwatch_.
 *
 * test_watch_*.c (integration): the watch step on a real RabbitMQ node
 * (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password
 * env:CUTOVER_TEST_PASSWORD) and a real SQLite file in a temporary
 * directory, called tick after tick the way the engine calls it: each
 * tick's state is written to the store and read back from it for the next
 * tick, and the broker connections are reopened midway (a restart).
 * A 100 ms ladder, old queues of 2 s TTL, a 200 ms interval, a 1 s
 * allowance and a probe every second. Checks the samples, the deadline
 * (never early, moved by a publish into the old path), the probes, and the
 * alerts (old_publish, old_new_queue, old_not_drained, parking,
 * ladder_drift (a binding, a level queue or the parking queue gone), probe
 * (lost, late, or early under a policy that shortens the levels),
 * broker_unreachable), none of which lets the watch end while it is open
 * (broker_unreachable closes once the broker answers a tick again; the
 * others wait for an acknowledgement). The plan's flag is a feature of the real Unleash
 * (CUTOVER_TEST_UNLEASH_URL, admin token CUTOVER_TEST_UNLEASH_TOKEN), one
 * per test, created on and deleted at the end; the watch reads it every
 * tick, and turning it off (or deleting it) under the watch raises
 * flag_off (flag_unreadable), holds the watch and blocks remove_old.
 * Without the environment the tests fail, never skip. Every object is
 * named after the test and the pid, and removed at the end. */
#ifndef CUTOVER_ITEST_WATCH_H
#define CUTOVER_ITEST_WATCH_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_json.h"
#include "itest_run.h"
#include "itest_unleash.h"
#include "ladder.h"
#include "metrics.h"
#include "plan.h"
#include "publish.h"
#include "step.h"
#include "store.h"
#include "topology.h"

#define OLD_TTL_MS	2000
#define ALLOWANCE_MS	1000
#define INTERVAL_MS	200
#define STATS_LAG_MS	10000	/* the watch's OLD_STATS_LAG_MS */
#define MAX_OLD		4

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_now_ms()

/* How long a test waits for an alert it expects: a ceiling, not a bound
 * (the wait ends as soon as the alert is raised). */
#define ALERT_CEILING_MS 30000

/* What a test created, removed by its teardown whether it passed or not. */
struct fixture {
	struct plan *p;
	struct step_ctx c;
	struct store *s;
	int64_t plan_id;
	char dir[64], db[128];
	json_t *measured;
	json_t *state;              /* as read back from the store */
	char *state_text;           /* its text, without its rows (the last
	                             * full pass's counters, which the store
	                             * keeps apart as the engine has it) */
	int64_t flip_ms;
	char old[MAX_OLD + 1][LADDER_NAME_MAX];
	int nold;                   /* old[nold] may hold an extra queue */
	bool extra;
	char feature[64];           /* the test's Unleash feature, "" when none */
	int64_t jump_ms;            /* added to the step clock (c.now_ms): a
	                             * wall clock that jumped */
	bool seen_at_flip;          /* iwatch_flip_long_ago: the next tick's
	                             * state says the statistics were seen
	                             * counting up to the flip */
};

/* Open alerts of the plan. */
struct alerts {
	int n;
	struct store_alert v[16];
};

/* Events of KIND whose details contain "alert": ALERT (or any, if NULL). */
struct evcount {
	const char *kind, *alert;
	int n;
};

extern char iwatch_prefix[64];	/* itest<pid>.<test> */
extern const char *iwatch_queue_type;	/* the ladder's; setup resets it */
extern int64_t iwatch_old_ttl_ms;	/* start()'s old queues; setup resets it */

void iwatch_sleep_ms(int64_t ms);

int iwatch_setup(void **state);

int iwatch_teardown(void **state);

void iwatch_publish_to(struct step_ctx *c, const char *exchange, const char *key, int n);

/* Publishes BODY as cutover itself does (publish_delayed through the
 * fixture's ladder, DELAY_MS, stamped with PLAN, NULL for the fixture's
 * own, PURPOSE and SEQ) to destination DEST; a canary's carries its batch
 * header too. Fails naming PURPOSE and DEST unless the broker confirmed
 * it; the receipt goes to RC unless NULL. */
void iwatch_publish_own(struct fixture *f, const char *plan, const char *purpose,
    int64_t seq, int64_t delay_ms, const char *dest, const char *body,
    struct publish_receipt *rc);

/* Declares old queue NAME (classic, durable, TTL_MS). */
void iwatch_old_queue_ttl(struct step_ctx *c, const char *name, int64_t ttl_ms);

/* Declares old queue NAME (classic, durable, old_ttl_ms). */
void iwatch_old_queue(struct step_ctx *c, const char *name);

/* The flip was STATS_LAG_MS + 1 s ago, and the watch (ticked next) is
 * taken to have seen the statistics count every publish up to it, as one
 * that starts at the flip sees within seconds of its first markers
 * (watch_stats.c): what its statistics show first from its second look on
 * happened after the flip. Its end still waits for markers of its own. */
void iwatch_flip_long_ago(struct fixture *f);

/* iwatch_flip_long_ago, then the first tick after it, which must go on;
 * fails the test, with the watch's error, when it does not. */
void iwatch_tick_after_the_flip(struct fixture *f);

/* Ticks on (one interval apart) while the watch's status says it waits
 * for the statistics to count up to its deadline (watch_stats.c), so
 * that the status asserted next is what it waits for besides; fails the
 * test after ALERT_CEILING_MS. */
void iwatch_tick_past_stats_lag(struct fixture *f);

/* Ticks one interval apart, each tick going on, until PAST_MS after the
 * deadline the state holds now. */
void iwatch_tick_past_deadline(struct fixture *f, int64_t past_ms);

/* Sets up test TEST: the plan, NOLD old queues, the ladder,
 * measure_horizon's result, the store, and MSGS messages in each old
 * queue. */
void iwatch_start(struct fixture *f, const char *test, int nold, int msgs, const char *management);

/* One tick as the engine runs it: the last persisted state in, the result
 * persisted as the step's result and read back for the next tick.
 * Returns -1 when step_watch failed, 1 when it goes on (it returned 0 and
 * set ctx.again), 0 when it is over: the tests' shorthand. */
int iwatch_tick(struct fixture *f, char *err, size_t errlen);

const json_t *iwatch_obj(const json_t *o, const char *key);

void iwatch_open_alerts(struct fixture *f, struct alerts *al);

const struct store_alert *iwatch_find_alert(const struct alerts *al, const char *kind);

void iwatch_ack_all(struct fixture *f);

/* Ticks every INTERVAL_MS until an open alert of KIND exists (returns it
 * in *A) or TIMEOUT_MS passes; every tick must go on. */
void iwatch_tick_until_alert(struct fixture *f, const char *kind, int64_t timeout_ms,
    struct store_alert *a);

/* Prints the watch's summary, its levels and its alert events to stderr:
 * what a test that gives up on the watch shows of why. */
void iwatch_dump(struct fixture *);

/* Ticks until the watch ends (returns the time) or TIMEOUT_MS passes. */
int64_t iwatch_tick_until_done(struct fixture *f, int64_t timeout_ms);

int iwatch_events(struct fixture *f, const char *kind, const char *alert);

void iwatch_assert_probe_queue_gone(struct fixture *f);

/* remove_old as the engine gives it its inputs, every old queue long past
 * its deadline. Returns what step_remove_old returned; ERR says why. */
int iwatch_remove_old(struct fixture *f, char *err, size_t errlen);

/* Starts test TEST with one old queue that will not drain in time: after
 * measure_horizon it comes back with a 10 min TTL and MSGS messages; the
 * flip is past its deadline; one tick. */
void iwatch_start_undrained(struct fixture *f, const char *test, int msgs);

/* Opens the alerts and returns the first open one of KIND whose message
 * contains WANT, or fails the test. */
void iwatch_assert_open_alert_with(struct fixture *f, const char *kind, const char *want);

/* Entry K of array member KEY of the state's member PART. */
const json_t *iwatch_entry(struct fixture *f, const char *part, const char *key, int k);

/* The value of /metrics series NAME{plan="<the plan>",LABEL} (LABEL: the
 * rest of the labels, "" for none), or -1 when /metrics has no such line. */
double iwatch_metric(struct fixture *f, const char *name, const char *label);

const json_t *iwatch_pass_of(struct fixture *f);

/* The watch step's rows (the last full pass's counters, kept apart from
 * its result) as "name=publish;" each, in their order, into OUT. Returns
 * how many. */
int iwatch_rows(struct fixture *f, char *out, size_t outlen);

/* Old queue NAME's "publish" in the watch step's rows (a new reference),
 * or NULL when no row names it. */
json_t *iwatch_seen(struct fixture *f, const char *name);

/* The watch step's result as the store gives it whole, its rows in its
 * "entries" (an ended watch's: its last sample of the old queues), as
 * remove_old reads it (a new reference). */
json_t *iwatch_result_whole(struct fixture *f);

/* Old queue NAME's message_stats.publish by the management API, -1 when
 * it shows none. */
int64_t iwatch_api_publishes(struct fixture *f, const char *name);

/* One test of a test_watch_*.c program, FN run between iwatch_setup and
 * iwatch_teardown: every watch test starts from that fixture. */
#define IWATCH_TEST(fn) cmocka_unit_test_setup_teardown(fn, iwatch_setup, iwatch_teardown)

/* Runs the N tests in TESTS as a test_watch_*.c program's main does
 * (ARGV[1], when given, a cmocka filter), and returns its exit status. */
int iwatch_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

/* The main of a test_watch_*.c program: the tests given (IWATCH_TEST
 * entries), run by iwatch_main. */
#define IWATCH_MAIN(...)							\
	int								\
	main(int argc, char **argv)					\
	{								\
		const struct CMUnitTest tests[] = { __VA_ARGS__ };	\
									\
		return iwatch_main(tests, sizeof(tests) / sizeof(tests[0]), argc, argv); \
	}

#endif
