/* test_engine_safety (integration): the engine's safety rules,
 * each against a real RabbitMQ node and a real SQLite file, with the
 * cutover binary (CUTOVER_BINARY) run as an operator would — one engine
 * per database (a second exits naming the holder; kill -9 frees it), a
 * flip confirmed but not yet recorded is never sent again (a toggle-style
 * flag served by this test counts every call), operator commands checked
 * against the state each finds (abort then retry in one poll), a database
 * held locked past the busy timeout during a watch, and a history cut
 * short; and a flag service that applies each write long after the client
 * gave up on its answer (a write in doubt) never leaves the flag on after
 * an abort. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <microhttpd.h>
#include <sqlite3.h>

#include "itest_api.h"
#include "itest_engine.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "step.h"
#include "store.h"

/* ---- a toggle-style flag service: every POST /toggle flips it ---- */

static struct MHD_Daemon *flagd;
static volatile int flag_on, flag_calls;
static unsigned flag_port = 1;         /* a valid port while none serves */
static int slow_mode;                  /* the slow service below serves the flag */
/* The plan's flag.settle line: the shortest the plan may have, unless a
 * test wants the default window, the one a plan gets (""). */
static const char *plan_settle = "  settle: 15s\n";

static enum MHD_Result refuse(struct MHD_Connection *conn);

/* Answers CONN with the flag's state, {"enabled": V}. */
static enum MHD_Result
answer_state(struct MHD_Connection *conn)
{
	struct MHD_Response *resp;
	char body[64];
	enum MHD_Result ret;

	snprintf(body, sizeof(body), "{\"enabled\":%s}", flag_on ? "true" : "false");
	resp = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
	MHD_add_response_header(resp, "Content-Type", "application/json");
	ret = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result
flag_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	static int seen;

	(void)cls; (void)version; (void)upload;
	if (*con_cls == NULL) {
		*con_cls = &seen;
		return MHD_YES;
	}
	if (*upload_size != 0) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "POST") == 0 && strcmp(url, "/toggle") == 0) {
		__atomic_add_fetch(&flag_calls, 1, __ATOMIC_SEQ_CST);
		flag_on = !flag_on;
	}
	return answer_state(conn);
}

static void
flag_start(void)
{
	const union MHD_DaemonInfo *info;

	flag_on = 0;
	flag_calls = 0;
	flagd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0,
	    NULL, NULL, flag_answer, NULL, MHD_OPTION_SOCK_ADDR, NULL, MHD_OPTION_END);
	assert_non_null(flagd);
	info = MHD_get_daemon_info(flagd, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	flag_port = info->port;
}

static void
flag_stop(void)
{
	if (flagd != NULL)
		MHD_stop_daemon(flagd);
	flagd = NULL;
	flag_port = 1;
	slow_mode = 0;
	plan_settle = "  settle: 15s\n";
}

/* ---- a slow flag service: PUT /flag {"enabled": V} is applied, and
 * answered, slow_apply_ms after it arrived (long after the flag client's
 * own timeout), GET /flag at once; one thread per connection, so reads
 * are answered while writes hang. It counts the writes it received, the
 * writes of each value, and the most writes in flight at once. ---- */

static int slow_apply_ms;              /* how late the slow service applies a write */
static volatile int slow_refuse_n;     /* answer this many writes 500, unapplied */

static volatile int slow_inflight, slow_max_inflight, slow_on_writes, slow_off_writes;

static enum MHD_Result
slow_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	char *got = *con_cls;
	int n, want;

	(void)cls; (void)version; (void)url;
	if (got == NULL) {
		if ((got = calloc(1, 64)) == NULL)
			return MHD_NO;
		*con_cls = got;
		return MHD_YES;
	}
	if (*upload_size != 0) {
		snprintf(got + strlen(got), 64 - strlen(got), "%.*s", (int)*upload_size,
		    upload);
		*upload_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, "PUT") == 0 && slow_refuse_n > 0) {
		__atomic_sub_fetch(&slow_refuse_n, 1, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&flag_calls, 1, __ATOMIC_SEQ_CST);
		return refuse(conn);
	}
	if (strcmp(method, "PUT") == 0) {
		want = strstr(got, "true") != NULL;
		__atomic_add_fetch(want ? &slow_on_writes : &slow_off_writes, 1,
		    __ATOMIC_SEQ_CST);
		n = __atomic_add_fetch(&slow_inflight, 1, __ATOMIC_SEQ_CST);
		if (n > slow_max_inflight)
			slow_max_inflight = n;
		itest_sleep_ms(slow_apply_ms);
		flag_on = want;
		__atomic_sub_fetch(&slow_inflight, 1, __ATOMIC_SEQ_CST);
	}
	return answer_state(conn);
}

/* Answers CONN 500: the write is not applied. */
static enum MHD_Result
refuse(struct MHD_Connection *conn)
{
	static const char body[] = "flag store unavailable";
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
	    MHD_RESPMEM_PERSISTENT);
	ret = MHD_queue_response(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void
slow_done(void *cls, struct MHD_Connection *conn, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	(void)cls; (void)conn; (void)toe;
	free(*con_cls);
	*con_cls = NULL;
}

/* Starts the slow service, applying each write APPLY_MS after it came. */
static void
slow_start(int apply_ms)
{
	const union MHD_DaemonInfo *info;

	slow_apply_ms = apply_ms;
	flag_on = 0;
	slow_mode = 1;
	slow_inflight = slow_max_inflight = slow_on_writes = slow_off_writes = 0;
	slow_refuse_n = 0;
	flag_calls = 0;
	flagd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
	    MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0, NULL, NULL, slow_answer,
	    NULL, MHD_OPTION_NOTIFY_COMPLETED, slow_done, NULL,
	    MHD_OPTION_CONNECTION_TIMEOUT, 120U, MHD_OPTION_END);
	assert_non_null(flagd);
	info = MHD_get_daemon_info(flagd, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	flag_port = info->port;
}

/* ---- the plan, the old path, cleanup ---- */

/* Writes the test's plan with STEPS (YAML flow list) and the test's flag
 * service (flag_start first when STEPS flips). */
static void
write_plan(const char *steps, const char *canary)
{
	struct itest_plan b;
	const char *call = slow_mode ? "PUT" : "POST", *path = slow_mode ? "flag" : "toggle";
	const char *on = slow_mode ? "{\"enabled\":true}" : "{}";
	const char *off = slow_mode ? "{\"enabled\":false}" : "{}";

	ieng_plan_begin(&b, canary);
	itest_plan_addf(&b,
	    "flag:\n"
	    "  kind: http\n"
	    "  on: { method: %s, url: 'http://127.0.0.1:%u/%s', body: '%s' }\n"
	    "  off: { method: %s, url: 'http://127.0.0.1:%u/%s', body: '%s' }\n"
	    "  read: { url: 'http://127.0.0.1:%u/flag', pointer: /enabled, on: true, "
	    "off: false }\n"
	    "%s"
	    "watch:\n"
	    "  interval: 250ms\n"
	    "  allowance: 1s\n"
	    "  probe_every: 1s\n"
	    "steps: %s\n",
	    call, flag_port, path, on, call, flag_port, path, off, flag_port,
	    plan_settle, steps);
	itest_plan_write(&b, ieng_planfile);
}

/* Stops the flag service and removes what the test made on the broker. */
static int
cleanup(void **state)
{
	(void)state;
	flag_stop();
	ieng_cleanup_broker();
	return 0;
}

/* ---- helpers reading the database and the binary's output ---- */

/* Runs the cutover binary with ARGS (a shell word list, already quoted)
 * and CUTOVER_FAULT unset; its stdout and stderr go into OUT. Returns its
 * exit status. */
static int run_captured(char *out, size_t outlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
run_captured(char *out, size_t outlen, const char *fmt, ...)
{
	char args[1500], cmd[2000];
	va_list ap;
	FILE *p;
	size_t n = 0, got;
	int st;

	va_start(ap, fmt);
	vsnprintf(args, sizeof(args), fmt, ap);
	va_end(ap);
	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", getenv("CUTOVER_BINARY"), args);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < outlen && (got = fread(out + n, 1, outlen - 1 - n, p)) > 0)
		n += got;
	out[n] = '\0';
	st = pclose(p);
	fprintf(stderr, "$ cutover %s\n%s", args, out);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs SQL on the test's database with the sqlite3 shell; its output
 * (one line, at most OUTLEN - 1 bytes) into OUT when OUT is not NULL. */
static int
sql(char *out, size_t outlen, const char *query)
{
	char cmd[1500], buf[512] = "";
	FILE *p;
	int st;

	snprintf(cmd, sizeof(cmd), "sqlite3 '%s' \"%s\"", ieng_db, query);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(buf, sizeof(buf), p) == NULL)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	st = pclose(p);
	if (out != NULL)
		snprintf(out, outlen, "%s", buf);
	return st;
}

/* ---- one engine per database ---- */

static void
test_second_engine_refused(void **state)
{
	struct itest_history t;
	char out[8192], pidtext[32];
	pid_t holder;

	(void)state;
	ieng_set_names("owner");
	write_plan("[declare_ladder, verify_ladder, canary]", "100ms, 2s, 3s");
	holder = itest_start_run(ieng_db, ieng_planfile, NULL);
	ieng_wait_step(2, "running", 120000);
	/* A second engine on the same database exits at once, naming the
	 * holder; read-only verbs still work. */
	assert_int_equal(run_captured(out, sizeof(out), "run --db '%s' '%s'", ieng_db,
	    ieng_planfile), 1);
	snprintf(pidtext, sizeof(pidtext), "pid %ld", (long)holder);
	if (strstr(out, pidtext) == NULL)
		fail_msg("the second engine did not name the holder (%s)", pidtext);
	/* So does a serve: it would run the same plans. */
	assert_int_equal(run_captured(out, sizeof(out), "serve --db '%s' --listen "
	    "127.0.0.1:1", ieng_db), 1);
	if (strstr(out, pidtext) == NULL)
		fail_msg("serve did not name the holder (%s)", pidtext);
	assert_int_equal(run_captured(out, sizeof(out), "status --db '%s' '%s'", ieng_db,
	    ieng_plan_name), 0);
	assert_int_equal(run_captured(out, sizeof(out), "history --db '%s' --verify", ieng_db),
	    0);
	/* Killed, the holder leaves no stale lock: a new engine resumes. */
	kill(holder, SIGKILL);
	assert_int_equal(itest_wait(holder), 128 + SIGKILL);
	assert_int_equal(ieng_run(), 0);
	ieng_history(&t, "succeeded");
	itest_expect_counts(&t, "plan.submitted=1 step.started=3 step.succeeded=3 "
	    "plan.succeeded=1");
}

/* ---- a confirmed flip is not sent again ---- */

static const char flip_steps[] = "[measure_horizon, declare_ladder, verify_ladder, "
    "canary, flip, { step: watch, gate: true }]";

static void
test_confirmed_flip_not_resent(void **state)
{
	struct itest_history t;
	pid_t pid;
	int rc;

	(void)state;
	ieng_set_names("flip");
	flag_start();
	write_plan(flip_steps, "100ms");
	ieng_make_old_path();
	/* Killed after the flag service took the flip and the confirmation
	 * was recorded, before the step's own record. */
	pid = itest_start_run(ieng_db, ieng_planfile, "crash:flip.confirmed.recorded");
	assert_int_equal(itest_wait(pid), 128 + SIGKILL);
	assert_int_equal(flag_calls, 1);
	assert_true(flag_on);
	/* The resumed flip reads the flag back and does not send again. */
	rc = ieng_run();
	assert_int_equal(flag_calls, 1);
	assert_true(flag_on);
	assert_int_equal(rc, 3);
	/* The rollback is one call too. */
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    NULL), 0);
	assert_int_equal(ieng_run(), 1);
	assert_int_equal(flag_calls, 2);
	assert_false(flag_on);
	ieng_history(&t, "aborted");
	itest_expect_counts(&t, "flip.requested=1 flip.confirmed=1 rollback.confirmed=1");
}

/* ---- commands checked against the state each finds ---- */

/* A plan [declare_ladder, verify_ladder] run once and failed at its first
 * step (a queue with other arguments in the way, removed after), so that a
 * retry would now succeed. */
static void
failed_plan(void)
{
	struct step_ctx c;
	struct plan *p = NULL;
	char name[160], err[1024];

	write_plan("[declare_ladder, verify_ladder]", "100ms");
	ieng_open_ctx(&c, &p);
	ieng_queue_in_the_way(&c, name, sizeof(name));
	assert_int_equal(ieng_run(), 1);
	assert_int_equal(broker_queue_delete(c.amqp, name, 0, NULL, err, sizeof(err)), 0);
	step_ctx_close(&c);
	plan_free(p);
}

static void
test_abort_then_retry_in_one_poll(void **state)
{
	struct itest_history t;
	char outcome[256];

	(void)state;
	ieng_set_names("cmds");
	failed_plan();
	/* Both queued while no engine runs: one poll sees both. */
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    NULL), 0);
	assert_int_equal(itest_cutover("retry", "--db", ieng_db, ieng_plan_name, "1", "--as", "bob",
	    NULL), 0);
	assert_int_equal(ieng_run(), 1);
	ieng_history(&t, "aborted");
	itest_expect_counts(&t, "plan.aborted=1 step.retry=0 command.refused=1");
	assert_int_equal(sql(outcome, sizeof(outcome),
	    "SELECT outcome FROM commands WHERE kind = 'retry'"), 0);
	if (strncmp(outcome, "refused", 7) != 0 || strstr(outcome, "aborted") == NULL)
		fail_msg("the retry's outcome is '%s', not refused because of the abort",
		    outcome);
}

/* ---- commands through the API: a refused command gets a clear answer ---- */

#define API_TOKEN "engine-safety-token"

static pid_t server_pid;
static unsigned server_port;

/* Starts `cutover serve` on the test's database with one operator whose
 * token is API_TOKEN, the engine looking for commands every POLL_MS; waits
 * (up to 60 s) for /healthz. */
static void
serve_start(int poll_ms)
{
	char ops[320], listen[64], poll[16], out[256], cmd[600];
	FILE *f;
	int i;

	server_port = (unsigned)itest_free_port();
	snprintf(ops, sizeof(ops), "%s/operators", ieng_dir);
	snprintf(cmd, sizeof(cmd), "printf 'alice:%%s\\n' \"$(printf %%s %s | sha256sum | "
	    "cut -d' ' -f1)\" > '%s'", API_TOKEN, ops);
	assert_int_equal(system(cmd), 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%u", server_port);
	snprintf(poll, sizeof(poll), "%d", poll_ms);
	server_pid = fork();
	assert_true(server_pid >= 0);
	if (server_pid == 0) {
		execl(getenv("CUTOVER_BINARY"), "cutover", "serve", "--db", ieng_db, "--listen",
		    listen, "--operators", ops, "--poll-ms", poll, (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 1200; i++) {
		snprintf(cmd, sizeof(cmd), "curl -s -o /dev/null -w '%%{http_code}' "
		    "http://127.0.0.1:%u/healthz", server_port);
		f = popen(cmd, "r");
		assert_non_null(f);
		if (fgets(out, sizeof(out), f) == NULL)
			out[0] = '\0';
		pclose(f);
		if (strcmp(out, "200") == 0)
			return;
		itest_sleep_ms(50);
	}
	fail_msg("cutover serve did not answer on %s", listen);
}

static int
serve_stop(void **state)
{
	(void)state;
	if (server_pid > 0) {
		kill(server_pid, SIGTERM);
		itest_wait(server_pid);
	}
	server_pid = 0;
	return cleanup(NULL);
}

/* METHOD PATH on the test's server with the operator's token: the answer's
 * body into OUT; returns the HTTP status. */
static int
api(const char *method, const char *path, char *out, size_t outlen)
{
	int status = iapi_fetch(server_port, method, path, API_TOKEN, out, outlen);

	if (strcmp(method, "GET") != 0 || strstr(out, "\"pending\"") == NULL)
		fprintf(stderr, "%s %s: %d %s\n", method, path, status, out);
	return status;
}

static void
test_api_refused_command_answered(void **state)
{
	json_t *j;
	char out[4096], path[128];
	int status, i;
	int64_t cmd;

	(void)state;
	ieng_set_names("apicmds");
	failed_plan();
	/* The engine looks for commands every 3 s: both land in one poll. */
	serve_start(3000);
	assert_int_equal(api("POST", "/api/plans/1/abort", out, sizeof(out)), 202);
	status = api("POST", "/api/plans/1/steps/1/retry", out, sizeof(out));
	if (status == 409) {
		/* The poll fell in between: refused when recorded, saying why. */
		assert_non_null(strstr(out, "aborted"));
		return;
	}
	assert_int_equal(status, 202);
	j = json_loads(out, 0, NULL);
	assert_non_null(j);
	cmd = json_integer_value(json_object_get(j, "command"));
	json_decref(j);
	assert_true(cmd > 0);
	snprintf(path, sizeof(path), "/api/plans/1/commands/%lld", (long long)cmd);
	for (i = 0; i < 600; i++) {
		assert_int_equal(api("GET", path, out, sizeof(out)), 200);
		if (strstr(out, "\"pending\"") == NULL)
			break;
		itest_sleep_ms(100);
	}
	if (strstr(out, "\"state\":\"refused\"") == NULL || strstr(out, "aborted") == NULL)
		fail_msg("the retry after the abort is not refused because of it: %s", out);
	assert_int_equal(api("GET", "/api/plans/1/commands/999", out, sizeof(out)), 404);
}

/* ---- a database locked past the busy timeout mid-watch ---- */

static void
test_watch_survives_locked_database(void **state)
{
	struct itest_history t;
	sqlite3 *h = NULL;
	pid_t pid;

	(void)state;
	ieng_set_names("busy");
	flag_start();
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, flip, watch]",
	    "100ms");
	ieng_make_old_path();
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	ieng_wait_step(5, "running", 120000);
	/* Another writer holds the database for twice the busy timeout (5 s):
	 * the fault itself, not a wait for something. */
	assert_int_equal(sqlite3_open(ieng_db, &h), SQLITE_OK);
	sqlite3_busy_timeout(h, 30000);
	assert_int_equal(sqlite3_exec(h, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
	itest_sleep_ms(11000);
	assert_int_equal(sqlite3_exec(h, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	assert_int_equal(itest_wait(pid), 0);
	ieng_history(&t, "succeeded");
	itest_expect_counts(&t, "step.failed=0 flip.requested=1");
	assert_int_equal(flag_calls, 1);
}

/* ---- a write in doubt: no answer, applied later ---- */

/* The flip's write to a flag service that applies it 35 s after it
 * arrived gets no answer within the flag client's 10 s; an operator
 * aborts while it hangs. The flag must end off: the write is never sent
 * again as if not applied (one in flight at a time), the rollback is not
 * recorded as confirmed while it is in doubt, and when it lands the
 * engine, still reading the flag, says so and turns the flag back off. */
static void
test_abort_with_write_in_doubt(void **state)
{
	struct itest_history t;
	char out[512];
	pid_t pid;
	int i;

	(void)state;
	ieng_set_names("doubt");
	slow_start(35000);
	/* 45 s: the window opens when the write times out (10 s after it was
	 * sent) and the write lands 25 s later; the default 2 minutes would
	 * prove nothing more and cost the suite 75 s. */
	plan_settle = "  settle: 45s\n";
	write_plan(flip_steps, "100ms");
	ieng_make_old_path();
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	for (i = 0; i < 6000 && slow_on_writes == 0; i++)
		itest_sleep_ms(20);
	assert_int_equal(slow_on_writes, 1);
	/* Past the flag client's own timeout: the write has no answer. */
	itest_sleep_ms(11000);
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    "--comment", "the flag service hangs", NULL), 0);
	itest_wait(pid);
	/* Whatever was sent lands within the service's delay. */
	for (i = 0; i < 4000 && slow_inflight > 0; i++)
		itest_sleep_ms(20);
	assert_int_equal(slow_inflight, 0);
	ieng_history(&t, "aborted");
	if (flag_on)
		fail_msg("the flag is on after the abort (%d writes on, %d off, at most %d "
		    "in flight at once)", slow_on_writes, slow_off_writes, slow_max_inflight);
	assert_int_equal(slow_max_inflight, 1);
	assert_int_equal(slow_on_writes, 1);
	/* The abort did not claim a rollback it could not know. */
	assert_int_equal(sql(out, sizeof(out), "SELECT json_extract(details_json, "
	    "'$.rollback') FROM events WHERE kind = 'plan.aborted'"), 0);
	if (strncmp(out, "confirmed", 9) == 0)
		fail_msg("the abort recorded '%s' while the flip's write was in doubt", out);
	/* The change was seen, alerted and undone; the rollback is confirmed
	 * only after it. */
	assert_int_equal(sql(out, sizeof(out), "SELECT count(*) FROM alerts WHERE "
	    "kind = 'flag_changed'"), 0);
	assert_string_equal(out, "1");
	assert_true(itest_count(&t, "flag.changed") >= 1);
	assert_int_equal(sql(out, sizeof(out), "SELECT count(*) FROM events WHERE kind = "
	    "'alert.raised' AND json_extract(details_json, '$.alert') = 'flag_changed'"), 0);
	assert_string_equal(out, "1");
	assert_int_equal(sql(out, sizeof(out), "SELECT (SELECT min(id) FROM events WHERE "
	    "kind = 'rollback.confirmed') > (SELECT max(id) FROM events WHERE kind = "
	    "'flag.changed')"), 0);
	assert_string_equal(out, "1");
	assert_int_equal(itest_count(&t, "flag.settled"), 1);
}

/* The flip's write lands 14 s after it was sent, 4 s after the client
 * gave up on its answer: the flip is not confirmed while it is in doubt,
 * sends nothing more, and is confirmed once the flag reads on. */
static void
test_flip_confirmed_when_the_write_lands(void **state)
{
	struct itest_history t;
	char out[64];

	(void)state;
	ieng_set_names("lands");
	slow_start(14000);
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, flip]", "100ms");
	ieng_make_old_path();
	assert_int_equal(ieng_run(), 0);
	ieng_history(&t, "succeeded");
	assert_true(flag_on);
	assert_int_equal(slow_on_writes, 1);
	assert_int_equal(slow_max_inflight, 1);
	itest_expect_counts(&t, "flag.in_doubt=1 flip.confirmed=1 flip.failed=0");
	assert_int_equal(sql(out, sizeof(out), "SELECT (SELECT id FROM events WHERE kind = "
	    "'flip.confirmed') > (SELECT id FROM events WHERE kind = 'flag.in_doubt')"), 0);
	assert_string_equal(out, "1");
}

/* Writes answered 500 were not applied: the flip sends the next one only
 * after the last was answered and read back off, one at a time, and the
 * history holds each write's outcome. */
static void
test_flip_after_refused_writes(void **state)
{
	char out[64];

	(void)state;
	ieng_set_names("refused");
	slow_start(0);
	slow_refuse_n = 2;
	write_plan("[measure_horizon, declare_ladder, verify_ladder, canary, flip]", "100ms");
	ieng_make_old_path();
	assert_int_equal(ieng_run(), 0);
	assert_true(flag_on);
	assert_int_equal(flag_calls, 2);
	assert_int_equal(slow_on_writes, 1);
	assert_int_equal(slow_max_inflight, 1);
	assert_int_equal(sql(out, sizeof(out), "SELECT group_concat(json_extract(a.value, "
	    "'$.outcome'), ',') FROM events, json_each(events.details_json, '$.attempts') "
	    "AS a WHERE kind = 'flip.confirmed' AND json_extract(a.value, '$.call') = "
	    "'write'"), 0);
	assert_string_equal(out, "refused,refused,accepted");
}

/* An engine stopped while an aborted plan's settle window is open: the
 * next serve goes on with that window when it starts, and a flag turned
 * on meanwhile is seen, alerted and turned back off. */
static void
test_serve_resumes_the_settle_window(void **state)
{
	char out[64];
	pid_t pid;
	int i;

	(void)state;
	ieng_set_names("resume");
	flag_start();
	write_plan(flip_steps, "100ms");
	ieng_make_old_path();
	assert_int_equal(ieng_run(), 3);
	assert_true(flag_on);
	assert_int_equal(itest_cutover("abort", "--db", ieng_db, ieng_plan_name, "--as", "carol",
	    NULL), 0);
	pid = itest_start_run(ieng_db, ieng_planfile, NULL);
	for (i = 0; i < 3000; i++) {
		assert_int_equal(sql(out, sizeof(out), "SELECT status FROM plans"), 0);
		if (strcmp(out, "aborted") == 0)
			break;
		itest_sleep_ms(20);
	}
	assert_string_equal(out, "aborted");
	itest_stop(pid);
	assert_false(flag_on);
	/* Turned on while no engine runs, within the window (15 s). */
	flag_on = 1;
	serve_start(200);
	for (i = 0; i < 1500 && flag_on; i++)
		itest_sleep_ms(20);
	if (flag_on)
		fail_msg("the flag turned on after the abort is still on 30 s after serve "
		    "started");
	assert_int_equal(flag_calls, 3);
	assert_int_equal(sql(out, sizeof(out), "SELECT count(*) FROM alerts WHERE "
	    "kind = 'flag_changed'"), 0);
	assert_string_equal(out, "1");
}

/* ---- a history cut short ---- */

static void
test_truncated_history_detected(void **state)
{
	char out[8192];

	(void)state;
	ieng_set_names("trunc");
	write_plan("[declare_ladder]", "100ms");
	assert_int_equal(ieng_run(), 0);
	assert_int_equal(run_captured(out, sizeof(out), "history --db '%s' --verify", ieng_db),
	    0);
	/* Someone with the file drops the guard and cuts the last two events. */
	assert_int_equal(sql(NULL, 0, "DROP TRIGGER events_no_delete; DELETE FROM events "
	    "WHERE id > (SELECT max(id) - 2 FROM events);"), 0);
	assert_int_equal(run_captured(out, sizeof(out), "history --db '%s' --verify", ieng_db),
	    1);
	if (strstr(out, "truncated") == NULL)
		fail_msg("verify did not name the truncation");
}

ITEST_MAIN(ieng_main,
	cmocka_unit_test_teardown(test_second_engine_refused, cleanup),
	cmocka_unit_test_teardown(test_confirmed_flip_not_resent, cleanup),
	cmocka_unit_test_teardown(test_abort_then_retry_in_one_poll, cleanup),
	cmocka_unit_test_teardown(test_api_refused_command_answered, serve_stop),
	cmocka_unit_test_teardown(test_watch_survives_locked_database, cleanup),
	cmocka_unit_test_teardown(test_truncated_history_detected, cleanup),
	cmocka_unit_test_teardown(test_abort_with_write_in_doubt, cleanup),
	cmocka_unit_test_teardown(test_flip_confirmed_when_the_write_lands, cleanup),
	cmocka_unit_test_teardown(test_flip_after_refused_writes, cleanup),
	cmocka_unit_test_teardown(test_serve_resumes_the_settle_window, serve_stop))
