/* itest_engine: what the engine tests share (see itest_engine.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "broker/broker.h"
#include "itest_engine.h"
#include "store.h"

char ieng_dir[256], ieng_db[300], ieng_planfile[300], ieng_plan_name[64],
    ieng_prefix[64];

void
ieng_set_names(const char *test)
{
	snprintf(ieng_prefix, sizeof(ieng_prefix), "itest%ld.%s", (long)getpid(), test);
	snprintf(ieng_plan_name, sizeof(ieng_plan_name), "itest%ld-%s", (long)getpid(),
	    test);
	snprintf(ieng_db, sizeof(ieng_db), "%s/%s.db", ieng_dir, test);
	snprintf(ieng_planfile, sizeof(ieng_planfile), "%s/%s.yaml", ieng_dir, test);
}

void
ieng_plan_begin(struct itest_plan *b, const char *canary)
{
	const char *amqp = getenv("CUTOVER_TEST_AMQP");

	if (amqp == NULL || getenv("CUTOVER_TEST_MGMT") == NULL ||
	    getenv("CUTOVER_TEST_USER") == NULL || getenv("CUTOVER_BINARY") == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, "
		    "CUTOVER_TEST_PASSWORD and CUTOVER_BINARY (scripts/test and ctest do)");
	itest_plan_begin(b, ieng_plan_name, amqp);
	itest_plan_addf(b,
	    "old:\n"
	    "  queues: { names: [%s.old] }\n"
	    "ladder:\n"
	    "  prefix: %s\n"
	    "  unit: 100ms\n"
	    "  levels: 6\n"
	    "  destinations: [%s.dest]\n"
	    "  create_destinations: true\n"
	    "canary:\n"
	    "  delays: [%s]\n",
	    ieng_prefix, ieng_prefix, ieng_prefix, canary);
}

void
ieng_open_ctx(struct step_ctx *c, struct plan **p)
{
	struct plan_errors errs = { 0 };
	char err[1024];

	if (plan_load_file(ieng_planfile, p, &errs) != 0)
		fail_msg("the test plan does not load");
	if (step_ctx_open(c, *p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

void
ieng_queue_in_the_way(struct step_ctx *c, char *name, size_t namelen)
{
	char err[1024];

	snprintf(name, namelen, "%s.level.02", ieng_prefix);
	if (broker_queue_declare(c->amqp, name, true, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", name, err);
}

void
ieng_step_status(int idx, char *out, size_t outlen)
{
	struct store *s = NULL;
	struct store_plan p;
	struct store_step st;
	char err[512];

	snprintf(out, outlen, "(none)");
	if (access(ieng_db, F_OK) != 0 || store_open(ieng_db, &s, err, sizeof(err)) != 0)
		return;
	if (store_plan_find(s, ieng_plan_name, &p, err, sizeof(err)) == 0 &&
	    store_step_get(s, p.id, idx, &st, err, sizeof(err)) == 0) {
		snprintf(out, outlen, "%s", st.status);
		store_step_clear(&st);
	}
	store_close(s);
}

int
ieng_run(void)
{
	return itest_cutover("run", "--db", ieng_db, ieng_planfile, NULL);
}

void
ieng_history(struct itest_history *t, const char *status)
{
	char now[32];

	itest_read_history(ieng_db, ieng_plan_name, t, now, sizeof(now));
	assert_string_equal(now, status);
}

void
ieng_make_old_path(void)
{
	struct step_ctx c;
	struct plan *p = NULL;
	struct topology_arg a[3];
	char name[160], dest[160], err[1024];

	ieng_open_ctx(&c, &p);
	snprintf(dest, sizeof(dest), "%s.dest", ieng_prefix);
	assert_int_equal(broker_queue_declare(c.amqp, dest, true, NULL, 0, err,
	    sizeof(err)), 0);
	memset(a, 0, sizeof(a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	a[0].num = 1000;
	snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
	snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
	snprintf(a[2].str, sizeof(a[2].str), "%s", dest);
	snprintf(name, sizeof(name), "%s.old", ieng_prefix);
	assert_int_equal(broker_queue_declare(c.amqp, name, true, a, 3, err,
	    sizeof(err)), 0);
	step_ctx_close(&c);
	plan_free(p);
}

void
ieng_cleanup_broker(void)
{
	static const char *const queues[] = { "dest", "old", "parking", "level.00",
	    "level.01", "level.02", "level.03", "level.04", "level.05" };
	struct plan_errors errs = { 0 };
	struct step_ctx c;
	struct plan *p = NULL;
	json_t *r = NULL;
	char err[1024], name[160];

	if (plan_load_file(ieng_planfile, &p, &errs) != 0) {
		plan_errors_free(&errs);
		return;
	}
	if (step_ctx_open(&c, p, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < sizeof(queues) / sizeof(queues[0]); i++) {
			snprintf(name, sizeof(name), "%s.%s", ieng_prefix, queues[i]);
			broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err));
		}
		snprintf(name, sizeof(name), "cutover.probe.%s", ieng_plan_name);
		broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err));
		step_teardown_ladder(&c, &r, err, sizeof(err));
		json_decref(r);
		step_ctx_close(&c);
	}
	plan_free(p);
	ieng_planfile[0] = '\0';
}

void
ieng_wait_step(int idx, const char *status, int timeout_ms)
{
	char now[32];

	for (int waited = 0; waited <= timeout_ms; waited += 20) {
		ieng_step_status(idx, now, sizeof(now));
		if (strcmp(now, status) == 0)
			return;
		itest_sleep_ms(20);
	}
	fail_msg("step %d is %s, not %s, after %d ms", idx + 1, now, status, timeout_ms);
}

int
ieng_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	return itest_main_in_temp_dir(tests, n, argc, argv, ieng_dir, sizeof(ieng_dir),
	    "itest_engine");
}
