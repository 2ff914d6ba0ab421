/* broker_frames: the frames the broker sends on its own (publisher
 * confirms, returns, deliveries, consumer cancels, channel and connection
 * closes), read one by one with amqp_simple_wait_frame_noblock and handed
 * to dispatch(), and the content (header and body) of a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "broker_int.h"

static bool
streq_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* Reads the next frame, waiting until DEADLINE (monotonic ms) at most.
 * Returns an amqp_status_enum. Everything read from earlier frames must
 * have been copied: their memory is recycled here. */
int
next_frame(struct broker *b, int64_t deadline, amqp_frame_t *f)
{
	struct timeval tv;
	int64_t left = deadline - clock_mono_ms();

	if (left < 0)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	amqp_maybe_release_buffers(b->conn);
	return amqp_simple_wait_frame_noblock(b->conn, f, &tv);
}

/* Reads the content (header and body frames) of the message whose method
 * frame was just read, into D. Frames rabbitmq-c queued before that method
 * arrived are dispatched first. Returns 0, or a negative code with ERR. */
int
read_content(struct broker *b, int64_t deadline, struct broker_delivery *d,
    const char *what, char *err, size_t errlen)
{
	amqp_frame_t f;
	uint64_t size = 0, got = 0;
	bool have_header = false;
	char why[WHY_MAX];
	int rc;

	for (;;) {
		if (have_header && got == size)
			return 0;
		if ((rc = next_frame(b, deadline, &f)) != AMQP_STATUS_OK) {
			if (rc == AMQP_STATUS_TIMEOUT) {
				snprintf(why, sizeof(why), "a message's "
				    "content did not arrive within the timeout"
				    );
				conn_lost(b, BROKER_ETIMEOUT, why);
				errbuf_set(err, errlen, "%s: %s (the connection is "
				    "reopened on the next call)", what, why);
				return BROKER_ETIMEOUT;
			}
			return on_library_error(b, rc, what, err, errlen);
		}
		if (f.channel == 0 || f.channel != b->chan ||
		    f.frame_type == AMQP_FRAME_METHOD) {
			if (have_header && f.channel == b->chan) {
				conn_lost(b, BROKER_ELOST, "protocol error");
				errbuf_set(err, errlen, "%s: a method frame "
				    "arrived inside a message's content", what);
				return BROKER_ELOST;
			}
			rc = dispatch(b, &f, deadline, what, err, errlen);
			if (rc != 0)
				return rc;
			if (b->conn == NULL || b->chan == 0) {
				errbuf_set(err, errlen, "%s: the channel closed",
				    what);
				return BROKER_ELOST;
			}
			continue;
		}
		if (f.frame_type == AMQP_FRAME_HEADER && !have_header) {
			size = f.payload.properties.body_size;
			if (size > SIZE_MAX - 1 ||
			    (d->body = malloc((size_t)size + 1)) == NULL)
				goto nomem;
			d->body[0] = '\0';
			if (convert_properties(f.payload.properties.decoded,
			    d) != 0)
				goto nomem;
			have_header = true;
		} else if (f.frame_type == AMQP_FRAME_BODY && have_header &&
		    f.payload.body_fragment.len <= size - got) {
			memcpy(d->body + got, f.payload.body_fragment.bytes,
			    f.payload.body_fragment.len);
			got += f.payload.body_fragment.len;
			d->body[got] = '\0';
			d->len = (size_t)got;
		} else {
			conn_lost(b, BROKER_ELOST, "protocol error");
			errbuf_set(err, errlen, "%s: unexpected frame (type %d) in "
			    "a message's content", what, f.frame_type);
			return BROKER_ELOST;
		}
	}
nomem:
	errbuf_set(err, errlen, "%s: out of memory reading a message", what);
	conn_lost(b, BROKER_ELOST, "out of memory");
	return BROKER_ERR;
}

static void
on_ack(struct broker *b, uint64_t tag, bool multiple, bool nack)
{
	size_t i;
	struct pub *p;

	for (i = 0; i < b->npubs; i++) {
		p = &b->pubs[i];
		if (p->result != PUB_PENDING ||
		    (multiple ? p->tag > tag : p->tag != tag))
			continue;
		if (nack)
			pub_settle(p, BROKER_ENACKED, "nacked by the broker");
		else if (p->returned)
			pub_settle(p, BROKER_ERETURNED, "returned: no route");
		else
			p->result = 0;
	}
}

/* basic.return: the broker sends it before the ack, without a delivery
 * tag. Returns come in publish order, so the message is the earliest
 * pending mandatory one with the same exchange, routing key and message
 * id. */
static int
on_return(struct broker *b, amqp_frame_t *f, int64_t deadline, const char *what,
    char *err, size_t errlen)
{
	const amqp_basic_return_t *m = f->payload.method.decoded;
	struct broker_delivery d;
	struct pub *p;
	size_t i;
	int rc;

	memset(&d, 0, sizeof(d));
	d.exchange = dup_bytes(m->exchange);
	d.routing_key = dup_bytes(m->routing_key);
	if (d.exchange == NULL || d.routing_key == NULL) {
		broker_delivery_free(&d);
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	if ((rc = read_content(b, deadline, &d, what, err, errlen)) != 0) {
		broker_delivery_free(&d);
		return rc;
	}
	for (i = 0; i < b->npubs; i++) {
		p = &b->pubs[i];
		if (p->result == PUB_PENDING && p->mandatory && !p->returned &&
		    strcmp(p->exchange, d.exchange) == 0 &&
		    strcmp(p->routing_key, d.routing_key) == 0 &&
		    streq_null(p->message_id, d.message_id)) {
			p->returned = true;
			break;
		}
	}
	broker_delivery_free(&d);
	return 0;
}

static int
on_deliver(struct broker *b, amqp_frame_t *f, int64_t deadline,
    const char *what, char *err, size_t errlen)
{
	const amqp_basic_deliver_t *m = f->payload.method.decoded;
	struct queued *q;
	bool ours;
	int rc;

	ours = b->consuming && b->ctag != NULL && bytes_is(m->consumer_tag,
	    b->ctag);
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	q->d.tag = m->delivery_tag;
	q->d.redelivered = m->redelivered;
	q->d.exchange = dup_bytes(m->exchange);
	q->d.routing_key = dup_bytes(m->routing_key);
	if (q->d.exchange == NULL || q->d.routing_key == NULL) {
		rc = BROKER_ERR;
		errbuf_set(err, errlen, "%s: out of memory", what);
		goto fail;
	}
	if ((rc = read_content(b, deadline, &q->d, what, err, errlen)) != 0)
		goto fail;
	if (!ours) {
		/* A consumer cancelled meanwhile: give it back. */
		(void)amqp_basic_reject(b->conn, b->chan, q->d.tag, 1);
		broker_delivery_free(&q->d);
		free(q);
		return 0;
	}
	q->d.epoch = b->epoch;
	q->d.unacked = true;
	if (b->qtail != NULL)
		b->qtail->next = q;
	else
		b->qhead = q;
	b->qtail = q;
	return 0;
fail:
	broker_delivery_free(&q->d);
	free(q);
	return rc;
}

/* Handles one frame the broker sent on its own. Content-bearing methods
 * read their content, until DEADLINE at most. Returns 0, or a negative code
 * with ERR when the frame closed the channel or the connection. */
int
dispatch(struct broker *b, amqp_frame_t *f, int64_t deadline, const char *what,
    char *err, size_t errlen)
{
	if (f->frame_type != AMQP_FRAME_METHOD)
		return 0;       /* content of a message on a closed channel */
	if (f->channel == 0) {
		if (f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD)
			return on_connection_close(b,
			    f->payload.method.decoded, what, err, errlen);
		return 0;
	}
	if (f->channel != b->chan)
		return 0;       /* left over from a closed channel */

	switch (f->payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		const amqp_basic_ack_t *m = f->payload.method.decoded;

		on_ack(b, m->delivery_tag, m->multiple, false);
		return 0;
	}
	case AMQP_BASIC_NACK_METHOD: {
		const amqp_basic_nack_t *m = f->payload.method.decoded;

		on_ack(b, m->delivery_tag, m->multiple, true);
		return 0;
	}
	case AMQP_BASIC_RETURN_METHOD:
		return on_return(b, f, deadline, what, err, errlen);
	case AMQP_BASIC_DELIVER_METHOD:
		return on_deliver(b, f, deadline, what, err, errlen);
	case AMQP_BASIC_CANCEL_METHOD:
		if (b->consume_queue != NULL) {
			char buf[WHY_MAX];

			snprintf(buf, sizeof(buf), "the broker cancelled the "
			    "consumer on queue '%s' (the queue was deleted)",
			    b->consume_queue);
			free(b->consumer_error);
			b->consumer_error = strdup(buf);
			free(b->consume_queue);
			b->consume_queue = NULL;
			free(b->ctag);
			b->ctag = NULL;
			b->consuming = false;
		}
		return 0;
	case AMQP_CHANNEL_CLOSE_METHOD:
		return on_channel_close(b, f->payload.method.decoded, what, err,
		    errlen);
	default:
		return 0;
	}
}

/* Dispatches whatever already arrived, without waiting: a close that came
 * between calls, confirms, deliveries. */
void
drain(struct broker *b)
{
	amqp_frame_t f;
	char scratch[WHY_MAX];
	int rc;

	while (b->conn != NULL && b->chan != 0) {
		rc = next_frame(b, 0, &f);
		if (rc == AMQP_STATUS_TIMEOUT)
			return;
		if (rc != AMQP_STATUS_OK) {
			on_library_error(b, rc, "", scratch, sizeof(scratch));
			return;
		}
		if (dispatch(b, &f, clock_mono_ms() + b->timeout_ms, "", scratch,
		    sizeof(scratch)) != 0)
			return;
	}
}
