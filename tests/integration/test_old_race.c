/* test_old_race (integration): remove_old's window between the check and
 * the delete: a message that arrives in it (through the removal's test
 * hook, a real interleaving on the broker) survives on a classic queue and
 * is refused on a fenced quorum queue. */
#include "itest_old.h"

struct late {
	struct broker *b;		/* the late publisher's own connection */
	char target[128];
	int published;
	int refused;			/* nacked by the broker */
	int calls;			/* the hook's calls for the target */
	char failed[1024];		/* the publish's error when neither */
};

/* The removal's hook between check and delete: a message enters the target
 * queue, confirmed by the broker before the delete goes out. */
static void
publish_late(void *arg, const char *queue)
{
	struct late *l = arg;
	struct broker_message m = { 0 };
	char err[1024];
	int r;

	if (strcmp(queue, l->target) != 0)
		return;
	l->calls++;
	m.routing_key = queue;
	m.body = "late";
	m.len = 4;
	m.mandatory = true;
	r = broker_publish(l->b, &m, 5000, err, sizeof(err));
	if (r == 0)
		l->published++;
	else if (r == BROKER_ENACKED)
		l->refused++;
	else
		snprintf(l->failed, sizeof(l->failed), "%s", err);
}

/* Measures C's old queues, then sets up a removal (last entry ten minutes
 * ago) whose hook publishes into PREFIX TARGET between the check and the
 * delete over L's own connection. Returns the measured result. */
static json_t *
late_setup(struct step_ctx *c, struct late *l, struct old_remove_opts *o,
    const char *target)
{
	json_t *measured = NULL;
	char err[2048];

	if (step_measure_horizon(c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (broker_open(getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 10000, &l->b, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(l->target, sizeof(l->target), "%s%s", iold_prefix, target);
	o->between = publish_late;
	o->arg = l;
	c->measured = measured;
	c->old_last_entry_ms = now_ms() - 10 * MIN_MS;
	return measured;
}

static void
test_message_between_check_and_delete_survives(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct late l = { 0 };
	struct old_remove_opts o = { 0 };
	struct broker_delivery d;
	json_t *measured = NULL, *r = NULL;
	const json_t *e;
	char err[2048];
	uint32_t depth;

	(void)state;
	iold_set_prefix();
	p = iold_match_plan("x", NULL, "1s");
	itest_ctx_open(&c, p);
	iold_make_queue(c.amqp, "x.00", MIN_MS, -1, false);
	iold_make_queue(c.amqp, "x.01", 1000, -1, false);
	iold_touch_all(&c, "x", 2, 2);
	measured = late_setup(&c, &l, &o, "x.00");

	assert_int_not_equal(old_remove(&c, &o, &r, err, sizeof(err)), 0);
	assert_int_equal(l.published, 1);
	e = iold_entry(r, "entries", "x.00");
	assert_string_equal(iold_str_of(e, "outcome"), "left");
	assert_int_equal(ijson_int(e, "messages_seen"), 0);
	assert_non_null(strstr(iold_str_of(e, "reason"), "between the check and the delete"));
	assert_non_null(strstr(iold_str_of(e, "reason"), "now 1 message"));
	assert_string_equal(iold_outcome(r, "x.01"), "removed");
	json_decref(r);
	/* The queue and its message are still there. */
	assert_true(iold_exists(c.amqp, "x.00", &depth));
	assert_int_equal(depth, 1);
	assert_int_equal(broker_get(c.amqp, l.target, false, &d, err, sizeof(err)), 0);
	assert_string_equal(d.body, "late");
	broker_delivery_free(&d);

	broker_close(l.b);
	iold_drop_queue(c.amqp, "x.00");
	iold_drop_queue(c.amqp, "x.01");
	json_decref(measured);
	step_ctx_close(&c);
	plan_free(p);
}

/* Does any fence policy of the test plan exist? */
static bool
fence_left(struct mgmt *m)
{
	struct mgmt_policy_list pl = { 0 };
	char err[1024];
	bool found = false;

	if (mgmt_list_policies(m, &pl, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (size_t i = 0; i < pl.n; i++)
		found |= strncmp(pl.v[i].name, "cutover.fence=itest-old=", 24) == 0;
	mgmt_policy_list_free(&pl);
	return found;
}

static const char *const leftover_fence = "cutover.fence=itest-old=77";

/* A quorum queue cannot be deleted with if-empty: it is
 * fenced (a policy: max-length 0, reject-publish) and sealed before the
 * delete, so a message published between the check and the delete is
 * refused (the publisher gets a nack and still has it), never deleted with
 * the queue. A fence a crashed run left is removed, and so are this
 * run's. */
static void
test_quorum_publish_between_check_and_delete_is_refused(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct late l = { 0 };
	struct old_remove_opts o = { 0 };
	json_t *measured = NULL, *r = NULL, *def;
	const json_t *e;
	char pattern[160], err[2048];
	uint32_t depth = 0;

	iold_set_prefix();
	static struct made made = { .queues = { "f.00", "f.01", "f.02" } };
	struct topology_arg qa[3];
	struct broker_message m = { 0 };

	p = iold_match_plan("f", NULL, "1s");
	made.p = p;
	made.policy = leftover_fence;
	*state = &made;
	itest_ctx_open(&c, p);
	iold_make_queue(c.amqp, "f.00", MIN_MS, -1, true);
	iold_make_queue(c.amqp, "f.01", 1000, -1, true);
	/* Its x-overflow argument would win over a fence's reject-publish
	 * (drop-head at max-length 0 would drop what enters): not fenced. */
	itest_arg_str(&qa[0], "x-queue-type", "quorum");
	itest_arg_str(&qa[1], "x-overflow", "drop-head");
	itest_arg_int(&qa[2], "x-message-ttl", 1000);
	snprintf(pattern, sizeof(pattern), "%sf.02", iold_prefix);
	if (broker_queue_declare(c.amqp, pattern, true, qa, 3, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	iold_touch_all(&c, "f", 2, 3);
	/* What a run killed between fencing and cleaning up leaves. */
	snprintf(pattern, sizeof(pattern), "^%sf\\.00$", iold_rprefix);
	def = json_pack("{s:i,s:s}", "max-length", 0, "overflow", "reject-publish");
	if (mgmt_put_policy(c.mgmt, leftover_fence, pattern, "queues", 0, def, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	json_decref(def);
	/* ... and the marker its seal left in the queue. */
	snprintf(pattern, sizeof(pattern), "%sf.00", iold_prefix);
	m.routing_key = pattern;
	m.body = "marker";
	m.len = 6;
	m.message_id = leftover_fence;
	if (broker_publish(c.amqp, &m, 5000, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	json_decref(iold_await_counters(c.mgmt, (const char *const[]){ "f.00" },
	    (const int64_t[]){ 2 }, 1));
	measured = late_setup(&c, &l, &o, "f.00");

	(void)old_remove(&c, &o, &r, err, sizeof(err));
	/* The leftover marker was taken back first: f.00 was checked empty. */
	e = iold_entry(r, "entries", "f.00");
	assert_non_null(e);
	assert_int_equal(ijson_int(e, "messages_seen"), 0);
	/* A broker slow to put the fence in force (a loaded machine) makes
	 * the step take its markers back and leave the queue for its next
	 * run, before the late publish: then run it again, as the engine
	 * would. */
	for (int again = 0; again < 3 && l.calls == 0 &&
	    strstr(iold_str_of(e, "reason"), "not yet in force") != NULL; again++) {
		assert_true(iold_exists(c.amqp, "f.00", &depth));
		fprintf(stderr, "# the fence was not yet in force; running again\n");
		json_decref(r);
		r = NULL;
		(void)old_remove(&c, &o, &r, err, sizeof(err));
		e = iold_entry(r, "entries", "f.00");
		assert_non_null(e);
	}
	/* The late message was published once; it is either refused (and the
	 * queue deleted with nothing in it) or still in the queue: never
	 * deleted with it. */
	if (l.published + l.refused != 1)
		fail_msg("the late publish: %d call(s) of the hook, %d confirmed, %d "
		    "refused (%s); f.00's entry: %s", l.calls, l.published, l.refused,
		    l.failed, iold_str_of(e, "reason"));
	if (l.published == 1) {
		if (!iold_exists(c.amqp, "f.00", &depth) || depth != 1)
			fail_msg("the message published between the check and the delete "
			    "was confirmed and then deleted with the queue (entry: %s, "
			    "purged %lld)", iold_str_of(e, "reason"),
			    (long long)json_integer_value(json_object_get(e, "purged")));
		assert_string_equal(iold_str_of(e, "outcome"), "left");
	} else {
		assert_string_equal(iold_str_of(e, "outcome"), "removed");
		assert_int_equal(ijson_int(e, "purged"), 0);
		assert_non_null(strstr(iold_str_of(e, "reason"), "fenced"));
		assert_false(iold_exists(c.amqp, "f.00", NULL));
	}
	assert_string_equal(iold_outcome(r, "f.01"), "removed");
	assert_int_equal(ijson_int(iold_entry(r, "entries", "f.01"), "purged"), 0);
	e = iold_entry(r, "entries", "f.02");
	assert_string_equal(iold_str_of(e, "outcome"), "left");
	assert_non_null(strstr(iold_str_of(e, "reason"), "cannot be fenced"));
	assert_true(iold_exists(c.amqp, "f.02", NULL));
	/* Neither the leftover fence nor this run's remain. */
	assert_false(fence_left(c.mgmt));
	json_decref(r);

	broker_close(l.b);
	json_decref(measured);
	step_ctx_close(&c);
}

ITEST_MAIN(itest_main,
	cmocka_unit_test(test_message_between_check_and_delete_survives),
	cmocka_unit_test_teardown(test_quorum_publish_between_check_and_delete_is_refused,
	    iold_made_teardown))
