/* broker_util: the small helpers every part of the AMQP client uses (see
 * broker_int.h): the error buffer, the monotonic clock, copying the
 * broker's bytes, and the 255-byte limit on names. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "broker_int.h"

void
seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

char *
dup_bytes(amqp_bytes_t b)
{
	char *s;

	if ((s = malloc(b.len + 1)) == NULL)
		return NULL;
	if (b.len > 0)
		memcpy(s, b.bytes, b.len);
	s[b.len] = '\0';
	return s;
}

/* Copies B, text from the broker, into BUF as a C string. */
const char *
bytes_text(amqp_bytes_t b, char *buf, size_t len)
{
	if (b.len == 0 || b.bytes == NULL)
		buf[0] = '\0';
	else
		snprintf(buf, len, "%.*s", (int)(b.len < len ? b.len : len - 1),
		    (const char *)b.bytes);
	return buf;
}

bool
bytes_is(amqp_bytes_t b, const char *s)
{
	size_t n = strlen(s);

	return b.len == n && (n == 0 || memcmp(b.bytes, s, n) == 0);
}

/* AMQP short strings (names, keys) hold at most 255 bytes. */
int
check_name(const char *kind, const char *name, bool empty_ok, char *err,
    size_t errlen)
{
	if (name == NULL || (!empty_ok && name[0] == '\0')) {
		seterr(err, errlen, "%s: a name is required", kind);
		return BROKER_ERR;
	}
	if (strlen(name) > 255) {
		seterr(err, errlen, "%s '%.40s...': longer than 255 bytes",
		    kind, name);
		return BROKER_ERR;
	}
	return 0;
}
