/* test_plan_flag: the flag section of kind http — the values its read
 * compares with and the headers it sends. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "plan_flag.h"
#include "pt.h"

static const char http_flag[] =
    "flag:\n"
    "  kind: http\n"
    "  on:  { method: PUT, url: http://flags.local/f, body: '{\"enabled\":true}' }\n"
    "  off: { method: PUT, url: http://flags.local/f, body: '{\"enabled\":false}' }\n"
    "  read: { url: http://flags.local/f, pointer: /enabled, on: ON, off: OFF }\n"
    "  headers: HEADERS\n";

/* The http flag of the base plan with read.on and read.off written ON and
 * OFF, and headers HEADERS. */
static char *
http_plan(const char *on, const char *off, const char *headers)
{
	char *f = pt_subst(http_flag, "on: ON", on), *t;

	pt_edit(&f, "off: OFF", off);
	pt_edit(&f, "HEADERS", headers);
	t = pt_subst(pt_base_plan, pt_unleash_flag, f);
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
		p = pt_expect_valid(t);
		assert_string_equal(plan_flag_http(p)->read_on, cases[i].json_on);
		assert_string_equal(plan_flag_http(p)->read_off, cases[i].json_off);
		plan_free(p);
		free(t);
	}
	/* on and off that read the same cannot tell a flip. */
	t = http_plan("on: 1", "off: 1", "{}");
	pt_expect_error(t, 17, 69, "flag.read.on and flag.read.off are both 1");
	free(t);
	/* A list is not a JSON scalar. */
	t = http_plan("on: [1]", "off: 0", "{}");
	pt_expect_error(t, 17, 61, "flag.read.on is a list");
	free(t);
	/* An empty pointer reads the whole document. */
	t = http_plan("on: true", "off: false", "{}");
	pt_edit(&t, "pointer: /enabled", "pointer: ''");
	p = pt_expect_valid(t);
	assert_string_equal(plan_flag_http(p)->read_pointer, "");
	plan_free(p);
	free(t);
	t = http_plan("on: true", "off: false", "{}");
	pt_edit(&t, "pointer: /enabled", "pointer: /a~2b");
	pt_expect_error(t, 17, 47, "has a '~' not followed by 0 or 1");
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
			p = pt_expect_valid(t);
			assert_true(plan_flag_http(p)->nheaders > 0);
			plan_free(p);
		} else
			pt_expect_error(t, 18, cases[i].column, cases[i].msg);
		free(t);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_flag_read_values),
	cmocka_unit_test(test_flag_headers))
