/* traffic_consume: cutover-traffic's consumers, one thread and one broker
 * connection per destination queue. Each delivery is recorded in the book
 * (its id, path and arrival time against the not-before time it was sent
 * with, its move id when move_old moved it, and whether it was read on the
 * source of a plan with a target), then acknowledged: a message whose
 * acknowledgement is lost with its connection comes again and counts as a
 * duplicate, never as lost. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "broker/broker.h"
#include "log.h"
#include "publish.h"
#include "step.h"
#include "traffic.h"

#define CONSUME_TIMEOUT_MS	5000	/* connect and requests */
#define CONSUME_WAIT_MS		250	/* one broker_next; stop latency */
#define CONSUME_PREFETCH	500
#define CONSUME_BACKOFF_MS	100	/* after a failure, doubling ... */
#define CONSUME_BACKOFF_MAX_MS	2000	/* ... up to this */
#define LOGGED_FOREIGN		3	/* foreign messages logged, at most */

/* Which message of this run D is, from its headers. Returns 0 and fills
 * SEQ and PATH, or -1 with WHY when it is none. */
static int
identify(const struct traffic_consumer *c, const struct broker_delivery *d,
    uint64_t *seq, enum traffic_path *path, char *why, size_t whylen)
{
	const struct broker_header *run, *ph;
	struct publish_info pi;

	if (publish_read(d, &pi, why, whylen) != 0)
		return -1;
	run = broker_header_find(d, TRAFFIC_HDR_RUN);
	ph = broker_header_find(d, TRAFFIC_HDR_PATH);
	if (strcmp(pi.purpose, TRAFFIC_PURPOSE) != 0 || run == NULL ||
	    run->kind != BROKER_KIND_STR || strcmp(run->str, c->run) != 0) {
		snprintf(why, whylen, "purpose '%s', run '%s': not a message of "
		    "run %s", pi.purpose, run != NULL && run->str != NULL ?
		    run->str : "(none)", c->run);
		return -1;
	}
	if (ph == NULL || ph->kind != BROKER_KIND_STR || (strcmp(ph->str,
	    "old") != 0 && strcmp(ph->str, "ladder") != 0) || pi.seq < 0) {
		snprintf(why, whylen, "header %s is missing or neither old nor "
		    "ladder, or the sequence number is negative",
		    TRAFFIC_HDR_PATH);
		return -1;
	}
	*seq = (uint64_t)pi.seq;
	*path = strcmp(ph->str, "ladder") == 0 ? TRAFFIC_LADDER : TRAFFIC_OLD;
	return 0;
}

static void *
consume_main(void *arg)
{
	struct traffic_consumer *c = arg;
	struct broker_delivery d;
	struct traffic_arrival a;
	const struct broker_header *mh;
	enum traffic_path path;
	uint64_t seq, nforeign = 0;
	int64_t arrived, backoff = CONSUME_BACKOFF_MS;
	char err[1024], why[512];
	bool down = false, resubscribe = false;
	int rc;

	while (!atomic_load(&c->stop)) {
		if (resubscribe) {
			rc = broker_consume(c->broker, c->queue, CONSUME_PREFETCH,
			    err, sizeof(err));
			if (rc == 0 || rc == BROKER_ERR)
				resubscribe = false;
			else
				goto failed;
		}
		rc = broker_next(c->broker, CONSUME_WAIT_MS, &d, err,
		    sizeof(err));
		if (rc == BROKER_ETIMEOUT) {
			down = false;
			backoff = CONSUME_BACKOFF_MS;
			continue;
		}
		if (rc == BROKER_EREFUSED)
			resubscribe = true;	/* the broker cancelled us */
		if (rc != 0)
			goto failed;
		arrived = traffic_wall_ms();
		down = false;
		backoff = CONSUME_BACKOFF_MS;
		mh = broker_header_find(&d, TRAFFIC_HDR_MOVE_ID);
		a.move_id = mh != NULL && mh->kind == BROKER_KIND_STR ? mh->str :
		    NULL;
		a.on_source = c->source;
		if (identify(c, &d, &seq, &path, why, sizeof(why)) != 0) {
			(void)traffic_book_deliver(c->book, UINT64_MAX,
			    TRAFFIC_OLD, arrived, &a);
			if (nforeign++ < LOGGED_FOREIGN)
				log_event("warn", c->plan->name, "traffic", "queue %s: "
				    "message %s is not one of this run's, "
				    "acknowledged and counted as foreign: %s",
				    c->queue, d.message_id ? d.message_id :
				    "(no id)", why);
		} else
			(void)traffic_book_deliver(c->book, seq, path, arrived,
			    &a);
		rc = broker_ack(c->broker, &d, err, sizeof(err));
		broker_delivery_free(&d);
		if (rc == 0)
			continue;
failed:
		if (!down) {
			traffic_book_loss(c->book, true, 1);
			log_event("warn", c->plan->name, "traffic", "consumer of %s: %s; "
			    "reconnecting", c->queue, err);
		}
		down = true;
		traffic_sleep_ms(backoff);
		backoff = backoff * 2 > CONSUME_BACKOFF_MAX_MS ?
		    CONSUME_BACKOFF_MAX_MS : backoff * 2;
	}
	return NULL;
}

int
traffic_consumer_start(struct traffic_consumer *c, char *err, size_t errlen)
{
	char why[1024];

	atomic_init(&c->stop, false);
	c->started = false;
	if (step_broker_open(c->broker_at, CONSUME_TIMEOUT_MS, &c->broker, why,
	    sizeof(why)) != 0 ||
	    broker_consume(c->broker, c->queue, CONSUME_PREFETCH, why,
	    sizeof(why)) != 0) {
		snprintf(err, errlen, "consuming from %s%s: %s", c->queue,
		    c->source ? " on the source broker" : "", why);
		goto fail;
	}
	if (pthread_create(&c->thread, NULL, consume_main, c) != 0) {
		snprintf(err, errlen, "consuming from %s: cannot start a thread",
		    c->queue);
		goto fail;
	}
	c->started = true;
	return 0;
fail:
	broker_close(c->broker);
	c->broker = NULL;
	return -1;
}

void
traffic_consumer_stop(struct traffic_consumer *c)
{
	if (c->started) {
		atomic_store(&c->stop, true);
		pthread_join(c->thread, NULL);
		c->started = false;
	}
	broker_close(c->broker);
	c->broker = NULL;
}
