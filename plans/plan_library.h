/* plan_library: the shapes of the old path that client libraries make
 * (old.library): which queues a library declares for its delays, where
 * they dead-letter, whether they expire, and where their messages say
 * when they entered — one row per library, each with one row per kind of
 * delay queue it makes. A plan that names a library gets its selection
 * (old.queues.match) and its move_old.entry rules from the row unless it
 * writes those keys itself; `cutover check` prints what the row implies.
 * Expiring queues need nothing of the row: measure_horizon accepts a
 * classic queue whose expiry is no shorter than its TTL, as every expiring
 * library's is, and refuses a quorum one, which RabbitMQ deletes with its
 * messages whatever the library does. */
#ifndef CUTOVER_PLAN_LIBRARY_H
#define CUTOVER_PLAN_LIBRARY_H

#include <stdbool.h>
#include <stddef.h>

#define PLAN_LIBRARY_KINDS_MAX 2

/* One kind of delay queue a library declares. */
struct plan_library_kind {
	const char *what;          /* "delay queue", "retry queue" */
	const char *shape;         /* its name, as the library builds it */
	const char *match;         /* PCRE2 over queue names taking exactly those */
	const char *dead_letter;   /* where its messages go when they expire */
	bool dead_letter_key;      /* it sets x-dead-letter-routing-key (else a
	                            * message keeps its own routing key) */
	const char *expiry;        /* its x-expires, or NULL: none */
	int from, then;            /* move_old's entry sources, in order (enum
	                            * move_from; then MOVE_FROM_UNKNOWN: none) */
	bool stamp_kept;           /* a message keeps the timestamp property of
	                            * an earlier publish here: `from: timestamp`
	                            * would be early, and is refused */
	const char *trust;         /* how far those sources are trusted, and why */
};

struct plan_library {
	const char *name;          /* as old.library writes it */
	const char *title;         /* the library, and the versions read */
	size_t nkinds;
	struct plan_library_kind kinds[PLAN_LIBRARY_KINDS_MAX];
};

/* The row named NAME, or NULL. */
const struct plan_library *plan_library_find(const char *name);

/* Writes the libraries' names as "a, b, c or d" into OUT. Returns OUT. */
char *plan_library_names(char *out, size_t outlen);

/* Writes L's selection, its kinds' patterns as one alternation, into OUT.
 * Returns 0, or -1 when OUT is too small. */
int plan_library_match(const struct plan_library *l, char *out, size_t outlen);

/* The kind of L whose pattern takes queue NAME, or NULL (also when a
 * pattern cannot decide). */
const struct plan_library_kind *plan_library_kind_of(const struct plan_library *l,
    const char *name);

/* Whether entry source FROM may be used for queue NAME under library L
 * (NULL: any). False, with WHY, for `timestamp` on a kind whose messages
 * keep an earlier publish's timestamp (it would move them early). */
bool plan_library_allows(const struct plan_library *l, const char *name, int from,
    char *why, size_t whylen);

#endif
