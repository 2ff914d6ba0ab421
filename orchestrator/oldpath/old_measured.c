/* old_measured: measure_horizon's old queues as a table read once and
 * looked up by name at each of the watch's ticks: each queue's name, its
 * type and the queues it dead-letters into, in two arrays and blocks of
 * text, instead of the result's JSON entries (a jansson object of a dozen
 * members costs about 1.4 KB a queue; an entry here 32 bytes and its
 * strings). */
#include <stdlib.h>
#include <string.h>

#include "old_path.h"

/* qsort and bsearch order of struct old_measured_queue: by name. */
static int
cmp_queue(const void *a, const void *b)
{
	return strcmp(((const struct old_measured_queue *)a)->name,
	    ((const struct old_measured_queue *)b)->name);
}

/* The text block every string of a table is copied into: blocks that
 * never move, so that the strings stay where the entries point. */
#define TEXT_BLOCK 65536

struct old_measured_text {
	struct old_measured_text *next;
	size_t len, cap;
	char s[];
};

/* A copy of S in M's text, or NULL when out of memory. */
static const char *
text_put(struct old_measured *m, const char *s)
{
	struct old_measured_text *b = m->text;
	size_t n = strlen(s) + 1;

	if (b == NULL || b->cap - b->len < n) {
		size_t cap = n > TEXT_BLOCK ? n : TEXT_BLOCK;

		if ((b = malloc(sizeof(*b) + cap)) == NULL)
			return NULL;
		b->next = m->text;
		b->len = 0;
		b->cap = cap;
		m->text = b;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	return b->s + b->len - n;
}

/* The next capacity of an array of CAP elements. */
static size_t
next_cap(size_t cap)
{
	return cap > 0 ? 2 * cap : 64;
}

/* Makes room in M for one more queue. Returns 0 or -1 (out of memory). */
static int
room_queue(struct old_measured *m)
{
	struct old_measured_queue *v;

	if (m->n < m->cap)
		return 0;
	if ((v = realloc(m->v, next_cap(m->cap) * sizeof(*v))) == NULL)
		return -1;
	m->v = v;
	m->cap = next_cap(m->cap);
	return 0;
}

/* Makes room in M for one more dead-letter target. Returns 0 or -1. */
static int
room_target(struct old_measured *m)
{
	const char **to;

	if (m->nto < m->capto)
		return 0;
	if ((to = realloc(m->to, next_cap(m->capto) * sizeof(*to))) == NULL)
		return -1;
	m->to = to;
	m->capto = next_cap(m->capto);
	return 0;
}

int
old_measured_add(struct old_measured *m, const json_t *e)
{
	const json_t *name = json_object_get(e, "name"), *type = json_object_get(e, "type"), *d;
	struct old_measured_queue *q;
	const char *t;
	size_t i;

	if (!json_is_string(name))
		return 0;
	if (room_queue(m) != 0)
		return -1;
	q = &m->v[m->n];
	memset(q, 0, sizeof(*q));
	if ((q->name = text_put(m, json_string_value(name))) == NULL ||
	    (json_is_string(type) && (q->type = text_put(m, json_string_value(type))) == NULL))
		return -1;
	json_array_foreach(json_object_get(e, "dead_letters_to"), i, d) {
		if (!json_is_string(d))
			continue;
		if (room_target(m) != 0 || (t = text_put(m, json_string_value(d))) == NULL)
			return -1;
		m->to[m->nto++] = t;
		q->nto++;
	}
	m->n++;
	return 0;
}

void
old_measured_end(struct old_measured *m)
{
	size_t at = 0;

	/* The targets were appended queue by queue: each one's start is the
	 * sum of those before, now that the array no longer moves. */
	for (size_t i = 0; i < m->n && m->to != NULL; i++) {
		m->v[i].to = m->to + at;
		at += m->v[i].nto;
	}
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_queue);
}

int
old_measured_read(const json_t *measured, struct old_measured *m)
{
	const json_t *e;
	size_t i;

	memset(m, 0, sizeof(*m));
	json_array_foreach(json_object_get(measured, "queues"), i, e)
		if (old_measured_add(m, e) != 0) {
			old_measured_free(m);
			return -1;
		}
	old_measured_end(m);
	return 0;
}

const struct old_measured_queue *
old_measured_find(const struct old_measured *m, const char *name)
{
	struct old_measured_queue key = { .name = name };

	if (m == NULL || m->n == 0)
		return NULL;
	return bsearch(&key, m->v, m->n, sizeof(*m->v), cmp_queue);
}

void
old_measured_free(struct old_measured *m)
{
	if (m == NULL)
		return;
	free(m->v);
	free(m->to);
	while (m->text != NULL) {
		struct old_measured_text *next = m->text->next;

		free(m->text);
		m->text = next;
	}
	memset(m, 0, sizeof(*m));
}

void
old_inputs_free(struct old_inputs *in)
{
	if (in == NULL)
		return;
	json_decref(in->measured);
	json_decref(in->moved);
	old_measured_free(&in->queues);
	free(in);
}
