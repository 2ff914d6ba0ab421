/* itest_cutover: the whole-plan tests' plan, runs and history
 * (itest_cutover.h). */
#include <sqlite3.h>

#include "itest_cutover.h"

char icut_dir[256];
char icut_db[300];
char icut_planfile[300];
char icut_plan_name[64];
char icut_prefix[64];
char icut_feature[64];	/* the plan's Unleash feature: the plan's name */

static void
set_names(const char *test)
{
	snprintf(icut_prefix, sizeof(icut_prefix), "itest%ld.%s", (long)getpid(), test);
	snprintf(icut_plan_name, sizeof(icut_plan_name), "itest%ld-%s", (long)getpid(), test);
	snprintf(icut_db, sizeof(icut_db), "%s/%s.db", icut_dir, test);
	snprintf(icut_planfile, sizeof(icut_planfile), "%s/%s.yaml", icut_dir, test);
}

int64_t
icut_now_ms(void)
{
	return clock_now_ms();
}

const char *const icut_step_names[7] = { "measure_horizon", "declare_ladder",
	"verify_ladder", "canary", "flip", "watch", "remove_old" };

unsigned icut_gates = GATES_DEFAULT;
const char *icut_interval = "250ms";

/* Writes the test's plan; FLAG_URL NULL means the test Unleash; ALLOWANCE
 * is watch.allowance. */
static void
write_plan(const char *flag_url, const char *allowance)
{
	const char *amqp = getenv("CUTOVER_TEST_AMQP"), *mgmt = getenv("CUTOVER_TEST_MGMT");
	const char *unleash = getenv("CUTOVER_TEST_UNLEASH_URL");
	struct itest_plan b;

	if (amqp == NULL || mgmt == NULL || getenv("CUTOVER_TEST_USER") == NULL ||
	    getenv("CUTOVER_BINARY") == NULL || unleash == NULL ||
	    getenv("CUTOVER_TEST_UNLEASH_TOKEN") == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, "
		    "CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL, "
		    "CUTOVER_TEST_UNLEASH_TOKEN and CUTOVER_BINARY (scripts/test does)");
	itest_plan_begin(&b, icut_plan_name, amqp);
	itest_plan_addf(&b,
	    "old:\n"
	    "  queues: { match: '^%s\\.old\\.[0-9]+$' }\n"
	    "ladder:\n"
	    "  prefix: %s\n"
	    "  unit: 100ms\n"
	    "  levels: 8\n"
	    "  destinations: [%s.dest]\n"
	    "canary:\n"
	    "  delays: [100ms, 300ms]\n",
	    icut_prefix, icut_prefix, icut_prefix);
	itest_plan_unleash_flag(&b, flag_url, icut_feature);
	itest_plan_addf(&b,
	    "  settle: 15s\n"
	    "watch:\n"
	    "  interval: %s\n"
	    "  allowance: %s\n"
	    "  probe_every: 1s\n"
	    "steps:\n",
	    icut_interval, allowance);
	for (size_t i = 0; i < sizeof(icut_step_names) / sizeof(icut_step_names[0]); i++)
		itest_plan_addf(&b, "  - { step: %s, gate: %s }\n", icut_step_names[i],
		    icut_gates & (1u << i) ? "true" : "false");
	itest_plan_write(&b, icut_planfile);
}

static struct plan *
load_plan(void)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (plan_load_file(icut_planfile, &p, &errs) != 0)
		fail_msg("the test plan does not load");
	return p;
}

/* The old path the plan migrates away from: three classic delay queues of
 * 1, 2 and 3 s dead-lettering into the destination, with messages waiting. */
static void
make_old_path(struct step_ctx *c)
{
	char name[160], dest[160], err[1024];
	struct topology_arg a[3];

	snprintf(dest, sizeof(dest), "%s.dest", icut_prefix);
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
		snprintf(name, sizeof(name), "%s.old.%d", icut_prefix, s);
		assert_int_equal(broker_queue_declare(c->amqp, name, true, a, 3, err,
		    sizeof(err)), 0);
		for (int i = 0; i < 3; i++)
			icut_publish_old(c, name);
	}
}

void
icut_publish_old(struct step_ctx *c, const char *name)
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

int
icut_read_step(int idx, struct store_step *out)
{
	struct store *s = NULL;
	struct store_plan p;
	char err[512];
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (store_open(icut_db, &s, err, sizeof(err)) != 0)
		return -1;
	if (store_plan_find(s, icut_plan_name, &p, err, sizeof(err)) == 0)
		rc = store_step_get(s, p.id, idx, out, err, sizeof(err));
	store_close(s);
	return rc;
}

int
icut_rows_held(int idx)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n = -1;

	if (sqlite3_open_v2(icut_db, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM step_entries WHERE step_idx = ?1",
	    -1, &st, NULL) == SQLITE_OK && sqlite3_bind_int(st, 1, idx) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

int
icut_wait_step(int idx, const char *status, int timeout_ms)
{
	int64_t until = icut_now_ms() + timeout_ms;
	struct store_step st;

	while (icut_now_ms() < until) {
		if (icut_read_step(idx, &st) == 0) {
			int same = strcmp(st.status, status) == 0;

			store_step_clear(&st);
			if (same)
				return 1;
		}
		itest_sleep_ms(50);
	}
	return 0;
}

int
icut_wait_plan(const char *status, int timeout_ms)
{
	int64_t until = icut_now_ms() + timeout_ms;
	struct store *s = NULL;
	struct store_plan sp;
	char err[512];
	int same;

	while (icut_now_ms() < until) {
		if (store_open(icut_db, &s, err, sizeof(err)) == 0) {
			same = store_plan_find(s, icut_plan_name, &sp, err, sizeof(err)) == 0 &&
			    strcmp(sp.status, status) == 0;
			store_close(s);
			if (same)
				return 1;
		}
		itest_sleep_ms(50);
	}
	return 0;
}

int64_t
icut_step_number(int idx, const char *key)
{
	struct store_step st;
	json_t *j;
	int64_t v = -1;

	if (icut_read_step(idx, &st) != 0)
		return -1;
	if (st.result_json != NULL && (j = json_loads(st.result_json, 0, NULL)) != NULL) {
		const json_t *o = j;
		const char *k = key, *dot;
		char part[64];

		while (o != NULL && (dot = strchr(k, '.')) != NULL) {
			snprintf(part, sizeof(part), "%.*s", (int)(dot - k), k);
			o = json_object_get(o, part);
			k = dot + 1;
		}
		if (json_is_integer(json_object_get(o, k)))
			v = json_integer_value(json_object_get(o, k));
		json_decref(j);
	}
	store_step_clear(&st);
	return v;
}

int
icut_wait_ticks(int64_t n, int timeout_ms)
{
	int64_t until = icut_now_ms() + timeout_ms;

	while (icut_now_ms() < until) {
		if (icut_step_number(5, "ticks") >= n)
			return 1;
		itest_sleep_ms(50);
	}
	return 0;
}

int
icut_flag_now(const struct plan *p)
{
	json_t *r = NULL;
	char err[1024];
	int state = -1;

	if (flag_read(p, &state, &r, err, sizeof(err)) != 0)
		fail_msg("reading the flag: %s", err);
	json_decref(r);
	return state;
}

void
icut_begin(const char *test, struct plan **p, struct step_ctx *c, const char *flag_url,
    const char *allowance)
{
	json_t *r = NULL;
	char err[1024];

	itest_cleanup();
	set_names(test);
	itest_plan_cleanup(icut_prefix, icut_plan_name);
	itest_unleash_feature(icut_plan_name);	/* the test's own flag, created off */
	snprintf(icut_feature, sizeof(icut_feature), "%s", icut_plan_name);
	write_plan(flag_url, allowance);
	icut_gates = GATES_DEFAULT;
	icut_interval = "250ms";
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

void
icut_run_to_the_flip_and_approve(void)
{
	assert_int_equal(itest_cutover("run", "--db", icut_db, icut_planfile, NULL), 3);
	assert_int_equal(itest_cutover("approve", "--db", icut_db, icut_plan_name, "flip", "--as",
	    "alice",
	    NULL), 0);
}

pid_t
icut_run_into_the_watch(int64_t ticks)
{
	pid_t pid;

	icut_run_to_the_flip_and_approve();
	pid = itest_start_run(icut_db, icut_planfile, NULL);
	if (!icut_wait_step(5, "running", 30000))
		fail_msg("the watch of %s did not start running within 30 s",
		    icut_plan_name);
	if (ticks > 0 && !icut_wait_ticks(ticks, 60000))
		fail_msg("the watch of %s did not tick %lld times within 60 s",
		    icut_plan_name, (long long)ticks);
	return pid;
}

void
icut_end(struct plan *p, struct step_ctx *c)
{
	step_ctx_close(c);
	plan_free(p);
	itest_cleanup();
}

void
icut_assert_rolled_back(const struct plan *p)
{
	struct itest_history t;
	char status[32];

	assert_int_equal(icut_flag_now(p), 0);
	itest_read_history(icut_db, icut_plan_name, &t, status, sizeof(status));
	assert_string_equal(status, "aborted");
	assert_int_equal(itest_count(&t, "rollback.requested"), 1);
	assert_int_equal(itest_count(&t, "rollback.confirmed"), 1);
	assert_int_equal(itest_count(&t, "plan.aborted"), 1);
	assert_int_equal(itest_count(&t, "old.queue_removed"), 0);
}

int
icut_unmount_small(void **state)
{
	char mnt[300];

	(void)state;
	snprintf(mnt, sizeof(mnt), "%s/small", icut_dir);
	if (umount2(mnt, MNT_DETACH) != 0)
		fprintf(stderr, "unmounting %s: %s\n", mnt, strerror(errno));
	rmdir(mnt);
	return 0;
}

pid_t icut_flagoff_pid;

int
icut_flagoff_teardown(void **state)
{
	struct step_ctx c;
	struct plan *p = NULL;
	struct plan_errors errs = { 0 };
	char err[512];

	(void)state;
	if (icut_flagoff_pid > 0) {
		kill(icut_flagoff_pid, SIGKILL);
		(void)itest_wait(icut_flagoff_pid);
		icut_flagoff_pid = 0;
	}
	if (plan_load_file(icut_planfile, &p, &errs) == 0 &&
	    step_ctx_open(&c, p, err, sizeof(err)) == 0)
		icut_end(p, &c);
	else
		plan_free(p);
	plan_errors_free(&errs);
	return 0;
}

int
icut_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	return itest_main_in_temp_dir(tests, n, argc, argv, icut_dir, sizeof(icut_dir),
	    "itest_cutover");
}
