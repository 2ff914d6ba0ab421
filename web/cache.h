/* cache: answers of the read API kept per store connection until the
 * database changes (store_version). A plan's document or history costs a
 * few queries and, for the history, re-hashing the whole event chain; a
 * page of samples, thousands of rows; a page that refreshes every few
 * seconds, or many readers, should not pay that each time nothing has
 * changed. Bounded in entries and in bytes, so that what readers ask for
 * cannot grow serve's memory. */
#ifndef CUTOVER_CACHE_H
#define CUTOVER_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define CACHE_ENTRIES	16
#define CACHE_BYTES_MAX	(4 * 1024 * 1024)	/* bodies kept per cache: a
						 * 12-day watch's samples are
						 * 15 pages of 370 KB */
#define CACHE_KEY_MAX	96	/* the query's part of a key (api_cache_key) */

struct cache_entry {
	int route;                /* api_target.route */
	int64_t plan_id;
	char key[CACHE_KEY_MAX];  /* the query's part: api_cache_key */
	uint64_t version;         /* store_version when it was built */
	char *body;               /* owned */
	size_t len;
};

struct cache {
	struct cache_entry e[CACHE_ENTRIES];
	size_t next;              /* the entry replaced next */
	size_t bytes;             /* the bodies' bytes */
};

/* Looks up the answer to ROUTE/PLAN_ID/KEY built at VERSION. Returns a new
 * malloc'd copy of its body (length in *LEN) for the caller to own, or NULL
 * when there is none (or no memory). */
char *cache_get(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, size_t *len);

/* Keeps a copy of BODY (LEN bytes) as the answer to ROUTE/PLAN_ID/KEY at
 * VERSION, replacing an older one of the same route, plan and key, or the
 * oldest entry, then the oldest others until the bodies fit in
 * CACHE_BYTES_MAX. Keeps nothing when BODY alone is larger than that, or
 * when out of memory. */
void cache_put(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, const char *body, size_t len);

/* Frees every entry. */
void cache_clear(struct cache *c);

#endif
