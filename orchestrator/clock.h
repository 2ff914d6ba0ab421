/* clock: the wall clock in milliseconds since the epoch, a monotonic clock
 * for durations, and sleeping —
 * the one place steps, the engine and the watch take time from. */
#ifndef CUTOVER_CLOCK_H
#define CUTOVER_CLOCK_H

#include <stdint.h>

/* Now, in milliseconds since the epoch (CLOCK_REALTIME: recorded times are
 * compared with other machines' and the broker's). */
int64_t clock_now_ms(void);

/* Milliseconds on CLOCK_MONOTONIC: for durations and deadlines, which a
 * step of the wall clock must not move. */
int64_t clock_mono_ms(void);

/* Sleeps MS milliseconds (nothing when MS <= 0), resuming after signals. */
void clock_sleep_ms(int64_t ms);

#endif
