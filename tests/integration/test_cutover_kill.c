/* test_cutover_kill (integration): an engine killed or stopped and run
 * again: between the flip and its record, during the watch (SIGKILL,
 * SIGTERM to run and to serve), after the watch read a probe, during
 * remove_old; each resumes where it was and records everything once. */
#include "itest_cutover.h"

static void
test_crash_between_flip_and_its_record(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32];
	pid_t pid;

	(void)state;
	icut_begin("flipcrash", &p, &c, NULL, "1s");
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "5", "--as",
	    "alice",
	    NULL), 0);
	/* The flag service takes the flip; the engine dies before recording it. */
	pid = itest_start_run(icut_db, icut_planfile, "crash:flip.confirmed");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	assert_int_equal(icut_flag_now(p), 1);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 0);

	/* The restarted engine reads the flag instead of flipping again. */
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	assert_true(icut_wait_step(5, "succeeded", 1));
	icut_end(p, &c);
}

/* The engine (`cutover run`, or `cutover serve` when SERVE) stopped by SIG
 * (exiting EXIT) in the middle of the watch, TEST naming the plan; run
 * again, it resumes the watch where it was. */
static void
stopped_during_watch(const char *test, bool serve, int sig, int exit_status)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct store_step st;
	char status[32];
	int64_t started, deadline;
	pid_t pid;

	icut_begin(test, &p, &c, NULL, "1s");
	icut_run_to_the_flip_and_approve();
	pid = serve ? itest_start_serve(icut_db) : itest_start_run(icut_db, icut_planfile, NULL);
	assert_true(icut_wait_step(5, "running", 30000));
	/* Let it sample a few times, then stop it. */
	assert_true(icut_wait_ticks(3, 60000));
	started = icut_step_number(5, "started_ms");
	deadline = icut_step_number(5, "deadline_ms");
	assert_true(started > 0);
	assert_true(deadline > started);
	kill(pid, sig);
	assert_int_equal(itest_wait(pid), exit_status);
	/* Stopped with the watch in flight: neither finished nor failed. */
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);

	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	/* The watch kept its start; its deadline never moved earlier. */
	assert_int_equal(icut_step_number(5, "started_ms"), started);
	assert_true(icut_step_number(5, "deadline_ms") >= deadline);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	icut_end(p, &c);
}

static void
test_killed_during_watch_keeps_its_deadline(void **state)
{
	(void)state;
	stopped_during_watch("watchkill", false, SIGKILL, 128 + SIGKILL);
}

/* SIGTERM mid-watch: `run` exits 4, and the watch resumes with its start
 * and deadline. */
static void
test_sigterm_during_watch_resumes(void **state)
{
	(void)state;
	stopped_during_watch("watchterm", false, SIGTERM, 4);
}

/* `cutover serve` stopped by SIGTERM mid-watch, as systemd stops
 * cutover.service: a clean exit (0), the watch left
 * running, and resumed with its start and deadline. */
static void
test_serve_sigterm_during_watch_resumes(void **state)
{
	(void)state;
	stopped_during_watch("serveterm", true, SIGTERM, 0);
}

static int
print_alert(const struct store_alert *a, void *arg)
{
	(void)arg;
	printf("alert %s: %s\n", a->kind, a->message);
	return 0;
}

/* Prints the test plan's alerts, for a failure's diagnosis. */
static void
show_alerts(void)
{
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	if (store_open(icut_db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, icut_plan_name, &sp, err, sizeof(err)) == 0)
		store_each_alert(s, sp.id, 0, print_alert, NULL, err, sizeof(err));
	store_close(s);
}

/* Killed right after the watch read a probe and before the engine recorded
 * that tick: the restarted watch still accounts for the probe (it is read
 * again), so no probe is called lost and no alert holds the watch. */
static void
test_killed_after_the_watch_read_a_probe(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32];
	int ended, alerts;
	pid_t pid;

	(void)state;
	icut_begin("probekill", &p, &c, NULL, "1s");
	icut_run_to_the_flip_and_approve();
	pid = itest_start_run(icut_db, icut_planfile, "crash:watch.probe_taken");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	assert_true(icut_step_number(5, "ticks") >= 1);
	/* Resumed: the watch ends (remove_old waits at its gate) within a
	 * generous ceiling; a probe called lost would hold it on the alert. */
	pid = itest_start_run(icut_db, icut_planfile, NULL);
	ended = icut_wait_step(6, "waiting_approval", 60000);
	if (!ended)
		kill(pid, SIGKILL);
	itest_wait(pid);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	alerts = itest_count(&t, "alert.raised");
	show_alerts();
	icut_end(p, &c);
	assert_int_equal(alerts, 0);
	assert_true(ended);
}

/* Killed by SIGKILL right after remove_old deleted a queue and before the
 * deletion was recorded: the restarted engine runs the step again, finds
 * that queue gone and records it so, and removes the rest. Every old queue
 * is accounted for in the history exactly once. */
static void
test_killed_during_remove_old(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_queue_info qi;
	char status[32], err[512], name[160];
	pid_t pid;
	int left = 0;

	(void)state;
	icut_begin("rmkill", &p, &c, NULL, "1s");
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "remove_old",
	    "--as",
	    "bob", NULL), 0);
	pid = itest_start_run(icut_db, icut_planfile, "crash:remove_old.deleted");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		left += broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)) == 0;
	}
	assert_int_equal(left, 2);             /* one deleted, then the crash */

	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 0);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 2);
	assert_int_equal(itest_count(&t, "old.queue_gone"), 1);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		assert_int_equal(itest_count_named(&t, "old.queue_removed", name) +
		    itest_count_named(&t, "old.queue_gone", name), 1);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
		    BROKER_NOT_FOUND);
	}
	icut_end(p, &c);
}

ITEST_MAIN(icut_main,
	cmocka_unit_test(test_crash_between_flip_and_its_record),
	cmocka_unit_test(test_killed_during_watch_keeps_its_deadline),
	cmocka_unit_test(test_sigterm_during_watch_resumes),
	cmocka_unit_test(test_serve_sigterm_during_watch_resumes),
	cmocka_unit_test(test_killed_after_the_watch_read_a_probe),
	cmocka_unit_test(test_killed_during_remove_old))
