/* mgmt_queues: listing queues (the fast unpaginated listing joined with
 * policies and consumers) and reading one queue (see mgmt.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt_int.h"

static int
queue_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mgmt_queue *)a)->name,
	    ((const struct mgmt_queue *)b)->name);
}

static char *
stash(char **p, const char *s)
{
	char *r = *p;
	size_t n = strlen(s) + 1;

	memcpy(r, s, n);
	*p += n;
	return r;
}

/* S copied at *P (advanced past it), or NULL when S is NULL. */
static char *
stash_or_null(char **p, const char *s)
{
	return s != NULL ? stash(p, s) : NULL;
}

/* The bytes ARGS's dead-letter exchange and routing key take in strings. */
static size_t
dead_letter_size(const json_t *args)
{
	const char *x = mgmt__str_member(args, "x-dead-letter-exchange");
	const char *k = mgmt__str_member(args, "x-dead-letter-routing-key");

	return (x != NULL ? strlen(x) + 1 : 0) + (k != NULL ? strlen(k) + 1 : 0);
}

/* Builds *OUT from ITEMS, an array of queue objects. With STATS, the
 * objects come from a statistics listing (effective_policy_definition,
 * consumers); otherwise policy_message_ttl and consumers stay -1. */
int
mgmt__queues_from_json(const json_t *items, int stats, const char *what,
    struct mgmt_queue_list *out, char *err, size_t errlen)
{
	const json_t *it, *args;
	struct mgmt_queue *q;
	const char *name, *type, *policy;
	size_t i, n, size = 0;
	char *p;

	memset(out, 0, sizeof(*out));
	n = json_array_size(items);
	for (i = 0; i < n; i++) {
		it = json_array_get(items, i);
		if ((name = mgmt__str_member(it, "name")) == NULL) {
			errbuf_set(err, errlen, "%s: queue %zu of the answer has "
			    "no name", what, i);
			return MGMT_ERR_ANSWER;
		}
		type = mgmt__str_member(it, "type");
		policy = mgmt__str_member(it, "policy");
		size += strlen(name) + 1 + (type ? strlen(type) : 0) + 1;
		if (policy != NULL && policy[0] != '\0')
			size += strlen(policy) + 1;
		size += dead_letter_size(json_object_get(it, "arguments"));
	}
	if ((n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) ||
	    (out->strings = malloc(size + 1)) == NULL) {
		free(out->v);
		out->v = NULL;
		errbuf_set(err, errlen, "%s: out of memory for %zu queues", what,
		    n);
		return MGMT_ERR_NOMEM;
	}
	p = out->strings;
	for (i = 0; i < n; i++) {
		it = json_array_get(items, i);
		q = &out->v[i];
		q->name = stash(&p, mgmt__str_member(it, "name"));
		type = mgmt__str_member(it, "type");
		q->type = stash(&p, type != NULL ? type : "");
		policy = mgmt__str_member(it, "policy");
		q->policy = policy != NULL && policy[0] != '\0' ?
		    stash(&p, policy) : NULL;
		q->durable = json_is_true(json_object_get(it, "durable"));
		q->messages = mgmt__int_member(it, "messages");
		args = json_object_get(it, "arguments");
		q->message_ttl = mgmt__int_member(args, "x-message-ttl");
		q->expires = mgmt__int_member(args, "x-expires");
		q->dead_letter_exchange = stash_or_null(&p, mgmt__str_member(args,
		    "x-dead-letter-exchange"));
		q->dead_letter_routing_key = stash_or_null(&p, mgmt__str_member(args,
		    "x-dead-letter-routing-key"));
		q->publish = mgmt__int_member(json_object_get(it, "message_stats"),
		    "publish");
		if (stats) {
			q->consumers = mgmt__int_member(it, "consumers");
			q->policy_message_ttl = mgmt__int_member(json_object_get(it,
			    "effective_policy_definition"), "message-ttl");
		} else {
			q->consumers = -1;
			q->policy_message_ttl = -1;
		}
	}
	out->n = n;
	if (n > 1)
		qsort(out->v, n, sizeof(*out->v), queue_cmp);
	return 0;
}

static struct mgmt_queue *
find_queue(const struct mgmt_queue_list *l, const char *name)
{
	struct mgmt_queue key;

	if (l == NULL || l->n == 0 || name == NULL)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = name;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), queue_cmp);
}

const struct mgmt_queue *
mgmt_queue_list_find(const struct mgmt_queue_list *l, const char *name)
{
	return find_queue(l, name);
}

void
mgmt_queue_list_free(struct mgmt_queue_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	free(l->strings);
	memset(l, 0, sizeof(*l));
}

/* Fills policy_message_ttl from the named policies' definitions. */
static int
join_policies(struct mgmt *m, struct mgmt_queue_list *l, char *err,
    size_t errlen)
{
	struct mgmt_policy_list pl;
	size_t i, k;
	int rc;

	if ((rc = mgmt_list_policies(m, &pl, err, errlen)) != 0)
		return rc;
	for (i = 0; i < l->n; i++) {
		if (l->v[i].policy == NULL)
			continue;
		for (k = 0; k < pl.n; k++)
			if (strcmp(pl.v[k].name, l->v[i].policy) == 0) {
				l->v[i].policy_message_ttl = mgmt__int_member(
				    pl.v[k].definition, "message-ttl");
				break;
			}
	}
	mgmt_policy_list_free(&pl);
	return 0;
}

/* Sets consumers from GET /api/consumers/{vhost}: 0 unless listed. */
static int
join_consumers(struct mgmt *m, struct mgmt_queue_list *l, char *err,
    size_t errlen)
{
	struct path p;
	struct mgmt_queue *q;
	json_t *j = NULL;
	const char *name;
	size_t i;
	int rc;

	mgmt__path_vhost(&p, m, "/api/consumers/");
	mgmt__path_add(&p, "?columns=queue.name");
	if ((rc = mgmt__get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	for (i = 0; i < l->n; i++)
		l->v[i].consumers = 0;
	for (i = 0; i < json_array_size(j); i++) {
		name = mgmt__str_member(json_object_get(json_array_get(j, i),
		    "queue"), "name");
		if ((q = find_queue(l, name)) != NULL)
			q->consumers++;
	}
	json_decref(j);
	return 0;
}

/* The fast listing (or, with COUNTED, the statistics one with the publish
 * counters, in pages), joined with the policies and the consumers. */
static int
list_queues(struct mgmt *m, bool counted, struct mgmt_queue_list *out, char *err,
    size_t errlen)
{
	struct path p;
	json_t *j = NULL;
	int rc;

	if (out == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues: no result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if (m == NULL) {
		errbuf_set(err, errlen, "mgmt_list_queues: no client");
		return MGMT_ERR_ARG;
	}
	if (counted)
		rc = mgmt_list_queues_all(m, FAST_COLUMNS ",message_stats.publish", &j,
		    err, errlen);
	else {
		mgmt__path_vhost(&p, m, "/api/queues/");
		mgmt__path_add(&p, "?disable_stats=true&enable_queue_totals=true&columns="
		    FAST_COLUMNS);
		if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
			return rc;
		rc = mgmt__get_json(m, p.s, 1, &j, err, errlen);
	}
	if (rc != 0)
		goto done;
	if ((rc = mgmt__queues_from_json(j, 0, "GET /api/queues", out, err,
	    errlen)) != 0)
		goto done;
	json_decref(j);
	j = NULL;
	if ((rc = join_policies(m, out, err, errlen)) != 0)
		goto done;
	rc = join_consumers(m, out, err, errlen);
done:
	json_decref(j);
	if (rc != 0)
		mgmt_queue_list_free(out);
	return rc;
}

int
mgmt_list_queues(struct mgmt *m, struct mgmt_queue_list *out, char *err,
    size_t errlen)
{
	return list_queues(m, false, out, err, errlen);
}

int
mgmt_list_queues_counted(struct mgmt *m, struct mgmt_queue_list *out, char *err,
    size_t errlen)
{
	return list_queues(m, true, out, err, errlen);
}

int
mgmt_get_queue(struct mgmt *m, const char *name, struct mgmt_queue_info *out,
    char *err, size_t errlen)
{
	struct mgmt_queue *q;
	json_t *j = NULL;
	const char *s;
	int rc;

	if ((rc = mgmt__begin("mgmt_get_queue", m, out, sizeof(*out), err, errlen)) != 0)
		return rc;
	if ((rc = mgmt__get_object(m, "/api/queues/", name, "a queue",
	    "?columns=" QUEUE_COLUMNS, &j, err, errlen)) != 0)
		return rc;
	if ((out->arguments = mgmt__object_member(j, "arguments")) == NULL ||
	    (out->effective_policy = mgmt__object_member(j,
	    "effective_policy_definition")) == NULL) {
		json_decref(j);
		memset(out, 0, sizeof(*out));
		errbuf_set(err, errlen, "mgmt_get_queue: out of memory");
		return MGMT_ERR_NOMEM;
	}
	out->json = j;
	q = &out->q;
	q->name = mgmt__str_member(j, "name");
	q->type = (s = mgmt__str_member(j, "type")) != NULL ? s : "";
	s = mgmt__str_member(j, "policy");
	q->policy = s != NULL && s[0] != '\0' ? s : NULL;
	s = mgmt__str_member(j, "operator_policy");
	out->operator_policy = s != NULL && s[0] != '\0' ? s : NULL;
	q->durable = json_is_true(json_object_get(j, "durable"));
	q->messages = mgmt__int_member(j, "messages");
	q->publish = -1;		/* not asked for */
	q->consumers = mgmt__int_member(j, "consumers");
	q->message_ttl = mgmt__int_member(out->arguments, "x-message-ttl");
	q->expires = mgmt__int_member(out->arguments, "x-expires");
	q->dead_letter_exchange = mgmt__str_member(out->arguments, "x-dead-letter-exchange");
	q->dead_letter_routing_key = mgmt__str_member(out->arguments,
	    "x-dead-letter-routing-key");
	q->policy_message_ttl = mgmt__int_member(out->effective_policy,
	    "message-ttl");
	return 0;
}

MGMT__HOLDER_FREE(mgmt_queue_info_free, mgmt_queue_info)
