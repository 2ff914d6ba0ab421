/* itest_amqp: the AMQP tests' connections and queues (itest_amqp.h). */
#include "itest_amqp.h"
#include "itest_broker.h"

const char *iamqp_amqp_url;
const char *iamqp_amqp_user;
const char *iamqp_mgmt_url;            /* CUTOVER_TEST_MGMT, optional */

const char *
iamqp_queue_name(struct ctx *c, const char *what)
{
	char *n;

	assert_true(c->nqueues < MAX_OBJECTS);
	n = c->queues[c->nqueues++];
	snprintf(n, sizeof(c->queues[0]), "itest.amqp.%ld.%s", (long)getpid(),
	    what);
	return n;
}

const char *
iamqp_declared_queue(struct ctx *c, const char *what)
{
	const char *q = iamqp_queue_name(c, what);
	char err[512];

	if (broker_queue_declare(c->b, q, true, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("declaring queue %s: %s", q, err);
	return q;
}

const char *
iamqp_exchange_name(struct ctx *c, const char *what)
{
	char *n;

	assert_true(c->nexchanges < MAX_OBJECTS);
	n = c->exchanges[c->nexchanges++];
	snprintf(n, sizeof(c->exchanges[0]), "itest.amqp.%ld.%s",
	    (long)getpid(), what);
	return n;
}

struct topology_arg
iamqp_arg_int(const char *key, int64_t num)
{
	struct topology_arg a;

	itest_arg_int(&a, key, num);
	return a;
}

struct topology_arg
iamqp_arg_str(const char *key, const char *str)
{
	struct topology_arg a;

	itest_arg_str(&a, key, str);
	return a;
}

void
iamqp_need_broker(void)
{
	if (iamqp_amqp_url == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_USER and CUTOVER_TEST_PASSWORD "
		    "(scripts/test starts a broker and does)");
}

int
iamqp_setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	char err[512] = "";

	assert_non_null(c);
	*state = c;
	if (iamqp_amqp_url == NULL)
		return 0;
	if (broker_open(iamqp_amqp_url, iamqp_amqp_user, PWREF, TIMEOUT_MS, &c->b, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "test_amqp: %s\n", err);
		return -1;
	}
	return 0;
}

int
iamqp_teardown(void **state)
{
	struct ctx *c = *state;
	char err[512];
	size_t i;

	if (c->b != NULL) {
		(void)broker_cancel(c->b, err, sizeof(err));
		for (i = 0; i < c->nqueues; i++)
			if (broker_queue_delete(c->b, c->queues[i], 0, NULL,
			    err, sizeof(err)) != 0)
				fprintf(stderr, "test_amqp: cleanup: %s\n",
				    err);
		for (i = 0; i < c->nexchanges; i++)
			if (broker_exchange_delete(c->b, c->exchanges[i], false,
			    err, sizeof(err)) != 0)
				fprintf(stderr, "test_amqp: cleanup: %s\n",
				    err);
		broker_close(c->b);
	}
	free(c);
	return 0;
}

void
iamqp_publish_to_queue(struct broker *b, const char *queue, const char *body)
{
	struct broker_message m;
	char err[512] = "";

	memset(&m, 0, sizeof(m));
	m.routing_key = queue;
	m.body = body;
	m.len = strlen(body);
	if (broker_publish(b, &m, TIMEOUT_MS, err, sizeof(err)) != 0)
		fail_msg("publish: %s", err);
}

void
iamqp_publish_and_consume(struct broker *b, const char *queue, const char *body)
{
	struct broker_delivery d;
	char err[512] = "";

	iamqp_publish_to_queue(b, queue, body);
	if (broker_next(b, TIMEOUT_MS, &d, err, sizeof(err)) != 0)
		fail_msg("consuming '%s' from %s: %s", body, queue, err);
	if (strcmp(d.body, body) != 0)
		fail_msg("consumed '%s' from %s, expected '%s'", d.body, queue, body);
	if (broker_ack(b, &d, err, sizeof(err)) != 0)
		fail_msg("acking '%s' from %s: %s", body, queue, err);
	broker_delivery_free(&d);
}

uint32_t
iamqp_depth(struct broker *b, const char *queue)
{
	struct broker_queue_info info;
	char err[512] = "";

	if (broker_queue_inspect(b, queue, &info, err, sizeof(err)) != 0)
		fail_msg("inspect %s: %s", queue, err);
	return info.messages;
}

uint32_t
iamqp_wait_depth(struct broker *b, const char *queue, uint32_t n)
{
	int64_t until = clock_mono_ms() + 30000;
	uint32_t depth;

	while ((depth = iamqp_depth(b, queue)) != n && clock_mono_ms() < until)
		itest_sleep_ms(50);
	return depth;
}

int
iamqp_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	int rc;

	(void)argc;
	(void)argv;
	iamqp_amqp_url = getenv("CUTOVER_TEST_AMQP");
	iamqp_amqp_user = getenv("CUTOVER_TEST_USER");
	if (iamqp_amqp_url != NULL && iamqp_amqp_url[0] == '\0')
		iamqp_amqp_url = NULL;
	if (iamqp_amqp_user == NULL || iamqp_amqp_user[0] == '\0')
		iamqp_amqp_user = "guest";
	iamqp_mgmt_url = getenv("CUTOVER_TEST_MGMT");
	if (iamqp_mgmt_url != NULL && iamqp_mgmt_url[0] == '\0')
		iamqp_mgmt_url = NULL;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = itest_run_part("tests", tests, n, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
