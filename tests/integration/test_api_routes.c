/* test_api_routes (integration): the API's reads and routes: what each
 * route returns, invalid plans refused, limits and malformed bodies, names
 * unique until archived. */
#include "itest_api.h"

/* Sends REQ (LEN bytes) on a raw connection; the status of the answer, or
 * 0 when the server closed without one. */
static int
raw(const char *req, size_t len)
{
	char buf[512];
	ssize_t n;
	int fd, st = 0;

	assert_true((fd = itest_connect(iapi_port, 5)) >= 0);
	assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
			st = 0;
	}
	close(fd);
	return st;
}

static int
raws(const char *req)
{
	return raw(req, strlen(req));
}

static void
test_reads_and_routes(void **state)
{
	static const char nul[] = "GET /api/pl\0ans HTTP/1.1\r\nHost: x\r\n\r\n";
	static const struct {
		const char *method, *path, *token, *body;	/* body: of 0 bytes */
		long status;
		const char *allow;	/* NULL: not checked */
	} refused[] = {
		{ "GET", "/api/nothing", NULL, NULL, 404, NULL },
		{ "GET", "/api/plans/", NULL, NULL, 404, NULL },
		{ "GET", "/api/plans/999999", NULL, NULL, 404, NULL },
		{ "GET", "/api/plans/999999/history", NULL, NULL, 404, NULL },
		{ "GET", "/api/plans/abc", NULL, NULL, 404, NULL },
		{ "DELETE", "/api/plans", TOKEN_ALICE, NULL, 405, "GET, HEAD, POST" },
		{ "GET", "/api/plans/1/abort", NULL, NULL, 405, "POST" },
		{ "POST", "/api/plans/1", TOKEN_ALICE, "", 405, "GET, HEAD" },
		{ "PUT", "/healthz", NULL, NULL, 405, NULL },
		{ "GET", "/api/plans?nmae=x", NULL, NULL, 400, NULL },
		{ "GET", "/api/plans/1/samples?since=soon", NULL, NULL, 400, NULL },
	};
	struct resp r;
	json_t *j;
	char big[40000 + 32];
	size_t i;

	(void)state;
	j = iapi_get("/healthz");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	json_decref(j);
	j = iapi_get("/api/plans");
	assert_true(json_is_array(json_object_get(j, "plans")));
	json_decref(j);
	iapi_http("HEAD", "/api/plans", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	iapi_resp_clear(&r);

	/* Unknown routes and unknown plans; wrong methods: 405 with what is
	 * allowed; query parameters: known ones only, well formed. */
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		iapi_http(refused[i].method, refused[i].path, refused[i].token,
		    refused[i].body, 0, NULL, &r);
		iapi_assert_error(&r, refused[i].status);
		if (refused[i].allow != NULL)
			assert_string_equal(r.allow, refused[i].allow);
		iapi_resp_clear(&r);
	}

	/* Hostile requests: a 4xx each, and the server still answers. */
	assert_int_equal(raws("GET /api/pl%zzans HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans%00 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans%2 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans?name=%0a HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raw(nul, sizeof(nul) - 1), 404);
	assert_int_equal(raws("GET /api/plans/1/../../../etc/passwd HTTP/1.1\r\n"
	    "Host: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET /api/plans/%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n"
	    "Host: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET ../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET /api/plans HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(raws("POST /api/plans/1/abort HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOKEN_ALICE "\r\nContent-Length: 99999999999999999999"
	    "\r\n\r\n") / 100, 4);
	memcpy(big, "X-Big: ", 7);
	memset(big + 7, 'a', 40000);
	big[40007] = '\0';
	iapi_http("GET", "/api/plans", NULL, NULL, 0, big, &r);
	assert_true(r.status >= 400 && r.status < 500);
	iapi_resp_clear(&r);
	iapi_http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	iapi_resp_clear(&r);
}

static void
test_invalid_plans(void **state)
{
	static const char bad_key[] =
	    "name: itestapi-bad\n"
	    "broker:\n"
	    "  amqpp: amqp://127.0.0.1:5672/%2f\n";
	static const char bad_yaml[] = "name: [unclosed\nsteps: {\n";
	struct resp r;
	json_t *j, *e;
	size_t i;
	int saw = 0;

	(void)state;
	iapi_http("POST", "/api/plans", TOKEN_ALICE, bad_key, strlen(bad_key), NULL, &r);
	iapi_assert_error(&r, 400);
	j = iapi_body_json(&r);
	assert_true(json_array_size(json_object_get(j, "errors")) >= 2);
	json_array_foreach(json_object_get(j, "errors"), i, e) {
		assert_true(json_is_integer(json_object_get(e, "line")));
		assert_true(json_is_integer(json_object_get(e, "column")));
		assert_true(json_is_string(json_object_get(e, "message")));
		if (json_integer_value(json_object_get(e, "line")) == 3 &&
		    json_integer_value(json_object_get(e, "column")) == 3)
			saw = 1;
	}
	assert_true(saw);
	json_decref(j);
	iapi_resp_clear(&r);

	iapi_http("POST", "/api/plans", TOKEN_ALICE, bad_yaml, strlen(bad_yaml), NULL, &r);
	iapi_assert_error(&r, 400);
	j = iapi_body_json(&r);
	e = json_array_get(json_object_get(j, "errors"), 0);
	assert_true(json_integer_value(json_object_get(e, "line")) >= 1);
	json_decref(j);
	iapi_resp_clear(&r);

	iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, "", 0, NULL, 400);
	iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, "name: a\0b\n", 10, NULL, 400);
}

static void
test_limits_and_malformed_bodies(void **state)
{
	size_t n = 1024 * 1024 + 1;
	char *big = malloc(n);

	(void)state;
	assert_non_null(big);
	memset(big, '#', n);
	/* Declared too large: refused before the body is read. */
	iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, big, n, NULL, 413);
	/* Streamed (chunked, no length) past the limit. */
	iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, big, n, "Transfer-Encoding: chunked",
	    413);
	/* Exactly the limit is read (and is not a plan). */
	iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, big, n - 1, NULL, 400);
	free(big);

	/* Command bodies: optional, JSON, {"comment": string}. */
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{bad", 4, NULL, 400);
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, "[1]", 3, NULL, 400);
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"coment\":\"x\"}", 14,
	    NULL, 400);
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"comment\":5}", 13, NULL,
	    400);
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"comment\":\"ok\"}", 16,
	    NULL, 404);
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, NULL, 0, NULL, 404);
}

/* A name is unique among plans not archived. A finished
 * plan's name submitted again is refused (409, saying to archive it);
 * archiving a running plan is refused; once archived, the name is free,
 * and the plans of that name are two, the new one found by name. */
static void
test_names_and_archive(void **state)
{
	char name[80], path[128];
	const char *yaml;
	struct resp r;
	json_t *j;
	long long id, id2;

	(void)state;
	id = iapi_submit("names", name, sizeof(name));
	yaml = iapi_plan_yaml("names", name, sizeof(name));
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/archive", id);
	j = iapi_post_as_alice(path, 409);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")),
	    "only a finished plan"));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	json_decref(iapi_post_as_alice(path, 202));
	json_decref(iapi_wait_plan(id, "succeeded"));
	/* The same name again: refused, the succeeded plan holds it. */
	iapi_http("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml),
	    "Content-Type: application/yaml", &r);
	iapi_assert_error(&r, 409);
	j = iapi_body_json(&r);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "archive it"));
	assert_int_equal(json_integer_value(json_object_get(j, "id")), id);
	assert_string_equal(json_string_value(json_object_get(j, "reason")), "unarchived");
	json_decref(j);
	iapi_resp_clear(&r);
	/* The remote verb says how to archive it, in a form that runs as
	 * printed against this server. */
	{
		char out[2048], file[320], want[512];

		snprintf(file, sizeof(file), "%s/names.yaml", iapi_dir);
		assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_ALICE, "submit", "--server",
		    iapi_base, file, NULL), 1);
		snprintf(want, sizeof(want), "to archive it: cutover archive --server %s %lld\n",
		    iapi_base, id);
		if (strstr(out, want) == NULL)
			fail_msg("submit's hint is not '%s': %s", want, out);
	}
	j = iapi_getf("/api/plans?name=%s", name);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	json_decref(j);
	/* Without a token: 401. Archived by alice; a second archive: 409. */
	snprintf(path, sizeof(path), "/api/plans/%lld/archive", id);
	iapi_expect_error("POST", path, NULL, NULL, 0, NULL, 401);
	j = iapi_post_as_alice(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "actor")), "alice");
	json_decref(j);
	json_decref(iapi_post_as_alice(path, 409));
	assert_string_equal(iapi_actor_of(id, "plan.archived"), "alice");
	/* The name is free: a new plan; the old one says it is archived. */
	id2 = iapi_submit("names", name, sizeof(name));
	assert_true(id2 > id);
	j = iapi_getf("/api/plans/%lld", id);
	assert_true(json_is_integer(json_object_get(j, "archived_ms")));
	json_decref(j);
	j = iapi_getf("/api/plans/%lld", id2);
	assert_true(json_is_null(json_object_get(j, "archived_ms")));
	json_decref(j);
	json_decref(iapi_wait_step(id2, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id2);
	json_decref(iapi_post_as_alice(path, 202));
	json_decref(iapi_wait_plan(id2, "aborted"));
	/* The remote verb: `cutover archive NAME` archives the newest, the
	 * aborted one; again, it is refused (exit 1) saying why. */
	{
		char out[1024];

		assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_BOB, "archive", "--server",
		    iapi_base, name,
		    NULL), 0);
		assert_non_null(strstr(out, "archived by bob"));
		assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_BOB, "archive", "--server",
		    iapi_base, name,
		    NULL), 1);
	}
	j = iapi_getf("/api/plans/%lld", id2);
	assert_true(json_is_integer(json_object_get(j, "archived_ms")));
	json_decref(j);
	iapi_cleanup_broker("names");
}

ITEST_MAIN(iapi_main,
	cmocka_unit_test(test_reads_and_routes),
	cmocka_unit_test(test_invalid_plans),
	cmocka_unit_test(test_limits_and_malformed_bodies),
	cmocka_unit_test(test_names_and_archive))
