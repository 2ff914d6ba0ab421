/* move_entry: the pure arithmetic of move_old — when a
 * message waiting in an old delay queue may come out, and with which delay
 * it is republished into the ladder so that it is never early. No I/O: the
 * step reads the message and the queue, this decides. */
#ifndef CUTOVER_MOVE_ENTRY_H
#define CUTOVER_MOVE_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a queue's messages say when they entered it (the plan's
 * move_old.entry[].from). */
enum move_from {
	MOVE_FROM_UNKNOWN,	/* nothing: the full TTL, within a bound */
	MOVE_FROM_TIMESTAMP,	/* the AMQP timestamp property (seconds) */
	MOVE_FROM_HEADER,	/* a named header: epoch ms or RFC 3339 UTC */
	MOVE_FROM_ARRIVAL,	/* the broker's own stamp of the message's
				 * arrival (its timestamp_in_ms header),
				 * trusted only from a broker that overwrites
				 * it at every publish */
	MOVE_FROM_DEATH		/* its newest x-death entry: when the broker
				 * dead-lettered it into this queue from the
				 * one before (whole seconds), trusted only
				 * when it left that queue once */
};

/* What to do with one message. */
enum move_verdict {
	MOVE_GO = 0,		/* republish with delay_ms */
	MOVE_LEAVE_TOO_LONG,	/* its remaining delay is beyond the ladder's
				 * largest: left to drain in place */
	MOVE_LEAVE_UNKNOWN	/* entry time unknown and the queue's TTL over
				 * unknown_entry_max_lateness: left in place */
};

/* The rule for one old queue. */
struct move_rule {
	enum move_from from;
	int64_t ttl_ms;			/* the queue's effective TTL, >= 0 */
	int64_t unit_ms;		/* the ladder's unit, > 0 */
	int64_t max_delay_ms;		/* the largest delay the ladder takes */
	int64_t unknown_max_lateness_ms; /* the plan's bound; 0: never */
	enum move_from then;		/* tried when FROM gives no entry time;
					 * MOVE_FROM_UNKNOWN: none */
	int64_t rest_ms;		/* what the message still owes once out
					 * of this queue (the lower levels of a
					 * ladder it waits in), >= 0 */
};

/* What one message says of its entry time. */
struct move_stamp {
	bool has_timestamp;
	uint64_t timestamp_s;		/* AMQP timestamp: whole seconds */
	bool has_header;		/* the rule's header is present */
	bool header_is_int;		/* an integer: epoch milliseconds */
	int64_t header_num;
	const char *header_str;		/* else its text (NULL: another type) */
	bool has_arrival;		/* the broker's arrival stamp, set by the
					 * caller only from a broker that
					 * overwrites it at every publish (so it
					 * cannot be an earlier publish's copy) */
	int64_t arrival_ms;		/* epoch ms, the broker's clock */
	bool has_death;			/* its newest x-death entry has a time */
	int64_t death_s;		/* that time: whole seconds */
	int64_t death_count;		/* that entry's count */
	int64_t seen_ms;		/* > 0: the message was already in its
					 * queue then (an earlier look took it
					 * and gave it back), so it entered no
					 * later; 0: not known */
};

struct move_decision {
	enum move_verdict verdict;
	enum move_from used;		/* where the entry time came from: unknown
					 * when the rule's stamp was missing or
					 * unreadable */
	int64_t entry_ms;		/* -1 when unknown */
	int64_t not_before_ms;		/* entry + TTL + rest; unknown: the
					 * earlier of seen and now, + TTL + rest */
	int64_t delay_ms;		/* a whole number of units, >= 0 */
	char why[200];			/* "" or why the stamp was not used /
					 * why the message is left */
};

/* The verdict names as results record them: "moved", "too_long",
 * "unknown_entry". */
const char *move_verdict_name(enum move_verdict v);

/* "timestamp", "header", "arrival", "death" or "unknown" (the plan's
 * words; "?" for another value). Defined by the plan loader
 * (plans/plan_move_old.c), from the table it reads those words with. */
const char *move_from_name(enum move_from f);

/* Decides for a message M of a queue under rule R at NOW_MS (epoch ms,
 * read before the message is republished). The entry time e is:
 * timestamp — the end of its second, (ts + 1) s, since the property
 * drops the fraction; header — its epoch milliseconds, or its RFC 3339
 * UTC time (old_time_parse); arrival — the broker's stamp as it is (a
 * broker's own clock, in ms); death — the end of the second of its newest
 * x-death entry, used only when its count is 1 (a message dead-lettered
 * from the same queue again keeps the first time there, which would be
 * too early); a missing or unreadable stamp, or one before
 * 2000, gives none, and then R->then is tried the same way; with none from
 * either it is unknown (WHY says why). Known: not before e + TTL (+ the
 * rule's rest, as everywhere below), and
 * the delay is that minus NOW rounded UP to whole units; a message
 * already due (e + TTL <= NOW) goes with delay 0, the ladder's shortest
 * path, never held back. Unknown: it entered no later than the moment it
 * was first seen in its queue (M->seen_ms, when set and before NOW), else
 * than NOW: not before that moment + TTL (never early, and late by at most
 * TTL), moved only when TTL <= R->unknown_max_lateness_ms. A delay beyond R->max_delay_ms is
 * MOVE_LEAVE_TOO_LONG. Returns 0 and fills OUT, or -1 for a rule that
 * is not usable (unit <= 0, TTL < 0) with OUT->why. */
int move_decide(const struct move_rule *r, const struct move_stamp *m,
    int64_t now_ms, struct move_decision *out);

#endif
