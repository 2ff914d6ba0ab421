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
#include "itest_run.h"
#include "itest_step.h"
#include "ladder.h"
#include "plan.h"
#include "publish.h"
#include "step.h"
#include "topology.h"

#define DAY_MS (86400LL * 1000)

static char vhost_url[512];

static const char *
need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("set %s (and CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, "
		    "CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD; scripts/test does)", name);
	return v;
}

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
	char yaml[4096];

	need_env("CUTOVER_TEST_PASSWORD");
	snprintf(yaml, sizeof(yaml), "name: itest-naming\nbroker:\n  amqp: %s\n"
	    "  management: %s\n  username: %s\n  password: env:CUTOVER_TEST_PASSWORD\n"
	    "old: { queues: { names: [itest.none] } }\nladder:\n%s"
	    "  create_destinations: true\nsteps: [declare_ladder, verify_ladder]\n",
	    vhost_url, need_env("CUTOVER_TEST_MGMT"), need_env("CUTOVER_TEST_USER"),
	    ladder);
	return itest_plan_load(yaml);
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

/* Issue 15 item 7: a 28-level naming with max_delay 30d confirmed a 31d
 * publish. Publishing refuses anything beyond the plan's own maximum
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
	own_vhost("max");
	p = load_plan("  naming: kombu\n  max_delay: 30d\n  queue_type: quorum\n"
	    "  destinations: [itest.dest]\n");
	itest_ctx_open(&c, p);
	itest_step_ok(step_declare_ladder, &c);
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

	memset(args, 0, sizeof(args));
	snprintf(args[0].key, sizeof(args[0].key), "x-queue-type");
	snprintf(args[0].str, sizeof(args[0].str), "classic");
	snprintf(args[1].key, sizeof(args[1].key), "x-overflow");
	snprintf(args[1].str, sizeof(args[1].str), "reject-publish");
	snprintf(args[2].key, sizeof(args[2].key), "x-message-ttl");
	args[2].is_int = true;
	args[2].num = (int64_t)1000 << k;
	snprintf(args[3].key, sizeof(args[3].key), "x-dead-letter-exchange");
	ladder_dead_letter_exchange(&c->plan->ladder, k, args[3].str, sizeof(args[3].str));
	ladder_level_queue(&c->plan->ladder, k, q, sizeof(q));
	return broker_queue_declare(c->amqp, q, true, args, 4, err, errlen);
}

/* Issue 15 item 5: Kombu sets x-overflow reject-publish on classic level
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
	own_vhost("classic");
	p = load_plan("  naming: kombu\n  queue_type: classic\n"
	    "  destinations: [itest.dest]\n");
	itest_ctx_open(&c, p);
	itest_step_ok(step_declare_ladder, &c);
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

/* Issue 15 item 6: Kombu's prefix P names P_celery_delayed_K and
 * P_celery_delayed_delivery; a ladder of that prefix is declared under
 * those names and routes a delayed message through them. */
static void
test_kombu_prefix(void **state)
{
	struct plan *p;
	struct step_ctx c;
	struct broker_delivery d;
	char err[1024];
	int r = BROKER_EMPTY;

	(void)state;
	own_vhost("prefix");
	p = load_plan("  naming: kombu\n  prefix: itestp\n  destinations: [itest.dest]\n");
	itest_ctx_open(&c, p);
	itest_step_ok(step_declare_ladder, &c);
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
	/* 1 s through level 0: generous ceiling of 60 s. */
	for (int i = 0; i < 600 && r == BROKER_EMPTY; i++) {
		r = broker_get(c.amqp, "itest.dest", false, &d, err, sizeof(err));
		if (r == BROKER_EMPTY)
			itest_sleep_ms(100);
	}
	if (r != 0)
		fail_msg("the 1s message never reached itest.dest: %s", r == BROKER_EMPTY ?
		    "nothing in 60 s" : err);
	broker_delivery_free(&d);
	step_ctx_close(&c);
	plan_free(p);
	itest_cleanup();
}

static int
teardown(void **state)
{
	(void)state;
	itest_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_publish_beyond_plan_max_refused, teardown),
		cmocka_unit_test_teardown(test_classic_kombu_levels_reject_publish, teardown),
		cmocka_unit_test_teardown(test_kombu_prefix, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
