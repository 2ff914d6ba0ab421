/* httpbody: gathering an HTTP answer's body with a limit. */
#include <stdlib.h>
#include <string.h>

#include "httpbody.h"

size_t
httpbody_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct httpbody *b = arg;
	size_t n = size * nmemb, cap;
	char *p;

	if (nmemb != 0 && n / nmemb != size)
		return 0;
	if (n > b->max || b->len + n > b->max) {
		b->toobig = 1;
		return 0;
	}
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 8192;
		while (cap < b->len + n + 1)
			cap *= 2;
		if ((p = realloc(b->p, cap)) == NULL) {
			b->nomem = 1;
			return 0;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

void
httpbody_reset(struct httpbody *b)
{
	b->len = 0;
	b->toobig = b->nomem = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}
