/* test_reconnect: cutover's AMQP connection and management client go back
 * to the first node of a cluster once it answers again, at a point where
 * nothing is in flight, against a real 3-node RabbitMQ cluster the test
 * starts and stops itself (scripts/broker cluster, nodes A, B, C on P,
 * P+1, P+2).
 *
 * Both clients list A, B, C. A is killed (SIGKILL, its Erlang VM): they
 * move to B. A is started again. While a message received is not yet
 * acknowledged, a publish awaits its confirm or a consumer runs, the AMQP
 * connection stays on B past the return interval (each acknowledgement
 * succeeds, which it could not on another channel); the first call with
 * nothing in flight moves it back to A, which the log and A's connection
 * in /api/connections show. Every message published with a confirm across
 * the kill and the return is received exactly once. The management client
 * is answered by A again (/api/overview names the node that answers).
 *
 * P: CUTOVER_TEST_RECONNECT_PORT, else CUTOVER_TEST_CLUSTER_PORT + 3 (the
 * port after e2e.cluster@4.0's three); nothing may answer on P, P+1 or P+2.
 * Needs CUTOVER_SOURCE_DIR (scripts/broker) and CUTOVER_TEST_USER with the
 * password in CUTOVER_TEST_PASSWORD. */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "clock.h"
#include "itest_run.h"
#include "mgmt_test.h"

#define PWREF "env:CUTOVER_TEST_PASSWORD"
#define TIMEOUT_MS 5000
#define RETURN_MS 3000          /* the return interval under test */
#define NMSG 4

static const char *src;
static const char *user;
static int port;                /* A's; B and C follow */
static char urls[3][64], murls[3][64], nodes[3][64];
static int cluster_started;

/* Runs "scripts/broker ARGS" and returns its exit status. */
static int broker_script(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
broker_script(const char *fmt, ...)
{
	char args[256], cmd[1024];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s/scripts/broker' %s >&2", src, args);
	rc = system(cmd);
	return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static void
stop_cluster(void *arg)
{
	(void)arg;
	if (!cluster_started)
		return;
	(void)broker_script("cluster stop --port %d", port);
	cluster_started = 0;
}

/* Whether something accepts connections on 127.0.0.1:P. */
static bool
answers(int p)
{
	int fd = itest_connect(p, 0);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* The pid of A's Erlang VM. */
static pid_t
pid_of_a(void)
{
	char cmd[512], line[32] = "";
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s/scripts/broker' pid --port %d", src, port);
	assert_non_null(f = popen(cmd, "r"));
	if (fgets(line, sizeof(line), f) == NULL)
		line[0] = '\0';
	assert_int_equal(pclose(f), 0);
	return (pid_t)atol(line);
}

/* Which node (0, 1, 2) cutover's one AMQP connection (named "cutover") is
 * on, asked through OBSERVER; -1 while there is not exactly one. */
static int
connection_node(struct mgmt *observer)
{
	json_t *list = NULL, *c;
	char err[512];
	size_t i;
	int n = 0, at = -1;

	if (mgmt_request(observer, "GET", "/api/connections?columns=node,"
	    "client_properties", NULL, &list, NULL, err, sizeof(err)) != 0) {
		print_message("listing connections: %s\n", err);
		return -1;
	}
	json_array_foreach(list, i, c) {
		const char *name = json_string_value(json_object_get(json_object_get(c,
		    "client_properties"), "connection_name"));
		const char *node = json_string_value(json_object_get(c, "node"));

		if (name == NULL || strcmp(name, "cutover") != 0 || node == NULL)
			continue;
		n++;
		for (int k = 0; k < 3; k++)
			if (strcmp(node, nodes[k]) == 0)
				at = k;
	}
	json_decref(list);
	return n == 1 ? at : -1;
}

/* Waits (up to 30 s: the listing lags) until cutover's one connection is
 * on node WANT. */
static void
expect_connection_on(struct mgmt *observer, int want)
{
	int64_t until = clock_mono_ms() + 30000;
	int at;

	while ((at = connection_node(observer)) != want) {
		if (clock_mono_ms() > until)
			fail_msg("cutover's connection is on %s, expected %s",
			    at < 0 ? "no single node" : nodes[at], nodes[want]);
		itest_sleep_ms(500);
	}
}

/* The node the management client M is answered by. */
static void
expect_mgmt_on(struct mgmt *m, int want)
{
	struct mgmt_overview ov;
	char err[1024];

	if (mgmt_overview(m, &ov, err, sizeof(err)) != 0)
		fail_msg("GET /api/overview: %s", err);
	assert_string_equal(ov.node, nodes[want]);
}

/* Stderr into a file while a call runs, to read the line it logged. */
struct capture {
	char path[64];
	int saved;
};

static void
capture_begin(struct capture *cp)
{
	int fd;

	snprintf(cp->path, sizeof(cp->path), "/tmp/itest-reconnect-%ld.log",
	    (long)getpid());
	fflush(stderr);
	assert_true((cp->saved = dup(2)) >= 0);
	assert_true((fd = open(cp->path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) >= 0);
	dup2(fd, 2);
	close(fd);
}

/* Restores stderr and fails unless what was logged holds WANT. */
static void
capture_expect(struct capture *cp, const char *want)
{
	char buf[4096] = "";
	FILE *f;
	size_t n;

	fflush(stderr);
	dup2(cp->saved, 2);
	close(cp->saved);
	assert_non_null(f = fopen(cp->path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	unlink(cp->path);
	fputs(buf, stderr);
	if (strstr(buf, want) == NULL)
		fail_msg("expected the log to say \"%s\"", want);
}

static void
publish_async(struct broker *b, const char *queue, const char *id)
{
	struct broker_message m = { .routing_key = queue, .body = id,
	    .len = strlen(id), .message_id = id };
	char err[512];

	if (broker_publish_async(b, &m, err, sizeof(err)) != 0)
		fail_msg("publishing %s: %s", id, err);
}

static void
wait_confirms(struct broker *b, size_t want)
{
	size_t n = 0;
	char err[512];

	if (broker_wait_confirms(b, 15000, NULL, 0, &n, err, sizeof(err)) != 0)
		fail_msg("confirms: %s", err);
	assert_int_equal(n, want);
}

/* Counts message ID in SEEN (the ids m0 .. m<NMSG-1>). */
static void
seen_one(int *seen, const struct broker_delivery *d)
{
	int k;

	assert_non_null(d->message_id);
	assert_int_equal(sscanf(d->message_id, "m%d", &k), 1);
	assert_true(k >= 0 && k < NMSG);
	seen[k]++;
}

static void
ack(struct broker *b, struct broker_delivery *d, int *seen)
{
	char err[512];

	seen_one(seen, d);
	/* On another channel (a move) this would be BROKER_ELOST. */
	if (broker_ack(b, d, err, sizeof(err)) != 0)
		fail_msg("acknowledging %s: %s", d->message_id, err);
	broker_delivery_free(d);
}

static void
test_return_to_first(void **state)
{
	struct topology_arg quorum = { .key = "x-queue-type", .str = "quorum" };
	struct broker *b = NULL;
	struct mgmt *m = NULL, *observer = NULL;
	struct broker_delivery d;
	struct capture cp;
	const char *ul[3] = { urls[0], urls[1], urls[2] };
	const char *ml[3] = { murls[0], murls[1], murls[2] };
	char err[1024], queue[64];
	int seen[NMSG] = { 0 }, rc;
	int64_t t;
	pid_t pid;

	(void)state;
	for (int k = 0; k < 3; k++)
		if (answers(port + k) || answers(port + k + 10000))
			fail_msg("something answers on port %d or %d; pick another "
			    "CUTOVER_TEST_RECONNECT_PORT", port + k, port + k + 10000);
	itest_on_cleanup(stop_cluster, NULL);
	cluster_started = 1;
	t = clock_mono_ms();
	if (broker_script("cluster start --port %d", port) != 0)
		fail_msg("the cluster did not start");
	print_message("cluster: three nodes after %lld s\n",
	    (long long)((clock_mono_ms() - t) / 1000));

	if (broker_open_list(ul, 3, NULL, user, PWREF, TIMEOUT_MS, &b, err,
	    sizeof(err)) != 0)
		fail_msg("connecting: %s", err);
	broker_set_return_after(b, RETURN_MS);
	if (mgmt_open_list(ml, 3, NULL, "/", user, PWREF, TIMEOUT_MS, &m, err,
	    sizeof(err)) != 0 ||
	    mgmt_open(murls[1], "/", user, PWREF, TIMEOUT_MS, &observer, err,
	    sizeof(err)) != 0)
		fail_msg("opening the management API: %s", err);
	mgmt_set_return_after(m, RETURN_MS);
	snprintf(queue, sizeof(queue), "itest.reconnect.%ld", (long)getpid());
	/* Quorum: its members on all three nodes, it outlives A. */
	if (broker_queue_declare(b, queue, true, &quorum, 1, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", queue, err);
	expect_connection_on(observer, 0);
	expect_mgmt_on(m, 0);

	/* A dies: both clients move to B. */
	pid = pid_of_a();
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	print_message("killed %s (pid %ld)\n", nodes[0], (long)pid);
	t = clock_mono_ms() + 30000;
	while ((rc = broker_queue_inspect(b, queue, NULL, err, sizeof(err))) != 0) {
		if (clock_mono_ms() > t)
			fail_msg("no node took over: %s", err);
		itest_sleep_ms(500);
	}
	expect_connection_on(observer, 1);
	expect_mgmt_on(m, 1);

	/* m0 crosses the kill's aftermath and stays unacknowledged. */
	publish_async(b, queue, "m0");
	wait_confirms(b, 1);
	memset(&d, 0, sizeof(d));
	if (broker_get(b, queue, true, &d, err, sizeof(err)) != 0)
		fail_msg("getting m0: %s", err);

	/* A comes back, and the interval passes meanwhile. */
	if (broker_script("start --port %d", port) != 0)
		fail_msg("%s did not start again", nodes[0]);
	t = clock_mono_ms() + 120000;
	while (broker_script("cluster status --port %d", port) != 0) {
		if (clock_mono_ms() > t)
			fail_msg("the cluster did not get three running nodes back");
		itest_sleep_ms(1000);
	}
	itest_sleep_ms(RETURN_MS + 500);

	/* m0 unacknowledged: m1 goes out on B. */
	publish_async(b, queue, "m1");
	ack(b, &d, seen);
	/* m1 awaiting its confirm: the consumer starts on B. */
	if (broker_consume(b, queue, 10, err, sizeof(err)) != 0)
		fail_msg("consuming: %s", err);
	wait_confirms(b, 1);
	if (broker_next(b, 15000, &d, err, sizeof(err)) != 0)
		fail_msg("receiving m1: %s", err);
	ack(b, &d, seen);
	/* The consumer running: m2 goes out on B past the interval too. */
	itest_sleep_ms(RETURN_MS + 500);
	publish_async(b, queue, "m2");
	wait_confirms(b, 1);
	if (broker_next(b, 15000, &d, err, sizeof(err)) != 0)
		fail_msg("receiving m2: %s", err);
	ack(b, &d, seen);
	if (broker_cancel(b, err, sizeof(err)) != 0)
		fail_msg("cancelling: %s", err);
	expect_connection_on(observer, 1);

	/* Nothing in flight: the next call goes back to A first. */
	capture_begin(&cp);
	publish_async(b, queue, "m3");
	capture_expect(&cp, "answers again; back to it from");
	wait_confirms(b, 1);
	expect_connection_on(observer, 0);
	capture_begin(&cp);
	expect_mgmt_on(m, 0);
	capture_expect(&cp, "management: http://127.0.0.1");

	/* Each message once: m3 is the one left. */
	while ((rc = broker_get(b, queue, false, &d, err, sizeof(err))) == 0) {
		seen_one(seen, &d);
		broker_delivery_free(&d);
	}
	assert_int_equal(rc, BROKER_EMPTY);
	for (int k = 0; k < NMSG; k++)
		if (seen[k] != 1)
			fail_msg("m%d was received %d times", k, seen[k]);
	(void)broker_queue_delete(b, queue, 0, NULL, err, sizeof(err));
	broker_close(b);
	mgmt_close(m);
	mgmt_close(observer);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_return_to_first, itest_cleanup_teardown),
	};
	const char *p = getenv("CUTOVER_TEST_RECONNECT_PORT");
	const char *cp = getenv("CUTOVER_TEST_CLUSTER_PORT");

	src = getenv("CUTOVER_SOURCE_DIR");
	user = getenv("CUTOVER_TEST_USER");
	if (p != NULL)
		port = atoi(p);
	else if (cp != NULL)
		port = atoi(cp) + 3;
	if (src == NULL || user == NULL || getenv("CUTOVER_TEST_PASSWORD") == NULL ||
	    port <= 0 || port > 65535 - 20002) {
		fprintf(stderr, "test_reconnect: needs CUTOVER_SOURCE_DIR, "
		    "CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD and "
		    "CUTOVER_TEST_RECONNECT_PORT or CUTOVER_TEST_CLUSTER_PORT\n");
		return 1;
	}
	for (int k = 0; k < 3; k++) {
		snprintf(urls[k], sizeof(urls[k]), "amqp://127.0.0.1:%d/%%2f", port + k);
		snprintf(murls[k], sizeof(murls[k]), "http://127.0.0.1:%d",
		    port + k + 10000);
		snprintf(nodes[k], sizeof(nodes[k]), "cutover%d@localhost", port + k);
	}
	return cmocka_run_group_tests_name("reconnect", tests, NULL, NULL);
}
