/* cli_file: the files a verb reads: a plan (loaded and validated, its
 * errors printed) and a file read whole (a message body, an export), with
 * a bound on its size. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "plan.h"

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

struct plan *
cli_load_plan(const char *path)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char line[512];

	if (plan_load_file(path, &p, &errs) != 0)
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
	plan_errors_free(&errs);
	return p;
}
