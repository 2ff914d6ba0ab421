/* sentences: appends "; "-separated clauses to a message buffer. */
#include <stdio.h>
#include <string.h>

#include "sentences.h"

/* Ends BUF (LEN bytes, its text OFF long) in "..." to say that something
 * was cut off: after the text when there is room, over its end when not. */
static void
mark_cut(char *buf, size_t len, size_t off)
{
	static const char cut[] = "...";

	if (len <= sizeof(cut))
		return;
	if (off + sizeof(cut) > len)
		off = len - sizeof(cut);
	memcpy(buf + off, cut, sizeof(cut));
}

void
sentences_vadd(char *buf, size_t len, const char *fmt, va_list ap)
{
	size_t off = strlen(buf);
	int n;

	if (off + 1 >= len)
		return;
	if (off > 0) {
		/* No room for the separator and a letter: the clause is cut
		 * whole. */
		if (off + 3 >= len) {
			mark_cut(buf, len, off);
			return;
		}
		memcpy(buf + off, "; ", 3);
		off += 2;
	}
	n = vsnprintf(buf + off, len - off, fmt, ap);
	/* A clause cut short says so, rather than ending in a word's first
	 * letters that read as part of the message. */
	if (n >= 0 && (size_t)n >= len - off)
		mark_cut(buf, len, len - 1);
}

void
sentences_add(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sentences_vadd(buf, len, fmt, ap);
	va_end(ap);
}
