/* pt: the plan tests' plan texts — a valid plan the tests change a line
 * of, the edits that change it, and loading a text that must be valid or
 * must fail with a given error. */
#ifndef CUTOVER_TEST_PT_H
#define CUTOVER_TEST_PT_H

#include "plan.h"

/* The broker section of the unit tests' plans (lines 2 to 6 of
 * pt_base_plan): a local node, user guest, the password by reference;
 * nothing connects to it. */
#define PT_BROKER \
	"broker:\n" \
	"  amqp: amqp://127.0.0.1:5672/%2f\n" \
	"  management: http://127.0.0.1:15672\n" \
	"  username: guest\n" \
	"  password: env:RABBIT_PASSWORD\n"

/* A valid plan the tests change one line of; each line's number is noted
 * beside it, for the positions the errors name. */
extern const char pt_base_plan[];

/* pt_base_plan's flag section (lines 13 to 19). */
extern const char pt_unleash_flag[];

/* TEXT with the first FROM replaced by TO; the test fails if FROM is not
 * there. The caller frees the result. */
char *pt_subst(const char *text, const char *from, const char *to);

/* Replaces *TEXT (malloc'ed) by pt_subst(*TEXT, FROM, TO). */
void pt_edit(char **text, const char *from, const char *to);

/* plan_load_buffer on TEXT as the file "t.yaml": returns its code. */
int pt_load(const char *text, struct plan **p, struct plan_errors *errs);

/* Prints every error of ERRS, indented, through cmocka. */
void pt_print_errors(const struct plan_errors *errs);

/* Whether ERRS has an error at LINE:COLUMN whose message contains TEXT. */
int pt_has_error(const struct plan_errors *errs, int line, int column, const char *text);

/* Loads TEXT, which must fail with an error at LINE:COLUMN containing MSG. */
void pt_expect_error(const char *text, int line, int column, const char *msg);

/* TEXT must fail to load, with no plan and exactly N errors, into ERRS
 * (the caller checks them and frees ERRS); otherwise the test fails,
 * listing the errors there are. */
void pt_expect_n_errors(const char *text, struct plan_errors *errs, size_t n);

/* pt_base_plan with the first FROM replaced by TO, which must fail to
 * load with an error at LINE:COLUMN containing MSG. */
void pt_expect_edit_error(const char *from, const char *to, int line, int column,
    const char *msg);

/* Loads TEXT, which must be valid. The caller frees the plan. */
struct plan *pt_expect_valid(const char *text);

#endif
