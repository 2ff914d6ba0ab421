/* utf8: where valid UTF-8 ends, for the places that pass text on from
 * somewhere else (a flag service's answer in an error, a store string
 * into JSON) and must replace what is not UTF-8. */
#ifndef CUTOVER_UTF8_H
#define CUTOVER_UTF8_H

#include <stddef.h>

/* The length of the valid UTF-8 sequence at S (at most N bytes, N >= 1),
 * 1 to 4, or 0 when S does not start one: overlong forms, surrogates and
 * code points past U+10FFFF are not valid. */
size_t utf8_seq(const unsigned char *s, size_t n);

#endif
