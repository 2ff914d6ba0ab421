/* test_watch_restart (integration): the broker going away under the watch:
 * unreachable is an alert, a restart of the node mid-watch and a restart of
 * its management plugin are neither a publish into the old path nor the end
 * of the watch. */
#include <limits.h>

#include "itest_watch.h"

/* A management API that does not answer is an alert, not a failure: the
 * watch goes on with its state and never ends while it cannot see. A
 * watch without measure_horizon's result cannot start at all. */
static void
test_broker_unreachable_is_an_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	json_t *r = NULL;
	char err[2048];
	int rc;

	iwatch_start(f, "down", 1, 0, "http://127.0.0.1:1");
	f->measured = json_pack("{s:[{s:s,s:i}],s:{s:i,s:s}}", "queues", "name",
	    f->old[0], "ttl_ms", OLD_TTL_MS, "summary", "max_ttl_ms", OLD_TTL_MS,
	    "max_ttl_queue", f->old[0]);
	f->flip_ms = now_ms() - 60000;	/* long past any deadline */
	iwatch_tick_until_alert(f, "broker_unreachable", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "listing the old queues"));
	assert_int_equal(iwatch_events(f, "alert.raised", "broker_unreachable"), 1);
	iwatch_ack_all(f);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		assert_true(json_is_false(json_object_get(f->state, "done")));
		assert_int_equal(ijson_int(f->state, "started_ms"), f->flip_ms);
	}

	/* No horizon: it cannot go on. */
	f->c.measured = NULL;
	f->c.state = NULL;
	rc = step_watch(&f->c, &r, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, "measure_horizon"));
	assert_true(json_is_false(json_object_get(r, "ok")));
	json_decref(r);
}

/* The test node's AMQP port, from CUTOVER_TEST_AMQP. */
static int
node_port(void)
{
	const char *url = itest_need_env("CUTOVER_TEST_AMQP"), *c = strrchr(url, ':');
	int port = c != NULL ? atoi(c + 1) : 0;

	if (port <= 0)
		fail_msg("no port in CUTOVER_TEST_AMQP '%s'", url);
	return port;
}

/* Restarts the test's own broker node with scripts/broker stop and start. */
static void
restart_broker(void)
{
	itest_broker_script("stop", "");
	itest_broker_script("start", "");
}

/* Whether the node declares (and deletes) a quorum queue of its own. */
static bool
quorum_declares(struct fixture *f)
{
	struct topology_arg a = { .key = "x-queue-type", .str = "quorum" };
	char q[LADDER_NAME_MAX], err[1024];
	bool ok;

	snprintf(q, sizeof(q), "%s.quorum-check", itest_run_id());
	ok = broker_queue_declare(f->c.amqp, q, true, &a, 1, err, sizeof(err)) == 0;
	if (!ok)
		fprintf(stderr, "# quorum declare after the restart: %s\n", err);
	(void)broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err));
	return ok;
}

/* After a restart a node can keep refusing quorum queues (INTERNAL_ERROR:
 * its Raft system did not recover, DESIGN.md §3). The tests after this one
 * share the node: restart it again until a quorum queue declares (three
 * tries), so that this test's restart never fails another test. */
static void
leave_quorum_working(struct fixture *f)
{
	for (int i = 0; i < 3; i++) {
		if (quorum_declares(f) || quorum_declares(f))
			return;
		restart_broker();
	}
	fail_msg("after restarting, the node refuses quorum queues");
}

static void
ack_all_but(struct fixture *f, const char *kind)
{
	struct alerts al;
	char err[512];

	iwatch_open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		if (strcmp(al.v[i].kind, kind) != 0)
			assert_int_equal(store_alert_ack(f->s, f->plan_id, al.v[i].id,
			    "itest", "seen", now_ms(), err, sizeof(err)), 0);
}

/* The broker restarts mid-watch while classic old queues hold 10
 * messages: the watch raises broker_restart naming the node and the 10
 * messages exposed to at-most-once dead-lettering, holds past its
 * deadline until that alert is acknowledged, then ends; the probe queue
 * survived the restart. */
static void
test_broker_restart_mid_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char q[LADDER_NAME_MAX], err[2048];
	int64_t until;
	int probe_after;

	iwatch_start(f, "restart", 2, 5, NULL);
	iwatch_flip_long_ago(f);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "summary"), "old_depth"), 10);
	restart_broker();
	snprintf(q, sizeof(q), "cutover.probe.%s", f->p->name);
	probe_after = broker_queue_inspect(f->c.amqp, q, NULL, err, sizeof(err));
	if (probe_after < 0)	/* the first call after the restart reconnects */
		probe_after = broker_queue_inspect(f->c.amqp, q, NULL, err, sizeof(err));

	iwatch_tick_until_alert(f, "broker_restart", 60000, &a);
	fprintf(stderr, "# broker_restart: %s\n", a.message);
	assert_non_null(strstr(a.message, "10 old-path messages"));
	assert_non_null(strstr(a.message, "at-most-once"));
	assert_int_equal(probe_after, 0);

	/* Held past the deadline while the alert is open. */
	until = ijson_int(f->state, "deadline_ms") + 1000;
	while (now_ms() < until) {
		ack_all_but(f, "broker_restart");
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	ack_all_but(f, "broker_restart");
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	iwatch_tick_past_stats_lag(f);
	assert_non_null(strstr(json_string_value(json_object_get(iwatch_obj(f->state, "summary"),
	    "status")), "alert is open"));
	iwatch_ack_all(f);
	iwatch_tick_until_done(f, 15000);
	assert_int_equal(iwatch_events(f, "alert.raised", "broker_restart"), 1);
	leave_quorum_working(f);
}

/* Starts disabling and enabling the test node's management plugin in the
 * background (its agent restarts with every statistic gone, the node
 * does not), so that the watch ticks through it: run to its end first,
 * the restart could leave a loaded machine's next tick after the
 * statistics were back, with nothing for the watch to see. Returns the
 * script's pid. */
static pid_t
restart_management_start(void)
{
	const char *src = itest_need_env("CUTOVER_SOURCE_DIR");
	char script[PATH_MAX], port[16], log[PATH_MAX];
	char *argv[] = { script, "management-restart", "--port", port, NULL };

	snprintf(script, sizeof(script), "%s/scripts/broker", src);
	snprintf(port, sizeof(port), "%d", node_port());
	snprintf(log, sizeof(log), "%s/management-restart.log", getenv("TMPDIR") != NULL &&
	    *getenv("TMPDIR") != '\0' ? getenv("TMPDIR") : "/tmp");
	return itest_spawn(log, argv);
}

/* Old queue NAME's counter as the last full pass recorded it (the watch
 * step's rows: its "publish"), valid until the next call; NULL when the
 * pass did not record the queue. */
static const json_t *
seen_of(struct fixture *f, const char *name)
{
	static json_t *last;

	json_decref(last);
	last = iwatch_seen(f, name);
	return last;
}

/* The management agent restarts mid-watch (the plugin disabled and
 * enabled), the node does not. For a few seconds the API lists the old
 * queue without message_stats and the node without uptime; then the
 * counter comes back with the whole count of the channel that published
 * the 20 messages long before. That is a new baseline: no old_publish, no
 * broker_restart with its possible-loss warning, the agent's restart said
 * in the history (watch.statistics_restarted); broker_unreachable, raised
 * while the API did not answer, closes by itself once it does; and a
 * publish after it is counted as one again (3 messages). */
static void
test_management_restart_is_no_publish(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];
	int64_t until;
	pid_t script;
	bool gone = false;
	struct alerts al;
	int unreachable;

	iwatch_old_ttl_ms = 120000;	/* the messages wait through the test */
	iwatch_start(f, "agent", 1, 20, NULL);
	iwatch_flip_long_ago(f);
	/* Published before the watch's first look: counted there. */
	until = now_ms() + ALERT_CEILING_MS;
	while (iwatch_api_publishes(f, f->old[0]) != 20) {
		if (now_ms() > until)
			fail_msg("the statistics never showed the 20 publishes");
		iwatch_sleep_ms(INTERVAL_MS);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(json_integer_value(seen_of(f, f->old[0])), 20);

	/* Ticks through the restart, until the script is done and the
	 * counter is back; the watch must have seen it gone. */
	script = restart_management_start();
	until = now_ms() + 120000;
	for (;;) {
		const json_t *seen;
		int st;

		if (script > 0 && (st = itest_exited(script)) >= 0) {
			assert_int_equal(st, 0);
			script = 0;
		}
		if (now_ms() > until)
			fail_msg("the restart or the old queue's counter did not end within "
			    "120 s");
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		seen = seen_of(f, f->old[0]);
		if (!json_is_integer(seen) || json_integer_value(seen) == 0)
			gone = true;
		else if (script == 0 && gone)
			break;
		iwatch_sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# the counter came back as %lld\n",
	    (long long)json_integer_value(seen_of(f, f->old[0])));
	until = now_ms() + STATS_LAG_MS + 2000;
	while (now_ms() < until) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
	/* broker_unreachable, raised while the API was away, closed by itself
	 * at the first tick it answered: nobody acknowledged it. */
	unreachable = iwatch_events(f, "alert.raised", "broker_unreachable");
	fprintf(stderr, "# broker_unreachable raised %d time(s) while the API was away\n",
	    unreachable);
	iwatch_open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		assert_string_not_equal(al.v[i].kind, "broker_unreachable");
	assert_int_equal(iwatch_events(f, "alert.raised", "old_publish"), 0);
	assert_int_equal(iwatch_events(f, "alert.raised", "broker_restart"), 0);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "after_flip"), 0);
	assert_int_equal(iwatch_events(f, "watch.statistics_restarted", NULL), 1);

	/* A publish after the new baseline is one. */
	iwatch_publish_to(&f->c, "", f->old[0], 3);
	iwatch_tick_until_alert(f, "old_publish", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "3 messages entered the old path after the flip"));
	assert_int_equal(ijson_int(iwatch_obj(f->state, "old"), "after_flip"), 3);
}

IWATCH_MAIN(
	IWATCH_TEST(test_broker_unreachable_is_an_alert),
	IWATCH_TEST(test_broker_restart_mid_watch),
	IWATCH_TEST(test_management_restart_is_no_publish))
