/* test_cutover_storage (integration): the database under a plan: the disk
 * full during the watch, and the database lost after the flip (not started
 * over). */
#include "itest_api.h"
#include "itest_cutover.h"

/* Whether file PATH holds TEXT. */
static bool
file_has(const char *path, const char *text)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, text) != NULL;
	fclose(f);
	return found;
}

/* Fills the filesystem holding PATH's directory with a file PATH until a
 * write finds it full. Returns 0, or -1 when it could not. */
static int
fill_disk(const char *path)
{
	static char chunk[65536];
	FILE *f = fopen(path, "w");
	int rc = -1;

	if (f == NULL)
		return -1;
	setvbuf(f, NULL, _IONBF, 0);
	for (;;)
		if (fwrite(chunk, 1, sizeof(chunk), f) != sizeof(chunk)) {
			rc = errno == ENOSPC ? 0 : -1;
			break;
		}
	for (size_t n = sizeof(chunk) / 2; n >= 1; n /= 2)	/* to the last bytes */
		while (fwrite(chunk, 1, n, f) == n)
			;
	fclose(f);
	return rc;
}

/* The disk holding the database fills up during the watch: `cutover run`
 * stops with 4 ("stopped: run again to resume"), saying the disk is full,
 * and records nothing false: the plan is still running and the watch is
 * not failed. With space freed, run again resumes the watch where it was
 * (the abort that ends the test rolls the flag back). The database lives
 * on a 4 MB tmpfs this test mounts (it needs root, as the suite has). */
static void
test_disk_full_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	char mnt[300], filler[340], saved[256], listen[64], out[65536], conf[300];
	char hooklog[300];
	unsigned port, hook;
	pid_t receiver;
	FILE *f;
	int64_t until;
	pid_t pid;
	int rc, code;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/small", icut_dir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m") != 0)
		fail_msg("mounting a 4 MB tmpfs at %s: %s (the suite runs as root)", mnt,
		    strerror(errno));
	snprintf(saved, sizeof(saved), "%s", icut_dir);
	snprintf(icut_dir, sizeof(icut_dir), "%s", mnt);
	icut_begin("diskfull", &p, &c, NULL, "10m");
	snprintf(icut_dir, sizeof(icut_dir), "%s", saved);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	icut_run_to_the_flip_and_approve();
	pid = itest_start_run(icut_db, icut_planfile, NULL);
	assert_true(icut_wait_step(5, "running", 30000));
	assert_true(icut_wait_ticks(2, 60000));
	assert_int_equal(fill_disk(filler), 0);
	rc = itest_wait(pid);
	if (rc != 4)
		fail_msg("cutover run exited %d on a full disk, not 4 (stopped, resume me)", rc);
	assert_true(icut_wait_plan("running", 1000));
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);
	/* serve on the same full disk: held, and /healthz, /metrics and a
	 * notifier say why; once space is freed it goes on by itself, and
	 * the notifier is told. */
	port = itest_free_port();
	hook = itest_free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	snprintf(conf, sizeof(conf), "%s/serve.yaml", saved);
	snprintf(hooklog, sizeof(hooklog), "%s/hook.log", saved);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "listen: %s\ndb: %s\nnotifiers:\n  - { name: hook, kind: webhook, "
	    "url: 'http://127.0.0.1:%u/hook', events: [plan_finished] }\n", listen, icut_db, hook);
	fclose(f);
	{
		char script[512], portstr[16], ready[360];
		char *rargv[] = { "/usr/bin/python3", script, portstr, hooklog, NULL };

		snprintf(script, sizeof(script), "%s/tests/integration/notify_receiver.py",
		    getenv("CUTOVER_SOURCE_DIR"));
		snprintf(portstr, sizeof(portstr), "%u", hook);
		snprintf(out, sizeof(out), "%s/hook.out", saved);
		snprintf(ready, sizeof(ready), "%s.ready", hooklog);
		receiver = itest_spawn(out, rargv);
		for (until = icut_now_ms() + 30000; access(ready, F_OK) != 0; itest_sleep_ms(20))
			if (icut_now_ms() > until)
				fail_msg("the webhook receiver on port %u did not start", hook);
	}
	{
		char *argv[] = { (char *)getenv("CUTOVER_BINARY"), "serve", "--config", conf,
		    NULL };

		snprintf(out, sizeof(out), "%s/serve.log", saved);
		pid = itest_spawn(out, argv);
	}
	until = icut_now_ms() + 60000;
	while ((code = iapi_fetch(port, "GET", "/healthz", NULL, out, sizeof(out))) != 503 ||
	    strstr(out, "disk full") == NULL) {
		if (icut_now_ms() > until)
			fail_msg("/healthz never said disk full: %d %s", code, out);
		itest_sleep_ms(200);
	}
	fprintf(stderr, "# /healthz on a full disk: %s\n", out);
	assert_int_equal(iapi_fetch(port, "GET", "/metrics", NULL, out, sizeof(out)), 200);
	assert_non_null(strstr(out, "cutover_database_disk_full 1"));
	for (until = icut_now_ms() + 30000; !file_has(hooklog, "\\\"event\\\":\\\"disk_full\\\"");
	    itest_sleep_ms(100))
		if (icut_now_ms() > until)
			fail_msg("the notifier was not told the disk is full (%s)", hooklog);
	assert_int_equal(unlink(filler), 0);
	until = icut_now_ms() + 60000;
	while ((code = iapi_fetch(port, "GET", "/healthz", NULL, out, sizeof(out))) != 200) {
		if (icut_now_ms() > until)
			fail_msg("/healthz after space was freed: %d %s", code, out);
		itest_sleep_ms(200);
	}
	assert_int_equal(iapi_fetch(port, "GET", "/metrics", NULL, out, sizeof(out)), 200);
	assert_non_null(strstr(out, "cutover_database_disk_full 0"));
	for (until = icut_now_ms() + 30000;
	    !file_has(hooklog, "\\\"event\\\":\\\"disk_full_resolved\\\""); itest_sleep_ms(100))
		if (icut_now_ms() > until)
			fail_msg("the notifier was not told the disk has space again (%s)",
			    hooklog);
	assert_int_equal(itest_stop(pid), 0);
	assert_int_equal(itest_stop(receiver), 0);
	/* Resumed by run: the watch ticks again, then the abort ends it. */
	pid = itest_start_run(icut_db, icut_planfile, NULL);
	assert_true(icut_wait_ticks(2, 60000));
	assert_int_equal(itest_cutover("abort", "--db", icut_db, icut_plan_name, "--as", "carol",
	    "--comment", "the disk filled up", NULL), 0);
	assert_true(icut_wait_plan("aborted", 60000));
	assert_int_equal(itest_wait(pid), 1);
	icut_assert_rolled_back(p);
	icut_end(p, &c);
}

/* The database lost under a plan that had flipped: a fresh database and
 * the same plan refuse to start it over (step 1 fails naming what the
 * broker and the flag service show, and --new), and the operator's --new
 * starts it anew. A flag that reads on with no ladder of the plan is no
 * run of it (a flag turned on by hand, or shared): that plan goes ahead
 * and declares its ladder; its database then lost, the flag on beside
 * that ladder is. */
static void
test_lost_database_is_not_started_over(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	json_t *r = NULL;
	char err[512];

	(void)state;
	icut_begin("lostdb", &p, &c, NULL, "1s");
	if (flag_switch(p, true, &r, err, sizeof(err)) != 0)
		fail_msg("turning the flag on: %s", err);
	json_decref(r);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_read_step(0, &st), 0);
	assert_string_equal(st.status, "succeeded");
	store_step_clear(&st);
	assert_int_equal(unlink(icut_db), 0);

	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
	assert_int_equal(icut_read_step(0, &st), 0);
	assert_string_equal(st.status, "failed");
	fprintf(stderr, "# refused: %s\n", st.error);
	assert_non_null(strstr(st.error, "has no earlier record in this database"));
	assert_non_null(strstr(st.error, "reads on beside its ladder"));
	assert_non_null(strstr(st.error, "--new"));
	store_step_clear(&st);
	assert_int_equal(icut_flag_now(p), 1);	/* nothing was switched */
	assert_int_equal(unlink(icut_db), 0);
	/* Told to: measured, declared, canaried, and waiting at the flip. */
	assert_int_equal(itest_cutover("run", "--new", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_read_step(0, &st), 0);
	assert_string_equal(st.status, "succeeded");
	store_step_clear(&st);
	icut_end(p, &c);
}

ITEST_MAIN(icut_main,
	cmocka_unit_test_teardown(test_disk_full_during_the_watch, icut_unmount_small),
	cmocka_unit_test(test_lost_database_is_not_started_over))
