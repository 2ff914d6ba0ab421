/* mgmt_items: a listing's answer (a JSON array) one element at a time,
 * each parsed alone from the answer's text and released once its caller
 * has taken what it needs, so that a listing of N queues is never one tree
 * of N objects (at 100,000 queues that tree is far larger than the text):
 * mgmt__items_each and mgmt__get_items (mgmt_int.h). */
#include <stdbool.h>
#include <string.h>

#include "mgmt_int.h"

static bool
is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The index of the first byte at or after I of TEXT (LEN) that is no
 * JSON whitespace. */
static size_t
skip_space(const char *text, size_t len, size_t i)
{
	while (i < len && is_space(text[i]))
		i++;
	return i;
}

/* The end of the element that starts at I: the index of the ',' or ']'
 * after it at depth 0, outside strings, or LEN when there is none. */
static size_t
element_end(const char *text, size_t len, size_t i)
{
	long depth = 0;
	bool in_string = false;

	for (; i < len; i++) {
		char c = text[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = false;
			continue;
		}
		if (c == '"')
			in_string = true;
		else if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && depth > 0)
			depth--;
		else if (depth == 0 && (c == ',' || c == ']'))
			return i;
	}
	return len;
}

int
mgmt__items_each(const char *text, size_t len, const char *what,
    mgmt__item_fn fn, void *arg, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *item;
	size_t i = skip_space(text, len, 0), end, n = 0;
	int rc;

	if (i >= len || text[i] != '[')
		goto not_array;
	i = skip_space(text, len, i + 1);
	if (i < len && text[i] == ']')
		goto closed;
	for (;;) {
		end = element_end(text, len, i);
		if (end >= len)
			goto not_array;
		if ((item = json_loadb(text + i, end - i, 0, &jerr)) == NULL) {
			errbuf_set(err, errlen, "%s: element %zu of the answer is not "
			    "JSON (%s)", what, n, jerr.text);
			return MGMT_ERR_ANSWER;
		}
		rc = fn(arg, item, err, errlen);
		json_decref(item);
		if (rc != 0)
			return rc;
		n++;
		i = end + 1;
		if (text[end] == ']')
			break;
		i = skip_space(text, len, i);
	}
	i--;
closed:
	if (skip_space(text, len, i + 1) == len)
		return 0;
not_array:
	errbuf_set(err, errlen, "%s: answer is not a JSON array", what);
	return MGMT_ERR_ANSWER;
}

int
mgmt__get_items(struct mgmt *m, const char *path, mgmt__item_fn fn, void *arg,
    char *err, size_t errlen)
{
	char what[WHAT_MAX];
	int rc;

	m->answer_text = true;
	rc = mgmt_request(m, "GET", path, NULL, NULL, NULL, err, errlen);
	m->answer_text = false;
	mgmt__describe(what, sizeof(what), "GET", path);
	if (rc == MGMT_NOT_FOUND)
		rc = mgmt__listing_not_found(m, path, err, errlen);
	else if (rc == 0)
		rc = mgmt__items_each(m->answer.p != NULL ? m->answer.p : "",
		    m->answer.len, what, fn, arg, err, errlen);
	mgmt__answer_release(m);
	return rc;
}
