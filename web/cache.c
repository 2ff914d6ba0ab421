/* cache: read answers kept until the database changes. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

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
	c->bytes -= e->body != NULL ? e->len : 0;
	free(e->body);
	e->body = NULL;
	e->len = 0;
}

char *
cache_get(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, size_t *len)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++) {
		struct cache_entry *e = &c->e[i];
		char *copy;

		if (!is_answer_to(e, route, plan_id, key) || e->version != version)
			continue;
		if ((copy = malloc(e->len + 1)) == NULL)
			return NULL;
		memcpy(copy, e->body, e->len);
		copy[e->len] = '\0';
		*len = e->len;
		return copy;
	}
	return NULL;
}

void
cache_put(struct cache *c, int route, int64_t plan_id, const char *key,
    uint64_t version, const char *body, size_t len)
{
	struct cache_entry *e = NULL;
	char *copy;

	if (len > CACHE_BYTES_MAX || strlen(key) >= CACHE_KEY_MAX)
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
	for (size_t i = 0; i < CACHE_ENTRIES && c->bytes + len > CACHE_BYTES_MAX; i++)
		drop(c, &c->e[(c->next + i) % CACHE_ENTRIES]);
	if ((copy = malloc(len)) == NULL)
		return;
	memcpy(copy, body, len);
	e->route = route;
	e->plan_id = plan_id;
	strcpy(e->key, key);
	e->version = version;
	e->body = copy;
	e->len = len;
	c->bytes += len;
}

void
cache_clear(struct cache *c)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++)
		drop(c, &c->e[i]);
	c->next = 0;
}
