/* cache: read answers kept until the database changes, their bodies
 * shared with the responses that send them. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

struct cache_body *
cache_body_new(char *data, size_t len)
{
	struct cache_body *b = malloc(sizeof(*b));

	if (b == NULL) {
		free(data);
		return NULL;
	}
	atomic_init(&b->refs, 1);
	b->len = len;
	b->data = data;
	return b;
}

void
cache_body_hold(struct cache_body *b)
{
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
}

void
cache_body_release(struct cache_body *b)
{
	/* acq_rel: the thread that frees sees every other one's last use */
	if (b == NULL || atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) != 1)
		return;
	free(b->data);
	free(b);
}

/* Whether E holds the answer to ROUTE/PLAN_ID/KEY (at any version). */
static int
is_answer_to(const struct cache_entry *e, int route, int64_t plan_id, const char *key)
{
	return e->body != NULL && e->route == route && e->plan_id == plan_id &&
	    strcmp(e->key, key) == 0;
}

/* Empties E, counting its bytes out of C. */
static void
drop(struct cache *c, struct cache_entry *e)
{
	if (e->body == NULL)
		return;
	c->bytes -= e->body->len;
	cache_body_release(e->body);
	e->body = NULL;
}

struct cache_body *
cache_get(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++) {
		struct cache_entry *e = &c->e[i];

		if (!is_answer_to(e, route, plan_id, key) || e->version != version)
			continue;
		cache_body_hold(e->body);
		return e->body;
	}
	return NULL;
}

void
cache_put(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, struct cache_body *b)
{
	struct cache_entry *e = NULL;

	if (b->len > CACHE_BYTES_MAX || strlen(key) >= CACHE_KEY_MAX)
		return;
	for (size_t i = 0; i < CACHE_ENTRIES && e == NULL; i++)
		if (is_answer_to(&c->e[i], route, plan_id, key))
			e = &c->e[i];
	if (e == NULL) {
		e = &c->e[c->next];
		c->next = (c->next + 1) % CACHE_ENTRIES;
	}
	drop(c, e);
	/* The oldest others go until this one fits. */
	for (size_t i = 0; i < CACHE_ENTRIES && c->bytes + b->len > CACHE_BYTES_MAX; i++)
		drop(c, &c->e[(c->next + i) % CACHE_ENTRIES]);
	cache_body_hold(b);
	e->route = route;
	e->plan_id = plan_id;
	strcpy(e->key, key);
	e->version = version;
	e->body = b;
	c->bytes += b->len;
}

void
cache_clear(struct cache *c)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++)
		drop(c, &c->e[i]);
	c->next = 0;
}
