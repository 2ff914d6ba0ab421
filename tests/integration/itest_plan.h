/* itest_plan: the one builder of the plan files the integration tests
 * write: the plan's name and the broker block of the test's node, then
 * whatever sections the test wants, written to a file for `cutover run`,
 * `submit` or serve to read. */
#ifndef CUTOVER_ITEST_PLAN_H
#define CUTOVER_ITEST_PLAN_H

#include <stddef.h>

#define ITEST_PLAN_MAX 8192

/* A plan's YAML as it is built: TEXT holds LEN bytes, NUL-terminated. */
struct itest_plan {
	char text[ITEST_PLAN_MAX];
	size_t len;
};

/* Starts B with "name: NAME" and the broker block of the test's node
 * (itest_broker_yaml: AMQP, or CUTOVER_TEST_AMQP when NULL, the
 * management URL, the user and password env:CUTOVER_TEST_PASSWORD);
 * fails the test when that environment is missing. */
void itest_plan_begin(struct itest_plan *b, const char *name, const char *amqp);

/* Appends FMT (printf-style) to B; fails the test when it does not fit. */
void itest_plan_addf(struct itest_plan *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Appends the flag section of an Unleash flag to B: FEATURE of project
 * default in environment production at URL (NULL: the test Unleash,
 * CUTOVER_TEST_UNLEASH_URL), its admin token env:CUTOVER_TEST_UNLEASH_TOKEN.
 * The caller may add more of the section (settle) after it. Fails the test
 * when URL is NULL and CUTOVER_TEST_UNLEASH_URL is not set. */
void itest_plan_unleash_flag(struct itest_plan *b, const char *url, const char *feature);

/* Writes B's text to PATH (created or replaced); fails the test when it
 * cannot. */
void itest_plan_write(const struct itest_plan *b, const char *path);

#endif
