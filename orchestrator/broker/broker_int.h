/* broker_int: what the files of the AMQP client (broker_*.c) share and
 * nothing outside orchestrator/broker may include: the handle, the
 * publishes awaiting a verdict, the queued deliveries, and the steps every
 * call is built from (begin, the reply and frame handlers, the recovery
 * bookkeeping). The public contract is broker.h.
 *
 * How the parts fit. Every public call starts with begin() (broker_conn.c),
 * which reconnects or reopens the channel an earlier call lost, then
 * dispatches what arrived in between. rabbitmq-c answers requests
 * (declare, bind, get, ...) itself; everything the broker sends on its own
 * (publisher confirms, returns, deliveries, channel and connection closes)
 * is read frame by frame with amqp_simple_wait_frame_noblock and handed to
 * dispatch() (broker_frames.c). Frames that arrive while rabbitmq-c waits
 * for an answer are queued by the library and read later, in arrival
 * order. A failed answer goes through rpc_result() (broker_recovery.c),
 * which records the reply code and forgets a lost channel or connection. */
#ifndef CUTOVER_BROKER_INT_H
#define CUTOVER_BROKER_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* This module's header, then rabbitmq-c's: 0.12 and later install
 * <rabbitmq-c/amqp.h>, 0.11 <amqp.h>. */
#include "broker.h"
#include "clock.h"
#include "errbuf.h"
#include "hex.h"
#if defined(__has_include)
#if __has_include(<rabbitmq-c/amqp.h>)
#define CUTOVER_RABBITMQ_C_DIR 1
#endif
#endif
#ifdef CUTOVER_RABBITMQ_C_DIR
#include <rabbitmq-c/amqp.h>
#include <rabbitmq-c/tcp_socket.h>
#include <rabbitmq-c/ssl_socket.h>
#else
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#endif

#define PUB_PENDING 1   /* a publish awaiting its verdict */
#define WHAT_MAX 1024   /* "binding queue '...' to exchange '...' ..." */
#define WHY_MAX 512     /* why a call failed */
#define TEXT_MAX 400    /* a broker reply text, as kept */
#define BROKER_RETURN_CONNECT_MS 2000 /* an earlier node's try, at most */

struct pub {
	uint64_t tag;           /* delivery tag on the channel it went out on */
	int result;             /* PUB_PENDING, 0 or a negative code */
	bool mandatory;
	bool returned;          /* basic.return seen; the ack follows */
	char *exchange;
	char *routing_key;
	char *message_id;
	char *detail;           /* why it failed */
};

struct queued {
	struct broker_delivery d;
	struct queued *next;
};

struct broker {
	struct broker_url url;          /* the node in use: urls[cur] */
	struct broker_url *urls;        /* every node given, tried in order */
	size_t nurls;
	size_t cur;
	int64_t return_after_ms;        /* on a later node than the first: how
	                                 * long before an earlier one is tried
	                                 * again (broker_set_return_after) */
	int64_t return_from;            /* monotonic ms: when it moved to a
	                                 * later node, or last tried in vain */
	struct tls_opts tls;            /* for amqps:// (see tls.h) */
	char *username;
	char *password_ref;     /* "env:NAME": resolved at each connect */
	int timeout_ms;

	amqp_connection_state_t conn;   /* NULL: reconnect on the next call */
	amqp_channel_t chan;            /* 0: open a channel on the next call */
	amqp_channel_t last_chan;
	int channel_max;
	unsigned long epoch;            /* counts channel opens */
	uint64_t next_tag;              /* delivery tag of the next publish */
	size_t unsettled;               /* deliveries handed out on the
	                                 * channel and not yet acknowledged or
	                                 * rejected */
	int reply_code;                 /* of the reply that failed the */
	char reply_text[TEXT_MAX];      /* last call, and its text */

	struct pub *pubs;               /* published since the last wait */
	size_t npubs;
	size_t pubcap;

	char *consume_queue;            /* the consumer, kept across reopens */
	uint16_t prefetch;
	char *ctag;
	bool consuming;                 /* subscribed on the current channel */
	char *consumer_error;           /* why it ended, for broker_next */
	struct queued *qhead;
	struct queued *qtail;
};

/* ---- broker_util.c: small helpers ---- */

char *dup_bytes(amqp_bytes_t b);
/* Copies B, text from the broker, into BUF as a C string. */
const char *bytes_text(amqp_bytes_t b, char *buf, size_t len);
bool bytes_is(amqp_bytes_t b, const char *s);
/* AMQP short strings (names, keys) hold at most 255 bytes. */
int check_name(const char *kind, const char *name, bool empty_ok, char *err,
    size_t errlen);

/* ---- broker_url.c ---- */

/* Resolves REF ("env:NAME"). Returns 0 and sets *OUT to the value (owned
 * by the environment), or BROKER_ERR. Never puts the value in ERR. */
int resolve_password(const char *ref, const char **out, char *err,
    size_t errlen);

/* ---- broker_tcp.c ---- */

/* Connects to U within TIMEOUT_MS. Returns 0 and sets *FDP to a connected,
 * non-blocking socket, or BROKER_ECONNECT with ERR. */
int tcp_connect(const struct broker_url *u, int timeout_ms, int *fdp,
    char *err, size_t errlen);

/* ---- broker_tls.c ---- */

/* Opens B->conn's TLS socket to B->url under B->tls within CONNECT_MS:
 * TCP connect, handshake, certificate and name checked. Returns 0, or
 * BROKER_ECONNECT (no route, handshake, unknown CA, name mismatch,
 * expired, client certificate required) or BROKER_ERR (a file or the
 * passphrase cannot be used) with ERR. B->conn stays B's to destroy. */
int tls_socket_open(struct broker *b, int connect_ms, char *err, size_t errlen);
/* After a login over amqps:// that failed with the library error STATUS:
 * when the broker ended the TLS session (a client certificate required or
 * refused; said from OpenSSL's alert when it is still queued), writes that
 * into ERR and returns true; otherwise false. */
bool tls_login_refused(const struct broker *b, int status, char *err,
    size_t errlen);

/* ---- broker_recovery.c: replies, and losing channels and connections ---- */

void queued_free_all(struct broker *b);
/* The channel is gone: unconfirmed publishes get RESULT, deliveries not yet
 * handed out are dropped (the broker redelivers them). */
void chan_lost(struct broker *b, int result, const char *why);
void conn_lost(struct broker *b, int result, const char *why);
int code_status(int code);
/* The broker closed the channel (C). Returns the status for the call that
 * saw it, with ERR. */
int on_channel_close(struct broker *b, const amqp_channel_close_t *c,
    const char *what, char *err, size_t errlen);
int on_connection_close(struct broker *b, const amqp_connection_close_t *c,
    const char *what, char *err, size_t errlen);
/* rabbitmq-c reported CODE (an amqp_status_enum). After a library error the
 * connection is in no state to go on: it is dropped. */
int on_library_error(struct broker *b, int code, const char *what, char *err,
    size_t errlen);
/* Checks R, the answer to the request WHAT just made. Returns 0, or the
 * failure's status with ERR. */
int rpc_result(struct broker *b, amqp_rpc_reply_t r, const char *what,
    char *err, size_t errlen);

/* ---- broker_frames.c ---- */

/* Reads the next frame, waiting until DEADLINE (monotonic ms) at most.
 * Returns an amqp_status_enum. Everything read from earlier frames must
 * have been copied: their memory is recycled here. */
int next_frame(struct broker *b, int64_t deadline, amqp_frame_t *f);
/* Reads the content (header and body frames) of the message whose method
 * frame was just read, into D. Frames rabbitmq-c queued before that method
 * arrived are dispatched first. Returns 0, or a negative code with ERR. */
int read_content(struct broker *b, int64_t deadline,
    struct broker_delivery *d, const char *what, char *err, size_t errlen);
/* Handles one frame the broker sent on its own. Content-bearing methods
 * read their content, until DEADLINE at most. Returns 0, or a negative code
 * with ERR when the frame closed the channel or the connection. */
int dispatch(struct broker *b, amqp_frame_t *f, int64_t deadline,
    const char *what, char *err, size_t errlen);
/* Dispatches whatever already arrived, without waiting: a close that came
 * between calls, confirms, deliveries. */
void drain(struct broker *b);

/* ---- broker_message.c ---- */

/* Copies the message properties P into D. Returns 0, or -1 out of memory. */
int convert_properties(const amqp_basic_properties_t *p,
    struct broker_delivery *d);
/* Every property of D as received (headers included), or NULL. Borrowed
 * from D. */
const amqp_basic_properties_t *delivery_properties(const struct broker_delivery *d);

/* ---- broker_conn.c ---- */

/* Every call starts here: back to an earlier node of the list that
 * answers again, reconnect or reopen the channel if an earlier call lost
 * it, then dispatch what arrived in between. */
int begin(struct broker *b, char *err, size_t errlen);

/* ---- broker_publish.c ---- */

void pub_free(struct pub *p);
void pub_settle(struct pub *p, int result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- broker_consume.c ---- */

/* Subscribes the handle's consumer (consume_queue, prefetch) on the
 * current channel. Returns 0, or a negative code with ERR. */
int subscribe(struct broker *b, char *err, size_t errlen);

#endif
