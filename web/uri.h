/* uri: strict decoding of what a client put in a request target — the path
 * and the query parameters — for the HTTP server. Percent-encoding must be
 * well formed, and nothing may decode to a NUL or another control byte: a
 * request that needs either is refused, never guessed at. */
#ifndef CUTOVER_URI_H
#define CUTOVER_URI_H

#include <stddef.h>

#define URI_PATH_MAX	1024		/* decoded path, NUL included */
#define URI_PARAM_MAX	16		/* query parameters per request */
#define URI_VALUE_MAX	256		/* a decoded key or value, NUL included */

struct uri_param {
	char key[URI_VALUE_MAX];
	char value[URI_VALUE_MAX];
};

struct uri_query {
	struct uri_param v[URI_PARAM_MAX];
	size_t n;
};

/* Decodes IN (percent-encoding; with PLUS, '+' also means a space, as in a
 * query) into OUT of OUTLEN bytes. Returns 0, or -1 when IN is malformed
 * (a '%' without two hex digits after it), decodes to a control byte (NUL
 * included) or DEL, or does not fit; OUT is then empty. */
int uri_decode(const char *in, int plus, char *out, size_t outlen);

/* Adds the raw parameter KEY=VALUE (VALUE may be NULL: "?key") to Q,
 * decoded. Returns 0, or -1 when it does not decode (as uri_decode), has an
 * empty key, repeats a key already there, or Q is full. */
int uri_query_add(struct uri_query *q, const char *key, const char *value);

/* The decoded value of KEY in Q, or NULL when absent. */
const char *uri_query_get(const struct uri_query *q, const char *key);

#endif
