/* test_cutover (integration): whole plans through the engine against a real
 * RabbitMQ node and a real Unleash — gates approved from another process,
 * kill -9 at the worst moments (between the flip and its record, during
 * the watch, during remove_old), abort after the flip and during the
 * watch, a flag service that is down (for the flip and for the rollback),
 * and a producer still writing into the old path after the flip.
 * The cutover binary (CUTOVER_BINARY) is run as an operator would. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "engine.h"
#include "itest_broker.h"
#include "itest_run.h"
#include "itest_unleash.h"
#include "flag.h"
#include "step.h"
#include "store.h"

static char dir[256], db[300], planfile[300], plan_name[64], prefix[64];
static char feature[64];	/* the plan's Unleash feature: the plan's name */

static void
set_names(const char *test)
{
	snprintf(prefix, sizeof(prefix), "itest%ld.%s", (long)getpid(), test);
	snprintf(plan_name, sizeof(plan_name), "itest%ld-%s", (long)getpid(), test);
	snprintf(db, sizeof(db), "%s/%s.db", dir, test);
	snprintf(planfile, sizeof(planfile), "%s/%s.yaml", dir, test);
}

static int64_t
now_ms(void)
{
	return clock_now_ms();
}

/* The plan's steps, and which of them wait at a gate (bit i: step i):
 * the flip and remove_old unless a test says otherwise. */
static const char *const step_names[] = { "measure_horizon", "declare_ladder",
	"verify_ladder", "canary", "flip", "watch", "remove_old" };
#define GATES_DEFAULT	((1u << 4) | (1u << 6))
static unsigned gates = GATES_DEFAULT;

/* Writes the test's plan; FLAG_URL NULL means the test Unleash; ALLOWANCE
 * is watch.allowance. */
static void
write_plan(const char *flag_url, const char *allowance)
{
	const char *amqp = getenv("CUTOVER_TEST_AMQP"), *mgmt = getenv("CUTOVER_TEST_MGMT");
	const char *unleash = getenv("CUTOVER_TEST_UNLEASH_URL");
	FILE *f;

	if (amqp == NULL || mgmt == NULL || getenv("CUTOVER_TEST_USER") == NULL ||
	    getenv("CUTOVER_BINARY") == NULL || unleash == NULL ||
	    getenv("CUTOVER_TEST_UNLEASH_TOKEN") == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, "
		    "CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL, "
		    "CUTOVER_TEST_UNLEASH_TOKEN and CUTOVER_BINARY (scripts/test does)");
	f = fopen(planfile, "w");
	assert_non_null(f);
	fprintf(f,
	    "name: %s\n"
	    "broker:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_TEST_PASSWORD\n"
	    "old:\n"
	    "  queues: { match: '^%s\\.old\\.[0-9]+$' }\n"
	    "ladder:\n"
	    "  prefix: %s\n"
	    "  unit: 100ms\n"
	    "  levels: 8\n"
	    "  destinations: [%s.dest]\n"
	    "canary:\n"
	    "  delays: [100ms, 300ms]\n"
	    "flag:\n"
	    "  kind: unleash\n"
	    "  url: %s\n"
	    "  project: default\n"
	    "  environment: production\n"
	    "  feature: %s\n"
	    "  token: env:CUTOVER_TEST_UNLEASH_TOKEN\n"
	    "  settle: 15s\n"
	    "watch:\n"
	    "  interval: 250ms\n"
	    "  allowance: %s\n"
	    "  probe_every: 1s\n"
	    "steps:\n",
	    plan_name, amqp, mgmt, getenv("CUTOVER_TEST_USER"), prefix, prefix, prefix,
	    flag_url != NULL ? flag_url : unleash, feature, allowance);
	for (size_t i = 0; i < sizeof(step_names) / sizeof(step_names[0]); i++)
		fprintf(f, "  - { step: %s, gate: %s }\n", step_names[i],
		    gates & (1u << i) ? "true" : "false");
	fclose(f);
}

static struct plan *
load_plan(void)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (plan_load_file(planfile, &p, &errs) != 0)
		fail_msg("the test plan does not load");
	return p;
}

static void publish_old(struct step_ctx *c, const char *name);

/* The old path the plan migrates away from: three classic delay queues of
 * 1, 2 and 3 s dead-lettering into the destination, with messages waiting. */
static void
make_old_path(struct step_ctx *c)
{
	char name[160], dest[160], err[1024];
	struct topology_arg a[3];

	snprintf(dest, sizeof(dest), "%s.dest", prefix);
	assert_int_equal(broker_queue_declare(c->amqp, dest, true, NULL, 0, err,
	    sizeof(err)), 0);
	for (int s = 1; s <= 3; s++) {
		memset(a, 0, sizeof(a));
		snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
		a[0].is_int = true;
		a[0].num = s * 1000;
		snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
		snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
		snprintf(a[2].str, sizeof(a[2].str), "%s", dest);
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		assert_int_equal(broker_queue_declare(c->amqp, name, true, a, 3, err,
		    sizeof(err)), 0);
		for (int i = 0; i < 3; i++)
			publish_old(c, name);
	}
}

/* One message into old queue NAME through the default exchange. */
static void
publish_old(struct step_ctx *c, const char *name)
{
	struct broker_message m = { 0 };
	char err[512];

	m.exchange = "";
	m.routing_key = name;
	m.body = "old";
	m.len = 3;
	m.mandatory = true;
	assert_int_equal(broker_publish(c->amqp, &m, 5000, err, sizeof(err)), 0);
}

/* Reads step IDX (0-based) of the test's plan. Returns 0 when found. */
static int
read_step(int idx, struct store_step *out)
{
	struct store *s = NULL;
	struct store_plan p;
	char err[512];
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (store_open(db, &s, err, sizeof(err)) != 0)
		return -1;
	if (store_plan_find(s, plan_name, &p, err, sizeof(err)) == 0)
		rc = store_step_get(s, p.id, idx, out, err, sizeof(err));
	store_close(s);
	return rc;
}

/* Waits until step IDX has STATUS (up to TIMEOUT_MS). Returns 1 if it did. */
static int
wait_step(int idx, const char *status, int timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;
	struct store_step st;

	while (now_ms() < until) {
		if (read_step(idx, &st) == 0) {
			int same = strcmp(st.status, status) == 0;

			store_step_clear(&st);
			if (same)
				return 1;
		}
		itest_sleep_ms(50);
	}
	return 0;
}

/* Waits until the test's plan has STATUS (up to TIMEOUT_MS). Returns 1 if
 * it did. */
static int
wait_plan(const char *status, int timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];
	int same;

	while (now_ms() < until) {
		if (store_open(db, &s, err, sizeof(err)) == 0) {
			same = store_plan_find(s, plan_name, &sp, err, sizeof(err)) == 0 &&
			    strcmp(sp.status, status) == 0;
			store_close(s);
			if (same)
				return 1;
		}
		itest_sleep_ms(50);
	}
	return 0;
}

/* A number from step IDX's persisted result, or -1. */
static int64_t
step_number(int idx, const char *key)
{
	struct store_step st;
	json_t *j;
	int64_t v = -1;

	if (read_step(idx, &st) != 0)
		return -1;
	if (st.result_json != NULL && (j = json_loads(st.result_json, 0, NULL)) != NULL) {
		if (json_is_integer(json_object_get(j, key)))
			v = json_integer_value(json_object_get(j, key));
		json_decref(j);
	}
	store_step_clear(&st);
	return v;
}

/* Waits until the watch (step 6) has ticked N times (up to TIMEOUT_MS).
 * Returns 1 if it did. */
static int
wait_ticks(int64_t n, int timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;

	while (now_ms() < until) {
		if (step_number(5, "ticks") >= n)
			return 1;
		itest_sleep_ms(50);
	}
	return 0;
}

/* Open alerts of one kind: the kind asked for and how many there are. */
struct kind_count {
	const char *kind;
	int n;
};

static int
count_kind(const struct store_alert *a, void *arg)
{
	struct kind_count *k = arg;

	k->n += strcmp(a->kind, k->kind) == 0;
	return 0;
}

/* How many open alerts of KIND the test's plan has. */
static int
open_alerts(const char *kind)
{
	struct kind_count k = { kind, 0 };
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	assert_int_equal(store_open(db, &s, err, sizeof(err)), 0);
	assert_int_equal(store_plan_find(s, plan_name, &sp, err, sizeof(err)), 0);
	assert_true(store_each_alert(s, sp.id, 1, count_kind, &k, err, sizeof(err)) >= 0);
	store_close(s);
	return k.n;
}

/* The flag as Unleash has it now: 1 on, 0 off. */
static int
flag_now(const struct plan *p)
{
	json_t *r = NULL;
	char err[1024];
	int state = -1;

	if (flag_read(p, &state, &r, err, sizeof(err)) != 0)
		fail_msg("reading the flag: %s", err);
	json_decref(r);
	return state;
}

/* Sets up a test: names, plan, the flag off, the old path with messages.
 * What an earlier test left (it failed half-way) is cleaned up first; what
 * this one makes on the broker (all named after its prefix and plan) is
 * removed by itest_cleanup whatever happens. */
static void
begin(const char *test, struct plan **p, struct step_ctx *c, const char *flag_url,
    const char *allowance)
{
	json_t *r = NULL;
	char err[1024];

	itest_cleanup();
	set_names(test);
	itest_plan_cleanup(prefix, plan_name);
	itest_unleash_feature(plan_name);	/* the test's own flag, created off */
	snprintf(feature, sizeof(feature), "%s", plan_name);
	write_plan(flag_url, allowance);
	gates = GATES_DEFAULT;
	*p = load_plan();
	if (step_ctx_open(c, *p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (flag_url == NULL) {
		if (flag_switch(*p, false, &r, err, sizeof(err)) != 0)
			fail_msg("turning the flag off before the test: %s", err);
		json_decref(r);
	}
	make_old_path(c);
}

/* Runs the test's plan up to the flip's gate and approves the flip. */
static void
run_to_the_flip_and_approve(void)
{
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "flip", "--as", "alice",
	    NULL), 0);
}

/* Ends a test that passed: its handles closed, then what it started and
 * made removed (itest_cleanup; a test that failed is cleaned up by the
 * next one's begin, or at exit). */
static void
end(struct plan *p, struct step_ctx *c)
{
	step_ctx_close(c);
	plan_free(p);
	itest_cleanup();
}

static void
test_whole_plan_with_gates(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_queue_info qi;
	char status[32], err[512], name[160];

	(void)state;
	begin("whole", &p, &c, NULL, "1s");
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(flag_now(p), 0);          /* not before the approval */
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "flip", "--as", "alice",
	    NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(flag_now(p), 1);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "remove_old", "--as",
	    "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 0);

	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
		    BROKER_NOT_FOUND);
	}
	/* Every old message came out at the destination: 3 queues x 3. */
	snprintf(name, sizeof(name), "%s.dest", prefix);
	assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)), 0);
	assert_int_equal(qi.messages, 9);
	assert_int_equal(itest_cutover("history", "--db", db, "--verify", NULL), 0);
	end(p, &c);
}

static void
test_crash_between_flip_and_its_record(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32];
	pid_t pid;

	(void)state;
	begin("flipcrash", &p, &c, NULL, "1s");
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "5", "--as", "alice",
	    NULL), 0);
	/* The flag service takes the flip; the engine dies before recording it. */
	pid = itest_start_run(db, planfile, "crash:flip.confirmed");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	assert_int_equal(flag_now(p), 1);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 0);

	/* The restarted engine reads the flag instead of flipping again. */
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	assert_true(wait_step(5, "succeeded", 1));
	end(p, &c);
}

/* The engine (`cutover run`, or `cutover serve` when SERVE) stopped by SIG
 * (exiting EXIT) in the middle of the watch, TEST naming the plan; run
 * again, it resumes the watch where it was. */
static void
stopped_during_watch(const char *test, bool serve, int sig, int exit_status)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct store_step st;
	char status[32];
	int64_t started, deadline;
	pid_t pid;

	begin(test, &p, &c, NULL, "1s");
	run_to_the_flip_and_approve();
	pid = serve ? itest_start_serve(db) : itest_start_run(db, planfile, NULL);
	assert_true(wait_step(5, "running", 30000));
	/* Let it sample a few times, then stop it. */
	assert_true(wait_ticks(3, 60000));
	started = step_number(5, "started_ms");
	deadline = step_number(5, "deadline_ms");
	assert_true(started > 0);
	assert_true(deadline > started);
	kill(pid, sig);
	assert_int_equal(itest_wait(pid), exit_status);
	/* Stopped with the watch in flight: neither finished nor failed. */
	assert_int_equal(read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);

	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	/* The watch kept its start; its deadline never moved earlier. */
	assert_int_equal(step_number(5, "started_ms"), started);
	assert_true(step_number(5, "deadline_ms") >= deadline);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "flip.requested"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 1);
	end(p, &c);
}

static void
test_killed_during_watch_keeps_its_deadline(void **state)
{
	(void)state;
	stopped_during_watch("watchkill", false, SIGKILL, 128 + SIGKILL);
}

/* SIGTERM mid-watch: `run` exits 4, and the watch resumes with its start
 * and deadline. */
static void
test_sigterm_during_watch_resumes(void **state)
{
	(void)state;
	stopped_during_watch("watchterm", false, SIGTERM, 4);
}

/* `cutover serve` stopped by SIGTERM mid-watch, as systemd stops
 * cutover.service: a clean exit (0), the watch left
 * running, and resumed with its start and deadline. */
static void
test_serve_sigterm_during_watch_resumes(void **state)
{
	(void)state;
	stopped_during_watch("serveterm", true, SIGTERM, 0);
}

static int
print_alert(const struct store_alert *a, void *arg)
{
	(void)arg;
	printf("alert %s: %s\n", a->kind, a->message);
	return 0;
}

/* Prints the test plan's alerts, for a failure's diagnosis. */
static void
show_alerts(void)
{
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	if (store_open(db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, plan_name, &sp, err, sizeof(err)) == 0)
		store_each_alert(s, sp.id, 0, print_alert, NULL, err, sizeof(err));
	store_close(s);
}

/* Killed right after the watch read a probe and before the engine recorded
 * that tick: the restarted watch still accounts for the probe (it is read
 * again), so no probe is called lost and no alert holds the watch. */
static void
test_killed_after_the_watch_read_a_probe(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32];
	int ended, alerts;
	pid_t pid;

	(void)state;
	begin("probekill", &p, &c, NULL, "1s");
	run_to_the_flip_and_approve();
	pid = itest_start_run(db, planfile, "crash:watch.probe_taken");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	assert_true(step_number(5, "ticks") >= 1);
	/* Resumed: the watch ends (remove_old waits at its gate) within a
	 * generous ceiling; a probe called lost would hold it on the alert. */
	pid = itest_start_run(db, planfile, NULL);
	ended = wait_step(6, "waiting_approval", 60000);
	if (!ended)
		kill(pid, SIGKILL);
	itest_wait(pid);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	alerts = itest_count(&t, "alert.raised");
	show_alerts();
	end(p, &c);
	assert_int_equal(alerts, 0);
	assert_true(ended);
}

/* `cutover VERB remove_old --as bob` (approve or retry), then the plan runs
 * to exit RUN_RC, ending with STATUS; *T gets its history. */
static void
remove_old_then_run(const char *verb, int run_rc, const char *status,
    struct itest_history *t)
{
	char got[32];

	assert_int_equal(itest_cutover(verb, "--db", db, plan_name, "remove_old", "--as",
	    "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), run_rc);
	itest_read_history(db, plan_name, t, got, sizeof(got));
	assert_string_equal(got, status);
}

/* remove_old leaves an old queue that has a consumer and fails; the two
 * it deleted are in the history all the same, and a retry records the
 * third, each deletion exactly once. */
static void
test_removals_recorded_when_one_is_left(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker *consumer = NULL;
	char err[1024], name[3][160];

	(void)state;
	begin("leftone", &p, &c, NULL, "1s");
	for (int s = 1; s <= 3; s++)
		snprintf(name[s - 1], sizeof(name[0]), "%s.old.%d", prefix, s);
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(broker_open(getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_USER"),
	    "env:CUTOVER_TEST_PASSWORD", 5000, &consumer, err, sizeof(err)), 0);
	assert_int_equal(broker_consume(consumer, name[1], 1, err, sizeof(err)), 0);
	remove_old_then_run("approve", 1, "failed", &t);
	assert_int_equal(itest_count(&t, "step.failed"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 2);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[0]), 1);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[1]), 0);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name[2]), 1);

	/* The consumer goes; the retried step removes the last one. */
	assert_int_equal(broker_cancel(consumer, err, sizeof(err)), 0);
	broker_close(consumer);
	remove_old_then_run("retry", 0, "succeeded", &t);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	for (int s = 0; s < 3; s++)
		assert_int_equal(itest_count_named(&t, "old.queue_removed", name[s]), 1);
	/* The retry found the first two gone: already recorded, not again. */
	assert_int_equal(itest_count(&t, "old.queue_gone"), 0);
	assert_int_equal(itest_cutover("history", "--db", db, "--verify", NULL), 0);
	end(p, &c);
}

/* Through the engine: the watch ends and records its last sample of each
 * old queue; while remove_old waits at its gate, a message goes into old
 * queue 2 and out again. The old path was used after the watch: remove_old
 * deletes the other two and makes that one wait its TTL again from then
 * (the step's result says so while it runs, and the run says what it waits
 * for); with nothing more published, it goes too and the plan succeeds,
 * without anyone acting. */
static void
test_publish_at_the_remove_gate_waits_for_the_queue(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_delivery d;
	struct broker_queue_info qi;
	struct store_step st;
	json_t *j = NULL, *q = NULL;
	const json_t *e, *found = NULL;
	char err[1024], name[160], path[256], status[32];
	size_t i;
	int tries;
	pid_t pid;

	(void)state;
	begin("gatepub", &p, &c, NULL, "1s");
	snprintf(name, sizeof(name), "%s.old.2", prefix);
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	publish_old(&c, name);
	assert_int_equal(broker_get(c.amqp, name, false, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	/* The statistics show it: 3 publishes before the flip, now 4. */
	snprintf(path, sizeof(path), "/api/queues/%%2F/%s", name);
	for (tries = 0; ; tries++) {
		assert_int_equal(mgmt_request(c.mgmt, "GET", path, NULL, &q, NULL, err,
		    sizeof(err)), 0);
		if (json_integer_value(json_object_get(json_object_get(q, "message_stats"),
		    "publish")) == 4)
			break;
		json_decref(q);
		if (tries == 120)
			fail_msg("the statistics never counted the publish into %s", name);
		itest_sleep_ms(500);
	}
	json_decref(q);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	pid = itest_start_run(db, planfile, NULL);
	for (tries = 0; found == NULL; tries++) {
		if (tries == 600)
			fail_msg("remove_old never said it waits for %s", name);
		itest_sleep_ms(100);
		if (read_step(6, &st) != 0 || st.result_json == NULL ||
		    strcmp(st.status, "running") != 0) {
			store_step_clear(&st);
			continue;
		}
		json_decref(j);
		j = json_loads(st.result_json, 0, NULL);
		store_step_clear(&st);
		json_array_foreach(json_object_get(j, "entries"), i, e)
			if (strcmp(json_string_value(json_object_get(e, "name")), name) == 0 &&
			    strcmp(json_string_value(json_object_get(e, "outcome")),
			    "waiting") == 0)
				found = e;
	}
	assert_non_null(strstr(json_string_value(json_object_get(found, "reason")),
	    "1 publish into it since the watch's last sample"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"),
	    "removed")), 2);
	json_decref(j);
	assert_int_equal(itest_wait(pid), 0);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	assert_int_equal(itest_count_named(&t, "old.queue_removed", name), 1);
	assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
	    BROKER_NOT_FOUND);
	end(p, &c);
}

/* Killed by SIGKILL right after remove_old deleted a queue and before the
 * deletion was recorded: the restarted engine runs the step again, finds
 * that queue gone and records it so, and removes the rest. Every old queue
 * is accounted for in the history exactly once. */
static void
test_killed_during_remove_old(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	struct broker_queue_info qi;
	char status[32], err[512], name[160];
	pid_t pid;
	int left = 0;

	(void)state;
	begin("rmkill", &p, &c, NULL, "1s");
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "remove_old", "--as",
	    "bob", NULL), 0);
	pid = itest_start_run(db, planfile, "crash:remove_old.deleted");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		left += broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)) == 0;
	}
	assert_int_equal(left, 2);             /* one deleted, then the crash */

	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 0);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 2);
	assert_int_equal(itest_count(&t, "old.queue_gone"), 1);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		assert_int_equal(itest_count_named(&t, "old.queue_removed", name) +
		    itest_count_named(&t, "old.queue_gone", name), 1);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)),
		    BROKER_NOT_FOUND);
	}
	end(p, &c);
}

/* Asserts that the test's plan is aborted with its rollback confirmed
 * (the flag read back off from Unleash: P's flag) and no old queue
 * removed. */
static void
assert_rolled_back(const struct plan *p)
{
	struct itest_history t;
	char status[32];

	assert_int_equal(flag_now(p), 0);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "aborted");
	assert_int_equal(itest_count(&t, "rollback.requested"), 1);
	assert_int_equal(itest_count(&t, "rollback.confirmed"), 1);
	assert_int_equal(itest_count(&t, "plan.aborted"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
}

static void
test_abort_after_the_flip_rolls_back(void **state)
{
	struct step_ctx c;
	struct plan *p;

	(void)state;
	begin("rollback", &p, &c, NULL, "1s");
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as", "carol",
	    "--comment", "consumers saw duplicates", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
	assert_rolled_back(p);
	end(p, &c);
}

/* Asserts that the test's three old queues still exist (C's broker). */
static void
assert_old_queues_left(struct step_ctx *c)
{
	struct broker_queue_info qi;
	char err[512], name[160];

	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		if (broker_queue_inspect(c->amqp, name, &qi, err, sizeof(err)) != 0)
			fail_msg("old queue '%s' is gone: %s", name, err);
	}
}

/* An abort while the engine runs the watch (a long allowance keeps it
 * running): the running engine acts on it at its next turn, turns the flag
 * back off (read back from Unleash), marks the plan aborted and exits 1;
 * the watch never succeeds, remove_old never runs, the old queues stay. */
static void
test_abort_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	pid_t pid;

	(void)state;
	begin("watchabort", &p, &c, NULL, "10m");
	run_to_the_flip_and_approve();
	pid = itest_start_run(db, planfile, NULL);
	assert_true(wait_step(5, "running", 30000));
	assert_true(wait_ticks(2, 60000));
	assert_int_equal(flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as", "carol",
	    "--comment", "the watch shows duplicates", NULL), 0);
	assert_true(wait_plan("aborted", 60000));
	assert_int_equal(itest_wait(pid), 1);
	assert_rolled_back(p);
	assert_int_equal(read_step(5, &st), 0);
	assert_string_not_equal(st.status, "succeeded");
	store_step_clear(&st);
	assert_int_equal(read_step(6, &st), 0);
	assert_string_equal(st.status, "pending");
	store_step_clear(&st);
	assert_old_queues_left(&c);
	end(p, &c);
}

/* An abort at each step's gate, one plan per step: the engine marks the
 * plan aborted and exits 1; before the flip nothing is rolled back and
 * the flag was never on; from the watch's gate on, the flag is turned
 * back off and read back; no old queue is removed. The engine reuses one
 * step context for the rollback: run with an AddressSanitizer build of
 * cutover (scripts/test does in CI), a read of a step's freed inputs
 * there is an error. */
static void
test_abort_at_each_gate(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char test[32], status[32];

	(void)state;
	for (unsigned k = 0; k < sizeof(step_names) / sizeof(step_names[0]); k++) {
		snprintf(test, sizeof(test), "gate%u", k);
		gates = 1u << k;
		begin(test, &p, &c, NULL, "1s");
		if (itest_cutover("run", "--db", db, planfile, NULL) != 3)
			fail_msg("run did not stop at %s's gate", step_names[k]);
		assert_int_equal(flag_now(p), k > 4 ? 1 : 0);
		assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as",
		    "carol", "--comment", step_names[k], NULL), 0);
		assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
		itest_read_history(db, plan_name, &t, status, sizeof(status));
		if (strcmp(status, "aborted") != 0)
			fail_msg("aborted at %s's gate, the plan is '%s'", step_names[k], status);
		assert_int_equal(itest_count(&t, "plan.aborted"), 1);
		assert_int_equal(itest_count(&t, "rollback.confirmed"), k > 4 ? 1 : 0);
		assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
		assert_int_equal(flag_now(p), 0);
		assert_old_queues_left(&c);
		end(p, &c);
	}
}

/* GET PATH from a serve on 127.0.0.1:PORT (curl); the body into OUT.
 * Returns the HTTP status, 0 when nothing answered. */
static int
http_get(unsigned port, const char *path, char *out, size_t outlen)
{
	char cmd[256], *nl;
	size_t n;
	FILE *f;
	int status = 0;

	snprintf(cmd, sizeof(cmd), "curl -s -m 10 -w '\\n%%{http_code}' "
	    "http://127.0.0.1:%u%s", port, path);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, outlen - 1, f);
	out[n] = '\0';
	pclose(f);
	if ((nl = strrchr(out, '\n')) != NULL) {
		status = atoi(nl + 1);
		*nl = '\0';
	}
	return status;
}

/* Whether file PATH holds TEXT. */
static bool
file_has(const char *path, const char *text)
{
	char line[8192];
	bool found = false;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return false;
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = strstr(line, text) != NULL;
	fclose(f);
	return found;
}

/* Fills the filesystem holding PATH's directory with a file PATH until a
 * write finds it full. Returns 0, or -1 when it could not. */
static int
fill_disk(const char *path)
{
	static char chunk[65536];
	FILE *f = fopen(path, "w");
	int rc = -1;

	if (f == NULL)
		return -1;
	setvbuf(f, NULL, _IONBF, 0);
	for (;;)
		if (fwrite(chunk, 1, sizeof(chunk), f) != sizeof(chunk)) {
			rc = errno == ENOSPC ? 0 : -1;
			break;
		}
	for (size_t n = sizeof(chunk) / 2; n >= 1; n /= 2)	/* to the last bytes */
		while (fwrite(chunk, 1, n, f) == n)
			;
	fclose(f);
	return rc;
}

/* The disk holding the database fills up during the watch: `cutover run`
 * stops with 4 ("stopped: run again to resume"), saying the disk is full,
 * and records nothing false: the plan is still running and the watch is
 * not failed. With space freed, run again resumes the watch where it was
 * (the abort that ends the test rolls the flag back). The database lives
 * on a 4 MB tmpfs this test mounts (it needs root, as the suite has). */
static void
test_disk_full_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	char mnt[300], filler[340], saved[256], listen[64], out[65536], conf[300];
	char hooklog[300];
	unsigned port, hook;
	pid_t receiver;
	FILE *f;
	int64_t until;
	pid_t pid;
	int rc, code;

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	assert_int_equal(mkdir(mnt, 0700), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=4m") != 0)
		fail_msg("mounting a 4 MB tmpfs at %s: %s (the suite runs as root)", mnt,
		    strerror(errno));
	snprintf(saved, sizeof(saved), "%s", dir);
	snprintf(dir, sizeof(dir), "%s", mnt);
	begin("diskfull", &p, &c, NULL, "10m");
	snprintf(dir, sizeof(dir), "%s", saved);
	snprintf(filler, sizeof(filler), "%s/filler", mnt);
	run_to_the_flip_and_approve();
	pid = itest_start_run(db, planfile, NULL);
	assert_true(wait_step(5, "running", 30000));
	assert_true(wait_ticks(2, 60000));
	assert_int_equal(fill_disk(filler), 0);
	rc = itest_wait(pid);
	if (rc != 4)
		fail_msg("cutover run exited %d on a full disk, not 4 (stopped, resume me)", rc);
	assert_true(wait_plan("running", 1000));
	assert_int_equal(read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);
	/* serve on the same full disk: held, and /healthz, /metrics and a
	 * notifier say why; once space is freed it goes on by itself, and
	 * the notifier is told. */
	port = itest_free_port();
	hook = itest_free_port();
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
	snprintf(conf, sizeof(conf), "%s/serve.yaml", saved);
	snprintf(hooklog, sizeof(hooklog), "%s/hook.log", saved);
	assert_non_null(f = fopen(conf, "w"));
	fprintf(f, "listen: %s\ndb: %s\nnotifiers:\n  - { name: hook, kind: webhook, "
	    "url: 'http://127.0.0.1:%u/hook', events: [plan_finished] }\n", listen, db, hook);
	fclose(f);
	{
		char script[512], portstr[16], ready[360];
		char *rargv[] = { "/usr/bin/python3", script, portstr, hooklog, NULL };

		snprintf(script, sizeof(script), "%s/tests/integration/notify_receiver.py",
		    getenv("CUTOVER_SOURCE_DIR"));
		snprintf(portstr, sizeof(portstr), "%u", hook);
		snprintf(out, sizeof(out), "%s/hook.out", saved);
		snprintf(ready, sizeof(ready), "%s.ready", hooklog);
		receiver = itest_spawn(out, rargv);
		for (until = now_ms() + 30000; access(ready, F_OK) != 0; itest_sleep_ms(20))
			if (now_ms() > until)
				fail_msg("the webhook receiver on port %u did not start", hook);
	}
	{
		char *argv[] = { (char *)getenv("CUTOVER_BINARY"), "serve", "--config", conf,
		    NULL };

		snprintf(out, sizeof(out), "%s/serve.log", saved);
		pid = itest_spawn(out, argv);
	}
	until = now_ms() + 60000;
	while ((code = http_get(port, "/healthz", out, sizeof(out))) != 503 ||
	    strstr(out, "disk full") == NULL) {
		if (now_ms() > until)
			fail_msg("/healthz never said disk full: %d %s", code, out);
		itest_sleep_ms(200);
	}
	fprintf(stderr, "# /healthz on a full disk: %s\n", out);
	assert_int_equal(http_get(port, "/metrics", out, sizeof(out)), 200);
	assert_non_null(strstr(out, "cutover_database_disk_full 1"));
	for (until = now_ms() + 30000; !file_has(hooklog, "\\\"event\\\":\\\"disk_full\\\"");
	    itest_sleep_ms(100))
		if (now_ms() > until)
			fail_msg("the notifier was not told the disk is full (%s)", hooklog);
	assert_int_equal(unlink(filler), 0);
	until = now_ms() + 60000;
	while ((code = http_get(port, "/healthz", out, sizeof(out))) != 200) {
		if (now_ms() > until)
			fail_msg("/healthz after space was freed: %d %s", code, out);
		itest_sleep_ms(200);
	}
	assert_int_equal(http_get(port, "/metrics", out, sizeof(out)), 200);
	assert_non_null(strstr(out, "cutover_database_disk_full 0"));
	for (until = now_ms() + 30000;
	    !file_has(hooklog, "\\\"event\\\":\\\"disk_full_resolved\\\""); itest_sleep_ms(100))
		if (now_ms() > until)
			fail_msg("the notifier was not told the disk has space again (%s)",
			    hooklog);
	assert_int_equal(itest_stop(pid), 0);
	assert_int_equal(itest_stop(receiver), 0);
	/* Resumed by run: the watch ticks again, then the abort ends it. */
	pid = itest_start_run(db, planfile, NULL);
	assert_true(wait_ticks(2, 60000));
	assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as", "carol",
	    "--comment", "the disk filled up", NULL), 0);
	assert_true(wait_plan("aborted", 60000));
	assert_int_equal(itest_wait(pid), 1);
	assert_rolled_back(p);
	end(p, &c);
}

/* The database lost under a plan that had flipped: a fresh database and
 * the same plan refuse to start it over (step 1 fails naming what the
 * broker and the flag service show, and --new), and the operator's --new
 * starts it anew. A flag that reads on with no ladder of the plan is no
 * run of it (a flag turned on by hand, or shared): that plan goes ahead
 * and declares its ladder; its database then lost, the flag on beside
 * that ladder is. */
static void
test_lost_database_is_not_started_over(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	json_t *r = NULL;
	char err[512];

	(void)state;
	begin("lostdb", &p, &c, NULL, "1s");
	if (flag_switch(p, true, &r, err, sizeof(err)) != 0)
		fail_msg("turning the flag on: %s", err);
	json_decref(r);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(read_step(0, &st), 0);
	assert_string_equal(st.status, "succeeded");
	store_step_clear(&st);
	assert_int_equal(unlink(db), 0);

	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
	assert_int_equal(read_step(0, &st), 0);
	assert_string_equal(st.status, "failed");
	fprintf(stderr, "# refused: %s\n", st.error);
	assert_non_null(strstr(st.error, "has no earlier record in this database"));
	assert_non_null(strstr(st.error, "reads on beside its ladder"));
	assert_non_null(strstr(st.error, "--new"));
	store_step_clear(&st);
	assert_int_equal(flag_now(p), 1);	/* nothing was switched */
	assert_int_equal(unlink(db), 0);
	/* Told to: measured, declared, canaried, and waiting at the flip. */
	assert_int_equal(itest_cutover("run", "--new", "--db", db, planfile, NULL), 3);
	assert_int_equal(read_step(0, &st), 0);
	assert_string_equal(st.status, "succeeded");
	store_step_clear(&st);
	end(p, &c);
}

/* test_disk_full_during_the_watch's teardown, also when it failed: its
 * tmpfs unmounted. */
static int
unmount_small(void **state)
{
	char mnt[300];

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/small", dir);
	if (umount2(mnt, MNT_DETACH) != 0)
		fprintf(stderr, "unmounting %s: %s\n", mnt, strerror(errno));
	rmdir(mnt);
	return 0;
}

/* Runs `cutover run` on the test's plan with the flag service unreachable
 * from it: its HTTP goes through a proxy that refuses every connection
 * (http_proxy, honoured by libcurl), except to 127.0.0.1 (no_proxy), where
 * the broker's management API is; the plan's flag URL names the test
 * Unleash as localhost. Returns the exit status. */
static int
run_with_the_flag_service_down(void)
{
	int rc;

	setenv("http_proxy", "http://127.0.0.1:1", 1);
	setenv("no_proxy", "127.0.0.1", 1);
	rc = itest_cutover("run", "--db", db, planfile, NULL);
	unsetenv("http_proxy");
	unsetenv("no_proxy");
	return rc;
}

/* An abort after the flip while the flag service is down: the rollback
 * cannot be confirmed, so the plan is not marked aborted (abort.failed
 * says why), the flag is still on and nothing claims otherwise, and the
 * old queues stay. With the service back, the abort rolls back. */
static void
test_abort_with_the_flag_service_down(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct itest_history t;
	char status[32], url[300];
	const char *u = getenv("CUTOVER_TEST_UNLEASH_URL");

	(void)state;
	if (u == NULL || strncmp(u, "http://127.0.0.1:", 17) != 0)
		fail_msg("CUTOVER_TEST_UNLEASH_URL is not http://127.0.0.1:PORT: %s",
		    u ? u : "(unset)");
	snprintf(url, sizeof(url), "http://localhost:%s", u + 17);
	begin("abortdown", &p, &c, url, "1s");
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);
	assert_int_equal(flag_now(p), 1);
	assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as", "carol",
	    NULL), 0);
	(void)run_with_the_flag_service_down();
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_not_equal(status, "aborted");
	assert_int_equal(itest_count(&t, "abort.failed"), 1);
	assert_int_equal(itest_count(&t, "plan.aborted"), 0);
	assert_int_equal(itest_count(&t, "rollback.confirmed"), 0);
	assert_int_equal(flag_now(p), 1);
	assert_old_queues_left(&c);

	/* The service back: the abort goes through. */
	assert_int_equal(itest_cutover("abort", "--db", db, plan_name, "--as", "carol",
	    NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
	assert_rolled_back(p);
	assert_old_queues_left(&c);
	end(p, &c);
}

static void
test_flag_service_down_stops_the_plan(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	struct itest_history t;
	char status[32];

	(void)state;
	begin("flagdown", &p, &c, "http://127.0.0.1:1", "1s");
	run_to_the_flip_and_approve();
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
	assert_int_equal(read_step(4, &st), 0);
	assert_string_equal(st.status, "failed");
	assert_non_null(st.error);
	assert_non_null(strstr(st.error, "attempts"));
	store_step_clear(&st);
	assert_int_equal(read_step(5, &st), 0);
	assert_string_equal(st.status, "pending");  /* the plan does not go on */
	store_step_clear(&st);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "failed");
	assert_int_equal(itest_count(&t, "flip.failed"), 1);
	assert_int_equal(itest_count(&t, "flip.confirmed"), 0);
	end(p, &c);
}

static void
test_old_publish_after_the_flip_moves_the_deadline(void **state)
{
	struct step_ctx c;
	struct plan *p;
	char name[160];
	int64_t deadline, moved = -1, ticks, until;
	pid_t pid;
	int alerts = 0;

	(void)state;
	begin("latepub", &p, &c, NULL, "30s");
	run_to_the_flip_and_approve();
	pid = itest_start_run(db, planfile, NULL);
	assert_true(wait_step(5, "running", 30000));
	assert_true(wait_ticks(2, 60000));
	/* Past the window in which the management statistics may still be
	 * counting publishes from before the flip (watch.c: OLD_STATS_LAG_MS). */
	while (now_ms() < step_number(5, "started_ms") + 11000)
		itest_sleep_ms(200);
	deadline = step_number(5, "deadline_ms");
	/* A producer that was not flipped writes into the old path. */
	snprintf(name, sizeof(name), "%s.old.3", prefix);
	publish_old(&c, name);
	/* The alert is old_publish, not any alert (the management statistics
	 * show the publish within seconds; a generous ceiling). */
	for (until = now_ms() + 60000; (alerts = open_alerts("old_publish")) == 0 &&
	    now_ms() < until; )
		itest_sleep_ms(100);
	assert_int_equal(alerts, 1);
	/* The alert is written during the tick, the state with the moved
	 * deadline when the tick ends: wait for it (up to a few ticks). */
	for (until = now_ms() + 30000; (moved = step_number(5, "deadline_ms")) <= deadline &&
	    now_ms() < until; )
		itest_sleep_ms(100);
	assert_true(moved > deadline);
	/* The watch does not pass with the alert open: it samples on, and is
	 * still running. */
	ticks = step_number(5, "ticks");
	assert_true(wait_ticks(ticks + 2, 60000));
	{
		struct store_step st;

		assert_int_equal(read_step(5, &st), 0);
		assert_string_equal(st.status, "running");
		store_step_clear(&st);
	}
	assert_int_equal(open_alerts("old_publish"), 1);
	kill(pid, SIGTERM);
	assert_int_equal(itest_wait(pid), 4);
	end(p, &c);
}

/* Open alerts of the test's plan: their ids into IDS (at most MAX) and
 * whether one of KIND is among them. */
struct open_alerts {
	const char *kind;
	int64_t ids[16];
	int n;
	bool found;
};

static int
collect_open(const struct store_alert *a, void *arg)
{
	struct open_alerts *o = arg;

	if (o->n < 16)
		o->ids[o->n++] = a->id;
	if (strcmp(a->kind, o->kind) == 0)
		o->found = true;
	return 0;
}

static void
read_open_alerts(struct open_alerts *o, const char *kind)
{
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];

	memset(o, 0, sizeof(*o));
	o->kind = kind;
	if (store_open(db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, plan_name, &sp, err, sizeof(err)) == 0)
		(void)store_each_alert(s, sp.id, 1, collect_open, o, err, sizeof(err));
	store_close(s);
}

static pid_t flagoff_pid;

/* Stops the background run, removes the broker objects of
 * test_flag_turned_off_during_the_watch, passed or not. */
static int
flagoff_teardown(void **state)
{
	struct step_ctx c;
	struct plan *p = NULL;
	struct plan_errors errs = { 0 };
	char err[512];

	(void)state;
	if (flagoff_pid > 0) {
		kill(flagoff_pid, SIGKILL);
		(void)itest_wait(flagoff_pid);
		flagoff_pid = 0;
	}
	if (plan_load_file(planfile, &p, &errs) == 0 &&
	    step_ctx_open(&c, p, err, sizeof(err)) == 0)
		end(p, &c);
	else
		plan_free(p);
	plan_errors_free(&errs);
	return 0;
}

/* The plan's flag turned off behind its back during the watch (its own
 * Unleash feature): flag_off is raised, the watch runs past the deadline
 * it had and does not end; on again (and acknowledged), the plan reaches
 * remove_old's gate; off again while the gate waits, remove_old fails
 * deleting nothing and the plan does not succeed; on, retried, it does. */
static void
test_flag_turned_off_during_the_watch(void **state)
{
	struct step_ctx c;
	struct plan *p;
	struct store_step st;
	struct open_alerts oa;
	struct broker_queue_info qi;
	struct itest_history t;
	char status[32], err[512], name[160], id[32];
	int64_t deadline, until;

	(void)state;
	begin("flagoff", &p, &c, NULL, "1s");
	run_to_the_flip_and_approve();
	flagoff_pid = itest_start_run(db, planfile, NULL);
	assert_true(wait_step(5, "running", 30000));
	for (int i = 0; i < 100 && step_number(5, "ticks") < 2; i++)
		itest_sleep_ms(100);
	deadline = step_number(5, "deadline_ms");
	itest_feature_set(feature, false);

	until = now_ms() + 30000;
	for (read_open_alerts(&oa, "flag_off"); !oa.found; read_open_alerts(&oa,
	    "flag_off")) {
		if (now_ms() > until)
			fail_msg("no flag_off alert within 30 s");
		itest_sleep_ms(100);
	}
	/* Past the deadline it had and the statistics' window: still on. */
	while (now_ms() < deadline + 2000 ||
	    now_ms() < step_number(5, "started_ms") + 12000)
		itest_sleep_ms(200);
	assert_int_equal(read_step(5, &st), 0);
	assert_string_equal(st.status, "running");
	store_step_clear(&st);
	kill(flagoff_pid, SIGTERM);
	assert_int_equal(itest_wait(flagoff_pid), 4);
	flagoff_pid = 0;

	/* On again, the alerts acknowledged: the watch ends at its new
	 * deadline, and the plan waits at remove_old's gate. */
	itest_feature_set(feature, true);
	read_open_alerts(&oa, "flag_off");
	for (int i = 0; i < oa.n; i++) {
		snprintf(id, sizeof(id), "%lld", (long long)oa.ids[i]);
		assert_int_equal(itest_cutover("ack", "--db", db, plan_name, id, "--as",
		    "carol", NULL), 0);
	}
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 3);

	/* Off while the gate waits: remove_old deletes nothing. */
	itest_feature_set(feature, false);
	assert_int_equal(itest_cutover("approve", "--db", db, plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 1);
	assert_int_equal(read_step(6, &st), 0);
	assert_string_equal(st.status, "failed");
	assert_non_null(st.error);
	assert_non_null(strstr(st.error, "remove_old deletes nothing"));
	assert_non_null(strstr(st.error, feature));
	store_step_clear(&st);
	for (int s = 1; s <= 3; s++) {
		snprintf(name, sizeof(name), "%s.old.%d", prefix, s);
		assert_int_equal(broker_queue_inspect(c.amqp, name, &qi, err, sizeof(err)), 0);
	}
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_not_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "plan.succeeded"), 0);

	/* On again and retried: it removes them and succeeds. */
	itest_feature_set(feature, true);
	assert_int_equal(itest_cutover("retry", "--db", db, plan_name, "remove_old",
	    "--as", "bob", NULL), 0);
	assert_int_equal(itest_cutover("run", "--db", db, planfile, NULL), 0);
	itest_read_history(db, plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "succeeded");
	assert_int_equal(itest_count(&t, "old.queue_removed"), 3);
	step_ctx_close(&c);
	plan_free(p);
}

/* ARGV[1], when given, runs only the tests whose name matches it. */
int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_plan_with_gates),
		cmocka_unit_test(test_crash_between_flip_and_its_record),
		cmocka_unit_test(test_killed_during_watch_keeps_its_deadline),
		cmocka_unit_test(test_sigterm_during_watch_resumes),
		cmocka_unit_test(test_serve_sigterm_during_watch_resumes),
		cmocka_unit_test(test_killed_after_the_watch_read_a_probe),
		cmocka_unit_test(test_removals_recorded_when_one_is_left),
		cmocka_unit_test(test_publish_at_the_remove_gate_waits_for_the_queue),
		cmocka_unit_test(test_killed_during_remove_old),
		cmocka_unit_test(test_abort_after_the_flip_rolls_back),
		cmocka_unit_test(test_abort_during_the_watch),
		cmocka_unit_test(test_abort_with_the_flag_service_down),
		cmocka_unit_test(test_abort_at_each_gate),
		cmocka_unit_test_teardown(test_disk_full_during_the_watch, unmount_small),
		cmocka_unit_test(test_lost_database_is_not_started_over),
		cmocka_unit_test(test_flag_service_down_stops_the_plan),
		cmocka_unit_test(test_old_publish_after_the_flip_moves_the_deadline),
		cmocka_unit_test_teardown(test_flag_turned_off_during_the_watch,
		    flagoff_teardown),
	};
	const char *tmp = getenv("TMPDIR");
	char cmd[300];
	int rc;

	snprintf(dir, sizeof(dir), "%s/itest_cutover.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	rc = itest_run_part("tests", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
	itest_cleanup();	/* what the last test left, while its plan file exists */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0 && rc == 0)
		rc = 1;
	return rc;
}
