/* test_amqp: the AMQP broker layer against a real RabbitMQ node.
 *
 * The node comes from the environment: CUTOVER_TEST_AMQP (amqp://host:port/
 * vhost), CUTOVER_TEST_USER, and the password in CUTOVER_TEST_PASSWORD
 * (passed as the reference env:CUTOVER_TEST_PASSWORD), and
 * CUTOVER_TEST_MGMT (http://host:port of the management API, used only to
 * force-close a connection). Without them the broker tests fail: a suite
 * that silently skips proves nothing. Every object is named
 * itest.amqp.<pid>.<what> and deleted by the test's teardown. */
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

static const char *amqp_url;
static const char *amqp_user;
static const char *mgmt_url;            /* CUTOVER_TEST_MGMT, optional */

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1)
		continue;
}

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_mono_ms()

/* Names an object of this run and remembers it for the teardown. */
static const char *
queue_name(struct ctx *c, const char *what)
{
	char *n;

	assert_true(c->nqueues < MAX_OBJECTS);
	n = c->queues[c->nqueues++];
	snprintf(n, sizeof(c->queues[0]), "itest.amqp.%ld.%s", (long)getpid(),
	    what);
	return n;
}

static const char *
exchange_name(struct ctx *c, const char *what)
{
	char *n;

	assert_true(c->nexchanges < MAX_OBJECTS);
	n = c->exchanges[c->nexchanges++];
	snprintf(n, sizeof(c->exchanges[0]), "itest.amqp.%ld.%s",
	    (long)getpid(), what);
	return n;
}

static struct topology_arg
arg_int(const char *key, int64_t num)
{
	struct topology_arg a;

	memset(&a, 0, sizeof(a));
	snprintf(a.key, sizeof(a.key), "%s", key);
	a.is_int = true;
	a.num = num;
	return a;
}

static struct topology_arg
arg_str(const char *key, const char *str)
{
	struct topology_arg a;

	memset(&a, 0, sizeof(a));
	snprintf(a.key, sizeof(a.key), "%s", key);
	snprintf(a.str, sizeof(a.str), "%s", str);
	return a;
}

static void
need_broker(void)
{
	if (amqp_url == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_USER and CUTOVER_TEST_PASSWORD "
		    "(scripts/test starts a broker and does)");
}

static int
setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	char err[512] = "";

	assert_non_null(c);
	*state = c;
	if (amqp_url == NULL)
		return 0;
	if (broker_open(amqp_url, amqp_user, PWREF, TIMEOUT_MS, &c->b, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "test_amqp: %s\n", err);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	struct ctx *c = *state;
	char err[512];
	size_t i;

	if (c->b != NULL) {
		(void)broker_cancel(c->b, err, sizeof(err));
		for (i = 0; i < c->nqueues; i++)
			if (broker_queue_delete(c->b, c->queues[i], 0, NULL,
			    err, sizeof(err)) != 0)
				fprintf(stderr, "test_amqp: cleanup: %s\n",
				    err);
		for (i = 0; i < c->nexchanges; i++)
			if (broker_exchange_delete(c->b, c->exchanges[i], false,
			    err, sizeof(err)) != 0)
				fprintf(stderr, "test_amqp: cleanup: %s\n",
				    err);
		broker_close(c->b);
	}
	free(c);
	return 0;
}

/* Publishes BODY to the default exchange, routed to QUEUE, and expects a
 * confirm. */
static void
publish_to_queue(struct broker *b, const char *queue, const char *body)
{
	struct broker_message m;
	char err[512] = "";

	memset(&m, 0, sizeof(m));
	m.routing_key = queue;
	m.body = body;
	m.len = strlen(body);
	if (broker_publish(b, &m, TIMEOUT_MS, err, sizeof(err)) != 0)
		fail_msg("publish: %s", err);
}

static uint32_t
depth(struct broker *b, const char *queue)
{
	struct broker_queue_info info;
	char err[512] = "";

	if (broker_queue_inspect(b, queue, &info, err, sizeof(err)) != 0)
		fail_msg("inspect %s: %s", queue, err);
	return info.messages;
}

/* ---- URLs and credentials (no broker needed) ---- */

static void
test_url_parse(void **state)
{
	struct broker_url u;
	char err[512];

	(void)state;
	assert_int_equal(broker_url_parse("amqp://rabbit", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.host, "rabbit");
	assert_int_equal(u.port, 5672);
	assert_string_equal(u.vhost, "/");

	assert_int_equal(broker_url_parse("amqp://127.0.0.1:5680/%2f", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.host, "127.0.0.1");
	assert_int_equal(u.port, 5680);
	assert_string_equal(u.vhost, "/");

	assert_int_equal(broker_url_parse("amqp://h:1/", &u, err, sizeof(err)),
	    0);
	assert_string_equal(u.vhost, "/");
	assert_int_equal(broker_url_parse("amqp://h/orders%2Fdelays", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.vhost, "orders/delays");
	assert_int_equal(broker_url_parse("amqp://h/plain", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.vhost, "plain");
	assert_int_equal(broker_url_parse("amqp://[::1]:5673/v", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.host, "::1");
	assert_int_equal(u.port, 5673);

	/* Refused, and the messages never repeat a password. */
	assert_int_equal(broker_url_parse("amqp://guest:s3cr3t-pw@h/", &u, err,
	    sizeof(err)), BROKER_ERR);
	assert_non_null(strstr(err, "credentials"));
	assert_null(strstr(err, "s3cr3t-pw"));
	assert_int_equal(broker_url_parse("amqp://h:s3cr3t-pw/", &u, err,
	    sizeof(err)), BROKER_ERR);
	assert_null(strstr(err, "s3cr3t-pw"));
	/* amqps:// is TLS, on 5671 unless the URL says otherwise. */
	assert_int_equal(broker_url_parse("amqps://h/", &u, err, sizeof(err)), 0);
	assert_true(u.tls);
	assert_int_equal(u.port, 5671);
	assert_int_equal(broker_url_parse("amqps://h:5724/v", &u, err,
	    sizeof(err)), 0);
	assert_true(u.tls);
	assert_int_equal(u.port, 5724);
	assert_int_equal(broker_url_parse("amqp://h/", &u, err, sizeof(err)), 0);
	assert_false(u.tls);
	assert_int_equal(broker_url_parse("http://h/", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h:70000/", &u, err,
	    sizeof(err)), BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h:/", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp:///v", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h/a/b", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_non_null(strstr(err, "%2f"));
	assert_int_equal(broker_url_parse("amqp://h/%zz", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h/%00", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h/v?heartbeat=5", &u, err,
	    sizeof(err)), BROKER_ERR);
	/* Where rabbitmq-c's amqp_parse_url reads otherwise (broker_url.c):
	 * no host is not "localhost", port 0 is no port, and a vhost may hold
	 * UTF-8. */
	assert_int_equal(broker_url_parse("amqp://:5672/v", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_non_null(strstr(err, "no host"));
	assert_int_equal(broker_url_parse("amqp://h:0/v", &u, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_url_parse("amqp://h/caf%C3%A9", &u, err,
	    sizeof(err)), 0);
	assert_string_equal(u.vhost, "caf\xc3\xa9");
}

static void
test_env_reference_unset(void **state)
{
	struct broker *b = NULL;
	char err[512] = "", name[64], ref[80];

	(void)state;
	snprintf(name, sizeof(name), "CUTOVER_ITEST_UNSET_%ld", (long)getpid());
	snprintf(ref, sizeof(ref), "env:%s", name);
	unsetenv(name);
	/* Found before any connection is tried: the port is irrelevant. */
	assert_int_equal(broker_open("amqp://127.0.0.1:1/", "guest", ref, 1000,
	    &b, err, sizeof(err)), BROKER_ERR);
	assert_null(b);
	assert_non_null(strstr(err, name));
	assert_non_null(strstr(err, "not set"));

	/* A literal password is refused, and not echoed. */
	assert_int_equal(broker_open("amqp://127.0.0.1:1/", "guest",
	    "Literal-Pw-99", 1000, &b, err, sizeof(err)), BROKER_ERR);
	assert_null(strstr(err, "Literal-Pw-99"));
	assert_non_null(strstr(err, "env:NAME"));
}

static void
test_connection_refused(void **state)
{
	struct broker *b = NULL;
	char err[512] = "", url[64];
	int64_t t0;

	(void)state;
	snprintf(url, sizeof(url), "amqp://127.0.0.1:%d/", itest_free_port());

	setenv("CUTOVER_ITEST_PW", "unused", 1);
	t0 = now_ms();
	assert_int_equal(broker_open(url, "guest", "env:CUTOVER_ITEST_PW",
	    5000, &b, err, sizeof(err)), BROKER_ECONNECT);
	assert_true(now_ms() - t0 < 5000);      /* refused, not timed out */
	assert_null(b);
	assert_non_null(strstr(err, "refused"));
	assert_non_null(strstr(err, "127.0.0.1"));
}

/* ---- against the broker ---- */

/* A cluster's URLs (broker_open_list): a node that refuses is passed over
 * for the next in order; when none answers, each is named. */
static void
test_open_list(void **state)
{
	struct broker *b = NULL;
	char err[1024] = "", dead1[64], dead2[64];
	const char *urls[2];
	int p1 = itest_free_port(), p2 = itest_free_port();

	(void)state;
	need_broker();
	snprintf(dead1, sizeof(dead1), "amqp://127.0.0.1:%d/%%2f", p1);
	snprintf(dead2, sizeof(dead2), "amqp://127.0.0.1:%d/%%2f", p2);
	urls[0] = dead1;
	urls[1] = amqp_url;
	if (broker_open_list(urls, 2, NULL, amqp_user, PWREF, TIMEOUT_MS, &b, err,
	    sizeof(err)) != 0)
		fail_msg("the second node did not answer: %s", err);
	broker_close(b);
	b = NULL;

	urls[1] = dead2;
	assert_int_equal(broker_open_list(urls, 2, NULL, amqp_user, PWREF, TIMEOUT_MS,
	    &b, err, sizeof(err)), BROKER_ECONNECT);
	assert_null(b);
	print_message("no node answers: %s\n", err);
	snprintf(dead1, sizeof(dead1), "127.0.0.1:%d", p1);
	snprintf(dead2, sizeof(dead2), "127.0.0.1:%d", p2);
	assert_non_null(strstr(err, dead1));
	assert_non_null(strstr(err, dead2));
}

static void
test_wrong_password(void **state)
{
	struct broker *b = NULL;
	char err[512] = "";

	(void)state;
	need_broker();
	setenv("CUTOVER_ITEST_BADPW", "Wr0ng-Pa55word-xyz", 1);
	assert_int_equal(broker_open(amqp_url, amqp_user,
	    "env:CUTOVER_ITEST_BADPW", TIMEOUT_MS, &b, err, sizeof(err)),
	    BROKER_EAUTH);
	assert_null(b);
	assert_null(strstr(err, "Wr0ng-Pa55word-xyz"));
	assert_non_null(strstr(err, "refused"));
	assert_non_null(strstr(err, amqp_user));
}

static void
test_declare_idempotent(void **state)
{
	struct ctx *c = *state;
	struct broker_queue_info info;
	struct topology_arg xargs[1], qargs[3];
	const char *x, *alt, *next, *q;
	char err[512] = "";
	int round;

	need_broker();
	x = exchange_name(c, "x");
	alt = exchange_name(c, "alt");
	next = exchange_name(c, "next");
	q = queue_name(c, "q");
	xargs[0] = arg_str("alternate-exchange", alt);
	qargs[0] = arg_str("x-queue-type", "classic");
	qargs[1] = arg_int("x-message-ttl", 60000);
	qargs[2] = arg_str("x-dead-letter-exchange", next);

	for (round = 0; round < 2; round++) {
		if (broker_exchange_declare(c->b, alt, "fanout", true, NULL, 0,
		    err, sizeof(err)) != 0 ||
		    broker_exchange_declare(c->b, x, "topic", true, xargs, 1,
		    err, sizeof(err)) != 0 ||
		    broker_exchange_declare(c->b, next, "topic", true, NULL, 0,
		    err, sizeof(err)) != 0 ||
		    broker_queue_declare(c->b, q, true, qargs, 3, err,
		    sizeof(err)) != 0 ||
		    broker_queue_bind(c->b, q, x, "*.1.#", err,
		    sizeof(err)) != 0 ||
		    broker_exchange_bind(c->b, next, x, "*.0.#", err,
		    sizeof(err)) != 0)
			fail_msg("round %d: %s", round, err);
	}
	assert_int_equal(broker_exchange_exists(c->b, x, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.messages, 0);

	/* Routing through the bindings: bit 1 to the queue, bit 0 onwards. */
	{
		struct broker_message m;

		memset(&m, 0, sizeof(m));
		m.exchange = x;
		m.routing_key = "a.1.dest";
		m.body = "one";
		m.len = 3;
		m.mandatory = true;
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), 0);
		m.routing_key = "a.0.dest";  /* to `next`: no binding there */
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), BROKER_ERETURNED);
	}
	assert_int_equal(depth(c->b, q), 1);

	/* Unbinding twice is fine too. */
	assert_int_equal(broker_queue_unbind(c->b, q, x, "*.1.#", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_unbind(c->b, q, x, "*.1.#", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_unbind(c->b, next, x, "*.0.#", err,
	    sizeof(err)), 0);
}

static void
test_inspect_counts(void **state)
{
	struct ctx *c = *state;
	struct broker_queue_info info;
	struct broker *other = NULL;
	const char *q;
	char err[512] = "sentinel";
	int i;

	need_broker();
	q = queue_name(c, "counts");
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	for (i = 0; i < 5; i++)
		publish_to_queue(c->b, q, "m");
	/* Confirmed means enqueued: the passive declare is exact at once. */
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.messages, 5);
	assert_int_equal(info.consumers, 0);

	assert_int_equal(broker_open(amqp_url, amqp_user, PWREF, TIMEOUT_MS,
	    &other, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(other, q, 1, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.consumers, 1);
	broker_close(other);

	/* Not found is an answer, not an error; the handle goes on. */
	snprintf(err, sizeof(err), "sentinel");
	assert_int_equal(broker_queue_inspect(c->b, "itest.amqp.no-such-queue",
	    &info, err, sizeof(err)), BROKER_NOT_FOUND);
	assert_string_equal(err, "sentinel");
	assert_int_equal(broker_exchange_exists(c->b,
	    "itest.amqp.no-such-exchange", err, sizeof(err)), BROKER_NOT_FOUND);
	assert_string_equal(err, "sentinel");
	assert_int_equal(broker_exchange_exists(c->b, "amq.topic", err,
	    sizeof(err)), 0);
	assert_int_equal(depth(c->b, q), 5);
}

static void
test_conflicting_redeclare(void **state)
{
	struct ctx *c = *state;
	struct topology_arg ttl1, ttl2, quorum;
	const char *q, *x;
	char err[512] = "", want[512], want4[512];

	need_broker();
	q = queue_name(c, "conflict");
	x = exchange_name(c, "conflict-x");
	ttl1 = arg_int("x-message-ttl", 1000);
	ttl2 = arg_int("x-message-ttl", 2000);
	quorum = arg_str("x-queue-type", "quorum");

	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl1, 1, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl2, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	snprintf(want, sizeof(want), "queue '%s' exists with x-message-ttl = "
	    "1000, the plan wants 2000: it cannot be redeclared; delete it or "
	    "change the plan", q);
	assert_string_equal(err, want);
	assert_int_equal(broker_reply_code(c->b), 406);

	/* The broker closed the channel; the next call gets a fresh one. */
	assert_int_equal(depth(c->b, q), 0);
	assert_int_equal(broker_reply_code(c->b), 0);

	/* A classic queue where quorum is planned; an argument dropped. */
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	assert_non_null(strstr(err, "the plan has no x-message-ttl"));
	assert_int_equal(broker_queue_delete(c->b, q, 0, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, &quorum, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	/* RabbitMQ 3.10 records no type for a classic queue declared without
	 * one; 4.0 records x-queue-type = classic (docs/BROKERS.md). */
	snprintf(want, sizeof(want), "queue '%s' exists without x-queue-type, "
	    "the plan wants x-queue-type = quorum", q);
	snprintf(want4, sizeof(want4), "queue '%s' exists with x-queue-type = "
	    "classic, the plan wants quorum", q);
	if (strstr(err, want) == NULL && strstr(err, want4) == NULL)
		fail_msg("unexpected refusal: %s", err);

	/* Exchanges: another type. */
	assert_int_equal(broker_exchange_declare(c->b, x, "topic", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(c->b, x, "fanout", true, NULL,
	    0, err, sizeof(err)), BROKER_EPRECONDITION);
	snprintf(want, sizeof(want), "exchange '%s' exists with type = topic, "
	    "the plan wants fanout", x);
	assert_non_null(strstr(err, want));
	assert_int_equal(broker_exchange_exists(c->b, x, err, sizeof(err)), 0);
}

static void
test_big_ttl(void **state)
{
	struct ctx *c = *state;
	struct topology_arg a[5];
	const char *q, *x;
	char err[512] = "";

	need_broker();
	/* A level queue as the ladder declares it. A 28-level ladder at 1 s
	 * reaches 2^27 s: TTLs far beyond 2^32 ms. */
	q = queue_name(c, "bigttl");
	x = exchange_name(c, "bigttl-next");
	a[0] = arg_str("x-queue-type", "quorum");
	a[1] = arg_int("x-message-ttl", (int64_t)1 << 37);
	a[2] = arg_str("x-dead-letter-exchange", x);
	a[3] = arg_str("x-dead-letter-strategy", "at-least-once");
	a[4] = arg_str("x-overflow", "reject-publish");
	assert_int_equal(broker_exchange_declare(c->b, x, "topic", true, NULL,
	    0, err, sizeof(err)), 0);
	if (broker_queue_declare(c->b, q, true, a, 5, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(broker_queue_declare(c->b, q, true, a, 5, err,
	    sizeof(err)), 0);
	publish_to_queue(c->b, q, "held");
	assert_int_equal(depth(c->b, q), 1);
}

static void
test_publish_outcomes(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	const char *x, *bound, *q;
	char err[512] = "", missing[128];

	need_broker();
	bound = exchange_name(c, "pub-bound");
	x = exchange_name(c, "pub-unbound");
	q = queue_name(c, "pub-q");
	assert_int_equal(broker_exchange_declare(c->b, bound, "direct", true,
	    NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(c->b, x, "direct", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(c->b, q, bound, "k", err,
	    sizeof(err)), 0);

	memset(&m, 0, sizeof(m));
	m.exchange = bound;
	m.routing_key = "k";
	m.body = "payload";
	m.len = 7;
	m.mandatory = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	assert_int_equal(depth(c->b, q), 1);

	/* Mandatory and nothing bound: basic.return, then basic.ack. */
	m.exchange = x;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_ERETURNED);
	assert_non_null(strstr(err, "returned: no route"));
	assert_non_null(strstr(err, x));
	/* Not mandatory: the broker drops it and confirms. */
	m.mandatory = false;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	/* No such exchange: the broker closes the channel. */
	snprintf(missing, sizeof(missing), "itest.amqp.%ld.missing",
	    (long)getpid());
	m.exchange = missing;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_EREFUSED);
	assert_non_null(strstr(err, "no exchange"));
	assert_non_null(strstr(err, missing));
	assert_int_equal(broker_reply_code(c->b), 404);

	/* ...and the handle recovers. */
	m.exchange = bound;
	m.mandatory = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	assert_int_equal(depth(c->b, q), 2);
}

static void
test_publish_batch(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	const char *x, *q;
	char err[512] = "", body[32];
	int results[40];
	size_t n = 0;
	int i;

	need_broker();
	x = exchange_name(c, "batch-x");
	q = queue_name(c, "batch-q");
	assert_int_equal(broker_exchange_declare(c->b, x, "direct", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(c->b, q, x, "in", err, sizeof(err)),
	    0);

	/* 40 messages, every 7th unroutable: the verdicts must line up. */
	for (i = 0; i < 40; i++) {
		memset(&m, 0, sizeof(m));
		m.exchange = x;
		m.routing_key = i % 7 == 3 ? "nowhere" : "in";
		snprintf(body, sizeof(body), "message %d", i);
		m.body = body;
		m.len = strlen(body);
		m.mandatory = true;
		if (broker_publish_async(c->b, &m, err, sizeof(err)) != 0)
			fail_msg("publish %d: %s", i, err);
	}
	/* broker_publish refuses while these wait. */
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, results, 40, &n,
	    err, sizeof(err)), BROKER_ERETURNED);
	assert_int_equal(n, 40);
	for (i = 0; i < 40; i++)
		assert_int_equal(results[i], i % 7 == 3 ? BROKER_ERETURNED : 0);
	assert_non_null(strstr(err, "6 of 40 messages were not confirmed"));
	assert_int_equal(depth(c->b, q), 34);

	/* A second batch on the same channel: tags keep counting. */
	for (i = 0; i < 5; i++) {
		m.routing_key = "in";
		assert_int_equal(broker_publish_async(c->b, &m, err,
		    sizeof(err)), 0);
	}
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, results, 40, &n,
	    err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, NULL, 0, &n,
	    err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(depth(c->b, q), 39);
}

static void
test_delete_conditions(void **state)
{
	struct ctx *c = *state;
	struct topology_arg quorum;
	const char *qq, *cq;
	char err[512] = "";
	uint32_t purged = 99;

	need_broker();
	qq = queue_name(c, "quorum");
	cq = queue_name(c, "classic");
	quorum = arg_str("x-queue-type", "quorum");
	assert_int_equal(broker_queue_declare(c->b, qq, true, &quorum, 1, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, cq, true, NULL, 0, err,
	    sizeof(err)), 0);
	publish_to_queue(c->b, cq, "keep me");

	/* Classic: 406, the channel closes, the queue stays. */
	assert_int_equal(broker_queue_delete(c->b, cq, BROKER_IF_EMPTY, &purged,
	    err, sizeof(err)), BROKER_EPRECONDITION);
	assert_non_null(strstr(err, "not empty"));
	assert_int_equal(depth(c->b, cq), 1);

	/* Quorum: 540, and the broker closes the whole connection. */
	assert_int_equal(broker_queue_delete(c->b, qq, BROKER_IF_EMPTY, &purged,
	    err, sizeof(err)), BROKER_EREFUSED);
	assert_non_null(strstr(err, "quorum queues do not support "
	    "if-empty/if-unused delete"));
	assert_int_equal(broker_reply_code(c->b), 540);
	assert_int_equal(broker_queue_delete(c->b, qq, BROKER_IF_UNUSED,
	    &purged, err, sizeof(err)), BROKER_EREFUSED);
	assert_int_equal(broker_reply_code(c->b), 540);

	/* The next calls reconnect and work. */
	assert_int_equal(depth(c->b, qq), 0);
	publish_to_queue(c->b, qq, "one");
	assert_int_equal(broker_queue_delete(c->b, qq, 0, &purged, err,
	    sizeof(err)), 0);
	assert_int_equal(purged, 1);
	assert_int_equal(broker_queue_inspect(c->b, qq, NULL, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	/* Deleting what is not there succeeds. */
	assert_int_equal(broker_queue_delete(c->b, qq, 0, NULL, err,
	    sizeof(err)), 0);
}

static void
test_get(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	struct broker_delivery d;
	struct broker_field h[2];
	const struct broker_header *hv;
	const char *q;
	char err[512] = "";

	need_broker();
	q = queue_name(c, "get");
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)),
	    BROKER_EMPTY);

	memset(h, 0, sizeof(h));
	h[0].key = "x-cutover-batch";
	h[0].str = "canary-7";
	h[1].key = "x-cutover-not-before";
	h[1].is_int = true;
	h[1].num = 1700000000123LL;
	memset(&m, 0, sizeof(m));
	m.routing_key = q;
	m.body = "hello get";
	m.len = 9;
	m.headers = h;
	m.nheaders = 2;
	m.message_id = "msg-1";
	m.content_type = "text/plain";
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	m.body = "second";
	m.len = 6;
	m.message_id = "msg-2";
	m.transient = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)), 0);
	assert_int_equal(d.len, 9);
	assert_string_equal(d.body, "hello get");
	assert_string_equal(d.exchange, "");
	assert_string_equal(d.routing_key, q);
	assert_string_equal(d.message_id, "msg-1");
	assert_string_equal(d.content_type, "text/plain");
	assert_int_equal(d.delivery_mode, 2);
	assert_int_equal(d.remaining, 1);
	assert_false(d.redelivered);
	hv = broker_header_find(&d, "x-cutover-batch");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_STR);
	assert_string_equal(hv->str, "canary-7");
	hv = broker_header_find(&d, "x-cutover-not-before");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_INT);
	assert_true(hv->num == 1700000000123LL);
	assert_null(broker_header_find(&d, "x-death"));
	assert_int_equal(d.ndeaths, 0);
	/* Acknowledged already: nothing left to settle. */
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), BROKER_ERR);
	broker_delivery_free(&d);

	/* Manual: reject it back, get it again redelivered, then ack. */
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_string_equal(d.message_id, "msg-2");
	assert_int_equal(d.delivery_mode, 1);
	assert_int_equal(broker_reject(c->b, &d, true, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_string_equal(d.body, "second");
	assert_true(d.redelivered);
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)),
	    BROKER_EMPTY);
	assert_int_equal(depth(c->b, q), 0);

	/* A body of many frames (frame_max is 128 KiB). */
	{
		size_t i, big = 300000;
		char *body = malloc(big);

		assert_non_null(body);
		for (i = 0; i < big; i++)
			body[i] = (char)('a' + i % 26);
		memset(&m, 0, sizeof(m));
		m.routing_key = q;
		m.body = body;
		m.len = big;
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), 0);
		assert_int_equal(broker_get(c->b, q, false, &d, err,
		    sizeof(err)), 0);
		assert_int_equal(d.len, big);
		assert_memory_equal(d.body, body, big);
		assert_null(d.message_id);
		assert_null(d.content_type);
		assert_int_equal(d.nheaders, 0);
		broker_delivery_free(&d);
		free(body);
	}

	/* An unacknowledged message whose channel closed cannot be acked. */
	publish_to_queue(c->b, q, "third");
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, NULL, err, sizeof(err)),
	    0);
	{
		struct topology_arg ttl = arg_int("x-message-ttl", 5);

		assert_int_equal(broker_queue_declare(c->b, q, true, &ttl, 1,
		    err, sizeof(err)), BROKER_EPRECONDITION);
	}
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), BROKER_ELOST);
	assert_non_null(strstr(err, "deliver it again"));
	broker_delivery_free(&d);
	assert_int_equal(depth(c->b, q), 1);
}

static void
test_consume_x_death(void **state)
{
	struct ctx *c = *state;
	struct broker_delivery d;
	struct broker_message m;
	struct topology_arg a1[3], a2[5];
	const struct broker_header *hv;
	const char *first, *second, *final, *dx1, *dx2;
	char err[512] = "";
	int64_t t0;

	need_broker();
	first = queue_name(c, "wait-a");
	second = queue_name(c, "wait-b");
	final = queue_name(c, "final");
	dx1 = exchange_name(c, "dlx-1");
	dx2 = exchange_name(c, "dlx-2");

	/* first (classic, 100 ms) -> dx1 -> second (quorum, at-least-once
	 * dead-lettering, 100 ms) -> dx2 -> final */
	a1[0] = arg_str("x-queue-type", "classic");
	a1[1] = arg_int("x-message-ttl", 100);
	a1[2] = arg_str("x-dead-letter-exchange", dx1);
	a2[0] = arg_str("x-queue-type", "quorum");
	a2[1] = arg_int("x-message-ttl", 100);
	a2[2] = arg_str("x-dead-letter-exchange", dx2);
	a2[3] = arg_str("x-dead-letter-strategy", "at-least-once");
	a2[4] = arg_str("x-overflow", "reject-publish");
	if (broker_exchange_declare(c->b, dx1, "fanout", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_exchange_declare(c->b, dx2, "fanout", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, first, true, a1, 3, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, second, true, a2, 5, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, final, true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_queue_bind(c->b, second, dx1, "", err, sizeof(err)) != 0 ||
	    broker_queue_bind(c->b, final, dx2, "", err, sizeof(err)) != 0)
		fail_msg("%s", err);

	assert_int_equal(broker_consume(c->b, final, 10, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(c->b, final, 10, err, sizeof(err)),
	    BROKER_ERR);

	memset(&m, 0, sizeof(m));
	m.routing_key = first;
	m.body = "through two queues";
	m.len = strlen(m.body);
	m.message_id = "xd-1";
	t0 = now_ms();
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	if (broker_next(c->b, 5000, &d, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(now_ms() - t0 >= 200);      /* never early */
	assert_string_equal(d.body, "through two queues");
	assert_string_equal(d.message_id, "xd-1");
	assert_string_equal(d.exchange, dx2);
	assert_string_equal(d.routing_key, first);
	assert_int_equal(d.ndeaths, 2);
	/* Most recent first. */
	assert_string_equal(d.deaths[0].queue, second);
	assert_string_equal(d.deaths[0].reason, "expired");
	assert_string_equal(d.deaths[0].exchange, dx1);
	assert_int_equal(d.deaths[0].count, 1);
	assert_string_equal(d.deaths[1].queue, first);
	assert_string_equal(d.deaths[1].reason, "expired");
	assert_string_equal(d.deaths[1].exchange, "");
	assert_int_equal(d.deaths[1].count, 1);
	assert_int_equal(d.deaths[1].nrouting_keys, 1);
	assert_string_equal(d.deaths[1].routing_keys[0], first);
	hv = broker_header_find(&d, "x-death");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_OTHER);
	hv = broker_header_find(&d, "x-first-death-queue");
	assert_non_null(hv);
	assert_string_equal(hv->str, first);
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);

	/* Nothing more: a timeout, quickly. */
	t0 = now_ms();
	assert_int_equal(broker_next(c->b, 300, &d, err, sizeof(err)),
	    BROKER_ETIMEOUT);
	assert_true(now_ms() - t0 < 10000);     /* a ceiling: it does not hang */
	assert_int_equal(depth(c->b, final), 0);
}

static void
test_consumer_survives_channel_error(void **state)
{
	struct ctx *c = *state;
	struct broker_delivery d;
	struct topology_arg ttl;
	const char *q;
	char err[512] = "";

	need_broker();
	q = queue_name(c, "resubscribe");
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_consume(c->b, q, 5, err, sizeof(err)), 0);
	publish_to_queue(c->b, q, "before");
	assert_int_equal(broker_next(c->b, TIMEOUT_MS, &d, err, sizeof(err)),
	    0);
	assert_string_equal(d.body, "before");
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);

	/* A refused declare closes the channel under the consumer... */
	ttl = arg_int("x-message-ttl", 1);
	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	/* ...and the next call resubscribes it. */
	publish_to_queue(c->b, q, "after");
	assert_int_equal(broker_next(c->b, TIMEOUT_MS, &d, err, sizeof(err)),
	    0);
	assert_string_equal(d.body, "after");
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);

	/* Deleting the queue cancels the consumer: broker_next says so. */
	assert_int_equal(broker_queue_delete(c->b, q, 0, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_next(c->b, 2000, &d, err, sizeof(err)),
	    BROKER_EREFUSED);
	assert_non_null(strstr(err, "cancelled"));
	assert_int_equal(broker_next(c->b, 100, &d, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_cancel(c->b, err, sizeof(err)), 0);
}

/* ---- connection closed by the broker (management API) ---- */

static size_t
curl_sink(char *p, size_t size, size_t n, void *arg)
{
	struct { char *buf; size_t len; } *b = arg;
	char *nb = realloc(b->buf, b->len + size * n + 1);

	if (nb == NULL)
		return 0;
	memcpy(nb + b->len, p, size * n);
	b->len += size * n;
	nb[b->len] = '\0';
	b->buf = nb;
	return size * n;
}

/* The broker end (port) of the last connection closed below. */
static json_int_t closed_port;

/* Waits until a socket of this process connected to the broker's PORT is
 * readable (the broker's connection.close, or its end of the stream),
 * up to TIMEOUT_MS. Returns 1 if one was. */
static int
wait_told_closed(json_int_t port, int timeout_ms)
{
	for (int64_t until = now_ms() + timeout_ms; now_ms() < until; sleep_ms(10)) {
		for (int fd = 0; fd < 1024; fd++) {
			struct sockaddr_in remote;
			socklen_t rl = sizeof(remote);
			struct pollfd pfd = { fd, POLLIN, 0 };
			struct stat st;

			if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
			    getpeername(fd, (struct sockaddr *)&remote, &rl) != 0 ||
			    remote.sin_family != AF_INET || ntohs(remote.sin_port) != port)
				continue;
			if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLIN | POLLHUP)))
				return 1;
		}
	}
	return 0;
}

/* Is the broker connection whose client end is PEER_PORT and whose broker
 * end is PORT one of this process's own? (A TCP socket of ours with that
 * local port, connected to that port.) Other processes' connections to the
 * same broker, other helpers' and engines', are never touched. */
static int
own_connection(json_int_t peer_port, json_int_t port)
{
	for (int fd = 0; fd < 1024; fd++) {
		struct sockaddr_in local, remote;
		socklen_t ll = sizeof(local), rl = sizeof(remote);
		struct stat st;

		if (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
		    getsockname(fd, (struct sockaddr *)&local, &ll) != 0 ||
		    getpeername(fd, (struct sockaddr *)&remote, &rl) != 0 ||
		    local.sin_family != AF_INET || remote.sin_family != AF_INET)
			continue;
		if (ntohs(local.sin_port) == peer_port && ntohs(remote.sin_port) == port)
			return 1;
	}
	return 0;
}

/* Closes, through the management API, this process's own connections
 * named "cutover" (the connection_name broker_open gives). Waits up to
 * 40 s for one to be listed. Returns how many it closed. */
static int
mgmt_close_cutover_connections(void)
{
	struct { char *buf; size_t len; } body = { NULL, 0 };
	char url[512], userpwd[256];
	json_t *root = NULL, *conn;
	size_t i;
	int closed = 0, tries;

	snprintf(userpwd, sizeof(userpwd), "%s:%s", amqp_user, getenv(
	    "CUTOVER_TEST_PASSWORD") ? getenv("CUTOVER_TEST_PASSWORD") : "");
	/* The management API lists a new connection only after its statistics
	 * catch up (5-10 s, more on a loaded machine): wait up to 40 s. */
	for (tries = 0; tries < 400 && closed == 0; tries++) {
		CURL *h = curl_easy_init();

		if (h == NULL)
			break;
		free(body.buf);
		body.buf = NULL;
		body.len = 0;
		snprintf(url, sizeof(url), "%s/api/connections?columns=name,"
		    "client_properties,peer_port,port", mgmt_url);
		curl_easy_setopt(h, CURLOPT_URL, url);
		curl_easy_setopt(h, CURLOPT_USERPWD, userpwd);
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 5000L);
		curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, curl_sink);
		curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
		if (curl_easy_perform(h) == CURLE_OK && body.buf != NULL &&
		    (root = json_loads(body.buf, 0, NULL)) != NULL) {
			json_array_foreach(root, i, conn) {
				json_t *props = json_object_get(conn,
				    "client_properties");
				const char *name, *cn;
				char *esc;

				name = json_string_value(json_object_get(conn,
				    "name"));
				cn = json_string_value(json_object_get(props,
				    "connection_name"));
				if (name == NULL || cn == NULL ||
				    strcmp(cn, "cutover") != 0 || !own_connection(
				    json_integer_value(json_object_get(conn, "peer_port")),
				    json_integer_value(json_object_get(conn, "port"))))
					continue;
				esc = curl_easy_escape(h, name, 0);
				snprintf(url, sizeof(url),
				    "%s/api/connections/%s", mgmt_url, esc);
				curl_free(esc);
				curl_easy_setopt(h, CURLOPT_URL, url);
				curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST,
				    "DELETE");
				if (curl_easy_perform(h) == CURLE_OK) {
					closed_port = json_integer_value(
					    json_object_get(conn, "port"));
					closed++;
				}
			}
			json_decref(root);
		}
		curl_easy_cleanup(h);
		if (closed == 0)
			sleep_ms(100);
	}
	free(body.buf);
	return closed;
}

static void *
close_later(void *arg)
{
	int *closed = arg;

	sleep_ms(300);
	*closed = mgmt_close_cutover_connections();
	return NULL;
}

static void
test_connection_forced(void **state)
{
	struct ctx *c = *state;
	struct broker_delivery d;
	pthread_t t;
	const char *q;
	char err[512] = "";
	int closed = 0;

	need_broker();
	if (mgmt_url == NULL)
		fail_msg("set CUTOVER_TEST_MGMT (scripts/test does)");
	q = queue_name(c, "forced");
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_consume(c->b, q, 5, err, sizeof(err)), 0);

	/* Closed while the call waits: that call reports it... */
	assert_int_equal(pthread_create(&t, NULL, close_later, &closed), 0);
	assert_int_equal(broker_next(c->b, 60000, &d, err, sizeof(err)),
	    BROKER_ELOST);
	pthread_join(t, NULL);
	assert_true(closed >= 1);
	assert_non_null(strstr(err, "CONNECTION_FORCED"));
	assert_int_equal(broker_reply_code(c->b), 320);

	/* ...the next reconnects, resubscribes and works. */
	publish_to_queue(c->b, q, "after reconnect");
	assert_int_equal(broker_next(c->b, TIMEOUT_MS, &d, err, sizeof(err)),
	    0);
	assert_string_equal(d.body, "after reconnect");
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);

	/* Closed between calls: the next call reconnects without a word. */
	assert_true(mgmt_close_cutover_connections() >= 1);
	assert_true(wait_told_closed(closed_port, 10000));
	assert_int_equal(broker_queue_inspect(c->b, q, NULL, err, sizeof(err)),
	    0);
	assert_int_equal(broker_reply_code(c->b), 0);
}

/* A test with a broker handle of its own, and the objects it names
 * deleted afterwards. */
#define WITH_BROKER(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_parse),
		cmocka_unit_test(test_env_reference_unset),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_open_list),
		cmocka_unit_test(test_wrong_password),
		WITH_BROKER(test_declare_idempotent),
		WITH_BROKER(test_inspect_counts),
		WITH_BROKER(test_conflicting_redeclare),
		WITH_BROKER(test_big_ttl),
		WITH_BROKER(test_publish_outcomes),
		WITH_BROKER(test_publish_batch),
		WITH_BROKER(test_delete_conditions),
		WITH_BROKER(test_get),
		WITH_BROKER(test_consume_x_death),
		WITH_BROKER(test_consumer_survives_channel_error),
		WITH_BROKER(test_connection_forced),
	};
	int rc;

	amqp_url = getenv("CUTOVER_TEST_AMQP");
	amqp_user = getenv("CUTOVER_TEST_USER");
	if (amqp_url != NULL && amqp_url[0] == '\0')
		amqp_url = NULL;
	if (amqp_user == NULL || amqp_user[0] == '\0')
		amqp_user = "guest";
	mgmt_url = getenv("CUTOVER_TEST_MGMT");
	if (mgmt_url != NULL && mgmt_url[0] == '\0')
		mgmt_url = NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
