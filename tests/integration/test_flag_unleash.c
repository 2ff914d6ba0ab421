/* test_flag_unleash (integration): the flag client, kind unleash, against
 * the real Unleash: on and off as producers see it, a wrong token, a
 * missing feature, an unset token, the server stopped. */
#include "itest_flag.h"
#include "httpbody.h"

#define TOKEN_REF	"env:CUTOVER_TEST_UNLEASH_TOKEN"

#define BAD_ENV		"CUTOVER_TEST_FLAG_BAD_TOKEN"

/* The Unleash feature the tests flip: this run's own (unleash_url creates
 * it), not the delay-ladder the whole suite shares. */
#define FEATURE		feature_name()

static const char *
feature_name(void)
{
	static char name[64];

	if (name[0] == '\0')
		snprintf(name, sizeof(name), "%s-flag", itest_run_id());
	return name;
}

static double
now(void)
{
	return (double)clock_mono_ms() / 1e3;
}

/* ---- plans ---- */

/* A plan with only its flag section: the unleash one (its settings are
 * this file's: one such plan at a time). */
static void
unleash_plan(struct plan *p, const char *url, const char *feature,
    const char *env, const char *token_ref)
{
	static struct plan_flag_unleash u;

	memset(p, 0, sizeof(*p));
	memset(&u, 0, sizeof(u));
	p->flag.kind = "unleash";
	p->flag.settings = &u;
	u.url = (char *)url;
	u.project = "default";
	u.environment = (char *)env;
	u.feature = (char *)feature;
	u.token = (char *)token_ref;
}

/* ---- helpers ---- */

/* Creates this run's feature once (itest_unleash_feature: deleted at exit)
 * and returns the test Unleash's URL. */
static const char *
unleash_url(void)
{
	const char *u = getenv("CUTOVER_TEST_UNLEASH_URL");
	static int created;

	if (u == NULL || u[0] == '\0' ||
	    getenv("CUTOVER_TEST_UNLEASH_TOKEN") == NULL)
		fail_msg("CUTOVER_TEST_UNLEASH_URL and "
		    "CUTOVER_TEST_UNLEASH_TOKEN are not set: run scripts/test, "
		    "or scripts/unleash start and export them from "
		    "scripts/unleash env");
	if (!created) {
		itest_unleash_feature(FEATURE);
		created = 1;
	}
	return u;
}

/* A closed port on 127.0.0.1: bound, then released. */
static int
closed_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd, port;

	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* What a producer sees: "enabled" of the feature through the client API
 * with the backend token (1 or 0). Without that token the test is skipped
 * (and fails under CI=true): itest_skip. */
static int
client_enabled(const char *url)
{
	const char *token = getenv("CUTOVER_TEST_UNLEASH_CLIENT_TOKEN");
	struct curl_slist *h = NULL;
	struct httpbody body = { .max = 1024 * 1024 };
	char u[512], hdr[512];
	json_t *j = NULL;
	CURL *c;
	long status = 0;
	int v;

	if (token == NULL || token[0] == '\0')
		itest_skip("CUTOVER_TEST_UNLEASH_CLIENT_TOKEN is not set: the client "
		    "API cannot be checked (scripts/unleash env gives it)");
	snprintf(u, sizeof(u), "%s/api/client/features/%s", url, FEATURE);
	snprintf(hdr, sizeof(hdr), "Authorization: %s", token);
	assert_non_null(c = curl_easy_init());
	h = curl_slist_append(h, hdr);
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, httpbody_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 200);
	assert_non_null(body.p);
	assert_non_null(j = json_loads(body.p, 0, NULL));
	free(body.p);
	assert_true(json_is_boolean(json_object_get(j, "enabled")));
	v = json_is_true(json_object_get(j, "enabled"));
	/* An enabled feature with no strategy evaluates as off. */
	assert_true(json_array_size(json_object_get(j, "strategies")) > 0);
	json_decref(j);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return v;
}

/* ---- kind unleash ---- */

static void
test_unleash_on_off(void **state)
{
	const char *url = unleash_url();
	const char *token = getenv("CUTOVER_TEST_UNLEASH_TOKEN");
	struct plan p;
	char err[512] = "", u[256];
	json_t *r = NULL, *rb;
	int st = -2, pass;

	(void)state;
	unleash_plan(&p, url, FEATURE, "production", TOKEN_REF);
	for (pass = 0; pass < 2; pass++) {	/* twice: idempotent */
		/* on */
		if (flag_switch(&p, true, &r, err, sizeof(err)) != 0)
			fail_msg("flag on: %s", err);
		assert_non_null(r);
		assert_true(json_is_true(json_object_get(r, "confirmed")));
		assert_string_equal(json_string_value(json_object_get(r,
		    "want")), "on");
		assert_int_equal(iflag_nattempts(r, "write"), 1);
		assert_int_equal(iflag_nattempts(r, "read"), 1);
		assert_int_equal(iflag_status_of(iflag_attempt(r, 0)), 200);
		assert_string_equal(json_string_value(json_object_get(
		    iflag_attempt(r, 0), "method")), "POST");
		snprintf(u, sizeof(u), "/api/admin/projects/default/features/%s/"
		    "environments/production/on", FEATURE);
		iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(r, 0),
		    "url")), u);
		rb = json_object_get(r, "read_back");
		assert_true(json_is_true(json_object_get(rb, "value")));
		iflag_assert_contains(json_string_value(json_object_get(rb,
		    "excerpt")), "\"name\":\"production\"");
		iflag_assert_not_leaked(r, err, token);
		json_decref(r);
		r = NULL;
		assert_int_equal(flag_read(&p, &st, &r, err, sizeof(err)), 0);
		assert_int_equal(st, 1);
		iflag_assert_not_leaked(r, err, token);
		json_decref(r);
		r = NULL;
		if (client_enabled(url) == 0)
			fail_msg("the client API says off after flag on");

		/* off */
		if (flag_switch(&p, false, &r, err, sizeof(err)) != 0)
			fail_msg("flag off: %s", err);
		assert_true(json_is_true(json_object_get(r, "confirmed")));
		assert_true(json_is_false(json_object_get(json_object_get(r,
		    "read_back"), "value")));
		iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(r, 0),
		    "url")), "/environments/production/off");
		json_decref(r);
		r = NULL;
		assert_int_equal(flag_read(&p, &st, NULL, err, sizeof(err)), 0);
		assert_int_equal(st, 0);
		if (client_enabled(url) == 1)
			fail_msg("the client API says on after flag off");
	}
}

static void
test_unleash_wrong_token(void **state)
{
	const char *url = unleash_url();
	struct flag_options o;
	char bad[64], err[512] = "";
	struct plan p;
	json_t *r = NULL;
	int rc, st = 7;

	(void)state;
	snprintf(bad, sizeof(bad), "*:*.wrong%08lx%08lx", (long)getpid(),
	    (long)time(NULL));
	assert_int_equal(setenv(BAD_ENV, bad, 1), 0);
	unleash_plan(&p, url, FEATURE, "production", "env:" BAD_ENV);
	iflag_quick(&o);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_AUTH);
	assert_non_null(r);
	assert_int_equal(iflag_nattempts(r, NULL), 1);	/* 4xx: no retry */
	assert_int_equal(iflag_status_of(iflag_attempt(r, 0)), 401);
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	iflag_assert_contains(err, "HTTP 401");
	iflag_assert_contains(err, "not retried");
	iflag_assert_contains(err, "/environments/production/on");
	iflag_assert_not_leaked(r, err, bad);
	iflag_assert_not_leaked(r, err, "wrong");
	json_decref(r);
	r = NULL;

	rc = flag_read(&p, &st, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_AUTH);
	assert_int_equal(st, -1);
	assert_int_equal(iflag_nattempts(r, NULL), 1);
	iflag_assert_not_leaked(r, err, bad);
	json_decref(r);
	unsetenv(BAD_ENV);
}

static void
test_unleash_missing(void **state)
{
	const char *url = unleash_url();
	char feature[64], err[512] = "";
	struct flag_options o;
	struct plan p;
	json_t *r = NULL;
	int rc;

	(void)state;
	iflag_quick(&o);
	snprintf(feature, sizeof(feature), "cutover-itest-missing-%ld",
	    (long)getpid());
	unleash_plan(&p, url, feature, "production", TOKEN_REF);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_NOT_FOUND);
	assert_int_equal(iflag_nattempts(r, NULL), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(r, 0)), 404);
	iflag_assert_contains(err, "HTTP 404");
	iflag_assert_contains(err, feature);
	iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(r, 0),
	    "excerpt")), "NotFoundError");
	iflag_assert_not_leaked(r, err, getenv("CUTOVER_TEST_UNLEASH_TOKEN"));
	json_decref(r);
	r = NULL;

	/* An environment the feature does not have. */
	unleash_plan(&p, url, FEATURE, "nowhere", TOKEN_REF);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_NOT_FOUND);
	assert_int_equal(iflag_nattempts(r, NULL), 1);
	iflag_assert_contains(err, "nowhere");
	json_decref(r);
	r = NULL;
	rc = flag_read_with(&p, &o, NULL, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_ANSWER);
	iflag_assert_contains(err, "no environment \"nowhere\"");
	iflag_assert_contains(err, "production");
	json_decref(r);
}

static void
test_unleash_token_unset(void **state)
{
	const char *url = unleash_url();
	char err[512] = "";
	struct plan p;
	json_t *r = NULL;

	(void)state;
	unsetenv("CUTOVER_TEST_FLAG_UNSET");
	unleash_plan(&p, url, FEATURE, "production",
	    "env:CUTOVER_TEST_FLAG_UNSET");
	assert_int_equal(flag_switch(&p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	iflag_assert_contains(err, "CUTOVER_TEST_FLAG_UNSET is not set");
	assert_int_equal(iflag_nattempts(r, NULL), 0);
	json_decref(r);
	r = NULL;

	/* A literal token is refused, and not quoted. */
	unleash_plan(&p, url, FEATURE, "production", "*:*.literal-secret");
	assert_int_equal(flag_switch(&p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	iflag_assert_contains(err, "not an env:NAME reference");
	iflag_assert_not_leaked(r, err, "literal-secret");
	json_decref(r);
}

static void
test_unleash_stopped(void **state)
{
	struct flag_options o;
	char url[64], err[512] = "";
	struct plan p;
	json_t *r = NULL, *a;
	double t0, dt;
	size_t i;
	int rc;

	(void)state;
	unleash_url();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
	unleash_plan(&p, url, FEATURE, "production", TOKEN_REF);
	iflag_quick(&o);
	t0 = now();
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	dt = now() - t0;
	assert_int_equal(rc, FLAG_ERR_TRANSPORT);
	assert_int_equal(iflag_nattempts(r, "write"), o.attempts);
	assert_int_equal(iflag_nattempts(r, "read"), 0);
	json_array_foreach(json_object_get(r, "attempts"), i, a) {
		assert_int_equal(iflag_status_of(a), 0);
		assert_string_equal(json_string_value(json_object_get(a,
		    "error")), "connection refused");
	}
	iflag_assert_contains(err, "connection refused");
	iflag_assert_contains(err, "4 attempts");
	iflag_assert_contains(err, url);
	/* Waits of 20, 40 and 80 ms between the four attempts (now() reads
	 * clock_mono_ms: each of the three may read up to 1 ms short). */
	assert_true(dt >= 0.137);
	assert_true(dt < 5.0);
	iflag_assert_not_leaked(r, err, getenv("CUTOVER_TEST_UNLEASH_TOKEN"));
	json_decref(r);
	r = NULL;

	/* The default schedule: 4 attempts, 0.5 + 1 + 2 s of waits. */
	t0 = now();
	rc = flag_read(&p, NULL, &r, err, sizeof(err));
	dt = now() - t0;
	assert_int_equal(rc, FLAG_ERR_TRANSPORT);
	assert_int_equal(iflag_nattempts(r, "read"), FLAG_ATTEMPTS);
	assert_true(dt >= 3.4 && dt < 10.0);
	json_decref(r);
}

ITEST_MAIN(iflag_main,
	cmocka_unit_test(test_unleash_on_off),
	cmocka_unit_test(test_unleash_wrong_token),
	cmocka_unit_test(test_unleash_missing),
	cmocka_unit_test(test_unleash_token_unset),
	cmocka_unit_test(test_unleash_stopped))
