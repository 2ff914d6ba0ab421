/* broker_conn: opening and closing the AMQP connection (login with the
 * resolved password, to the first of a cluster's nodes that answers,
 * channel in confirm mode) and begin(), where every call reconnects or
 * reopens what an earlier call lost, and moves back to an earlier node of
 * the list that answers again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "broker_int.h"
#include "log.h"
#include "sentences.h"

static int
login_error(struct broker *b, amqp_rpc_reply_t r, char *err, size_t errlen)
{
	char text[WHY_MAX] = "";
	int code = 0, rc;

	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
		const amqp_connection_close_t *c = r.reply.decoded;

		code = c->reply_code;
		bytes_text(c->reply_text, text, sizeof(text));
	}
	b->reply_code = code;
	if (code == AMQP_ACCESS_REFUSED) {
		errbuf_set(err, errlen, "logging in to %s:%d as '%s': the broker "
		    "refused the username or password (%s)", b->url.host,
		    b->url.port, b->username, text);
		rc = BROKER_EAUTH;
	} else if (code == AMQP_NOT_ALLOWED) {
		errbuf_set(err, errlen, "opening vhost '%s' on %s:%d as '%s': %s",
		    b->url.vhost, b->url.host, b->url.port, b->username, text);
		rc = BROKER_EAUTH;
	} else if (code != 0) {
		errbuf_set(err, errlen, "logging in to %s:%d: %s", b->url.host,
		    b->url.port, text);
		rc = code_status(code);
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    r.library_error == AMQP_STATUS_TIMEOUT) {
		errbuf_set(err, errlen, "logging in to %s:%d: no answer within %d "
		    "ms", b->url.host, b->url.port, b->timeout_ms);
		rc = BROKER_ETIMEOUT;
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    tls_login_refused(b, r.library_error, err, errlen)) {
		rc = BROKER_ECONNECT;
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    r.library_error == AMQP_STATUS_CONNECTION_CLOSED) {
		errbuf_set(err, errlen, "logging in to %s:%d as '%s': the broker "
		    "closed the connection (wrong username or password, or no "
		    "access to vhost '%s'?)", b->url.host, b->url.port,
		    b->username, b->url.vhost);
		rc = BROKER_EAUTH;
	} else {
		const char *why = "unexpected answer";

		if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
			why = amqp_error_string2(r.library_error);
		errbuf_set(err, errlen, "logging in to %s:%d: %s", b->url.host,
		    b->url.port, why);
		rc = BROKER_ELOST;
	}
	if (code != 0) {
		amqp_connection_close_ok_t ok;

		memset(&ok, 0, sizeof(ok));
		(void)amqp_send_method(b->conn, 0,
		    AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
	}
	amqp_destroy_connection(b->conn);
	b->conn = NULL;
	return rc;
}

/* Connects to b->url within CONNECT_MS (the TCP connect and the login
 * handshake; later requests get b->timeout_ms) and logs in. Returns 0
 * with b->conn (no channel yet), or a negative code with ERR and b->conn
 * NULL. */
static int
connect_broker(struct broker *b, int connect_ms, char *err, size_t errlen)
{
	amqp_socket_t *sock;
	amqp_rpc_reply_t r;
	amqp_table_entry_t props[2], caps[1];
	amqp_table_t props_t, caps_t;
	struct timeval tv;
	const char *password;
	int fd = -1, rc;

	rc = resolve_password(b->password_ref, &password, err, errlen);
	if (rc != 0)
		return rc;
	if (b->url.tls) {
		if ((b->conn = amqp_new_connection()) == NULL) {
			errbuf_set(err, errlen, "connecting to %s:%d: out of "
			    "memory", b->url.host, b->url.port);
			return BROKER_ERR;
		}
		if ((rc = tls_socket_open(b, connect_ms, err, errlen)) != 0) {
			amqp_destroy_connection(b->conn);
			b->conn = NULL;
			return rc;
		}
	} else {
		if ((rc = tcp_connect(&b->url, connect_ms, &fd, err,
		    errlen)) != 0)
			return rc;
		if ((b->conn = amqp_new_connection()) == NULL ||
		    (sock = amqp_tcp_socket_new(b->conn)) == NULL) {
			close(fd);
			if (b->conn != NULL)
				amqp_destroy_connection(b->conn);
			b->conn = NULL;
			errbuf_set(err, errlen, "connecting to %s:%d: out of "
			    "memory", b->url.host, b->url.port);
			return BROKER_ERR;
		}
		amqp_tcp_socket_set_sockfd(sock, fd);   /* the connection owns it */
	}

	tv.tv_sec = connect_ms / 1000;
	tv.tv_usec = (connect_ms % 1000) * 1000;
	(void)amqp_set_handshake_timeout(b->conn, &tv);
	tv.tv_sec = b->timeout_ms / 1000;
	tv.tv_usec = (b->timeout_ms % 1000) * 1000;
	(void)amqp_set_rpc_timeout(b->conn, &tv);

	/* Ask to be told when the broker cancels our consumer. */
	caps[0].key = amqp_cstring_bytes("consumer_cancel_notify");
	caps[0].value.kind = AMQP_FIELD_KIND_BOOLEAN;
	caps[0].value.value.boolean = 1;
	caps_t.num_entries = 1;
	caps_t.entries = caps;
	props[0].key = amqp_cstring_bytes("connection_name");
	props[0].value.kind = AMQP_FIELD_KIND_UTF8;
	props[0].value.value.bytes = amqp_cstring_bytes("cutover");
	props[1].key = amqp_cstring_bytes("capabilities");
	props[1].value.kind = AMQP_FIELD_KIND_TABLE;
	props[1].value.value.table = caps_t;
	props_t.num_entries = 2;
	props_t.entries = props;

	/* Heartbeats off: rabbitmq-c only answers them while inside a call,
	 * and the engine may hold an idle handle for minutes. A dead peer is
	 * found by the request timeout, or by drain() between calls. */
	r = amqp_login_with_properties(b->conn, b->url.vhost, 0,
	    AMQP_DEFAULT_FRAME_SIZE, 0, &props_t, AMQP_SASL_METHOD_PLAIN,
	    b->username, password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		return login_error(b, r, err, errlen);
	b->channel_max = amqp_get_channel_max(b->conn);
	if (b->channel_max <= 0 || b->channel_max > 65535)
		b->channel_max = 65535;
	b->last_chan = 0;
	b->chan = 0;
	return 0;
}

/* Connects to the nodes given, starting with the one in use and going on
 * in the order given (wrapping round), until one logs in: a cluster node
 * that is down costs one refused connect (or the timeout) and the next is
 * tried. Returns 0 with b->url the node connected to, or the last node's
 * status with ERR saying why each failed. */
static int
connect_any(struct broker *b, char *err, size_t errlen)
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
		if ((rc = connect_broker(b, b->timeout_ms, why, sizeof(why))) == 0) {
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
static int
open_channel(struct broker *b, char *err, size_t errlen)
{
	amqp_channel_t ch;
	int rc;

	ch = b->last_chan >= b->channel_max ? 1 : b->last_chan + 1;
	b->last_chan = ch;
	b->chan = ch;
	b->epoch++;
	b->next_tag = 1;
	b->unsettled = 0;
	if (amqp_channel_open(b->conn, ch) == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "opening a channel", err, errlen);
	if (amqp_confirm_select(b->conn, ch) == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "enabling publisher confirms", err, errlen);
	if (b->consume_queue != NULL && (rc = subscribe(b, err, errlen)) != 0) {
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
 * politely; begin() then opens the channel on it. Nothing of the old
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
		if (connect_broker(b, connect_ms, why, sizeof(why)) == 0)
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
	chan_lost(b, BROKER_ELOST, "the connection moved to another node");
	log_event("info", NULL, NULL, "AMQP: %s:%d answers again; back to it "
	    "from %s:%d", b->url.host, b->url.port, from.host, from.port);
	b->cur = i;
	b->return_from = clock_mono_ms();
}

/* Every call starts here: back to an earlier node that answers again (see
 * maybe_return), reconnect or reopen the channel if an earlier call lost
 * it, then dispatch what arrived in between. */
int
begin(struct broker *b, char *err, size_t errlen)
{
	int tries, rc = BROKER_ELOST;

	maybe_return(b);
	for (tries = 0; tries < 3; tries++) {
		if (b->conn == NULL &&
		    (rc = connect_any(b, err, errlen)) != 0)
			return rc;
		if (b->chan == 0 && (rc = open_channel(b, err, errlen)) != 0)
			continue;
		drain(b);
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

int
broker_open(const char *url, const char *username, const char *password_ref,
    int timeout_ms, struct broker **out, char *err, size_t errlen)
{
	return broker_open_list(&url, 1, NULL, username, password_ref, timeout_ms,
	    out, err, errlen);
}

int
broker_open_tls(const char *url, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen)
{
	return broker_open_list(&url, 1, tls, username, password_ref, timeout_ms,
	    out, err, errlen);
}

int
broker_open_list(const char *const *urls, size_t nurls, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen)
{
	struct broker *b = NULL;
	const char *password;
	int rc = BROKER_ERR;

	*out = NULL;
	if (nurls == 0) {
		errbuf_set(err, errlen, "opening the broker connection: no URL");
		return BROKER_ERR;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->urls = calloc(nurls, sizeof(*b->urls))) == NULL) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		goto done;
	}
	for (b->nurls = 0; b->nurls < nurls; b->nurls++)
		if ((rc = broker_url_parse(urls[b->nurls], &b->urls[b->nurls], err,
		    errlen)) != 0)
			goto done;
	b->url = b->urls[0];
	b->return_after_ms = BROKER_RETURN_AFTER_MS;
	rc = BROKER_ERR;
	if (tls_opts_copy(&b->tls, tls) != 0) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		goto done;
	}
	if (username == NULL || username[0] == '\0') {
		errbuf_set(err, errlen, "connecting to %s:%d: a username is "
		    "required", b->url.host, b->url.port);
		goto done;
	}
	if (timeout_ms <= 0) {
		errbuf_set(err, errlen, "connecting to %s:%d: the timeout must be "
		    "positive", b->url.host, b->url.port);
		goto done;
	}
	if ((rc = resolve_password(password_ref, &password, err, errlen)) != 0)
		goto done;
	b->timeout_ms = timeout_ms;
	if ((b->username = strdup(username)) == NULL ||
	    (b->password_ref = strdup(password_ref)) == NULL) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		rc = BROKER_ERR;
		goto done;
	}
	if ((rc = connect_any(b, err, errlen)) != 0)
		goto done;
	if ((rc = open_channel(b, err, errlen)) != 0)
		goto done;
	*out = b;
	b = NULL;
done:
	broker_close(b);
	return rc;
}

void
broker_close(struct broker *b)
{
	size_t i;

	if (b == NULL)
		return;
	if (b->conn != NULL) {
		(void)amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(b->conn);
	}
	for (i = 0; i < b->npubs; i++)
		pub_free(&b->pubs[i]);
	free(b->pubs);
	queued_free_all(b);
	free(b->consume_queue);
	free(b->ctag);
	free(b->consumer_error);
	free(b->username);
	free(b->password_ref);
	tls_opts_free(&b->tls);
	free(b->urls);
	free(b);
}

void
broker_set_return_after(struct broker *b, int64_t ms)
{
	b->return_after_ms = ms;
}

int
broker_reply_code(const struct broker *b)
{
	return b->reply_code;
}
