/* test_api (integration): `cutover serve` end to end — the real binary
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
#include "itest_run.h"
#include "plan.h"
#include "step.h"

#define TOKEN_ALICE	"tok-alice-5b1f0c2e9d"
#define TOKEN_BOB	"tok-bob-77c3a90e41"
#define WAIT_MS		60000

static char dir[256], db[300], ops[300], logfile[300], base[64];
static int port;
static pid_t server = -1;

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

static void
sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static void
resp_clear(struct resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

static size_t
on_body(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;
	char *grown = realloc(r->body, r->len + size * n + 1);

	if (grown == NULL)
		return 0;
	r->body = grown;
	memcpy(r->body + r->len, p, size * n);
	r->len += size * n;
	r->body[r->len] = '\0';
	return size * n;
}

/* Keeps the value of header NAME (with its colon) into OUT. */
static void
keep_header(const char *line, size_t n, const char *name, char *out, size_t outlen)
{
	size_t k = strlen(name);

	if (n > k && strncasecmp(line, name, k) == 0) {
		size_t v = n - k;

		line += k;
		while (v > 0 && (*line == ' '))
			line++, v--;
		while (v > 0 && (line[v - 1] == '\r' || line[v - 1] == '\n'))
			v--;
		snprintf(out, outlen, "%.*s", (int)v, line);
	}
}

static size_t
on_header(char *p, size_t size, size_t n, void *arg)
{
	struct resp *r = arg;

	keep_header(p, size * n, "Allow:", r->allow, sizeof(r->allow));
	keep_header(p, size * n, "WWW-Authenticate:", r->www, sizeof(r->www));
	keep_header(p, size * n, "Location:", r->location, sizeof(r->location));
	keep_header(p, size * n, "Content-Type:", r->type, sizeof(r->type));
	keep_header(p, size * n, "Content-Disposition:", r->disposition,
	    sizeof(r->disposition));
	return size * n;
}

/* METHOD PATH on the test server with TOKEN (NULL: none), BODY of LEN
 * bytes (NULL: none) and one extra header (NULL: none). */
static void
http(const char *method, const char *path, const char *token, const char *body,
    size_t len, const char *extra, struct resp *r)
{
	struct curl_slist *h = NULL;
	char url[512], auth[256];
	CURL *c = curl_easy_init();

	memset(r, 0, sizeof(*r));
	assert_non_null(c);
	snprintf(url, sizeof(url), "%s%s", base, path);
	h = curl_slist_append(h, "Expect:");
	if (token != NULL) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", token);
		h = curl_slist_append(h, auth);
	}
	if (extra != NULL)
		h = curl_slist_append(h, extra);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	if (body != NULL) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	}
	if (strcmp(method, "HEAD") == 0)
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
}

/* The answer's JSON (asserting it is JSON). */
static json_t *
body_json(const struct resp *r)
{
	json_t *j;

	assert_non_null(r->body);
	j = json_loadb(r->body, r->len, 0, NULL);
	if (j == NULL)
		fail_msg("not JSON: %s", r->body);
	return j;
}

/* Asserts that R is STATUS with an {"error": "..."} body. */
static void
assert_error(const struct resp *r, long status)
{
	json_t *j;

	if (r->status != status)
		fail_msg("expected %ld, got %ld: %s", status, r->status,
		    r->body ? r->body : "");
	j = body_json(r);
	assert_true(json_is_string(json_object_get(j, "error")));
	json_decref(j);
}

/* GET PATH, asserting 200; the JSON answer. */
static json_t *
get(const char *path)
{
	struct resp r;
	json_t *j;

	http("GET", path, NULL, NULL, 0, NULL, &r);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	j = body_json(&r);
	resp_clear(&r);
	return j;
}

/* Sends REQ (LEN bytes) on a raw connection; the status of the answer, or
 * 0 when the server closed without one. */
static int
raw(const char *req, size_t len)
{
	struct sockaddr_in sa = { 0 };
	struct timeval tv = { 5, 0 };
	char buf[512];
	ssize_t n;
	int fd, st = 0;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	n = recv(fd, buf, sizeof(buf) - 1, 0);
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "HTTP/1.%*d %d", &st) != 1)
			st = 0;
	}
	close(fd);
	return st;
}

static int
raws(const char *req)
{
	return raw(req, strlen(req));
}

/* Starts `cutover serve` on the test database and port, with OPERATORS
 * (NULL: none), its stderr appended to the log file; waits for /healthz. */
static void
start_server(const char *operators)
{
	char listen[64], poll[] = "100";
	struct resp r;
	int i, fd;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(base, sizeof(base), "http://127.0.0.1:%d", port);
	server = fork();
	assert_true(server >= 0);
	if (server == 0) {
		fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		dup2(2, 1);
		if (operators != NULL)
			execl(getenv("CUTOVER_BINARY"), "cutover", "serve", "--db", db, "--listen",
			    listen, "--operators", operators, "--poll-ms", poll, (char *)NULL);
		else
			execl(getenv("CUTOVER_BINARY"), "cutover", "serve", "--db", db, "--listen",
			    listen, "--poll-ms", poll, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		int st;

		assert_int_equal(waitpid(server, &st, WNOHANG), 0);
		http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
		st = r.status == 200;
		resp_clear(&r);
		if (st)
			return;
		sleep_ms(50);
	}
	fail_msg("cutover serve did not answer on %s", listen);
}

/* SIGTERM; returns the exit status. */
static int
stop_server(void)
{
	int st;

	if (server <= 0)
		return -1;
	kill(server, SIGTERM);
	assert_int_equal(waitpid(server, &st, 0), server);
	server = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs the cutover binary with the args (NULL-terminated), with TOKEN in
 * CUTOVER_TOKEN (NULL: unset); its stdout into OUT (may be NULL). Returns
 * the exit status. */
static int
cli(char *out, size_t outlen, const char *token, const char *arg, ...)
{
	const char *argv[24];
	char outfile[320];
	va_list ap;
	pid_t pid;
	int n = 0, st;
	FILE *f;

	snprintf(outfile, sizeof(outfile), "%s/cli.out", dir);
	argv[n++] = getenv("CUTOVER_BINARY");
	argv[n++] = arg;
	va_start(ap, arg);
	while (n < 23 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	argv[n] = NULL;
	if ((pid = fork()) == 0) {
		int fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0)
			dup2(fd, 1);
		if (token != NULL)
			setenv("CUTOVER_TOKEN", token, 1);
		else
			unsetenv("CUTOVER_TOKEN");
		unsetenv("CUTOVER_SERVER");
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (out != NULL) {
		size_t got = 0;

		out[0] = '\0';
		if ((f = fopen(outfile, "r")) != NULL) {
			got = fread(out, 1, outlen - 1, f);
			fclose(f);
		}
		out[got] = '\0';
		fprintf(stderr, "%s", out);
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* A plan named itestapiPID-TEST whose ladder is itestapiPID.TEST, with a
 * gate on verify_ladder; written to DIR/TEST.yaml as well. Returns the
 * YAML (static). What the plan makes on the broker is removed at exit
 * whatever happens (itest_plan_cleanup). */
static const char *plan_steps;	/* NULL: the default steps below */

static const char *
plan_yaml(const char *test, char *name, size_t namelen)
{
	static char yaml[2048], last[64];
	char file[320], stem[96];
	FILE *f;

	snprintf(name, namelen, "itestapi%ld-%s", (long)getpid(), test);
	if (strcmp(last, test) != 0) {
		snprintf(last, sizeof(last), "%s", test);
		snprintf(stem, sizeof(stem), "itestapi%ld.%s", (long)getpid(), test);
		itest_plan_cleanup(stem, name);
	}
	snprintf(yaml, sizeof(yaml),
	    "name: %s\n"
	    "broker:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_TEST_PASSWORD\n"
	    "old:\n"
	    "  queues: { names: [itestapi%ld.%s.old] }\n"
	    "ladder:\n"
	    "  prefix: itestapi%ld.%s\n"
	    "  unit: 100ms\n"
	    "  levels: 6\n"
	    "  destinations: [itestapi%ld.%s.dest]\n"
	    "  create_destinations: true\n"
	    "canary:\n"
	    "  delays: [100ms]\n"
	    "steps: %s\n",
	    name, getenv("CUTOVER_TEST_AMQP"), getenv("CUTOVER_TEST_MGMT"),
	    getenv("CUTOVER_TEST_USER"), (long)getpid(), test, (long)getpid(), test,
	    (long)getpid(), test, plan_steps != NULL ? plan_steps :
	    "[declare_ladder, { step: verify_ladder, gate: true }]");
	snprintf(file, sizeof(file), "%s/%s.yaml", dir, test);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs(yaml, f);
	fclose(f);
	return yaml;
}

/* Removes the ladder (and destination) of TEST's plan from the broker. */
static void
cleanup_broker(const char *test)
{
	struct plan_errors errs = { 0 };
	struct step_ctx c;
	struct plan *p = NULL;
	json_t *r = NULL;
	char err[1024], file[320], dest[128];

	snprintf(file, sizeof(file), "%s/%s.yaml", dir, test);
	if (plan_load_file(file, &p, &errs) != 0) {
		plan_errors_free(&errs);
		return;
	}
	if (step_ctx_open(&c, p, err, sizeof(err)) == 0) {
		if (step_teardown_ladder(&c, &r, err, sizeof(err)) != 0)
			fprintf(stderr, "teardown %s: %s\n", test, err);
		json_decref(r);
		snprintf(dest, sizeof(dest), "itestapi%ld.%s.dest", (long)getpid(), test);
		broker_queue_delete(c.amqp, dest, 0, NULL, err, sizeof(err));
		step_ctx_close(&c);
	}
	plan_free(p);
}

/* Submits TEST's plan as alice; its id. */
static long long
submit(const char *test, char *name, size_t namelen)
{
	const char *yaml = plan_yaml(test, name, namelen);
	struct resp r;
	json_t *j;
	long long id;

	http("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml),
	    "Content-Type: application/yaml", &r);
	if (r.status != 201)
		fail_msg("submit: %ld %s", r.status, r.body ? r.body : "");
	j = body_json(&r);
	id = (long long)json_integer_value(json_object_get(j, "id"));
	assert_true(id > 0);
	assert_string_equal(json_string_value(json_object_get(j, "name")), name);
	assert_string_equal(r.location, json_string_value(json_object_get(j, "url")));
	json_decref(j);
	resp_clear(&r);
	return id;
}

/* Waits until step N (1-based) of plan ID is STATUS; the plan document. */
static json_t *
wait_step(long long id, int n, const char *status)
{
	char path[64];
	json_t *j = NULL;

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		json_t *st;

		j = get(path);
		st = json_array_get(json_object_get(j, "steps"), (size_t)n - 1);
		if (strcmp(json_string_value(json_object_get(st, "status")), status) == 0)
			return j;
		if (strcmp(json_string_value(json_object_get(j, "status")), "failed") == 0)
			fail_msg("plan %lld failed: %s", id, json_dumps(j, 0));
		json_decref(j);
		sleep_ms(100);
	}
	fail_msg("step %d of plan %lld never became %s", n, id, status);
	return NULL;
}

static json_t *
wait_plan(long long id, const char *status)
{
	char path[64];
	json_t *j;

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		j = get(path);
		if (strcmp(json_string_value(json_object_get(j, "status")), status) == 0)
			return j;
		json_decref(j);
		sleep_ms(100);
	}
	fail_msg("plan %lld never became %s", id, status);
	return NULL;
}

/* The actor of the first event of KIND in plan ID's history (static), or
 * NULL; asserts the chain verifies. */
static const char *
actor_of(long long id, const char *kind)
{
	static char actor[AUTH_NAME_MAX];
	char path[64];
	json_t *h, *ev;
	size_t i;
	const char *found = NULL;

	snprintf(path, sizeof(path), "/api/plans/%lld/history", id);
	h = get(path);
	assert_true(json_is_true(json_object_get(json_object_get(h, "verification"),
	    "verified")));
	json_array_foreach(json_object_get(h, "events"), i, ev)
		if (found == NULL && strcmp(json_string_value(json_object_get(ev, "kind")),
		    kind) == 0) {
			snprintf(actor, sizeof(actor), "%s",
			    json_string_value(json_object_get(ev, "actor")));
			found = actor;
		}
	json_decref(h);
	return found;
}

/* ---- the tests ---- */

static void
test_reads_and_routes(void **state)
{
	static const char nul[] = "GET /api/pl\0ans HTTP/1.1\r\nHost: x\r\n\r\n";
	struct resp r;
	json_t *j;
	char big[40000 + 32];

	(void)state;
	j = get("/healthz");
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	json_decref(j);
	j = get("/api/plans");
	assert_true(json_is_array(json_object_get(j, "plans")));
	json_decref(j);
	http("HEAD", "/api/plans", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	resp_clear(&r);

	/* Unknown routes and unknown plans. */
	http("GET", "/api/nothing", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	http("GET", "/api/plans/", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	http("GET", "/api/plans/999999", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	http("GET", "/api/plans/999999/history", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	http("GET", "/api/plans/abc", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);

	/* Wrong methods: 405 with what is allowed. */
	http("DELETE", "/api/plans", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 405);
	assert_string_equal(r.allow, "GET, HEAD, POST");
	resp_clear(&r);
	http("GET", "/api/plans/1/abort", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 405);
	assert_string_equal(r.allow, "POST");
	resp_clear(&r);
	http("POST", "/api/plans/1", TOKEN_ALICE, "", 0, NULL, &r);
	assert_error(&r, 405);
	assert_string_equal(r.allow, "GET, HEAD");
	resp_clear(&r);
	http("PUT", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 405);
	resp_clear(&r);

	/* Query parameters: known ones only, well formed. */
	http("GET", "/api/plans?nmae=x", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("GET", "/api/plans/1/samples?since=soon", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);

	/* Hostile requests: a 4xx each, and the server still answers. */
	assert_int_equal(raws("GET /api/pl%zzans HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans%00 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans%2 HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raws("GET /api/plans?name=%0a HTTP/1.1\r\nHost: x\r\n\r\n"), 400);
	assert_int_equal(raw(nul, sizeof(nul) - 1), 404);
	assert_int_equal(raws("GET /api/plans/1/../../../etc/passwd HTTP/1.1\r\n"
	    "Host: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET /api/plans/%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n"
	    "Host: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET ../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"), 404);
	assert_int_equal(raws("GET /api/plans HTTP/1.1\r\n\r\n"), 400);
	assert_int_equal(raws("POST /api/plans/1/abort HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOKEN_ALICE "\r\nContent-Length: 99999999999999999999"
	    "\r\n\r\n") / 100, 4);
	memcpy(big, "X-Big: ", 7);
	memset(big + 7, 'a', 40000);
	big[40007] = '\0';
	http("GET", "/api/plans", NULL, NULL, 0, big, &r);
	assert_true(r.status >= 400 && r.status < 500);
	resp_clear(&r);
	http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
}

static void
test_writes_need_an_operator(void **state)
{
	const char *yaml;
	char name[80], path[160];
	struct resp r;
	json_t *j;

	(void)state;
	yaml = plan_yaml("noauth", name, sizeof(name));
	http("POST", "/api/plans", NULL, yaml, strlen(yaml), NULL, &r);
	assert_error(&r, 401);
	assert_string_equal(r.www, "Bearer realm=\"cutover\"");
	resp_clear(&r);
	http("POST", "/api/plans", "not-a-token", yaml, strlen(yaml), NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);
	http("POST", "/api/plans", NULL, yaml, strlen(yaml),
	    "Authorization: Basic YWxpY2U6eA==", &r);
	assert_error(&r, 401);
	resp_clear(&r);
	/* A token's hash is not a token. */
	http("POST", "/api/plans/1/abort", "dde96f5b27b2298476b272c037dfd2cb5438e3495510"
	    "c51035db1ef55f2994a4", NULL, 0, NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);
	/* Nothing was recorded. */
	snprintf(path, sizeof(path), "/api/plans?name=%s", name);
	j = get(path);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 0);
	json_decref(j);
}

static void
test_invalid_plans(void **state)
{
	static const char bad_key[] =
	    "name: itestapi-bad\n"
	    "broker:\n"
	    "  amqpp: amqp://127.0.0.1:5672/%2f\n";
	static const char bad_yaml[] = "name: [unclosed\nsteps: {\n";
	struct resp r;
	json_t *j, *e;
	size_t i;
	int saw = 0;

	(void)state;
	http("POST", "/api/plans", TOKEN_ALICE, bad_key, strlen(bad_key), NULL, &r);
	assert_error(&r, 400);
	j = body_json(&r);
	assert_true(json_array_size(json_object_get(j, "errors")) >= 2);
	json_array_foreach(json_object_get(j, "errors"), i, e) {
		assert_true(json_is_integer(json_object_get(e, "line")));
		assert_true(json_is_integer(json_object_get(e, "column")));
		assert_true(json_is_string(json_object_get(e, "message")));
		if (json_integer_value(json_object_get(e, "line")) == 3 &&
		    json_integer_value(json_object_get(e, "column")) == 3)
			saw = 1;
	}
	assert_true(saw);
	json_decref(j);
	resp_clear(&r);

	http("POST", "/api/plans", TOKEN_ALICE, bad_yaml, strlen(bad_yaml), NULL, &r);
	assert_error(&r, 400);
	j = body_json(&r);
	e = json_array_get(json_object_get(j, "errors"), 0);
	assert_true(json_integer_value(json_object_get(e, "line")) >= 1);
	json_decref(j);
	resp_clear(&r);

	http("POST", "/api/plans", TOKEN_ALICE, "", 0, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("POST", "/api/plans", TOKEN_ALICE, "name: a\0b\n", 10, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
}

static void
test_limits_and_malformed_bodies(void **state)
{
	size_t n = 1024 * 1024 + 1;
	char *big = malloc(n);
	struct resp r;

	(void)state;
	assert_non_null(big);
	memset(big, '#', n);
	/* Declared too large: refused before the body is read. */
	http("POST", "/api/plans", TOKEN_ALICE, big, n, NULL, &r);
	assert_error(&r, 413);
	resp_clear(&r);
	/* Streamed (chunked, no length) past the limit. */
	http("POST", "/api/plans", TOKEN_ALICE, big, n, "Transfer-Encoding: chunked", &r);
	assert_error(&r, 413);
	resp_clear(&r);
	/* Exactly the limit is read (and is not a plan). */
	http("POST", "/api/plans", TOKEN_ALICE, big, n - 1, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	free(big);

	/* Command bodies: optional, JSON, {"comment": string}. */
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{bad", 4, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, "[1]", 3, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"coment\":\"x\"}", 14, NULL,
	    &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"comment\":5}", 13, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, "{\"comment\":\"ok\"}", 16,
	    NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
}

/* Checks that /api/plans?name=NAME lists one plan, at step N of KIND with
 * STATUS. */
static void
assert_listed_at(const char *name, int n, const char *kind, const char *status)
{
	char path[160];
	json_t *j, *cur;

	snprintf(path, sizeof(path), "/api/plans?name=%s", name);
	j = get(path);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	cur = json_object_get(json_array_get(json_object_get(j, "plans"), 0), "current");
	assert_int_equal(json_integer_value(json_object_get(cur, "n")), n);
	assert_string_equal(json_string_value(json_object_get(cur, "kind")), kind);
	assert_string_equal(json_string_value(json_object_get(cur, "status")), status);
	assert_true(json_is_integer(json_object_get(cur, "started_ms")) ||
	    strcmp(status, "waiting_approval") == 0);
	json_decref(j);
}

static void
test_gate_approved_by_an_operator(void **state)
{
	char name[80], path[128], sha[65];
	const char *yaml;
	struct resp r;
	json_t *j, *st, *res;
	long long id;

	(void)state;
	id = submit("gate", name, sizeof(name));
	yaml = plan_yaml("gate", name, sizeof(name));
	assert_int_equal(auth_hash_hex(yaml, strlen(yaml), sha), 0);

	/* The plan as recorded. */
	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	j = get(path);
	assert_string_equal(json_string_value(json_object_get(j, "name")), name);
	assert_string_equal(json_string_value(json_object_get(j, "sha256")), sha);
	assert_int_equal(json_array_size(json_object_get(j, "steps")), 2);
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "kind")), "verify_ladder");
	assert_true(json_is_true(json_object_get(st, "gate")));
	json_decref(j);
	j = get("/api/plans");
	assert_true(json_array_size(json_object_get(j, "plans")) >= 1);
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans?name=%s", name);
	j = get(path);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	json_decref(j);

	/* The same name again while it runs: 409. */
	http("POST", "/api/plans", TOKEN_BOB, yaml, strlen(yaml), NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);

	/* The engine reaches the gate; the first step's result is there. */
	j = wait_step(id, 2, "waiting_approval");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")), "waiting");
	st = json_array_get(json_object_get(j, "steps"), 0);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "succeeded");
	assert_true(json_is_object(json_object_get(st, "result")));
	assert_true(json_is_integer(json_object_get(st, "ended_ms")));
	assert_true(json_is_array(json_object_get(j, "alerts")));
	json_decref(j);
	/* The list says where the plan is, without its results. */
	assert_listed_at(name, 2, "verify_ladder", "waiting_approval");

	/* Approving a step that is not waiting, or that does not exist. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/3/approve", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/retry", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans/%lld/alerts/77/ack", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);

	/* Without a token, or with a wrong one: 401 and nothing recorded. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	http("POST", path, NULL, NULL, 0, NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);
	http("POST", path, TOKEN_ALICE "x", NULL, 0, NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);

	/* Bob approves; the history says bob. */
	http("POST", path, TOKEN_BOB, "{\"comment\":\"ladder looks right\"}", 32,
	    "Content-Type: application/json", &r);
	if (r.status != 202)
		fail_msg("approve: %ld %s", r.status, r.body);
	j = body_json(&r);
	assert_string_equal(json_string_value(json_object_get(j, "actor")), "bob");
	assert_int_equal(json_integer_value(json_object_get(j, "step")), 2);
	json_decref(j);
	resp_clear(&r);
	j = wait_plan(id, "succeeded");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "approved_by")), "bob");
	assert_string_equal(json_string_value(json_object_get(st, "approval_comment")),
	    "ladder looks right");
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")), "approved");
	json_decref(j);
	assert_non_null(actor_of(id, "step.approved"));
	assert_string_equal(actor_of(id, "step.approved"), "bob");
	assert_string_equal(actor_of(id, "plan.submitted"), "alice");
	assert_listed_at(name, 2, "verify_ladder", "succeeded");

	/* A finished plan: abort is refused; the samples answer (none here). */
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans/%lld/samples?since=0", id);
	j = get(path);
	assert_true(json_is_array(json_object_get(j, "samples")));
	json_decref(j);
	/* A step's result has its own route: the result the plan carries. */
	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	j = get(path);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/result", id);
	res = get(path);
	assert_true(json_is_object(res));
	assert_true(json_equal(res, json_object_get(json_array_get(json_object_get(j,
	    "steps"), 1), "result")));
	json_decref(res);
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/99/result", id);
	http("GET", path, NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);
	cleanup_broker("gate");
}

/* POST PATH as alice with no body; asserts STATUS; the answer's JSON. */
static json_t *
post_as_alice(const char *path, long status)
{
	struct resp r;
	json_t *j;

	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	if (r.status != status)
		fail_msg("POST %s: expected %ld, got %ld: %s", path, status, r.status,
		    r.body ? r.body : "");
	j = body_json(&r);
	resp_clear(&r);
	return j;
}

/* A gated step not reached yet can be approved ahead of
 * time. The approval is recorded as such (step.approved_ahead, the
 * command done "approved ahead"), the gate opens when the plan gets there
 * without waiting, and the approver is the one who gave it. */
static void
test_approve_ahead(void **state)
{
	char name[80], path[128];
	json_t *j, *st, *cmd;
	long long id, c;

	(void)state;
	plan_steps = "[{ step: declare_ladder, gate: true }, { step: verify_ladder, "
	    "gate: true }]";
	id = submit("ahead", name, sizeof(name));
	plan_steps = NULL;
	json_decref(wait_step(id, 1, "waiting_approval"));
	/* Step 2 is pending behind step 1's gate: approving it now is accepted. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	j = post_as_alice(path, 202);
	c = (long long)json_integer_value(json_object_get(j, "command"));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/commands/%lld", id, c);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		cmd = get(path);
		if (strcmp(json_string_value(json_object_get(cmd, "state")), "pending") != 0)
			break;
		json_decref(cmd);
		cmd = NULL;
		sleep_ms(100);
	}
	assert_non_null(cmd);
	assert_string_equal(json_string_value(json_object_get(cmd, "state")), "done");
	assert_non_null(strstr(json_string_value(json_object_get(cmd, "outcome")),
	    "approved ahead"));
	json_decref(cmd);
	assert_string_equal(actor_of(id, "step.approved_ahead"), "alice");
	/* Still waiting at step 1: the ahead approval did not open that gate. */
	j = wait_step(id, 1, "waiting_approval");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "status")), "pending");
	assert_string_equal(json_string_value(json_object_get(st, "gate_state")),
	    "approved_ahead");
	json_decref(j);
	/* Approving step 1 runs both, step 2 without waiting. */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	json_decref(post_as_alice(path, 202));
	j = wait_plan(id, "succeeded");
	st = json_array_get(json_object_get(j, "steps"), 1);
	assert_string_equal(json_string_value(json_object_get(st, "approved_by")), "alice");
	assert_true(json_is_true(json_object_get(st, "approved_ahead")));
	json_decref(j);
	/* Step 2 never waited: its gate was open when the plan reached it. */
	{
		json_t *h, *ev;
		size_t i;
		int waits = 0;

		snprintf(path, sizeof(path), "/api/plans/%lld/history", id);
		h = get(path);
		json_array_foreach(json_object_get(h, "events"), i, ev)
			if (strcmp(json_string_value(json_object_get(ev, "kind")),
			    "step.waiting_approval") == 0)
				waits++;
		assert_int_equal(waits, 1);
		json_decref(h);
	}
	cleanup_broker("ahead");
}

/* A name is unique among plans not archived. A finished
 * plan's name submitted again is refused (409, saying to archive it);
 * archiving a running plan is refused; once archived, the name is free,
 * and the plans of that name are two, the new one found by name. */
static void
test_names_and_archive(void **state)
{
	char name[80], path[128];
	const char *yaml;
	struct resp r;
	json_t *j;
	long long id, id2;

	(void)state;
	id = submit("names", name, sizeof(name));
	yaml = plan_yaml("names", name, sizeof(name));
	json_decref(wait_step(id, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/archive", id);
	j = post_as_alice(path, 409);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")),
	    "only a finished plan"));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	json_decref(post_as_alice(path, 202));
	json_decref(wait_plan(id, "succeeded"));
	/* The same name again: refused, the succeeded plan holds it. */
	http("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml),
	    "Content-Type: application/yaml", &r);
	assert_error(&r, 409);
	j = body_json(&r);
	assert_non_null(strstr(json_string_value(json_object_get(j, "error")), "archive it"));
	assert_int_equal(json_integer_value(json_object_get(j, "id")), id);
	json_decref(j);
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans?name=%s", name);
	j = get(path);
	assert_int_equal(json_array_size(json_object_get(j, "plans")), 1);
	json_decref(j);
	/* Without a token: 401. Archived by alice; a second archive: 409. */
	snprintf(path, sizeof(path), "/api/plans/%lld/archive", id);
	http("POST", path, NULL, NULL, 0, NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);
	j = post_as_alice(path, 200);
	assert_string_equal(json_string_value(json_object_get(j, "actor")), "alice");
	json_decref(j);
	json_decref(post_as_alice(path, 409));
	assert_string_equal(actor_of(id, "plan.archived"), "alice");
	/* The name is free: a new plan; the old one says it is archived. */
	id2 = submit("names", name, sizeof(name));
	assert_true(id2 > id);
	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	j = get(path);
	assert_true(json_is_integer(json_object_get(j, "archived_ms")));
	json_decref(j);
	snprintf(path, sizeof(path), "/api/plans/%lld", id2);
	j = get(path);
	assert_true(json_is_null(json_object_get(j, "archived_ms")));
	json_decref(j);
	json_decref(wait_step(id2, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id2);
	json_decref(post_as_alice(path, 202));
	json_decref(wait_plan(id2, "aborted"));
	/* The remote verb: `cutover archive NAME` archives the newest, the
	 * aborted one; again, it is refused (exit 1) saying why. */
	{
		char out[1024];

		assert_int_equal(cli(out, sizeof(out), TOKEN_BOB, "archive", "--server", base, name,
		    NULL), 0);
		assert_non_null(strstr(out, "archived by bob"));
		assert_int_equal(cli(out, sizeof(out), TOKEN_BOB, "archive", "--server", base, name,
		    NULL), 1);
	}
	snprintf(path, sizeof(path), "/api/plans/%lld", id2);
	j = get(path);
	assert_true(json_is_integer(json_object_get(j, "archived_ms")));
	json_decref(j);
	cleanup_broker("names");
}

static void
test_remote_cli(void **state)
{
	char name[80], file[320], out[16384], badfile[320];
	json_t *j, *ev;
	size_t i;
	int saw = 0;
	FILE *f;

	(void)state;
	plan_yaml("cli", name, sizeof(name));
	snprintf(file, sizeof(file), "%s/cli.yaml", dir);

	/* Usage errors are 2; a refused or unreachable request is 1. */
	assert_int_equal(cli(NULL, 0, NULL, "approve", "--server", base, name, NULL), 2);
	assert_int_equal(cli(NULL, 0, NULL, "approve", "--server", base, name, "2", "--as",
	    "carol", NULL), 2);
	assert_int_equal(cli(NULL, 0, NULL, "submit", "--db", db, "--server", base, file,
	    NULL), 2);
	assert_int_equal(cli(NULL, 0, NULL, "submit", "--server", base, file, NULL), 1);
	assert_int_equal(cli(NULL, 0, TOKEN_BOB, "status", "--server",
	    "http://127.0.0.1:1", NULL), 1);
	snprintf(badfile, sizeof(badfile), "%s/bad.yaml", dir);
	f = fopen(badfile, "w");
	assert_non_null(f);
	fputs("name: x\nstepz: []\n", f);
	fclose(f);
	assert_int_equal(cli(NULL, 0, TOKEN_BOB, "submit", "--server", base, badfile, NULL),
	    1);

	/* Submit, see it, approve its gate by name, read its history. */
	assert_int_equal(cli(out, sizeof(out), TOKEN_BOB, "submit", "--server", base, file,
	    NULL), 0);
	assert_non_null(strstr(out, name));
	assert_int_equal(cli(out, sizeof(out), NULL, "status", "--server", base, NULL), 0);
	assert_non_null(strstr(out, name));
	for (i = 0; i < WAIT_MS / 100; i++) {
		assert_int_equal(cli(out, sizeof(out), NULL, "status", "--server", base, name,
		    NULL), 0);
		if (strstr(out, "waiting_approval") != NULL)
			break;
		sleep_ms(100);
	}
	assert_non_null(strstr(out, "waiting_approval"));
	assert_non_null(strstr(out, "verify_ladder"));
	assert_int_equal(cli(NULL, 0, NULL, "approve", "--server", base, name,
	    "verify_ladder", NULL), 1);
	assert_int_equal(cli(NULL, 0, TOKEN_BOB, "approve", "--server", base, name,
	    "declare_ladder", NULL), 1);
	assert_int_equal(cli(out, sizeof(out), TOKEN_BOB, "approve", "--server", base, name,
	    "verify_ladder", "--comment", "from the CLI", NULL), 0);
	assert_non_null(strstr(out, "bob"));
	for (i = 0; i < WAIT_MS / 100; i++) {
		assert_int_equal(cli(out, sizeof(out), NULL, "status", "--server", base, name,
		    "--json", NULL), 0);
		j = json_loads(out, 0, NULL);
		assert_non_null(j);
		saw = strcmp(json_string_value(json_object_get(j, "status")), "succeeded") == 0;
		json_decref(j);
		if (saw)
			break;
		sleep_ms(100);
	}
	assert_true(saw);
	assert_int_equal(cli(out, sizeof(out), NULL, "history", "--server", base, name,
	    NULL), 0);
	assert_non_null(strstr(out, "step.approved"));
	assert_non_null(strstr(out, "history verifies"));
	assert_int_equal(cli(out, sizeof(out), NULL, "history", "--server", base, name,
	    "--json", NULL), 0);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	saw = 0;
	json_array_foreach(json_object_get(j, "events"), i, ev)
		if (strcmp(json_string_value(json_object_get(ev, "kind")), "step.approved") == 0)
			saw = strcmp(json_string_value(json_object_get(ev, "actor")), "bob") == 0;
	assert_true(saw);
	json_decref(j);
	/* The same verbs on the database directly still work. */
	assert_int_equal(cli(out, sizeof(out), NULL, "status", "--db", db, name, NULL), 0);
	assert_non_null(strstr(out, "succeeded"));
	cleanup_broker("cli");
}

/* Makes TEST's declare_ladder fail: its level 0 queue declared first as
 * a classic queue without arguments (declare_ladder refuses a queue that
 * exists with other arguments); GONE true deletes it again. */
static void
conflicting_level(const char *test, bool gone)
{
	struct plan_errors errs = { 0 };
	struct step_ctx c;
	struct plan *p = NULL;
	char err[1024], file[320], q[128];

	snprintf(file, sizeof(file), "%s/%s.yaml", dir, test);
	if (plan_load_file(file, &p, &errs) != 0)
		fail_msg("%s does not load", file);
	if (step_ctx_open(&c, p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	snprintf(q, sizeof(q), "itestapi%ld.%s.level.00", (long)getpid(), test);
	if (gone)
		assert_int_equal(broker_queue_delete(c.amqp, q, 0, NULL, err, sizeof(err)), 0);
	else if (broker_queue_declare(c.amqp, q, true, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", q, err);
	step_ctx_close(&c);
	plan_free(p);
}

/* A failed step retried and a plan aborted by an operator, through the
 * API's routes (VIA_CLI false) or the remote verbs of the CLI: the retry
 * runs the step again and the plan goes on to its gate, the abort ends
 * it, and the history names the operator for both. */
static void
retry_and_abort(const char *test, bool via_cli)
{
	char name[80], path[128], out[4096];
	struct resp r;
	json_t *j;
	long long id;

	plan_yaml(test, name, sizeof(name));
	conflicting_level(test, false);
	id = submit(test, name, sizeof(name));
	json_decref(wait_plan(id, "failed"));
	conflicting_level(test, true);
	if (via_cli)
		assert_int_equal(cli(out, sizeof(out), TOKEN_BOB, "retry", "--server", base,
		    name, "declare_ladder", "--comment", "conflict removed", NULL), 0);
	else {
		snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/retry", id);
		http("POST", path, TOKEN_BOB, NULL, 0, NULL, &r);
		if (r.status != 202)
			fail_msg("retry: %ld %s", r.status, r.body ? r.body : "");
		resp_clear(&r);
	}
	/* The retry is acted on at the engine's next turn: the plan runs
	 * again, then waits at the gate. */
	json_decref(wait_plan(id, "running"));
	json_decref(wait_step(id, 2, "waiting_approval"));
	assert_non_null(actor_of(id, "step.retry"));
	assert_string_equal(actor_of(id, "step.retry"), "bob");
	if (via_cli)
		assert_int_equal(cli(out, sizeof(out), TOKEN_ALICE, "abort", "--server", base,
		    name, NULL), 0);
	else {
		snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
		http("POST", path, TOKEN_ALICE, "{\"comment\":\"not today\"}", 23,
		    "Content-Type: application/json", &r);
		if (r.status != 202)
			fail_msg("abort: %ld %s", r.status, r.body ? r.body : "");
		resp_clear(&r);
	}
	j = wait_plan(id, "aborted");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(j, "steps"), 1), "status")), "waiting_approval");
	json_decref(j);
	assert_non_null(actor_of(id, "plan.aborted"));
	assert_string_equal(actor_of(id, "plan.aborted"), "alice");
	cleanup_broker(test);
}

static void
test_retry_and_abort_routes(void **state)
{
	(void)state;
	retry_and_abort("routes", false);
}

static void
test_remote_retry_and_abort(void **state)
{
	(void)state;
	retry_and_abort("remote", true);
}

/* Raises an alert of KIND on plan ID in the server's database, as the
 * watch does (store_alert_raise); returns its id. */
static long long
raise_alert(long long id, const char *kind)
{
	struct store *s = NULL;
	int64_t aid = 0;
	bool raised = false;
	char err[512];

	if (store_open(db, &s, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (store_alert_raise(s, id, kind, "raised by test_api", clock_now_ms(), &aid,
	    &raised, err, sizeof(err)) != 0 || !raised)
		fail_msg("raising a %s alert: %s", kind, err);
	store_close(s);
	return (long long)aid;
}

/* Waits until plan ID lists no open alert AID. */
static void
wait_acked(long long id, long long aid)
{
	char path[64];

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		json_t *j = get(path), *a;
		size_t i;
		bool open = false;

		json_array_foreach(json_object_get(j, "alerts"), i, a)
			open = open || json_integer_value(json_object_get(a, "id")) == aid;
		json_decref(j);
		if (!open)
			return;
		sleep_ms(100);
	}
	fail_msg("alert %lld of plan %lld was never acknowledged", aid, id);
}

/* Open alerts acknowledged through the ack route (bob) and the remote ack
 * verb (alice): each leaves the plan's open alerts, and the history
 * records alert.acked by that operator. */
static void
test_ack_route_and_remote_ack(void **state)
{
	char name[80], path[128], out[4096], aid_s[32];
	struct resp r;
	long long id, a1, a2;

	(void)state;
	id = submit("ack", name, sizeof(name));
	json_decref(wait_step(id, 2, "waiting_approval"));
	a1 = raise_alert(id, "parking");
	a2 = raise_alert(id, "probe");
	snprintf(path, sizeof(path), "/api/plans/%lld/alerts/%lld/ack", id, a1);
	http("POST", path, TOKEN_BOB, "{\"comment\":\"seen\"}", 18,
	    "Content-Type: application/json", &r);
	if (r.status != 202)
		fail_msg("ack: %ld %s", r.status, r.body ? r.body : "");
	resp_clear(&r);
	wait_acked(id, a1);
	assert_non_null(actor_of(id, "alert.acked"));
	assert_string_equal(actor_of(id, "alert.acked"), "bob");
	/* The other is still open; the CLI acknowledges it. */
	http("POST", path, TOKEN_BOB, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);
	snprintf(aid_s, sizeof(aid_s), "%lld", a2);
	assert_int_equal(cli(out, sizeof(out), TOKEN_ALICE, "ack", "--server", base, name,
	    aid_s, NULL), 0);
	wait_acked(id, a2);
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	resp_clear(&r);
	json_decref(wait_plan(id, "aborted"));
	cleanup_broker("ack");
}

static void
test_idle_connection_times_out(void **state)
{
	static const char partial[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n";
	struct sockaddr_in sa = { 0 };
	struct timeval tv = { 40, 0 };
	struct timespec t0, t1;
	char buf[256];
	ssize_t n;
	double s;
	int fd;

	(void)state;
	/* Half a request, then nothing: the server hangs up after its idle
	 * timeout (15 s), without an answer. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(send(fd, partial, sizeof(partial) - 1, MSG_NOSIGNAL),
	    (ssize_t)sizeof(partial) - 1);
	n = recv(fd, buf, sizeof(buf), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	close(fd);
	s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	assert_true(n <= 0);
	if (s < 10 || s > 25)
		fail_msg("closed after %.1f s, expected about 15", s);
}

static void
test_stop_and_resume(void **state)
{
	char name[80], path[128], line[4096];
	struct resp r;
	json_t *j;
	long long id;
	int requests = 0;
	FILE *f;

	(void)state;
	id = submit("resume", name, sizeof(name));
	json_decref(wait_step(id, 2, "waiting_approval"));
	/* SIGTERM: a clean stop. */
	assert_int_equal(stop_server(), 0);
	http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 0);
	resp_clear(&r);
	/* Restarted, it picks the plan up where it was. */
	start_server(ops);
	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	j = get(path);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "running");
	json_decref(j);
	json_decref(wait_step(id, 2, "waiting_approval"));
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 202);
	resp_clear(&r);
	json_decref(wait_plan(id, "succeeded"));
	assert_string_equal(actor_of(id, "step.approved"), "alice");
	cleanup_broker("resume");

	/* The log has a line per request and never a token. */
	f = fopen(logfile, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		assert_null(strstr(line, TOKEN_ALICE));
		assert_null(strstr(line, TOKEN_BOB));
		assert_null(strstr(line, "tok-"));
		requests += strstr(line, "msg=\"http ") != NULL;
	}
	fclose(f);
	assert_true(requests > 20);
}

/* The database file removed under a running serve: /healthz says so (503,
 * with what to do), /metrics exports it, the log says it once, and the
 * engine takes no further action; serve still stops cleanly. */
static void
test_database_removed_under_serve(void **state)
{
	char kept[sizeof(db)], path[sizeof(db) + 8], line[4096];
	struct resp r;
	int said = 0, i;
	FILE *f;

	(void)state;
	assert_int_equal(stop_server(), 0);
	memcpy(kept, db, sizeof(kept));
	snprintf(db, sizeof(db), "%s/removed.db", dir);
	start_server(ops);
	http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	resp_clear(&r);
	unlink(db);
	snprintf(path, sizeof(path), "%s-wal", db);
	unlink(path);
	snprintf(path, sizeof(path), "%s-shm", db);
	unlink(path);
	for (i = 0; i < 100; i++) {
		http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
		if (r.status == 503)
			break;
		resp_clear(&r);
		sleep_ms(50);
	}
	assert_error(&r, 503);
	assert_non_null(strstr(r.body, "removed.db is gone"));
	assert_non_null(strstr(r.body, "restore the file from a backup"));
	resp_clear(&r);
	http("GET", "/metrics", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\ncutover_database_file_ok 0\n"));
	resp_clear(&r);
	sleep_ms(500);	/* a few engine turns (--poll-ms 100): said once */
	assert_int_equal(stop_server(), 0);
	assert_non_null(f = fopen(logfile, "r"));
	while (fgets(line, sizeof(line), f) != NULL)
		said += strstr(line, "removed.db is gone") != NULL &&
		    strstr(line, "takes no action") != NULL && strstr(line, "msg=\"http") == NULL;
	fclose(f);
	assert_int_equal(said, 1);
	memcpy(db, kept, sizeof(db));
	start_server(ops);
}

static void
test_without_operators(void **state)
{
	struct resp r;
	char listen[64];

	(void)state;
	assert_int_equal(stop_server(), 0);
	/* Away from loopback, the operators file is required. */
	snprintf(listen, sizeof(listen), "0.0.0.0:%d", port);
	assert_int_equal(cli(NULL, 0, NULL, "serve", "--db", db, "--listen", listen, NULL),
	    2);
	assert_int_equal(cli(NULL, 0, NULL, "serve", "--db", db, "--listen", "nowhere:80",
	    NULL), 2);
	/* Without one on loopback: reads work, every write is 401 and says why. */
	start_server(NULL);
	json_decref(get("/api/plans"));
	http("POST", "/api/plans/1/abort", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 401);
	assert_non_null(strstr(r.body, "--operators"));
	resp_clear(&r);
	assert_int_equal(stop_server(), 0);
	start_server(ops);
}

static int
setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char hash[65];
	FILE *f;

	(void)state;
	if (getenv("CUTOVER_TEST_AMQP") == NULL || getenv("CUTOVER_TEST_MGMT") == NULL ||
	    getenv("CUTOVER_TEST_USER") == NULL || getenv("CUTOVER_TEST_PASSWORD") == NULL ||
	    getenv("CUTOVER_BINARY") == NULL) {
		fprintf(stderr, "set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, "
		    "CUTOVER_TEST_PASSWORD and CUTOVER_BINARY (scripts/test and ctest do)\n");
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/itest_api.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(db, sizeof(db), "%s/api.db", dir);
	snprintf(ops, sizeof(ops), "%s/operators", dir);
	snprintf(logfile, sizeof(logfile), "%s/serve.log", dir);
	if ((f = fopen(ops, "w")) == NULL)
		return -1;
	fprintf(f, "# test operators\n");
	auth_hash_hex(TOKEN_ALICE, strlen(TOKEN_ALICE), hash);
	fprintf(f, "alice:%s\n", hash);
	auth_hash_hex(TOKEN_BOB, strlen(TOKEN_BOB), hash);
	fprintf(f, "  bob : %s   # the second\n", hash);
	fclose(f);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	port = itest_free_port();
	start_server(ops);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[300];
	int rc;

	(void)state;
	rc = server > 0 ? stop_server() : 0;
	if (dir[0] != '\0' && getenv("CUTOVER_TEST_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			rc = 1;
	}
	curl_global_cleanup();
	return rc == 0 ? 0 : -1;
}


/* Plan ID's history, asserting that the chain verifies. */
static json_t *
history_of(long long id)
{
	char path[64];
	json_t *h;

	snprintf(path, sizeof(path), "/api/plans/%lld/history", id);
	h = get(path);
	assert_true(json_is_true(json_object_get(json_object_get(h, "verification"),
	    "verified")));
	return h;
}

/* How many events of KIND (by ACTOR with details.status STATUS, unless
 * ACTOR is NULL) plan ID's history holds; the first one into *FIRST (a new
 * reference) when FIRST is not NULL. */
static int
count_by(long long id, const char *kind, const char *actor, int status, json_t **first)
{
	json_t *h = history_of(id), *ev;
	size_t i;
	int n = 0;

	json_array_foreach(json_object_get(h, "events"), i, ev) {
		if (strcmp(json_string_value(json_object_get(ev, "kind")), kind) != 0 ||
		    (actor != NULL && (strcmp(json_string_value(json_object_get(ev,
		    "actor")), actor) != 0 || json_integer_value(json_object_get(
		    json_object_get(ev, "details"), "status")) != status)))
			continue;
		if (n++ == 0 && first != NULL)
			*first = json_incref(ev);
	}
	json_decref(h);
	return n;
}

static int
count_kind(long long id, const char *kind, json_t **first)
{
	return count_by(id, kind, NULL, 0, first);
}

/* How many events plan ID's history holds. */
static int
history_size(long long id)
{
	json_t *h = history_of(id);
	int n = (int)json_array_size(json_object_get(h, "events"));

	json_decref(h);
	return n;
}

/* GET plan ID's export in FORMAT: asserts its headers and that it
 * verifies offline, with every one of the plan's events; the check. */
static void
export_verifies(long long id, const char *format, const char *type, int events,
    struct export_check *c)
{
	char path[96], want[160], err[256];
	struct resp r;

	snprintf(path, sizeof(path), "/api/plans/%lld/export?format=%s", id, format);
	http("GET", path, NULL, NULL, 0, NULL, &r);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	assert_true(strncmp(r.type, type, strlen(type)) == 0);
	snprintf(want, sizeof(want), "-%lld-history.%s\"", id, format);
	assert_non_null(strstr(r.disposition, "attachment; filename=\"cutover-"));
	assert_non_null(strstr(r.disposition, want));
	if (export_verify(r.body, r.len, c, err, sizeof(err)) != 0 || !c->verified)
		fail_msg("%s export does not verify: event %lld: %s %s", format,
		    (long long)c->bad_id, c->reason, err);
	assert_int_equal(c->plan_id, id);
	assert_int_equal(c->plan_events, events);
	assert_null(strstr(r.body, TOKEN_ALICE));
	assert_null(strstr(r.body, "tok-wrong"));
	resp_clear(&r);
}

static void
test_export_and_denied_requests(void **state)
{
	char name[80], path[160], bad[96];
	struct export_check c;
	struct resp r;
	json_t *ev = NULL, *d;
	int64_t t0, t1;
	int n, denied, more, total;

	(void)state;
	long long id = submit("denied", name, sizeof(name));
	json_decref(wait_step(id, 2, "waiting_approval"));

	/* the export: both formats verify and carry every event so far */
	total = history_size(id);
	export_verifies(id, "json", "application/json", total, &c);
	export_verifies(id, "csv", "text/csv", total, &c);
	snprintf(path, sizeof(path), "/api/plans/%lld/export?format=xml", id);
	http("GET", path, NULL, NULL, 0, NULL, &r);
	assert_error(&r, 400);
	resp_clear(&r);
	http("GET", "/api/plans/999999/export", NULL, NULL, 0, NULL, &r);
	assert_error(&r, 404);
	resp_clear(&r);

	/* a wrong token: 401, recorded without the token or an actor */
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/2/approve", id);
	http("POST", path, "tok-wrong-0", NULL, 0, NULL, &r);
	assert_error(&r, 401);
	resp_clear(&r);
	assert_int_equal(count_kind(id, "request.denied", &ev), 1);
	d = json_object_get(ev, "details");
	assert_string_equal(json_string_value(json_object_get(ev, "actor")), DENIED_ACTOR);
	assert_int_equal(json_integer_value(json_object_get(d, "status")), 401);
	assert_string_equal(json_string_value(json_object_get(d, "route")), "approve");
	assert_string_equal(json_string_value(json_object_get(d, "path")), path);
	assert_string_equal(json_string_value(json_object_get(d, "from")), "127.0.0.1");
	assert_non_null(strstr(json_string_value(json_object_get(d, "why")), "token"));
	json_decref(ev);

	/* an operator's refused command: 409 with the operator */
	http("POST", "/api/plans/999999/abort", TOKEN_ALICE, NULL, 0, NULL, &r);
	assert_error(&r, 404);		/* no such plan: nothing to record it in */
	resp_clear(&r);
	snprintf(path, sizeof(path), "/api/plans/%lld/steps/1/approve", id);
	http("POST", path, TOKEN_BOB, NULL, 0, NULL, &r);
	assert_error(&r, 409);
	resp_clear(&r);
	/* re-submitting the running plan's name: 409, in that plan's history */
	{
		const char *yaml = plan_yaml("denied", name, sizeof(name));

		http("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml), NULL, &r);
		assert_error(&r, 409);
		resp_clear(&r);
	}
	assert_int_equal(count_kind(id, "request.denied", NULL), 3);
	assert_string_equal(actor_of(id, "request.denied"), DENIED_ACTOR);
	assert_int_equal(count_by(id, "request.denied", "bob", 409, NULL), 1);
	assert_int_equal(count_by(id, "request.denied", "alice", 409, NULL), 1);

	/* a burst: past DENIED_PER_MINUTE a minute, only counted, then
	 * recorded as one request.denied.more (written when the server stops) */
	t0 = clock_now_ms();
	for (int i = 0; i < 40; i++) {
		snprintf(bad, sizeof(bad), "tok-wrong-%d", i);
		snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
		http("POST", path, bad, NULL, 0, NULL, &r);
		assert_int_equal(r.status, 401);
		resp_clear(&r);
	}
	t1 = clock_now_ms();
	denied = count_kind(id, "request.denied", NULL);
	n = (int)(t1 / 60000 - t0 / 60000) + 1;	/* minutes the burst spanned */
	assert_true(denied <= 3 + DENIED_PER_MINUTE * n);
	assert_true(denied >= DENIED_PER_MINUTE);
	assert_int_equal(stop_server(), 0);
	start_server(ops);
	more = 0;
	{
		json_t *h = history_of(id), *e;
		size_t i;

		json_array_foreach(json_object_get(h, "events"), i, e)
			if (strcmp(json_string_value(json_object_get(e, "kind")),
			    "request.denied.more") == 0)
				more += (int)json_integer_value(json_object_get(json_object_get(e,
				    "details"), "count"));
		json_decref(h);
	}
	/* every refusal is in the history: one by one or counted */
	assert_int_equal(denied + more, 43);
	/* and the export, with them, still verifies */
	total = history_size(id);
	assert_true(total > denied);
	export_verifies(id, "csv", "text/csv", total, &c);
	snprintf(path, sizeof(path), "/api/plans/%lld/abort", id);
	json_decref(post_as_alice(path, 202));
	json_decref(wait_plan(id, "aborted"));
	cleanup_broker("denied");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reads_and_routes),
		cmocka_unit_test(test_writes_need_an_operator),
		cmocka_unit_test(test_invalid_plans),
		cmocka_unit_test(test_limits_and_malformed_bodies),
		cmocka_unit_test(test_gate_approved_by_an_operator),
		cmocka_unit_test(test_approve_ahead),
		cmocka_unit_test(test_names_and_archive),
		cmocka_unit_test(test_remote_cli),
		cmocka_unit_test(test_retry_and_abort_routes),
		cmocka_unit_test(test_remote_retry_and_abort),
		cmocka_unit_test(test_ack_route_and_remote_ack),
		cmocka_unit_test(test_export_and_denied_requests),
		cmocka_unit_test(test_idle_connection_times_out),
		cmocka_unit_test(test_stop_and_resume),
		cmocka_unit_test(test_database_removed_under_serve),
		cmocka_unit_test(test_without_operators),
	};

	if (getenv("CUTOVER_TEST_FILTER") != NULL)
		cmocka_set_test_filter(getenv("CUTOVER_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
