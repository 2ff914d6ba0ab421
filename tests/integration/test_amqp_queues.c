/* test_amqp_queues (integration): the AMQP client's queues: declared
 * idempotently, counts inspected, a conflicting redeclare, a big TTL,
 * deletes with conditions. */
#include "itest_amqp.h"

static void
test_declare_idempotent(void **state)
{
	struct ctx *c = *state;
	struct broker_queue_info info;
	struct topology_arg xargs[1], qargs[3];
	const char *x, *alt, *next, *q;
	char err[512] = "";
	int round;

	iamqp_need_broker();
	x = iamqp_exchange_name(c, "x");
	alt = iamqp_exchange_name(c, "alt");
	next = iamqp_exchange_name(c, "next");
	q = iamqp_queue_name(c, "q");
	xargs[0] = iamqp_arg_str("alternate-exchange", alt);
	qargs[0] = iamqp_arg_str("x-queue-type", "classic");
	qargs[1] = iamqp_arg_int("x-message-ttl", 60000);
	qargs[2] = iamqp_arg_str("x-dead-letter-exchange", next);

	for (round = 0; round < 2; round++) {
		if (broker_exchange_declare(c->b, alt, "fanout", true, NULL, 0,
		    err, sizeof(err)) != 0 ||
		    broker_exchange_declare(c->b, x, "topic", true, xargs, 1,
		    err, sizeof(err)) != 0 ||
		    broker_exchange_declare(c->b, next, "topic", true, NULL, 0,
		    err, sizeof(err)) != 0 ||
		    broker_queue_declare(c->b, q, true, qargs, 3, err,
		    sizeof(err)) != 0 ||
		    broker_queue_bind(c->b, q, x, "*.1.#", err,
		    sizeof(err)) != 0 ||
		    broker_exchange_bind(c->b, next, x, "*.0.#", err,
		    sizeof(err)) != 0)
			fail_msg("round %d: %s", round, err);
	}
	assert_int_equal(broker_exchange_exists(c->b, x, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.messages, 0);

	/* Routing through the bindings: bit 1 to the queue, bit 0 onwards. */
	{
		struct broker_message m;

		memset(&m, 0, sizeof(m));
		m.exchange = x;
		m.routing_key = "a.1.dest";
		m.body = "one";
		m.len = 3;
		m.mandatory = true;
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), 0);
		m.routing_key = "a.0.dest";  /* to `next`: no binding there */
		assert_int_equal(broker_publish(c->b, &m, TIMEOUT_MS, err,
		    sizeof(err)), BROKER_ERETURNED);
	}
	assert_int_equal(iamqp_depth(c->b, q), 1);

	/* Unbinding twice is fine too. */
	assert_int_equal(broker_queue_unbind(c->b, q, x, "*.1.#", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_unbind(c->b, q, x, "*.1.#", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_unbind(c->b, next, x, "*.0.#", err,
	    sizeof(err)), 0);
}

static void
test_inspect_counts(void **state)
{
	struct ctx *c = *state;
	struct broker_queue_info info;
	struct broker *other = NULL;
	const char *q;
	char err[512] = "sentinel";
	int i;

	iamqp_need_broker();
	q = iamqp_declared_queue(c, "counts");
	for (i = 0; i < 5; i++)
		iamqp_publish_to_queue(c->b, q, "m");
	/* Confirmed means enqueued: the passive declare is exact at once. */
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.messages, 5);
	assert_int_equal(info.consumers, 0);

	assert_int_equal(broker_open(iamqp_amqp_url, iamqp_amqp_user, PWREF, TIMEOUT_MS,
	    &other, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(other, q, 1, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c->b, q, &info, err,
	    sizeof(err)), 0);
	assert_int_equal(info.consumers, 1);
	broker_close(other);

	/* Not found is an answer, not an error; the handle goes on. */
	snprintf(err, sizeof(err), "sentinel");
	assert_int_equal(broker_queue_inspect(c->b, "itest.amqp.no-such-queue",
	    &info, err, sizeof(err)), BROKER_NOT_FOUND);
	assert_string_equal(err, "sentinel");
	assert_int_equal(broker_exchange_exists(c->b,
	    "itest.amqp.no-such-exchange", err, sizeof(err)), BROKER_NOT_FOUND);
	assert_string_equal(err, "sentinel");
	assert_int_equal(broker_exchange_exists(c->b, "amq.topic", err,
	    sizeof(err)), 0);
	assert_int_equal(iamqp_depth(c->b, q), 5);
}

static void
test_conflicting_redeclare(void **state)
{
	struct ctx *c = *state;
	struct topology_arg ttl1, ttl2, quorum;
	const char *q, *x;
	char err[512] = "", want[512], want4[512];

	iamqp_need_broker();
	q = iamqp_queue_name(c, "conflict");
	x = iamqp_exchange_name(c, "conflict-x");
	ttl1 = iamqp_arg_int("x-message-ttl", 1000);
	ttl2 = iamqp_arg_int("x-message-ttl", 2000);
	quorum = iamqp_arg_str("x-queue-type", "quorum");

	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl1, 1, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, &ttl2, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	snprintf(want, sizeof(want), "queue '%s' exists with x-message-ttl = "
	    "1000, the plan wants 2000: it cannot be redeclared; delete it or "
	    "change the plan", q);
	assert_string_equal(err, want);
	assert_int_equal(broker_reply_code(c->b), 406);

	/* The broker closed the channel; the next call gets a fresh one. */
	assert_int_equal(iamqp_depth(c->b, q), 0);
	assert_int_equal(broker_reply_code(c->b), 0);

	/* A classic queue where quorum is planned; an argument dropped. */
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	assert_non_null(strstr(err, "the plan has no x-message-ttl"));
	assert_int_equal(broker_queue_delete(c->b, q, 0, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, q, true, &quorum, 1, err,
	    sizeof(err)), BROKER_EPRECONDITION);
	/* RabbitMQ 3.10 records no type for a classic queue declared without
	 * one; 4.0 records x-queue-type = classic (docs/BROKERS.md). */
	snprintf(want, sizeof(want), "queue '%s' exists without x-queue-type, "
	    "the plan wants x-queue-type = quorum", q);
	snprintf(want4, sizeof(want4), "queue '%s' exists with x-queue-type = "
	    "classic, the plan wants quorum", q);
	if (strstr(err, want) == NULL && strstr(err, want4) == NULL)
		fail_msg("unexpected refusal: %s", err);

	/* Exchanges: another type. */
	assert_int_equal(broker_exchange_declare(c->b, x, "topic", true, NULL,
	    0, err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(c->b, x, "fanout", true, NULL,
	    0, err, sizeof(err)), BROKER_EPRECONDITION);
	snprintf(want, sizeof(want), "exchange '%s' exists with type = topic, "
	    "the plan wants fanout", x);
	assert_non_null(strstr(err, want));
	assert_int_equal(broker_exchange_exists(c->b, x, err, sizeof(err)), 0);
}

static void
test_big_ttl(void **state)
{
	struct ctx *c = *state;
	struct topology_arg a[5];
	const char *q, *x;
	char err[512] = "";

	iamqp_need_broker();
	/* A level queue as the ladder declares it. A 28-level ladder at 1 s
	 * reaches 2^27 s: TTLs far beyond 2^32 ms. */
	q = iamqp_queue_name(c, "bigttl");
	x = iamqp_exchange_name(c, "bigttl-next");
	a[0] = iamqp_arg_str("x-queue-type", "quorum");
	a[1] = iamqp_arg_int("x-message-ttl", (int64_t)1 << 37);
	a[2] = iamqp_arg_str("x-dead-letter-exchange", x);
	a[3] = iamqp_arg_str("x-dead-letter-strategy", "at-least-once");
	a[4] = iamqp_arg_str("x-overflow", "reject-publish");
	assert_int_equal(broker_exchange_declare(c->b, x, "topic", true, NULL,
	    0, err, sizeof(err)), 0);
	if (broker_queue_declare(c->b, q, true, a, 5, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(broker_queue_declare(c->b, q, true, a, 5, err,
	    sizeof(err)), 0);
	iamqp_publish_to_queue(c->b, q, "held");
	assert_int_equal(iamqp_depth(c->b, q), 1);
}

static void
test_delete_conditions(void **state)
{
	struct ctx *c = *state;
	struct topology_arg quorum;
	const char *qq, *cq;
	char err[512] = "";
	uint32_t purged = 99;

	iamqp_need_broker();
	qq = iamqp_queue_name(c, "quorum");
	cq = iamqp_queue_name(c, "classic");
	quorum = iamqp_arg_str("x-queue-type", "quorum");
	assert_int_equal(broker_queue_declare(c->b, qq, true, &quorum, 1, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(c->b, cq, true, NULL, 0, err,
	    sizeof(err)), 0);
	iamqp_publish_to_queue(c->b, cq, "keep me");

	/* Classic: 406, the channel closes, the queue stays. */
	assert_int_equal(broker_queue_delete(c->b, cq, BROKER_IF_EMPTY, &purged,
	    err, sizeof(err)), BROKER_EPRECONDITION);
	assert_non_null(strstr(err, "not empty"));
	assert_int_equal(iamqp_depth(c->b, cq), 1);

	/* Quorum: 540, and the broker closes the whole connection. */
	assert_int_equal(broker_queue_delete(c->b, qq, BROKER_IF_EMPTY, &purged,
	    err, sizeof(err)), BROKER_EREFUSED);
	assert_non_null(strstr(err, "quorum queues do not support "
	    "if-empty/if-unused delete"));
	assert_int_equal(broker_reply_code(c->b), 540);
	assert_int_equal(broker_queue_delete(c->b, qq, BROKER_IF_UNUSED,
	    &purged, err, sizeof(err)), BROKER_EREFUSED);
	assert_int_equal(broker_reply_code(c->b), 540);

	/* The next calls reconnect and work. */
	assert_int_equal(iamqp_depth(c->b, qq), 0);
	iamqp_publish_to_queue(c->b, qq, "one");
	assert_int_equal(broker_queue_delete(c->b, qq, 0, &purged, err,
	    sizeof(err)), 0);
	assert_int_equal(purged, 1);
	assert_int_equal(broker_queue_inspect(c->b, qq, NULL, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	/* Deleting what is not there succeeds. */
	assert_int_equal(broker_queue_delete(c->b, qq, 0, NULL, err,
	    sizeof(err)), 0);
}

ITEST_MAIN(iamqp_main,
	WITH_BROKER(test_declare_idempotent),
	WITH_BROKER(test_inspect_counts),
	WITH_BROKER(test_conflicting_redeclare),
	WITH_BROKER(test_big_ttl),
	WITH_BROKER(test_delete_conditions))
