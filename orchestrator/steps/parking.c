/* parking: walks a parking queue, removing the messages a caller picks and
 * giving every other back in its order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "parking.h"

int
parking_walk(struct broker *b, const char *queue, size_t max,
    parking_pick_fn pick, void *arg, struct parking_walk *out, char *err,
    size_t errlen)
{
	struct broker_delivery *held = NULL, d;
	char why[512];
	int rc = -1, r;

	memset(out, 0, sizeof(*out));
	out->behind = -1;
	if (max == 0 || max > PARKING_WALK_MAX)
		max = PARKING_WALK_MAX;
	if ((held = calloc(max, sizeof(*held))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	while (out->taken + out->left < max) {
		enum parking_pick v;

		memset(&d, 0, sizeof(d));
		r = broker_get(b, queue, true, &d, why, sizeof(why));
		if (r == BROKER_EMPTY) {
			out->end = true;
			break;
		}
		if (r != 0) {
			errbuf_set(err, errlen, "reading the parking queue '%s': %s",
			    queue, why);
			goto done;
		}
		out->behind = d.remaining;
		v = pick(&d, arg);
		if (v == PARKING_LEAVE) {
			held[out->left++] = d;
			continue;
		}
		r = broker_ack(b, &d, why, sizeof(why));
		broker_delivery_free(&d);
		if (r != 0) {
			errbuf_set(err, errlen, "removing a message from the parking "
			    "queue '%s': %s", queue, why);
			goto done;
		}
		out->taken++;
		if (v == PARKING_TAKE_STOP) {
			out->stopped = true;
			break;
		}
	}
	if (!out->end && !out->stopped && out->behind == 0)
		out->end = true;
	rc = 0;
done:
	for (size_t i = 0; i < out->left; i++) {
		/* Back where they were; a failure here (channel gone) has the
		 * broker requeue them all the same. */
		(void)broker_reject(b, &held[i], true, why, sizeof(why));
		broker_delivery_free(&held[i]);
	}
	free(held);
	return rc;
}

bool
parking_own(const struct broker_delivery *d, const char *plan,
    struct publish_info *pi)
{
	char why[128];

	if (publish_read(d, pi, why, sizeof(why)) != 0)
		return false;
	return strcmp(pi->plan, plan) == 0 && (strcmp(pi->purpose,
	    PUBLISH_CANARY) == 0 || strcmp(pi->purpose, PUBLISH_PROBE) == 0);
}
