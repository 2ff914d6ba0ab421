/* errbuf: formats an error message into a caller's buffer, and takes a
 * secret out of one. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errbuf.h"

void
errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err == NULL || errlen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

void
errbuf_redact(char *s, const char *secret)
{
	size_t sl, n;
	char *p = s;

	if (s == NULL || secret == NULL || (sl = strlen(secret)) == 0)
		return;
	while ((p = strstr(p, secret)) != NULL) {
		n = sl < 3 ? sl : 3;
		memset(p, '*', n);
		memmove(p + n, p + sl, strlen(p + sl) + 1);
		p += n;
	}
}
