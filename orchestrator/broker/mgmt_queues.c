/* mgmt_queues: listing queues (the fast unpaginated listing joined with
 * policies and consumers) and reading one queue (see mgmt.h). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mgmt_int.h"
#include "strblocks.h"

static int
queue_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mgmt_queue *)a)->name,
	    ((const struct mgmt_queue *)b)->name);
}

/* A queue list as it is built, one listed queue at a time: its strings
 * go into blocks that never move (strblocks), so each queue points at
 * its own at once. */
struct qbuild {
	struct mgmt_queue *v;
	size_t n, cap;
	struct strblocks *s;
	int stats;			/* see mgmt__queues_from_json */
	const char *what;		/* "GET /api/queues" */
};

/* The queue types every queue names: pointed at, not copied. */
static const char *const known_types[] = { "", "classic", "quorum", "stream" };

/* STR (NULL: none) kept in B: one of KNOWN_TYPES when it is one, else a
 * copy in B's blocks. Returns it, or NULL for NULL and when out of
 * memory (then *FAILED is set). */
static const char *
qb_string(struct qbuild *b, const char *str, bool *failed)
{
	const char *at;

	if (str == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(known_types) / sizeof(known_types[0]); i++)
		if (strcmp(str, known_types[i]) == 0)
			return known_types[i];
	if ((at = strblocks_put(&b->s, str)) == NULL)
		*failed = true;
	return at;
}

/* STR kept in B as qb_string keeps it, or PREV (the queue before's) when
 * it is the same text: the queues of one delay system, listed in name
 * order, mostly dead-letter to one exchange and routing key under one
 * policy. */
static const char *
qb_shared(struct qbuild *b, const char *str, const char *prev, bool *failed)
{
	if (str != NULL && prev != NULL && strcmp(str, prev) == 0)
		return prev;
	return qb_string(b, str, failed);
}

/* Adds queue IT (an object of the listing) to B (ARG). Returns 0, or
 * MGMT_ERR_ANSWER (no name) or MGMT_ERR_NOMEM with ERR. */
static int
qb_add(void *arg, json_t *it, char *err, size_t errlen)
{
	struct qbuild *b = arg;
	const json_t *args = json_object_get(it, "arguments");
	const char *name = mgmt__str_member(it, "name"), *type, *policy;
	struct mgmt_queue *q, prev = { 0 };
	bool failed = false;

	if (name == NULL) {
		errbuf_set(err, errlen, "%s: queue %zu of the answer has no name",
		    b->what, b->n);
		return MGMT_ERR_ANSWER;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap > 0 ? b->cap * 2 : 256;
		void *v = realloc(b->v, cap * sizeof(*b->v));

		if (v == NULL)
			goto nomem;
		b->v = v;
		b->cap = cap;
	}
	if (b->n > 0)
		prev = b->v[b->n - 1];
	q = &b->v[b->n];
	memset(q, 0, sizeof(*q));
	type = mgmt__str_member(it, "type");
	policy = mgmt__str_member(it, "policy");
	q->name = qb_string(b, name, &failed);
	q->type = qb_string(b, type != NULL ? type : "", &failed);
	q->policy = qb_shared(b, policy != NULL && policy[0] != '\0' ? policy : NULL,
	    prev.policy, &failed);
	q->dead_letter_exchange = qb_shared(b, mgmt__str_member(args,
	    "x-dead-letter-exchange"), prev.dead_letter_exchange, &failed);
	q->dead_letter_routing_key = qb_shared(b, mgmt__str_member(args,
	    "x-dead-letter-routing-key"), prev.dead_letter_routing_key, &failed);
	if (failed)
		goto nomem;
	q->durable = json_is_true(json_object_get(it, "durable"));
	q->messages = mgmt__int_member(it, "messages");
	q->message_ttl = mgmt__int_member(args, "x-message-ttl");
	q->expires = mgmt__int_member(args, "x-expires");
	q->publish = mgmt__int_member(json_object_get(it, "message_stats"), "publish");
	if (b->stats) {
		q->consumers = (int32_t)mgmt__int_member(it, "consumers");
		q->policy_message_ttl = mgmt__int_member(json_object_get(it,
		    "effective_policy_definition"), "message-ttl");
	} else {
		q->consumers = -1;
		q->policy_message_ttl = -1;
	}
	b->n++;
	return 0;
nomem:
	errbuf_set(err, errlen, "%s: out of memory for %zu queues", b->what, b->n + 1);
	return MGMT_ERR_NOMEM;
}

/* Makes *OUT of B (sorted by name) and empties B. */
static void
qb_end(struct qbuild *b, struct mgmt_queue_list *out)
{
	if (b->n > 1)
		qsort(b->v, b->n, sizeof(*b->v), queue_cmp);
	out->v = b->v;
	out->n = b->n;
	out->strings = b->s;
	memset(b, 0, sizeof(*b));
}

static void
qb_free(struct qbuild *b)
{
	free(b->v);
	strblocks_free(&b->s);
	memset(b, 0, sizeof(*b));
}

/* Builds *OUT from ITEMS, an array of queue objects. With STATS, the
 * objects come from a statistics listing (effective_policy_definition,
 * consumers); otherwise policy_message_ttl and consumers stay -1. */
int
mgmt__queues_from_json(const json_t *items, int stats, const char *what,
    struct mgmt_queue_list *out, char *err, size_t errlen)
{
	struct qbuild b = { .stats = stats, .what = what };
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < json_array_size(items); i++)
		if ((rc = qb_add(&b, json_array_get(items, i), err, errlen)) != 0) {
			qb_free(&b);
			return rc;
		}
	qb_end(&b, out);
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
	strblocks_free(&l->strings);
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

/* The records' listing as it sets the policies of list L. */
struct records {
	struct mgmt_queue_list *l;
	const char *last;		/* the last policy name copied */
};

/* mgmt__get_items' callback: sets the policy of queue IT's namesake in
 * the list ARG holds to the one IT names. Returns 0, or MGMT_ERR_NOMEM
 * with ERR. */
static int
record_policy(void *arg, json_t *it, char *err, size_t errlen)
{
	struct records *rs = arg;
	struct mgmt_queue *q = find_queue(rs->l, mgmt__str_member(it, "name"));
	const char *policy = mgmt__str_member(it, "policy");

	if (q == NULL)
		return 0;
	if (policy == NULL || policy[0] == '\0') {
		q->policy = NULL;
		return 0;
	}
	/* The statistics' name stands when it is the same; a vhost has a
	 * few policies, so one copy serves the queues that follow. */
	if (q->policy != NULL && strcmp(q->policy, policy) == 0)
		return 0;
	if (rs->last == NULL || strcmp(rs->last, policy) != 0)
		rs->last = strblocks_put(&rs->l->strings, policy);
	if ((q->policy = rs->last) == NULL) {
		errbuf_set(err, errlen, "GET /api/queues (policies): out of memory");
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

/* Sets the policy of each queue of L from the queue records' listing
 * (names and policies, no statistics and no totals: at 100,000 queues
 * 4.4 s of the broker's time against 14.5 s with the totals), read a
 * queue at a time: the statistics name a policy applied or changed only
 * some seconds after the records do, and a policy just put (a
 * dead-letter exchange, a TTL) must count at once. A queue the records
 * no longer have keeps what the statistics said. Returns 0, or a code
 * with ERR. */
static int
policies_from_records(struct mgmt *m, struct mgmt_queue_list *l, char *err,
    size_t errlen)
{
	struct records rs = { .l = l };
	struct path p;
	int rc;

	mgmt__path_vhost(&p, m, "/api/queues/");
	mgmt__path_add(&p, "?disable_stats=true&columns=name,policy");
	if ((rc = mgmt__path_check(&p, "GET /api/queues (policies)", err, errlen)) != 0)
		return rc;
	return mgmt__get_items(m, p.s, record_policy, &rs, err, errlen);
}

/* The fast listing (or, with COUNTED, the statistics one with the publish
 * counters, as mgmt_list_queues_all reads them, each queue's policy as
 * the records say), joined
 * with the policies and the consumers. Each listed queue goes into the
 * list as it is read (qb_add): the listing is never one tree. */
static int
list_queues(struct mgmt *m, bool counted, struct mgmt_queue_list *out, char *err,
    size_t errlen)
{
	struct qbuild b = { .what = "GET /api/queues" };
	struct path p;
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
	mgmt__path_vhost(&p, m, "/api/queues/");
	mgmt__path_add(&p, "?disable_stats=true&enable_queue_totals=true&columns="
	    FAST_COLUMNS);
	if ((rc = mgmt__path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	if (!counted)
		rc = mgmt__get_items(m, p.s, qb_add, &b, err, errlen);
	else
		rc = mgmt_list_queues_each(m, FAST_COLUMNS ",message_stats.publish",
		    qb_add, &b, err, errlen);
	if (rc != 0) {
		qb_free(&b);
		return rc;
	}
	qb_end(&b, out);
	if (counted && (rc = policies_from_records(m, out, err, errlen)) != 0)
		goto done;
	if ((rc = join_policies(m, out, err, errlen)) != 0)
		goto done;
	rc = join_consumers(m, out, err, errlen);
done:
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
	q->consumers = (int32_t)mgmt__int_member(j, "consumers");
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
