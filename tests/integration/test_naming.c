/* test_naming (integration): what a library's naming promises on a real
 * RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * password env:CUTOVER_TEST_PASSWORD): publishing never goes beyond the
 * plan's own max_delay; kombu's classic level queues carry reject-publish
 * as Kombu declares them; a destination whose routing key is not its
 * queue's name (Kombu's layout) reaches that queue, not the parking one;
 * kombu's prefix names every object. The fixed names live in a vhost of
 * this run's own (itest_vhost), deleted whatever happens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "ladder.h"
#include "plan.h"
#include "publish.h"
#include "step.h"
#include "topology.h"

#define DAY_MS (86400LL * 1000)

static char vhost_url[512];

/* A vhost of this run's own for TEST, its URL in vhost_url. */
static void
own_vhost(const char *test)
{
	char name[96];

	itest_cleanup();
	snprintf(name, sizeof(name), "%s-%s", itest_run_id(), test);
	itest_vhost(name, vhost_url, sizeof(vhost_url));
}

/* Loads a plan for the test vhost with the ladder lines LADDER. */
static struct plan *
load_plan(const char *ladder)
{
	struct itest_plan b;

	itest_plan_begin(&b, "itest-naming", vhost_url);
	itest_plan_addf(&b, "old: { queues: { names: [itest.none] } }\nladder:\n%s"
	    "  create_destinations: true\nsteps: [declare_ladder, verify_ladder]\n",
	    ladder);
	return itest_plan_load("naming.yaml", b.text);
}

/* The plan of ladder lines LADDER in a vhost of TEST's own (own_vhost,
 * load_plan), its ladder declared through C, which it opens; fails the
 * test when any of it fails. */
static struct plan *
declared_in_own_vhost(const char *test, const char *ladder, struct step_ctx *c)
{
	struct plan *p;

	own_vhost(test);
	p = load_plan(ladder);
	itest_ctx_open(c, p);
	itest_step_ok(step_declare_ladder, c);
	return p;
}

/* Publishes DELAY_MS to DEST through the plan's ladder as `cutover
 * publish` does. Returns publish_delayed's status, ERR its message. */
static int
publish(struct step_ctx *c, int64_t delay_ms, const char *dest, char *err,
    size_t errlen)
{
	struct publish_request r;
	struct publish_receipt rc;

	memset(&r, 0, sizeof(r));
	r.plan = c->plan->name;
	r.purpose = PUBLISH_MANUAL;
	r.seq = 1;
	r.delay_ms = delay_ms;
	r.destination = dest;
	r.body = "x";
	r.len = 1;
	return publish_delayed(c->amqp, &c->plan->ladder, &r, &rc, err, errlen);
}

/* Messages in queue NAME, exactly (a passive declare). */
static unsigned
depth(struct step_ctx *c, const char *name)
{
	struct broker_queue_info qi;
	char err[512];

	if (broker_queue_inspect(c->amqp, name, &qi, err, sizeof(err)) != 0)
		fail_msg("inspecting queue '%s': %s", name, err);
	return qi.messages;
}

/* Waits (60 s at most: a message of a second or two) for one message in
 * QUEUE and takes it; fails the test if none comes. */
static void
await_message(struct step_ctx *c, const char *queue)
{
	struct broker_delivery d;
	char err[1024];
	int r = BROKER_EMPTY;

	for (int i = 0; i < 600 && r == BROKER_EMPTY; i++) {
		r = broker_get(c->amqp, queue, false, &d, err, sizeof(err));
		if (r == BROKER_EMPTY)
			itest_sleep_ms(100);
	}
	if (r != 0)
		fail_msg("no message reached queue '%s': %s", queue, r == BROKER_EMPTY ?
		    "nothing in 60 s" : err);
	broker_delivery_free(&d);
}

/* A 28-level naming with max_delay 30d once confirmed a 31d publish.
 * Publishing refuses anything beyond the plan's own maximum
 * (before sending: nothing enters the ladder), and takes the maximum. */
static void
test_publish_beyond_plan_max_refused(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char err[1024], q[LADDER_NAME_MAX];
	uint64_t units = 31 * 86400;
	int st;

	(void)state;
	p = declared_in_own_vhost("max", "  naming: kombu\n  max_delay: 30d\n"
	    "  queue_type: quorum\n  destinations: [itest.dest]\n", &c);
	ladder_level_queue(&p->ladder, ladder_entry_level(units), q, sizeof(q));

	st = publish(&c, 31 * DAY_MS, "itest.dest", err, sizeof(err));
	fprintf(stderr, "# 31d on a plan of max_delay 30d: %s: %s\n",
	    publish_status_name(st), st == PUBLISH_OK ? "confirmed" : err);
	assert_int_equal(st, PUBLISH_EINPUT);
	assert_non_null(strstr(err, "max_delay"));
	assert_int_equal(depth(&c, q), 0);

	st = publish(&c, 30 * DAY_MS + 1, "itest.dest", err, sizeof(err));
	assert_int_equal(st, PUBLISH_EINPUT);

	st = publish(&c, 30 * DAY_MS, "itest.dest", err, sizeof(err));
	if (st != PUBLISH_OK)
		fail_msg("30d on a plan of max_delay 30d: %s", err);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

/* Declares level K's queue exactly as Kombu does for QUEUE_TYPE classic
 * (native_delayed_delivery.py): x-queue-type, x-overflow reject-publish,
 * x-message-ttl 2^K s and x-dead-letter-exchange. Returns the broker's
 * answer, ERR its message. */
static int
kombu_declare_classic_level(struct step_ctx *c, int k, char *err, size_t errlen)
{
	struct topology_arg args[4];
	char q[LADDER_NAME_MAX];

	itest_arg_str(&args[0], "x-queue-type", "classic");
	itest_arg_str(&args[1], "x-overflow", "reject-publish");
	itest_arg_int(&args[2], "x-message-ttl", (int64_t)1000 << k);
	itest_arg_str(&args[3], "x-dead-letter-exchange", "");
	ladder_dead_letter_exchange(&c->plan->ladder, k, args[3].str, sizeof(args[3].str));
	ladder_level_queue(&c->plan->ladder, k, q, sizeof(q));
	return broker_queue_declare(c->amqp, q, true, args, 4, err, errlen);
}

/* Kombu sets x-overflow reject-publish on classic level
 * queues too; cutover's classic kombu levels carry it (read back from the
 * broker), so Kombu's own declare is accepted, level after level. */
static void
test_classic_kombu_levels_reject_publish(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct mgmt_queue_info qi;
	char err[1024], q[LADDER_NAME_MAX];
	const char *ov;

	(void)state;
	p = declared_in_own_vhost("classic", "  naming: kombu\n  queue_type: classic\n"
	    "  destinations: [itest.dest]\n", &c);
	for (int k = 0; k < p->ladder.levels; k++) {
		ladder_level_queue(&p->ladder, k, q, sizeof(q));
		if (mgmt_get_queue(c.mgmt, q, &qi, err, sizeof(err)) != 0)
			fail_msg("reading queue '%s': %s", q, err);
		ov = json_string_value(json_object_get(qi.arguments, "x-overflow"));
		if (ov == NULL || strcmp(ov, "reject-publish") != 0 ||
		    strcmp(qi.q.type, "classic") != 0)
			fail_msg("level queue '%s' is %s with x-overflow %s; Kombu declares "
			    "classic with reject-publish", q, qi.q.type, ov ? ov : "(not set)");
		mgmt_queue_info_free(&qi);
		if (kombu_declare_classic_level(&c, k, err, sizeof(err)) != 0)
			fail_msg("Kombu's declare of '%s' after cutover's: %s", q, err);
	}
	itest_step_ok(step_verify_ladder, &c);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

/* Kombu's prefix P names P_celery_delayed_K and
 * P_celery_delayed_delivery; a ladder of that prefix is declared under
 * those names and routes a delayed message through them. */
static void
test_kombu_prefix(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char err[1024];

	(void)state;
	p = declared_in_own_vhost("prefix", "  naming: kombu\n  prefix: itestp\n"
	    "  destinations: [itest.dest]\n", &c);
	assert_int_equal(broker_exchange_exists(c.amqp, "itestp_celery_delayed_27", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_exists(c.amqp, "itestp_celery_delayed_0", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_exists(c.amqp, "itestp_celery_delayed_delivery",
	    err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c.amqp, "itestp_celery_delayed_3", NULL,
	    err, sizeof(err)), 0);
	/* Without the prefix there is nothing. */
	assert_int_equal(broker_exchange_exists(c.amqp, "celery_delayed_0", err,
	    sizeof(err)), BROKER_NOT_FOUND);
	itest_step_ok(step_verify_ladder, &c);
	if (publish(&c, 1000, "itest.dest", err, sizeof(err)) != PUBLISH_OK)
		fail_msg("publishing 1s: %s", err);
	await_message(&c, "itest.dest");
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

/* A plan's max_delay below one unit: the canary's default delay and its
 * parking probe stay within it (each still one unit on the ladder), so the
 * canary passes rather than having its own publishes refused. */
static void
test_canary_within_max_delay(void **state)
{
	struct plan *p;
	struct step_ctx c;

	(void)state;
	own_vhost("canary");
	p = load_plan("  naming: cutover\n  prefix: itestc\n  unit: 1s\n"
	    "  max_delay: 500ms\n  destinations: [itest.dest]\n");
	assert_int_equal(p->canary.ndelays, 1);
	assert_int_equal(p->canary.delays_ms[0], 500);
	itest_ctx_open(&c, p);
	itest_step_ok(step_declare_ladder, &c);
	itest_step_ok(step_canary, &c);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

/* Kombu's routing key for COUNTDOWN seconds to ROUTING_KEY, built as
 * calculate_routing_key does (28 binary digits joined by '.', then the
 * key), independently of ladder_routing_key. Returns OUT. */
static char *
kombu_routing_key(unsigned countdown, const char *routing_key, char *out, size_t outlen)
{
	size_t pos = 0;

	for (int bit = 27; bit >= 0 && pos + 2 < outlen; bit--) {
		out[pos++] = (countdown >> bit) & 1 ? '1' : '0';
		out[pos++] = '.';
	}
	snprintf(out + pos, outlen - pos, "%s", routing_key);
	return out;
}

/* Kombu's own example routes key destination_route to
 * queue destination. With the long form { key, queue } a message Celery
 * publishes (to celery_delayed_27, Kombu's routing key layout) reaches that
 * queue, not the parking one; with { key, exchange } one reaches the queue
 * the owner bound to its exchange (Kombu's #.KEY shape). verify passes, and
 * the teardown leaves the owner's exchange and queues alone. */
static void
test_destination_key_is_not_the_queue(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct broker_message m;
	char err[1024], key[LADDER_KEY_MAX + 1], parking[LADDER_NAME_MAX];
	int r;

	(void)state;
	own_vhost("longform");
	p = load_plan("  naming: kombu\n  destinations:\n"
	    "    - { key: destination_route, queue: destination }\n"
	    "    - { key: k.x, exchange: tasks }\n");
	itest_ctx_open(&c, p);
	/* What the consumers own: the queue; the task exchange, its queue and
	 * Kombu's binding between them. */
	if (broker_queue_declare(c.amqp, "destination", true, NULL, 0, err, sizeof(err)) != 0 ||
	    broker_exchange_declare(c.amqp, "tasks", "topic", true, NULL, 0, err,
	    sizeof(err)) != 0 ||
	    broker_queue_declare(c.amqp, "tasks.q", true, NULL, 0, err, sizeof(err)) != 0 ||
	    broker_queue_bind(c.amqp, "tasks.q", "tasks", "#.k.x", err, sizeof(err)) != 0)
		fail_msg("declaring the consumers' objects: %s", err);
	itest_step_ok(step_declare_ladder, &c);
	itest_step_ok(step_verify_ladder, &c);

	memset(&m, 0, sizeof(m));
	m.exchange = "celery_delayed_27";
	m.routing_key = kombu_routing_key(1, "destination_route", key, sizeof(key));
	m.body = "{}";
	m.len = 2;
	m.mandatory = true;
	if ((r = broker_publish(c.amqp, &m, 10000, err, sizeof(err))) != 0)
		fail_msg("publishing as Celery does (%s): %s", key, err);
	await_message(&c, "destination");
	if (publish(&c, 1000, "k.x", err, sizeof(err)) != PUBLISH_OK)
		fail_msg("publishing 1s to k.x: %s", err);
	await_message(&c, "tasks.q");
	ladder_parking_queue(&p->ladder, parking, sizeof(parking));
	assert_int_equal(depth(&c, parking), 0);

	itest_step_ok(step_teardown_ladder, &c);
	assert_int_equal(broker_exchange_exists(c.amqp, "tasks", err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(c.amqp, "destination", NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_exists(c.amqp, "celery_delayed_0", err,
	    sizeof(err)), BROKER_NOT_FOUND);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

/* A destination exchange nobody declared is refused before anything is
 * declared, naming where the plan lists it. */
static void
test_missing_destination_exchange_refused(void **state)
{
	struct plan *p;
	struct step_ctx c;
	json_t *r = NULL;
	char err[2048];

	(void)state;
	own_vhost("noexchange");
	p = load_plan("  naming: kombu\n  destinations: [{ key: k, exchange: nosuch }]\n");
	itest_ctx_open(&c, p);
	assert_int_equal(step_declare_ladder(&c, &r, err, sizeof(err)), -1);
	json_decref(r);
	assert_non_null(strstr(err, "destination exchange 'nosuch' (naming.yaml:"));
	assert_non_null(strstr(err, "Nothing was declared"));
	assert_int_equal(broker_exchange_exists(c.amqp, "celery_delayed_0", err,
	    sizeof(err)), BROKER_NOT_FOUND);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_publish_beyond_plan_max_refused, itest_cleanup_teardown),
		cmocka_unit_test_teardown(test_classic_kombu_levels_reject_publish, itest_cleanup_teardown),
		cmocka_unit_test_teardown(test_kombu_prefix, itest_cleanup_teardown),
		cmocka_unit_test_teardown(test_canary_within_max_delay, itest_cleanup_teardown),
		cmocka_unit_test_teardown(test_destination_key_is_not_the_queue, itest_cleanup_teardown),
		cmocka_unit_test_teardown(test_missing_destination_exchange_refused, itest_cleanup_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
