/* broker_needs: what a plan needs of its broker — a RabbitMQ version and
 * enabled feature flags — checked read-only through the management API
 * before anything is declared (declare_ladder), when the ladder is
 * verified (verify_ladder) and by `cutover check --broker`. */
#ifndef CUTOVER_BROKER_NEEDS_H
#define CUTOVER_BROKER_NEEDS_H

#include <stddef.h>

#include <jansson.h>

#include "broker/mgmt.h"
#include "plan.h"

/* Reads M's broker version and feature flags (mgmt_read_about) and checks
 * every need of plan P against them (the table in broker_needs.c: quorum
 * level queues need feature flag quorum_queue; their at-least-once
 * dead-lettering needs RabbitMQ 3.10 or later and feature flag
 * stream_queue, without which the broker falls back to at-most-once).
 * Sets *REPORT to a new object {"version", "erlang", "ok", "needs": [{
 * "need", "flag" or "min_version", "state", "ok", "why"}]} (with "error"
 * when the broker could not be read), which the caller frees.
 *
 * Returns 0 when the broker honours the plan; -1 when it cannot (ERR
 * names the missing flag or the version, and why the plan needs it) or
 * when it could not be read (ERR says why). */
int needs_check(struct mgmt *m, const struct plan *p, json_t **report,
    char *err, size_t errlen);

#endif /* CUTOVER_BROKER_NEEDS_H */
