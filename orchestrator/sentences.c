/* sentences: appends "; "-separated clauses to a message buffer. */
#include <stdio.h>
#include <string.h>

#include "sentences.h"

void
sentences_vadd(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t off = strlen(buf);

	if (off > 0 && off + 2 < len) {
		memcpy(buf + off, "; ", 3);
		off += 2;
	}
	if (off + 1 >= len)
		return;
	vsnprintf(buf + off, len - off, fmt, ap);
}

void
sentences_add(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sentences_vadd(buf, len, fmt, ap);
	va_end(ap);
}
