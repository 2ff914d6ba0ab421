/* test_mgmt_list (integration): the management client's listings: the
 * overview, queues unpaginated, counted, paginated with a regex, special
 * names, consumers, the nodes and where queues run. */
#include "itest_mgmt.h"

static void
test_overview(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	char err[512];

	if (mgmt_overview(c->m, &ov, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	print_message("broker: RabbitMQ %s, management %s, node %s\n",
	    ov.rabbitmq_version, ov.management_version, ov.node);
	assert_true(ov.rabbitmq_version[0] >= '3' &&
	    ov.rabbitmq_version[0] <= '9');
	assert_true(ov.node[0] != '\0');
	assert_string_equal(mgmt_vhost(c->m), "/");
}

static void
test_list_unpaginated(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_list l;
	const struct mgmt_queue *a, *b, *q;
	char err[512];
	int i;

	imgmt_publish(c, c->qa, "one");
	imgmt_publish(c, c->qa, "two");
	/* Queue totals come from the queues themselves: no statistics lag,
	 * but give a quorum queue's counters a moment anyway. */
	for (i = 0; i < 20; i++) {
		if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		a = mgmt_queue_list_find(&l, c->qa);
		if (a != NULL && a->messages == 2)
			break;
		mgmt_queue_list_free(&l);
		imgmt_nap(250);
	}
	assert_true(i < 20);
	assert_true(l.n >= 3);
	for (i = 1; (size_t)i < l.n; i++)
		assert_true(strcmp(l.v[i - 1].name, l.v[i].name) < 0);

	assert_string_equal(a->type, "classic");
	assert_true(a->durable);
	assert_int_equal(a->message_ttl, TTL_A);
	assert_int_equal(a->expires, EXPIRES_A);
	assert_int_equal(a->messages, 2);
	assert_int_equal(a->consumers, 0);
	assert_null(a->policy);
	assert_int_equal(a->policy_message_ttl, -1);

	b = mgmt_queue_list_find(&l, c->qb);
	assert_non_null(b);
	assert_string_equal(b->type, "classic");
	assert_int_equal(b->message_ttl, TTL_B);
	assert_int_equal(b->expires, -1);
	assert_int_equal(b->messages, 0);

	q = mgmt_queue_list_find(&l, c->qc);
	assert_non_null(q);
	assert_string_equal(q->type, "quorum");
	assert_true(q->durable);
	assert_int_equal(q->message_ttl, TTL_C);
	assert_int_equal(q->messages, 0);

	assert_null(mgmt_queue_list_find(&l, "itest.mgmt.no-such-queue"));
	mgmt_queue_list_free(&l);
	assert_int_equal(l.n, 0);
	assert_null(l.v);
}

/* The listing with the statistics on carries each queue's cumulative
 * publish counter (remove_old checks it against the watch's last sample)
 * and everything the fast listing carries; the fast one has no counter. */
static void
test_list_counted(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_list l, fast;
	const struct mgmt_queue *b = NULL;
	int64_t before = -1;
	char err[512];
	int i;

	if (mgmt_list_queues_counted(c->m, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if ((b = mgmt_queue_list_find(&l, c->qb)) != NULL)
		before = b->publish;
	mgmt_queue_list_free(&l);
	imgmt_publish(c, c->qb, "counted");
	/* The statistics lag by up to 10 s (DESIGN §3). */
	for (i = 0; i < 60; i++) {
		if (mgmt_list_queues_counted(c->m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		b = mgmt_queue_list_find(&l, c->qb);
		if (b != NULL && b->publish > (before < 0 ? 0 : before))
			break;
		mgmt_queue_list_free(&l);
		imgmt_nap(250);
	}
	assert_true(i < 60);
	assert_int_equal(b->publish, (before < 0 ? 0 : before) + 1);
	assert_string_equal(b->type, "classic");
	assert_int_equal(b->message_ttl, TTL_B);
	assert_int_equal(b->consumers, 0);
	assert_int_equal(b->policy_message_ttl, -1);
	for (i = 1; (size_t)i < l.n; i++)
		assert_true(strcmp(l.v[i - 1].name, l.v[i].name) < 0);
	if (mgmt_list_queues(c->m, &fast, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(fast.n, l.n);
	assert_non_null(mgmt_queue_list_find(&fast, c->qb));
	assert_int_equal(mgmt_queue_list_find(&fast, c->qb)->publish, -1);
	mgmt_queue_list_free(&fast);
	mgmt_queue_list_free(&l);
}

static void
test_list_paginated_regex(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_list l;
	struct mgmt_page pg;
	const struct mgmt_queue *q;
	char err[512], re[160], name[160];
	size_t i;

	/* One page: 2 of the 3 queues whose name matches. */
	snprintf(re, sizeof(re), "%sttl\\.", c->re);
	if (mgmt_list_queues_page(c->m, re, 1, 2, &l, &pg, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 2);
	assert_int_equal(pg.page, 1);
	assert_int_equal(pg.page_size, 2);
	assert_int_equal(pg.page_count, 2);
	assert_int_equal(pg.item_count, 2);
	assert_int_equal(pg.filtered_count, 3);
	assert_true(pg.total_count >= 3);
	mgmt_queue_list_free(&l);

	/* All pages. */
	if (mgmt_list_queues_paged(c->m, re, 2, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 3);
	for (i = 0; i < l.n; i++)
		assert_true(strncmp(l.v[i].name, c->prefix,
		    strlen(c->prefix)) == 0);
	q = mgmt_queue_list_find(&l, c->qa);
	assert_non_null(q);
	assert_int_equal(q->message_ttl, TTL_A);
	assert_string_equal(q->type, "classic");
	/* Statistics: absent (-1) until the queue has reported once, then
	 * lagging by a few seconds. */
	assert_true(q->messages >= -1 && q->messages <= 2);
	q = mgmt_queue_list_find(&l, c->qc);
	assert_non_null(q);
	assert_string_equal(q->type, "quorum");
	assert_int_equal(q->message_ttl, TTL_C);
	mgmt_queue_list_free(&l);

	/* The broker matches case-insensitively. */
	snprintf(name, sizeof(name), "%sCase.Q", c->prefix);
	if (mgmt_put_queue(c->m, name, true, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(re, sizeof(re), "%scase\\.q$", c->re);
	if (mgmt_list_queues_paged(c->m, re, 10, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0].name, name);
	mgmt_queue_list_free(&l);
	assert_int_equal(mgmt_delete_queue(c->m, name, 0, err, sizeof(err)),
	    0);

	/* No match: an empty list, not an error. */
	snprintf(re, sizeof(re), "%sno-such-", c->re);
	if (mgmt_list_queues_paged(c->m, re, 500, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(l.n, 0);
	mgmt_queue_list_free(&l);

	/* The broker's limits. */
	assert_int_equal(mgmt_list_queues_page(c->m, NULL, 1, 501, &l, &pg,
	    err, sizeof(err)), MGMT_ERR_ARG);
	assert_non_null(strstr(err, "500"));
	assert_int_equal(mgmt_list_queues_page(c->m, re, 0, 10, &l, &pg,
	    err, sizeof(err)), MGMT_ERR_ARG);
	/* A page past the last is the broker's 400. */
	snprintf(re, sizeof(re), "%sttl\\.", c->re);
	assert_int_equal(mgmt_list_queues_page(c->m, re, 9, 2, &l, &pg, err,
	    sizeof(err)), MGMT_ERR_HTTP);
	assert_non_null(strstr(err, "HTTP 400"));
	assert_non_null(strstr(err, "GET /api/queues/%2F"));
}

static void
test_special_names(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_info qi;
	struct mgmt_queue_list l;
	char err[512], name[160], enc[512];

	/* The encoder itself. */
	assert_int_equal(mgmt_escape("/", enc, sizeof(enc)), 3);
	assert_string_equal(enc, "%2F");
	assert_int_equal(mgmt_escape("a b/c#d?e%f.g-h_i~", enc, sizeof(enc)),
	    (int)strlen("a%20b%2Fc%23d%3Fe%25f.g-h_i~"));
	assert_string_equal(enc, "a%20b%2Fc%23d%3Fe%25f.g-h_i~");
	assert_int_equal(mgmt_escape("\xc3\xa9", enc, sizeof(enc)), 6);
	assert_string_equal(enc, "%C3%A9");
	assert_int_equal(mgmt_escape("ab/", enc, 5), -1);

	/* A queue whose name has a space, '/', '#', '?' and '%'. */
	snprintf(name, sizeof(name), "%sodd name/with#hash?q%%25", c->prefix);
	if (mgmt_put_queue(c->m, name, true, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (mgmt_get_queue(c->m, name, &qi, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_string_equal(qi.q.name, name);
	assert_int_equal(qi.q.message_ttl, -1);
	mgmt_queue_info_free(&qi);
	if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_non_null(mgmt_queue_list_find(&l, name));
	mgmt_queue_list_free(&l);
	assert_int_equal(mgmt_delete_queue(c->m, name, 0, err, sizeof(err)),
	    0);
	assert_int_equal(mgmt_get_queue(c->m, name, &qi, err, sizeof(err)),
	    MGMT_NOT_FOUND);
	/* The message shows the encoded path. */
	assert_non_null(strstr(err, "odd%20name%2Fwith%23hash%3Fq%2525"));
}

/* A consumer shows in the fast listing (through /api/consumers, which is
 * statistics: allow it a few seconds). */
static void
test_consumers(void **state)
{
	struct ctx *c = *state;
	struct mgmt_queue_list l;
	struct amqp_connection_info ci;
	amqp_connection_state_t conn;
	amqp_socket_t *sock;
	amqp_rpc_reply_t r;
	const struct mgmt_queue *q;
	const char *url = getenv("CUTOVER_TEST_AMQP");
	char err[512], *buf;
	int k;

	if (url == NULL)
		fail_msg("set CUTOVER_TEST_AMQP (scripts/test does)");
	buf = strdup(url);
	assert_non_null(buf);
	assert_int_equal(amqp_parse_url(buf, &ci), AMQP_STATUS_OK);
	conn = amqp_new_connection();
	sock = amqp_tcp_socket_new(conn);
	assert_non_null(sock);
	assert_int_equal(amqp_socket_open(sock, ci.host, ci.port), 0);
	r = amqp_login(conn, ci.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN,
	    c->user, getenv("CUTOVER_TEST_PASSWORD"));
	assert_int_equal(r.reply_type, AMQP_RESPONSE_NORMAL);
	amqp_channel_open(conn, 1);
	assert_int_equal(amqp_get_rpc_reply(conn).reply_type,
	    AMQP_RESPONSE_NORMAL);
	amqp_basic_consume(conn, 1, amqp_cstring_bytes(c->qb),
	    amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
	assert_int_equal(amqp_get_rpc_reply(conn).reply_type,
	    AMQP_RESPONSE_NORMAL);

	for (k = 0; k < 60; k++) {
		if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		q = mgmt_queue_list_find(&l, c->qb);
		assert_non_null(q);
		if (q->consumers == 1)
			break;
		mgmt_queue_list_free(&l);
		imgmt_nap(250);
	}
	print_message("consumer visible after %.2f s\n", k * 0.25);
	assert_true(k < 60);
	q = mgmt_queue_list_find(&l, c->qa);
	assert_non_null(q);
	assert_int_equal(q->consumers, 0);
	mgmt_queue_list_free(&l);

	amqp_channel_close(conn, 1, AMQP_REPLY_SUCCESS);
	amqp_connection_close(conn, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(conn);
	free(buf);
}

/* The cluster's members (mgmt_list_nodes: the one test node, running,
 * with an uptime, a process id and its application counters) and where
 * queues run (mgmt_list_queue_places: a classic queue's node, a quorum
 * queue's leader with every member online), as the watch reads them to
 * tell a restart. */
static void
test_nodes_and_places(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt_node_list nl;
	struct mgmt_queue_place_list pl;
	const struct mgmt_queue_place *a, *q;
	char err[512];
	size_t i;

	if (mgmt_overview(c->m, &ov, err, sizeof(err)) != 0 ||
	    mgmt_list_nodes(c->m, &nl, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (i = 0; i < nl.n && strcmp(nl.v[i].name, ov.node) != 0; i++)
		;
	assert_true(i < nl.n);
	assert_true(nl.v[i].running);
	assert_true(nl.v[i].uptime_ms > 0);
	assert_non_null(nl.v[i].os_pid);
	assert_true(nl.v[i].queue_declared >= 0);
	mgmt_node_list_free(&nl);

	if (mgmt_list_queue_places(c->m, &pl, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	for (i = 1; i < pl.n; i++)
		assert_true(strcmp(pl.v[i - 1].name, pl.v[i].name) < 0);
	a = mgmt_queue_place_find(&pl, c->qa);
	q = mgmt_queue_place_find(&pl, c->qc);
	assert_non_null(a);
	assert_non_null(q);
	assert_string_equal(a->type, "classic");
	assert_string_equal(a->leader, ov.node);
	assert_string_equal(q->type, "quorum");
	assert_string_equal(q->leader, ov.node);
	assert_int_equal(q->members, 1);
	assert_int_equal(q->online, 1);
	assert_null(mgmt_queue_place_find(&pl, "itest.mgmt.no.such.queue"));
	mgmt_queue_place_list_free(&pl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overview),
		cmocka_unit_test(test_list_unpaginated),
		cmocka_unit_test(test_list_counted),
		cmocka_unit_test(test_list_paginated_regex),
		cmocka_unit_test(test_special_names),
		cmocka_unit_test(test_consumers),
		cmocka_unit_test(test_nodes_and_places),
	};

	return cmocka_run_group_tests(tests, imgmt_group_setup, imgmt_group_teardown);
}
