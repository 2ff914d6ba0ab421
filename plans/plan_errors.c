/* plan_errors: the plan loader's error list (struct plan_errors, plan.h):
 * adding an error at a line and column, its "FILE:LINE:COLUMN: message"
 * form, freeing the list. A leaf: everything that reports a plan or
 * serve.yaml error calls it, and it calls nothing of theirs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

void
plan_errors_free(struct plan_errors *errs)
{
	if (errs == NULL)
		return;
	free(errs->file);
	free(errs->v);
	memset(errs, 0, sizeof(*errs));
}

int
plan_errors_add(struct plan_errors *errs, int line, int column, const char *fmt, ...)
{
	struct plan_error *e, *v;
	size_t cap;
	va_list ap;

	if (errs == NULL)
		return -1;
	if (errs->n == errs->cap) {
		cap = errs->cap ? errs->cap * 2 : 8;
		if ((v = realloc(errs->v, cap * sizeof(*v))) == NULL)
			return -1;
		errs->v = v;
		errs->cap = cap;
	}
	e = &errs->v[errs->n++];
	e->line = line;
	e->column = column;
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return 0;
}

char *
plan_error_format(const struct plan_errors *errs, size_t i, char *out, size_t outlen)
{
	const struct plan_error *e;
	const char *file;

	if (out == NULL || outlen == 0)
		return out;
	out[0] = '\0';
	if (errs == NULL || i >= errs->n)
		return out;
	e = &errs->v[i];
	file = errs->file != NULL ? errs->file : "(plan)";
	if (e->line > 0)
		snprintf(out, outlen, "%s:%d:%d: %s", file, e->line, e->column,
		    e->message);
	else
		snprintf(out, outlen, "%s: %s", file, e->message);
	return out;
}
