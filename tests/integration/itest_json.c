/* itest_json: integer members of a test's JSON, or the test fails; the
 * element of a list with a given name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "itest_json.h"

int64_t
ijson_int(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);

	if (!json_is_integer(v))
		fail_msg("'%s' is not an integer", key);
	return (int64_t)json_integer_value(v);
}

const json_t *
ijson_named(const json_t *a, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(a, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		if (n != NULL && strcmp(n, name) == 0)
			return e;
	}
	return NULL;
}
