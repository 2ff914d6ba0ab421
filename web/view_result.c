/* view_result: a step's recorded result as the plan document carries it.
 * A result of at most VIEW_RESULT_INLINE bytes goes in whole; a larger
 * one (measure_horizon's per-queue list, the watch's last reading of each
 * old queue: megabytes at 10,000 queues) goes in without its long lists,
 * which are cut from the JSON text before it is parsed (parsing them is
 * what costs serve its memory), each named with its length, for the
 * step's own route (GET /api/plans/{plan}/steps/{step}/result) to serve. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "view_result.h"

/* The JSON text being cut: S (N bytes) read at I, the copy grown in OUT. */
struct cut {
	const char *s;
	size_t n, i;
	char *out;
	size_t len;
	json_t *elided;		/* [{pointer, count}] */
	int bad;		/* the text is not what the engine writes */
};

static void
ws(struct cut *c)
{
	while (c->i < c->n && c->s[c->i] != '\0' && strchr(" \t\r\n", c->s[c->i]) != NULL)
		c->i++;
}

static void
emit(struct cut *c, const char *p, size_t len)
{
	/* OUT holds N + 8 bytes: the copy never outgrows the text, but for
	 * the closing brace of each of the two levels when it is cut short */
	memcpy(c->out + c->len, p, len);
	c->len += len;
}

/* Moves past the string at I (its opening quote). */
static void
skip_string(struct cut *c)
{
	for (c->i++; c->i < c->n; c->i++) {
		if (c->s[c->i] == '\\')
			c->i++;
		else if (c->s[c->i] == '"') {
			c->i++;
			return;
		}
	}
	c->bad = 1;
}

/* Moves past the value at I; *ITEMS gets its entries when it is an array
 * (the commas at its first level, plus one unless it is empty). */
static void
skip_value(struct cut *c, size_t *items)
{
	int depth = 0, seen = 0;

	*items = 0;
	while (c->i < c->n && !c->bad) {
		char ch = c->s[c->i];

		if (depth == 0 && (ch == ',' || ch == '}' || ch == ']'))
			return;			/* a number, true, false, null */
		if (depth == 1 && strchr(", \t\r\n]}", ch) == NULL)
			seen = 1;
		if (ch == '"') {
			skip_string(c);
			if (depth == 0)
				return;
			continue;
		}
		if (ch == '[' || ch == '{')
			depth++;
		else if ((ch == ']' || ch == '}') && --depth == 0) {
			c->i++;
			*items += (size_t)seen;
			return;
		} else if (depth == 1 && ch == ',')
			(*items)++;
		c->i++;
	}
	c->bad = 1;
}

/* Copies the object at I, a long array among its members (or, LEVELS
 * deep, its objects' members) replaced by [] and named in ELIDED. */
static void
cut_object(struct cut *c, const char *ptr, int levels)
{
	emit(c, "{", 1);
	for (c->i++, ws(c); c->i < c->n && c->s[c->i] != '}' && !c->bad; ws(c)) {
		size_t k = c->i, v, items;
		char p[VIEW_POINTER_MAX];

		if (c->s[c->i] != '"') {
			c->bad = 1;
			return;
		}
		skip_string(c);
		snprintf(p, sizeof(p), "%s/%.*s", ptr, (int)(c->i - k - 2), c->s + k + 1);
		emit(c, c->s + k, c->i - k);
		ws(c);
		if (c->i >= c->n || c->s[c->i] != ':') {
			c->bad = 1;
			return;
		}
		emit(c, ":", 1);
		c->i++;
		ws(c);
		v = c->i;
		if (c->i < c->n && c->s[c->i] == '{' && levels > 0)
			cut_object(c, p, levels - 1);
		else {
			skip_value(c, &items);
			if (c->s[v] == '[' && items > VIEW_LIST_INLINE) {
				emit(c, "[]", 2);
				json_array_append_new(c->elided, json_pack("{s:s,s:I}",
				    "pointer", p, "count", (json_int_t)items));
			} else
				emit(c, c->s + v, c->i - v);
		}
		ws(c);
		if (c->i < c->n && c->s[c->i] == ',') {
			emit(c, ",", 1);
			c->i++;
		}
	}
	if (c->i >= c->n)
		c->bad = 1;
	c->i++;
	emit(c, "}", 1);
}

/* view_result_brief's cut, of a TEXT of any length when FORCE. */
static void
brief(const char *text, bool force, json_t **result, json_t **elided)
{
	struct cut c = { text, text != NULL ? strlen(text) : 0, 0, NULL, 0, NULL, 0 };

	*result = NULL;
	*elided = NULL;
	if (c.n <= VIEW_RESULT_INLINE && !force)
		return;
	ws(&c);
	if (c.i >= c.n || text[c.i] != '{' || (c.out = malloc(c.n + 8)) == NULL ||
	    (c.elided = json_array()) == NULL)
		goto done;
	cut_object(&c, "", 1);
	if (!c.bad && json_array_size(c.elided) > 0) {
		*result = json_loadb(c.out, c.len, 0, NULL);
		if (*result != NULL) {
			*elided = c.elided;
			c.elided = NULL;
		}
	}
done:
	free(c.out);
	json_decref(c.elided);
}

void
view_result_brief(const char *text, json_t **result, json_t **elided)
{
	brief(text, false, result, elided);
}

void
view_result_brief_apart(const char *text, const char *member, int64_t nrows,
    json_t **result, json_t **elided)
{
	char p[VIEW_POINTER_MAX];

	brief(text, true, result, elided);
	if (*result == NULL && (*result = json_loads(text, 0, NULL)) == NULL)
		return;
	if (*elided == NULL)
		*elided = json_array();
	snprintf(p, sizeof(p), "/%s", member);
	json_array_append_new(*elided, json_pack("{s:s,s:I}", "pointer", p, "count",
	    (json_int_t)nrows));
}
