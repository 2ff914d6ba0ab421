/* test_move_old (integration): the move_old step on a real
 * RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * password env:CUTOVER_TEST_PASSWORD). Old TTL'd queues hold messages
 * stamped with the AMQP timestamp, with a header (epoch ms and RFC 3339)
 * and unstamped; after the step every moved message arrives at its
 * destination never before the moment its old queue would have let it out
 * (checked against the test's own arithmetic, not the step's stamps), with
 * its body, properties and application headers and without x-death; the
 * ones that cannot go stay in their old queue. A queue whose dead-letter
 * target is no destination stops the step before anything moves; a
 * returned publish leaves the message in place; a resumed step skips the
 * queues its pass had finished. After a move, remove_old deletes a queue
 * the last pass emptied without waiting its old TTL, and still leaves one
 * holding what the move left (until its not-before, and while it holds
 * it), one published into since, and one whose feeder is still there.
 * Each test has a vhost of its own, deleted at teardown whatever happens. */
#define _DEFAULT_SOURCE	/* usleep */
#include <sys/types.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_run.h"
#include "ladder.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"

#define DEST "itmv.dest"
#define SEC 1000LL
#define MIN (60 * SEC)

static char vhost_url[512];
static struct plan *plan;
static struct step_ctx ctx;

static int
setup(void **state)
{
	static int serial;
	char vhost[128];

	(void)state;
	itest_cleanup();
	snprintf(vhost, sizeof(vhost), "%s-mv%d", itest_run_id(), ++serial);
	itest_vhost(vhost, vhost_url, sizeof(vhost_url));
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	step_ctx_close(&ctx);
	memset(&ctx, 0, sizeof(ctx));
	plan_free(plan);
	plan = NULL;
	itest_cleanup();
	return 0;
}

/* Loads the test plan (old queues '^old\.', a 1 s ladder of 7 levels: up
 * to 127 s, destination DEST) with ENTRY as move_old.entry and BOUND as
 * unknown_entry_max_lateness, opens its context and declares its ladder. */
static void
start(const char *entry, const char *bound)
{
	char yaml[4096], broker[1024];
	json_t *r = NULL;
	char err[1024];

	itest_broker_yaml(vhost_url, broker, sizeof(broker));
	snprintf(yaml, sizeof(yaml),
	    "name: itest-move\n"
	    "%s"
	    "old:\n"
	    "  queues: { match: '^old\\.' }\n"
	    "ladder:\n"
	    "  naming: cutover\n"
	    "  prefix: itmv\n"
	    "  unit: 1s\n"
	    "  levels: 7\n"
	    "  queue_type: classic\n"
	    "  destinations: [" DEST "]\n"
	    "  create_destinations: true\n"
	    "move_old:\n"
	    "  rate: 1000/s\n"
	    "  prefetch: 4\n"
	    "  unknown_entry_max_lateness: %s\n"
	    "  stragglers: 1s\n"
	    "  entry:\n%s"
	    "watch:\n"
	    "  allowance: 2s\n"
	    "steps: [measure_horizon, declare_ladder]\n", broker, bound, entry);
	plan = itest_plan_load("itest.yaml", yaml);
	itest_ctx_open(&ctx, plan);
	if (step_declare_ladder(&ctx, &r, err, sizeof(err)) != 0)
		fail_msg("declare_ladder: %s", err);
	json_decref(r);
}

/* Declares classic old queue NAME with TTL_MS dead-lettering through the
 * default exchange with key DLK (NULL: none). */
static void
old_queue(const char *name, int64_t ttl_ms, const char *dlk)
{
	struct topology_arg a[3];
	size_t n = 0;
	char err[1024];

	memset(a, 0, sizeof(a));
	snprintf(a[n].key, sizeof(a[n].key), "x-message-ttl");
	a[n].is_int = true;
	a[n++].num = ttl_ms;
	snprintf(a[n].key, sizeof(a[n].key), "x-dead-letter-exchange");
	snprintf(a[n++].str, sizeof(a[0].str), "%s", "");
	if (dlk != NULL) {
		snprintf(a[n].key, sizeof(a[n].key), "x-dead-letter-routing-key");
		snprintf(a[n++].str, sizeof(a[0].str), "%s", dlk);
	}
	if (broker_queue_declare(ctx.amqp, name, true, a, n, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", name, err);
}

/* One message the test put in an old queue, and what it expects. */
struct sent {
	char body[64];
	const char *queue;
	int64_t not_before_ms;	/* the test's own: entry + TTL; 0: not moved */
	bool arrived;
};

static struct sent sent[64];
static size_t nsent;

/* Publishes BODY to old queue Q through the default exchange: with
 * timestamp TS_S (0: none), header x-sent-at HDR_MS (0: none) or HDR_TEXT
 * (NULL: none), and an application header x-app. NB is what the test
 * expects as its not-before time (0: it must stay). */
static void
put(const char *q, const char *body, uint64_t ts_s, int64_t hdr_ms,
    const char *hdr_text, int64_t nb)
{
	struct broker_field h[2];
	struct broker_message m;
	size_t n = 0;
	char err[1024];

	memset(h, 0, sizeof(h));
	memset(&m, 0, sizeof(m));
	h[n].key = "x-app";
	h[n++].str = body;
	if (hdr_ms != 0) {
		h[n].key = "x-sent-at";
		h[n].is_int = true;
		h[n++].num = hdr_ms;
	} else if (hdr_text != NULL) {
		h[n].key = "x-sent-at";
		h[n++].str = hdr_text;
	}
	m.exchange = "";
	m.routing_key = q;
	m.body = body;
	m.len = strlen(body);
	m.headers = h;
	m.nheaders = n;
	m.content_type = "text/plain";
	m.message_id = body;
	m.timestamp = ts_s;
	if (broker_publish(ctx.amqp, &m, 10000, err, sizeof(err)) != 0)
		fail_msg("publishing %s to %s: %s", body, q, err);
	assert_true(nsent < sizeof(sent) / sizeof(sent[0]));
	snprintf(sent[nsent].body, sizeof(sent[0].body), "%s", body);
	sent[nsent].queue = q;
	sent[nsent].not_before_ms = nb;
	sent[nsent++].arrived = false;
}

/* Waits (30 s at most) until queue Q holds N ready messages: a message
 * rejected with requeue is back in its queue once the broker has handled
 * the reject, which a later request may overtake. */
static void
wait_depth(const char *q, uint32_t n)
{
	struct broker_queue_info qi = { 0 };
	int64_t until = clock_mono_ms() + 30 * SEC;
	char err[1024];

	for (;;) {
		if (broker_queue_inspect(ctx.amqp, q, &qi, err, sizeof(err)) != 0)
			fail_msg("inspecting %s: %s", q, err);
		if (qi.messages == n)
			return;
		if (clock_mono_ms() > until)
			fail_msg("%s holds %u messages; expected %u", q, qi.messages, n);
		usleep(20 * 1000);
	}
}

static uint32_t
depth(const char *q)
{
	struct broker_queue_info qi = { 0 };
	char err[1024];

	if (broker_queue_inspect(ctx.amqp, q, &qi, err, sizeof(err)) != 0)
		fail_msg("inspecting %s: %s", q, err);
	return qi.messages;
}

/* Runs move_old until it is done (it passes once when the stragglers'
 * window is over). Returns its result; fails the test when it fails. */
static json_t *
move(void)
{
	json_t *r = NULL;
	char err[2048];
	int rc;

	ctx.flip_ms = clock_now_ms() - 10 * SEC;
	ctx.again = false;
	rc = step_move_old(&ctx, &r, err, sizeof(err));
	if (rc != 0 || ctx.again) {
		char *t = json_dumps(r, JSON_COMPACT);

		fprintf(stderr, "move_old returned %d: %s\n%s\n", rc, err, t ? t : "");
		free(t);
		fail_msg("move_old did not finish");
	}
	return r;
}

/* The entry of queue NAME in R's array LIST ("queues" of move_old's
 * result, "entries" of remove_old's); fails the test when there is none. */
static const json_t *
entry_in(const json_t *r, const char *list, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(r, list), i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			return e;
	fail_msg("no entry for %s in the result's %s", name, list);
	return NULL;
}

static const json_t *
queue_entry(const json_t *r, const char *name)
{
	return entry_in(r, "queues", name);
}

static int64_t
count_of(const json_t *e, const char *key)
{
	return json_integer_value(json_object_get(e, key));
}

/* Consumes DEST until every message expected to move has arrived (within
 * CEILING_MS), checking each: expected, never early, intact. */
static void
receive_all(int64_t ceiling_ms)
{
	int64_t until = clock_mono_ms() + ceiling_ms;
	size_t want = 0, got = 0;
	char err[1024];

	for (size_t i = 0; i < nsent; i++)
		want += sent[i].not_before_ms != 0;
	assert_int_equal(broker_consume(ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	while (got < want && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		const struct broker_header *h;
		int64_t at;
		size_t i;

		if (broker_next(ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		at = clock_now_ms();
		for (i = 0; i < nsent && strcmp(sent[i].body, d.body) != 0; i++)
			;
		if (i == nsent || sent[i].arrived)
			fail_msg("message '%s' arrived and was not expected (or twice)", d.body);
		if (sent[i].not_before_ms == 0) {
			/* Left: it drains through its old queue, never moved. */
			assert_null(broker_header_find(&d, "x-cutover-moved-from"));
			assert_true(d.ndeaths > 0);
			assert_string_equal(d.deaths[d.ndeaths - 1].queue, sent[i].queue);
			sent[i].arrived = true;
			assert_int_equal(broker_ack(ctx.amqp, &d, err, sizeof(err)), 0);
			broker_delivery_free(&d);
			continue;
		}
		if (at < sent[i].not_before_ms)
			fail_msg("message '%s' from %s arrived %lld ms early", d.body,
			    sent[i].queue, (long long)(sent[i].not_before_ms - at));
		h = broker_header_find(&d, "x-app");
		assert_non_null(h);
		assert_string_equal(h->str, d.body);
		assert_string_equal(d.message_id, d.body);
		assert_string_equal(d.content_type, "text/plain");
		h = broker_header_find(&d, "x-cutover-moved-from");
		assert_non_null(h);
		assert_string_equal(h->str, sent[i].queue);
		/* The step's not-before is the test's (stamped) or later
		 * (unknown: from the move's own clock). */
		h = broker_header_find(&d, "x-cutover-not-before");
		assert_non_null(h);
		assert_true(h->num >= sent[i].not_before_ms);
		/* The ladder's own x-death (levels waited in) only: never the
		 * old queues'. */
		for (size_t k = 0; k < d.ndeaths; k++) {
			assert_null(strstr(d.deaths[k].queue, "old."));
			assert_null(strstr(d.deaths[k].queue, "pre."));
		}
		sent[i].arrived = true;
		got++;
		assert_int_equal(broker_ack(ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(ctx.amqp, err, sizeof(err));
	for (size_t i = 0; i < nsent; i++)
		if (sent[i].not_before_ms != 0 && !sent[i].arrived)
			fail_msg("message '%s' from %s never arrived", sent[i].body,
			    sent[i].queue);
}

/* Old queues of every kind: what goes arrives never early, what cannot
 * stays where it was. */
static void
test_moves_never_early_and_leaves_the_rest(void **state)
{
	int64_t now, t_s;
	char rfc[40], body[32];
	json_t *r;

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.ts\\.' }, from: timestamp }\n"
	    "    - { queues: { match: '^old\\.hdr' }, from: header, header: x-sent-at }\n"
	    "    - { queues: { match: '^old\\.long' }, from: timestamp }\n", "8s");
	old_queue("old.ts.12s", 12 * SEC, DEST);
	old_queue("old.hdr.10s", 10 * SEC, DEST);
	old_queue("old.unk.6s", 6 * SEC, DEST);
	old_queue("old.unk.10m", 10 * MIN, DEST);
	old_queue("old.long.10m", 10 * MIN, DEST);
	/* A pre-queue that dead-letters into old.ts.12s at once: what it
	 * sends on carries x-death. */
	{
		struct topology_arg a[3];
		char err[512];

		memset(a, 0, sizeof(a));
		snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
		a[0].is_int = true;
		a[0].num = 1;
		snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
		snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
		snprintf(a[2].str, sizeof(a[2].str), "old.ts.12s");
		assert_int_equal(broker_queue_declare(ctx.amqp, "pre.1ms", true, a, 3,
		    err, sizeof(err)), 0);
	}
	now = clock_now_ms();
	t_s = now / 1000;
	/* Stamped with the timestamp: not before the end of its second + TTL. */
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "ts-%d", i);
		put("old.ts.12s", body, (uint64_t)t_s, 0, NULL, (t_s + 1) * 1000 + 12 * SEC);
	}
	put("pre.1ms", "ts-dead", (uint64_t)t_s, 0, NULL, (t_s + 1) * 1000 + 12 * SEC);
	sent[nsent - 1].queue = "old.ts.12s";	/* where it waits */
	/* Unstamped in a timestamp queue whose TTL (12 s) is over the bound (8 s). */
	put("old.ts.12s", "ts-none", 0, 0, NULL, 0);
	/* Header stamps, ms and RFC 3339 (2 s ago). */
	put("old.hdr.10s", "hdr-ms", 0, now - 1500, NULL, now - 1500 + 10 * SEC);
	old_time_format((now / 1000 - 2) * 1000, rfc, sizeof(rfc));
	put("old.hdr.10s", "hdr-rfc", 0, 0, rfc, (now / 1000 - 2) * 1000 + 10 * SEC);
	/* Unknown, TTL within the bound: the full TTL from the move. The
	 * move's clock is later than NOW: NOW + TTL is a floor. */
	put("old.unk.6s", "unk-short", 0, 0, NULL, now + 6 * SEC);
	/* Unknown over the bound: the queue is not touched. */
	put("old.unk.10m", "unk-long-1", 0, 0, NULL, 0);
	put("old.unk.10m", "unk-long-2", 0, 0, NULL, 0);
	/* Beyond the ladder's 127 s: left; one stamped 9 min 50 s ago goes. */
	put("old.long.10m", "long-1", (uint64_t)t_s, 0, NULL, 0);
	put("old.long.10m", "long-2", (uint64_t)t_s, 0, NULL, 0);
	put("old.long.10m", "long-old", (uint64_t)(t_s - 590), 0, NULL,
	    (t_s - 589) * 1000 + 10 * MIN);
	/* The pre-queue's message has moved on into old.ts.12s. */
	for (int64_t until = clock_mono_ms() + 30 * SEC; depth("old.ts.12s") < 5; ) {
		if (clock_mono_ms() > until)
			fail_msg("the dead-lettered message never reached old.ts.12s");
		usleep(50 * 1000);
	}

	r = move();
	assert_int_equal(count_of(queue_entry(r, "old.ts.12s"), "moved"), 4);
	assert_int_equal(count_of(queue_entry(r, "old.ts.12s"), "left"), 1);
	assert_int_equal(count_of(json_object_get(queue_entry(r, "old.ts.12s"),
	    "left_why"), "unknown_entry"), 1);
	assert_int_equal(count_of(queue_entry(r, "old.hdr.10s"), "moved"), 2);
	assert_int_equal(count_of(queue_entry(r, "old.unk.6s"), "moved"), 1);
	assert_int_equal(count_of(queue_entry(r, "old.unk.10m"), "skipped"), 2);
	assert_int_equal(count_of(queue_entry(r, "old.long.10m"), "moved"), 1);
	assert_int_equal(count_of(json_object_get(queue_entry(r, "old.long.10m"),
	    "left_why"), "too_long"), 2);
	assert_int_equal(count_of(json_object_get(r, "counts"), "moved"), 8);
	assert_true(json_is_true(json_object_get(r, "ok")));
	/* What stayed is still in its old queue, right away. */
	wait_depth("old.ts.12s", 1);
	assert_int_equal(depth("old.hdr.10s"), 0);
	assert_int_equal(depth("old.unk.6s"), 0);
	assert_int_equal(depth("old.unk.10m"), 2);
	wait_depth("old.long.10m", 2);
	/* The horizon left: the latest of what stayed (10 min from now),
	 * below the old one. */
	assert_true(count_of(r, "horizon_ms") >= now + 10 * MIN);
	json_decref(r);
	receive_all(60 * SEC);
}

/* A queue whose dead-letter target no destination reaches: the step
 * refuses, naming it and its target, and moves nothing anywhere. */
static void
test_refuses_a_target_without_destination(void **state)
{
	json_t *r = NULL;
	char err[2048];

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	old_queue("old.good.5s", 5 * SEC, DEST);
	old_queue("old.lost.5s", 5 * SEC, "nowhere.queue");
	put("old.good.5s", "good", 0, 0, NULL, 0);
	put("old.lost.5s", "lost", 0, 0, NULL, 0);
	ctx.flip_ms = clock_now_ms() - 10 * SEC;
	assert_int_equal(step_move_old(&ctx, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "old.lost.5s"));
	assert_non_null(strstr(err, "nowhere.queue"));
	assert_null(strstr(err, "old.good.5s"));
	assert_int_equal(depth("old.good.5s"), 1);
	assert_int_equal(depth("old.lost.5s"), 1);
	json_decref(r);
}

/* A publish the ladder returns (its level queues gone): the messages stay
 * in the old queue; once the ladder is back, they move. */
static void
test_returned_publish_leaves_the_message(void **state)
{
	char name[LADDER_NAME_MAX], err[1024];
	json_t *r;

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	old_queue("old.ret.20s", 20 * SEC, DEST);
	put("old.ret.20s", "ret-1", 0, 0, NULL, 0);
	put("old.ret.20s", "ret-2", 0, 0, NULL, 0);
	for (int k = 0; k < plan->ladder.levels; k++)
		assert_int_equal(broker_queue_delete(ctx.amqp, ladder_level_queue(
		    &plan->ladder, k, name, sizeof(name)), 0, NULL, err, sizeof(err)), 0);
	r = move();
	assert_int_equal(count_of(queue_entry(r, "old.ret.20s"), "moved"), 0);
	assert_int_equal(count_of(json_object_get(queue_entry(r, "old.ret.20s"),
	    "left_why"), "not_confirmed"), 2);
	wait_depth("old.ret.20s", 2);
	json_decref(r);
	assert_int_equal(step_declare_ladder(&ctx, &r, err, sizeof(err)), 0);
	json_decref(r);
	r = move();
	assert_int_equal(count_of(queue_entry(r, "old.ret.20s"), "moved"), 2);
	assert_int_equal(depth("old.ret.20s"), 0);
	json_decref(r);
}

/* Resumed with the state of a run killed after its pass finished one
 * queue: that queue is not passed again, its count is kept, the other
 * queue is moved; resumed before the stragglers' window is over, it asks
 * to be called again. */
static void
test_resumes_where_it_was(void **state)
{
	json_t *r = NULL, *st;
	char err[2048];

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	old_queue("old.a.5s", 5 * SEC, DEST);
	old_queue("old.b.5s", 5 * SEC, DEST);
	put("old.a.5s", "a-1", 0, 0, NULL, 0);
	put("old.b.5s", "b-1", 0, 0, NULL, clock_now_ms() + 5 * SEC);
	st = json_pack("{s:b,s:I,s:I,s:[{s:s,s:I,s:I,s:I,s:I}]}", "ok", 0,
	    "pass", (json_int_t)1, "pass_started_ms", (json_int_t)clock_now_ms(),
	    "queues", "name", "old.a.5s", "moved", (json_int_t)7, "left",
	    (json_int_t)0, "skipped", (json_int_t)0, "pass_done", (json_int_t)1);
	ctx.state = st;
	r = move();
	assert_int_equal(count_of(queue_entry(r, "old.a.5s"), "moved"), 7);
	assert_int_equal(count_of(queue_entry(r, "old.b.5s"), "moved"), 1);
	wait_depth("old.a.5s", 1);
	assert_int_equal(depth("old.b.5s"), 0);
	json_decref(r);
	sent[0].not_before_ms = clock_now_ms() + 5 * SEC;
	/* Within the stragglers' window: one pass, then "call me again". */
	ctx.flip_ms = clock_now_ms();
	ctx.state = NULL;
	ctx.again = false;
	assert_int_equal(step_move_old(&ctx, &r, err, sizeof(err)), 0);
	assert_true(ctx.again);
	assert_int_equal(count_of(r, "pass"), 2);
	assert_int_equal(depth("old.a.5s"), 0);
	/* Called again before the window is over (the engine does, each
	 * watch.interval): nothing yet, and "call me again", not a failure. */
	ctx.state = r;
	ctx.again = false;
	ctx.flip_ms = clock_now_ms();
	{
		json_t *r2 = NULL;

		assert_int_equal(step_move_old(&ctx, &r2, err, sizeof(err)), 0);
		assert_true(ctx.again);
		assert_int_equal(count_of(r2, "pass"), 2);
		json_decref(r2);
	}
	ctx.state = NULL;
	json_decref(st);
	json_decref(r);
	receive_all(30 * SEC);
}

/* ---- remove_old after move_old ---- */

/* Waits (60 s at most: the statistics lag) until old queue NAMES[i]'s
 * publish counter reads PUBLISH[i], for each of the N. */
static void
await_publishes(const char *const *names, const int64_t *publish, size_t n)
{
	int64_t until = clock_mono_ms() + 60 * SEC;
	char err[1024];

	for (;;) {
		struct old_counters oc = { 0 };
		size_t ok = 0;

		if (old_counters_read(&ctx, &oc, err, sizeof(err)) != 0)
			fail_msg("reading the counters: %s", err);
		for (size_t i = 0; i < n; i++) {
			const struct old_counter *k = old_counters_find(&oc, names[i]);

			ok += k != NULL && k->publish == publish[i];
		}
		old_counters_free(&oc);
		if (ok == n)
			return;
		if (clock_mono_ms() > until)
			fail_msg("the publish counters never reached what was published");
		usleep(200 * 1000);
	}
}

/* The watch's last sample, as its state has it, of queues NAMES[i] with
 * publish counters PUBLISH[i] (once the statistics show them). */
static json_t *
watch_sample(const char *const *names, const int64_t *publish, size_t n)
{
	json_t *qs = json_array();

	await_publishes(names, publish, n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(qs, json_pack("{s:s,s:I,s:I}", "name", names[i],
		    "publish", (json_int_t)publish[i], "messages", (json_int_t)depth(names[i])));
	return json_pack("{s:{s:I,s:o}}", "old_last", "at_ms",
	    (json_int_t)clock_now_ms(), "queues", qs);
}

/* measure_horizon's result for the queues there now. */
static json_t *
measure(void)
{
	json_t *m = NULL;
	char err[2048];

	if (step_measure_horizon(&ctx, &m, err, sizeof(err)) != 0)
		fail_msg("measure_horizon: %s", err);
	return m;
}

/* Runs remove_old (old_remove: the step less its flag check; a dry run
 * when DRY) with the move's result MOVED, MEASURED and the watch's
 * WATCHED, the watch's last entry being the flip unless the test set one
 * (nothing entered the old path after it). Returns its result; *RC its
 * return. */
static json_t *
remove_run(const json_t *measured, const json_t *moved, const json_t *watched,
    bool dry, int *rc)
{
	const struct old_remove_opts o = { .dry_run = dry };
	json_t *r = NULL;
	char err[4096];

	ctx.measured = measured;
	ctx.moved = moved;
	ctx.watched = watched;
	if (ctx.old_last_entry_ms == 0)
		ctx.old_last_entry_ms = ctx.flip_ms;
	*rc = old_remove(&ctx, &o, &r, err, sizeof(err));
	if (*rc != 0)
		fprintf(stderr, "remove_old: %s\n", err);
	return r;
}

static json_t *
remove_after(const json_t *measured, const json_t *moved, const json_t *watched,
    int *rc)
{
	return remove_run(measured, moved, watched, false, rc);
}

static const json_t *
removal_of(const json_t *r, const char *name)
{
	return entry_in(r, "entries", name);
}

static const char *
text_of(const json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(e, key));

	return s != NULL ? s : "";
}

static bool
queue_exists(const char *q)
{
	struct broker_queue_info qi = { 0 };
	char err[1024];
	int r = broker_queue_inspect(ctx.amqp, q, &qi, err, sizeof(err));

	if (r != 0 && r != BROKER_NOT_FOUND)
		fail_msg("inspecting %s: %s", q, err);
	return r == 0;
}

/* Waits until the clock is past MS (ceiling: 60 s past it). */
static void
await_clock(int64_t ms)
{
	int64_t ceiling = clock_mono_ms() + (ms - clock_now_ms()) + 60 * SEC;

	while (clock_now_ms() <= ms) {
		if (clock_mono_ms() > ceiling)
			fail_msg("the clock never passed %lld", (long long)ms);
		usleep(100 * 1000);
	}
}

/* A test plan (entry times from the timestamp) with one 10-minute old
 * queue Q holding N messages stamped AGO_S[i] seconds ago, measured, then
 * moved: *M measure_horizon's result, *R move_old's. */
static void
start_moved(const char *q, const int64_t *ago_s, size_t n, json_t **m, json_t **r)
{
	int64_t t_s;
	char body[64];

	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "1m");
	old_queue(q, 10 * MIN, DEST);
	t_s = clock_now_ms() / 1000;
	for (size_t i = 0; i < n; i++) {
		snprintf(body, sizeof(body), "%s-%zu", q, i);
		put(q, body, (uint64_t)(t_s - ago_s[i]), 0, NULL, 0);
	}
	*m = measure();
	*r = move();
}

/* The move left nothing in a 10-minute queue: remove_old deletes it once
 * the last pass + the allowance are over, long before last entry + its
 * TTL + allowance. */
static void
test_remove_after_move_deletes_an_emptied_queue(void **state)
{
	static const char *const names[] = { "old.ra.10m" };
	const int64_t pub[] = { 2 };
	json_t *m, *r, *w, *rr;
	const json_t *e;
	int64_t old_deadline;
	int rc;

	(void)state;
	start_moved("old.ra.10m", (const int64_t[]){ 590, 595 }, 2, &m, &r);
	assert_int_equal(count_of(queue_entry(r, "old.ra.10m"), "moved"), 2);
	assert_int_equal(count_of(queue_entry(r, "old.ra.10m"), "left"), 0);
	w = watch_sample(names, pub, 1);
	old_deadline = ctx.flip_ms + 10 * MIN + plan->watch.allowance_ms;
	await_clock(count_of(r, "pass_started_ms") + plan->watch.allowance_ms);
	/* The dry run (the step's preview) says so, and why. */
	rr = remove_run(m, r, w, true, &rc);
	e = removal_of(rr, "old.ra.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "would_remove");
	assert_non_null(strstr(text_of(e, "deadline_why"), "move_old's last pass"));
	assert_non_null(strstr(text_of(e, "reason"), "its deadline: "));
	assert_non_null(strstr(text_of(e, "reason"), "move_old's last pass"));
	assert_true(queue_exists("old.ra.10m"));
	json_decref(rr);
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.ra.10m");
	fprintf(stderr, "old.ra.10m: %s: %s\n", text_of(e, "outcome"),
	    text_of(e, "reason"));
	assert_true(clock_now_ms() < old_deadline);
	assert_string_equal(text_of(e, "outcome"), "removed");
	assert_int_equal(rc, 0);
	assert_false(queue_exists("old.ra.10m"));
	assert_true(count_of(e, "deadline_ms") == count_of(r, "pass_started_ms") +
	    plan->watch.allowance_ms);
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* The move left a message (its remaining delay beyond the ladder): the
 * queue is kept until its not-before + the allowance, and past that still
 * kept while it holds the message. */
static void
test_remove_after_move_keeps_what_was_left(void **state)
{
	static const char *const names[] = { "old.rl.10m" };
	const int64_t pub[] = { 2 };
	json_t *m, *r, *w, *rr, *rr2;
	const json_t *e;
	int64_t t_s = clock_now_ms() / 1000, until;
	int rc;

	(void)state;
	start_moved("old.rl.10m", (const int64_t[]){ 590, 0 }, 2, &m, &r);
	assert_int_equal(count_of(queue_entry(r, "old.rl.10m"), "moved"), 1);
	assert_int_equal(count_of(queue_entry(r, "old.rl.10m"), "left"), 1);
	until = count_of(queue_entry(r, "old.rl.10m"), "left_until_ms");
	assert_true(until >= (t_s + 1) * 1000 + 10 * MIN - 1000);
	wait_depth("old.rl.10m", 1);
	w = watch_sample(names, pub, 1);
	ctx.again = false;
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rl.10m");
	assert_int_equal(rc, 0);
	assert_true(ctx.again);		/* a wait time resolves: the step goes on */
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_int_equal(count_of(e, "deadline_ms"), until + plan->watch.allowance_ms);
	assert_non_null(strstr(text_of(e, "reason"), "not yet past its deadline"));
	assert_true(queue_exists("old.rl.10m"));
	assert_int_equal(depth("old.rl.10m"), 1);
	json_decref(rr);
	/* Past that deadline (the step's clock moved on), it still holds the
	 * message: it waits its TTL once more, and then, still holding it,
	 * is left for a person, with the step failing. */
	ctx.now_ms = until + plan->watch.allowance_ms + SEC;
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rl.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_non_null(strstr(text_of(e, "reason"), "holds 1 message"));
	ctx.state = rr;
	ctx.now_ms += 10 * MIN + plan->watch.allowance_ms + SEC;
	ctx.again = false;
	rr2 = remove_after(m, r, w, &rc);
	ctx.now_ms = 0;
	ctx.state = NULL;
	e = removal_of(rr2, "old.rl.10m");
	assert_int_not_equal(rc, 0);
	assert_false(ctx.again);
	assert_string_equal(text_of(e, "outcome"), "left");
	assert_non_null(strstr(text_of(e, "reason"), "after waiting its TTL once more"));
	assert_int_equal(depth("old.rl.10m"), 1);
	json_decref(rr2);
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* A publish into an emptied old queue after the move (and after the
 * watch's last sample) keeps it: its counter moved. And when the watch
 * saw something enter the old path after the last pass, the queue keeps
 * its old deadline (last entry + TTL + allowance), as the watch does. */
static void
test_remove_after_move_keeps_a_queue_published_into(void **state)
{
	static const char *const names[] = { "old.rp.10m" };
	int64_t pub[] = { 1 };
	json_t *m, *r, *w, *rr, *rr2;
	const json_t *e;
	struct broker_delivery d = { 0 };
	char err[1024];
	int rc;

	(void)state;
	start_moved("old.rp.10m", (const int64_t[]){ 590 }, 1, &m, &r);
	assert_int_equal(count_of(queue_entry(r, "old.rp.10m"), "left"), 0);
	w = watch_sample(names, pub, 1);
	await_clock(count_of(r, "pass_started_ms") + plan->watch.allowance_ms);
	/* After the watch's last sample: one message in and out. */
	put("old.rp.10m", "rp-late", (uint64_t)(clock_now_ms() / 1000), 0, NULL, 0);
	assert_int_equal(broker_get(ctx.amqp, "old.rp.10m", false, &d, err,
	    sizeof(err)), 0);
	broker_delivery_free(&d);
	pub[0] = 2;
	await_publishes(names, pub, 1);
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rp.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_non_null(strstr(text_of(e, "reason"), "since the watch's last sample"));
	assert_non_null(strstr(text_of(e, "reason"), "now + its TTL + allowance"));
	assert_true(queue_exists("old.rp.10m"));
	/* Published into again after that wait began: a producer still uses
	 * it, which a person must see to: left, the step fails. */
	ctx.state = rr;
	put("old.rp.10m", "rp-later", (uint64_t)(clock_now_ms() / 1000), 0, NULL, 0);
	assert_int_equal(broker_get(ctx.amqp, "old.rp.10m", false, &d, err,
	    sizeof(err)), 0);
	broker_delivery_free(&d);
	pub[0] = 3;
	await_publishes(names, pub, 1);
	rr2 = remove_after(m, r, w, &rc);
	ctx.state = NULL;
	e = removal_of(rr2, "old.rp.10m");
	assert_int_not_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "left");
	assert_non_null(strstr(text_of(e, "reason"), "switch it to the ladder"));
	assert_true(queue_exists("old.rp.10m"));
	json_decref(rr2);
	json_decref(rr);
	json_decref(w);
	/* The watch saw that publish (its last entry after the pass): the
	 * old deadline again. */
	pub[0] = 3;
	w = watch_sample(names, pub, 1);
	ctx.old_last_entry_ms = clock_now_ms();
	rr = remove_after(m, r, w, &rc);
	e = removal_of(rr, "old.rp.10m");
	assert_int_equal(rc, 0);
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_int_equal(count_of(e, "deadline_ms"), ctx.old_last_entry_ms + 10 * MIN +
	    plan->watch.allowance_ms);
	assert_non_null(strstr(text_of(e, "reason"), "not yet past its deadline"));
	assert_true(queue_exists("old.rp.10m"));
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* A queue the move emptied, fed by an old queue the move did not cover
 * (declared after it, holding a message): the feeder keeps its old
 * deadline and the fed queue waits for it. */
static void
test_remove_after_move_waits_for_the_feeder(void **state)
{
	static const char *const names[] = { "old.rx.10m", "old.ry.10m" };
	const int64_t pub[] = { 1, 1 };
	json_t *m, *r, *w, *rr;
	const json_t *e;
	int rc;

	(void)state;
	start_moved("old.rx.10m", (const int64_t[]){ 590 }, 1, &m, &r);
	assert_int_equal(count_of(queue_entry(r, "old.rx.10m"), "left"), 0);
	old_queue("old.ry.10m", 10 * MIN, "old.rx.10m");
	put("old.ry.10m", "ry-1", (uint64_t)(clock_now_ms() / 1000), 0, NULL, 0);
	json_decref(m);
	m = measure();
	w = watch_sample(names, pub, 2);
	await_clock(count_of(r, "pass_started_ms") + plan->watch.allowance_ms);
	rr = remove_after(m, r, w, &rc);
	assert_int_equal(rc, 0);
	e = removal_of(rr, "old.ry.10m");
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_true(queue_exists("old.ry.10m"));
	e = removal_of(rr, "old.rx.10m");
	fprintf(stderr, "old.rx.10m: %s: %s\n", text_of(e, "outcome"),
	    text_of(e, "reason"));
	assert_string_equal(text_of(e, "outcome"), "waiting");
	assert_non_null(strstr(text_of(e, "reason"), "old.ry.10m"));
	assert_true(queue_exists("old.rx.10m"));
	json_decref(rr);
	json_decref(w);
	json_decref(r);
	json_decref(m);
}

/* ---- killed and started again ---- */

/* The state a run killed while it passed queue Q had persisted: R (a
 * finished run's result) with Q's pass not done and the step not over.
 * The broker has given back what the killed run held unacked. */
static json_t *
killed_in(const json_t *r, const char *q)
{
	json_t *st = json_deep_copy(r);

	json_object_set_new(st, "ok", json_false());
	json_object_set_new((json_t *)queue_entry(st, q), "pass_done", json_integer(0));
	return st;
}

/* A run killed while its pass held a queue's unstamped messages (entry
 * unknown, the queue's TTL over the bound: left), started again 74 s
 * later: they come back redelivered, and each entered no later than the
 * pass that first saw it, so what the move leaves is due by that sighting
 * + TTL, not by the restart + TTL; the horizon stays below the old
 * path's own (never worse than not moving) and never before the truth. */
static void
test_kill_keeps_the_first_sighting_of_what_is_left(void **state)
{
	json_t *m, *r1, *r2, *st, *list;
	const json_t *e;
	int64_t put_at, t1;

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "5s");
	old_queue("old.a.60s", 60 * SEC, DEST);
	old_queue("old.k.20s", 20 * SEC, DEST);
	put_at = clock_now_ms();
	put("old.a.60s", "a-1", (uint64_t)(put_at / 1000), 0, NULL,
	    (put_at / 1000 + 1) * 1000 + 60 * SEC);
	put("old.k.20s", "k-1", 0, 0, NULL, 0);
	put("old.k.20s", "k-2", 0, 0, NULL, 0);
	m = measure();
	ctx.measured = m;
	t1 = ctx.now_ms = clock_now_ms();
	r1 = move();
	e = queue_entry(r1, "old.k.20s");
	assert_int_equal(count_of(e, "left"), 2);
	assert_int_equal(count_of(e, "left_until_ms"), t1 + 20 * SEC);
	wait_depth("old.k.20s", 2);
	/* Killed as the pass of old.k.20s had taken both (old.a.60s done). */
	st = killed_in(r1, "old.k.20s");
	/* One sighting each (a-1's entry is known), and what a damaged state
	 * might hold besides: an earlier sighting of the same key never wins,
	 * what is not a sighting is dropped. */
	list = json_object_get(st, "seen");
	assert_int_equal(json_array_size(list), 2);
	for (size_t k = 0; k < 2; k++)
		json_array_append_new(list, json_pack("[O,I]", json_array_get(
		    json_array_get(list, k), 0), (json_int_t)(t1 - 50 * SEC)));
	json_array_append_new(list, json_string("junk"));
	json_array_append_new(list, json_pack("[s,I]", "short", (json_int_t)t1));
	ctx.state = st;
	ctx.now_ms = t1 + 74 * SEC;
	r2 = move();
	ctx.state = NULL;
	ctx.now_ms = 0;
	e = queue_entry(r2, "old.k.20s");
	fprintf(stderr, "after the restart: left %lld until %+lld ms from the first "
	    "pass; horizon %+lld ms, old horizon %+lld ms, saved %lld ms\n",
	    (long long)count_of(e, "left"), (long long)(count_of(e,
	    "left_until_ms") - t1), (long long)(count_of(r2, "horizon_ms") - t1),
	    (long long)(count_of(r2, "old_horizon_ms") - t1),
	    (long long)count_of(r2, "saved_ms"));
	assert_int_equal(count_of(e, "left"), 2);
	assert_int_equal(count_of(json_object_get(e, "left_why"), "unknown_entry"), 2);
	/* Never before the truth: they entered before PUT_AT's moment ended. */
	assert_true(count_of(e, "left_until_ms") >= put_at + 20 * SEC);
	/* The first sighting's, not the restart's. */
	assert_int_equal(count_of(e, "left_until_ms"), t1 + 20 * SEC);
	assert_int_equal(count_of(r2, "horizon_ms"), t1 + 20 * SEC +
	    plan->watch.allowance_ms);
	assert_true(count_of(r2, "old_horizon_ms") > count_of(r2, "horizon_ms"));
	assert_true(count_of(r2, "saved_ms") >= 20 * SEC);
	wait_depth("old.k.20s", 2);
	json_decref(r2);
	json_decref(st);
	json_decref(r1);
	json_decref(m);
}

/* An unstamped message of a queue within the bound that could not go at
 * the first look (the ladder returned it) and goes at the next one, 3 s
 * later, after a restart: its not-before is the first look's + TTL, not
 * the second's, and it still arrives no earlier than it entered + TTL. */
static void
test_kill_keeps_the_first_sighting_of_what_moves(void **state)
{
	char name[LADDER_NAME_MAX], err[1024];
	const struct broker_header *h;
	struct broker_delivery d = { 0 };
	json_t *r1, *r2, *st;
	int64_t put_at, t1_end, until;

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: unknown }\n", "1m");
	old_queue("old.u.15s", 15 * SEC, DEST);
	put_at = clock_now_ms();
	put("old.u.15s", "u-1", 0, 0, NULL, put_at + 15 * SEC);
	for (int k = 0; k < plan->ladder.levels; k++)
		assert_int_equal(broker_queue_delete(ctx.amqp, ladder_level_queue(
		    &plan->ladder, k, name, sizeof(name)), 0, NULL, err, sizeof(err)), 0);
	r1 = move();
	t1_end = clock_now_ms();
	assert_int_equal(count_of(json_object_get(queue_entry(r1, "old.u.15s"),
	    "left_why"), "not_confirmed"), 1);
	wait_depth("old.u.15s", 1);
	assert_int_equal(step_declare_ladder(&ctx, &r2, err, sizeof(err)), 0);
	json_decref(r2);
	usleep(3000 * 1000);
	st = killed_in(r1, "old.u.15s");
	ctx.state = st;
	r2 = move();
	ctx.state = NULL;
	assert_int_equal(count_of(queue_entry(r2, "old.u.15s"), "moved"), 1);
	assert_int_equal(broker_consume(ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	until = clock_mono_ms() + 40 * SEC;
	while (broker_next(ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
		if (clock_mono_ms() > until)
			fail_msg("u-1 never arrived");
	assert_string_equal(d.body, "u-1");
	assert_true(clock_now_ms() >= put_at + 15 * SEC);
	h = broker_header_find(&d, "x-cutover-not-before");
	assert_non_null(h);
	fprintf(stderr, "u-1: not before %+lld ms from its publish; the first look "
	    "ended %+lld ms from it\n", (long long)(h->num - put_at),
	    (long long)(t1_end - put_at));
	assert_true(h->num >= put_at + 15 * SEC);
	assert_true(h->num <= t1_end + 15 * SEC);
	assert_int_equal(broker_ack(ctx.amqp, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	(void)broker_cancel(ctx.amqp, err, sizeof(err));
	json_decref(r2);
	json_decref(st);
	json_decref(r1);
}

/* A run killed after the ladder confirmed a batch and before the batch
 * was acked in its old queue (crash point move_old.confirmed, in a child
 * process): the broker gives the batch back and the run started again
 * (with the state the killed one persisted before it published: the
 * batch in flight) moves it a second time. Its result says how many may
 * be duplicated, and both copies of each message carry the same
 * x-cutover-move-id, so a consumer can drop the second; neither is early. */
static void
test_kill_after_confirm_counts_and_marks_duplicates(void **state)
{
	const char *ids[3] = { NULL, NULL, NULL };
	char body[32], err[1024];
	int64_t now = clock_now_ms(), t_s = now / 1000, until;
	int seen[3] = { 0, 0, 0 }, got = 0, status = 0;
	json_t *st, *r;
	pid_t pid;

	(void)state;
	nsent = 0;
	start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "1m");
	old_queue("old.d.8s", 8 * SEC, DEST);
	for (int i = 0; i < 3; i++) {
		snprintf(body, sizeof(body), "d-%d", i);
		put("old.d.8s", body, (uint64_t)t_s, 0, NULL, (t_s + 1) * 1000 + 8 * SEC);
	}
	if ((pid = fork()) == 0) {
		struct step_ctx cc;
		json_t *cr = NULL;
		char e[1024];

		memset(&cc, 0, sizeof(cc));
		setenv("CUTOVER_FAULT", "crash:move_old.confirmed", 1);
		if (step_ctx_open(&cc, plan, e, sizeof(e)) != 0)
			_exit(2);
		cc.flip_ms = now - 10 * SEC;
		(void)step_move_old(&cc, &cr, e, sizeof(e));
		_exit(3);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	wait_depth("old.d.8s", 3);
	st = json_pack("{s:b,s:I,s:I,s:[{s:s,s:I,s:I,s:I,s:I,s:I}]}", "ok", 0,
	    "pass", (json_int_t)1, "pass_started_ms", (json_int_t)now, "queues",
	    "name", "old.d.8s", "moved", (json_int_t)0, "left", (json_int_t)0,
	    "skipped", (json_int_t)0, "pass_done", (json_int_t)0, "in_flight",
	    (json_int_t)3);
	ctx.state = st;
	r = move();
	ctx.state = NULL;
	assert_int_equal(count_of(queue_entry(r, "old.d.8s"), "moved"), 3);
	assert_int_equal(count_of(queue_entry(r, "old.d.8s"), "may_duplicate"), 3);
	assert_int_equal(count_of(json_object_get(r, "counts"), "may_duplicate"), 3);
	assert_int_equal(depth("old.d.8s"), 0);
	/* Each message twice, with one id. */
	assert_int_equal(broker_consume(ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	until = clock_mono_ms() + 40 * SEC;
	while (got < 6 && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		const struct broker_header *h;
		int i;

		if (broker_next(ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		assert_true(clock_now_ms() >= (t_s + 1) * 1000 + 8 * SEC);
		assert_true(sscanf(d.body, "d-%d", &i) == 1 && i >= 0 && i < 3);
		h = broker_header_find(&d, "x-cutover-move-id");
		if (h == NULL || h->str == NULL || h->str[0] == '\0')
			fail_msg("'%s' arrived without an x-cutover-move-id", d.body);
		if (ids[i] == NULL)
			ids[i] = strdup(h->str);
		else
			assert_string_equal(ids[i], h->str);
		for (int k = 0; k < 3; k++)
			if (k != i && ids[k] != NULL)
				assert_string_not_equal(ids[k], h->str);
		seen[i]++;
		got++;
		assert_int_equal(broker_ack(ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(ctx.amqp, err, sizeof(err));
	fprintf(stderr, "duplicates: %d deliveries of 3 messages (%d, %d, %d)\n", got,
	    seen[0], seen[1], seen[2]);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(seen[i], 2);
		free((void *)ids[i]);
	}
	json_decref(r);
	json_decref(st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_moves_never_early_and_leaves_the_rest,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_refuses_a_target_without_destination,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_returned_publish_leaves_the_message,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_resumes_where_it_was, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(
		    test_kill_keeps_the_first_sighting_of_what_is_left, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_kill_keeps_the_first_sighting_of_what_moves, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_kill_after_confirm_counts_and_marks_duplicates, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_deletes_an_emptied_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_keeps_what_was_left, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_keeps_a_queue_published_into, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_remove_after_move_waits_for_the_feeder, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
