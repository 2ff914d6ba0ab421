/* itest_watch: the watch tests' fixture, ticks and readers (itest_watch.h). */
#include "itest_watch.h"
#include "itest_plan.h"

char iwatch_prefix[64];     /* itest<pid>.<test> */
const char *iwatch_queue_type = "quorum";	/* the ladder's; setup resets it */

int64_t iwatch_old_ttl_ms = OLD_TTL_MS;	/* start()'s old queues; setup resets it */

static char plan_name[64];  /* itest<pid>-<test> */

static void
set_names(const char *test)
{
	snprintf(iwatch_prefix, sizeof(iwatch_prefix), "itest%ld.%s", (long)getpid(), test);
	snprintf(plan_name, sizeof(plan_name), "itest%ld-%s", (long)getpid(), test);
}

void
iwatch_sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

int
iwatch_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	iwatch_queue_type = "quorum";
	iwatch_old_ttl_ms = OLD_TTL_MS;
	*state = f;
	return f == NULL ? -1 : 0;
}

int
iwatch_teardown(void **state)
{
	struct fixture *f = *state;
	char name[LADDER_NAME_MAX], err[512];

	if (f->p != NULL && f->c.amqp != NULL) {
		itest_delete_topology(f->c.amqp, f->p);
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
	free(f->state_text);
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
	struct itest_plan b = { .len = 0 };
	char re[128];
	size_t j = 0;

	/* The old selection as a regex: the prefix with its dots escaped. */
	for (const char *s = iwatch_prefix; *s != '\0' && j + 3 < sizeof(re); s++) {
		if (*s == '.')
			re[j++] = '\\';
		re[j++] = *s;
	}
	re[j] = '\0';
	itest_need_env("CUTOVER_TEST_PASSWORD");
	itest_plan_addf(&b,
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
	    "  max_lateness: 1s\n",
	    plan_name, itest_need_env("CUTOVER_TEST_AMQP"),
	    management ? management : itest_need_env("CUTOVER_TEST_MGMT"),
	    itest_need_env("CUTOVER_TEST_USER"), re, iwatch_prefix, iwatch_queue_type,
	    iwatch_prefix);
	itest_plan_unleash_flag(&b, itest_need_env("CUTOVER_TEST_UNLEASH_URL"), feature);
	itest_plan_addf(&b,
	    "watch:\n"
	    "  interval: 200ms\n"
	    "  allowance: 1s\n"
	    "  probe_every: 1s\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, "
	    "watch]\n");
	return itest_plan_load("itest.yaml", b.text);
}

void
iwatch_publish_to(struct step_ctx *c, const char *exchange, const char *key, int n)
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

void
iwatch_publish_own(struct fixture *f, const char *plan, const char *purpose,
    int64_t seq, int64_t delay_ms, const char *dest, const char *body,
    struct publish_receipt *rc)
{
	struct broker_field batch = { .key = "x-cutover-batch", .str = "itest-batch" };
	struct publish_request r;
	char err[1024];

	memset(&r, 0, sizeof(r));
	r.plan = plan != NULL ? plan : f->p->name;
	r.purpose = purpose;
	r.seq = seq;
	r.delay_ms = delay_ms;
	r.destination = dest;
	r.body = body;
	r.len = strlen(body);
	if (strcmp(purpose, PUBLISH_CANARY) == 0) {
		r.headers = &batch;
		r.nheaders = 1;
	}
	if (publish_delayed(f->c.amqp, &f->p->ladder, &r, rc, err, sizeof(err)) !=
	    PUBLISH_OK)
		fail_msg("publishing a %s message to '%s': %s", purpose, dest, err);
}

void
iwatch_old_queue_ttl(struct step_ctx *c, const char *name, int64_t ttl_ms)
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

void
iwatch_old_queue(struct step_ctx *c, const char *name)
{
	iwatch_old_queue_ttl(c, name, iwatch_old_ttl_ms);
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

void
iwatch_start(struct fixture *f, const char *test, int nold, int msgs, const char *management)
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
		snprintf(f->old[i], sizeof(f->old[i]), "%s.old.%d", iwatch_prefix, i);
		iwatch_old_queue(&f->c, f->old[i]);
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
		iwatch_publish_to(&f->c, "", f->old[i], msgs);
}

void
iwatch_flip_long_ago(struct fixture *f)
{
	f->flip_ms = now_ms() - STATS_LAG_MS - 1000;
	f->seen_at_flip = true;
}

void
iwatch_tick_past_stats_lag(struct fixture *f)
{
	int64_t until = now_ms() + ALERT_CEILING_MS;
	char err[2048];

	while (strstr(json_string_value(json_object_get(iwatch_obj(f->state, "summary"),
	    "status")), "management statistics lag") != NULL) {
		if (now_ms() > until)
			fail_msg("the statistics never counted up to the deadline");
		iwatch_sleep_ms(INTERVAL_MS);
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
	}
}

void
iwatch_tick_past_deadline(struct fixture *f, int64_t past_ms)
{
	int64_t until = ijson_int(f->state, "deadline_ms") + past_ms;
	char err[2048];

	while (now_ms() < until) {
		assert_int_equal(iwatch_tick(f, err, sizeof(err)), 1);
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

int
iwatch_tick(struct fixture *f, char *err, size_t errlen)
{
	struct store_step st;
	json_t *r = NULL, *back;
	char *text;
	int rc, idx = plan_find_step(f->p, PLAN_STEP_WATCH);

	f->c.store = f->s;
	f->c.plan_id = f->plan_id;
	f->c.measured = f->measured;
	f->c.flip_ms = f->flip_ms;
	if (f->seen_at_flip && f->state != NULL) {
		/* After the first tick, which made the state. */
		json_object_set_new(json_object_get(json_object_get(f->state, "old"),
		    "pass"), "counted_to_ms", json_integer(f->flip_ms));
		json_object_set_new(json_object_get(f->state, "stats"), "counted_to_ms",
		    json_integer(f->flip_ms));
		f->seen_at_flip = false;
	}
	/* As the engine runs it: the state without its rows, which the
	 * step reads from the store, and its rows handed over to be kept
	 * apart (or the last ones kept). */
	f->c.state = f->state;
	f->c.state_text = f->state != NULL ? f->state_text : NULL;
	f->c.state_idx = idx;
	f->c.rows_wanted = true;
	f->c.now_ms = f->jump_ms != 0 ? now_ms() + f->jump_ms : 0;
	f->c.again = true;	/* step_watch must set it either way */
	rc = step_watch(&f->c, &r, err, errlen);
	assert_non_null(r);
	assert_true(rc == -1 || rc == 0);
	if (rc == 0 && f->c.again)
		rc = 1;
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_non_null(text);
	if (store_step_update_rows(f->s, f->plan_id, idx, rc < 0 ? "failed" : "running",
	    0, 0, text, NULL, step_rows_source(&f->c.rows, f->c.rows_kept), &f->c.rows,
	    f->c.rows.n, err, errlen) != 0)
		fail_msg("%s", err);
	free(text);
	step_rows_clear(&f->c.rows);
	f->c.rows_kept = false;
	f->c.state_text = NULL;
	/* What the next tick gets is what the store gives back. */
	if (store_step_get_apart(f->s, f->plan_id, idx, &st, err, errlen) != 0)
		fail_msg("%s", err);
	back = json_loads(st.result_json, 0, NULL);
	assert_non_null(back);
	assert_true(json_equal(back, r));
	free(f->state_text);
	f->state_text = st.result_json;
	st.result_json = NULL;
	store_step_clear(&st);
	json_decref(r);
	json_decref(f->state);
	f->state = back;
	return rc;
}

const json_t *
iwatch_obj(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_object(v))
		fail_msg("'%s' is not an object", key);
	return v;
}

static int
collect_alert(const struct store_alert *a, void *arg)
{
	struct alerts *al = arg;

	if (al->n < 16)
		al->v[al->n++] = *a;
	return 0;
}

void
iwatch_open_alerts(struct fixture *f, struct alerts *al)
{
	char err[512];

	memset(al, 0, sizeof(*al));
	if (store_each_alert(f->s, f->plan_id, 1, collect_alert, al, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

const struct store_alert *
iwatch_find_alert(const struct alerts *al, const char *kind)
{
	for (int i = 0; i < al->n; i++)
		if (strcmp(al->v[i].kind, kind) == 0)
			return &al->v[i];
	return NULL;
}

void
iwatch_ack_all(struct fixture *f)
{
	struct alerts al;
	char err[512];

	iwatch_open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		assert_int_equal(store_alert_ack(f->s, f->plan_id, al.v[i].id, "itest",
		    "seen", now_ms(), err, sizeof(err)), 0);
}

void
iwatch_tick_until_alert(struct fixture *f, const char *kind, int64_t timeout_ms,
    struct store_alert *a)
{
	int64_t until = now_ms() + timeout_ms;
	struct alerts al;
	char err[2048];

	for (;;) {
		const struct store_alert *x;

		if (iwatch_tick(f, err, sizeof(err)) != 1)
			fail_msg("the watch stopped while waiting for a %s alert: %s", kind,
			    err);
		iwatch_open_alerts(f, &al);
		if ((x = iwatch_find_alert(&al, kind)) != NULL) {
			*a = *x;
			return;
		}
		if (now_ms() > until)
			fail_msg("no %s alert within %lld ms", kind, (long long)timeout_ms);
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

int64_t
iwatch_tick_until_done(struct fixture *f, int64_t timeout_ms)
{
	int64_t until = now_ms() + timeout_ms;
	char err[2048];
	int rc;

	for (;;) {
		if ((rc = iwatch_tick(f, err, sizeof(err))) == 0)
			return now_ms();
		if (rc < 0)
			fail_msg("the watch failed: %s", err);
		if (now_ms() > until) {
			iwatch_dump(f);
			fail_msg("the watch did not end within %lld ms", (long long)timeout_ms);
		}
		iwatch_sleep_ms(INTERVAL_MS);
	}
}

/* Prints an alert event EV of the watch (why a watch did not end). */
static int
print_alert_event(const struct store_event *ev, void *arg)
{
	(void)arg;
	if (strncmp(ev->kind, "alert.", 6) == 0)
		fprintf(stderr, "# %lld %s %s\n", (long long)ev->ts_ms, ev->kind,
		    ev->details_json);
	return 0;
}

void
iwatch_dump(struct fixture *f)
{
	char err[512], *s;

	s = json_dumps(iwatch_obj(f->state, "summary"), JSON_COMPACT);
	fprintf(stderr, "# summary: %s\n", s ? s : "");
	free(s);
	s = json_dumps(json_object_get(f->state, "levels"), JSON_COMPACT);
	fprintf(stderr, "# levels: %s\n", s ? s : "");
	free(s);
	fprintf(stderr, "# now %lld\n", (long long)now_ms());
	(void)store_each_event(f->s, f->plan_id, print_alert_event, NULL, err, sizeof(err));
}

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

int
iwatch_events(struct fixture *f, const char *kind, const char *alert)
{
	struct evcount e = { kind, alert, 0 };
	char err[512];

	if (store_each_event(f->s, f->plan_id, count_event, &e, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	return e.n;
}

void
iwatch_assert_probe_queue_gone(struct fixture *f)
{
	char name[LADDER_NAME_MAX], err[512];

	snprintf(name, sizeof(name), "cutover.probe.%s", f->p->name);
	assert_int_equal(broker_queue_inspect(f->c.amqp, name, NULL, err, sizeof(err)),
	    BROKER_NOT_FOUND);
}

int
iwatch_remove_old(struct fixture *f, char *err, size_t errlen)
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

void
iwatch_start_undrained(struct fixture *f, const char *test, int msgs)
{
	char err[2048];

	iwatch_start(f, test, 1, 0, NULL);
	assert_int_equal(broker_queue_delete(f->c.amqp, f->old[0], 0, NULL, err,
	    sizeof(err)), 0);
	iwatch_old_queue_ttl(&f->c, f->old[0], 600000);
	iwatch_publish_to(&f->c, "", f->old[0], msgs);
	iwatch_tick_after_the_flip(f);
}

void
iwatch_tick_after_the_flip(struct fixture *f)
{
	char err[2048] = "";
	int rc;

	iwatch_flip_long_ago(f);
	if ((rc = iwatch_tick(f, err, sizeof(err))) != 1)
		fail_msg("the first tick after the flip returned %d, not 1 (goes on): %s", rc,
		    err);
}

void
iwatch_assert_open_alert_with(struct fixture *f, const char *kind, const char *want)
{
	struct alerts al;

	iwatch_open_alerts(f, &al);
	for (int i = 0; i < al.n; i++)
		if (strcmp(al.v[i].kind, kind) == 0 && strstr(al.v[i].message, want) != NULL)
			return;
	for (int i = 0; i < al.n; i++)
		fprintf(stderr, "# open alert %s: %s\n", al.v[i].kind, al.v[i].message);
	fail_msg("no open %s alert saying \"%s\"", kind, want);
}

const json_t *
iwatch_entry(struct fixture *f, const char *part, const char *key, int k)
{
	const json_t *e = json_array_get(json_object_get(iwatch_obj(f->state, part), key),
	    (size_t)k);

	assert_non_null(e);
	return e;
}

double
iwatch_metric(struct fixture *f, const char *name, const char *label)
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

const json_t *
iwatch_pass_of(struct fixture *f)
{
	return iwatch_obj(iwatch_obj(f->state, "old"), "pass");
}

/* What iwatch_rows reads into. */
struct rows_text {
	char *out;
	size_t len;
	int n;
};

/* store_each_fn: row E as "name=publish;" appended to the rows_text ARG. */
static int
row_text(const json_t *e, void *arg)
{
	struct rows_text *rt = arg;
	char *v = json_dumps(json_object_get(e, "publish"), JSON_ENCODE_ANY);
	size_t used = strlen(rt->out);

	snprintf(rt->out + used, rt->len - used, "%s=%s;",
	    json_string_value(json_object_get(e, "name")), v != NULL ? v : "?");
	free(v);
	rt->n++;
	return 0;
}

int
iwatch_rows(struct fixture *f, char *out, size_t outlen)
{
	struct rows_text rt = { out, outlen, 0 };
	char err[512];
	bool bad = false;

	out[0] = '\0';
	if (store_step_rows_each(f->s, f->plan_id, plan_find_step(f->p, PLAN_STEP_WATCH),
	    row_text, &rt, &bad, err, sizeof(err)) != 0 || bad)
		fail_msg("reading the watch's rows: %s", err);
	return rt.n;
}

/* What iwatch_seen looks for, and what it found. */
struct seen_find {
	const char *name;
	json_t *publish;
};

/* store_each_fn: row E's "publish" into the seen_find ARG when it names
 * the queue looked for. */
static int
seen_take(const json_t *e, void *arg)
{
	struct seen_find *sf = arg;

	if (sf->publish == NULL &&
	    strcmp(json_string_value(json_object_get(e, "name")), sf->name) == 0)
		sf->publish = json_incref(json_object_get(e, "publish"));
	return 0;
}

json_t *
iwatch_seen(struct fixture *f, const char *name)
{
	struct seen_find sf = { name, NULL };
	char err[512];
	bool bad = false;

	if (store_step_rows_each(f->s, f->plan_id, plan_find_step(f->p, PLAN_STEP_WATCH),
	    seen_take, &sf, &bad, err, sizeof(err)) != 0 || bad)
		fail_msg("reading the watch's rows: %s", err);
	return sf.publish;
}

json_t *
iwatch_result_whole(struct fixture *f)
{
	struct store_step st;
	char err[512];
	json_t *j;

	if (store_step_get(f->s, f->plan_id, plan_find_step(f->p, PLAN_STEP_WATCH),
	    &st, err, sizeof(err)) != 0)
		fail_msg("reading the watch's result: %s", err);
	j = json_loads(st.result_json, 0, NULL);
	store_step_clear(&st);
	assert_non_null(j);
	return j;
}

int
iwatch_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	/* CUTOVER_TEST_FILTER=test_own* runs only the tests it matches. */
	else if (getenv("CUTOVER_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("CUTOVER_TEST_FILTER"));
	return itest_run_part("tests", tests, n, NULL, NULL);
}

/* Old queue NAME's message_stats.publish by the management API, -1 when
 * it shows none. */
int64_t
iwatch_api_publishes(struct fixture *f, const char *name)
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
