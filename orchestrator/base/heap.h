/* heap: how cutover asks malloc to hold its memory, in serve and in the
 * benchmarks that measure what serve's steps cost. */
#ifndef CUTOVER_HEAP_H
#define CUTOVER_HEAP_H

/* The smallest block malloc maps on its own: 128 KiB, glibc's default
 * before it adapts. */
#define HEAP_MMAP_MIN	(128 * 1024)

/* Makes every block of HEAP_MMAP_MIN or more a mapping of its own, given
 * back when freed. glibc would otherwise raise that bound to the largest
 * block freed so far, and a large block read once (a plan's document, a
 * table of 100,000 old queues) would then come from the heap or a
 * thread's arena and stay there as holes: the process's memory would be
 * the sum of its threads' peaks, not its largest. Call once, first. */
void heap_bound_maps(void);

#endif
