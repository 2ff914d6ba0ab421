/* test_cutover_plan (integration): a whole plan through the cutover binary:
 * every step with its gates, an old publish after the flip moving the
 * deadline, management statistics that lag holding the watch's end, the
 * flag turned off during the watch, the flag service down stopping the
 * plan. */
#include "itest_cutover.h"

/* Open alerts of one kind: the kind asked for and how many there are. */
struct kind_count {
	const char *kind;
	int n;
};

static int
count_kind(const struct store_alert *a, void *arg)
{
	struct kind_count *k = arg;

	k->n += strcmp(a->kind, k->kind) == 0;
	return 0;
}

/* How many open alerts of KIND the test's plan has. */
static int
open_alerts(const char *kind)
{
	struct kind_count k = { kind, 0 };
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	assert_int_equal(store_open(icut_db, &s, err, sizeof(err)), 0);
	assert_int_equal(store_plan_find(s, icut_plan_name, &sp, err, sizeof(err)), 0);
	assert_true(store_each_alert(s, sp.id, 1, count_kind, &k, err, sizeof(err)) >= 0);
	store_close(s);
	return k.n;
}

static void
test_whole_plan_with_gates(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_queue_info qi;
	char status[32], err[512], name[160];

	(void)state;
	icut_begin("whole", &p, &c, NULL, "1s");
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_flag_now(p), 0);          /* not before the approval */
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "flip", "--as",
	    "alice",
	    NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(icut_flag_now(p), 1);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "remove_old",
	    "--as",
	    "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 0);

	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
		    BROKER_NOT_FOUND);
	}
	/* Every old message came out at the destination: 3 queues x 3. */
	snprintf(name, sizeof(name), "%s.dest", icut_prefix);
	assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)), 0);
	assert_int_equal(qi.messages, 9);
	assert_int_equal(itest_cutover("history", "--db", icut_db, "--verify", NULL), 0);
	icut_end(p, &c);
}

static void
test_flag_service_down_stops_the_plan(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	struct itest_history t;
	char status[32];

	(void)state;
	icut_begin("flagdown", &p, &c, "http://127.0.0.1:1", "1s");
	icut_run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
	assert_int_equal(icut_read_step(4, &st), 0);
	assert_string_equal(st.status, "failed");
	assert_non_null(st.error);
	assert_non_null(strstr(st.error, "attempts"));
	store_step_clear(&st);
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_equal(st.status, "pending");  /* the plan does not go on */
	store_step_clear(&st);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "failed");
	assert_int_equal(itest_count(&t, "flip.failed"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 0);
	icut_end(p, &c);
}

/* Waits until a publish into the old path can no longer be taken for one
 * from before the flip: the flip's statistics window (OLD_STATS_LAG_MS,
 * 10 s) is over and the watch has seen the statistics count its own
 * markers from after the flip (watch_stats.c). Fails the test after 60 s. */
static void
wait_past_the_window(void)
{
	int64_t until = icut_now_ms() + 60000, started = -1, flip = -1;

	/* Each read is -1 until the watch has persisted its state. */
	while (((started = icut_step_number(5, "started_ms")) <= 0 ||
	    icut_now_ms() < started + 11000 || (flip = icut_step_number(5, "flip_ms")) <= 0 ||
	    icut_step_number(5, "stats.counted_to_ms") < flip) && icut_now_ms() < until)
		itest_sleep_ms(200);
	assert_true(started > 0 && icut_now_ms() >= started + 11000);
	assert_true(flip > 0 && icut_step_number(5, "stats.counted_to_ms") >= flip);
}

static void
test_old_publish_after_the_flip_moves_the_deadline(void **state)
{
	struct step_ctx c;
	struct plan *p;
	char name[160];
	int64_t deadline, moved = -1, ticks, until;
	pid_t pid;
	int alerts = 0;

	(void)state;
	icut_begin("latepub", &p, &c, NULL, "30s");
	pid = icut_run_into_the_watch(2);
	wait_past_the_window();
	deadline = icut_step_number(5, "deadline_ms");
	/* A producer that was not flipped writes into the old path. */
	snprintf(name, sizeof(name), "%s.old.3", icut_prefix);
	icut_publish_old(&c, name);
	/* The alert is old_publish, not any alert (the management statistics
	 * show the publish within seconds; a generous ceiling). */
	for (until = icut_now_ms() + 60000; (alerts = open_alerts("old_publish")) == 0 &&
	    icut_now_ms() < until; )
		itest_sleep_ms(100);
	assert_int_equal(alerts, 1);
	/* The alert is written during the tick, the state with the moved
	 * deadline when the tick ends: wait for it (up to a few ticks). */
	for (until = icut_now_ms() + 30000; (moved = icut_step_number(5,
	    "deadline_ms")) <= deadline &&
	    icut_now_ms() < until; )
		itest_sleep_ms(100);
	assert_true(moved > deadline);
	/* The watch does not pass with the alert open: it samples on, and is
	 * still running. */
	ticks = icut_step_number(5, "ticks");
	assert_true(icut_wait_ticks(ticks + 2, 60000));
	{
		struct store_step st;

		assert_int_equal(icut_read_step(5, &st), 0);
		assert_string_equal(st.status, "running");
		store_step_clear(&st);
	}
	assert_int_equal(open_alerts("old_publish"), 1);
	kill(pid, SIGTERM);
	assert_int_equal(itest_wait(pid), 4);
	icut_end(p, &c);
}

/* Whether the watch's last persisted summary status contains WORDS. */
static bool
watch_status_says(const char *words)
{
	struct store_step st;
	json_t *j;
	bool says = false;

	if (icut_read_step(5, &st) != 0)
		return false;
	if (st.result_json != NULL && (j = json_loads(st.result_json, 0, NULL)) != NULL) {
		const char *status = json_string_value(json_object_get(json_object_get(j,
		    "summary"), "status"));

		says = status != NULL && strstr(status, words) != NULL;
		json_decref(j);
	}
	store_step_clear(&st);
	return says;
}

/* itest_on_cleanup: ends the test's statistics freeze, whatever happened. */
static void
thaw(void *unused)
{
	(void)unused;
	if (itest_broker_script_rc("stats-thaw", "") != 0)
		fprintf(stderr, "itest: scripts/broker stats-thaw failed: the node's "
		    "statistics stay frozen for up to 45 s\n");
}

/* The management statistics stand still for longer than the watch's
 * deadline (scripts/broker stats-freeze: a node too busy to fold its
 * counters into the API, seen a minute behind) just as a producer that was
 * not flipped publishes into the old path. The watch must not end on
 * statistics that do not show the publish (the old queues would be
 * removed under the producer); it says meanwhile what it waits for, and
 * raises old_publish once they show it. */
static void
test_lagging_statistics_hold_the_end(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	char name[160];
	int64_t frozen_until, until;
	pid_t pid;
	int alerts = 0;
	bool said = false;

	(void)state;
	/* The deadline (flip + largest TTL 3 s + 30 s) passes while frozen:
	 * the freeze begins once the flip's window is over (11 s at least,
	 * more on a busy machine) and lasts 45 s. With 10 s the deadline fell
	 * 2 s after the window: on a busy machine the watch had ended before
	 * the freeze began. */
	icut_begin("frozen", &p, &c, NULL, "30s");
	pid = icut_run_into_the_watch(0);
	wait_past_the_window();
	itest_on_cleanup(thaw, NULL);	/* the node's next test sees them move */
	itest_broker_script("stats-freeze", "--seconds 45");
	frozen_until = icut_now_ms() + 45000;
	if (icut_now_ms() >= icut_step_number(5, "deadline_ms"))
		fail_msg("the statistics froze only after the watch's deadline: the "
		    "test proves nothing on a machine this slow");
	snprintf(name, sizeof(name), "%s.old.3", icut_prefix);
	icut_publish_old(&c, name);
	/* Frozen past the deadline: still watching, and saying why. */
	while (icut_now_ms() < frozen_until - 3000) {
		assert_int_equal(icut_read_step(5, &st), 0);
		assert_string_equal(st.status, "running");
		store_step_clear(&st);
		said = said || watch_status_says("statistics lag");
		itest_sleep_ms(250);
	}
	assert_true(icut_now_ms() > icut_step_number(5, "deadline_ms"));
	assert_true(said);
	assert_int_equal(open_alerts("old_publish"), 0);
	/* Thawed: the publish shows, after the flip. */
	for (until = icut_now_ms() + 60000; (alerts = open_alerts("old_publish")) == 0 &&
	    icut_now_ms() < until; )
		itest_sleep_ms(100);
	assert_int_equal(alerts, 1);
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);
	kill(pid, SIGTERM);
	assert_int_equal(itest_wait(pid), 4);
	icut_end(p, &c);
}

/* Open alerts of the test's plan: their ids into IDS (at most MAX) and
 * whether one of KIND is among them. */
struct open_alerts {
	const char *kind;
	int64_t ids[16];
	int n;
	bool found;
};

static int
collect_open(const struct store_alert *a, void *arg)
{
	struct open_alerts *o = arg;

	if (o->n < 16)
		o->ids[o->n++] = a->id;
	if (strcmp(a->kind, o->kind) == 0)
		o->found = true;
	return 0;
}

static void
read_open_alerts(struct open_alerts *o, const char *kind)
{
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	memset(o, 0, sizeof(*o));
	o->kind = kind;
	if (store_open(icut_db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, icut_plan_name, &sp, err, sizeof(err)) == 0)
		(void)store_each_alert(s, sp.id, 1, collect_open, o, err, sizeof(err));
	store_close(s);
}

/* The plan's flag turned off behind its back during the watch (its own
 * Unleash feature): flag_off is raised, the watch runs past the deadline
 * it had and does not end; on again (and acknowledged), the plan reaches
 * remove_old's gate; off again while the gate waits, remove_old fails
 * deleting nothing and the plan does not succeed; on, retried, it does. */
static void
test_flag_turned_off_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	struct open_alerts oa;
	struct broker_queue_info qi;
	struct itest_history t;
	char status[32], err[512], name[160], id[32];
	int64_t deadline, until;

	(void)state;
	icut_begin("flagoff", &p, &c, NULL, "1s");
	icut_run_to_the_flip_and_approve();
	icut_flagoff_pid = itest_start_run(icut_db, icut_planfile, NULL);
	assert_true(icut_wait_step(5, "running", 30000));
	for (int i = 0; i < 100 && icut_step_number(5, "ticks") < 2; i++)
		itest_sleep_ms(100);
	deadline = icut_step_number(5, "deadline_ms");
	itest_feature_set(icut_feature, false);

	until = icut_now_ms() + 30000;
	for (read_open_alerts(&oa, "flag_off"); !oa.found; read_open_alerts(&oa,
	    "flag_off")) {
		if (icut_now_ms() > until)
			fail_msg("no flag_off alert within 30 s");
		itest_sleep_ms(100);
	}
	/* Past the deadline it had and the statistics' window: still on. */
	while (icut_now_ms() < deadline + 2000 ||
	    icut_now_ms() < icut_step_number(5, "started_ms") + 12000)
		itest_sleep_ms(200);
	assert_int_equal(icut_read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);
	kill(icut_flagoff_pid, SIGTERM);
	assert_int_equal(itest_wait(icut_flagoff_pid), 4);
	icut_flagoff_pid = 0;

	/* On again, the alerts acknowledged: the watch ends at its new
	 * deadline, and the plan waits at remove_old's gate. */
	itest_feature_set(icut_feature, true);
	read_open_alerts(&oa, "flag_off");
	for (int i = 0; i < oa.n; i++) {
		snprintf(id, sizeof(id), "%lld", (long long)oa.ids[i]);
		assert_int_equal(itest_cutover("ack", "--db", icut_db, icut_plan_name, id, "--as",
		    "carol", NULL), 0);
	}
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);

	/* Off while the gate waits: remove_old deletes nothing. */
	itest_feature_set(icut_feature, false);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 1);
	assert_int_equal(icut_read_step(6, &st), 0);
	assert_string_equal(st.status, "failed");
	assert_non_null(st.error);
	assert_non_null(strstr(st.error, "remove_old deletes nothing"));
	assert_non_null(strstr(st.error, icut_feature));
	store_step_clear(&st);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)), 0);
	}
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_not_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "plan.succeeded"), 0);

	/* On again and retried: it removes them and succeeds. */
	itest_feature_set(icut_feature, true);
	assert_int_equal(itest_cutover("retry", "--db", icut_db, icut_plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 0);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	step_ctx_close(&c);
	plan_free(p);
}

ITEST_MAIN(icut_main,
	cmocka_unit_test(test_whole_plan_with_gates),
	cmocka_unit_test(test_flag_service_down_stops_the_plan),
	cmocka_unit_test(test_old_publish_after_the_flip_moves_the_deadline),
	cmocka_unit_test(test_lagging_statistics_hold_the_end),
	cmocka_unit_test_teardown(test_flag_turned_off_during_the_watch,
	    icut_flagoff_teardown))
