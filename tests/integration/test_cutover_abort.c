/* test_cutover_abort (integration): an abort: after the flip (rolled back),
 * during the watch, at each gate, and with the flag service down (not
 * claimed rolled back). */
#include "itest_cutover.h"

static void
test_abort_after_the_flip_rolls_back(void **state)
{
	struct step_ctx c;
	struct plan *p;

	(void)state;
	icut_begin("rollback", &p, &c, NULL, "1s");
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as", "carol",
	    "--comment", "consumers saw duplicates", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
	icut_assert_rolled_back(p);
	icut_end(p, &c);
}

/* Asserts that the test's three old queues still exist (C's broker). */
static void
assert_old_queues_left(struct step_ctx *c)
{
	struct broker_queue_info qi;
	char err[512], name[160];

	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		if (broker_queue_inspect(c->amqp, name, &qi, err, sizeof(err)) != 0)
			fail_msg("old queue '%s' is gone: %s", name, err);
	}
}

/* An abort while the engine runs the watch (a long allowance keeps it
 * running): the running engine acts on it at its next turn, turns the flag
 * back off (read back from Unleash), marks the plan aborted and exits 1;
 * the watch never succeeds, remove_old never runs, the old queues stay. */
static void
test_abort_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	pid_t pid;

	(void)state;
	icut_begin("watchabort", &p, &c, NULL, "10m");
	pid = icut_run_into_the_watch(2);
	assert_int_equal(icut_flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as", "carol",
	    "--comment", "the watch shows duplicates", NULL), 0);
	assert_true(icut_wait_plan("aborted", 60000));
	assert_int_equal(itest_wait(pid), 1);
	icut_assert_rolled_back(p);
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_not_equal(st.status, "succeeded");
	store_step_clear(&st);
	assert_int_equal(icut_read_step(6, &st), 0);
	assert_string_equal(st.status, "pending");
	store_step_clear(&st);
	assert_old_queues_left(&c);
	icut_end(p, &c);
}

/* An abort at each step's gate, one plan per step: the engine marks the
 * plan aborted and exits 1; before the flip nothing is rolled back and
 * the flag was never on; from the watch's gate on, the flag is turned
 * back off and read back; no old queue is removed. The engine reuses one
 * step context for the rollback: run with an AddressSanitizer build of
 * cutover (scripts/test does in CI), a read of a step's freed inputs
 * there is an error. */
static void
test_abort_at_each_gate(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char test[32], status[32];

	(void)state;
	for (unsigned k = 0; k < sizeof(icut_step_names) / sizeof(icut_step_names[0]); k++) {
		snprintf(test, sizeof(test), "gate%u", k);
		icut_gates = 1u << k;
		icut_begin(test, &p, &c, NULL, "1s");
		if (itest_cutover("run", "--db", icut_db, icut_planfile, NULL) != 3)
			fail_msg("run did not stop at %s's gate", icut_step_names[k]);
		assert_int_equal(icut_flag_now(p), k > 4 ? 1 : 0);
		assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as",
		    "carol", "--comment", icut_step_names[k], NULL), 0);
		assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
		itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
		if (strcmp(status, "aborted") != 0)
			fail_msg("aborted at %s's gate, the plan is '%s'", icut_step_names[k],
			    status);
		assert_int_equal(itest_count(&t, "plan.aborted"), 1);
		assert_int_equal(itest_count(&t, "rollback.confirmed"), k > 4 ? 1 : 0);
		assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
		assert_int_equal(icut_flag_now(p), 0);
		assert_old_queues_left(&c);
		icut_end(p, &c);
	}
}

/* Runs `cutover run` on the test's plan with the flag service unreachable
 * from it: its HTTP goes through a proxy that refuses every connection
 * (http_proxy, honoured by libcurl), except to 127.0.0.1 (no_proxy), where
 * the broker's management API is; the plan's flag URL names the test
 * Unleash as localhost. Returns the exit status. */
static int
run_with_the_flag_service_down(void)
{
	int rc;

	setenv("http_proxy", "http://127.0.0.1:1", 1);
	setenv("no_proxy", "127.0.0.1", 1);
	rc = itest_cutover("run", "--db", icut_db, icut_planfile, NULL);
	unsetenv("http_proxy");
	unsetenv("no_proxy");
	return rc;
}

/* An abort after the flip while the flag service is down: the rollback
 * cannot be confirmed, so the plan is not marked aborted (abort.failed
 * says why), the flag is still on and nothing claims otherwise, and the
 * old queues stay. With the service back, the abort rolls back. */
static void
test_abort_with_the_flag_service_down(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32], url[300];
	const char *u = getenv("CUTOVER_TEST_UNLEASH_URL");

	(void)state;
	if (u == NULL || strncmp(u, "http://127.0.0.1:", 17) != 0)
		fail_msg("CUTOVER_TEST_UNLEASH_URL is not http://127.0.0.1:PORT: %s",
		    u ? u : "(unset)");
	snprintf(url, sizeof(url), "http://localhost:%s", u + 17);
	icut_begin("abortdown", &p, &c, url, "1s");
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as", "carol",
	    NULL), 0);
	(void)run_with_the_flag_service_down();
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_not_equal(status, "aborted");
	assert_int_equal(itest_count(&t, "abort.failed"), 1);
	assert_int_equal(itest_count(&t, "plan.aborted"), 0);
	assert_int_equal(itest_count(&t, "rollback.confirmed"), 0);
	assert_int_equal(icut_flag_now(p), 1);
	assert_old_queues_left(&c);

	/* The service back: the abort goes through. */
	assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as", "carol",
	    NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
	icut_assert_rolled_back(p);
	assert_old_queues_left(&c);
	icut_end(p, &c);
}

ITEST_MAIN(icut_main,
	cmocka_unit_test(test_abort_after_the_flip_rolls_back),
	cmocka_unit_test(test_abort_during_the_watch),
	cmocka_unit_test(test_abort_with_the_flag_service_down),
	cmocka_unit_test(test_abort_at_each_gate))
