/* test_old_race (integration): remove_old's window between the check and
 * the delete: a message that arrives in it (through the removal's test
 * hook, a real interleaving on the broker) survives on a classic queue and
 * is refused on a fenced quorum queue; and a fence keeps the queue's own
 * policy's TTL and dead-lettering. */
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

/* What the hook saw of a fenced queue: its policy and that policy's
 * definition, read back from the management API. */
struct fenced_look {
	struct mgmt *m;			/* the hook's own management client */
	char target[128];
	int calls;
	char policy[256];
	json_t *definition;
	char failed[1024];		/* a read that failed */
};

/* The removal's hook between check and delete: reads the target's policy
 * while the fence is on it. */
static void
look_at_fence(void *arg, const char *queue)
{
	struct fenced_look *l = arg;
	json_t *q = NULL, *pol = NULL;
	char name[3 * 256 + 1], path[3 * 256 + 64], err[1024];
	const char *policy;

	if (strcmp(queue, l->target) != 0)
		return;
	l->calls++;
	/* The queue records themselves (no statistics): a single queue's
	 * page names its policy only once the statistics catch up. */
	snprintf(path, sizeof(path), "/api/queues/%%2F?disable_stats=true&"
	    "enable_queue_totals=true&columns=name,policy");
	if (mgmt_request(l->m, "GET", path, NULL, &q, NULL, err, sizeof(err)) != 0) {
		snprintf(l->failed, sizeof(l->failed), "%s: %s", path, err);
		return;
	}
	policy = json_string_value(json_object_get(old_json_by_name(q, queue), "policy"));
	snprintf(l->policy, sizeof(l->policy), "%s", policy != NULL ? policy : "");
	json_decref(q);
	if (mgmt_escape(l->policy, name, sizeof(name)) < 0)
		name[0] = '\0';
	snprintf(path, sizeof(path), "/api/policies/%%2F/%s", name);
	if (mgmt_request(l->m, "GET", path, NULL, &pol, NULL, err, sizeof(err)) != 0) {
		snprintf(l->failed, sizeof(l->failed), "%s: %s", path, err);
		return;
	}
	l->definition = json_incref(json_object_get(pol, "definition"));
	json_decref(pol);
}

/* Fails the test unless DEF, fence POLICY's definition, keeps the queue's
 * own message-ttl (1 s) and dead-lettering to DEST, and has the fence's
 * max-length 0. */
static void
assert_keeps_own(const json_t *def, const char *policy, const char *dest)
{
	char *text = json_dumps(def, JSON_COMPACT | JSON_SORT_KEYS);

	if (json_integer_value(json_object_get(def, "message-ttl")) != 1000 ||
	    json_string_value(json_object_get(def, "dead-letter-exchange")) == NULL ||
	    strcmp(iold_str_of(def, "dead-letter-routing-key"), dest) != 0 ||
	    !json_is_integer(json_object_get(def, "max-length")) ||
	    json_integer_value(json_object_get(def, "max-length")) != 0)
		fail_msg("while fenced by '%s', its definition is %s: it lost the "
		    "queue's own policy's message-ttl 1000 and dead-lettering to %s, so "
		    "a queue left fenced strands its messages", policy,
		    text != NULL ? text : "(none)", dest);
	free(text);
}

/* A quorum old queue whose TTL and dead-lettering come from its own
 * policy (no arguments): the fence that remove_old puts above that policy
 * (RabbitMQ applies one policy per queue) copies its definition, so while
 * fenced the broker still applies the queue's TTL and dead-lettering (a
 * queue left fenced would otherwise strand what it holds); and it is then
 * removed, the fence with it. */
static void
test_fence_keeps_the_queues_own_policy(void **state)
{
	static struct made made = { .queues = { "pf.00", "pf.dest" } };
	struct step_ctx c;
	struct fenced_look l = { 0 };
	struct old_remove_opts o = { 0 };
	struct topology_arg qa;
	json_t *measured = NULL, *r = NULL, *def;
	const json_t *e;
	char full[128], dest[128], err[2048];

	iold_policy_start(state, &made, "pf", &c, dest, sizeof(dest));
	snprintf(full, sizeof(full), "%spf.00", iold_prefix);
	itest_arg_str(&qa, "x-queue-type", "quorum");
	if (broker_queue_declare(c.amqp, full, true, &qa, 1, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	def = json_pack("{s:i,s:s,s:s}", "message-ttl", 1000, "dead-letter-exchange", "",
	    "dead-letter-routing-key", dest);
	iold_policy_on(c.mgmt, "pol-pf", "pf.00", def);
	json_decref(def);
	iold_touch_all(&c, "pf", 2, 1);
	if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (mgmt_open(getenv("CUTOVER_TEST_MGMT"), "/", getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 10000, &l.m, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(l.target, sizeof(l.target), "%s", full);
	o.between = look_at_fence;
	o.arg = &l;
	c.measured = measured;
	c.old_last_entry_ms = now_ms() - 10 * MIN_MS;

	(void)old_remove(&c, &o, &r, err, sizeof(err));
	e = iold_entry(r, "entries", "pf.00");
	/* A broker slow to put the fence in force leaves the queue for the
	 * next run: run it again, as the engine would. */
	for (int again = 0; again < 3 && l.calls == 0 &&
	    strstr(iold_str_of(e, "reason"), "not yet in force") != NULL; again++) {
		fprintf(stderr, "# the fence was not yet in force; running again\n");
		json_decref(r);
		r = NULL;
		(void)old_remove(&c, &o, &r, err, sizeof(err));
		e = iold_entry(r, "entries", "pf.00");
	}
	if (l.calls != 1 || l.failed[0] != '\0')
		fail_msg("the hook ran %d time(s) on the fenced queue (%s); pf.00: %s",
		    l.calls, l.failed, iold_str_of(e, "reason"));
	fprintf(stderr, "# fenced by %s\n", l.policy);
	assert_true(strncmp(l.policy, "cutover.fence=itest-old=", 24) == 0);
	assert_keeps_own(l.definition, l.policy, dest);
	assert_string_equal(iold_str_of(e, "outcome"), "removed");
	assert_false(iold_exists(c.amqp, "pf.00", NULL));
	assert_false(fence_left(c.mgmt));
	json_decref(r);

	json_decref(l.definition);
	mgmt_close(l.m);
	json_decref(measured);
	step_ctx_close(&c);
}

ITEST_MAIN(itest_main,
	cmocka_unit_test(test_message_between_check_and_delete_survives),
	cmocka_unit_test_teardown(test_quorum_publish_between_check_and_delete_is_refused,
	    iold_made_teardown),
	cmocka_unit_test_teardown(test_fence_keeps_the_queues_own_policy,
	    iold_made_teardown))
