/* sentences: building a readable message a clause at a time, the way the
 * steps write what they saw ("a; b; c") into a fixed buffer. */
#ifndef CUTOVER_SENTENCES_H
#define CUTOVER_SENTENCES_H

#include <stdarg.h>
#include <stddef.h>

/* Appends FMT's text to the NUL-terminated BUF (LEN bytes), separated from
 * what is there with "; "; what does not fit is cut off and BUF then ends
 * in "...", and BUF stays NUL-terminated. */
void sentences_add(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sentences_vadd(char *buf, size_t len, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

#endif
