/* test_old_baseline (integration): remove_old against the watch's last
 * sample: a publish after the watch left the queue, a broker restart after
 * the baseline, and a stale depth that is no arrival. */
#include "itest_old.h"

/* The watch's last sample of queues PREFIX NAMES[i] with publish counters
 * PUBLISH[i] (-1: none) and no messages, as the watch's state has it. */
static json_t *
watch_sample(const char *const *names, const int64_t *publish, size_t n)
{
	json_t *qs = json_array();
	char full[128];

	for (size_t i = 0; i < n; i++) {
		snprintf(full, sizeof(full), "%s%s", iold_prefix, names[i]);
		json_array_append_new(qs, json_pack("{s:s,s:o,s:i}", "name", full,
		    "publish", publish[i] >= 0 ? json_integer(publish[i]) : json_null(),
		    "messages", 0));
	}
	return json_pack("{s:{s:I,s:o}}", "old_last", "at_ms", (json_int_t)now_ms(),
	    "queues", qs);
}

/* Ends a test's runs of remove_old in C: the context lets go of the
 * state and clock it was given, the two results R and R2, the watch's
 * sample WATCHED and the measurement MEASURED are freed, and C closed. */
static void
end_runs(struct step_ctx *c, json_t *r, json_t *r2, json_t *watched, json_t *measured)
{
	c->state = NULL;
	c->now_ms = 0;
	json_decref(r);
	json_decref(r2);
	json_decref(watched);
	json_decref(measured);
	step_ctx_close(c);
}

/* Runs remove_old in C again, on its earlier result LAST, with its clock
 * past the baseline window; fails the test unless the step succeeds and is
 * over. Returns its result (the caller frees it). */
static json_t *
remove_past_the_window(struct step_ctx *c, json_t *last)
{
	json_t *r = NULL;
	char err[4096];

	c->state = last;
	c->now_ms = now_ms() + OLD_BASELINE_WINDOW_MS + 1000;
	c->again = false;
	if (step_remove_old(c, &r, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_false(c->again);
	return r;
}

/* Runs remove_old in C again on its earlier result LAST, its clock a
 * second on (before any wait of LAST ends), LAST as this version writes
 * it (each wait and baseline counter in its queue's entry) or, with
 * OLDER, as an earlier one did (the waits in "waiting", by name, and the
 * baseline a list of its own); fails the test unless queue NAME still
 * waits for what it waited for in LAST, from the same time. */
static void
still_waits(struct step_ctx *c, const json_t *last, const char *name, bool older)
{
	json_t *st = json_deep_copy(last), *r = NULL, *waiting = json_object();
	json_t *base = json_object_get(st, "baseline"), *queues = json_array();
	const json_t *before = json_object_get(iold_entry(last, "entries", name), "wait");
	const json_t *e, *w;
	char err[4096];
	size_t i;

	assert_true(json_is_object(before));
	if (older) {
		json_array_foreach(json_object_get(st, "entries"), i, e) {
			if ((w = json_object_get(e, "wait")) != NULL) {
				json_object_set(waiting, iold_str_of(e, "name"), (json_t *)w);
				json_object_del((json_t *)e, "wait");
			}
			if (json_object_get(e, "baseline_publish") == NULL)
				continue;
			json_array_append_new(queues, json_pack("{s:s,s:O,s:O}", "name",
			    iold_str_of(e, "name"), "publish", json_object_get(e,
			    "baseline_publish"), "messages", json_object_get(e,
			    "baseline_messages")));
			json_object_del((json_t *)e, "baseline_publish");
			json_object_del((json_t *)e, "baseline_messages");
		}
		json_object_set(st, "waiting", waiting);
		assert_true(json_is_true(json_object_get(base, "in_entries")));
		assert_true(json_array_size(queues) > 0);
		json_object_del(base, "in_entries");
		json_object_set(base, "queues", queues);
	}
	json_decref(queues);
	json_decref(waiting);
	c->state = st;
	c->now_ms = now_ms() + 1000;
	c->again = false;
	if (step_remove_old(c, &r, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(c->again);
	e = iold_entry(r, "entries", name);
	assert_string_equal(iold_str_of(e, "outcome"), "waiting");
	w = json_object_get(e, "wait");
	assert_string_equal(iold_str_of(w, "kind"), iold_str_of(before, "kind"));
	assert_int_equal(ijson_int(w, "since_ms"), ijson_int(before, "since_ms"));
	assert_int_equal(ijson_int(w, "until_ms"), ijson_int(before, "until_ms"));
	assert_true(iold_exists(c->amqp, name, NULL));
	json_decref(r);
	json_decref(st);
	c->state = NULL;
	c->now_ms = 0;
}

/* remove_old compares each queue's publish counter with the watch's last
 * sample. A message in and out of an old queue after the watch ended (the
 * gate can wait for days) makes it wait its TTL again from then, with a
 * fresh baseline; a counter that went backwards (statistics reset) waits
 * one baseline window; a counter that neither reading shows (an idle
 * queue, any queue after a restart) is no evidence of use. Waits are the
 * step going on (ctx.again), not a failure, and a run before they end
 * keeps them; run again past them, with nothing new, every queue goes. */
static void
test_publish_after_the_watch_leaves_the_queue(void **state)
{
	static const char *const names[] = { "w.00", "w.01", "w.02", "w.03" };
	struct plan *p;
	struct step_ctx c;
	json_t *measured = NULL, *r = NULL, *r2 = NULL, *watched, *l;
	int64_t base[4], want[1];
	const json_t *e;
	char err[4096];
	int i;

	iold_set_prefix();
	static struct made made = { .queues = { "w.00", "w.01", "w.02", "w.03" } };

	p = iold_match_plan("w", NULL, "1s");
	made.p = p;
	*state = &made;
	itest_ctx_open(&c, p);
	for (i = 0; i < 4; i++)
		iold_make_queue(c.amqp, names[i], 1000, -1, false);
	iold_touch(c.amqp, "w.00");
	iold_touch(c.amqp, "w.01");
	iold_touch(c.amqp, "w.03");
	l = iold_await_counters(c.mgmt, (const char *const[]){ "w.00", "w.01", "w.03" },
	    NULL, 3);
	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	/* The watch ends: w.02 never had a counter; w.03's was higher then
	 * (the statistics were reset since). */
	for (i = 0; i < 4; i++)
		base[i] = iold_counter_in(l, names[i]);
	json_decref(l);
	base[3] += 5;
	watched = watch_sample(names, base, 4);
	/* While remove_old waits at its gate, one message goes in and out of
	 * w.00: it is empty again, but the old path is still in use. */
	iold_touch(c.amqp, "w.00");
	want[0] = base[0] + 1;
	json_decref(iold_await_counters(c.mgmt, names, want, 1));

	c.measured = measured;
	c.watched = watched;
	c.old_last_entry_ms = now_ms() - 10 * MIN_MS;
	c.again = false;
	assert_int_equal(step_remove_old(&c, &r, err, sizeof(err)), 0);
	assert_true(c.again);
	e = iold_entry(r, "entries", "w.00");
	assert_string_equal(iold_str_of(e, "outcome"), "waiting");
	assert_non_null(strstr(iold_str_of(e, "reason"), "1 publish into it since the "
	    "watch's last sample"));
	assert_true(iold_exists(c.amqp, "w.00", NULL));
	assert_string_equal(iold_outcome(r, "w.01"), "removed");
	/* No counter then and none now: no evidence of use, and the exact
	 * empty check with the if-empty delete stands for it. */
	assert_string_equal(iold_outcome(r, "w.02"), "removed");
	assert_false(iold_exists(c.amqp, "w.02", NULL));
	e = iold_entry(r, "entries", "w.03");
	assert_string_equal(iold_str_of(e, "outcome"), "waiting");
	assert_non_null(strstr(iold_str_of(e, "reason"), "went backwards"));
	assert_non_null(strstr(iold_str_of(e, "reason"), "a fresh baseline"));
	assert_true(iold_exists(c.amqp, "w.03", NULL));
	/* The fresh baseline: its time in the result, each queue's counters
	 * in its entry (w.00's with the publish that made it wait). */
	assert_true(json_is_object(json_object_get(r, "baseline")));
	assert_null(json_object_get(json_object_get(r, "baseline"), "queues"));
	assert_int_equal(ijson_int(iold_entry(r, "entries", "w.00"), "baseline_publish"),
	    want[0]);
	/* Run again before the waits end, from its last result as written now
	 * and as an earlier version wrote it: w.00 waits on for the publish,
	 * not for its deadline from the last entry, which is past. */
	still_waits(&c, r, "w.00", false);
	still_waits(&c, r, "w.00", true);

	/* Run again past both waits (the step's clock moved on), with its
	 * own last result: the fresh baseline shows nothing since, so both
	 * go, and the earlier run's deletes stay recorded as removed. */
	r2 = remove_past_the_window(&c, r);
	assert_string_equal(iold_outcome(r2, "w.00"), "removed");
	assert_string_equal(iold_outcome(r2, "w.01"), "removed");
	assert_string_equal(iold_outcome(r2, "w.03"), "removed");
	assert_false(iold_exists(c.amqp, "w.00", NULL));
	assert_false(iold_exists(c.amqp, "w.03", NULL));
	/* Once more (a resumed engine): every queue it deleted in earlier
	 * runs is still named removed, none as merely gone. */
	json_decref(r);
	r = r2;
	c.state = r;
	if (step_remove_old(&c, &r2, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(ijson_int(json_object_get(r2, "counts"), "removed"), 4);
	assert_int_equal(ijson_int(json_object_get(r2, "counts"), "gone"), 0);
	end_runs(&c, r, r2, watched, measured);
}

/* A broker node that started after the baseline was read (a restart:
 * every publish counter begins again from zero, most are missing) makes
 * every queue wait one baseline window with a fresh baseline, instead of
 * leaving them; run again past the window, they go. The baseline here is
 * a watch sample stamped before the test node's own start, read from its
 * uptime, so the node is not restarted under the other tests. */
static void
test_restart_after_the_baseline_waits_one_window(void **state)
{
	static const char *const names[] = { "n.00", "n.01" };
	const int64_t publish[] = { 7, 3 };
	struct mgmt_node_list nodes = { 0 };
	struct plan *p;
	struct step_ctx c;
	json_t *measured = NULL, *r = NULL, *r2 = NULL, *watched;
	char err[4096];
	int64_t started = 0;

	iold_set_prefix();
	static struct made made = { .queues = { "n.00", "n.01" } };

	p = iold_match_plan("n", NULL, "1s");
	made.p = p;
	*state = &made;
	itest_ctx_open(&c, p);
	iold_make_queue(c.amqp, "n.00", 1000, -1, false);
	iold_make_queue(c.amqp, "n.01", 1000, -1, false);
	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (mgmt_list_nodes(c.mgmt, &nodes, err, sizeof(err)) != 0 || nodes.n == 0 ||
	    nodes.v[0].uptime_ms < 0)
		fail_msg("reading the node's uptime: %s", err);
	for (size_t i = 0; i < nodes.n; i++)
		if (now_ms() - nodes.v[i].uptime_ms > started)
			started = now_ms() - nodes.v[i].uptime_ms;
	mgmt_node_list_free(&nodes);
	/* The watch's last sample, read before the node started, with
	 * counters that node no longer has. */
	watched = watch_sample(names, publish, 2);
	json_object_set_new(json_object_get(watched, "old_last"), "at_ms",
	    json_integer(started - 60 * 1000));
	c.measured = measured;
	c.watched = watched;
	c.old_last_entry_ms = started - 30 * MIN_MS;
	c.again = false;
	assert_int_equal(step_remove_old(&c, &r, err, sizeof(err)), 0);
	assert_true(c.again);
	assert_string_equal(iold_outcome(r, "n.00"), "waiting");
	assert_non_null(strstr(iold_str_of(iold_entry(r, "entries", "n.00"), "reason"),
	    "its publish counters began again from zero"));
	assert_string_equal(iold_outcome(r, "n.01"), "waiting");
	assert_true(iold_exists(c.amqp, "n.00", NULL));
	assert_true(json_is_object(json_object_get(r, "baseline")));

	/* Past the window, against the fresh baseline: nothing since, both go. */
	r2 = remove_past_the_window(&c, r);
	assert_string_equal(iold_outcome(r2, "n.00"), "removed");
	assert_string_equal(iold_outcome(r2, "n.01"), "removed");
	assert_false(iold_exists(c.amqp, "n.00", NULL));
	end_runs(&c, r2, r, watched, measured);
}

/* The depth and publish counter the management statistics show for
 * queue PREFIX NAME now (-1 each when not shown). */
static void
listed_depth(struct mgmt *m, const char *name, int64_t *messages, int64_t *publish)
{
	json_t *l = NULL;
	const json_t *e;
	char full[128], err[1024];
	size_t i;

	*messages = *publish = -1;
	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	if (mgmt_request(m, "GET", "/api/queues/%2F?columns=name,messages,"
	    "message_stats.publish", NULL, &l, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	json_array_foreach(l, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), full) == 0) {
			const json_t *v = json_object_get(e, "messages");

			*messages = json_is_integer(v) ? json_integer_value(v) : -1;
			*publish = iold_counter_in(l, name);
		}
	json_decref(l);
}

/* A stale depth (what once made e2e.cutover flaky). The watch ends on exact depths (a
 * passive declare: an old queue's last messages expired a moment ago),
 * while the management statistics still show the depth of seconds before
 * (DESIGN §3: they lag 5-10 s): remove_old, approved at once, must not
 * read that stale depth as messages that entered the queue since the
 * watch's last sample. Each round fills s.00 (TTL 10 s), waits until the
 * statistics show it and its publishes, then until the exact depth is 0;
 * if the statistics still show messages then, remove_old runs with the
 * watch's last sample as the watch writes it (publish counter as listed,
 * exact depth 0). A round whose statistics caught up already is repeated. */
static void
test_stale_depth_after_the_watch_is_not_an_arrival(void **state)
{
	struct plan *p;
	struct step_ctx c;
	json_t *measured = NULL, *r = NULL, *watched = NULL;
	int64_t listed = -1, publish = -1, sent = 0, t0;
	uint32_t exact = 0;
	const json_t *e;
	char err[4096];
	int round;

	iold_set_prefix();
	static struct made made = { .queues = { "s.00" } };

	p = iold_match_plan("s", NULL, "1s");
	made.p = p;
	*state = &made;
	itest_ctx_open(&c, p);
	iold_make_queue(c.amqp, "s.00", 10000, -1, false);
	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (round = 0; round < 5 && watched == NULL; round++) {
		bool shown = false;

		for (int i = 0; i < 3; i++, sent++)
			iold_publish_to(c.amqp, "s.00", "stale");
		/* The statistics show the messages and every publish (or they
		 * expired first: another round). */
		for (t0 = clock_mono_ms(); !shown && iold_exists(c.amqp, "s.00", &exact) &&
		    exact > 0;) {
			listed_depth(c.mgmt, "s.00", &listed, &publish);
			shown = listed > 0 && publish == sent;
			if (clock_mono_ms() - t0 > 60000)
				fail_msg("s.00 still holds %u messages of TTL 10 s after 60 s",
				    exact);
			clock_sleep_ms(100);
		}
		/* They expire: the exact depth reaches 0. */
		for (t0 = clock_mono_ms(); iold_exists(c.amqp, "s.00", &exact) && exact > 0;) {
			if (clock_mono_ms() - t0 > 60000)
				fail_msg("s.00 still holds %u messages of TTL 10 s after 60 s",
				    exact);
			clock_sleep_ms(20);
		}
		listed_depth(c.mgmt, "s.00", &listed, &publish);
		if (shown && listed > 0 && publish == sent)
			watched = watch_sample((const char *const[]){ "s.00" }, &publish, 1);
	}
	if (watched == NULL)
		fail_msg("in 5 rounds the statistics never still showed messages once the "
		    "exact depth was 0: the stale listing this test needs did not occur");

	c.measured = measured;
	c.watched = watched;
	c.old_last_entry_ms = now_ms() - 10 * MIN_MS;
	if (step_remove_old(&c, &r, err, sizeof(err)) != 0)
		fail_msg("remove_old (statistics showing %lld messages, exact depth 0): %s",
		    (long long)listed, err);
	e = iold_entry(r, "entries", "s.00");
	assert_string_equal(iold_str_of(e, "outcome"), "removed");
	assert_int_equal(ijson_int(e, "messages_seen"), 0);
	assert_false(iold_exists(c.amqp, "s.00", NULL));
	json_decref(r);
	json_decref(watched);
	json_decref(measured);
	step_ctx_close(&c);
}

ITEST_MAIN(itest_main,
	cmocka_unit_test_teardown(test_publish_after_the_watch_leaves_the_queue,
	    iold_made_teardown),
	cmocka_unit_test_teardown(test_restart_after_the_baseline_waits_one_window,
	    iold_made_teardown),
	cmocka_unit_test_teardown(test_stale_depth_after_the_watch_is_not_an_arrival,
	    iold_made_teardown))
