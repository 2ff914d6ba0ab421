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

/* needs_check's verdict on what A says of the broker (pure): A's version
 * and flags (FLAGS may be NULL when no need of P is a flag). Sets *REPORT
 * as needs_check does. Returns 0 when every need of P is met, -1 with ERR
 * naming each unmet one. A flag A does not list counts as enabled on
 * RabbitMQ 4.0 or later (required flags may leave the list), as missing
 * before. */
int needs_evaluate(const struct plan *p, const struct mgmt_about *a,
    json_t **report, char *err, size_t errlen);

#endif /* CUTOVER_BROKER_NEEDS_H */
