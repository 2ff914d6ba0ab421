/* test_library_shapes (integration): old.library's presets against the
 * topologies the libraries declare, on a real RabbitMQ node
 * (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password
 * env:CUTOVER_TEST_PASSWORD). Each test declares exactly what one library
 * declares — its exchanges, its destination or consumer queues and their
 * bindings, and delay queues with the names and arguments its source
 * builds — and publishes into them as it does (the clients themselves are
 * not packaged here: Symfony Messenger, the Laravel driver, php-enqueue,
 * EasyNetQ and Machinery are imitated from their source). The preset's
 * selection takes exactly the delay queues, never the library's other
 * queues nor the ladder's (and measure_horizon measures Symfony's three,
 * their expiry accepted as it is); move_old with the preset's entry rules moves
 * each message to the destination the delay queue dead-letters to, never
 * before the moment the test itself puts at its publish + the queue's
 * TTL; what the rules cannot date within the bound stays. A Symfony retry
 * message whose timestamp is its first publish, an hour ago, is not moved
 * by that timestamp, and a plan that asks for it is refused. Where the
 * node overwrites arrival stamps (RabbitMQ 3.12+ with the interceptor),
 * the last test moves by the broker's stamp; elsewhere it is skipped. Each
 * test has a vhost of its own, deleted at teardown whatever happens. */
#include "itest_move_old.h"

#include "arrival_stamp.h"
#include "itest_plan.h"
#include "step.h"

/* Loads a plan for LIBRARY (1 s ladder of 7 levels: up to 127 s) with
 * DESTS as ladder.destinations and MOVE_EXTRA appended to its move_old
 * section (no entry: the library's), and opens its context. */
static void
load(const char *library, const char *dests, const char *move_extra)
{
	struct itest_plan b;

	itest_plan_begin(&b, "itest-lib", imove_vhost_url());
	itest_plan_addf(&b,
	    "old:\n"
	    "  library: %s\n"
	    "ladder:\n"
	    "  prefix: itlib\n"
	    "  unit: 1s\n"
	    "  levels: 7\n"
	    "  queue_type: classic\n"
	    "  destinations: %s\n"
	    "move_old:\n"
	    "  rate: 1000/s\n"
	    "  unknown_entry_max_lateness: 8s\n"
	    "  stragglers: 1s\n%s"
	    "watch:\n"
	    "  allowance: 2s\n"
	    "steps: [measure_horizon, declare_ladder]\n", library, dests, move_extra);
	imove_plan = itest_plan_load("itest.yaml", b.text);
	itest_ctx_open(&imove_ctx, imove_plan);
}

/* Declares the ladder once the library's topology is there. */
static void
declare_ladder(void)
{
	json_t *r = NULL;
	char err[1024];

	if (step_declare_ladder(&imove_ctx, &r, err, sizeof(err)) != 0)
		fail_msg("declare_ladder: %s", err);
	json_decref(r);
}

static void
exchange(const char *name, const char *type)
{
	char err[1024];

	if (broker_exchange_declare(imove_ctx.amqp, name, type, true, NULL, 0, err,
	    sizeof(err)) != 0)
		fail_msg("declaring exchange %s: %s", name, err);
}

static void
bind(const char *queue, const char *ex, const char *key)
{
	char err[1024];

	if (broker_queue_bind(imove_ctx.amqp, queue, ex, key, err, sizeof(err)) != 0)
		fail_msg("binding %s to %s: %s", queue, ex, err);
}

/* Declares durable queue NAME as its library does: with TTL_MS (0: no
 * arguments at all), x-expires EXPIRES_MS (0: none), dead-lettering to
 * DLX with key DLK (NULL: no x-dead-letter-routing-key). */
static void
queue(const char *name, int64_t ttl_ms, int64_t expires_ms, const char *dlx,
    const char *dlk)
{
	struct topology_arg a[4] = { 0 };
	size_t n = 0;
	char err[1024];

	if (ttl_ms > 0) {
		itest_arg_int(&a[n++], "x-message-ttl", ttl_ms);
		itest_arg_str(&a[n++], "x-dead-letter-exchange", dlx);
	}
	if (dlk != NULL)
		itest_arg_str(&a[n++], "x-dead-letter-routing-key", dlk);
	if (expires_ms > 0)
		itest_arg_int(&a[n++], "x-expires", expires_ms);
	if (broker_queue_declare(imove_ctx.amqp, name, true, a, n, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", name, err);
}

/* One message the test published, and what it expects of it. */
struct lib_sent {
	char body[64];
	const char *queue;	/* the delay queue it waits in */
	const char *dest;	/* the queue it must reach */
	int64_t floor_ms;	/* its publish + the TTL: never before; 0: stays */
	bool arrived;
};

static struct lib_sent sent[32];
static size_t nsent;

/* Publishes BODY into delay queue Q as its library does: to exchange EX
 * with routing key KEY, with timestamp TS_S (0: none; STAMP_NOW: time()
 * at this publish, as Symfony stamps it: a stamp taken earlier would
 * make a message look older than it is, and its move early by the
 * test's own clock). TTL_MS is the queue's, DEST where the message must
 * arrive; STAYS: it must not move. */
#define STAMP_NOW	UINT64_MAX

static void
put(const char *ex, const char *key, const char *q, const char *body, uint64_t ts_s,
    int64_t ttl_ms, const char *dest, bool stays)
{
	struct broker_field h = { .key = "x-app", .str = body };
	struct broker_message m = { 0 };
	int64_t at = clock_now_ms();
	char err[1024];

	m.exchange = ex;
	m.routing_key = key;
	m.body = body;
	m.len = strlen(body);
	m.headers = &h;
	m.nheaders = 1;
	m.mandatory = true;
	m.timestamp = ts_s == STAMP_NOW ? (uint64_t)(at / 1000) : ts_s;
	if (broker_publish(imove_ctx.amqp, &m, 10000, err, sizeof(err)) != 0)
		fail_msg("publishing %s into %s: %s", body, q, err);
	assert_true(nsent < sizeof(sent) / sizeof(sent[0]));
	snprintf(sent[nsent].body, sizeof(sent[0].body), "%s", body);
	sent[nsent].queue = q;
	sent[nsent].dest = dest;
	sent[nsent].floor_ms = stays ? 0 : at + ttl_ms;
	sent[nsent++].arrived = false;
}

/* The names old_select takes, joined by ' ' in name order. */
static void
selected(char *out, size_t outlen)
{
	struct old_selection sel = { 0 };
	char err[1024];
	size_t off = 0;

	if (old_select(&imove_ctx, &sel, err, sizeof(err)) != 0)
		fail_msg("old_select: %s", err);
	out[0] = '\0';
	for (size_t i = 0; i < sel.n && off < outlen; i++)
		off += (size_t)snprintf(out + off, outlen - off, "%s%s", i ? " " : "",
		    sel.v[i].q->name);
	old_selection_free(&sel);
}

/* Whether the node overwrites arrival stamps, so that move_old trusts
 * them (RabbitMQ 3.12+ configured so; never 3.10). */
static bool
stamps_trusted(void)
{
	enum arrival_stamping st = ARRIVAL_OFF;
	char err[1024];

	if (arrival_probe(imove_ctx.amqp, "itest", &st, err, sizeof(err)) != 0)
		fail_msg("arrival_probe: %s", err);
	return st == ARRIVAL_OVERWRITE;
}

/* Takes from destination DEST, within 60 s, every message expected there,
 * each moved (x-cutover-moved-from its delay queue) and not before its
 * floor. */
static void
receive(const char *dest)
{
	int64_t until = clock_mono_ms() + 60 * SEC;
	size_t want = 0, got = 0;
	char err[1024];

	for (size_t i = 0; i < nsent; i++)
		want += sent[i].floor_ms != 0 && strcmp(sent[i].dest, dest) == 0;
	while (got < want && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		const struct broker_header *h;
		int64_t at = clock_now_ms();
		size_t i;
		int rc = broker_get(imove_ctx.amqp, dest, false, &d, err, sizeof(err));

		if (rc == BROKER_EMPTY) {
			usleep(100 * 1000);
			continue;
		}
		assert_int_equal(rc, 0);
		for (i = 0; i < nsent && strcmp(sent[i].body, d.body) != 0; i++)
			;
		if (i == nsent || sent[i].arrived || sent[i].floor_ms == 0 ||
		    strcmp(sent[i].dest, dest) != 0)
			fail_msg("message '%s' reached %s and was not expected there (or "
			    "twice)", d.body, dest);
		if (at < sent[i].floor_ms)
			fail_msg("message '%s' from %s reached %s %lld ms early", d.body,
			    sent[i].queue, dest, (long long)(sent[i].floor_ms - at));
		h = broker_header_find(&d, "x-cutover-moved-from");
		if (h == NULL || strcmp(h->str, sent[i].queue) != 0)
			fail_msg("message '%s' reached %s without being moved from %s",
			    d.body, dest, sent[i].queue);
		sent[i].arrived = true;
		got++;
		broker_delivery_free(&d);
	}
	for (size_t i = 0; i < nsent; i++)
		if (sent[i].floor_ms != 0 && strcmp(sent[i].dest, dest) == 0 &&
		    !sent[i].arrived)
			fail_msg("message '%s' from %s never reached %s", sent[i].body,
			    sent[i].queue, dest);
}

/* Symfony Messenger's AMQP transport (Connection.php): the transport's
 * fanout exchange "messages" and its queue "messages", the delay exchange
 * "delays" (direct), a delay queue per delay and routing key bound to it
 * by its own name, x-expires = TTL + 10 s; retries through
 * "_retry" queues that dead-letter to the default exchange with the
 * queue's name; `timestamp` = time() at each publish, a retry keeping
 * the first. */
static void
test_symfony(void **state)
{
	char names[1024];
	int64_t t_s = clock_now_ms() / 1000;
	json_t *r;

	(void)state;
	nsent = 0;
	load("symfony", "[messages]", "");
	exchange("messages", "fanout");
	queue("messages", 0, 0, NULL, NULL);
	bind("messages", "messages", "");
	queue("failed", 0, 0, NULL, NULL);
	exchange("delays", "direct");
	queue("delay_messages__5000_delay", 5000, 15000, "messages", "");
	bind("delay_messages__5000_delay", "delays", "delay_messages__5000_delay");
	queue("delay_messages__600000_delay", 600000, 610000, "messages", "");
	bind("delay_messages__600000_delay", "delays", "delay_messages__600000_delay");
	queue("delay_messages__3000_retry", 3000, 13000, "", "messages");
	bind("delay_messages__3000_retry", "delays", "delay_messages__3000_retry");
	declare_ladder();

	selected(names, sizeof(names));
	assert_string_equal(names, "delay_messages__3000_retry "
	    "delay_messages__5000_delay delay_messages__600000_delay");
	/* measure_horizon takes the same three, their expiry (TTL + 10 s,
	 * classic) accepted without old.allow_expiring. */
	{
		json_t *m = NULL, *q;
		char err[2048];
		size_t i, n = 0;

		if (step_measure_horizon(&imove_ctx, &m, err, sizeof(err)) != 0)
			fail_msg("measure_horizon: %s", err);
		json_array_foreach(json_object_get(m, "queues"), i, q) {
			assert_non_null(strstr(names, json_string_value(json_object_get(q,
			    "name"))));
			n++;
		}
		assert_int_equal(n, 3);
		json_decref(m);
	}

	put("delays", "delay_messages__5000_delay", "delay_messages__5000_delay",
	    "sf-delay-1", STAMP_NOW, 5000, "messages", false);
	put("delays", "delay_messages__5000_delay", "delay_messages__5000_delay",
	    "sf-delay-2", STAMP_NOW, 5000, "messages", false);
	/* Ten minutes, stamped now: beyond the 127 s ladder, it stays. */
	put("delays", "delay_messages__600000_delay", "delay_messages__600000_delay",
	    "sf-long", STAMP_NOW, 600000, "messages", true);
	/* A retry keeps its first publish's timestamp, an hour ago: read as
	 * an entry time it would go at once, 3 s early. */
	put("delays", "delay_messages__3000_retry", "delay_messages__3000_retry",
	    "sf-retry", (uint64_t)(t_s - 3600), 3000, "messages", false);

	r = imove_move();
	/* The broker's own stamp first where it is trusted. */
	assert_string_equal(json_string_value(json_object_get(imove_queue_entry(r,
	    "delay_messages__5000_delay"), "from")), stamps_trusted() ? "arrival" :
	    "timestamp");
	assert_int_equal(imove_count_of(imove_queue_entry(r, "delay_messages__5000_delay"),
	    "moved"), 2);
	assert_int_equal(imove_count_of(json_object_get(imove_queue_entry(r,
	    "delay_messages__600000_delay"), "left_why"), "too_long"), 1);
	/* No arrival stamp this node overwrites (3.10 has none): unknown,
	 * moved with the whole TTL (3 s, within the plan's 8 s). */
	if (strcmp(json_string_value(json_object_get(r, "arrival_stamps")),
	    "overwrite") != 0)
		assert_string_equal(json_string_value(json_object_get(imove_queue_entry(r,
		    "delay_messages__3000_retry"), "from")), "unknown");
	assert_int_equal(imove_count_of(imove_queue_entry(r, "delay_messages__3000_retry"),
	    "moved"), 1);
	json_decref(r);
	receive("messages");
	assert_int_equal(imove_depth("delay_messages__600000_delay"), 1);
	assert_int_equal(imove_depth("failed"), 0);
}

/* A plan that asks for the timestamp on Symfony's retry queues is refused
 * before anything moves. */
static void
test_symfony_retry_timestamp_refused(void **state)
{
	json_t *r = NULL;
	char err[2048];

	(void)state;
	nsent = 0;
	load("symfony", "[messages]", "  entry:\n    - { queues: { match: "
	    "'^delay_' }, from: timestamp }\n");
	exchange("messages", "fanout");
	queue("messages", 0, 0, NULL, NULL);
	bind("messages", "messages", "");
	exchange("delays", "direct");
	queue("delay_messages__3000_retry", 3000, 13000, "", "messages");
	bind("delay_messages__3000_retry", "delays", "delay_messages__3000_retry");
	declare_ladder();
	put("delays", "delay_messages__3000_retry", "delay_messages__3000_retry",
	    "sf-retry", (uint64_t)(clock_now_ms() / 1000 - 3600), 3000, "messages", true);
	imove_ctx.flip_ms = clock_now_ms() - 10 * SEC;
	assert_int_equal(step_move_old(&imove_ctx, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "delay_messages__3000_retry"));
	assert_non_null(strstr(err, "keep the timestamp of an earlier publish"));
	assert_int_equal(imove_depth("delay_messages__3000_retry"), 1);
	json_decref(r);
}

/* vladimir-yuldashev/laravel-queue-rabbitmq (RabbitMQQueue::laterRaw):
 * the job queue "default", a delay queue "<queue>.delay.<ms>" published
 * to through the default exchange, dead-lettering to the exchange (none:
 * '') with the queue's name, x-expires = 2 x TTL, no timestamp. */
static void
test_laravel(void **state)
{
	char names[1024];
	bool dated;
	json_t *r;

	(void)state;
	nsent = 0;
	load("laravel", "[default, emails]", "");
	dated = stamps_trusted();
	queue("default", 0, 0, NULL, NULL);
	queue("emails", 0, 0, NULL, NULL);
	queue("default.delay.5000", 5000, 10000, "", "default");
	queue("emails.delay.4000", 4000, 8000, "", "emails");
	queue("emails.delay.20000", 20000, 40000, "", "emails");
	declare_ladder();

	selected(names, sizeof(names));
	assert_string_equal(names, "default.delay.5000 emails.delay.20000 "
	    "emails.delay.4000");
	put("", "default.delay.5000", "default.delay.5000", "lv-1", 0, 5000,
	    "default", false);
	put("", "emails.delay.4000", "emails.delay.4000", "lv-2", 0, 4000,
	    "emails", false);
	/* 20 s, over the plan's 8 s bound: left undated, moved by a trusted
	 * arrival stamp. */
	put("", "emails.delay.20000", "emails.delay.20000", "lv-long", 0, 20000,
	    "emails", !dated);
	r = imove_move();
	assert_int_equal(imove_count_of(imove_queue_entry(r, "default.delay.5000"), "moved"), 1);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "emails.delay.4000"), "moved"), 1);
	assert_int_equal(imove_count_of(imove_queue_entry(r, "emails.delay.20000"),
	    dated ? "moved" : "skipped"), 1);
	json_decref(r);
	receive("default");
	receive("emails");
	assert_int_equal(imove_depth("emails.delay.20000"), dated ? 0 : 1);
}

/* A library whose delay queues all move within the plan's bound: the
 * topology it declares (exchanges first, then queues, then bindings), the
 * names the preset must select, the messages it publishes (no timestamp)
 * and the destinations each must reach. */
struct lib_shape {
	const char *library, *dests;	/* load()'s */
	struct { const char *name, *type; } exchanges[4];
	struct {
		const char *name;
		int64_t ttl_ms, expires_ms;	/* queue()'s */
		const char *dlx, *dlk;
	} queues[4];
	struct { const char *queue, *exchange, *key; } binds[4];
	const char *selected;		/* as selected() joins them */
	struct {
		const char *exchange, *key, *queue, *body;
		int64_t ttl_ms;
		const char *dest;
	} puts[2];
	/* move_old's "destination" for puts[0].queue; NULL: not looked at. */
	const char *destination_says;
	const char *receive[2];		/* NULL: no second */
};

/* Declares SHAPE's topology, the ladder beside it, checks the selection,
 * publishes its messages, moves them and takes each from its destination,
 * not before its time; a failure names the library and the object. */
static void
run_shape(const struct lib_shape *shape)
{
	char names[1024];
	json_t *r;

	nsent = 0;
	load(shape->library, shape->dests, "");
	for (size_t i = 0; i < 4 && shape->exchanges[i].name != NULL; i++)
		exchange(shape->exchanges[i].name, shape->exchanges[i].type);
	for (size_t i = 0; i < 4 && shape->queues[i].name != NULL; i++)
		queue(shape->queues[i].name, shape->queues[i].ttl_ms,
		    shape->queues[i].expires_ms, shape->queues[i].dlx, shape->queues[i].dlk);
	for (size_t i = 0; i < 4 && shape->binds[i].queue != NULL; i++)
		bind(shape->binds[i].queue, shape->binds[i].exchange, shape->binds[i].key);
	declare_ladder();

	selected(names, sizeof(names));
	if (strcmp(names, shape->selected) != 0)
		fail_msg("%s: the preset selects '%s', not '%s'", shape->library, names,
		    shape->selected);
	for (size_t i = 0; i < 2 && shape->puts[i].body != NULL; i++)
		put(shape->puts[i].exchange, shape->puts[i].key, shape->puts[i].queue,
		    shape->puts[i].body, 0, shape->puts[i].ttl_ms, shape->puts[i].dest, false);
	r = imove_move();
	if (imove_count_of(json_object_get(r, "counts"), "moved") != (int64_t)nsent)
		fail_msg("%s: move_old moved %lld, not the %zu sent", shape->library,
		    (long long)imove_count_of(json_object_get(r, "counts"), "moved"), nsent);
	if (shape->destination_says != NULL)
		assert_string_equal(json_string_value(json_object_get(imove_queue_entry(r,
		    shape->puts[0].queue), "destination")), shape->destination_says);
	json_decref(r);
	for (size_t i = 0; i < 2 && shape->receive[i] != NULL; i++)
		receive(shape->receive[i]);
}

/* php-enqueue (RabbitMqDlxDelayStrategy): a topic's delay queue
 * "enqueue.<topic>.<key>.<ms>.x.delay" dead-lettering to the topic's
 * exchange with the key, and a queue's "enqueue.<queue>.<ms>.delayed"
 * dead-lettering to the default exchange with the queue's name; no
 * expiry; sent to through the default exchange. */
static const struct lib_shape enqueue = {
	"enqueue", "[enqueue.app.orders, enqueue.app.default]",
	.exchanges = { { "orders", "topic" } },
	.queues = {
		{ "enqueue.app.orders", 0, 0, NULL, NULL },
		{ "enqueue.app.default", 0, 0, NULL, NULL },
		{ "enqueue.orders.orders.created.5000.x.delay", 5000, 0, "orders",
		  "orders.created" },
		{ "enqueue.enqueue.app.default.4000.delayed", 4000, 0, "",
		  "enqueue.app.default" },
	},
	.binds = { { "enqueue.app.orders", "orders", "orders.created" } },
	.selected = "enqueue.enqueue.app.default.4000.delayed "
	    "enqueue.orders.orders.created.5000.x.delay",
	.puts = {
		{ "", "enqueue.orders.orders.created.5000.x.delay",
		  "enqueue.orders.orders.created.5000.x.delay", "eq-topic", 5000,
		  "enqueue.app.orders" },
		{ "", "enqueue.enqueue.app.default.4000.delayed",
		  "enqueue.enqueue.app.default.4000.delayed", "eq-queue", 4000,
		  "enqueue.app.default" },
	},
	.receive = { "enqueue.app.orders", "enqueue.app.default" },
};

/* EasyNetQ (DeadLetterExchangeAndMessageTtlScheduler): the message type's
 * topic exchange and a subscriber queue bound with '#'; per delay a
 * topic exchange "<type's exchange>_<dd_hh_mm_ss>" and a queue
 * "<type name>_<dd_hh_mm_ss>" bound to it with the topic, dead-lettering
 * to the type's exchange without a key (each message keeps its own: the
 * topic, '' by default), no expiry. */
#define ENQ_TYPE "Shop.Messages.OrderPlaced, Shop.Messages"
static const struct lib_shape easynetq = {
	"easynetq", "[{ key: billing, queue: '" ENQ_TYPE "_billing' }]",
	.exchanges = {
		{ ENQ_TYPE, "topic" },
		{ ENQ_TYPE "_00_00_00_05", "topic" },
		{ ENQ_TYPE "_00_00_00_04", "topic" },
	},
	.queues = {
		{ ENQ_TYPE "_billing", 0, 0, NULL, NULL },
		{ ENQ_TYPE "_00_00_00_05", 5000, 0, ENQ_TYPE, NULL },
		{ ENQ_TYPE "_00_00_00_04", 4000, 0, ENQ_TYPE, NULL },
	},
	.binds = {
		{ ENQ_TYPE "_billing", ENQ_TYPE, "#" },
		{ ENQ_TYPE "_00_00_00_05", ENQ_TYPE "_00_00_00_05", "" },
		{ ENQ_TYPE "_00_00_00_04", ENQ_TYPE "_00_00_00_04", "" },
	},
	.selected = ENQ_TYPE "_00_00_00_04 " ENQ_TYPE "_00_00_00_05",
	.puts = {
		{ ENQ_TYPE "_00_00_00_05", "", ENQ_TYPE "_00_00_00_05", "en-5s", 5000,
		  ENQ_TYPE "_billing" },
		{ ENQ_TYPE "_00_00_00_04", "", ENQ_TYPE "_00_00_00_04", "en-4s", 4000,
		  ENQ_TYPE "_billing" },
	},
	.destination_says = "(each message's routing key)",
	.receive = { ENQ_TYPE "_billing" },
};

/* Machinery (brokers/amqp delay): the configured exchange (direct) and
 * its task queue bound with the routing key; a delay queue
 * "delay.<ms>.<exchange>.<key>" bound to the same exchange by its own
 * name, dead-lettering to it with the task's key, x-expires = 2 x TTL,
 * no timestamp. */
#define MCH_DELAY "delay.5000.machinery_exchange.machinery_task"
static const struct lib_shape machinery = {
	"machinery", "[machinery_tasks]",
	.exchanges = { { "machinery_exchange", "direct" } },
	.queues = {
		{ "machinery_tasks", 0, 0, NULL, NULL },
		{ MCH_DELAY, 5000, 10000, "machinery_exchange", "machinery_task" },
	},
	.binds = {
		{ "machinery_tasks", "machinery_exchange", "machinery_task" },
		{ MCH_DELAY, "machinery_exchange", MCH_DELAY },
	},
	.selected = MCH_DELAY,
	.puts = {
		{ "machinery_exchange", MCH_DELAY, MCH_DELAY, "mc-1", 5000, "machinery_tasks" },
		{ "machinery_exchange", MCH_DELAY, MCH_DELAY, "mc-2", 5000, "machinery_tasks" },
	},
	.receive = { "machinery_tasks" },
};

static void
test_enqueue(void **state)
{
	(void)state;
	run_shape(&enqueue);
}

static void
test_easynetq(void **state)
{
	(void)state;
	run_shape(&easynetq);
}

static void
test_machinery(void **state)
{
	(void)state;
	run_shape(&machinery);
}

/* Where the node overwrites arrival stamps: a Laravel delay queue of 12 s
 * (over the plan's 8 s bound for an unknown entry) moves by the broker's
 * stamp; its message, published 2 s before the move, arrives no earlier
 * than its publish + 12 s. */
static void
test_arrival_stamp_moves(void **state)
{
	json_t *r;

	(void)state;
	nsent = 0;
	load("laravel", "[default]", "");
	if (!stamps_trusted()) {
		print_message("this node does not overwrite arrival stamps; not "
		    "tested here\n");
		skip();
	}
	queue("default", 0, 0, NULL, NULL);
	queue("default.delay.12000", 12000, 24000, "", "default");
	declare_ladder();
	put("", "default.delay.12000", "default.delay.12000", "ar-1", 0, 12000,
	    "default", false);
	sleep(2);
	r = imove_move();
	assert_string_equal(json_string_value(json_object_get(r, "arrival_stamps")),
	    "overwrite");
	assert_string_equal(json_string_value(json_object_get(imove_queue_entry(r,
	    "default.delay.12000"), "from")), "arrival");
	assert_int_equal(imove_count_of(imove_queue_entry(r, "default.delay.12000"), "moved"), 1);
	json_decref(r);
	receive("default");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_symfony, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_symfony_retry_timestamp_refused,
		    imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_laravel, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_enqueue, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_easynetq, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_machinery, imove_setup, imove_teardown),
		cmocka_unit_test_setup_teardown(test_arrival_stamp_moves,
		    imove_setup, imove_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
