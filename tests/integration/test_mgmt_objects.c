/* test_mgmt_objects (integration): the management client's objects:
 * effective policies, a queue and an exchange read, not found, bindings,
 * requests and delete flags, a missing vhost. */
#include "itest_mgmt.h"

static void
test_policy_effective(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_info qi;
	struct mgmt_queue_list l;
	struct mgmt_policy_list pl;
	const struct mgmt_queue *q;
	char err[512], pattern[160];
	json_t *def;
	size_t i;
	int k, found = 0;

	snprintf(pattern, sizeof(pattern), "%sttl\\.b$", c->re);
	def = json_pack("{s:i}", "message-ttl", 5000);
	assert_non_null(def);
	if (mgmt_put_policy(c->m, c->pol, pattern, "queues", 10, def, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	json_decref(def);

	if (mgmt_list_policies(c->m, &pl, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (i = 0; i < pl.n; i++) {
		if (strcmp(pl.v[i].name, c->pol) != 0)
			continue;
		found = 1;
		assert_string_equal(pl.v[i].pattern, pattern);
		assert_string_equal(pl.v[i].apply_to, "queues");
		assert_int_equal(pl.v[i].priority, 10);
		assert_int_equal(json_integer_value(json_object_get(
		    pl.v[i].definition, "message-ttl")), 5000);
	}
	mgmt_policy_list_free(&pl);
	assert_true(found);

	/* The queue's effective policy, as verification reads it. */
	for (k = 0; k < 40; k++) {
		if (mgmt_get_queue(c->m, c->qb, &qi, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		if (qi.q.policy_message_ttl == 5000)
			break;
		mgmt_queue_info_free(&qi);
		imgmt_nap(250);
	}
	assert_true(k < 40);
	assert_non_null(qi.q.policy);
	assert_string_equal(qi.q.policy, c->pol);
	assert_null(qi.operator_policy);
	assert_int_equal(qi.q.message_ttl, TTL_B);
	assert_int_equal(json_integer_value(json_object_get(qi.effective_policy,
	    "message-ttl")), 5000);
	mgmt_queue_info_free(&qi);

	/* The fast listing resolves it through the policy's name. */
	if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	q = mgmt_queue_list_find(&l, c->qb);
	assert_non_null(q);
	assert_non_null(q->policy);
	assert_string_equal(q->policy, c->pol);
	assert_int_equal(q->policy_message_ttl, 5000);
	q = mgmt_queue_list_find(&l, c->qa);
	assert_non_null(q);
	assert_null(q->policy);
	assert_int_equal(q->policy_message_ttl, -1);
	mgmt_queue_list_free(&l);

	/* A definition the broker refuses: its reason comes through. */
	def = json_pack("{s:i}", "message-ttl", -1);
	assert_int_equal(mgmt_put_policy(c->m, c->pol, pattern, "queues", 10,
	    def, err, sizeof(err)), MGMT_ERR_HTTP);
	json_decref(def);
	assert_non_null(strstr(err, "PUT /api/policies/%2F/"));
	assert_non_null(strstr(err, "HTTP 400"));
	assert_non_null(strstr(err, "not a valid message TTL"));

	assert_int_equal(mgmt_delete_policy(c->m, c->pol, err, sizeof(err)),
	    0);
	assert_int_equal(mgmt_delete_policy(c->m, c->pol, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	for (k = 0; k < 40; k++) {
		if (mgmt_get_queue(c->m, c->qb, &qi, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		if (qi.q.policy == NULL)
			break;
		mgmt_queue_info_free(&qi);
		imgmt_nap(250);
	}
	assert_true(k < 40);
	assert_int_equal(qi.q.policy_message_ttl, -1);
	mgmt_queue_info_free(&qi);
}

static void
test_get_queue_and_exchange(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_info qi;
	struct mgmt_exchange x;
	char err[512], ae[160];
	json_t *args;

	if (mgmt_get_queue(c->m, c->qa, &qi, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(qi.q.name, c->qa);
	assert_string_equal(qi.q.type, "classic");
	assert_true(qi.q.durable);
	assert_int_equal(qi.q.message_ttl, TTL_A);
	assert_int_equal(qi.q.expires, EXPIRES_A);
	assert_int_equal(json_integer_value(json_object_get(qi.arguments,
	    "x-message-ttl")), TTL_A);
	assert_true(json_is_object(qi.effective_policy));
	assert_true(qi.q.messages >= -1 && qi.q.messages <= 2);
	mgmt_queue_info_free(&qi);
	assert_null(qi.json);

	if (mgmt_get_queue(c->m, c->qc, &qi, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(qi.q.type, "quorum");
	assert_string_equal(json_string_value(json_object_get(qi.arguments,
	    "x-queue-type")), "quorum");
	mgmt_queue_info_free(&qi);

	snprintf(ae, sizeof(ae), "%sae", c->prefix);
	args = json_pack("{s:s}", "alternate-exchange", ae);
	if (mgmt_put_exchange(c->m, c->x, "topic", true, args, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	json_decref(args);
	if (mgmt_get_exchange(c->m, c->x, &x, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(x.name, c->x);
	assert_string_equal(x.type, "topic");
	assert_true(x.durable);
	assert_false(x.auto_delete);
	assert_false(x.internal);
	assert_string_equal(json_string_value(json_object_get(x.arguments,
	    "alternate-exchange")), ae);
	mgmt_exchange_free(&x);
}

static void
test_not_found(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_info qi;
	struct mgmt_exchange x;
	char err[512], name[160];
	long status = -1;
	json_t *ans = (json_t *)1;

	snprintf(name, sizeof(name), "%smissing", c->prefix);
	assert_int_equal(mgmt_get_queue(c->m, name, &qi, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_null(qi.json);
	assert_non_null(strstr(err, "GET /api/queues/%2F/itest.mgmt."));
	assert_non_null(strstr(err, "404"));
	assert_int_equal(mgmt_get_exchange(c->m, name, &x, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_null(x.json);
	assert_int_equal(mgmt_delete_queue(c->m, name, 0, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_int_equal(mgmt_delete_exchange(c->m, name, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_int_equal(mgmt_delete_policy(c->m, name, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_int_equal(mgmt_delete_binding(c->m, "amq.topic",
	    MGMT_DEST_QUEUE, name, "no.such.key", err, sizeof(err)),
	    MGMT_NOT_FOUND);
	assert_int_equal(mgmt_request(c->m, "GET",
	    "/api/queues/%2F/itest.mgmt.nothing", NULL, &ans, &status, err,
	    sizeof(err)), MGMT_NOT_FOUND);
	assert_int_equal(status, 404);
	assert_null(ans);
}

static void
test_bindings(void **state)
{
	struct ctx *c = *state;
	struct mgmt_binding_list l;
	char err[512];
	const char *props = NULL, *oddprops = NULL;
	const char *odd = "a b/c%d#e";
	json_t *args;
	size_t i;
	int seen = 0;

	/* The exchange may exist already, with other arguments. */
	if (mgmt_put_exchange(c->m, c->x, "topic", true, NULL, err,
	    sizeof(err)) != 0 && strstr(err, "inequivalent") == NULL)
		fail_msg("%s", err);
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_QUEUE, c->qa,
	    "1.#", NULL, err, sizeof(err)), 0);
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_QUEUE, c->qb,
	    "*.0.#", NULL, err, sizeof(err)), 0);
	args = json_pack("{s:s}", "x-k", "v");
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_QUEUE, c->qb,
	    "*.1.#", args, err, sizeof(err)), 0);
	json_decref(args);
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_EXCHANGE,
	    "amq.topic", "x.y", NULL, err, sizeof(err)), 0);
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_QUEUE, c->qa,
	    odd, NULL, err, sizeof(err)), 0);

	if (mgmt_list_bindings_from(c->m, c->x, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 5);
	for (i = 0; i < l.n; i++) {
		assert_string_equal(l.v[i].source, c->x);
		if (strcmp(l.v[i].routing_key, "1.#") == 0) {
			seen |= 1;
			assert_string_equal(l.v[i].destination, c->qa);
			assert_int_equal(l.v[i].destination_type,
			    MGMT_DEST_QUEUE);
			props = l.v[i].properties_key;
		} else if (strcmp(l.v[i].routing_key, "*.0.#") == 0) {
			seen |= 2;
			assert_string_equal(l.v[i].destination, c->qb);
		} else if (strcmp(l.v[i].routing_key, "*.1.#") == 0) {
			seen |= 4;
			assert_string_equal(json_string_value(json_object_get(
			    l.v[i].arguments, "x-k")), "v");
		} else if (strcmp(l.v[i].routing_key, "x.y") == 0) {
			seen |= 8;
			assert_string_equal(l.v[i].destination, "amq.topic");
			assert_int_equal(l.v[i].destination_type,
			    MGMT_DEST_EXCHANGE);
		} else if (strcmp(l.v[i].routing_key, odd) == 0) {
			seen |= 16;
			oddprops = l.v[i].properties_key;
		}
	}
	assert_int_equal(seen, 31);

	/* Delete by properties key: one plain, one that needs encoding
	 * twice (the key itself is already percent-encoded). */
	assert_non_null(props);
	assert_non_null(oddprops);
	assert_int_equal(mgmt_delete_binding(c->m, c->x, MGMT_DEST_QUEUE,
	    c->qa, props, err, sizeof(err)), 0);
	assert_int_equal(mgmt_delete_binding(c->m, c->x, MGMT_DEST_QUEUE,
	    c->qa, oddprops, err, sizeof(err)), 0);
	assert_int_equal(mgmt_delete_binding(c->m, c->x, MGMT_DEST_QUEUE,
	    c->qa, props, err, sizeof(err)), MGMT_NOT_FOUND);
	mgmt_binding_list_free(&l);
	assert_null(l.json);

	if (mgmt_list_bindings_from(c->m, c->x, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 3);
	for (i = 0; i < l.n; i++) {
		assert_string_not_equal(l.v[i].routing_key, "1.#");
		assert_string_not_equal(l.v[i].routing_key, odd);
	}
	mgmt_binding_list_free(&l);

	/* Binding to a queue that does not exist. */
	assert_int_equal(mgmt_add_binding(c->m, c->x, MGMT_DEST_QUEUE,
	    "itest.mgmt.none", "k", NULL, err, sizeof(err)), MGMT_ERR_HTTP);
	assert_non_null(strstr(err, "POST /api/bindings/%2F/e/"));
}

static void
test_request_and_delete_flags(void **state)
{
	struct ctx *c = *state;
	char err[512], path[512], enc[256];
	json_t *ans = NULL;
	long status = 0;

	assert_true(mgmt_escape(c->qa, enc, sizeof(enc)) > 0);
	snprintf(path, sizeof(path), "/api/queues/%%2F/%s?columns=name,"
	    "arguments", enc);
	if (mgmt_request(c->m, "GET", path, NULL, &ans, &status, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(status, 200);
	assert_string_equal(json_string_value(json_object_get(ans, "name")),
	    c->qa);
	json_decref(ans);

	assert_int_equal(mgmt_request(c->m, "PATCH", path, NULL, NULL, NULL,
	    err, sizeof(err)), MGMT_ERR_ARG);
	assert_int_equal(mgmt_request(c->m, "GET", "/overview", NULL, NULL,
	    NULL, err, sizeof(err)), MGMT_ERR_ARG);

	/* Redeclaring with other arguments: the broker's 400 and reason. */
	assert_int_equal(mgmt_put_queue(c->m, c->qa, true, NULL, err,
	    sizeof(err)), MGMT_ERR_HTTP);
	assert_non_null(strstr(err, "HTTP 400"));
	assert_non_null(strstr(err, "inequivalent arg"));

	/* A broker answer that quotes the password (here inside a queue
	 * name) is redacted. */
	{
		const char *pw = getenv("CUTOVER_TEST_PASSWORD");
		char name[256];
		json_t *a;

		snprintf(name, sizeof(name), "%sx-%s-x", c->prefix, pw);
		assert_int_equal(mgmt_put_queue(c->m, name, true, NULL, err,
		    sizeof(err)), 0);
		a = imgmt_ttl_args(1000, 0, NULL);
		assert_int_equal(mgmt_put_queue(c->m, name, true, a, err,
		    sizeof(err)), MGMT_ERR_HTTP);
		json_decref(a);
		print_message("redacted: %s\n", err);
		assert_null(strstr(err, pw));
		assert_non_null(strstr(err, "***"));
		assert_int_equal(mgmt_delete_queue(c->m, name, 0, err,
		    sizeof(err)), 0);
	}

	/* A queue of this test's own that holds a message (the queue totals
	 * show it; a generous ceiling): if-empty refuses, the queue stays. */
	{
		struct mgmt_queue_list l;
		const struct mgmt_queue *q = NULL;
		char full[256];
		int k;

		snprintf(full, sizeof(full), "%sfull", c->prefix);
		assert_int_equal(mgmt_put_queue(c->m, full, true, NULL, err,
		    sizeof(err)), 0);
		imgmt_publish(c, full, "one");
		for (k = 0; k < 120; k++) {
			if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			q = mgmt_queue_list_find(&l, full);
			if (q != NULL && q->messages == 1)
				break;
			mgmt_queue_list_free(&l);
			imgmt_nap(250);
		}
		assert_true(k < 120);
		mgmt_queue_list_free(&l);
		assert_int_equal(mgmt_delete_queue(c->m, full, MGMT_IF_EMPTY, err,
		    sizeof(err)), MGMT_ERR_HTTP);
		assert_non_null(strstr(err, "not empty"));
		assert_non_null(strstr(err, "?if-empty=true"));
		assert_true(mgmt_escape(full, enc, sizeof(enc)) > 0);
		snprintf(path, sizeof(path), "/api/queues/%%2F/%s", enc);
		assert_int_equal(mgmt_request(c->m, "GET", path, NULL, NULL, NULL,
		    err, sizeof(err)), 0);
		assert_int_equal(mgmt_delete_queue(c->m, full, 0, err,
		    sizeof(err)), 0);
	}
}

static void
test_vhost_missing(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_list l;
	struct mgmt *m = NULL;
	char err[512], vhost[64];

	snprintf(vhost, sizeof(vhost), "itest-mgmt-none-%ld", (long)getpid());
	if (mgmt_open(c->url, vhost, c->user, PASSWORD_REF, TIMEOUT_MS, &m,
	    err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(mgmt_list_queues(m, &l, err, sizeof(err)),
	    MGMT_ERR_HTTP);
	assert_non_null(strstr(err, vhost));
	assert_int_equal(l.n, 0);
	mgmt_close(m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_effective),
		cmocka_unit_test(test_get_queue_and_exchange),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_bindings),
		cmocka_unit_test(test_request_and_delete_flags),
		cmocka_unit_test(test_vhost_missing),
	};

	return cmocka_run_group_tests(tests, imgmt_group_setup, imgmt_group_teardown);
}
