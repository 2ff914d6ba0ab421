/* log: one line per event on stderr, `ts=… level=… plan=… step=… msg="…"`,
 * the format operators grep and log shippers parse. Never give it a secret. */
#ifndef CUTOVER_LOG_H
#define CUTOVER_LOG_H

/* Writes one line: LEVEL ("info", "warn", "error"), PLAN and STEP (either
 * may be NULL and is then left out), and the message built from FMT, with
 * quotes and newlines escaped so a line stays one line. */
void log_event(const char *level, const char *plan, const char *step,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Sets the least severe level written from now on: "debug", "info" (the
 * default), "warn" or "error"; lines below it are dropped. Returns 0, or
 * -1 when LEVEL is none of those (nothing changes). Call before threads
 * start logging. */
int log_set_level(const char *level);

#endif
