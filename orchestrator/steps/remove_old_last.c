/* remove_old_last: what remove_old's last result says of each old queue
 * that a later run needs: the queues it removed (so that each later result
 * still says what was deleted, and when, after the queue has left every
 * listing), what each waiting queue waits for, since when and until
 * when, and the baseline counters each entry carries. That result has an
 * entry per old queue (hundreds of megabytes of tree at 100,000 queues):
 * the entries are read one at a time and only those three kept, in tables
 * sorted by name, their texts in blocks. Internal to remove_old. */
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "remove_old_int.h"
#include "step.h"
#include "strblocks.h"

static int
removed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rm_removed *)a)->name,
	    ((const struct rm_removed *)b)->name);
}

static int
waited_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rm_waited *)a)->name,
	    ((const struct rm_waited *)b)->name);
}

/* A copy of S ("" for NULL) in R's blocks, or LAST when that is the same
 * text: of the entries that say "removed", most share their type and
 * reason. NULL out of memory. */
static const char *
copy_of(struct rm_run *r, const char *s, const char *last)
{
	if (s == NULL)
		s = "";
	if (last != NULL && strcmp(last, s) == 0)
		return last;
	return strblocks_put(&r->texts, s);
}

/* NAME as the run holds it: the measured table's copy when it is a
 * measured queue (most are), else a copy in R's blocks. NULL out of
 * memory. */
static const char *
known_name(struct rm_run *r, const char *name)
{
	const struct old_measured_queue *m = old_measured_find(r->mq, name);

	return m != NULL ? m->name : strblocks_put(&r->texts, name);
}

/* Makes room for one more element of SIZE bytes in *V (N used, *CAP
 * held). Returns 0, or -1 out of memory. */
static int
room_for_one(void **v, size_t n, size_t *cap, size_t size)
{
	void *grown;
	size_t c = *cap ? 2 * *cap : 64;

	if (n < *cap)
		return 0;
	if ((grown = realloc(*v, c * size)) == NULL)
		return -1;
	*v = grown;
	*cap = c;
	return 0;
}

/* Entry E, which says its queue NAME was removed, into R->removed.
 * Returns 0, or -1 out of memory. */
static int
removed_take(struct rm_run *r, const json_t *e, const char *name)
{
	const json_t *ttl = json_object_get(e, "ttl_ms"), *at = json_object_get(e, "at_ms");
	const struct rm_removed *last;
	struct rm_removed *d;

	if (room_for_one((void **)&r->removed, r->nremoved, &r->capremoved,
	    sizeof(*r->removed)) != 0)
		return -1;
	last = r->nremoved > 0 ? &r->removed[r->nremoved - 1] : NULL;
	d = &r->removed[r->nremoved];
	*d = (struct rm_removed){
		.name = known_name(r, name),
		.type = copy_of(r, json_string_value(json_object_get(e, "type")),
		    last != NULL ? last->type : NULL),
		.reason = copy_of(r, json_string_value(json_object_get(e, "reason")),
		    last != NULL ? last->reason : NULL),
		.ttl_ms = json_is_integer(ttl) ? json_integer_value(ttl) : -1,
		.at_ms = json_is_integer(at) ? json_integer_value(at) : 0
	};
	r->nremoved++;
	if (d->name == NULL || d->type == NULL || d->reason == NULL)
		return -1;
	return 0;
}

/* The wait W ({"kind", "since_ms", "until_ms"}) of queue NAME into
 * R->waited. Returns 0, or -1 out of memory. */
static int
waited_take(struct rm_run *r, const json_t *w, const char *name)
{
	const char *kind = json_string_value(json_object_get(w, "kind"));
	struct rm_waited *d;

	if (room_for_one((void **)&r->waited, r->nwaited, &r->capwaited,
	    sizeof(*r->waited)) != 0)
		return -1;
	d = &r->waited[r->nwaited];
	*d = (struct rm_waited){
		.name = known_name(r, name),
		.since_ms = json_integer_value(json_object_get(w, "since_ms")),
		.until_ms = json_integer_value(json_object_get(w, "until_ms")),
		.kind = (unsigned char)rm_wait_of(kind)
	};
	r->nwaited++;
	return d->name == NULL ? -1 : 0;
}

/* An integer J, else -1. */
static int64_t
int_or(const json_t *j)
{
	return json_is_integer(j) ? json_integer_value(j) : -1;
}

/* step_state_each's FN: entry E of the last result into the run at ARG:
 * the baseline it carries, and whether it says its queue was removed, or
 * what it waits for. Returns 0, or -1 out of memory. */
static int
last_take(const json_t *e, void *arg)
{
	struct rm_run *r = arg;
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *outcome = json_string_value(json_object_get(e, "outcome"));
	const json_t *w = json_object_get(e, "wait");

	if (name == NULL || outcome == NULL)
		return 0;
	if ((json_object_get(e, "baseline_publish") != NULL ||
	    json_object_get(e, "baseline_messages") != NULL) &&
	    old_counters_put(&r->prev_base, name, int_or(json_object_get(e,
	    "baseline_publish")), int_or(json_object_get(e, "baseline_messages"))) != 0)
		return -1;
	if (strcmp(outcome, "removed") == 0)
		return removed_take(r, e, name);
	if (json_is_object(w))
		return waited_take(r, w, name);
	return 0;
}

/* json_object_foreach over an older result's "waiting" (its waits by
 * name, before they went into the entries) into R->waited. Returns 0, or
 * -1 out of memory. */
static int
waiting_take(struct rm_run *r, const json_t *waiting)
{
	const char *name;
	const json_t *w;

	json_object_foreach((json_t *)waiting, name, w)
		if (json_is_object(w) && waited_take(r, w, name) != 0)
			return -1;
	return 0;
}

int
rm_last_read(struct rm_run *r, char *err, size_t errlen)
{
	if (r->prev == NULL)
		return 0;
	r->prev_base.names_from = r->mq;
	if (step_state_each(r->c, "entries", last_take, r, err, errlen) != 0)
		return -1;
	if (r->nwaited == 0 && waiting_take(r, json_object_get(r->prev, "waiting")) != 0) {
		errbuf_set(err, errlen, "out of memory for the last result's waits");
		return -1;
	}
	if (r->nremoved > 0)
		qsort(r->removed, r->nremoved, sizeof(*r->removed), removed_cmp);
	if (r->nwaited > 0)
		qsort(r->waited, r->nwaited, sizeof(*r->waited), waited_cmp);
	old_counters_end(&r->prev_base);
	return 0;
}

const struct rm_removed *
rm_removed_find(const struct rm_run *r, const char *name)
{
	struct rm_removed key = { .name = name };

	if (r->nremoved == 0)
		return NULL;
	return bsearch(&key, r->removed, r->nremoved, sizeof(*r->removed), removed_cmp);
}

const struct rm_waited *
rm_waited_find(const struct rm_run *r, const char *name)
{
	struct rm_waited key = { .name = name };

	if (r->nwaited == 0)
		return NULL;
	return bsearch(&key, r->waited, r->nwaited, sizeof(*r->waited), waited_cmp);
}

void
rm_last_free(struct rm_run *r)
{
	strblocks_free(&r->texts);
	old_counters_free(&r->prev_base);
	free(r->removed);
	free(r->waited);
	r->removed = NULL;
	r->waited = NULL;
	r->nremoved = r->capremoved = r->nwaited = r->capwaited = 0;
}
