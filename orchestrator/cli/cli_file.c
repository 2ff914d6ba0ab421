/* cli_file: the files a verb reads: a plan (loaded and validated, its
 * errors printed), a file read whole (a message body, an export), with
 * a bound on its size, and a database that must already be there. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli.h"
#include "errbuf.h"
#include "file_read.h"
#include "plan.h"
#include "store.h"

int
cli_read_file(const char *path, const char *what, size_t max, char **out, size_t *len,
    char *err, size_t errlen)
{
	int rc = file_read(path, max, out, len);

	if (rc == FILE_READ_EBIG)
		errbuf_set(err, errlen, "%s: larger than %zu bytes", what, max);
	else if (rc != FILE_READ_OK)
		errbuf_set(err, errlen, "%s: %s", what, file_read_strerror(rc));
	return rc == FILE_READ_OK ? 0 : -1;
}

void
cli_plan_errors(struct plan_errors *errs)
{
	char line[512];

	for (size_t i = 0; i < errs->n; i++)
		fprintf(stderr, "%s\n", plan_error_format(errs, i, line, sizeof(line)));
	plan_errors_free(errs);
}

struct plan *
cli_load_plan(const char *path)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;

	if (plan_load_file(path, &p, &errs) != 0)
		cli_plan_errors(&errs);
	plan_errors_free(&errs);
	return p;
}

int
cli_store_open_existing(const char *db, struct store **out, char *err, size_t errlen)
{
	*out = NULL;
	if (access(db, F_OK) != 0) {
		errbuf_set(err, errlen, "%s does not exist: give the database cutover serve or "
		    "cutover run uses (--db FILE), or talk to a server without --db", db);
		return -1;
	}
	return store_open(db, out, err, errlen);
}
