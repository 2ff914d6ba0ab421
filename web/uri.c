/* uri: strict percent-decoding of request paths and query parameters. */
#include <string.h>

#include "hex.h"
#include "uri.h"

int
uri_decode(const char *in, int plus, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t n = 0;
	int hi, lo, c;

	if (outlen == 0)
		return -1;
	while (*p != '\0') {
		if (*p == '%') {
			if ((hi = hex_value(p[1])) < 0 || (lo = hex_value(p[2])) < 0)
				goto bad;
			c = hi << 4 | lo;
			p += 3;
		} else if (*p == '+' && plus) {
			c = ' ';
			p++;
		} else
			c = *p++;
		if (c < 0x20 || c == 0x7f || n + 1 >= outlen)
			goto bad;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return 0;
bad:
	out[0] = '\0';
	return -1;
}

int
uri_query_add(struct uri_query *q, const char *key, const char *value)
{
	struct uri_param *p;

	if (q->n >= URI_PARAM_MAX || key == NULL)
		return -1;
	p = &q->v[q->n];
	if (uri_decode(key, 1, p->key, sizeof(p->key)) != 0 || p->key[0] == '\0' ||
	    uri_decode(value != NULL ? value : "", 1, p->value, sizeof(p->value)) != 0)
		return -1;
	if (uri_query_get(q, p->key) != NULL)
		return -1;
	q->n++;
	return 0;
}

const char *
uri_query_get(const struct uri_query *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (strcmp(q->v[i].key, key) == 0)
			return q->v[i].value;
	return NULL;
}
