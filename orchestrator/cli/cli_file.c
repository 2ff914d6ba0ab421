/* cli_file: a file a verb reads whole (a message body, an export), with a
 * bound on its size. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"

int
cli_read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
    char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0, cap = 0, got;
	int rc = -1;

	*out = NULL;
	*len = 0;
	if (f == NULL) {
		snprintf(err, errlen, "%s: cannot open it", what);
		return -1;
	}
	for (;;) {
		if (n == cap) {
			char *nb;

			if (cap >= max) {
				snprintf(err, errlen, "%s: larger than %zu bytes", what, max);
				goto done;
			}
			cap = cap ? cap * 2 : 4096;
			if ((nb = realloc(buf, cap + 1)) == NULL) {
				snprintf(err, errlen, "%s: out of memory", what);
				goto done;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", what);
		goto done;
	}
	if (buf == NULL && (buf = malloc(1)) == NULL) {
		snprintf(err, errlen, "%s: out of memory", what);
		goto done;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
	rc = 0;
done:
	free(buf);
	fclose(f);
	return rc;
}
