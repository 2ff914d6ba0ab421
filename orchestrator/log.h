/* log: one line per event on stderr, `ts=… level=… plan=… step=… msg="…"`,
 * the format operators grep and log shippers parse. Never give it a secret. */
#ifndef CUTOVER_LOG_H
#define CUTOVER_LOG_H

/* Writes one line: LEVEL ("info", "warn", "error"), PLAN and STEP (either
 * may be NULL and is then left out), and the message built from FMT, with
 * quotes and newlines escaped so a line stays one line. */
void log_event(const char *level, const char *plan, const char *step,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
