/* broker_recovery: what the AMQP client does when a call fails: it reads
 * the broker's reply (its code, and the "inequivalent arg" text turned into
 * a sentence), answers a channel or connection close, and forgets the lost
 * channel or connection so that the next call opens a fresh one (see
 * Recovery in broker.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "broker_int.h"

void
queued_free_all(struct broker *b)
{
	struct queued *q, *next;

	for (q = b->qhead; q != NULL; q = next) {
		next = q->next;
		broker_delivery_free(&q->d);
		free(q);
	}
	b->qhead = b->qtail = NULL;
}

/* The channel is gone: unconfirmed publishes get RESULT, deliveries not yet
 * handed out are dropped (the broker redelivers them). */
void
chan_lost(struct broker *b, int result, const char *why)
{
	size_t i;

	for (i = 0; i < b->npubs; i++)
		pub_settle(&b->pubs[i], result, "%s", why);
	queued_free_all(b);
	b->chan = 0;
	b->unsettled = 0;               /* the broker takes them back */
	b->consuming = false;
	free(b->ctag);
	b->ctag = NULL;
}

void
conn_lost(struct broker *b, int result, const char *why)
{
	chan_lost(b, result, why);
	if (b->conn != NULL) {
		amqp_destroy_connection(b->conn);
		b->conn = NULL;
	}
}

int
code_status(int code)
{
	switch (code) {
	case AMQP_PRECONDITION_FAILED:
		return BROKER_EPRECONDITION;
	case AMQP_CONNECTION_FORCED:
		return BROKER_ELOST;
	default:
		return BROKER_EREFUSED;
	}
}

/* Reads a value out of the broker's "inequivalent arg" text: "the value
 * '1000' of type 'long'", "'true'", or "none" (absent: NULL). */
static const char *
inequivalent_value(const char *s, size_t n, char *buf, size_t len)
{
	char *q;
	size_t m;

	snprintf(buf, len, "%.*s", (int)n, s);
	if (strcmp(buf, "none") == 0)
		return NULL;
	if (strncmp(buf, "the value '", 11) == 0 &&
	    (q = strstr(buf + 11, "' of type '")) != NULL) {
		*q = '\0';
		memmove(buf, buf + 11, strlen(buf + 11) + 1);
	} else if ((m = strlen(buf)) >= 2 && buf[0] == '\'' &&
	    buf[m - 1] == '\'') {
		buf[m - 1] = '\0';
		memmove(buf, buf + 1, m - 1);
	}
	return buf;
}

/* Turns RabbitMQ's "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl'
 * for queue 'q' in vhost '/': received the value '2000' of type 'signedint'
 * but current is the value '1000' of type 'long'" into "queue 'q' exists
 * with x-message-ttl = 1000, the plan wants 2000: ...". Returns false if
 * TEXT is not of that form. */
static bool
explain_inequivalent(const char *text, char *err, size_t errlen)
{
	static const char recv_s[] = "': received ";
	static const char cur_s[] = " but current is ";
	const char *p, *q, *r, *want, *have;
	char arg[128], kind[32], name[300], wbuf[300], hbuf[300];

	if ((p = strstr(text, "inequivalent arg '")) == NULL)
		return false;
	p += strlen("inequivalent arg '");
	if ((q = strstr(p, "' for ")) == NULL)
		return false;
	snprintf(arg, sizeof(arg), "%.*s", (int)(q - p), p);
	p = q + strlen("' for ");
	if ((q = strchr(p, ' ')) == NULL || q[1] != '\'')
		return false;
	snprintf(kind, sizeof(kind), "%.*s", (int)(q - p), p);
	p = q + 2;
	if ((q = strstr(p, "' in vhost '")) == NULL)
		return false;
	snprintf(name, sizeof(name), "%.*s", (int)(q - p), p);
	if ((p = strstr(q, recv_s)) == NULL)
		return false;
	p += strlen(recv_s);
	if ((r = strstr(p, cur_s)) == NULL)
		return false;
	want = inequivalent_value(p, (size_t)(r - p), wbuf, sizeof(wbuf));
	p = r + strlen(cur_s);
	have = inequivalent_value(p, strlen(p), hbuf, sizeof(hbuf));

	if (have == NULL)
		errbuf_set(err, errlen, "%s '%s' exists without %s, the plan wants "
		    "%s = %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, arg, want);
	else if (want == NULL)
		errbuf_set(err, errlen, "%s '%s' exists with %s = %s, the plan has "
		    "no %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, have, arg);
	else
		errbuf_set(err, errlen, "%s '%s' exists with %s = %s, the plan "
		    "wants %s: it cannot be redeclared; delete it or change "
		    "the plan", kind, name, arg, have, want);
	return true;
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
		if (dispatch(b, &f, clock_mono_ms() + b->timeout_ms, what, scratch,
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
	bytes_text(reply, text, len);
	if (text[0] == '\0')
		snprintf(text, len, "code %d", code);
	drain_queued(b, what);
	b->reply_code = code;
	snprintf(b->reply_text, sizeof(b->reply_text), "%s", text);
}

/* The broker closed the channel (C). Returns the status for the call that
 * saw it, with ERR. */
int
on_channel_close(struct broker *b, const amqp_channel_close_t *c,
    const char *what, char *err, size_t errlen)
{
	amqp_channel_close_ok_t ok;
	char text[TEXT_MAX], why[WHY_MAX];
	int code = c->reply_code, status = code_status(code);

	record_close(b, code, c->reply_text, what, text, sizeof(text));
	if (b->conn != NULL && b->chan != 0) {
		memset(&ok, 0, sizeof(ok));
		if (amqp_send_method(b->conn, b->chan,
		    AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) < 0) {
			snprintf(why, sizeof(why), "the broker closed the "
			    "channel (%s) and the connection was lost", text);
			conn_lost(b, BROKER_ELOST, why);
		}
	}
	snprintf(why, sizeof(why), "the broker closed the channel: %s", text);
	chan_lost(b, status == BROKER_ELOST ? BROKER_ELOST : BROKER_EREFUSED,
	    why);
	if (!explain_inequivalent(text, err, errlen))
		errbuf_set(err, errlen, "%s: %s", what, text);
	return status;
}

int
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
	conn_lost(b, BROKER_ELOST, why);
	errbuf_set(err, errlen, "%s: the broker closed the connection: %s (it is "
	    "reopened on the next call)", what, text);
	return code_status(code);
}

/* rabbitmq-c reported CODE (an amqp_status_enum). After a library error the
 * connection is in no state to go on: it is dropped. */
int
on_library_error(struct broker *b, int code, const char *what, char *err,
    size_t errlen)
{
	char why[WHY_MAX];

	if (code == AMQP_STATUS_TIMEOUT) {
		snprintf(why, sizeof(why), "no answer from the broker within "
		    "%d ms", b->timeout_ms);
		conn_lost(b, BROKER_ETIMEOUT, why);
		errbuf_set(err, errlen, "%s: %s (the connection is reopened on the "
		    "next call)", what, why);
		return BROKER_ETIMEOUT;
	}
	snprintf(why, sizeof(why), "connection to %s:%d lost: %s", b->url.host,
	    b->url.port, amqp_error_string2(code));
	conn_lost(b, BROKER_ELOST, why);
	errbuf_set(err, errlen, "%s: %s (it is reopened on the next call)", what,
	    why);
	return BROKER_ELOST;
}

/* Checks R, the answer to the request WHAT just made. Returns 0, or the
 * failure's status with ERR. */
int
rpc_result(struct broker *b, amqp_rpc_reply_t r, const char *what, char *err,
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
		conn_lost(b, BROKER_ELOST, why);
		errbuf_set(err, errlen, "%s: %s", what, why);
		return BROKER_ELOST;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		return on_library_error(b, r.library_error, what, err, errlen);
	default:
		return on_library_error(b, AMQP_STATUS_UNEXPECTED_STATE, what,
		    err, errlen);
	}
}
