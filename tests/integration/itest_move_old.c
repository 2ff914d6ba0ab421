/* itest_move_old: the move_old tests' plan, old queues, runs and readers
 * (itest_move_old.h). */
#include "itest_move_old.h"
#include "itest_json.h"
#include "itest_plan.h"
#include "store.h"

static char vhost_url[512];
struct plan *imove_plan;
struct step_ctx imove_ctx;

int
imove_setup(void **state)
{
	(void)state;
	itest_vhost_next("mv", vhost_url, sizeof(vhost_url));
	return 0;
}

const char *
imove_vhost_url(void)
{
	return vhost_url;
}

struct plan *
imove_load(const char *name, const char *body)
{
	struct itest_plan b;

	itest_plan_begin(&b, name, vhost_url);
	itest_plan_addf(&b, "%s", body);
	return itest_plan_load("itest.yaml", b.text);
}

int
imove_teardown(void **state)
{
	(void)state;
	step_ctx_close(&imove_ctx);
	memset(&imove_ctx, 0, sizeof(imove_ctx));
	plan_free(imove_plan);
	imove_plan = NULL;
	itest_cleanup();
	return 0;
}

void
imove_start(const char *entry, const char *bound)
{
	imove_start_with(entry, bound, "steps: [measure_horizon, declare_ladder]\n");
}

void
imove_start_with(const char *entry, const char *bound, const char *rest)
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
	    "%s", broker, bound, entry, rest);
	imove_plan = itest_plan_load("itest.yaml", yaml);
	itest_ctx_open(&imove_ctx, imove_plan);
	if (step_declare_ladder(&imove_ctx, &r, err, sizeof(err)) != 0)
		fail_msg("declare_ladder: %s", err);
	json_decref(r);
}

void
imove_old_queue(const char *name, int64_t ttl_ms, const char *dlk)
{
	imove_old_queue_to(name, ttl_ms, "", dlk);
}

void
imove_old_queue_to(const char *name, int64_t ttl_ms, const char *dlx, const char *dlk)
{
	struct topology_arg a[3];
	size_t n = 0;
	char err[1024];

	itest_arg_int(&a[n++], "x-message-ttl", ttl_ms);
	itest_arg_str(&a[n++], "x-dead-letter-exchange", dlx);
	if (dlk != NULL)
		itest_arg_str(&a[n++], "x-dead-letter-routing-key", dlk);
	if (broker_queue_declare(imove_ctx.amqp, name, true, a, n, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", name, err);
}

struct sent imove_sent[64];
size_t imove_nsent;

void
imove_put(const char *q, const char *body, uint64_t ts_s, int64_t hdr_ms,
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
	if (broker_publish(imove_ctx.amqp, &m, 10000, err, sizeof(err)) != 0)
		fail_msg("publishing %s to %s: %s", body, q, err);
	assert_true(imove_nsent < sizeof(imove_sent) / sizeof(imove_sent[0]));
	snprintf(imove_sent[imove_nsent].body, sizeof(imove_sent[0].body), "%s", body);
	imove_sent[imove_nsent].queue = q;
	imove_sent[imove_nsent].not_before_ms = nb;
	imove_sent[imove_nsent++].arrived = false;
}

void
imove_wait_depth(const char *q, uint32_t n)
{
	struct broker_queue_info qi = { 0 };
	int64_t until = clock_mono_ms() + 30 * SEC;
	char err[1024];

	for (;;) {
		if (broker_queue_inspect(imove_ctx.amqp, q, &qi, err, sizeof(err)) != 0)
			fail_msg("inspecting %s: %s", q, err);
		if (qi.messages == n)
			return;
		if (clock_mono_ms() > until)
			fail_msg("%s holds %u messages; expected %u", q, qi.messages, n);
		usleep(20 * 1000);
	}
}

uint32_t
imove_depth(const char *q)
{
	struct broker_queue_info qi = { 0 };
	char err[1024];

	if (broker_queue_inspect(imove_ctx.amqp, q, &qi, err, sizeof(err)) != 0)
		fail_msg("inspecting %s: %s", q, err);
	return qi.messages;
}

json_t *
imove_move(void)
{
	json_t *r = NULL;
	char err[2048];
	int rc;

	imove_ctx.flip_ms = clock_now_ms() - 10 * SEC;
	imove_ctx.again = false;
	rc = step_move_old(&imove_ctx, &r, err, sizeof(err));
	if (rc != 0 || imove_ctx.again) {
		char *t = json_dumps(r, JSON_COMPACT);

		fprintf(stderr, "move_old returned %d: %s\n%s\n", rc, err, t ? t : "");
		free(t);
		fail_msg("move_old did not finish");
	}
	return r;
}

void
imove_crash_after_confirm(int64_t now_ms)
{
	imove_crash_after_confirm_in(now_ms, NULL, 0);
}

void
imove_crash_after_confirm_in(int64_t now_ms, const char *db, int64_t plan_id)
{
	int status;
	pid_t pid;

	if ((pid = fork()) == 0) {
		struct step_ctx cc;
		json_t *cr = NULL;
		char e[1024];

		memset(&cc, 0, sizeof(cc));
		setenv("CUTOVER_FAULT", "crash:move_old.confirmed", 1);
		if (step_ctx_open(&cc, imove_plan, e, sizeof(e)) != 0 ||
		    (db != NULL && store_open(db, &cc.store, e, sizeof(e)) != 0))
			_exit(2);
		cc.plan_id = plan_id;
		cc.flip_ms = now_ms - 10 * SEC;
		(void)step_move_old(&cc, &cr, e, sizeof(e));
		_exit(3);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

const json_t *
imove_entry_in(const json_t *r, const char *list, const char *name)
{
	const json_t *e = ijson_named(json_object_get(r, list), name);

	if (e == NULL)
		fail_msg("no entry for %s in the result's %s", name, list);
	return e;
}

const json_t *
imove_queue_entry(const json_t *r, const char *name)
{
	return imove_entry_in(r, "queues", name);
}

int64_t
imove_count_of(const json_t *e, const char *key)
{
	return json_integer_value(json_object_get(e, key));
}

json_t *
imove_measure(void)
{
	json_t *m = NULL;
	char err[2048];

	if (step_measure_horizon(&imove_ctx, &m, err, sizeof(err)) != 0)
		fail_msg("measure_horizon: %s", err);
	return m;
}

void
imove_expect_twice_one_id(const char *dest, const char *prefix,
    const int64_t not_before_ms[3])
{
	size_t plen = strlen(prefix);
	const char *ids[3] = { NULL, NULL, NULL };
	int seen[3] = { 0, 0, 0 }, got = 0;
	char err[1024];
	int64_t until;

	assert_int_equal(broker_consume(imove_ctx.amqp, dest, 0, err, sizeof(err)), 0);
	until = clock_mono_ms() + 40 * 1000;
	while (got < 6 && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		const struct broker_header *h, *from;
		int i = -1;

		if (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		if (strncmp(d.body, prefix, plen) != 0 || sscanf(d.body + plen, "%d", &i) != 1 ||
		    i < 0 || i > 2)
			fail_msg("'%s' arrived in %s, not one of the three sent", d.body, dest);
		if (clock_now_ms() < not_before_ms[i])
			fail_msg("'%s' arrived %lld ms early", d.body,
			    (long long)(not_before_ms[i] - clock_now_ms()));
		h = broker_header_find(&d, "x-cutover-move-id");
		from = broker_header_find(&d, "x-cutover-moved-from");
		if (h == NULL || h->str == NULL || h->str[0] == '\0')
			fail_msg("'%s' arrived without an x-cutover-move-id", d.body);
		fprintf(stderr, "# %s from %s: move id %s\n", d.body,
		    from != NULL && from->str != NULL ? from->str : "?", h->str);
		if (ids[i] == NULL)
			ids[i] = strdup(h->str);
		else
			assert_string_equal(ids[i], h->str);
		for (int k = 0; k < 3; k++)
			if (k != i && ids[k] != NULL)
				assert_string_not_equal(ids[k], h->str);
		seen[i]++;
		got++;
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	fprintf(stderr, "duplicates: %d deliveries of 3 messages (%d, %d, %d)\n", got,
	    seen[0], seen[1], seen[2]);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(seen[i], 2);
		free((void *)ids[i]);
	}
}
