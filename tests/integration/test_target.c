/* test_target (integration): a plan with a target broker, the move users
 * make from a RabbitMQ 3.10 node to a 4.0 node. The old path waits on the
 * source (CUTOVER_TEST_AMQP), the ladder is built on the target
 * (CUTOVER_TEST_TARGET_AMQP): `cutover run` measures the source, declares,
 * verifies and canaries the quorum ladder on the target, flips, moves
 * what waits in the old queues across to the target's ladder, watches
 * both brokers and removes the old queues on the source. Every message
 * arrives once, never before its not-before time (the test's own
 * arithmetic from when it published it), and nothing of the ladder is
 * made on the source. And the target's node restarted under the watch
 * raises broker_restart naming the target. Each node gets a vhost of its
 * own, deleted at the end whatever happens. */
#define _GNU_SOURCE	/* asprintf */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "clock.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "ladder.h"
#include "plan.h"
#include "store.h"
#include "topology.h"

#define SEC		1000LL
#define NMSG		8		/* per old queue */
#define DEST		"tg.dest"

/* One broker node of the test: its URLs and the test's vhost there. */
struct node {
	const char *amqp, *mgmt;	/* from the environment */
	char vhost[128];
	char vhost_url[512];		/* AMQP URL of the vhost */
	struct broker *b;
};

/* One message the test published, and what it expects. */
struct sent {
	char body[32];
	int64_t not_before_ms;		/* end of its stamp's second + TTL */
	int arrived;			/* times */
	bool moved;			/* arrived through the target's ladder */
	int64_t late_ms;		/* arrival - not_before */
};

static struct node source, target;
static struct sent sent[2 * NMSG];
static size_t nsent;
static char dir[256], db[300], planfile[300], plan_name[64];

/* Deletes the vhost ARG names ("MGMT-URL\tVHOST", malloc'd, freed here). */
static void
vhost_delete(void *arg)
{
	char *s = arg, *tab = strchr(s, '\t'), enc[300], path[400], err[512];
	struct mgmt *m;

	*tab = '\0';
	if (mgmt_open(s, "/", getenv("CUTOVER_TEST_USER"), "env:CUTOVER_TEST_PASSWORD",
	    10000, &m, err, sizeof(err)) == 0) {
		if (mgmt_escape(tab + 1, enc, sizeof(enc)) > 0) {
			snprintf(path, sizeof(path), "/api/vhosts/%s", enc);
			(void)mgmt_request(m, "DELETE", path, NULL, NULL, NULL, err,
			    sizeof(err));
		}
		mgmt_close(m);
	}
	free(s);
}

/* Creates vhost N->vhost on node N with the test user's permissions,
 * deleted at cleanup, and opens an AMQP connection to it. */
static void
node_begin(struct node *n, const char *name)
{
	const char *user = getenv("CUTOVER_TEST_USER"), *slash;
	char enc[300], path[400], err[1024], *later;
	struct mgmt *m;
	json_t *perm;

	snprintf(n->vhost, sizeof(n->vhost), "%s-%s", itest_run_id(), name);
	if ((slash = strstr(n->amqp, "://")) == NULL || (slash = strchr(slash + 3, '/')) == NULL)
		fail_msg("'%s' is not amqp://host:port/vhost", n->amqp);
	if (mgmt_open(n->mgmt, "/", user, "env:CUTOVER_TEST_PASSWORD", 10000, &m, err,
	    sizeof(err)) != 0)
		fail_msg("%s: %s", n->mgmt, err);
	assert_true(mgmt_escape(n->vhost, enc, sizeof(enc)) > 0);
	snprintf(path, sizeof(path), "/api/vhosts/%s", enc);
	if (mgmt_request(m, "PUT", path, NULL, NULL, NULL, err, sizeof(err)) != 0)
		fail_msg("creating vhost %s on %s: %s", n->vhost, n->mgmt, err);
	if (asprintf(&later, "%s\t%s", n->mgmt, n->vhost) < 0)
		fail_msg("out of memory");
	itest_on_cleanup(vhost_delete, later);
	perm = json_pack("{s:s, s:s, s:s}", "configure", ".*", "write", ".*", "read", ".*");
	snprintf(path, sizeof(path), "/api/permissions/%s/%s", enc, user);
	if (mgmt_request(m, "PUT", path, perm, NULL, NULL, err, sizeof(err)) != 0)
		fail_msg("permissions on vhost %s: %s", n->vhost, err);
	json_decref(perm);
	mgmt_close(m);
	snprintf(n->vhost_url, sizeof(n->vhost_url), "%.*s/%s", (int)(slash - n->amqp),
	    n->amqp, enc);
	if (broker_open(n->vhost_url, user, "env:CUTOVER_TEST_PASSWORD", 10000, &n->b,
	    err, sizeof(err)) != 0)
		fail_msg("%s: %s", n->vhost_url, err);
}

/* Declares classic old queue NAME on the source: TTL_MS, dead-lettering
 * into DEST through the default exchange. */
static void
old_queue(const char *name, int64_t ttl_ms)
{
	struct topology_arg a[3];
	char err[1024];

	itest_arg_int(&a[0], "x-message-ttl", ttl_ms);
	itest_arg_str(&a[1], "x-dead-letter-exchange", "");
	itest_arg_str(&a[2], "x-dead-letter-routing-key", DEST);
	assert_int_equal(broker_queue_declare(source.b, name, true, a, 3, err,
	    sizeof(err)), 0);
}

/* Publishes NMSG messages into old queue Q (TTL_MS), each stamped with
 * the AMQP timestamp (whole seconds), with confirms. */
static void
fill(const char *q, int64_t ttl_ms)
{
	char err[1024];

	for (int i = 0; i < NMSG; i++) {
		struct broker_message m = { 0 };
		struct sent *s = &sent[nsent++];
		int64_t t_s = clock_now_ms() / 1000;

		snprintf(s->body, sizeof(s->body), "%s-%d", q, i);
		/* The stamp's second may have begun up to a second before
		 * the publish: its end is the earliest entry it proves. */
		s->not_before_ms = (t_s + 1) * 1000 + ttl_ms;
		m.exchange = "";
		m.routing_key = q;
		m.body = s->body;
		m.len = strlen(s->body);
		m.timestamp = (uint64_t)t_s;
		m.message_id = s->body;
		m.mandatory = true;
		assert_int_equal(broker_publish(source.b, &m, 10000, err, sizeof(err)), 0);
	}
}

/* Takes what node N's DEST holds now, checking each message: expected,
 * not yet seen, never early. MOVED says it came through the target. */
static void
take(struct node *n, bool moved)
{
	struct broker_delivery d = { 0 };
	char err[1024];
	int rc;

	while ((rc = broker_get(n->b, DEST, true, &d, err, sizeof(err))) == 0) {
		int64_t at = clock_now_ms();
		size_t i;

		for (i = 0; i < nsent && strcmp(sent[i].body, d.body) != 0; i++)
			;
		if (i == nsent)
			fail_msg("message '%s' arrived on %s and was not sent", d.body,
			    n->vhost_url);
		if (at < sent[i].not_before_ms)
			fail_msg("message '%s' arrived %lld ms early", d.body,
			    (long long)(sent[i].not_before_ms - at));
		if (moved) {
			const struct broker_header *h = broker_header_find(&d,
			    "x-cutover-moved-from");

			assert_non_null(h);
			assert_non_null(broker_header_find(&d, "x-cutover-move-id"));
			sent[i].moved = true;
		}
		sent[i].arrived++;
		sent[i].late_ms = at - sent[i].not_before_ms;
		assert_int_equal(broker_ack(n->b, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	if (rc != BROKER_EMPTY)
		fail_msg("reading %s on %s: %s", DEST, n->vhost_url, err);
}

/* qsort order of int64_t. */
static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Prints how late the moved messages arrived after their not-before (a
 * figure for people; the test's bound is only "never early"). */
static void
print_lateness(void)
{
	int64_t v[2 * NMSG];
	size_t n = 0;

	for (size_t i = 0; i < nsent; i++)
		if (sent[i].moved)
			v[n++] = sent[i].late_ms;
	if (n == 0)
		return;
	qsort(v, n, sizeof(v[0]), cmp_i64);
	fprintf(stderr, "moved %zu: lateness after not-before min %lld ms, p50 %lld ms, "
	    "max %lld ms\n", n, (long long)v[0], (long long)v[n / 2], (long long)v[n - 1]);
}

/* Whether queue NAME exists on node N. */
static bool
exists(struct node *n, const char *name)
{
	char err[512];
	int rc = broker_queue_inspect(n->b, name, NULL, err, sizeof(err));

	if (rc != 0 && rc != BROKER_NOT_FOUND)
		fail_msg("inspecting %s: %s", name, err);
	return rc == 0;
}

/* Writes the plan NAME (after the run's id): the old path on the
 * source's vhost, a quorum ladder of 1 s units on the target's, STEPS
 * (a YAML list, every step without a gate). */
static void
write_plan(const char *name, const char *steps)
{
	struct itest_plan b;

	snprintf(plan_name, sizeof(plan_name), "%s-%s", itest_run_id(), name);
	itest_unleash_feature(plan_name);
	itest_plan_begin(&b, plan_name, source.vhost_url);
	itest_plan_addf(&b,
	    "target:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_TEST_PASSWORD\n"
	    "old:\n"
	    "  queues: { match: '^tg\\.old\\.' }\n"
	    "ladder:\n"
	    "  prefix: tg\n"
	    "  unit: 1s\n"
	    "  levels: 7\n"
	    "  queue_type: quorum\n"
	    "  destinations: [" DEST "]\n"
	    "canary:\n"
	    "  delays: [1s, 2s]\n",
	    target.vhost_url, target.mgmt, getenv("CUTOVER_TEST_USER"));
	itest_plan_unleash_flag(&b, NULL, plan_name);
	itest_plan_addf(&b,
	    "  settle: 15s\n"
	    "watch:\n"
	    "  interval: 250ms\n"
	    "  allowance: 2s\n"
	    "  probe_every: 1s\n"
	    "move_old:\n"
	    "  rate: 1000/s\n"
	    "  prefetch: 4\n"
	    "  stragglers: 1s\n"
	    "  entry:\n"
	    "    - { queues: { match: '^tg\\.old\\.' }, from: timestamp }\n"
	    "steps: %s\n", steps);
	itest_plan_write(&b, planfile);
}

/* A test's start: both nodes' vhosts, and plan NAME with STEPS. */
static void
begin(const char *name, const char *steps)
{
	node_begin(&source, "source");
	node_begin(&target, "target");
	write_plan(name, steps);
}

/* The whole plan from the 3.10 source to the 4.0 target: every message
 * arrives once and never early, those still waiting when move_old ran
 * through the target's ladder; the ladder exists on the target only; the
 * old queues are gone from the source, recorded in the history. */
static void
test_move_to_a_target_broker(void **state)
{
	struct itest_history h;
	char status[32], name[LADDER_NAME_MAX];
	struct ladder l = { 0 };
	pid_t run;
	int rc, moved = 0;

	(void)state;
	begin("target", "[measure_horizon, declare_ladder, verify_ladder, canary, "
	    "flip, move_old, watch, remove_old]");
	old_queue("tg.old.20s", 20 * SEC);
	old_queue("tg.old.40s", 40 * SEC);
	/* Each broker's consumers read their own DEST: the old path delivers
	 * on the source, the ladder on the target. */
	assert_int_equal(broker_queue_declare(source.b, DEST, true, NULL, 0, name,
	    sizeof(name)), 0);
	assert_int_equal(broker_queue_declare(target.b, DEST, true, NULL, 0, name,
	    sizeof(name)), 0);
	fill("tg.old.20s", 20 * SEC);
	fill("tg.old.40s", 40 * SEC);

	run = itest_start_run(db, planfile, NULL);
	for (int64_t until = clock_mono_ms() + 240 * SEC; (rc = itest_exited(run)) < 0; ) {
		if (clock_mono_ms() > until)
			fail_msg("cutover run did not end in 240 s");
		take(&source, false);
		take(&target, true);
		itest_sleep_ms(100);
	}
	assert_int_equal(rc, 0);
	/* What was moved last may still wait in the ladder's levels. */
	for (int64_t until = clock_mono_ms() + 60 * SEC; ; itest_sleep_ms(100)) {
		size_t all = 0;

		take(&source, false);
		take(&target, true);
		for (size_t i = 0; i < nsent; i++)
			all += sent[i].arrived > 0;
		if (all == nsent)
			break;
		if (clock_mono_ms() > until)
			fail_msg("%zu of %zu messages arrived", all, nsent);
	}
	for (size_t i = 0; i < nsent; i++) {
		if (sent[i].arrived != 1)
			fail_msg("message '%s' arrived %d times", sent[i].body,
			    sent[i].arrived);
		moved += sent[i].moved;
	}
	/* The 40 s queue's messages were all still waiting at the move. */
	assert_true(moved >= NMSG);
	print_lateness();

	assert_int_equal(ladder_init(&l, LADDER_NAMING_CUTOVER, "tg", SEC, 7, name,
	    sizeof(name)), 0);
	for (int k = 0; k < 7; k++) {
		ladder_level_queue(&l, k, name, sizeof(name));
		assert_true(exists(&target, name));
		assert_false(exists(&source, name));
	}
	assert_false(exists(&source, "tg.old.20s"));
	assert_false(exists(&source, "tg.old.40s"));
	assert_true(exists(&source, DEST));
	itest_read_history(db, plan_name, &h, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&h, "old.queue_removed"), 2);
	assert_int_equal(itest_count(&h, "flip.confirmed"), 1);
}

/* What the running plan's database says: whether step IDX runs, and the
 * message of its open alert of KIND (empty when none). */
struct look {
	const char *kind;
	bool running;
	char alert[600];
};

static int
take_alert(const struct store_alert *a, void *arg)
{
	struct look *l = arg;

	if (strcmp(a->kind, l->kind) == 0)
		snprintf(l->alert, sizeof(l->alert), "%s", a->message);
	return 0;
}

static void
look_at(int idx, struct look *l)
{
	struct store *s = NULL;
	struct store_plan p;
	struct store_step st;
	char err[512];

	l->running = false;
	l->alert[0] = '\0';
	if (store_open(db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, plan_name, &p, err, sizeof(err)) == 0) {
		if (store_step_get(s, p.id, idx, &st, err, sizeof(err)) == 0) {
			l->running = strcmp(st.status, "running") == 0;
			store_step_clear(&st);
		}
		(void)store_each_alert(s, p.id, 1, take_alert, l, err, sizeof(err));
	}
	store_close(s);
}

/* Stops and starts the target's node (scripts/broker; the node ctest lent
 * as the target is a 4.0 one, or CUTOVER_TEST_TARGET_VERSION's). */
static void
restart_target(void)
{
	const char *src = getenv("CUTOVER_SOURCE_DIR"), *c = strrchr(target.amqp, ':');
	const char *v = getenv("CUTOVER_TEST_TARGET_VERSION");
	char cmd[1024];

	if (src == NULL || c == NULL)
		fail_msg("restarting the target needs CUTOVER_SOURCE_DIR and a port");
	v = v != NULL ? v : "4.0";
	snprintf(cmd, sizeof(cmd), "'%s/scripts/broker' stop --port %d --version %s >&2 "
	    "&& '%s/scripts/broker' start --port %d --version %s >&2", src, atoi(c + 1),
	    v, src, atoi(c + 1), v);
	if (system(cmd) != 0)
		fail_msg("%s failed", cmd);
}

/* After a restart a node can refuse quorum queues for a while (its Raft
 * system recovering): the next test lent this node must find it whole. */
static void
await_quorum(struct node *n)
{
	struct topology_arg a = { .key = "x-queue-type", .str = "quorum" };
	char err[1024] = "";

	for (int i = 0; i < 60; i++, itest_sleep_ms(1000)) {
		broker_close(n->b);
		n->b = NULL;
		if (broker_open(n->vhost_url, getenv("CUTOVER_TEST_USER"),
		    "env:CUTOVER_TEST_PASSWORD", 10000, &n->b, err, sizeof(err)) == 0 &&
		    broker_queue_declare(n->b, "tg.quorum-check", true, &a, 1, err,
		    sizeof(err)) == 0)
			return;
	}
	fail_msg("after its restart the target refuses quorum queues: %s", err);
}

/* The target's node restarts mid-watch: the watch raises broker_restart
 * naming the target broker (it read only the old path's nodes before). */
static void
test_target_restart_is_seen(void **state)
{
	struct look l = { .kind = "broker_restart" };
	pid_t run;

	(void)state;
	begin("restart", "[measure_horizon, declare_ladder, verify_ladder, canary, "
	    "flip, watch]");
	old_queue("tg.old.90s", 90 * SEC);
	assert_int_equal(broker_queue_declare(target.b, DEST, true, NULL, 0, l.alert,
	    sizeof(l.alert)), 0);
	run = itest_start_run(db, planfile, NULL);
	for (int64_t until = clock_mono_ms() + 120 * SEC; look_at(5, &l), !l.running; ) {
		if (itest_exited(run) >= 0 || clock_mono_ms() > until)
			fail_msg("the watch never began");
		itest_sleep_ms(200);
	}
	itest_sleep_ms(2000);	/* a look at the target's nodes first */
	restart_target();
	for (int64_t until = clock_mono_ms() + 60 * SEC; look_at(5, &l),
	    strstr(l.alert, "target broker") == NULL; itest_sleep_ms(250)) {
		if (itest_exited(run) >= 0 || clock_mono_ms() > until)
			fail_msg("no broker_restart naming the target broker (open: '%s')",
			    l.alert);
	}
	fprintf(stderr, "# broker_restart: %s\n", l.alert);
	assert_non_null(strstr(l.alert, "restarted"));
	assert_null(strstr(l.alert, "old path's broker"));
	(void)itest_stop(run);
	await_quorum(&target);
}

static int
teardown(void **state)
{
	(void)state;
	broker_close(source.b);
	broker_close(target.b);
	source.b = target.b = NULL;
	itest_cleanup();
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_move_to_a_target_broker, teardown),
		cmocka_unit_test_teardown(test_target_restart_is_seen, teardown),
	};
	const char *tmp = getenv("TMPDIR");
	char cmd[300];
	int rc;

	source.amqp = getenv("CUTOVER_TEST_AMQP");
	source.mgmt = getenv("CUTOVER_TEST_MGMT");
	target.amqp = getenv("CUTOVER_TEST_TARGET_AMQP");
	target.mgmt = getenv("CUTOVER_TEST_TARGET_MGMT");
	if (source.amqp == NULL || source.mgmt == NULL || target.amqp == NULL ||
	    target.mgmt == NULL || getenv("CUTOVER_TEST_UNLEASH_URL") == NULL) {
		itest_skip("set CUTOVER_TEST_AMQP and _MGMT (the source node), "
		    "CUTOVER_TEST_TARGET_AMQP and _MGMT (the target node) and the "
		    "test Unleash (scripts/test does)");
		return 77;
	}
	snprintf(dir, sizeof(dir), "%s/itest_target.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(db, sizeof(db), "%s/target.db", dir);
	snprintf(planfile, sizeof(planfile), "%s/target.yaml", dir);
	rc = itest_run_part("target", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (rc == 0 && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return rc;
}
