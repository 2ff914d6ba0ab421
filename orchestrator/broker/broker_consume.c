/* broker_consume: receiving: basic.get (one, or several at once), the
 * handle's one consumer (kept across channel reopens; its deliveries
 * handed out in batches, and kept past its cancel), acknowledging (a
 * batch in one multiple ack where that acks nothing else) and rejecting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

/* One get-ok just read (method OK), with its content, into OUT. Returns
 * 0, or a negative code with ERR. */
static int
got_one(struct broker *b, const amqp_basic_get_ok_t *ok, int64_t deadline,
    struct broker_delivery *out, const char *what, char *err, size_t errlen)
{
	int rc;

	memset(out, 0, sizeof(*out));
	out->tag = ok->delivery_tag;
	out->redelivered = ok->redelivered;
	out->remaining = ok->message_count;
	/* Copied before the content is read: reading recycles the frame's
	 * memory. */
	out->exchange = broker__dup_bytes(ok->exchange);
	out->routing_key = broker__dup_bytes(ok->routing_key);
	if (out->exchange == NULL || out->routing_key == NULL) {
		broker_delivery_free(out);
		broker__conn_lost(b, BROKER_ELOST, "out of memory");
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	if ((rc = broker__read_content(b, deadline, out, what, err, errlen)) != 0) {
		broker_delivery_free(out);
		return rc;
	}
	out->epoch = b->epoch;
	out->unacked = true;
	b->unsettled++;
	(void)broker__open_add(b, out->tag);
	return 0;
}

int
broker_get(struct broker *b, const char *queue, bool manual_ack,
    struct broker_delivery *out, char *err, size_t errlen)
{
	amqp_rpc_reply_t r;
	char what[WHAT_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = broker__check_name("getting a message", queue, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "getting a message from queue '%s'",
	    queue);
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	r = amqp_basic_get(b->conn, b->chan, amqp_cstring_bytes(queue), 0);
	if ((rc = broker__rpc_result(b, r, what, err, errlen)) != 0)
		return rc;
	if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
		return BROKER_EMPTY;
	if ((rc = got_one(b, r.reply.decoded, clock_mono_ms() + b->timeout_ms, out,
	    what, err, errlen)) != 0)
		return rc;
	if (!manual_ack && (rc = broker_ack(b, out, err, errlen)) != 0) {
		broker_delivery_free(out);
		return rc;
	}
	return 0;
}

int
broker_get_many(struct broker *b, const char *queue, size_t n,
    struct broker_delivery *out, size_t *got, bool *empty, char *err,
    size_t errlen)
{
	amqp_basic_get_t req;
	amqp_frame_t f;
	char what[WHAT_MAX];
	size_t answered = 0;
	int rc;

	*got = 0;
	*empty = false;
	if ((rc = broker__check_name("getting messages", queue, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "getting messages from queue '%s'", queue);
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	memset(&req, 0, sizeof(req));
	req.queue = amqp_cstring_bytes(queue);
	for (size_t i = 0; i < n; i++)
		if ((rc = amqp_send_method(b->conn, b->chan, AMQP_BASIC_GET_METHOD,
		    &req)) != AMQP_STATUS_OK)
			/* The answers to the gets already sent would come
			 * unread: the connection goes (its deliveries return to
			 * the queue). */
			return broker__on_library_error(b, rc, what, err, errlen);
	/* The answers come in the order of the gets, among whatever else
	 * the broker sends (confirms, returns, a close), dispatched as usual. */
	while (answered < n) {
		int64_t deadline = clock_mono_ms() + b->timeout_ms;

		if ((rc = broker__next_frame(b, deadline, &f)) != AMQP_STATUS_OK) {
			if (rc == AMQP_STATUS_TIMEOUT) {
				broker__conn_lost(b, BROKER_ETIMEOUT, "no answer to a get");
				errbuf_set(err, errlen, "%s: no answer within the timeout "
				    "(the connection is reopened on the next call)", what);
				return BROKER_ETIMEOUT;
			}
			return broker__on_library_error(b, rc, what, err, errlen);
		}
		if (f.channel == b->chan && f.frame_type == AMQP_FRAME_METHOD &&
		    f.payload.method.id == AMQP_BASIC_GET_EMPTY_METHOD) {
			answered++;
			*empty = true;
			continue;
		}
		if (f.channel == b->chan && f.frame_type == AMQP_FRAME_METHOD &&
		    f.payload.method.id == AMQP_BASIC_GET_OK_METHOD) {
			answered++;
			if ((rc = got_one(b, f.payload.method.decoded, deadline,
			    &out[*got], what, err, errlen)) != 0)
				return rc;
			(*got)++;
			continue;
		}
		if ((rc = broker__dispatch(b, &f, deadline, what, err, errlen)) != 0)
			return rc;
		if (b->conn == NULL || b->chan == 0) {
			errbuf_set(err, errlen, "%s: the channel closed", what);
			return BROKER_ELOST;
		}
	}
	return 0;
}

int
broker_consume(struct broker *b, const char *queue, uint16_t prefetch,
    char *err, size_t errlen)
{
	int rc;

	if ((rc = broker__check_name("consuming", queue, false, err, errlen)) != 0)
		return rc;
	if (b->consume_queue != NULL) {
		errbuf_set(err, errlen, "consuming from queue '%s': this handle "
		    "already consumes from queue '%s'; cancel that first",
		    queue, b->consume_queue);
		return BROKER_ERR;
	}
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	free(b->consumer_error);
	b->consumer_error = NULL;
	if ((b->consume_queue = strdup(queue)) == NULL) {
		errbuf_set(err, errlen, "consuming from queue '%s': out of memory",
		    queue);
		return BROKER_ERR;
	}
	b->prefetch = prefetch;
	if ((rc = broker__subscribe(b, err, errlen)) != 0) {
		free(b->consume_queue);
		b->consume_queue = NULL;
	}
	return rc;
}

static bool
pop_delivery(struct broker *b, struct broker_delivery *out)
{
	struct queued *q = b->qhead;

	if (q == NULL)
		return false;
	if ((b->qhead = q->next) == NULL)
		b->qtail = NULL;
	*out = q->d;
	free(q);
	return true;
}

int
broker_next(struct broker *b, int timeout_ms, struct broker_delivery *out,
    char *err, size_t errlen)
{
	amqp_frame_t f;
	char what[WHAT_MAX];
	int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int rc;

	memset(out, 0, sizeof(*out));
	if (pop_delivery(b, out))
		goto handed;
	if (b->consume_queue == NULL && b->consumer_error == NULL) {
		errbuf_set(err, errlen, "waiting for a delivery: no consumer; call "
		    "broker_consume first");
		return BROKER_ERR;
	}
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	for (;;) {
		if (pop_delivery(b, out))
			goto handed;
		if (b->consume_queue == NULL) {
			errbuf_set(err, errlen, "waiting for a delivery: %s",
			    b->consumer_error != NULL ? b->consumer_error :
			    "the consumer ended");
			free(b->consumer_error);
			b->consumer_error = NULL;
			return BROKER_EREFUSED;
		}
		snprintf(what, sizeof(what), "waiting for a delivery from "
		    "queue '%s'", b->consume_queue);
		rc = broker__next_frame(b, deadline, &f);
		if (rc == AMQP_STATUS_TIMEOUT) {
			errbuf_set(err, errlen, "%s: nothing arrived within %d ms",
			    what, timeout_ms);
			return BROKER_ETIMEOUT;
		}
		if (rc != AMQP_STATUS_OK)
			return broker__on_library_error(b, rc, what, err, errlen);
		if ((rc = broker__dispatch(b, &f, clock_mono_ms() + b->timeout_ms, what, err,
		    errlen)) != 0)
			return rc;
		if (b->qhead == NULL && clock_mono_ms() > deadline) {
			errbuf_set(err, errlen, "%s: nothing arrived within %d ms",
			    what, timeout_ms);
			return BROKER_ETIMEOUT;
		}
	}
handed:
	b->unsettled++;         /* queued deliveries are the channel's own */
	return 0;
}

static int
settle_delivery(struct broker *b, struct broker_delivery *d, bool ack,
    bool requeue, char *err, size_t errlen)
{
	const char *verb = ack ? "acknowledging" : "rejecting";
	char what[WHAT_MAX];
	int rc;

	if (!d->unacked) {
		errbuf_set(err, errlen, "%s a message: it needs no acknowledgement "
		    "(already settled, or received with automatic "
		    "acknowledgement)", verb);
		return BROKER_ERR;
	}
	if (b->conn == NULL || b->chan == 0 || d->epoch != b->epoch) {
		d->unacked = false;
		errbuf_set(err, errlen, "%s a message: the channel it came on has "
		    "closed since; the broker will deliver it again", verb);
		return BROKER_ELOST;
	}
	snprintf(what, sizeof(what), "%s a message", verb);
	rc = ack ? amqp_basic_ack(b->conn, b->chan, d->tag, 0) :
	    amqp_basic_reject(b->conn, b->chan, d->tag, requeue);
	if (rc < 0)
		return broker__on_library_error(b, rc, what, err, errlen);
	d->unacked = false;
	broker__open_settled(b, d->tag);
	if (b->unsettled > 0)
		b->unsettled--;
	return 0;
}

int
broker_ack(struct broker *b, struct broker_delivery *d, char *err,
    size_t errlen)
{
	return settle_delivery(b, d, true, false, err, errlen);
}

/* Whether D can be acknowledged on B's channel now; when not, says why in
 * *RC (as settle_delivery would) and D needs no more. */
static bool
ackable(struct broker *b, struct broker_delivery *d, int *rc)
{
	if (!d->unacked) {
		*rc = BROKER_ERR;
		return false;
	}
	if (b->conn == NULL || b->chan == 0 || d->epoch != b->epoch) {
		d->unacked = false;
		*rc = BROKER_ELOST;
		return false;
	}
	return true;
}

int
broker_ack_many(struct broker *b, struct broker_delivery *const *d, size_t n,
    int *results, char *err, size_t errlen)
{
	size_t i, k, nfailed = 0, marked = 0;
	uint64_t last = 0;
	int rc, first = 0;

	for (i = 0; i < n; i++) {
		results[i] = 0;
		if (!ackable(b, d[i], &results[i]))
			continue;
		/* Only one counted among the unsettled joins a multiple
		 * ack; any other is acknowledged on its own below. */
		k = broker__open_find(b, d[i]->tag);
		if (!b->open_lost && k < b->nopen && !(b->open[k] & OPEN_SETTLED)) {
			b->open[k] |= OPEN_ACKING;
			marked++;
		}
	}
	/* The longest run, from the oldest unsettled delivery, of ones being
	 * acknowledged: one frame covers them all, and nothing else, for
	 * every delivery the channel has sent up to the last of them has been
	 * read and is counted there. */
	for (k = b->open_head; marked > 0 && k < b->nopen &&
	    (b->open[k] & (OPEN_SETTLED | OPEN_ACKING)); k++)
		if (b->open[k] & OPEN_ACKING)
			last = b->open[k] & ~OPEN_FLAGS;
	rc = last == 0 ? 0 : amqp_basic_ack(b->conn, b->chan, last, 1);
	for (k = b->open_head; k < b->nopen; k++)
		b->open[k] &= ~OPEN_ACKING;
	for (i = 0; i < n; i++) {
		if (results[i] != 0)
			goto failed;
		if (rc < 0) {
			results[i] = broker__on_library_error(b, rc, "acknowledging "
			    "messages", err, errlen);
			goto failed;
		}
		if (last != 0 && d[i]->tag <= last) {
			d[i]->unacked = false;
			broker__open_settled(b, d[i]->tag);
			if (b->unsettled > 0)
				b->unsettled--;
			continue;
		}
		if ((results[i] = settle_delivery(b, d[i], true, false, err, errlen)) == 0)
			continue;
failed:
		if (nfailed++ == 0)
			first = results[i];
	}
	if (nfailed > 0 && first == BROKER_ELOST)
		errbuf_set(err, errlen, "acknowledging %zu of %zu messages: the channel "
		    "they came on has closed since; the broker will deliver them again",
		    nfailed, n);
	return first;
}

int
broker_reject(struct broker *b, struct broker_delivery *d, bool requeue,
    char *err, size_t errlen)
{
	return settle_delivery(b, d, false, requeue, err, errlen);
}

/* Cancels the consumer. KEEP: what it delivered and has not been handed
 * out stays queued, and what it still delivers (sent before the broker
 * took the cancel) is queued too, for broker_next_many; otherwise every
 * delivery received and not handed out goes back to the queue (one kept
 * from an earlier cancel too). */
static int
cancel(struct broker *b, bool keep, char *err, size_t errlen)
{
	struct broker_delivery d;
	char what[WHAT_MAX];
	int rc = 0;

	free(b->consumer_error);
	b->consumer_error = NULL;
	if (b->consume_queue != NULL) {
		snprintf(what, sizeof(what), "cancelling the consumer on queue '%s'",
		    b->consume_queue);
		free(b->kept_ctag);
		b->kept_ctag = NULL;
		if (keep && b->consuming) {
			/* Before the cancel-ok: frames read while waiting for
			 * it are dispatched later. */
			b->kept_ctag = b->ctag;
			b->ctag = NULL;
		}
		if (b->conn != NULL && b->chan != 0 && b->consuming &&
		    amqp_basic_cancel(b->conn, b->chan, amqp_cstring_bytes(
		    b->kept_ctag != NULL ? b->kept_ctag : b->ctag)) == NULL)
			rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what,
			    err, errlen);
		free(b->consume_queue);
		b->consume_queue = NULL;
		free(b->ctag);
		b->ctag = NULL;
		b->consuming = false;
	}
	if (keep)
		return rc;
	free(b->kept_ctag);
	b->kept_ctag = NULL;
	/* Prefetched deliveries not handed out go back to the queue. */
	while (pop_delivery(b, &d)) {
		if (b->conn != NULL && b->chan != 0 && d.epoch == b->epoch) {
			(void)amqp_basic_reject(b->conn, b->chan, d.tag, 1);
			broker__open_settled(b, d.tag);
		}
		broker_delivery_free(&d);
	}
	return rc;
}

int
broker_cancel(struct broker *b, char *err, size_t errlen)
{
	return cancel(b, false, err, errlen);
}

int
broker_cancel_keep(struct broker *b, char *err, size_t errlen)
{
	return cancel(b, true, err, errlen);
}

bool
broker_has_queued(const struct broker *b)
{
	return b->qhead != NULL;
}

int
broker_next_many(struct broker *b, size_t max, int wait_ms, int gap_ms,
    struct broker_delivery *out, size_t *got, char *err, size_t errlen)
{
	amqp_frame_t f;
	char what[WHAT_MAX];
	int64_t deadline;
	size_t before;
	int rc;

	*got = 0;
	for (int round = 0; round < 2; round++) {
		while (*got < max && pop_delivery(b, &out[*got])) {
			b->unsettled++;	/* queued deliveries are the channel's own */
			(*got)++;
		}
		if (*got == max || b->consume_queue == NULL)
			return 0;
		/* Then whatever arrived since the last call, at once. */
		if (round == 0 && (rc = broker__begin(b, err, errlen)) != 0)
			return rc;
	}
	deadline = clock_mono_ms() + (*got == 0 ? wait_ms : gap_ms);
	while (*got < max && b->consume_queue != NULL && b->conn != NULL &&
	    b->chan != 0) {
		snprintf(what, sizeof(what), "waiting for deliveries from queue '%s'",
		    b->consume_queue);
		rc = broker__next_frame(b, deadline, &f);
		if (rc == AMQP_STATUS_TIMEOUT)
			return 0;
		if (rc != AMQP_STATUS_OK)
			return broker__on_library_error(b, rc, what, err, errlen);
		if ((rc = broker__dispatch(b, &f, clock_mono_ms() + b->timeout_ms, what,
		    err, errlen)) != 0)
			return rc;
		before = *got;
		while (*got < max && pop_delivery(b, &out[*got])) {
			b->unsettled++;
			(*got)++;
		}
		if (*got > before)
			deadline = clock_mono_ms() + gap_ms;
		if (clock_mono_ms() > deadline)
			return 0;
	}
	return 0;
}
