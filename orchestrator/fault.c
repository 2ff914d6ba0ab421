/* fault: crash points for recovery tests. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault.h"

void
fault_point(const char *name)
{
	const char *want = getenv("CUTOVER_FAULT");

	if (want != NULL && strncmp(want, "crash:", 6) == 0 && strcmp(want + 6, name) == 0)
		kill(getpid(), SIGKILL);
}
