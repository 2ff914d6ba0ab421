/* teardown_ladder: removes a plan's ladder, never while it holds messages. */
#include <stdio.h>
#include <string.h>

#include "errbuf.h"
#include "step.h"
#include "topology.h"

/* Checks that every level queue and the parking queue is empty. Returns 0
 * when they are, -1 when one is not (ERR lists them) or on failure. */
static int
check_empty(struct step_ctx *c, const struct topology *t, json_t *held,
    char *err, size_t errlen)
{
	struct broker_queue_info qi;
	char why[512];
	size_t off = 0;
	int r;

	for (size_t i = 0; i < t->nqueues; i++) {
		const struct topology_queue *q = &t->queues[i];

		if (q->role == TOPOLOGY_DESTINATION)
			continue;
		r = broker_queue_inspect(c->amqp, q->name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND)
			continue;
		if (r != 0) {
			errbuf_set(err, errlen, "inspecting queue '%s': %s", q->name, why);
			return -1;
		}
		if (qi.messages == 0)
			continue;
		json_array_append_new(held, json_pack("{s:s,s:i}", "queue", q->name,
		    "messages", (int)qi.messages));
		if (off == 0)
			off = (size_t)snprintf(err, errlen, "refusing to remove a ladder that "
			    "holds delayed messages:");
		if (off < errlen)
			off += (size_t)snprintf(err + off, errlen - off, " %s (%u)", q->name,
			    qi.messages);
	}
	return off ? -1 : 0;
}

/* Deletes exchange NAME and adds it to REMOVED. Returns 0, or -1 with
 * ERR. */
static int
delete_exchange(struct step_ctx *c, const char *name, json_t *removed, char *err,
    size_t errlen)
{
	char why[512];

	if (broker_exchange_delete(c->amqp, name, false, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "deleting exchange '%s': %s", name, why);
		return -1;
	}
	json_array_append_new(removed, json_string(name));
	return 0;
}

int
step_teardown_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct topology t;
	json_t *held = json_array(), *removed = json_array();
	char why[512];
	size_t i;
	int rc = -1, flags;

	*result = NULL;
	if (topology_build(c->plan, &t, err, errlen) != 0)
		goto done;
	if (check_empty(c, &t, held, err, errlen) != 0)
		goto done;

	/* Level exchanges first: from now on a publish into the ladder fails
	 * at the publisher instead of entering a queue about to go. */
	for (i = 0; i < t.nexchanges; i++) {
		if (t.exchanges[i].role != TOPOLOGY_LEVEL)
			continue;
		if (delete_exchange(c, t.exchanges[i].name, removed, err, errlen) != 0)
			goto done;
	}
	/* Something may have entered between the check and the deletions. */
	if (check_empty(c, &t, held, err, errlen) != 0)
		goto done;
	flags = c->plan->queue_type == PLAN_QUEUE_CLASSIC ? BROKER_IF_EMPTY : 0;
	for (i = 0; i < t.nqueues; i++) {
		const struct topology_queue *q = &t.queues[i];

		if (q->role == TOPOLOGY_DESTINATION)
			continue;
		if (broker_queue_delete(c->amqp, q->name, flags, NULL, why, sizeof(why)) != 0) {
			errbuf_set(err, errlen, "deleting queue '%s': %s", q->name, why);
			goto done;
		}
		json_array_append_new(removed, json_string(q->name));
	}
	for (i = 0; i < t.nexchanges; i++) {
		/* Level exchanges are gone; destination ones are their owners'. */
		if (t.exchanges[i].role == TOPOLOGY_LEVEL ||
		    t.exchanges[i].role == TOPOLOGY_DESTINATION)
			continue;
		if (delete_exchange(c, t.exchanges[i].name, removed, err, errlen) != 0)
			goto done;
	}
	for (i = 0; i < t.npolicies; i++) {
		int r = mgmt_delete_policy(c->mgmt, t.policies[i].name, why, sizeof(why));

		if (r != 0 && r != MGMT_NOT_FOUND) {
			errbuf_set(err, errlen, "deleting policy '%s': %s", t.policies[i].name, why);
			goto done;
		}
		if (r == 0)
			json_array_append_new(removed, json_string(t.policies[i].name));
	}
	rc = 0;
done:
	*result = json_pack("{s:b,s:o,s:o}", "ok", rc == 0, "removed", removed,
	    "holding", held);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	topology_free(&t);
	return rc;
}
