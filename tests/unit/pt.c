/* pt: the plan tests' plan texts (pt.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"
#include "pt.h"

const char pt_base_plan[] =
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

const char pt_unleash_flag[] =
    "flag:\n"
    "  kind: unleash\n"
    "  url: http://127.0.0.1:4242\n"
    "  project: default\n"
    "  environment: production\n"
    "  feature: delay-ladder\n"
    "  token: env:UNLEASH_TOKEN\n";

char *
pt_subst(const char *text, const char *from, const char *to)
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

void
pt_edit(char **text, const char *from, const char *to)
{
	char *n = pt_subst(*text, from, to);

	free(*text);
	*text = n;
}

int
pt_load(const char *text, struct plan **p, struct plan_errors *errs)
{
	return plan_load_buffer("t.yaml", text, strlen(text), p, errs);
}

void
pt_print_errors(const struct plan_errors *errs)
{
	char line[512];
	size_t i;

	for (i = 0; i < errs->n; i++)
		print_error("    %s\n", plan_error_format(errs, i, line, sizeof(line)));
}

int
pt_has_error(const struct plan_errors *errs, int line, int column, const char *text)
{
	size_t i;

	for (i = 0; i < errs->n; i++)
		if (errs->v[i].line == line && errs->v[i].column == column &&
		    strstr(errs->v[i].message, text) != NULL)
			return 1;
	return 0;
}

void
pt_expect_error(const char *text, int line, int column, const char *msg)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	assert_int_equal(pt_load(text, &p, &errs), -1);
	assert_null(p);
	if (!pt_has_error(&errs, line, column, msg)) {
		print_error("no error %d:%d: ...%s... among:\n", line, column, msg);
		pt_print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	plan_errors_free(&errs);
}

void
pt_expect_n_errors(const char *text, struct plan_errors *errs, size_t n)
{
	struct plan *p = NULL;

	assert_int_equal(pt_load(text, &p, errs), -1);
	assert_null(p);
	if (errs->n != n) {
		print_error("%zu errors, not %zu:\n", errs->n, n);
		pt_print_errors(errs);
		fail();
	}
}

void
pt_expect_edit_error(const char *from, const char *to, int line, int column,
    const char *msg)
{
	char *t = pt_subst(pt_base_plan, from, to);

	pt_expect_error(t, line, column, msg);
	free(t);
}

struct plan *
pt_expect_valid(const char *text)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (pt_load(text, &p, &errs) != 0) {
		print_error("plan refused:\n");
		pt_print_errors(&errs);
		plan_errors_free(&errs);
		fail();
	}
	assert_non_null(p);
	assert_int_equal(errs.n, 0);
	plan_errors_free(&errs);
	return p;
}
