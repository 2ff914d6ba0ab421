/* old_measured: measure_horizon's old queues as a table read once and
 * looked up by name at each of the watch's ticks: each queue's name, its
 * type and the queues it dead-letters into, in two allocations, instead of
 * the result's JSON entries (a jansson object of a dozen members costs
 * about 1.4 KB a queue; an entry here its name and 24 bytes). */
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

/* Copies S (with its NUL) to *AT, moving it on; returns the copy. */
static const char *
put(char **at, const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = *at;

	memcpy(d, s, n);
	*at += n;
	return d;
}

/* The bytes and targets entry E adds to the table, into *BYTES and *NTO. */
static void
entry_size(const json_t *e, size_t *bytes, size_t *nto)
{
	const json_t *d;
	size_t i;

	*bytes += strlen(json_string_value(json_object_get(e, "name"))) + 1;
	if (json_is_string(json_object_get(e, "type")))
		*bytes += strlen(json_string_value(json_object_get(e, "type"))) + 1;
	json_array_foreach(json_object_get(e, "dead_letters_to"), i, d)
		if (json_is_string(d)) {
			*bytes += strlen(json_string_value(d)) + 1;
			(*nto)++;
		}
}

int
old_measured_read(const json_t *measured, struct old_measured *m)
{
	const json_t *mq = json_object_get(measured, "queues"), *e, *d;
	size_t bytes = 0, nto = 0, i, k;
	char *at;

	memset(m, 0, sizeof(*m));
	json_array_foreach(mq, i, e)
		if (json_is_string(json_object_get(e, "name"))) {
			entry_size(e, &bytes, &nto);
			m->n++;
		}
	m->v = calloc(m->n + 1, sizeof(*m->v));
	m->to = calloc(nto + 1, sizeof(*m->to));
	m->text = malloc(bytes + 1);
	if (m->v == NULL || m->to == NULL || m->text == NULL) {
		old_measured_free(m);
		return -1;
	}
	at = m->text;
	m->n = 0;
	json_array_foreach(mq, i, e) {
		struct old_measured_queue *q = &m->v[m->n];
		const json_t *type = json_object_get(e, "type");

		if (!json_is_string(json_object_get(e, "name")))
			continue;
		q->name = put(&at, json_string_value(json_object_get(e, "name")));
		q->type = json_is_string(type) ? put(&at, json_string_value(type)) : NULL;
		q->to = m->to + m->nto;
		json_array_foreach(json_object_get(e, "dead_letters_to"), k, d)
			if (json_is_string(d)) {
				m->to[m->nto++] = put(&at, json_string_value(d));
				q->nto++;
			}
		m->n++;
	}
	qsort(m->v, m->n, sizeof(*m->v), cmp_queue);
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
	free(m->text);
	memset(m, 0, sizeof(*m));
}

/* A shallow copy of RESULT without its per-queue list "queues" (NULL for
 * NULL); sets *FAILED when out of memory. */
static json_t *
brief(const json_t *result, bool *failed)
{
	json_t *b;

	if (result == NULL)
		return NULL;
	if ((b = json_copy((json_t *)result)) == NULL) {
		*failed = true;
		return NULL;
	}
	json_object_del(b, "queues");
	return b;
}

int
old_inputs_keep(const json_t *measured, const json_t *moved, int64_t measured_end_ms,
    int64_t moved_end_ms, struct old_inputs **out)
{
	struct old_inputs *in;
	bool failed = false;

	*out = NULL;
	if ((in = calloc(1, sizeof(*in))) == NULL)
		return -1;
	in->measured_end_ms = measured_end_ms;
	in->moved_end_ms = moved_end_ms;
	in->measured = brief(measured, &failed);
	in->moved = brief(moved, &failed);
	if (failed || old_measured_read(measured, &in->queues) != 0) {
		old_inputs_free(in);
		return -1;
	}
	*out = in;
	return 0;
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
