/* test_watch_probe (integration): the watch's probes through the ladder:
 * one lost, one late and one early (under a policy that shortens the
 * levels) each raise the probe alert; a probe queue of an earlier
 * version's shape is replaced, and read without an alert. */
#include "itest_watch.h"

/* Takes the next message of probe queue Q that is the watch's own probe
 * and not a level probe (x-cutover-probe-level), within 3 s, into *D
 * (unacknowledged); level probes read on the way are taken out. Returns
 * broker_get's last answer. */
static int
get_path_probe(struct fixture *f, const char *q, struct broker_delivery *d)
{
	int64_t until = now_ms() + 3000;
	char err[512];
	int r;

	for (;;) {
		memset(d, 0, sizeof(*d));
		r = broker_get(f->c.amqp, q, true, d, err, sizeof(err));
		if (r == 0 && broker_header_find(d, "x-cutover-probe-level") != NULL) {
			(void)broker_ack(f->c.amqp, d, err, sizeof(err));
			broker_delivery_free(d);
			continue;
		}
		if (r != BROKER_EMPTY || now_ms() >= until)
			return r;
		iwatch_sleep_ms(10);
	}
}

/* A probe that never reaches the watch (taken by someone else) is called
 * lost once its bound has passed. */
static void
test_lost_probe_raises_probe_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct broker_delivery d;
	struct publish_info pi;
	char q[LADDER_NAME_MAX], err[2048];
	int r;

	iwatch_start(f, "lost", 1, 0, NULL);
	iwatch_flip_long_ago(f);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	assert_int_equal(json_array_size(json_object_get(iwatch_obj(f->state, "probe"),
	    "outstanding")), 1);
	/* Steal it as it arrives. */
	snprintf(q, sizeof(q), "cutover.probe.%s", f->p->name);
	r = get_path_probe(f, q, &d);
	assert_int_equal(r, 0);
	(void)broker_ack(f->c.amqp, &d, err, sizeof(err));
	assert_int_equal(publish_read(&d, &pi, err, sizeof(err)), 0);
	assert_string_equal(pi.purpose, "probe");
	assert_int_equal(pi.seq, 0);
	broker_delivery_free(&d);
	iwatch_tick_until_alert(f, "probe", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "probe #0"));
	assert_non_null(strstr(a.message, "did not arrive"));
	assert_true(ijson_int(iwatch_obj(f->state, "probe"), "lost") >= 1);
	assert_int_equal(iwatch_events(f, "alert.raised", "probe"), 1);
}

/* A policy that makes every level's TTL 1 ms (a level "shorter than the
 * plan says") delivers probes before their not-before time: the watch
 * raises a probe alert saying so and counts them early. The watch is
 * ticked back to back, so that it reads a probe before its 200 ms
 * delay is over. */
static void
test_early_probe_raises_probe_alert(void **state)
{
	struct fixture *f = *state;
	char pol[128], pattern[160], err[2048];
	json_t *def;
	int64_t until;
	struct alerts al;
	const struct store_alert *a = NULL;
	int r;

	iwatch_start(f, "early", 1, 0, NULL);
	iwatch_flip_long_ago(f);
	snprintf(pol, sizeof(pol), "%s.fast", iwatch_prefix);
	itest_policy_cleanup(pol);
	snprintf(pattern, sizeof(pattern), "^itest%ld\\.early\\.level\\.", (long)getpid());
	def = json_pack("{s:i}", "message-ttl", 1);
	assert_non_null(def);
	r = mgmt_put_policy(f->c.mgmt, pol, pattern, "queues", 100, def, err, sizeof(err));
	json_decref(def);
	if (r != 0)
		fail_msg("putting policy '%s': %s", pol, err);
	/* The level probes may come out early first (their alert is a
	 * "probe" one too): tick until the end-to-end probe has been counted
	 * early as well, whichever of the two the broker delivered first. */
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_open_alerts(f, &al);
		a = NULL;
		for (int i = 0; i < al.n && a == NULL; i++)
			if (strcmp(al.v[i].kind, "probe") == 0)
				a = &al.v[i];
		if (a != NULL && ijson_int(iwatch_obj(f->state, "probe"), "early") >= 1)
			break;
		if (now_ms() > until)
			fail_msg("no early end-to-end probe within %d ms (a probe alert: %s)",
			    ALERT_CEILING_MS, a != NULL ? a->message : "none");
		iwatch_sleep_ms(20);
	}
	fprintf(stderr, "# early probe: %s\n", a->message);
	assert_non_null(strstr(a->message, "before its not-before time"));
	assert_true(ijson_int(iwatch_obj(f->state, "probe"), "early") >= 1);
	assert_false(json_is_true(json_object_get(f->state, "done")));
}

/* A probe taken out of the probe queue and put back AT_MS (wall clock)
 * later, over a connection of its own, by a thread: the watch meanwhile
 * waits for it. */
struct late_probe {
	const struct plan *p;
	const char *queue;
	struct broker_delivery d;
	int64_t at_ms;
	int rc;
	char err[512];
};

static void *
put_back_late(void *arg)
{
	struct late_probe *l = arg;
	struct broker_field h[16];
	struct broker_message m = { 0 };
	struct broker *b = NULL;
	size_t n = 0;

	l->rc = broker_open(l->p->broker.amqp, l->p->broker.username,
	    l->p->broker.password, 5000, &b, l->err, sizeof(l->err));
	if (l->rc != 0)
		return NULL;
	for (size_t i = 0; i < l->d.nheaders && n < 16; i++) {
		if (l->d.headers[i].kind != BROKER_KIND_STR &&
		    l->d.headers[i].kind != BROKER_KIND_INT)
			continue;
		h[n].key = l->d.headers[i].key;
		h[n].is_int = l->d.headers[i].kind == BROKER_KIND_INT;
		h[n].num = l->d.headers[i].num;
		h[n].str = l->d.headers[i].str;
		n++;
	}
	m.routing_key = l->queue;
	m.body = l->d.body;
	m.len = l->d.len;
	m.headers = h;
	m.nheaders = n;
	m.message_id = l->d.message_id;
	m.content_type = l->d.content_type;
	iwatch_sleep_ms(l->at_ms - now_ms());
	l->rc = broker_publish(b, &m, 5000, l->err, sizeof(l->err));
	broker_close(b);
	return NULL;
}

/* A probe that arrives well after its not-before time + max_lateness (but
 * before it would be called lost) raises a probe alert saying it was late:
 * the probe is taken from the probe queue as it arrives and put back
 * max_lateness + 400 ms after its not-before time, while the watch, which
 * saw the queue empty past the lateness bound, waits for it. */
static void
test_late_probe_raises_probe_alert(void **state)
{
	struct fixture *f = *state;
	struct late_probe l;
	struct publish_info pi;
	struct alerts al;
	const struct store_alert *a;
	pthread_t th;
	char q[LADDER_NAME_MAX], err[2048];
	int r;

	memset(&l, 0, sizeof(l));
	iwatch_start(f, "lateprobe", 1, 0, NULL);
	iwatch_flip_long_ago(f);
	assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	snprintf(q, sizeof(q), "cutover.probe.%s", f->p->name);
	r = get_path_probe(f, q, &l.d);
	assert_int_equal(r, 0);
	(void)broker_ack(f->c.amqp, &l.d, err, sizeof(err));
	assert_int_equal(publish_read(&l.d, &pi, err, sizeof(err)), 0);
	assert_string_equal(pi.purpose, "probe");
	l.p = f->p;
	l.queue = q;
	l.at_ms = pi.not_before_ms + f->p->canary.max_lateness_ms + 400;
	assert_int_equal(pthread_create(&th, NULL, put_back_late, &l), 0);
	/* This tick waits for the probe up to its bound, and reads it. */
	r = iwatch_tick(f, err, sizeof(err));
	assert_int_equal(pthread_join(th, NULL), 0);
	broker_delivery_free(&l.d);
	if (l.rc != 0)
		fail_msg("putting the probe back: %s", l.err);
	assert_int_equal(r, 1);
	iwatch_open_alerts(f, &al);
	a = iwatch_find_alert(&al, "probe");
	assert_non_null(a);
	fprintf(stderr, "# late probe: %s\n", a->message);
	assert_non_null(strstr(a->message, "later than canary.max_lateness"));
	assert_int_equal(ijson_int(iwatch_obj(f->state, "probe"), "late"), 1);
	assert_int_equal(ijson_int(iwatch_obj(f->state, "probe"), "lost"), 0);
}

/* A probe queue as schema 2's cutover declared it (not durable, classic),
 * a message in it, is read out, deleted and declared again durable and of
 * the plan's type (quorum), and the watch reads its probes there with no
 * alert: on the channel that had read the classic queue, RabbitMQ 3.10
 * closed the connection at the first get from the quorum one
 * (INTERNAL_ERROR, broker_unreachable) before broker_channel_renew. */
static void
test_probe_queue_of_an_earlier_shape_replaced(void **state)
{
	struct fixture *f = *state;
	struct topology_arg expires;
	struct broker_message m = { 0 };
	struct alerts al;
	char q[LADDER_NAME_MAX], err[2048];
	const json_t *pr;
	int i;

	iwatch_start(f, "reshape", 1, 0, NULL);
	iwatch_flip_long_ago(f);
	snprintf(q, sizeof(q), "cutover.probe.%s", f->p->name);
	memset(&expires, 0, sizeof(expires));
	snprintf(expires.key, sizeof(expires.key), "x-expires");
	expires.is_int = true;
	expires.num = 3600000;
	if (broker_queue_declare(f->c.amqp, q, false, &expires, 1, err, sizeof(err)) != 0)
		fail_msg("declaring the old probe queue: %s", err);
	m.routing_key = q;
	m.body = "from before";
	m.len = strlen(m.body);
	if (broker_publish(f->c.amqp, &m, 5000, err, sizeof(err)) != 0)
		fail_msg("publishing into the old probe queue: %s", err);
	/* Until two probes came out of the new queue (each one interval). */
	for (i = 0; i < 50; i++) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		pr = iwatch_obj(f->state, "probe");
		if (ijson_int(pr, "arrived") >= 2)
			break;
		iwatch_sleep_ms(INTERVAL_MS);
	}
	iwatch_open_alerts(f, &al);
	for (i = 0; i < al.n; i++)
		fprintf(stderr, "# alert %s: %s\n", al.v[i].kind, al.v[i].message);
	assert_int_equal(al.n, 0);
	pr = iwatch_obj(f->state, "probe");
	assert_true(ijson_int(pr, "arrived") >= 2);
	/* The old queue's message was read out as not the watch's. */
	assert_int_equal(ijson_int(pr, "foreign"), 1);
}

IWATCH_MAIN(
	IWATCH_TEST(test_lost_probe_raises_probe_alert),
	IWATCH_TEST(test_early_probe_raises_probe_alert),
	IWATCH_TEST(test_late_probe_raises_probe_alert),
	IWATCH_TEST(test_probe_queue_of_an_earlier_shape_replaced))
