/* parking: looking through a parking queue for cutover's own messages —
 * the canary's message to its unbound destination, which it removes; a
 * killed canary's, and probes parked while the probe queue was missing,
 * which the watch removes and accounts for — while leaving every other
 * message where it was.
 *
 * A walk reads the queue with basic.get and manual acknowledgement,
 * holding every message it leaves unacknowledged (so none is read twice)
 * and acknowledging at once each one it takes; at the end it gives the
 * held ones back with basic.reject and requeue, in the order read. A
 * classic queue puts a requeued message back at its original position; a
 * quorum queue delivers returned messages first, in the order returned:
 * either way the queue's order is what it was. If the walk's channel
 * closes first, the broker requeues the held messages all the same.
 *
 * Every walk redelivers the messages it leaves (their redelivered flag
 * is set, and a quorum queue counts the return against a delivery-limit:
 * 20 by default on RabbitMQ 4.0, past which it drops the message), so
 * callers walk only when something new may be there, and boundedly. */
#ifndef CUTOVER_PARKING_H
#define CUTOVER_PARKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "publish.h"

/* What a walk does with a message. */
enum parking_pick {
	PARKING_LEAVE = 0,	/* hold it; given back at the end */
	PARKING_TAKE,		/* acknowledge it: removed */
	PARKING_TAKE_STOP	/* remove it and end the walk */
};

typedef enum parking_pick (*parking_pick_fn)(const struct broker_delivery *d,
    void *arg);

/* What a walk saw. */
struct parking_walk {
	size_t taken;		/* removed */
	size_t left;		/* read, held and given back */
	int64_t behind;		/* messages the broker still had behind the last
				 * one read (-1 when none was read) */
	bool stopped;		/* PARKING_TAKE_STOP ended it */
	bool end;		/* it read the queue to its end */
};

/* Walks QUEUE, reading at most MAX messages (1..PARKING_WALK_MAX), asking
 * PICK (with ARG) about each. Returns 0 and fills OUT, or -1 with ERR
 * when reading or removing failed (OUT then says how far it got; the
 * held messages are given back either way). */
int parking_walk(struct broker *b, const char *queue, size_t max,
    parking_pick_fn pick, void *arg, struct parking_walk *out, char *err,
    size_t errlen);

#define PARKING_WALK_MAX 1000

/* Whether D is one of cutover's own messages for plan PLAN: stamped
 * (publish_read) with PLAN and the purpose canary or probe. `cutover
 * publish`'s messages (purpose manual) are the operator's, not cutover's.
 * Fills *PI when it returns true. */
bool parking_own(const struct broker_delivery *d, const char *plan,
    struct publish_info *pi);

#endif
