/* auth: the operators who may change something through the API. A file of
 * `name:sha256hex` lines (the sha256 of each operator's bearer token; `#`
 * starts a comment) is loaded once; a request's `Authorization: Bearer
 * TOKEN` is hashed and compared against every entry in constant time. The
 * tokens themselves are never held, logged or stored: only their hashes. */
#ifndef CUTOVER_AUTH_H
#define CUTOVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

#define AUTH_NAME_MAX	65		/* operator name, NUL included */
#define AUTH_TOKEN_MAX	1024		/* longest token accepted, in bytes */

struct auth;

/* Loads the operators file PATH. Names are [A-Za-z0-9._@-]{1,64} and must be
 * unique, as must the hashes (64 hex digits). Returns 0 and a set the caller
 * frees with auth_free, or -1 with ERR naming the file and line. A file
 * with no operator is an error. */
int auth_load(const char *path, struct auth **out, char *err, size_t errlen);

/* Frees A (NULL is fine). */
void auth_free(struct auth *a);

/* How many operators A holds (0 for NULL). */
size_t auth_count(const struct auth *a);

/* The name of operator I of A, in the file's order, or NULL past the end. */
const char *auth_name(const struct auth *a, size_t i);

/* Whether the N bytes at S are an operator's name: 1 to 64 of A-Z a-z
 * 0-9 . _ @ -. */
bool auth_name_valid(const char *s, size_t n);

enum auth_result {
	AUTH_OK,		/* an operator's token: NAME holds who */
	AUTH_NONE,		/* no Authorization header */
	AUTH_MALFORMED,		/* not `Bearer TOKEN`, or a token too long */
	AUTH_UNKNOWN,		/* a well-formed token no operator holds */
	AUTH_UNCONFIGURED	/* A is NULL: there are no operators */
};

/* Checks the value of a request's Authorization header (HEADER, NULL when
 * absent) against A. Every entry is compared, whether or not an earlier one
 * matched, so the time taken does not say which operator (if any) holds
 * the token. Returns AUTH_OK with the operator's name in NAME (NAMELEN >=
 * AUTH_NAME_MAX), or why not. */
enum auth_result auth_check(const struct auth *a, const char *header, char *name,
    size_t namelen);

/* The sha256 of TOKEN (LEN bytes) as 64 lowercase hex digits and a NUL, the
 * form operators files hold. Returns 0 or -1. */
int auth_hash_hex(const char *token, size_t len, char out[65]);

#endif
