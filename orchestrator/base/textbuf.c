/* textbuf: a growing text, and the doubling of a buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textbuf.h"

int
textbuf_grow(char **p, size_t *cap, size_t need, size_t first, size_t limit)
{
	size_t c = *cap != 0 ? *cap : first;
	char *grown;

	if (need <= *cap)
		return 0;
	while (c < need)
		c *= 2;
	if (limit != 0 && need <= limit && c > limit)
		c = limit;
	if ((grown = realloc(*p, c)) == NULL)
		return -1;
	*p = grown;
	*cap = c;
	return 0;
}

int
textbuf_room(struct textbuf *t, size_t n)
{
	if (t->failed)
		return -1;
	if (textbuf_grow(&t->p, &t->cap, t->len + n + 1,
	    t->first != 0 ? t->first : TEXTBUF_FIRST, 0) != 0) {
		t->failed = true;
		return -1;
	}
	return 0;
}

void
textbuf_printf(struct textbuf *t, const char *fmt, ...)
{
	va_list ap;
	int k;

	/* Written where it goes when it fits; else measured, and written
	 * again once there is room. */
	if (textbuf_room(t, 0) != 0)
		return;
	va_start(ap, fmt);
	k = vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	if (k < 0) {
		t->failed = true;
		return;
	}
	if ((size_t)k >= t->cap - t->len) {
		if (textbuf_room(t, (size_t)k) != 0)
			return;
		va_start(ap, fmt);
		vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += (size_t)k;
}
