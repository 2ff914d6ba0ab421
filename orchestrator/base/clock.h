/* clock: the wall clock in milliseconds since the epoch, the monotonic
 * clock, and sleeping — the one place steps, the engine and the watch take
 * time from. Wall time is for what is displayed, recorded and compared
 * with other machines; durations, deadlines within a run and lateness are
 * measured with the monotonic clock, which no clock adjustment moves. */
#ifndef CUTOVER_CLOCK_H
#define CUTOVER_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* Now, in milliseconds since the epoch (CLOCK_REALTIME: recorded times are
 * compared with other machines' and the broker's). */
int64_t clock_now_ms(void);

/* Shifts the wall clock this process reads (clock_now_ms, both threads)
 * by DELTA_MS from now on. Only fault.c calls it, when CUTOVER_FAULT asks
 * for a clock step (the tests that prove the engine's schedule ignores a
 * stepped wall clock: stepping the machine's own clock would disturb
 * everything else on it); otherwise the shift stays 0. */
void clock_wall_shift_ms(int64_t delta_ms);

/* Milliseconds on CLOCK_MONOTONIC: only differences mean anything. It
 * counts from the machine's boot, so values compare across processes of
 * one boot (a watch resumed by a restarted engine), never across a reboot
 * (it starts again near zero: a difference that comes out negative). */
int64_t clock_mono_ms(void);

/* Writes the kernel's id of this boot (/proc/sys/kernel/random/boot_id)
 * into OUT: monotonic times recorded under another id are not comparable
 * with this boot's. Returns 0, or -1 (OUT "") where there is none. */
int clock_boot_id(char *out, size_t outlen);

/* Sleeps MS milliseconds (nothing when MS <= 0), resuming after signals. */
void clock_sleep_ms(int64_t ms);

#endif
