/* broker_int: what the files of the AMQP client (broker_*.c) share and
 * nothing outside orchestrator/broker may include: the handle, the
 * publishes awaiting a verdict, the queued deliveries, and the internal
 * calls, each named broker__ and grouped below by the file that defines
 * it. The public contract is broker.h.
 *
 * How the parts fit, in layers that call only downwards. At the top, the
 * public calls: broker_conn.c (open, close), broker_topology.c,
 * broker_publish.c, broker_consume.c. Each starts with broker__begin()
 * (broker_session.c, the connection and channel state machine), which
 * reconnects or reopens the channel an earlier call lost, then dispatches
 * what arrived in between. rabbitmq-c answers requests (declare, bind,
 * get, ...) itself; everything the broker sends on its own (publisher
 * confirms, returns, deliveries, channel and connection closes) is read
 * frame by frame with amqp_simple_wait_frame_noblock and handed to
 * broker__dispatch(). Frames that arrive while rabbitmq-c waits for an
 * answer are queued by the library and read later, in arrival order. A
 * failed answer goes through broker__rpc_result(), which records the reply
 * code and forgets a lost channel or connection. Below the session, the
 * leaves it calls: broker_login.c (one node's socket and login),
 * broker_reply.c (what a reply code and text mean), broker_message.c,
 * broker_tcp.c, broker_tls.c, broker_url.c and broker_util.c. */
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
	uint64_t *open;                 /* the delivery tags of every message
	                                 * read on the channel and not yet
	                                 * settled (handed out or queued), in
	                                 * ascending order from open_head; a
	                                 * settled one keeps its place with
	                                 * OPEN_SETTLED set until the head
	                                 * passes it (broker_ack_many) */
	size_t nopen, open_head, opencap;
	bool open_lost;                 /* one was not recorded (out of
	                                 * memory): no multiple ack on this
	                                 * channel any more */
	unsigned long losses;           /* see broker_losses */
	int reply_code;                 /* of the reply that failed the */
	char reply_text[TEXT_MAX];      /* last call, and its text */

	struct pub *pubs;               /* published since the last wait */
	size_t npubs;
	size_t pubcap;

	char *consume_queue;            /* the consumer, kept across reopens */
	uint16_t prefetch;
	char *ctag;
	char *kept_ctag;                /* a consumer broker_cancel_keep
	                                 * cancelled: what it still delivers
	                                 * is queued too, not given back */
	bool consuming;                 /* subscribed on the current channel */
	char *consumer_error;           /* why it ended, for broker_next */
	struct queued *qhead;
	struct queued *qtail;
};

/* ---- broker_util.c: small helpers ---- */

/* A copy of B as a C string, or NULL out of memory. The caller frees it. */
char *broker__dup_bytes(amqp_bytes_t b);
/* Copies B, text from the broker, into BUF as a C string. Returns BUF. */
const char *broker__bytes_text(amqp_bytes_t b, char *buf, size_t len);
/* Whether B holds exactly the C string S. */
bool broker__bytes_is(amqp_bytes_t b, const char *s);
/* AMQP short strings (names, keys) hold at most 255 bytes. Returns 0, or
 * BROKER_ERR with ERR naming KIND when NAME is too long (or empty, unless
 * EMPTY_OK). */
int broker__check_name(const char *kind, const char *name, bool empty_ok,
    char *err, size_t errlen);
/* As broker__check_name for the object NAME a call acts on (not empty),
 * then writes what the call says of it, "KIND 'NAME'", into WHAT
 * (WHATLEN bytes). Returns 0, or BROKER_ERR with ERR. */
int broker__named(const char *kind, const char *name, char *what, size_t whatlen,
    char *err, size_t errlen);

/* ---- broker_url.c ---- */

/* Resolves REF ("env:NAME"). Returns 0 and sets *OUT to the value (owned
 * by the environment), or BROKER_ERR. Never puts the value in ERR. */
int broker__resolve_password(const char *ref, const char **out, char *err,
    size_t errlen);

/* ---- broker_tcp.c ---- */

/* Connects to U within TIMEOUT_MS. Returns 0 and sets *FDP to a connected,
 * non-blocking socket, or BROKER_ECONNECT with ERR. */
int broker__tcp_connect(const struct broker_url *u, int timeout_ms, int *fdp,
    char *err, size_t errlen);

/* ---- broker_tls.c ---- */

/* Opens B->conn's TLS socket to B->url under B->tls within CONNECT_MS:
 * TCP connect, handshake, certificate and name checked. Returns 0, or
 * BROKER_ECONNECT (no route, handshake, unknown CA, name mismatch,
 * expired, client certificate required) or BROKER_ERR (a file or the
 * passphrase cannot be used) with ERR. B->conn stays B's to destroy. */
int broker__tls_socket_open(struct broker *b, int connect_ms, char *err,
    size_t errlen);
/* After a login over amqps:// that failed with the library error STATUS:
 * when the broker ended the TLS session (a client certificate required or
 * refused; said from OpenSSL's alert when it is still queued), writes that
 * into ERR and returns true; otherwise false. */
bool broker__tls_login_refused(const struct broker *b, int status, char *err,
    size_t errlen);

/* ---- broker_message.c ---- */

/* Copies the message properties P into D. Returns 0, or -1 out of memory. */
int broker__convert_properties(const amqp_basic_properties_t *p,
    struct broker_delivery *d);
/* Every property of D as received (headers included), or NULL. Borrowed
 * from D. */
const amqp_basic_properties_t *broker__delivery_properties(
    const struct broker_delivery *d);

/* ---- broker_reply.c: what a reply means ---- */

/* The status for the AMQP reply CODE: BROKER_EPRECONDITION,
 * BROKER_ELOST (connection forced) or BROKER_EREFUSED. */
int broker__code_status(int code);
/* Turns RabbitMQ's "inequivalent arg" TEXT into a sentence in ERR saying
 * what exists and what the plan wants. Returns false (ERR untouched) if
 * TEXT is not of that form. */
bool broker__explain_inequivalent(const char *text, char *err, size_t errlen);

/* ---- broker_login.c: one node's connection ---- */

/* Connects to b->url within CONNECT_MS (the TCP connect and the login
 * handshake; later requests get b->timeout_ms) and logs in. Returns 0
 * with b->conn (no channel yet), or a negative code with ERR and b->conn
 * NULL. */
int broker__connect(struct broker *b, int connect_ms, char *err,
    size_t errlen);

/* ---- broker_session.c: the connection and channel state machine ---- */

/* Every call starts here: back to an earlier node of the list that
 * answers again, reconnect or reopen the channel if an earlier call lost
 * it, then dispatch what arrived in between. Returns 0 with a connection
 * and a channel, or a negative code with ERR. */
int broker__begin(struct broker *b, char *err, size_t errlen);
/* Connects to the nodes given, starting with the one in use, until one
 * logs in. Returns 0 with b->url the node connected to, or the last
 * node's status with ERR saying why each failed. */
int broker__connect_any(struct broker *b, char *err, size_t errlen);
/* Opens the next channel number, in confirm mode, and resubscribes the
 * consumer. Returns 0, or a negative code with ERR. */
int broker__open_channel(struct broker *b, char *err, size_t errlen);
/* Subscribes the handle's consumer (consume_queue, prefetch) on the
 * current channel. Returns 0, or a negative code with ERR. */
int broker__subscribe(struct broker *b, char *err, size_t errlen);
/* Reads the next frame, waiting until DEADLINE (monotonic ms) at most.
 * Returns an amqp_status_enum. Everything read from earlier frames must
 * have been copied: their memory is recycled here. */
int broker__next_frame(struct broker *b, int64_t deadline, amqp_frame_t *f);
/* Reads the content (header and body frames) of the message whose method
 * frame was just read, into D. Frames rabbitmq-c queued before that method
 * arrived are dispatched first. Returns 0, or a negative code with ERR. */
int broker__read_content(struct broker *b, int64_t deadline,
    struct broker_delivery *d, const char *what, char *err, size_t errlen);
/* Handles one frame the broker sent on its own. Content-bearing methods
 * read their content, until DEADLINE at most. Returns 0, or a negative code
 * with ERR when the frame closed the channel or the connection. */
int broker__dispatch(struct broker *b, amqp_frame_t *f, int64_t deadline,
    const char *what, char *err, size_t errlen);
/* Dispatches whatever already arrived, without waiting: a close that came
 * between calls, confirms, deliveries. */
void broker__drain(struct broker *b);
/* Frees the deliveries received and not yet handed out. */
void broker__queued_free_all(struct broker *b);
/* The channel is gone: unconfirmed publishes get RESULT, deliveries not yet
 * handed out are dropped (the broker redelivers them). */
void broker__chan_lost(struct broker *b, int result, const char *why);
/* The connection is gone: as broker__chan_lost, and b->conn destroyed. */
void broker__conn_lost(struct broker *b, int result, const char *why);
/* rabbitmq-c reported CODE (an amqp_status_enum). After a library error the
 * connection is in no state to go on: it is dropped. Returns the status
 * for the call WHAT, with ERR. */
int broker__on_library_error(struct broker *b, int code, const char *what,
    char *err, size_t errlen);
/* Checks R, the answer to the request WHAT just made. Returns 0, or the
 * failure's status with ERR. */
int broker__rpc_result(struct broker *b, amqp_rpc_reply_t r, const char *what,
    char *err, size_t errlen);
/* Frees what P holds (not P). */
void broker__pub_free(struct pub *p);
/* The channel's unsettled deliveries (b->open): TAG, just read with
 * manual acknowledgement, joins them (returns 0, or -1 out of memory:
 * then it is not counted, and broker_ack_many never covers what a
 * multiple ack would reach past it); TAG was settled; the channel is new
 * or gone, and they with it. */
#define OPEN_SETTLED (UINT64_C(1) << 63)
#define OPEN_ACKING (UINT64_C(1) << 62)	/* broker_ack_many's mark */
#define OPEN_FLAGS (OPEN_SETTLED | OPEN_ACKING)
int broker__open_add(struct broker *b, uint64_t tag);
/* The index of TAG in b->open, or b->nopen when it is not there. */
size_t broker__open_find(const struct broker *b, uint64_t tag);
void broker__open_settled(struct broker *b, uint64_t tag);
void broker__open_clear(struct broker *b);
/* Gives the pending publish P its verdict RESULT, with the detail FMT;
 * a publish already settled keeps its verdict. */
void broker__pub_settle(struct pub *p, int result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
