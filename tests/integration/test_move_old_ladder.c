/* test_move_old_ladder (integration): an old path that is itself a ladder
 * (old.ladder), rebuilt on the same broker: a classic ladder of 1 s units
 * and 6 levels, with messages waiting in its levels (some dead-lettered
 * down a level already, carrying x-death, some not yet), moved by move_old
 * into a quorum ladder of 100 ms units under another prefix. Each message
 * owes the rest of the level it waits in (from its x-death entry, else its
 * timestamp) plus the lower levels its key names, and goes to the
 * destination its key ends with; every one arrives once, never before the
 * moment the test computed when it published it (publish time + delay),
 * and one for a destination the new ladder does not list stays in the
 * old ladder, which delivers it. The test has a vhost of its own, deleted
 * at teardown. */
#include "itest_move_old.h"
#include "itest_plan.h"

#define LDEST	"itml.dest"
#define NDELAY	6

/* One message the test published into the old ladder. */
static struct {
	char body[32];
	int64_t not_before_ms;	/* before its publish + its delay */
	int arrived;
} msgs[NDELAY];

/* Loads a plan of the test's vhost: BODY after its broker section. */
static struct plan *
load(const char *name, const char *body)
{
	struct itest_plan b;

	itest_plan_begin(&b, name, imove_vhost_url());
	itest_plan_addf(&b, "%s", body);
	return itest_plan_load("itest.yaml", b.text);
}

/* Publishes BODY into ladder L's entry with DELAY_MS towards DEST on B,
 * stamped with the AMQP timestamp; returns when it may come out at the
 * earliest (the moment before the publish + the delay). */
static int64_t
put(struct broker *b, const struct ladder *l, const char *body, int64_t delay_ms,
    const char *dest)
{
	struct broker_message m = { 0 };
	char key[LADDER_KEY_MAX + 1], ex[LADDER_NAME_MAX], err[512];
	uint64_t units;
	int64_t at = clock_now_ms();

	assert_int_equal(ladder_encode(l, delay_ms, &units, err, sizeof(err)), 0);
	assert_int_equal(ladder_routing_key(l, units, dest, key, sizeof(key), err,
	    sizeof(err)), 0);
	m.exchange = ladder_entry_exchange(l, units, ex, sizeof(ex));
	m.routing_key = key;
	m.body = body;
	m.len = strlen(body);
	m.timestamp = (uint64_t)(at / 1000);
	m.mandatory = true;
	if (broker_publish(b, &m, 10000, err, sizeof(err)) != 0)
		fail_msg("publishing '%s' into the old ladder: %s", body, err);
	return at + (int64_t)units * l->unit_ms;
}

static void
test_ladder_rebuilt_never_early(void **state)
{
	static const int64_t delays_s[NDELAY] = { 3, 6, 13, 22, 37, 50 };
	struct plan *old;
	struct step_ctx oc;
	char err[1024], name[LADDER_NAME_MAX];
	int64_t until;
	json_t *r;
	const json_t *e;
	size_t got = 0;

	(void)state;
	old = load("itest-oldl",
	    "old:\n"
	    "  queues: { names: [nothing.here] }\n"
	    "ladder:\n"
	    "  prefix: oldl\n"
	    "  unit: 1s\n"
	    "  levels: 6\n"
	    "  queue_type: classic\n"
	    "  destinations: [" LDEST ", other.dest]\n"
	    "  create_destinations: true\n"
	    "steps: [measure_horizon, declare_ladder]\n");
	itest_ctx_open(&oc, old);
	itest_step_ok(step_declare_ladder, &oc);
	for (int i = 0; i < NDELAY; i++) {
		snprintf(msgs[i].body, sizeof(msgs[i].body), "ml-%d", i);
		msgs[i].not_before_ms = put(oc.amqp, &old->ladder, msgs[i].body,
		    delays_s[i] * SEC, LDEST);
	}
	(void)put(oc.amqp, &old->ladder, "ml-other", 40 * SEC, "other.dest");
	/* Long enough for the 3 s one to come out and others to fall a level. */
	usleep(4500 * 1000);

	imove_plan = load("itest-newl",
	    "old:\n"
	    "  ladder: { naming: cutover, prefix: oldl, unit: 1s, levels: 6 }\n"
	    "ladder:\n"
	    "  prefix: newl\n"
	    "  unit: 100ms\n"
	    "  levels: 10\n"
	    "  queue_type: quorum\n"
	    "  destinations: [" LDEST "]\n"
	    "move_old:\n"
	    "  rate: 1000/s\n"
	    "  prefetch: 4\n"
	    "  stragglers: 1s\n"
	    "watch:\n"
	    "  allowance: 2s\n"
	    "steps: [measure_horizon, declare_ladder]\n");
	assert_true(imove_plan->old.from_ladder);
	assert_int_equal(imove_plan->old.nnames, 6);
	itest_ctx_open(&imove_ctx, imove_plan);
	itest_step_ok(step_declare_ladder, &imove_ctx);
	r = imove_move();
	/* Every level that held one of the test's messages moved it; the one
	 * for a destination the new ladder lacks stayed. */
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "moved"),
	    NDELAY - 1);
	ladder_level_queue(&old->ladder, 5, name, sizeof(name));
	e = imove_queue_entry(r, name);
	assert_string_equal(json_string_value(json_object_get(e, "from")), "death");
	json_decref(r);

	assert_int_equal(broker_consume(imove_ctx.amqp, LDEST, 0, err, sizeof(err)), 0);
	for (until = clock_mono_ms() + 90 * SEC; got < NDELAY && clock_mono_ms() < until; ) {
		struct broker_delivery d = { 0 };
		int64_t at;
		int i;

		if (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		at = clock_now_ms();
		for (i = 0; i < NDELAY && strcmp(msgs[i].body, d.body) != 0; i++)
			;
		if (i == NDELAY)
			fail_msg("message '%s' was not expected here", d.body);
		if (at < msgs[i].not_before_ms)
			fail_msg("message '%s' arrived %lld ms early", d.body,
			    (long long)(msgs[i].not_before_ms - at));
		fprintf(stderr, "# %s: %lld ms after its not-before%s\n", d.body,
		    (long long)(at - msgs[i].not_before_ms),
		    broker_header_find(&d, "x-cutover-moved-from") ? " (moved)" : "");
		if (msgs[i].arrived++ == 0)
			got++;
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	for (int i = 0; i < NDELAY; i++)
		if (msgs[i].arrived != 1)
			fail_msg("message '%s' arrived %d times", msgs[i].body,
			    msgs[i].arrived);
	/* The other destination's message stayed in the old ladder, which
	 * has delivered it by now (40 s). */
	imove_wait_depth("other.dest", 1);
	step_ctx_close(&oc);
	plan_free(old);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ladder_rebuilt_never_early,
		    imove_setup, imove_teardown),
	};

	return itest_run_part("move_old_ladder", tests, 1, NULL, NULL);
}
