/* test_move_old_ladder (integration): an old path that is itself a ladder
 * (old.ladder), rebuilt on the same broker: a classic ladder of 1 s units
 * and 6 levels, with messages waiting in its levels (some dead-lettered
 * down a level already, carrying x-death, some not yet), moved by move_old
 * into a quorum ladder of 100 ms units under another prefix. Each message
 * owes the rest of the level it waits in (from its x-death entry, else its
 * timestamp) plus the lower levels its key names, and goes to the
 * destination its key ends with; every one arrives once, never before the
 * moment the test computed when it published it (publish time + delay).
 * First, a new ladder that lacks one of the old ladder's destinations is
 * refused before anything moves, naming it. And a run killed between a
 * batch's confirms and its acks, whose messages the old ladder passes
 * down a level before the next run moves them again: both copies carry
 * one move id. Each test has a vhost of its own, deleted at teardown. */
#include "itest_move_old.h"

#define LDEST	"itml.dest"
#define NDELAY	6

/* One message the test published into the old ladder. */
static struct {
	char body[32];
	int64_t not_before_ms;	/* before its publish + its delay */
	int arrived;
	bool moved;		/* it arrived with x-cutover-moved-from */
} msgs[NDELAY];

/* Publishes BODY into ladder L's entry with DELAY_MS towards DEST on B,
 * stamped with the AMQP timestamp and with headers out of their keys'
 * order, as applications set them (a broker that dead-letters the message
 * may hand them on sorted); returns when it may come out at the earliest
 * (the moment before the publish + the delay). */
static int64_t
put(struct broker *b, const struct ladder *l, const char *body, int64_t delay_ms,
    const char *dest)
{
	static const struct broker_field headers[] = {
		{ .key = "x-trace", .str = "itml" },
		{ .key = "x-attempt", .is_int = true, .num = 1 },
		{ .key = "app-id", .str = "itest" },
	};
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
	m.headers = headers;
	m.nheaders = sizeof(headers) / sizeof(headers[0]);
	m.mandatory = true;
	if (broker_publish(b, &m, 10000, err, sizeof(err)) != 0)
		fail_msg("publishing '%s' into the old ladder: %s", body, err);
	return at + (int64_t)units * l->unit_ms;
}

/* Plan NAME: a new ladder NEW_PREFIX (100 ms units, quorum) into
 * DESTINATIONS, moving from the old ladder OLD_PREFIX of OLD_LEVELS levels
 * of 1 s. */
static struct plan *
ladder_to_ladder(const char *name, const char *old_prefix, int old_levels,
    const char *new_prefix, const char *destinations)
{
	char body[1024];

	snprintf(body, sizeof(body),
	    "old:\n"
	    "  ladder: { naming: cutover, prefix: %s, unit: 1s, levels: %d }\n"
	    "ladder:\n"
	    "  prefix: %s\n"
	    "  unit: 100ms\n"
	    "  levels: 10\n"
	    "  queue_type: quorum\n"
	    "  destinations: [%s]\n"
	    "move_old:\n"
	    "  rate: 1000/s\n"
	    "  prefetch: 4\n"
	    "  stragglers: 1s\n"
	    "watch:\n"
	    "  allowance: 2s\n"
	    "steps: [measure_horizon, declare_ladder]\n", old_prefix, old_levels,
	    new_prefix, destinations);
	return imove_load(name, body);
}

/* The old ladder: plan NAME of a classic ladder PREFIX of LEVELS levels of
 * 1 s into DESTINATIONS (created), declared through OC, which it opens;
 * fails the test when any of it fails. */
static struct plan *
old_ladder(const char *name, const char *prefix, int levels, const char *destinations,
    struct step_ctx *oc)
{
	char body[1024];
	struct plan *p;

	snprintf(body, sizeof(body),
	    "old:\n"
	    "  queues: { names: [nothing.here] }\n"
	    "ladder:\n"
	    "  prefix: %s\n"
	    "  unit: 1s\n"
	    "  levels: %d\n"
	    "  queue_type: classic\n"
	    "  destinations: [%s]\n"
	    "  create_destinations: true\n"
	    "steps: [measure_horizon, declare_ladder]\n", prefix, levels, destinations);
	p = imove_load(name, body);
	itest_ctx_open(oc, p);
	itest_step_ok(step_declare_ladder, oc);
	return p;
}

/* The new ladder's plan (prefix newl) from the old ladder oldl of 6
 * levels, with DESTINATIONS. */
static struct plan *
new_ladder(const char *destinations)
{
	return ladder_to_ladder("itest-newl", "oldl", 6, "newl", destinations);
}

/* A new ladder without 'other.dest', which the old ladder delivers to:
 * move_old refuses before it moves anything, and says what to do. */
static void
refused_for_a_missing_destination(void)
{
	struct plan *p = new_ladder(LDEST);
	struct step_ctx c;
	char err[2048], name[LADDER_NAME_MAX];
	json_t *r = NULL;

	itest_ctx_open(&c, p);
	itest_step_ok(step_declare_ladder, &c);
	c.flip_ms = clock_now_ms() - 10 * SEC;
	assert_int_not_equal(step_move_old(&c, &r, err, sizeof(err)), 0);
	fprintf(stderr, "# refused: %s\n", err);
	assert_non_null(strstr(err, "queue 'other.dest'"));
	assert_non_null(strstr(err, "add that destination to ladder.destinations"));
	json_decref(r);
	for (int k = 0; k < p->ladder.levels; k++) {
		struct broker_queue_info qi = { 0 };

		assert_int_equal(broker_queue_inspect(c.amqp, ladder_level_queue(&p->ladder,
		    k, name, sizeof(name)), &qi, err, sizeof(err)), 0);
		assert_int_equal(qi.messages, 0);
	}
	step_ctx_close(&c);
	plan_free(p);
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
	int64_t other_nb, moved;
	size_t got = 0, moved_got = 0;

	(void)state;
	old = old_ladder("itest-oldl", "oldl", 6, LDEST ", other.dest", &oc);
	for (int i = 0; i < NDELAY; i++) {
		snprintf(msgs[i].body, sizeof(msgs[i].body), "ml-%d", i);
		msgs[i].not_before_ms = put(oc.amqp, &old->ladder, msgs[i].body,
		    delays_s[i] * SEC, LDEST);
	}
	/* Due after all of them, so that it is read last. */
	other_nb = put(oc.amqp, &old->ladder, "ml-other", 55 * SEC, "other.dest");
	/* Long enough for the 3 s one to come out and others to fall a level. */
	usleep(4500 * 1000);

	refused_for_a_missing_destination();
	imove_plan = new_ladder(LDEST ", other.dest");
	assert_true(imove_plan->old.from_ladder);
	assert_int_equal(imove_plan->old.nnames, 6);
	itest_ctx_open(&imove_ctx, imove_plan);
	itest_step_ok(step_declare_ladder, &imove_ctx);
	r = imove_move();
	moved = imove_count_of(json_object_get(r, "counts"), "moved");
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
		msgs[i].moved = broker_header_find(&d, "x-cutover-moved-from") != NULL;
		moved_got += msgs[i].moved;
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	for (int i = 0; i < NDELAY; i++)
		if (msgs[i].arrived != 1)
			fail_msg("message '%s' arrived %d times", msgs[i].body,
			    msgs[i].arrived);
	/* Every message still in a level when the move read it was moved
	 * (ml-other too): the 3 s one had come out, and the 6 s one may
	 * have on a slow machine, by the old ladder itself and not early;
	 * the ones due 13 s and later were all still waiting. */
	assert_int_equal(moved, (int64_t)moved_got + 1);
	for (int i = 2; i < NDELAY; i++)
		if (!msgs[i].moved)
			fail_msg("message '%s' was not moved", msgs[i].body);
	/* The other destination's, moved too, and not early either. */
	assert_int_equal(broker_consume(imove_ctx.amqp, "other.dest", 0, err,
	    sizeof(err)), 0);
	for (until = clock_mono_ms() + 30 * SEC; clock_mono_ms() < until; ) {
		struct broker_delivery d = { 0 };
		int64_t at;

		if (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		at = clock_now_ms();
		assert_string_equal(d.body, "ml-other");
		assert_non_null(broker_header_find(&d, "x-cutover-moved-from"));
		if (at < other_nb)
			fail_msg("ml-other arrived %lld ms early", (long long)(other_nb - at));
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
		other_nb = 0;
		break;
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	assert_int_equal(other_nb, 0);	/* it came */
	step_ctx_close(&oc);
	plan_free(old);
}

/* A run killed after the new ladder confirmed a batch taken from level 2
 * of a 1 s old ladder and before the batch was acked there (crash point
 * move_old.confirmed, in a child process): the broker gives the batch
 * back, the old ladder passes it down to level 1 as its TTL runs out, and
 * the run started again moves it from there. Each message reaches the
 * destination twice, never early, and both copies carry the same
 * x-cutover-move-id, though taken from two levels (another queue, another
 * exchange, dead-letter headers), so that a consumer can drop the
 * second. */
static void
test_ladder_kill_after_confirm_one_id_across_levels(void **state)
{
	int64_t nb[3], now;
	char body[32], l1[LADDER_NAME_MAX], l2[LADDER_NAME_MAX];
	struct plan *old;
	struct step_ctx oc;
	json_t *st, *r;

	(void)state;
	old = old_ladder("itest-oldk", "oldk", 4, LDEST, &oc);
	imove_plan = ladder_to_ladder("itest-newk", "oldk", 4, "newk", LDEST);
	itest_ctx_open(&imove_ctx, imove_plan);
	itest_step_ok(step_declare_ladder, &imove_ctx);
	ladder_level_queue(&old->ladder, 1, l1, sizeof(l1));
	ladder_level_queue(&old->ladder, 2, l2, sizeof(l2));
	/* 6 s: 4 s in level 2, then 2 s in level 1. */
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "k-%d", i);
		nb[i] = put(oc.amqp, &old->ladder, body, 6 * SEC, LDEST);
	}
	now = clock_now_ms();
	imove_crash_after_confirm(now);
	/* Given back to level 2, then down to level 1 (its 2 s there). */
	imove_wait_depth(l1, 3);
	assert_int_equal(imove_depth(l2), 0);
	st = json_pack("{s:b,s:I,s:I,s:[{s:s,s:I,s:I,s:I,s:I,s:I}]}", "ok", 0,
	    "pass", (json_int_t)1, "pass_started_ms", (json_int_t)clock_now_ms(),
	    "queues", "name", l2, "moved", (json_int_t)0, "left", (json_int_t)0,
	    "skipped", (json_int_t)0, "pass_done", (json_int_t)0, "in_flight",
	    (json_int_t)3);
	imove_ctx.state = st;
	r = imove_move();
	imove_ctx.state = NULL;
	assert_int_equal(imove_count_of(imove_queue_entry(r, l1), "moved"), 3);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "may_duplicate"), 3);
	imove_expect_twice_one_id(LDEST, "k-", nb);
	json_decref(r);
	json_decref(st);
	step_ctx_close(&oc);
	plan_free(old);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ladder_rebuilt_never_early,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(
		    test_ladder_kill_after_confirm_one_id_across_levels, imove_setup,
		    imove_teardown),
	};

	return itest_run_part("move_old_ladder", tests, 2, NULL, NULL);
}
