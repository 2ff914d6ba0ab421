/* broker: cutover's AMQP 0-9-1 client, on rabbitmq-c 0.11.
 *
 * One struct broker is one connection to one vhost with one channel in
 * publisher-confirm mode. Through it the engine declares, inspects and
 * deletes exchanges, queues and bindings (declare_ladder, verify_ladder,
 * remove_old), publishes with confirms and `mandatory` (canary, probes),
 * and receives with basic.get or a simple consumer (canary, move_old).
 *
 * Return codes. Every function returns BROKER_OK (0) or a negative
 * enum broker_status, and on failure writes one readable line into the
 * caller's ERR buffer (ERRLEN bytes, always NUL-terminated). Two negative
 * codes are an ordinary "no" rather than a failure, so a caller tests for
 * them before it treats a negative code as one: BROKER_NOT_FOUND from a
 * passive declare (ERR untouched), BROKER_EMPTY from broker_get. A call
 * that must first reconnect (see Recovery) can also fail as broker_open
 * does. The password never appears in any message. broker_reply_code tells
 * which AMQP reply code, if any, made the last call fail.
 *
 * Recovery. A channel-level error (403, 404, 405, 406: the broker closes
 * the channel) fails the call that caused it; the next call opens a fresh
 * channel first. A connection-level close (540 NOT_IMPLEMENTED, 320
 * CONNECTION_FORCED, ...), a socket error or a request that times out fails
 * the call that saw it; the next call reconnects with the same URL, user and
 * password reference (resolved again) before doing its work. A consumer is
 * resubscribed when its channel is reopened; messages received on a closed
 * channel can no longer be acknowledged (the broker redelivers them).
 *
 * Timeouts. TIMEOUT_MS given to broker_open bounds the TCP connect, the
 * login handshake, every request/answer exchange (declare, bind, delete,
 * get, ...) and reading a message's content; a request that times out
 * drops the connection (rabbitmq-c closes the socket). Publish waits and
 * consumer waits take their own timeout and leave the connection be. One
 * limit of rabbitmq-c 0.11: sending a message has no deadline, so a publish
 * can block while the broker holds back publishers (memory or disk alarm).
 * Heartbeats are off (rabbitmq-c only answers them inside a call); a dead
 * connection shows up as a timeout, or is noticed and replaced at the start
 * of the next call.
 *
 * A struct broker is not thread-safe: one per thread. */
#ifndef CUTOVER_BROKER_H
#define CUTOVER_BROKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "errbuf.h"
#include "tls.h"
#include "topology.h"

/* The return codes: X(NAME, CODE, WHAT), WHAT as broker_status_name
 * gives it. */
#define BROKER_STATUS_MAP(X)						\
	X(BROKER_OK, 0, "done")						\
	/* local: bad argument or URL, unset env variable, memory */	\
	X(BROKER_ERR, -1, "local failure")				\
	/* DNS, refused, unreachable, timeout */			\
	X(BROKER_ECONNECT, -2, "could not connect")			\
	/* login (403) or vhost (530) refused */			\
	X(BROKER_EAUTH, -3, "login refused")				\
	/* 404, 403, 405, 540, ... */					\
	X(BROKER_EREFUSED, -4, "refused by the broker")			\
	/* 406: exists with other arguments, not empty, in use */	\
	X(BROKER_EPRECONDITION, -5, "precondition failed")		\
	/* lost or forced closed (320): the outcome is unknown */	\
	X(BROKER_ELOST, -6, "connection lost")				\
	X(BROKER_ETIMEOUT, -7, "no answer in time")			\
	/* publish: the broker did not take it */			\
	X(BROKER_ENACKED, -8, "nacked")					\
	/* publish: mandatory, and no queue took it */			\
	X(BROKER_ERETURNED, -9, "returned")				\
	/* passive declare: no such object (not a failure) */		\
	X(BROKER_NOT_FOUND, -10, "not found")				\
	/* broker_get: the queue had no message (not a failure) */	\
	X(BROKER_EMPTY, -11, "empty")

/* enum broker_status, and broker_status_name(RC): what broker code RC
 * means, in a word or three ("connection lost"); "unknown" for any other
 * value. */
ERRBUF_CODES(broker_status, BROKER_STATUS_MAP, broker_status_name);

#define BROKER_HOST_MAX 256
#define BROKER_VHOST_MAX 256

/* broker_queue_delete flags. */
#define BROKER_IF_EMPTY  0x01
#define BROKER_IF_UNUSED 0x02

struct broker;

/* A parsed amqp:// or amqps:// URL. */
struct broker_url {
	bool tls;                      /* amqps:// */
	char host[BROKER_HOST_MAX];    /* name or address (IPv6: no brackets) */
	int port;                      /* 5672 (amqps: 5671) unless given */
	char vhost[BROKER_VHOST_MAX];  /* percent-decoded; "/" if no path */
};

/* Queue state from a passive declare. */
struct broker_queue_info {
	uint32_t messages;             /* ready messages, exact and current */
	uint32_t consumers;
};

/* One header of a message to publish: an integer (sent as a signed 64-bit
 * long) or a UTF-8 string. */
struct broker_field {
	const char *key;
	bool is_int;
	int64_t num;                   /* when is_int */
	const char *str;               /* otherwise */
};

/* A message to publish. Zero-initialise and fill in what applies. */
struct broker_message {
	const char *exchange;          /* "" or NULL: the default exchange */
	const char *routing_key;       /* NULL: "" */
	const void *body;
	size_t len;
	const struct broker_field *headers;
	size_t nheaders;
	const char *message_id;        /* or NULL */
	const char *content_type;      /* or NULL */
	bool mandatory;                /* unroutable: BROKER_ERETURNED rather
	                                * than dropped without a word */
	bool transient;                /* delivery mode 1; by default messages
	                                * are persistent (2) */
	uint64_t timestamp;            /* the timestamp property (seconds since
	                                * the epoch), or 0: none */
	const struct broker_delivery *like; /* or NULL. Republishing a received
	                                * message: its properties and headers as
	                                * received, except the dead-letter
	                                * history (x-death, x-first-death-*,
	                                * x-last-death-*) and the expiration
	                                * (the broker drops both when it
	                                * dead-letters), and headers HEADERS
	                                * names (replaced by HEADERS); MESSAGE_ID,
	                                * CONTENT_TYPE and TRANSIENT are then
	                                * not used */
};

enum broker_kind {
	BROKER_KIND_STR,               /* str */
	BROKER_KIND_INT,               /* num */
	BROKER_KIND_BOOL,              /* num: 0 or 1 */
	BROKER_KIND_OTHER              /* tables, arrays, floats: not kept */
};

/* One header of a received message. */
struct broker_header {
	char *key;
	enum broker_kind kind;
	int64_t num;
	char *str;                     /* BROKER_KIND_STR only, else NULL */
};

/* One entry of a received message's x-death header. */
struct broker_death {
	char *queue;
	char *reason;                  /* "expired", "rejected", "maxlen",
	                                * "delivery_limit" */
	char *exchange;
	int64_t count;
	int64_t time_s;                /* when it was first dead-lettered from
	                                * QUEUE for REASON (whole seconds: the
	                                * AMQP timestamp), 0 when absent */
	char **routing_keys;
	size_t nrouting_keys;
};

/* A received message. Everything in it is owned by the caller: release
 * with broker_delivery_free. */
struct broker_delivery {
	char *exchange;                /* where it was last published or
	                                * dead-lettered to */
	char *routing_key;
	char *body;                    /* LEN bytes, plus a NUL after them */
	size_t len;
	char *message_id;              /* NULL when absent */
	char *content_type;            /* NULL when absent */
	int delivery_mode;             /* 0 absent, 1 transient, 2 persistent */
	bool redelivered;
	uint32_t remaining;            /* broker_get: messages left behind */
	struct broker_header *headers;
	size_t nheaders;
	struct broker_death *deaths;   /* x-death, in the broker's order: the
	                                * most recent first */
	size_t ndeaths;
	bool has_timestamp;            /* the timestamp property was set */
	uint64_t timestamp;            /* it: seconds since the epoch */
	void *props;                   /* private: every property as received,
	                                * for broker_message.like */
	/* Private: which channel and tag to acknowledge it with. */
	uint64_t tag;
	unsigned long epoch;
	bool unacked;
};

/* Parses URL, "amqp://host[:port][/vhost]" or "amqps://..." (TLS, port
 * 5671 by default; the vhost percent-decoded: "%2f" is "/", an empty or
 * missing path is "/"). Refuses credentials in the URL and query strings;
 * messages never repeat the URL, which may hold a password. Returns 0 and
 * fills U, or BROKER_ERR with ERR. */
int broker_url_parse(const char *url, struct broker_url *u, char *err,
    size_t errlen);

/* Connects to URL as USERNAME, with the password PASSWORD_REF names
 * ("env:NAME": the environment variable, read now and at each reconnect;
 * a literal password is refused), logs in, opens a channel and puts it in
 * confirm mode. TIMEOUT_MS (> 0) bounds the connect, the login and every
 * later request (see the top of this file). Returns 0 and sets *OUT (close
 * with broker_close), or BROKER_ERR, BROKER_ECONNECT, BROKER_EAUTH,
 * BROKER_ETIMEOUT, BROKER_ELOST with ERR. */
int broker_open(const char *url, const char *username, const char *password_ref,
    int timeout_ms, struct broker **out, char *err, size_t errlen);

/* broker_open with TLS settings for an amqps:// URL: TLS (NULL: verify
 * against the system's CAs and the URL's host, no client certificate;
 * copied; messages name it by its `where`, else "broker.tls"). A refused
 * certificate,
 * a failed handshake or a client certificate the broker requires fail
 * with BROKER_ECONNECT and words saying which (see tls.h); TLS is not
 * used for an amqp:// URL. */
int broker_open_tls(const char *url, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen);


/* broker_open_tls over the NURLS (>= 1) URLS of one broker's nodes (a
 * cluster; one vhost; TLS applies to each amqps:// one): the connect, and
 * every reconnect after a lost connection, tries them in the order given,
 * starting with the node in use, until one logs in. ERR then says why
 * each failed.
 *
 * On a later node than the first, the handle goes back to the list's
 * order: once BROKER_RETURN_AFTER_MS (broker_set_return_after) have passed
 * since it moved there or last tried, a call that starts with nothing in
 * flight (no publish awaiting broker_wait_confirms, no message received
 * and not yet acknowledged or rejected, no consumer) first tries the
 * earlier nodes in order, each within 2 s at most; the first that logs in
 * becomes the node in use, the old connection is closed, and the move is
 * logged ("AMQP: HOST:PORT answers again; back to it from HOST:PORT"). A
 * call that starts while something is in flight stays where it is, and
 * the first call at rest afterwards tries. */
int broker_open_list(const char *const *urls, size_t nurls, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen);

#define BROKER_RETURN_AFTER_MS 30000

/* How long B, on a later node than the first of its list, waits before it
 * tries the earlier ones again (see broker_open_list): MS, or never when
 * MS <= 0. */
void broker_set_return_after(struct broker *b, int64_t ms);

/* Closes the connection politely (bounded by the handle's timeout) and
 * frees B and everything it holds. B may be NULL. */
void broker_close(struct broker *b);

/* How many times B lost its connection (closed by the broker, reset, no
 * answer in time) or could not connect again, since broker_open: a
 * caller that failed sees from it whether the broker's silence or
 * absence was why, which time may mend, rather than an answer it gave. */
unsigned long broker_losses(const struct broker *b);

/* The AMQP reply code of the broker's answer that made the last call fail
 * (404, 406, 540, 320, ...), or 0 if the last call did not fail because of
 * a broker reply. */
int broker_reply_code(const struct broker *b);

/* Declares exchange NAME of TYPE ("topic", "fanout", "direct", "headers"),
 * durable or not, with ARGS (e.g. alternate-exchange); idempotent when the
 * exchange exists with the same settings. Returns 0, or a negative code;
 * BROKER_EPRECONDITION when it exists with other settings, with a message
 * naming the exchange, the setting, what exists and what is wanted. */
int broker_exchange_declare(struct broker *b, const char *name,
    const char *type, bool durable, const struct topology_arg *args,
    size_t nargs, char *err, size_t errlen);

/* Declares exchange NAME of TYPE, transient and auto-deleted: the broker
 * deletes it once the last binding from it goes (its queue expired or was
 * deleted), so a process that dies leaves nothing behind for long.
 * Idempotent like broker_exchange_declare. */
int broker_exchange_declare_auto_delete(struct broker *b, const char *name,
    const char *type, char *err, size_t errlen);

/* Declares queue NAME, durable or not, with ARGS (integers go out as
 * signed 64-bit longs, strings as UTF-8 long strings); idempotent when the
 * queue exists with the same arguments. Returns 0, or a negative code;
 * BROKER_EPRECONDITION when it exists with other arguments, e.g. "queue 'q'
 * exists with x-message-ttl = 1000, the plan wants 2000: it cannot be
 * redeclared; delete it or change the plan". */
int broker_queue_declare(struct broker *b, const char *name, bool durable,
    const struct topology_arg *args, size_t nargs, char *err, size_t errlen);

/* Binds queue QUEUE to exchange EXCHANGE with routing key KEY (idempotent),
 * or removes that binding (removing a missing binding succeeds). Returns 0,
 * or a negative code (BROKER_EREFUSED when either object is missing). */
int broker_queue_bind(struct broker *b, const char *queue,
    const char *exchange, const char *key, char *err, size_t errlen);
int broker_queue_unbind(struct broker *b, const char *queue,
    const char *exchange, const char *key, char *err, size_t errlen);

/* Binds exchange DESTINATION to exchange SOURCE with KEY: what SOURCE
 * routes with KEY goes on to DESTINATION. Or removes that binding.
 * Returns 0, or a negative code. */
int broker_exchange_bind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen);
int broker_exchange_unbind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen);

/* Passive declare of queue NAME: returns 0 and fills INFO (may be NULL)
 * with its exact message and consumer counts, BROKER_NOT_FOUND if there is
 * no such queue (not an error: ERR is untouched), or another negative
 * code. */
int broker_queue_inspect(struct broker *b, const char *name,
    struct broker_queue_info *info, char *err, size_t errlen);

/* Passive declare of exchange NAME: returns 0 if it exists,
 * BROKER_NOT_FOUND if not (ERR untouched), or another negative code. */
int broker_exchange_exists(struct broker *b, const char *name, char *err,
    size_t errlen);

/* Deletes queue NAME. FLAGS: BROKER_IF_EMPTY, BROKER_IF_UNUSED (a classic
 * queue that is not empty/unused: BROKER_EPRECONDITION; a quorum queue
 * refuses both flags with 540 and a closed connection: BROKER_EREFUSED with
 * "quorum queues do not support if-empty/if-unused delete"). Deleting a
 * missing queue succeeds. Returns 0 and sets *PURGED (may be NULL) to the
 * number of messages deleted with it, or a negative code. */
int broker_queue_delete(struct broker *b, const char *name, int flags,
    uint32_t *purged, char *err, size_t errlen);

/* Closes B's channel and opens a fresh one, for a queue deleted and
 * declared again under its name with another type: RabbitMQ 3.10 keeps
 * in a channel the state of each classic queue it read from, past the
 * queue's deletion, and a basic.get there on the quorum queue of that name
 * fails with INTERNAL_ERROR, which closes the connection. Call it at
 * rest: a publish awaiting its confirm is lost (BROKER_ELOST), a delivery
 * not acknowledged goes back to its queue. Returns 0, or a negative code
 * when no channel could be opened. */
int broker_channel_renew(struct broker *b, char *err, size_t errlen);

/* Deletes exchange NAME, if IF_UNUSED only when nothing is bound to it.
 * Deleting a missing exchange succeeds. Returns 0, or a negative code. */
int broker_exchange_delete(struct broker *b, const char *name, bool if_unused,
    char *err, size_t errlen);

/* Publishes M and waits up to TIMEOUT_MS for the broker's verdict. Returns
 * 0 when confirmed, or BROKER_ENACKED, BROKER_ERETURNED ("returned: no
 * route", a mandatory message no queue took), BROKER_ETIMEOUT,
 * BROKER_EREFUSED (the broker closed the channel, e.g. no such exchange),
 * BROKER_ELOST (the connection went away: the message may or may not have
 * been taken), BROKER_ERR with ERR. Refused while broker_publish_async
 * messages await broker_wait_confirms. */
int broker_publish(struct broker *b, const struct broker_message *m,
    int timeout_ms, char *err, size_t errlen);

/* Publishes M without waiting; broker_wait_confirms collects the verdicts.
 * Returns 0 when the message was sent (not yet confirmed), or a negative
 * code when it could not be (the connection is gone: BROKER_ELOST). */
int broker_publish_async(struct broker *b, const struct broker_message *m,
    char *err, size_t errlen);

/* Waits up to TIMEOUT_MS for the verdicts of every message published with
 * broker_publish_async since the last wait. If RESULTS is not NULL,
 * RESULTS[i] (i < NRESULTS) receives the verdict of the i-th of them, as
 * broker_publish would return it. *NPUBLISHED (may be NULL) is set to how
 * many there were. Returns 0 if every one was confirmed, otherwise the
 * verdict of the first that was not, with ERR summarising. */
int broker_wait_confirms(struct broker *b, int timeout_ms, int *results,
    size_t nresults, size_t *npublished, char *err, size_t errlen);

/* basic.get: takes one message from QUEUE. Unless MANUAL_ACK it is
 * acknowledged at once; with MANUAL_ACK the caller must broker_ack or
 * broker_reject it. Returns 0 and fills OUT (free with
 * broker_delivery_free), BROKER_EMPTY (OUT left empty), or another
 * negative code. */
int broker_get(struct broker *b, const char *queue, bool manual_ack,
    struct broker_delivery *out, char *err, size_t errlen);

/* N basic.gets at once: sends them all on the channel without waiting,
 * then reads their N answers, so that taking N messages costs one round
 * trip rather than N. Each message taken is as broker_get's with
 * MANUAL_ACK, to broker_ack or broker_reject. Returns 0 with the messages
 * in OUT[0..*GOT-1] (OUT holds N) and *EMPTY true when at least one
 * answer was get-empty (the queue held nothing at that moment; a later
 * get may still have taken one published since), or a negative code with
 * ERR: then OUT[0..*GOT-1] holds those taken before the failure, to
 * reject or free (on a channel gone, the broker has requeued them). */
int broker_get_many(struct broker *b, const char *queue, size_t n,
    struct broker_delivery *out, size_t *got, bool *empty, char *err,
    size_t errlen);

/* Starts the handle's one consumer on QUEUE with at most PREFETCH
 * unacknowledged deliveries (0: no limit). Deliveries are read with
 * broker_next and must be acknowledged. Returns 0, or a negative code. */
int broker_consume(struct broker *b, const char *queue, uint16_t prefetch,
    char *err, size_t errlen);

/* Waits up to TIMEOUT_MS for the consumer's next delivery. Returns 0 and
 * fills OUT (free with broker_delivery_free), BROKER_ETIMEOUT when nothing
 * came, BROKER_EREFUSED when the broker cancelled the consumer (its queue
 * was deleted), or another negative code. */
int broker_next(struct broker *b, int timeout_ms, struct broker_delivery *out,
    char *err, size_t errlen);

/* Acknowledges D, or rejects it (REQUEUE: back to its queue; otherwise
 * dead-lettered or dropped). Returns 0; BROKER_ELOST if D's channel has
 * closed since (the broker will redeliver it); BROKER_ERR if D needs no
 * acknowledgement. */
int broker_ack(struct broker *b, struct broker_delivery *d, char *err,
    size_t errlen);
int broker_reject(struct broker *b, struct broker_delivery *d, bool requeue,
    char *err, size_t errlen);

/* Acknowledges the N messages D[0..N-1], each as broker_ack would, in as
 * few frames as it can: one basic.ack with `multiple` for the longest
 * run, from the oldest, of the channel's unsettled deliveries (taken with
 * a get or from the consumer, handed out or not) that are all among D,
 * then one frame for each of the rest. A multiple ack never reaches a
 * message the caller still holds: every delivery the channel has sent up
 * to the last one it covers has been read, and is counted unless settled.
 * RESULTS[i] gets each one's status (0, BROKER_ELOST when its channel has
 * closed since, BROKER_ERR when it needs no acknowledgement). Returns 0,
 * or the first failure with ERR. */
int broker_ack_many(struct broker *b, struct broker_delivery *const *d, size_t n,
    int *results, char *err, size_t errlen);

/* Stops the consumer; deliveries received but not yet returned by
 * broker_next (or kept by broker_cancel_keep) go back to the queue.
 * Returns 0 (also when none is running), or a negative code. */
int broker_cancel(struct broker *b, char *err, size_t errlen);

/* Stops the consumer, keeping what it delivered: the deliveries received
 * and not handed out stay queued, and those it sent before the broker
 * took the cancel (they may follow the cancel-ok) are queued as they
 * arrive, all for broker_next_many; they come before the answer to any
 * later request on the channel (a broker_get_many's get-empty among
 * them). broker_cancel gives back what is still queued then. Returns 0 (also when none is running), or a negative code. */
int broker_cancel_keep(struct broker *b, char *err, size_t errlen);

/* Whether deliveries are queued on B, received and not handed out. */
bool broker_has_queued(const struct broker *b);

/* Hands out up to MAX deliveries into OUT (*GOT of them), each as
 * broker_next's: first those already queued; then, with a consumer
 * running, waits up to WAIT_MS for the first when none was queued, and
 * for more until MAX or until GAP_MS pass without one. Without a consumer
 * it only hands out what is queued (after broker_cancel_keep). Returns 0,
 * also with fewer than MAX or none, or a negative code with ERR (then
 * OUT[0..*GOT-1] are handed out all the same). */
int broker_next_many(struct broker *b, size_t max, int wait_ms, int gap_ms,
    struct broker_delivery *out, size_t *got, char *err, size_t errlen);

/* Frees what D holds and leaves it empty. D may be NULL. */
void broker_delivery_free(struct broker_delivery *d);

/* Looks up header KEY in D. Returns it, or NULL. */
const struct broker_header *broker_header_find(const struct broker_delivery *d,
    const char *key);

#endif
