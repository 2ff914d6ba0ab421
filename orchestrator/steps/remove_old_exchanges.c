/* remove_old_exchanges: when the old path is a ladder (old.ladder), the
 * exchanges its level queues were bound to: its level exchanges and its
 * delivery exchange, deleted once every old level queue is gone, each only
 * while nothing but the old ladder itself uses it. Never the default or an
 * amq.* exchange, a destination's exchange, or (on the same broker) an
 * exchange of the new ladder. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "remove_old_int.h"
#include "sentences.h"
#include "step.h"
#include "topology.h"

/* What became of an old ladder's exchange; the names its entries and
 * counts carry, in this order. */
enum xout { XO_REMOVED, XO_GONE, XO_LEFT, XO_KEPT, XO_WOULD, XO_WAIT, XO_COUNT };

static const char *const xout_names[XO_COUNT] = {
	"removed", "gone", "left", "kept", "would_remove", "waiting"
};

/* One run over the old ladder's exchanges. */
struct xrun {
	struct rm_run *r;
	const struct old_selection *s;
	struct topology old;		/* the old ladder's objects */
	struct topology now;		/* the new ladder's, when on the same
					 * broker; else empty */
	struct mgmt_policy_list pl;	/* for queues' dead-letter exchanges and
					 * exchanges' alternate exchanges */
	json_t *xlist;			/* the vhost's exchanges: name,
					 * arguments, policy */
	json_t *entries;
	size_t counts[XO_COUNT];
};

/* Adds the entry of exchange X: OUT with REASON (printf). */
static void
xentry(struct xrun *xr, const struct topology_exchange *x, enum xout out,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
xentry(struct xrun *xr, const struct topology_exchange *x, enum xout out,
    const char *fmt, ...)
{
	char reason[REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	xr->counts[out]++;
	json_array_append_new(xr->entries, json_pack("{s:s,s:s,s:o,s:s,s:I,s:s}",
	    "name", x->name, "role", x->role == TOPOLOGY_LEVEL ? "level" : "delivery",
	    "level", x->role == TOPOLOGY_LEVEL ? json_integer(x->level) : json_null(),
	    "outcome", xout_names[out], "at_ms", (json_int_t)old_now_ms(xr->r->c),
	    "reason", reason));
}

/* Why exchange NAME is never deleted by this step, or NULL: the default
 * or a broker's own exchange, a destination's, or the new ladder's (on the
 * same broker: a rebuild may share names). WHY holds the words. */
static const char *
protected_why(const struct xrun *xr, const char *name, char *why, size_t whylen)
{
	const struct plan *p = xr->r->c->plan;

	if (name[0] == '\0' || strncmp(name, "amq.", 4) == 0) {
		snprintf(why, whylen, "the default exchange or one of the broker's own "
		    "(amq.*): never deleted");
		return why;
	}
	for (size_t i = 0; i < p->ndestinations; i++) {
		bool exchange;
		const char *target = plan_destination_target(p, i, &exchange);

		if (exchange && strcmp(target, name) == 0) {
			snprintf(why, whylen, "destination '%s' is this exchange "
			    "(ladder.destinations): its owner's, never deleted",
			    p->destinations[i]);
			return why;
		}
	}
	for (size_t i = 0; i < xr->now.nexchanges; i++)
		if (strcmp(xr->now.exchanges[i].name, name) == 0) {
			snprintf(why, whylen, "the new ladder's %s exchange too (the plan's "
			    "ladder, on the same broker): kept", xr->now.exchanges[i].role ==
			    TOPOLOGY_LEVEL ? "level" : xr->now.exchanges[i].role ==
			    TOPOLOGY_DELIVERY ? "delivery" : "parking");
			return why;
		}
	return NULL;
}

/* The old level queue that is not gone yet (removed or found gone; in a
 * dry run, would be removed), or NULL when all are. */
static const struct item *
level_left(const struct xrun *xr, const struct item *items, size_t nitems)
{
	for (size_t i = 0; i < nitems; i++) {
		const struct item *it = &items[i];

		if (it->outcome == OUT_REMOVED || it->outcome == OUT_GONE ||
		    (xr->r->o->dry_run && it->outcome == OUT_WOULD))
			continue;
		for (size_t k = 0; k < xr->old.nqueues; k++)
			if (xr->old.queues[k].role == TOPOLOGY_LEVEL &&
			    strcmp(xr->old.queues[k].name, it->name) == 0)
				return it;
	}
	return NULL;
}

/* Is B (from SRC to DST) one of the old ladder's own bindings: its
 * topology's, or for a library's naming the library's own destination
 * binding ("#.KEY" from the delivery exchange to a destination)? */
static bool
own_binding(const struct xrun *xr, const char *src, const struct mgmt_binding *b)
{
	const struct plan *p = xr->r->c->plan;
	bool to_x = b->destination_type == MGMT_DEST_EXCHANGE;
	char want[LADDER_NAME_MAX], delivery[LADDER_NAME_MAX];

	for (size_t i = 0; i < xr->old.nbindings; i++) {
		const struct topology_binding *t = &xr->old.bindings[i];

		if (t->to_exchange == to_x && strcmp(t->source, src) == 0 &&
		    strcmp(t->destination, b->destination) == 0 &&
		    strcmp(t->key, b->routing_key) == 0)
			return true;
	}
	if (!ladder_style(p->old.ladder.naming)->library ||
	    strcmp(src, ladder_delivery_exchange(&p->old.ladder, delivery,
	    sizeof(delivery))) != 0)
		return false;
	for (size_t i = 0; i < p->ndestinations; i++) {
		bool exchange;
		const char *target = plan_destination_target(p, i, &exchange);

		snprintf(want, sizeof(want), "#.%s", p->destinations[i]);
		if (exchange == to_x && strcmp(target, b->destination) == 0 &&
		    strcmp(want, b->routing_key) == 0)
			return true;
	}
	return false;
}

/* Member KEY of E as text, "" when it is none. */
static const char *
text_of(const json_t *e, const char *key)
{
	const char *s = json_string_value(json_object_get(e, key));

	return s != NULL ? s : "";
}

/* Exchange X's (an object of the vhost's listing) alternate exchange:
 * its argument, else its policy's; NULL when it has none. */
static const char *
alternate_of(const struct xrun *xr, const json_t *x)
{
	const char *ae = json_string_value(json_object_get(json_object_get(x,
	    "arguments"), "alternate-exchange"));
	const char *policy = json_string_value(json_object_get(x, "policy"));

	if (ae == NULL)
		ae = json_string_value(json_object_get(mgmt_policy_definition(&xr->pl,
		    policy), "alternate-exchange"));
	return ae;
}

/* Why exchange NAME is still in use by something other than the old
 * ladder, or NULL: a binding from it or into it that is not the old
 * ladder's, another exchange whose alternate exchange it is, or a queue
 * (not an old level queue) that dead-letters into it.
 * FROM and TO are its bindings. WHY holds the words. */
static const char *
used_why(const struct xrun *xr, const char *name, const struct mgmt_binding_list *from,
    const struct mgmt_binding_list *to, char *why, size_t whylen)
{
	const struct mgmt_queue_list *ql = &xr->s->list;
	const json_t *x;
	size_t i;

	for (i = 0; i < from->n; i++)
		if (!own_binding(xr, name, &from->v[i])) {
			snprintf(why, whylen, "still bound: it routes to %s '%s' with key "
			    "'%s', which is no binding of the old ladder (unbind it, or leave "
			    "the exchange to its owner)", from->v[i].destination_type ==
			    MGMT_DEST_QUEUE ? "queue" : "exchange", from->v[i].destination,
			    from->v[i].routing_key);
			return why;
		}
	for (i = 0; i < to->n; i++)
		if (!own_binding(xr, to->v[i].source, &to->v[i])) {
			snprintf(why, whylen, "still bound: exchange '%s' routes into it with "
			    "key '%s', which is no binding of the old ladder (what is "
			    "published there would be dropped without a word)",
			    to->v[i].source, to->v[i].routing_key);
			return why;
		}
	json_array_foreach(xr->xlist, i, x) {
		const char *ae = alternate_of(xr, x);

		if (ae != NULL && strcmp(ae, name) == 0 && strcmp(text_of(x, "name"),
		    name) != 0) {
			snprintf(why, whylen, "exchange '%s' names it as its alternate "
			    "exchange: what that one cannot route would be dropped without "
			    "a word", text_of(x, "name"));
			return why;
		}
	}
	for (i = 0; i < ql->n; i++) {
		const char *dlx = old_dead_letter_exchange(&xr->pl, &ql->v[i]);
		bool level = false;

		if (dlx == NULL || strcmp(dlx, name) != 0)
			continue;
		for (size_t k = 0; k < xr->old.nqueues && !level; k++)
			level = xr->old.queues[k].role == TOPOLOGY_LEVEL &&
			    strcmp(xr->old.queues[k].name, ql->v[i].name) == 0;
		if (level)
			continue;	/* gone: level_left says so */
		snprintf(why, whylen, "queue '%s' dead-letters into it: what expires "
		    "there would be dropped without a word", ql->v[i].name);
		return why;
	}
	return NULL;
}

/* Removes (REBIND false) or puts back (true) the old ladder's own bindings
 * from exchange NAME among FROM; any other binding stays, for the
 * if-unused delete to refuse. Returns 0, or a negative code with WHY. */
static int
own_bindings(struct xrun *xr, const char *name, const struct mgmt_binding_list *from,
    bool rebind, char *why, size_t whylen)
{
	struct broker *b = xr->r->c->old_amqp;

	for (size_t i = 0; i < from->n; i++) {
		const struct mgmt_binding *x = &from->v[i];
		int rc;

		if (!own_binding(xr, name, x))
			continue;
		rc = x->destination_type == MGMT_DEST_QUEUE ?
		    (rebind ? broker_queue_bind : broker_queue_unbind)(b, x->destination,
		    name, x->routing_key, why, whylen) :
		    (rebind ? broker_exchange_bind : broker_exchange_unbind)(b,
		    x->destination, name, x->routing_key, why, whylen);

		if (rc != 0)
			return rc;
	}
	return 0;
}

/* Reads the bindings from and into exchange NAME. Returns 0, MGMT_NOT_FOUND
 * when it is gone, or -1 with WHY. */
static int
read_exchange(struct xrun *xr, const char *name, struct mgmt_binding_list *from,
    struct mgmt_binding_list *to, char *why, size_t whylen)
{
	struct mgmt *m = xr->r->c->old_mgmt;
	struct mgmt_exchange x = { 0 };
	int rc = mgmt_get_exchange(m, name, &x, why, whylen);

	mgmt_exchange_free(&x);
	if (rc == MGMT_NOT_FOUND)
		return rc;
	if (rc != 0 || mgmt_list_bindings_from(m, name, from, why, whylen) != 0 ||
	    mgmt_list_bindings_to(m, name, to, why, whylen) != 0)
		return -1;
	return 0;
}

/* The entry of exchange NAME in this step's previous result (a run
 * before a wait) when that run removed it, or NULL. */
static const json_t *
removed_before(const struct xrun *xr, const char *name)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(xr->r->prev, "exchanges"), i, e)
		if (strcmp(text_of(e, "name"), name) == 0 &&
		    strcmp(text_of(e, "outcome"), "removed") == 0)
			return e;
	return NULL;
}

/* Checks and deletes exchange X: its own bindings taken off, then deleted
 * with if-unused; a refused delete puts them back. Returns 0, or -1 with
 * ERR when the broker failed (the entry says so too). */
static int
one_exchange(struct xrun *xr, const struct topology_exchange *x, char *err,
    size_t errlen)
{
	struct mgmt_binding_list from = { 0 }, to = { 0 };
	const json_t *before;
	char why[REASON_MAX], back[256];
	int rc = 0, r;

	r = read_exchange(xr, x->name, &from, &to, why, sizeof(why));
	if (r == MGMT_NOT_FOUND) {
		if ((before = removed_before(xr, x->name)) != NULL)
			xentry(xr, x, XO_REMOVED, "%s", text_of(before, "reason"));
		else
			xentry(xr, x, XO_GONE, "already gone");
		goto done;
	}
	if (r != 0) {
		xentry(xr, x, XO_LEFT, "checking it failed: %s", why);
		errbuf_set(err, errlen, "old ladder's exchange '%s': checking it failed: "
		    "%s", x->name, why);
		rc = -1;
		goto done;
	}
	if (used_why(xr, x->name, &from, &to, why, sizeof(why)) != NULL) {
		xentry(xr, x, XO_LEFT, "%s", why);
		goto done;
	}
	if (xr->r->o->dry_run) {
		xentry(xr, x, XO_WOULD, "only the old ladder's own bindings and no queue "
		    "dead-lettering into it: would be deleted with if-unused, its own "
		    "bindings taken off first");
		goto done;
	}
	r = own_bindings(xr, x->name, &from, false, why, sizeof(why));
	if (r == 0 && (r = broker_exchange_delete(xr->r->c->old_amqp, x->name, true,
	    why, sizeof(why))) == 0) {
		xentry(xr, x, XO_REMOVED, "only the old ladder's own bindings (%zu from "
		    "it, taken off first) and no queue dead-lettering into it; deleted "
		    "with if-unused", from.n);
		goto done;
	}
	/* Refused (something bound to it meanwhile) or failed: as it was. */
	back[0] = '\0';
	if (own_bindings(xr, x->name, &from, true, back, sizeof(back)) != 0)
		sentences_add(why, sizeof(why), "putting its own bindings back failed: %s",
		    back);
	if (r == BROKER_EPRECONDITION) {
		xentry(xr, x, XO_LEFT, "the broker refused the if-unused delete: "
		    "something was bound to it between the check and the delete (%s)",
		    why);
		goto done;
	}
	xentry(xr, x, XO_LEFT, "deleting it failed: %s", why);
	errbuf_set(err, errlen, "old ladder's exchange '%s': deleting it failed: %s",
	    x->name, why);
	rc = -1;
done:
	mgmt_binding_list_free(&from);
	mgmt_binding_list_free(&to);
	return rc;
}

/* Reads the vhost's exchanges (name, arguments, the policy that applies)
 * into XR->xlist, without their statistics, which the broker would
 * otherwise gather for every exchange of the vhost. Returns 0, or -1 with
 * WHY. */
static int
list_exchanges(struct xrun *xr, char *why, size_t whylen)
{
	struct mgmt *m = xr->r->c->old_mgmt;
	char vhost[3 * LADDER_NAME_MAX + 1], path[sizeof(vhost) + 64];

	if (mgmt_escape(mgmt_vhost(m), vhost, sizeof(vhost)) < 0) {
		snprintf(why, whylen, "the vhost's name is too long");
		return -1;
	}
	snprintf(path, sizeof(path), "/api/exchanges/%s?disable_stats=true&"
	    "columns=name,arguments,policy", vhost);
	if (mgmt_request(m, "GET", path, NULL, &xr->xlist, NULL, why, whylen) != 0)
		return -1;
	if (!json_is_array(xr->xlist)) {
		snprintf(why, whylen, "GET %s: the answer is not a list", path);
		return -1;
	}
	return 0;
}

int
rm_exchanges(struct rm_run *r, const struct old_selection *s,
    const struct item *items, size_t nitems, json_t *result, char *err,
    size_t errlen)
{
	const struct plan *p = r->c->plan;
	struct xrun xr = { .r = r, .s = s };
	struct plan as_old;
	const struct item *waits;
	char why[REASON_MAX];
	int rc = -1;

	err[0] = '\0';
	if (!p->old.from_ladder)
		return 0;
	if ((xr.entries = json_array()) == NULL)
		goto oom;
	/* The old ladder's objects are what topology_build makes of a plan
	 * whose ladder it is (the destinations are the same: move_old
	 * refuses an old ladder that delivers elsewhere). */
	as_old = *p;
	as_old.ladder = p->old.ladder;
	if (topology_build(&as_old, &xr.old, err, errlen) != 0 ||
	    (!p->has_target && topology_build(p, &xr.now, err, errlen) != 0))
		goto done;
	waits = level_left(&xr, items, nitems);
	if (waits == NULL && (mgmt_list_policies(r->c->old_mgmt, &xr.pl, why,
	    sizeof(why)) != 0 || list_exchanges(&xr, why, sizeof(why)) != 0)) {
		errbuf_set(err, errlen, "reading the policies and exchanges for the old "
		    "ladder's exchanges: %s", why);
		goto done;
	}
	/* Level exchanges highest first, then the delivery exchange: each is
	 * bound into only by the ones before it. */
	for (size_t i = 0; i < xr.old.nexchanges; i++) {
		const struct topology_exchange *x = &xr.old.exchanges[i];

		if (x->role != TOPOLOGY_LEVEL && x->role != TOPOLOGY_DELIVERY)
			continue;	/* parking: its queue may hold messages */
		if (protected_why(&xr, x->name, why, sizeof(why)) != NULL)
			xentry(&xr, x, XO_KEPT, "%s", why);
		else if (waits != NULL)
			xentry(&xr, x, waits->outcome == OUT_WAIT ? XO_WAIT : XO_LEFT,
			    "old level queue '%s' is still there: the old ladder's "
			    "exchanges go only once every level queue is gone, since what "
			    "a level holds passes through the exchanges below it",
			    waits->name);
		else if (one_exchange(&xr, x, why, sizeof(why)) != 0)
			sentences_add(err, errlen, "%s", why);
	}
	rc = err[0] == '\0' ? 0 : -1;
	goto done;
oom:
	errbuf_set(err, errlen, "out of memory for the old ladder's exchanges");
done:
	if (xr.entries != NULL) {
		json_object_set_new(result, "exchanges", xr.entries);
		json_object_set_new(result, "exchange_counts", json_pack(
		    "{s:i,s:i,s:i,s:i,s:i,s:i}", "removed", (int)xr.counts[XO_REMOVED],
		    "gone", (int)xr.counts[XO_GONE], "left", (int)xr.counts[XO_LEFT],
		    "kept", (int)xr.counts[XO_KEPT], "would_remove",
		    (int)xr.counts[XO_WOULD], "waiting", (int)xr.counts[XO_WAIT]));
	}
	topology_free(&xr.old);
	topology_free(&xr.now);
	mgmt_policy_list_free(&xr.pl);
	json_decref(xr.xlist);
	return rc;
}
