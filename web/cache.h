/* cache: answers of the read API kept per store connection until the
 * database changes (store_version). A plan's document or history costs a
 * few queries and, for the history, re-hashing the whole event chain; a
 * page of samples, thousands of rows; a page that refreshes every few
 * seconds, or many readers, should not pay that each time nothing has
 * changed. A kept answer is shared, not copied: every response sending it
 * holds a reference (cache_body), so that 64 readers of a 370 KB page of
 * samples hold one copy, not 64. Bounded in entries and in bytes. */
#ifndef CUTOVER_CACHE_H
#define CUTOVER_CACHE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define CACHE_ENTRIES	16
#define CACHE_BYTES_MAX	(2 * 1024 * 1024)	/* bodies kept per cache (a
						 * page of samples: 370 KB) */
#define CACHE_KEY_MAX	96	/* the query's part of a key (api_cache_key) */

/* An answer's body, shared by the cache and the responses sending it;
 * freed with its last reference. */
struct cache_body {
	atomic_size_t refs;
	size_t len;
	char *data;		/* owned; NUL-terminated after LEN bytes */
};

struct cache_entry {
	int route;                /* api_target.route */
	int64_t plan_id;
	char key[CACHE_KEY_MAX];  /* the query's part: api_cache_key */
	uint64_t version;         /* store_version when it was built */
	struct cache_body *body;  /* a reference, or NULL: a free entry */
};

struct cache {
	struct cache_entry e[CACHE_ENTRIES];
	size_t next;              /* the entry replaced next */
	size_t bytes;             /* the bodies' bytes */
};

/* A body of LEN bytes at DATA (malloc'd, NUL-terminated; taken, freed
 * with the body, or at once when this fails) with one reference, the
 * caller's. Returns NULL when out of memory. */
struct cache_body *cache_body_new(char *data, size_t len);

/* Takes one more reference to B. */
void cache_body_hold(struct cache_body *b);

/* Gives back a reference to B (NULL is fine); the last frees it. Any
 * thread may give one back. */
void cache_body_release(struct cache_body *b);

/* The answer to ROUTE/PLAN_ID/KEY built at VERSION, as a reference for
 * the caller to give back, or NULL when there is none. */
struct cache_body *cache_get(struct cache *c, int route, int64_t plan_id,
    const char *key, uint64_t version);

/* Keeps B (a reference of its own) as the answer to ROUTE/PLAN_ID/KEY at
 * VERSION, replacing an older one of the same route, plan and key, or the
 * oldest entry, then the oldest others until the bodies fit in
 * CACHE_BYTES_MAX. Keeps nothing when B alone is larger than that. */
void cache_put(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, struct cache_body *b);

/* Gives back every entry. */
void cache_clear(struct cache *c);

#endif
