/* test_restore: a plan resumed from a backup restored with `cutover
 * restore`, against the real broker, SQLite files and the cutover binary.
 * Between the backup and the restore the lost engine went on — switched
 * the flag, read the watch's probes, read the old path's counters — and
 * none of it is recorded. What the restored engine must do: read the flag
 * before any switch (a toggle-style service would be flipped back by a
 * second write, and an abort must roll back a flip it has no record of),
 * forget the probes in flight at the backup instead of calling them lost,
 * and delete no old queue on readings older than the restore. The flag
 * service is the toggle-style one of itest_flag (every write flips it,
 * writes counted); everything else is the real thing. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "itest_engine.h"
#include "itest_flag.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "old_path.h"
#include "store.h"

static struct srv flag;
static bool flag_up;
static char backup[320];

/* The toggle-style flag service, off. */
static void
flag_begin(void)
{
	iflag_srv_start(&flag);
	flag.toggle = 1;
	flag_up = true;
}

static int
writes(void)
{
	int n;

	pthread_mutex_lock(&flag.mu);
	n = flag.writes;
	pthread_mutex_unlock(&flag.mu);
	return n;
}

static bool
flag_reads_on(void)
{
	bool on;

	pthread_mutex_lock(&flag.mu);
	on = json_is_true(flag.value);
	pthread_mutex_unlock(&flag.mu);
	return on;
}

/* Writes the test's plan with STEPS and WATCH (its watch: section's
 * lines), its flag the toggle service's. */
static void
write_plan(const char *steps, const char *watch)
{
	struct itest_plan b;

	ieng_plan_begin(&b, "100ms");
	itest_plan_addf(&b,
	    "flag:\n"
	    "  kind: http\n"
	    "  on: { method: PUT, url: '%s/flag', body: '{\"enabled\":true}' }\n"
	    "  off: { method: PUT, url: '%s/flag', body: '{\"enabled\":false}' }\n"
	    "  read: { url: '%s/flag', pointer: /enabled, on: true, off: false }\n"
	    "  settle: 15s\n"
	    "watch:\n%s"
	    "steps: %s\n", flag.base, flag.base, flag.base, watch, steps);
	itest_plan_write(&b, ieng_planfile);
}

static const char quick_watch[] = "  interval: 250ms\n  allowance: 1s\n  probe_every: 1s\n";

/* `cutover backup` of the test's database into BACKUP, then `cutover
 * restore` of it into a new database, which the test goes on with. */
static void
backup_now(void)
{
	snprintf(backup, sizeof(backup), "%s/%s.backup", ieng_dir, ieng_plan_name);
	assert_int_equal(itest_cutover("backup", "--db", ieng_db, backup, NULL), 0);
}

static void
restore_into_new(const char *suffix)
{
	char db[300];

	snprintf(db, sizeof(db), "%s.%s", ieng_db, suffix);
	assert_int_equal(itest_cutover("restore", "--db", db, backup, NULL), 0);
	/* Never over a file, and never twice into the same one. */
	assert_int_equal(itest_cutover("restore", "--db", db, backup, NULL), 1);
	snprintf(ieng_db, sizeof(ieng_db), "%s", db);
}

static int
cleanup(void **state)
{
	(void)state;
	ieng_cleanup_broker();
	if (flag_up)
		iflag_srv_stop(&flag);
	flag_up = false;
	return 0;
}

/* The plan up to its flip's gate, backed up there; the flip approved and
 * made on the original database. Returns with one write made and the flag
 * on, and the backup knowing of neither. */
static void
flip_after_the_backup(const char *test)
{
	ieng_set_names(test);
	flag_begin();
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, "
	    "{ step: flip, gate: true }, { step: watch, gate: true }]", quick_watch);
	ieng_make_old_path();
	assert_int_equal(ieng_run(), 3);		/* at the flip's gate */
	backup_now();
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "flip",
	    "--as", "alice", NULL), 0);
	assert_int_equal(ieng_run(), 3);		/* at the watch's gate */
	assert_int_equal(writes(), 1);
	assert_true(flag_reads_on());
}

/* The flip approved again on the restored database reads the flag on and
 * confirms it without a write: a toggle-style service would be turned
 * off by a second one, and producers sent back to the old path. */
static void
test_flip_after_restore_is_not_sent_again(void **state)
{
	struct itest_history h;

	(void)state;
	flip_after_the_backup("flip");
	restore_into_new("restored");
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name, "flip",
	    "--as", "alice", NULL), 0);
	assert_int_equal(ieng_run(), 3);
	assert_int_equal(writes(), 1);
	assert_true(flag_reads_on());
	ieng_history(&h, "running");
	assert_int_equal(itest_count(&h, STORE_EVENT_RESTORED), 1);
	assert_int_equal(itest_count(&h, "flip.confirmed"), 1);
	assert_int_equal(itest_count(&h, "flip.requested"), 0);
	/* The rollback is one write, as on a database never lost. */
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as",
	    "carol", NULL), 0);
	assert_int_equal(ieng_run(), 1);
	assert_int_equal(writes(), 2);
	assert_false(flag_reads_on());
}

/* An abort on the restored database, whose record has no flip, still
 * rolls back the flip the lost engine made: the flag is read, found on
 * and turned off. */
static void
test_abort_after_restore_rolls_back_an_unrecorded_flip(void **state)
{
	struct itest_history h;

	(void)state;
	flip_after_the_backup("abort");
	restore_into_new("restored");
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as",
	    "carol", NULL), 0);
	assert_int_equal(ieng_run(), 1);
	assert_false(flag_reads_on());
	assert_int_equal(writes(), 2);
	ieng_history(&h, "aborted");
	assert_int_equal(itest_count(&h, "rollback.confirmed"), 1);
}

static int
alert_seen(const struct store_alert *a, void *arg)
{
	char *kinds = arg;

	snprintf(kinds + strlen(kinds), 256 - strlen(kinds), "%s%s", kinds[0] ? ", " : "",
	    a->kind);
	return 0;
}

/* The kinds of the open alerts of the test's plan, ", "-separated, into
 * KINDS (256 bytes). */
static void
open_alerts(char kinds[256])
{
	struct store *s = NULL;
	struct store_plan p;
	char err[512];

	kinds[0] = '\0';
	if (store_open(ieng_db, &s, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (store_plan_find(s, ieng_plan_name, &p, err, sizeof(err)) != 0 ||
	    store_each_alert(s, p.id, 1, alert_seen, kinds, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	store_close(s);
}

/* When the plan's last event of each kind below was recorded. */
struct when {
	int64_t restored, removed;
};

static int
event_seen(const struct store_event *ev, void *arg)
{
	struct when *w = arg;

	if (strcmp(ev->kind, STORE_EVENT_RESTORED) == 0)
		w->restored = ev->ts_ms;
	if (strcmp(ev->kind, "old.queue_removed") == 0)
		w->removed = ev->ts_ms;
	return 0;
}

/* A watch backed up with probes in flight, whose engine went on reading
 * them and was then lost: resumed from the restored database, it forgets
 * those probes (watch.restored says how many) rather than calling them
 * lost, and ends by itself with no alert. */
static void
test_watch_after_restore_forgets_its_probes(void **state)
{
	struct itest_history h;
	char st[32], kinds[256];
	pid_t pid;
	int i, rc;

	(void)state;
	ieng_set_names("watch");
	flag_begin();
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, flip, watch, "
	    "{ step: remove_old, gate: true }]",
	    "  interval: 1s\n  allowance: 12s\n  probe_every: 1s\n");
	ieng_make_old_path();
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	/* Backed up a few ticks into the watch, a probe out every tick. */
	ieng_wait_step(5, "running", 60000);
	itest_sleep_ms(3500);
	backup_now();
	/* The lost engine reads the probes out, then is lost. */
	itest_sleep_ms(3000);
	kill(pid, SIGKILL);
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	restore_into_new("restored");
	/* At remove_old's gate within a minute; a watch that called the
	 * forgotten probes lost would hold on its alert instead. */
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	for (i = 0, rc = -1; i < 600 && (rc = itest_exited(pid)) < 0; i++)
		itest_sleep_ms(100);
	open_alerts(kinds);
	if (rc < 0) {
		kill(pid, SIGKILL);
		(void)itest_wait(pid);
		fail_msg("the restored watch did not end by itself (open alerts: %s)", kinds);
	}
	assert_int_equal(rc, 3);			/* at remove_old's gate */
	assert_string_equal(kinds, "");
	ieng_step_status(6, st, sizeof(st));
	assert_string_equal(st, "waiting_approval");
	ieng_history(&h, "running");
	assert_int_equal(itest_count(&h, "watch.restored"), 1);
	assert_int_equal(itest_count(&h, "alert.raised"), 0);
	assert_int_equal(writes(), 1);
}

/* remove_old approved on a database restored at its gate takes a fresh
 * baseline first: the watch's last sample predates the restore, so no
 * queue goes before one baseline window after it; then the plan ends by
 * itself. */
static void
test_remove_old_after_restore_takes_a_fresh_baseline(void **state)
{
	struct itest_history h;
	struct when w = { 0, 0 };
	struct store *s = NULL;
	struct store_plan p;
	char err[512];

	(void)state;
	ieng_set_names("remove");
	flag_begin();
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, flip, watch, "
	    "{ step: remove_old, gate: true }]", quick_watch);
	ieng_make_old_path();
	assert_int_equal(ieng_run(), 3);		/* at remove_old's gate */
	backup_now();
	restore_into_new("restored");
	assert_int_equal(itest_cutover("approve", "--db", ieng_db, ieng_plan_name,
	    "remove_old", "--as", "alice", NULL), 0);
	assert_int_equal(ieng_run(), 0);
	ieng_history(&h, "succeeded");
	assert_int_equal(itest_count(&h, "old.queue_removed"), 1);
	if (store_open(ieng_db, &s, err, sizeof(err)) != 0 ||
	    store_plan_find(s, ieng_plan_name, &p, err, sizeof(err)) != 0 ||
	    store_each_event(s, p.id, event_seen, &w, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	store_close(s);
	assert_true(w.restored > 0);
	if (w.removed - w.restored < OLD_BASELINE_WINDOW_MS)
		fail_msg("the old queue was removed %lld ms after the restore, within one "
		    "baseline window (%d ms) of readings older than it",
		    (long long)(w.removed - w.restored), OLD_BASELINE_WINDOW_MS);
}

ITEST_MAIN(ieng_main,
	cmocka_unit_test_teardown(test_flip_after_restore_is_not_sent_again, cleanup),
	cmocka_unit_test_teardown(test_abort_after_restore_rolls_back_an_unrecorded_flip,
	    cleanup),
	cmocka_unit_test_teardown(test_watch_after_restore_forgets_its_probes, cleanup),
	cmocka_unit_test_teardown(test_remove_old_after_restore_takes_a_fresh_baseline,
	    cleanup))
