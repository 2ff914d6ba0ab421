/* step_rows: the elements of a run's long result list kept as their texts,
 * a row each, for the engine to write beside the result
 * (store_step_update_rows) instead of a tree of the whole list. */
#include <stdlib.h>
#include <string.h>

#include "step.h"

int
step_rows_add(struct step_rows *rows, const json_t *element)
{
	const char *name = json_string_value(json_object_get(element, "name"));
	struct store_entry *v;
	size_t cap, tlen, nlen;
	char *text, *both;

	/* The row is keyed by its place; its name is for a reader of the
	 * table, and one without is kept as the whole result kept it. */
	if (name == NULL || name[0] == '\0')
		name = "(none)";
	if (rows->n == rows->cap) {
		cap = rows->cap ? 2 * rows->cap : 64;
		if ((v = realloc(rows->v, cap * sizeof(*v))) == NULL)
			return -1;
		rows->v = v;
		rows->cap = cap;
	}
	if ((text = json_dumps(element, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_ENCODE_ANY)) == NULL)
		return -1;
	/* The text and the name in one allocation: a row costs its bytes. */
	tlen = strlen(text);
	nlen = strlen(name);
	if ((both = realloc(text, tlen + nlen + 2)) == NULL) {
		free(text);
		return -1;
	}
	memcpy(both + tlen + 1, name, nlen + 1);
	rows->v[rows->n] = (struct store_entry){ .json = both, .name = both + tlen + 1,
	    .ord = (int64_t)rows->n };
	rows->n++;
	return 0;
}

void
step_rows_clear(struct step_rows *rows)
{
	for (size_t i = 0; i < rows->n; i++)
		free((char *)rows->v[i].json);
	free(rows->v);
	*rows = (struct step_rows){ 0 };
}

int
step_rows_put(struct step_rows *rows, json_t *list, json_t *element)
{
	int rc;

	if (element == NULL)
		return -1;
	if (rows == NULL)
		return json_array_append_new(list, element);
	rc = step_rows_add(rows, element);
	json_decref(element);
	return rc;
}
