/* test_plan_examples: the plans a reader is shown — the examples load with
 * the values they say, and every malformed plan under tests/plans/bad fails
 * with the error its first line announces ("# expect: LINE:COLUMN: text"). */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "ladder.h"
#include "plan.h"
#include "plan_flag.h"
#include "pt.h"

#define S(n)	((int64_t)(n) * 1000)

static const char *
source_dir(void)
{
	const char *d = getenv("CUTOVER_SOURCE_DIR");

	if (d == NULL || d[0] == '\0')
		fail_msg("CUTOVER_SOURCE_DIR is not set (ctest sets it to the source tree)");
	return d;
}

static struct plan *
load_example(const char *name)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char path[1024];

	if ((size_t)snprintf(path, sizeof(path), "%s/plans/examples/%s", source_dir(),
	    name) >= sizeof(path))
		fail_msg("CUTOVER_SOURCE_DIR is too long");
	if (plan_load_file(path, &p, &errs) != 0) {
		print_error("%s refused:\n", path);
		pt_print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	assert_int_equal(errs.n, 0);
	plan_errors_free(&errs);
	assert_string_equal(p->file, path);
	return p;
}

static void
test_example_orders(void **state)
{
	struct plan *p = load_example("orders.yaml");
	static const int gates[] = { 0, 0, 0, 0, 1, 0, 0, 1 };
	size_t i;

	(void)state;
	assert_string_equal(p->name, "orders-delays");
	assert_string_equal(p->broker.amqp, "amqp://127.0.0.1:5672/%2f");
	assert_string_equal(p->broker.management, "http://127.0.0.1:15672");
	assert_string_equal(p->broker.username, "guest");
	assert_string_equal(p->broker.password, "env:RABBIT_PASSWORD");
	assert_string_equal(p->old.match, "^delay\\.[0-9]+s$");
	assert_int_equal(p->old.nnames, 0);
	assert_int_equal(p->old.max_message_ttl_ms, S(2 * 3600));

	assert_int_equal(p->ladder.naming, LADDER_NAMING_CUTOVER);
	assert_string_equal(p->ladder.prefix, "delay");
	assert_int_equal(p->ladder.unit_ms, 1000);
	/* 12d = 1036800 s; 2^19 <= 1036800 < 2^20: 20 levels. */
	assert_int_equal(p->ladder.levels, 20);
	assert_int_equal(p->ladder.levels, ladder_levels_for(12 * 86400));
	assert_int_equal(p->max_delay_ms, S(12 * 86400));
	assert_int_equal(p->queue_type, PLAN_QUEUE_QUORUM);
	assert_int_equal(p->ndestinations, 2);
	assert_string_equal(p->destinations[0], "email.delivery");
	assert_string_equal(p->destinations[1], "billing.retry");

	assert_false(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 4);
	assert_int_equal(p->canary.delays_ms[0], S(1));
	assert_int_equal(p->canary.delays_ms[1], S(2));
	assert_int_equal(p->canary.delays_ms[2], S(3));
	assert_int_equal(p->canary.delays_ms[3], S(7));
	assert_int_equal(p->canary.max_lateness_ms, S(2));
	assert_int_equal(p->canary.budget_ms, PLAN_DEFAULT_CANARY_BUDGET_MS);

	assert_string_equal(p->flag.kind, "unleash");
	assert_string_equal(plan_flag_unleash(p)->url, "http://127.0.0.1:4242");
	assert_string_equal(plan_flag_unleash(p)->project, "default");
	assert_string_equal(plan_flag_unleash(p)->environment, "production");
	assert_string_equal(plan_flag_unleash(p)->feature, "delay-ladder");
	assert_string_equal(plan_flag_unleash(p)->token, "env:UNLEASH_TOKEN");

	assert_int_equal(p->watch.interval_ms, S(10));
	assert_int_equal(p->watch.allowance_ms, S(30));
	assert_int_equal(p->watch.probe_every_ms, S(60));

	assert_int_equal(p->nsteps, PLAN_STEP_KIND_COUNT);
	for (i = 0; i < p->nsteps; i++) {
		assert_int_equal(p->steps[i].kind, (enum plan_step_kind)i);
		assert_int_equal(p->steps[i].gate, gates[i]);
		assert_true(p->steps[i].line > 0);
		assert_true(p->steps[i].column > 0);
		if (i > 0)
			assert_true(p->steps[i].line > p->steps[i - 1].line);
	}
	assert_int_equal(plan_find_step(p, PLAN_STEP_FLIP), 4);
	plan_free(p);
}

static void
test_example_celery(void **state)
{
	struct plan *p = load_example("celery.yaml");
	size_t i;

	(void)state;
	assert_string_equal(p->name, "celery-countdowns");
	assert_string_equal(p->broker.amqp, "amqps://rabbit.internal:5671/celery");
	assert_null(p->old.match);
	assert_int_equal(p->old.nnames, 3);
	assert_string_equal(p->old.names[0], "celery.countdown.60");
	assert_string_equal(p->old.names[2], "celery.countdown.3600");
	assert_int_equal(p->old.max_message_ttl_ms, 0);

	/* Kombu's shape: 28 levels of 1 s, whatever the plan does not say. */
	assert_int_equal(p->ladder.naming, LADDER_NAMING_KOMBU);
	assert_int_equal(p->ladder.levels, 28);
	assert_int_equal(p->ladder.unit_ms, 1000);
	assert_int_equal(p->max_delay_ms, 0);
	assert_int_equal(p->ndestinations, 2);
	assert_string_equal(p->destinations[0], "celery");

	/* Canary delays left to the default: every level within 2 minutes. */
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 7);
	for (i = 0; i < p->canary.ndelays; i++)
		assert_int_equal(p->canary.delays_ms[i], S(1) << i);
	assert_int_equal(p->canary.max_lateness_ms, S(3));
	assert_int_equal(p->canary.budget_ms, PLAN_DEFAULT_CANARY_BUDGET_MS);

	/* No watch section: the defaults. */
	assert_int_equal(p->watch.interval_ms, S(10));
	assert_int_equal(p->watch.allowance_ms, S(30));
	assert_int_equal(p->watch.probe_every_ms, S(60));

	assert_string_equal(p->flag.kind, "unleash");
	assert_int_equal(p->nsteps, 7);
	assert_true(p->steps[plan_find_step(p, PLAN_STEP_FLIP)].gate);
	assert_false(p->steps[plan_find_step(p, PLAN_STEP_CANARY)].gate);
	plan_free(p);
}

static void
test_example_nservicebus(void **state)
{
	struct plan *p = load_example("nservicebus.yaml");

	(void)state;
	assert_string_equal(p->name, "nsb-retries");
	assert_int_equal(p->ladder.naming, LADDER_NAMING_NSERVICEBUS);
	assert_int_equal(p->ladder.levels, 28);
	assert_int_equal(p->ladder.unit_ms, 1000);
	assert_int_equal(p->max_delay_ms, S(30 * 86400));
	assert_int_equal(p->ndestinations, 2);
	assert_string_equal(p->destinations[1], "Billing.Retries");

	assert_false(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 4);
	assert_int_equal(p->canary.delays_ms[3], S(90));
	assert_int_equal(p->canary.budget_ms, S(180));

	assert_string_equal(p->flag.kind, "http");
	assert_string_equal(plan_flag_http(p)->on.method, "PUT");
	assert_string_equal(plan_flag_http(p)->on.url, "http://config.prod/api/switches/nsb-native-delays");
	assert_string_equal(plan_flag_http(p)->on.body, "{\"enabled\":true}");
	assert_string_equal(plan_flag_http(p)->off.body, "{\"enabled\":false}");
	assert_string_equal(plan_flag_http(p)->read_url, "http://config.prod/api/switches/nsb-native-delays");
	assert_string_equal(plan_flag_http(p)->read_pointer, "/enabled");
	assert_string_equal(plan_flag_http(p)->read_on, "true");
	assert_string_equal(plan_flag_http(p)->read_off, "false");
	assert_int_equal(plan_flag_http(p)->nheaders, 2);
	assert_string_equal(plan_flag_http(p)->headers[0].name, "Authorization");
	assert_string_equal(plan_flag_http(p)->headers[0].value, "env:CONFIG_SERVICE_AUTH");
	assert_string_equal(plan_flag_http(p)->headers[1].name, "Accept");
	assert_null(plan_flag_unleash(p));	/* no unleash settings, so no token */

	assert_int_equal(p->watch.interval_ms, S(15));
	assert_int_equal(p->watch.allowance_ms, S(60));
	assert_int_equal(p->watch.probe_every_ms, S(120));
	assert_true(p->steps[plan_find_step(p, PLAN_STEP_CANARY)].gate);
	assert_false(p->steps[plan_find_step(p, PLAN_STEP_WATCH)].gate);
	plan_free(p);
}

static int
yaml_name(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 5 && strcmp(d->d_name + len - 5, ".yaml") == 0;
}

/* Checks one malformed plan against its "# expect:" line. Returns 0 or -1
 * after printing why. */
static int
check_bad_plan(const char *dir, const char *name)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char path[1024], first[512], *msg, *nl;
	int line, column, n, rc = -1;
	FILE *f;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) {
		print_error("%s/%s: path too long\n", dir, name);
		return -1;
	}
	if ((f = fopen(path, "r")) == NULL) {
		print_error("%s: cannot open\n", path);
		return -1;
	}
	if (fgets(first, sizeof(first), f) == NULL)
		first[0] = '\0';
	fclose(f);
	if ((nl = strchr(first, '\n')) != NULL)
		*nl = '\0';
	n = 0;
	if (sscanf(first, "# expect: %d:%d: %n", &line, &column, &n) != 2 || n == 0) {
		print_error("%s: first line is not '# expect: LINE:COLUMN: text'\n", path);
		return -1;
	}
	msg = first + n;
	if (plan_load_file(path, &p, &errs) == 0) {
		print_error("%s: loaded, expected %d:%d: %s\n", path, line, column, msg);
		goto done;
	}
	if (p != NULL) {
		print_error("%s: a plan was stored on failure\n", path);
		goto done;
	}
	if (!pt_has_error(&errs, line, column, msg)) {
		print_error("%s: no error %d:%d: ...%s... among:\n", path, line, column, msg);
		pt_print_errors(&errs);
		goto done;
	}
	rc = 0;
done:
	plan_free(p);
	plan_errors_free(&errs);
	return rc;
}

static void
test_bad_plans(void **state)
{
	struct dirent **list = NULL;
	char dir[1024];
	int i, n, failed = 0;

	(void)state;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/tests/plans/bad", source_dir()) >=
	    sizeof(dir))
		fail_msg("CUTOVER_SOURCE_DIR is too long");
	if ((n = scandir(dir, &list, yaml_name, alphasort)) < 0)
		fail_msg("cannot list %s", dir);
	for (i = 0; i < n; i++) {
		failed += check_bad_plan(dir, list[i]->d_name) != 0;
		free(list[i]);
	}
	free(list);
	print_message("%d malformed plans checked, %d failed\n", n, failed);
	assert_true(n >= 35);
	assert_int_equal(failed, 0);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_example_orders),
	cmocka_unit_test(test_example_celery),
	cmocka_unit_test(test_example_nservicebus),
	cmocka_unit_test(test_bad_plans))
