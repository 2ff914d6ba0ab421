/* duration: parse and print the durations of plans and the command line
 * ("500ms", "1.2s", "90s", "15m", "2h", "12d"), held as whole milliseconds. */
#ifndef CUTOVER_DURATION_H
#define CUTOVER_DURATION_H

#include <stddef.h>
#include <stdint.h>

/* Largest duration accepted anywhere: 100 years, so that sums of a few
 * durations never overflow int64 milliseconds. */
#define DURATION_MAX_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)

/* Parses TEXT: a non-negative decimal number (digits, optionally a '.' and
 * more digits) immediately followed by one unit of ms, s, m, h, d. A value
 * that is not a whole number of milliseconds (1.0005s, 0.5ms) is refused,
 * never rounded. Returns 0 and stores *MS, or -1 with a message in ERR
 * (what was wrong and what was expected). */
int duration_parse(const char *text, int64_t *ms, char *err, size_t errlen);

/* Writes MS as the shortest exact text duration_parse reads back
 * ("42s", "1500ms", "2h", "12d"). Returns OUT. */
char *duration_format(int64_t ms, char *out, size_t outlen);

/* Writes MS for a reader: days, hours, minutes and seconds with their
 * milliseconds ("1h 49m 13.5s", "12d 3h 16m 15s", "250ms"). Returns OUT. */
char *duration_describe(int64_t ms, char *out, size_t outlen);

#endif
