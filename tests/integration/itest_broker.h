/* itest_broker: a test's objects on the test broker and the test Unleash,
 * named for this run and removed by itest_cleanup whatever happens. */
#ifndef CUTOVER_ITEST_BROKER_H
#define CUTOVER_ITEST_BROKER_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct topology_arg;

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

/* The setup of a test on a vhost of its own: runs what the test before it
 * left (itest_cleanup), then makes vhost "<run id>-TAG<n>" (n counts the
 * calls) with itest_vhost, its AMQP URL into URL. */
void itest_vhost_next(const char *tag, char *url, size_t urllen);

/* Register, with itest_on_cleanup, the deletion on the test broker's
 * vhost "/" of policy NAME, of queue NAME, or of every queue, exchange,
 * policy and operator policy whose name starts with PREFIX and a dot
 * (queues first, whatever they hold): a test that fails half-way leaves
 * nothing behind. */
void itest_policy_cleanup(const char *name);
void itest_queue_cleanup(const char *name);
void itest_prefix_cleanup(const char *prefix);

/* Registers, with itest_on_cleanup, the deletion of user NAME on the test
 * broker. */
void itest_user_cleanup(const char *name);

/* Runs "scripts/broker VERB ARGS --port P" (CUTOVER_SOURCE_DIR's) for the
 * test's node (P from CUTOVER_TEST_AMQP), its output on stderr, and fails
 * the test unless it exits 0. ARGS may be "". */
void itest_broker_script(const char *verb, const char *args);

/* The same without failing the test (for cleanups): the script's exit
 * status as system() gives it, or -1 without the environment. */
int itest_broker_script_rc(const char *verb, const char *args);

struct broker;
struct mgmt;
struct plan;
struct step_ctx;

/* Writes a test plan's broker section (two-space indented under
 * "broker:", ending in a newline) into OUT: AMQP (NULL: CUTOVER_TEST_AMQP),
 * CUTOVER_TEST_MGMT, CUTOVER_TEST_USER and env:CUTOVER_TEST_PASSWORD.
 * Fails the test when those are not set. */
void itest_broker_yaml(const char *amqp, char *out, size_t outlen);

/* Deletes every exchange and queue plan P declares (its topology_build)
 * through AMQP connection B; what is not there, or cannot be listed or
 * deleted, is passed over (for teardowns). */
void itest_delete_topology(struct broker *b, const struct plan *p);

/* Loads plan text YAML as file NAME (plan_load_buffer). Returns the plan
 * (free with plan_free); prints every error and fails the test when it
 * does not load. */
struct plan *itest_plan_load(const char *name, const char *yaml);

/* Opens C for plan P (step_ctx_open); fails the test when it cannot. */
void itest_ctx_open(struct step_ctx *c, struct plan *p);

/* Runs step function FN (a step_fn) on C and fails the test, printing its
 * error, unless it succeeds. */
void itest_step_ok(int (*fn)(struct step_ctx *, json_t **, char *, size_t),
    struct step_ctx *c);

/* The publish counter LISTING (a management queue listing: name,
 * message_stats.publish) shows for QUEUE, or -1 when it shows none. */
int64_t itest_publish_counter(const json_t *listing, const char *queue);

/* Gives queue QUEUE (vhost of B and M) a publish counter, as any queue
 * that ever took traffic has: one message in through the default
 * exchange and taken back out, then waits (60 s at most) until the
 * management statistics show the counter. remove_old leaves a queue whose
 * counter it cannot read. Fails the test when any of it fails. */
void itest_give_publish_counter(struct broker *b, struct mgmt *m, const char *queue);

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

/* The value of environment variable NAME, which the broker tests need;
 * fails the test, naming it and the others they need, when it is unset or
 * empty. */
const char *itest_need_env(const char *name);

/* Sets queue argument A, cleared first, to KEY = the integer NUM
 * (x-message-ttl, x-expires). */
void itest_arg_int(struct topology_arg *a, const char *key, int64_t num);

/* Sets queue argument A, cleared first, to KEY = the string STR
 * (x-queue-type, x-dead-letter-exchange; "" for the default exchange). */
void itest_arg_str(struct topology_arg *a, const char *key, const char *str);

#endif
