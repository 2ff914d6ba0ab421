/* heap: malloc's settings for a long-running cutover process. */
#include <malloc.h>

#include "heap.h"

void
heap_bound_maps(void)
{
	mallopt(M_MMAP_THRESHOLD, HEAP_MMAP_MIN);
}
