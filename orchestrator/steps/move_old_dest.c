/* move_old_dest: where a message moved out of an old queue goes in the
 * ladder — the destination that the old queue's
 * dead-lettering would have delivered it to. The old queue's effective
 * dead-letter exchange and routing key (or the message's own key when the
 * queue has none) are followed one hop: the default exchange reaches the
 * queue named by the key; a named exchange reaches the queues its
 * bindings take the key to (old_binding_takes), or is itself a
 * destination's exchange. Exactly one destination must be reached:
 * anything else is refused, never guessed.
 *
 * Each queue's target comes from what is read once a run, not a request
 * per queue (at 10,000 old queues those were most of the run's
 * preparation): its dead-letter arguments from the selection's listing,
 * its policy's from the policies (move_targets_read), and each
 * dead-letter exchange's type and bindings once, when a queue first names
 * it. */
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
	memset(t, 0, sizeof(*t));
	t->dest = -1;
}

int
move_targets_read(struct step_ctx *c, struct move_targets *ts, char *err,
    size_t errlen)
{
	char why[512];

	memset(ts, 0, sizeof(*ts));
	if (mgmt_list_policies(c->old_mgmt, &ts->pl, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "reading the policies for the old queues' "
		    "dead-letter targets: %s", why);
		return -1;
	}
	return 0;
}

void
move_targets_free(struct move_targets *ts)
{
	for (size_t i = 0; i < ts->nx; i++) {
		free(ts->x[i]->name);
		free(ts->x[i]->type);
		mgmt_binding_list_free(&ts->x[i]->bindings);
		free(ts->x[i]);
	}
	free(ts->x);
	mgmt_policy_list_free(&ts->pl);
	memset(ts, 0, sizeof(*ts));
}

/* Dead-letter exchange NAME's type and bindings, read the first time a
 * queue names it and kept in TS (each in an allocation of its own: the
 * targets worked out before point into it while TS grows). Returns it, or
 * NULL with ERR (the exchange or its bindings cannot be read, or out of
 * memory). */
static const struct move_exchange *
exchange_of(struct step_ctx *c, struct move_targets *ts, const char *name,
    char *err, size_t errlen)
{
	struct mgmt_exchange x = { 0 };
	struct move_exchange *e, **grown;

	for (size_t i = 0; i < ts->nx; i++)
		if (strcmp(ts->x[i]->name, name) == 0)
			return ts->x[i];
	if (ts->nx == ts->cap) {
		size_t cap = ts->cap ? 2 * ts->cap : 8;

		if ((grown = realloc(ts->x, cap * sizeof(*grown))) == NULL) {
			errbuf_set(err, errlen, "out of memory");
			return NULL;
		}
		ts->x = grown;
		ts->cap = cap;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return NULL;
	}
	if (mgmt_get_exchange(c->old_mgmt, name, &x, err, errlen) != 0 ||
	    mgmt_list_bindings_from(c->old_mgmt, name, &e->bindings, err, errlen) != 0)
		goto fail;
	if ((e->name = strdup(name)) == NULL ||
	    (e->type = strdup(x.type != NULL ? x.type : "")) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	mgmt_exchange_free(&x);
	ts->x[ts->nx++] = e;
	return e;
fail:
	mgmt_exchange_free(&x);
	free(e->name);
	free(e->type);
	mgmt_binding_list_free(&e->bindings);
	free(e);
	return NULL;
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
	for (size_t i = 0; t->bindings != NULL && i < t->bindings->n; i++) {
		const struct mgmt_binding *b = &t->bindings->v[i];

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

int
move_target_read(struct step_ctx *c, struct move_targets *ts, const struct mgmt_queue *q,
    struct move_target *t, char *err, size_t errlen)
{
	const struct move_exchange *e;
	const char *dx, *dk;
	char why[768];
	int rc = -1;

	memset(t, 0, sizeof(*t));
	t->dest = -1;
	old_dead_letter_of(&ts->pl, q, &dx, &dk);
	if ((dx != NULL && (t->exchange = strdup(dx)) == NULL) ||
	    (dk != NULL && (t->key = strdup(dk)) == NULL)) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	if (dx != NULL && dx[0] != '\0') {
		if ((e = exchange_of(c, ts, dx, why, sizeof(why))) == NULL) {
			errbuf_set(err, errlen, "old queue '%s': reading its dead-letter "
			    "exchange '%s': %s", q->name, dx, why);
			goto done;
		}
		t->exchange_type = e->type;
		t->bindings = &e->bindings;
	}
	if (t->exchange == NULL || t->key != NULL) {
		if ((t->dest = move_target_dest(c, t, NULL, why, sizeof(why))) < 0) {
			errbuf_set(err, errlen, "old queue '%s' (dead-letter exchange '%s', "
			    "routing key '%s'): %s", q->name, dx ? dx : "(none)",
			    dk ? dk : "(the message's own)", why);
			goto done;
		}
	}
	rc = 0;
done:
	if (rc != 0)
		move_target_free(t);
	return rc;
}
