/* old_measured: measure_horizon's and move_old's old queues as tables
 * read once and looked up by name (at each of the watch's ticks, for each
 * queue remove_old weighs): of each queue what those readers need, in
 * arrays and blocks of text, instead of the results' JSON entries (a
 * jansson object of a dozen members costs about 1.4 KB a queue; an entry
 * here under 100 bytes and its strings). */
#include <stdlib.h>
#include <string.h>

#include "old_path.h"
#include "strblocks.h"

/* qsort and bsearch order of both tables' entries: by name, their first
 * member. */
static int
cmp_measured(const void *a, const void *b)
{
	return strcmp(((const struct old_measured_queue *)a)->name,
	    ((const struct old_measured_queue *)b)->name);
}

static int
cmp_moved(const void *a, const void *b)
{
	return strcmp(((const struct old_moved_queue *)a)->name,
	    ((const struct old_moved_queue *)b)->name);
}

/* Makes room in the array at *V (N elements of SIZE used of *CAP) for one
 * more. A grown array moves: nothing may hold a pointer into it until the
 * table's _end. Returns 0 or -1 (out of memory). */
static int
room(void **v, size_t n, size_t *cap, size_t size)
{
	size_t want = *cap > 0 ? 2 * *cap : 64;
	void *nv;

	if (n < *cap)
		return 0;
	if ((nv = realloc(*v, want * size)) == NULL)
		return -1;
	*v = nv;
	*cap = want;
	return 0;
}

/* An integer member KEY of E, or DFLT when it is not one. */
static int64_t
int_or(const json_t *e, const char *key, int64_t dflt)
{
	const json_t *v = json_object_get(e, key);

	return json_is_integer(v) ? json_integer_value(v) : dflt;
}

/* Appends the string elements of E's array KEY to M's names. Returns how
 * many, or -1 when out of memory. */
static long
names_add(struct old_measured *m, const json_t *e, const char *key)
{
	const json_t *d;
	const char *t;
	size_t i;
	long n = 0;

	json_array_foreach(json_object_get(e, key), i, d) {
		if (!json_is_string(d))
			continue;
		if (room((void **)&m->to, m->nto, &m->capto, sizeof(*m->to)) != 0 ||
		    (t = strblocks_put(&m->text, json_string_value(d))) == NULL)
			return -1;
		m->to[m->nto++] = t;
		n++;
	}
	return n;
}

int
old_measured_add(struct old_measured *m, const json_t *e)
{
	const json_t *name = json_object_get(e, "name"), *type = json_object_get(e, "type");
	struct old_measured_queue *q;
	long nto, nfed;

	if (!json_is_string(name))
		return 0;
	if (room((void **)&m->v, m->n, &m->cap, sizeof(*m->v)) != 0)
		return -1;
	q = &m->v[m->n];
	memset(q, 0, sizeof(*q));
	if ((q->name = strblocks_put(&m->text, json_string_value(name))) == NULL)
		return -1;
	/* The queues of an old path are mostly of one type: the copy the
	 * queue before holds serves. */
	if (json_is_string(type) && m->n > 0 && m->v[m->n - 1].type != NULL &&
	    strcmp(m->v[m->n - 1].type, json_string_value(type)) == 0)
		q->type = m->v[m->n - 1].type;
	else if (json_is_string(type) &&
	    (q->type = strblocks_put(&m->text, json_string_value(type))) == NULL)
		return -1;
	/* Its targets, then its feeders, after the queues before it. */
	if ((nto = names_add(m, e, "dead_letters_to")) < 0 ||
	    (nfed = names_add(m, e, "fed_by")) < 0)
		return -1;
	q->nto = (size_t)nto;
	q->nfed = (size_t)nfed;
	q->ttl_ms = int_or(e, "ttl_ms", -1);
	q->chain_ttl_ms = int_or(e, "chain_ttl_ms", -1);
	q->ord = m->n++;
	return 0;
}

void
old_measured_end(struct old_measured *m)
{
	size_t at = 0;

	/* The names were appended queue by queue: each one's start is the
	 * sum of those before, now that the array no longer moves. */
	for (size_t i = 0; i < m->n && m->to != NULL; i++) {
		m->v[i].to = m->to + at;
		at += m->v[i].nto;
		m->v[i].fed_by = m->to + at;
		at += m->v[i].nfed;
	}
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_measured);
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
	return bsearch(&key, m->v, m->n, sizeof(*m->v), cmp_measured);
}

void
old_measured_free(struct old_measured *m)
{
	if (m == NULL)
		return;
	free(m->v);
	free(m->to);
	strblocks_free(&m->text);
	memset(m, 0, sizeof(*m));
}

int
old_moved_add(struct old_moved *m, const json_t *e)
{
	const json_t *name = json_object_get(e, "name");
	const struct old_measured_queue *mq;
	struct old_moved_queue *q;

	if (!json_is_string(name))
		return 0;
	if (room((void **)&m->v, m->n, &m->cap, sizeof(*m->v)) != 0)
		return -1;
	q = &m->v[m->n];
	*q = (struct old_moved_queue){
		.ttl_ms = int_or(e, "ttl_ms", -1),
		.skipped = int_or(e, "skipped", 0),
		.pass_done = int_or(e, "pass_done", 0),
		.left = int_or(e, "left", 0),
		.left_until_ms = int_or(e, "left_until_ms", -1),
		.skipped_why = json_object_get(e, "skipped_why") != NULL,
	};
	if ((mq = old_measured_find(m->names_from, json_string_value(name))) != NULL)
		q->name = mq->name;
	else if ((q->name = strblocks_put(&m->text, json_string_value(name))) == NULL)
		return -1;
	m->n++;
	return 0;
}

void
old_moved_end(struct old_moved *m)
{
	if (m->n > 1)
		qsort(m->v, m->n, sizeof(*m->v), cmp_moved);
}

int
old_moved_read(const json_t *moved, struct old_moved *m)
{
	const json_t *e;
	size_t i;

	memset(m, 0, sizeof(*m));
	json_array_foreach(json_object_get(moved, "queues"), i, e)
		if (old_moved_add(m, e) != 0) {
			old_moved_free(m);
			return -1;
		}
	old_moved_end(m);
	return 0;
}

const struct old_moved_queue *
old_moved_find(const struct old_moved *m, const char *name)
{
	struct old_moved_queue key = { .name = name };

	if (m == NULL || m->n == 0)
		return NULL;
	return bsearch(&key, m->v, m->n, sizeof(*m->v), cmp_moved);
}

void
old_moved_free(struct old_moved *m)
{
	if (m == NULL)
		return;
	free(m->v);
	strblocks_free(&m->text);
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
	old_moved_free(&in->moved_queues);
	free(in);
}
