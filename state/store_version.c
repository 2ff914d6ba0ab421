/* store_version: the schema version a database file names, read from its
 * own bytes and its WAL's before SQLite opens it (store_int.h). SQLite
 * cannot be asked without changing the files: opening a database in WAL
 * mode recovers the WAL into the -shm, and closing the last connection
 * checkpoints the WAL into the database and removes it. A database a newer
 * cutover wrote, perhaps killed before its last checkpoint, is refused on
 * this reading, left as that version wrote it. The files are read through
 * SQLite's own VFS, not stdio: closing any descriptor of a file drops every
 * POSIX lock the process holds on it, those of this process's open
 * connections too (serve opens one per thread), and the VFS keeps such a
 * descriptor open until they are gone. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

#define DB_HEADER_LEN		100
#define DB_USER_VERSION_AT	60	/* in the header: 4 bytes, big-endian */
#define WAL_HEADER_LEN		32
#define WAL_FRAME_HEADER_LEN	24
#define WAL_MAGIC_LE		0x377f0682u	/* the checksums' byte order */
#define WAL_MAGIC_BE		0x377f0683u

/* The 4 bytes at P, big-endian. */
static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads N bytes at OFFSET of F into BUF. Returns whether all N were there. */
static bool
read_at(sqlite3_file *f, sqlite3_int64 offset, unsigned char *buf, int n)
{
	return f->pMethods->xRead(f, buf, n, offset) == SQLITE_OK;
}

/* Opens NAME (a name sqlite3_create_filename made, or its WAL's), of KIND
 * (SQLITE_OPEN_MAIN_DB or SQLITE_OPEN_WAL), read-only through VFS into *F
 * (NULL when it does not exist). Returns 0, or -1 with ERR naming WHAT. */
static int
vfs_open(sqlite3_vfs *vfs, const char *name, int kind, sqlite3_file **f,
    const char *what, char *err, size_t errlen)
{
	int exists = 0, flags, rc;

	*f = NULL;
	if (vfs->xAccess(vfs, name, SQLITE_ACCESS_EXISTS, &exists) != SQLITE_OK) {
		errbuf_set(err, errlen, "reading %s: cannot tell whether it exists", what);
		return -1;
	}
	if (!exists)
		return 0;
	if ((*f = sqlite3_malloc(vfs->szOsFile)) == NULL) {
		errbuf_set(err, errlen, "reading %s: out of memory", what);
		return -1;
	}
	memset(*f, 0, (size_t)vfs->szOsFile);
	rc = vfs->xOpen(vfs, name, *f, SQLITE_OPEN_READONLY | kind, &flags);
	if (rc != SQLITE_OK) {
		if ((*f)->pMethods != NULL)
			(*f)->pMethods->xClose(*f);
		sqlite3_free(*f);
		*f = NULL;
		errbuf_set(err, errlen, "reading %s: %s", what, sqlite3_errstr(rc));
		return -1;
	}
	return 0;
}

/* Closes F (may be NULL) as vfs_open opened it. */
static void
vfs_close(sqlite3_file *f)
{
	if (f == NULL)
		return;
	f->pMethods->xClose(f);
	sqlite3_free(f);
}

/* Raises *VERSION to each user_version the WAL F holds: in every frame of
 * page 1 of its current generation (the salts of its header), committed or
 * not, for only a cutover that wrote that version writes it. A WAL that is
 * empty or not one holds none. */
static void
wal_versions(sqlite3_file *f, int64_t *version)
{
	unsigned char head[WAL_HEADER_LEN], frame[WAL_FRAME_HEADER_LEN];
	unsigned char page_head[DB_HEADER_LEN];
	uint32_t magic, page_size;
	sqlite3_int64 at;
	int64_t v;

	if (!read_at(f, 0, head, sizeof(head)))
		return;	/* empty: a WAL reset, or never written */
	magic = be32(head);
	page_size = be32(head + 8);
	if ((magic != WAL_MAGIC_LE && magic != WAL_MAGIC_BE) || page_size < 512 ||
	    page_size > 65536 || (page_size & (page_size - 1)) != 0)
		return;
	for (at = WAL_HEADER_LEN; read_at(f, at, frame, sizeof(frame));
	    at += WAL_FRAME_HEADER_LEN + (sqlite3_int64)page_size) {
		/* A frame of an earlier generation, left past the end of the
		 * current one, has the salts of that one. */
		if (memcmp(frame + 8, head + 16, 8) != 0 || be32(frame) != 1)
			continue;
		if (!read_at(f, at + WAL_FRAME_HEADER_LEN, page_head, sizeof(page_head)))
			break;
		v = (int32_t)be32(page_head + DB_USER_VERSION_AT);
		if (v > *version)
			*version = v;
	}
}

int
store__file_version(const char *path, int64_t *version, char *err, size_t errlen)
{
	static const char magic[] = "SQLite format 3";
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
	sqlite3_filename name = NULL;
	sqlite3_file *db = NULL, *wal = NULL;
	unsigned char head[DB_HEADER_LEN];
	char what[64 + 4096], journal[4096 + 16], wal_path[4096 + 16];
	int rc = -1;

	*version = 0;
	snprintf(what, sizeof(what), "database %s", path);
	if ((size_t)snprintf(journal, sizeof(journal), "%s-journal", path) >= sizeof(journal) ||
	    (size_t)snprintf(wal_path, sizeof(wal_path), "%s-wal", path) >= sizeof(wal_path)) {
		errbuf_set(err, errlen, "reading %s: the path is too long", what);
		goto done;
	}
	if (vfs == NULL || (name = sqlite3_create_filename(path, journal, wal_path, 0,
	    NULL)) == NULL) {
		errbuf_set(err, errlen, "reading %s: %s", what, vfs == NULL ?
		    "SQLite has no VFS" : "out of memory");
		goto done;
	}
	if (vfs_open(vfs, name, SQLITE_OPEN_MAIN_DB, &db, what, err, errlen) != 0)
		goto done;
	/* Absent (a new database), or not a database (or not yet one):
	 * open_file says which. */
	if (db == NULL || !read_at(db, 0, head, sizeof(head)) ||
	    memcmp(head, magic, sizeof(magic)) != 0) {
		rc = 0;
		goto done;
	}
	*version = (int32_t)be32(head + DB_USER_VERSION_AT);
	snprintf(what, sizeof(what), "the write-ahead log of database %s", path);
	if (vfs_open(vfs, sqlite3_filename_wal(name), SQLITE_OPEN_WAL, &wal, what, err,
	    errlen) != 0)
		goto done;
	if (wal != NULL)
		wal_versions(wal, version);
	rc = 0;
done:
	vfs_close(wal);
	vfs_close(db);
	sqlite3_free_filename(name);
	return rc;
}
