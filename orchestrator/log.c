/* log: one event per line on stderr, logfmt style. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "log.h"

void
log_event(const char *level, const char *plan, const char *step, const char *fmt, ...)
{
	char msg[1024], line[1400], ts[32];
	struct timespec now;
	struct tm tm;
	va_list ap;
	size_t o = 0;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
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
	fputs(line, stderr);
}
