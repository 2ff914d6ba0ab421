/* file_read: a file read whole into memory, with a bound on its size
 * (file_read.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "errbuf.h"
#include "file_read.h"

int
file_read(const char *path, size_t max, char **out, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t n = 0, cap = 0, got;
	int rc = FILE_READ_OK, saved;

	*out = NULL;
	*len = 0;
	if (f == NULL)
		return FILE_READ_EOPEN;
	for (;;) {
		if (n == cap) {
			if (cap > max) {
				rc = FILE_READ_EBIG;
				goto done;
			}
			cap = cap ? cap * 2 : 4096;
			if (cap > max + 1)
				cap = max + 1;	/* one byte past the bound tells */
			if ((nb = realloc(buf, cap + 1)) == NULL) {
				rc = FILE_READ_ENOMEM;
				goto done;
			}
			buf = nb;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (got == 0)
			break;
	}
	if (ferror(f))
		rc = FILE_READ_EREAD;
	else if (n > max)
		rc = FILE_READ_EBIG;
	else if (buf == NULL && (buf = malloc(1)) == NULL)
		rc = FILE_READ_ENOMEM;
done:
	saved = errno;
	fclose(f);
	errno = saved;
	if (rc != FILE_READ_OK) {
		free(buf);
		return rc;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return FILE_READ_OK;
}

ERRBUF_NAME_FUNCTION(file_read_status_name, FILE_READ_MAP, "unknown")
