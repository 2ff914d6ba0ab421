/* move_old_rows: move_old's state as the store keeps it while the step
 * runs. The state has an entry per old queue; written whole after
 * every batch, it cost each batch the selection's size (1.7 MB of JSON at
 * 10,000 queues), so the step's result is written without its "queues"
 * and each entry as a row of its own, only those that changed since the
 * last write, in the same transaction (store_step_save_entries): a kill
 * -9 at any point leaves the result and its rows of one moment, and
 * store_step_get reads them back as one result, in the entries' order.
 * The run's first write writes every entry, for the engine's write of the
 * whole result at the end of the run before took the rows away. */
#include <stdlib.h>
#include <string.h>

#include "move_old_int.h"
#include "store.h"

int
move_old__rows_start(struct move_rows *r, struct step_ctx *c, size_t nqueues)
{
	memset(r, 0, sizeof(*r));
	r->store = c->store;
	r->plan_id = c->plan_id;
	r->step_idx = plan_find_step(c->plan, PLAN_STEP_MOVE_OLD);
	r->all = true;
	r->cap = nqueues + 1;
	if ((r->changed = calloc(r->cap, sizeof(*r->changed))) == NULL)
		return -1;
	return 0;
}

void
move_old__rows_free(struct move_rows *r)
{
	free(r->changed);
	memset(r, 0, sizeof(*r));
}

void
move_old__rows_changed(struct move_rows *r, int64_t ord)
{
	/* Full (a queue noted twice between writes): the next write writes
	 * every entry instead. */
	if (r->nchanged == r->cap) {
		r->all = true;
		return;
	}
	r->changed[r->nchanged++] = ord;
}

/* Entry ORD of ES as a row into V[*N]: its text, or, when it is the open
 * ENTRY's place, ENTRY's text, malloc'ed into *OWN. Returns 0, or -1 out
 * of memory. */
static int
row_of(const struct move_entries *es, const json_t *entry, int64_t entry_ord,
    int64_t ord, struct store_entry *v, size_t *n, char **own)
{
	const char *name = es->v[ord].name;

	/* The row is keyed by its place: a name is only for a reader of the
	 * table, and an entry a damaged state left without one is kept as
	 * the whole state's write kept it. */
	if (name == NULL || name[0] == '\0')
		name = "(none)";
	if (entry != NULL && ord == entry_ord) {
		if (*own == NULL && (*own = json_dumps(entry, JSON_COMPACT |
		    JSON_PRESERVE_ORDER)) == NULL)
			return -1;
		v[(*n)++] = (struct store_entry){ .name = name, .ord = ord, .json = *own };
	} else
		v[(*n)++] = (struct store_entry){ .name = name, .ord = ord,
		    .json = es->v[ord].text };
	return 0;
}

void
move_old__rows_write(struct move_rows *r, json_t *state, const struct move_entries *es,
    const json_t *entry, int64_t ord)
{
	size_t nmax = r->all ? es->n : r->nchanged + 1, n = 0, i;
	struct store_entry *v = calloc(nmax + 1, sizeof(*v));
	char *own = NULL, *text = NULL, why[256];
	bool open_written = false;
	int rc = -1;

	if (r->store == NULL || r->step_idx < 0 || v == NULL)
		goto done;
	if (r->all) {
		for (i = 0; i < es->n; i++)
			if (row_of(es, entry, ord, (int64_t)i, v, &n, &own) != 0)
				goto done;
	} else {
		for (i = 0; i < r->nchanged; i++) {
			open_written |= entry != NULL && r->changed[i] == ord;
			if (row_of(es, entry, ord, r->changed[i], v, &n, &own) != 0)
				goto done;
		}
		if (entry != NULL && !open_written &&
		    row_of(es, entry, ord, ord, v, &n, &own) != 0)
			goto done;
	}
	/* The rest of the state: its "queues" is empty in its place (the
	 * reader puts the rows there). */
	if ((text = json_dumps(state, JSON_COMPACT | JSON_PRESERVE_ORDER)) == NULL)
		goto done;
	rc = store_step_save_entries(r->store, r->plan_id, r->step_idx, text, v, n, why,
	    sizeof(why));
done:
	/* What was not written is written by the next write, with every
	 * entry (the entry given is noted nowhere else). */
	r->all = rc != 0;
	if (rc == 0)
		r->nchanged = 0;
	free(v);
	free(own);
	free(text);
}
