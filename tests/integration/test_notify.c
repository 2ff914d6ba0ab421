/* test_notify (integration): serve.yaml's notifiers against real HTTP
 * receivers (notify_receiver.py, started by the test on four ports of
 * 127.0.0.1 from CUTOVER_TEST_NOTIFY_PORT, 18706 by default, and stopped by
 * pid) while `cutover serve --config` runs real plans
 * on the real RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT,
 * CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD). A plan that waits at a gate,
 * opens an alert (raised in the database as the watch raises one), is
 * approved and succeeds, and a plan that fails and is aborted: each of
 * the four event kinds reaches a generic webhook and a Slack-style one
 * with the right body; a receiver answering 500 then 200 gets the event
 * twice and it is recorded delivered on the second attempt; a receiver
 * that is down is recorded failed after its attempts while the engine
 * goes on; GET /api/plans/{id}/notifications shows each delivery; the
 * Slack URL (a secret, by env: reference) is in neither the database nor
 * the log nor the API. Across a restart of serve, what was delivered is
 * not sent again, what was not is delivered, and a notifier added at the
 * restart is not sent the past. A receiver that takes
 * requests and never answers holds neither the engine nor serve's stop,
 * nor another receiver: a good one gets each notification while the hung
 * one's first try at it is unanswered. The plan's document, the plan
 * list's and /metrics count each notifier's deliveries by state. `cutover
 * run --config` notifies as serve does, before it exits. The database
 * file removed under serve is told to every notifier, once. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "auth.h"
#include "clock.h"
#include "itest_broker.h"
#include "itest_plan.h"
#include "itest_run.h"
#include "store.h"
#include "store_notify.h"

#define TOKEN		"tok-notify-4c1d9e0b7a"
#define WAIT_MS		60000
/* The receivers' ports: CUTOVER_TEST_NOTIFY_PORT and the three after it
 * (default 18706), so that runs beside each other do not share them. */
#define PORT_GOOD	(port_base + 0)
#define PORT_FLAKY	(port_base + 1)
#define PORT_LATE	(port_base + 2)
#define PORT_DOWN	(port_base + 3)

static char dir[256], db[300], ops[300], logfile[300], conf[300], base[64], secret[96];
static pid_t server = -1;
static int port_base = 18706;

/* A receiver's log: DIR/recv-PORT.log. */
static void
recv_log(int port, char *out, size_t len)
{
	snprintf(out, len, "%s/recv-%d.log", dir, port);
}

/* Starts notify_receiver.py on PORT answering STATUSES; waits until it
 * listens. Returns its pid. */
static pid_t
start_receiver(int port, const char *statuses)
{
	char script[512], portstr[16], log[320], ready[340], out[340];
	char *argv[] = { "/usr/bin/python3", script, portstr, log, (char *)statuses, NULL };
	int64_t until = clock_mono_ms() + WAIT_MS;
	pid_t pid;

	snprintf(script, sizeof(script), "%s/tests/integration/notify_receiver.py",
	    getenv("CUTOVER_SOURCE_DIR"));
	snprintf(portstr, sizeof(portstr), "%d", port);
	recv_log(port, log, sizeof(log));
	snprintf(ready, sizeof(ready), "%s.ready", log);
	snprintf(out, sizeof(out), "%s/recv-%d.out", dir, port);
	unlink(ready);
	pid = itest_spawn(out, argv);
	while (access(ready, F_OK) != 0) {
		if (clock_mono_ms() > until)
			fail_msg("the receiver on port %d did not start", port);
		itest_sleep_ms(20);
	}
	return pid;
}

/* GET PATH of serve into a new JSON document (NULL when not 200). */
static json_t *
api_get(const char *path, char **raw)
{
	char url[512];
	FILE *mem;
	char *body = NULL;
	size_t len = 0;
	long status = 0;
	json_t *j = NULL;
	CURL *c = curl_easy_init();

	assert_non_null(c);
	mem = open_memstream(&body, &len);
	assert_non_null(mem);
	snprintf(url, sizeof(url), "%s%s", base, path);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, mem);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 30000L);
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	fclose(mem);
	if (status == 200)
		j = json_loads(body, 0, NULL);
	if (raw != NULL)
		*raw = body;
	else
		free(body);
	return j;
}

/* Starts `cutover serve --config CONF` (its address by flag, overriding
 * the file's); waits for /healthz. */
static void
start_server(void)
{
	char listen[64];
	char *argv[] = { (char *)getenv("CUTOVER_BINARY"), "serve", "--config", conf,
	    "--listen", listen, "--poll-ms", "100", NULL };
	int64_t until = clock_mono_ms() + WAIT_MS;
	json_t *j;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", itest_free_port());
	snprintf(base, sizeof(base), "http://%s", listen);
	server = itest_spawn(logfile, argv);
	while ((j = api_get("/healthz", NULL)) == NULL) {
		if (clock_mono_ms() > until || kill(server, 0) != 0)
			fail_msg("cutover serve --config did not answer on %s", listen);
		itest_sleep_ms(50);
	}
	json_decref(j);
}

static void
stop_server(void)
{
	assert_int_equal(itest_stop(server), 0);
	server = -1;
}

/* Writes the serve configuration: every notifier the tests use (FMT, a
 * printf format: their URLs name the receivers' ports), the Slack one's
 * URL by env: reference. */
static void
write_config(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
write_config(const char *fmt, ...)
{
	FILE *f = fopen(conf, "w");
	va_list ap;

	assert_non_null(f);
	fprintf(f, "listen: 127.0.0.1:1\t# overridden by --listen\n"
	    "db: %s\noperators: %s\nlog_level: info\nnotifiers:\n", db, ops);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* The plan TEST (itestnotifyPID-TEST): a ladder of its own; STEPS. Written
 * to DIR/TEST.yaml; what it makes on the broker is removed at cleanup. */
static void
write_plan(const char *test, const char *old, const char *steps, char *name, size_t len)
{
	char file[320], stem[96];
	struct itest_plan b;

	snprintf(name, len, "itestnotify%ld-%s", (long)getpid(), test);
	snprintf(stem, sizeof(stem), "itestnotify%ld.%s", (long)getpid(), test);
	itest_plan_cleanup(stem, name);
	snprintf(file, sizeof(file), "%s/%s.yaml", dir, test);
	itest_plan_begin(&b, name, NULL);
	itest_plan_addf(&b, "old:\n  queues: { names: [%s.%s] }\n"
	    "ladder:\n  prefix: %s\n  unit: 100ms\n  levels: 6\n  destinations: [%s.dest]\n"
	    "  create_destinations: true\nsteps: %s\n", stem, old, stem, stem, steps);
	itest_plan_write(&b, file);
}

/* Runs a remote verb of the cutover binary against serve as the operator. */
static void
verb(const char *v, const char *a1, const char *a2)
{
	int rc = a2 != NULL ?
	    itest_cutover(v, "--server", base, a1, a2, (char *)NULL) :
	    itest_cutover(v, "--server", base, a1, (char *)NULL);

	assert_int_equal(rc, 0);
}

static int64_t
plan_id(const char *name)
{
	struct store *s = NULL;
	struct store_plan p;
	char err[512];

	if (store_open(db, &s, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	if (store_plan_find(s, name, &p, err, sizeof(err)) != 0)
		fail_msg("no plan %s: %s", name, err);
	store_close(s);
	return p.id;
}

/* KEY of object O as text; "" when it is not a string. */
static const char *
str(const json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));

	return v != NULL ? v : "";
}

/* How many requests the receiver on PORT got on PATH (a prefix) whose
 * body has EVENT for plan PLAN (webhook bodies), or whose text holds
 * TEXT (Slack bodies); EVENT or TEXT NULL: any. */
static int
received(int port, const char *path, const char *event, const char *plan,
    const char *text)
{
	char log[320], line[8192];
	int n = 0;
	FILE *f;

	recv_log(port, log, sizeof(log));
	if ((f = fopen(log, "r")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL) {
		json_t *r = json_loads(line, 0, NULL), *b;

		b = json_loads(str(r, "body"), 0, NULL);
		if (strncmp(str(r, "path"), path, strlen(path)) == 0 && b != NULL &&
		    strcmp(str(r, "content_type"), "application/json") == 0 &&
		    (event == NULL || (strcmp(str(b, "event"), event) == 0 &&
		    strcmp(str(b, "plan"), plan) == 0)) &&
		    (text == NULL || strstr(str(b, "text"), text) != NULL))
			n++;
		json_decref(b);
		json_decref(r);
	}
	fclose(f);
	return n;
}

/* Waits until received(...) reaches N. */
static void
wait_received(int port, const char *path, const char *event, const char *plan,
    const char *text, int n)
{
	int64_t until = clock_mono_ms() + WAIT_MS;

	while (received(port, path, event, plan, text) < n) {
		if (clock_mono_ms() > until)
			fail_msg("port %d %s: %d of %d %s %s in %s", port, path,
			    received(port, path, event, plan, text), n,
			    event != NULL ? event : "", text != NULL ? text : "", logfile);
		itest_sleep_ms(50);
	}
}

/* The delivery of PLAN's EVENT to NOTIFIER, from the API (a new
 * reference, NULL when none). */
static json_t *
delivery(int64_t plan, const char *notifier, const char *event)
{
	char path[128];
	json_t *j, *d, *found = NULL;
	size_t i;

	snprintf(path, sizeof(path), "/api/plans/%lld/notifications", (long long)plan);
	if ((j = api_get(path, NULL)) == NULL)
		return NULL;
	json_array_foreach(json_object_get(j, "notifications"), i, d)
		if (strcmp(json_string_value(json_object_get(d, "notifier")), notifier) == 0 &&
		    strcmp(json_string_value(json_object_get(d, "event")), event) == 0)
			found = json_incref(d);
	json_decref(j);
	return found;
}

/* Waits until that delivery's status is STATUS (and has at least ATTEMPTS). */
static json_t *
wait_delivery(int64_t plan, const char *notifier, const char *event, const char *status,
    int attempts)
{
	int64_t until = clock_mono_ms() + WAIT_MS;
	json_t *d;

	for (;;) {
		if ((d = delivery(plan, notifier, event)) != NULL &&
		    strcmp(json_string_value(json_object_get(d, "status")), status) == 0 &&
		    json_integer_value(json_object_get(d, "attempts")) >= attempts)
			return d;
		json_decref(d);
		if (clock_mono_ms() > until)
			fail_msg("plan %lld: %s's %s delivery never %s (%d attempts)",
			    (long long)plan, notifier, event, status, attempts);
		itest_sleep_ms(50);
	}
}

/* Whether file PATH holds TEXT anywhere (bytes). */
static int
file_holds(const char *path, const char *text)
{
	char *buf = NULL;
	size_t len = 0, got;
	FILE *f = fopen(path, "rb");
	int found;

	if (f == NULL)
		return 0;
	buf = malloc(64 << 20);
	assert_non_null(buf);
	got = fread(buf, 1, 64 << 20, f);
	len = got;
	fclose(f);
	found = 0;
	for (size_t i = 0; !found && i + strlen(text) <= len; i++)
		found = memcmp(buf + i, text, strlen(text)) == 0;
	free(buf);
	return found;
}

static void
dump_receiver(int port)
{
	char log[320], line[8192];
	FILE *f;

	recv_log(port, log, sizeof(log));
	if ((f = fopen(log, "r")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		print_message("receiver %d got: %s", port, line);
	fclose(f);
}

/* Submits plan TEST (NAME), which declares its ladder and waits at the
 * gate of verify_ladder, and waits until the receiver on PORT got its
 * gate_waiting on PATH. */
static void
submit_gated(const char *test, char *name, size_t len, int port, const char *path)
{
	char file[320];

	write_plan(test, "old", "[declare_ladder, { step: verify_ladder, gate: true }]",
	    name, len);
	snprintf(file, sizeof(file), "%s/%s.yaml", dir, test);
	verb("submit", file, NULL);
	wait_received(port, path, "gate_waiting", name, NULL, 1);
}

/* Plan A (test "a"): waits at its gate, opens an alert (raised in the
 * database as the watch raises one), is approved and succeeds. Plan B
 * ("b"): its old queue does not exist, so measure_horizon fails; then it
 * is aborted. Their names into A and B, their ids returned in *IDA, *IDB. */
static void
run_two_plans(char *a, char *b, size_t len, int64_t *ida, int64_t *idb)
{
	struct store *s = NULL;
	char path[320], err[512];
	int64_t alert = 0;
	bool raised = false;

	submit_gated("a", a, len, PORT_GOOD, "/hook");
	*ida = plan_id(a);
	if (store_open(db, &s, err, sizeof(err)) != 0 ||
	    store_alert_raise(s, *ida, "parking_not_empty", "2 messages in parking",
	    clock_now_ms(), &alert, &raised, err, sizeof(err)) != 0 || !raised ||
	    store_append_event(s, *ida, clock_now_ms(), "engine", "alert.raised",
	    "{\"alert\":\"parking_not_empty\",\"message\":\"2 messages in parking\"}", NULL,
	    err, sizeof(err)) != 0)
		fail_msg("raising an alert: %s", err);
	store_close(s);
	verb("approve", a, "2");
	write_plan("b", "absent", "[measure_horizon, declare_ladder]", b, len);
	snprintf(path, sizeof(path), "%s/b.yaml", dir);
	verb("submit", path, NULL);
	*idb = plan_id(b);
	wait_received(PORT_GOOD, "/hook", "step_failed", b, NULL, 1);
	verb("abort", b, NULL);
}

/* The generic webhook and the Slack one each got the five events once,
 * with what they say. */
static void
check_bodies(const char *a, const char *b)
{
	wait_received(PORT_GOOD, "/hook", "plan_finished", b, NULL, 1);
	wait_received(PORT_GOOD, "/hook", "plan_finished", a, NULL, 1);
	wait_received(PORT_GOOD, "/hook", "alert_opened", a, NULL, 1);
	assert_int_equal(received(PORT_GOOD, "/hook", NULL, NULL, NULL), 5);
	assert_int_equal(received(PORT_GOOD, "/hook", "gate_waiting", a,
	    "waits for approval of step 2, verify_ladder"), 1);
	assert_int_equal(received(PORT_GOOD, "/hook", "alert_opened", a,
	    "alert parking_not_empty: 2 messages in parking"), 1);
	assert_int_equal(received(PORT_GOOD, "/hook", "plan_finished", a, "succeeded"), 1);
	assert_int_equal(received(PORT_GOOD, "/hook", "step_failed", b,
	    "step 1, measure_horizon, failed: none of the 1 queues"), 1);
	assert_int_equal(received(PORT_GOOD, "/hook", "plan_finished", b, "was aborted"), 1);
	wait_received(PORT_GOOD, "/services/", NULL, NULL, "was aborted", 1);
	wait_received(PORT_GOOD, "/services/", NULL, NULL, "alert parking_not_empty", 1);
	wait_received(PORT_GOOD, "/services/", NULL, NULL, " succeeded", 1);
	assert_int_equal(received(PORT_GOOD, "/services/", NULL, NULL, NULL), 5);
	assert_int_equal(received(PORT_GOOD, "/services/", NULL, NULL, "waits for approval"), 1);
	assert_int_equal(received(PORT_GOOD, "/services/", NULL, NULL, "failed: none of"), 1);
}

/* Try I of TRIES: its HTTP status (0: null) and error (NULL: null). */
static void
check_try(const json_t *tries, size_t i, int http, const char *error)
{
	const json_t *t = json_array_get(tries, i);

	if (http == 0)
		assert_true(json_is_null(json_object_get(t, "http_status")));
	else
		assert_int_equal(json_integer_value(json_object_get(t, "http_status")), http);
	if (error == NULL)
		assert_true(json_is_null(json_object_get(t, "error")));
	else
		assert_string_equal(json_string_value(json_object_get(t, "error")), error);
}

/* 500 then 200: a's finish sent twice, delivered on the second; b's once.
 * Down: failed after its 3 attempts, while the engine went on (b was
 * aborted and finished while they were tried). */
static void
check_retries(const char *a, const char *b, int64_t ida, int64_t idb)
{
	json_t *d;

	d = wait_delivery(ida, "flaky", "plan_finished", "delivered", 2);
	assert_int_equal(json_array_size(json_object_get(d, "tries")), 2);
	check_try(json_object_get(d, "tries"), 0, 500, "HTTP 500");
	check_try(json_object_get(d, "tries"), 1, 200, NULL);
	json_decref(d);
	d = wait_delivery(idb, "flaky", "plan_finished", "delivered", 1);
	assert_int_equal(json_integer_value(json_object_get(d, "attempts")), 1);
	json_decref(d);
	assert_int_equal(received(PORT_FLAKY, "/flaky", "plan_finished", a, NULL), 2);
	assert_int_equal(received(PORT_FLAKY, "/flaky", "plan_finished", b, NULL), 1);
	d = wait_delivery(idb, "down", "step_failed", "failed", 3);
	assert_int_equal(json_array_size(json_object_get(d, "tries")), 3);
	for (size_t i = 0; i < 3; i++)
		check_try(json_object_get(d, "tries"), i, 0, "Couldn't connect to server");
	json_decref(d);
	assert_null(delivery(ida, "down", "step_failed"));
}

/* NOTIFIER's deliveries counted in the page's documents: PLAN's (0: in the
 * plan list's, every plan's) are PENDING, DELIVERED and FAILED. */
static void
check_counts(int64_t plan, const char *notifier, int pending, int delivered, int failed)
{
	char path[128];
	json_t *j, *row, *found = NULL;
	size_t i;

	if (plan != 0)
		snprintf(path, sizeof(path), "/api/plans/%lld", (long long)plan);
	else
		snprintf(path, sizeof(path), "/api/plans");
	assert_non_null(j = api_get(path, NULL));
	json_array_foreach(json_object_get(j, "deliveries"), i, row)
		if (strcmp(str(row, "notifier"), notifier) == 0)
			found = row;
	if (found == NULL)
		fail_msg("%s: no deliveries counted for %s", path, notifier);
	if (json_integer_value(json_object_get(found, "pending")) != pending ||
	    json_integer_value(json_object_get(found, "delivered")) != delivered ||
	    json_integer_value(json_object_get(found, "failed")) != failed)
		fail_msg("%s: %s counted %s, not %d pending, %d delivered, %d failed", path,
		    notifier, json_dumps(found, JSON_COMPACT), pending, delivered, failed);
	json_decref(j);
}

/* /metrics (TEXT) counts NOTIFIER's deliveries in STATE as N. */
static void
check_metric(const char *text, const char *notifier, const char *state, int n)
{
	char line[256];

	assert_non_null(strstr(text, "# TYPE cutover_notify_deliveries gauge\n"));
	snprintf(line, sizeof(line), "\ncutover_notify_deliveries{notifier=\"%s\","
	    "state=\"%s\"} %d\n", notifier, state, n);
	if (strstr(text, line) == NULL)
		fail_msg("/metrics has no%s", line);
}

/* What the page and /metrics show once every delivery of plans A (IDA:
 * gate, alert, finish) and B (IDB: failure, finish) is done: each
 * notifier's deliveries counted, by plan and in all; /metrics' text into
 * *METRICS. */
static void
check_counted(int64_t ida, int64_t idb, char **metrics)
{
	check_counts(ida, "hook", 0, 3, 0);
	check_counts(ida, "ops-slack", 0, 3, 0);
	check_counts(ida, "flaky", 0, 1, 0);
	check_counts(idb, "hook", 0, 2, 0);
	check_counts(idb, "down", 0, 0, 1);
	check_counts(0, "hook", 0, 5, 0);
	check_counts(0, "down", 0, 0, 1);
	json_decref(api_get("/metrics", metrics));
	assert_non_null(*metrics);
	check_metric(*metrics, "hook", "delivered", 5);
	check_metric(*metrics, "ops-slack", "delivered", 5);
	check_metric(*metrics, "flaky", "delivered", 2);
	check_metric(*metrics, "flaky", "pending", 0);
	check_metric(*metrics, "down", "failed", 1);
	check_metric(*metrics, "down", "delivered", 0);
	assert_null(strstr(*metrics, secret));
	assert_null(strstr(*metrics, "/services/"));
}

/* The Slack URL is in the environment only: not in the API's answer (which
 * names the notifier), the database (which records it) or the log (which
 * logs its deliveries). Call once serve has stopped. */
static void
check_no_secret(const char *api_answer)
{
	char path[320];
	int named = 0;

	assert_non_null(strstr(api_answer, "\"notifier\":\"ops-slack\""));
	assert_null(strstr(api_answer, secret));
	assert_null(strstr(api_answer, "/services/"));
	for (const char *suffix = ""; suffix != NULL; suffix = *suffix ? NULL : "-wal") {
		snprintf(path, sizeof(path), "%s%s", db, suffix);
		named += file_holds(path, "ops-slack");
		assert_false(file_holds(path, secret));
		assert_false(file_holds(path, "/services/T0"));
	}
	assert_true(named > 0);
	assert_true(file_holds(logfile, "notify ops-slack: gate_waiting"));
	assert_false(file_holds(logfile, secret));
	assert_false(file_holds(logfile, "/services/T0"));
}

/* The four event kinds, a retried delivery, a receiver that is down, the
 * API's record of each, and no secret anywhere. */
static void
test_four_events_retries_and_no_secret(void **state)
{
	char a[96], b[96], path[128], *raw = NULL, *metrics = NULL;
	pid_t good, flaky;
	int64_t ida, idb;

	(void)state;
	good = start_receiver(PORT_GOOD, "200");
	flaky = start_receiver(PORT_FLAKY, "500,200");
	write_config(
	    "  - { name: hook, kind: webhook, url: 'http://127.0.0.1:%d/hook',\n"
	    "      events: [gate_waiting, step_failed, alert_opened, plan_finished] }\n"
	    "  - { name: ops-slack, kind: slack, url: env:ITEST_NOTIFY_SLACK,\n"
	    "      events: [gate_waiting, step_failed, alert_opened, plan_finished] }\n"
	    "  - { name: flaky, kind: webhook, url: 'http://127.0.0.1:%d/flaky',\n"
	    "      events: [plan_finished], backoff: 100ms }\n"
	    "  - { name: down, kind: webhook, url: 'http://127.0.0.1:%d/down',\n"
	    "      events: [step_failed], attempts: 3, backoff: 100ms }\n",
	    PORT_GOOD, PORT_FLAKY, PORT_DOWN);
	start_server();
	run_two_plans(a, b, sizeof(a), &ida, &idb);
	check_bodies(a, b);
	check_retries(a, b, ida, idb);
	check_counted(ida, idb, &metrics);
	snprintf(path, sizeof(path), "/api/plans/%lld/notifications", (long long)ida);
	json_decref(api_get(path, &raw));
	fprintf(stderr, "GET %s: %s\n", path, raw);
	stop_server();
	assert_int_equal(itest_stop(good), 0);
	assert_int_equal(itest_stop(flaky), 0);
	dump_receiver(PORT_GOOD);
	dump_receiver(PORT_FLAKY);
	check_no_secret(raw);
	free(raw);
	free(metrics);
}

/* Across a restart: what was delivered is not sent again; what was not
 * (its receiver down until then) is delivered. */
static void
test_restart_neither_resends_nor_loses(void **state)
{
	char c[96], path[128];
	pid_t good, late;
	int64_t idc;
	json_t *d;

	(void)state;
	good = start_receiver(PORT_GOOD, "200");
	write_config(
	    "  - { name: ok, kind: webhook, url: 'http://127.0.0.1:%d/ok',\n"
	    "      events: [step_failed, plan_finished] }\n"
	    "  - { name: late, kind: webhook, url: 'http://127.0.0.1:%d/late',\n"
	    "      events: [step_failed, plan_finished], attempts: 20, backoff: 100ms }\n",
	    PORT_GOOD, PORT_LATE);
	start_server();
	write_plan("c", "absent", "[measure_horizon]", c, sizeof(c));
	snprintf(path, sizeof(path), "%s/c.yaml", dir);
	verb("submit", path, NULL);
	idc = plan_id(c);
	wait_received(PORT_GOOD, "/ok", "step_failed", c, NULL, 1);
	json_decref(wait_delivery(idc, "late", "step_failed", "pending", 1));
	stop_server();

	late = start_receiver(PORT_LATE, "200");
	/* A notifier new at this start begins at the newest event. */
	write_config(
	    "  - { name: ok, kind: webhook, url: 'http://127.0.0.1:%d/ok',\n"
	    "      events: [step_failed, plan_finished] }\n"
	    "  - { name: late, kind: webhook, url: 'http://127.0.0.1:%d/late',\n"
	    "      events: [step_failed, plan_finished], attempts: 20, backoff: 100ms }\n"
	    "  - { name: newcomer, kind: webhook, url: 'http://127.0.0.1:%d/new',\n"
	    "      events: [step_failed, plan_finished] }\n",
	    PORT_GOOD, PORT_LATE, PORT_GOOD);
	start_server();
	wait_received(PORT_LATE, "/late", "step_failed", c, NULL, 1);
	d = wait_delivery(idc, "late", "step_failed", "delivered", 2);
	json_decref(d);
	verb("abort", c, NULL);
	wait_received(PORT_LATE, "/late", "plan_finished", c, NULL, 1);
	wait_received(PORT_GOOD, "/ok", "plan_finished", c, NULL, 1);
	/* Delivered before the restart, and not again after it. */
	assert_int_equal(received(PORT_GOOD, "/ok", "step_failed", c, NULL), 1);
	assert_int_equal(received(PORT_LATE, "/late", "step_failed", c, NULL), 1);
	wait_received(PORT_GOOD, "/new", "plan_finished", c, NULL, 1);
	assert_int_equal(received(PORT_GOOD, "/new", "step_failed", c, NULL), 0);
	assert_null(delivery(idc, "newcomer", "step_failed"));
	stop_server();
	assert_int_equal(itest_stop(good), 0);
	assert_int_equal(itest_stop(late), 0);
	dump_receiver(PORT_GOOD);
	dump_receiver(PORT_LATE);
}

/* A receiver that never answers: the engine runs a plan through its gate
 * to the end while every POST hangs, and SIGTERM still stops serve. */
static void
test_hung_receiver_never_holds_the_engine(void **state)
{
	char a[96];
	struct itest_history h;
	char status[24];
	json_t *d;
	pid_t hung;

	(void)state;
	hung = start_receiver(PORT_LATE, "hang");
	write_config(
	    "  - { name: hung, kind: webhook, url: 'http://127.0.0.1:%d/hung',\n"
	    "      events: [gate_waiting, plan_finished], backoff: 100ms }\n",
	    PORT_LATE);
	start_server();
	/* Then the notifier is inside a POST that will not be answered. */
	submit_gated("h", a, sizeof(a), PORT_LATE, "/hung");
	verb("approve", a, "2");
	for (int64_t until = clock_mono_ms() + WAIT_MS;; itest_sleep_ms(50)) {
		itest_read_history(db, a, &h, status, sizeof(status));
		if (strcmp(status, "succeeded") == 0)
			break;
		if (clock_mono_ms() > until)
			fail_msg("plan %s is %s while its notifier hangs", a, status);
	}
	/* The gate's notification was never answered: the engine did not
	 * wait for it. */
	d = delivery(plan_id(a), "hung", "gate_waiting");
	assert_non_null(d);
	assert_string_not_equal(json_string_value(json_object_get(d, "status")), "delivered");
	json_decref(d);
	stop_server();
	assert_int_equal(itest_stop(hung), 0);
	dump_receiver(PORT_LATE);
}

/* The attempts recorded so far of PLAN's EVENT to NOTIFIER (-1: no such
 * delivery). */
static int
attempts_of(int64_t plan, const char *notifier, const char *event)
{
	json_t *d = delivery(plan, notifier, event);
	int n = d != NULL ? (int)json_integer_value(json_object_get(d, "attempts")) : -1;

	json_decref(d);
	return n;
}

/* A receiver that takes requests and never answers, first in the file,
 * and a good one: the good one gets each notification while the hung
 * one's first try at it is still unanswered (no attempt recorded: a try
 * is recorded when it ends, after the 10 s request timeout), so the hung
 * one delays it by nothing. */
static void
test_hung_receiver_delays_no_other(void **state)
{
	char a[96], *text = NULL;
	pid_t hung, good;
	int64_t ida;

	(void)state;
	hung = start_receiver(PORT_LATE, "hang");
	good = start_receiver(PORT_GOOD, "200");
	write_config(
	    "  - { name: hung, kind: webhook, url: 'http://127.0.0.1:%d/hung',\n"
	    "      events: [gate_waiting, plan_finished], backoff: 100ms }\n"
	    "  - { name: good, kind: webhook, url: 'http://127.0.0.1:%d/good',\n"
	    "      events: [gate_waiting, plan_finished] }\n", PORT_LATE, PORT_GOOD);
	start_server();
	/* The hung receiver has the gate's POST in hand (logged on arrival),
	 * and the good one got it too. */
	submit_gated("i", a, sizeof(a), PORT_LATE, "/hung");
	ida = plan_id(a);
	wait_received(PORT_GOOD, "/good", "gate_waiting", a, NULL, 1);
	/* One thread for both would have recorded the hung try (timed out)
	 * before it posted to the good one. */
	assert_int_equal(attempts_of(ida, "hung", "gate_waiting"), 0);
	json_decref(wait_delivery(ida, "good", "gate_waiting", "delivered", 1));
	assert_int_equal(attempts_of(ida, "hung", "gate_waiting"), 0);

	/* The plan's end too reaches the good one while the hung one still
	 * sits on the gate's. */
	verb("approve", a, "2");
	wait_received(PORT_GOOD, "/good", "plan_finished", a, NULL, 1);
	json_decref(wait_delivery(ida, "good", "plan_finished", "delivered", 1));
	assert_int_equal(received(PORT_LATE, "/hung", "plan_finished", a, NULL), 0);
	assert_true(attempts_of(ida, "hung", "plan_finished") <= 0);

	/* The page and /metrics count the hung one's two as pending. */
	check_counts(ida, "good", 0, 2, 0);
	check_counts(ida, "hung", 2, 0, 0);
	json_decref(api_get("/metrics", &text));
	assert_non_null(text);
	check_metric(text, "good", "delivered", 2);
	check_metric(text, "good", "pending", 0);
	check_metric(text, "hung", "pending", 2);
	check_metric(text, "hung", "delivered", 0);
	free(text);
	stop_server();
	assert_int_equal(itest_stop(hung), 0);
	assert_int_equal(itest_stop(good), 0);
	dump_receiver(PORT_LATE);
}

/* `cutover run --config`: the gate's notification is sent (and recorded
 * delivered) before run exits waiting for approval; a failed delivery is
 * recorded as serve records it. */
static void
test_run_notifies(void **state)
{
	char r[96], file[320];
	pid_t good;
	int64_t idr;
	json_t *d;

	(void)state;
	good = start_receiver(PORT_GOOD, "200");
	write_config(
	    "  - { name: hook, kind: webhook, url: 'http://127.0.0.1:%d/run',\n"
	    "      events: [gate_waiting, step_failed, plan_finished] }\n"
	    "  - { name: ops-slack, kind: slack, url: env:ITEST_NOTIFY_SLACK,\n"
	    "      events: [gate_waiting] }\n"
	    "  - { name: down, kind: webhook, url: 'http://127.0.0.1:%d/down',\n"
	    "      events: [gate_waiting], attempts: 1 }\n", PORT_GOOD, PORT_DOWN);
	write_plan("r", "old", "[declare_ladder, { step: verify_ladder, gate: true }]",
	    r, sizeof(r));
	snprintf(file, sizeof(file), "%s/r.yaml", dir);
	assert_int_equal(itest_cutover("run", "--db", db, "--config", conf, file,
	    (char *)NULL), 3);
	/* Sent before run exited: no waiting here. */
	assert_int_equal(received(PORT_GOOD, "/run", "gate_waiting", r, NULL), 1);
	assert_int_equal(received(PORT_GOOD, "/services/", NULL, NULL,
	    "waits for approval of step 2, verify_ladder"), 1);
	/* Serve reads what run recorded (the API is serve's). */
	write_config("  - { name: hook, kind: webhook, url: 'http://127.0.0.1:%d/run',\n"
	    "      events: [gate_waiting, step_failed, plan_finished] }\n", PORT_GOOD);
	idr = plan_id(r);
	start_server();
	d = wait_delivery(idr, "hook", "gate_waiting", "delivered", 1);
	assert_int_equal(json_integer_value(json_object_get(d, "attempts")), 1);
	json_decref(d);
	d = wait_delivery(idr, "down", "gate_waiting", "failed", 1);
	check_try(json_object_get(d, "tries"), 0, 0, "Couldn't connect to server");
	json_decref(d);
	stop_server();
	/* Serve sent nothing again. */
	assert_int_equal(received(PORT_GOOD, "/run", "gate_waiting", r, NULL), 1);
	assert_int_equal(itest_stop(good), 0);
	assert_false(file_holds(db, secret));
}

static int
setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	char hash[65], recv[320];
	FILE *f;

	(void)state;
	itest_cleanup();
	if (getenv("CUTOVER_TEST_AMQP") == NULL || getenv("CUTOVER_TEST_MGMT") == NULL ||
	    getenv("CUTOVER_TEST_USER") == NULL || getenv("CUTOVER_TEST_PASSWORD") == NULL ||
	    getenv("CUTOVER_BINARY") == NULL || getenv("CUTOVER_SOURCE_DIR") == NULL) {
		fprintf(stderr, "set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, "
		    "CUTOVER_TEST_PASSWORD, CUTOVER_BINARY and CUTOVER_SOURCE_DIR\n");
		return -1;
	}
	if (getenv("CUTOVER_TEST_NOTIFY_PORT") != NULL)
		port_base = atoi(getenv("CUTOVER_TEST_NOTIFY_PORT"));
	else {
		/* Four ports a node: the 3.10 and 4.0 runs of this test side
		 * by side, each lent its own node, never share them. */
		const char *c = strrchr(getenv("CUTOVER_TEST_AMQP"), ':');
		int amqp = c != NULL ? atoi(c + 1) : 0;

		if (amqp > 0)
			port_base += (amqp % 100) * 4;
	}
	if (port_base < 1024 || port_base > 65532) {
		fprintf(stderr, "CUTOVER_TEST_NOTIFY_PORT: 1024 to 65532\n");
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/itest_notify.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(db, sizeof(db), "%s/notify.db", dir);
	snprintf(ops, sizeof(ops), "%s/operators", dir);
	snprintf(logfile, sizeof(logfile), "%s/serve.log", dir);
	snprintf(conf, sizeof(conf), "%s/serve.yaml", dir);
	for (int port = PORT_GOOD; port <= PORT_DOWN; port++) {
		recv_log(port, recv, sizeof(recv));
		unlink(recv);
	}
	if ((f = fopen(ops, "w")) == NULL)
		return -1;
	auth_hash_hex(TOKEN, strlen(TOKEN), hash);
	fprintf(f, "notifier-test:%s\n", hash);
	fclose(f);
	setenv("CUTOVER_TOKEN", TOKEN, 1);
	snprintf(secret, sizeof(secret), "sekrit%ld", (long)getpid());
	snprintf(recv, sizeof(recv), "http://127.0.0.1:%d/services/T0/B0/%s", PORT_GOOD, secret);
	setenv("ITEST_NOTIFY_SLACK", recv, 1);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int
teardown(void **state)
{
	char cmd[300];

	(void)state;
	itest_cleanup();
	server = -1;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The database file removed under serve: every notifier is told, whatever
 * events it takes (the database cannot record this, so it goes from
 * memory), once, however many turns the engine then makes. */
static void
test_database_lost_is_notified(void **state)
{
	pid_t good;

	(void)state;
	good = start_receiver(PORT_GOOD, "200");
	write_config(
	    "  - { name: hook, kind: webhook, url: 'http://127.0.0.1:%d/hook',\n"
	    "      events: [plan_finished] }\n"
	    "  - { name: ops-slack, kind: slack, url: env:ITEST_NOTIFY_SLACK,\n"
	    "      events: [gate_waiting] }\n", PORT_GOOD);
	start_server();
	assert_int_equal(unlink(db), 0);
	wait_received(PORT_GOOD, "/hook", "database_lost", "", NULL, 1);
	wait_received(PORT_GOOD, "/services/", NULL, NULL, "notify.db is gone", 1);
	/* Twenty more turns of the engine (--poll-ms 100) say it no more. */
	itest_sleep_ms(2000);
	assert_int_equal(received(PORT_GOOD, "/hook", "database_lost", "", NULL), 1);
	assert_int_equal(received(PORT_GOOD, "/services/", NULL, NULL, "is gone"), 1);
	assert_int_equal(received(PORT_GOOD, "/hook", NULL, NULL, "restored file"), 1);
	stop_server();
	assert_int_equal(itest_stop(good), 0);
	dump_receiver(PORT_GOOD);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_four_events_retries_and_no_secret, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_restart_neither_resends_nor_loses, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hung_receiver_never_holds_the_engine, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_hung_receiver_delays_no_other, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_run_notifies, setup, teardown),
		cmocka_unit_test_setup_teardown(test_database_lost_is_notified, setup,
		    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
