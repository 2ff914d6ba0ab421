/* ct: case tables for a parser of text into milliseconds (durations,
 * times): each good text read as its value, each bad one refused with a
 * message that says why, and the result never written on a refusal. */
#ifndef CUTOVER_TEST_CT_H
#define CUTOVER_TEST_CT_H

#include <stddef.h>
#include <stdint.h>

/* A text and the milliseconds it reads as. */
struct ct_good {
	const char *text;
	int64_t ms;
};

/* A text refused, and a piece its message must contain. */
struct ct_bad {
	const char *text;
	const char *why;
};

/* The parser under test: 0 and *MS, or -1 with ERR. */
typedef int (*ct_parse_fn)(const char *text, int64_t *ms, char *err, size_t errlen);

/* Fails the test unless PARSE reads each of the N CASES as its value. */
void ct_good(ct_parse_fn parse, const struct ct_good *cases, size_t n);

/* Fails the test unless PARSE refuses each of the N CASES with -1, leaves
 * its result alone and says the case's why; and, with EVERY (non-NULL),
 * unless each message also contains EVERY. */
void ct_bad(ct_parse_fn parse, const struct ct_bad *cases, size_t n, const char *every);

#define CT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

#endif
