/* strblocks: copies of many short strings (queue names) kept in large
 * blocks instead of one allocation each: a table of 100,000 names costs
 * their bytes and a few blocks, and once freed gives its memory back
 * whole instead of leaving small holes between what outlives it. */
#ifndef CUTOVER_STRBLOCKS_H
#define CUTOVER_STRBLOCKS_H

#include <stddef.h>

#define STRBLOCKS_SIZE	65536	/* a block's bytes (a longer string gets
				 * a block of its own) */

struct strblocks;

/* A copy of S in the blocks at *B (NULL at first), which never move: the
 * copy stays where it is until strblocks_free. Returns it, or NULL when
 * out of memory. */
const char *strblocks_put(struct strblocks **b, const char *s);

/* Frees every block at *B and sets *B to NULL. */
void strblocks_free(struct strblocks **b);

#endif
