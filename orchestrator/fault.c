/* fault: crash points and a wall-clock step for recovery tests. */
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "fault.h"
#include "log.h"

#define FAULT_CLOCK_BACK_MS	(60 * 60 * 1000)

void
fault_point(const char *name)
{
	static bool stepped;
	const char *want = getenv("CUTOVER_FAULT");

	if (want == NULL)
		return;
	if (strncmp(want, "crash:", 6) == 0 && strcmp(want + 6, name) == 0)
		kill(getpid(), SIGKILL);
	if (strncmp(want, "clock_back:", 11) == 0 && strcmp(want + 11, name) == 0 &&
	    !stepped) {
		stepped = true;
		clock_wall_shift_ms(-FAULT_CLOCK_BACK_MS);
		log_event("warn", NULL, NULL, "fault %s: the wall clock stepped back an hour",
		    name);
	}
}
