/* cache: answers of the read API kept per store connection until the
 * database changes (store_version). A plan's document or history costs a
 * few queries and, for the history, re-hashing the whole event chain; a
 * page that refreshes every few seconds, or many readers, should not pay
 * that each time nothing has changed. */
#ifndef CUTOVER_CACHE_H
#define CUTOVER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define CACHE_ENTRIES 8

struct cache_entry {
	int route;                /* api_target.route */
	int64_t plan_id;
	uint64_t version;         /* store_version when it was built */
	char *body;               /* owned */
	size_t len;
};

struct cache {
	struct cache_entry e[CACHE_ENTRIES];
	size_t next;              /* the entry replaced next */
};

/* Looks up the answer to ROUTE/PLAN_ID built at VERSION. Returns a new
 * malloc'd copy of its body (length in *LEN) for the caller to own, or NULL
 * when there is none (or no memory). */
char *cache_get(struct cache *c, int route, int64_t plan_id, uint64_t version,
    size_t *len);

/* Keeps a copy of BODY (LEN bytes) as the answer to ROUTE/PLAN_ID at
 * VERSION, replacing an older one of the same route and plan, or the
 * oldest entry. Silently keeps nothing when out of memory. */
void cache_put(struct cache *c, int route, int64_t plan_id, uint64_t version,
    const char *body, size_t len);

/* Frees every entry. */
void cache_clear(struct cache *c);

#endif
