/* view_json: the JSON values every view of the store builds its documents
 * with: a string from the store as JSON, its bytes that are not valid UTF-8
 * replaced. A leaf: view.c, view_gate.c, view_notify.c and api.c call it;
 * it calls none of them. */
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "view_json.h"

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
		k = utf8_seq((const unsigned char *)s + i, n - i);
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
