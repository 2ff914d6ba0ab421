/* itest_old: what the old-path tests share: the test's names under one
 * prefix, its plans, old queues made, filled, touched and dropped on the
 * broker, policies, and readers of measure_horizon's and remove_old's
 * results. Names from here are prefixed iold_.
 *
 * test_old_*.c (integration): measure_horizon and remove_old on a real RabbitMQ
 * node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password
 * env:CUTOVER_TEST_PASSWORD): sixty old queues measured detail by detail,
 * removal that refuses what is not safe and never strays outside the
 * selection, a message that arrives between the check and the delete
 * (through the removal's test hook, a real interleaving on the broker),
 * and 240 queues removed over 4 connections, each exactly once. */
#ifndef CUTOVER_ITEST_OLD_H
#define CUTOVER_ITEST_OLD_H

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
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
#include "old_path.h"
#include "plan.h"
#include "step.h"

#define MIN_MS	(60 * 1000)
#define HOUR_MS	(60 * MIN_MS)

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_now_ms()

/* What a test made on the broker, for its teardown to remove also when
 * the test fails: the queues PREFIX QUEUES[i], policy POLICY, exchange
 * PREFIX EXCHANGE (NULL: none). */
struct made {
	struct plan *p;
	const char *queues[8];
	const char *policy;
	const char *exchange;
};

extern char iold_prefix[64];	/* "itest.old.PID." */
extern char iold_rprefix[80];	/* the same as a regex: "itest\\.old\\.PID\\." */

/* Names the test's objects. What an earlier test left (it failed
 * half-way) is removed first; what this one makes (queues, policies,
 * operator policies, all under the prefix) is removed by itest_cleanup
 * whatever happens. */
void iold_set_prefix(void);

/* Loads a plan for the test broker whose old section is OLD_YAML (lines
 * indented by two) and whose allowance is ALLOWANCE. */
struct plan *iold_load_plan(const char *old_yaml, const char *allowance);

/* A plan selecting ^PREFIX GROUP\.[0-9]{2}$, with MAX_TTL (or none). */
struct plan *iold_match_plan(const char *group, const char *max_ttl, const char *allowance);

/* Declares durable queue PREFIX NAME: TTL_MS (< 0: none), EXPIRES_MS
 * (< 0: none), quorum or classic, dead-lettering to the destination queue
 * as the old design did. */
void iold_make_queue(struct broker *b, const char *name, int64_t ttl_ms, int64_t expires_ms,
    bool quorum);

void iold_publish_to(struct broker *b, const char *name, const char *body);

/* Does queue PREFIX NAME exist? *MESSAGES gets its depth. */
bool iold_exists(struct broker *b, const char *name, uint32_t *messages);

void iold_drop_queue(struct broker *b, const char *name);

/* Gives queue PREFIX NAME a publish counter, as any queue that ever took
 * traffic has: one message in and out. */
void iold_touch(struct broker *b, const char *name);

/* The publish counter the management statistics show for PREFIX NAME in
 * LISTING, or -1. */
int64_t iold_counter_in(const json_t *listing, const char *name);

/* Waits (up to 60 s) until the statistics show queue PREFIX NAMES[i]'s
 * publish counter at WANT[i] (or, WANT NULL, at least 1) for each of the N
 * names. Returns the last listing (the caller releases it). */
json_t *iold_await_counters(struct mgmt *m, const char *const *names, const int64_t *want,
    size_t n);

/* Touches PREFIX GROUP.NN for NN 0 .. N-1 (WIDTH digits) and waits for
 * their counters. */
void iold_touch_all(struct step_ctx *c, const char *group, int width, int n);

void iold_put_policy(struct mgmt *m, bool operator_policy, const char *name,
    const char *pattern_tail, int64_t ttl_ms);

void iold_drop_policies(struct mgmt *m);

/* Puts policy PREFIX NAME (priority 7, apply-to queues) with DEFINITION
 * (borrowed) on queue PREFIX QUEUE alone, and waits (up to 30 s) until
 * both queue listings, the records and the statistics, name it as that
 * queue's policy: RabbitMQ applies a policy to its queues asynchronously,
 * and its statistics show it later still. Fails the test otherwise. */
void iold_policy_on(struct mgmt *m, const char *name, const char *queue,
    const json_t *definition);

/* Starts a test of an old queue's policy on group GROUP: names the test's
 * objects (iold_set_prefix), loads MADE's plan selecting
 * ^PREFIX GROUP\.[0-9]{2}$ (allowance 1 s) with its policy PREFIX
 * pol-GROUP (iold_made_teardown removes both: *STATE is MADE), opens C on
 * it and declares the destination queue PREFIX GROUP.dest (its name into
 * DEST, DESTLEN bytes), which the selection does not take. */
void iold_policy_start(void **state, struct made *made, const char *group,
    struct step_ctx *c, char *dest, size_t destlen);

/* The entry named PREFIX NAME in the array KEY of R, or NULL. */
const json_t *iold_entry(const json_t *r, const char *key, const char *name);

const char *iold_str_of(const json_t *o, const char *key);

const char *iold_outcome(const json_t *r, const char *name);

int iold_made_teardown(void **state);

/* Removes what test_expiring_old_queues_are_refused made, passed or not. */
int iold_expiring_teardown(void **state);


#endif
