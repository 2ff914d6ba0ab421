/* test_watch (integration): the watch step on a real RabbitMQ node
 * (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password
 * env:CUTOVER_TEST_PASSWORD) and a real SQLite file in a temporary
 * directory, called tick after tick the way the engine calls it: each
 * tick's state is written to the store and read back from it for the next
 * tick, and the broker connections are reopened midway (a restart).
 * A 100 ms ladder, old queues of 2 s TTL, a 200 ms interval, a 1 s
 * allowance and a probe every second. Checks the samples, the deadline
 * (never early, moved by a publish into the old path), the probes, and the
 * alerts (old_publish, old_new_queue, old_not_drained, parking,
 * ladder_drift (a binding, a level queue or the parking queue gone), probe
 * (lost, late, or early under a policy that shortens the levels),
 * broker_unreachable), none of which lets the watch end until it is
 * acknowledged. The plan's flag is a feature of the real Unleash
 * (CUTOVER_TEST_UNLEASH_URL, admin token CUTOVER_TEST_UNLEASH_TOKEN), one
 * per test, created on and deleted at the end; the watch reads it every
 * tick, and turning it off (or deleting it) under the watch raises
 * flag_off (flag_unreadable), holds the watch and blocks remove_old.
 * Without the environment the tests fail, never skip. Every object is
 * named after the test and the pid, and removed at the end. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "itest_broker.h"
#include "itest_run.h"
#include "itest_unleash.h"
#include "ladder.h"
#include "metrics.h"
#include "plan.h"
#include "publish.h"
#include "step.h"
#include "store.h"
#include "topology.h"

#define OLD_TTL_MS	2000
#define ALLOWANCE_MS	1000
#define INTERVAL_MS	200
#define STATS_LAG_MS	10000	/* the watch's OLD_STATS_LAG_MS */
#define MAX_OLD		4

static char prefix[64];     /* itest<pid>.<test> */
static const char *queue_type = "quorum";	/* the ladder's; setup resets it */
static int64_t old_ttl_ms = OLD_TTL_MS;	/* start()'s old queues; setup resets it */
static char plan_name[64];  /* itest<pid>-<test> */

static void
set_names(const char *test)
{
	snprintf(prefix, sizeof(prefix), "itest%ld.%s", (long)getpid(), test);
	snprintf(plan_name, sizeof(plan_name), "itest%ld-%s", (long)getpid(), test);
}

/* The shared clock (clock.h), under the name this file calls it by. */
#define now_ms() clock_now_ms()

static void
sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

static const char *
need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("set %s (and CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, "
		    "CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD; scripts/test and "
		    "ctest do)", name);
	return v;
}

/* How long a test waits for an alert it expects: a ceiling, not a bound
 * (the wait ends as soon as the alert is raised). */
#define ALERT_CEILING_MS 30000

/* What a test created, removed by its teardown whether it passed or not. */
struct fixture {
	struct plan *p;
	struct step_ctx c;
	struct store *s;
	int64_t plan_id;
	char dir[64], db[128];
	json_t *measured;
	json_t *state;              /* as read back from the store */
	int64_t flip_ms;
	char old[MAX_OLD + 1][LADDER_NAME_MAX];
	int nold;                   /* old[nold] may hold an extra queue */
	bool extra;
	char feature[64];           /* the test's Unleash feature, "" when none */
	int64_t jump_ms;            /* added to the step clock (c.now_ms): a
	                             * wall clock that jumped */
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	queue_type = "quorum";
	old_ttl_ms = OLD_TTL_MS;
	*state = f;
	return f == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	struct topology t;
	char name[LADDER_NAME_MAX], err[512];

	if (f->p != NULL && f->c.amqp != NULL) {
		if (topology_build(f->p, &t, err, sizeof(err)) == 0) {
			for (size_t i = 0; i < t.nexchanges; i++)
				(void)broker_exchange_delete(f->c.amqp, t.exchanges[i].name,
				    false, err, sizeof(err));
			for (size_t i = 0; i < t.nqueues; i++)
				(void)broker_queue_delete(f->c.amqp, t.queues[i].name, 0,
				    NULL, err, sizeof(err));
			topology_free(&t);
		}
		snprintf(name, sizeof(name), "cutover.probe.%s", f->p->name);
		(void)broker_queue_delete(f->c.amqp, name, 0, NULL, err, sizeof(err));
		for (int i = 0; i < f->nold + (f->extra ? 1 : 0); i++)
			(void)broker_queue_delete(f->c.amqp, f->old[i], 0, NULL, err,
			    sizeof(err));
	}
	if (f->feature[0] != '\0')
		itest_feature_delete(f->feature);
	itest_cleanup();	/* what a test registered (policies) */
	step_ctx_close(&f->c);
	plan_free(f->p);
	json_decref(f->measured);
	json_decref(f->state);
	store_close(f->s);
	if (f->db[0] != '\0') {
		static const char *const ext[] = { "", "-wal", "-shm" };

		for (size_t i = 0; i < 3; i++) {
			snprintf(name, sizeof(name), "%s%s", f->db, ext[i]);
			unlink(name);
		}
		rmdir(f->dir);
	}
	free(f);
	return 0;
}

/* The test plan: old queues PREFIX.old.*, a cutover ladder of 100 ms units
 * and 5 levels (its destination created by declare_ladder), a canary, the
 * flag (Unleash feature FEATURE, which the watch reads), and the watch's
 * settings. MANAGEMENT replaces the test broker's API when set. */
static struct plan *
load_plan(const char *management, const char *feature)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char yaml[4096], line[512], re[128];
	size_t j = 0;

	/* The old selection as a regex: the prefix with its dots escaped. */
	for (const char *s = prefix; *s != '\0' && j + 3 < sizeof(re); s++) {
		if (*s == '.')
			re[j++] = '\\';
		re[j++] = *s;
	}
	re[j] = '\0';
	need_env("CUTOVER_TEST_PASSWORD");
	snprintf(yaml, sizeof(yaml),
	    "name: %s\n"
	    "broker:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_TEST_PASSWORD\n"
	    "old:\n"
	    "  queues: { match: '^%s\\.old\\.' }\n"
	    "ladder:\n"
	    "  naming: cutover\n"
	    "  prefix: %s\n"
	    "  unit: 100ms\n"
	    "  levels: 5\n"
	    "  queue_type: %s\n"
	    "  destinations: [%s.dest]\n"
	    "  create_destinations: true\n"
	    "canary:\n"
	    "  delays: [100ms, 300ms]\n"
	    "  max_lateness: 1s\n"
	    "flag:\n"
	    "  kind: unleash\n"
	    "  url: %s\n"
	    "  project: default\n"
	    "  environment: production\n"
	    "  feature: %s\n"
	    "  token: env:CUTOVER_TEST_UNLEASH_TOKEN\n"
	    "watch:\n"
	    "  interval: 200ms\n"
	    "  allowance: 1s\n"
	    "  probe_every: 1s\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, "
	    "watch]\n",
	    plan_name, need_env("CUTOVER_TEST_AMQP"),
	    management ? management : need_env("CUTOVER_TEST_MGMT"),
	    need_env("CUTOVER_TEST_USER"), re, prefix, queue_type, prefix,
	    need_env("CUTOVER_TEST_UNLEASH_URL"), feature);
	if (plan_load_buffer("itest.yaml", yaml, strlen(yaml), &p, &errs) != 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
		plan_errors_free(&errs);
		fail_msg("test plan does not load");
	}
	return p;
}

static void
publish_to(struct step_ctx *c, const char *exchange, const char *key, int n)
{
	struct broker_message m = { 0 };
	char err[512];

	m.exchange = exchange;
	m.routing_key = key;
	m.body = "old";
	m.len = 3;
	for (int i = 0; i < n; i++)
		if (broker_publish(c->amqp, &m, 5000, err, sizeof(err)) != 0)
			fail_msg("publishing to '%s' '%s': %s", exchange, key, err);
}

/* Declares old queue NAME (classic, durable, TTL_MS). */
static void
old_queue_ttl(struct step_ctx *c, const char *name, int64_t ttl_ms)
{
	struct topology_arg a[1];
	char err[512];

	memset(a, 0, sizeof(a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	a[0].num = ttl_ms;
	if (broker_queue_declare(c->amqp, name, true, a, 1, err, sizeof(err)) != 0)
		fail_msg("declaring old queue '%s': %s", name, err);
}

/* Declares old queue NAME (classic, durable, old_ttl_ms). */
static void
old_queue(struct step_ctx *c, const char *name)
{
	old_queue_ttl(c, name, old_ttl_ms);
}

/* Opens the store in a new temporary directory and records the plan with
 * its steps, as the engine does. */
static void
open_store(struct fixture *f)
{
	char err[512];

	snprintf(f->dir, sizeof(f->dir), "/tmp/itest-watch.XXXXXX");
	if (mkdtemp(f->dir) == NULL)
		fail_msg("mkdtemp failed");
	snprintf(f->db, sizeof(f->db), "%s/cutover.db", f->dir);
	if (store_open(f->db, &f->s, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (store_plan_insert(f->s, f->p->name, "{}", 2, now_ms(), &f->plan_id, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	for (size_t i = 0; i < f->p->nsteps; i++)
		if (store_step_insert(f->s, f->plan_id, (int)i,
		    plan_step_kind_name(f->p->steps[i].kind), 0, err, sizeof(err)) != 0)
			fail_msg("%s", err);
}

/* Sets up test TEST: the plan, NOLD old queues, the ladder,
 * measure_horizon's result, the store, and MSGS messages in each old
 * queue. */
static void
start(struct fixture *f, const char *test, int nold, int msgs, const char *management)
{
	json_t *r = NULL;
	char err[2048];

	set_names(test);
	itest_feature_create(plan_name);
	snprintf(f->feature, sizeof(f->feature), "%s", plan_name);
	f->p = load_plan(management, plan_name);
	if (step_ctx_open(&f->c, f->p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	f->nold = nold;
	for (int i = 0; i < nold; i++) {
		snprintf(f->old[i], sizeof(f->old[i]), "%s.old.%d", prefix, i);
		old_queue(&f->c, f->old[i]);
	}
	if (management == NULL) {
		if (step_declare_ladder(&f->c, &r, err, sizeof(err)) != 0)
			fail_msg("declare_ladder: %s", err);
		json_decref(r);
		if (step_measure_horizon(&f->c, &f->measured, err, sizeof(err)) != 0)
			fail_msg("measure_horizon: %s", err);
	}
	open_store(f);
	/* Last, so that they are still there when the watch starts. */
	for (int i = 0; i < nold; i++)
		publish_to(&f->c, "", f->old[i], msgs);
}

/* One tick as the engine runs it: the last persisted state in, the result
 * persisted as the step's result and read back for the next tick.
 * Returns -1 when step_watch failed, 1 when it goes on (it returned 0 and
 * set ctx.again), 0 when it is over: the tests' shorthand. */
static int
tick(struct fixture *f, char *err, size_t errlen)
{
	struct store_step st;
	json_t *r = NULL, *back;
	char *text;
	int rc, idx = plan_find_step(f->p, PLAN_STEP_WATCH);

	f->c.store = f->s;
	f->c.plan_id = f->plan_id;
	f->c.measured = f->measured;
	f->c.flip_ms = f->flip_ms;
	f->c.state = f->state;
	f->c.now_ms = f->jump_ms != 0 ? now_ms() + f->jump_ms : 0;
	f->c.again = true;	/* step_watch must set it either way */
	rc = step_watch(&f->c, &r, err, errlen);
	assert_non_null(r);
	assert_true(rc == -1 || rc == 0);
	if (rc == 0 && f->c.again)
		rc = 1;
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_non_null(text);
	if (store_step_update(f->s, f->plan_id, idx, rc < 0 ? "failed" : "running", 0, 0,
	    text, NULL, err, errlen) != 0)
		fail_msg("%s", err);
	free(text);
	/* What the next tick gets is what the store gives back. */
	if (store_step_get(f->s, f->plan_id, idx, &st, err, errlen) != 0)
		fail_msg("%s", err);
	back = json_loads(st.result_json, 0, NULL);
	store_step_clear(&st);
	assert_non_null(back);
	assert_true(json_equal(back, r));
	json_decref(r);
	json_decref(f->state);
	f->state = back;
	return rc;
}

static int64_t
num(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("'%s' is not an integer", key);
	return (int64_t)json_integer_value(v);
}

static const json_t *
obj(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_object(v))
		fail_msg("'%s' is not an object", key);
	return v;
}

/* Open alerts of the plan. */
struct alerts {
	int n;
	struct store_alert v[16];
};

static int
collect_alert(const struct store_alert *a, void *arg)
{
	struct alerts *al = arg;

	if (al->n < 16)
		al->v[al->n++] = *a;
	return 0;
}

static void
open_alerts(struct fixture *f, struct alerts *al)
{
	char err[512];

	memset(al, 0, sizeof(*al));
	if (store_each_alert(f->s, f->plan_id, 1, collect_alert, al, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

static const struct store_alert *
find_alert(const struct alerts *al, const char *kind)
{
	for (int i = 0; i < al->n; i++)
		if (strcmp(al->v[i].kind, kind) == 0)
			return &al->v[i];
	return NULL;
}

static void
ack_all(struct fixture *f)
{
	struct alerts al;
	char err[512];

	open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		assert_int_equal(store_alert_ack(f->s, f->plan_id, al.v[i].id, "itest",
		    "seen", now_ms(), err, sizeof(err)), 0);
}

/* Ticks every INTERVAL_MS until an open alert of KIND exists (returns it
 * in *A) or TIMEOUT_MS passes; every tick must go on. */
static void
tick_until_alert(struct fixture *f, const char *kind, int64_t timeout_ms,
    struct store_alert *a)
{
	int64_t until = now_ms() + timeout_ms;
	struct alerts al;
	char err[2048];

	for (;;) {
		const struct store_alert *x;

		if (tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped while waiting for a %s alert: %s", kind,
			    err);
		open_alerts(f, &al);
		if ((x = find_alert(&al, kind)) != NULL) {
			*a = *x;
			return;
		}
		if (now_ms() > until)
			fail_msg("no %s alert within %lld ms", kind, (long long)timeout_ms);
		sleep_ms(INTERVAL_MS);
	}
}

/* Ticks until the watch ends (returns the time) or TIMEOUT_MS passes. */
static int64_t
tick_until_done(struct fixture *f, int64_t timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;
	char err[2048];
	int rc;

	for (;;) {
		if ((rc = tick(f, err, sizeof(err))) == 0)
			return now_ms();
		if (rc < 0)
			fail_msg("the watch failed: %s", err);
		if (now_ms() > until) {
			char *s = json_dumps(obj(f->state, "summary"), JSON_COMPACT);

			fprintf(stderr, "# summary: %s\n", s ? s : "");
			free(s);
			fail_msg("the watch did not end within %lld ms", (long long)timeout_ms);
		}
		sleep_ms(INTERVAL_MS);
	}
}

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
		sleep_ms(10);
	}
}

/* Samples, by series. */
struct series {
	int n;
	double first, last, max;
	int64_t first_ts, last_ts;
};

struct samples {
	struct series old_depth, old_nonempty, old_publishes, parking, ladder_pub,
	    lateness, level[LADDER_MAX_LEVELS], band[LADDER_MAX_LEVELS],
	    dlx[LADDER_MAX_LEVELS], level_late[LADDER_MAX_LEVELS], parking_dlx;
};

static void
add(struct series *s, int64_t ts, double v)
{
	if (s->n++ == 0) {
		s->first = s->max = v;
		s->first_ts = ts;
	}
	if (v > s->max)
		s->max = v;
	s->last = v;
	s->last_ts = ts;
}

static int
collect_sample(int64_t ts, const char *metric, const char *label, double v, void *arg)
{
	struct samples *s = arg;

	if (strcmp(metric, "old.depth") == 0)
		add(&s->old_depth, ts, v);
	else if (strcmp(metric, "old.nonempty") == 0)
		add(&s->old_nonempty, ts, v);
	else if (strcmp(metric, "old.publishes") == 0)
		add(&s->old_publishes, ts, v);
	else if (strcmp(metric, "parking.depth") == 0)
		add(&s->parking, ts, v);
	else if (strcmp(metric, "ladder.publishes") == 0)
		add(&s->ladder_pub, ts, v);
	else if (strcmp(metric, "probe.lateness_ms") == 0)
		add(&s->lateness, ts, v);
	else if (strcmp(metric, "parking.dlx") == 0)
		add(&s->parking_dlx, ts, v);
	else if (strcmp(metric, "ladder.depth") == 0 || strcmp(metric, "ladder.band") == 0 ||
	    strcmp(metric, "ladder.dlx") == 0 || strcmp(metric, "level.lateness_ms") == 0) {
		int k = atoi(label);

		assert_true(k >= 0 && k < LADDER_MAX_LEVELS);
		add(strcmp(metric, "ladder.depth") == 0 ? &s->level[k] :
		    strcmp(metric, "ladder.band") == 0 ? &s->band[k] :
		    strcmp(metric, "ladder.dlx") == 0 ? &s->dlx[k] : &s->level_late[k], ts, v);
	} else
		fail_msg("unexpected metric '%s'", metric);
	return 0;
}

/* Events of KIND whose details contain "alert": ALERT (or any, if NULL). */
struct evcount {
	const char *kind, *alert;
	int n;
};

static int
count_event(const struct store_event *ev, void *arg)
{
	struct evcount *e = arg;
	json_t *d;

	if (strcmp(ev->kind, e->kind) != 0)
		return 0;
	if (e->alert == NULL) {
		e->n++;
		return 0;
	}
	d = json_loads(ev->details_json, 0, NULL);
	if (d != NULL && json_is_string(json_object_get(d, "alert")) &&
	    strcmp(json_string_value(json_object_get(d, "alert")), e->alert) == 0 &&
	    json_is_string(json_object_get(d, "message")))
		e->n++;
	json_decref(d);
	return 0;
}

static int
events(struct fixture *f, const char *kind, const char *alert)
{
	struct evcount e = { kind, alert, 0 };
	char err[512];

	if (store_each_event(f->s, f->plan_id, count_event, &e, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return e.n;
}

static void
assert_probe_queue_gone(struct fixture *f)
{
	char name[LADDER_NAME_MAX], err[512];

	snprintf(name, sizeof(name), "cutover.probe.%s", f->p->name);
	assert_int_equal(broker_queue_inspect(f->c.amqp, name, NULL, err, sizeof(err)),
	    BROKER_NOT_FOUND);
}

/* The whole watch: old queues holding messages drain, the ladder is
 * sampled level by level, probes arrive and are measured, the deadline is
 * flip + largest TTL + allowance (moved by publishes the statistics count
 * only after the flip), the watch does not end before it, the state
 * survives the store and a restart unchanged, and the probe queue is
 * removed at the end. */
static void
test_watch_runs_to_its_deadline(void **state)
{
	struct fixture *f = *state;
	struct samples sm;
	struct alerts al;
	const json_t *sum, *pr;
	json_t *before = NULL;
	char err[2048];
	int64_t started, deadline0, done_at, last_deadline = 0, t;
	int rc, ticks = 0, restart_at = 8, bounded = 0;

	start(f, "run", 3, 3, NULL);
	f->flip_ms = now_ms();
	for (;;) {
		if (ticks == restart_at) {
			/* A restart: new connections, the state only from the store. */
			before = json_deep_copy(f->state);
			step_ctx_close(&f->c);
			if (step_ctx_open(&f->c, f->p, err, sizeof(err)) != 0)
				fail_msg("%s", err);
		}
		t = now_ms();
		rc = tick(f, err, sizeof(err));
		ticks++;
		if (rc < 0)
			fail_msg("the watch failed: %s", err);
		if (ticks == 1) {
			started = num(f->state, "started_ms");
			deadline0 = num(f->state, "deadline_ms");
			assert_int_equal(started, f->flip_ms);
			assert_int_equal(num(f->state, "flip_ms"), f->flip_ms);
			assert_int_equal(num(f->state, "max_ttl_ms"), OLD_TTL_MS);
			assert_int_equal(num(f->state, "last_old_entry_ms"), f->flip_ms);
			assert_int_equal(deadline0, f->flip_ms + OLD_TTL_MS + ALLOWANCE_MS);
			sum = obj(f->state, "summary");
			assert_int_equal(num(sum, "old_depth"), 9);
			assert_int_equal(num(sum, "old_nonempty"), 3);
			assert_int_equal(num(sum, "old_queues"), 3);
			assert_int_equal(json_array_size(json_object_get(sum, "ladder_depth")), 5);
			assert_int_equal(num(sum, "parking_depth"), 0);
			assert_int_equal(num(sum, "open_alerts"), 0);
			pr = obj(f->state, "probe");
			assert_int_equal(num(pr, "delay_ms"), INTERVAL_MS);
			assert_int_equal(json_array_size(json_object_get(pr, "outstanding")), 1);
			assert_true(json_is_true(json_object_get(obj(f->state, "verify"), "ok")));
		}
		if (ticks == restart_at + 1) {
			/* Resumed where it was: same start, deadline not earlier. */
			assert_int_equal(num(f->state, "started_ms"), num(before, "started_ms"));
			assert_true(num(f->state, "deadline_ms") >= num(before, "deadline_ms"));
			assert_int_equal(num(f->state, "ticks"), num(before, "ticks") + 1);
			json_decref(before);
			before = NULL;
		}
		/* The deadline never moves earlier; it moves only when the
		 * statistics count the publishes made before the flip, and never
		 * past that time + TTL + allowance. */
		assert_true(num(f->state, "deadline_ms") >= last_deadline);
		last_deadline = num(f->state, "deadline_ms");
		/* A level holding a probe in flight after an earlier one came
		 * out on time: its oldest age is the bound that probe gives. */
		for (size_t k = 0; k < json_array_size(json_object_get(obj(f->state,
		    "summary"), "levels")); k++) {
			const json_t *lv = json_array_get(json_object_get(obj(f->state,
			    "summary"), "levels"), k);
			const char *src = json_string_value(json_object_get(lv,
			    "oldest_age_source"));

			assert_non_null(src);
			if (strcmp(src, "probe_bound") == 0) {
				assert_true(num(lv, "oldest_age_ms") >= 0);
				bounded++;
			}
			assert_true(strcmp(src, "head_timestamp") != 0);	/* quorum */
		}
		assert_true(last_deadline <= num(f->state, "last_old_entry_ms") + OLD_TTL_MS +
		    ALLOWANCE_MS);
		if (rc == 0) {
			/* Never before its deadline, nor within the lag. */
			assert_true(t >= last_deadline);
			assert_true(t >= f->flip_ms + STATS_LAG_MS);
			break;
		}
		if (now_ms() > f->flip_ms + 30000)
			fail_msg("the watch did not end within 30 s: %s",
			    json_string_value(json_object_get(obj(f->state, "summary"),
			    "status")));
		sleep_ms(INTERVAL_MS);
	}
	done_at = now_ms();
	assert_true(done_at >= last_deadline);
	assert_true(done_at >= f->flip_ms + STATS_LAG_MS);
	assert_true(json_is_true(json_object_get(f->state, "done")));
	assert_true(json_is_true(json_object_get(f->state, "ok")));
	assert_int_equal(num(f->state, "started_ms"), f->flip_ms);
	assert_true(num(f->state, "last_old_entry_ms") >= f->flip_ms);
	assert_int_equal(num(obj(f->state, "old"), "after_flip"), 0);
	sum = obj(f->state, "summary");
	assert_string_equal(json_string_value(json_object_get(sum, "status")), "done");
	assert_int_equal(num(sum, "old_depth"), 0);
	assert_int_equal(num(sum, "time_left_ms"), 0);
	open_alerts(f, &al);
	assert_int_equal(al.n, 0);

	/* Probes: sent about every second, every one arrived, none lost, and
	 * the lateness figures agree with the samples. */
	pr = obj(f->state, "probe");
	assert_true(num(pr, "sent") >= 8);
	assert_int_equal(num(pr, "arrived"), num(pr, "sent"));
	assert_int_equal(num(pr, "lost"), 0);
	assert_int_equal(num(pr, "early"), 0);
	assert_int_equal(num(pr, "late"), 0);
	assert_int_equal(json_array_size(json_object_get(pr, "outstanding")), 0);

	memset(&sm, 0, sizeof(sm));
	if (store_each_sample(f->s, f->plan_id, 0, collect_sample, &sm, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(sm.old_depth.n, ticks);
	assert_true(sm.old_depth.first == 9);
	assert_true(sm.old_depth.last == 0);
	assert_true(sm.old_nonempty.first == 3 && sm.old_nonempty.last == 0);
	assert_int_equal(sm.old_publishes.n, ticks);
	assert_int_equal(sm.parking.n, ticks);
	assert_true(sm.parking.max == 0);
	assert_int_equal(sm.ladder_pub.n, ticks);
	assert_true(sm.ladder_pub.last >= sm.ladder_pub.first);
	for (int k = 0; k < 5; k++)
		assert_int_equal(sm.level[k].n, ticks);
	assert_int_equal(sm.level[5].n, 0);
	/* Every level within the probe budget (largest old TTL + allowance,
	 * 3 s: all five, up to 1.6 s) proven by a probe that waited in it
	 * alone, on time; pending dead-letters and band counters sampled per
	 * level at every tick. */
	assert_int_equal(num(sum, "probe_budget_ms"), OLD_TTL_MS + ALLOWANCE_MS);
	for (int k = 0; k < 5; k++) {
		const json_t *lv = json_array_get(json_object_get(sum, "levels"), (size_t)k);
		const json_t *st = json_array_get(json_object_get(obj(f->state, "levels"),
		    "list"), (size_t)k);

		assert_non_null(lv);
		assert_string_equal(json_string_value(json_object_get(lv, "status")),
		    "moving");
		assert_true(num(st, "on_time") >= 1);
		assert_int_equal(num(st, "stuck"), 0);
		assert_int_equal(num(st, "late"), 0);
		assert_true(sm.level_late[k].n >= 1);
		assert_int_equal(sm.band[k].n, ticks);
		/* Once the statistics show the queue (seconds after its
		 * declaration): none held. A probe crossing a quorum level is
		 * pending between its expiry and the next queue's confirm, and a
		 * sample can catch it there (RabbitMQ 4.0's one-queue reads did,
		 * 4 runs in 20): at most the probes of one round, never stuck
		 * (above). */
		assert_true(sm.dlx[k].n >= 1);
		assert_true(sm.dlx[k].max <= 2);
		fprintf(stderr, "# level %d: %lld probes on time, last lateness <= %lld ms\n",
		    k, (long long)num(st, "on_time"), (long long)num(lv, "lateness_ms"));
	}
	assert_int_equal(sm.lateness.n, num(pr, "arrived") - num(pr, "unmeasured"));
	assert_true(sm.lateness.n >= 5);
	/* The plan's own bound (canary.max_lateness), not a tighter one. */
	assert_true(sm.lateness.max <= (double)f->p->canary.max_lateness_ms);
	assert_true(sm.lateness.last == (double)num(pr, "last_lateness_ms"));
	assert_true(sm.lateness.max == (double)num(pr, "max_lateness_ms"));
	assert_true(num(obj(sum, "probe_lateness_ms"), "p50") <= num(pr, "max_lateness_ms"));
	fprintf(stderr, "# watch: %d ticks, ended %lld ms after the flip (deadline "
	    "+%lld ms); %lld probes, lateness p50 %lld ms, max %lld ms, %lld "
	    "unmeasured\n", ticks, (long long)(done_at - f->flip_ms),
	    (long long)(last_deadline - f->flip_ms), (long long)num(pr, "sent"),
	    (long long)num(obj(sum, "probe_lateness_ms"), "p50"),
	    (long long)num(pr, "max_lateness_ms"), (long long)num(pr, "unmeasured"));
	assert_true(bounded >= 1);
	assert_probe_queue_gone(f);
}

/* A publish into the old path after the flip raises old_publish and moves
 * the deadline to that moment + TTL + allowance; a queue matching the
 * selection that was not measured raises old_new_queue; the watch waits
 * past its deadline until both are acknowledged, then ends. */
static void
test_old_publish_moves_the_deadline(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, n;
	struct alerts al;
	char err[2048];
	int64_t d0, sent, entry, until;

	start(f, "late", 2, 0, NULL);
	/* The flip was confirmed a while ago: the settle window is over. */
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	d0 = num(f->state, "deadline_ms");
	/* First look long after the flip: as if the last entry were now. */
	assert_true(num(f->state, "last_old_entry_ms") > f->flip_ms);
	assert_int_equal(d0, num(f->state, "last_old_entry_ms") + OLD_TTL_MS +
	    ALLOWANCE_MS);

	/* A producer that was not flipped, and one still creating queues,
	 * strictly after the entry the deadline was computed from. */
	while (now_ms() <= num(f->state, "last_old_entry_ms"))
		sleep_ms(1);
	sent = now_ms();
	publish_to(&f->c, "", f->old[1], 2);
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.new", prefix);
	f->extra = true;
	old_queue(&f->c, f->old[f->nold]);

	tick_until_alert(f, "old_publish", ALERT_CEILING_MS, &a);
	entry = num(f->state, "last_old_entry_ms");
	assert_true(entry >= sent);
	assert_int_equal(num(f->state, "deadline_ms"), entry + OLD_TTL_MS + ALLOWANCE_MS);
	assert_true(num(f->state, "deadline_ms") > d0);
	assert_int_equal(num(obj(f->state, "old"), "after_flip"), 2);
	assert_non_null(strstr(a.message, "2 messages entered the old path after the flip"));
	assert_non_null(strstr(a.message, "the deadline moves to"));
	assert_true(events(f, "alert.raised", "old_publish") == 1);
	assert_true(events(f, "watch.deadline_moved", NULL) >= 1);
	open_alerts(f, &al);
	if (find_alert(&al, "old_new_queue") == NULL)
		tick_until_alert(f, "old_new_queue", ALERT_CEILING_MS, &n);
	else
		n = *find_alert(&al, "old_new_queue");
	assert_non_null(strstr(n.message, ".old.new'"));

	/* Past the new deadline, the old queue drained: it still waits. */
	until = num(f->state, "deadline_ms") + 1000;
	while (now_ms() < until) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(obj(f->state, "summary"),
	    "status")), "alert is open"));

	/* Acknowledged: it ends, and the new queue is not alerted again. */
	ack_all(f);
	tick_until_done(f, 5000);
	assert_true(events(f, "alert.raised", "old_new_queue") == 1);
	assert_true(json_is_true(json_object_get(f->state, "done")));
	assert_int_equal(num(f->state, "last_old_entry_ms"), entry);
	assert_probe_queue_gone(f);
}

/* A message in the parking queue raises "parking"; the watch does not end
 * past its deadline while the alert is open, nor after an acknowledgement
 * while parking still holds it (the alert comes back); once parking is
 * empty and the alert acknowledged, it ends. */
static void
test_parking_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	struct broker_delivery d;
	struct alerts al;
	char x[LADDER_NAME_MAX], q[LADDER_NAME_MAX], err[2048];
	int64_t until;

	start(f, "park", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	ladder_parking_exchange(&f->p->ladder, x, sizeof(x));
	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	publish_to(&f->c, x, "1.0.1.0.0.nobody.takes.this", 1);
	tick_until_alert(f, "parking", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "1 message in the parking queue"));
	assert_int_equal(num(obj(f->state, "summary"), "parking_depth"), 1);
	assert_int_equal(events(f, "alert.raised", "parking"), 1);

	until = num(f->state, "deadline_ms") + 500;
	while (now_ms() < until) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	/* Acknowledged, but parking still holds it: raised again. */
	ack_all(f);
	tick_until_alert(f, "parking", ALERT_CEILING_MS, &b);
	assert_true(b.id != a.id);
	assert_int_equal(events(f, "alert.raised", "parking"), 2);

	/* Parking emptied: still held until acknowledged. */
	assert_int_equal(broker_get(f->c.amqp, q, false, &d, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(num(obj(f->state, "summary"), "parking_depth"), 0);
	open_alerts(f, &al);
	assert_int_equal(al.n, 1);
	ack_all(f);
	tick_until_done(f, 5000);
	assert_probe_queue_gone(f);
}

/* A level binding deleted under the watch raises ladder_drift naming it,
 * at the next verification (every probe_every). */
static void
test_deleted_binding_raises_ladder_drift(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char x[LADDER_NAME_MAX], key[LADDER_NAME_MAX], want[4 * LADDER_NAME_MAX];
	char err[2048];

	start(f, "drift", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_true(json_is_true(json_object_get(obj(f->state, "verify"), "ok")));
	/* Level 3's wait binding: off the probes' path (2 units: level 1). */
	ladder_level_exchange(&f->p->ladder, 3, x, sizeof(x));
	ladder_wait_pattern(&f->p->ladder, 3, key, sizeof(key));
	assert_int_equal(broker_queue_unbind(f->c.amqp, x, x, key, err, sizeof(err)), 0);
	tick_until_alert(f, "ladder_drift", ALERT_CEILING_MS, &a);
	snprintf(want, sizeof(want), "%s -> queue %s '%s'", x, x, key);
	assert_non_null(strstr(a.message, want));
	assert_non_null(strstr(a.message, "missing"));
	assert_true(json_is_false(json_object_get(obj(f->state, "verify"), "ok")));
	assert_int_equal(events(f, "alert.raised", "ladder_drift"), 1);
	assert_int_equal(num(obj(f->state, "probe"), "lost"), 0);
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

	start(f, "lost", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(json_array_size(json_object_get(obj(f->state, "probe"),
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
	tick_until_alert(f, "probe", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "probe #0"));
	assert_non_null(strstr(a.message, "did not arrive"));
	assert_true(num(obj(f->state, "probe"), "lost") >= 1);
	assert_int_equal(events(f, "alert.raised", "probe"), 1);
}

/* A management API that does not answer is an alert, not a failure: the
 * watch goes on with its state and never ends while it cannot see. A
 * watch without measure_horizon's result cannot start at all. */
static void
test_broker_unreachable_is_an_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	json_t *r = NULL;
	char err[2048];
	int rc;

	start(f, "down", 1, 0, "http://127.0.0.1:1");
	f->measured = json_pack("{s:[{s:s,s:i}],s:{s:i,s:s}}", "queues", "name",
	    f->old[0], "ttl_ms", OLD_TTL_MS, "summary", "max_ttl_ms", OLD_TTL_MS,
	    "max_ttl_queue", f->old[0]);
	f->flip_ms = now_ms() - 60000;	/* long past any deadline */
	tick_until_alert(f, "broker_unreachable", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "listing the old queues"));
	assert_int_equal(events(f, "alert.raised", "broker_unreachable"), 1);
	ack_all(f);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		assert_true(json_is_false(json_object_get(f->state, "done")));
		assert_int_equal(num(f->state, "started_ms"), f->flip_ms);
	}

	/* No horizon: it cannot go on. */
	f->c.measured = NULL;
	f->c.state = NULL;
	rc = step_watch(&f->c, &r, err, sizeof(err));
	assert_int_equal(rc, -1);
	assert_non_null(strstr(err, "measure_horizon"));
	assert_true(json_is_false(json_object_get(r, "ok")));
	json_decref(r);
}

/* store_each_event callback: counts events whose details contain *ARG. */
static int
event_quotes(const struct store_event *ev, void *arg)
{
	const char **needle = arg;

	if (strstr(ev->details_json, needle[0]) != NULL)
		needle[1] = ev->kind;
	return 0;
}

/* Fails when the Unleash token is in the watch's state, an open alert or
 * the plan's history. */
static void
assert_token_nowhere(struct fixture *f)
{
	const char *needle[2] = { need_env("CUTOVER_TEST_UNLEASH_TOKEN"), NULL };
	struct alerts al;
	char *text = json_dumps(f->state, JSON_COMPACT), err[512];

	assert_non_null(text);
	assert_null(strstr(text, needle[0]));
	free(text);
	open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		assert_null(strstr(al.v[i].message, needle[0]));
	if (store_each_event(f->s, f->plan_id, event_quotes, needle, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	if (needle[1] != NULL)
		fail_msg("event '%s' quotes the Unleash token", needle[1]);
}

/* The flag's state as the last tick read it ("on", "off", "unreadable"). */
static const char *
flag_seen(struct fixture *f)
{
	const char *s = json_string_value(json_object_get(obj(f->state, "flag"), "state"));

	return s != NULL ? s : "";
}

/* Ticks for as long as TIMEOUT_MS, every tick going on (the watch must
 * not end), and at least until the step clock passes UNTIL. */
static void
tick_held_until(struct fixture *f, int64_t until, const char *why)
{
	char err[2048];

	while (now_ms() <= until) {
		if (tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch ended (or failed: %s) although %s", err, why);
		sleep_ms(INTERVAL_MS);
	}
}

/* remove_old as the engine gives it its inputs, every old queue long past
 * its deadline. Returns what step_remove_old returned; ERR says why. */
static int
remove_old(struct fixture *f, char *err, size_t errlen)
{
	json_t *r = NULL;
	int rc;

	f->c.measured = f->measured;
	f->c.old_last_entry_ms = f->flip_ms;
	f->c.state = NULL;
	f->c.now_ms = 0;
	rc = step_remove_old(&f->c, &r, err, errlen);
	assert_non_null(r);
	assert_true(json_is_boolean(json_object_get(r, "ok")));
	assert_int_equal(json_is_true(json_object_get(r, "ok")), rc == 0);
	json_decref(r);
	return rc;
}

/* Someone turns the plan's flag off behind the watch's back (producers go
 * back to the old path): the next tick raises flag_off, the deadline moves
 * with it, the watch does not end past the deadline it had (nor after an
 * acknowledgement while the flag reads off: raised again), and remove_old
 * deletes nothing, saying why. Read on again and acknowledged, the watch
 * ends and remove_old removes the old queue. The token is nowhere. */
static void
test_flag_off_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	struct broker_queue_info qi;
	char err[2048];
	int64_t d0, off_at, on_at;

	start(f, "flagoff", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	d0 = num(f->state, "deadline_ms");

	itest_feature_set(f->feature, false);
	off_at = now_ms();
	tick_until_alert(f, "flag_off", 5000, &a);
	assert_non_null(strstr(a.message, f->feature));
	assert_string_equal(flag_seen(f), "off");
	assert_true(num(obj(f->state, "flag"), "not_on_since_ms") >= off_at);
	tick_held_until(f, d0 + 1000, "the flag reads off");

	/* Acknowledged while still off: raised again, still held. */
	ack_all(f);
	tick_until_alert(f, "flag_off", 5000, &b);
	assert_true(b.id != a.id);
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_non_null(strstr(json_string_value(json_object_get(obj(f->state,
	    "summary"), "status")), "flag"));

	/* remove_old refuses while the flag is off: nothing deleted. */
	assert_int_equal(remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "flag"));
	assert_non_null(strstr(err, "off"));
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[0], &qi, err,
	    sizeof(err)), 0);

	/* On again: the old path was in use until now, so the deadline moves
	 * to now + TTL + allowance; the alerts stay until acknowledged, then
	 * it ends. */
	itest_feature_set(f->feature, true);
	on_at = now_ms();
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_string_equal(flag_seen(f), "on");
	assert_true(num(f->state, "last_old_entry_ms") >= on_at);
	assert_true(num(f->state, "deadline_ms") >= on_at + OLD_TTL_MS + ALLOWANCE_MS);
	ack_all(f);
	tick_until_done(f, 20000);
	assert_true(events(f, "alert.raised", "flag_off") >= 2);
	assert_token_nowhere(f);
	/* remove_old leaves a queue with no publish counter to compare. */
	itest_give_publish_counter(f->c.amqp, f->c.mgmt, f->old[0]);
	assert_int_equal(remove_old(f, err, sizeof(err)), 0);
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[0], &qi, err,
	    sizeof(err)), BROKER_NOT_FOUND);
}

/* A flag that cannot be read (the feature deleted in Unleash: 404) raises
 * flag_unreadable and holds the watch past its deadline; readable and on
 * again, and acknowledged, the watch ends. */
static void
test_unreadable_flag_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];
	int64_t d0;

	start(f, "flaggone", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	d0 = num(f->state, "deadline_ms");
	itest_feature_delete(f->feature);
	tick_until_alert(f, "flag_unreadable", 5000, &a);
	assert_non_null(strstr(a.message, "404"));
	assert_string_equal(flag_seen(f), "unreadable");
	tick_held_until(f, d0 + 1000, "the flag cannot be read");
	assert_int_equal(remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "flag"));

	itest_feature_create(f->feature);
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_string_equal(flag_seen(f), "on");
	ack_all(f);
	tick_until_done(f, 20000);
	assert_token_nowhere(f);
}

/* remove_old with the flag off (turned off after the watch, while its gate
 * waited) deletes nothing and fails saying so; on again, it removes. */
static void
test_remove_old_refuses_while_the_flag_is_off(void **state)
{
	struct fixture *f = *state;
	struct broker_queue_info qi;
	char err[2048];

	start(f, "rmflag", 2, 0, NULL);
	f->flip_ms = now_ms() - 60000;
	itest_feature_set(f->feature, false);
	assert_int_equal(remove_old(f, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "deletes nothing"));
	assert_non_null(strstr(err, f->feature));
	for (int i = 0; i < 2; i++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[i], &qi, err,
		    sizeof(err)), 0);
	itest_feature_set(f->feature, true);
	for (int i = 0; i < 2; i++)
		itest_give_publish_counter(f->c.amqp, f->c.mgmt, f->old[i]);
	assert_int_equal(remove_old(f, err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[i], &qi, err,
		    sizeof(err)), BROKER_NOT_FOUND);
}

/* An old queue deleted by hand while it holds messages (as x-expires
 * would) raises old_vanished naming it and its depth; one deleted once
 * empty does not. */
static void
test_vanished_old_queue_raises_an_alert(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048], want[LADDER_NAME_MAX + 16];
	int64_t until;

	start(f, "vanish", 2, 3, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 6);
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[0], 0, NULL, err,
	    sizeof(err)), 0);
	tick_until_alert(f, "old_vanished", 3000, &a);
	fprintf(stderr, "# old_vanished: %s\n", a.message);
	snprintf(want, sizeof(want), "'%s' (3)", f->old[0]);
	assert_non_null(strstr(a.message, want));
	assert_null(strstr(a.message, f->old[1]));
	assert_int_equal(events(f, "alert.raised", "old_vanished"), 1);

	/* The other drains (its TTL), then goes: no second alert. */
	until = now_ms() + 20000;
	while (num(obj(f->state, "summary"), "old_depth") > 0) {
		if (now_ms() > until)
			fail_msg("old queue '%s' did not drain", f->old[1]);
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[1], 0, NULL, err,
	    sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	assert_int_equal(events(f, "alert.raised", "old_vanished"), 1);
	ack_all(f);
	tick_until_done(f, 20000);
}

/* Starts test TEST with one old queue that will not drain in time: after
 * measure_horizon it comes back with a 10 min TTL and MSGS messages; the
 * flip is past its deadline; one tick. */
static void
start_undrained(struct fixture *f, const char *test, int msgs)
{
	char err[2048];

	start(f, test, 1, 0, NULL);
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[0], 0, NULL, err,
	    sizeof(err)), 0);
	old_queue_ttl(&f->c, f->old[0], 600000);
	publish_to(&f->c, "", f->old[0], msgs);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
}

/* The watch's main stop condition: old queues still holding messages
 * past the deadline (here the old queue was redeclared with a TTL far
 * longer than measured, and holds two messages) keep the watch going,
 * "waiting for the old path to drain", and raise old_not_drained naming
 * the count; once drained and the alert acknowledged, it ends. */
static void
test_old_not_drained_holds_the_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct broker_delivery d;
	char err[2048];
	int64_t deadline, until;
	const char *status;

	start_undrained(f, "undrained", 2);
	assert_int_equal(num(f->state, "max_ttl_ms"), OLD_TTL_MS);

	/* Past the deadline (which the two publishes may still move, when the
	 * statistics count them), the messages still there: it goes on. */
	while (now_ms() <= num(f->state, "deadline_ms")) {
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(f->state, "max_ttl_ms"), OLD_TTL_MS);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 2);
	status = json_string_value(json_object_get(obj(f->state, "summary"), "status"));
	assert_non_null(status);
	assert_string_equal(status, "waiting for the old path to drain");
	tick_until_alert(f, "old_not_drained", ALERT_CEILING_MS, &a);
	deadline = num(f->state, "deadline_ms");
	assert_true(a.raised_ms >= deadline);
	assert_non_null(strstr(a.message, "2 messages still in 1 old queue past the "
	    "deadline"));
	assert_int_equal(events(f, "alert.raised", "old_not_drained"), 1);
	assert_false(json_is_true(json_object_get(f->state, "done")));

	/* Drained by hand: still held until the alert is acknowledged. */
	for (int i = 0; i < 2; i++) {
		assert_int_equal(broker_get(f->c.amqp, f->old[0], false, &d, err,
		    sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	until = now_ms() + ALERT_CEILING_MS;
	do {
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		if (now_ms() > until)
			fail_msg("the watch never saw the old queue empty");
	} while (num(obj(f->state, "summary"), "old_depth") != 0);
	assert_non_null(strstr(json_string_value(json_object_get(obj(f->state,
	    "summary"), "status")), "alert is open"));
	ack_all(f);
	tick_until_done(f, 5000);
	assert_true(json_is_true(json_object_get(f->state, "done")));
}

/* Opens the alerts and returns the first open one of KIND whose message
 * contains WANT, or fails the test. */
static void
assert_open_alert_with(struct fixture *f, const char *kind, const char *want)
{
	struct alerts al;

	open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		if (strcmp(al.v[i].kind, kind) == 0 && strstr(al.v[i].message, want) != NULL)
			return;
	for (int i = 0; i < al.n; i++)
		fprintf(stderr, "# open alert %s: %s\n", al.v[i].kind, al.v[i].message);
	fail_msg("no open %s alert saying \"%s\"", kind, want);
}

/* Deletes level 3's queue (PARKING: the parking queue) under a running
 * watch of test TEST: the next tick raises ladder_drift naming it (the
 * watch inspects every level and the parking queue every tick), and the
 * watch goes on. */
static void
delete_under_the_watch(struct fixture *f, const char *test, bool parking)
{
	char q[LADDER_NAME_MAX], want[2 * LADDER_NAME_MAX], err[2048];

	start(f, test, 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	if (parking) {
		ladder_parking_queue(&f->p->ladder, q, sizeof(q));
		snprintf(want, sizeof(want), "the parking queue '%s' does not exist", q);
	} else {
		ladder_level_queue(&f->p->ladder, 3, q, sizeof(q));
		snprintf(want, sizeof(want), "level 3's queue '%s' does not exist", q);
	}
	assert_int_equal(broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_open_alert_with(f, "ladder_drift", want);
	assert_int_equal(events(f, "alert.raised", "ladder_drift"), 1);
	assert_false(json_is_true(json_object_get(f->state, "done")));
}

/* A level queue deleted under the watch raises ladder_drift naming it. */
static void
test_deleted_level_queue_raises_ladder_drift(void **state)
{
	delete_under_the_watch(*state, "nolevel", false);
}

/* The parking queue deleted under the watch: ladder_drift naming it. */
static void
test_deleted_parking_queue_raises_ladder_drift(void **state)
{
	delete_under_the_watch(*state, "nopark", true);
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

	start(f, "early", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	snprintf(pol, sizeof(pol), "%s.fast", prefix);
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
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		open_alerts(f, &al);
		a = NULL;
		for (int i = 0; i < al.n && a == NULL; i++)
			if (strcmp(al.v[i].kind, "probe") == 0)
				a = &al.v[i];
		if (a != NULL && num(obj(f->state, "probe"), "early") >= 1)
			break;
		if (now_ms() > until)
			fail_msg("no early end-to-end probe within %d ms (a probe alert: %s)",
			    ALERT_CEILING_MS, a != NULL ? a->message : "none");
		sleep_ms(20);
	}
	fprintf(stderr, "# early probe: %s\n", a->message);
	assert_non_null(strstr(a->message, "before its not-before time"));
	assert_true(num(obj(f->state, "probe"), "early") >= 1);
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
	sleep_ms(l->at_ms - now_ms());
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
	start(f, "lateprobe", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
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
	r = tick(f, err, sizeof(err));
	assert_int_equal(pthread_join(th, NULL), 0);
	broker_delivery_free(&l.d);
	if (l.rc != 0)
		fail_msg("putting the probe back: %s", l.err);
	assert_int_equal(r, 1);
	open_alerts(f, &al);
	a = find_alert(&al, "probe");
	assert_non_null(a);
	fprintf(stderr, "# late probe: %s\n", a->message);
	assert_non_null(strstr(a->message, "later than canary.max_lateness"));
	assert_int_equal(num(obj(f->state, "probe"), "late"), 1);
	assert_int_equal(num(obj(f->state, "probe"), "lost"), 0);
}

/* ---- the watch's own messages, broker restarts, clock jumps (issue 14) ---- */

/* Publishes a message as cutover itself does (publish_delayed, 100 ms,
 * stamped with the plan and PURPOSE) to destination DEST; a canary's
 * carries its batch header too. */
static void
publish_own(struct fixture *f, const char *purpose, int64_t seq, const char *dest)
{
	struct broker_field batch = { .key = "x-cutover-batch", .str = "itest-batch" };
	struct publish_request r;
	char err[1024];

	memset(&r, 0, sizeof(r));
	r.plan = f->p->name;
	r.purpose = purpose;
	r.seq = seq;
	r.delay_ms = 100;
	r.destination = dest;
	r.body = "own";
	r.len = 3;
	if (strcmp(purpose, PUBLISH_CANARY) == 0) {
		r.headers = &batch;
		r.nheaders = 1;
	}
	if (publish_delayed(f->c.amqp, &f->p->ladder, &r, NULL, err, sizeof(err)) != 0)
		fail_msg("publishing a %s message to '%s': %s", purpose, dest, err);
}

static int64_t
parking_depth(struct fixture *f)
{
	struct broker_queue_info qi;
	char q[LADDER_NAME_MAX], err[512];

	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	if (broker_queue_inspect(f->c.amqp, q, &qi, err, sizeof(err)) != 0)
		fail_msg("inspecting '%s': %s", q, err);
	return qi.messages;
}

/* Waits until the parking queue holds N messages (10 s at most). */
static void
wait_parking(struct fixture *f, int64_t n)
{
	int64_t until = now_ms() + 10000;

	while (parking_depth(f) != n) {
		if (now_ms() > until)
			fail_msg("the parking queue never held %lld messages",
			    (long long)n);
		sleep_ms(20);
	}
}

/* What a killed canary leaves (its message to the unbound destination)
 * and a probe parked while the probe queue was missing are cutover's own:
 * the watch takes them out of parking, accounts for them, raises no
 * parking alert and ends. (On main the parking alert comes back after
 * every acknowledgement and the watch never ends.) */
static void
test_own_messages_leave_parking(void **state)
{
	struct fixture *f = *state;
	char dest[LADDER_NAME_MAX];
	const json_t *pk;

	start(f, "own", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	snprintf(dest, sizeof(dest), "cutover.canary.%s.unbound", f->p->name);
	publish_own(f, PUBLISH_CANARY, 2, dest);
	/* The probe queue does not exist before the first tick. */
	snprintf(dest, sizeof(dest), "cutover.probe.%s", f->p->name);
	publish_own(f, PUBLISH_PROBE, 41, dest);
	wait_parking(f, 2);

	tick_until_done(f, 20000);
	assert_int_equal(events(f, "alert.raised", "parking"), 0);
	assert_int_equal(parking_depth(f), 0);
	pk = obj(f->state, "parking");
	assert_int_equal(num(obj(pk, "own_taken"), "canary"), 1);
	assert_int_equal(num(obj(pk, "own_taken"), "probe"), 1);
	assert_int_equal(num(pk, "foreign"), 0);
	assert_true(events(f, "watch.parking_taken", NULL) >= 1);
	assert_probe_queue_gone(f);
}

/* A foreign message in parking beside one of cutover's own: the own one
 * is taken, the foreign one raises the alert (counted alone) and stays in
 * the queue, tick after tick, until someone removes it. */
static void
test_foreign_parked_message_stays(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct broker_delivery d;
	struct publish_info pi;
	char x[LADDER_NAME_MAX], q[LADDER_NAME_MAX], dest[LADDER_NAME_MAX], err[2048];
	int64_t until;

	start(f, "foreign", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	ladder_parking_exchange(&f->p->ladder, x, sizeof(x));
	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	publish_to(&f->c, x, "1.0.1.0.0.nobody.takes.this", 1);
	snprintf(dest, sizeof(dest), "cutover.canary.%s.unbound", f->p->name);
	publish_own(f, PUBLISH_CANARY, 2, dest);
	wait_parking(f, 2);

	tick_until_alert(f, "parking", 5000, &a);
	assert_non_null(strstr(a.message, "1 message in the parking queue"));
	assert_non_null(strstr(a.message, "is not cutover's own"));
	until = num(f->state, "deadline_ms") + 1000;
	while (now_ms() < until) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(obj(f->state, "parking"), "own_taken"), "canary"), 1);
	assert_int_equal(num(obj(f->state, "parking"), "foreign"), 1);
	/* Still there, and it is the foreign one. */
	assert_int_equal(parking_depth(f), 1);
	assert_int_equal(broker_get(f->c.amqp, q, false, &d, err, sizeof(err)), 0);
	assert_int_equal(d.len, 3);
	assert_memory_equal(d.body, "old", 3);
	assert_int_not_equal(publish_read(&d, &pi, err, sizeof(err)), 0);
	broker_delivery_free(&d);
	ack_all(f);
	tick_until_done(f, 5000);
	assert_int_equal(events(f, "alert.raised", "parking"), 1);
}

/* The wall clock jumps an hour forward two ticks into the watch (through
 * the step clock, as a test can): the watch still does not end before
 * its deadline has passed in monotonic time. */
static void
test_clock_jump_does_not_end_the_watch(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	int64_t done_at;

	start(f, "jump", 1, 0, NULL);
	f->flip_ms = now_ms();
	for (int i = 0; i < 2; i++) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	f->jump_ms = 60 * 60 * 1000;
	done_at = tick_until_done(f, 30000);
	fprintf(stderr, "# clock jump: ended %lld ms after the flip\n",
	    (long long)(done_at - f->flip_ms));
	assert_true(done_at >= f->flip_ms + STATS_LAG_MS);
	assert_true(done_at >= f->flip_ms + OLD_TTL_MS + ALLOWANCE_MS);
}

/* Runs scripts/broker VERB ... --port P for the test node (P from
 * CUTOVER_TEST_AMQP); THEN, when not NULL, runs after it as a second
 * verb; fails the test when either fails. */
static void
broker_script(const char *verb, const char *then)
{
	const char *src = need_env("CUTOVER_SOURCE_DIR");
	const char *url = need_env("CUTOVER_TEST_AMQP"), *c = strrchr(url, ':');
	char cmd[2048];
	int port = c != NULL ? atoi(c + 1) : 0;

	if (port <= 0)
		fail_msg("no port in CUTOVER_TEST_AMQP '%s'", url);
	snprintf(cmd, sizeof(cmd), "'%s/scripts/broker' %s --port %d >&2", src, verb, port);
	if (then != NULL)
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " && '%s/scripts/broker' "
		    "%s --port %d >&2", src, then, port);
	if (system(cmd) != 0)
		fail_msg("scripts/broker %s%s%s on port %d failed", verb, then ? " and " : "",
		    then ? then : "", port);
}

/* Restarts the test's own broker node with scripts/broker stop and start. */
static void
restart_broker(void)
{
	broker_script("stop", "start");
}

/* Whether the node declares (and deletes) a quorum queue of its own. */
static bool
quorum_declares(struct fixture *f)
{
	struct topology_arg a = { .key = "x-queue-type", .str = "quorum" };
	char q[LADDER_NAME_MAX], err[1024];
	bool ok;

	snprintf(q, sizeof(q), "%s.quorum-check", itest_run_id());
	ok = broker_queue_declare(f->c.amqp, q, true, &a, 1, err, sizeof(err)) == 0;
	if (!ok)
		fprintf(stderr, "# quorum declare after the restart: %s\n", err);
	(void)broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err));
	return ok;
}

/* After a restart a node can keep refusing quorum queues (INTERNAL_ERROR:
 * its Raft system did not recover, DESIGN.md §3). The tests after this one
 * share the node: restart it again until a quorum queue declares (three
 * tries), so that this test's restart never fails another test. */
static void
leave_quorum_working(struct fixture *f)
{
	for (int i = 0; i < 3; i++) {
		if (quorum_declares(f) || quorum_declares(f))
			return;
		restart_broker();
	}
	fail_msg("after restarting, the node refuses quorum queues");
}

static void
ack_all_but(struct fixture *f, const char *kind)
{
	struct alerts al;
	char err[512];

	open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		if (strcmp(al.v[i].kind, kind) != 0)
			assert_int_equal(store_alert_ack(f->s, f->plan_id, al.v[i].id,
			    "itest", "seen", now_ms(), err, sizeof(err)), 0);
}

/* The broker restarts mid-watch while classic old queues hold 10
 * messages: the watch raises broker_restart naming the node and the 10
 * messages exposed to at-most-once dead-lettering, holds past its
 * deadline until that alert is acknowledged, then ends; the probe queue
 * survived the restart. */
static void
test_broker_restart_mid_watch(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char q[LADDER_NAME_MAX], err[2048];
	int64_t until;
	int probe_after;

	start(f, "restart", 2, 5, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 10);
	restart_broker();
	snprintf(q, sizeof(q), "cutover.probe.%s", f->p->name);
	probe_after = broker_queue_inspect(f->c.amqp, q, NULL, err, sizeof(err));
	if (probe_after < 0)	/* the first call after the restart reconnects */
		probe_after = broker_queue_inspect(f->c.amqp, q, NULL, err, sizeof(err));

	tick_until_alert(f, "broker_restart", 60000, &a);
	fprintf(stderr, "# broker_restart: %s\n", a.message);
	assert_non_null(strstr(a.message, "10 old-path messages"));
	assert_non_null(strstr(a.message, "at-most-once"));
	assert_int_equal(probe_after, 0);

	/* Held past the deadline while the alert is open. */
	until = num(f->state, "deadline_ms") + 1000;
	while (now_ms() < until) {
		ack_all_but(f, "broker_restart");
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	ack_all_but(f, "broker_restart");
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_non_null(strstr(json_string_value(json_object_get(obj(f->state, "summary"),
	    "status")), "alert is open"));
	ack_all(f);
	tick_until_done(f, 15000);
	assert_int_equal(events(f, "alert.raised", "broker_restart"), 1);
	leave_quorum_working(f);
}

/* Disables and enables the test node's management plugin: its agent
 * restarts with every statistic gone, the node does not. */
static void
restart_management(void)
{
	broker_script("management-restart", NULL);
}

/* Old queue NAME's message_stats.publish by the management API, -1 when
 * it shows none. */
static int64_t
api_publishes(struct fixture *f, const char *name)
{
	char vh[800], qn[800], path[2048], err[512];
	json_t *a = NULL;
	int64_t n = -1;

	assert_true(mgmt_escape(mgmt_vhost(f->c.mgmt), vh, sizeof(vh)) >= 0);
	assert_true(mgmt_escape(name, qn, sizeof(qn)) >= 0);
	snprintf(path, sizeof(path), "/api/queues/%s/%s?columns=message_stats", vh, qn);
	if (mgmt_request(f->c.mgmt, "GET", path, NULL, &a, NULL, err, sizeof(err)) == 0) {
		const json_t *v = json_object_get(json_object_get(a, "message_stats"),
		    "publish");

		if (json_is_integer(v))
			n = json_integer_value(v);
	}
	json_decref(a);
	return n;
}

/* Old queue NAME's entry in the last full pass's "seen". */
static const json_t *
seen_of(struct fixture *f, const char *name)
{
	return json_object_get(json_object_get(obj(f->state, "old"), "seen"), name);
}

/* The management agent restarts mid-watch (the plugin disabled and
 * enabled), the node does not. For a few seconds the API lists the old
 * queue without message_stats and the node without uptime; then the
 * counter comes back with the whole count of the channel that published
 * the 20 messages long before. That is a new baseline: no old_publish, no
 * broker_restart with its possible-loss warning, the agent's restart said
 * in the history (watch.statistics_restarted); and a publish after it is
 * counted as one again (3 messages). */
static void
test_management_restart_is_no_publish(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];
	int64_t until;

	old_ttl_ms = 120000;	/* the messages wait through the test */
	start(f, "agent", 1, 20, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	/* Published before the watch's first look: counted there. */
	until = now_ms() + ALERT_CEILING_MS;
	while (api_publishes(f, f->old[0]) != 20) {
		if (now_ms() > until)
			fail_msg("the statistics never showed the 20 publishes");
		sleep_ms(INTERVAL_MS);
	}
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(json_integer_value(seen_of(f, f->old[0])), 20);

	restart_management();
	/* Until the counter is back, and then past the statistics' lag. */
	until = now_ms() + 60000;
	while (!json_is_integer(seen_of(f, f->old[0])) ||
	    json_integer_value(seen_of(f, f->old[0])) == 0) {
		if (now_ms() > until)
			fail_msg("the old queue's counter did not come back within 60 s");
		ack_all(f);	/* broker_unreachable while the API was away */
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# the counter came back as %lld\n",
	    (long long)json_integer_value(seen_of(f, f->old[0])));
	until = now_ms() + STATS_LAG_MS + 2000;
	while (now_ms() < until) {
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(events(f, "alert.raised", "old_publish"), 0);
	assert_int_equal(events(f, "alert.raised", "broker_restart"), 0);
	assert_int_equal(num(obj(f->state, "old"), "after_flip"), 0);
	assert_int_equal(events(f, "watch.statistics_restarted", NULL), 1);

	/* A publish after the new baseline is one. */
	publish_to(&f->c, "", f->old[0], 3);
	tick_until_alert(f, "old_publish", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, "3 messages entered the old path after the flip"));
	assert_int_equal(num(obj(f->state, "old"), "after_flip"), 3);
}

/* ---- every level proven moving, pending dead-letters, bands (issue 22) ---- */

/* Entry K of array member KEY of the state's member PART. */
static const json_t *
entry(struct fixture *f, const char *part, const char *key, int k)
{
	const json_t *e = json_array_get(json_object_get(obj(f->state, part), key),
	    (size_t)k);

	assert_non_null(e);
	return e;
}

/* Level K's entry in the summary's "levels", and its persisted state. */
#define level_summary(f, k)	entry((f), "summary", "levels", (k))
#define level_state(f, k)	entry((f), "levels", "list", (k))

/* The value of /metrics series NAME{plan="<the plan>",LABEL} (LABEL: the
 * rest of the labels, "" for none), or -1 when /metrics has no such line. */
static double
metric(struct fixture *f, const char *name, const char *label)
{
	char want[256], err[512], *text = NULL, *at;
	size_t len;
	double v = -1;

	if (metrics_render(f->s, &text, &len, err, sizeof(err)) != 0)
		fail_msg("metrics: %s", err);
	snprintf(want, sizeof(want), "\n%s{plan=\"%s\"%s%s} ", name, plan_name,
	    label[0] ? "," : "", label);
	if ((at = strstr(text, want)) != NULL)
		v = strtod(at + strlen(want), NULL);
	free(text);
	return v;
}

/* Ticks until an open alert of KIND says TEXT (the alert of a kind is
 * one, its message the last raise's), into *A, within the ceiling. */
static void
tick_until_alert_says(struct fixture *f, const char *kind, const char *text,
    struct store_alert *a)
{
	int64_t until = now_ms() + ALERT_CEILING_MS;

	for (;;) {
		tick_until_alert(f, kind, ALERT_CEILING_MS, a);
		if (strstr(a->message, text) != NULL)
			return;
		if (now_ms() > until)
			fail_msg("no %s alert saying \"%s\" within %d ms (last: %s)", kind,
			    text, ALERT_CEILING_MS, a->message);
		sleep_ms(INTERVAL_MS);
	}
}

/* Ticks until level K's probe has come out on time once. */
static void
tick_until_level_proven(struct fixture *f, int k)
{
	int64_t until = now_ms() + ALERT_CEILING_MS;
	char err[2048];

	for (;;) {
		if (tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped before level %d was proven: %s", k, err);
		if (json_array_size(json_object_get(obj(f->state, "levels"), "list")) >
		    (size_t)k && num(level_state(f, k), "on_time") >= 1)
			return;
		if (now_ms() > until)
			fail_msg("level %d not proven within %d ms", k, ALERT_CEILING_MS);
		sleep_ms(INTERVAL_MS);
	}
}

/* Level 2's bypass binding (exchange 2 -> exchange 1, bit 2 = 0) deleted
 * under the watch: what expires in level 3 (and 4) then routes nowhere,
 * stays in the level as a pending dead-letter (quorum, at-least-once),
 * and the level behind it waits. The level probe of level 3 does not
 * come out: level_late names level 3 (the time from the deletion to the
 * alert is printed: its TTL 800 ms + allowance 1 s + ticks); the pending
 * dead-letters held longer than the allowance raise dead_letters_pending
 * with their count; the level reads "late", and the watch holds. */
static void
test_stuck_level_raises_level_late(void **state)
{
	struct fixture *f = *state;
	struct store_alert a, b;
	char x2[LADDER_NAME_MAX], x1[LADDER_NAME_MAX], key[LADDER_NAME_MAX];
	char want[LADDER_NAME_MAX + 32], err[2048];
	int64_t cut;

	start(f, "stuck", 1, 0, NULL);
	f->flip_ms = now_ms();
	tick_until_level_proven(f, 3);
	ladder_level_exchange(&f->p->ladder, 2, x2, sizeof(x2));
	ladder_level_exchange(&f->p->ladder, 1, x1, sizeof(x1));
	ladder_bypass_pattern(&f->p->ladder, 2, key, sizeof(key));
	assert_int_equal(broker_exchange_unbind(f->c.amqp, x1, x2, key, err,
	    sizeof(err)), 0);
	cut = now_ms();
	snprintf(want, sizeof(want), "level 3 ('%s.level.03') is not moving", prefix);
	tick_until_alert_says(f, "level_late", want, &a);
	fprintf(stderr, "# stuck level: level_late naming level 3 %lld ms after the "
	    "binding was deleted (level 3: TTL 800 ms + allowance %d ms): %s\n",
	    (long long)(now_ms() - cut), ALLOWANCE_MS, a.message);
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 3),
	    "status")), "late");
	assert_string_equal(json_string_value(json_object_get(level_summary(f, 1),
	    "status")), "moving");
	snprintf(want, sizeof(want), "level 3 ('%s.level.03') has held ", prefix);
	tick_until_alert_says(f, "dead_letters_pending", want, &b);
	fprintf(stderr, "# pending dead-letters: %lld ms after the deletion: %s\n",
	    (long long)(now_ms() - cut), b.message);
	assert_non_null(strstr(b.message, "pending dead-letter"));
	assert_true(num(level_summary(f, 3), "dead_letters") >= 1);
	/* Pending dead-letters are not in the depth: the level is not empty. */
	assert_true(strcmp(json_string_value(json_object_get(level_summary(f, 3),
	    "oldest_age_source")), "empty") != 0);
	assert_true(num(level_state(f, 3), "stuck") >= 1);
	assert_int_equal(events(f, "alert.raised", "level_late"), 1);
	assert_int_equal(events(f, "alert.raised", "parking"), 0);
	/* /metrics: by level only. */
	assert_true(metric(f, "cutover_ladder_dead_letters_pending", "level=\"3\"") >= 1);
	assert_true(metric(f, "cutover_ladder_level_late", "level=\"3\"") == 1);
	assert_true(metric(f, "cutover_ladder_level_moving", "level=\"1\"") == 1);
	assert_true(metric(f, "cutover_alerts_open", "kind=\"level_late\"") == 1);
	assert_true(metric(f, "cutover_alerts_open",
	    "kind=\"dead_letters_pending\"") == 1);
}

/* Client publishes entering at level 2 (500 ms = 5 units = bits 2 and 0)
 * show up in band 2's counter (level 2 exchange's publish_in), not in
 * band 3's, which counts only the watch's own level-3 probes. 200 of
 * them: more than the level probes of level 2 (one in flight at a time,
 * 400 ms each) can add within the ceiling. A foreign message in parking
 * holds the watch open meanwhile. */
static void
test_band_counts_publishes_entering_each_level(void **state)
{
	struct fixture *f = *state;
	struct publish_request r;
	struct publish_receipt rc;
	char dest[LADDER_NAME_MAX], x[LADDER_NAME_MAX], err[2048];
	int64_t until, band2 = -1, band3 = -1;
	const json_t *b2, *b3;

	start(f, "band", 1, 0, NULL);
	f->flip_ms = now_ms();
	ladder_parking_exchange(&f->p->ladder, x, sizeof(x));
	publish_to(&f->c, x, "1.0.1.0.0.nobody.takes.this", 1);
	snprintf(dest, sizeof(dest), "%s.dest", prefix);
	for (int i = 0; i < 200; i++) {
		memset(&r, 0, sizeof(r));
		r.plan = "itest-band";
		r.purpose = PUBLISH_MANUAL;
		r.seq = i;
		r.delay_ms = 500;
		r.destination = dest;
		r.body = "band";
		r.len = 4;
		assert_int_equal(publish_delayed(f->c.amqp, &f->p->ladder, &r, &rc, err,
		    sizeof(err)), PUBLISH_OK);
		if (i == 0) {
			ladder_level_exchange(&f->p->ladder, 2, x, sizeof(x));
			assert_string_equal(rc.exchange, x);
		}
	}
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		if (tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped: %s", err);
		b2 = json_object_get(level_summary(f, 2), "band_publishes");
		b3 = json_object_get(level_summary(f, 3), "band_publishes");
		band2 = json_is_integer(b2) ? json_integer_value(b2) : -1;
		band3 = json_is_integer(b3) ? json_integer_value(b3) : -1;
		if (band2 >= 200)
			break;
		if (now_ms() > until)
			fail_msg("band 2 counted %lld of 200 within %d ms", (long long)band2,
			    ALERT_CEILING_MS);
		sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# bands: level 2 %lld (200 + %lld level probes sent), level 3 "
	    "%lld (%lld level probes sent)\n", (long long)band2,
	    (long long)num(level_state(f, 2), "sent"), (long long)band3,
	    (long long)num(level_state(f, 3), "sent"));
	assert_true(band2 <= 200 + num(level_state(f, 2), "sent"));
	assert_true(band3 >= 0);
	assert_true(band3 <= num(level_state(f, 3), "sent"));
	assert_true(metric(f, "cutover_ladder_band_publishes_total", "level=\"2\"") ==
	    (double)band2);
}

/* A classic ladder whose level 4 holds a message with a timestamp
 * property (published 100 s ago by its stamp, re-sent every tick so that
 * the level always holds one): the oldest age comes from the broker's
 * head_message_timestamp and says so; levels the management API reports
 * no head timestamp for do not claim one. */
static void
test_oldest_age_from_the_head_timestamp(void **state)
{
	struct fixture *f = *state;
	char x[LADDER_NAME_MAX], path[512], vh[64], key[128], err[2048];
	int64_t until, sent4;
	json_t *body;
	const json_t *lv;

	queue_type = "classic";
	/* The statistics show a head timestamp only when, at one of their
	 * samples (every 5 s), a stamped message is at the level's head; the
	 * watch's own level-4 probe, unstamped, took the head part of each
	 * cycle, and on a loaded machine sample after sample missed it. A
	 * watch held past its deadline by an old queue that does not drain
	 * sends no level-4 probe (its TTL is beyond the allowance), so the
	 * level holds only the test's messages. */
	start_undrained(f, "oldest", 1);
	/* Past the deadline (which the publish moves when the statistics
	 * count it), the probe sent before it has come out. */
	while (now_ms() <= num(f->state, "deadline_ms") + STATS_LAG_MS) {
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	sent4 = num(level_summary(f, 4), "probes_sent");
	ladder_level_exchange(&f->p->ladder, 4, x, sizeof(x));
	assert_true(mgmt_escape(mgmt_vhost(f->c.mgmt), vh, sizeof(vh)) >= 0);
	snprintf(path, sizeof(path), "/api/exchanges/%s/%s/publish", vh, x);
	snprintf(key, sizeof(key), "1.0.0.0.0.%s.dest", prefix);
	until = now_ms() + ALERT_CEILING_MS;
	for (;;) {
		body = json_pack("{s:{s:I},s:s,s:s,s:s}", "properties", "timestamp",
		    (json_int_t)(now_ms() / 1000 - 100), "routing_key", key, "payload",
		    "old", "payload_encoding", "string");
		assert_int_equal(mgmt_request(f->c.mgmt, "POST", path, body, NULL, NULL,
		    err, sizeof(err)), 0);
		json_decref(body);
		if (tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped: %s", err);
		lv = level_summary(f, 4);
		if (strcmp(json_string_value(json_object_get(lv, "oldest_age_source")),
		    "head_timestamp") == 0)
			break;
		if (now_ms() > until)
			fail_msg("no head timestamp for level 4 within %d ms",
			    ALERT_CEILING_MS);
		sleep_ms(INTERVAL_MS);
	}
	fprintf(stderr, "# oldest age of level 4 by its head timestamp: %lld ms\n",
	    (long long)num(lv, "oldest_age_ms"));
	assert_int_equal(num(lv, "probes_sent"), sent4);
	assert_true(num(lv, "oldest_age_ms") >= 100000);
	/* Classic: no pending dead-letters reported, none claimed. */
	assert_true(json_is_null(json_object_get(lv, "dead_letters")));
	assert_true(metric(f, "cutover_ladder_oldest_age_ms", "level=\"4\"") >= 100000);
}

/* A watch held past its deadline (an old queue that does not drain) goes
 * on proving the levels whose TTL is within the allowance (1 s: levels
 * 0-3), and past the deadline sends no probe of a longer level (level 4,
 * 1.6 s), which could hold a watch that may end. */
static void
test_held_watch_keeps_proving_short_levels(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	int64_t sent4, on3, until;

	start_undrained(f, "held", 1);
	/* Past the deadline (which the publish moves when the statistics
	 * count it). */
	while (now_ms() <= num(f->state, "deadline_ms") + STATS_LAG_MS) {
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	sent4 = num(level_summary(f, 4), "probes_sent");
	on3 = num(level_summary(f, 3), "probes_on_time");
	until = now_ms() + ALERT_CEILING_MS;
	while (num(level_summary(f, 3), "probes_on_time") < on3 + 2) {
		if (now_ms() > until)
			fail_msg("level 3 not proven again past the deadline");
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	}
	for (int k = 0; k < 4; k++)
		assert_string_equal(json_string_value(json_object_get(level_summary(f, k),
		    "status")), "moving");
	assert_int_equal(num(level_summary(f, 4), "probes_sent"), sent4);
	assert_false(json_is_true(json_object_get(f->state, "done")));
}

/* ---- the old path's light and full passes (watch_old_pass.c) ---- */

#define PASS_BOUND_MS	60000	/* a publish is counted within this */

static const json_t *
pass_of(struct fixture *f)
{
	return obj(obj(f->state, "old"), "pass");
}

static const char *
pass_why(struct fixture *f)
{
	const char *s = json_string_value(json_object_get(pass_of(f), "why"));

	assert_non_null(s);
	return s;
}

/* Ticks until a tick makes a light pass (and returns), within the
 * ceiling. */
static void
tick_until_light(struct fixture *f)
{
	int64_t until = now_ms() + ALERT_CEILING_MS, light;
	char err[2048];

	for (;;) {
		light = f->state != NULL ? num(pass_of(f), "light") : 0;
		switch (tick(f, err, sizeof(err))) {
		case 1:
			break;
		case 0:
			fail_msg("the watch ended %lld ms after the flip, before any light "
			    "pass (last full pass: %s)", (long long)(now_ms() - f->flip_ms),
			    pass_why(f));
			break;
		default:
			fail_msg("the watch failed: %s", err);
		}
		if (num(pass_of(f), "light") > light)
			return;
		if (now_ms() > until)
			fail_msg("no light pass within %d ms (last full pass: %s)",
			    ALERT_CEILING_MS, pass_why(f));
		sleep_ms(INTERVAL_MS);
	}
}

/* Ticks until no growth of the exchanges' publish counters is left to
 * count (the test's own publishes before the watch), then until a light
 * pass. */
static void
tick_until_settled(struct fixture *f)
{
	int64_t until = now_ms() + 2 * ALERT_CEILING_MS;
	char err[2048];

	do {
		if (now_ms() > until)
			fail_msg("the exchanges' publishes never counted by a full pass");
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	} while (num(pass_of(f), "growth_last_ms") != 0);
	tick_until_light(f);
}

/* (a) A publish into an old queue that is empty and past its own deadline,
 * which light passes do not read: the exchanges' counters show it, a full
 * pass counts it, and old_publish is raised within the bound, while
 * another old queue's long TTL keeps the watch's deadline far. */
static void
test_light_pass_counts_a_publish_into_an_empty_queue(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	struct alerts al;
	char err[2048];
	int64_t sent, until, light;
	bool growth = false;

	old_ttl_ms = 600000;
	start(f, "lightpub", 2, 0, NULL);
	/* old[1]: 2 s, so that its own deadline passes during the test. */
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[1], 0, NULL, err,
	    sizeof(err)), 0);
	old_queue_ttl(&f->c, f->old[1], OLD_TTL_MS);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(pass_of(f), "full"), 1);
	assert_string_equal(pass_why(f), "the first look");
	assert_int_equal(num(pass_of(f), "queues"), 2);
	tick_until_settled(f);
	while (now_ms() <= num(f->state, "last_old_entry_ms") + OLD_TTL_MS + ALLOWANCE_MS)
		tick_until_light(f);
	/* Light passes read no queue: every old queue is empty. */
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 0);
	assert_int_equal(num(obj(f->state, "summary"), "old_queues"), 2);
	assert_int_equal(json_object_size(obj(obj(f->state, "old"), "held")), 0);
	light = num(pass_of(f), "light");

	sent = now_ms();
	publish_to(&f->c, "", f->old[1], 1);
	until = sent + ALERT_CEILING_MS;
	for (;;) {
		const struct store_alert *x;

		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		growth |= num(pass_of(f), "growth_last_ms") >= sent;
		open_alerts(f, &al);
		if ((x = find_alert(&al, "old_publish")) != NULL) {
			a = *x;
			break;
		}
		if (now_ms() > until)
			fail_msg("no old_publish within %d ms", ALERT_CEILING_MS);
	}
	assert_true(growth);
	assert_true(a.raised_ms - sent <= PASS_BOUND_MS);
	assert_int_equal(num(obj(f->state, "old"), "after_flip"), 1);
	assert_non_null(strstr(a.message, "1 message entered the old path after the flip"));
	assert_true(num(f->state, "last_old_entry_ms") >= sent);
	assert_true(num(pass_of(f), "light") >= light);
	assert_true(num(pass_of(f), "full") >= 2);
}

/* (b) Queues holding messages are read exactly on every light pass: a
 * message taken from one, or published into another, shows in the very
 * next tick's depth, before the statistics could. */
static void
test_light_pass_reads_nonempty_queues_exactly(void **state)
{
	struct fixture *f = *state;
	struct broker_delivery d;
	char err[2048];
	int64_t depth = 6;
	int light_checked = 0;

	old_ttl_ms = 600000;
	start(f, "lightexact", 2, 3, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 6);
	tick_until_settled(f);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 6);
	assert_int_equal(num(obj(f->state, "summary"), "old_nonempty"), 2);
	/* Take messages one by one: each next tick says exactly how many are
	 * left, at least twice on a light pass. */
	for (int i = 0; i < 5 && light_checked < 2; i++) {
		int64_t light = num(pass_of(f), "light");

		assert_int_equal(broker_get(f->c.amqp, f->old[i % 2], false, &d, err,
		    sizeof(err)), 0);
		broker_delivery_free(&d);
		depth--;
		assert_int_equal(tick(f, err, sizeof(err)), 1);
		assert_int_equal(num(obj(f->state, "summary"), "old_depth"), depth);
		if (num(pass_of(f), "light") > light)
			light_checked++;
		sleep_ms(INTERVAL_MS);
	}
	assert_int_equal(light_checked, 2);
	/* Drained: the queue drops out of what light passes read. */
	while (depth > 0) {
		assert_int_equal(broker_get(f->c.amqp, f->old[(int)depth % 2], false, &d,
		    err, sizeof(err)), 0);
		broker_delivery_free(&d);
		depth--;
	}
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	assert_int_equal(num(obj(f->state, "summary"), "old_depth"), 0);
	assert_int_equal(num(obj(f->state, "summary"), "old_nonempty"), 0);
	assert_int_equal(json_object_size(obj(obj(f->state, "old"), "held")), 0);
}

/* (c) However many light passes ran, the watch ends on a full pass, so
 * that its last sample (what remove_old compares against) has every old
 * queue's publish counter and exact depth; remove_old then removes them. */
static void
test_watch_ends_on_a_full_pass(void **state)
{
	struct fixture *f = *state;
	const json_t *qs, *e;
	char err[2048];
	size_t i;

	/* Light passes happen before the deadline only: TTLs long enough
	 * that a slow first look on a loaded machine leaves time for one. */
	old_ttl_ms = 8000;
	start(f, "lightend", 2, 1, NULL);
	f->flip_ms = now_ms();
	tick_until_light(f);
	tick_until_done(f, 3 * ALERT_CEILING_MS);
	assert_true(num(pass_of(f), "light") >= 1);
	assert_string_equal(pass_why(f), "past the deadline: every old queue is read "
	    "before the end");
	qs = json_object_get(obj(f->state, "old_last"), "queues");
	assert_int_equal(json_array_size(qs), 2);
	json_array_foreach(qs, i, e) {
		assert_true(json_is_integer(json_object_get(e, "publish")));
		assert_int_equal(num(e, "publish"), 1);
		assert_int_equal(num(e, "messages"), 0);
	}
	f->c.watched = f->state;
	assert_int_equal(remove_old(f, err, sizeof(err)), 0);
	for (int k = 0; k < 2; k++)
		assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[k], NULL, err,
		    sizeof(err)), BROKER_NOT_FOUND);
}

/* A dead-letter that has nowhere to go (a destination nobody binds, and
 * the parking queue gone): RabbitMQ keeps it in the quorum level's
 * dead-letter buffer, retrying. The watch reads every level's pending
 * dead-letters although the parking queue is missing, names level 0 and
 * its count while level 0's own probes still come out on time, and the
 * parking queue's drift alert says the message is held, not dropped. */
static void
test_unroutable_dead_letter_is_held_and_named(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char q[LADDER_NAME_MAX], x[LADDER_NAME_MAX], key[128], err[2048];
	int64_t light, until;
	const json_t *dl;

	old_ttl_ms = 600000;	/* a watch that does not end meanwhile */
	start(f, "heldlvl", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	tick_until_level_proven(f, 0);
	ladder_parking_queue(&f->p->ladder, q, sizeof(q));
	assert_int_equal(broker_queue_delete(f->c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	ladder_level_exchange(&f->p->ladder, 0, x, sizeof(x));
	snprintf(key, sizeof(key), "0.0.0.0.1.%s.nobody.binds.this", prefix);
	publish_to(&f->c, x, key, 1);
	tick_until_alert_says(f, "dead_letters_pending", "level 0 (", &a);
	fprintf(stderr, "# held dead-letter: %s\n", a.message);
	assert_non_null(strstr(a.message, "1 pending dead-letter "));
	assert_open_alert_with(f, "ladder_drift", "is held in the level");
	/* Read on a light pass too (each queue by its own GET). */
	light = num(pass_of(f), "light");
	until = now_ms() + ALERT_CEILING_MS;
	do {
		if (now_ms() > until)
			fail_msg("no light pass within %d ms", ALERT_CEILING_MS);
		sleep_ms(INTERVAL_MS);
		assert_int_equal(tick(f, err, sizeof(err)), 1);
	} while (num(pass_of(f), "light") == light);
	dl = json_object_get(level_summary(f, 0), "dead_letters");
	if (!json_is_integer(dl) || json_integer_value(dl) < 1)
		fail_msg("level 0's dead_letters on a light pass: %s",
		    json_is_null(dl) ? "null" : "not 1 or more");
	assert_true(metric(f, "cutover_ladder_dead_letters_pending", "level=\"0\"") >= 1);
}

/* ARGV[1], when given, runs only the tests whose name matches it. */
/* The old path is the selection, not a snapshot: a queue the selection
 * takes that appears before the flip (a library declares one when a delay
 * is first used) joins the old path. The watch raises nothing for it,
 * counts its TTL in the deadline and records it among the members;
 * remove_old then removes it like a measured one. */
static void
test_queue_joining_before_the_flip_is_a_member(void **state)
{
	struct fixture *f = *state;
	char err[2048];
	json_t *r = NULL;
	const json_t *joined;
	int64_t joined_ttl = OLD_TTL_MS + 1500;

	start(f, "join", 1, 1, NULL);
	/* After the measure, before the flip: a delay first used now. */
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.joined", prefix);
	f->extra = true;
	old_queue_ttl(&f->c, f->old[f->nold], joined_ttl);
	publish_to(&f->c, "", f->old[f->nold], 2);
	f->flip_ms = now_ms();
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	joined = json_object_get(obj(f->state, "old"), "joined");
	assert_int_equal(json_integer_value(json_object_get(joined, f->old[f->nold])),
	    joined_ttl);
	assert_int_equal(num(f->state, "max_ttl_ms"), joined_ttl);
	assert_true(num(f->state, "deadline_ms") >= f->flip_ms + joined_ttl +
	    ALLOWANCE_MS);
	/* Nothing to acknowledge: it ends by itself once both drained. */
	tick_until_done(f, 30000);
	assert_int_equal(events(f, "alert.raised", "old_new_queue"), 0);
	assert_int_equal(events(f, "alert.raised", NULL), 0);

	/* remove_old takes the member as it takes the measured queue. */
	f->c.measured = f->measured;
	f->c.watched = f->state;
	f->c.old_last_entry_ms = num(f->state, "last_old_entry_ms");
	f->c.state = NULL;
	f->c.now_ms = 0;
	if (step_remove_old(&f->c, &r, err, sizeof(err)) != 0)
		fail_msg("remove_old: %s", err);
	assert_false(f->c.again);
	assert_int_equal(num(obj(r, "counts"), "removed"), 2);
	assert_int_equal(broker_queue_inspect(f->c.amqp, f->old[f->nold], NULL, err,
	    sizeof(err)), BROKER_NOT_FOUND);
	json_decref(r);
	f->c.watched = NULL;
}

/* Past the flip's statistics window, a queue that appears between two
 * looks was created by a publish after the flip: old_new_queue names it,
 * and it is a member all the same (its TTL counts). */
static void
test_queue_created_after_the_flip_is_alerted(void **state)
{
	struct fixture *f = *state;
	struct store_alert a;
	char err[2048];

	start(f, "created", 1, 0, NULL);
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	assert_int_equal(tick(f, err, sizeof(err)), 1);
	snprintf(f->old[f->nold], sizeof(f->old[f->nold]), "%s.old.late", prefix);
	f->extra = true;
	old_queue_ttl(&f->c, f->old[f->nold], OLD_TTL_MS + 500);
	tick_until_alert(f, "old_new_queue", ALERT_CEILING_MS, &a);
	assert_non_null(strstr(a.message, ".old.late'"));
	assert_non_null(strstr(a.message, "appeared after the flip"));
	assert_int_equal(json_integer_value(json_object_get(json_object_get(obj(f->state,
	    "old"), "joined"), f->old[f->nold])), OLD_TTL_MS + 500);
	ack_all(f);
	tick_until_done(f, 30000);
	assert_int_equal(events(f, "alert.raised", "old_new_queue"), 1);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_watch_runs_to_its_deadline,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_publish_moves_the_deadline,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_parking_holds_the_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_binding_raises_ladder_drift,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_probe_raises_probe_alert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_broker_unreachable_is_an_alert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_flag_off_holds_the_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_unreadable_flag_holds_the_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_remove_old_refuses_while_the_flag_is_off,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_vanished_old_queue_raises_an_alert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_old_not_drained_holds_the_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_level_queue_raises_ladder_drift,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_deleted_parking_queue_raises_ladder_drift,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_early_probe_raises_probe_alert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_late_probe_raises_probe_alert,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_messages_leave_parking,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_foreign_parked_message_stays,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_clock_jump_does_not_end_the_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_broker_restart_mid_watch,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_management_restart_is_no_publish,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_stuck_level_raises_level_late,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_band_counts_publishes_entering_each_level,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_oldest_age_from_the_head_timestamp,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_watch_keeps_proving_short_levels,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_light_pass_counts_a_publish_into_an_empty_queue,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_light_pass_reads_nonempty_queues_exactly,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_joining_before_the_flip_is_a_member,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_queue_created_after_the_flip_is_alerted,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_watch_ends_on_a_full_pass,
		    setup, teardown),
		cmocka_unit_test_setup_teardown(test_unroutable_dead_letter_is_held_and_named,
		    setup, teardown),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	/* CUTOVER_TEST_FILTER=test_own* runs only the tests it matches. */
	else if (getenv("CUTOVER_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("CUTOVER_TEST_FILTER"));
	return itest_run_part("tests", tests, sizeof(tests) / sizeof(tests[0]), NULL, NULL);
}
