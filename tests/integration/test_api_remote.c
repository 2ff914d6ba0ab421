/* test_api_remote (integration): the remote verbs of the cutover binary
 * against serve, and the routes they use: retry, abort, ack, stop and
 * resume. */
#include "itest_api.h"

static void
test_remote_cli(void **state)
{
	char name[80], file[320], out[16384], badfile[320];
	json_t *j, *ev;
	size_t i;
	int saw = 0;
	FILE *f;

	(void)state;
	iapi_plan_yaml("cli", name, sizeof(name));
	snprintf(file, sizeof(file), "%s/cli.yaml", iapi_dir);

	/* Usage errors are 2; a refused or unreachable request is 1. */
	assert_int_equal(iapi_cli(NULL, 0, NULL, "approve", "--server", iapi_base, name, NULL), 2);
	assert_int_equal(iapi_cli(NULL, 0, NULL, "approve", "--server", iapi_base, name, "2",
	    "--as",
	    "carol", NULL), 2);
	assert_int_equal(iapi_cli(NULL, 0, NULL, "submit", "--db", iapi_db, "--server", iapi_base,
	    file,
	    NULL), 2);
	assert_int_equal(iapi_cli(NULL, 0, NULL, "submit", "--server", iapi_base, file, NULL), 1);
	assert_int_equal(iapi_cli(NULL, 0, TOKEN_BOB, "status", "--server",
	    "http://127.0.0.1:1", NULL), 1);
	snprintf(badfile, sizeof(badfile), "%s/bad.yaml", iapi_dir);
	f = fopen(badfile, "w");
	assert_non_null(f);
	fputs("name: x\nstepz: []\n", f);
	fclose(f);
	assert_int_equal(iapi_cli(NULL, 0, TOKEN_BOB, "submit", "--server", iapi_base, badfile,
	    NULL),
	    1);

	/* Submit, see it, approve its gate by name, read its history. */
	assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_BOB, "submit", "--server", iapi_base,
	    file,
	    NULL), 0);
	assert_non_null(strstr(out, name));
	assert_int_equal(iapi_cli(out, sizeof(out), NULL, "status", "--server", iapi_base, NULL),
	    0);
	assert_non_null(strstr(out, name));
	for (i = 0; i < WAIT_MS / 100; i++) {
		assert_int_equal(iapi_cli(out, sizeof(out), NULL, "status", "--server", iapi_base,
		    name,
		    NULL), 0);
		if (strstr(out, "waiting_approval") != NULL)
			break;
		iapi_sleep_ms(100);
	}
	assert_non_null(strstr(out, "waiting_approval"));
	assert_non_null(strstr(out, "verify_ladder"));
	assert_int_equal(iapi_cli(NULL, 0, NULL, "approve", "--server", iapi_base, name,
	    "verify_ladder", NULL), 1);
	assert_int_equal(iapi_cli(NULL, 0, TOKEN_BOB, "approve", "--server", iapi_base, name,
	    "declare_ladder", NULL), 1);
	/* --wait follows the command until the engine has acted on it, and
	 * says what it did. */
	assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_BOB, "approve", "--server", iapi_base,
	    name,
	    "verify_ladder", "--comment", "from the CLI", "--wait", NULL), 0);
	assert_non_null(strstr(out, "bob"));
	if (strstr(out, "approve done: plan '") == NULL)
		fail_msg("approve --wait did not say what was done: %s", out);
	for (i = 0; i < WAIT_MS / 100; i++) {
		assert_int_equal(iapi_cli(out, sizeof(out), NULL, "status", "--server", iapi_base,
		    name,
		    "--json", NULL), 0);
		j = json_loads(out, 0, NULL);
		assert_non_null(j);
		saw = strcmp(json_string_value(json_object_get(j, "status")), "succeeded") == 0;
		json_decref(j);
		if (saw)
			break;
		iapi_sleep_ms(100);
	}
	assert_true(saw);
	assert_int_equal(iapi_cli(out, sizeof(out), NULL, "history", "--server", iapi_base, name,
	    NULL), 0);
	assert_non_null(strstr(out, "step.approved"));
	assert_non_null(strstr(out, "history verifies"));
	assert_int_equal(iapi_cli(out, sizeof(out), NULL, "history", "--server", iapi_base, name,
	    "--json", NULL), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	saw = 0;
	json_array_foreach(json_object_get(j, "events"), i, ev)
		if (strcmp(json_string_value(json_object_get(ev, "kind")), "step.approved") == 0)
			saw = strcmp(json_string_value(json_object_get(ev, "actor")), "bob") == 0;
	assert_true(saw);
	json_decref(j);
	/* The same verbs on the database directly still work. */
	assert_int_equal(iapi_cli(out, sizeof(out), NULL, "status", "--db", iapi_db, name, NULL),
	    0);
	assert_non_null(strstr(out, "succeeded"));
	iapi_cleanup_broker("cli");
}

/* Makes TEST's declare_ladder fail: its level 0 queue declared first as
 * a classic queue without arguments (declare_ladder refuses a queue that
 * exists with other arguments); GONE true deletes it again. */
static void
conflicting_level(const char *test, bool gone)
{
	struct plan_errors errs = { 0 };
	struct step_ctx c;
	struct plan *p = NULL;
	char err[1024], file[320], q[128];

	snprintf(file, sizeof(file), "%s/%s.yaml", iapi_dir, test);
	if (plan_load_file(file, &p, &errs) != 0)
		fail_msg("%s does not load", file);
	if (step_ctx_open(&c, p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(q, sizeof(q), "itestapi%ld.%s.level.00", (long)getpid(), test);
	if (gone)
		assert_int_equal(broker_queue_delete(c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	else if (broker_queue_declare(c.amqp, q, true, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", q, err);
	step_ctx_close(&c);
	plan_free(p);
}

/* A failed step retried and a plan aborted by an operator, through the
 * API's routes (VIA_CLI false) or the remote verbs of the CLI: the retry
 * runs the step again and the plan goes on to its gate, the abort ends
 * it, and the history names the operator for both. */
static void
retry_and_abort(const char *test, bool via_cli)
{
	char name[80], path[128], out[4096];
	struct resp r;
	json_t *j;
	long long id;

	iapi_plan_yaml(test, name, sizeof(name));
	conflicting_level(test, false);
	id = iapi_submit(test, name, sizeof(name));
	json_decref(iapi_wait_plan(id, "failed"));
	conflicting_level(test, true);
	if (via_cli) {
		assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_BOB, "retry", "--server",
		    iapi_base,
		    name, "declare_ladder", "--comment", "conflict removed", NULL), 0);
		/* Not a terminal, no --wait: recorded, not followed. */
		assert_non_null(strstr(out, "the engine acts on it at its next turn"));
	} else {
		snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/retry", id);
		iapi_http("POST", path, TOKEN_BOB, NULL, 0, NULL, &r);
		if (r.status != 202)
			fail_msg("retry: %ld %s", r.status, r.body ? r.body : "");
		iapi_resp_clear(&r);
	}
	/* The retry is acted on at the engine's next turn: the plan runs
	 * again, then waits at the gate. */
	json_decref(iapi_wait_plan(id, "running"));
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));
	assert_non_null(iapi_actor_of(id, "step.retry"));
	assert_string_equal(iapi_actor_of(id, "step.retry"), "bob");
	if (via_cli) {
		/* --wait --json: the command's last document, done. */
		assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_ALICE, "abort", "--server",
		    iapi_base,
		    name, "--wait", "--json", NULL), 0);
		j = json_loads(out, 0, NULL);
		if (j == NULL)
			fail_msg("abort --wait --json printed no JSON: %s", out);
		assert_string_equal(json_string_value(json_object_get(j, "state")), "done");
		assert_string_equal(json_string_value(json_object_get(j, "kind")), "abort");
		json_decref(j);
	} else {
		snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
		iapi_http("POST", path, TOKEN_ALICE, "{\"comment\":\"not today\"}", 23,
		    "Content-Type: application/json", &r);
		if (r.status != 202)
			fail_msg("abort: %ld %s", r.status, r.body ? r.body : "");
		iapi_resp_clear(&r);
	}
	j = iapi_wait_plan(id, "aborted");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "steps"), 1), "status")), "waiting_approval");
	json_decref(j);
	assert_non_null(iapi_actor_of(id, "plan.aborted"));
	assert_string_equal(iapi_actor_of(id, "plan.aborted"), "alice");
	iapi_cleanup_broker(test);
}

static void
test_retry_and_abort_routes(void **state)
{
	(void)state;
	retry_and_abort("routes", false);
}

static void
test_remote_retry_and_abort(void **state)
{
	(void)state;
	retry_and_abort("remote", true);
}

/* Raises an alert of KIND on plan ID in the server's database, as the
 * watch does (store_alert_raise); returns its id. */
static long long
raise_alert(long long id, const char *kind)
{
	struct store *s = NULL;
	int64_t aid = 0;
	bool raised = false;
	char err[512];

	if (store_open(iapi_db, &s, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (store_alert_raise(s, id, kind, "raised by test_api", clock_now_ms(), &aid,
	    &raised, err, sizeof(err)) != 0 || !raised)
		fail_msg("raising a %s alert: %s", kind, err);
	store_close(s);
	return (long long)aid;
}

/* Waits until plan ID lists no open alert AID. */
static void
wait_acked(long long id, long long aid)
{
	char path[64];

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		json_t *j = iapi_get(path), *a;
		size_t i;
		bool open = false;

		json_array_foreach(json_object_get(j, "alerts"), i, a)
			open = open || json_integer_value(json_object_get(a, "id")) == aid;
		json_decref(j);
		if (!open)
			return;
		iapi_sleep_ms(100);
	}
	fail_msg("alert %lld of plan %lld was never acknowledged", aid, id);
}

/* Each of plan ID's open alerts says what its kind means, how to check and
 * clear it (the alert kinds' table), and whether its cause is still there:
 * a parking alert's is, as the watch raised it; a probe's is one
 * occurrence. */
static void
assert_alert_fields(long long id)
{
	json_t *j, *a;
	size_t i;

	j = iapi_getf("/api/plans/%lld", id);
	assert_int_equal(json_array_size(json_object_get(j, "alerts")), 2);
	json_array_foreach(json_object_get(j, "alerts"), i, a) {
		const char *kind = json_string_value(json_object_get(a, "kind"));

		assert_true(strlen(json_string_value(json_object_get(a, "means"))) > 20);
		assert_true(strlen(json_string_value(json_object_get(a, "check"))) > 20);
		assert_true(strlen(json_string_value(json_object_get(a, "clear"))) > 20);
		/* parking's cause is followed (and there); probe is one
		 * occurrence, with no cause to follow. */
		if (strcmp(kind, "parking") == 0)
			assert_true(json_is_true(json_object_get(a, "cause_present")));
		else
			assert_null(json_object_get(a, "cause_present"));
	}
	json_decref(j);
}

/* Open alerts acknowledged through the ack route (bob) and the remote ack
 * verb (alice): each leaves the plan's open alerts, and the history
 * records alert.acked by that operator. One whose cause is still there
 * (parking) is acknowledged with the words that say it returns until the
 * cause is cleared, in the route's answer and in the command's outcome. */
static void
test_ack_route_and_remote_ack(void **state)
{
	char name[80], path[128], out[4096], aid_s[32];
	struct resp r;
	long long id, a1, a2, cmd;
	json_t *j;

	(void)state;
	id = iapi_submit("ack", name, sizeof(name));
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));
	a1 = raise_alert(id, "parking");
	a2 = raise_alert(id, "probe");
	assert_alert_fields(id);
	snprintf(path, sizeof(path), "/api/plans/%lld/alerts/%lld/ack", id, a1);
	iapi_http("POST", path, TOKEN_BOB, "{\"comment\":\"seen\"}", 18,
	    "Content-Type: application/json", &r);
	if (r.status != 202)
		fail_msg("ack: %ld %s", r.status, r.body ? r.body : "");
	if ((j = json_loads(r.body, 0, NULL)) == NULL)
		fail_msg("ack's answer is not JSON: %s", r.body);
	assert_true(json_is_true(json_object_get(j, "cause_present")));
	if (strstr(json_string_value(json_object_get(j, "cause")), "is still there") == NULL)
		fail_msg("ack's answer does not say the cause is still there: %s", r.body);
	cmd = (long long)json_integer_value(json_object_get(j, "command"));
	json_decref(j);
	iapi_resp_clear(&r);
	wait_acked(id, a1);
	/* The alert is acknowledged just before the command is marked done. */
	j = iapi_wait_command(id, cmd);
	if (strstr(json_string_value(json_object_get(j, "outcome")), "is still there") == NULL)
		fail_msg("the ack's outcome does not say the cause is still there: %s",
		    json_string_value(json_object_get(j, "outcome")));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/alerts/%lld/ack", id, a1);
	assert_non_null(iapi_actor_of(id, "alert.acked"));
	assert_string_equal(iapi_actor_of(id, "alert.acked"), "bob");
	/* The other is still open; the CLI acknowledges it. */
	iapi_expect_error("POST", path, TOKEN_BOB, NULL, 0, NULL, 409);
	/* By its kind, as approve takes a step's: a mistyped one is answered
	 * with the open alerts and the one meant. */
	assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_ALICE, "ack", "--server", iapi_base, name,
	    "prbe", NULL), 1);
	snprintf(aid_s, sizeof(aid_s), "#%lld probe", a2);
	if (strstr(out, "(did you mean 'probe'?); its open alerts: ") == NULL ||
	    strstr(out, aid_s) == NULL)
		fail_msg("ack of a mistyped kind said: %s", out);
	assert_int_equal(iapi_cli(out, sizeof(out), TOKEN_ALICE, "ack", "--server", iapi_base, name,
	    "probe", NULL), 0);
	wait_acked(id, a2);
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	iapi_http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	iapi_resp_clear(&r);
	json_decref(iapi_wait_plan(id, "aborted"));
	iapi_cleanup_broker("ack");
}

static void
test_stop_and_resume(void **state)
{
	char name[80], path[128], line[4096];
	struct resp r;
	json_t *j;
	long long id;
	int requests = 0;
	FILE *f;

	(void)state;
	id = iapi_submit("resume", name, sizeof(name));
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));
	/* SIGTERM: a clean stop. */
	assert_int_equal(iapi_stop_server(), 0);
	iapi_http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 0);
	iapi_resp_clear(&r);
	/* Restarted, it picks the plan up where it was. */
	iapi_start_server(iapi_ops);
	j = iapi_getf("/api/plans/%lld", id);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "running");
	json_decref(j);
	json_decref(iapi_wait_step(id, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	iapi_http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 202);
	iapi_resp_clear(&r);
	json_decref(iapi_wait_plan(id, "succeeded"));
	assert_string_equal(iapi_actor_of(id, "step.approved"), "alice");
	iapi_cleanup_broker("resume");

	/* The log has a line per request and never a token. */
	f = fopen(iapi_logfile, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		assert_null(strstr(line, TOKEN_ALICE));
		assert_null(strstr(line, TOKEN_BOB));
		assert_null(strstr(line, "tok-"));
		requests += strstr(line, "msg=\"http ") != NULL;
	}
	fclose(f);
	assert_true(requests > 20);
}

ITEST_MAIN(iapi_main,
	cmocka_unit_test(test_remote_cli),
	cmocka_unit_test(test_retry_and_abort_routes),
	cmocka_unit_test(test_remote_retry_and_abort),
	cmocka_unit_test(test_ack_route_and_remote_ack),
	cmocka_unit_test(test_stop_and_resume))
