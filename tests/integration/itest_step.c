/* itest_step: a test's plan loaded and its steps run by hand, failing the
 * test with the errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "itest_step.h"

struct plan *
itest_plan_load(const char *yaml)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char line[512];

	if (plan_load_buffer("itest.yaml", yaml, strlen(yaml), &p, &errs) != 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
		plan_errors_free(&errs);
		fail_msg("test plan does not load");
	}
	return p;
}

void
itest_ctx_open(struct step_ctx *c, const struct plan *p)
{
	char err[1024];

	if (step_ctx_open(c, p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

void
itest_step_ok(step_fn fn, struct step_ctx *c)
{
	json_t *r = NULL;
	char err[2048];

	if (fn(c, &r, err, sizeof(err)) != 0) {
		char *s = json_dumps(r, JSON_COMPACT);

		fprintf(stderr, "step failed: %s\n%s\n", err, s ? s : "");
		free(s);
		json_decref(r);
		fail();
	}
	json_decref(r);
}
