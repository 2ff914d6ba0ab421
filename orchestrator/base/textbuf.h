/* textbuf: a text that grows as it is written (the metrics page, the
 * history's CSV, the samples' JSON), and the growing itself for the
 * buffers that keep their own fields (an HTTP body gathered with a
 * limit). One place doubles a buffer and remembers that memory ran out. */
#ifndef CUTOVER_TEXTBUF_H
#define CUTOVER_TEXTBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define TEXTBUF_FIRST	4096	/* the first allocation when FIRST is 0 */

/* Zero-initialise (FIRST may be set first); free P when done. */
struct textbuf {
	char *p;		/* NUL-terminated once anything is written;
				 * owned; NULL until then */
	size_t len, cap;
	size_t first;		/* the first allocation (0: TEXTBUF_FIRST);
				 * each growth doubles */
	bool failed;		/* memory ran out: what follows is not
				 * written, and the text is not whole */
};

/* Grows the malloc'ed *P of *CAP bytes (NULL and 0 at first) to hold
 * NEED bytes: FIRST bytes (when *CAP is 0) doubled until they do, but no
 * more than LIMIT when LIMIT is enough (0: no limit). Returns 0 (nothing
 * done when *CAP already holds NEED), or -1 with *P and *CAP as they were
 * when memory runs out. */
int textbuf_grow(char **p, size_t *cap, size_t need, size_t first, size_t limit);

/* Makes room in T for N more bytes and a NUL. Returns 0, or -1 once T has
 * failed (now or before). */
int textbuf_room(struct textbuf *t, size_t n);

/* Appends the N bytes at S to T (nothing once T has failed). Inline: the
 * samples' JSON is written a character at a time. */
static inline void
textbuf_put(struct textbuf *t, const char *s, size_t n)
{
	if (t->failed || t->len + n + 1 > t->cap) {
		if (textbuf_room(t, n) != 0)
			return;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
	t->p[t->len] = '\0';
}

/* Appends FMT's text to T (nothing once T has failed; a format error
 * fails T). */
void textbuf_printf(struct textbuf *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
