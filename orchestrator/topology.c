/* topology: the list of broker objects that make up a plan's ladder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pattern.h"
#include "topology.h"

static void
arg_str(struct topology_arg *args, size_t *n, const char *key, const char *val)
{
	struct topology_arg *a = &args[(*n)++];

	snprintf(a->key, sizeof(a->key), "%s", key);
	a->is_int = false;
	snprintf(a->str, sizeof(a->str), "%s", val);
}

static void
arg_int(struct topology_arg *args, size_t *n, const char *key, int64_t val)
{
	struct topology_arg *a = &args[(*n)++];

	snprintf(a->key, sizeof(a->key), "%s", key);
	a->is_int = true;
	a->num = val;
}

static void
add_binding(struct topology *t, const char *src, const char *dst, bool to_exchange,
    const char *key)
{
	struct topology_binding *b = &t->bindings[t->nbindings++];

	snprintf(b->source, sizeof(b->source), "%s", src);
	snprintf(b->destination, sizeof(b->destination), "%s", dst);
	b->to_exchange = to_exchange;
	snprintf(b->key, sizeof(b->key), "%s", key);
}

/* Arguments every queue the ladder creates carries: its type, and for
 * quorum queues the overflow mode at-least-once dead-lettering needs (for
 * classic level queues too where the style's library sets it). */
static void
queue_type_args(const struct plan *p, struct topology_queue *q, bool dead_letters)
{
	const struct ladder_style *style = ladder_style(p->ladder.naming);

	if (p->queue_type == PLAN_QUEUE_QUORUM) {
		arg_str(q->args, &q->nargs, "x-queue-type", "quorum");
		if (dead_letters) {
			arg_str(q->args, &q->nargs, "x-dead-letter-strategy", "at-least-once");
			arg_str(q->args, &q->nargs, "x-overflow", "reject-publish");
		}
	} else {
		arg_str(q->args, &q->nargs, "x-queue-type", "classic");
		if (dead_letters && style != NULL && style->classic_overflow)
			arg_str(q->args, &q->nargs, "x-overflow", "reject-publish");
	}
}

/* The policy giving exchange X (a library's delivery exchange, declared
 * with no arguments) its alternate exchange PARKING. */
static void
add_ae_policy(struct topology *t, const struct topology_exchange *x, const char *parking)
{
	struct topology_policy *pol = &t->policies[t->npolicies++];

	snprintf(pol->name, sizeof(pol->name), TOPOLOGY_AE_POLICY_PREFIX "%s", x->name);
	(void)pattern_exact(x->name, pol->pattern, sizeof(pol->pattern)); /* fits: sized for it */
	snprintf(pol->apply_to, sizeof(pol->apply_to), "exchanges");
	pol->priority = TOPOLOGY_POLICY_PRIORITY;
	snprintf(pol->target, sizeof(pol->target), "%s", x->name);
	snprintf(pol->arg.key, sizeof(pol->arg.key), "alternate-exchange");
	snprintf(pol->arg.str, sizeof(pol->arg.str), "%s", parking);
}

/* Adds level K: its exchange, its queue (the TTL, dead-lettering into the
 * next exchange down), the wait binding into its queue and the bypass
 * binding to the next exchange. */
static void
add_level(const struct plan *p, struct topology *t, int k)
{
	const struct ladder *l = &p->ladder;
	char next[LADDER_NAME_MAX], key[LADDER_NAME_MAX];
	struct topology_exchange *x = &t->exchanges[t->nexchanges++];
	struct topology_queue *q = &t->queues[t->nqueues++];

	ladder_level_exchange(l, k, x->name, sizeof(x->name));
	snprintf(x->type, sizeof(x->type), "topic");
	x->role = TOPOLOGY_LEVEL;
	x->level = k;

	ladder_level_queue(l, k, q->name, sizeof(q->name));
	q->role = TOPOLOGY_LEVEL;
	q->level = k;
	ladder_dead_letter_exchange(l, k, next, sizeof(next));
	queue_type_args(p, q, true);
	arg_int(q->args, &q->nargs, "x-message-ttl", ladder_level_ttl_ms(l, k));
	arg_str(q->args, &q->nargs, "x-dead-letter-exchange", next);

	add_binding(t, x->name, q->name, false,
	    ladder_wait_pattern(l, k, key, sizeof(key)));
	add_binding(t, x->name, next, true,
	    ladder_bypass_pattern(l, k, key, sizeof(key)));
}

/* Adds the delivery exchange, its alternate exchange PARKING (an argument,
 * or a policy for a library's naming), and the parking exchange and queue. */
static void
add_delivery_and_parking(const struct plan *p, struct topology *t, const char *parking)
{
	const struct ladder *l = &p->ladder;
	struct topology_exchange *x = &t->exchanges[t->nexchanges++];
	struct topology_queue *q;

	ladder_delivery_exchange(l, x->name, sizeof(x->name));
	snprintf(x->type, sizeof(x->type), "topic");
	x->role = TOPOLOGY_DELIVERY;
	x->level = -1;
	if (ladder_style(l->naming)->library)
		add_ae_policy(t, x, parking);
	else
		arg_str(x->args, &x->nargs, "alternate-exchange", parking);

	x = &t->exchanges[t->nexchanges++];
	q = &t->queues[t->nqueues++];
	snprintf(x->name, sizeof(x->name), "%s", parking);
	snprintf(x->type, sizeof(x->type), "fanout");
	x->role = TOPOLOGY_PARKING;
	x->level = -1;
	ladder_parking_queue(l, q->name, sizeof(q->name));
	q->role = TOPOLOGY_PARKING;
	q->level = -1;
	queue_type_args(p, q, false);
	add_binding(t, parking, q->name, false, "");
}

/* Adds destination I: bound from the delivery exchange DELIVERY with its
 * exact-word-count key, to its queue or to its owner's exchange (bound,
 * never declared). */
static void
add_destination(const struct plan *p, struct topology *t, const char *delivery,
    size_t i)
{
	char key[LADDER_NAME_MAX];
	bool exchange;
	const char *target = plan_destination_target(p, i, &exchange);

	ladder_destination_pattern(&p->ladder, p->destinations[i], key, sizeof(key));
	if (exchange) {
		/* Its owner's, of the type it chose: bound, never declared. */
		struct topology_exchange *x = &t->exchanges[t->nexchanges++];

		snprintf(x->name, sizeof(x->name), "%s", target);
		x->role = TOPOLOGY_DESTINATION;
		x->level = -1;
		add_binding(t, delivery, x->name, true, key);
		return;
	}
	struct topology_queue *q = &t->queues[t->nqueues++];

	snprintf(q->name, sizeof(q->name), "%s", target);
	q->role = TOPOLOGY_DESTINATION;
	q->level = -1;
	queue_type_args(p, q, false);
	add_binding(t, delivery, q->name, false, key);
}

int
topology_build(const struct plan *p, struct topology *t, char *err, size_t errlen)
{
	const struct ladder *l = &p->ladder;
	char name[LADDER_NAME_MAX], parking[LADDER_NAME_MAX];
	size_t nlev = (size_t)l->levels;

	memset(t, 0, sizeof(*t));
	t->exchanges = calloc(nlev + 2 + p->ndestinations, sizeof(*t->exchanges));
	t->queues = calloc(nlev + 1 + p->ndestinations, sizeof(*t->queues));
	t->bindings = calloc(2 * nlev + 1 + p->ndestinations, sizeof(*t->bindings));
	t->policies = calloc(1, sizeof(*t->policies));
	if (t->exchanges == NULL || t->queues == NULL || t->bindings == NULL ||
	    t->policies == NULL) {
		snprintf(err, errlen, "building the ladder topology: out of memory");
		topology_free(t);
		return -1;
	}
	for (int k = l->levels - 1; k >= 0; k--)
		add_level(p, t, k);
	ladder_parking_exchange(l, parking, sizeof(parking));
	add_delivery_and_parking(p, t, parking);
	ladder_delivery_exchange(l, name, sizeof(name));
	for (size_t i = 0; i < p->ndestinations; i++)
		add_destination(p, t, name, i);
	return 0;
}

void
topology_free(struct topology *t)
{
	free(t->exchanges);
	free(t->queues);
	free(t->bindings);
	free(t->policies);
	memset(t, 0, sizeof(*t));
}

const struct topology_policy *
topology_policy_for(const struct topology *t, const char *name)
{
	for (size_t i = 0; i < t->npolicies; i++)
		if (strcmp(t->policies[i].target, name) == 0)
			return &t->policies[i];
	return NULL;
}

const struct topology_arg *
topology_arg_find(const struct topology_arg *args, size_t nargs, const char *key)
{
	for (size_t i = 0; i < nargs; i++)
		if (strcmp(args[i].key, key) == 0)
			return &args[i];
	return NULL;
}

char *
topology_arg_format(const struct topology_arg *arg, char *out, size_t outlen)
{
	if (arg->is_int)
		snprintf(out, outlen, "%lld", (long long)arg->num);
	else
		snprintf(out, outlen, "%s", arg->str);
	return out;
}
