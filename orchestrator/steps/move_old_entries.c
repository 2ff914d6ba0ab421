/* move_old_entries: the step's entries, one per old queue, kept as their
 * texts while a run works through the queues: a queue's entry is a tree
 * only while its pass runs. As trees, 100,000 entries cost about 150 MB
 * (each object's table and values); as texts, about 20. Beside each text,
 * the figures the run sums over every queue (its counts, the latest time
 * what it left may still come out, the pass it last finished), so that
 * the sums parse nothing. */
#define _GNU_SOURCE		/* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "move_old_int.h"
#include "strblocks.h"

#define TEXT_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER)

/* The integer at KEY of E, 0 when it has none (as the state reads it). */
static int64_t
int_at(const json_t *e, const char *key)
{
	return json_integer_value(json_object_get(e, key));
}

/* E's figures into M (its text aside). */
static void
figures_of(struct move_entry *m, const json_t *e)
{
	const json_t *until = json_object_get(e, "left_until_ms");

	m->moved = int_at(e, "moved");
	m->left = int_at(e, "left");
	m->skipped = int_at(e, "skipped");
	m->dup = int_at(e, "may_duplicate");
	m->pass_done = int_at(e, "pass_done");
	m->left_until_ms = json_is_integer(until) ? json_integer_value(until) : INT64_MIN;
}

/* Appends entry E (named NAME) to ES. Returns its place, or -1 out of
 * memory. */
static int64_t
append(struct move_entries *es, const char *name, const json_t *e)
{
	struct move_entry *m;

	if (es->n == es->cap) {
		size_t cap = es->cap ? 2 * es->cap : 256;
		struct move_entry *v = realloc(es->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		es->v = v;
		es->cap = cap;
	}
	m = &es->v[es->n];
	memset(m, 0, sizeof(*m));
	if ((m->name = strblocks_put(&es->names, name)) == NULL ||
	    (m->text = json_dumps(e, TEXT_FLAGS)) == NULL)
		return -1;
	figures_of(m, e);
	return (int64_t)es->n++;
}

int
move_old__entries_add(struct move_entries *es, const json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "name"));

	/* An entry without a name is kept as it was: the result keeps
	 * what it read. */
	return json_is_object(e) && append(es, name != NULL ? name : "", e) >= 0 ? 0 : -1;
}

/* qsort_r's order of two places in the entries at ARG, by name. */
static int
by_name(const void *a, const void *b, void *arg)
{
	const struct move_entries *es = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(es->v[x].name, es->v[y].name);

	/* The first of a name wins a lookup, as before. */
	return c != 0 ? c : (x > y) - (x < y);
}

int
move_old__entries_index(struct move_entries *es)
{
	free(es->by_name);
	es->nby = 0;
	if ((es->by_name = malloc((es->n + 1) * sizeof(*es->by_name))) == NULL)
		return -1;
	for (size_t i = 0; i < es->n; i++)
		es->by_name[i] = i;
	es->nby = es->n;
	qsort_r(es->by_name, es->nby, sizeof(*es->by_name), by_name, es);
	return 0;
}

int64_t
move_old__entries_of(struct move_entries *es, const char *name)
{
	size_t lo = 0, hi = es->nby;
	json_t *e;
	int64_t ord;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(es->v[es->by_name[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < es->nby && strcmp(es->v[es->by_name[lo]].name, name) == 0)
		return (int64_t)es->by_name[lo];
	e = json_pack("{s:s,s:I,s:I,s:I,s:I}", "name", name, "moved", (json_int_t)0,
	    "left", (json_int_t)0, "skipped", (json_int_t)0, "pass_done", (json_int_t)0);
	ord = e != NULL ? append(es, name, e) : -1;
	json_decref(e);
	return ord;
}

json_t *
move_old__entries_open(const struct move_entries *es, int64_t ord)
{
	return json_loads(es->v[ord].text, 0, NULL);
}

int
move_old__entries_put(struct move_entries *es, int64_t ord, const json_t *e)
{
	struct move_entry *m = &es->v[ord];
	size_t len = json_dumpb(e, es->buf, es->bufcap, TEXT_FLAGS);
	char *t;

	if (len == 0)
		return -1;
	if (len > es->bufcap) {
		size_t cap = len > 2 * es->bufcap ? len : 2 * es->bufcap;

		if ((t = realloc(es->buf, cap)) == NULL)
			return -1;
		es->buf = t;
		es->bufcap = cap;
		if (json_dumpb(e, es->buf, es->bufcap, TEXT_FLAGS) != len)
			return -1;
	}
	/* Written over the old text where it fits, through one buffer: a
	 * pass allocates nothing per queue for its entry's text. */
	if (len > strlen(m->text)) {
		if ((t = realloc(m->text, len + 1)) == NULL)
			return -1;
		m->text = t;
	}
	memcpy(m->text, es->buf, len);
	m->text[len] = '\0';
	figures_of(m, e);
	return 0;
}

json_t *
move_old__entries_array(const struct move_entries *es)
{
	json_t *a = json_array(), *e;

	for (size_t i = 0; a != NULL && i < es->n; i++)
		if ((e = move_old__entries_open(es, (int64_t)i)) == NULL ||
		    json_array_append_new(a, e) != 0) {
			json_decref(a);
			a = NULL;
		}
	return a;
}

void
move_old__entries_free(struct move_entries *es)
{
	for (size_t i = 0; i < es->n; i++)
		free(es->v[i].text);
	free(es->v);
	free(es->by_name);
	free(es->buf);
	strblocks_free(&es->names);
	memset(es, 0, sizeof(*es));
}
