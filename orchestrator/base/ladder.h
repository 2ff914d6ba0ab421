/* ladder: the bounded binary delay ladder as pure functions (no I/O).
 *
 * Level k (0 <= k < L) is a topic exchange plus a queue with a per-queue TTL
 * of 2^k units, dead-lettering into level k-1 (level 0 into the delivery
 * exchange). A delay of n units is written as L bit words, most significant
 * first, then the destination: 42 units on 6 levels to email.delivery is
 * "1.0.1.0.1.0.email.delivery". See DESIGN.md §1 and §2. */
#ifndef CUTOVER_LADDER_H
#define CUTOVER_LADDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LADDER_MAX_LEVELS 32      /* routing keys stay short, units fit in 32 bits */
#define LADDER_NAME_MAX 256       /* AMQP short strings: exchange/queue names, keys */
#define LADDER_KEY_MAX 255        /* routing key limit, bytes */
#define LADDER_PREFIX_MAX 64

/* A naming style: the index of its row in the table of ladder_naming.c.
 * The enumerators name the rows code refers to, in table order. */
enum ladder_naming {
	LADDER_NAMING_CUTOVER,        /* P.level.NN, P.delivery, P.parking */
	LADDER_NAMING_KOMBU,          /* celery_delayed_K, celery_delayed_delivery */
	LADDER_NAMING_NSERVICEBUS     /* nsb.v2.delay-level-NN, nsb.v2.delay-delivery */
};

enum ladder_prefix_use {
	LADDER_PREFIX_NONE,           /* fixed names; a plan giving a prefix is refused */
	LADDER_PREFIX_REQUIRED,       /* every name is PREFIX, the joiner, then the name */
	LADDER_PREFIX_OPTIONAL        /* as REQUIRED when a prefix is given; without
	                               * one (or with ""), the names alone */
};

/* A naming style as data: one row of the table in ladder_naming.c. A
 * level's queue is named after its exchange, and the parking queue after
 * the parking exchange, in every style. */
struct ladder_style {
	const char *name;             /* ladder.naming in a plan, --naming */
	enum ladder_prefix_use prefix;
	const char *default_prefix;   /* a plan's or --prefix's default, if it takes one */
	const char *joiner;           /* between the prefix and each name */
	const char *level;            /* level K's exchange and queue: this, then K */
	int level_digits;             /* K zero padded to this many digits (0: as is) */
	const char *delivery;         /* the delivery exchange */
	const char *parking;          /* the parking exchange and queue */
	int fixed_levels;             /* 0: a plan chooses; else the only level count */
	int64_t fixed_unit_ms;        /* 0 with fixed_levels 0; else the only unit */
	const char *destination_word; /* destination binding: this word once per
	                               * level, then the destination ("*": the
	                               * exact word count, DESIGN.md §2) */
	bool library;                 /* a library declares this ladder itself
	                               * (DESIGN.md §3): its exchanges carry no
	                               * arguments, so the delivery exchange's
	                               * alternate exchange comes from a policy,
	                               * and its destination bindings (delivery
	                               * exchange -> an exchange of the
	                               * destination's, with "#.KEY") are valid */
	bool classic_overflow;        /* classic level queues carry x-overflow:
	                               * reject-publish too (Kombu's do) */
	bool quorum_only;             /* the library declares only quorum level
	                               * queues: a plan asking classic is refused */
	const char *producer_rounding; /* what the design review warns of the
	                               * library's producers' duration conversion,
	                               * or NULL */
	const char *producer_range;   /* ... of their out-of-range delays, or NULL */
};

struct ladder {
	enum ladder_naming naming;
	char prefix[LADDER_PREFIX_MAX + 1]; /* empty for a style without one */
	int64_t unit_ms;                    /* > 0 */
	int levels;                         /* 1 .. LADDER_MAX_LEVELS */
	int64_t limit_ms;                   /* 0: the ladder's own maximum; else
	                                     * a smaller one (a plan's
	                                     * max_delay) ladder_encode holds
	                                     * every delay to */
};

/* Returns the row of NAMING (static, never freed), or NULL if there is none. */
const struct ladder_style *ladder_style(enum ladder_naming naming);

/* Returns the naming style's name ("cutover", "kombu", "nservicebus"), or
 * "unknown" if NAMING has no row. */
const char *ladder_naming_name(enum ladder_naming naming);

/* Parses a naming style's name. Returns 0, or -1 if NAME is not one. */
int ladder_naming_parse(const char *name, enum ladder_naming *out);

/* Writes every style's name into OUT (OUTLEN bytes), in table order,
 * separated by SEP and the last one by LAST: (", ", " or ") gives
 * "cutover, kombu or nservicebus". Returns OUT, empty if it is too short. */
char *ladder_naming_list(const char *sep, const char *last, char *out, size_t outlen);

/* Levels needed to represent MAX_UNITS: ceil(log2(MAX_UNITS + 1)), at
 * least 1. Returns the count, or -1 if it exceeds LADDER_MAX_LEVELS. */
int ladder_levels_for(uint64_t max_units);

/* Fills L after checking every field: unit_ms > 0, levels in range, the
 * largest level TTL and the largest delay fit in int64 milliseconds, prefix
 * a valid name part for a style that requires one or takes one and is given
 * a non-empty one (for a style without, PREFIX is ignored). Levels and unit are not held to the style's fixed ones (the
 * plan loader does that). Returns 0 or -1 with ERR set. */
int ladder_init(struct ladder *l, enum ladder_naming naming, const char *prefix,
    int64_t unit_ms, int levels, char *err, size_t errlen);

/* Largest representable delay: 2^L - 1 units, or that many milliseconds. */
uint64_t ladder_max_units(const struct ladder *l);
int64_t ladder_max_delay_ms(const struct ladder *l);

/* Holds every delay ladder_encode accepts to LIMIT_MS (a plan's
 * max_delay), which must be 1 .. ladder_max_delay_ms. Returns 0, or -1
 * with ERR set (L unchanged). */
int ladder_set_limit(struct ladder *l, int64_t limit_ms, char *err, size_t errlen);

/* The largest delay ladder_encode accepts: the limit, or without one
 * ladder_max_delay_ms. -1 for a ladder that is not valid. */
int64_t ladder_limit_ms(const struct ladder *l);

/* Per-queue TTL of level K: 2^K units, in milliseconds. */
int64_t ladder_level_ttl_ms(const struct ladder *l, int k);

/* Converts DELAY_MS to units with ceiling (1200 ms on a 1 s ladder is 2).
 * Refuses a negative delay and one beyond ladder_limit_ms (the limit, or
 * ladder_max_units), never truncating. Returns 0 and stores *UNITS, or -1 with ERR set. */
int ladder_encode(const struct ladder *l, int64_t delay_ms, uint64_t *units,
    char *err, size_t errlen);

/* Level where a message of UNITS enters: its highest set bit, or -1 for
 * zero (it goes straight to the delivery exchange). */
int ladder_entry_level(uint64_t units);

/* Checks DEST as a destination routing suffix: one or more non-empty words
 * separated by '.', none containing '*' or '#', and the whole routing key
 * (2L + strlen(dest) bytes) at most LADDER_KEY_MAX. Returns 0 or -1. */
int ladder_check_destination(const struct ladder *l, const char *dest,
    char *err, size_t errlen);

/* Writes the routing key of UNITS to DEST into OUT (at least
 * LADDER_KEY_MAX + 1 bytes). Returns 0, or -1 with ERR set when UNITS is
 * out of range or DEST is invalid. */
int ladder_routing_key(const struct ladder *l, uint64_t units, const char *dest,
    char *out, size_t outlen, char *err, size_t errlen);

/* Inverse of ladder_routing_key: splits KEY into *UNITS and the destination
 * (copied to DEST, DESTLEN bytes). Refuses keys with fewer than L+1 words,
 * bit words other than "0"/"1", or an invalid destination. Returns 0 or -1. */
int ladder_parse_key(const struct ladder *l, const char *key, uint64_t *units,
    char *dest, size_t destlen, char *err, size_t errlen);

/* Object names. Each writes into OUT (LADDER_NAME_MAX bytes) and returns OUT. */
char *ladder_level_exchange(const struct ladder *l, int k, char *out, size_t outlen);
char *ladder_level_queue(const struct ladder *l, int k, char *out, size_t outlen);
char *ladder_delivery_exchange(const struct ladder *l, char *out, size_t outlen);
char *ladder_parking_exchange(const struct ladder *l, char *out, size_t outlen);
char *ladder_parking_queue(const struct ladder *l, char *out, size_t outlen);

/* Exchange a message of UNITS is published to: the level exchange of its
 * entry level, or the delivery exchange for zero. Returns OUT. */
char *ladder_entry_exchange(const struct ladder *l, uint64_t units, char *out, size_t outlen);

/* Exchange level K dead-letters into: level K-1, or the delivery exchange
 * for level 0. Returns OUT. */
char *ladder_dead_letter_exchange(const struct ladder *l, int k, char *out, size_t outlen);

/* Binding patterns. Each writes into OUT (LADDER_NAME_MAX bytes):
 *  level K queue <- level K exchange: "*." x (L-1-K), then "1.#";
 *  level K exchange -> next exchange: "*." x (L-1-K), then "0.#";
 *  destination queue <- delivery exchange: the style's destination word
 *  and "." x L, then DEST ("*." x L: the exact word count, so "x.dest"
 *  never catches "dest"). Return OUT. */
char *ladder_wait_pattern(const struct ladder *l, int k, char *out, size_t outlen);
char *ladder_bypass_pattern(const struct ladder *l, int k, char *out, size_t outlen);
char *ladder_destination_pattern(const struct ladder *l, const char *dest, char *out, size_t outlen);

#endif
