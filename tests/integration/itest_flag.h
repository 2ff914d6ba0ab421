/* itest_flag: what the feature-flag client tests share: the small HTTP flag
 * service they run with libmicrohttpd (its answers scripted per test, the
 * attempts it saw read back), the http plans pointing the client at it, and
 * the checks that no secret leaked. Names from here are prefixed iflag_.
 *
 * test_flag_*.c: the feature-flag client (flag.h).
 *
 * kind unleash against the real Unleash server scripts/test starts
 * (scripts/unleash): CUTOVER_TEST_UNLEASH_URL and CUTOVER_TEST_UNLEASH_TOKEN
 * (an admin token) must be set; the tests flip a feature of this run's own
 * in project default, created by the first and deleted at exit;
 * CUTOVER_TEST_UNLEASH_CLIENT_TOKEN (a backend token for production) checks
 * what producers see through the client API (without it the test is
 * skipped, and fails under CI=true).
 *
 * kind http against a small flag service this test runs on 127.0.0.1 with
 * libmicrohttpd: it holds one flag, answers GET /flag with
 *   {"enabled": V, "flags": [{"name": "delay-ladder", "x/y": {"m~n": V}}]}
 * and PUT /flag {"enabled": V} sets it (or, as a toggle-style service,
 * flips it whatever V says); it can be told to answer 500 a number of
 * times or forever (to every request, or to writes only), to apply a
 * write and then answer 500 or close the connection without an answer, to
 * fail every read after such a write, to answer 400, to ignore writes, or
 * to be slow; it counts the writes it applied and records the
 * Authorization header it was sent. */
#ifndef CUTOVER_ITEST_FLAG_H
#define CUTOVER_ITEST_FLAG_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>
#include <microhttpd.h>

#include "clock.h"
#include "flag.h"
#include "plan_flag.h"
#include "itest_broker.h"
#include "itest_run.h"

#define AUTH_ENV	"CUTOVER_TEST_FLAG_AUTH"
#define AUTH_SECRET	"Bearer flag-secret-7f3a9c"

/* ---- the flag service ---- */

struct srv {
	struct MHD_Daemon	*d;
	int			 port;
	char			 base[64];	/* http://127.0.0.1:PORT */
	pthread_mutex_t		 mu;
	json_t			*value;		/* the flag's value */
	int			 fail_n;	/* answer 500 this many times */
	int			 fail_forever;
	int			 bad_request;	/* answer writes with 400 */
	int			 ignore_write;
	int			 toggle;	/* a write flips the value */
	int			 write_fail_n;	/* answer writes 500 (unapplied)
						 * this many times */
	int			 write_fail_forever;
	int			 applied_fail_n; /* apply a write, then answer 500 */
	int			 applied_close_n; /* apply a write, then close
						 * without an answer */
	int			 reads_fail_after; /* after such a write, answer
						 * every read 500 */
	int			 reads_failing;
	int			 slow_n;	/* this many answers are slow */
	long			 slow_ms;
	int			 requests;
	int			 writes;	/* writes taken (past a 500 or 400) */
	char			 auth[256];	/* last Authorization seen */
	char			 method[16];	/* of the last write */
	char			 ctype[64];	/* its Content-Type */
};

struct upload {
	char	*p;
	size_t	 len;
};

struct http_plan {
	struct plan		p;
	struct plan_flag_http	settings;
	char			url[128];
	struct plan_header	h[2];
};

void iflag_nap(long ms);

void iflag_srv_start(struct srv *s);

void iflag_srv_stop(struct srv *s);

/* The http plan of the flag service S, reading POINTER. */
void iflag_http_plan(struct http_plan *hp, const struct srv *s, const char *pointer);

/* Fast retries, for tests. */
void iflag_quick(struct flag_options *o);

/* What a kind http test works with: its flag service, the http plan
 * pointing the client at it, fast retries, and the last call's result and
 * message. */
struct iflag_http {
	struct srv		 s;
	struct http_plan	 hp;
	struct flag_options	 o;
	json_t			*r;	/* the last call's result, or NULL */
	char			 err[512];
};

/* Sets AUTH_ENV to AUTH_SECRET (the plan's Authorization header reads it),
 * starts T's flag service, points T's http plan at it reading POINTER,
 * and gives T fast retries (iflag_quick); T's result is NULL and its
 * message empty. Fails the test when the variable cannot be set or the
 * service does not start. iflag_http_end releases T. */
void iflag_http_begin(struct iflag_http *t, const char *pointer);

/* Frees T's result and sets it to NULL, for the next call's. */
void iflag_http_clear(struct iflag_http *t);

/* Frees T's result and stops its flag service. */
void iflag_http_end(struct iflag_http *t);

/* Fails if NEEDLE (non-empty) is anywhere in the text of J or in ERR. */
void iflag_assert_not_leaked(const json_t *j, const char *err, const char *needle);

json_t *iflag_attempt(const json_t *result, size_t i);

size_t iflag_nattempts(const json_t *result, const char *role);

long iflag_status_of(const json_t *a);

void iflag_assert_contains(const char *s, const char *part);

/* Switches T's flag on with T's options (flag_switch_with), which must
 * return RC, confirmed exactly when RC is 0, after WRITES writes and
 * READS read-backs; its result is T's, its message T's err. Fails saying
 * which of them differs. */
void iflag_switch_on(struct iflag_http *t, int rc, size_t writes, size_t reads);

/* Clears T's result and reads T's flag with T's options (flag_read_with)
 * into it, which must succeed and find STATE (1 on, 0 off, -1 neither);
 * fails saying what it found or why it could not read. */
void iflag_expect_read(struct iflag_http *t, int state);

/* Runs the N tests in TESTS as a test_flag_*.c program's main does
 * (ITEST_MAIN; the arguments are not read), and returns its exit
 * status. */
int iflag_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv);

#endif
