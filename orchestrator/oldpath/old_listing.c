/* old_listing: a statistics listing of the vhost's queues read into a
 * table of the few figures the watch uses (old_path.h), one queue at a
 * time as the management API's answers arrive, so that the listing's
 * JSON is never held whole. */
#include <stdlib.h>
#include <string.h>

#include "old_path.h"
#include "strblocks.h"

static int64_t
int_or(const json_t *j, int64_t dflt)
{
	return json_is_integer(j) ? (int64_t)json_integer_value(j) : dflt;
}

static int
cmp_listed(const void *a, const void *b)
{
	return strcmp(((const struct old_listed *)a)->name,
	    ((const struct old_listed *)b)->name);
}

/* mgmt_list_queues_each's callback: queue IT (named: mgmt checked it, in
 * name order) into the table ARG. */
static int
listed_add(void *arg, json_t *it, char *err, size_t errlen)
{
	struct old_listing *l = arg;
	struct old_listed *e;
	const char *name = json_string_value(json_object_get(it, "name"));

	if (name == NULL)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap > 0 ? 2 * l->cap : 1024;
		struct old_listed *v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL)
			goto nomem;
		l->v = v;
		l->cap = cap;
	}
	e = &l->v[l->n];
	if ((e->name = strblocks_put(&l->text, name)) == NULL)
		goto nomem;
	e->messages = int_or(json_object_get(it, "messages"), -1);
	e->publish = int_or(json_object_get(json_object_get(it, "message_stats"),
	    "publish"), -1);
	e->ttl_ms = int_or(json_object_get(json_object_get(it, "arguments"),
	    "x-message-ttl"), -1);
	e->dlx = int_or(json_object_get(it, "messages_dlx"), -1);
	e->head_ts = int_or(json_object_get(it, "head_message_timestamp"), -1);
	l->n++;
	return 0;
nomem:
	errbuf_set(err, errlen, "listing the queues: out of memory");
	return MGMT_ERR_NOMEM;
}

int
old_listing_read(struct mgmt *m, const char *columns, struct old_listing *l,
    char *err, size_t errlen)
{
	int rc;

	memset(l, 0, sizeof(*l));
	if ((rc = mgmt_list_queues_each(m, columns, listed_add, l, err, errlen)) != 0)
		old_listing_free(l);
	return rc;
}

const struct old_listed *
old_listing_find(const struct old_listing *l, const char *name)
{
	struct old_listed key = { .name = name };

	if (l->n == 0)
		return NULL;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), cmp_listed);
}

void
old_listing_free(struct old_listing *l)
{
	free(l->v);
	strblocks_free(&l->text);
	memset(l, 0, sizeof(*l));
}
