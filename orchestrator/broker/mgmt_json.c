/* mgmt_json: reading members of the management API's JSON answers, and
 * the one error for a request body that cannot be built. */
#include "mgmt_int.h"

/* A non-negative integer member, or -1 (absent, null, not a number). */
int64_t
mgmt__int_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	double d;

	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ?
		    (int64_t)json_integer_value(v) : -1;
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (d >= 0 && d < 9.2e18 && d == (double)(int64_t)d)
			return (int64_t)d;
	}
	return -1;
}

/* A string member, or NULL (absent, null, not a string). */
const char *
mgmt__str_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Makes OBJ[KEY] an object (an empty one when absent or not an object)
 * and returns it, borrowed from OBJ. NULL when out of memory. */
json_t *
mgmt__object_member(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_object(v))
		return v;
	if (json_object_set_new(obj, key, json_object()) != 0)
		return NULL;
	return json_object_get(obj, key);
}

int
mgmt__body_error(const char *method, const struct path *p, char *err,
    size_t errlen)
{
	errbuf_set(err, errlen, "%s %s: cannot build the request body (out of "
	    "memory, or a string that is not UTF-8)", method, p->s);
	return MGMT_ERR_ARG;
}
