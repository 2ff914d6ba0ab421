/* errbuf: formats an error message into a caller's buffer. */
#include <stdio.h>

#include "errbuf.h"

void
errbuf_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
	if (err == NULL || errlen == 0)
		return;
	vsnprintf(err, errlen, fmt, ap);
}

void
errbuf_set(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	errbuf_vset(err, errlen, fmt, ap);
	va_end(ap);
}
