/* remove_old_removed: the queues earlier runs of remove_old removed, as
 * its last result names them, kept so that each later result still says
 * what was deleted, and when, after the queue has left every listing. Its
 * last result has an entry per old queue (hundreds of megabytes of tree at
 * 100,000 queues): the entries are read one at a time and only the
 * removed ones kept. Internal to remove_old. */
#include <stdlib.h>
#include <string.h>

#include "remove_old_int.h"
#include "step.h"

static int
removed_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rm_removed *)a)->name,
	    ((const struct rm_removed *)b)->name);
}

/* A copy of S, "" for NULL; NULL out of memory. */
static char *
copy_of(const char *s)
{
	return strdup(s != NULL ? s : "");
}

/* step_state_each's FN: entry E of the last result into the run at ARG
 * when it says its queue was removed. Returns 0, or -1 out of memory. */
static int
removed_take(const json_t *e, void *arg)
{
	struct rm_run *r = arg;
	const char *name = json_string_value(json_object_get(e, "name"));
	const char *outcome = json_string_value(json_object_get(e, "outcome"));
	const json_t *ttl = json_object_get(e, "ttl_ms"), *at = json_object_get(e, "at_ms");
	struct rm_removed *v, *d;

	if (name == NULL || outcome == NULL || strcmp(outcome, "removed") != 0)
		return 0;
	if (r->nremoved == r->capremoved) {
		size_t cap = r->capremoved ? 2 * r->capremoved : 64;

		if ((v = realloc(r->removed, cap * sizeof(*v))) == NULL)
			return -1;
		r->removed = v;
		r->capremoved = cap;
	}
	d = &r->removed[r->nremoved];
	*d = (struct rm_removed){
		.name = strdup(name),
		.type = copy_of(json_string_value(json_object_get(e, "type"))),
		.reason = copy_of(json_string_value(json_object_get(e, "reason"))),
		.ttl_ms = json_is_integer(ttl) ? json_integer_value(ttl) : -1,
		.at_ms = json_is_integer(at) ? json_integer_value(at) : 0
	};
	r->nremoved++;
	if (d->name == NULL || d->type == NULL || d->reason == NULL)
		return -1;
	return 0;
}

int
rm_removed_read(struct rm_run *r, char *err, size_t errlen)
{
	if (r->prev == NULL)
		return 0;
	if (step_state_each(r->c, "entries", removed_take, r, err, errlen) != 0)
		return -1;
	if (r->nremoved > 0)
		qsort(r->removed, r->nremoved, sizeof(*r->removed), removed_cmp);
	return 0;
}

const struct rm_removed *
rm_removed_find(const struct rm_run *r, const char *name)
{
	struct rm_removed key = { .name = (char *)name };

	if (r->nremoved == 0)
		return NULL;
	return bsearch(&key, r->removed, r->nremoved, sizeof(*r->removed), removed_cmp);
}

void
rm_removed_free(struct rm_run *r)
{
	for (size_t i = 0; i < r->nremoved; i++) {
		free(r->removed[i].name);
		free(r->removed[i].type);
		free(r->removed[i].reason);
	}
	free(r->removed);
	r->removed = NULL;
	r->nremoved = r->capremoved = 0;
}
