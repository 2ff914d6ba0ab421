/* cache: read answers kept until the database changes. */
#include <stdlib.h>
#include <string.h>

#include "cache.h"

char *
cache_get(struct cache *c, int route, int64_t plan_id, uint64_t version, size_t *len)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++) {
		struct cache_entry *e = &c->e[i];
		char *copy;

		if (e->body == NULL || e->route != route || e->plan_id != plan_id ||
		    e->version != version)
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
cache_put(struct cache *c, int route, int64_t plan_id, uint64_t version,
    const char *body, size_t len)
{
	struct cache_entry *e = NULL;
	char *copy;

	for (size_t i = 0; i < CACHE_ENTRIES && e == NULL; i++)
		if (c->e[i].body != NULL && c->e[i].route == route &&
		    c->e[i].plan_id == plan_id)
			e = &c->e[i];
	if (e == NULL) {
		e = &c->e[c->next];
		c->next = (c->next + 1) % CACHE_ENTRIES;
	}
	if ((copy = malloc(len)) == NULL)
		return;
	memcpy(copy, body, len);
	free(e->body);
	e->route = route;
	e->plan_id = plan_id;
	e->version = version;
	e->body = copy;
	e->len = len;
}

void
cache_clear(struct cache *c)
{
	for (size_t i = 0; i < CACHE_ENTRIES; i++) {
		free(c->e[i].body);
		c->e[i].body = NULL;
	}
	c->next = 0;
}
