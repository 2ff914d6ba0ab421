/* test_api_operators (integration): writes only by an operator: a POST
 * without a token refused, a gate approved by an operator (and ahead of
 * time), serve without operators, the export and denied requests. */
#include "itest_api.h"

static void
test_writes_need_an_operator(void **state)
{
	const char *yaml;
	char name[80];
	struct resp r;
	json_t *j;

	(void)state;
	yaml = iapi_plan_yaml("noauth", name, sizeof(name));
	iapi_http("POST", "/api/plans", NULL, yaml, strlen(yaml), NULL, &r);
	iapi_assert_error(&r, 401);
	assert_string_equal(r.www, "Bearer realm=\"cutover\"");
	iapi_resp_clear(&r);
	iapi_expect_error("POST", "/api/plans", "not-a-token", yaml, strlen(yaml), NULL, 401);
	iapi_expect_error("POST", "/api/plans", NULL, yaml, strlen(yaml),
	    "Authorization: Basic YWxpY2U6eA==", 401);
	/* A token's hash is not a token. */
	iapi_expect_error("POST", "/api/plans/1/abort", "dde96f5b27b2298476b272c037dfd2cb5438e3495510"
	    "c51035db1ef55f2994a4", NULL, 0, NULL, 401);
	/* Nothing was recorded. */
	j = iapi_getf("/api/plans?name=%s", name);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 0);
	json_decref(j);
}

/* Checks that /api/plans?name=NAME lists one plan, at step N of KIND with
 * STATUS. */
static void
assert_listed_at(const char *name, int n, const char *kind, const char *status)
{
	json_t *j, *cur;

	j = iapi_getf("/api/plans?name=%s", name);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	cur = json_object_get(json_array_get(json_object_get(j, "plans"), 0), "current");
	assert_int_equal(json_integer_value(json_object_get(cur, "n")), n);
	assert_string_equal(json_string_value(json_object_get(cur, "kind")), kind);
	assert_string_equal(json_string_value(json_object_get(cur, "status")), status);
	assert_true(json_is_integer(json_object_get(cur, "started_ms")) ||
	    strcmp(status, "waiting_approval") == 0);
	json_decref(j);
}

static void
test_gate_approved_by_an_operator(void **state)
{
	char name[80], path[128], sha[65];
	const char *yaml;
	struct resp r;
	json_t *j, *st, *res;
	long long id;

	(void)state;
	id = iapi_submit("gate", name, sizeof(name));
	yaml = iapi_plan_yaml("gate", name, sizeof(name));
	assert_int_equal(auth_hash_hex(yaml, strlen(yaml), sha), 0);

	/* The plan as recorded. */
	j = iapi_getf("/api/plans/%lld", id);
	assert_string_equal(json_string_value(json_object_get(j, "name")), name);
	assert_string_equal(json_string_value(json_object_get(j, "sha256")), sha);
	assert_int_equal(json_array_size(json_object_get(j, "steps")), 2);
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "kind")), "verify_ladder");
	assert_true(json_is_true(json_object_get(st, "gate")));
	json_decref(j);
	j = iapi_get("/api/plans");
	assert_true(json_array_size(json_object_get(j, "plans")) >= 1);
	json_decref(j);
	j = iapi_getf("/api/plans?name=%s", name);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	json_decref(j);

	/* The same name again while it runs: 409. */
	iapi_expect_error("POST", "/api/plans", TOKEN_BOB, yaml, strlen(yaml), NULL, 409);

	/* The engine reaches the gate; the first step's result is there. */
	j = iapi_wait_step(id, 2, "waiting_approval");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")), "waiting");
	st = json_array_get(json_object_get(j, "steps"), 0);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "succeeded");
	assert_true(json_is_object(json_object_get(st, "result")));
	assert_true(json_is_integer(json_object_get(st, "ended_ms")));
	assert_true(json_is_array(json_object_get(j, "alerts")));
	json_decref(j);
	/* The list says where the plan is, without its results. */
	assert_listed_at(name, 2, "verify_ladder", "waiting_approval");

	/* Approving a step that is not waiting, or that does not exist. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	iapi_expect_error("POST", path, TOKEN_ALICE, NULL, 0, NULL, 409);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/3/approve", id);
	iapi_expect_error("POST", path, TOKEN_ALICE, NULL, 0, NULL, 404);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/retry", id);
	iapi_expect_error("POST", path, TOKEN_ALICE, NULL, 0, NULL, 409);
	snprintf(path, sizeof(path), "/api/plans/%lld/alerts/77/ack", id);
	iapi_expect_error("POST", path, TOKEN_ALICE, NULL, 0, NULL, 409);

	/* Without a token, or with a wrong one: 401 and nothing recorded. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	iapi_expect_error("POST", path, NULL, NULL, 0, NULL, 401);
	iapi_expect_error("POST", path, TOKEN_ALICE "x", NULL, 0, NULL, 401);

	/* Bob approves; the history says bob. */
	iapi_http("POST", path, TOKEN_BOB, "{\"comment\":\"ladder looks right\"}", 32,
	    "Content-Type: application/json", &r);
	if (r.status != 202)
		fail_msg("approve: %ld %s", r.status, r.body);
	j = iapi_body_json(&r);
	assert_string_equal(json_string_value(json_object_get(j, "actor")), "bob");
	assert_int_equal(json_integer_value(json_object_get(j, "step")), 2);
	json_decref(j);
	iapi_resp_clear(&r);
	j = iapi_wait_plan(id, "succeeded");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "approved_by")), "bob");
	assert_string_equal(json_string_value(json_object_get(st, "approval_comment")),
	    "ladder looks right");
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")), "approved");
	json_decref(j);
	assert_non_null(iapi_actor_of(id, "step.approved"));
	assert_string_equal(iapi_actor_of(id, "step.approved"), "bob");
	assert_string_equal(iapi_actor_of(id, "plan.submitted"), "alice");
	assert_listed_at(name, 2, "verify_ladder", "succeeded");

	/* A finished plan: abort is refused; the samples answer (none here). */
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	iapi_expect_error("POST", path, TOKEN_ALICE, NULL, 0, NULL, 409);
	j = iapi_getf("/api/plans/%lld/samples?since=0", id);
	assert_true(json_is_array(json_object_get(j, "samples")));
	json_decref(j);
	/* A step's result has its own route: the result the plan carries. */
	j = iapi_getf("/api/plans/%lld", id);
	res = iapi_getf("/api/plans/%lld/steps/2/result", id);
	assert_true(json_is_object(res));
	assert_true(json_equal(res, json_object_get(json_array_get(json_object_get(j,
	    "steps"), 1), "result")));
	json_decref(res);
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/99/result", id);
	iapi_expect_error("GET", path, NULL, NULL, 0, NULL, 404);
	iapi_cleanup_broker("gate");
}

/* A gated step not reached yet can be approved ahead of
 * time. The approval is recorded as such (step.approved_ahead, the
 * command done "approved ahead"), the gate opens when the plan gets there
 * without waiting, and the approver is the one who gave it. */
static void
test_approve_ahead(void **state)
{
	char name[80], path[128];
	json_t *j, *st, *cmd;
	long long id, c;

	(void)state;
	iapi_plan_steps = "[{ step: declare_ladder, gate: true }, { step: verify_ladder, "
	    "gate: true }]";
	id = iapi_submit("ahead", name, sizeof(name));
	iapi_plan_steps = NULL;
	json_decref(iapi_wait_step(id, 1, "waiting_approval"));
	/* Step 2 is pending behind step 1's gate: approving it now is accepted. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	j = iapi_post_as_alice(path, 202);
	c = (long long)json_integer_value(json_object_get(j, "command"));
	json_decref(j);
	cmd = iapi_wait_command(id, c);
	assert_string_equal(json_string_value(json_object_get(cmd, "state")), "done");
	assert_non_null(strstr(json_string_value(json_object_get(cmd, "outcome")),
	    "approved ahead"));
	json_decref(cmd);
	assert_string_equal(iapi_actor_of(id, "step.approved_ahead"), "alice");
	/* Still waiting at step 1: the ahead approval did not open that gate. */
	j = iapi_wait_step(id, 1, "waiting_approval");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "pending");
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")),
	    "approved_ahead");
	json_decref(j);
	/* Approving step 1 runs both, step 2 without waiting. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	json_decref(iapi_post_as_alice(path, 202));
	j = iapi_wait_plan(id, "succeeded");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "approved_by")), "alice");
	assert_true(json_is_true(json_object_get(st, "approved_ahead")));
	json_decref(j);
	/* Step 2 never waited: its gate was open when the plan reached it. */
	{
		json_t *h, *ev;
		size_t i;
		int waits = 0;

		h = iapi_getf("/api/plans/%lld/history", id);
		json_array_foreach(json_object_get(h, "events"), i, ev)
			if (strcmp(json_string_value(json_object_get(ev, "kind")),
			    "step.waiting_approval") == 0)
				waits++;
		assert_int_equal(waits, 1);
		json_decref(h);
	}
	iapi_cleanup_broker("ahead");
}

static void
test_without_operators(void **state)
{
	struct resp r;
	char listen[64];

	(void)state;
	assert_int_equal(iapi_stop_server(), 0);
	/* Away from loopback, the operators file is required. */
	snprintf(listen, sizeof(listen), "0.0.0.0:%d", iapi_port);
	assert_int_equal(iapi_cli(NULL, 0, NULL, "serve", "--db", iapi_db, "--listen", listen,
	    NULL),
	    2);
	assert_int_equal(iapi_cli(NULL, 0, NULL, "serve", "--db", iapi_db, "--listen", "nowhere:80",
	    NULL), 2);
	/* Without one on loopback: reads work, every write is 401 and says why. */
	iapi_start_server(NULL);
	json_decref(iapi_get("/api/plans"));
	iapi_http("POST", "/api/plans/1/abort", TOKEN_ALICE, NULL, 0, NULL, &r);
	iapi_assert_error(&r, 401);
	assert_non_null(strstr(r.body, "--operators"));
	iapi_resp_clear(&r);
	assert_int_equal(iapi_stop_server(), 0);
	iapi_start_server(iapi_ops);
}

/* Plan ID's history, asserting that the chain verifies. */
static json_t *
history_of(long long id)
{
	json_t *h;

	h = iapi_getf("/api/plans/%lld/history", id);
	assert_true(json_is_true(json_object_get(json_object_get(h, "verification"),
	    "verified")));
	return h;
}

/* How many events of KIND (by ACTOR with details.status STATUS, unless
 * ACTOR is NULL) plan ID's history holds; the first one into *FIRST (a new
 * reference) when FIRST is not NULL. */
static int
count_by(long long id, const char *kind, const char *actor, int status, json_t **first)
{
	json_t *h = history_of(id), *ev;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(h, "events"), i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "kind")), kind) != 0 ||
		    (actor != NULL && (strcmp(json_string_value(json_object_get(ev,
		    "actor")), actor) != 0 || json_integer_value(json_object_get(
		    json_object_get(ev, "details"), "status")) != status)))
			continue;
		if (n++ == 0 && first != NULL)
			*first = json_incref(ev);
	}
	json_decref(h);
	return n;
}

static int
count_kind(long long id, const char *kind, json_t **first)
{
	return count_by(id, kind, NULL, 0, first);
}

/* How many events plan ID's history holds. */
static int
history_size(long long id)
{
	json_t *h = history_of(id);
	int n = (int)json_array_size(json_object_get(h, "events"));

	json_decref(h);
	return n;
}

/* GET plan ID's export in FORMAT: asserts its headers and that it
 * verifies offline, with every one of the plan's events; the check. */
static void
export_verifies(long long id, const char *format, const char *type, int events,
    struct export_check *c)
{
	char path[96], want[160], err[256];
	struct resp r;

	snprintf(path, sizeof(path), "/api/plans/%lld/export?format=%s", id, format);
	iapi_http("GET", path, NULL, NULL, 0, NULL, &r);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	assert_true(strncmp(r.type, type, strlen(type)) == 0);
	snprintf(want, sizeof(want), "-%lld-history.%s\"", id, format);
	assert_non_null(strstr(r.disposition, "attachment; filename=\"cutover-"));
	assert_non_null(strstr(r.disposition, want));
	if (export_verify(r.body, r.len, c, err, sizeof(err)) != 0 || !c->verified)
		fail_msg("%s export does not verify: event %lld: %s %s", format,
		    (long long)c->bad_id, c->reason, err);
	assert_int_equal(c->plan_id, id);
	assert_int_equal(c->plan_events, events);
	assert_null(strstr(r.body, TOKEN_ALICE));
	assert_null(strstr(r.body, "tok-wrong"));
	iapi_resp_clear(&r);
}

static void
test_export_and_denied_requests(void **state)
{
	char name[80], path[160], bad[96];
	struct export_check c;
	struct resp r;
	json_t *ev = NULL, *d;
	int64_t t0, t1;
	int n, denied, more, total;

	(void)state;
	long long id = iapi_submit("denied", name, sizeof(name));
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));

	/* the export: both formats verify and carry every event so far */
	total = history_size(id);
	export_verifies(id, "json", "application/json", total, &c);
	export_verifies(id, "csv", "text/csv", total, &c);
	snprintf(path, sizeof(path), "/api/plans/%lld/export?format=xml", id);
	iapi_expect_error("GET", path, NULL, NULL, 0, NULL, 400);
	iapi_expect_error("GET", "/api/plans/999999/export", NULL, NULL, 0, NULL, 404);

	/* a wrong token: 401, recorded without the token or an actor */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	iapi_expect_error("POST", path, "tok-wrong-0", NULL, 0, NULL, 401);
	assert_int_equal(count_kind(id, "request.denied", &ev), 1);
	d = json_object_get(ev, "details");
	assert_string_equal(json_string_value(json_object_get(ev, "actor")), DENIED_ACTOR);
	assert_int_equal(json_integer_value(json_object_get(d, "status")), 401);
	assert_string_equal(json_string_value(json_object_get(d, "route")), "approve");
	assert_string_equal(json_string_value(json_object_get(d, "path")), path);
	assert_string_equal(json_string_value(json_object_get(d, "from")), "127.0.0.1");
	assert_non_null(strstr(json_string_value(json_object_get(d, "why")), "token"));
	json_decref(ev);

	/* an operator's refused command: 409 with the operator */
	/* no such plan: nothing to record it in */
	iapi_expect_error("POST", "/api/plans/999999/abort", TOKEN_ALICE, NULL, 0, NULL, 404);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	iapi_expect_error("POST", path, TOKEN_BOB, NULL, 0, NULL, 409);
	/* re-submitting the running plan's name: 409, in that plan's history */
	{
		const char *yaml = iapi_plan_yaml("denied", name, sizeof(name));

		iapi_expect_error("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml), NULL, 409);
	}
	assert_int_equal(count_kind(id, "request.denied", NULL), 3);
	assert_string_equal(iapi_actor_of(id, "request.denied"), DENIED_ACTOR);
	assert_int_equal(count_by(id, "request.denied", "bob", 409, NULL), 1);
	assert_int_equal(count_by(id, "request.denied", "alice", 409, NULL), 1);

	/* a burst: past DENIED_PER_MINUTE a minute, only counted, then
	 * recorded as one request.denied.more (written when the server stops) */
	t0 = clock_now_ms();
	for (int i = 0; i < 40; i++) {
		snprintf(bad, sizeof(bad), "tok-wrong-%d", i);
		snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
		iapi_http("POST", path, bad, NULL, 0, NULL, &r);
		assert_int_equal(r.status, 401);
		iapi_resp_clear(&r);
	}
	t1 = clock_now_ms();
	denied = count_kind(id, "request.denied", NULL);
	n = (int)(t1 / 60000 - t0 / 60000) + 1;	/* minutes the burst spanned */
	assert_true(denied <= 3 + DENIED_PER_MINUTE * n);
	assert_true(denied >= DENIED_PER_MINUTE);
	assert_int_equal(iapi_stop_server(), 0);
	iapi_start_server(iapi_ops);
	more = 0;
	{
		json_t *h = history_of(id), *e;
		size_t i;

		json_array_foreach(json_object_get(h, "events"), i, e)
			if (strcmp(json_string_value(json_object_get(e, "kind")),
			    "request.denied.more") == 0)
				more += (int)json_integer_value(json_object_get(json_object_get(e,
				    "details"), "count"));
		json_decref(h);
	}
	/* every refusal is in the history: one by one or counted */
	assert_int_equal(denied + more, 43);
	/* and the export, with them, still verifies */
	total = history_size(id);
	assert_true(total > denied);
	export_verifies(id, "csv", "text/csv", total, &c);
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	json_decref(iapi_post_as_alice(path, 202));
	json_decref(iapi_wait_plan(id, "aborted"));
	iapi_cleanup_broker("denied");
}

ITEST_MAIN(iapi_main,
	cmocka_unit_test(test_writes_need_an_operator),
	cmocka_unit_test(test_gate_approved_by_an_operator),
	cmocka_unit_test(test_approve_ahead),
	cmocka_unit_test(test_export_and_denied_requests),
	cmocka_unit_test(test_without_operators))
