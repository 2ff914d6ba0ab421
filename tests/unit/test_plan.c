/* test_plan: the plan loader's reading and its errors (plans/) — every
 * error of a plan is reported with its position, not just the first; a
 * value of the wrong type, a body too deep or too large, more than one
 * document and NULL arguments are refused; defaults are what DESIGN.md §2
 * and plan.h promise. Each section's rules have a file of their own
 * (test_plan_*.c). Run under valgrind for leaks. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "clock.h"
#include "ladder.h"
#include "plan.h"
#include "plan_flag.h"
#include "pt.h"

#define S(n)	((int64_t)(n) * 1000)

/* One edit of the base plan, and the error it must cause there. */
struct mistake {
	const char *from, *to;
	int line, column;
	const char *msg;
};

/* Loads pt_base_plan with the N edits of MISTAKES made, which must fail
 * with exactly their N errors, into ERRS (the caller frees them); with
 * IN_ORDER, in the order of MISTAKES. A missing one fails naming it. */
static void
expect_mistakes(const struct mistake *mistakes, size_t n, bool in_order,
    struct plan_errors *errs)
{
	char *t = strdup(pt_base_plan);

	for (size_t i = 0; i < n; i++)
		pt_edit(&t, mistakes[i].from, mistakes[i].to);
	pt_expect_n_errors(t, errs, n);
	for (size_t i = 0; i < n; i++) {
		const struct mistake *m = &mistakes[i];
		const struct plan_error *e = &errs->v[i];

		if (in_order ? e->line != m->line || e->column != m->column ||
		    strstr(e->message, m->msg) == NULL :
		    !pt_has_error(errs, m->line, m->column, m->msg)) {
			pt_print_errors(errs);
			fail_msg("no error %d:%d: ...%s...%s", m->line, m->column, m->msg,
			    in_order ? " in that place" : "");
		}
	}
	free(t);
}

static void
test_three_mistakes(void **state)
{
	/* Reported in file order. */
	static const struct mistake mistakes[] = {
		{ "name: orders-delays", "name: Orders", 1, 7, "name 'Orders' contains 'O'" },
		{ "  unit: 1s\n", "  unit: 1 s\n", 10, 9, "ladder.unit is not a valid duration" },
		{ "  - canary\n", "  - canry\n", 24, 5, "unknown step 'canry'" },
	};
	struct plan_errors errs = { 0 };

	(void)state;
	expect_mistakes(mistakes, 3, true, &errs);
	plan_errors_free(&errs);
}

static void
test_errors_everywhere(void **state)
{
	/* One mistake per section, structural and semantic; all reported. */
	static const struct mistake mistakes[] = {
		{ "  username: guest\n", "  username: guest\n  vhost: x\n",
		  6, 3, "unknown key 'vhost' in broker" },
		{ "'^delay\\.[0-9]+s$'", "'('", 9, 20, "is not a valid regex" },
		{ "  max_delay: 12d\n", "  levels: 40\n", 12, 11,
		  "ladder.levels 40 is out of range" },
		{ "env:UNLEASH_TOKEN", "secret-token", 20, 10,
		  "secrets must be env:NAME references" },
		{ "  - watch\n  - { step: remove_old, gate: true }\n",
		  "  - { step: remove_old, gate: true }\n  - watch\n", 27, 5,
		  "step 'remove_old' comes before step 'watch'" },
	};
	struct plan_errors errs = { 0 };

	(void)state;
	expect_mistakes(mistakes, 5, false, &errs);
	/* A secret is never repeated in a message. */
	for (size_t i = 0; i < errs.n; i++)
		assert_null(strstr(errs.v[i].message, "secret-token"));
	plan_errors_free(&errs);
}

static void
test_defaults(void **state)
{
	struct plan *p;
	char *t = pt_subst(pt_base_plan, pt_unleash_flag, "");

	(void)state;
	/* Without flip, no flag is needed; without flag the kind is NONE. */
	pt_edit(&t, "  - { step: flip, gate: true }\n  - watch\n  - { step: remove_old, gate: true }\n",
	    "");
	p = pt_expect_valid(t);
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
	t = pt_subst(pt_base_plan, "  unit: 1s\n", "  prefix: orders.delay\n  queue_type: classic\n  unit: 1s\n");
	p = pt_expect_valid(t);
	assert_string_equal(p->ladder.prefix, "orders.delay");
	assert_int_equal(p->queue_type, PLAN_QUEUE_CLASSIC);
	plan_free(p);
	free(t);
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
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		pt_expect_edit_error(cases[i].from, cases[i].to, cases[i].line, cases[i].column,
		    cases[i].msg);
}

static void
test_error_format(void **state)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char out[512], small[16];
	char *t = pt_subst(pt_base_plan, "  unit: 1s\n", "  unit: 0s\n");

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

/* Writes into OUT (room for N items of 16 bytes, and 64 more) OPEN, then
 * N items, ", " between them, the I-th (from 0) ITEM, I and AFTER, then
 * CLOSE: "x: [q0, q1]\n". */
static void
listing(char *out, const char *open, const char *item, const char *after, int n,
    const char *close)
{
	size_t off = (size_t)sprintf(out, "%s", open);

	for (int i = 0; i < n; i++)
		off += (size_t)sprintf(out + off, "%s%s%d%s", i ? ", " : "", item, i, after);
	strcpy(out + off, close);
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

/* Loads HEAD followed by pt_base_plan, which must fail; ERRS says why. */
static void
load_before_plan(const char *head, struct plan_errors *errs)
{
	struct plan *p = NULL;
	char *t = malloc(strlen(head) + strlen(pt_base_plan) + 1);

	assert_non_null(t);
	sprintf(t, "%s%s", head, pt_base_plan);
	assert_int_equal(pt_load(t, &p, errs), -1);
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
	int64_t t0, ms;

	(void)state;
	/* The plan's own mapping is the first level: the 32nd list is the 33rd. */
	t = nested("name: ", 100000, "[", "]", "\n");
	t0 = clock_mono_ms();
	pt_expect_error(t, 1, 38, "the YAML nests more than 32 lists and mappings deep here; "
	    "expected a plan a few levels deep");
	ms = clock_mono_ms() - t0;
	print_message("100000 nested lists refused in %lld ms\n", (long long)ms);
	assert_true(ms < 1000);
	free(t);
	t = nested("name: ", 20000, "{a: ", "}", "\n");
	pt_expect_error(t,
	1, 131, "the YAML nests more than 32 lists and mappings deep here");
	free(t);
	t = nested("name: ", 31, "[", "]", "\n");
	pt_expect_error(t, 1, 7, "name is a list");
	free(t);

	/* 1025 keys in one mapping; 1024 are read (and refused one by one). */
	assert_non_null(keys = malloc(1025 * 16 + 64));
	listing(keys, "x: {", "k", ": 1", 1025, "}\n");
	load_before_plan(keys, &errs);
	assert_true(pt_has_error(&errs, 1, (int)(strstr(keys, "k1024:") - keys) + 1,
	    "a mapping holds more than 1024 keys; expected a plan with a few keys to a "
	    "mapping"));
	plan_errors_free(&errs);
	strcpy(strstr(keys, ", k1024"), "}\n");
	load_before_plan(keys, &errs);
	assert_false(has_message(&errs, "more than 1024 keys"));
	assert_true(has_message(&errs, "unknown key 'x'"));
	plan_errors_free(&errs);

	/* 1025 items in one list; 1024 are read. */
	listing(keys, "x: [", "q", "", 1025, "]\n");
	load_before_plan(keys, &errs);
	assert_true(pt_has_error(&errs, 1, (int)(strstr(keys, "q1024") - keys) + 1,
	    "a list holds more than 1024 items; expected a plan with shorter lists"));
	plan_errors_free(&errs);
	strcpy(strstr(keys, ", q1024"), "]\n");
	load_before_plan(keys, &errs);
	assert_false(has_message(&errs, "more than 1024 items"));
	plan_errors_free(&errs);

	/* 257 anchors and aliases: refused at the 257th. */
	listing(keys, "x: [", "&a", " v", 257, "]\n");
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
	pt_expect_error("", 1, 1, "the file is empty");
	pt_expect_error("# only a comment\n", 1, 1, "the file is empty");
	pt_expect_error("---\n", 2, 1, "the plan is empty");
	pt_expect_error("hello\n", 1, 1, "the plan is a scalar");
	pt_expect_error("name: [unclosed\n", 2, 1, "YAML syntax error");
	pt_expect_error("name: *nothing\n",
	1, 7, "YAML syntax error: found undefined alias");
	pt_expect_error("name: \"a\\xffb\"\nname: x\xff\n",
	2, 8, "YAML syntax error: invalid");
	/* A syntax error after a valid first document is still reported. */
	t = malloc(strlen(pt_base_plan) + 32);
	strcpy(t, pt_base_plan);
	strcat(t, "---\n[\n");
	pt_expect_error(t, 30, 1, "YAML syntax error");
	free(t);
	/* The first document's own errors come along with the second's. */
	t = pt_subst(pt_base_plan, "name: orders-delays", "name: Orders");
	t = realloc(t, strlen(t) + 16);
	strcat(t, "--- {}\n");
	pt_expect_n_errors(t, &errs, 2);
	assert_true(pt_has_error(&errs, 1, 7, "contains 'O'"));
	assert_true(pt_has_error(&errs, 28, 1, "a second YAML document"));
	plan_errors_free(&errs);
	free(t);
	/* A recursive alias does not loop. */
	t = pt_subst(pt_base_plan, "steps:\n", "steps: &s [*s]\nsteps2:\n");
	assert_int_equal(pt_load(t, &p, &errs), -1);
	assert_true(pt_has_error(&errs, 20, 8, "steps[0] is a list"));
	plan_errors_free(&errs);
	free(t);
	/* Aliases to scalars are read like the scalar. */
	t = pt_subst(pt_base_plan, "username: guest", "username: &u guest");
	pt_edit(&t, "project: default", "project: *u");
	p = pt_expect_valid(t);
	assert_string_equal(plan_flag_unleash(p)->project, "guest");
	plan_free(p);
	free(t);
}

static void
test_null_arguments(void **state)
{
	struct plan *p = NULL;
	char *t = pt_subst(pt_base_plan, "unit: 1s", "unit: 1");

	(void)state;
	plan_free(NULL);
	plan_errors_free(NULL);
	/* ERRS may be NULL: the errors are dropped, nothing leaks. */
	assert_int_equal(plan_load_buffer("t.yaml", t, strlen(t), &p, NULL), -1);
	assert_null(p);
	assert_int_equal(plan_load_buffer("t.yaml", pt_base_plan, strlen(pt_base_plan), &p, NULL), 0);
	assert_non_null(p);
	plan_free(p);
	assert_int_equal(plan_load_file("/nonexistent/plan.yaml", &p, NULL), -1);
	assert_int_equal(plan_load_buffer("t.yaml", pt_base_plan, strlen(pt_base_plan), NULL, NULL), -1);
	assert_int_equal(plan_find_step(NULL, PLAN_STEP_FLIP), -1);
	free(t);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_three_mistakes),
	cmocka_unit_test(test_errors_everywhere),
	cmocka_unit_test(test_defaults),
	cmocka_unit_test(test_types),
	cmocka_unit_test(test_error_format),
	cmocka_unit_test(test_documents),
	cmocka_unit_test(test_shape_bounds),
	cmocka_unit_test(test_null_arguments))
