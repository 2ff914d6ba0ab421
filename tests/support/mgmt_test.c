/* mgmt_test: the management API calls only tests and bench make (see
 * mgmt_test.h): the overview, paginated listings, and putting and deleting
 * queues, exchanges and bindings to set up or introduce drift. Linked into
 * the integration tests and bench_old_path, not into cutover. */
#include <string.h>

#include "broker/mgmt_int.h"
#include "mgmt_test.h"

void
mgmt_set_timeouts(struct mgmt *m, long connect_ms, long total_ms)
{
	if (m == NULL)
		return;
	if (connect_ms > 0)
		m->connect_ms = connect_ms;
	if (total_ms > 0)
		m->total_ms = total_ms;
}

void
mgmt_set_one_listing_max(struct mgmt *m, long max)
{
	if (m != NULL && max >= 0)
		m->one_listing_max = max;
}

void
mgmt_set_listing_hook(struct mgmt *m, void (*hook)(void *arg, size_t request), void *arg)
{
	if (m == NULL)
		return;
	m->listing_hook = hook;
	m->listing_hook_arg = arg;
}

static void
copy_str(char *dst, size_t dstlen, const char *src)
{
	snprintf(dst, dstlen, "%s", src != NULL ? src : "");
}

int
mgmt_overview(struct mgmt *m, struct mgmt_overview *ov, char *err,
    size_t errlen)
{
	json_t *j = NULL;
	int rc;

	if (ov == NULL) {
		errbuf_set(err, errlen, "mgmt_overview: no result");
		return MGMT_ERR_ARG;
	}
	memset(ov, 0, sizeof(*ov));
	if ((rc = mgmt__get_json(m, "/api/overview", 0, &j, err, errlen)) != 0)
		return rc;
	copy_str(ov->rabbitmq_version, sizeof(ov->rabbitmq_version),
	    mgmt__str_member(j, "rabbitmq_version"));
	copy_str(ov->management_version, sizeof(ov->management_version),
	    mgmt__str_member(j, "management_version"));
	copy_str(ov->erlang_version, sizeof(ov->erlang_version),
	    mgmt__str_member(j, "erlang_version"));
	copy_str(ov->cluster_name, sizeof(ov->cluster_name),
	    mgmt__str_member(j, "cluster_name"));
	copy_str(ov->node, sizeof(ov->node), mgmt__str_member(j, "node"));
	json_decref(j);
	if (ov->rabbitmq_version[0] == '\0') {
		errbuf_set(err, errlen, "GET /api/overview: the answer has no "
		    "rabbitmq_version; is this a RabbitMQ management API?");
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

/* GET one page into *ANSWER (the whole object, items checked). */
static int
get_page(struct mgmt *m, const char *name_regex, int page, int page_size,
    json_t **answer, struct mgmt_page *pg, char *err, size_t errlen)
{
	struct path p;
	char num[64], what[WHAT_MAX];
	json_t *j = NULL;
	int rc;

	*answer = NULL;
	if (page < 1 || page_size < 1 || page_size > MGMT_PAGE_SIZE_MAX) {
		errbuf_set(err, errlen, "mgmt: page %d, page size %d: the page "
		    "must be at least 1 and the size 1 to %d", page, page_size,
		    MGMT_PAGE_SIZE_MAX);
		return MGMT_ERR_ARG;
	}
	mgmt__path_vhost(&p, m, "/api/queues/");
	snprintf(num, sizeof(num), "?page=%d&page_size=%d", page, page_size);
	mgmt__path_add(&p, num);
	if (name_regex != NULL && name_regex[0] != '\0') {
		mgmt__path_add(&p, "&name=");
		mgmt__path_seg(&p, name_regex);
		mgmt__path_add(&p, "&use_regex=true");
	}
	mgmt__path_add(&p, "&columns=" PAGE_COLUMNS);
	if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	if ((rc = mgmt__get_json(m, p.s, 0, &j, err, errlen)) != 0)
		return rc;
	if (!json_is_array(json_object_get(j, "items"))) {
		mgmt__describe(what, sizeof(what), "GET", p.s);
		errbuf_set(err, errlen, "%s: answer has no items array (not a "
		    "paginated answer)", what);
		json_decref(j);
		return MGMT_ERR_ANSWER;
	}
	if (pg != NULL) {
		pg->page = (int)mgmt__int_member(j, "page");
		pg->page_size = (int)mgmt__int_member(j, "page_size");
		pg->page_count = (int)mgmt__int_member(j, "page_count");
		pg->item_count = (long)mgmt__int_member(j, "item_count");
		pg->filtered_count = (long)mgmt__int_member(j, "filtered_count");
		pg->total_count = (long)mgmt__int_member(j, "total_count");
	}
	*answer = j;
	return 0;
}

int
mgmt_list_queues_page(struct mgmt *m, const char *name_regex, int page,
    int page_size, struct mgmt_queue_list *out, struct mgmt_page *pg,
    char *err, size_t errlen)
{
	json_t *j = NULL;
	int rc;

	if (out == NULL || m == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues_page: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if (pg != NULL)
		memset(pg, 0, sizeof(*pg));
	if ((rc = get_page(m, name_regex, page, page_size, &j, pg, err,
	    errlen)) != 0)
		return rc;
	rc = mgmt__queues_from_json(json_object_get(j, "items"), 1,
	    "GET /api/queues (page)", out, err, errlen);
	json_decref(j);
	return rc;
}

int
mgmt_list_queues_paged(struct mgmt *m, const char *name_regex,
    int page_size, struct mgmt_queue_list *out, char *err, size_t errlen)
{
	struct mgmt_page pg;
	json_t *all = NULL, *j = NULL;
	int rc, page;

	if (out == NULL || m == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues_paged: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((all = json_array()) == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues_paged: out of memory");
		return MGMT_ERR_NOMEM;
	}
	for (page = 1;; page++) {
		if ((rc = get_page(m, name_regex, page, page_size, &j, &pg,
		    err, errlen)) != 0)
			goto done;
		if (json_array_extend(all, json_object_get(j, "items")) != 0) {
			rc = MGMT_ERR_NOMEM;
			errbuf_set(err, errlen, "mgmt_list_queues_paged: out of "
			    "memory");
			goto done;
		}
		json_decref(j);
		j = NULL;
		if (page >= pg.page_count)
			break;
	}
	rc = mgmt__queues_from_json(all, 1, "GET /api/queues (pages)", out, err,
	    errlen);
done:
	json_decref(j);
	json_decref(all);
	return rc;
}

/* A deep copy of A, or an empty object when A is NULL; NULL on failure. */
static json_t *
copy_or_empty(const json_t *a)
{
	return a != NULL ? json_deep_copy(a) : json_object();
}

/* "/api/bindings/{vhost}/e/{source}/q|e/{dest}" into P. */
static int
binding_path(struct path *p, struct mgmt *m, const char *source,
    enum mgmt_dest kind, const char *dest, char *err, size_t errlen)
{
	int rc;

	if ((rc = mgmt__check_name(source, "source exchange", err, errlen)) != 0 ||
	    (rc = mgmt__check_name(dest, "destination", err, errlen)) != 0)
		return rc;
	if (kind != MGMT_DEST_QUEUE && kind != MGMT_DEST_EXCHANGE) {
		errbuf_set(err, errlen, "mgmt: binding destination kind %d",
		    (int)kind);
		return MGMT_ERR_ARG;
	}
	mgmt__path_vhost(p, m, "/api/bindings/");
	mgmt__path_add(p, "/e/");
	mgmt__path_seg(p, source);
	mgmt__path_add(p, kind == MGMT_DEST_QUEUE ? "/q/" : "/e/");
	mgmt__path_seg(p, dest);
	return 0;
}

int
mgmt_add_binding(struct mgmt *m, const char *source, enum mgmt_dest kind,
    const char *dest, const char *routing_key, const json_t *arguments,
    char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || routing_key == NULL) {
		errbuf_set(err, errlen, "mgmt_add_binding: no client or routing "
		    "key");
		return MGMT_ERR_ARG;
	}
	if (arguments != NULL && !json_is_object(arguments)) {
		errbuf_set(err, errlen, "mgmt_add_binding: arguments must be an "
		    "object");
		return MGMT_ERR_ARG;
	}
	if ((rc = binding_path(&p, m, source, kind, dest, err, errlen)) != 0 ||
	    (rc = mgmt__path_check(&p, "POST /api/bindings", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "routing_key",
	    json_string(routing_key)) != 0 ||
	    json_object_set_new(body, "arguments",
	    copy_or_empty(arguments)) != 0) {
		json_decref(body);
		return mgmt__body_error("POST", &p, err, errlen);
	}
	rc = mgmt_request(m, "POST", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND) {
		errbuf_set(err, errlen, "POST %s: not found (HTTP 404): exchange "
		    "\"%s\" or %s \"%s\" does not exist", p.s, source,
		    kind == MGMT_DEST_QUEUE ? "queue" : "exchange", dest);
		rc = MGMT_ERR_HTTP;
	}
	return rc;
}

int
mgmt_delete_binding(struct mgmt *m, const char *source, enum mgmt_dest kind,
    const char *dest, const char *properties_key, char *err, size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL || properties_key == NULL) {
		errbuf_set(err, errlen, "mgmt_delete_binding: no client or "
		    "properties key");
		return MGMT_ERR_ARG;
	}
	if ((rc = binding_path(&p, m, source, kind, dest, err, errlen)) != 0)
		return rc;
	mgmt__path_add(&p, "/");
	mgmt__path_seg(&p, properties_key);
	if ((rc = mgmt__path_check(&p, "DELETE /api/bindings", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}

/* The paths and the words of the objects put and deleted below. */
struct object_kind {
	const char *prefix, *kind, *put, *del;
};

static const struct object_kind queue_kind = { "/api/queues/", "queue",
	"PUT /api/queues", "DELETE /api/queues" };
static const struct object_kind exchange_kind = { "/api/exchanges/",
	"exchange", "PUT /api/exchanges", "DELETE /api/exchanges" };

/* PUTs BODY (taken, released here; NULL: building it failed) as object
 * NAME of kind K in M's vhost. Returns 0, or a MGMT_ code with ERR: a bad
 * name or path, the body, or the request (a 404, no such vhost, is
 * MGMT_ERR_HTTP). */
static int
put_object(struct mgmt *m, const struct object_kind *k, const char *name,
    json_t *body, char *err, size_t errlen)
{
	struct path p;
	int rc;

	if ((rc = mgmt__path_object(&p, m, k->prefix, name, k->kind, err,
	    errlen)) != 0 || (rc = mgmt__path_check(&p, k->put, err,
	    errlen)) != 0) {
		json_decref(body);
		return rc;
	}
	if (body == NULL)
		return mgmt__body_error("PUT", &p, err, errlen);
	rc = mgmt_request(m, "PUT", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND)
		rc = MGMT_ERR_HTTP;
	return rc;
}

/* DELETEs object NAME of kind K in M's vhost, QUERY ("" or "?...")
 * appended to its path. Returns 0, MGMT_NOT_FOUND when it is not there,
 * or a MGMT_ code with ERR. */
static int
delete_object(struct mgmt *m, const struct object_kind *k, const char *name,
    const char *query, char *err, size_t errlen)
{
	struct path p;
	int rc;

	if ((rc = mgmt__path_object(&p, m, k->prefix, name, k->kind, err,
	    errlen)) != 0)
		return rc;
	if (query[0] != '\0')
		mgmt__path_add(&p, query);
	if ((rc = mgmt__path_check(&p, k->del, err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}

int
mgmt_put_queue(struct mgmt *m, const char *name, bool durable,
    const json_t *arguments, char *err, size_t errlen)
{
	if (m == NULL || (arguments != NULL && !json_is_object(arguments))) {
		errbuf_set(err, errlen, "mgmt_put_queue: no client, or arguments "
		    "not an object");
		return MGMT_ERR_ARG;
	}
	return put_object(m, &queue_kind, name, json_pack("{s:b, s:b, s:o}",
	    "durable", durable, "auto_delete", 0, "arguments",
	    copy_or_empty(arguments)), err, errlen);
}

int
mgmt_delete_queue(struct mgmt *m, const char *name, int flags, char *err,
    size_t errlen)
{
	const char *query = "";

	if (m == NULL) {
		errbuf_set(err, errlen, "mgmt_delete_queue: no client");
		return MGMT_ERR_ARG;
	}
	if (flags & MGMT_IF_EMPTY)
		query = (flags & MGMT_IF_UNUSED) ?
		    "?if-empty=true&if-unused=true" : "?if-empty=true";
	else if (flags & MGMT_IF_UNUSED)
		query = "?if-unused=true";
	return delete_object(m, &queue_kind, name, query, err, errlen);
}

int
mgmt_put_exchange(struct mgmt *m, const char *name, const char *type,
    bool durable, const json_t *arguments, char *err, size_t errlen)
{
	if (m == NULL || type == NULL ||
	    (arguments != NULL && !json_is_object(arguments))) {
		errbuf_set(err, errlen, "mgmt_put_exchange: no client or type, or "
		    "arguments not an object");
		return MGMT_ERR_ARG;
	}
	return put_object(m, &exchange_kind, name, json_pack(
	    "{s:s, s:b, s:b, s:b, s:o}", "type", type, "durable", durable,
	    "auto_delete", 0, "internal", 0, "arguments",
	    copy_or_empty(arguments)), err, errlen);
}

int
mgmt_delete_exchange(struct mgmt *m, const char *name, char *err,
    size_t errlen)
{
	if (m == NULL) {
		errbuf_set(err, errlen, "mgmt_delete_exchange: no client");
		return MGMT_ERR_ARG;
	}
	return delete_object(m, &exchange_kind, name, "", err, errlen);
}
