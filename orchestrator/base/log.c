/* log: one event per line on stderr, logfmt style. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* Levels by severity; a line is written when its level is at least the
 * threshold's. An unknown level is always written. */
static const char *const levels[] = { "debug", "info", "warn", "error" };
static int threshold = 1;

static int
level_rank(const char *level)
{
	for (int i = 0; i < (int)(sizeof(levels) / sizeof(levels[0])); i++)
		if (strcmp(levels[i], level) == 0)
			return i;
	return -1;
}

int
log_set_level(const char *level)
{
	int r = level != NULL ? level_rank(level) : -1;

	if (r < 0)
		return -1;
	threshold = r;
	return 0;
}

void
log_event(const char *level, const char *plan, const char *step, const char *fmt, ...)
{
	/* The second's text, made once a second a thread: gmtime_r takes
	 * the C library's time zone lock, which every thread shares. */
	static _Thread_local time_t ts_sec = -1;
	static _Thread_local char ts[32];
	char msg[1024], line[1400];
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t o = 0;
	int rank = level_rank(level);

	if (rank >= 0 && rank < threshold)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec != ts_sec) {
		gmtime_r(&now.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		ts_sec = now.tv_sec;
	}
	o = (size_t)snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s", ts,
	    now.tv_nsec / 1000000, level);
	if (plan != NULL && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, " plan=%s", plan);
	if (step != NULL && o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, " step=%s", step);
	if (o < sizeof(line))
		o += (size_t)snprintf(line + o, sizeof(line) - o, " msg=\"");
	for (const char *p = msg; *p != '\0' && o + 3 < sizeof(line); p++) {
		if (*p == '"' || *p == '\\') {
			line[o++] = '\\';
			line[o++] = *p;
		} else if (*p == '\n')
			line[o++] = ' ';
		else
			line[o++] = *p;
	}
	if (o + 2 >= sizeof(line))
		o = sizeof(line) - 3;
	line[o++] = '"';
	line[o++] = '\n';
	line[o] = '\0';
	/* write, not stdio: a line goes out in one call, whole among other
	 * threads' lines, without their waiting on stderr's lock. A line that
	 * cannot be written has nowhere else to go. */
	for (size_t off = 0; off < o;) {
		ssize_t n = write(STDERR_FILENO, line + off, o - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
}
