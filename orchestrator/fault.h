/* fault: named crash points for the tests that prove recovery, and a
 * named point where the wall clock steps back. A crash at
 * an exact instant (after the flag service took a flip, before the flip is
 * recorded) cannot be produced from outside reliably, so the process kills
 * itself there when the environment asks it to. Inert otherwise. */
#ifndef CUTOVER_FAULT_H
#define CUTOVER_FAULT_H

/* If the environment variable CUTOVER_FAULT equals "crash:" NAME, the
 * process sends itself SIGKILL (no cleanup, no flush: a real crash). If
 * it equals "clock_back:" NAME, the process's wall clock (clock_now_ms)
 * steps back an hour the first time it gets here, as an NTP step or an
 * operator's `date -s` would; the monotonic clock does not move. */
void fault_point(const char *name);

#endif
