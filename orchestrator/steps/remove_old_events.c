/* remove_old_events: what remove_old hands the engine for the plan's
 * history once it has ended: one event per old queue it removed or found
 * gone, and per old ladder's exchange it removed, found gone or left in
 * use (step_remove_old_events, step.h). */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "errbuf.h"
#include "step.h"

/* The names of the old queues, or of the old ladder's exchanges, a
 * plan's history already records as removed (KIND), sorted. */
struct removed_names {
	const char *kind;
	char **v;
	size_t n, cap;
};

/* store_each_event's callback: takes the name of each event of ARG's kind
 * (a struct removed_names) into ARG. Returns 0 (never stops the walk; a
 * name that cannot be kept is left out). */
static int
take_removed(const struct store_event *ev, void *arg)
{
	struct removed_names *rn = arg;
	json_t *d;
	const char *name;
	char **v;

	if (strcmp(ev->kind, rn->kind) != 0)
		return 0;
	if ((d = json_loads(ev->details_json, 0, NULL)) == NULL)
		return 0;
	if ((name = json_string_value(json_object_get(d, "name"))) == NULL)
		goto done;
	if (rn->n == rn->cap) {
		if ((v = realloc(rn->v, (rn->cap ? 2 * rn->cap : 64) * sizeof(*v))) == NULL)
			goto done;
		rn->v = v;
		rn->cap = rn->cap ? 2 * rn->cap : 64;
	}
	if ((rn->v[rn->n] = strdup(name)) != NULL)
		rn->n++;
done:
	json_decref(d);
	return 0;
}

/* qsort's and bsearch's order of two names. */
static int
cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The entry at I of LIST, or else of ROWS (parsed): a new reference, NULL
 * when it cannot be read back or does not parse. */
static json_t *
entry_at(const json_t *list, struct step_rows *rows, size_t i)
{
	struct store_entry row;

	if (list != NULL)
		return json_incref(json_array_get(list, i));
	if (step_rows_get(rows, i, &row) != 0)
		return NULL;
	return json_loads(row.json, 0, NULL);
}

/* Hands the engine an event for each entry of LIST (remove_old's
 * "exchanges", or its "entries" when it has them in its result), else of
 * ROWS (its "entries" handed over a row each), whose outcome has one:
 * REMOVED, GONE (unless the history records it as removed) and, when
 * not NULL, LEFT. Returns 0, or -1 with ERR. */
static int
add_events(struct step_ctx *c, const json_t *list, struct step_rows *rows,
    const char *removed, const char *gone, const char *left, char *err,
    size_t errlen)
{
	struct removed_names rn = { .kind = removed };
	json_t *e = NULL;
	const char *outcome, *kind, *name;
	size_t i, n = json_array_size(list) > 0 || rows == NULL ? json_array_size(list) :
	    rows->n;
	int rc = -1;

	if (n == 0)
		return 0;
	if (json_array_size(list) == 0)
		list = NULL;
	if (store_each_event(c->store, c->plan_id, take_removed, &rn, err, errlen) != 0)
		goto done;
	qsort(rn.v, rn.n, sizeof(*rn.v), cmp_name);
	for (i = 0; i < n; i++) {
		json_decref(e);
		if ((e = entry_at(list, rows, i)) == NULL) {
			/* Its event would be missing from the history. */
			errbuf_set(err, errlen, "entry %zu of %zu could not be read back "
			    "for its event", i + 1, n);
			goto done;
		}
		outcome = json_string_value(json_object_get(e, "outcome"));
		name = json_string_value(json_object_get(e, "name"));
		if (outcome == NULL || name == NULL)
			continue;
		if (strcmp(outcome, "removed") == 0)
			kind = removed;
		else if (strcmp(outcome, "gone") == 0 && (rn.n == 0 ||
		    bsearch(&name, rn.v, rn.n, sizeof(*rn.v), cmp_name) == NULL))
			kind = gone;
		else if (left != NULL && strcmp(outcome, "left") == 0)
			kind = left;
		else
			continue;
		if (step_events_add(&c->events, kind, list != NULL ? json_deep_copy(e) :
		    json_incref(e)) != 0) {
			/* A sink that failed said why in ERR. */
			if (c->events.sink == NULL)
				errbuf_set(err, errlen, "out of memory");
			goto done;
		}
	}
	rc = 0;
done:
	json_decref(e);
	for (i = 0; i < rn.n; i++)
		free(rn.v[i]);
	free(rn.v);
	return rc;
}

int
step_remove_old_events(struct step_ctx *c, const json_t *result, char *err,
    size_t errlen)
{
	if (add_events(c, json_object_get(result, "entries"), &c->rows,
	    "old.queue_removed", "old.queue_gone", NULL, err, errlen) != 0)
		return -1;
	return add_events(c, json_object_get(result, "exchanges"), NULL,
	    "old.exchange_removed", "old.exchange_gone", "old.exchange_left", err,
	    errlen);
}
