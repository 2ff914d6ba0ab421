/* move_old_dest: where a message moved out of an old queue goes in the
 * ladder — the destination that the old queue's
 * dead-lettering would have delivered it to. The old queue's effective
 * dead-letter exchange and routing key (or the message's own key when the
 * queue has none) are followed one hop: the default exchange reaches the
 * queue named by the key; a named exchange reaches the queues its
 * bindings take the key to (old_binding_takes), or is itself a
 * destination's exchange. Exactly one destination must be reached:
 * anything else is refused, never guessed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "move_old_int.h"

void
move_target_free(struct move_target *t)
{
	free(t->exchange);
	free(t->key);
	free(t->exchange_type);
	mgmt_binding_list_free(&t->bindings);
	memset(t, 0, sizeof(*t));
	t->dest = -1;
}

/* The destination whose target is queue (or, EXCHANGE set, exchange)
 * NAME; -2 when more than one is; -1 none. */
static int
dest_reaching(const struct plan *p, const char *name, bool exchange)
{
	int found = -1;

	for (size_t i = 0; i < p->ndestinations; i++) {
		bool x = false;
		const char *t = plan_destination_target(p, i, &x);

		if (x == exchange && t != NULL && strcmp(t, name) == 0) {
			if (found >= 0)
				return -2;
			found = (int)i;
		}
	}
	return found;
}

int
move_target_dest(const struct step_ctx *c, const struct move_target *t,
    const char *key, char *why, size_t whylen)
{
	const struct plan *p = c->plan;
	const char *k = t->key != NULL ? t->key : key;
	int d, found = -1;

	if (k == NULL)
		k = "";
	if (t->exchange == NULL) {
		snprintf(why, whylen, "it has no dead-letter exchange: its messages "
		    "are dropped when they expire");
		return -1;
	}
	if (t->exchange[0] == '\0') {
		if ((d = dest_reaching(p, k, false)) >= 0)
			return d;
		snprintf(why, whylen, "it dead-letters to the default exchange with "
		    "key '%.200s', and %s", k, d == -2 ? "more than one destination "
		    "reaches that queue" : "no destination of ladder.destinations "
		    "reaches that queue");
		return -1;
	}
	if ((d = dest_reaching(p, t->exchange, true)) >= 0)
		return d;
	for (size_t i = 0; i < t->bindings.n; i++) {
		const struct mgmt_binding *b = &t->bindings.v[i];

		if (b->destination == NULL || !old_binding_takes(t->exchange_type,
		    b->routing_key ? b->routing_key : "", k))
			continue;
		if (b->destination_type != MGMT_DEST_QUEUE) {
			snprintf(why, whylen, "its dead-letter exchange '%.200s' routes key "
			    "'%.200s' on to exchange '%.200s', which move_old does not "
			    "follow", t->exchange, k, b->destination);
			return -1;
		}
		d = dest_reaching(p, b->destination, false);
		if (d < 0 || (found >= 0 && d != found)) {
			snprintf(why, whylen, "its dead-letter exchange '%.200s' routes key "
			    "'%.200s' to queue '%.200s', which %s", t->exchange, k,
			    b->destination, d < 0 ? "no destination of "
			    "ladder.destinations reaches" : "is another destination than "
			    "the one it also reaches");
			return -1;
		}
		found = d;
	}
	if (found < 0)
		snprintf(why, whylen, "its dead-letter exchange '%.200s' routes key "
		    "'%.200s' to no queue", t->exchange, k);
	return found;
}

/* S's member KEY of object O, or NULL. */
static const char *
str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

int
move_target_read(struct step_ctx *c, const char *name, struct move_target *t,
    char *err, size_t errlen)
{
	struct mgmt_queue_info qi = { 0 };
	struct mgmt_exchange x = { 0 };
	const char *dx, *dk;
	char why[768];
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->dest = -1;
	if (mgmt_get_queue(c->old_mgmt, name, &qi, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "reading old queue '%s': %s", name, why);
		goto done;
	}
	/* RabbitMQ resolves these two keys so: the argument wins. */
	if ((dx = str_of(qi.arguments, "x-dead-letter-exchange")) == NULL)
		dx = str_of(qi.effective_policy, "dead-letter-exchange");
	if ((dk = str_of(qi.arguments, "x-dead-letter-routing-key")) == NULL)
		dk = str_of(qi.effective_policy, "dead-letter-routing-key");
	if ((dx != NULL && (t->exchange = strdup(dx)) == NULL) ||
	    (dk != NULL && (t->key = strdup(dk)) == NULL)) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	if (dx != NULL && dx[0] != '\0') {
		if (mgmt_get_exchange(c->old_mgmt, dx, &x, why, sizeof(why)) != 0 ||
		    (t->exchange_type = strdup(x.type ? x.type : "")) == NULL ||
		    mgmt_list_bindings_from(c->old_mgmt, dx, &t->bindings, why,
		    sizeof(why)) != 0) {
			errbuf_set(err, errlen, "old queue '%s': reading its dead-letter "
			    "exchange '%s': %s", name, dx, why);
			goto done;
		}
	}
	if (t->exchange == NULL || t->key != NULL) {
		if ((t->dest = move_target_dest(c, t, NULL, why, sizeof(why))) < 0) {
			errbuf_set(err, errlen, "old queue '%s' (dead-letter exchange '%s', "
			    "routing key '%s'): %s", name, dx ? dx : "(none)",
			    dk ? dk : "(the message's own)", why);
			goto done;
		}
	}
	rc = 0;
done:
	mgmt_queue_info_free(&qi);
	mgmt_exchange_free(&x);
	if (rc != 0)
		move_target_free(t);
	return rc;
}
