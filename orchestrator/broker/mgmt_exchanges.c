/* mgmt_exchanges: reading an exchange and the bindings from it, and
 * listing, putting and deleting policies (see mgmt.h). */
#include <stdlib.h>
#include <string.h>

#include "mgmt_int.h"

int
mgmt_get_exchange(struct mgmt *m, const char *name, struct mgmt_exchange *out,
    char *err, size_t errlen)
{
	struct path p;
	json_t *j = NULL;
	const char *s;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_get_exchange: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = check_name(name, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "GET /api/exchanges", err, errlen)) != 0)
		return rc;
	rc = mgmt_request(m, "GET", p.s, NULL, &j, NULL, err, errlen);
	if (rc != 0)
		return rc;
	if (!json_is_object(j) || str_member(j, "name") == NULL) {
		seterr(err, errlen, "GET %s: answer is not an exchange", p.s);
		json_decref(j);
		return MGMT_ERR_ANSWER;
	}
	if ((out->arguments = object_member(j, "arguments")) == NULL) {
		json_decref(j);
		memset(out, 0, sizeof(*out));
		seterr(err, errlen, "mgmt_get_exchange: out of memory");
		return MGMT_ERR_NOMEM;
	}
	out->json = j;
	out->name = str_member(j, "name");
	out->type = (s = str_member(j, "type")) != NULL ? s : "";
	out->durable = json_is_true(json_object_get(j, "durable"));
	out->auto_delete = json_is_true(json_object_get(j, "auto_delete"));
	out->internal = json_is_true(json_object_get(j, "internal"));
	return 0;
}

void
mgmt_exchange_free(struct mgmt_exchange *x)
{
	if (x == NULL)
		return;
	json_decref(x->json);
	memset(x, 0, sizeof(*x));
}

int
mgmt_list_bindings_from(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen)
{
	struct mgmt_binding *b;
	struct path p;
	json_t *j = NULL, *it;
	const char *dt;
	size_t i, n;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_bindings_from: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = check_name(exchange, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, exchange);
	path_add(&p, "/bindings/source");
	if ((rc = path_check(&p, "GET /api/exchanges", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	n = json_array_size(j);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "GET %s: out of memory", p.s);
		goto done;
	}
	for (i = 0; i < n; i++) {
		it = json_array_get(j, i);
		b = &out->v[i];
		b->source = str_member(it, "source");
		b->destination = str_member(it, "destination");
		b->routing_key = str_member(it, "routing_key");
		b->properties_key = str_member(it, "properties_key");
		dt = str_member(it, "destination_type");
		if (b->source == NULL || b->destination == NULL ||
		    b->routing_key == NULL || b->properties_key == NULL ||
		    dt == NULL) {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: binding %zu of the answer "
			    "lacks a field", p.s, i);
			goto done;
		}
		if (strcmp(dt, "queue") == 0)
			b->destination_type = MGMT_DEST_QUEUE;
		else if (strcmp(dt, "exchange") == 0)
			b->destination_type = MGMT_DEST_EXCHANGE;
		else {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: binding %zu has "
			    "destination_type \"%s\"", p.s, i, dt);
			goto done;
		}
		if ((b->arguments = object_member(it, "arguments")) == NULL) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "GET %s: out of memory", p.s);
			goto done;
		}
	}
	out->n = n;
	out->json = j;
	j = NULL;
	rc = 0;
done:
	json_decref(j);
	if (rc != 0) {
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

void
mgmt_binding_list_free(struct mgmt_binding_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	json_decref(l->json);
	memset(l, 0, sizeof(*l));
}

int
mgmt_list_policies(struct mgmt *m, struct mgmt_policy_list *out, char *err,
    size_t errlen)
{
	struct mgmt_policy *pol;
	struct path p;
	json_t *j = NULL, *it;
	const char *s;
	size_t i, n;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_policies: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	path_vhost(&p, m, "/api/policies/");
	if ((rc = path_check(&p, "GET /api/policies", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	n = json_array_size(j);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "GET %s: out of memory", p.s);
		goto done;
	}
	for (i = 0; i < n; i++) {
		it = json_array_get(j, i);
		pol = &out->v[i];
		pol->name = str_member(it, "name");
		pol->pattern = str_member(it, "pattern");
		pol->apply_to = (s = str_member(it, "apply-to")) != NULL ? s :
		    "all";
		pol->priority = (int)json_integer_value(json_object_get(it,
		    "priority"));
		if (pol->name == NULL || pol->pattern == NULL) {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: policy %zu of the answer "
			    "has no name or pattern", p.s, i);
			goto done;
		}
		if ((pol->definition = object_member(it, "definition")) ==
		    NULL) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "GET %s: out of memory", p.s);
			goto done;
		}
	}
	out->n = n;
	out->json = j;
	j = NULL;
	rc = 0;
done:
	json_decref(j);
	if (rc != 0) {
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

void
mgmt_policy_list_free(struct mgmt_policy_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	json_decref(l->json);
	memset(l, 0, sizeof(*l));
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
		seterr(err, errlen, "mgmt_put_policy: no client, pattern or "
		    "definition object");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "policy", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/policies/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "PUT /api/policies", err, errlen)) != 0)
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
		return body_error("PUT", &p, err, errlen);
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
		seterr(err, errlen, "mgmt_delete_policy: no client");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "policy", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/policies/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "DELETE /api/policies", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}
