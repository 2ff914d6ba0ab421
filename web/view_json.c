/* view_json: the JSON values every view of the store builds its documents
 * with: a string from the store as JSON, its bytes that are not valid UTF-8
 * replaced. A leaf: view.c, view_gate.c, view_notify.c and api.c call it;
 * it calls none of them. */
#include <stdlib.h>
#include <string.h>

#include "view_json.h"

/* Length of the valid UTF-8 sequence at P (at most N bytes), or 0. */
static size_t
utf8_len(const unsigned char *p, size_t n)
{
	size_t len, i;
	unsigned int cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		len = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		cp = p[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

json_t *
view_string(const char *s)
{
	json_t *j;
	char *copy;
	size_t n, i = 0, k;

	if (s == NULL)
		return json_null();
	if ((j = json_string(s)) != NULL)
		return j;
	n = strlen(s);
	if ((copy = malloc(n + 1)) == NULL)
		return NULL;
	while (i < n) {
		k = utf8_len((const unsigned char *)s + i, n - i);
		if (k == 0) {
			copy[i++] = '?';
			continue;
		}
		memcpy(copy + i, s + i, k);
		i += k;
	}
	copy[n] = '\0';
	j = json_string(copy);
	free(copy);
	return j;
}
