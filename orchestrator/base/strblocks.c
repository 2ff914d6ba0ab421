/* strblocks: short strings copied into large blocks (strblocks.h). */
#include <stdlib.h>
#include <string.h>

#include "strblocks.h"

struct strblocks {
	struct strblocks *next;
	size_t len, cap;
	char s[];
};

const char *
strblocks_put(struct strblocks **b, const char *s)
{
	struct strblocks *k = *b;
	size_t n = strlen(s) + 1;

	if (k == NULL || k->cap - k->len < n) {
		size_t cap = n > STRBLOCKS_SIZE ? n : STRBLOCKS_SIZE;

		if ((k = malloc(sizeof(*k) + cap)) == NULL)
			return NULL;
		k->next = *b;
		k->len = 0;
		k->cap = cap;
		*b = k;
	}
	memcpy(k->s + k->len, s, n);
	k->len += n;
	return k->s + k->len - n;
}

void
strblocks_free(struct strblocks **b)
{
	while (*b != NULL) {
		struct strblocks *next = (*b)->next;

		free(*b);
		*b = next;
	}
}
