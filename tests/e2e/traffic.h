/* traffic: the internal interfaces of cutover-traffic, the traffic
 * simulator of tests/e2e/. Not a library: traffic.c (the producer, the
 * drain, the report), traffic_options.c (the command line),
 * traffic_book.c (what was sent and what arrived), traffic_flag.c (the
 * feature-flag poller) and traffic_consume.c (the destination consumers)
 * share these declarations.
 *
 * Threads: the main thread produces; one thread polls the flag; one
 * thread per destination consumes, each with its own broker connection
 * (a struct broker is not thread-safe). They meet only in the book and
 * the flag, both guarded by their own mutex. */
#ifndef CUTOVER_TRAFFIC_H
#define CUTOVER_TRAFFIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "broker/broker.h"
#include "plan.h"

/* Message headers, beside publish.h's x-cutover-* stamps. */
#define TRAFFIC_HDR_PATH	"x-cutover-path"	/* "old" or "ladder" */
#define TRAFFIC_HDR_RUN		"x-cutover-run"		/* the run's id */
#define TRAFFIC_HDR_MOVE_ID	"x-cutover-move-id"	/* set by move_old */
#define TRAFFIC_PURPOSE		"traffic"		/* x-cutover-purpose */
#define TRAFFIC_RUN_MAX		40

enum traffic_path {
	TRAFFIC_OLD = 0,		/* one queue per delay, as before */
	TRAFFIC_LADDER = 1,		/* the ladder's entry exchange */
	TRAFFIC_NPATHS = 2
};

/* What became of a publish, as far as the producer knows. */
enum traffic_state {
	TRAFFIC_PENDING = 0,		/* sent, verdict not collected yet */
	TRAFFIC_CONFIRMED,		/* basic.ack */
	TRAFFIC_NACKED,			/* basic.nack: not taken */
	TRAFFIC_RETURNED,		/* mandatory and unroutable: not taken */
	TRAFFIC_UNCONFIRMED,		/* connection lost, timeout, channel
					 * closed: taken or not, nobody knows */
	TRAFFIC_NOT_SENT		/* refused before it left (no connection) */
};

/* Counts of one path. sent = confirmed + nacked + returned + unconfirmed
 * + pending. */
struct traffic_tally {
	uint64_t sent;
	uint64_t pending;
	uint64_t confirmed;
	uint64_t nacked;
	uint64_t returned;
	uint64_t unconfirmed;
	uint64_t delivered;		/* distinct messages that arrived */
	uint64_t delivered_confirmed;	/* of them, confirmed ones */
	uint64_t duplicates;		/* deliveries after a message's first */
	uint64_t early;			/* first arrival before not-before */
};

/* One message, by its sequence number. */
struct traffic_rec {
	int64_t not_before_ms;		/* wall clock: sent + requested delay */
	int64_t arrived_ms;		/* first arrival, wall clock */
	uint32_t deliveries;
	uint32_t moved;			/* deliveries carrying a move id */
	uint32_t move_id;		/* the first one's first 8 hex digits */
	uint8_t path;			/* enum traffic_path */
	uint8_t state;			/* enum traffic_state */
};

/* Where a delivery came from, besides its message. */
struct traffic_arrival {
	const char *move_id;		/* x-cutover-move-id, or NULL */
	bool on_source;			/* read on the old path's broker of a
					 * plan with a target */
};

/* Everything the producer sent and the consumers saw. */
struct traffic_book {
	pthread_mutex_t mu;
	struct traffic_rec **chunks;	/* TRAFFIC_CHUNK records each: they
					 * never move once allocated */
	size_t nchunks;
	size_t capchunks;
	uint64_t nrecs;
	struct traffic_tally tally[TRAFFIC_NPATHS];
	uint64_t not_sent;		/* refused before leaving */
	uint64_t foreign;		/* deliveries of no message of this run */
	uint64_t producer_losses;	/* connection (or channel) losses seen */
	uint64_t consumer_losses;
	uint64_t old_queues;		/* distinct old queues declared */
	uint64_t on_source;		/* deliveries read on the source */
	uint64_t on_target;		/* and on the target (with a target) */
	uint64_t moved_on_source;	/* moved copies read on the source */
	uint64_t move_id_changed;	/* a message moved under two ids */
};

/* Initialises B, empty. Returns 0, or -1 with ERR. */
int traffic_book_init(struct traffic_book *b, char *err, size_t errlen);

/* Frees what B holds. */
void traffic_book_free(struct traffic_book *b);

/* Records a message about to be sent on PATH with NOT_BEFORE_MS, pending.
 * Returns 0 and stores its sequence number in *SEQ, or -1 with ERR (out of
 * memory). */
int traffic_book_add(struct traffic_book *b, enum traffic_path path,
    int64_t not_before_ms, uint64_t *seq, char *err, size_t errlen);

/* Settles pending message SEQ as STATE (anything but TRAFFIC_PENDING).
 * TRAFFIC_NOT_SENT takes it back out of "sent". */
void traffic_book_settle(struct traffic_book *b, uint64_t seq,
    enum traffic_state state);

/* Records an arrival of message SEQ, sent on PATH (as its header says), at
 * ARRIVED_MS (wall clock), as A says it came (NULL: on the only broker,
 * not moved). Returns 0 for its first arrival, 1 for a duplicate, -1 when
 * this run sent no such message on that path (it is counted as foreign). */
int traffic_book_deliver(struct traffic_book *b, uint64_t seq,
    enum traffic_path path, int64_t arrived_ms,
    const struct traffic_arrival *a);

/* Adds N to the losses of the producer or of the consumers. */
void traffic_book_loss(struct traffic_book *b, bool consumer, uint64_t n);

/* Copies the tallies (TRAFFIC_NPATHS of them) into OUT. */
void traffic_book_tally(struct traffic_book *b, struct traffic_tally *out);

/* Builds the per-path part of the report, with lost (confirmed, never
 * delivered) and lateness (arrival minus not-before, ms; nearest-rank p50
 * and p99, min and max) for each path and for the total, and what arrived
 * moved (a delivery with a move id: how many messages, their duplicates,
 * early and lateness by their first arrival, moved copies read on the
 * source, messages moved under two ids) and on which broker:
 * { "old": {...}, "ladder": {...}, "total": {...}, "moved": {...},
 *   "arrivals": { "source": N, "target": N } }. Returns a new object,
 * or NULL when out of memory. Stores the total lost and early counts in
 * *LOST and *EARLY. */
json_t *traffic_book_report(struct traffic_book *b, uint64_t *lost,
    uint64_t *early);

/* Names a path: "old", "ladder". */
const char *traffic_path_name(enum traffic_path path);

/* The feature-flag poller. */
enum traffic_flag_mode {
	TRAFFIC_FLAG_OLD,		/* fixed: always the old path */
	TRAFFIC_FLAG_LADDER,		/* fixed: always the ladder */
	TRAFFIC_FLAG_UNLEASH,		/* Unleash's client API */
	TRAFFIC_FLAG_PLAN		/* the plan's own flag read (kind http) */
};

struct traffic_flag {
	/* Set before traffic_flag_start. */
	enum traffic_flag_mode mode;
	const struct plan *plan;	/* its name for logs; its read for
					 * TRAFFIC_FLAG_PLAN */
	char *url;			/* TRAFFIC_FLAG_UNLEASH: the feature's
					 * client API URL */
	const char *token_ref;		/* "env:NAME" of a client token */
	int64_t interval_ms;

	/* Private. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool inited;			/* mutex and condition */
	bool stop;
	bool started;
	pthread_t thread;
	void *curl;
	int state;			/* 1 on, 0 off */
	uint64_t reads;
	uint64_t errors;
	uint64_t changes;
	int64_t first_on_ms;		/* monotonic; 0: never seen on */
	char last_error[300];
};

/* Reads the flag once (a failure is fatal here: ERR says why), then starts
 * a thread that reads it every interval and keeps the last value read when
 * a read fails (counting the failure and logging its first few). Fixed
 * modes start no thread. Returns 0 or -1 with ERR. */
int traffic_flag_start(struct traffic_flag *f, char *err, size_t errlen);

/* The flag's last known value: 1 on, 0 off. */
int traffic_flag_get(struct traffic_flag *f);

/* Adds the flag's summary ("source", "state", "reads", "errors",
 * "changes", "first_on_s" relative to START_MONO_MS) to OBJ. */
void traffic_flag_report(struct traffic_flag *f, int64_t start_mono_ms,
    json_t *obj);

/* Stops the thread, if any; the last value stays readable. */
void traffic_flag_stop(struct traffic_flag *f);

/* Stops the thread, if any, and frees what F holds (its url included).
 * Safe after a failed traffic_flag_start, and twice. */
void traffic_flag_free(struct traffic_flag *f);

/* One consumer of one destination queue. */
struct traffic_consumer {
	/* Set before traffic_consumer_start. */
	struct traffic_book *book;
	const struct plan *plan;	/* its name for logs */
	const struct plan_broker *broker_at; /* where QUEUE is */
	bool source;			/* BROKER is the source of a plan with
					 * a target */
	const char *queue;
	const char *run;		/* deliveries of other runs are foreign */

	/* Private. */
	struct broker *broker;
	atomic_bool stop;
	bool started;
	pthread_t thread;
};

/* Connects, subscribes to C's queue and starts C's thread, which records
 * each delivery in the book and then acknowledges it; lost connections are
 * reopened and counted. Returns 0, or -1 with ERR when the first connect
 * or subscription fails. */
int traffic_consumer_start(struct traffic_consumer *c, char *err,
    size_t errlen);

/* Stops C's thread and closes its connection. */
void traffic_consumer_stop(struct traffic_consumer *c);

/* Milliseconds: a monotonic clock, and the wall clock (epoch). */
int64_t traffic_mono_ms(void);
int64_t traffic_wall_ms(void);

/* Sleeps MS milliseconds; a signal may cut it short. */
void traffic_sleep_ms(int64_t ms);

/* cutover-traffic's exit statuses. */
#define TRAFFIC_EXIT_PASS	0
#define TRAFFIC_EXIT_FAIL	1	/* lost or early, or it could not run */
#define TRAFFIC_EXIT_USAGE	2

#define TRAFFIC_DESTS_MAX	64	/* --dest options */

/* The command line (traffic_options.c). */
struct traffic_options {
	const char *plan_file;
	int64_t rate;			/* messages per second */
	int64_t duration_ms;		/* 0: until a signal */
	int64_t min_delay_ms;
	int64_t max_delay_ms;
	int64_t step_ms;
	const char *old_prefix;
	const char *dests[TRAFFIC_DESTS_MAX];
	size_t ndests;
	enum traffic_flag_mode mode;
	const char *flag_url;
	const char *feature;
	const char *client_token;
	int64_t flag_interval_ms;
	int64_t drain_timeout_ms;	/* -1: max delay + 30 s */
	int64_t confirm_timeout_ms;
	int64_t progress_ms;		/* 0: none */
	uint64_t seed;
	bool seeded;
	int64_t stamp_percent;		/* --stamp-timestamp: share of messages
					 * carrying the timestamp property */
	int64_t unstamped_max_ms;	/* --unstamped-max-delay: longer delays
					 * are always stamped; 0: no limit */
	bool old_ladder;		/* --old-ladder: the old path is the
					 * plan's old.ladder */
	bool json;
};

/* Parses the command line into O (traffic_options.c). Returns 0, 1 after --help, or
 * TRAFFIC_EXIT_USAGE with a message. */
int traffic_options_parse(int argc, char **argv, struct traffic_options *o);

/* Checks the options against the plan and fills in what the plan gives.
 * Returns 0, or TRAFFIC_EXIT_USAGE / TRAFFIC_EXIT_FAIL with a message. */
int traffic_options_check(struct traffic_options *o, const struct plan *p,
    struct traffic_flag *f);

#endif
