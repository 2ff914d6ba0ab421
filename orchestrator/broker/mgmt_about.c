/* mgmt_about: what the broker is — its version and its feature flags —
 * read-only, for the checks made before anything is declared (see
 * mgmt.h). */
#include <stdbool.h>
#include <string.h>

#include "mgmt_int.h"

int
mgmt_read_about(struct mgmt *m, bool flags_too, struct mgmt_about *out, char *err,
    size_t errlen)
{
	static const char overview[] = "/api/overview?columns=rabbitmq_version,"
	    "erlang_version,product_name,product_version";
	static const char flags[] = "/api/feature-flags?columns=name,state,stability";

	int rc;

	if ((rc = mgmt__begin("mgmt_read_about", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	if ((rc = mgmt__get_json(m, overview, 0, &out->overview, err, errlen)) != 0 ||
	    (flags_too && (rc = mgmt__get_json(m, flags, 1, &out->flags, err, errlen)) != 0)) {
		mgmt_about_free(out);
		return rc;
	}
	out->version = mgmt__str_member(out->overview, "rabbitmq_version");
	if (out->version == NULL)
		out->version = mgmt__str_member(out->overview, "product_version");
	out->erlang = mgmt__str_member(out->overview, "erlang_version");
	if (out->version == NULL) {
		errbuf_set(err, errlen, "GET /api/overview: the answer has no "
		    "rabbitmq_version");
		mgmt_about_free(out);
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

const char *
mgmt_about_flag(const struct mgmt_about *a, const char *name)
{
	size_t i;

	if (a == NULL || name == NULL)
		return NULL;
	for (i = 0; i < json_array_size(a->flags); i++) {
		const json_t *f = json_array_get(a->flags, i);
		const char *n = mgmt__str_member(f, "name"), *state = mgmt__str_member(f, "state");

		if (n != NULL && strcmp(n, name) == 0)
			return state != NULL ? state : "unknown";
	}
	return NULL;
}

void
mgmt_about_free(struct mgmt_about *a)
{
	if (a != NULL) {
		json_decref(a->overview);
		json_decref(a->flags);
		memset(a, 0, sizeof(*a));
	}
}
