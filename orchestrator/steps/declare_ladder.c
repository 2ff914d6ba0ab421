/* declare_ladder: creates the plan's whole ladder on the broker, and for a
 * library's naming the policy giving its delivery exchange the alternate
 * exchange (last, once the parking path it points to is complete). The
 * destination queues belong to their consumers: each must exist already
 * (a missing one is most likely a typo, which would make a queue nobody
 * consumes), unless the plan sets ladder.create_destinations. A
 * destination exchange (the long form's) must exist: it is only bound. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_needs.h"
#include "errbuf.h"
#include "sentences.h"
#include "step.h"
#include "topology.h"

#define MISSING_IN_ERR 5	/* missing destinations an error names at most */

/* Looks up each destination queue of T, setting EXISTS[i] for queue i.
 * Without ladder.create_destinations a missing one fails (before anything
 * is declared), each named with where the plan lists it; MISSING gets
 * their names either way. Returns 0, or -1 with ERR. */
static int
check_destinations(struct step_ctx *c, const struct topology *t, bool *exists,
    json_t *missing, char *err, size_t errlen)
{
	char why[512], at[300], list[1024] = "";
	size_t off = 0, n = 0;
	int r;

	for (size_t i = 0; i < t->nqueues; i++) {
		const struct topology_queue *q = &t->queues[i];

		if (q->role != TOPOLOGY_DESTINATION)
			continue;
		r = broker_queue_inspect(c->amqp, q->name, NULL, why, sizeof(why));
		if (r == 0) {
			exists[i] = true;
			continue;
		}
		if (r != BROKER_NOT_FOUND) {
			errbuf_set(err, errlen, "inspecting destination queue '%s': %s",
			    q->name, why);
			return -1;
		}
		json_array_append_new(missing, json_string(q->name));
		if (c->plan->create_destinations || n++ >= MISSING_IN_ERR ||
		    off >= sizeof(list))
			continue;
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s'%s' (%s)",
		    n > 1 ? ", " : "", q->name,
		    plan_destination_where(c->plan, q->name, at, sizeof(at)));
	}
	if (n == 0)
		return 0;
	errbuf_set(err, errlen, "destination queue%s %s%s %s not exist: "
	    "ladder.destinations names queues their consumers own, and a typo would "
	    "make a queue nobody consumes; declare %s first, fix the name, or set "
	    "ladder.create_destinations: true to have declare_ladder create missing "
	    "ones. Nothing was declared", n == 1 ? "" : "s", list,
	    n > MISSING_IN_ERR ? " and more" : "", n == 1 ? "does" : "do",
	    n == 1 ? "it" : "them");
	return -1;
}

/* Creates or replaces policy POL through the management API. Returns 0, or
 * -1 with ERR. */
static int
declare_policy(struct step_ctx *c, const struct topology_policy *pol, char *err,
    size_t errlen)
{
	json_t *def = json_pack("{s:s}", pol->arg.key, pol->arg.str);
	char why[512];
	int r;

	if (def == NULL) {
		errbuf_set(err, errlen, "declaring policy '%s': out of memory", pol->name);
		return -1;
	}
	r = mgmt_put_policy(c->mgmt, pol->name, pol->pattern, pol->apply_to, pol->priority,
	    def, why, sizeof(why));
	json_decref(def);
	if (r != 0) {
		errbuf_set(err, errlen, "declaring policy '%s' (%s = %s on exchange '%s'): %s",
		    pol->name, pol->arg.key, pol->arg.str, pol->target, why);
		return -1;
	}
	return 0;
}

/* Each destination exchange of T (a destination's long form { key,
 * exchange }) must exist: its owner declares it, of its type, and binds its
 * queues; declare_ladder only binds it, and ladder.create_destinations
 * cannot make one. Returns 0, or -1 with ERR naming the first missing one
 * and where the plan lists it (before anything is declared). */
static int
check_destination_exchanges(struct step_ctx *c, const struct topology *t,
    char *err, size_t errlen)
{
	char why[512], at[300];
	int r;

	for (size_t i = 0; i < t->nexchanges; i++) {
		const struct topology_exchange *x = &t->exchanges[i];

		if (x->role != TOPOLOGY_DESTINATION)
			continue;
		r = broker_exchange_exists(c->amqp, x->name, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			errbuf_set(err, errlen, "destination exchange '%s' (%s) does not exist: "
			    "its owner declares it, of its own type, and binds its queues to "
			    "it; declare it first or fix the name (ladder.create_destinations "
			    "creates queues, never exchanges). Nothing was declared", x->name,
			    plan_destination_where(c->plan, x->name, at, sizeof(at)));
			return -1;
		}
		if (r != 0) {
			errbuf_set(err, errlen, "inspecting destination exchange '%s': %s",
			    x->name, why);
			return -1;
		}
	}
	return 0;
}

/* Declares T's exchanges, in order; a destination exchange (its owner's:
 * bound, never declared) is listed in EXISTING instead. Returns 0, or -1
 * with ERR naming the first that failed. */
static int
declare_exchanges(struct step_ctx *c, const struct topology *t, json_t *existing,
    char *err, size_t errlen)
{
	char why[512];

	for (size_t i = 0; i < t->nexchanges; i++) {
		const struct topology_exchange *x = &t->exchanges[i];

		if (x->role == TOPOLOGY_DESTINATION) {
			json_array_append_new(existing, json_string(x->name));
			continue;       /* its owner's: bound, never declared */
		}
		if (broker_exchange_declare(c->amqp, x->name, x->type, true, x->args,
		    x->nargs, why, sizeof(why)) != 0) {
			errbuf_set(err, errlen, "declaring exchange '%s': %s", x->name, why);
			return -1;
		}
	}
	return 0;
}

/* Declares T's queues, in order: a destination queue only when it does
 * not exist (EXISTS[i] false; listed in CREATED, else in EXISTING).
 * Returns 0, or -1 with ERR naming the first that failed. */
static int
declare_queues(struct step_ctx *c, const struct topology *t, const bool *exists,
    json_t *created, json_t *existing, char *err, size_t errlen)
{
	char why[512];

	for (size_t i = 0; i < t->nqueues; i++) {
		const struct topology_queue *q = &t->queues[i];

		if (q->role == TOPOLOGY_DESTINATION) {
			/* Its consumers own it: bind it, never redeclare it; create
			 * it only when the plan says so (check_destinations). */
			if (exists[i]) {
				json_array_append_new(existing, json_string(q->name));
				continue;
			}
			json_array_append_new(created, json_string(q->name));
		}
		if (broker_queue_declare(c->amqp, q->name, true, q->args, q->nargs,
		    why, sizeof(why)) != 0) {
			errbuf_set(err, errlen, "declaring queue '%s': %s", q->name, why);
			return -1;
		}
	}
	return 0;
}

/* Declares T's bindings, in order. Returns 0, or -1 with ERR naming the
 * first that failed. */
static int
declare_bindings(struct step_ctx *c, const struct topology *t, char *err,
    size_t errlen)
{
	char why[512];

	for (size_t i = 0; i < t->nbindings; i++) {
		const struct topology_binding *b = &t->bindings[i];
		int r = b->to_exchange ?
		    broker_exchange_bind(c->amqp, b->destination, b->source, b->key,
		    why, sizeof(why)) :
		    broker_queue_bind(c->amqp, b->destination, b->source, b->key,
		    why, sizeof(why));

		if (r != 0) {
			errbuf_set(err, errlen, "binding %s '%s' to exchange '%s' with '%s': %s",
			    b->to_exchange ? "exchange" : "queue", b->destination, b->source,
			    b->key, why);
			return -1;
		}
	}
	return 0;
}

int
step_declare_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct topology t;
	json_t *created = json_array(), *existing = json_array();
	json_t *missing = json_array(), *broker = NULL;
	bool *exists = NULL;
	size_t i;
	int rc = -1;

	*result = NULL;
	memset(&t, 0, sizeof(t));
	if (needs_check(c->mgmt, c->plan, &broker, err, errlen) != 0) {
		sentences_add(err, errlen, "Nothing was declared");
		goto done;
	}
	if (topology_build(c->plan, &t, err, errlen) != 0)
		goto done;
	if ((exists = calloc(t.nqueues + 1, sizeof(*exists))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	if (check_destinations(c, &t, exists, missing, err, errlen) != 0 ||
	    check_destination_exchanges(c, &t, err, errlen) != 0)
		goto done;
	if (declare_exchanges(c, &t, existing, err, errlen) != 0 ||
	    declare_queues(c, &t, exists, created, existing, err, errlen) != 0 ||
	    declare_bindings(c, &t, err, errlen) != 0)
		goto done;
	for (i = 0; i < t.npolicies; i++)
		if (declare_policy(c, &t.policies[i], err, errlen) != 0)
			goto done;
	rc = 0;
done:
	*result = json_pack("{s:b,s:i,s:i,s:i,s:i,s:o,s:o,s:o}", "ok", rc == 0,
	    "exchanges", (int)t.nexchanges, "queues", (int)t.nqueues,
	    "bindings", (int)t.nbindings, "policies", (int)t.npolicies,
	    "destinations_created", created,
	    "destinations_existing", existing, "destinations_missing", missing);
	if (broker != NULL)
		json_object_set_new(*result, "broker", broker);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	free(exists);
	topology_free(&t);
	return rc;
}
