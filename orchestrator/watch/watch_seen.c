/* watch_seen: the old queues' publish counters as the last full pass saw
 * them, which the next full pass compares with queue by queue. They are
 * kept as the watch's result rows ("entries", a row per old queue),
 * written by a full pass and left alone by a light one, so that a tick
 * neither reads nor rewrites 100,000 of them; a state from before kept
 * them in old.seen, still read here. Internal to the watch (watch_int.h);
 * a leaf. */
#include "watch_int.h"

/* qsort's and bsearch's order of two rows: by name. */
static int
cmp_row(const void *a, const void *b)
{
	return strcmp(((const struct seen_row *)a)->name,
	    ((const struct seen_row *)b)->name);
}

/* Appends NAME's counter V (an integer, COUNTER_LOST or null, as
 * watch_seen_value makes them) to S. Returns 0, or -1 out of memory. */
static int
row_add(struct seen_table *s, const char *name, const json_t *v)
{
	struct seen_row *rows;
	size_t cap;

	if (s->n == s->cap) {
		cap = s->cap ? 2 * s->cap : 256;
		if ((rows = realloc(s->v, cap * sizeof(*rows))) == NULL)
			return -1;
		s->v = rows;
		s->cap = cap;
	}
	if ((s->v[s->n].name = strblocks_put(&s->text, name)) == NULL)
		return -1;
	s->v[s->n].kind = json_is_integer(v) ? SEEN_COUNT : json_is_string(v) ?
	    SEEN_LOST : SEEN_NONE;
	s->v[s->n].publish = json_is_integer(v) ? json_integer_value(v) : -1;
	s->n++;
	return 0;
}

/* step_state_each's FN: an element {"name", "publish"} of the last
 * result's "entries" into the table at ARG. */
static int
take_entry(const json_t *e, void *arg)
{
	const char *name = json_string_value(json_object_get(e, "name"));

	if (name == NULL)
		return -1;
	return row_add(arg, name, json_object_get(e, "publish"));
}

int
watch_seen_read(const struct step_ctx *c, struct seen_table *s, char *err,
    size_t errlen)
{
	const json_t *old = json_object_get(c->state, "old"), *v;
	const json_t *n = json_object_get(old, "seen_n");
	const char *name;

	memset(s, 0, sizeof(*s));
	if (json_is_object(json_object_get(old, "seen"))) {
		/* Kept in the state itself, before the rows. */
		json_object_foreach((json_t *)json_object_get(old, "seen"), name, v)
			if (row_add(s, name, v) != 0)
				goto nomem;
		s->have = true;
	} else if (json_is_integer(n)) {
		if (step_state_each(c, "entries", take_entry, s, err, errlen) != 0) {
			watch_seen_free(s);
			return -1;
		}
		/* Rows missing (or extra) would count their queues as new,
		 * or miss them gone: the next pass is a first look instead,
		 * which moves the last entry to now. */
		s->have = s->n == (size_t)json_integer_value(n);
	}
	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), cmp_row);
	return 0;
nomem:
	watch_seen_free(s);
	errbuf_set(err, errlen, "out of memory for the last full pass's counters");
	return -1;
}

const struct seen_row *
watch_seen_find(const struct seen_table *s, const char *name)
{
	struct seen_row key = { .name = name };

	if (s == NULL || s->n == 0)
		return NULL;
	return bsearch(&key, s->v, s->n, sizeof(*s->v), cmp_row);
}

json_t *
watch_seen_value(enum seen_kind kind, int64_t publish)
{
	switch (kind) {
	case SEEN_COUNT:
		return json_integer(publish);
	case SEEN_LOST:
		return json_string(COUNTER_LOST);
	default:
		return json_null();
	}
}

void
watch_seen_free(struct seen_table *s)
{
	free(s->v);
	strblocks_free(&s->text);
	memset(s, 0, sizeof(*s));
}
