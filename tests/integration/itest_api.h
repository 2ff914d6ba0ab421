/* itest_api: what the JSON API tests share: one cutover serve started for
 * the group, HTTP requests to it as an operator or not, the tests' plans,
 * and waiting on a plan's status. Names from here are prefixed iapi_.
 *
 * test_api_*.c (integration): `cutover serve` end to end — the real binary
 * (CUTOVER_BINARY) on a free loopback port with a temporary database and
 * an operators file, its engine running plans against the real RabbitMQ
 * node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
 * CUTOVER_TEST_PASSWORD), talked to with libcurl, raw sockets, and the
 * remote verbs of the same binary. Covers the routes and their statuses,
 * tokens, limits, hostile requests, a gate approved by an operator and
 * recorded under that name, a failed step retried and a plan aborted
 * through the routes and through the remote verbs, alerts acknowledged
 * through the ack route and the remote ack verb, the history's export
 * (JSON and CSV, verified offline) and refused requests recorded in the
 * history (bounded per minute), a clean stop on SIGTERM and a resume
 * after. */
#ifndef CUTOVER_ITEST_API_H
#define CUTOVER_ITEST_API_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "auth.h"
#include "clock.h"
#include "denied.h"
#include "export.h"
#include "export_verify.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "plan.h"
#include "step.h"

#define TOKEN_ALICE	"tok-alice-5b1f0c2e9d"
#define TOKEN_BOB	"tok-bob-77c3a90e41"
#define WAIT_MS		60000

struct resp {
	long status;
	char *body;
	size_t len;
	char allow[128];
	char www[128];
	char location[128];
	char type[128];
	char disposition[192];
};

extern char iapi_dir[256];
extern char iapi_db[300];
extern char iapi_ops[300];
extern char iapi_logfile[300];
extern char iapi_base[64];
extern int iapi_port;

void iapi_sleep_ms(int ms);

void iapi_resp_clear(struct resp *r);

/* METHOD PATH on the test server with TOKEN (NULL: none), BODY of LEN
 * bytes (NULL: none) and one extra header (NULL: none). */
void iapi_http(const char *method, const char *path, const char *token, const char *body,
    size_t len, const char *extra, struct resp *r);

/* METHOD PATH, without a body, on the serve at 127.0.0.1:PORT with TOKEN
 * (NULL: none): the answer's body into OUT (cut to OUTLEN), its HTTP
 * status returned, 0 when nothing answered. */
int iapi_fetch(unsigned port, const char *method, const char *path, const char *token,
    char *out, size_t outlen);

/* The answer's JSON (asserting it is JSON). */
json_t *iapi_body_json(const struct resp *r);

/* Asserts that R is STATUS with an {"error": "..."} body. */
void iapi_assert_error(const struct resp *r, long status);

/* METHOD PATH with TOKEN, BODY of LEN bytes and EXTRA as iapi_http
 * takes them; fails the test unless the answer is STATUS with an
 * {"error": "..."} body (iapi_assert_error). */
void iapi_expect_error(const char *method, const char *path, const char *token,
    const char *body, size_t len, const char *extra, long status);

/* GET PATH, asserting 200; the JSON answer. */
json_t *iapi_get(const char *path);

/* iapi_get of the path FMT and its arguments make (a plan's route: the
 * id or name put in), which must fit 512 bytes. */
json_t *iapi_getf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Starts `cutover serve` on the test database and port, with OPERATORS
 * (NULL: none), its stderr appended to the log file; waits for /healthz. */
void iapi_start_server(const char *operators);

/* SIGTERM; returns the exit status. */
int iapi_stop_server(void);

/* Runs the cutover binary with the args (NULL-terminated), with TOKEN in
 * CUTOVER_TOKEN (NULL: unset); its stdout and stderr into OUT (may be
 * NULL). Returns the exit status. */
int iapi_cli(char *out, size_t outlen, const char *token, const char *arg, ...);

/* A plan named itestapiPID-TEST whose ladder is itestapiPID.TEST, with a
 * gate on verify_ladder; written to DIR/TEST.yaml as well. Returns the
 * YAML (static). What the plan makes on the broker is removed at exit
 * whatever happens (itest_plan_cleanup). */
extern const char *iapi_plan_steps;	/* NULL: the default steps below */

const char *iapi_plan_yaml(const char *test, char *name, size_t namelen);

/* Removes the ladder (and destination) of TEST's plan from the broker. */
void iapi_cleanup_broker(const char *test);

/* Submits TEST's plan as alice; its id. */
long long iapi_submit(const char *test, char *name, size_t namelen);

/* Waits until step N (1-based) of plan ID is STATUS; the plan document. */
json_t *iapi_wait_step(long long id, int n, const char *status);

json_t *iapi_wait_plan(long long id, const char *status);

/* Waits until command CMD of plan ID is no longer pending; the command's
 * document. */
json_t *iapi_wait_command(long long id, long long cmd);

/* The actor of the first event of KIND in plan ID's history (static), or
 * NULL; asserts the chain verifies. */
const char *iapi_actor_of(long long id, const char *kind);

/* POST PATH as alice with no body; asserts STATUS; the answer's JSON. */
json_t *iapi_post_as_alice(const char *path, long status);

int iapi_setup(void **state);

int iapi_teardown(void **state);

/* Runs the N tests in TESTS as a test_api_*.c program's main does:
 * itest_main_group with iapi_setup and iapi_teardown. */
int iapi_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

#endif
