/* broker_login: one node's connection: the TCP or TLS socket within the
 * connect timeout, the login with the resolved password, and what a
 * refused login says. It knows nothing of channels: broker_session.c
 * decides when to connect and to which node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "broker_int.h"

/* The login to b->url failed with R: records the reply code, answers a
 * connection close and destroys b->conn. Returns the status, with ERR
 * saying why in the operator's words. */
static int
login_error(struct broker *b, amqp_rpc_reply_t r, char *err, size_t errlen)
{
	char text[WHY_MAX] = "";
	int code = 0, rc;

	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
		const amqp_connection_close_t *c = r.reply.decoded;

		code = c->reply_code;
		broker__bytes_text(c->reply_text, text, sizeof(text));
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
		rc = broker__code_status(code);
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    r.library_error == AMQP_STATUS_TIMEOUT) {
		errbuf_set(err, errlen, "logging in to %s:%d: no answer within %d "
		    "ms", b->url.host, b->url.port, b->timeout_ms);
		rc = BROKER_ETIMEOUT;
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    broker__tls_login_refused(b, r.library_error, err, errlen)) {
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
int
broker__connect(struct broker *b, int connect_ms, char *err, size_t errlen)
{
	amqp_socket_t *sock;
	amqp_rpc_reply_t r;
	amqp_table_entry_t props[2], caps[1];
	amqp_table_t props_t, caps_t;
	struct timeval tv;
	const char *password;
	int fd = -1, rc;

	rc = broker__resolve_password(b->password_ref, &password, err, errlen);
	if (rc != 0)
		return rc;
	if (b->url.tls) {
		if ((b->conn = amqp_new_connection()) == NULL) {
			errbuf_set(err, errlen, "connecting to %s:%d: out of "
			    "memory", b->url.host, b->url.port);
			return BROKER_ERR;
		}
		if ((rc = broker__tls_socket_open(b, connect_ms, err, errlen)) != 0) {
			amqp_destroy_connection(b->conn);
			b->conn = NULL;
			return rc;
		}
	} else {
		if ((rc = broker__tcp_connect(&b->url, connect_ms, &fd, err,
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
	 * found by the request timeout, or by broker__drain() between calls. */
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
