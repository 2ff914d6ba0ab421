/* itest_unleash: what the tests that turn a plan's flag behind its back
 * share — creating, switching and deleting a feature of their own in the
 * test Unleash (CUTOVER_TEST_UNLEASH_URL, admin token
 * CUTOVER_TEST_UNLEASH_TOKEN, project default, environment production),
 * through its admin API. Each fails the test when the call fails. */
#ifndef CUTOVER_ITEST_UNLEASH_H
#define CUTOVER_ITEST_UNLEASH_H

#include <stdbool.h>

/* One admin API call: METHOD /api/admin PATH (PATH starts with '/') with
 * JSON BODY (or NULL), the answer dropped. Returns the HTTP status, 0
 * when there was no answer; fails the test when CUTOVER_TEST_UNLEASH_URL
 * or _TOKEN is not set. */
long itest_unleash_call(const char *method, const char *path, const char *body);

/* Creates feature NAME (type release) and turns it on. */
void itest_feature_create(const char *name);

/* Turns feature NAME on or off in production. */
void itest_feature_set(const char *name, bool on);

/* Deletes feature NAME: archived, then, once Unleash has recorded the
 * archive (its lifecycle stage), removed from the archive. Never fails
 * the test (it runs in teardowns); says on stderr what did not work. */
void itest_feature_delete(const char *name);

#endif
