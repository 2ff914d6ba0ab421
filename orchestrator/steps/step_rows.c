/* step_rows: the elements of a run's long result list kept as their texts
 * in a temporary file, a row each, for the engine to write beside the
 * result (store_step_update_rows) instead of a tree of the whole list. */
#define _GNU_SOURCE		/* O_TMPFILE, mkostemp */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "step.h"

/* Opens ROWS's file: unnamed in $TMPDIR, else /var/tmp (on disk, where
 * /tmp may be memory), so that it is gone with the process whatever ends
 * it. Returns 0, or -1 with ROWS->err. */
static int
rows_open(struct step_rows *rows)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	int fd;

	if (dir == NULL || dir[0] == '\0')
		dir = "/var/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* A file system without unnamed files: a named one, unlinked. */
		if ((size_t)snprintf(path, sizeof(path), "%s/cutover-rows.XXXXXX", dir) <
		    sizeof(path) && (fd = mkostemp(path, O_CLOEXEC)) >= 0)
			unlink(path);
	}
	if (fd < 0 || (rows->f = fdopen(fd, "w+")) == NULL) {
		snprintf(rows->err, sizeof(rows->err), "cannot make a temporary file "
		    "for the result's rows in %s: %s", dir, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return 0;
}

int
step_rows_add_text(struct step_rows *rows, const char *name, const char *text)
{
	uint64_t *at;
	size_t cap, tlen, nlen;

	/* The row is keyed by its place; its name is for a reader of the
	 * table, and one without is kept as the whole result kept it. */
	if (name == NULL || name[0] == '\0')
		name = "(none)";
	if (rows->f == NULL && rows_open(rows) != 0)
		return -1;
	if (rows->n == rows->cap) {
		cap = rows->cap ? 2 * rows->cap : 64;
		if ((at = realloc(rows->at, cap * sizeof(*at))) == NULL) {
			snprintf(rows->err, sizeof(rows->err), "out of memory");
			return -1;
		}
		rows->at = at;
		rows->cap = cap;
	}
	tlen = strlen(text) + 1;
	nlen = strlen(name) + 1;
	if (fwrite(text, 1, tlen, rows->f) != tlen ||
	    fwrite(name, 1, nlen, rows->f) != nlen) {
		snprintf(rows->err, sizeof(rows->err), "cannot write the result's rows "
		    "to their temporary file: %s", strerror(errno));
		return -1;
	}
	rows->at[rows->n++] = rows->end;
	rows->end += tlen + nlen;
	rows->unflushed = true;
	return 0;
}

int
step_rows_add(struct step_rows *rows, const json_t *element)
{
	char *text = json_dumps(element, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_ENCODE_ANY);
	int rc;

	if (text == NULL) {
		snprintf(rows->err, sizeof(rows->err), "out of memory");
		return -1;
	}
	rc = step_rows_add_text(rows, json_string_value(json_object_get(element, "name")),
	    text);
	free(text);
	return rc;
}

int
step_rows_get(void *arg, size_t i, struct store_entry *out)
{
	struct step_rows *rows = arg;
	uint64_t len;
	size_t cap;
	ssize_t got;
	char *buf;

	if (i >= rows->n) {
		errno = ERANGE;
		return -1;
	}
	if (rows->unflushed) {
		if (fflush(rows->f) != 0)
			return -1;
		rows->unflushed = false;
	}
	len = (i + 1 < rows->n ? rows->at[i + 1] : rows->end) - rows->at[i];
	if (len > rows->bufcap) {
		cap = len > 2 * rows->bufcap ? len : 2 * rows->bufcap;
		if ((buf = realloc(rows->buf, cap)) == NULL)
			return -1;
		rows->buf = buf;
		rows->bufcap = cap;
	}
	for (uint64_t off = 0; off < len; off += (uint64_t)got) {
		got = pread(fileno(rows->f), rows->buf + off, len - off,
		    (off_t)(rows->at[i] + off));
		if (got < 0 && errno == EINTR)
			got = 0;
		else if (got <= 0) {
			if (got == 0)
				errno = EIO;	/* shorter than was written */
			return -1;
		}
	}
	/* Both texts end with their NUL, the row with the name's. */
	if (rows->buf[len - 1] != '\0' || memchr(rows->buf, '\0', len - 1) == NULL) {
		errno = EIO;
		return -1;
	}
	out->json = rows->buf;
	out->name = rows->buf + strlen(rows->buf) + 1;
	out->ord = (int64_t)i;
	return 0;
}

store_entry_fn
step_rows_source(const struct step_rows *rows, bool kept)
{
	return kept && rows->n == 0 ? NULL : step_rows_get;
}

void
step_rows_clear(struct step_rows *rows)
{
	if (rows->f != NULL)
		fclose(rows->f);
	free(rows->at);
	free(rows->buf);
	*rows = (struct step_rows){ 0 };
}

int
step_rows_put(struct step_rows *rows, json_t *list, json_t *element)
{
	int rc;

	if (element == NULL) {
		if (rows != NULL)
			snprintf(rows->err, sizeof(rows->err), "out of memory");
		return -1;
	}
	if (rows == NULL)
		return json_array_append_new(list, element);
	rc = step_rows_add(rows, element);
	json_decref(element);
	return rc;
}
