/* ct: case tables for a parser of text into milliseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ct.h"

void
ct_good(ct_parse_fn parse, const struct ct_good *cases, size_t n)
{
	char err[256];
	int64_t ms;

	for (size_t i = 0; i < n; i++) {
		ms = -1;
		err[0] = '\0';
		if (parse(cases[i].text, &ms, err, sizeof(err)) != 0)
			fail_msg("\"%s\" refused: %s", cases[i].text, err);
		if (ms != cases[i].ms)
			fail_msg("\"%s\" read as %lld, expected %lld", cases[i].text,
			    (long long)ms, (long long)cases[i].ms);
	}
}

void
ct_bad(ct_parse_fn parse, const struct ct_bad *cases, size_t n, const char *every)
{
	char err[256];
	int64_t ms;

	for (size_t i = 0; i < n; i++) {
		ms = 12345;
		err[0] = '\0';
		if (parse(cases[i].text, &ms, err, sizeof(err)) != -1)
			fail_msg("\"%s\" accepted as %lld", cases[i].text, (long long)ms);
		if (ms != 12345)
			fail_msg("\"%s\": result written on error", cases[i].text);
		if (strstr(err, cases[i].why) == NULL)
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", cases[i].text, err,
			    cases[i].why);
		if (every != NULL && strstr(err, every) == NULL)
			fail_msg("\"%s\": message \"%s\" lacks \"%s\"", cases[i].text, err,
			    every);
	}
}
