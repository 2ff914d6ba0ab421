/* test_ladder (integration): declare_ladder, verify_ladder and the ladder's
 * routing on a real RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT,
 * CUTOVER_TEST_USER, password env:CUTOVER_TEST_PASSWORD). Each drift is
 * introduced through the management API and must be reported by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "ladder.h"
#include "plan.h"
#include "step.h"

static char prefix[64];
/* The AMQP URL of the test's own vhost (itest_vhost), "" for the broker's
 * default one. */
static char vhost_url[512];

/* Names this test's objects apart from other tests' and runs'. */
static void
set_prefix(const char *test)
{
	itest_cleanup();	/* what an earlier test left when it failed */
	vhost_url[0] = '\0';
	snprintf(prefix, sizeof(prefix), "itest%ld.%s", (long)getpid(), test);
	itest_prefix_cleanup(prefix);
}

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_now_ms()

/* Loads a plan for the test broker (the test's vhost when it has one)
 * with the given ladder lines. */
static struct plan *
load_plan(const char *ladder_yaml, const char *queue_type)
{
	struct itest_plan b;

	itest_plan_begin(&b, "itest-ladder", vhost_url[0] != '\0' ? vhost_url : NULL);
	itest_plan_addf(&b,
	    "old:\n"
	    "  queues: { names: [itest.none] }\n"
	    "ladder:\n"
	    "%s"
	    "  queue_type: %s\n"
	    "  destinations: [%s.email.delivery, %s.billing.retry]\n"
	    "steps: [declare_ladder, verify_ladder]\n",
	    ladder_yaml, queue_type, prefix, prefix);
	return itest_plan_load("itest.yaml", b.text);
}

static struct plan *
cutover_plan(const char *unit, int levels, const char *queue_type)
{
	char lad[256];

	snprintf(lad, sizeof(lad), "  naming: cutover\n  prefix: %s\n  unit: %s\n"
	    "  levels: %d\n", prefix, unit, levels);
	return load_plan(lad, queue_type);
}

/* Runs verify and returns the status of the object of KIND whose name
 * contains NAME and whose status is not "ok", or "ok" if there is none;
 * *NBAD gets the number of objects not ok. */
static char *
verify_status(struct step_ctx *c, const char *kind, const char *name, int *nbad)
{
	static char status[1024];
	json_t *r = NULL, *o;
	char err[1024];
	size_t i;

	step_verify_ladder(c, &r, err, sizeof(err));
	assert_non_null(r);
	snprintf(status, sizeof(status), "ok");
	*nbad = 0;
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *st = json_string_value(json_object_get(o, "status"));

		if (strcmp(st, "ok") == 0)
			continue;
		(*nbad)++;
		if (strcmp(json_string_value(json_object_get(o, "kind")), kind) == 0 &&
		    strstr(json_string_value(json_object_get(o, "name")), name) != NULL)
			snprintf(status, sizeof(status), "%s: %s", st,
			    json_string_value(json_object_get(o, "detail")));
	}
	json_decref(r);
	return status;
}

#define run_ok itest_step_ok
#define open_ctx itest_ctx_open

/* Declares the plan's destination queues, as their consumers would
 * (declare_ladder binds them; it creates none unless told to). */
static void
declare_destinations(struct step_ctx *c)
{
	char err[512];

	for (size_t i = 0; i < c->plan->ndestinations; i++)
		if (broker_queue_declare(c->amqp, c->plan->destinations[i], true, NULL, 0,
		    err, sizeof(err)) != 0)
			fail_msg("declaring destination '%s': %s", c->plan->destinations[i],
			    err);
}

/* The plan of a quorum ladder of LEVELS levels of UNIT (cutover_plan), its
 * ladder declared through C (which it opens) onto destination queues
 * declared as their consumers would; fails the test when any of it fails. */
static struct plan *
declared_ladder(struct step_ctx *c, const char *unit, int levels)
{
	struct plan *p = cutover_plan(unit, levels, "quorum");

	open_ctx(c, p);
	declare_destinations(c);
	run_ok(step_declare_ladder, c);
	return p;
}

static void
delete_destinations(struct step_ctx *c)
{
	char err[512];

	for (size_t i = 0; i < c->plan->ndestinations; i++)
		broker_queue_delete(c->amqp, c->plan->destinations[i], 0, NULL, err, sizeof(err));
}

static void
test_declare_twice_verify_each_naming(void **state)
{
	static const char *ladders[] = {
		NULL,   /* cutover, filled below */
		"  naming: kombu\n  levels: 28\n",
		"  naming: nservicebus\n  levels: 28\n",
	};
	char lad[256], vhost[96];

	(void)state;
	set_prefix("names");
	/* kombu's and NServiceBus's names cannot carry a prefix: in a vhost of
	 * this run's own, deleted whatever happens. */
	snprintf(vhost, sizeof(vhost), "%s-names", itest_run_id());
	itest_vhost(vhost, vhost_url, sizeof(vhost_url));
	snprintf(lad, sizeof(lad), "  naming: cutover\n  prefix: %s\n  unit: 1s\n"
	    "  max_delay: 12d\n", prefix);
	ladders[0] = lad;
	for (size_t i = 0; i < 3; i++) {
		struct plan *p = load_plan(ladders[i], "quorum");
		struct step_ctx c;
		int64_t t0, t1, t2;
		int nbad;

		open_ctx(&c, p);
		declare_destinations(&c);
		t0 = now_ms();
		run_ok(step_declare_ladder, &c);
		t1 = now_ms();
		run_ok(step_declare_ladder, &c);
		t2 = now_ms();
		run_ok(step_verify_ladder, &c);
		fprintf(stderr, "# %s naming, %d levels: declare %lld ms, again %lld ms, "
		    "verify %lld ms\n", ladder_naming_name(p->ladder.naming), p->ladder.levels,
		    (long long)(t1 - t0), (long long)(t2 - t1), (long long)(now_ms() - t2));
		assert_string_equal(verify_status(&c, "queue", "", &nbad), "ok");
		assert_int_equal(nbad, 0);
		run_ok(step_teardown_ladder, &c);
		/* After the teardown every ladder object is reported missing. */
		verify_status(&c, "exchange", "", &nbad);
		/* levels + delivery + parking exchanges; levels + parking queues;
		 * two bindings a level, the parking one and one a destination;
		 * for a library's naming the alternate-exchange policy. */
		assert_int_equal(nbad, (p->ladder.levels + 2) + (p->ladder.levels + 1) +
		    (2 * p->ladder.levels + 1 + 2) +
		    (ladder_style(p->ladder.naming)->library ? 1 : 0));
		delete_destinations(&c);
		step_ctx_close(&c);
		plan_free(p);
	}
	itest_cleanup();
}

static json_t *
json_obj(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	assert_non_null(j);
	return j;
}

/* Puts policy POLICY of DEFINITION (JSON) on the queues PATTERN matches,
 * checks that verify_ladder says WANT of queue NAME, and deletes the
 * policy; fails the test when any of it fails. */
static void
policy_drift(struct step_ctx *c, const char *policy, const char *definition,
    const char *pattern, const char *name, const char *want)
{
	json_t *j = json_obj(definition);
	char err[512];
	int nbad;

	if (mgmt_put_policy(c->mgmt, policy, pattern, "queues", 5, j, err, sizeof(err)) != 0)
		fail_msg("putting policy %s %s: %s", policy, definition, err);
	json_decref(j);
	if (strstr(verify_status(c, "queue", name, &nbad), want) == NULL)
		fail_msg("with policy %s, verify_ladder does not say '%s' of %s", definition,
		    want, name);
	if (mgmt_delete_policy(c->mgmt, policy, err, sizeof(err)) != 0)
		fail_msg("deleting policy %s: %s", policy, err);
}

static void
test_drift_is_reported_by_name(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char name[128], name2[128], key[128], dest[128], err[1024], pattern[160];
	char pol_ttl[96], pol_dls[96];
	int nbad;

	(void)state;
	set_prefix("drift");
	/* Policies are vhost-wide: named for this run, deleted whatever happens. */
	snprintf(pol_ttl, sizeof(pol_ttl), "%s-ttl", itest_run_id());
	snprintf(pol_dls, sizeof(pol_dls), "%s-dls", itest_run_id());
	itest_policy_cleanup(pol_ttl);
	itest_policy_cleanup(pol_dls);
	p = declared_ladder(&c, "1s", 6);
	assert_string_equal(verify_status(&c, "queue", "", &nbad), "ok");

	/* A deleted level binding. */
	ladder_level_exchange(&p->ladder, 3, name, sizeof(name));
	ladder_wait_pattern(&p->ladder, 3, key, sizeof(key));
	assert_int_equal(broker_queue_unbind(c.amqp, name, name, key, err, sizeof(err)), 0);
	assert_non_null(strstr(verify_status(&c, "binding", name, &nbad), "missing"));
	assert_int_equal(nbad, 1);
	run_ok(step_declare_ladder, &c);

	/* An extra binding that would copy delayed messages. */
	ladder_level_exchange(&p->ladder, 2, name, sizeof(name));
	ladder_parking_queue(&p->ladder, name2, sizeof(name2));
	assert_int_equal(broker_queue_bind(c.amqp, name2, name, "#", err, sizeof(err)), 0);
	assert_non_null(strstr(verify_status(&c, "binding", name2, &nbad), "drift"));
	assert_int_equal(nbad, 1);
	assert_int_equal(broker_queue_unbind(c.amqp, name2, name, "#", err, sizeof(err)), 0);
	assert_string_equal(verify_status(&c, "binding", "", &nbad), "ok");

	/* A policy overriding message-ttl on one level queue. */
	ladder_level_queue(&p->ladder, 4, name, sizeof(name));
	snprintf(pattern, sizeof(pattern), "^%s$", name);
	policy_drift(&c, pol_ttl, "{\"message-ttl\": 3000}", pattern, name,
	    "message-ttl = 3000");

	/* A policy downgrading dead-lettering to at-most-once. */
	policy_drift(&c, pol_dls, "{\"dead-letter-strategy\": \"at-most-once\"}", pattern,
	    name, "at-most-once");
	assert_string_equal(verify_status(&c, "queue", "", &nbad), "ok");
	assert_int_equal(nbad, 0);

	/* A missing destination binding. */
	ladder_delivery_exchange(&p->ladder, name, sizeof(name));
	snprintf(dest, sizeof(dest), "%s.billing.retry", prefix);
	ladder_destination_pattern(&p->ladder, dest, key, sizeof(key));
	assert_int_equal(broker_queue_unbind(c.amqp, dest, name, key, err, sizeof(err)), 0);
	assert_non_null(strstr(verify_status(&c, "binding", dest, &nbad), "missing"));
	assert_int_equal(nbad, 1);
	run_ok(step_declare_ladder, &c);

	/* A delivery exchange without its alternate exchange. */
	assert_int_equal(broker_exchange_delete(c.amqp, name, false, err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(c.amqp, name, "topic", true, NULL, 0,
	    err, sizeof(err)), 0);
	assert_non_null(strstr(verify_status(&c, "exchange", name, &nbad),
	    "alternate-exchange"));
	assert_int_equal(broker_exchange_delete(c.amqp, name, false, err, sizeof(err)), 0);
	run_ok(step_declare_ladder, &c);
	assert_string_equal(verify_status(&c, "queue", "", &nbad), "ok");
	assert_int_equal(nbad, 0);

	/* A classic queue where quorum was planned. */
	ladder_level_queue(&p->ladder, 1, name, sizeof(name));
	assert_int_equal(broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err)), 0);
	{
		struct topology_arg a[2] = { 0 };

		snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
		a[0].is_int = true;
		a[0].num = 2000;
		snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
		ladder_dead_letter_exchange(&p->ladder, 1, a[1].str, sizeof(a[1].str));
		assert_int_equal(broker_queue_declare(c.amqp, name, true, a, 2, err,
		    sizeof(err)), 0);
	}
	assert_non_null(strstr(verify_status(&c, "queue", name, &nbad),
	    "type is classic, the plan wants quorum"));
	/* Declaring over it is refused, naming the queue. */
	{
		json_t *r = NULL;

		assert_int_not_equal(step_declare_ladder(&c, &r, err, sizeof(err)), 0);
		assert_non_null(strstr(err, name));
		json_decref(r);
	}
	assert_int_equal(broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err)), 0);
	run_ok(step_declare_ladder, &c);
	assert_string_equal(verify_status(&c, "queue", "", &nbad), "ok");
	assert_int_equal(nbad, 0);

	run_ok(step_teardown_ladder, &c);
	delete_destinations(&c);
	step_ctx_close(&c);
	plan_free(p);
}

/* Did D expire exactly once out of queue NAME? (RabbitMQ 3.10 does not
 * keep x-death in crossing order, so the test looks each level up.) */
static int
death_once(const struct broker_delivery *d, const char *name)
{
	for (size_t i = 0; i < d->ndeaths; i++)
		if (strcmp(d->deaths[i].queue, name) == 0)
			return d->deaths[i].count == 1 &&
			    strcmp(d->deaths[i].reason, "expired") == 0;
	return 0;
}

/* Levels a message of UNITS waits in, highest first, as queue names. */
static size_t
expected_levels(const struct ladder *l, uint64_t units, char names[][LADDER_NAME_MAX])
{
	size_t n = 0;

	for (int k = l->levels - 1; k >= 0; k--)
		if (units >> k & 1)
			ladder_level_queue(l, k, names[n++], LADDER_NAME_MAX);
	return n;
}

static void
test_routing_through_the_ladder(void **state)
{
	static const uint64_t units[] = { 0, 1, 2, 3, 5, 42, 127, 255 };
	const size_t nmsg = sizeof(units) / sizeof(units[0]);
	struct plan *p;
	struct step_ctx c;
	struct broker_delivery d;
	char key[LADDER_KEY_MAX + 1], exch[LADDER_NAME_MAX], dest[128], err[1024];
	char body[32], parking[LADDER_NAME_MAX], keys[8][LADDER_KEY_MAX + 1];
	int64_t sent[8], not_before[8];
	size_t got = 0;

	(void)state;
	set_prefix("route");
	p = declared_ladder(&c, "50ms", 8);
	snprintf(dest, sizeof(dest), "%s.email.delivery", prefix);
	assert_int_equal(broker_consume(c.amqp, dest, 0, err, sizeof(err)), 0);

	for (size_t i = 0; i < nmsg; i++) {
		struct broker_message m = { 0 };

		assert_int_equal(ladder_routing_key(&p->ladder, units[i], dest, key, sizeof(key),
		    err, sizeof(err)), 0);
		snprintf(keys[i], sizeof(keys[i]), "%s", key);
		ladder_entry_exchange(&p->ladder, units[i], exch, sizeof(exch));
		snprintf(body, sizeof(body), "%zu", i);
		m.exchange = exch;
		m.routing_key = key;
		m.body = body;
		m.len = strlen(body);
		m.mandatory = true;
		sent[i] = now_ms();
		not_before[i] = sent[i] + (int64_t)units[i] * p->ladder.unit_ms;
		assert_int_equal(broker_publish(c.amqp, &m, 5000, err, sizeof(err)), 0);
	}
	while (got < nmsg) {
		char names[8][LADDER_NAME_MAX];
		size_t i, n;
		int64_t at;

		if (broker_next(c.amqp, 30000, &d, err, sizeof(err)) != 0)
			fail_msg("only %zu of %zu messages arrived: %s", got, nmsg, err);
		at = now_ms();
		i = (size_t)atoi(d.body);
		assert_true(i < nmsg);
		/* Never early. */
		if (at < not_before[i])
			fail_msg("message of %llu units arrived %lld ms early",
			    (unsigned long long)units[i], (long long)(not_before[i] - at));
		/* x-death lists exactly the levels whose bits are 1 (most recent
		 * first, so in reverse of the order they were crossed). */
		n = expected_levels(&p->ladder, units[i], names);
		assert_int_equal(d.ndeaths, n);
		for (size_t k = 0; k < n; k++)
			assert_true(death_once(&d, names[k]));
		/* Dead-lettering kept the routing key it was published with. */
		assert_string_equal(d.routing_key, keys[i]);
		assert_int_equal(broker_ack(c.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
		got++;
	}
	assert_int_equal(broker_cancel(c.amqp, err, sizeof(err)), 0);

	/* A destination nobody binds lands in the parking queue. */
	{
		struct broker_message m = { 0 };
		struct broker_queue_info qi;
		int64_t deadline = now_ms() + 10000;

		assert_int_equal(ladder_routing_key(&p->ladder, 3, "itest.nobody.home", key,
		    sizeof(key), err, sizeof(err)), 0);
		ladder_entry_exchange(&p->ladder, 3, exch, sizeof(exch));
		m.exchange = exch;
		m.routing_key = key;
		m.body = "lost?";
		m.len = 5;
		m.mandatory = true;
		assert_int_equal(broker_publish(c.amqp, &m, 5000, err, sizeof(err)), 0);
		ladder_parking_queue(&p->ladder, parking, sizeof(parking));
		do {
			assert_int_equal(broker_queue_inspect(c.amqp, parking, &qi, err,
			    sizeof(err)), 0);
			if (qi.messages == 0)
				nanosleep(&(struct timespec){ 0, 50000000 }, NULL);
		} while (qi.messages == 0 && now_ms() < deadline);
		assert_int_equal(qi.messages, 1);
		assert_int_equal(broker_get(c.amqp, parking, false, &d, err, sizeof(err)), 0);
		assert_string_equal(d.routing_key, key);
		broker_delivery_free(&d);
	}
	run_ok(step_teardown_ladder, &c);
	delete_destinations(&c);
	step_ctx_close(&c);
	plan_free(p);
}

static void
test_teardown_refuses_while_messages_wait(void **state)
{
	struct plan *p;
	struct broker_message m = { 0 };
	struct step_ctx c;
	char key[LADDER_KEY_MAX + 1], exch[LADDER_NAME_MAX], dest[128], err[1024];
	json_t *r = NULL;

	(void)state;
	set_prefix("hold");
	p = declared_ladder(&c, "1s", 8);
	snprintf(dest, sizeof(dest), "%s.email.delivery", prefix);
	assert_int_equal(ladder_routing_key(&p->ladder, 200, dest, key, sizeof(key),
	    err, sizeof(err)), 0);
	ladder_entry_exchange(&p->ladder, 200, exch, sizeof(exch));
	m.exchange = exch;
	m.routing_key = key;
	m.body = "wait";
	m.len = 4;
	assert_int_equal(broker_publish(c.amqp, &m, 5000, err, sizeof(err)), 0);
	assert_int_not_equal(step_teardown_ladder(&c, &r, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "holds delayed messages"));
	json_decref(r);
	/* Nothing was removed. */
	run_ok(step_verify_ladder, &c);
	/* Empty it by hand, then the teardown goes through. */
	ladder_level_queue(&p->ladder, 7, exch, sizeof(exch));
	assert_int_equal(broker_queue_delete(c.amqp, exch, 0, NULL, err, sizeof(err)), 0);
	run_ok(step_teardown_ladder, &c);
	delete_destinations(&c);
	step_ctx_close(&c);
	plan_free(p);
}

/* What test_missing_destination_is_refused declared, for its teardown. */
static struct plan *typo_plan;

static int
typo_teardown(void **state)
{
	struct step_ctx c;
	json_t *r = NULL;
	char err[1024];

	(void)state;
	if (typo_plan != NULL && step_ctx_open(&c, typo_plan, err, sizeof(err)) == 0) {
		(void)step_teardown_ladder(&c, &r, err, sizeof(err));
		json_decref(r);
		delete_destinations(&c);
		step_ctx_close(&c);
	}
	plan_free(typo_plan);
	typo_plan = NULL;
	return 0;
}

/* A destination that does not exist (a typo, by default) fails
 * declare_ladder before anything is declared, naming the queue and where
 * the plan lists it, and verify_ladder reports it missing with the same
 * place; declared by its owner, it is bound; with
 * ladder.create_destinations: true, declare_ladder creates it. */
static void
test_missing_destination_is_refused(void **state)
{
	struct step_ctx c;
	struct broker_queue_info qi;
	json_t *r = NULL;
	char lad[256], err[2048], want[256], email[128], billing[128];
	char x[LADDER_NAME_MAX];

	(void)state;
	set_prefix("typo");
	snprintf(email, sizeof(email), "%s.email.delivery", prefix);
	snprintf(billing, sizeof(billing), "%s.billing.retry", prefix);
	typo_plan = cutover_plan("1s", 4, "quorum");
	open_ctx(&c, typo_plan);

	/* Neither exists: both named, with the plan's line (15) and column. */
	assert_int_not_equal(step_declare_ladder(&c, &r, err, sizeof(err)), 0);
	fprintf(stderr, "# declare_ladder: %s\n", err);
	snprintf(want, sizeof(want), "'%s' (itest.yaml:15:", email);
	assert_non_null(strstr(err, want));
	snprintf(want, sizeof(want), "'%s' (itest.yaml:15:", billing);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "do not exist"));
	assert_non_null(strstr(err, "ladder.create_destinations"));
	assert_true(json_is_false(json_object_get(r, "ok")));
	json_decref(r);
	r = NULL;
	assert_int_equal(broker_queue_inspect(c.amqp, billing, &qi, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	ladder_delivery_exchange(&typo_plan->ladder, x, sizeof(x));
	assert_int_equal(broker_exchange_exists(c.amqp, x, err, sizeof(err)),
	    BROKER_NOT_FOUND);

	/* One declared by its owner: only the other is named. */
	assert_int_equal(broker_queue_declare(c.amqp, email, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_not_equal(step_declare_ladder(&c, &r, err, sizeof(err)), 0);
	assert_null(strstr(err, email));
	snprintf(want, sizeof(want), "destination queue '%s' (itest.yaml:15:", billing);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "does not exist"));
	json_decref(r);
	r = NULL;
	assert_int_equal(broker_queue_inspect(c.amqp, billing, &qi, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	step_ctx_close(&c);
	plan_free(typo_plan);

	/* Created only when the plan says so; then verify is ok. */
	snprintf(lad, sizeof(lad), "  naming: cutover\n  prefix: %s\n  unit: 1s\n"
	    "  levels: 4\n  create_destinations: true\n", prefix);
	typo_plan = load_plan(lad, "quorum");
	open_ctx(&c, typo_plan);
	run_ok(step_declare_ladder, &c);
	assert_int_equal(broker_queue_inspect(c.amqp, billing, &qi, err, sizeof(err)), 0);
	run_ok(step_verify_ladder, &c);

	/* Gone again: verify names it and where the plan lists it. */
	assert_int_equal(broker_queue_delete(c.amqp, billing, 0, NULL, err,
	    sizeof(err)), 0);
	snprintf(want, sizeof(want), "ladder.destinations at itest.yaml:16:");
	assert_non_null(strstr(verify_status(&c, "destination", billing, &(int){ 0 }),
	    want));
	step_ctx_close(&c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_declare_twice_verify_each_naming),
		cmocka_unit_test(test_drift_is_reported_by_name),
		cmocka_unit_test(test_routing_through_the_ladder),
		cmocka_unit_test(test_teardown_refuses_while_messages_wait),
		cmocka_unit_test_teardown(test_missing_destination_is_refused,
		    typo_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
