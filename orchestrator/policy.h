/* policy: which broker policy applies to a queue or an exchange, decided
 * as RabbitMQ decides it: among the policies whose apply-to concerns the
 * object and whose PCRE pattern matches its name, the one of the highest
 * priority. One apply-to table for verify_ladder, measure_horizon and the
 * watch's drift check. */
#ifndef CUTOVER_POLICY_H
#define CUTOVER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "broker/mgmt.h"
#include "pattern.h"

enum policy_object { POLICY_QUEUE, POLICY_EXCHANGE };

/* One policy (or operator policy) of a vhost; strings borrowed from the
 * listing the set holds. */
struct policy {
	const char *name;
	const char *pattern;
	const char *apply_to;		/* as the broker says; NULL: "all" */
	int64_t priority;
	const json_t *definition;
	int64_t ttl_ms;			/* its message-ttl, -1 when it sets none */
	int64_t expires_ms;		/* its expires, -1 when it sets none */
	struct pattern *re;		/* NULL: PCRE2 could not compile it */
};

struct policy_set {
	struct policy *v;
	size_t n;
	json_t *json;			/* the listing; owns the strings */
};

/* Does a policy with APPLY_TO ("queues", "classic_queues",
 * "quorum_queues", "streams", "exchanges", "all"; NULL as "all") concern
 * an object of KIND whose queue type is QUEUE_TYPE ("classic", "quorum",
 * "stream"; ignored for exchanges)? An apply-to this table does not know
 * concerns nothing. */
bool policy_applies(const char *apply_to, enum policy_object kind,
    const char *queue_type);

/* Reads LISTING (a JSON array as GET /api/policies/VHOST or
 * /api/operator-policies/VHOST answers it; the set takes its reference,
 * also on failure) into S, compiling each pattern. An entry without a name
 * or pattern is skipped. Returns 0, or -1 with ERR (memory; S is then
 * empty). */
int policy_set_load(struct policy_set *s, json_t *listing, char *err, size_t errlen);

/* Reads the vhost's policies (WHICH "policies") or operator policies
 * (WHICH "operator-policies") from the management API M into S
 * (policy_set_load). Returns 0, or -1 with ERR; S is then empty. */
int policy_set_read(struct mgmt *m, const char *which, struct policy_set *s,
    char *err, size_t errlen);

/* Frees what S holds and empties it. S may be empty. */
void policy_set_free(struct policy_set *s);

/* The policy of S that applies to the object NAME of KIND (queue type
 * QUEUE_TYPE), or NULL. *UNKNOWN is set to the highest-priority policy,
 * above the one returned, that might apply but cannot be decided: its
 * pattern did not compile in PCRE2 or its match hit a limit (the caller
 * chooses whether to count it as applying); NULL when there is none. */
const struct policy *policy_for(const struct policy_set *s, const char *name,
    enum policy_object kind, const char *queue_type, const struct policy **unknown);

#endif
