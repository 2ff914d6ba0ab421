/* test_amqp_messages (integration): the AMQP client's messages: publish
 * outcomes, batches confirmed, basic.get, and consuming with x-death. */
#include "itest_amqp.h"

static void
test_publish_outcomes(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	const char *x, *bound, *q;
	char err[512] = "", missing[128];

	iamqp_need_broker();
	bound = iamqp_exchange_name(c, "pub-bound");
	x = iamqp_exchange_name(c, "pub-unbound");
	q = iamqp_queue_name(c, "pub-q");
	assert_int_equal(broker_exchange_declare(c->b, bound, "direct", true,
	    NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(c->b, x, "direct", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(c->b, q, bound, "k", err,
	    sizeof(err)), 0);

	memset(&m, 0, sizeof(m));
	m.exchange = bound;
	m.routing_key = "k";
	m.body = "payload";
	m.len = 7;
	m.mandatory = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	assert_int_equal(iamqp_depth(c->b, q), 1);

	/* Mandatory and nothing bound: basic.return, then basic.ack. */
	m.exchange = x;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_ERETURNED);
	assert_non_null(strstr(err, "returned: no route"));
	assert_non_null(strstr(err, x));
	/* Not mandatory: the broker drops it and confirms. */
	m.mandatory = false;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	/* No such exchange: the broker closes the channel. */
	snprintf(missing, sizeof(missing), "itest.amqp.%ld.missing",
	    (long)getpid());
	m.exchange = missing;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_EREFUSED);
	assert_non_null(strstr(err, "no exchange"));
	assert_non_null(strstr(err, missing));
	assert_int_equal(broker_reply_code(c->b), 404);

	/* ...and the handle recovers. */
	m.exchange = bound;
	m.mandatory = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	assert_int_equal(iamqp_depth(c->b, q), 2);
}

static void
test_publish_batch(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	const char *x, *q;
	char err[512] = "", body[32];
	int results[40];
	size_t n = 0;
	int i;

	iamqp_need_broker();
	x = iamqp_exchange_name(c, "batch-x");
	q = iamqp_queue_name(c, "batch-q");
	assert_int_equal(broker_exchange_declare(c->b, x, "direct", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(c->b, q, x, "in", err, sizeof(err)),
	    0);

	/* 40 messages, every 7th unroutable: the verdicts must line up. */
	for (i = 0; i < 40; i++) {
		memset(&m, 0, sizeof(m));
		m.exchange = x;
		m.routing_key = i % 7 == 3 ? "nowhere" : "in";
		snprintf(body, sizeof(body), "message %d", i);
		m.body = body;
		m.len = strlen(body);
		m.mandatory = true;
		if (broker_publish_async(c->b, &m, err, sizeof(err)) != 0)
			fail_msg("publish %d: %s", i, err);
	}
	/* broker_publish refuses while these wait. */
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err, sizeof(err)),
	    BROKER_ERR);
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, results, 40, &n,
	    err, sizeof(err)), BROKER_ERETURNED);
	assert_int_equal(n, 40);
	for (i = 0; i < 40; i++)
		assert_int_equal(results[i], i % 7 == 3 ? BROKER_ERETURNED : 0);
	assert_non_null(strstr(err, "6 of 40 messages were not confirmed"));
	assert_int_equal(iamqp_depth(c->b, q), 34);

	/* A second batch on the same channel: tags keep counting. */
	for (i = 0; i < 5; i++) {
		m.routing_key = "in";
		assert_int_equal(broker_publish_async(c->b, &m, err,
		    sizeof(err)), 0);
	}
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, results, 40, &n,
	    err, sizeof(err)), 0);
	assert_int_equal(n, 5);
	assert_int_equal(broker_wait_confirms(c->b, TIMEOUT_MS, NULL, 0, &n,
	    err, sizeof(err)), 0);
	assert_int_equal(n, 0);
	assert_int_equal(iamqp_depth(c->b, q), 39);
}

static void
test_get(void **state)
{
	struct ctx *c = *state;
	struct broker_message m;
	struct broker_delivery d;
	struct broker_field h[2];
	const struct broker_header *hv;
	const char *q;
	char err[512] = "";

	iamqp_need_broker();
	q = iamqp_declared_queue(c, "get");
	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)),
	    BROKER_EMPTY);

	memset(h, 0, sizeof(h));
	h[0].key = "x-cutover-batch";
	h[0].str = "canary-7";
	h[1].key = "x-cutover-not-before";
	h[1].is_int = true;
	h[1].num = 1700000000123LL;
	memset(&m, 0, sizeof(m));
	m.routing_key = q;
	m.body = "hello get";
	m.len = 9;
	m.headers = h;
	m.nheaders = 2;
	m.message_id = "msg-1";
	m.content_type = "text/plain";
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);
	m.body = "second";
	m.len = 6;
	m.message_id = "msg-2";
	m.transient = true;
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)), 0);
	assert_int_equal(d.len, 9);
	assert_string_equal(d.body, "hello get");
	assert_string_equal(d.exchange, "");
	assert_string_equal(d.routing_key, q);
	assert_string_equal(d.message_id, "msg-1");
	assert_string_equal(d.content_type, "text/plain");
	assert_int_equal(d.delivery_mode, 2);
	assert_int_equal(d.remaining, 1);
	assert_false(d.redelivered);
	hv = broker_header_find(&d, "x-cutover-batch");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_STR);
	assert_string_equal(hv->str, "canary-7");
	hv = broker_header_find(&d, "x-cutover-not-before");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_INT);
	assert_true(hv->num == 1700000000123LL);
	assert_null(broker_header_find(&d, "x-death"));
	assert_int_equal(d.ndeaths, 0);
	/* Acknowledged already: nothing left to settle. */
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), BROKER_ERR);
	broker_delivery_free(&d);

	/* Manual: reject it back, get it again redelivered, then ack. */
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_string_equal(d.message_id, "msg-2");
	assert_int_equal(d.delivery_mode, 1);
	assert_int_equal(broker_reject(c->b, &d, true, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_string_equal(d.body, "second");
	assert_true(d.redelivered);
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	assert_int_equal(broker_get(c->b, q, false, &d, err, sizeof(err)),
	    BROKER_EMPTY);
	assert_int_equal(iamqp_depth(c->b, q), 0);

	/* A body of many frames (frame_max is 128 KiB). */
	{
		size_t i, big = 300000;
		char *body = malloc(big);

		assert_non_null(body);
		for (i = 0; i < big; i++)
			body[i] = (char)('a' + i % 26);
		memset(&m, 0, sizeof(m));
		m.routing_key = q;
		m.body = body;
		m.len = big;
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), 0);
		assert_int_equal(broker_get(c->b, q, false, &d, err,
		    sizeof(err)), 0);
		assert_int_equal(d.len, big);
		assert_memory_equal(d.body, body, big);
		assert_null(d.message_id);
		assert_null(d.content_type);
		assert_int_equal(d.nheaders, 0);
		broker_delivery_free(&d);
		free(body);
	}

	/* An unacknowledged message whose channel closed cannot be acked. */
	iamqp_publish_to_queue(c->b, q, "third");
	assert_int_equal(broker_get(c->b, q, true, &d, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, NULL, err, sizeof(err)),
	    0);
	{
		struct topology_arg ttl = iamqp_arg_int("x-message-ttl", 5);

		assert_int_equal(broker_queue_declare(c->b, q, true, &ttl, 1,
		    err, sizeof(err)), BROKER_EPRECONDITION);
	}
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), BROKER_ELOST);
	assert_non_null(strstr(err, "deliver it again"));
	broker_delivery_free(&d);
	assert_int_equal(iamqp_wait_depth(c->b, q, 1), 1);
}

static void
test_consume_x_death(void **state)
{
	struct ctx *c = *state;
	struct broker_delivery d;
	struct broker_message m;
	struct topology_arg a1[3], a2[5];
	const struct broker_header *hv;
	const char *first, *second, *final, *dx1, *dx2;
	char err[512] = "";
	int64_t t0;

	iamqp_need_broker();
	first = iamqp_queue_name(c, "wait-a");
	second = iamqp_queue_name(c, "wait-b");
	final = iamqp_queue_name(c, "final");
	dx1 = iamqp_exchange_name(c, "dlx-1");
	dx2 = iamqp_exchange_name(c, "dlx-2");

	/* first (classic, 100 ms) -> dx1 -> second (quorum, at-least-once
	 * dead-lettering, 100 ms) -> dx2 -> final */
	a1[0] = iamqp_arg_str("x-queue-type", "classic");
	a1[1] = iamqp_arg_int("x-message-ttl", 100);
	a1[2] = iamqp_arg_str("x-dead-letter-exchange", dx1);
	a2[0] = iamqp_arg_str("x-queue-type", "quorum");
	a2[1] = iamqp_arg_int("x-message-ttl", 100);
	a2[2] = iamqp_arg_str("x-dead-letter-exchange", dx2);
	a2[3] = iamqp_arg_str("x-dead-letter-strategy", "at-least-once");
	a2[4] = iamqp_arg_str("x-overflow", "reject-publish");
	if (broker_exchange_declare(c->b, dx1, "fanout", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_exchange_declare(c->b, dx2, "fanout", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, first, true, a1, 3, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, second, true, a2, 5, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c->b, final, true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_queue_bind(c->b, second, dx1, "", err, sizeof(err)) != 0 ||
	    broker_queue_bind(c->b, final, dx2, "", err, sizeof(err)) != 0)
		fail_msg("%s", err);

	assert_int_equal(broker_consume(c->b, final, 10, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(c->b, final, 10, err, sizeof(err)),
	    BROKER_ERR);

	memset(&m, 0, sizeof(m));
	m.routing_key = first;
	m.body = "through two queues";
	m.len = strlen(m.body);
	m.message_id = "xd-1";
	t0 = now_ms();
	assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
	    sizeof(err)), 0);

	if (broker_next(c->b, 5000, &d, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_true(now_ms() - t0 >= 200);      /* never early */
	assert_string_equal(d.body, "through two queues");
	assert_string_equal(d.message_id, "xd-1");
	assert_string_equal(d.exchange, dx2);
	assert_string_equal(d.routing_key, first);
	assert_int_equal(d.ndeaths, 2);
	/* Most recent first. */
	assert_string_equal(d.deaths[0].queue, second);
	assert_string_equal(d.deaths[0].reason, "expired");
	assert_string_equal(d.deaths[0].exchange, dx1);
	assert_int_equal(d.deaths[0].count, 1);
	assert_string_equal(d.deaths[1].queue, first);
	assert_string_equal(d.deaths[1].reason, "expired");
	assert_string_equal(d.deaths[1].exchange, "");
	assert_int_equal(d.deaths[1].count, 1);
	assert_int_equal(d.deaths[1].nrouting_keys, 1);
	assert_string_equal(d.deaths[1].routing_keys[0], first);
	hv = broker_header_find(&d, "x-death");
	assert_non_null(hv);
	assert_int_equal(hv->kind, BROKER_KIND_OTHER);
	hv = broker_header_find(&d, "x-first-death-queue");
	assert_non_null(hv);
	assert_string_equal(hv->str, first);
	assert_int_equal(broker_ack(c->b, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);

	/* Nothing more: a timeout, quickly. */
	t0 = now_ms();
	assert_int_equal(broker_next(c->b, 300, &d, err, sizeof(err)),
	    BROKER_ETIMEOUT);
	assert_true(now_ms() - t0 < 10000);     /* a ceiling: it does not hang */
	assert_int_equal(iamqp_depth(c->b, final), 0);
}

ITEST_MAIN(iamqp_main,
	WITH_BROKER(test_publish_outcomes),
	WITH_BROKER(test_publish_batch),
	WITH_BROKER(test_get),
	WITH_BROKER(test_consume_x_death))
