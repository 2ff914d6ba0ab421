/* backup_schedule: serve's scheduled backups (serve.yaml's backup:): a
 * thread of its own, with its own connection to the database, makes a
 * copy (store_backup: one read transaction, so the engine and the API go
 * on writing) every interval into the backup directory, checks it as
 * `cutover backup` does (store_backup_verify), removes one that does not
 * check, and keeps the newest KEEP checked copies. A copy that fails is
 * logged and counted, never stops serve; the next is tried at the next
 * interval. The figures of the process's schedule are what /metrics shows
 * (backup_schedule_figures). */
#ifndef CUTOVER_BACKUP_SCHEDULE_H
#define CUTOVER_BACKUP_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct backup_schedule;

/* What the schedule running in this process has done so far. */
struct backup_figures {
	int64_t interval_ms;
	int64_t age_ms;			/* since the last checked copy, or since
					 * the schedule began when none yet */
	int64_t last_success_ms;	/* wall clock of the last checked copy, 0 */
	int64_t failures;		/* copies that failed or did not check */
	int64_t last_duration_ms;	/* the last attempt's, checked or not; 0 */
	int64_t last_size;		/* bytes of the last checked copy; 0 */
	int64_t successes;		/* checked copies made */
};

/* Starts backing up the database DB_PATH into DIRECTORY every
 * INTERVAL_MS, keeping KEEP checked copies. Copies are named
 * NAME-YYYYMMDDTHHMMSSZ.db, NAME being the database file's name without
 * its extension (cutover.db: cutover-20250102T030405Z.db), so that they
 * sort by time and two databases may share a directory. The first copy
 * is made at once, unless the newest copy of that name in DIRECTORY is
 * younger than the interval: then it is made an interval after that one.
 * The database is opened before this returns (on the file the caller
 * locked). Returns 0 and *OUT to stop with backup_schedule_stop, or -1
 * with ERR. */
int backup_schedule_start(const char *db_path, const char *directory, int64_t interval_ms,
    int keep, struct backup_schedule **out, char *err, size_t errlen);

/* Stops the thread promptly (a copy in progress is interrupted and its
 * partial file removed), joins it, closes its connection and frees B
 * (NULL is fine). */
void backup_schedule_stop(struct backup_schedule *b);

/* Whether a schedule runs in this process; if so, its figures into *F. */
bool backup_schedule_figures(struct backup_figures *f);

#endif
