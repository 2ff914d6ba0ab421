/* pattern: regular expressions over object names, read as RabbitMQ reads
 * its policy patterns (PCRE; here libpcre2-8, byte-wise, no UTF mode) and
 * at a bounded cost: a pattern length limit, and a match, depth and heap
 * limit on every match, so that a pattern from a plan or a broker can
 * neither exhaust memory nor spin. A limit hit is an error, never a
 * silent non-match. */
#ifndef CUTOVER_PATTERN_H
#define CUTOVER_PATTERN_H

#include <stdbool.h>
#include <stddef.h>

#define PATTERN_LENGTH_MAX	1024	/* bytes of a pattern */
#define PATTERN_MATCH_LIMIT	100000	/* pcre2_set_match_limit */
#define PATTERN_DEPTH_LIMIT	5000	/* pcre2_set_depth_limit */
#define PATTERN_HEAP_LIMIT_KIB	4096	/* pcre2_set_heap_limit */

/* A compiled pattern with its match context; opaque. Not for use from two
 * threads at once (it holds its match data). */
struct pattern;

/* Compiles TEXT (NUL-terminated). Returns 0 and stores *OUT (free with
 * pattern_free), or -1 with ERR saying what is wrong (too long, or PCRE2's
 * message and the byte offset it is about) and *OUT NULL. */
int pattern_compile(const char *text, struct pattern **out, char *err, size_t errlen);

/* Matches SUBJECT (NUL-terminated) against P, anywhere in it unless the
 * pattern anchors itself. Returns 0 with *MATCHED true when it matches,
 * false when it does not; or -1 with ERR (PCRE2's words, e.g. "match
 * limit exceeded") when the match hit a limit or failed otherwise: the
 * answer is then unknown (*MATCHED false), and the caller must not take it
 * as either. */
int pattern_match(struct pattern *p, const char *subject, bool *matched, char *err,
    size_t errlen);

/* The pattern's text as compiled. */
const char *pattern_text(const struct pattern *p);

/* Frees P. NULL is fine. */
void pattern_free(struct pattern *p);

/* Writes "^NAME$" with every ASCII character but letters, digits and '_'
 * escaped into OUT (OUTLEN bytes), so that the PCRE pattern, as a broker
 * policy reads it, matches NAME alone. Returns 0, or -1 when it does not
 * fit. */
int pattern_exact(const char *name, char *out, size_t outlen);

#endif
