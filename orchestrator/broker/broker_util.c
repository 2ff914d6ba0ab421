/* broker_util: the small helpers every part of the AMQP client uses (see
 * broker_int.h): copying the broker's bytes, and the 255-byte limit on
 * names. The error buffer and the clock are errbuf.h's and clock.h's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

char *
broker__dup_bytes(amqp_bytes_t b)
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
broker__bytes_text(amqp_bytes_t b, char *buf, size_t len)
{
	if (b.len == 0 || b.bytes == NULL)
		buf[0] = '\0';
	else
		snprintf(buf, len, "%.*s", (int)(b.len < len ? b.len : len - 1),
		    (const char *)b.bytes);
	return buf;
}

bool
broker__bytes_is(amqp_bytes_t b, const char *s)
{
	size_t n = strlen(s);

	return b.len == n && (n == 0 || memcmp(b.bytes, s, n) == 0);
}

/* AMQP short strings (names, keys) hold at most 255 bytes. */
int
broker__check_name(const char *kind, const char *name, bool empty_ok, char *err,
    size_t errlen)
{
	if (name == NULL || (!empty_ok && name[0] == '\0')) {
		errbuf_set(err, errlen, "%s: a name is required", kind);
		return BROKER_ERR;
	}
	if (strlen(name) > 255) {
		errbuf_set(err, errlen, "%s '%.40s...': longer than 255 bytes",
		    kind, name);
		return BROKER_ERR;
	}
	return 0;
}

int
broker__named(const char *kind, const char *name, char *what, size_t whatlen,
    char *err, size_t errlen)
{
	int rc;

	if ((rc = broker__check_name(kind, name, false, err, errlen)) != 0)
		return rc;
	snprintf(what, whatlen, "%s '%s'", kind, name);
	return 0;
}
