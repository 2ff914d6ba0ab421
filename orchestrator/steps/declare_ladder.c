/* declare_ladder: creates the plan's whole ladder on the broker. */
#include <stdio.h>
#include <string.h>

#include "step.h"
#include "topology.h"

int
step_declare_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct topology t;
	json_t *created = json_array(), *existing = json_array();
	char why[512];
	size_t i;
	int rc = -1;

	*result = NULL;
	if (topology_build(c->plan, &t, err, errlen) != 0)
		goto done;

	for (i = 0; i < t.nexchanges; i++) {
		const struct topology_exchange *x = &t.exchanges[i];

		if (broker_exchange_declare(c->amqp, x->name, x->type, true, x->args,
		    x->nargs, why, sizeof(why)) != 0) {
			snprintf(err, errlen, "declaring exchange '%s': %s", x->name, why);
			goto done;
		}
	}
	for (i = 0; i < t.nqueues; i++) {
		const struct topology_queue *q = &t.queues[i];

		if (q->role == TOPOLOGY_DESTINATION) {
			/* Its consumers own it: bind it, never redeclare it. */
			int r = broker_queue_inspect(c->amqp, q->name, NULL, why, sizeof(why));

			if (r == 0) {
				json_array_append_new(existing, json_string(q->name));
				continue;
			}
			if (r != BROKER_NOT_FOUND) {
				snprintf(err, errlen, "inspecting destination queue '%s': %s",
				    q->name, why);
				goto done;
			}
			json_array_append_new(created, json_string(q->name));
		}
		if (broker_queue_declare(c->amqp, q->name, true, q->args, q->nargs,
		    why, sizeof(why)) != 0) {
			snprintf(err, errlen, "declaring queue '%s': %s", q->name, why);
			goto done;
		}
	}
	for (i = 0; i < t.nbindings; i++) {
		const struct topology_binding *b = &t.bindings[i];
		int r = b->to_exchange ?
		    broker_exchange_bind(c->amqp, b->destination, b->source, b->key,
		    why, sizeof(why)) :
		    broker_queue_bind(c->amqp, b->destination, b->source, b->key,
		    why, sizeof(why));

		if (r != 0) {
			snprintf(err, errlen, "binding %s '%s' to exchange '%s' with '%s': %s",
			    b->to_exchange ? "exchange" : "queue", b->destination, b->source,
			    b->key, why);
			goto done;
		}
	}
	rc = 0;
done:
	*result = json_pack("{s:b,s:i,s:i,s:i,s:o,s:o}", "ok", rc == 0,
	    "exchanges", (int)t.nexchanges, "queues", (int)t.nqueues,
	    "bindings", (int)t.nbindings, "destinations_created", created,
	    "destinations_existing", existing);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	topology_free(&t);
	return rc;
}
