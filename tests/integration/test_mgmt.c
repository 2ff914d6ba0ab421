/* test_mgmt: the management API client (mgmt.h) against a real RabbitMQ
 * node: CUTOVER_TEST_MGMT (e.g. http://127.0.0.1:15672), CUTOVER_TEST_USER,
 * password env:CUTOVER_TEST_PASSWORD, and CUTOVER_TEST_AMQP for the one
 * test that needs a consumer. Every object is created through the
 * management API under the prefix "itest.mgmt.<pid>." and deleted at the
 * end, even when a test fails. Listing at scale is measured by
 * bench/old_path, not here. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
/* rabbitmq-c itself, for one consumer that is not the project's. */
#include <amqp.h>
#include <amqp_tcp_socket.h>

#include "clock.h"
#include "itest_run.h"
#include "broker/mgmt.h"
#include "mgmt_test.h"

#define PASSWORD_REF	"env:CUTOVER_TEST_PASSWORD"
#define TIMEOUT_MS	10000L
#define TTL_A		600000	/* ms: no expiry during the test */
#define TTL_B		1200000
#define TTL_C		1800000
#define EXPIRES_A	3600000

struct ctx {
	const char	*url;
	const char	*user;
	struct mgmt	*m;
	char		 prefix[64];	/* "itest.mgmt.<pid>." */
	char		 re[96];	/* the prefix as a regex, "^..." */
	char		 qa[128], qb[128], qc[128];
	char		 x[128];	/* a topic exchange */
	char		 pol[128];	/* a policy */
};

static double
now(void)
{
	return (double)clock_mono_ms() / 1e3;
}

static void
nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static json_t *
ttl_args(long ttl, long expires, const char *type)
{
	json_t *a = json_object();

	assert_non_null(a);
	assert_int_equal(json_object_set_new(a, "x-message-ttl",
	    json_integer(ttl)), 0);
	if (expires > 0)
		assert_int_equal(json_object_set_new(a, "x-expires",
		    json_integer(expires)), 0);
	if (type != NULL)
		assert_int_equal(json_object_set_new(a, "x-queue-type",
		    json_string(type)), 0);
	return a;
}

/* Publishes BODY to queue Q through the default exchange (management API). */
static void
publish(struct ctx *c, const char *q, const char *body)
{
	char err[512];
	json_t *req, *ans = NULL;
	int rc;

	req = json_pack("{s:{}, s:s, s:s, s:s}", "properties", "routing_key",
	    q, "payload", body, "payload_encoding", "string");
	assert_non_null(req);
	rc = mgmt_request(c->m, "POST",
	    "/api/exchanges/%2F/amq.default/publish", req, &ans, NULL, err,
	    sizeof(err));
	json_decref(req);
	if (rc != 0)
		fail_msg("publish: %s", err);
	assert_true(json_is_true(json_object_get(ans, "routed")));
	json_decref(ans);
}

/* Deletes every queue, exchange and policy under the prefix. */
static void
sweep(struct ctx *c)
{
	struct mgmt_queue_list l;
	struct mgmt_policy_list pl;
	char err[512];
	size_t i, n = strlen(c->prefix);

	if (mgmt_list_queues(c->m, &l, err, sizeof(err)) == 0) {
		for (i = 0; i < l.n; i++)
			if (strncmp(l.v[i].name, c->prefix, n) == 0 &&
			    mgmt_delete_queue(c->m, l.v[i].name, 0, err,
			    sizeof(err)) < 0)
				print_message("cleanup: %s\n", err);
		mgmt_queue_list_free(&l);
	} else
		print_message("cleanup: %s\n", err);
	if (mgmt_list_policies(c->m, &pl, err, sizeof(err)) == 0) {
		for (i = 0; i < pl.n; i++)
			if (strncmp(pl.v[i].name, c->prefix, n) == 0)
				mgmt_delete_policy(c->m, pl.v[i].name, err,
				    sizeof(err));
		mgmt_policy_list_free(&pl);
	}
	mgmt_delete_exchange(c->m, c->x, err, sizeof(err));
}

static int
group_setup(void **state)
{
	struct ctx *c;
	char err[512];
	json_t *a;
	const char *p;
	size_t k;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -1;
	c->url = getenv("CUTOVER_TEST_MGMT");
	c->user = getenv("CUTOVER_TEST_USER");
	if (c->url == NULL || c->user == NULL ||
	    getenv("CUTOVER_TEST_PASSWORD") == NULL) {
		fprintf(stderr, "test_mgmt: set CUTOVER_TEST_MGMT, "
		    "CUTOVER_TEST_USER and CUTOVER_TEST_PASSWORD (scripts/test "
		    "does)\n");
		free(c);
		return -1;
	}
	snprintf(c->prefix, sizeof(c->prefix), "itest.mgmt.%ld.",
	    (long)getpid());
	c->re[0] = '^';
	for (p = c->prefix, k = 1; *p != '\0'; p++) {
		if (*p == '.')
			c->re[k++] = '\\';
		c->re[k++] = *p;
	}
	c->re[k] = '\0';
	snprintf(c->qa, sizeof(c->qa), "%sttl.a", c->prefix);
	snprintf(c->qb, sizeof(c->qb), "%sttl.b", c->prefix);
	snprintf(c->qc, sizeof(c->qc), "%sttl.c", c->prefix);
	snprintf(c->x, sizeof(c->x), "%sx", c->prefix);
	snprintf(c->pol, sizeof(c->pol), "%spol", c->prefix);
	if (mgmt_open(c->url, "/", c->user, PASSWORD_REF, TIMEOUT_MS, &c->m,
	    err, sizeof(err)) != 0) {
		fprintf(stderr, "test_mgmt: %s\n", err);
		free(c);
		return -1;
	}
	/* Three queues with different TTLs: two classic, one quorum. */
	a = ttl_args(TTL_A, EXPIRES_A, NULL);
	if (mgmt_put_queue(c->m, c->qa, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	a = ttl_args(TTL_B, 0, NULL);
	if (mgmt_put_queue(c->m, c->qb, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	a = ttl_args(TTL_C, 0, "quorum");
	if (mgmt_put_queue(c->m, c->qc, true, a, err, sizeof(err)) != 0)
		goto fail;
	json_decref(a);
	*state = c;
	return 0;
fail:
	fprintf(stderr, "test_mgmt: setup: %s\n", err);
	json_decref(a);
	sweep(c);
	mgmt_close(c->m);
	free(c);
	return -1;
}

static int
group_teardown(void **state)
{
	struct ctx *c = *state;

	sweep(c);
	mgmt_close(c->m);
	free(c);
	return 0;
}

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

	publish(c, c->qa, "one");
	publish(c, c->qa, "two");
	/* Queue totals come from the queues themselves: no statistics lag,
	 * but give a quorum queue's counters a moment anyway. */
	for (i = 0; i < 20; i++) {
		if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		a = mgmt_queue_list_find(&l, c->qa);
		if (a != NULL && a->messages == 2)
			break;
		mgmt_queue_list_free(&l);
		nap(250);
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
	publish(c, c->qb, "counted");
	/* The statistics lag by up to 10 s (DESIGN §3). */
	for (i = 0; i < 60; i++) {
		if (mgmt_list_queues_counted(c->m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		b = mgmt_queue_list_find(&l, c->qb);
		if (b != NULL && b->publish > (before < 0 ? 0 : before))
			break;
		mgmt_queue_list_free(&l);
		nap(250);
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
		nap(250);
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
		nap(250);
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
test_wrong_password(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	char err[512], pw[64];
	long status = 0;

	snprintf(pw, sizeof(pw), "wrong-pw-%ld-Zq", (long)getpid());
	assert_int_equal(setenv("CUTOVER_TEST_WRONG_PASSWORD", pw, 1), 0);
	if (mgmt_open(c->url, "/", c->user, "env:CUTOVER_TEST_WRONG_PASSWORD",
	    TIMEOUT_MS, &m, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(mgmt_overview(m, &ov, err, sizeof(err)),
	    MGMT_ERR_AUTH);
	print_message("wrong password: %s\n", err);
	assert_non_null(strstr(err, "GET /api/overview"));
	assert_non_null(strstr(err, "401"));
	assert_null(strstr(err, pw));
	assert_int_equal(mgmt_request(m, "GET", "/api/queues/%2F", NULL, NULL,
	    &status, err, sizeof(err)), MGMT_ERR_AUTH);
	assert_int_equal(status, 401);
	assert_null(strstr(err, pw));
	mgmt_close(m);
	unsetenv("CUTOVER_TEST_WRONG_PASSWORD");
}

static void
test_bad_open(void **state)
{
	struct ctx *c = *state;
	struct mgmt *m = (struct mgmt *)1;
	char err[512], var[64], ref[96];

	/* A password variable that is not set is named. */
	snprintf(var, sizeof(var), "CUTOVER_TEST_UNSET_%ld", (long)getpid());
	unsetenv(var);
	snprintf(ref, sizeof(ref), "env:%s", var);
	assert_int_equal(mgmt_open(c->url, "/", c->user, ref, TIMEOUT_MS, &m,
	    err, sizeof(err)), MGMT_ERR_ARG);
	assert_null(m);
	assert_non_null(strstr(err, var));
	assert_non_null(strstr(err, "not set"));

	/* A literal password is refused and not repeated. */
	assert_int_equal(mgmt_open(c->url, "/", c->user, "s3cret-literal",
	    TIMEOUT_MS, &m, err, sizeof(err)), MGMT_ERR_ARG);
	assert_null(strstr(err, "s3cret-literal"));
	assert_non_null(strstr(err, "env:NAME"));

	/* Credentials in the URL are refused and not repeated. */
	assert_int_equal(mgmt_open("http://bob:hunter2x@127.0.0.1:1", "/",
	    c->user, PASSWORD_REF, TIMEOUT_MS, &m, err, sizeof(err)),
	    MGMT_ERR_ARG);
	assert_null(strstr(err, "hunter2x"));
	assert_int_equal(mgmt_open("ftp://127.0.0.1:1", "/", c->user,
	    PASSWORD_REF, TIMEOUT_MS, &m, err, sizeof(err)), MGMT_ERR_ARG);
	assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF, 0, &m,
	    err, sizeof(err)), MGMT_ERR_ARG);

	/* Repeated opens and closes are fine (libcurl counts its init). */
	{
		struct mgmt *m1 = NULL, *m2 = NULL;
		struct mgmt_overview ov;

		assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF,
		    TIMEOUT_MS, &m1, err, sizeof(err)), 0);
		assert_int_equal(mgmt_open(c->url, "/", c->user, PASSWORD_REF,
		    TIMEOUT_MS, &m2, err, sizeof(err)), 0);
		mgmt_close(m1);
		assert_int_equal(mgmt_overview(m2, &ov, err, sizeof(err)), 0);
		mgmt_close(m2);
	}
}

static void
test_connection_refused(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	char err[512], url[64];
	double t0, dt;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", itest_free_port());
	if (mgmt_open(url, "/", c->user, PASSWORD_REF, 2000, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	t0 = now();
	assert_int_equal(mgmt_overview(m, &ov, err, sizeof(err)),
	    MGMT_ERR_TRANSPORT);
	dt = now() - t0;
	print_message("refused (%.3f s): %s\n", dt, err);
	assert_true(dt < 2.5);
	assert_non_null(strstr(err, "GET /api/overview: connection refused"));
	assert_non_null(strstr(err, url));
	assert_null(strstr(err, getenv("CUTOVER_TEST_PASSWORD")));
	mgmt_close(m);
}

/* A cluster's management URLs (mgmt_open_list): a node that refuses is
 * passed over for the next in order; a POST that got no answer is not
 * sent again elsewhere; when no node answers, each is named. */
static void
test_failover(void **state)
{
	struct ctx *c = *state;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	char err[1024], dead1[64], dead2[64];
	const char *urls[2];

	snprintf(dead1, sizeof(dead1), "http://127.0.0.1:%d", itest_free_port());
	snprintf(dead2, sizeof(dead2), "http://127.0.0.1:%d", itest_free_port());
	urls[0] = dead1;
	urls[1] = c->url;
	if (mgmt_open_list(urls, 2, NULL, "/", c->user, PASSWORD_REF, 2000, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	if (mgmt_overview(m, &ov, err, sizeof(err)) != 0)
		fail_msg("the second node did not answer: %s", err);
	mgmt_close(m);

	m = NULL;
	if (mgmt_open_list(urls, 2, NULL, "/", c->user, PASSWORD_REF, 2000, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(mgmt_request(m, "POST", "/api/overview", NULL, NULL,
	    NULL, err, sizeof(err)), MGMT_ERR_TRANSPORT);
	assert_non_null(strstr(err, dead1));
	mgmt_close(m);

	m = NULL;
	urls[1] = dead2;
	if (mgmt_open_list(urls, 2, NULL, "/", c->user, PASSWORD_REF, 2000, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(mgmt_overview(m, &ov, err, sizeof(err)),
	    MGMT_ERR_TRANSPORT);
	print_message("no node answers: %s\n", err);
	assert_non_null(strstr(err, dead1));
	assert_non_null(strstr(err, dead2));
	mgmt_close(m);
}

static void
test_timeout(void **state)
{
	struct ctx *c = *state;
	struct sockaddr_in sa;
	struct mgmt_overview ov;
	struct mgmt *m = NULL;
	socklen_t len = sizeof(sa);
	char err[512], url[64];
	double t0, dt;
	int fd;

	/* A server that accepts connections (the kernel does, through the
	 * backlog) and never answers. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(fd, 8), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	if (mgmt_open(url, "/", c->user, PASSWORD_REF, 600, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	t0 = now();
	assert_int_equal(mgmt_overview(m, &ov, err, sizeof(err)),
	    MGMT_ERR_TRANSPORT);
	dt = now() - t0;
	print_message("no answer (%.3f s): %s\n", dt, err);
	assert_true(dt >= 0.5 && dt < 2.0);
	assert_non_null(strstr(err, "GET /api/overview: timed out"));
	mgmt_close(m);
	close(fd);
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
		a = ttl_args(1000, 0, NULL);
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
		publish(c, full, "one");
		for (k = 0; k < 120; k++) {
			if (mgmt_list_queues(c->m, &l, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			q = mgmt_queue_list_find(&l, full);
			if (q != NULL && q->messages == 1)
				break;
			mgmt_queue_list_free(&l);
			nap(250);
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
		nap(250);
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
		cmocka_unit_test(test_policy_effective),
		cmocka_unit_test(test_get_queue_and_exchange),
		cmocka_unit_test(test_not_found),
		cmocka_unit_test(test_bindings),
		cmocka_unit_test(test_wrong_password),
		cmocka_unit_test(test_bad_open),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_failover),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_special_names),
		cmocka_unit_test(test_request_and_delete_flags),
		cmocka_unit_test(test_vhost_missing),
		cmocka_unit_test(test_consumers),
		cmocka_unit_test(test_nodes_and_places),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
