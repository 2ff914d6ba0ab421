/* test_engine (integration): the engine runs plans out of a real SQLite
 * file against a real RabbitMQ node, with its gates approved, its failures
 * retried and its runs killed (kill -9) from other processes — the cutover
 * binary in CUTOVER_BINARY, as an operator would run it. The flip and the
 * watch with a real Unleash are in test_cutover.c. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "engine.h"
#include "itest_broker.h"
#include "itest_engine.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "step.h"
#include "store.h"

/* Names the test's objects and files. What an earlier test left (it
 * failed half-way) is cleaned up first; this test's broker objects and
 * processes are removed by itest_cleanup, also when it fails. */
static void
set_names(const char *test)
{
	itest_cleanup();
	ieng_set_names(test);
	itest_plan_cleanup(ieng_prefix, ieng_plan_name);
}

/* Writes the test's plan with STEPS (a YAML flow list) to planfile. */
static void
write_plan(const char *steps, const char *canary)
{
	struct itest_plan b;

	ieng_plan_begin(&b, canary);
	itest_plan_addf(&b, "steps: %s\n", steps);
	itest_plan_write(&b, ieng_planfile);
}

/* Waits until some level queue of the test's ladder holds a message (up
 * to TIMEOUT_MS). Returns 1 if one did. */
static int
wait_ladder_holds(int timeout_ms)
{
	struct step_ctx c;
	struct plan *p;
	struct broker_queue_info qi;
	char name[160], err[512];
	int held = 0;

	ieng_open_ctx(&c, &p);
	for (int t = 0; !held && t < timeout_ms / 20; t++) {
		for (int k = 0; !held && k < p->ladder.levels; k++) {
			ladder_level_queue(&p->ladder, k, name, sizeof(name));
			held = broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)) == 0 &&
			    qi.messages > 0;
		}
		if (!held)
			itest_sleep_ms(20);
	}
	step_ctx_close(&c);
	plan_free(p);
	return held;
}

static void
test_gate_approved_from_another_process(void **state)
{
	struct itest_history t;
	char status[32];
	int i;

	(void)state;
	set_names("gate");
	write_plan("[declare_ladder, { step: verify_ladder, gate: true }]", "100ms");
	/* The engine stops at the gate and says so. */
	assert_int_equal(ieng_run(), 3);
	ieng_step_status(1, status, sizeof(status));
	assert_string_equal(status, "waiting_approval");
	/* Approving needs a name; approving a step not waiting is refused. */
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "2", NULL), 2);
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "1", "--as", "alice",
	    NULL), 1);
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "verify_ladder", "--as",
	    "alice", "--comment", "ladder looks right", NULL), 0);
	assert_int_equal(ieng_run(), 0);

	ieng_history(&t, "succeeded");
	itest_expect_counts(&t, "plan.submitted=1 step.waiting_approval=1 step.approved=1 "
	    "step.succeeded=2 plan.succeeded=1");
	for (i = 0; i < t.n; i++)
		if (strcmp(t.kinds[i], "step.approved") == 0)
			assert_string_equal(t.actors[i], "alice");
	assert_int_equal(itest_cutover("history", "--db", ieng_db, "--verify", NULL), 0);
	/* A finished plan runs nothing again. */
	assert_int_equal(ieng_run(), 0);
	itest_read_history(ieng_db, ieng_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "step.succeeded"), 2);
	ieng_cleanup_broker();
}

static void
test_failed_step_retried(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32], name[128], err[1024];

	(void)state;
	set_names("retry");
	write_plan("[declare_ladder, verify_ladder]", "100ms");
	/* A queue in the way, with other arguments: declare_ladder fails,
	 * naming it, and the plan stops there. */
	ieng_open_ctx(&c, &p);
	ieng_queue_in_the_way(&c, name, sizeof(name));
	assert_int_equal(ieng_run(), 1);
	ieng_step_status(0, status, sizeof(status));
	assert_string_equal(status, "failed");
	ieng_step_status(1, status, sizeof(status));
	assert_string_equal(status, "pending");
	/* Running again does not go past the failed step. */
	assert_int_equal(ieng_run(), 1);
	ieng_step_status(1, status, sizeof(status));
	assert_string_equal(status, "pending");

	/* Remove the queue in the way, then retry: the step starts again. */
	assert_int_equal(broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err)), 0);
	step_ctx_close(&c);
	plan_free(p);
	assert_int_equal(itest_cutover("retry", "--db", ieng_db, ieng_plan_name, "1", "--as", "bob", NULL), 0);
	assert_int_equal(ieng_run(), 0);
	ieng_history(&t, "succeeded");
	itest_expect_counts(&t, "step.failed=1 plan.failed=1 step.retry=1 step.succeeded=2");
	ieng_cleanup_broker();
}

/* Test TEST's plan (declare_ladder, verify_ladder, a canary of DELAYS)
 * run by `cutover run` and sent SIG while the canary's messages are in the
 * ladder; asserts that it exits EXIT with the canary still running. */
static void
signal_in_the_canary(const char *test, const char *delays, int sig, int exit)
{
	char status[32];
	pid_t pid;

	set_names(test);
	write_plan("[declare_ladder, verify_ladder, canary]", delays);
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	ieng_wait_step(2, "running", 60000);
	assert_true(wait_ladder_holds(30000));
	kill(pid, sig);
	assert_int_equal(itest_wait(pid), exit);
	ieng_step_status(2, status, sizeof(status));
	assert_string_equal(status, "running");
}

static void
test_killed_during_canary_resumes(void **state)
{
	struct itest_history t;

	(void)state;
	signal_in_the_canary("kill", "100ms, 2s, 3s", SIGKILL, 128 + SIGKILL);

	/* The restarted engine runs the canary again (a new batch) and ends. */
	assert_int_equal(ieng_run(), 0);
	ieng_history(&t, "succeeded");
	/* The steps that had finished did not run again. */
	itest_expect_counts(&t, "step.started=3 step.succeeded=3");
	assert_int_equal(itest_cutover("history", "--db", ieng_db, "--verify", NULL), 0);
	ieng_cleanup_broker();
}

/* Asked to stop (SIGTERM) while the canary waits for a message of 6 s:
 * the run stops at once, the canary's run given up unrecorded (neither
 * succeeded nor failed, no wait of 6 s for it), and the next run runs
 * the canary again and ends. */
static void
test_stopped_during_canary_resumes(void **state)
{
	struct itest_history t;

	(void)state;
	/* 4: cutover run stopped by a signal. */
	signal_in_the_canary("stop", "100ms, 6s", SIGTERM, 4);
	ieng_history(&t, "running");
	itest_expect_counts(&t, "step.started=3 step.succeeded=2 step.failed=0");

	assert_int_equal(ieng_run(), 0);
	ieng_history(&t, "succeeded");
	itest_expect_counts(&t, "step.started=3 step.succeeded=3 step.failed=0");
	ieng_cleanup_broker();
}

static void
test_abort_before_the_flip(void **state)
{
	struct itest_history t;
	char status[32];

	(void)state;
	set_names("abort");
	write_plan("[declare_ladder, { step: verify_ladder, gate: true }]", "100ms");
	assert_int_equal(ieng_run(), 3);
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    "--comment", "wrong window", NULL), 0);
	/* The engine acts on the abort at its next turn: no rollback needed. */
	assert_int_equal(ieng_run(), 1);
	ieng_history(&t, "aborted");
	itest_expect_counts(&t, "plan.aborted=1 rollback.requested=0");
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol", NULL), 1);
	/* The aborted plan holds its name until archived. */
	assert_int_equal(ieng_run(), 1);
	assert_int_equal(itest_cutover("archive", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    NULL), 0);
	assert_int_equal(itest_cutover("archive", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    NULL), 1);
	itest_read_history(ieng_db, ieng_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "plan.archived"), 1);
	/* A new plan of the same name may now be submitted. */
	assert_int_equal(ieng_run(), 3);
	ieng_cleanup_broker();
}

static void
test_tampered_history_is_detected(void **state)
{
	char cmd[700];

	(void)state;
	set_names("tamper");
	write_plan("[declare_ladder]", "100ms");
	assert_int_equal(ieng_run(), 0);
	assert_int_equal(itest_cutover("history", "--db", ieng_db, "--verify", NULL), 0);
	/* Someone with the file and sqlite3 drops the guard and edits an event. */
	snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"DROP TRIGGER events_no_update; "
	    "UPDATE events SET actor = 'mallory' WHERE id = 2;\"", ieng_db);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(itest_cutover("history", "--db", ieng_db, "--verify", NULL), 1);
	assert_int_equal(itest_cutover("history", "--db", ieng_db, ieng_plan_name, NULL), 1);
	ieng_cleanup_broker();
}

/* Starts `cutover serve --db DB --listen LISTEN` in the background, its
 * log in OUT, with CUTOVER_FAULT=FAULT when FAULT is not NULL. Returns its
 * pid. */
static pid_t
spawn_serve(const char *out, const char *listen, const char *fault)
{
	char *argv[] = { (char *)getenv("CUTOVER_BINARY"), "serve", "--db", ieng_db,
	    "--listen", (char *)listen, NULL };
	pid_t pid;

	if (fault != NULL)
		setenv("CUTOVER_FAULT", fault, 1);
	pid = itest_spawn(out, argv);
	unsetenv("CUTOVER_FAULT");
	return pid;
}

/* How many times FILE (a process's log) holds TEXT. */
static int
file_count(const char *file, const char *text)
{
	static char buf[1 << 20];
	FILE *f = fopen(file, "r");
	size_t n;
	int k = 0;

	if (f == NULL)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	for (const char *p = buf; (p = strstr(p, text)) != NULL; p += strlen(text))
		k++;
	return k;
}

/* The port serve says in FILE (its log) it serves on, or 0. */
static unsigned
file_port(const char *file)
{
	char line[2048];
	const char *at;
	unsigned port = 0;
	FILE *f = fopen(file, "r");

	while (f != NULL && port == 0 && fgets(line, sizeof(line), f) != NULL)
		if ((at = strstr(line, " on port ")) != NULL)
			port = (unsigned)strtoul(at + 9, NULL, 10);
	if (f != NULL)
		fclose(f);
	return port;
}

/* The engine schedules on the monotonic clock: a wall clock stepped back
 * an hour (an NTP step, a `date -s`) while a gated step waits does not
 * hold the step for that hour once it is approved. The step is produced
 * inside serve by its clock_back fault (the machine's own clock is left
 * alone). */
static void
test_wall_clock_stepped_back(void **state)
{
	char out[320];
	pid_t pid;
	int i;

	(void)state;
	set_names("clock");
	write_plan("[declare_ladder, { step: verify_ladder, gate: true }]", "100ms");
	assert_int_equal(ieng_run(), 3);
	snprintf(out, sizeof(out), "%s/clock.log", ieng_dir);
	pid = spawn_serve(out, "127.0.0.1:0", "clock_back:engine.blocked");
	for (i = 0; i < 1500 && !file_count(out, "the wall clock stepped back"); i++)
		itest_sleep_ms(20);	/* up to 30 s */
	assert_true(file_count(out, "the wall clock stepped back"));
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "verify_ladder",
	    "--as", "alice", NULL), 0);
	/* verify_ladder runs at the engine's next turn, not an hour later. */
	ieng_wait_step(1, "succeeded", 20000);
	assert_int_equal(itest_stop(pid), 0);
	assert_int_equal(itest_cutover("history", "--db", ieng_db, "--verify", NULL), 0);
	ieng_cleanup_broker();
}

/* A stored plan this version no longer loads (here a key it does not
 * know, as a plan written for a later version would have) is said once in
 * the log, not at every turn; the plan's page, its history and /metrics
 * show it as needing attention, with what to do. */
static void
test_plan_that_no_longer_loads(void **state)
{
	struct itest_history t;
	char status[32], out[320], body[320], url[128], cmd[1200];
	unsigned port;
	pid_t pid;
	int i;

	(void)state;
	set_names("noload");
	write_plan("[{ step: declare_ladder, gate: true }]", "100ms");
	assert_int_equal(ieng_run(), 3);
	snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"UPDATE plans SET yaml = yaml || "
	    "'later_key: 1' || char(10) WHERE name = '%s';\"", ieng_db, ieng_plan_name);
	assert_int_equal(system(cmd), 0);
	snprintf(out, sizeof(out), "%s/noload.log", ieng_dir);
	pid = spawn_serve(out, "127.0.0.1:0", NULL);
	for (i = 0; i < 1500 && file_count(out, "cannot run") == 0; i++)
		itest_sleep_ms(20);	/* up to 30 s */
	itest_sleep_ms(4000);		/* some eight turns of the engine */
	assert_int_equal(file_count(out, "cannot run"), 1);
	assert_true((port = file_port(out)) > 0);
	snprintf(body, sizeof(body), "%s/noload.metrics", ieng_dir);
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/metrics", port);
	snprintf(cmd, sizeof(cmd), "curl -sf -o '%s' '%s'", body, url);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "cutover_plan_cannot_run{plan=\"%s\"} 1", ieng_plan_name);
	assert_int_equal(file_count(body, cmd), 1);
	snprintf(cmd, sizeof(cmd), "cutover_alerts_open{plan=\"%s\",kind=\"plan_cannot_run\"} 1",
	    ieng_plan_name);
	assert_int_equal(file_count(body, cmd), 1);
	snprintf(body, sizeof(body), "%s/noload.json", ieng_dir);
	/* The test's database holds this one plan: id 1. */
	snprintf(cmd, sizeof(cmd), "curl -sf -o '%s' 'http://127.0.0.1:%u/api/plans/1'",
	    body, port);
	assert_int_equal(system(cmd), 0);
	/* The open alert, and the one thing that holds the plan (the holds
	 * name the alert's kind too). */
	assert_int_equal(file_count(body, "\"kind\":\"plan_cannot_run\""), 2);
	assert_int_equal(file_count(body, "\"what\":\"cannot_run\""), 1);
	assert_true(file_count(body, "later_key") > 0);
	assert_true(file_count(body, "what to do: ") > 0);
	/* A command no engine would answer is refused now, saying why. */
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "declare_ladder",
	    "--as", "alice", NULL), 1);
	assert_int_equal(itest_stop(pid), 0);
	itest_read_history(ieng_db, ieng_plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "plan.cannot_run"), 1);

	/* Once the plan loads again, the alert closes by itself. */
	snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"UPDATE plans SET yaml = replace(yaml, "
	    "'later_key: 1' || char(10), '') WHERE name = '%s';\"", ieng_db, ieng_plan_name);
	assert_int_equal(system(cmd), 0);
	pid = spawn_serve(out, "127.0.0.1:0", NULL);
	for (i = 0; i < 1500 && file_count(out, "loads again") == 0; i++)
		itest_sleep_ms(20);
	assert_int_equal(file_count(out, "loads again"), 1);
	assert_int_equal(itest_stop(pid), 0);
	itest_read_history(ieng_db, ieng_plan_name, &t, status, sizeof(status));
	itest_expect_counts(&t, "alert.acked=1 plan.cannot_run=1");
}

ITEST_MAIN(ieng_main,
	cmocka_unit_test(test_gate_approved_from_another_process),
	cmocka_unit_test(test_failed_step_retried),
	cmocka_unit_test(test_killed_during_canary_resumes),
	cmocka_unit_test(test_stopped_during_canary_resumes),
	cmocka_unit_test(test_abort_before_the_flip),
	cmocka_unit_test(test_tampered_history_is_detected),
	cmocka_unit_test(test_wall_clock_stepped_back),
	cmocka_unit_test(test_plan_that_no_longer_loads))
