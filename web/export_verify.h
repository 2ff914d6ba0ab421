/* export_verify: the offline check of an export (export.h), JSON or CSV,
 * needing nothing but the file: it recomputes each of the plan's events'
 * hashes, follows the chain through the links, and checks that it ends at
 * the recorded head; `cutover history --verify FILE` prints its answer.
 *
 * What it proves: the file is what the server exported, unless whoever
 * changed it also recomputed every hash after the change and the head —
 * compare the head's hash with the server's (`cutover history --db FILE
 * --verify` prints it) to rule that out too. */
#ifndef CUTOVER_EXPORT_VERIFY_H
#define CUTOVER_EXPORT_VERIFY_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#include "store.h"

#define EXPORT_FILE_MAX	(512L * 1024 * 1024)	/* largest export read */

struct export_check {
	char format[8];			/* "json" or "csv" */
	int64_t plan_id;
	char plan_name[65];
	int64_t plan_events, links;	/* rows checked of each kind */
	int64_t head_events, head_id;
	char head_hash[STORE_HASH_HEX];
	int64_t bad_id;			/* the first event that fails, or 0 */
	long line;			/* CSV: the line it is on; JSON: 0 */
	char reason[320];		/* why it fails; "" when it verifies */
	bool verified;			/* the export verifies */
};

/* Checks the export TEXT (LEN bytes; JSON when it starts with '{' after
 * blanks, else CSV). Returns 0 with RES->verified true when it verifies,
 * false when it does not (RES says which event first and why, or what is
 * malformed); -1 out of memory with ERR. */
int export_verify(const char *text, size_t len, struct export_check *res,
    char *err, size_t errlen);

#endif
