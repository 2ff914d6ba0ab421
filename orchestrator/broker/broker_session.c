/* broker_session: the connection and channel state machine of the AMQP
 * client. Every public call starts with broker__begin(), which moves back
 * to an earlier node of the list that answers again, reconnects or reopens
 * the channel an earlier call lost (resubscribing the consumer), then
 * dispatches what arrived in between. Everything the broker sends on its
 * own (publisher confirms, returns, deliveries, consumer cancels, channel
 * and connection closes) is read frame by frame and handed to
 * broker__dispatch(); a failed answer goes through broker__rpc_result().
 * A close or a library error forgets the lost channel or connection and
 * settles what was in flight on it, so that the next call opens a fresh
 * one (see Recovery in broker.h). The other broker_*.c files call in
 * here; nothing here calls them back. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "broker_int.h"
#include "log.h"
#include "sentences.h"

/* Frees the deliveries received and not yet handed out. */
void
broker__queued_free_all(struct broker *b)
{
	struct queued *q, *next;

	for (q = b->qhead; q != NULL; q = next) {
		next = q->next;
		broker_delivery_free(&q->d);
		free(q);
	}
	b->qhead = b->qtail = NULL;
}

/* The channel's unsettled deliveries: see broker_int.h. Tags come in
 * ascending order on a channel (the broker numbers them as it sends them,
 * and they are read in that order), so each joins at the end. */
int
broker__open_add(struct broker *b, uint64_t tag)
{
	if (b->nopen > 0 && (b->open[b->nopen - 1] & ~OPEN_FLAGS) >= tag) {
		/* Out of order: nothing a multiple ack may rely on. */
		b->open_lost = true;
		return -1;
	}
	if (b->open_head > 0 && b->open_head >= b->nopen / 2) {
		memmove(b->open, b->open + b->open_head,
		    (b->nopen - b->open_head) * sizeof(*b->open));
		b->nopen -= b->open_head;
		b->open_head = 0;
	}
	if (b->nopen == b->opencap) {
		size_t cap = b->opencap == 0 ? 256 : b->opencap * 2;
		uint64_t *n = realloc(b->open, cap * sizeof(*n));

		if (n == NULL) {
			b->open_lost = true;
			return -1;
		}
		b->open = n;
		b->opencap = cap;
	}
	b->open[b->nopen++] = tag;
	return 0;
}

size_t
broker__open_find(const struct broker *b, uint64_t tag)
{
	size_t lo = b->open_head, hi = b->nopen;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t t = b->open[mid] & ~OPEN_FLAGS;

		if (t == tag)
			return mid;
		if (t < tag)
			lo = mid + 1;
		else
			hi = mid;
	}
	return b->nopen;
}

void
broker__open_settled(struct broker *b, uint64_t tag)
{
	size_t i = broker__open_find(b, tag);

	if (i < b->nopen)
		b->open[i] |= OPEN_SETTLED;
	while (b->open_head < b->nopen && (b->open[b->open_head] & OPEN_SETTLED))
		b->open_head++;
	if (b->open_head == b->nopen)
		b->open_head = b->nopen = 0;
}

void
broker__open_clear(struct broker *b)
{
	b->nopen = b->open_head = 0;
	b->open_lost = false;
}

/* The channel is gone: unconfirmed publishes get RESULT, deliveries not yet
 * handed out are dropped (the broker redelivers them). */
void
broker__chan_lost(struct broker *b, int result, const char *why)
{
	size_t i;

	for (i = 0; i < b->npubs; i++)
		broker__pub_settle(&b->pubs[i], result, "%s", why);
	broker__queued_free_all(b);
	b->chan = 0;
	b->unsettled = 0;               /* the broker takes them back */
	broker__open_clear(b);
	b->consuming = false;
	free(b->ctag);
	b->ctag = NULL;
	free(b->kept_ctag);
	b->kept_ctag = NULL;
}

/* The connection is gone: as broker__chan_lost, and b->conn destroyed. */
void
broker__conn_lost(struct broker *b, int result, const char *why)
{
	broker__chan_lost(b, result, why);
	if (b->conn != NULL) {
		b->losses++;
		amqp_destroy_connection(b->conn);
		b->conn = NULL;
	}
}

/* Frees what P holds (not P). */
void
broker__pub_free(struct pub *p)
{
	free(p->exchange);
	free(p->routing_key);
	free(p->message_id);
	free(p->detail);
}

/* Gives the pending publish P its verdict RESULT, with the detail FMT; a
 * publish already settled keeps its verdict. */
void
broker__pub_settle(struct pub *p, int result, const char *fmt, ...)
{
	va_list ap;
	char buf[WHY_MAX];

	if (p->result != PUB_PENDING)
		return;
	p->result = result;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(p->detail);
	p->detail = strdup(buf);
}

/* Dispatches the frames rabbitmq-c queued while it waited for an answer:
 * they arrived before that answer. */
static void
drain_queued(struct broker *b, const char *what)
{
	amqp_frame_t f;
	struct timeval tv = { 0, 0 };
	char scratch[WHY_MAX];

	while (b->conn != NULL && b->chan != 0 &&
	    amqp_frames_enqueued(b->conn)) {
		if (amqp_simple_wait_frame_noblock(b->conn, &f, &tv) !=
		    AMQP_STATUS_OK)
			return;
		if (broker__dispatch(b, &f, clock_mono_ms() + b->timeout_ms, what, scratch,
		    sizeof(scratch)) != 0)
			return;
	}
}

/* The broker closed the channel or the connection with CODE and REPLY:
 * puts the reply's text into TEXT (LEN bytes; "code N" when it has none),
 * dispatches the frames queued before the close, and records the reply as
 * what made the call under way fail. */
static void
record_close(struct broker *b, int code, amqp_bytes_t reply, const char *what,
    char *text, size_t len)
{
	broker__bytes_text(reply, text, len);
	if (text[0] == '\0')
		snprintf(text, len, "code %d", code);
	drain_queued(b, what);
	b->reply_code = code;
	snprintf(b->reply_text, sizeof(b->reply_text), "%s", text);
}

/* The broker closed the channel (C). Returns the status for the call that
 * saw it, with ERR. */
static int
on_channel_close(struct broker *b, const amqp_channel_close_t *c,
    const char *what, char *err, size_t errlen)
{
	amqp_channel_close_ok_t ok;
	char text[TEXT_MAX], why[WHY_MAX];
	int code = c->reply_code, status = broker__code_status(code);

	record_close(b, code, c->reply_text, what, text, sizeof(text));
	if (b->conn != NULL && b->chan != 0) {
		memset(&ok, 0, sizeof(ok));
		if (amqp_send_method(b->conn, b->chan,
		    AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) < 0) {
			snprintf(why, sizeof(why), "the broker closed the "
			    "channel (%s) and the connection was lost", text);
			broker__conn_lost(b, BROKER_ELOST, why);
		}
	}
	snprintf(why, sizeof(why), "the broker closed the channel: %s", text);
	broker__chan_lost(b, status == BROKER_ELOST ? BROKER_ELOST : BROKER_EREFUSED,
	    why);
	if (!broker__explain_inequivalent(text, err, errlen))
		errbuf_set(err, errlen, "%s: %s", what, text);
	return status;
}

/* The broker closed the connection (C): answered, forgotten, the call
 * under way told. Returns the status for it, with ERR. */
static int
on_connection_close(struct broker *b, const amqp_connection_close_t *c,
    const char *what, char *err, size_t errlen)
{
	amqp_connection_close_ok_t ok;
	char text[TEXT_MAX], why[WHY_MAX];
	int code = c->reply_code;

	record_close(b, code, c->reply_text, what, text, sizeof(text));
	if (b->conn != NULL) {
		memset(&ok, 0, sizeof(ok));
		(void)amqp_send_method(b->conn, 0,
		    AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
	}
	snprintf(why, sizeof(why), "the broker closed the connection: %s",
	    text);
	broker__conn_lost(b, BROKER_ELOST, why);
	errbuf_set(err, errlen, "%s: the broker closed the connection: %s (it is "
	    "reopened on the next call)", what, text);
	return broker__code_status(code);
}

/* rabbitmq-c reported CODE (an amqp_status_enum). After a library error the
 * connection is in no state to go on: it is dropped. */
int
broker__on_library_error(struct broker *b, int code, const char *what, char *err,
    size_t errlen)
{
	char why[WHY_MAX];

	if (code == AMQP_STATUS_TIMEOUT) {
		snprintf(why, sizeof(why), "no answer from the broker within "
		    "%d ms", b->timeout_ms);
		broker__conn_lost(b, BROKER_ETIMEOUT, why);
		errbuf_set(err, errlen, "%s: %s (the connection is reopened on the "
		    "next call)", what, why);
		return BROKER_ETIMEOUT;
	}
	snprintf(why, sizeof(why), "connection to %s:%d lost: %s", b->url.host,
	    b->url.port, amqp_error_string2(code));
	broker__conn_lost(b, BROKER_ELOST, why);
	errbuf_set(err, errlen, "%s: %s (it is reopened on the next call)", what,
	    why);
	return BROKER_ELOST;
}

/* Checks R, the answer to the request WHAT just made. Returns 0, or the
 * failure's status with ERR. */
int
broker__rpc_result(struct broker *b, amqp_rpc_reply_t r, const char *what, char *err,
    size_t errlen)
{
	char why[WHY_MAX];

	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		return 0;
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD)
			return on_channel_close(b, r.reply.decoded, what, err,
			    errlen);
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD)
			return on_connection_close(b, r.reply.decoded, what,
			    err, errlen);
		snprintf(why, sizeof(why), "unexpected answer (method 0x%08x)",
		    (unsigned)r.reply.id);
		broker__conn_lost(b, BROKER_ELOST, why);
		errbuf_set(err, errlen, "%s: %s", what, why);
		return BROKER_ELOST;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		return broker__on_library_error(b, r.library_error, what, err, errlen);
	default:
		return broker__on_library_error(b, AMQP_STATUS_UNEXPECTED_STATE, what,
		    err, errlen);
	}
}

/* Reads the next frame, waiting until DEADLINE (monotonic ms) at most.
 * Returns an amqp_status_enum. Everything read from earlier frames must
 * have been copied: their memory is recycled here. */
int
broker__next_frame(struct broker *b, int64_t deadline, amqp_frame_t *f)
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
broker__read_content(struct broker *b, int64_t deadline, struct broker_delivery *d,
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
		if ((rc = broker__next_frame(b, deadline, &f)) != AMQP_STATUS_OK) {
			if (rc == AMQP_STATUS_TIMEOUT) {
				snprintf(why, sizeof(why), "a message's "
				    "content did not arrive within the timeout"
				    );
				broker__conn_lost(b, BROKER_ETIMEOUT, why);
				errbuf_set(err, errlen, "%s: %s (the connection is "
				    "reopened on the next call)", what, why);
				return BROKER_ETIMEOUT;
			}
			return broker__on_library_error(b, rc, what, err, errlen);
		}
		if (f.channel == 0 || f.channel != b->chan ||
		    f.frame_type == AMQP_FRAME_METHOD) {
			if (have_header && f.channel == b->chan) {
				broker__conn_lost(b, BROKER_ELOST, "protocol error");
				errbuf_set(err, errlen, "%s: a method frame "
				    "arrived inside a message's content", what);
				return BROKER_ELOST;
			}
			rc = broker__dispatch(b, &f, deadline, what, err, errlen);
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
			if (broker__convert_properties(f.payload.properties.decoded,
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
			broker__conn_lost(b, BROKER_ELOST, "protocol error");
			errbuf_set(err, errlen, "%s: unexpected frame (type %d) in "
			    "a message's content", what, f.frame_type);
			return BROKER_ELOST;
		}
	}
nomem:
	errbuf_set(err, errlen, "%s: out of memory reading a message", what);
	broker__conn_lost(b, BROKER_ELOST, "out of memory");
	return BROKER_ERR;
}

/* Whether A and B are equal strings, or both NULL. */
static bool
streq_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* basic.ack or basic.nack for TAG (and every earlier one if MULTIPLE):
 * settles the pending publishes it names. */
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
			broker__pub_settle(p, BROKER_ENACKED, "nacked by the broker");
		else if (p->returned)
			broker__pub_settle(p, BROKER_ERETURNED, "returned: no route");
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
	d.exchange = broker__dup_bytes(m->exchange);
	d.routing_key = broker__dup_bytes(m->routing_key);
	if (d.exchange == NULL || d.routing_key == NULL) {
		broker_delivery_free(&d);
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	if ((rc = broker__read_content(b, deadline, &d, what, err, errlen)) != 0) {
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

/* basic.deliver: queues the message, with its content, for broker_next;
 * one for a consumer that is no longer ours goes back to the broker.
 * Returns 0, or a negative code with ERR. */
static int
on_deliver(struct broker *b, amqp_frame_t *f, int64_t deadline,
    const char *what, char *err, size_t errlen)
{
	const amqp_basic_deliver_t *m = f->payload.method.decoded;
	struct queued *q;
	bool ours;
	int rc;

	ours = (b->consuming && b->ctag != NULL && broker__bytes_is(m->consumer_tag,
	    b->ctag)) || (b->kept_ctag != NULL && broker__bytes_is(m->consumer_tag,
	    b->kept_ctag));
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	q->d.tag = m->delivery_tag;
	q->d.redelivered = m->redelivered;
	q->d.exchange = broker__dup_bytes(m->exchange);
	q->d.routing_key = broker__dup_bytes(m->routing_key);
	if (q->d.exchange == NULL || q->d.routing_key == NULL) {
		rc = BROKER_ERR;
		errbuf_set(err, errlen, "%s: out of memory", what);
		goto fail;
	}
	if ((rc = broker__read_content(b, deadline, &q->d, what, err, errlen)) != 0)
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
	(void)broker__open_add(b, q->d.tag);
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
broker__dispatch(struct broker *b, amqp_frame_t *f, int64_t deadline, const char *what,
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
broker__drain(struct broker *b)
{
	amqp_frame_t f;
	char scratch[WHY_MAX];
	int rc;

	while (b->conn != NULL && b->chan != 0) {
		rc = broker__next_frame(b, 0, &f);
		if (rc == AMQP_STATUS_TIMEOUT)
			return;
		if (rc != AMQP_STATUS_OK) {
			broker__on_library_error(b, rc, "", scratch, sizeof(scratch));
			return;
		}
		if (broker__dispatch(b, &f, clock_mono_ms() + b->timeout_ms, "", scratch,
		    sizeof(scratch)) != 0)
			return;
	}
}

/* Subscribes the handle's consumer (consume_queue, prefetch) on the
 * current channel. Returns 0, or a negative code with ERR. */
int
broker__subscribe(struct broker *b, char *err, size_t errlen)
{
	amqp_basic_consume_ok_t *ok;
	char what[WHAT_MAX];
	int rc;

	snprintf(what, sizeof(what), "consuming from queue '%s'",
	    b->consume_queue);
	if (b->prefetch > 0 &&
	    amqp_basic_qos(b->conn, b->chan, 0, b->prefetch, 0) == NULL &&
	    (rc = broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
	    errlen)) != 0)
		return rc;
	ok = amqp_basic_consume(b->conn, b->chan,
	    amqp_cstring_bytes(b->consume_queue), amqp_empty_bytes, 0, 0, 0,
	    amqp_empty_table);
	if (ok == NULL)
		return broker__rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	free(b->ctag);
	if ((b->ctag = broker__dup_bytes(ok->consumer_tag)) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	b->consuming = true;
	return 0;
}

/* Connects to the nodes given, starting with the one in use and going on
 * in the order given (wrapping round), until one logs in: a cluster node
 * that is down costs one refused connect (or the timeout) and the next is
 * tried. Returns 0 with b->url the node connected to, or the last node's
 * status with ERR saying why each failed. */
int
broker__connect_any(struct broker *b, char *err, size_t errlen)
{
	char why[WHY_MAX];
	size_t start = b->cur;
	int rc = BROKER_ECONNECT;

	if (errlen > 0)
		err[0] = '\0';
	for (size_t k = 0; k < b->nurls; k++) {
		size_t i = (start + k) % b->nurls;

		b->url = b->urls[i];
		why[0] = '\0';
		if ((rc = broker__connect(b, b->timeout_ms, why, sizeof(why))) == 0) {
			if (i != start)
				log_event("warn", NULL, NULL, "AMQP: %s; connected to "
				    "%s:%d instead", err, b->url.host, b->url.port);
			if (i != b->cur && i != 0)
				b->return_from = clock_mono_ms();
			b->cur = i;
			if (errlen > 0)
				err[0] = '\0';
			return 0;
		}
		sentences_add(err, errlen, "%s", why);
	}
	b->url = b->urls[start];
	return rc;
}

/* Opens the next channel number, in confirm mode, and resubscribes the
 * consumer. A fresh number each time lets frames left over from an earlier
 * channel be told apart and ignored. */
int
broker__open_channel(struct broker *b, char *err, size_t errlen)
{
	amqp_channel_t ch;
	int rc;

	ch = b->last_chan >= b->channel_max ? 1 : b->last_chan + 1;
	b->last_chan = ch;
	b->chan = ch;
	b->epoch++;
	b->next_tag = 1;
	b->unsettled = 0;
	broker__open_clear(b);
	if (amqp_channel_open(b->conn, ch) == NULL)
		return broker__rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "opening a channel", err, errlen);
	if (amqp_confirm_select(b->conn, ch) == NULL)
		return broker__rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "enabling publisher confirms", err, errlen);
	if (b->consume_queue != NULL && (rc = broker__subscribe(b, err, errlen)) != 0) {
		char buf[WHY_MAX];

		/* The call under way goes on; broker_next reports this. */
		snprintf(buf, sizeof(buf), "resubscribing after the channel "
		    "was reopened: %s", err);
		free(b->consumer_error);
		b->consumer_error = strdup(buf);
		free(b->consume_queue);
		b->consume_queue = NULL;
		if (b->conn == NULL)
			return rc;
	}
	return 0;
}

/* Whether B is between operations with nothing in flight on its
 * connection: no publish awaiting its confirm (or its verdict not yet
 * collected), no delivery awaiting its acknowledgement, no consumer. All
 * of these belong to the channel they began on: a confirm or an ack
 * cannot follow them to another connection, and closing it would leave a
 * publish in doubt or have the broker deliver a message again. */
static bool
at_rest(const struct broker *b)
{
	return b->conn != NULL && b->npubs == 0 && b->unsettled == 0 &&
	    b->consume_queue == NULL && b->qhead == NULL;
}

/* On a later node of the list than the first, once b->return_after_ms have
 * passed since it moved there (or since the last try) and B is at rest:
 * tries the earlier nodes in the order given, each bounded by
 * BROKER_RETURN_CONNECT_MS (a node that does not answer that fast is not
 * one to go back to yet, and the call under way waits for the try), and
 * the first that logs in replaces the connection in use, which is closed
 * politely; broker__begin() then opens the channel on it. Nothing of the old
 * connection needs carrying over: at rest it holds only the channel, and
 * a consumer is never running then. When none answers, B stays as it was
 * and tries again after the interval. */
static void
maybe_return(struct broker *b)
{
	amqp_connection_state_t old = b->conn;
	struct broker_url from = b->url;
	int connect_ms = b->timeout_ms < BROKER_RETURN_CONNECT_MS ?
	    b->timeout_ms : BROKER_RETURN_CONNECT_MS;
	char why[WHY_MAX];
	size_t i;

	if (b->cur == 0 || b->return_after_ms <= 0 || !at_rest(b) ||
	    clock_mono_ms() - b->return_from < b->return_after_ms)
		return;
	for (i = 0; i < b->cur; i++) {
		b->conn = NULL;
		b->url = b->urls[i];
		if (broker__connect(b, connect_ms, why, sizeof(why)) == 0)
			break;
	}
	if (i == b->cur) {
		b->conn = old;
		b->url = from;
		b->return_from = clock_mono_ms();
		return;
	}
	(void)amqp_connection_close(old, AMQP_REPLY_SUCCESS);
	amqp_destroy_connection(old);
	broker__chan_lost(b, BROKER_ELOST, "the connection moved to another node");
	log_event("info", NULL, NULL, "AMQP: %s:%d answers again; back to it "
	    "from %s:%d", b->url.host, b->url.port, from.host, from.port);
	b->cur = i;
	b->return_from = clock_mono_ms();
}

/* Every call starts here: back to an earlier node that answers again (see
 * maybe_return), reconnect or reopen the channel if an earlier call lost
 * it, then dispatch what arrived in between. */
int
broker__begin(struct broker *b, char *err, size_t errlen)
{
	int tries, rc = BROKER_ELOST;

	maybe_return(b);
	for (tries = 0; tries < 3; tries++) {
		if (b->conn == NULL &&
		    (rc = broker__connect_any(b, err, errlen)) != 0) {
			/* A login refused is an answer, not the broker's absence. */
			if (rc == BROKER_ECONNECT || rc == BROKER_ETIMEOUT || rc == BROKER_ELOST)
				b->losses++;
			return rc;
		}
		if (b->chan == 0 && (rc = broker__open_channel(b, err, errlen)) != 0)
			continue;
		broker__drain(b);
		if (b->conn != NULL && b->chan != 0) {
			b->reply_code = 0;
			b->reply_text[0] = '\0';
			amqp_maybe_release_buffers(b->conn);
			return 0;
		}
		rc = BROKER_ELOST;
		errbuf_set(err, errlen, "%s:%d: the channel closed as soon as it "
		    "was opened", b->url.host, b->url.port);
	}
	return rc;
}
