/* itest_json: integer members of a test's JSON, or the test fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

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
