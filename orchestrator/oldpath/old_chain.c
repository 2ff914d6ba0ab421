/* old_chain: dead-letter chains among the old queues. An old queue whose
 * dead-letter exchange routes (through the exchange's bindings, as the
 * management API lists them) into another old queue feeds it: a message
 * that entered the first comes out of the second only after both TTLs.
 * measure_horizon counts the whole chain in the horizon (refusing a
 * cycle) and records it; remove_old deletes a queue only after every old
 * queue that feeds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "old_path.h"

#define ROUTE_DEPTH_MAX 8	/* exchange-to-exchange hops followed */

static int
sel_cmp(const void *key, const void *elem)
{
	return strcmp(key, ((const struct old_queue *)elem)->q->name);
}

const struct old_queue *
old_sel_find(const struct old_selection *s, const char *name)
{
	if (s->n == 0 || name == NULL)
		return NULL;
	return bsearch(name, s->v, s->n, sizeof(*s->v), sel_cmp);
}

#define BINDINGS_CACHED 256	/* exchanges whose bindings are kept */

/* What the routing needs: listings read once, and the bindings of each
 * exchange a dead-letter path goes through, read when first needed. The
 * queues' dead-letter arguments come with the selection's own listing
 * (struct mgmt_queue), read once per step. */
struct routes {
	struct step_ctx *c;
	json_t *exchanges;		/* name, type, arguments */
	struct mgmt_policy_list pl;
	struct {
		char *exchange;
		struct mgmt_binding_list bl;
	} cache[BINDINGS_CACHED];
	size_t ncache;
	int failed;			/* a bindings read failed: ERR says */
	char err[512];
};

/* The bindings whose source is exchange X (owned by R), or NULL when they
 * cannot be read (R->failed). */
static const struct mgmt_binding_list *
bindings_of(struct routes *r, const char *x)
{
	struct mgmt_binding_list bl = { 0 };
	char why[400];

	for (size_t i = 0; i < r->ncache; i++)
		if (strcmp(r->cache[i].exchange, x) == 0)
			return &r->cache[i].bl;
	if (r->ncache == BINDINGS_CACHED) {
		r->failed = 1;
		snprintf(r->err, sizeof(r->err), "dead-letter paths go through more than "
		    "%d exchanges", BINDINGS_CACHED);
		return NULL;
	}
	if (mgmt_list_bindings_from(r->c->old_mgmt, x, &bl, why, sizeof(why)) != 0 ||
	    (r->cache[r->ncache].exchange = strdup(x)) == NULL) {
		mgmt_binding_list_free(&bl);
		r->failed = 1;
		snprintf(r->err, sizeof(r->err), "reading the bindings of exchange '%.100s' "
		    "for dead-letter chains: %s", x, why);
		return NULL;
	}
	r->cache[r->ncache].bl = bl;
	return &r->cache[r->ncache++].bl;
}

const json_t *
old_json_by_name(const json_t *arr, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(arr, i, e)
		if (json_is_string(json_object_get(e, "name")) &&
		    strcmp(json_string_value(json_object_get(e, "name")), name) == 0)
			return e;
	return NULL;
}

json_t *
old_json_positions(const json_t *arr)
{
	json_t *idx = json_object(), *e;
	const char *name;
	size_t i;

	if (idx == NULL)
		return NULL;
	json_array_foreach(arr, i, e)
		if ((name = json_string_value(json_object_get(e, "name"))) != NULL &&
		    json_object_get(idx, name) == NULL &&
		    json_object_set_new(idx, name, json_integer((json_int_t)i)) != 0) {
			json_decref(idx);
			return NULL;
		}
	return idx;
}

/* Does topic binding key BK match routing key K ('*' one word, '#' zero
 * or more)? */
static bool
topic_match(const char *bk, const char *k)
{
	const char *bdot, *kdot;
	size_t blen, klen;

	if (*bk == '\0')
		return *k == '\0';
	bdot = strchr(bk, '.');
	blen = bdot ? (size_t)(bdot - bk) : strlen(bk);
	if (blen == 1 && bk[0] == '#') {
		if (bdot == NULL)
			return true;
		for (const char *p = k; ; p = kdot + 1) {
			if (topic_match(bdot + 1, p))
				return true;
			if ((kdot = strchr(p, '.')) == NULL)
				return false;
		}
	}
	if (*k == '\0')
		return false;
	kdot = strchr(k, '.');
	klen = kdot ? (size_t)(kdot - k) : strlen(k);
	if (!(blen == 1 && bk[0] == '*') && (blen != klen || strncmp(bk, k, blen) != 0))
		return false;
	if (bdot == NULL || kdot == NULL)
		return bdot == NULL && kdot == NULL;
	return topic_match(bdot + 1, kdot + 1);
}

bool
old_binding_takes(const char *type, const char *bk, const char *k)
{
	if (k == NULL || type == NULL)
		return true;
	if (strcmp(type, "direct") == 0)
		return strcmp(bk, k) == 0;
	if (strcmp(type, "topic") == 0)
		return topic_match(bk, k);
	return true;			/* fanout, headers, plugins: assume so */
}

/* Adds to TO (array of names) every selected old queue that a message
 * dead-lettered to exchange X with key K (NULL: unknown) can reach. */
static void
route(struct routes *r, const struct old_selection *s, const char *x,
    const char *k, int depth, json_t *to)
{
	const struct mgmt_binding_list *bl;
	const json_t *ex;
	const char *type, *ae;

	if (depth > ROUTE_DEPTH_MAX || r->failed)
		return;
	if (*x == '\0') {
		/* The default exchange: the queue named K. An unknown key is
		 * the one the message was published with: for a delay queue,
		 * its own name (not an edge). */
		if (k != NULL && old_sel_find(s, k) != NULL)
			json_array_append_new(to, json_string(k));
		return;
	}
	ex = old_json_by_name(r->exchanges, x);
	type = json_string_value(json_object_get(ex, "type"));
	if ((bl = bindings_of(r, x)) == NULL)
		return;
	for (size_t i = 0; i < bl->n; i++) {
		const struct mgmt_binding *b = &bl->v[i];

		if (b->destination == NULL ||
		    !old_binding_takes(type, b->routing_key ? b->routing_key : "", k))
			continue;
		if (b->destination_type == MGMT_DEST_QUEUE &&
		    old_sel_find(s, b->destination) != NULL)
			json_array_append_new(to, json_string(b->destination));
		else if (b->destination_type == MGMT_DEST_EXCHANGE)
			route(r, s, b->destination, k, depth + 1, to);
	}
	ae = json_string_value(json_object_get(json_object_get(ex, "arguments"),
	    "alternate-exchange"));
	if (ae != NULL)
		route(r, s, ae, k, depth + 1, to);
}

const char *
old_dead_letter_exchange(const struct mgmt_policy_list *pl, const struct mgmt_queue *q)
{
	if (q->dead_letter_exchange != NULL)
		return q->dead_letter_exchange;
	return json_string_value(json_object_get(mgmt_policy_definition(pl, q->policy),
	    "dead-letter-exchange"));
}

void
old_dead_letter_of(const struct mgmt_policy_list *pl, const struct mgmt_queue *q,
    const char **x, const char **k)
{
	*x = old_dead_letter_exchange(pl, q);
	*k = q->dead_letter_routing_key;
	if (*k == NULL)
		*k = json_string_value(json_object_get(mgmt_policy_definition(pl,
		    q->policy), "dead-letter-routing-key"));
}

static int
get(struct step_ctx *c, const char *what, const char *kind, const char *query,
    json_t **out, char *err, size_t errlen)
{
	char vhost[3 * 256 + 1], path[200 + sizeof(vhost)], why[768];

	if (mgmt_escape(mgmt_vhost(c->old_mgmt), vhost, sizeof(vhost)) < 0) {
		snprintf(err, errlen, "the vhost name is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/api/%s/%s%s", kind, vhost, query);
	if (mgmt_request(c->old_mgmt, "GET", path, NULL, out, NULL, why, sizeof(why)) != 0 ||
	    !json_is_array(*out)) {
		snprintf(err, errlen, "reading the %s for dead-letter chains: %s", what,
		    *out == NULL ? why : "the answer is not a list");
		return -1;
	}
	return 0;
}

/* Depth-first: the chain TTL of queue I (its TTL + the longest chain TTL
 * of its feeders). MARK: 0 new, 1 on the path, 2 done. Returns 0, or -1
 * with ERR naming a cycle. */
static int
chain_of(const struct old_selection *s, struct old_chain *ch, size_t i, char *mark,
    char *err, size_t errlen)
{
	const json_t *f;
	size_t k;
	int64_t longest = 0;

	if (mark[i] == 2)
		return 0;
	if (mark[i] == 1) {
		snprintf(err, errlen, "old queue '%s' dead-letters, through other old "
		    "queues, back into itself: a dead-letter cycle has no horizon; "
		    "break it before migrating", s->v[i].q->name);
		return -1;
	}
	mark[i] = 1;
	json_array_foreach(ch->from[i], k, f) {
		const struct old_queue *src = old_sel_find(s, json_string_value(f));
		size_t j = (size_t)(src - s->v);

		if (chain_of(s, ch, j, mark, err, errlen) != 0)
			return -1;
		if (ch->ttl_ms[j] > longest)
			longest = ch->ttl_ms[j];
	}
	ch->ttl_ms[i] = s->v[i].ttl_ms + longest;
	mark[i] = 2;
	return 0;
}

/* Appends NAME to *ARR (made at the first) unless it is there. */
static void
add_once(json_t **arr, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(*arr, i, e)
		if (strcmp(json_string_value(e), name) == 0)
			return;
	if (*arr == NULL && (*arr = json_array()) == NULL)
		return;
	json_array_append_new(*arr, json_string(name));
}

/* Reads what routing a dead-letter needs into R: every exchange and the
 * policies. Returns 0, or -1 with ERR. */
static int
routes_read(struct step_ctx *c, struct routes *r, char *err, size_t errlen)
{
	char why[512];

	if (get(c, "exchanges", "exchanges", "?columns=name,type,arguments",
	    &r->exchanges, err, errlen))
		return -1;
	r->c = c;
	if (mgmt_list_policies(c->old_mgmt, &r->pl, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the policies for dead-letter chains: %s", why);
		return -1;
	}
	return 0;
}

static void
routes_free(struct routes *r)
{
	for (size_t i = 0; i < r->ncache; i++) {
		free(r->cache[i].exchange);
		mgmt_binding_list_free(&r->cache[i].bl);
	}
	json_decref(r->exchanges);
	mgmt_policy_list_free(&r->pl);
}

/* Follows each old queue of S's dead-letters through R and records, in
 * CH, which other old queues it reaches (to) and is reached from (from). */
static void
edges_add(struct routes *r, const struct old_selection *s, struct old_chain *ch)
{
	for (size_t i = 0; i < s->n; i++) {
		const char *x, *k;
		json_t *to = json_array();
		const json_t *t;
		size_t n;

		old_dead_letter_of(&r->pl, s->v[i].q, &x, &k);
		if (x != NULL)
			route(r, s, x, k, 0, to);
		json_array_foreach(to, n, t) {
			const char *name = json_string_value(t);
			const struct old_queue *dst = old_sel_find(s, name);

			if (dst == NULL || dst == &s->v[i])
				continue;
			add_once(&ch->to[i], name);
			add_once(&ch->from[dst - s->v], s->v[i].q->name);
		}
		json_decref(to);
	}
}

int
old_chain_compute(struct step_ctx *c, const struct old_selection *s,
    struct old_chain *ch, char *err, size_t errlen)
{
	struct routes r = { 0 };
	char *mark = NULL;
	int rc = -1;

	memset(ch, 0, sizeof(*ch));
	ch->n = s->n;
	if ((ch->ttl_ms = calloc(s->n + 1, sizeof(*ch->ttl_ms))) == NULL ||
	    (ch->to = calloc(s->n + 1, sizeof(*ch->to))) == NULL ||
	    (ch->from = calloc(s->n + 1, sizeof(*ch->from))) == NULL ||
	    (mark = calloc(s->n + 1, 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto done;
	}
	if (routes_read(c, &r, err, errlen) != 0)
		goto done;
	edges_add(&r, s, ch);
	if (r.failed) {
		snprintf(err, errlen, "%s", r.err);
		goto done;
	}
	for (size_t i = 0; i < s->n; i++)
		if (chain_of(s, ch, i, mark, err, errlen) != 0)
			goto done;
	rc = 0;
done:
	free(mark);
	routes_free(&r);
	if (rc != 0)
		old_chain_free(ch);
	return rc;
}

void
old_chain_free(struct old_chain *ch)
{
	for (size_t i = 0; i < ch->n; i++) {
		if (ch->to != NULL)
			json_decref(ch->to[i]);
		if (ch->from != NULL)
			json_decref(ch->from[i]);
	}
	free(ch->ttl_ms);
	free(ch->to);
	free(ch->from);
	memset(ch, 0, sizeof(*ch));
}
