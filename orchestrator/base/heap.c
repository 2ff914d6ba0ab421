/* heap: malloc's settings for a long-running cutover process. */
#include <malloc.h>
#include <stdlib.h>

#include "heap.h"

void
heap_bound_maps(void)
{
	mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_MIN);
}

void
heap_fit(void **v, size_t n, size_t *cap, size_t size)
{
	void *nv;

	if (n == 0 || n >= *cap || (nv = realloc(*v, n * size)) == NULL)
		return;
	*v = nv;
	*cap = n;
}
