/* itest_step: loading a test's plan and running steps by hand, as the
 * integration tests that drive the steps directly do, failing the test
 * with what went wrong. */
#ifndef CUTOVER_ITEST_STEP_H
#define CUTOVER_ITEST_STEP_H

#include <stddef.h>

#include "plan.h"
#include "step.h"

/* Loads the plan YAML (named "itest.yaml" in errors). Returns it (free
 * with plan_free); fails the test, printing every error, when it does not
 * load. */
struct plan *itest_plan_load(const char *yaml);

/* Opens C's broker connection and management handle for plan P; fails the
 * test when it cannot. Close with step_ctx_close. */
void itest_ctx_open(struct step_ctx *c, const struct plan *p);

/* Runs step FN on C; fails the test, printing the error and the step's
 * result, unless it succeeds. */
void itest_step_ok(step_fn fn, struct step_ctx *c);

#endif
