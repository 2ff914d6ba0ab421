/* clock: wall time, monotonic time and sleeping. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"

/* The wall clock's shift (clock_wall_shift_ms): 0 unless a test's fault
 * set it. */
static _Atomic int64_t wall_shift_ms;

static int64_t
ms_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
clock_now_ms(void)
{
	return ms_of(CLOCK_REALTIME) + atomic_load(&wall_shift_ms);
}

void
clock_wall_shift_ms(int64_t delta_ms)
{
	atomic_fetch_add(&wall_shift_ms, delta_ms);
}

int64_t
clock_mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int
clock_boot_id(char *out, size_t outlen)
{
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	int rc = -1;

	if (outlen > 0)
		out[0] = '\0';
	if (f == NULL)
		return -1;
	if (outlen > 1 && fgets(out, (int)outlen, f) != NULL) {
		out[strcspn(out, "\n")] = '\0';
		rc = out[0] != '\0' ? 0 : -1;
	}
	fclose(f);
	return rc;
}

void
clock_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000;
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}
