/* test_remove_old_ladder (integration): remove_old when the old path is a
 * ladder (old.ladder) rebuilt on the same broker: once its level queues
 * are gone, its level and delivery exchanges go too (cutover's naming and
 * Kombu's), while the new ladder's exchanges, the destinations' (a queue,
 * and an exchange of the owner's) and the old parking exchange stay; an
 * old exchange still bound to a user's queue, that a user's queue
 * dead-letters into, or that a user's exchange names as its alternate
 * exchange (by their arguments or by their policies), is left and named;
 * and a rebuild that keeps some of the old ladder's names (fewer levels,
 * same prefix) keeps those. A straggler's message waiting in an old level
 * keeps them all; one published after they went is refused (404). Each
 * test has a vhost of its own, deleted at teardown. */
#include "itest_move_old.h"
#include "pattern.h"
#include "topology.h"

#define RDEST	"itrl.dest"
#define RDX	"itrl.dx"	/* a destination's exchange, of its owner's */
#define RDXQ	"itrl.dxq"	/* the queue bound to it */

static bool
exchange_exists(const char *name)
{
	char err[1024];
	int r = broker_exchange_exists(imove_ctx.amqp, name, err, sizeof(err));

	if (r != 0 && r != BROKER_NOT_FOUND)
		fail_msg("checking exchange %s: %s", name, err);
	return r == 0;
}

static bool
queue_exists(const char *name)
{
	char err[1024];
	int r = broker_queue_inspect(imove_ctx.amqp, name, NULL, err, sizeof(err));

	if (r != 0 && r != BROKER_NOT_FOUND)
		fail_msg("checking queue %s: %s", name, err);
	return r == 0;
}

/* Declares, on the test's vhost, ladder L (classic) with plan P's
 * destinations: the old ladder as it stood before the cutover, made by
 * declare_ladder on a copy of P whose ladder is L. */
static void
declare_old(const struct plan *p, const struct ladder *l)
{
	struct plan as_old = *p;
	struct step_ctx c;

	as_old.ladder = *l;
	as_old.queue_type = PLAN_QUEUE_CLASSIC;
	itest_ctx_open(&c, &as_old);
	itest_step_ok(step_declare_ladder, &c);
	step_ctx_close(&c);
}

/* The new plan: old.ladder OLD, the new ladder NEW (classic) with
 * DESTINATIONS (RDX, a destination's exchange, declared first); its
 * context opened, the old ladder declared, then the new one. Returns
 * measure_horizon's result. */
static json_t *
start(const char *old, const char *new_ladder, const char *destinations)
{
	char body[2048];

	snprintf(body, sizeof(body),
	    "old:\n"
	    "  ladder: %s\n"
	    "ladder:\n"
	    "%s"
	    "  queue_type: classic\n"
	    "  destinations: [%s]\n"
	    "  create_destinations: true\n"
	    "watch:\n"
	    "  allowance: 1s\n"
	    "steps: [measure_horizon, declare_ladder]\n", old, new_ladder, destinations);
	imove_plan = imove_load("itest-rmladder", body);
	assert_true(imove_plan->old.from_ladder);
	itest_ctx_open(&imove_ctx, imove_plan);
	assert_int_equal(broker_exchange_declare(imove_ctx.amqp, RDX, "topic", true, NULL,
	    0, body, sizeof(body)), 0);
	declare_old(imove_plan, &imove_plan->old.ladder);
	itest_step_ok(step_declare_ladder, &imove_ctx);
	return imove_measure();
}

/* One test's ladders: old.ladder, the new ladder's section, its
 * destinations (start's arguments). */
struct ladders {
	const char *old, *new_ladder, *destinations;
};

static json_t *measured;	/* the test's measure_horizon result */

/* cmocka setup: the test's vhost, then start with the test's ladders
 * (*STATE, a struct ladders). */
static int
started(void **state)
{
	struct ladders *l = *state;

	imove_setup(state);
	measured = start(l->old, l->new_ladder, l->destinations);
	return 0;
}

static int
stopped(void **state)
{
	json_decref(measured);
	measured = NULL;
	return imove_teardown(state);
}

/* remove_old (old_remove: the step less its flag check; a dry run when
 * DRY) on the test's measured queues, with the flip a minute ago, past
 * every old level's TTL. Returns its result; fails the test when it
 * fails. */
static json_t *
remove_ladder(bool dry)
{
	const struct old_remove_opts o = { .dry_run = dry };
	json_t *r = NULL;
	char err[4096];

	imove_ctx.measured = measured;
	imove_ctx.flip_ms = clock_now_ms() - MIN;
	imove_ctx.old_last_entry_ms = imove_ctx.flip_ms;
	if (old_remove(&imove_ctx, &o, &r, err, sizeof(err)) != 0)
		fail_msg("remove_old: %s", err);
	return r;
}

/* The outcome remove_old's result R gives exchange NAME, and its reason
 * in *WHY (may be NULL). */
static const char *
outcome_of(const json_t *r, const char *name, const char **why)
{
	const json_t *e = imove_entry_in(r, "exchanges", name);

	if (why != NULL)
		*why = json_string_value(json_object_get(e, "reason"));
	return json_string_value(json_object_get(e, "outcome"));
}

/* Publishes a message of UNITS into ladder L's entry exchange towards
 * RDEST, as a producer left on the old ladder would. Returns what
 * broker_publish returned. */
static int
straggle(const struct ladder *l, uint64_t units)
{
	struct broker_message msg = { 0 };
	char key[LADDER_KEY_MAX + 1], x[LADDER_NAME_MAX], err[512];

	assert_int_equal(ladder_routing_key(l, units, RDEST, key, sizeof(key), err,
	    sizeof(err)), 0);
	msg.exchange = ladder_entry_exchange(l, units, x, sizeof(x));
	msg.routing_key = key;
	msg.body = "straggler";
	msg.len = strlen(msg.body);
	return broker_publish(imove_ctx.amqp, &msg, 10000, err, sizeof(err));
}

/* Every exchange of plan P's ladder exists. */
static void
assert_ladder_there(const struct plan *p)
{
	struct topology t;
	char err[512];

	assert_int_equal(topology_build(p, &t, err, sizeof(err)), 0);
	for (size_t i = 0; i < t.nexchanges; i++)
		if (!exchange_exists(t.exchanges[i].name))
			fail_msg("exchange '%s' of the new ladder is gone",
			    t.exchanges[i].name);
	topology_free(&t);
}

/* A cutover-named ladder rebuilt under another prefix: the preview says
 * which exchanges would go; remove_old deletes the old level queues, then
 * the old level and delivery exchanges, and nothing else. */
static void
test_cutover_ladder_exchanges_go(void **state)
{
	char name[LADDER_NAME_MAX];
	json_t *r;

	(void)state;

	r = remove_ladder(true);
	for (int k = 0; k < 3; k++)
		assert_string_equal(outcome_of(r, ladder_level_exchange(
		    &imove_plan->old.ladder, k, name, sizeof(name)), NULL), "would_remove");
	assert_string_equal(outcome_of(r, "oldl.delivery", NULL), "would_remove");
	assert_true(exchange_exists("oldl.level.02"));
	json_decref(r);

	r = remove_ladder(false);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "removed"), 3);
	assert_int_equal(imove_count_of(json_object_get(r, "exchange_counts"), "removed"), 4);
	for (int k = 0; k < 3; k++) {
		ladder_level_exchange(&imove_plan->old.ladder, k, name, sizeof(name));
		assert_string_equal(outcome_of(r, name, NULL), "removed");
		assert_false(exchange_exists(name));
		assert_false(queue_exists(name));
	}
	assert_false(exchange_exists("oldl.delivery"));
	/* Its parking queue may hold what the old ladder parked: kept. */
	assert_true(exchange_exists("oldl.parking"));
	assert_ladder_there(imove_plan);
	assert_true(exchange_exists(RDX));
	assert_true(queue_exists(RDEST));
	json_decref(r);

	/* A straggler publishing into the old ladder now fails loudly. */
	assert_int_equal(straggle(&imove_plan->old.ladder, 7), BROKER_EREFUSED);
	assert_int_equal(broker_reply_code(imove_ctx.amqp), 404);

	/* Again (a retry): found gone. */
	r = remove_ladder(false);
	assert_string_equal(outcome_of(r, "oldl.delivery", NULL), "gone");
	json_decref(r);
}

/* Kombu's naming (celery_delayed_K, celery_delayed_delivery), its
 * destination bound the library's way ("#.KEY" to the destination's own
 * exchange): the old exchanges go, the destination's exchange and its
 * queue's binding stay. */
static void
test_kombu_ladder_exchanges_go(void **state)
{
	char err[1024];
	json_t *r;
	struct mgmt_binding_list bl = { 0 };

	(void)state;

	assert_int_equal(broker_queue_declare(imove_ctx.amqp, RDXQ, true, NULL, 0, err,
	    sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(imove_ctx.amqp, RDXQ, RDX, "#.itrl.k", err,
	    sizeof(err)), 0);
	assert_int_equal(broker_exchange_bind(imove_ctx.amqp, RDX,
	    "celery_delayed_delivery", "#.itrl.k", err, sizeof(err)), 0);

	r = remove_ladder(false);
	assert_string_equal(outcome_of(r, "celery_delayed_2", NULL), "removed");
	assert_string_equal(outcome_of(r, "celery_delayed_0", NULL), "removed");
	assert_string_equal(outcome_of(r, "celery_delayed_delivery", NULL), "removed");
	for (int k = 0; k < 3; k++) {
		char name[32];

		snprintf(name, sizeof(name), "celery_delayed_%d", k);
		assert_false(exchange_exists(name));
	}
	assert_false(exchange_exists("celery_delayed_delivery"));
	assert_ladder_there(imove_plan);
	assert_true(exchange_exists(RDX));
	assert_int_equal(mgmt_list_bindings_from(imove_ctx.mgmt, RDX, &bl, err,
	    sizeof(err)), 0);
	assert_int_equal(bl.n, 1);
	assert_string_equal(bl.v[0].destination, RDXQ);
	mgmt_binding_list_free(&bl);
	json_decref(r);
}

/* A user's queue bound to old level 1's exchange, another that
 * dead-letters into the old delivery exchange, and a user's exchange
 * whose alternate exchange is old level 0's: those three exchanges are
 * left, each named with why, the step still succeeds, level 2's goes. */
static void
test_old_exchange_in_use_is_left(void **state)
{
	struct topology_arg dlx = { .key = "x-dead-letter-exchange", .str = "oldu.delivery" };
	struct topology_arg ae = { .key = "alternate-exchange", .str = "oldu.level.00" };
	char err[1024];
	const char *why;
	json_t *r;

	(void)state;

	assert_int_equal(broker_queue_declare(imove_ctx.amqp, "itrl.user", true, NULL, 0,
	    err, sizeof(err)), 0);
	assert_int_equal(broker_queue_bind(imove_ctx.amqp, "itrl.user", "oldu.level.01",
	    "#", err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(imove_ctx.amqp, "itrl.retry", true, &dlx, 1,
	    err, sizeof(err)), 0);
	assert_int_equal(broker_exchange_declare(imove_ctx.amqp, "itrl.ux", "topic", true,
	    &ae, 1, err, sizeof(err)), 0);

	r = remove_ladder(false);
	assert_true(json_is_true(json_object_get(r, "ok")));
	assert_string_equal(outcome_of(r, "oldu.level.01", &why), "left");
	fprintf(stderr, "# oldu.level.01: %s\n", why);
	assert_non_null(strstr(why, "queue 'itrl.user'"));
	assert_string_equal(outcome_of(r, "oldu.delivery", &why), "left");
	fprintf(stderr, "# oldu.delivery: %s\n", why);
	assert_non_null(strstr(why, "queue 'itrl.retry' dead-letters into it"));
	assert_true(exchange_exists("oldu.level.01"));
	assert_true(exchange_exists("oldu.delivery"));
	assert_string_equal(outcome_of(r, "oldu.level.00", &why), "left");
	fprintf(stderr, "# oldu.level.00: %s\n", why);
	assert_non_null(strstr(why, "exchange 'itrl.ux' names it as its alternate"));
	assert_true(exchange_exists("oldu.level.00"));
	assert_string_equal(outcome_of(r, "oldu.level.02", NULL), "removed");
	assert_false(exchange_exists("oldu.level.02"));
	assert_int_equal(imove_count_of(json_object_get(r, "exchange_counts"), "left"), 3);
	assert_ladder_there(imove_plan);
	json_decref(r);
}

/* Puts policy NAME (apply-to APPLY_TO, "queues" or "exchanges") with
 * DEFINITION (borrowed) on object TARGET alone, on the test's vhost, and
 * waits (up to 30 s) until the records' listing of APPLY_TO names it as
 * TARGET's policy (RabbitMQ applies a policy asynchronously): as an
 * operator's change just made, which the statistics listing shows only
 * some seconds later and remove_old must follow at once. The vhost's
 * deletion at teardown removes it. */
static void
policy_on(const char *name, const char *apply_to, const char *target,
    const json_t *definition)
{
	char pattern[3 * 64 + 3], vhost[3 * 256 + 1], path[1024], err[1024];

	assert_int_equal(pattern_exact(target, pattern, sizeof(pattern)), 0);
	if (mgmt_put_policy(imove_ctx.mgmt, name, pattern, apply_to, 5, definition,
	    err, sizeof(err)) != 0)
		fail_msg("putting policy %s: %s", name, err);
	assert_true(mgmt_escape(mgmt_vhost(imove_ctx.mgmt), vhost, sizeof(vhost)) >= 0);
	snprintf(path, sizeof(path), "/api/%s/%s?disable_stats=true&columns=name,policy",
	    apply_to, vhost);
	for (int tries = 0;; tries++) {
		json_t *l = NULL;
		const char *has;
		bool on;

		if (mgmt_request(imove_ctx.mgmt, "GET", path, NULL, &l, NULL, err,
		    sizeof(err)) != 0)
			fail_msg("%s", err);
		has = json_string_value(json_object_get(old_json_by_name(l, target),
		    "policy"));
		on = has != NULL && strcmp(has, name) == 0;
		json_decref(l);
		if (on)
			break;
		if (tries == 150)
			fail_msg("the %s listing never named policy %s on %s", apply_to,
			    name, target);
		clock_sleep_ms(200);
	}
}

/* The same as test_old_exchange_in_use_is_left, by policies alone: a
 * user's exchange whose policy names old level 0's exchange as its
 * alternate exchange, and a user's queue whose policy dead-letters into
 * the old delivery exchange: both old exchanges are left, each naming its
 * user; level 1's and 2's go. */
static void
test_old_exchange_used_by_a_policy_is_left(void **state)
{
	char err[1024];
	const char *why;
	json_t *def, *r;

	(void)state;

	assert_int_equal(broker_exchange_declare(imove_ctx.amqp, "itrl.pux", "topic", true,
	    NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_declare(imove_ctx.amqp, "itrl.pretry", true, NULL, 0,
	    err, sizeof(err)), 0);
	def = json_pack("{s:s}", "alternate-exchange", "oldp.level.00");
	policy_on("itrl.pol-ae", "exchanges", "itrl.pux", def);
	json_decref(def);
	def = json_pack("{s:s}", "dead-letter-exchange", "oldp.delivery");
	policy_on("itrl.pol-dlx", "queues", "itrl.pretry", def);
	json_decref(def);

	r = remove_ladder(false);
	assert_true(json_is_true(json_object_get(r, "ok")));
	why = NULL;
	if (strcmp(outcome_of(r, "oldp.level.00", &why), "left") != 0 ||
	    strstr(why, "exchange 'itrl.pux' names it as its alternate") == NULL)
		fail_msg("old exchange oldp.level.00 is '%s' (%s), though exchange "
		    "itrl.pux names it as its alternate exchange by its policy "
		    "itrl.pol-ae: what itrl.pux cannot route would be dropped",
		    outcome_of(r, "oldp.level.00", NULL), why != NULL ? why : "");
	fprintf(stderr, "# oldp.level.00: %s\n", why);
	assert_true(exchange_exists("oldp.level.00"));
	if (strcmp(outcome_of(r, "oldp.delivery", &why), "left") != 0 ||
	    strstr(why, "queue 'itrl.pretry' dead-letters into it") == NULL)
		fail_msg("old exchange oldp.delivery is '%s' (%s), though queue "
		    "itrl.pretry dead-letters into it by its policy itrl.pol-dlx: what "
		    "expires there would be dropped", outcome_of(r, "oldp.delivery", NULL),
		    why != NULL ? why : "");
	fprintf(stderr, "# oldp.delivery: %s\n", why);
	assert_true(exchange_exists("oldp.delivery"));
	assert_string_equal(outcome_of(r, "oldp.level.01", NULL), "removed");
	assert_string_equal(outcome_of(r, "oldp.level.02", NULL), "removed");
	assert_int_equal(imove_count_of(json_object_get(r, "exchange_counts"), "left"), 2);
	assert_ladder_there(imove_plan);
	json_decref(r);
}

/* A straggler's message waiting in an old level queue: that queue waits
 * its TTL again, and so does every exchange of the old ladder (what it
 * holds goes down through them); nothing is deleted but the empty
 * levels. */
static void
test_straggler_keeps_the_exchanges(void **state)
{
	char name[LADDER_NAME_MAX];
	const json_t *e;
	json_t *r;

	(void)state;

	assert_int_equal(straggle(&imove_plan->old.ladder, 7), 0);	/* 4 s in level 2 */
	r = remove_ladder(false);
	e = imove_entry_in(r, "entries", "olds.level.02");
	assert_string_equal(json_string_value(json_object_get(e, "outcome")), "waiting");
	for (int k = 0; k < 3; k++) {
		const char *why;

		ladder_level_exchange(&imove_plan->old.ladder, k, name, sizeof(name));
		assert_string_equal(outcome_of(r, name, &why), "waiting");
		assert_non_null(strstr(why, "is still there"));
		assert_true(exchange_exists(name));
	}
	assert_string_equal(outcome_of(r, "olds.delivery", NULL), "waiting");
	assert_true(exchange_exists("olds.delivery"));
	json_decref(r);
}

/* The old ladder rebuilt in place with fewer levels (same prefix and
 * unit): its lower levels and its delivery exchange are the new ladder's
 * too and stay; only the levels above go. */
static void
test_rebuild_sharing_names_keeps_them(void **state)
{
	char name[LADDER_NAME_MAX];
	const char *why;
	json_t *r;

	(void)state;

	r = remove_ladder(false);
	assert_string_equal(outcome_of(r, "shr.level.04", NULL), "removed");
	assert_string_equal(outcome_of(r, "shr.level.03", NULL), "removed");
	assert_false(exchange_exists("shr.level.04"));
	assert_false(exchange_exists("shr.level.03"));
	for (int k = 0; k < 3; k++) {
		ladder_level_exchange(&imove_plan->ladder, k, name, sizeof(name));
		assert_string_equal(outcome_of(r, name, &why), "kept");
		assert_non_null(strstr(why, "new ladder"));
		assert_true(queue_exists(name));
	}
	assert_string_equal(outcome_of(r, "shr.delivery", NULL), "kept");
	assert_ladder_there(imove_plan);
	json_decref(r);
}

int
main(void)
{
	static struct ladders ladders[] = {
		{ "{ naming: cutover, prefix: oldl, unit: 1s, levels: 3 }",
		  "  prefix: newl\n  unit: 100ms\n  levels: 5\n",
		  RDEST ", { key: itrl.k, exchange: " RDX " }" },
		{ "{ naming: kombu, unit: 1s, levels: 3 }",
		  "  prefix: newk\n  unit: 1s\n  levels: 4\n",
		  "{ key: itrl.k, exchange: " RDX " }" },
		{ "{ naming: cutover, prefix: oldu, unit: 1s, levels: 3 }",
		  "  prefix: newu\n  unit: 1s\n  levels: 4\n", RDEST },
		{ "{ naming: cutover, prefix: shr, unit: 1s, levels: 5 }",
		  "  prefix: shr\n  unit: 1s\n  levels: 3\n", RDEST },
		{ "{ naming: cutover, prefix: olds, unit: 1s, levels: 3 }",
		  "  prefix: news\n  unit: 1s\n  levels: 4\n", RDEST },
		{ "{ naming: cutover, prefix: oldp, unit: 1s, levels: 3 }",
		  "  prefix: newp\n  unit: 1s\n  levels: 4\n", RDEST },
	};
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_prestate_setup_teardown(test_cutover_ladder_exchanges_go,
		    started, stopped, &ladders[0]),
		cmocka_unit_test_prestate_setup_teardown(test_kombu_ladder_exchanges_go,
		    started, stopped, &ladders[1]),
		cmocka_unit_test_prestate_setup_teardown(test_old_exchange_in_use_is_left,
		    started, stopped, &ladders[2]),
		cmocka_unit_test_prestate_setup_teardown(test_rebuild_sharing_names_keeps_them,
		    started, stopped, &ladders[3]),
		cmocka_unit_test_prestate_setup_teardown(test_straggler_keeps_the_exchanges,
		    started, stopped, &ladders[4]),
		cmocka_unit_test_prestate_setup_teardown(
		    test_old_exchange_used_by_a_policy_is_left, started, stopped,
		    &ladders[5]),
	};

	return itest_run_part("remove_old_ladder", tests, 6, NULL, NULL);
}
