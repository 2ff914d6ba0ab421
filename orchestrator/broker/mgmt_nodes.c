/* mgmt_nodes: the cluster's nodes and where each queue runs (see
 * mgmt.h). */
#include <stdlib.h>
#include <string.h>

#include "mgmt_int.h"

int
mgmt_list_nodes(struct mgmt *m, struct mgmt_node_list *out, char *err,
    size_t errlen)
{
	static const char path[] = "/api/nodes?columns=name,running,uptime,"
	    "os_pid,connection_created,channel_created,queue_declared";
	void *v;
	size_t n;
	int rc;

	if ((rc = mgmt__begin("mgmt_list_nodes", m, out, sizeof(*out), err, errlen)) != 0 ||
	    (rc = mgmt__get_array(m, path, "/api/nodes", sizeof(*out->v), &out->json, &v,
	    &n, err, errlen)) != 0)
		return rc;
	out->v = v;
	for (out->n = 0; out->n < n; out->n++) {
		const json_t *it = json_array_get(out->json, out->n);
		struct mgmt_node *nd = &out->v[out->n];

		if ((nd->name = mgmt__str_member(it, "name")) == NULL) {
			errbuf_set(err, errlen, "GET /api/nodes: node %zu of the answer "
			    "has no name", out->n);
			mgmt_node_list_free(out);
			return MGMT_ERR_ANSWER;
		}
		nd->running = json_is_true(json_object_get(it, "running"));
		nd->uptime_ms = mgmt__int_member(it, "uptime");
		nd->os_pid = mgmt__str_member(it, "os_pid");
		nd->connection_created = mgmt__int_member(it, "connection_created");
		nd->channel_created = mgmt__int_member(it, "channel_created");
		nd->queue_declared = mgmt__int_member(it, "queue_declared");
	}
	return 0;
}

MGMT__LIST_FREE(mgmt_node_list_free, mgmt_node_list)

static int
cmp_place(const void *a, const void *b)
{
	return strcmp(((const struct mgmt_queue_place *)a)->name,
	    ((const struct mgmt_queue_place *)b)->name);
}

/* Adds the place of queue IT (an object of a queue listing) to L, whose
 * V has room; IT stays owned by L's JSON. */
static void
place_from(const json_t *it, struct mgmt_queue_place_list *l)
{
	struct mgmt_queue_place *q = &l->v[l->n];
	const char *type = mgmt__str_member(it, "type");

	if ((q->name = mgmt__str_member(it, "name")) == NULL)
		return;
	q->type = type != NULL ? type : "";
	if (strcmp(q->type, "classic") == 0) {
		q->leader = mgmt__str_member(it, "node");
		q->members = q->online = 1;
	} else {
		q->leader = mgmt__str_member(it, "leader");
		q->members = json_array_size(json_object_get(it, "members"));
		q->online = json_array_size(json_object_get(it, "online"));
	}
	l->n++;
}

int
mgmt_list_queue_places(struct mgmt *m, struct mgmt_queue_place_list *out,
    char *err, size_t errlen)
{
	struct path p;
	void *v;
	size_t n, i;
	int rc;

	if ((rc = mgmt__begin("mgmt_list_queue_places", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	mgmt__path_vhost(&p, m, "/api/queues/");
	mgmt__path_add(&p, "?disable_stats=true&enable_queue_totals=true&columns=name,"
	    "type,node,leader,members,online");
	if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0 ||
	    (rc = mgmt__get_array(m, p.s, "/api/queues", sizeof(*out->v), &out->json, &v,
	    &n, err, errlen)) != 0)
		return rc;
	out->v = v;
	for (i = 0; i < n; i++)
		place_from(json_array_get(out->json, i), out);
	qsort(out->v, out->n, sizeof(*out->v), cmp_place);
	return 0;
}

int
mgmt_list_queue_places_of(struct mgmt *m, const char *const *names, size_t n,
    struct mgmt_queue_place_list *out, char *err, size_t errlen)
{
	struct path p;
	json_t *j;
	int rc = 0;

	if ((rc = mgmt__begin("mgmt_list_queue_places_of", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	if ((out->json = json_array()) == NULL ||
	    (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL)) {
		mgmt_queue_place_list_free(out);
		errbuf_set(err, errlen, "GET /api/queues: out of memory");
		return MGMT_ERR_NOMEM;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		j = NULL;
		if ((rc = mgmt__path_object(&p, m, "/api/queues/", names[i], "queue", err,
		    errlen)) != 0)
			break;
		mgmt__path_add(&p, "?columns=name,type,node,leader,members,online");
		if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
			break;
		rc = mgmt_request(m, "GET", p.s, NULL, &j, NULL, err, errlen);
		if (rc == MGMT_NOT_FOUND) {
			rc = 0;		/* not listed, as in the listing */
			continue;
		}
		if (rc == 0 && json_is_object(j)) {
			json_array_append_new(out->json, j);
			place_from(j, out);
		} else
			json_decref(j);
	}
	if (rc != 0) {
		mgmt_queue_place_list_free(out);
		return rc;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_place);
	return 0;
}

const struct mgmt_queue_place *
mgmt_queue_place_find(const struct mgmt_queue_place_list *l, const char *name)
{
	struct mgmt_queue_place key = { .name = name };

	if (l == NULL || l->n == 0 || name == NULL)
		return NULL;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), cmp_place);
}

MGMT__LIST_FREE(mgmt_queue_place_list_free, mgmt_queue_place_list)
