/* itest_json: reading the members of the JSON a step returns, or the
 * binary or the API prints, in the integration tests: a member of the
 * wrong type fails the test where it is read, naming the member, rather
 * than reading as 0. Names from here are prefixed ijson_. */
#ifndef CUTOVER_ITEST_JSON_H
#define CUTOVER_ITEST_JSON_H

#include <stdint.h>

#include <jansson.h>

/* The integer member KEY of object O; fails the test when O has no such
 * member or it is not an integer (O may be NULL: that fails too). */
int64_t ijson_int(const json_t *o, const char *key);

/* The first element of array A (a listing, a result's list of queues)
 * whose member "name" is the string NAME, or NULL when none is (or A is
 * not an array). */
const json_t *ijson_named(const json_t *a, const char *name);

#endif
