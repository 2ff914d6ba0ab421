/* flag_pointer: RFC 6901 JSON pointers, for the flag client's read-back
 * of kind http. See flag.h (flag_json_pointer). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "flag_transport.h"

/* The array index TOK (decimal, no leading zeros), or -1. */
static long long
array_index(const char *tok)
{
	long long v = 0;
	const char *p;

	if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0'))
		return -1;
	for (p = tok; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > (LLONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

int
flag_json_pointer(const json_t *doc, const char *ptr, json_t **out,
    char *err, size_t errlen)
{
	json_t *cur = (json_t *)doc;
	const char *p, *q, *end;
	char *tok = NULL;
	long long idx;
	size_t n;
	int rc = FLAG_ERR_ARG;

	if (out != NULL)
		*out = NULL;
	if (doc == NULL || ptr == NULL || out == NULL) {
		errbuf_set(err, errlen, "flag_json_pointer: no document, pointer "
		    "or result");
		return FLAG_ERR_ARG;
	}
	if (ptr[0] == '\0') {
		*out = cur;
		return 0;
	}
	if (ptr[0] != '/') {
		errbuf_set(err, errlen, "JSON pointer \"%.100s\" does not start "
		    "with '/'", ptr);
		return FLAG_ERR_ARG;
	}
	if ((tok = malloc(strlen(ptr) + 1)) == NULL) {
		errbuf_set(err, errlen, "flag_json_pointer: out of memory");
		return FLAG_ERR_NOMEM;
	}
	for (p = ptr; *p == '/'; p = end) {
		p++;
		end = p + strcspn(p, "/");
		for (n = 0, q = p; q < end; q++) {
			if (*q != '~') {
				tok[n++] = *q;
				continue;
			}
			if (q + 1 < end && (q[1] == '0' || q[1] == '1')) {
				tok[n++] = q[1] == '0' ? '~' : '/';
				q++;
				continue;
			}
			errbuf_set(err, errlen, "JSON pointer \"%.100s\" has a '~' "
			    "not followed by 0 or 1", ptr);
			goto done;
		}
		tok[n] = '\0';
		if (json_is_object(cur))
			cur = json_object_get(cur, tok);
		else if (json_is_array(cur)) {
			idx = array_index(tok);
			cur = idx < 0 || (unsigned long long)idx >=
			    json_array_size(cur) ? NULL :
			    json_array_get(cur, (size_t)idx);
		} else
			cur = NULL;
	}
	*out = cur;
	rc = 0;
done:
	free(tok);
	return rc;
}
