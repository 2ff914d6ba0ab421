/* mgmt_exchanges: reading an exchange and the bindings from it, and
 * listing, putting and deleting policies (see mgmt.h). */
#include <stdlib.h>
#include <string.h>

#include "mgmt_int.h"

int
mgmt_get_exchange(struct mgmt *m, const char *name, struct mgmt_exchange *out,
    char *err, size_t errlen)
{
	json_t *j = NULL;
	const char *s;
	int rc;

	if ((rc = mgmt__begin("mgmt_get_exchange", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	if ((rc = mgmt__get_object(m, "/api/exchanges/", name, "an exchange", NULL, &j,
	    err, errlen)) != 0)
		return rc;
	if ((out->arguments = mgmt__object_member(j, "arguments")) == NULL) {
		json_decref(j);
		memset(out, 0, sizeof(*out));
		errbuf_set(err, errlen, "mgmt_get_exchange: out of memory");
		return MGMT_ERR_NOMEM;
	}
	out->json = j;
	out->name = mgmt__str_member(j, "name");
	out->type = (s = mgmt__str_member(j, "type")) != NULL ? s : "";
	out->durable = json_is_true(json_object_get(j, "durable"));
	out->auto_delete = json_is_true(json_object_get(j, "auto_delete"));
	out->internal = json_is_true(json_object_get(j, "internal"));
	out->policy = (s = mgmt__str_member(j, "policy")) != NULL && *s != '\0' ? s : NULL;
	return 0;
}

MGMT__HOLDER_FREE(mgmt_exchange_free, mgmt_exchange)

/* Fills one element of a listing, ELEM, from IT, item I of the answer to
 * GET PATH. Returns 0, or a negative code with ERR. */
typedef int (*fill_fn)(json_t *it, size_t i, void *elem, const char *path,
    char *err, size_t errlen);

/* GETs the array at PATH and fills a new array of its N items of SIZE
 * bytes each with FILL. Returns 0 and sets *V (free it), *N and *JSON (it
 * owns what the items borrow), or a negative code with ERR and them
 * untouched. */
static int
get_list(struct mgmt *m, const char *path, size_t size, fill_fn fill,
    void **v, size_t *n, json_t **json, char *err, size_t errlen)
{
	json_t *j = NULL;
	void *room;
	char *a;
	size_t i, len;
	int rc;

	if ((rc = mgmt__get_array(m, path, NULL, size, &j, &room, &len, err, errlen)) != 0)
		return rc;
	a = room;
	for (i = 0; i < len; i++)
		if ((rc = fill(json_array_get(j, i), i, a + i * size, path, err,
		    errlen)) != 0)
			goto done;
	*v = a;
	*n = len;
	*json = j;
	a = NULL;
	j = NULL;
	rc = 0;
done:
	free(a);
	json_decref(j);
	return rc;
}

/* A fill_fn for struct mgmt_binding. */
static int
fill_binding(json_t *it, size_t i, void *elem, const char *path, char *err,
    size_t errlen)
{
	struct mgmt_binding *b = elem;
	const char *dt;

	b->source = mgmt__str_member(it, "source");
	b->destination = mgmt__str_member(it, "destination");
	b->routing_key = mgmt__str_member(it, "routing_key");
	b->properties_key = mgmt__str_member(it, "properties_key");
	dt = mgmt__str_member(it, "destination_type");
	if (b->source == NULL || b->destination == NULL ||
	    b->routing_key == NULL || b->properties_key == NULL ||
	    dt == NULL) {
		errbuf_set(err, errlen, "GET %s: binding %zu of the answer "
		    "lacks a field", path, i);
		return MGMT_ERR_ANSWER;
	}
	if (strcmp(dt, "queue") == 0)
		b->destination_type = MGMT_DEST_QUEUE;
	else if (strcmp(dt, "exchange") == 0)
		b->destination_type = MGMT_DEST_EXCHANGE;
	else {
		errbuf_set(err, errlen, "GET %s: binding %zu has "
		    "destination_type \"%s\"", path, i, dt);
		return MGMT_ERR_ANSWER;
	}
	if ((b->arguments = mgmt__object_member(it, "arguments")) == NULL) {
		errbuf_set(err, errlen, "GET %s: out of memory", path);
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

/* The bindings of EXCHANGE on SIDE ("source": from it, "destination":
 * into it), for WHO (the public call's name, in messages). Returns 0 and
 * fills *OUT, or a negative code. */
static int
list_bindings(const char *who, struct mgmt *m, const char *exchange, const char *side,
    struct mgmt_binding_list *out, char *err, size_t errlen)
{
	struct path p;
	void *v = NULL;
	int rc;

	if ((rc = mgmt__begin(who, m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	if ((rc = mgmt__path_object(&p, m, "/api/exchanges/", exchange, "exchange",
	    err, errlen)) != 0)
		return rc;
	mgmt__path_add(&p, "/bindings/");
	mgmt__path_add(&p, side);
	if ((rc = mgmt__path_check(&p, "GET /api/exchanges", err, errlen)) != 0)
		return rc;
	rc = get_list(m, p.s, sizeof(*out->v), fill_binding, &v, &out->n,
	    &out->json, err, errlen);
	out->v = v;
	return rc;
}

int
mgmt_list_bindings_from(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen)
{
	return list_bindings("mgmt_list_bindings_from", m, exchange, "source", out,
	    err, errlen);
}

int
mgmt_list_bindings_to(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen)
{
	return list_bindings("mgmt_list_bindings_to", m, exchange, "destination", out,
	    err, errlen);
}

MGMT__LIST_FREE(mgmt_binding_list_free, mgmt_binding_list)

/* A fill_fn for struct mgmt_policy. */
static int
fill_policy(json_t *it, size_t i, void *elem, const char *path, char *err,
    size_t errlen)
{
	struct mgmt_policy *pol = elem;
	const char *s;

	pol->name = mgmt__str_member(it, "name");
	pol->pattern = mgmt__str_member(it, "pattern");
	pol->apply_to = (s = mgmt__str_member(it, "apply-to")) != NULL ? s :
	    "all";
	pol->priority = (int)json_integer_value(json_object_get(it,
	    "priority"));
	if (pol->name == NULL || pol->pattern == NULL) {
		errbuf_set(err, errlen, "GET %s: policy %zu of the answer "
		    "has no name or pattern", path, i);
		return MGMT_ERR_ANSWER;
	}
	if ((pol->definition = mgmt__object_member(it, "definition")) ==
	    NULL) {
		errbuf_set(err, errlen, "GET %s: out of memory", path);
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

int
mgmt_list_policies(struct mgmt *m, struct mgmt_policy_list *out, char *err,
    size_t errlen)
{
	struct path p;
	void *v = NULL;
	int rc;

	if ((rc = mgmt__begin("mgmt_list_policies", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	mgmt__path_vhost(&p, m, "/api/policies/");
	if ((rc = mgmt__path_check(&p, "GET /api/policies", err, errlen)) != 0)
		return rc;
	rc = get_list(m, p.s, sizeof(*out->v), fill_policy, &v, &out->n,
	    &out->json, err, errlen);
	out->v = v;
	return rc;
}

MGMT__LIST_FREE(mgmt_policy_list_free, mgmt_policy_list)

const json_t *
mgmt_policy_definition(const struct mgmt_policy_list *pl, const char *name)
{
	for (size_t i = 0; name != NULL && i < pl->n; i++)
		if (strcmp(pl->v[i].name, name) == 0)
			return pl->v[i].definition;
	return NULL;
}

int
mgmt_put_policy(struct mgmt *m, const char *name, const char *pattern,
    const char *apply_to, int priority, const json_t *definition,
    char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || pattern == NULL || !json_is_object(definition)) {
		errbuf_set(err, errlen, "mgmt_put_policy: no client, pattern or "
		    "definition object");
		return MGMT_ERR_ARG;
	}
	if ((rc = mgmt__path_object(&p, m, "/api/policies/", name, "policy", err,
	    errlen)) != 0)
		return rc;
	if ((rc = mgmt__path_check(&p, "PUT /api/policies", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "pattern", json_string(pattern)) != 0 ||
	    json_object_set_new(body, "definition",
	    json_deep_copy(definition)) != 0 ||
	    json_object_set_new(body, "apply-to",
	    json_string(apply_to != NULL ? apply_to : "all")) != 0 ||
	    json_object_set_new(body, "priority",
	    json_integer(priority)) != 0) {
		json_decref(body);
		return mgmt__body_error("PUT", &p, err, errlen);
	}
	rc = mgmt_request(m, "PUT", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND)
		rc = MGMT_ERR_HTTP;	/* the vhost does not exist */
	return rc;
}

int
mgmt_delete_policy(struct mgmt *m, const char *name, char *err,
    size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL) {
		errbuf_set(err, errlen, "mgmt_delete_policy: no client");
		return MGMT_ERR_ARG;
	}
	if ((rc = mgmt__path_object(&p, m, "/api/policies/", name, "policy", err,
	    errlen)) != 0)
		return rc;
	if ((rc = mgmt__path_check(&p, "DELETE /api/policies", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}
