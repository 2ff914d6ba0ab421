/* test_flag_http (integration): the flag client, kind http, against a flag
 * service of the test's own: on and off, pointer escapes, a 500 then ok, a
 * 500 forever, a 400, a write ignored, the secret unset, and JSON pointers
 * (RFC 6901). */
#include "itest_flag.h"

static void
srv_set(struct srv *s, json_t *v)
{
	pthread_mutex_lock(&s->mu);
	json_decref(s->value);
	s->value = v;
	pthread_mutex_unlock(&s->mu);
}

/* ---- kind http ---- */

static void
test_http_on_off(void **state)
{
	struct iflag_http t;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	iflag_switch_on(&t, 0, 1, 1);
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 0),
	    "method")), "PUT");
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 0),
	    "url")), t.hp.url);
	assert_true(json_is_true(json_object_get(json_object_get(t.r,
	    "read_back"), "value")));
	/* The header reached the service, resolved; it is nowhere else. */
	assert_string_equal(t.s.auth, AUTH_SECRET);
	assert_string_equal(t.s.method, "PUT");
	assert_string_equal(t.s.ctype, "application/json");
	assert_true(json_is_true(t.s.value));
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	iflag_http_clear(&t);

	iflag_expect_read(&t, 1);
	iflag_http_clear(&t);

	if (flag_switch_with(&t.hp.p, false, &t.o, &t.r, t.err, sizeof(t.err)) != 0)
		fail_msg("flag off: %s", t.err);
	assert_true(json_is_false(t.s.value));
	iflag_expect_read(&t, 0);
	iflag_http_clear(&t);

	/* Neither on nor off. */
	srv_set(&t.s, json_string("maybe"));
	iflag_expect_read(&t, -1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(t.r,
	    "read_back"), "state")), "unknown");
	iflag_http_end(&t);
}

static void
test_http_pointer_escapes(void **state)
{
	struct iflag_http t;
	int st = -2;

	(void)state;
	iflag_http_begin(&t, "/flags/0/x~1y/m~0n");
	if (flag_switch_with(&t.hp.p, true, &t.o, NULL, t.err, sizeof(t.err)) != 0)
		fail_msg("flag on: %s", t.err);
	iflag_expect_read(&t, 1);

	/* A pointer to nothing: unknown, and a switch cannot confirm. */
	t.hp.settings.read_pointer = "/flags/1/x~1y/m~0n";
	iflag_expect_read(&t, -1);
	assert_int_equal(flag_switch_with(&t.hp.p, true, &t.o, NULL, t.err,
	    sizeof(t.err)), FLAG_ERR_MISMATCH);
	iflag_assert_contains(t.err, "nothing there at /flags/1/x~1y/m~0n");

	/* A malformed pointer fails before anything is sent. */
	t.hp.settings.read_pointer = "/flags/0/x~2y";
	t.s.requests = 0;
	assert_int_equal(flag_read_with(&t.hp.p, &t.o, &st, NULL, t.err,
	    sizeof(t.err)), FLAG_ERR_ARG);
	assert_int_equal(t.s.requests, 0);
	iflag_http_end(&t);
}

static void
test_http_500_then_ok(void **state)
{
	struct iflag_http t;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	t.s.write_fail_n = 2;
	/* Each 500 is followed by a read-back that finds the flag off, so
	 * the write goes again; then the switch's own read-back. */
	iflag_switch_on(&t, 0, 3, 3);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), 500);
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 1),
	    "call")), "read");
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 2)), 500);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 4)), 200);
	assert_int_equal(t.s.writes, 1);
	/* The 500 answers quoted the header: redacted in the excerpts. */
	iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(t.r, 0),
	    "excerpt")), "flag store unavailable (request had ***)");
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	assert_true(json_is_true(t.s.value));
	iflag_http_end(&t);
}

static void
test_http_500_forever(void **state)
{
	struct iflag_http t;
	size_t i, n;
	int rc;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	t.s.write_fail_forever = 1;
	/* Each write answered 500, each read-back after it found the flag
	 * off: four writes, four reads, alternating. */
	iflag_switch_on(&t, FLAG_ERR_HTTP, 4, 4);
	for (i = 0; i < 8; i += 2)
		assert_int_equal(iflag_status_of(iflag_attempt(t.r, i)), 500);
	iflag_assert_contains(t.err, "flag on: PUT ");
	iflag_assert_contains(t.err, t.hp.url);
	iflag_assert_contains(t.err, "HTTP 500");
	iflag_assert_contains(t.err, "flag store unavailable");
	iflag_assert_contains(t.err, "4 attempts");
	iflag_assert_contains(t.err, "read back: not switched");
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	assert_int_equal(t.s.requests, 8);
	iflag_http_clear(&t);

	/* The budget bounds the attempts: 50 ms leaves room for two. A
	 * write read back off is a plain HTTP failure; one whose read-back
	 * the budget left no time to answer (1 ms on a busy machine) is in
	 * doubt: it may have taken, and it is not sent again. */
	t.o.attempts = 10;
	t.o.backoff_ms = 30;
	t.o.backoff_max_ms = 30;
	t.o.budget_ms = 50;
	rc = flag_switch_with(&t.hp.p, true, &t.o, &t.r, t.err, sizeof(t.err));
	assert_true(iflag_nattempts(t.r, "write") == 1 ||
	    iflag_nattempts(t.r, "write") == 2);
	assert_int_equal(iflag_nattempts(t.r, "read"), iflag_nattempts(t.r, "write"));
	/* The last write, answered 500 and read back off: a plain failure.
	 * Cut short by the budget before its answer, it is in doubt
	 * whatever its read-back said; so is one whose read-back was. */
	n = iflag_nattempts(t.r, NULL);
	if (iflag_status_of(iflag_attempt(t.r, n - 2)) == 500 &&
	    iflag_status_of(iflag_attempt(t.r, n - 1)) == 200)
		assert_int_equal(rc, FLAG_ERR_HTTP);
	else
		assert_int_equal(rc, FLAG_ERR_UNCONFIRMED);
	iflag_http_end(&t);
}

static void
test_http_400(void **state)
{
	struct iflag_http t;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	t.s.bad_request = 1;
	assert_int_equal(flag_switch_with(&t.hp.p, true, &t.o, &t.r, t.err,
	    sizeof(t.err)), FLAG_ERR_HTTP);
	assert_int_equal(iflag_nattempts(t.r, NULL), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), 400);
	assert_int_equal(t.s.requests, 1);
	iflag_assert_contains(t.err, "HTTP 400 (BadRequest: refusing ***)");
	iflag_assert_contains(t.err, "not retried");
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	iflag_http_clear(&t);

	/* A read URL that is not there: 404, not retried either. */
	t.s.bad_request = 0;
	snprintf(t.hp.url, sizeof(t.hp.url), "%s/nope", t.s.base);
	t.hp.settings.read_url = t.hp.url;
	assert_int_equal(flag_read_with(&t.hp.p, &t.o, NULL, &t.r, t.err,
	    sizeof(t.err)), FLAG_ERR_NOT_FOUND);
	assert_int_equal(iflag_nattempts(t.r, NULL), 1);
	iflag_assert_contains(t.err, "HTTP 404 (no such flag)");
	iflag_http_end(&t);
}

static void
test_http_ignored_write(void **state)
{
	struct iflag_http t;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	t.s.ignore_write = 1;
	iflag_switch_on(&t, FLAG_ERR_MISMATCH, 1, 1);
	iflag_assert_contains(t.err, "false at /enabled; expected true (on)");
	assert_true(json_is_false(json_object_get(json_object_get(t.r,
	    "read_back"), "value")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(t.r,
	    "read_back"), "state")), "off");
	iflag_http_end(&t);
}

static void
test_http_secret_unset(void **state)
{
	struct iflag_http t;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	unsetenv(AUTH_ENV);
	assert_int_equal(flag_switch(&t.hp.p, true, &t.r, t.err, sizeof(t.err)),
	    FLAG_ERR_ARG);
	iflag_assert_contains(t.err, "flag.headers.Authorization: env:" AUTH_ENV
	    ": variable " AUTH_ENV " is not set");
	assert_int_equal(t.s.requests, 0);
	iflag_http_clear(&t);

	/* Credentials in a URL are refused, and not quoted. */
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	t.hp.settings.on.url = "http://user:pa55word@127.0.0.1:1/flag";
	assert_int_equal(flag_switch(&t.hp.p, true, &t.r, t.err, sizeof(t.err)),
	    FLAG_ERR_ARG);
	iflag_assert_contains(t.err, "flag.on.url must not carry credentials");
	iflag_assert_not_leaked(t.r, t.err, "pa55word");
	iflag_http_end(&t);
}

/* ---- JSON pointer (RFC 6901 §5's examples) ---- */

static void
test_json_pointer(void **state)
{
	static const char *doc_text = "{\"foo\": [\"bar\", \"baz\"], \"\": 0, "
	    "\"a/b\": 1, \"c%d\": 2, \"e^f\": 3, \"g|h\": 4, \"i\\\\j\": 5, "
	    "\"k\\\"l\": 6, \" \": 7, \"m~n\": 8, \"~1\": 9, "
	    "\"arr\": [[10, 11], {\"x\": 12}]}";
	static const struct { const char *ptr; long v; } cases[] = {
		{ "/foo/0", -1 }, { "/", 0 }, { "/a~1b", 1 }, { "/c%d", 2 },
		{ "/e^f", 3 }, { "/g|h", 4 }, { "/i\\j", 5 }, { "/k\"l", 6 },
		{ "/ ", 7 }, { "/m~0n", 8 }, { "/~01", 9 },
		{ "/arr/0/1", 11 }, { "/arr/1/x", 12 },
	};
	static const char *absent[] = { "/nope", "/foo/2", "/foo/-",
	    "/foo/01", "/foo/x", "/arr/0/1/2", "/a~1b/c", "/~1",
	    "/foo/99999999999999999999999" };
	static const char *bad[] = { "foo", "/m~2n", "/m~", "/~" };
	json_t *doc, *v;
	char err[256];
	size_t i;

	(void)state;
	assert_non_null(doc = json_loads(doc_text, 0, NULL));
	assert_int_equal(flag_json_pointer(doc, "", &v, err, sizeof(err)), 0);
	assert_ptr_equal(v, doc);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (flag_json_pointer(doc, cases[i].ptr, &v, err,
		    sizeof(err)) != 0)
			fail_msg("%s: not found", cases[i].ptr);
		if (cases[i].v < 0)
			assert_string_equal(json_string_value(v), "bar");
		else
			assert_int_equal(json_integer_value(v), cases[i].v);
	}
	assert_int_equal(flag_json_pointer(doc, "/foo", &v, err, sizeof(err)),
	    0);
	assert_int_equal(json_array_size(v), 2);
	for (i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		if (flag_json_pointer(doc, absent[i], &v, err,
		    sizeof(err)) != 0)
			fail_msg("%s: expected absent", absent[i]);
		assert_null(v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (flag_json_pointer(doc, bad[i], &v, err, sizeof(err)) !=
		    FLAG_ERR_ARG)
			fail_msg("%s: expected malformed", bad[i]);
		iflag_assert_contains(err, bad[i]);
	}
	json_decref(doc);
}

ITEST_MAIN(iflag_main,
	cmocka_unit_test(test_json_pointer),
	cmocka_unit_test(test_http_on_off),
	cmocka_unit_test(test_http_pointer_escapes),
	cmocka_unit_test(test_http_500_then_ok),
	cmocka_unit_test(test_http_500_forever),
	cmocka_unit_test(test_http_400),
	cmocka_unit_test(test_http_ignored_write),
	cmocka_unit_test(test_http_secret_unset))
