/* export: one plan's history as a document that can be checked offline —
 * JSON or CSV, served by GET /api/plans/{plan}/export and downloaded from
 * the page; `cutover history --verify FILE` checks it (export_verify.c).
 *
 * The export carries the plan (its YAML and the YAML's sha256), every
 * event of the chain from the plan's first to the chain's end in order —
 * the plan's own with their exact content (details_json as hashed), the
 * other plans' as links (id, prev_hash, hash) — and the chain head (how
 * many events, the last one's id and hash). Every plan shares one chain,
 * so the links are what lets an offline check see that nothing was taken
 * out between two of the plan's events, and the head what shows that the
 * tail was not cut.
 *
 * Each event also carries two derived fields, checked too: time_utc (its
 * ts_ms as ISO 8601 UTC with milliseconds) and step (export_step_of). */
#ifndef CUTOVER_EXPORT_H
#define CUTOVER_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "store.h"

#define EXPORT_FORMAT	"cutover.history"
#define EXPORT_VERSION	1
#define EXPORT_TIME_MAX	32	/* "2026-12-01T16:15:08.123Z" and a NUL */

/* The CSV columns, in order (RFC 4180, CRLF line ends, header first). A
 * row's record is plan (id: the plan's id, kind: its name, actor: its
 * status, details_json: the YAML, hash: the YAML's sha256), event, link
 * (id, prev_hash, hash only) or head (id: the last event's, details_json:
 * the count of events, hash: the last event's, ts_ms: when exported). */
#define EXPORT_CSV_HEADER \
	"record,id,plan_id,ts_ms,time_utc,step,actor,kind,details_json,prev_hash,hash"

/* Spreadsheets run a cell that begins with one of these as a formula
 * (`=HYPERLINK(…)`, `@SUM(…)`, a tab or CR before one): a CSV value that
 * begins with one is written with EXPORT_CSV_GUARD, a single quote, before
 * it — shown as text, never run. So that the guard can be taken off
 * exactly, a value that begins with the guard itself gets one too: a CSV
 * cell that begins with the guard followed by one of these or by the
 * guard lost that first quote when read (export_verify.c), and only then.
 * JSON exports carry every value as it is. */
#define EXPORT_CSV_FORMULA	"=+-@\t\r"
#define EXPORT_CSV_GUARD	'\''

/* Whether the CSV export writes S (N bytes) with EXPORT_CSV_GUARD before
 * it: it begins with one of EXPORT_CSV_FORMULA or with the guard. */
bool export_csv_guarded(const char *s, size_t n);

/* MS since the epoch as "YYYY-MM-DDTHH:MM:SS.mmmZ" into OUT. */
void export_time_utc(int64_t ms, char out[EXPORT_TIME_MAX]);

/* The step (1-based) the event KIND with DETAILS_JSON belongs to, given
 * *CURRENT (the step the plan was at before it; 0 for none), which it
 * moves on: an event naming a step ("step" in its details) belongs to
 * it, and a step.* event naming one (but step.approved_ahead) makes it
 * the current step; plan.* and request.* events belong to the plan (0);
 * any other to the current step. */
int export_step_of(const char *kind, const char *details_json, int *current);

/* Plan ID's export as a JSON document (the caller owns *OUT). Returns 0,
 * 1 when there is no such plan, -1 with ERR. */
int export_build(struct store *s, int64_t id, json_t **out, char *err, size_t errlen);

/* DOC (from export_build) as CSV into *TEXT (malloc'ed, *LEN bytes).
 * Returns 0, or -1 with ERR. */
int export_csv(const json_t *doc, char **text, size_t *len, char *err, size_t errlen);

#endif
