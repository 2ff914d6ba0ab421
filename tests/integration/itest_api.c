/* itest_api: the API tests' serve, requests and plans (itest_api.h). */
#include "itest_api.h"

char iapi_dir[256];
char iapi_db[300];
char iapi_ops[300];
char iapi_logfile[300];
char iapi_base[64];
int iapi_port;
static pid_t server = -1;

void
iapi_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

void
iapi_resp_clear(struct resp *r)
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

/* iapi_http on the server at BASE ("http://127.0.0.1:PORT"). */
static void
http_at(const char *base, const char *method, const char *path, const char *token,
    const char *body, size_t len, const char *extra, struct resp *r)
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

void
iapi_http(const char *method, const char *path, const char *token, const char *body,
    size_t len, const char *extra, struct resp *r)
{
	http_at(iapi_base, method, path, token, body, len, extra, r);
}

int
iapi_fetch(unsigned port, const char *method, const char *path, const char *token,
    char *out, size_t outlen)
{
	char base[64];
	struct resp r;
	int status;

	snprintf(base, sizeof(base), "http://127.0.0.1:%u", port);
	http_at(base, method, path, token, NULL, 0, NULL, &r);
	snprintf(out, outlen, "%.*s", r.body != NULL ? (int)r.len : 0,
	    r.body != NULL ? r.body : "");
	status = (int)r.status;
	iapi_resp_clear(&r);
	return status;
}

json_t *
iapi_body_json(const struct resp *r)
{
	json_t *j;

	assert_non_null(r->body);
	j = json_loadb(r->body, r->len, 0, NULL);
	if (j == NULL)
		fail_msg("not JSON: %s", r->body);
	return j;
}

void
iapi_assert_error(const struct resp *r, long status)
{
	json_t *j;

	if (r->status != status)
		fail_msg("expected %ld, got %ld: %s", status, r->status,
		    r->body ? r->body : "");
	j = iapi_body_json(r);
	assert_true(json_is_string(json_object_get(j, "error")));
	json_decref(j);
}

void
iapi_expect_error(const char *method, const char *path, const char *token,
    const char *body, size_t len, const char *extra, long status)
{
	struct resp r;

	iapi_http(method, path, token, body, len, extra, &r);
	iapi_assert_error(&r, status);
	iapi_resp_clear(&r);
}

json_t *
iapi_get(const char *path)
{
	struct resp r;
	json_t *j;

	iapi_http("GET", path, NULL, NULL, 0, NULL, &r);
	if (r.status != 200)
		fail_msg("GET %s: %ld %s", path, r.status, r.body ? r.body : "");
	j = iapi_body_json(&r);
	iapi_resp_clear(&r);
	return j;
}

json_t *
iapi_getf(const char *fmt, ...)
{
	char path[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(path, sizeof(path), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(path))
		fail_msg("GET %s: the path is too long", fmt);
	return iapi_get(path);
}

void
iapi_start_server(const char *operators)
{
	char listen[64], poll[] = "100";
	struct resp r;
	int i, fd;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", iapi_port);
	snprintf(iapi_base, sizeof(iapi_base), "http://127.0.0.1:%d", iapi_port);
	server = fork();
	assert_true(server >= 0);
	if (server == 0) {
		fd = open(iapi_logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd >= 0)
			dup2(fd, 2);
		dup2(2, 1);
		if (operators != NULL)
			execl(getenv("CUTOVER_BINARY"), "cutover", "serve", "--db", iapi_db,
			    "--listen",
			    listen, "--operators", operators, "--poll-ms", poll, (char *)NULL);
		else
			execl(getenv("CUTOVER_BINARY"), "cutover", "serve", "--db", iapi_db,
			    "--listen",
			    listen, "--poll-ms", poll, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200; i++) {
		int st;

		assert_int_equal(waitpid(server, &st, WNOHANG), 0);
		iapi_http("GET", "/healthz", NULL, NULL, 0, NULL, &r);
		st = r.status == 200;
		iapi_resp_clear(&r);
		if (st)
			return;
		iapi_sleep_ms(50);
	}
	fail_msg("cutover serve did not answer on %s", listen);
}

int
iapi_stop_server(void)
{
	int st;

	if (server <= 0)
		return -1;
	kill(server, SIGTERM);
	assert_int_equal(waitpid(server, &st, 0), server);
	server = -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
iapi_cli(char *out, size_t outlen, const char *token, const char *arg, ...)
{
	const char *argv[24];
	char outfile[320];
	va_list ap;
	pid_t pid;
	int st;
	FILE *f;

	snprintf(outfile, sizeof(outfile), "%s/cli.out", iapi_dir);
	va_start(ap, arg);
	itest_argv(argv, getenv("CUTOVER_BINARY"), arg, ap);
	va_end(ap);
	if ((pid = fork()) == 0) {
		int fd = open(outfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
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

const char *iapi_plan_steps;	/* NULL: the default steps below */

const char *
iapi_plan_yaml(const char *test, char *name, size_t namelen)
{
	static char yaml[2048], last[64];
	char file[320], stem[96];
	struct itest_plan b;

	snprintf(name, namelen, "itestapi%ld-%s", (long)getpid(), test);
	if (strcmp(last, test) != 0) {
		snprintf(last, sizeof(last), "%s", test);
		snprintf(stem, sizeof(stem), "itestapi%ld.%s", (long)getpid(), test);
		itest_plan_cleanup(stem, name);
	}
	itest_plan_begin(&b, name, NULL);
	itest_plan_addf(&b,
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
	    (long)getpid(), test, (long)getpid(), test,
	    (long)getpid(), test, iapi_plan_steps != NULL ? iapi_plan_steps :
	    "[declare_ladder, { step: verify_ladder, gate: true }]");
	snprintf(file, sizeof(file), "%s/%s.yaml", iapi_dir, test);
	itest_plan_write(&b, file);
	assert_true(b.len < sizeof(yaml));
	memcpy(yaml, b.text, b.len + 1);
	return yaml;
}

void
iapi_cleanup_broker(const char *test)
{
	struct plan_errors errs = { 0 };
	struct step_ctx c;
	struct plan *p = NULL;
	json_t *r = NULL;
	char err[1024], file[320], dest[128];

	snprintf(file, sizeof(file), "%s/%s.yaml", iapi_dir, test);
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

long long
iapi_submit(const char *test, char *name, size_t namelen)
{
	const char *yaml = iapi_plan_yaml(test, name, namelen);
	struct resp r;
	json_t *j;
	long long id;

	iapi_http("POST", "/api/plans", TOKEN_ALICE, yaml, strlen(yaml),
	    "Content-Type: application/yaml", &r);
	if (r.status != 201)
		fail_msg("submit: %ld %s", r.status, r.body ? r.body : "");
	j = iapi_body_json(&r);
	id = (long long)json_integer_value(json_object_get(j, "id"));
	assert_true(id > 0);
	assert_string_equal(json_string_value(json_object_get(j, "name")), name);
	assert_string_equal(r.location, json_string_value(json_object_get(j, "url")));
	json_decref(j);
	iapi_resp_clear(&r);
	return id;
}

json_t *
iapi_wait_step(long long id, int n, const char *status)
{
	char path[64];
	json_t *j = NULL;

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		json_t *st;

		j = iapi_get(path);
		st = json_array_get(json_object_get(j, "steps"), (size_t)n - 1);
		if (strcmp(json_string_value(json_object_get(st, "status")), status) == 0)
			return j;
		if (strcmp(json_string_value(json_object_get(j, "status")), "failed") == 0)
			fail_msg("plan %lld failed: %s", id, json_dumps(j, 0));
		json_decref(j);
		iapi_sleep_ms(100);
	}
	fail_msg("step %d of plan %lld never became %s", n, id, status);
	return NULL;
}

json_t *
iapi_wait_plan(long long id, const char *status)
{
	char path[64];
	json_t *j;

	snprintf(path, sizeof(path), "/api/plans/%lld", id);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		j = iapi_get(path);
		if (strcmp(json_string_value(json_object_get(j, "status")), status) == 0)
			return j;
		json_decref(j);
		iapi_sleep_ms(100);
	}
	fail_msg("plan %lld never became %s", id, status);
	return NULL;
}

json_t *
iapi_wait_command(long long id, long long cmd)
{
	char path[96];
	json_t *j;

	snprintf(path, sizeof(path), "/api/plans/%lld/commands/%lld", id, cmd);
	for (int t = 0; t < WAIT_MS / 100; t++) {
		j = iapi_get(path);
		if (strcmp(json_string_value(json_object_get(j, "state")), "pending") != 0)
			return j;
		json_decref(j);
		iapi_sleep_ms(100);
	}
	fail_msg("command %lld of plan %lld was never handled", cmd, id);
	return NULL;
}

const char *
iapi_actor_of(long long id, const char *kind)
{
	static char actor[AUTH_NAME_MAX];
	json_t *h, *ev;
	size_t i;
	const char *found = NULL;

	h = iapi_getf("/api/plans/%lld/history", id);
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

json_t *
iapi_post_as_alice(const char *path, long status)
{
	struct resp r;
	json_t *j;

	iapi_http("POST", path, TOKEN_ALICE, NULL, 0, NULL, &r);
	if (r.status != status)
		fail_msg("POST %s: expected %ld, got %ld: %s", path, status, r.status,
		    r.body ? r.body : "");
	j = iapi_body_json(&r);
	iapi_resp_clear(&r);
	return j;
}

int
iapi_setup(void **state)
{
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
	if (itest_temp_dir(iapi_dir, sizeof(iapi_dir), "itest_api") != 0)
		return -1;
	snprintf(iapi_db, sizeof(iapi_db), "%s/api.db", iapi_dir);
	snprintf(iapi_ops, sizeof(iapi_ops), "%s/operators", iapi_dir);
	snprintf(iapi_logfile, sizeof(iapi_logfile), "%s/serve.log", iapi_dir);
	if ((f = fopen(iapi_ops, "w")) == NULL)
		return -1;
	fprintf(f, "# test operators\n");
	auth_hash_hex(TOKEN_ALICE, strlen(TOKEN_ALICE), hash);
	fprintf(f, "alice:%s\n", hash);
	auth_hash_hex(TOKEN_BOB, strlen(TOKEN_BOB), hash);
	fprintf(f, "  bob : %s   # the second\n", hash);
	fclose(f);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	iapi_port = itest_free_port();
	iapi_start_server(iapi_ops);
	return 0;
}

int
iapi_teardown(void **state)
{
	char cmd[300];
	int rc;

	(void)state;
	rc = server > 0 ? iapi_stop_server() : 0;
	if (iapi_dir[0] != '\0' && getenv("CUTOVER_TEST_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", iapi_dir);
		if (system(cmd) != 0)
			rc = 1;
	}
	curl_global_cleanup();
	return rc == 0 ? 0 : -1;
}

int
iapi_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	return itest_main_group(tests, n, argc, argv, iapi_setup, iapi_teardown);
}
