/* publish: the one way cutover publishes a delayed message into a ladder.
 *
 * The command line (`cutover publish`), the canary step and the watch's
 * probes all go through publish_delayed: it encodes the delay with ceiling
 * (refusing one beyond the ladder's largest delay, never truncating),
 * checks the destination, publishes to the entry exchange with publisher
 * confirms and `mandatory`, and stamps the message with headers that say
 * who sent it and when it may come out:
 *
 *   x-cutover-plan         the plan's name
 *   x-cutover-purpose      "canary", "probe" or "manual"
 *   x-cutover-seq          sequence number (64-bit integer)
 *   x-cutover-delay-ms     the delay asked for (64-bit integer)
 *   x-cutover-not-before   ms since the epoch: publish time + units x unit,
 *                          the ceiling the ladder guarantees (integer)
 *
 * plus a message id. publish_read reads those headers back from a
 * received message. No global state; not thread-safe beyond what the
 * broker handle is (one per thread). */
#ifndef CUTOVER_PUBLISH_H
#define CUTOVER_PUBLISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"
#include "errbuf.h"
#include "ladder.h"

#define PUBLISH_HDR_PLAN         "x-cutover-plan"
#define PUBLISH_HDR_PURPOSE      "x-cutover-purpose"
#define PUBLISH_HDR_SEQ          "x-cutover-seq"
#define PUBLISH_HDR_DELAY        "x-cutover-delay-ms"
#define PUBLISH_HDR_NOT_BEFORE   "x-cutover-not-before"

#define PUBLISH_CANARY           "canary"
#define PUBLISH_PROBE            "probe"
#define PUBLISH_MANUAL           "manual"

#define PUBLISH_TIMEOUT_MS       10000  /* confirm wait when the request gives 0 */
#define PUBLISH_MAX_HEADERS      32     /* extra headers a request may add */
#define PUBLISH_ID_MAX           160    /* message id buffer, NUL included */

/* What publish_delayed returns: X(NAME, CODE, WHAT), WHAT as
 * publish_status_name gives it. */
#define PUBLISH_STATUS_MAP(X)						\
	X(PUBLISH_OK, 0, "confirmed")					\
	/* refused before sending: delay beyond the ladder, bad		\
	 * destination, purpose or header */				\
	X(PUBLISH_EINPUT, -1, "refused input")				\
	/* the broker nacked it: not taken */				\
	X(PUBLISH_ENACKED, -2, "nacked")				\
	/* no route: no queue took it */				\
	X(PUBLISH_ERETURNED, -3, "returned")				\
	/* e.g. no such exchange */					\
	X(PUBLISH_EREFUSED, -4, "refused by the broker")		\
	/* refused, unreachable, login */				\
	X(PUBLISH_ECONNECT, -5, "no connection")			\
	/* the outcome is unknown */					\
	X(PUBLISH_ELOST, -6, "connection lost")				\
	/* no confirm in time: the outcome is unknown */		\
	X(PUBLISH_ETIMEOUT, -7, "timeout")				\
	/* local failure (memory, bad handle) */			\
	X(PUBLISH_ERR, -8, "failed")

/* enum publish_status, and publish_status_name(RC): what publish code RC
 * means ("confirmed", "refused input", "nacked", ...: the table's WHAT);
 * "failed" for any other value, as callers print a failure it did not
 * name. */
ERRBUF_CODES(publish_status, PUBLISH_STATUS_MAP, publish_status_name);

/* One delayed message to publish. Zero-initialise, then fill in. All
 * pointers are borrowed for the duration of the call. */
struct publish_request {
	const char *plan;        /* plan name, non-empty */
	const char *purpose;     /* PUBLISH_CANARY, PUBLISH_PROBE or PUBLISH_MANUAL */
	int64_t seq;             /* sequence number, as the caller counts */
	int64_t delay_ms;        /* requested delay, >= 0 */
	const char *destination; /* routing suffix, e.g. "email.delivery" */
	const void *body;        /* LEN bytes (may be NULL when LEN is 0) */
	size_t len;
	const char *content_type;  /* or NULL */
	const char *message_id;  /* or NULL: one is made up (plan, purpose,
	                          * seq, time and 64 random bits) */
	const struct broker_field *headers; /* extra headers, or NULL; may not
	                          * repeat one of the x-cutover-* names above */
	size_t nheaders;         /* at most PUBLISH_MAX_HEADERS */
	int timeout_ms;          /* confirm wait; 0: PUBLISH_TIMEOUT_MS */
};

/* What was sent. Filled as far as the call got: after PUBLISH_EINPUT only
 * what was computed before the refusal. */
struct publish_receipt {
	uint64_t units;                        /* ceil(delay / unit) */
	int64_t sent_ms;                       /* wall clock just before sending */
	int64_t not_before_ms;                 /* sent_ms + units x unit */
	int64_t sent_mono_ms;                  /* clock_mono_ms() then: a sender
	                                        * that also consumes measures
	                                        * lateness with it, immune to
	                                        * wall-clock jumps */
	int64_t not_before_mono_ms;            /* sent_mono_ms + units x unit */
	char exchange[LADDER_NAME_MAX];        /* the entry exchange */
	char routing_key[LADDER_KEY_MAX + 1];
	char message_id[PUBLISH_ID_MAX];
};

/* Publishes R into ladder L through B and waits for the broker's verdict.
 * Checks everything it can before sending: R's fields, the delay
 * (ladder_encode, ceiling, refused beyond ladder_max_delay_ms), the
 * destination (ladder_check_destination: no '*' or '#', routing key within
 * 255 bytes). Returns PUBLISH_OK only when the broker confirmed the message;
 * otherwise a negative enum publish_status with one readable line in ERR
 * saying what was published where and why it is not confirmed (for
 * PUBLISH_ELOST and PUBLISH_ETIMEOUT the message may still have been
 * taken). OUT (may be NULL) receives the receipt. */
int publish_delayed(struct broker *b, const struct ladder *l,
    const struct publish_request *r, struct publish_receipt *out,
    char *err, size_t errlen);

/* The cutover headers of a received message. Strings are borrowed from
 * the delivery and live as long as it does. */
struct publish_info {
	const char *plan;
	const char *purpose;
	int64_t seq;
	int64_t delay_ms;
	int64_t not_before_ms;
};

/* Reads the x-cutover-* headers of D into OUT. Returns 0 when all five are
 * present with the right types (strings for plan and purpose, integers for
 * the rest), or -1 with ERR naming the first missing or mistyped one (a
 * message cutover did not publish, or one published by something else). */
int publish_read(const struct broker_delivery *d, struct publish_info *out,
    char *err, size_t errlen);

#endif
