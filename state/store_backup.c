/* store_backup: a consistent copy of the database while serve or run
 * holds it, and the copy's check. VACUUM INTO reads the whole database in
 * one read transaction (with WAL, writers go on meanwhile: neither the
 * engine nor the API waits) and writes a compact new file; it is written
 * beside OUT and linked into place over nothing, so that a copy is either
 * whole or absent. The check is the one `cutover backup` and serve's
 * scheduled backups both make: what a restore needs of the copy. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "errbuf.h"
#include "store.h"
#include "store_int.h"

/* Forces FILE's bytes to the disk. Returns 0, or -1 with errno. */
static int
sync_file(const char *file)
{
	int fd = open(file, O_RDONLY), rc;

	if (fd < 0)
		return -1;
	rc = fsync(fd);
	close(fd);
	return rc;
}

int
store_backup(struct store *s, const char *out, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	char *tmp = NULL;
	int rc = -1;

	if (access(out, F_OK) == 0) {
		errbuf_set(err, errlen, "%s exists: a backup never replaces a file", out);
		return -1;
	}
	if ((tmp = malloc(strlen(out) + 16)) == NULL) {
		errbuf_set(err, errlen, "backing up: out of memory");
		return -1;
	}
	snprintf(tmp, strlen(out) + 16, "%s.partial", out);
	(void)unlink(tmp);
	if (store__prepare(s, "VACUUM INTO ?1", &st, "backing up", err, errlen) != 0)
		goto done;
	sqlite3_bind_text(st, 1, tmp, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE) {
		/* Not store__dberr: a full disk here is the copy's, and must
		 * not be taken for the database's (held plans, /healthz 503). */
		errbuf_set(err, errlen, "backing up (VACUUM INTO %s): %s", tmp,
		    sqlite3_errmsg(s->db));
		goto done;
	}
	if (sync_file(tmp) != 0) {
		errbuf_set(err, errlen, "backing up: syncing %s: %s", tmp, strerror(errno));
		goto done;
	}
	/* link() fails on an OUT made meanwhile, where rename() would
	 * replace it. */
	if (link(tmp, out) != 0) {
		errbuf_set(err, errlen, "backing up: naming the copy %s: %s", out,
		    strerror(errno));
		goto done;
	}
	rc = 0;
done:
	sqlite3_finalize(st);
	if (tmp != NULL)
		(void)unlink(tmp);
	free(tmp);
	return rc;
}

int
store_backup_verify(struct store *c, const char *path, char *err, size_t errlen)
{
	struct store_verify v = { 0 };

	if (store_integrity(c, path, true, err, errlen) != 0 ||
	    store_verify_events(c, &v, err, errlen) != 0)
		return -1;
	if (!v.verified) {
		errbuf_set(err, errlen, "the copy's history does not verify: %s", v.reason);
		return -1;
	}
	return 0;
}
