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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
