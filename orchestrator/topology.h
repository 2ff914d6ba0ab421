/* topology: every broker object a plan's ladder consists of — exchanges,
 * queues with their arguments, bindings — as a plain list built from the
 * plan alone (no I/O). declare_ladder creates it, verify_ladder compares the
 * broker against it, `cutover check` prints it. */
#ifndef CUTOVER_TOPOLOGY_H
#define CUTOVER_TOPOLOGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ladder.h"
#include "plan.h"

#define TOPOLOGY_MAX_ARGS 6

enum topology_role {
	TOPOLOGY_LEVEL,            /* a ladder level exchange or queue */
	TOPOLOGY_DELIVERY,         /* the delivery exchange */
	TOPOLOGY_PARKING,          /* the parking exchange or queue */
	TOPOLOGY_DESTINATION       /* a destination queue, or exchange (type
	                            * empty: its owner's), that its consumers own */
};

struct topology_arg {
	char key[40];
	bool is_int;
	int64_t num;               /* when is_int */
	char str[LADDER_NAME_MAX]; /* otherwise */
};

struct topology_exchange {
	char name[LADDER_NAME_MAX];
	char type[8];              /* "topic" or "fanout" */
	enum topology_role role;
	int level;                 /* for TOPOLOGY_LEVEL, else -1 */
	size_t nargs;
	struct topology_arg args[TOPOLOGY_MAX_ARGS];
};

struct topology_queue {
	char name[LADDER_NAME_MAX];
	enum topology_role role;
	int level;                 /* for TOPOLOGY_LEVEL, else -1 */
	size_t nargs;
	struct topology_arg args[TOPOLOGY_MAX_ARGS];
};

struct topology_binding {
	char source[LADDER_NAME_MAX];      /* an exchange */
	char destination[LADDER_NAME_MAX]; /* a queue or an exchange */
	bool to_exchange;
	char key[LADDER_NAME_MAX];
};

/* The priority of the policies the ladder declares. Only one policy
 * applies to an object (the highest priority); one of a higher priority
 * that matches the same exchange hides this one, and verify_ladder names
 * it. */
#define TOPOLOGY_POLICY_PRIORITY 10
#define TOPOLOGY_AE_POLICY_PREFIX "cutover.ae." /* then the exchange's name */

/* A policy the ladder declares: for a library's naming, the delivery
 * exchange's alternate exchange (the library declares that exchange with
 * no arguments, DESIGN.md §3). It sets one key, ARG. */
struct topology_policy {
	char name[LADDER_NAME_MAX + 16];   /* "cutover.ae." and the exchange */
	char pattern[2 * LADDER_NAME_MAX + 3]; /* exactly TARGET: ^...$, escaped */
	char apply_to[16];                 /* "exchanges" */
	int priority;
	char target[LADDER_NAME_MAX];      /* the exchange it is for */
	struct topology_arg arg;           /* alternate-exchange = parking */
};

struct topology {
	struct topology_exchange *exchanges;
	size_t nexchanges;
	struct topology_queue *queues;
	size_t nqueues;
	struct topology_binding *bindings;
	size_t nbindings;
	struct topology_policy *policies;
	size_t npolicies;
};

/* Builds the topology of P's ladder: for each level (highest first) its
 * topic exchange, its queue (TTL, dead-letter exchange, and for quorum
 * at-least-once dead-lettering with reject-publish; classic kombu level
 * queues reject-publish too, as Kombu declares them) and its two bindings;
 * the delivery exchange with its alternate exchange (an argument, or for a
 * library's naming, whose exchanges carry no arguments, a policy: see
 * struct topology_policy); the fanout parking exchange, queue and binding;
 * each destination queue (or exchange, for a destination that names one)
 * and its binding, keyed on the destination's routing key.
 * Returns 0 and fills T (free with topology_free), or -1 with ERR. */
int topology_build(const struct plan *p, struct topology *t, char *err, size_t errlen);

/* The policy of T for exchange NAME, or NULL when it has none. */
const struct topology_policy *topology_policy_for(const struct topology *t,
    const char *name);

/* Frees what T holds and leaves it empty. */
void topology_free(struct topology *t);

/* Looks up an argument by KEY in ARGS. Returns it, or NULL. */
const struct topology_arg *topology_arg_find(const struct topology_arg *args,
    size_t nargs, const char *key);

/* Writes ARG's value as text ("600000", "delay.level.03"). Returns OUT. */
char *topology_arg_format(const struct topology_arg *arg, char *out, size_t outlen);

#endif
