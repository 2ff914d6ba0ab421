/* test_topology: the object list declare_ladder creates, from a plan. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "cm.h"
#include "topology.h"

static char *dests[] = { "email.delivery", "billing.retry" };

static void
make_plan(struct plan *p, enum plan_queue_type qt)
{
	char err[256];

	memset(p, 0, sizeof(*p));
	assert_int_equal(ladder_init(&p->ladder, LADDER_NAMING_CUTOVER, "delay", 1000, 6,
	    err, sizeof(err)), 0);
	p->queue_type = qt;
	p->destinations = dests;
	p->ndestinations = 2;
}

/* The topology of the plan make_plan makes with queue type QT, into T
 * (the caller frees it); fails the test, saying why, when it cannot be
 * built. */
static void
build(struct topology *t, struct plan *p, enum plan_queue_type qt)
{
	char err[256];

	make_plan(p, qt);
	if (topology_build(p, t, err, sizeof(err)) != 0)
		fail_msg("topology_build: %s", err);
}

static const struct topology_queue *
find_queue(const struct topology *t, const char *name)
{
	for (size_t i = 0; i < t->nqueues; i++)
		if (strcmp(t->queues[i].name, name) == 0)
			return &t->queues[i];
	return NULL;
}

static const char *
arg_str(const struct topology_arg *args, size_t n, const char *key)
{
	const struct topology_arg *a = topology_arg_find(args, n, key);

	return a == NULL || a->is_int ? NULL : a->str;
}

static void
test_counts_and_levels(void **state)
{
	struct topology t;
	struct plan p;
	const struct topology_queue *q;
	const struct topology_arg *ttl;

	(void)state;
	build(&t, &p, PLAN_QUEUE_QUORUM);
	assert_int_equal(t.nexchanges, 6 + 2);      /* levels, delivery, parking */
	assert_int_equal(t.nqueues, 6 + 1 + 2);     /* levels, parking, destinations */
	assert_int_equal(t.nbindings, 2 * 6 + 1 + 2);

	q = find_queue(&t, "delay.level.05");
	assert_non_null(q);
	ttl = topology_arg_find(q->args, q->nargs, "x-message-ttl");
	assert_non_null(ttl);
	assert_true(ttl->is_int);
	assert_int_equal(ttl->num, 32000);
	assert_string_equal(arg_str(q->args, q->nargs, "x-dead-letter-exchange"),
	    "delay.level.04");
	assert_string_equal(arg_str(q->args, q->nargs, "x-queue-type"), "quorum");
	assert_string_equal(arg_str(q->args, q->nargs, "x-dead-letter-strategy"),
	    "at-least-once");
	assert_string_equal(arg_str(q->args, q->nargs, "x-overflow"), "reject-publish");

	q = find_queue(&t, "delay.level.00");
	assert_string_equal(arg_str(q->args, q->nargs, "x-dead-letter-exchange"),
	    "delay.delivery");
	q = find_queue(&t, "delay.parking");
	assert_non_null(q);
	assert_null(topology_arg_find(q->args, q->nargs, "x-message-ttl"));
	assert_int_equal(find_queue(&t, "email.delivery")->role, TOPOLOGY_DESTINATION);
	topology_free(&t);
}

static void
test_exchanges_and_bindings(void **state)
{
	struct topology t;
	struct plan p;
	int found = 0;

	(void)state;
	build(&t, &p, PLAN_QUEUE_QUORUM);
	for (size_t i = 0; i < t.nexchanges; i++) {
		const struct topology_exchange *x = &t.exchanges[i];

		if (strcmp(x->name, "delay.delivery") == 0) {
			assert_string_equal(x->type, "topic");
			assert_string_equal(arg_str(x->args, x->nargs, "alternate-exchange"),
			    "delay.parking");
			found++;
		} else if (strcmp(x->name, "delay.parking") == 0) {
			assert_string_equal(x->type, "fanout");
			found++;
		} else {
			assert_int_equal(x->role, TOPOLOGY_LEVEL);
			assert_string_equal(x->type, "topic");
		}
	}
	assert_int_equal(found, 2);

	found = 0;
	for (size_t i = 0; i < t.nbindings; i++) {
		const struct topology_binding *b = &t.bindings[i];

		if (strcmp(b->source, "delay.level.03") == 0 && !b->to_exchange) {
			assert_string_equal(b->destination, "delay.level.03");
			assert_string_equal(b->key, "*.*.1.#");
			found++;
		}
		if (strcmp(b->source, "delay.level.03") == 0 && b->to_exchange) {
			assert_string_equal(b->destination, "delay.level.02");
			assert_string_equal(b->key, "*.*.0.#");
			found++;
		}
		if (strcmp(b->destination, "billing.retry") == 0) {
			assert_string_equal(b->source, "delay.delivery");
			assert_string_equal(b->key, "*.*.*.*.*.*.billing.retry");
			found++;
		}
		if (strcmp(b->destination, "delay.parking") == 0) {
			assert_string_equal(b->source, "delay.parking");
			found++;
		}
	}
	assert_int_equal(found, 4);
	topology_free(&t);
}

static void
test_classic_has_no_quorum_arguments(void **state)
{
	struct topology t;
	struct plan p;

	(void)state;
	build(&t, &p, PLAN_QUEUE_CLASSIC);
	for (size_t i = 0; i < t.nqueues; i++) {
		const struct topology_queue *q = &t.queues[i];

		assert_string_equal(arg_str(q->args, q->nargs, "x-queue-type"), "classic");
		assert_null(topology_arg_find(q->args, q->nargs, "x-dead-letter-strategy"));
		assert_null(topology_arg_find(q->args, q->nargs, "x-overflow"));
	}
	topology_free(&t);
}

/* A library's naming: its delivery exchange carries no argument (the
 * library declares it with none); a policy on exactly that exchange gives
 * it the alternate exchange. The cutover naming keeps the argument and
 * has no policy. */
static void
test_library_alternate_exchange_is_a_policy(void **state)
{
	static const struct {
		enum ladder_naming naming;
		const char *delivery, *pattern, *parking;
	} cases[] = {
		{ LADDER_NAMING_KOMBU, "celery_delayed_delivery", "^celery_delayed_delivery$",
		  "celery_delayed_parking" },
		{ LADDER_NAMING_NSERVICEBUS, "nsb.v2.delay-delivery",
		  "^nsb\\.v2\\.delay\\-delivery$", "nsb.v2.delay-parking" },
	};
	struct topology t;
	struct plan p;
	char err[256];

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		const struct topology_policy *pol;

		memset(&p, 0, sizeof(p));
		assert_int_equal(ladder_init(&p.ladder, cases[c].naming, NULL, 1000, 28,
		    err, sizeof(err)), 0);
		p.queue_type = PLAN_QUEUE_QUORUM;
		assert_int_equal(topology_build(&p, &t, err, sizeof(err)), 0);
		for (size_t i = 0; i < t.nexchanges; i++)
			if (t.exchanges[i].role != TOPOLOGY_PARKING)
				assert_int_equal(t.exchanges[i].nargs, 0);
		assert_int_equal(t.npolicies, 1);
		pol = topology_policy_for(&t, cases[c].delivery);
		assert_non_null(pol);
		assert_string_equal(pol->pattern, cases[c].pattern);
		assert_string_equal(pol->apply_to, "exchanges");
		assert_int_equal(pol->priority, TOPOLOGY_POLICY_PRIORITY);
		assert_string_equal(pol->arg.key, "alternate-exchange");
		assert_string_equal(pol->arg.str, cases[c].parking);
		topology_free(&t);
	}
	build(&t, &p, PLAN_QUEUE_QUORUM);
	assert_int_equal(t.npolicies, 0);
	assert_null(topology_policy_for(&t, "delay.delivery"));
	topology_free(&t);
}

/* Kombu declares its classic level queues with x-overflow: reject-publish
 * too (native_delayed_delivery.py): the same arguments
 * exactly, or its declare fails with 406 on the first level. */
static void
test_classic_kombu_levels_reject_publish(void **state)
{
	struct topology t;
	struct plan p;
	char err[256];
	int levels = 0;

	(void)state;
	make_plan(&p, PLAN_QUEUE_CLASSIC);
	assert_int_equal(ladder_init(&p.ladder, LADDER_NAMING_KOMBU, NULL, 1000, 28,
	    err, sizeof(err)), 0);
	assert_int_equal(topology_build(&p, &t, err, sizeof(err)), 0);
	for (size_t i = 0; i < t.nqueues; i++) {
		const struct topology_queue *q = &t.queues[i];

		assert_string_equal(arg_str(q->args, q->nargs, "x-queue-type"), "classic");
		assert_null(topology_arg_find(q->args, q->nargs, "x-dead-letter-strategy"));
		if (q->role != TOPOLOGY_LEVEL) {
			assert_null(topology_arg_find(q->args, q->nargs, "x-overflow"));
			continue;
		}
		/* x-queue-type, x-overflow, x-message-ttl, x-dead-letter-exchange. */
		assert_int_equal(q->nargs, 4);
		assert_string_equal(arg_str(q->args, q->nargs, "x-overflow"), "reject-publish");
		levels++;
	}
	assert_int_equal(levels, 28);
	topology_free(&t);
}

/* The long form: a destination's key binds the queue,
 * or the owner's exchange, it names; the exchange is listed, never with a
 * type of the ladder's choosing. */
static void
test_destination_long_form(void **state)
{
	static char *keys[] = { "email.delivery", "destination_route", "k.x" };
	struct plan_target targets[] = { { NULL, false }, { "destination", false },
	    { "tasks", true } };
	const struct topology_exchange *x = NULL;
	struct topology t;
	struct plan p;
	char err[256];
	int found = 0;

	(void)state;
	make_plan(&p, PLAN_QUEUE_QUORUM);
	p.destinations = keys;
	p.ndestinations = 3;
	p.destination_targets = targets;
	assert_int_equal(topology_build(&p, &t, err, sizeof(err)), 0);
	assert_int_equal(t.nexchanges, 6 + 2 + 1);
	assert_int_equal(t.nqueues, 6 + 1 + 2);
	assert_non_null(find_queue(&t, "email.delivery"));
	assert_non_null(find_queue(&t, "destination"));
	assert_null(find_queue(&t, "destination_route"));
	for (size_t i = 0; i < t.nexchanges; i++)
		if (strcmp(t.exchanges[i].name, "tasks") == 0)
			x = &t.exchanges[i];
	assert_non_null(x);
	assert_int_equal(x->role, TOPOLOGY_DESTINATION);
	assert_string_equal(x->type, "");
	for (size_t i = 0; i < t.nbindings; i++) {
		const struct topology_binding *b = &t.bindings[i];

		if (strcmp(b->destination, "destination") == 0) {
			assert_false(b->to_exchange);
			assert_string_equal(b->key, "*.*.*.*.*.*.destination_route");
			found++;
		}
		if (strcmp(b->destination, "tasks") == 0) {
			assert_true(b->to_exchange);
			assert_string_equal(b->source, "delay.delivery");
			assert_string_equal(b->key, "*.*.*.*.*.*.k.x");
			found++;
		}
	}
	assert_int_equal(found, 2);
	topology_free(&t);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_counts_and_levels),
	cmocka_unit_test(test_exchanges_and_bindings),
	cmocka_unit_test(test_classic_has_no_quorum_arguments),
	cmocka_unit_test(test_library_alternate_exchange_is_a_policy),
	cmocka_unit_test(test_classic_kombu_levels_reject_publish),
	cmocka_unit_test(test_destination_long_form))
