/* test_plan: the plan loader and its validation (plans/). The examples load
 * with the values they say; every malformed plan under tests/plans/bad fails
 * with the error its first line announces ("# expect: LINE:COLUMN: text");
 * every error of a plan is reported, not just the first; defaults are what
 * DESIGN.md §2 and plan.h promise. Run under valgrind for leaks. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clock.h"
#include "ladder.h"
#include "plan.h"
#include "plan_flag.h"

#define S(n)	((int64_t)(n) * 1000)

/* A valid plan the tests below change one line of. */
static const char base_plan[] =
    "name: orders-delays\n"				/* 1 */
    "broker:\n"						/* 2 */
    "  amqp: amqp://127.0.0.1:5672/%2f\n"		/* 3 */
    "  management: http://127.0.0.1:15672\n"		/* 4 */
    "  username: guest\n"				/* 5 */
    "  password: env:RABBIT_PASSWORD\n"			/* 6 */
    "old:\n"						/* 7 */
    "  queues: { match: '^delay\\.[0-9]+s$' }\n"	/* 8 */
    "ladder:\n"						/* 9 */
    "  unit: 1s\n"					/* 10 */
    "  max_delay: 12d\n"				/* 11 */
    "  destinations: [email.delivery, billing.retry]\n"	/* 12 */
    "flag:\n"						/* 13 */
    "  kind: unleash\n"					/* 14 */
    "  url: http://127.0.0.1:4242\n"			/* 15 */
    "  project: default\n"				/* 16 */
    "  environment: production\n"			/* 17 */
    "  feature: delay-ladder\n"				/* 18 */
    "  token: env:UNLEASH_TOKEN\n"			/* 19 */
    "steps:\n"						/* 20 */
    "  - measure_horizon\n"				/* 21 */
    "  - declare_ladder\n"				/* 22 */
    "  - verify_ladder\n"				/* 23 */
    "  - canary\n"					/* 24 */
    "  - { step: flip, gate: true }\n"			/* 25 */
    "  - watch\n"					/* 26 */
    "  - { step: remove_old, gate: true }\n";		/* 27 */

static const char http_flag[] =
    "flag:\n"
    "  kind: http\n"
    "  on:  { method: PUT, url: http://flags.local/f, body: '{\"enabled\":true}' }\n"
    "  off: { method: PUT, url: http://flags.local/f, body: '{\"enabled\":false}' }\n"
    "  read: { url: http://flags.local/f, pointer: /enabled, on: ON, off: OFF }\n"
    "  headers: HEADERS\n";

static const char unleash_flag[] =
    "flag:\n"
    "  kind: unleash\n"
    "  url: http://127.0.0.1:4242\n"
    "  project: default\n"
    "  environment: production\n"
    "  feature: delay-ladder\n"
    "  token: env:UNLEASH_TOKEN\n";

/* TEXT with the first FROM replaced by TO; the test fails if FROM is not
 * there. The caller frees the result. */
static char *
subst(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	size_t pre, len;
	char *out;

	if (at == NULL)
		fail_msg("'%s' is not in the plan text", from);
	pre = (size_t)(at - text);
	len = strlen(text) - strlen(from) + strlen(to);
	out = malloc(len + 1);
	assert_non_null(out);
	memcpy(out, text, pre);
	memcpy(out + pre, to, strlen(to));
	strcpy(out + pre + strlen(to), at + strlen(from));
	return out;
}

/* Replaces *TEXT by subst(*TEXT, FROM, TO). */
static void
edit(char **text, const char *from, const char *to)
{
	char *n = subst(*text, from, to);

	free(*text);
	*text = n;
}

static int
load_text(const char *text, struct plan **p, struct plan_errors *errs)
{
	return plan_load_buffer("t.yaml", text, strlen(text), p, errs);
}

static void
print_errors(const struct plan_errors *errs)
{
	char line[512];
	size_t i;

	for (i = 0; i < errs->n; i++)
		print_error("    %s\n", plan_error_format(errs, i, line, sizeof(line)));
}

/* Whether ERRS has an error at LINE:COLUMN whose message contains TEXT. */
static int
has_error(const struct plan_errors *errs, int line, int column, const char *text)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		if (errs->v[i].line == line && errs->v[i].column == column &&
		    strstr(errs->v[i].message, text) != NULL)
			return 1;
	return 0;
}

/* Loads TEXT, which must fail with an error at LINE:COLUMN containing MSG. */
static void
expect_error(const char *text, int line, int column, const char *msg)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	assert_int_equal(load_text(text, &p, &errs), -1);
	assert_null(p);
	if (!has_error(&errs, line, column, msg)) {
		print_error("no error %d:%d: ...%s... among:\n", line, column, msg);
		print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	plan_errors_free(&errs);
}

/* Loads TEXT, which must be valid. The caller frees the plan. */
static struct plan *
expect_valid(const char *text)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (load_text(text, &p, &errs) != 0) {
		print_error("plan refused:\n");
		print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	assert_non_null(p);
	assert_int_equal(errs.n, 0);
	plan_errors_free(&errs);
	return p;
}

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
		print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	assert_int_equal(errs.n, 0);
	plan_errors_free(&errs);
	assert_string_equal(p->file, path);
	return p;
}

static void
test_step_kind_names(void **state)
{
	enum plan_step_kind k;
	int i;

	(void)state;
	for (i = 0; i < PLAN_STEP_KIND_COUNT; i++) {
		assert_int_equal(plan_step_kind_parse(plan_step_kind_name(i), &k), 0);
		assert_int_equal(k, i);
	}
	assert_string_equal(plan_step_kind_name(PLAN_STEP_MEASURE_HORIZON), "measure_horizon");
	assert_string_equal(plan_step_kind_name(PLAN_STEP_REMOVE_OLD), "remove_old");
	assert_string_equal(plan_step_kind_name(PLAN_STEP_KIND_COUNT), "unknown");
	assert_int_equal(plan_step_kind_parse("verify", &k), -1);
	assert_int_equal(plan_step_kind_parse("Canary", &k), -1);
	assert_int_equal(plan_step_kind_parse("", &k), -1);
	assert_int_equal(plan_step_kind_parse(NULL, &k), -1);
}

/* The step-kind table's other columns: the names listed for messages, in
 * table order; gates and sections; SHOWS pairs as the API serves them. */
static void
test_step_kind_table(void **state)
{
	const char *cur = "removed=/counts/removed, left=/counts/left", *why = NULL;
	char names[256], label[32], pointer[64];

	(void)state;
	assert_string_equal(plan_step_kind_names(names, sizeof(names)),
	    "measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old, "
	    "watch, remove_old");
	for (int i = 0; i < PLAN_STEP_KIND_COUNT; i++)
		assert_false(plan_step_kind_gated((enum plan_step_kind)i));
	assert_string_equal(plan_step_kind_section(PLAN_STEP_FLIP, &why), "flag");
	assert_non_null(strstr(why, "to switch producers"));
	assert_null(plan_step_kind_section(PLAN_STEP_WATCH, NULL));
	assert_null(plan_step_kind_section(PLAN_STEP_KIND_COUNT, NULL));
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), 0);
	assert_string_equal(label, "removed");
	assert_string_equal(pointer, "/counts/removed");
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), 0);
	assert_string_equal(label, "left");
	assert_string_equal(pointer, "/counts/left");
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
	cur = "no pair here";
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
	cur = NULL;
	assert_int_equal(plan_step_shows_next(&cur, label, sizeof(label), pointer,
	    sizeof(pointer)), -1);
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
	if (!has_error(&errs, line, column, msg)) {
		print_error("%s: no error %d:%d: ...%s... among:\n", path, line, column, msg);
		print_errors(&errs);
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

static void
test_three_mistakes(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *t = strdup(base_plan);

	(void)state;
	edit(&t, "name: orders-delays", "name: Orders");		/* 1:7 */
	edit(&t, "  unit: 1s\n", "  unit: 1 s\n");			/* 10:9 */
	edit(&t, "  - canary\n", "  - canry\n");			/* 24:5 */
	assert_int_equal(load_text(t, &p, &errs), -1);
	assert_null(p);
	if (errs.n != 3)
		print_errors(&errs);
	assert_int_equal(errs.n, 3);
	/* In file order. */
	assert_int_equal(errs.v[0].line, 1);
	assert_int_equal(errs.v[0].column, 7);
	assert_non_null(strstr(errs.v[0].message, "name 'Orders' contains 'O'"));
	assert_int_equal(errs.v[1].line, 10);
	assert_int_equal(errs.v[1].column, 9);
	assert_non_null(strstr(errs.v[1].message, "ladder.unit is not a valid duration"));
	assert_int_equal(errs.v[2].line, 24);
	assert_int_equal(errs.v[2].column, 5);
	assert_non_null(strstr(errs.v[2].message, "unknown step 'canry'"));
	plan_errors_free(&errs);
	free(t);
}

static void
test_errors_everywhere(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *t = strdup(base_plan);

	(void)state;
	/* One mistake per section, structural and semantic; all reported. */
	edit(&t, "  username: guest\n", "  username: guest\n  vhost: x\n");	/* 6:3 */
	edit(&t, "'^delay\\.[0-9]+s$'", "'('");				/* 9:20 */
	edit(&t, "  max_delay: 12d\n", "  levels: 40\n");			/* 12:11 */
	edit(&t, "env:UNLEASH_TOKEN", "secret-token");			/* 20:10 */
	edit(&t, "  - watch\n  - { step: remove_old, gate: true }\n",
	    "  - { step: remove_old, gate: true }\n  - watch\n");		/* 27:5 */
	assert_int_equal(load_text(t, &p, &errs), -1);
	if (errs.n != 5)
		print_errors(&errs);
	assert_int_equal(errs.n, 5);
	assert_true(has_error(&errs, 6, 3, "unknown key 'vhost' in broker"));
	assert_true(has_error(&errs, 9, 20, "is not a valid regex"));
	assert_true(has_error(&errs, 12, 11, "ladder.levels 40 is out of range"));
	assert_true(has_error(&errs, 20, 10, "secrets must be env:NAME references"));
	assert_true(has_error(&errs, 27, 5, "step 'remove_old' comes before step 'watch'"));
	/* A secret is never repeated in a message. */
	for (size_t i = 0; i < errs.n; i++)
		assert_null(strstr(errs.v[i].message, "secret-token"));
	plan_errors_free(&errs);
	free(t);
}

/* The ladder section of the base plan replaced by LADDER, canary by CANARY. */
static struct plan *
with_ladder(const char *ladder, const char *canary)
{
	struct plan *p;
	char *t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n", ladder);

	edit(&t, "flag:\n", canary);
	p = expect_valid(t);
	free(t);
	return p;
}

static void
test_canary_defaults(void **state)
{
	struct plan *p;

	(void)state;
	/* 1s, 2s, 4s, 8s, 16s fit in 30s; 32s does not. */
	p = with_ladder("  unit: 1s\n  levels: 20\n", "canary:\n  budget: 30s\nflag:\n");
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 5);
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(p->canary.delays_ms[i], S(1) << i);
	assert_int_equal(p->canary.budget_ms, S(30));
	plan_free(p);

	/* Three levels of 10s: all within the default 2 minutes. */
	p = with_ladder("  unit: 10s\n  levels: 3\n", "flag:\n");
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 3);
	assert_int_equal(p->canary.delays_ms[0], S(10));
	assert_int_equal(p->canary.delays_ms[1], S(20));
	assert_int_equal(p->canary.delays_ms[2], S(40));
	plan_free(p);

	/* A budget exactly at a level's TTL includes that level. */
	p = with_ladder("  unit: 250ms\n  max_delay: 1h\n", "canary:\n  budget: 1s\nflag:\n");
	assert_int_equal(p->canary.ndelays, 3);
	assert_int_equal(p->canary.delays_ms[0], 250);
	assert_int_equal(p->canary.delays_ms[1], 500);
	assert_int_equal(p->canary.delays_ms[2], 1000);
	plan_free(p);

	/* Written delays are kept as written. */
	p = with_ladder("  unit: 1s\n  levels: 4\n", "canary:\n  delays: [15s, 1500ms]\nflag:\n");
	assert_false(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 2);
	assert_int_equal(p->canary.delays_ms[0], S(15));
	assert_int_equal(p->canary.delays_ms[1], 1500);
	plan_free(p);
}

static void
test_levels_from_max_delay(void **state)
{
	static const struct {
		const char *ladder;
		int levels;
		int64_t max_delay_ms;
	} cases[] = {
		{ "  unit: 1s\n  max_delay: 7s\n", 3, S(7) },
		{ "  unit: 1s\n  max_delay: 8s\n", 4, S(8) },
		{ "  unit: 1s\n  max_delay: 1500ms\n", 2, 1500 },	/* ceil: 2 units */
		{ "  unit: 1s\n  max_delay: 1ms\n", 1, 1 },
		{ "  unit: 1m\n  max_delay: 365d\n", 20, S(365 * 86400) },
		{ "  unit: 1ms\n  max_delay: 49d\n", 32, S(49 * 86400) },
		{ "  unit: 1s\n  levels: 5\n", 5, 0 },
	};
	struct plan *p;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		p = with_ladder(cases[i].ladder, "flag:\n");
		assert_int_equal(p->ladder.levels, cases[i].levels);
		assert_int_equal(p->max_delay_ms, cases[i].max_delay_ms);
		plan_free(p);
	}
}

static void
test_defaults(void **state)
{
	struct plan *p;
	char *t = subst(base_plan, unleash_flag, "");

	(void)state;
	/* Without flip, no flag is needed; without flag the kind is NONE. */
	edit(&t, "  - { step: flip, gate: true }\n  - watch\n  - { step: remove_old, gate: true }\n",
	    "");
	p = expect_valid(t);
	assert_string_equal(p->ladder.prefix, "delay");
	assert_int_equal(p->ladder.naming, LADDER_NAMING_CUTOVER);
	assert_int_equal(p->queue_type, PLAN_QUEUE_QUORUM);
	assert_null(p->flag.kind);
	assert_int_equal(p->canary.max_lateness_ms, S(2));
	assert_int_equal(p->canary.budget_ms, PLAN_DEFAULT_CANARY_BUDGET_MS);
	assert_true(p->canary.delays_defaulted);
	assert_int_equal(p->canary.ndelays, 7);
	assert_int_equal(p->watch.interval_ms, S(10));
	assert_int_equal(p->watch.allowance_ms, S(30));
	assert_int_equal(p->watch.probe_every_ms, S(60));
	assert_int_equal(p->nsteps, 4);
	assert_false(p->steps[0].gate);
	assert_int_equal(plan_find_step(p, PLAN_STEP_FLIP), -1);
	plan_free(p);
	free(t);

	/* classic queues, another prefix, explicit names. */
	t = subst(base_plan, "  unit: 1s\n", "  prefix: orders.delay\n  queue_type: classic\n  unit: 1s\n");
	p = expect_valid(t);
	assert_string_equal(p->ladder.prefix, "orders.delay");
	assert_int_equal(p->queue_type, PLAN_QUEUE_CLASSIC);
	plan_free(p);
	free(t);
}

static void
test_step_order(void **state)
{
	static const struct {
		const char *steps;
		int line, column;	/* 0: valid */
		const char *msg;
	} cases[] = {
		{ "steps: [verify_ladder]\n", 0, 0, NULL },
		{ "steps: [declare_ladder, verify_ladder]\n", 0, 0, NULL },
		{ "steps: [measure_horizon]\n", 0, 0, NULL },
		{ "steps: [canary, declare_ladder]\n", 20, 9, "step 'canary' comes before step 'declare_ladder'" },
		{ "steps: [verify_ladder, declare_ladder]\n", 20, 9, "step 'verify_ladder' comes before step 'declare_ladder'" },
		{ "steps: [declare_ladder, verify_ladder, canary, flip]\n", 20, 48, "step 'flip' without step 'measure_horizon'" },
		{ "steps: [measure_horizon, verify_ladder, flip]\n", 20, 41, "step 'flip' without step 'canary'" },
		{ "steps: [measure_horizon, verify_ladder, canary, flip, remove_old]\n", 20, 55, "step 'remove_old' without step 'watch'" },
		{ "steps: [watch]\n", 20, 9, "step 'watch' without step 'flip'" },
		{ "steps: [flip, measure_horizon, verify_ladder, canary]\n", 20, 9, "step 'flip' comes before step 'measure_horizon'" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = strdup(base_plan);
		*strstr(t, "steps:\n") = '\0';
		t = realloc(t, strlen(t) + strlen(cases[i].steps) + 1);
		strcat(t, cases[i].steps);
		if (cases[i].msg == NULL) {
			p = expect_valid(t);
			plan_free(p);
		} else
			expect_error(t, cases[i].line, cases[i].column, cases[i].msg);
		free(t);
	}
}

/* The http flag of the base plan with read.on and read.off written ON and
 * OFF, and headers HEADERS. */
static char *
http_plan(const char *on, const char *off, const char *headers)
{
	char *f = subst(http_flag, "on: ON", on), *t;

	edit(&f, "off: OFF", off);
	edit(&f, "HEADERS", headers);
	t = subst(base_plan, unleash_flag, f);
	free(f);
	return t;
}

static void
test_flag_read_values(void **state)
{
	static const struct {
		const char *on, *off, *json_on, *json_off;
	} cases[] = {
		{ "on: true", "off: false", "true", "false" },
		{ "on: 1", "off: 0", "1", "0" },
		{ "on: -1.5e3", "off: null", "-1.5e3", "null" },
		{ "on: 'true'", "off: \"false\"", "\"true\"", "\"false\"" },
		{ "on: enabled", "off: disabled", "\"enabled\"", "\"disabled\"" },
		{ "on: 01", "off: 1.", "\"01\"", "\"1.\"" },
		{ "on: 'say \"hi\"\\'", "off: \"tab\\there\"", "\"say \\\"hi\\\"\\\\\"",
		    "\"tab\\u0009here\"" },
		{ "on: \"true\"", "off: true", "\"true\"", "true" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = http_plan(cases[i].on, cases[i].off, "{ Accept: application/json }");
		p = expect_valid(t);
		assert_string_equal(plan_flag_http(p)->read_on, cases[i].json_on);
		assert_string_equal(plan_flag_http(p)->read_off, cases[i].json_off);
		plan_free(p);
		free(t);
	}
	/* on and off that read the same cannot tell a flip. */
	t = http_plan("on: 1", "off: 1", "{}");
	expect_error(t, 17, 69, "flag.read.on and flag.read.off are both 1");
	free(t);
	/* A list is not a JSON scalar. */
	t = http_plan("on: [1]", "off: 0", "{}");
	expect_error(t, 17, 61, "flag.read.on is a list");
	free(t);
	/* An empty pointer reads the whole document. */
	t = http_plan("on: true", "off: false", "{}");
	edit(&t, "pointer: /enabled", "pointer: ''");
	p = expect_valid(t);
	assert_string_equal(plan_flag_http(p)->read_pointer, "");
	plan_free(p);
	free(t);
	t = http_plan("on: true", "off: false", "{}");
	edit(&t, "pointer: /enabled", "pointer: /a~2b");
	expect_error(t, 17, 47, "has a '~' not followed by 0 or 1");
	free(t);
}

static void
test_flag_headers(void **state)
{
	static const struct {
		const char *headers;
		int column;	/* 0: valid */
		const char *msg;
	} cases[] = {
		{ "{ Authorization: env:FLAG_AUTH, Accept: application/json }", 0, NULL },
		{ "{ X-Request-Source: cutover }", 0, NULL },
		{ "{ authorization: 'Bearer abc' }", 29, "secrets must be env:NAME references" },
		{ "{ X-Api-Token: abc }", 27, "secrets must be env:NAME references" },
		{ "{ Cookie: session=abc }", 22, "secrets must be env:NAME references" },
		{ "{ X-Custom: Bearer abc }", 24, "secrets must be env:NAME references" },
		{ "{ Authorization: env:2X }", 29, "is not a valid env reference" },
		{ "{ Accept: a, accept: b }", 25, "repeats 'Accept'" },
		{ "{ Accept: a, Accept: b }", 25, "duplicate key 'Accept' in flag.headers" },
		{ "{ 'Bad Header': x }", 14, "header name 'Bad Header' in flag.headers has ' '" },
		{ "[Authorization]", 12, "flag.headers is a list" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = http_plan("on: true", "off: false", cases[i].headers);
		if (cases[i].msg == NULL) {
			p = expect_valid(t);
			assert_true(plan_flag_http(p)->nheaders > 0);
			plan_free(p);
		} else
			expect_error(t, 18, cases[i].column, cases[i].msg);
		free(t);
	}
}

/* broker.amqp and broker.management as a cluster's lists: tried in
 * order, the first is the single field; each URL checked where it is;
 * broker.return_after, how soon an earlier node is tried again, 30 s
 * unless given. */
static void
test_url_lists(void **state)
{
	static const struct {
		const char *amqp;
		int column;
		const char *msg;
	} bad[] = {
		{ "[amqp://a:5672/%2f, amqp://a:5672/%2f]", 29, "broker.amqp[1] 'amqp://a:5672/%2f' is listed twice" },
		{ "[amqp://a:5672/%2f, amqp://b:5672/orders]", 29, "names vhost 'orders', the first URL '%2f'" },
		{ "[amqp://a:5672/%2f, amqp://u@b/v]", 29, "broker.amqp[1] carries credentials" },
		{ "[]", 9, "broker.amqp is empty" },
		{ "{ a: b }", 9, "expected amqp://host[:port]/vhost" },
	};
	struct plan *p;
	char *t;
	size_t i;

	(void)state;
	t = subst(base_plan, "amqp://127.0.0.1:5672/%2f",
	    "[amqp://127.0.0.1:5706/%2f, amqp://127.0.0.1:5707/%2f, amqp://127.0.0.1:5708/%2f]");
	edit(&t, "http://127.0.0.1:15672", "[http://127.0.0.1:15706, http://127.0.0.1:15707]");
	p = expect_valid(t);
	assert_int_equal(p->broker.namqp, 3);
	assert_string_equal(p->broker.amqp, "amqp://127.0.0.1:5706/%2f");
	assert_string_equal(p->broker.amqp_urls[0], "amqp://127.0.0.1:5706/%2f");
	assert_string_equal(p->broker.amqp_urls[2], "amqp://127.0.0.1:5708/%2f");
	assert_int_equal(p->broker.nmanagement, 2);
	assert_string_equal(p->broker.management, "http://127.0.0.1:15706");
	assert_string_equal(p->broker.management_urls[1], "http://127.0.0.1:15707");
	assert_int_equal(p->broker.return_after_ms, S(30));
	plan_free(p);
	edit(&t, "  username: guest\n", "  username: guest\n  return_after: 5s\n");
	p = expect_valid(t);
	assert_int_equal(p->broker.return_after_ms, S(5));
	plan_free(p);
	free(t);
	t = subst(base_plan, "  username: guest\n", "  username: guest\n  return_after: 0s\n");
	expect_error(t, 6, 17, "expected a duration greater than 0");
	free(t);
	/* A single string is a list of one. */
	p = expect_valid(base_plan);
	assert_int_equal(p->broker.namqp, 1);
	assert_string_equal(p->broker.amqp_urls[0], p->broker.amqp);
	assert_int_equal(p->broker.nmanagement, 1);
	plan_free(p);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = subst(base_plan, "amqp://127.0.0.1:5672/%2f", bad[i].amqp);
		expect_error(t, 3, bad[i].column, bad[i].msg);
		free(t);
	}
	t = subst(base_plan, "http://127.0.0.1:15672",
	    "[http://127.0.0.1:15706, ftp://127.0.0.1:15707]");
	expect_error(t, 4, 40, "broker.management[1] 'ftp://127.0.0.1:15707' is not an http");
	free(t);
}

static void
test_urls(void **state)
{
	static const struct {
		const char *amqp;
		const char *msg;	/* NULL: valid */
	} cases[] = {
		{ "amqp://rabbit:5672/%2f", NULL },
		{ "amqps://rabbit.example.com/orders", NULL },
		{ "amqp://[::1]:5672/v", NULL },
		{ "amqp://rabbit_1/v", NULL },
		{ "amqp://user@rabbit/v", "carries credentials" },
		{ "amqp://rabbit/", "has an empty vhost" },
		{ "amqp://rabbit:0/v", "has an invalid port" },
		{ "amqp://rabbit:abc/v", "has an invalid port" },
		{ "amqp:///v", "has no host" },
		{ "amqp://rab!bit/v", "has an invalid character in its host" },
		{ "amqp://rabbit/a%zz", "not followed by two hex digits" },
		{ "amqp://rabbit/v#x", "has a fragment" },
		{ "rabbit:5672", "is not an amqp:// or amqps:// URL" },
	};
	struct plan *p;
	char line[32];
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(line, sizeof(line), "%s", "amqp://127.0.0.1:5672/%2f");
		t = subst(base_plan, line, cases[i].amqp);
		if (cases[i].msg == NULL) {
			p = expect_valid(t);
			assert_string_equal(p->broker.amqp, cases[i].amqp);
			plan_free(p);
		} else
			expect_error(t, 3, 9, cases[i].msg);
		free(t);
	}
	/* Management URLs may have a path, not a query; never credentials. */
	t = subst(base_plan, "http://127.0.0.1:15672", "https://mq.example.com/rabbitmq/");
	p = expect_valid(t);
	plan_free(p);
	free(t);
	t = subst(base_plan, "http://127.0.0.1:15672", "http://127.0.0.1:15672/?x=1");
	expect_error(t, 4, 15, "has a query");
	free(t);
	t = subst(base_plan, "http://127.0.0.1:15672", "http://admin:hunter2@127.0.0.1:15672");
	expect_error(t, 4, 15, "carries credentials");
	free(t);
}

static void
test_secrets_not_echoed(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *t = subst(base_plan, "env:RABBIT_PASSWORD", "hunter2");
	size_t i;

	(void)state;
	edit(&t, "amqp://127.0.0.1", "amqp://guest:s3cr3t@127.0.0.1");
	assert_int_equal(load_text(t, &p, &errs), -1);
	assert_int_equal(errs.n, 2);
	for (i = 0; i < errs.n; i++) {
		assert_null(strstr(errs.v[i].message, "hunter2"));
		assert_null(strstr(errs.v[i].message, "s3cr3t"));
	}
	plan_errors_free(&errs);
	free(t);
}

static void
test_ladder_naming_rules(void **state)
{
	struct plan *p;
	char *t;

	(void)state;
	/* kombu: unit 1s and levels 28 may be written; max_delay within 28 levels. */
	p = with_ladder("  naming: kombu\n  unit: 1s\n  levels: 28\n", "flag:\n");
	assert_int_equal(p->ladder.levels, 28);
	plan_free(p);
	p = with_ladder("  naming: nservicebus\n  max_delay: 12d\n", "flag:\n");
	assert_int_equal(p->ladder.levels, 28);
	assert_int_equal(p->max_delay_ms, S(12 * 86400));
	plan_free(p);

	/* kombu takes Kombu's prefix; nservicebus no classic level queues,
	 * said where queue_type is written. */
	p = with_ladder("  naming: kombu\n  prefix: orders\n  levels: 28\n", "flag:\n");
	assert_string_equal(p->ladder.prefix, "orders");
	plan_free(p);
	p = with_ladder("  naming: kombu\n  queue_type: classic\n", "flag:\n");
	assert_int_equal(p->queue_type, PLAN_QUEUE_CLASSIC);
	plan_free(p);
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n",
	    "  naming: nservicebus\n  queue_type: classic\n");
	expect_error(t, 11, 15, "ladder.queue_type classic is not used with "
	    "nservicebus naming");
	free(t);
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  prefix: 'a b'\n");
	expect_error(t, 11, 11, "ladder.prefix is not valid");
	free(t);

	/* 3200 days is more than 2^28 - 1 seconds (about 3106 days). */
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n", "  naming: kombu\n  max_delay: 3200d\n");
	expect_error(t, 11, 14, "needs more than 28 levels of 1s");
	free(t);
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n", "  naming: kombu\n  levels: 28\n  max_delay: 1d\n");
	expect_error(t, 12, 3, "ladder has both max_delay and levels");
	free(t);
	/* A unit so large the ladder overflows 64-bit milliseconds. */
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n", "  unit: 36500d\n  levels: 32\n");
	expect_error(t, 10, 9, "is not valid");
	free(t);
}

/* The plan's max_delay is the most publishing takes:
 * the ladder holds it as its limit, the default canary stays within it. */
static void
test_max_delay_limits(void **state)
{
	struct plan *p;
	char *t;

	(void)state;
	p = with_ladder("  naming: kombu\n  max_delay: 30d\n", "flag:\n");
	assert_int_equal(ladder_limit_ms(&p->ladder), S(30 * 86400));
	assert_int_equal(ladder_encode(&p->ladder, S(31 * 86400), NULL, NULL, 0), -1);
	plan_free(p);
	/* levels: the ladder's own maximum. */
	p = with_ladder("  naming: kombu\n  levels: 28\n", "flag:\n");
	assert_int_equal(ladder_limit_ms(&p->ladder), ladder_max_delay_ms(&p->ladder));
	plan_free(p);
	/* 10s on 28 levels: canary 1s, 2s, 4s, 8s, then 10s itself. */
	p = with_ladder("  naming: kombu\n  max_delay: 10s\n", "flag:\n");
	assert_int_equal(p->canary.ndelays, 5);
	assert_int_equal(p->canary.delays_ms[3], S(8));
	assert_int_equal(p->canary.delays_ms[4], S(10));
	plan_free(p);
	/* Explicit canary delays beyond it are refused where written. */
	t = subst(base_plan, "  unit: 1s\n  max_delay: 12d\n",
	    "  naming: kombu\n  max_delay: 10s\n");
	edit(&t, "flag:\n", "canary:\n  delays: [1s, 11s]\nflag:\n");
	expect_error(t, 14, 16, "canary.delays[1] 11s is beyond the ladder's largest "
	    "delay 10s");
	free(t);
	t = subst(base_plan, "  max_delay: 12d\n", "  max_delay: 0s\n");
	expect_error(t, 11, 14, "ladder.max_delay is 0s; expected a duration greater than 0");
	free(t);
}

/* A destination whose routing key is not its queue's name, or reaches an
 * exchange: the long form beside the short one, each
 * error at its line and column. */
static void
test_destination_long_form(void **state)
{
	static const char from[] = "  destinations: [email.delivery, billing.retry]\n";
	static const struct {
		const char *to;
		int line, column;
		const char *msg;
	} bad[] = {
		{ "  destinations: [a, { key: b }]\n", 12, 21,
		  "ladder.destinations[1] has neither queue nor exchange" },
		{ "  destinations: [a, { key: b, queue: q, exchange: e }]\n", 12, 41,
		  "ladder.destinations[1] has both queue and exchange" },
		{ "  destinations: [a, { queue: q }]\n", 12, 21,
		  "missing required key 'key' in ladder.destinations[1]" },
		{ "  destinations: [a, { key: 'b.*', queue: q }]\n", 12, 28,
		  "ladder.destinations[1].key is not valid" },
		{ "  destinations: [a, { key: b, queue: q, bogus: 1 }]\n", 12, 41,
		  "unknown key 'bogus' in ladder.destinations[1]" },
		{ "  destinations: [a, { key: b, queue: '' }]\n", 12, 38,
		  "ladder.destinations[1].queue is empty" },
		{ "  destinations: [a, { key: b, exchange: delay.delivery }]\n", 12, 41,
		  "ladder.destinations[1].exchange 'delay.delivery' is one of the ladder's own" },
		{ "  destinations: [q, { key: b, queue: q }]\n", 12, 21,
		  "ladder.destinations[1] reaches queue 'q', as the destination at line 12 column 18 does" },
		{ "  destinations: [a, { key: a, queue: q }]\n", 12, 28,
		  "'a' is listed twice" },
	};
	struct plan *p;
	bool ex;
	char *t;

	(void)state;
	t = subst(base_plan, from, "  destinations:\n    - email.delivery\n"
	    "    - { key: destination_route, queue: destination }\n"
	    "    - { key: k.x, exchange: tasks }\n"
	    "    - { key: tasks, queue: tasks }\n");
	p = expect_valid(t);
	free(t);
	assert_int_equal(p->ndestinations, 4);
	assert_string_equal(p->destinations[1], "destination_route");
	assert_string_equal(plan_destination_target(p, 0, &ex), "email.delivery");
	assert_false(ex);
	assert_string_equal(plan_destination_target(p, 1, &ex), "destination");
	assert_false(ex);
	assert_string_equal(plan_destination_target(p, 2, &ex), "tasks");
	assert_true(ex);
	/* An exchange and a queue may share a name (Kombu's task exchange). */
	assert_string_equal(plan_destination_target(p, 3, &ex), "tasks");
	assert_false(ex);
	assert_true(plan_names_destination(p, "destination"));
	assert_true(plan_names_destination(p, "destination_route"));
	assert_false(plan_names_destination(p, "k"));
	plan_free(p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = subst(base_plan, from, bad[i].to);
		expect_error(t, bad[i].line, bad[i].column, bad[i].msg);
		free(t);
	}
}

static void
test_types(void **state)
{
	static const struct {
		const char *from, *to;
		int line, column;
		const char *msg;
	} cases[] = {
		{ "broker:\n", "broker: [a]\nxbroker:\n", 2, 9, "broker is a list; expected a mapping" },
		{ "name: orders-delays", "name: { a: b }", 1, 7, "name is a mapping" },
		{ "name: orders-delays", "name:", 1, 6, "name has no value" },
		{ "name: orders-delays", "name: ''", 1, 7, "name is empty" },
		{ "  unit: 1s\n", "  unit: [1s]\n", 10, 9, "ladder.unit is a list" },
		{ "  max_delay: 12d\n", "  levels: 1e3\n", 11, 11, "is not an integer" },
		{ "  max_delay: 12d\n", "  levels: 0x10\n", 11, 11, "is not an integer" },
		{ "{ step: flip, gate: true }", "{ step: flip, gate: True }", 25, 25, "is not a boolean" },
		{ "{ step: flip, gate: true }", "{ gate: true }", 25, 5, "missing required key 'step' in steps[4]" },
		{ "  - canary\n", "  - [canary]\n", 24, 5, "steps[3] is a list" },
		{ "  destinations: [email.delivery, billing.retry]\n", "  destinations: email.delivery\n", 12, 17, "ladder.destinations is a scalar" },
		{ "  destinations: [email.delivery, billing.retry]\n", "  destinations: [email.delivery, [x]]\n", 12, 34, "ladder.destinations[1] is a list" },
		{ "'^delay\\.[0-9]+s$'", "''", 8, 20, "old.queues.match is empty" },
		{ "  queues: { match: '^delay\\.[0-9]+s$' }\n", "  queues:\n    names: [a, 7, '']\n", 9, 19, "old.queues.names[2] is empty" },
	};
	char *t;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = subst(base_plan, cases[i].from, cases[i].to);
		expect_error(t, cases[i].line, cases[i].column, cases[i].msg);
		free(t);
	}
}

static void
test_error_format(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char out[512], small[16];
	char *t = subst(base_plan, "  unit: 1s\n", "  unit: 0s\n");

	(void)state;
	assert_int_equal(plan_load_buffer("plans/x.yaml", t, strlen(t), &p, &errs), -1);
	assert_int_equal(errs.n, 1);
	assert_string_equal(errs.file, "plans/x.yaml");
	assert_string_equal(plan_error_format(&errs, 0, out, sizeof(out)),
	    "plans/x.yaml:10:9: ladder.unit is 0s; expected a duration greater than 0");
	assert_string_equal(plan_error_format(&errs, 1, out, sizeof(out)), "");
	plan_error_format(&errs, 0, small, sizeof(small));
	assert_int_equal(strlen(small), sizeof(small) - 1);
	plan_errors_free(&errs);
	assert_null(errs.v);
	assert_int_equal(errs.n, 0);
	plan_errors_free(&errs);	/* twice is fine */
	free(t);

	/* Errors about no position print without one. */
	assert_int_equal(plan_load_file("/nonexistent/plan.yaml", &p, &errs), -1);
	assert_null(p);
	assert_int_equal(errs.n, 1);
	assert_int_equal(errs.v[0].line, 0);
	plan_error_format(&errs, 0, out, sizeof(out));
	assert_non_null(strstr(out, "/nonexistent/plan.yaml: cannot open the plan: "));
	plan_errors_free(&errs);
}

/* TEXT made of PREFIX, N times OPEN, then N times CLOSE and SUFFIX. */
static char *
nested(const char *prefix, size_t n, const char *open, const char *close,
    const char *suffix)
{
	size_t lp = strlen(prefix), lo = strlen(open), lc = strlen(close);
	char *t = malloc(lp + n * (lo + lc) + strlen(suffix) + 1), *o;

	assert_non_null(t);
	o = t + lp;
	memcpy(t, prefix, lp);
	for (size_t i = 0; i < n; i++, o += lo)
		memcpy(o, open, lo);
	for (size_t i = 0; i < n; i++, o += lc)
		memcpy(o, close, lc);
	strcpy(o, suffix);
	return t;
}

/* Whether ERRS holds an error whose message contains TEXT. */
static int
has_message(const struct plan_errors *errs, const char *text)
{
	for (size_t i = 0; i < errs->n; i++)
		if (strstr(errs->v[i].message, text) != NULL)
			return 1;
	return 0;
}

/* Loads HEAD followed by base_plan, which must fail; ERRS says why. */
static void
load_before_plan(const char *head, struct plan_errors *errs)
{
	struct plan *p = NULL;
	char *t = malloc(strlen(head) + strlen(base_plan) + 1);

	assert_non_null(t);
	sprintf(t, "%s%s", head, base_plan);
	assert_int_equal(load_text(t, &p, errs), -1);
	assert_null(p);
	free(t);
}

/* A body whose reading costs libyaml time quadratic in its size is refused
 * at the first event past the bound, in milliseconds (100000 nested lists
 * took 42 s): nesting, keys of one mapping, items of one list, anchors and
 * aliases. Up to each bound the plan is read as before. */
static void
test_shape_bounds(void **state)
{
	struct plan_errors errs = { 0 };
	char *t, *keys;
	size_t off;
	int64_t t0, ms;

	(void)state;
	/* The plan's own mapping is the first level: the 32nd list is the 33rd. */
	t = nested("name: ", 100000, "[", "]", "\n");
	t0 = clock_mono_ms();
	expect_error(t, 1, 38, "the YAML nests more than 32 lists and mappings deep here; "
	    "expected a plan a few levels deep");
	ms = clock_mono_ms() - t0;
	print_message("100000 nested lists refused in %lld ms\n", (long long)ms);
	assert_true(ms < 1000);
	free(t);
	t = nested("name: ", 20000, "{a: ", "}", "\n");
	expect_error(t, 1, 131, "the YAML nests more than 32 lists and mappings deep here");
	free(t);
	t = nested("name: ", 31, "[", "]", "\n");
	expect_error(t, 1, 7, "name is a list");
	free(t);

	/* 1025 keys in one mapping; 1024 are read (and refused one by one). */
	assert_non_null(keys = malloc(1025 * 16 + 64));
	off = (size_t)sprintf(keys, "x: {");
	for (int i = 0; i < 1025; i++)
		off += (size_t)sprintf(keys + off, "%sk%d: 1", i ? ", " : "", i);
	strcpy(keys + off, "}\n");
	load_before_plan(keys, &errs);
	assert_true(has_error(&errs, 1, (int)(strstr(keys, "k1024:") - keys) + 1,
	    "a mapping holds more than 1024 keys; expected a plan with a few keys to a "
	    "mapping"));
	plan_errors_free(&errs);
	strcpy(strstr(keys, ", k1024"), "}\n");
	load_before_plan(keys, &errs);
	assert_false(has_message(&errs, "more than 1024 keys"));
	assert_true(has_message(&errs, "unknown key 'x'"));
	plan_errors_free(&errs);

	/* 1025 items in one list; 1024 are read. */
	off = (size_t)sprintf(keys, "x: [");
	for (int i = 0; i < 1025; i++)
		off += (size_t)sprintf(keys + off, "%sq%d", i ? ", " : "", i);
	strcpy(keys + off, "]\n");
	load_before_plan(keys, &errs);
	assert_true(has_error(&errs, 1, (int)(strstr(keys, "q1024") - keys) + 1,
	    "a list holds more than 1024 items; expected a plan with shorter lists"));
	plan_errors_free(&errs);
	strcpy(strstr(keys, ", q1024"), "]\n");
	load_before_plan(keys, &errs);
	assert_false(has_message(&errs, "more than 1024 items"));
	plan_errors_free(&errs);

	/* 257 anchors and aliases: refused at the 257th. */
	off = (size_t)sprintf(keys, "x: [");
	for (int i = 0; i < 257; i++)
		off += (size_t)sprintf(keys + off, "%s&a%d v", i ? ", " : "", i);
	strcpy(keys + off, "]\n");
	load_before_plan(keys, &errs);
	assert_true(has_message(&errs, "the file holds more than 256 anchors and aliases; "
	    "expected a plan with a few"));
	plan_errors_free(&errs);
	free(keys);
}

static void
test_documents(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char *t;

	(void)state;
	expect_error("", 1, 1, "the file is empty");
	expect_error("# only a comment\n", 1, 1, "the file is empty");
	expect_error("---\n", 2, 1, "the plan is empty");
	expect_error("hello\n", 1, 1, "the plan is a scalar");
	expect_error("name: [unclosed\n", 2, 1, "YAML syntax error");
	expect_error("name: *nothing\n", 1, 7, "YAML syntax error: found undefined alias");
	expect_error("name: \"a\\xffb\"\nname: x\xff\n", 2, 8, "YAML syntax error: invalid");
	/* A syntax error after a valid first document is still reported. */
	t = malloc(strlen(base_plan) + 32);
	strcpy(t, base_plan);
	strcat(t, "---\n[\n");
	expect_error(t, 30, 1, "YAML syntax error");
	free(t);
	/* The first document's own errors come along with the second's. */
	t = subst(base_plan, "name: orders-delays", "name: Orders");
	t = realloc(t, strlen(t) + 16);
	strcat(t, "--- {}\n");
	assert_int_equal(load_text(t, &p, &errs), -1);
	assert_int_equal(errs.n, 2);
	assert_true(has_error(&errs, 1, 7, "contains 'O'"));
	assert_true(has_error(&errs, 28, 1, "a second YAML document"));
	plan_errors_free(&errs);
	free(t);
	/* A recursive alias does not loop. */
	t = subst(base_plan, "steps:\n", "steps: &s [*s]\nsteps2:\n");
	assert_int_equal(load_text(t, &p, &errs), -1);
	assert_true(has_error(&errs, 20, 8, "steps[0] is a list"));
	plan_errors_free(&errs);
	free(t);
	/* Aliases to scalars are read like the scalar. */
	t = subst(base_plan, "username: guest", "username: &u guest");
	edit(&t, "project: default", "project: *u");
	p = expect_valid(t);
	assert_string_equal(plan_flag_unleash(p)->project, "guest");
	plan_free(p);
	free(t);
}

static void
test_null_arguments(void **state)
{
	struct plan *p = NULL;
	char *t = subst(base_plan, "unit: 1s", "unit: 1");

	(void)state;
	plan_free(NULL);
	plan_errors_free(NULL);
	/* ERRS may be NULL: the errors are dropped, nothing leaks. */
	assert_int_equal(plan_load_buffer("t.yaml", t, strlen(t), &p, NULL), -1);
	assert_null(p);
	assert_int_equal(plan_load_buffer("t.yaml", base_plan, strlen(base_plan), &p, NULL), 0);
	assert_non_null(p);
	plan_free(p);
	assert_int_equal(plan_load_file("/nonexistent/plan.yaml", &p, NULL), -1);
	assert_int_equal(plan_load_buffer("t.yaml", base_plan, strlen(base_plan), NULL, NULL), -1);
	assert_int_equal(plan_find_step(NULL, PLAN_STEP_FLIP), -1);
	free(t);
}

/* An old selection that takes one of the plan's
 * own queues (a level, the parking queue, a destination, the probe or the
 * canary queue) is refused where it is written, for every naming; the
 * pattern is PCRE2 (\\d, lookahead) and its cost is bounded. */
static void
test_old_selection_rules(void **state)
{
	static const char old_line[] = "  queues: { match: '^delay\\.[0-9]+s$' }\n";
	static const struct {
		const char *old, *ladder;	/* ladder: NULL keeps base_plan's */
		int line, column;
		const char *msg;
	} bad[] = {
		{ "  queues: { match: '^delay\\.' }\n", NULL, 8, 20,
		  "selects 21 of this plan's own queues, such as the level queue "
		  "'delay.level.00'" },
		{ "  queues: { match: 'parking$' }\n", NULL, 8, 20,
		  "such as the parking queue 'delay.parking'" },
		{ "  queues: { match: '^email' }\n", NULL, 8, 20,
		  "such as the destination queue 'email.delivery'" },
		{ "  queues: { match: '^cutover\\.probe\\.' }\n", NULL, 8, 20,
		  "such as the probe queue 'cutover.probe.orders-delays'" },
		{ "  queues: { match: 'canary' }\n", NULL, 8, 20,
		  "such as the canary queue 'cutover.canary.orders-delays'" },
		{ "  queues: { match: '^orders' }\n",
		  "  prefix: orders\n  unit: 1s\n  max_delay: 12d\n", 8, 20,
		  "such as the level queue 'orders.level.00'" },
		{ "  queues: { match: '^celery_delayed_\\d+$' }\n",
		  "  naming: kombu\n  levels: 28\n", 8, 20,
		  "selects 28 of this plan's own queues" },
		{ "  queues: { names: [delay.5s, delay.level.03] }\n", NULL, 8, 31,
		  "old.queues.names[1] 'delay.level.03' is this plan's own level queue" },
		{ "  queues: { names: [billing.retry] }\n", NULL, 8, 21,
		  "old.queues.names[0] 'billing.retry' is this plan's own destination queue" },
		{ "  queues: { names: [cutover.canary.orders-delays] }\n", NULL, 8, 21,
		  "is this plan's own canary queue" },
		{ "  queues: { match: '^(delay|d+)+$' }\n", NULL, 8, 20,
		  "costs too much to match (match limit exceeded" },
		{ "  queues: { match: '^d+++elay$' }\n", NULL, 8, 20,
		  "is not a valid regex (quantifier does not follow a repeatable item" },
		{ "  queues: { match: '(?<=x' }\n", NULL, 8, 20, "is not a valid regex" },
	};
	static const char *const good[] = {
		"  queues: { match: '^delay\\.\\d+s$' }\n",
		"  queues: { match: '^delay\\.(?!level\\.|parking$)' }\n",
		"  queues: { match: '^delay\\.[[:digit:]]+s$' }\n",
		"  queues: { names: [delay.5s, delay.level] }\n",
	};
	char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = subst(base_plan, old_line, bad[i].old);
		if (bad[i].ladder != NULL)
			edit(&t, "  unit: 1s\n  max_delay: 12d\n", bad[i].ladder);
		expect_error(t, bad[i].line, bad[i].column, bad[i].msg);
		free(t);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct plan *p;

		t = subst(base_plan, old_line, good[i]);
		p = expect_valid(t);
		plan_free(p);
		free(t);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step_kind_names),
		cmocka_unit_test(test_step_kind_table),
		cmocka_unit_test(test_example_orders),
		cmocka_unit_test(test_example_celery),
		cmocka_unit_test(test_example_nservicebus),
		cmocka_unit_test(test_bad_plans),
		cmocka_unit_test(test_three_mistakes),
		cmocka_unit_test(test_errors_everywhere),
		cmocka_unit_test(test_canary_defaults),
		cmocka_unit_test(test_levels_from_max_delay),
		cmocka_unit_test(test_max_delay_limits),
		cmocka_unit_test(test_destination_long_form),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_step_order),
		cmocka_unit_test(test_flag_read_values),
		cmocka_unit_test(test_flag_headers),
		cmocka_unit_test(test_urls),
		cmocka_unit_test(test_url_lists),
		cmocka_unit_test(test_secrets_not_echoed),
		cmocka_unit_test(test_ladder_naming_rules),
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_error_format),
		cmocka_unit_test(test_documents),
		cmocka_unit_test(test_shape_bounds),
		cmocka_unit_test(test_null_arguments),
		cmocka_unit_test(test_old_selection_rules),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
