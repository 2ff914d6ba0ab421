/* test_flag: the feature-flag client (flag.h).
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

#define TOKEN_REF	"env:CUTOVER_TEST_UNLEASH_TOKEN"
#define BAD_ENV		"CUTOVER_TEST_FLAG_BAD_TOKEN"
#define AUTH_ENV	"CUTOVER_TEST_FLAG_AUTH"
#define AUTH_SECRET	"Bearer flag-secret-7f3a9c"
/* The Unleash feature the tests flip: this run's own (unleash_url creates
 * it), not the delay-ladder the whole suite shares. */
#define FEATURE		feature_name()

static const char *
feature_name(void)
{
	static char name[64];

	if (name[0] == '\0')
		snprintf(name, sizeof(name), "%s-flag", itest_run_id());
	return name;
}

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

static void
nap(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double
now(void)
{
	return (double)clock_mono_ms() / 1e3;
}

static enum MHD_Result
reply(struct MHD_Connection *conn, unsigned int status, const char *type,
    const char *body)
{
	struct MHD_Response *r;
	enum MHD_Result rc;

	r = MHD_create_response_from_buffer(strlen(body), (void *)body,
	    MHD_RESPMEM_MUST_COPY);
	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", type);
	rc = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return rc;
}

static enum MHD_Result
handle(void *cls, struct MHD_Connection *conn, const char *url,
    const char *method, const char *version, const char *data,
    size_t *size, void **con_cls)
{
	struct srv *s = cls;
	struct upload *up = *con_cls;
	const char *h;
	char body[512];
	json_t *doc = NULL, *in;
	char *text;
	enum MHD_Result rc;
	int write, fail, bad, slow, after;

	(void)version;
	if (up == NULL) {
		if ((up = calloc(1, sizeof(*up))) == NULL)
			return MHD_NO;
		*con_cls = up;
		return MHD_YES;
	}
	if (*size > 0) {
		char *p = realloc(up->p, up->len + *size + 1);

		if (p == NULL)
			return MHD_NO;
		up->p = p;
		memcpy(up->p + up->len, data, *size);
		up->len += *size;
		up->p[up->len] = '\0';
		*size = 0;
		return MHD_YES;
	}

	write = strcmp(method, "GET") != 0;
	pthread_mutex_lock(&s->mu);
	s->requests++;
	h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_AUTHORIZATION);
	snprintf(s->auth, sizeof(s->auth), "%s", h != NULL ? h : "");
	fail = s->fail_forever || s->fail_n > 0 ||
	    (write && (s->write_fail_forever || s->write_fail_n > 0)) ||
	    (!write && s->reads_failing);
	if (s->fail_n > 0)
		s->fail_n--;
	else if (write && s->write_fail_n > 0)
		s->write_fail_n--;
	bad = write && s->bad_request;
	slow = s->slow_n > 0 ? (s->slow_n--, 1) : 0;
	pthread_mutex_unlock(&s->mu);
	if (slow)
		nap(s->slow_ms);

	if (strcmp(url, "/flag") != 0)
		return reply(conn, 404, "application/json",
		    "{\"message\":\"no such flag\"}");
	if (fail) {
		/* An answer that quotes the secret: it must come out as ***. */
		snprintf(body, sizeof(body), "flag store unavailable\n\n"
		    "(request had %s)", h != NULL ? h : "no auth");
		return reply(conn, 500, "text/plain", body);
	}
	if (bad) {
		snprintf(body, sizeof(body), "{\"name\":\"BadRequest\","
		    "\"message\":\"refusing %s\"}", h != NULL ? h : "nobody");
		return reply(conn, 400, "application/json", body);
	}
	pthread_mutex_lock(&s->mu);
	if (write) {
		s->writes++;
		snprintf(s->method, sizeof(s->method), "%s", method);
		h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_CONTENT_TYPE);
		snprintf(s->ctype, sizeof(s->ctype), "%s", h != NULL ? h : "");
		in = up->p != NULL ? json_loads(up->p, 0, NULL) : NULL;
		if (in == NULL || json_object_get(in, "enabled") == NULL) {
			pthread_mutex_unlock(&s->mu);
			json_decref(in);
			return reply(conn, 422, "application/json",
			    "{\"message\":\"expected enabled\"}");
		}
		if (s->toggle || !s->ignore_write) {
			json_t *v = s->toggle ? json_boolean(!json_is_true(s->value)) :
			    json_incref(json_object_get(in, "enabled"));

			json_decref(s->value);
			s->value = v;
		}
		json_decref(in);
		/* Applied; the answer may still be lost. */
		after = s->applied_close_n > 0 ? 2 : s->applied_fail_n > 0;
		if (after == 2)
			s->applied_close_n--;
		else if (after == 1)
			s->applied_fail_n--;
		if (after && s->reads_fail_after)
			s->reads_failing = 1;
		pthread_mutex_unlock(&s->mu);
		if (after == 2)
			return MHD_NO;	/* closes the connection, no answer */
		if (after == 1)
			return reply(conn, 500, "text/plain", "flag store "
			    "failed after applying the write");
		return reply(conn, 200, "application/json", "{\"ok\":true}");
	}
	doc = json_pack("{s:O,s:[{s:s,s:{s:O}}]}", "enabled", s->value, "flags",
	    "name", "delay-ladder", "x/y", "m~n", s->value);
	pthread_mutex_unlock(&s->mu);
	text = doc != NULL ? json_dumps(doc, JSON_COMPACT) : NULL;
	json_decref(doc);
	if (text == NULL)
		return MHD_NO;
	rc = reply(conn, 200, "application/json", text);
	free(text);
	return rc;
}

static void
completed(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct upload *up = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (up != NULL) {
		free(up->p);
		free(up);
		*con_cls = NULL;
	}
}

static void
srv_start(struct srv *s)
{
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *info;

	memset(s, 0, sizeof(*s));
	pthread_mutex_init(&s->mu, NULL);
	s->value = json_false();
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = 0;
	s->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0, NULL, NULL,
	    handle, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
	    MHD_OPTION_NOTIFY_COMPLETED, completed, s,
	    MHD_OPTION_CONNECTION_TIMEOUT, 10U, MHD_OPTION_END);
	assert_non_null(s->d);
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	s->port = info->port;
	snprintf(s->base, sizeof(s->base), "http://127.0.0.1:%d", s->port);
}

static void
srv_stop(struct srv *s)
{
	MHD_stop_daemon(s->d);
	json_decref(s->value);
	pthread_mutex_destroy(&s->mu);
}

static void
srv_set(struct srv *s, json_t *v)
{
	pthread_mutex_lock(&s->mu);
	json_decref(s->value);
	s->value = v;
	pthread_mutex_unlock(&s->mu);
}

/* ---- plans ---- */

/* A plan with only its flag section: the unleash one (its settings are
 * this file's: one such plan at a time). */
static void
unleash_plan(struct plan *p, const char *url, const char *feature,
    const char *env, const char *token_ref)
{
	static struct plan_flag_unleash u;

	memset(p, 0, sizeof(*p));
	memset(&u, 0, sizeof(u));
	p->flag.kind = "unleash";
	p->flag.settings = &u;
	u.url = (char *)url;
	u.project = "default";
	u.environment = (char *)env;
	u.feature = (char *)feature;
	u.token = (char *)token_ref;
}

struct http_plan {
	struct plan		p;
	struct plan_flag_http	settings;
	char			url[128];
	struct plan_header	h[2];
};

/* The http plan of the flag service S, reading POINTER. */
static void
http_plan(struct http_plan *hp, const struct srv *s, const char *pointer)
{
	memset(hp, 0, sizeof(*hp));
	snprintf(hp->url, sizeof(hp->url), "%s/flag", s->base);
	hp->p.flag.kind = "http";
	hp->p.flag.settings = &hp->settings;
	hp->settings.on.method = "PUT";
	hp->settings.on.url = hp->url;
	hp->settings.on.body = "{\"enabled\":true}";
	hp->settings.off.method = "PUT";
	hp->settings.off.url = hp->url;
	hp->settings.off.body = "{\"enabled\":false}";
	hp->settings.read_url = hp->url;
	hp->settings.read_pointer = (char *)pointer;
	hp->settings.read_on = "true";
	hp->settings.read_off = "false";
	hp->h[0].name = "Authorization";
	hp->h[0].value = "env:" AUTH_ENV;
	hp->h[1].name = "X-Cutover-Test";
	hp->h[1].value = "flag";
	hp->settings.headers = hp->h;
	hp->settings.nheaders = 2;
}

/* Fast retries, for tests. */
static void
quick(struct flag_options *o)
{
	flag_options_default(o);
	o->connect_timeout_ms = 1000;
	o->timeout_ms = 2000;
	o->backoff_ms = 20;
	o->backoff_max_ms = 80;
	o->budget_ms = 10000;
}

/* A switch on against a toggle-style flag service (each write flips the
 * flag) with some of its faults set. */
struct toggle {
	struct srv		 s;
	struct http_plan	 hp;	/* reads /enabled */
	struct flag_options	 o;	/* fast retries */
	json_t			*r;	/* the switch's result */
	char			 err[512];
	int			 rc;
};

struct faults {
	int write_fail_n, applied_fail_n, applied_close_n, reads_fail_after;
};

/* Starts T's service with faults F and switches its flag on; fails unless
 * the service took exactly one write (a second would have switched the
 * toggle back). toggle_end releases T. */
static void
toggle_on(struct toggle *t, struct faults f)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&t->s);
	http_plan(&t->hp, &t->s, "/enabled");
	quick(&t->o);
	t->s.toggle = 1;
	t->s.write_fail_n = f.write_fail_n;
	t->s.applied_fail_n = f.applied_fail_n;
	t->s.applied_close_n = f.applied_close_n;
	t->s.reads_fail_after = f.reads_fail_after;
	t->rc = flag_switch_with(&t->hp.p, true, &t->o, &t->r, t->err,
	    sizeof(t->err));
	if (t->s.writes != 1)
		fail_msg("the service took %d writes for one switch on (a toggle "
		    "now reads %s): %s", t->s.writes, json_is_true(t->s.value) ?
		    "on" : "off", t->err);
}

static void
toggle_end(struct toggle *t)
{
	json_decref(t->r);
	srv_stop(&t->s);
}

/* ---- helpers ---- */

/* Creates this run's feature once (itest_unleash_feature: deleted at exit)
 * and returns the test Unleash's URL. */
static const char *
unleash_url(void)
{
	const char *u = getenv("CUTOVER_TEST_UNLEASH_URL");
	static int created;

	if (u == NULL || u[0] == '\0' ||
	    getenv("CUTOVER_TEST_UNLEASH_TOKEN") == NULL)
		fail_msg("CUTOVER_TEST_UNLEASH_URL and "
		    "CUTOVER_TEST_UNLEASH_TOKEN are not set: run scripts/test, "
		    "or scripts/unleash start and export them from "
		    "scripts/unleash env");
	if (!created) {
		itest_unleash_feature(FEATURE);
		created = 1;
	}
	return u;
}

/* Fails if NEEDLE (non-empty) is anywhere in the text of J or in ERR. */
static void
assert_not_leaked(const json_t *j, const char *err, const char *needle)
{
	char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;

	assert_true(needle != NULL && needle[0] != '\0');
	if (text != NULL && strstr(text, needle) != NULL)
		fail_msg("secret leaked into the result: %s", text);
	free(text);
	if (err != NULL && strstr(err, needle) != NULL)
		fail_msg("secret leaked into the message: %s", err);
}

static json_t *
attempt(const json_t *result, size_t i)
{
	return json_array_get(json_object_get(result, "attempts"), i);
}

static size_t
nattempts(const json_t *result, const char *role)
{
	json_t *a = json_object_get(result, "attempts"), *it;
	size_t i, n = 0;

	json_array_foreach(a, i, it)
		if (role == NULL || strcmp(json_string_value(json_object_get(it,
		    "call")), role) == 0)
			n++;
	return n;
}

static long
status_of(const json_t *a)
{
	return (long)json_integer_value(json_object_get(a, "status"));
}

static void
assert_contains(const char *s, const char *part)
{
	if (s == NULL || strstr(s, part) == NULL)
		fail_msg("\"%s\" does not contain \"%s\"",
		    s != NULL ? s : "(null)", part);
}

/* A closed port on 127.0.0.1: bound, then released. */
static int
closed_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int fd, port;

	assert_true((fd = socket(AF_INET, SOCK_STREAM, 0)) >= 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static size_t
on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct upload *b = arg;
	size_t n = size * nmemb;
	char *p;

	if ((p = realloc(b->p, b->len + n + 1)) == NULL)
		return 0;
	b->p = p;
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

/* What a producer sees: "enabled" of the feature through the client API
 * with the backend token (1 or 0). Without that token the test is skipped
 * (and fails under CI=true): itest_skip. */
static int
client_enabled(const char *url)
{
	const char *token = getenv("CUTOVER_TEST_UNLEASH_CLIENT_TOKEN");
	struct curl_slist *h = NULL;
	struct upload body = { NULL, 0 };
	char u[512], hdr[512];
	json_t *j = NULL;
	CURL *c;
	long status = 0;
	int v;

	if (token == NULL || token[0] == '\0')
		itest_skip("CUTOVER_TEST_UNLEASH_CLIENT_TOKEN is not set: the client "
		    "API cannot be checked (scripts/unleash env gives it)");
	snprintf(u, sizeof(u), "%s/api/client/features/%s", url, FEATURE);
	snprintf(hdr, sizeof(hdr), "Authorization: %s", token);
	assert_non_null(c = curl_easy_init());
	h = curl_slist_append(h, hdr);
	curl_easy_setopt(c, CURLOPT_URL, u);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 200);
	assert_non_null(body.p);
	assert_non_null(j = json_loads(body.p, 0, NULL));
	free(body.p);
	assert_true(json_is_boolean(json_object_get(j, "enabled")));
	v = json_is_true(json_object_get(j, "enabled"));
	/* An enabled feature with no strategy evaluates as off. */
	assert_true(json_array_size(json_object_get(j, "strategies")) > 0);
	json_decref(j);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return v;
}

/* ---- kind unleash ---- */

static void
test_unleash_on_off(void **state)
{
	const char *url = unleash_url();
	const char *token = getenv("CUTOVER_TEST_UNLEASH_TOKEN");
	struct plan p;
	char err[512] = "", u[256];
	json_t *r = NULL, *rb;
	int st = -2, pass;

	(void)state;
	unleash_plan(&p, url, FEATURE, "production", TOKEN_REF);
	for (pass = 0; pass < 2; pass++) {	/* twice: idempotent */
		/* on */
		if (flag_switch(&p, true, &r, err, sizeof(err)) != 0)
			fail_msg("flag on: %s", err);
		assert_non_null(r);
		assert_true(json_is_true(json_object_get(r, "confirmed")));
		assert_string_equal(json_string_value(json_object_get(r,
		    "want")), "on");
		assert_int_equal(nattempts(r, "write"), 1);
		assert_int_equal(nattempts(r, "read"), 1);
		assert_int_equal(status_of(attempt(r, 0)), 200);
		assert_string_equal(json_string_value(json_object_get(
		    attempt(r, 0), "method")), "POST");
		snprintf(u, sizeof(u), "/api/admin/projects/default/features/%s/"
		    "environments/production/on", FEATURE);
		assert_contains(json_string_value(json_object_get(attempt(r, 0),
		    "url")), u);
		rb = json_object_get(r, "read_back");
		assert_true(json_is_true(json_object_get(rb, "value")));
		assert_contains(json_string_value(json_object_get(rb,
		    "excerpt")), "\"name\":\"production\"");
		assert_not_leaked(r, err, token);
		json_decref(r);
		r = NULL;
		assert_int_equal(flag_read(&p, &st, &r, err, sizeof(err)), 0);
		assert_int_equal(st, 1);
		assert_not_leaked(r, err, token);
		json_decref(r);
		r = NULL;
		if (client_enabled(url) == 0)
			fail_msg("the client API says off after flag on");

		/* off */
		if (flag_switch(&p, false, &r, err, sizeof(err)) != 0)
			fail_msg("flag off: %s", err);
		assert_true(json_is_true(json_object_get(r, "confirmed")));
		assert_true(json_is_false(json_object_get(json_object_get(r,
		    "read_back"), "value")));
		assert_contains(json_string_value(json_object_get(attempt(r, 0),
		    "url")), "/environments/production/off");
		json_decref(r);
		r = NULL;
		assert_int_equal(flag_read(&p, &st, NULL, err, sizeof(err)), 0);
		assert_int_equal(st, 0);
		if (client_enabled(url) == 1)
			fail_msg("the client API says on after flag off");
	}
}

static void
test_unleash_wrong_token(void **state)
{
	const char *url = unleash_url();
	struct flag_options o;
	char bad[64], err[512] = "";
	struct plan p;
	json_t *r = NULL;
	int rc, st = 7;

	(void)state;
	snprintf(bad, sizeof(bad), "*:*.wrong%08lx%08lx", (long)getpid(),
	    (long)time(NULL));
	assert_int_equal(setenv(BAD_ENV, bad, 1), 0);
	unleash_plan(&p, url, FEATURE, "production", "env:" BAD_ENV);
	quick(&o);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_AUTH);
	assert_non_null(r);
	assert_int_equal(nattempts(r, NULL), 1);	/* 4xx: no retry */
	assert_int_equal(status_of(attempt(r, 0)), 401);
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	assert_contains(err, "HTTP 401");
	assert_contains(err, "not retried");
	assert_contains(err, "/environments/production/on");
	assert_not_leaked(r, err, bad);
	assert_not_leaked(r, err, "wrong");
	json_decref(r);
	r = NULL;

	rc = flag_read(&p, &st, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_AUTH);
	assert_int_equal(st, -1);
	assert_int_equal(nattempts(r, NULL), 1);
	assert_not_leaked(r, err, bad);
	json_decref(r);
	unsetenv(BAD_ENV);
}

static void
test_unleash_missing(void **state)
{
	const char *url = unleash_url();
	char feature[64], err[512] = "";
	struct flag_options o;
	struct plan p;
	json_t *r = NULL;
	int rc;

	(void)state;
	quick(&o);
	snprintf(feature, sizeof(feature), "cutover-itest-missing-%ld",
	    (long)getpid());
	unleash_plan(&p, url, feature, "production", TOKEN_REF);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_NOT_FOUND);
	assert_int_equal(nattempts(r, NULL), 1);
	assert_int_equal(status_of(attempt(r, 0)), 404);
	assert_contains(err, "HTTP 404");
	assert_contains(err, feature);
	assert_contains(json_string_value(json_object_get(attempt(r, 0),
	    "excerpt")), "NotFoundError");
	assert_not_leaked(r, err, getenv("CUTOVER_TEST_UNLEASH_TOKEN"));
	json_decref(r);
	r = NULL;

	/* An environment the feature does not have. */
	unleash_plan(&p, url, FEATURE, "nowhere", TOKEN_REF);
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_NOT_FOUND);
	assert_int_equal(nattempts(r, NULL), 1);
	assert_contains(err, "nowhere");
	json_decref(r);
	r = NULL;
	rc = flag_read_with(&p, &o, NULL, &r, err, sizeof(err));
	assert_int_equal(rc, FLAG_ERR_ANSWER);
	assert_contains(err, "no environment \"nowhere\"");
	assert_contains(err, "production");
	json_decref(r);
}

static void
test_unleash_token_unset(void **state)
{
	const char *url = unleash_url();
	char err[512] = "";
	struct plan p;
	json_t *r = NULL;

	(void)state;
	unsetenv("CUTOVER_TEST_FLAG_UNSET");
	unleash_plan(&p, url, FEATURE, "production",
	    "env:CUTOVER_TEST_FLAG_UNSET");
	assert_int_equal(flag_switch(&p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	assert_contains(err, "CUTOVER_TEST_FLAG_UNSET is not set");
	assert_int_equal(nattempts(r, NULL), 0);
	json_decref(r);
	r = NULL;

	/* A literal token is refused, and not quoted. */
	unleash_plan(&p, url, FEATURE, "production", "*:*.literal-secret");
	assert_int_equal(flag_switch(&p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	assert_contains(err, "not an env:NAME reference");
	assert_not_leaked(r, err, "literal-secret");
	json_decref(r);
}

static void
test_unleash_stopped(void **state)
{
	struct flag_options o;
	char url[64], err[512] = "";
	struct plan p;
	json_t *r = NULL, *a;
	double t0, dt;
	size_t i;
	int rc;

	(void)state;
	unleash_url();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
	unleash_plan(&p, url, FEATURE, "production", TOKEN_REF);
	quick(&o);
	t0 = now();
	rc = flag_switch_with(&p, true, &o, &r, err, sizeof(err));
	dt = now() - t0;
	assert_int_equal(rc, FLAG_ERR_TRANSPORT);
	assert_int_equal(nattempts(r, "write"), o.attempts);
	assert_int_equal(nattempts(r, "read"), 0);
	json_array_foreach(json_object_get(r, "attempts"), i, a) {
		assert_int_equal(status_of(a), 0);
		assert_string_equal(json_string_value(json_object_get(a,
		    "error")), "connection refused");
	}
	assert_contains(err, "connection refused");
	assert_contains(err, "4 attempts");
	assert_contains(err, url);
	/* Waits of 20, 40 and 80 ms between the four attempts (now() reads
	 * clock_mono_ms: each of the three may read up to 1 ms short). */
	assert_true(dt >= 0.137);
	assert_true(dt < 5.0);
	assert_not_leaked(r, err, getenv("CUTOVER_TEST_UNLEASH_TOKEN"));
	json_decref(r);
	r = NULL;

	/* The default schedule: 4 attempts, 0.5 + 1 + 2 s of waits. */
	t0 = now();
	rc = flag_read(&p, NULL, &r, err, sizeof(err));
	dt = now() - t0;
	assert_int_equal(rc, FLAG_ERR_TRANSPORT);
	assert_int_equal(nattempts(r, "read"), FLAG_ATTEMPTS);
	assert_true(dt >= 3.4 && dt < 10.0);
	json_decref(r);
}

/* ---- kind http ---- */

static void
test_http_on_off(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;
	int st = -2;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	if (flag_switch_with(&hp.p, true, &o, &r, err, sizeof(err)) != 0)
		fail_msg("flag on: %s", err);
	assert_true(json_is_true(json_object_get(r, "confirmed")));
	assert_int_equal(nattempts(r, "write"), 1);
	assert_int_equal(nattempts(r, "read"), 1);
	assert_string_equal(json_string_value(json_object_get(attempt(r, 0),
	    "method")), "PUT");
	assert_string_equal(json_string_value(json_object_get(attempt(r, 0),
	    "url")), hp.url);
	assert_true(json_is_true(json_object_get(json_object_get(r,
	    "read_back"), "value")));
	/* The header reached the service, resolved; it is nowhere else. */
	assert_string_equal(s.auth, AUTH_SECRET);
	assert_string_equal(s.method, "PUT");
	assert_string_equal(s.ctype, "application/json");
	assert_true(json_is_true(s.value));
	assert_not_leaked(r, err, "flag-secret-7f3a9c");
	json_decref(r);
	r = NULL;

	assert_int_equal(flag_read_with(&hp.p, &o, &st, &r, err, sizeof(err)),
	    0);
	assert_int_equal(st, 1);
	json_decref(r);
	r = NULL;

	if (flag_switch_with(&hp.p, false, &o, &r, err, sizeof(err)) != 0)
		fail_msg("flag off: %s", err);
	assert_true(json_is_false(s.value));
	assert_int_equal(flag_read_with(&hp.p, &o, &st, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(st, 0);
	json_decref(r);

	/* Neither on nor off. */
	srv_set(&s, json_string("maybe"));
	assert_int_equal(flag_read_with(&hp.p, &o, &st, &r, err, sizeof(err)),
	    0);
	assert_int_equal(st, -1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(r,
	    "read_back"), "state")), "unknown");
	json_decref(r);
	srv_stop(&s);
}

static void
test_http_pointer_escapes(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	struct srv s;
	int st = -2;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/flags/0/x~1y/m~0n");
	quick(&o);
	if (flag_switch_with(&hp.p, true, &o, NULL, err, sizeof(err)) != 0)
		fail_msg("flag on: %s", err);
	assert_int_equal(flag_read_with(&hp.p, &o, &st, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(st, 1);

	/* A pointer to nothing: unknown, and a switch cannot confirm. */
	hp.settings.read_pointer = "/flags/1/x~1y/m~0n";
	assert_int_equal(flag_read_with(&hp.p, &o, &st, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(st, -1);
	assert_int_equal(flag_switch_with(&hp.p, true, &o, NULL, err,
	    sizeof(err)), FLAG_ERR_MISMATCH);
	assert_contains(err, "nothing there at /flags/1/x~1y/m~0n");

	/* A malformed pointer fails before anything is sent. */
	hp.settings.read_pointer = "/flags/0/x~2y";
	s.requests = 0;
	assert_int_equal(flag_read_with(&hp.p, &o, &st, NULL, err,
	    sizeof(err)), FLAG_ERR_ARG);
	assert_int_equal(s.requests, 0);
	srv_stop(&s);
}

static void
test_http_500_then_ok(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	s.write_fail_n = 2;
	if (flag_switch_with(&hp.p, true, &o, &r, err, sizeof(err)) != 0)
		fail_msg("flag on: %s", err);
	assert_true(json_is_true(json_object_get(r, "confirmed")));
	/* Each 500 is followed by a read-back that finds the flag off, so
	 * the write goes again; then the switch's own read-back. */
	assert_int_equal(nattempts(r, "write"), 3);
	assert_int_equal(status_of(attempt(r, 0)), 500);
	assert_string_equal(json_string_value(json_object_get(attempt(r, 1),
	    "call")), "read");
	assert_int_equal(status_of(attempt(r, 2)), 500);
	assert_int_equal(status_of(attempt(r, 4)), 200);
	assert_int_equal(nattempts(r, "read"), 3);
	assert_int_equal(s.writes, 1);
	/* The 500 answers quoted the header: redacted in the excerpts. */
	assert_contains(json_string_value(json_object_get(attempt(r, 0),
	    "excerpt")), "flag store unavailable (request had ***)");
	assert_not_leaked(r, err, "flag-secret-7f3a9c");
	assert_true(json_is_true(s.value));
	json_decref(r);
	srv_stop(&s);
}

static void
test_http_500_forever(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;
	size_t i;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	s.write_fail_forever = 1;
	assert_int_equal(flag_switch_with(&hp.p, true, &o, &r, err,
	    sizeof(err)), FLAG_ERR_HTTP);
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	/* Each write answered 500, each read-back after it found the flag
	 * off: four writes, four reads, alternating. */
	assert_int_equal(nattempts(r, "write"), 4);
	assert_int_equal(nattempts(r, "read"), 4);
	for (i = 0; i < 8; i += 2)
		assert_int_equal(status_of(attempt(r, i)), 500);
	assert_contains(err, "flag on: PUT ");
	assert_contains(err, hp.url);
	assert_contains(err, "HTTP 500");
	assert_contains(err, "flag store unavailable");
	assert_contains(err, "4 attempts");
	assert_contains(err, "read back: not switched");
	assert_not_leaked(r, err, "flag-secret-7f3a9c");
	assert_int_equal(s.requests, 8);
	json_decref(r);
	r = NULL;

	/* The budget bounds the attempts: 50 ms leaves room for two. */
	o.attempts = 10;
	o.backoff_ms = 30;
	o.backoff_max_ms = 30;
	o.budget_ms = 50;
	assert_int_equal(flag_switch_with(&hp.p, true, &o, &r, err,
	    sizeof(err)), FLAG_ERR_HTTP);
	assert_true(nattempts(r, "write") == 1 || nattempts(r, "write") == 2);
	json_decref(r);
	srv_stop(&s);
}

static void
test_http_400(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	s.bad_request = 1;
	assert_int_equal(flag_switch_with(&hp.p, true, &o, &r, err,
	    sizeof(err)), FLAG_ERR_HTTP);
	assert_int_equal(nattempts(r, NULL), 1);
	assert_int_equal(status_of(attempt(r, 0)), 400);
	assert_int_equal(s.requests, 1);
	assert_contains(err, "HTTP 400 (BadRequest: refusing ***)");
	assert_contains(err, "not retried");
	assert_not_leaked(r, err, "flag-secret-7f3a9c");
	json_decref(r);
	r = NULL;

	/* A read URL that is not there: 404, not retried either. */
	s.bad_request = 0;
	snprintf(hp.url, sizeof(hp.url), "%s/nope", s.base);
	hp.settings.read_url = hp.url;
	assert_int_equal(flag_read_with(&hp.p, &o, NULL, &r, err, sizeof(err)),
	    FLAG_ERR_NOT_FOUND);
	assert_int_equal(nattempts(r, NULL), 1);
	assert_contains(err, "HTTP 404 (no such flag)");
	json_decref(r);
	srv_stop(&s);
}

static void
test_http_ignored_write(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	s.ignore_write = 1;
	assert_int_equal(flag_switch_with(&hp.p, true, &o, &r, err,
	    sizeof(err)), FLAG_ERR_MISMATCH);
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	assert_int_equal(nattempts(r, "write"), 1);
	assert_int_equal(nattempts(r, "read"), 1);
	assert_contains(err, "false at /enabled; expected true (on)");
	assert_true(json_is_false(json_object_get(json_object_get(r,
	    "read_back"), "value")));
	assert_string_equal(json_string_value(json_object_get(json_object_get(r,
	    "read_back"), "state")), "off");
	json_decref(r);
	srv_stop(&s);
}

/* A toggle-style service that applies the write and then answers 500
 * (CLOSE: closes the connection without an answer): the write is not sent
 * again, since the read-back shows it applied; a second one would have
 * switched the flag back off. */
static void
applied_then_lost(int close)
{
	struct toggle t;

	toggle_on(&t, (struct faults){ .applied_fail_n = !close,
	    .applied_close_n = close });
	if (t.rc != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_true(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(nattempts(t.r, "write"), 1);
	assert_int_equal(status_of(attempt(t.r, 0)), close ? 0 : 500);
	assert_string_equal(json_string_value(json_object_get(attempt(t.r, 1),
	    "call")), "read");
	toggle_end(&t);
}

static void
test_http_applied_then_500(void **state)
{
	(void)state;
	applied_then_lost(0);
}

static void
test_http_applied_then_closed(void **state)
{
	(void)state;
	applied_then_lost(1);
}

/* The write is applied, its answer is a 500, and then the flag cannot be
 * read: the switch is reported unconfirmed, not written again blind. */
static void
test_http_applied_then_unreadable(void **state)
{
	struct toggle t;

	(void)state;
	toggle_on(&t, (struct faults){ .applied_fail_n = 1, .reads_fail_after = 1 });
	assert_int_equal(t.rc, FLAG_ERR_UNCONFIRMED);
	assert_false(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(nattempts(t.r, "write"), 1);
	assert_int_equal(nattempts(t.r, "read"), t.o.attempts);
	assert_contains(t.err, "flag on: PUT ");
	assert_contains(t.err, "HTTP 500");
	assert_contains(t.err, "unconfirmed");
	assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	toggle_end(&t);
}

/* A write that answered 500 without taking, read back off, is sent again
 * on a connection of its own: on the connection the read left open,
 * libcurl would send it once more by itself when the service closes it
 * without an answer (here: after applying it), and a toggle would be
 * switched back. */
static void
test_http_write_again_on_a_new_connection(void **state)
{
	struct toggle t;

	(void)state;
	toggle_on(&t, (struct faults){ .write_fail_n = 1, .applied_close_n = 1 });
	if (t.rc != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_int_equal(nattempts(t.r, "write"), 2);
	assert_int_equal(status_of(attempt(t.r, 0)), 500);
	assert_int_equal(status_of(attempt(t.r, 2)), 0);
	toggle_end(&t);
}

/* A write that gets no answer within the timeout is in doubt: the service
 * may apply it later (this one does, after 4 s), so it is never sent
 * again as if not applied; the switch is unconfirmed, the result says so,
 * and the attempt's outcome is recorded. */
static void
test_http_slow_write_in_doubt(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;
	int i, rc;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	quick(&o);
	/* The slow answer takes four times the timeout; the quick one has a
	 * whole second on a loaded machine. */
	o.timeout_ms = 1000;
	s.slow_n = 1;
	s.slow_ms = 4000;
	rc = flag_switch_with(&hp.p, true, &o, &r, err, sizeof(err));
	if (rc != FLAG_ERR_UNCONFIRMED)
		fail_msg("flag on returned %d (%s) with %zu writes: a write without an "
		    "answer was not left in doubt", rc, err, nattempts(r, "write"));
	assert_int_equal(nattempts(r, "write"), 1);
	assert_int_equal(status_of(attempt(r, 0)), 0);
	assert_contains(json_string_value(json_object_get(attempt(r, 0),
	    "error")), "timed out after 1000 ms");
	assert_string_equal(json_string_value(json_object_get(attempt(r, 0),
	    "outcome")), "in doubt");
	assert_true(json_is_true(json_object_get(r, "in_doubt")));
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	assert_contains(err, "in doubt");
	/* It lands late, once: the service took one write. */
	for (i = 0; i < 400; i++) {
		pthread_mutex_lock(&s.mu);
		rc = s.writes;
		pthread_mutex_unlock(&s.mu);
		if (rc > 0)
			break;
		nap(20);
	}
	pthread_mutex_lock(&s.mu);
	assert_int_equal(s.writes, 1);
	assert_true(json_is_true(s.value));
	pthread_mutex_unlock(&s.mu);
	json_decref(r);
	srv_stop(&s);
}

static void
test_http_secret_unset(void **state)
{
	struct http_plan hp;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;

	(void)state;
	unsetenv(AUTH_ENV);
	srv_start(&s);
	http_plan(&hp, &s, "/enabled");
	assert_int_equal(flag_switch(&hp.p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	assert_contains(err, "flag.headers.Authorization: env:" AUTH_ENV
	    ": variable " AUTH_ENV " is not set");
	assert_int_equal(s.requests, 0);
	json_decref(r);
	r = NULL;

	/* Credentials in a URL are refused, and not quoted. */
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	hp.settings.on.url = "http://user:pa55word@127.0.0.1:1/flag";
	assert_int_equal(flag_switch(&hp.p, true, &r, err, sizeof(err)),
	    FLAG_ERR_ARG);
	assert_contains(err, "flag.on.url must not carry credentials");
	assert_not_leaked(r, err, "pa55word");
	json_decref(r);
	srv_stop(&s);
}

/* ---- JSON pointer (RFC 6901 §5's examples) ---- */

static void
test_json_pointer(void **state)
{
	static const char *doc_text = "{\"foo\": [\"bar\", \"baz\"], \"\": 0, "
	    "\"a/b\": 1, \"c%d\": 2, \"e^f\": 3, \"g|h\": 4, \"i\\\\j\": 5, "
	    "\"k\\\"l\": 6, \" \": 7, \"m~n\": 8, \"~1\": 9, "
	    "\"arr\": [[10, 11], {\"x\": 12}]}";
	static const struct { const char *ptr; long v; } cases[] = {
		{ "/foo/0", -1 }, { "/", 0 }, { "/a~1b", 1 }, { "/c%d", 2 },
		{ "/e^f", 3 }, { "/g|h", 4 }, { "/i\\j", 5 }, { "/k\"l", 6 },
		{ "/ ", 7 }, { "/m~0n", 8 }, { "/~01", 9 },
		{ "/arr/0/1", 11 }, { "/arr/1/x", 12 },
	};
	static const char *absent[] = { "/nope", "/foo/2", "/foo/-",
	    "/foo/01", "/foo/x", "/arr/0/1/2", "/a~1b/c", "/~1",
	    "/foo/99999999999999999999999" };
	static const char *bad[] = { "foo", "/m~2n", "/m~", "/~" };
	json_t *doc, *v;
	char err[256];
	size_t i;

	(void)state;
	assert_non_null(doc = json_loads(doc_text, 0, NULL));
	assert_int_equal(flag_json_pointer(doc, "", &v, err, sizeof(err)), 0);
	assert_ptr_equal(v, doc);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (flag_json_pointer(doc, cases[i].ptr, &v, err,
		    sizeof(err)) != 0)
			fail_msg("%s: not found", cases[i].ptr);
		if (cases[i].v < 0)
			assert_string_equal(json_string_value(v), "bar");
		else
			assert_int_equal(json_integer_value(v), cases[i].v);
	}
	assert_int_equal(flag_json_pointer(doc, "/foo", &v, err, sizeof(err)),
	    0);
	assert_int_equal(json_array_size(v), 2);
	for (i = 0; i < sizeof(absent) / sizeof(absent[0]); i++) {
		if (flag_json_pointer(doc, absent[i], &v, err,
		    sizeof(err)) != 0)
			fail_msg("%s: expected absent", absent[i]);
		assert_null(v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (flag_json_pointer(doc, bad[i], &v, err, sizeof(err)) !=
		    FLAG_ERR_ARG)
			fail_msg("%s: expected malformed", bad[i]);
		assert_contains(err, bad[i]);
	}
	json_decref(doc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_pointer),
		cmocka_unit_test(test_unleash_on_off),
		cmocka_unit_test(test_unleash_wrong_token),
		cmocka_unit_test(test_unleash_missing),
		cmocka_unit_test(test_unleash_token_unset),
		cmocka_unit_test(test_unleash_stopped),
		cmocka_unit_test(test_http_on_off),
		cmocka_unit_test(test_http_pointer_escapes),
		cmocka_unit_test(test_http_500_then_ok),
		cmocka_unit_test(test_http_500_forever),
		cmocka_unit_test(test_http_400),
		cmocka_unit_test(test_http_ignored_write),
		cmocka_unit_test(test_http_applied_then_500),
		cmocka_unit_test(test_http_applied_then_closed),
		cmocka_unit_test(test_http_applied_then_unreadable),
		cmocka_unit_test(test_http_write_again_on_a_new_connection),
		cmocka_unit_test(test_http_slow_write_in_doubt),
		cmocka_unit_test(test_http_secret_unset),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
