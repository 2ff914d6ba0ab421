/* test_amqp_connect (integration): the AMQP client connecting: URLs and
 * credentials parsed, an unset env reference, a refused connection, a
 * cluster's URL list, a wrong password, a consumer that survives a channel
 * error, a connection forced closed. */
#include "itest_amqp.h"

static void
sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1)
		continue;
}

/* ---- URLs and credentials (no broker needed) ---- */

static void
test_url_parse(void **state)
{
	/* Refused, with what the error says (NULL: whatever it says). */
	static const struct {
		const char *url, *says;
	} refused[] = {
		{ "http://h/", NULL },
		{ "amqp://h:70000/", NULL },
		{ "amqp://h:/", NULL },
		{ "amqp:///v", NULL },
		{ "amqp://h/a/b", "%2f" },
		{ "amqp://h/%zz", NULL },
		{ "amqp://h/%00", NULL },
		{ "amqp://h/v?heartbeat=5", NULL },
		{ "amqp://:5672/v", "no host" },
		{ "amqp://h:0/v", NULL },
	};
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
	/* Where rabbitmq-c's amqp_parse_url reads otherwise (broker_url.c):
	 * no host is not "localhost", port 0 is no port (refused[] below),
	 * and a vhost may hold UTF-8. */
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		if (broker_url_parse(refused[i].url, &u, err, sizeof(err)) != BROKER_ERR)
			fail_msg("URL %s was not refused", refused[i].url);
		if (refused[i].says != NULL && strstr(err, refused[i].says) == NULL)
			fail_msg("URL %s: the error \"%s\" does not say \"%s\"", refused[i].url,
			    err, refused[i].says);
	}
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
	iamqp_need_broker();
	snprintf(dead1, sizeof(dead1), "amqp://127.0.0.1:%d/%%2f", p1);
	snprintf(dead2, sizeof(dead2), "amqp://127.0.0.1:%d/%%2f", p2);
	urls[0] = dead1;
	urls[1] = iamqp_amqp_url;
	if (broker_open_list(urls, 2, NULL, iamqp_amqp_user, PWREF, TIMEOUT_MS, &b, err,
	    sizeof(err)) != 0)
		fail_msg("the second node did not answer: %s", err);
	broker_close(b);
	b = NULL;

	urls[1] = dead2;
	assert_int_equal(broker_open_list(urls, 2, NULL, iamqp_amqp_user, PWREF, TIMEOUT_MS,
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
	iamqp_need_broker();
	setenv("CUTOVER_ITEST_BADPW", "Wr0ng-Pa55word-xyz", 1);
	assert_int_equal(broker_open(iamqp_amqp_url, iamqp_amqp_user,
	    "env:CUTOVER_ITEST_BADPW", TIMEOUT_MS, &b, err, sizeof(err)),
	    BROKER_EAUTH);
	assert_null(b);
	assert_null(strstr(err, "Wr0ng-Pa55word-xyz"));
	assert_non_null(strstr(err, "refused"));
	assert_non_null(strstr(err, iamqp_amqp_user));
}

static void
test_consumer_survives_channel_error(void **state)
{
	struct ctx *c = *state;
	struct broker_delivery d;
	struct topology_arg ttl;
	const char *q;
	char err[512] = "";

	iamqp_need_broker();
	q = iamqp_declared_queue(c, "resubscribe");
	assert_int_equal(broker_consume(c->b, q, 5, err, sizeof(err)), 0);
	iamqp_publish_and_consume(c->b, q, "before");

	/* A refused declare closes the channel under the consumer... */
	ttl = iamqp_arg_int("x-message-ttl", 1);
	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	/* ...and the next call resubscribes it. */
	iamqp_publish_and_consume(c->b, q, "after");

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

	snprintf(userpwd, sizeof(userpwd), "%s:%s", iamqp_amqp_user, getenv(
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
		    "client_properties,peer_port,port", iamqp_mgmt_url);
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
				    "%s/api/connections/%s", iamqp_mgmt_url, esc);
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

	iamqp_need_broker();
	if (iamqp_mgmt_url == NULL)
		fail_msg("set CUTOVER_TEST_MGMT (scripts/test does)");
	q = iamqp_declared_queue(c, "forced");
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
	iamqp_publish_and_consume(c->b, q, "after reconnect");

	/* Closed between calls: the next call reconnects without a word. */
	assert_true(mgmt_close_cutover_connections() >= 1);
	assert_true(wait_told_closed(closed_port, 10000));
	assert_int_equal(broker_queue_inspect(c->b, q, NULL, err, sizeof(err)),
	    0);
	assert_int_equal(broker_reply_code(c->b), 0);
}

ITEST_MAIN(iamqp_main,
	cmocka_unit_test(test_url_parse),
	cmocka_unit_test(test_env_reference_unset),
	cmocka_unit_test(test_connection_refused),
	cmocka_unit_test(test_open_list),
	cmocka_unit_test(test_wrong_password),
	WITH_BROKER(test_consumer_survives_channel_error),
	WITH_BROKER(test_connection_forced))
