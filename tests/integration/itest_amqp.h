/* itest_amqp: what the AMQP client tests share: the test node's URL and
 * user, names under the run's prefix, queue arguments, the per-test setup
 * and teardown on the broker, publishes and depths. Names from here are
 * prefixed iamqp_.
 *
 * test_amqp_*.c: the AMQP broker layer against a real RabbitMQ node.
 *
 * The node comes from the environment: CUTOVER_TEST_AMQP (amqp://host:port/
 * vhost), CUTOVER_TEST_USER, and the password in CUTOVER_TEST_PASSWORD
 * (passed as the reference env:CUTOVER_TEST_PASSWORD), and
 * CUTOVER_TEST_MGMT (http://host:port of the management API, used only to
 * force-close a connection). Without them the broker tests fail: a suite
 * that silently skips proves nothing. Every object is named
 * itest.amqp.<pid>.<what> and deleted by the test's teardown. */
#ifndef CUTOVER_ITEST_AMQP_H
#define CUTOVER_ITEST_AMQP_H

#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "broker/broker.h"
#include "clock.h"
#include "itest_run.h"

#define PWREF "env:CUTOVER_TEST_PASSWORD"
#define TIMEOUT_MS 5000
#define MAX_OBJECTS 16

struct ctx {
	struct broker *b;
	char queues[MAX_OBJECTS][128];
	size_t nqueues;
	char exchanges[MAX_OBJECTS][128];
	size_t nexchanges;
};

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_mono_ms()

/* A test with a broker handle of its own, and the objects it names
 * deleted afterwards. */
#define WITH_BROKER(t) cmocka_unit_test_setup_teardown(t, iamqp_setup, iamqp_teardown)

extern const char *iamqp_amqp_url;
extern const char *iamqp_amqp_user;
extern const char *iamqp_mgmt_url;	/* CUTOVER_TEST_MGMT, optional */

/* Names an object of this run and remembers it for the teardown. */
const char *iamqp_queue_name(struct ctx *c, const char *what);

const char *iamqp_exchange_name(struct ctx *c, const char *what);

/* The queue iamqp_queue_name names for WHAT, declared (durable, without
 * arguments) through C's connection; fails the test when it cannot be. */
const char *iamqp_declared_queue(struct ctx *c, const char *what);

/* Queue argument KEY = the integer NUM, or the string STR, as a value
 * (itest_arg_int, itest_arg_str), for the tables of arguments the tests
 * declare queues with. */
struct topology_arg iamqp_arg_int(const char *key, int64_t num);
struct topology_arg iamqp_arg_str(const char *key, const char *str);

void iamqp_need_broker(void);

int iamqp_setup(void **state);

int iamqp_teardown(void **state);

/* Publishes BODY to the default exchange, routed to QUEUE, and expects a
 * confirm. */
void iamqp_publish_to_queue(struct broker *b, const char *queue, const char *body);

/* Publishes BODY to QUEUE (iamqp_publish_to_queue) and expects the
 * consumer B holds on it to be handed that body next, within TIMEOUT_MS;
 * acks it. Fails naming BODY and what came instead. */
void iamqp_publish_and_consume(struct broker *b, const char *queue, const char *body);

uint32_t iamqp_depth(struct broker *b, const char *queue);

/* Waits (30 s at most) until QUEUE holds N ready messages, and returns
 * its depth then: a message returned by a closed channel is back in its
 * queue once the broker has handled the close, which a later request may
 * overtake. */
uint32_t iamqp_wait_depth(struct broker *b, const char *queue, uint32_t n);

/* Runs the N tests in TESTS as a test_amqp_*.c program's main does
 * (ITEST_MAIN; the arguments are not read), and returns its exit
 * status. */
int iamqp_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

#endif
