/* alert_kinds: the table of alert kinds (alert_kinds.def) — what each
 * means, how to check and clear it, and whether the engine closes it by
 * itself — for the engine, the API, the CLI, the notifications and the
 * docs alike. Pure: no I/O. */
#ifndef CUTOVER_ALERT_KINDS_H
#define CUTOVER_ALERT_KINDS_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the engine closes an alert of a kind by itself (the CLOSES
 * column of alert_kinds.def). */
enum alert_closes {
	ALERT_CLOSES_NEVER,	/* one occurrence: a person acknowledges it */
	ALERT_CLOSES_SELF,	/* once the engine sees its cause gone */
	ALERT_CLOSES_FOLLOWED,	/* the engine follows its cause (still
				 * there, gone) and a person acknowledges
				 * it */
};

struct alert_kind {
	const char *name;
	enum alert_closes closes;
	const char *means, *check, *clear;
};

/* The row of kind NAME, or NULL when the table has none (a borrowed,
 * static row). */
const struct alert_kind *alert_kind_find(const char *name);

/* Row I of the table, or NULL past its end: a walk in the table's order. */
const struct alert_kind *alert_kind_at(size_t i);

/* Does the engine look for the cause of alert kind NAME, so that it can
 * say whether it is still there (a kind that closes by itself, or after an
 * acknowledgement)? False for a kind the table does not have. */
bool alert_kind_tracks_cause(const char *name);

/* The sentence that says how an alert of CLOSES ends, for the docs, the
 * CLI's help and the notifications (a static string). */
const char *alert_closes_text(enum alert_closes closes);

/* Writes into BUF (LEN bytes) the sentence that says an alert of kind K
 * (its id ID) acknowledged while its cause is still there returns until
 * the cause is cleared, and how to clear it: what the ack's answer, the
 * engine's outcome and the CLI say alike. Returns BUF. */
char *alert_still_there(const struct alert_kind *k, long long id, char *buf, size_t len);

#endif
