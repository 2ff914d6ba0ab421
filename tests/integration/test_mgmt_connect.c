/* test_mgmt_connect (integration): the management client connecting: a
 * wrong password, a bad open, a refused connection, failover over a
 * cluster's URLs, a timeout. */
#include "itest_mgmt.h"

static double
now(void)
{
	return (double)clock_mono_ms() / 1e3;
}

/* Writes into URL (64 bytes) a management URL on a local port nothing
 * listens on. */
static void
dead_url(char *url)
{
	snprintf(url, 64, "http://127.0.0.1:%d", itest_free_port());
}

/* The test user's management client on the N URLS (tried in order), each
 * request bounded by TIMEOUT_MS; fails the test when it cannot be made. */
static struct mgmt *
open_urls(const struct ctx *c, const char *const *urls, size_t n, long timeout_ms)
{
	struct mgmt *m = NULL;
	char err[1024];

	if (mgmt_open_list(urls, n, NULL, "/", c->user, PASSWORD_REF, timeout_ms, &m,
	    err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return m;
}

/* Asks M for the overview, which must fail on the transport (its message
 * in ERR); returns how long that took, in seconds. */
static double
overview_fails_after(struct mgmt *m, char *err, size_t errlen)
{
	struct mgmt_overview ov;
	double t0 = now();

	assert_int_equal(mgmt_overview(m, &ov, err, errlen), MGMT_ERR_TRANSPORT);
	return now() - t0;
}

static void
test_wrong_password(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	char err[512], pw[64];
	long status = 0;

	snprintf(pw, sizeof(pw), "wrong-pw-%ld-Zq", (long)getpid());
	assert_int_equal(setenv("CUTOVER_TEST_WRONG_PASSWORD", pw, 1), 0);
	if (mgmt_open(c->url, "/", c->user, "env:CUTOVER_TEST_WRONG_PASSWORD",
	    TIMEOUT_MS, &m, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(mgmt_overview(m, &ov, err, sizeof(err)),
	    MGMT_ERR_AUTH);
	print_message("wrong password: %s\n", err);
	assert_non_null(strstr(err, "GET /api/overview"));
	assert_non_null(strstr(err, "401"));
	assert_null(strstr(err, pw));
	assert_int_equal(mgmt_request(m, "GET", "/api/queues/%2F", NULL, NULL,
	    &status, err, sizeof(err)), MGMT_ERR_AUTH);
	assert_int_equal(status, 401);
	assert_null(strstr(err, pw));
	mgmt_close(m);
	unsetenv("CUTOVER_TEST_WRONG_PASSWORD");
}

static void
test_bad_open(void **state)
{
	struct ctx *c = *state;
	struct mgmt *m = (struct mgmt *)1;
	char err[512], var[64], ref[96];

	/* A password variable that is not set is named. */
	snprintf(var, sizeof(var), "CUTOVER_TEST_UNSET_%ld", (long)getpid());
	unsetenv(var);
	snprintf(ref, sizeof(ref), "env:%s", var);
	assert_int_equal(mgmt_open(c->url, "/", c->user, ref, TIMEOUT_MS, &m,
	    err, sizeof(err)), MGMT_ERR_ARG);
	assert_null(m);
	assert_non_null(strstr(err, var));
	assert_non_null(strstr(err, "not set"));

	/* A literal password is refused and not repeated. */
	assert_int_equal(mgmt_open(c->url, "/", c->user, "s3cret-literal",
	    TIMEOUT_MS, &m, err, sizeof(err)), MGMT_ERR_ARG);
	assert_null(strstr(err, "s3cret-literal"));
	assert_non_null(strstr(err, "env:NAME"));

	/* Credentials in the URL are refused and not repeated. */
	assert_int_equal(mgmt_open("http://bob:hunter2x@127.0.0.1:1", "/",
	    c->user, PASSWORD_REF, TIMEOUT_MS, &m, err, sizeof(err)),
	    MGMT_ERR_ARG);
	assert_null(strstr(err, "hunter2x"));
	assert_int_equal(mgmt_open("ftp://127.0.0.1:1", "/", c->user,
	    PASSWORD_REF, TIMEOUT_MS, &m, err, sizeof(err)), MGMT_ERR_ARG);
	assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF, 0, &m,
	    err, sizeof(err)), MGMT_ERR_ARG);

	/* Repeated opens and closes are fine (libcurl counts its init). */
	{
		struct mgmt *m1 = NULL, *m2 = NULL;
		struct mgmt_overview ov;

		assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF,
		    TIMEOUT_MS, &m1, err, sizeof(err)), 0);
		assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF,
		    TIMEOUT_MS, &m2, err, sizeof(err)), 0);
		mgmt_close(m1);
		assert_int_equal(mgmt_overview(m2, &ov, err, sizeof(err)), 0);
		mgmt_close(m2);
	}
}

static void
test_connection_refused(void **state)
{
	struct ctx *c = *state;
	struct mgmt *m;
	char err[512], url[64];
	const char *urls[1] = { url };
	double dt;

	dead_url(url);
	m = open_urls(c, urls, 1, 2000);
	dt = overview_fails_after(m, err, sizeof(err));
	print_message("refused (%.3f s): %s\n", dt, err);
	assert_true(dt < 2.5);
	assert_non_null(strstr(err, "GET /api/overview: connection refused"));
	assert_non_null(strstr(err, url));
	assert_null(strstr(err, getenv("CUTOVER_TEST_PASSWORD")));
	mgmt_close(m);
}

/* A cluster's management URLs (mgmt_open_list): a node that refuses is
 * passed over for the next in order; a POST that got no answer is not
 * sent again elsewhere; when no node answers, each is named. */
static void
test_failover(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	char err[1024], dead1[64], dead2[64];
	const char *urls[2];

	dead_url(dead1);
	dead_url(dead2);
	urls[0] = dead1;
	urls[1] = c->url;
	m = open_urls(c, urls, 2, 2000);
	if (mgmt_overview(m, &ov, err, sizeof(err)) != 0)
		fail_msg("the second node did not answer: %s", err);
	mgmt_close(m);

	m = open_urls(c, urls, 2, 2000);
	assert_int_equal(mgmt_request(m, "POST", "/api/overview", NULL, NULL,
	    NULL, err, sizeof(err)), MGMT_ERR_TRANSPORT);
	assert_non_null(strstr(err, dead1));
	mgmt_close(m);

	urls[1] = dead2;
	m = open_urls(c, urls, 2, 2000);
	overview_fails_after(m, err, sizeof(err));
	print_message("no node answers: %s\n", err);
	assert_non_null(strstr(err, dead1));
	assert_non_null(strstr(err, dead2));
	mgmt_close(m);
}

static void
test_timeout(void **state)
{
	struct ctx *c = *state;
	struct sockaddr_in sa;
	struct mgmt *m;
	socklen_t len = sizeof(sa);
	char err[512], url[64];
	const char *urls[1] = { url };
	double dt;
	int fd;

	/* A server that accepts connections (the kernel does, through the
	 * backlog) and never answers. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	m = open_urls(c, urls, 1, 600);
	dt = overview_fails_after(m, err, sizeof(err));
	print_message("no answer (%.3f s): %s\n", dt, err);
	assert_true(dt >= 0.5 && dt < 2.0);
	assert_non_null(strstr(err, "GET /api/overview: timed out"));
	mgmt_close(m);
	close(fd);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrong_password),
		cmocka_unit_test(test_bad_open),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_timeout),
	};

	return cmocka_run_group_tests(tests, imgmt_group_setup, imgmt_group_teardown);
}
