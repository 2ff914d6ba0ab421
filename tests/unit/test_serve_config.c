/* test_serve_config: serve.yaml's loader (plans/serve_config.c) and the
 * notifiers' bodies (orchestrator/notify_body.c). A full configuration
 * loads with the values it says and the defaults serve_config.h promises
 * (a backup section's too);
 * several mistakes are all reported in file order; a literal URL is never
 * repeated in a message; each history event maps to the notifier event
 * its row says; each event kind's webhook and Slack bodies say what
 * happened. tests/cli/test_serve_config.sh checks tests/serve/bad/ one
 * error at a time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cm.h"
#include "notify_body.h"
#include "serve_config.h"
#include "store_notify.h"

static int
load(const char *text, struct serve_config **c, struct plan_errors *errs)
{
	return serve_config_load_buffer("serve.yaml", text, strlen(text), c, errs);
}

static void
test_full_config(void **state)
{
	static const char text[] =
	    "listen: 127.0.0.1:9090\n"
	    "db: /var/lib/cutover/cutover.db\n"
	    "operators: /etc/cutover/operators\n"
	    "log_level: warn\n"
	    "notifiers:\n"
	    "  - name: ops-slack\n"
	    "    kind: slack\n"
	    "    url: env:SLACK_URL\n"
	    "    events: [gate_waiting, plan_finished]\n"
	    "  - { name: hook, kind: webhook, url: 'https://h.example/x?a=1',\n"
	    "      events: [step_failed, alert_opened], attempts: 3, backoff: 250ms }\n";
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;

	(void)state;
	assert_int_equal(load(text, &c, &errs), 0);
	assert_string_equal(c->listen, "127.0.0.1:9090");
	assert_int_equal(c->listen_line, 1);
	assert_string_equal(c->db, "/var/lib/cutover/cutover.db");
	assert_string_equal(c->operators, "/etc/cutover/operators");
	assert_string_equal(c->log_level, "warn");
	assert_int_equal(c->nnotifiers, 2);
	assert_string_equal(c->notifiers[0].name, "ops-slack");
	assert_int_equal(c->notifiers[0].kind, NOTIFY_SLACK);
	assert_string_equal(c->notifiers[0].url, "env:SLACK_URL");
	assert_int_equal(c->notifiers[0].events,
	    (1u << NOTIFY_GATE_WAITING) | (1u << NOTIFY_PLAN_FINISHED));
	assert_int_equal(c->notifiers[0].attempts, SERVE_NOTIFY_ATTEMPTS);
	assert_int_equal(c->notifiers[0].backoff_ms, SERVE_NOTIFY_BACKOFF_MS);
	assert_int_equal(c->notifiers[0].line, 6);
	assert_int_equal(c->notifiers[1].kind, NOTIFY_WEBHOOK);
	assert_string_equal(c->notifiers[1].url, "https://h.example/x?a=1");
	assert_int_equal(c->notifiers[1].attempts, 3);
	assert_int_equal(c->notifiers[1].backoff_ms, 250);
	assert_int_equal(c->notifiers[1].events,
	    (1u << NOTIFY_STEP_FAILED) | (1u << NOTIFY_ALERT_OPENED));
	serve_config_free(c);
}

static void
test_empty_mapping_has_no_values(void **state)
{
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;

	(void)state;
	assert_int_equal(load("log_level: info\n", &c, &errs), 0);
	assert_null(c->listen);
	assert_null(c->db);
	assert_null(c->operators);
	assert_int_equal(c->nnotifiers, 0);
	assert_null(c->backup.directory);
	serve_config_free(c);
}

/* A backup section: its values, else the defaults; several mistakes in it
 * reported together, each where it is written. */
static void
test_backup_section(void **state)
{
	static const struct {
		int line;
		const char *says;
	} want[] = {
		{ 2, "/nonexistent/b does not exist" }, { 3, "shorter than 10s" },
		{ 4, "backup.keep -1 is out of range" }, { 5, "unknown key 'every'" },
	};
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;

	(void)state;
	assert_int_equal(load("backup:\n  directory: /tmp\n  interval: 15m\n  keep: 7\n", &c,
	    &errs), 0);
	assert_string_equal(c->backup.directory, "/tmp");
	assert_int_equal(c->backup.interval_ms, 15 * 60 * 1000);
	assert_int_equal(c->backup.keep, 7);
	assert_int_equal(c->backup.line, 2);
	serve_config_free(c);
	assert_int_equal(load("backup: { directory: /tmp }\n", &c, &errs), 0);
	assert_int_equal(c->backup.interval_ms, SERVE_BACKUP_INTERVAL_MS);
	assert_int_equal(c->backup.keep, SERVE_BACKUP_KEEP);
	serve_config_free(c);
	assert_int_equal(load("backup:\n  directory: /nonexistent/b\n  interval: 9s\n"
	    "  keep: -1\n  every: 1h\n", &c, &errs), -1);
	assert_int_equal(errs.n, 4);
	for (size_t i = 0; i < errs.n; i++) {
		assert_int_equal(errs.v[i].line, want[i].line);
		assert_non_null(strstr(errs.v[i].message, want[i].says));
	}
	plan_errors_free(&errs);
}

static void
test_every_mistake_in_order(void **state)
{
	static const char text[] =
	    "listen: nowhere\n"					/* 1:9 */
	    "db: /x.db\n"
	    "notifiers:\n"
	    "  - name: a\n"
	    "    kind: slack\n"
	    "    url: https://hooks.slack.com/services/T0/B0/sekrit%zz\n"	/* 6:10 */
	    "    events: [gate_waiting]\n"
	    "    retries: 3\n"					/* 8:5 */
	    "log_level: loud\n";				/* 9:12 */
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;
	char line[512];

	(void)state;
	assert_int_equal(load(text, &c, &errs), -1);
	assert_null(c);
	for (size_t i = 0; i < errs.n; i++)
		print_message("%s\n", plan_error_format(&errs, i, line, sizeof(line)));
	assert_int_equal(errs.n, 4);
	assert_int_equal(errs.v[0].line, 1);
	assert_int_equal(errs.v[0].column, 9);
	assert_int_equal(errs.v[1].line, 6);
	assert_int_equal(errs.v[1].column, 10);
	assert_non_null(strstr(errs.v[1].message, "notifiers[0].url has a '%'"));
	assert_int_equal(errs.v[2].line, 8);
	assert_non_null(strstr(errs.v[2].message, "unknown key 'retries' in notifiers[0]"));
	assert_int_equal(errs.v[3].line, 9);
	assert_int_equal(errs.v[3].column, 12);
	/* The literal URL is a secret: no message repeats any of it. */
	for (size_t i = 0; i < errs.n; i++) {
		assert_null(strstr(errs.v[i].message, "sekrit"));
		assert_null(strstr(errs.v[i].message, "hooks.slack.com"));
	}
	plan_errors_free(&errs);
}

static void
test_env_reference_checked_by_name_only(void **state)
{
	static const char text[] =
	    "notifiers:\n"
	    "  - { name: a, kind: slack, url: env:TEST_SC_URL, events: [step_failed] }\n";
	struct plan_errors errs = { 0 };
	struct serve_config *c = NULL;
	char err[512], url[256];

	(void)state;
	assert_int_equal(load(text, &c, &errs), 0);
	unsetenv("TEST_SC_URL");
	assert_int_equal(serve_config_check_env(c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "serve.yaml:2:5: notifier a: env:TEST_SC_URL is not set"));
	setenv("TEST_SC_URL", "not a url sekrit", 1);
	assert_int_equal(serve_config_check_env(c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "does not hold an http(s) URL"));
	assert_null(strstr(err, "sekrit"));
	setenv("TEST_SC_URL", "https://hooks.slack.com/services/T0/B0/sekrit", 1);
	assert_int_equal(serve_config_check_env(c, err, sizeof(err)), 0);
	assert_int_equal(serve_notifier_url(&c->notifiers[0], url, sizeof(url), err,
	    sizeof(err)), 0);
	assert_string_equal(url, "https://hooks.slack.com/services/T0/B0/sekrit");
	unsetenv("TEST_SC_URL");
	serve_config_free(c);
}

static void
test_history_events_map_to_notifier_events(void **state)
{
	static const struct { const char *kind; int want; } rows[] = {
		{ "step.waiting_approval", NOTIFY_GATE_WAITING },
		{ "step.failed", NOTIFY_STEP_FAILED },
		{ "alert.raised", NOTIFY_ALERT_OPENED },
		{ "plan.succeeded", NOTIFY_PLAN_FINISHED },
		{ "plan.aborted", NOTIFY_PLAN_FINISHED },
		{ "plan.failed", -1 },		/* step_failed says it; retry is open */
		{ "step.succeeded", -1 },
		{ "alert.acked", -1 },
	};
	enum notify_event e;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		int got = serve_notify_event_of(rows[i].kind, &e) == 0 ? (int)e : -1;

		if (got != rows[i].want)
			fail_msg("%s maps to %d, expected %d", rows[i].kind, got, rows[i].want);
	}
}

/* The bodies of one delivery of each event, generic and Slack. */
static void
test_bodies(void **state)
{
	static const struct {
		const char *event, *kind, *details, *text;
	} rows[] = {
		{ "gate_waiting", "step.waiting_approval", "{\"step\":5,\"kind\":\"flip\"}",
		  "cutover: plan orders waits for approval of step 5, flip" },
		{ "step_failed", "step.failed",
		  "{\"error\":\"level 3 <missing> & more\",\"step\":3,\"kind\":\"verify_ladder\"}",
		  "cutover: plan orders: step 3, verify_ladder, failed: level 3 <missing> & more" },
		{ "alert_opened", "alert.raised",
		  "{\"alert\":\"parking_not_empty\",\"message\":\"2 messages\",\"alert_id\":4}",
		  "cutover: plan orders: alert parking_not_empty: 2 messages" },
		{ "plan_finished", "plan.succeeded", "{}", "cutover: plan orders succeeded" },
		{ "plan_finished", "plan.aborted", "{}", "cutover: plan orders was aborted" },
	};
	struct store_delivery d;
	char *body, err[256];
	json_t *j;

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		memset(&d, 0, sizeof(d));
		d.plan_id = 7;
		d.event_id = 42;
		d.event_ts_ms = 1764606600123;
		snprintf(d.plan_name, sizeof(d.plan_name), "orders");
		snprintf(d.event, sizeof(d.event), "%s", rows[i].event);
		snprintf(d.history_kind, sizeof(d.history_kind), "%s", rows[i].kind);
		d.details_json = (char *)rows[i].details;
		assert_int_equal(notify_body(NOTIFY_WEBHOOK, &d, &body, err, sizeof(err)), 0);
		assert_non_null(j = json_loads(body, 0, NULL));
		assert_string_equal(json_string_value(json_object_get(j, "event")), rows[i].event);
		assert_string_equal(json_string_value(json_object_get(j, "plan")), "orders");
		assert_int_equal(json_integer_value(json_object_get(j, "plan_id")), 7);
		assert_int_equal(json_integer_value(json_object_get(j, "event_id")), 42);
		assert_string_equal(json_string_value(json_object_get(j, "time")),
		    "2025-12-01T16:30:00.123Z");
		assert_string_equal(json_string_value(json_object_get(j, "text")), rows[i].text);
		assert_true(json_is_object(json_object_get(j, "details")));
		json_decref(j);
		free(body);
		assert_int_equal(notify_body(NOTIFY_SLACK, &d, &body, err, sizeof(err)), 0);
		assert_non_null(j = json_loads(body, 0, NULL));
		assert_int_equal(json_object_size(j), 1);
		if (i == 1)
			assert_string_equal(json_string_value(json_object_get(j, "text")),
			    "cutover: plan orders: step 3, verify_ladder, failed: level 3 "
			    "&lt;missing&gt; &amp; more");
		else
			assert_string_equal(json_string_value(json_object_get(j, "text")),
			    rows[i].text);
		json_decref(j);
		free(body);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_full_config),
	cmocka_unit_test(test_empty_mapping_has_no_values),
	cmocka_unit_test(test_every_mistake_in_order),
	cmocka_unit_test(test_backup_section),
	cmocka_unit_test(test_env_reference_checked_by_name_only),
	cmocka_unit_test(test_history_events_map_to_notifier_events),
	cmocka_unit_test(test_bodies))
