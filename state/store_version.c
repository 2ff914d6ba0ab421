/* store_version: the schema version a database file names, read from its
 * own bytes and its WAL's before SQLite opens it (store_int.h). SQLite
 * cannot be asked without changing the files: opening a database in WAL
 * mode recovers the WAL into the -shm, and closing the last connection
 * checkpoints the WAL into the database and removes it. A database a newer
 * cutover wrote, perhaps killed before its last checkpoint, is refused on
 * this reading, left as that version wrote it. */
#include <errno.h>
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

static uint32_t
be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Reads N bytes at OFFSET of F into BUF. Returns whether all N were there. */
static bool
read_at(FILE *f, long offset, unsigned char *buf, size_t n)
{
	return fseek(f, offset, SEEK_SET) == 0 && fread(buf, 1, n, f) == n;
}

/* Raises *VERSION to each user_version the WAL at WAL_PATH holds: in
 * every frame of page 1 of its current generation (the salts of its
 * header), committed or not, for only a cutover that wrote that version
 * writes it. A WAL that is absent, empty or not one holds none. Returns
 * 0, or -1 with ERR when it cannot be read. */
static int
wal_versions(const char *wal_path, int64_t *version, char *err, size_t errlen)
{
	unsigned char head[WAL_HEADER_LEN], frame[WAL_FRAME_HEADER_LEN];
	unsigned char page_head[DB_HEADER_LEN];
	FILE *f = fopen(wal_path, "rb");
	uint32_t magic, page_size;
	int64_t v;
	long at;

	if (f == NULL) {
		if (errno == ENOENT)
			return 0;
		errbuf_set(err, errlen, "reading %s: %s", wal_path, strerror(errno));
		return -1;
	}
	if (!read_at(f, 0, head, sizeof(head)))
		goto done;	/* empty: a WAL reset, or never written */
	magic = be32(head);
	page_size = be32(head + 8);
	if ((magic != WAL_MAGIC_LE && magic != WAL_MAGIC_BE) || page_size < 512 ||
	    page_size > 65536 || (page_size & (page_size - 1)) != 0)
		goto done;
	for (at = WAL_HEADER_LEN; read_at(f, at, frame, sizeof(frame));
	    at += WAL_FRAME_HEADER_LEN + (long)page_size) {
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
done:
	fclose(f);
	return 0;
}

int
store__file_version(const char *path, int64_t *version, char *err, size_t errlen)
{
	static const char magic[] = "SQLite format 3";
	unsigned char head[DB_HEADER_LEN];
	char wal_path[4096];
	FILE *f;
	bool whole;

	*version = 0;
	if ((f = fopen(path, "rb")) == NULL) {
		if (errno == ENOENT)
			return 0;	/* a new database */
		errbuf_set(err, errlen, "opening database %s: %s", path, strerror(errno));
		return -1;
	}
	whole = read_at(f, 0, head, sizeof(head));
	fclose(f);
	/* Not a database (or not yet one): open_file says which. */
	if (!whole || memcmp(head, magic, sizeof(magic)) != 0)
		return 0;
	*version = (int32_t)be32(head + DB_USER_VERSION_AT);
	if ((size_t)snprintf(wal_path, sizeof(wal_path), "%s-wal", path) >=
	    sizeof(wal_path)) {
		errbuf_set(err, errlen, "opening database %s: the path is too long", path);
		return -1;
	}
	return wal_versions(wal_path, version, err, errlen);
}
