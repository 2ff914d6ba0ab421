/* store_export: what an offline-verifiable export of one plan's history
 * reads from the chain — every event from the plan's first to the chain's
 * end (the plan's own with their content, the others only as links) and
 * the chain head, in one read transaction so an append in between cannot
 * make the export disagree with itself. */
#ifndef CUTOVER_STORE_EXPORT_H
#define CUTOVER_STORE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* Where the chain ended when the export was read. */
struct store_head {
	int64_t events;			/* how many events the chain holds */
	int64_t last_id;
	char last_hash[STORE_HASH_HEX];
};

/* Calls FN, in chain order, for each event from plan PLAN_ID's first event
 * to the chain's last, with OWN set for PLAN_ID's events (an event of
 * another plan is a link: only its id, prev_hash and hash are meant to be
 * used). FN returns non-zero to stop (then the call fails with ERR "out
 * of memory"). Then reads the chain head into HEAD. Returns 0 (FN not
 * called when PLAN_ID has no event), 1 when the head row is gone (ERR
 * says so), or -1. */
int store_export_read(struct store *s, int64_t plan_id,
    int (*fn)(const struct store_event *ev, int own, void *arg), void *arg,
    struct store_head *head, char *err, size_t errlen);

#endif
