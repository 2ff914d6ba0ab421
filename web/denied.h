/* denied: requests the API refused (401, 403, 409) recorded in the
 * history of the plan they named, as `request.denied` events: the status,
 * method, route and path (the route's own, never a query string or a
 * header: never a token), why, the caller's address, and the operator
 * when the token was one. A request that names no plan (or one that does
 * not exist) is only logged.
 *
 * Bounded, so that a hostile client cannot grow the database without
 * limit: per plan and UTC minute, the first DENIED_PER_MINUTE refusals are
 * recorded one by one; the rest of that minute are counted and recorded
 * as one `request.denied.more` event (count, by status) at the first
 * request after the minute ends (or when the server stops). A plan's
 * history holds at most DENIED_MAX such events in all; past that, refusals
 * are only logged. At most DENIED_PER_MINUTE + 1 events a minute per plan,
 * DENIED_MAX (about 4 MB) per plan ever. */
#ifndef CUTOVER_DENIED_H
#define CUTOVER_DENIED_H

#include <stdint.h>

#include "store.h"

#define DENIED_PER_MINUTE	5
#define DENIED_MAX		10000
#define DENIED_PLANS		256	/* plans counted at once; least recent go */
#define DENIED_ACTOR		"(none)"	/* no operator: not a valid name */

struct denied;

/* A new, empty set of counts (the caller frees it with denied_free), or
 * NULL out of memory. */
struct denied *denied_new(void);

/* Writes what is still counted (denied_flush for every minute) to S and
 * frees D (NULL is fine). */
void denied_free(struct denied *d, struct store *s);

/* One refused request. */
struct denied_request {
	int64_t plan_id;	/* the plan it named, or 0 */
	int status;		/* 401, 403 or 409: others are ignored */
	const char *method;
	const char *route;	/* the route's name (api.c) */
	const char *path;	/* the decoded path the route matched */
	const char *actor;	/* the authenticated operator, or NULL */
	const char *from;	/* the caller's address, or NULL */
	const char *why;	/* the answer's error message */
};

/* Records refusal R at NOW_MS into S as the rules above say. Failures
 * are logged, never returned: a refusal is answered whatever happens. */
void denied_note(struct denied *d, struct store *s, const struct denied_request *r,
    int64_t now_ms);

/* Records the counts of minutes before NOW_MS's. */
void denied_flush(struct denied *d, struct store *s, int64_t now_ms);

#endif
