/* test_view: what the API says a plan's gates will do (web/view_gate.c)
 * and the store's name rule (store_admit.c), on a real SQLite file: the
 * flip's flag service is named by its host, never a credential, path or
 * query; a finished plan holds its name until archived; a large step
 * result comes without its long lists (web/view_result.c); each
 * notifier's deliveries are counted by state in the plan's document, the
 * plan list's and /metrics (web/view_notify.c, web/metrics.c); move_old's
 * counts, what it has still to take, its pace and time to go in /metrics;
 * move_old's result kept a row per queue shown as the same result whole;
 * what holds a plan for a person, in its document and the plan list, and
 * the list's order by it (web/view_holds.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metrics.h"
#include "pt.h"
#include "store.h"
#include "store_admit.h"
#include "store_notify.h"
#include "view.h"
#include "view_gate.h"
#include "view_holds.h"
#include "view_result.h"

static char dir[PATH_MAX], db[PATH_MAX + 16];

static const char plan_text[] =
    "name: viewgate\n"
    PT_BROKER
    "old:\n"
    "  queues: { names: [viewgate.old] }\n"
    "ladder:\n"
    "  prefix: viewgate\n"
    "  unit: 1s\n"
    "  levels: 6\n"
    "  destinations: [viewgate.dest]\n"
    "canary:\n"
    "  max_lateness: 3s\n"
    "flag:\n"
    "  kind: unleash\n"
    "  url: http://flags.example:4242/unleash-hunter2\n"
    "  project: payments\n"
    "  environment: production\n"
    "  feature: delay-ladder\n"
    "  token: env:UNLEASH_TOKEN\n"
    "steps: [measure_horizon, declare_ladder, verify_ladder, canary,"
    " { step: flip, gate: true }, watch, { step: remove_old, gate: true }]\n";

/* A fresh database holding the plan above (its id in *ID). */
static struct store *
with_plan(int64_t *id)
{
	struct plan_errors errs = { 0 };
	struct store *s = NULL;
	char err[512];

	unlink(db);
	if (store_open(db, &s, err, sizeof(err)) != 0)
		fail_msg("store_open: %s", err);
	if (store_plan_submit(s, "viewgate.yaml", plan_text, strlen(plan_text), "alice", 0,
	    id, &errs, err, sizeof(err)) != 0)
		fail_msg("submit: %s", errs.n ? errs.v[0].message : err);
	return s;
}

static void
test_url_host(void **state)
{
	char h[128];

	(void)state;
	view_url_host("http://user:pw@flags.example:4242/api/x?token=abc", h, sizeof(h));
	assert_string_equal(h, "flags.example:4242");
	view_url_host("https://h.example/?q=1", h, sizeof(h));
	assert_string_equal(h, "h.example");
	view_url_host("http://a:b@c@host#frag", h, sizeof(h));
	assert_string_equal(h, "host");
	view_url_host(NULL, h, sizeof(h));
	assert_string_equal(h, "");
}

/* The flip's gate: provider, host, feature, environment and value; not the
 * URL's path (the plan loader already refuses credentials and queries in
 * it) nor the token. */
static void
test_flip_will_do(void **state)
{
	struct store *s;
	json_t *doc, *f;
	char err[512], *text;
	int64_t id;

	(void)state;
	s = with_plan(&id);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	f = json_object_get(doc, "flip");
	assert_string_equal(json_string_value(json_object_get(f, "provider")), "unleash");
	assert_string_equal(json_string_value(json_object_get(f, "host")), "flags.example:4242");
	assert_string_equal(json_string_value(json_object_get(f, "feature")), "delay-ladder");
	assert_string_equal(json_string_value(json_object_get(f, "environment")), "production");
	assert_string_equal(json_string_value(json_object_get(f, "project")), "payments");
	assert_string_equal(json_string_value(json_object_get(f, "value")), "enabled (on)");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "facts"),
	    "max_lateness_ms")), 3000);
	text = json_dumps(doc, 0);
	assert_null(strstr(text, "hunter2"));	/* the URL's path is not shown */
	assert_null(strstr(text, "UNLEASH_TOKEN"));
	free(text);
	json_decref(doc);
	store_close(s);
}

/* A finished plan holds its name: re-submitting is refused (3) naming the
 * plan, until it is archived; a running plan cannot be archived. */
static void
test_name_held_until_archived(void **state)
{
	struct plan_errors errs = { 0 };
	struct store_plan p;
	struct store *s;
	char err[512];
	int64_t id, id2 = 0;

	(void)state;
	s = with_plan(&id);
	assert_int_equal(store_plan_archive(s, id, "alice", "", err, sizeof(err)),
	    STORE_REFUSED);
	assert_non_null(strstr(err, "only a finished plan"));
	assert_int_equal(store_plan_set_status(s, id, "succeeded", err, sizeof(err)), 0);
	assert_int_equal(store_plan_submit(s, "viewgate.yaml", plan_text, strlen(plan_text),
	    "alice", 0, &id2, &errs, err, sizeof(err)), STORE_UNARCHIVED);
	assert_int_equal(id2, id);
	assert_non_null(strstr(err, "archive it first"));
	assert_int_equal(store_plan_archive(s, id, "bob", "done", err, sizeof(err)), 0);
	assert_int_equal(store_plan_archive(s, id, "bob", "", err, sizeof(err)),
	    STORE_REFUSED);
	assert_non_null(strstr(err, "archived already"));
	assert_int_equal(store_plan_submit(s, "viewgate.yaml", plan_text, strlen(plan_text),
	    "alice", 0, &id2, &errs, err, sizeof(err)), 0);
	assert_true(id2 > id);
	assert_int_equal(store_plan_find(s, "viewgate", &p, err, sizeof(err)), 0);
	assert_int_equal(p.id, id2);
	assert_int_equal(p.archived_ms, 0);
	assert_int_equal(store_plan_get(s, id, &p, err, sizeof(err)), 0);
	assert_true(p.archived_ms > 0);
	store_close(s);
}

/* The elided list named POINTER in step ST's result_elided: its count, or -1. */
static json_int_t
elided_count(const json_t *st, const char *pointer)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(st, "result_elided"), i, e)
		if (strcmp(json_string_value(json_object_get(e, "pointer")), pointer) == 0)
			return json_integer_value(json_object_get(e, "count"));
	return -1;
}

/* A large step result goes in the plan document without its long lists
 * (named with their lengths and the route serving it whole); its other
 * members, short lists and strings holding brackets, quotes and commas
 * come through as written; a small result is carried whole. */
static void
test_large_result_without_long_lists(void **state)
{
	json_t *queues = json_array(), *last = json_array(), *res, *doc = NULL, *st;
	struct store *s;
	char err[512], *text, url[64];
	int64_t id;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		json_array_append_new(queues, json_pack("{s:s,s:i,s:[i,i]}", "name",
		    i == 7 ? "odd\"],{q" : "bench.delay", "ttl_ms", i, "pair", i, i));
		json_array_append_new(last, json_pack("{s:i}", "publish", i));
	}
	res = json_pack("{s:o,s:{s:i,s:s},s:[i,i],s:{s:I,s:o},s:[]}", "queues", queues,
	    "summary", "queues", 3000, "note", "a [ , ] { \" }", "warnings", 1, 2,
	    "old_last", "at_ms", (json_int_t)12345, "queues", last, "empty");
	text = json_dumps(res, JSON_COMPACT);
	assert_true(strlen(text) > VIEW_RESULT_INLINE);
	s = with_plan(&id);
	assert_int_equal(store_step_update(s, id, 0, "succeeded", 1, 2, text, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(store_step_update(s, id, 1, "succeeded", 1, 2, "{\"queues\":"
	    "[1,2,3]}", NULL, err, sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	st = json_array_get(json_object_get(doc, "steps"), 0);
	assert_int_equal(json_array_size(json_object_get(json_object_get(st, "result"),
	    "queues")), 0);
	assert_int_equal(elided_count(st, "/queues"), 3000);
	assert_int_equal(elided_count(st, "/old_last/queues"), 3000);
	assert_int_equal(elided_count(st, "/warnings"), -1);
	assert_int_equal(json_array_size(json_object_get(st, "result_elided")), 2);
	json_object_set_new(res, "queues", json_array());
	json_object_set_new(json_object_get(res, "old_last"), "queues", json_array());
	assert_true(json_equal(json_object_get(st, "result"), res));
	snprintf(url, sizeof(url), "/api/plans/%lld/steps/1/result", (long long)id);
	assert_string_equal(json_string_value(json_object_get(st, "result_url")), url);
	st = json_array_get(json_object_get(doc, "steps"), 1);
	assert_null(json_object_get(st, "result_elided"));
	assert_int_equal(json_array_size(json_object_get(json_object_get(st, "result"),
	    "queues")), 3);
	json_decref(doc);
	/* Text cut short anywhere: no brief (the caller carries it as it is).
	 * Every cut in its last 40 bytes (its closing members), and one in
	 * every 499 bytes before them, from the end: each cut is a parse of
	 * the whole text, so every byte of it would be minutes. */
	{
		size_t n = strlen(text);

		for (size_t cut = n - 1; cut > VIEW_RESULT_INLINE; cut -= cut > n - 40 ? 1 : 499) {
			json_t *b, *e;

			text[cut] = '\0';
			view_result_brief(text, &b, &e);
			assert_null(b);
			assert_null(e);
		}
	}
	json_decref(res);
	free(text);
	store_close(s);
}

/* A result whose long list the store keeps as rows (move_old's "queues"
 * while it runs, or measure_horizon's): the plan document leaves the rows
 * in the store when it would cut the list anyway, and names the list
 * with their number; a list of a few rows is carried whole, joined. */
static void
test_rows_left_in_the_store(void **state)
{
	struct store_entry v[3000];
	char names[3000][32], texts[3000][96], err[512];
	json_t *doc = NULL, *st, *res;
	struct store *s;
	int64_t id;

	(void)state;
	for (int i = 0; i < 3000; i++) {
		snprintf(names[i], sizeof(names[i]), "old.delay.%dms", 1000 + i);
		snprintf(texts[i], sizeof(texts[i]), "{\"name\":\"%s\",\"moved\":%d,"
		    "\"pass_done\":1}", names[i], i);
		v[i] = (struct store_entry){ .name = names[i], .ord = i, .json = texts[i] };
	}
	s = with_plan(&id);
	assert_int_equal(store_step_save_entries(s, id, 0, "{\"ok\":false,\"pass\":1,"
	    "\"queues\":[],\"counts\":{\"moved\":7}}", v, 3000, err, sizeof(err)), 0);
	assert_int_equal(store_step_save_entries(s, id, 1, "{\"queues\":[],\"n\":3}",
	    v, 3, err, sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	st = json_array_get(json_object_get(doc, "steps"), 0);
	res = json_object_get(st, "result");
	assert_int_equal(json_array_size(json_object_get(res, "queues")), 0);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(res, "counts"),
	    "moved")), 7);
	assert_int_equal(elided_count(st, "/queues"), 3000);
	assert_non_null(json_object_get(st, "result_url"));
	st = json_array_get(json_object_get(doc, "steps"), 1);
	assert_null(json_object_get(st, "result_elided"));
	res = json_object_get(st, "result");
	assert_int_equal(json_array_size(json_object_get(res, "queues")), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(res, "queues"), 2), "name")), "old.delay.1002ms");
	json_decref(doc);
	store_close(s);
}

/* The count of NOTIFIER in DOC's deliveries: pending, delivered, failed,
 * into N (all -1 when it is not counted). */
static void
counted(const json_t *doc, const char *notifier, json_int_t n[3])
{
	const json_t *row;
	size_t i;

	n[0] = n[1] = n[2] = -1;
	json_array_foreach(json_object_get(doc, "deliveries"), i, row)
		if (strcmp(json_string_value(json_object_get(row, "notifier")), notifier) == 0) {
			n[0] = json_integer_value(json_object_get(row, "pending"));
			n[1] = json_integer_value(json_object_get(row, "delivered"));
			n[2] = json_integer_value(json_object_get(row, "failed"));
		}
}

/* One notifier (hook) with a delivery in each state, another (quiet) that
 * serve knows but that has none: the plan's document counts hook's, the
 * plan list's both, /metrics both by name and state. */
static void
test_deliveries_counted(void **state)
{
	static const char *const kinds[] = { "step.failed", "alert.raised", "plan.aborted" };
	int64_t id, ev[3], last = 0;
	struct store *s;
	json_t *doc = NULL;
	json_int_t n[3];
	char err[512], *text = NULL;
	size_t len;

	(void)state;
	s = with_plan(&id);
	assert_int_equal(store_notify_cursor(s, "quiet", &last, err, sizeof(err)), 0);
	assert_int_equal(store_notify_cursor(s, "hook", &last, err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(store_append_event(s, id, 1000 + i, "engine", kinds[i], "{}",
		    &ev[i], err, sizeof(err)), 0);
		assert_int_equal(store_notify_enqueue(s, "hook", "webhook", ev[i], id,
		    "step_failed", 1000 + i, err, sizeof(err)), 0);
	}
	/* ev[0] stays pending (tried once, to be tried again), ev[1] is
	 * delivered, ev[2] failed. */
	assert_int_equal(store_notify_attempt(s, 1, 1, 2000, 500, "HTTP 500", "pending",
	    3000, err, sizeof(err)), 0);
	assert_int_equal(store_notify_attempt(s, 2, 1, 2000, 200, NULL, "delivered", 0, err,
	    sizeof(err)), 0);
	assert_int_equal(store_notify_attempt(s, 3, 1, 2000, 404, "HTTP 404", "failed", 0,
	    err, sizeof(err)), 0);

	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "deliveries")), 1);
	counted(doc, "hook", n);
	assert_true(n[0] == 1 && n[1] == 1 && n[2] == 1);
	json_decref(doc);
	assert_int_equal(view_plan_list(s, NULL, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "deliveries")), 2);
	counted(doc, "hook", n);
	assert_true(n[0] == 1 && n[1] == 1 && n[2] == 1);
	counted(doc, "quiet", n);
	assert_true(n[0] == 0 && n[1] == 0 && n[2] == 0);
	json_decref(doc);

	assert_int_equal(metrics_render(s, &text, &len, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "# TYPE cutover_notify_deliveries gauge\n"
	    "cutover_notify_deliveries{notifier=\"hook\",state=\"pending\"} 1\n"
	    "cutover_notify_deliveries{notifier=\"hook\",state=\"delivered\"} 1\n"
	    "cutover_notify_deliveries{notifier=\"hook\",state=\"failed\"} 1\n"
	    "cutover_notify_deliveries{notifier=\"quiet\",state=\"pending\"} 0\n"
	    "cutover_notify_deliveries{notifier=\"quiet\",state=\"delivered\"} 0\n"
	    "cutover_notify_deliveries{notifier=\"quiet\",state=\"failed\"} 0\n"));
	free(text);
	store_close(s);
}

/* A plan with a move_old step mid-pass: /metrics gives its counts by
 * outcome, what it has still to take, its pace, the time to go and the
 * pass, from the step's stored result. */
/* A fresh database holding the plan above with a move_old step after the
 * flip (step 5; its id in *ID). */
static struct store *
with_move_plan(int64_t *id)
{
	struct plan_errors errs = { 0 };
	struct store *s = NULL;
	char err[512], *p;
	size_t len, idx;

	unlink(db);
	assert_int_equal(store_open(db, &s, err, sizeof(err)), 0);
	p = malloc(sizeof(plan_text) + 128);
	assert_non_null(p);
	idx = (size_t)(strstr(plan_text, " watch,") - plan_text);
	snprintf(p, sizeof(plan_text) + 128, "%.*s move_old,%s", (int)idx, plan_text,
	    plan_text + idx);
	len = strlen(p);
	snprintf(p + len - 1, 128, "\nmove_old: { entry: [ { queues: { match: '.' }, "
	    "from: timestamp } ] }\n");
	if (store_plan_submit(s, "viewgate.yaml", p, strlen(p), "alice", 0, id, &errs,
	    err, sizeof(err)) != 0)
		fail_msg("submit: %s", errs.n ? errs.v[0].message : err);
	free(p);
	return s;
}

static void
test_move_progress_in_metrics(void **state)
{
	static const char moving[] =
	    "{\"pass\":1,\"counts\":{\"moved\":40,\"left\":2,\"skipped\":3,"
	    "\"may_duplicate\":1},\"progress\":{\"remaining\":120,\"taken\":42,"
	    "\"per_s\":21.0,\"eta_ms\":5714,\"updated_ms\":1000}}";
	struct store *s;
	char err[512], *text = NULL;
	size_t len;
	int64_t id;

	(void)state;
	s = with_move_plan(&id);
	assert_int_equal(store_step_update(s, id, 5, "running", 1000, 0, moving, NULL, err,
	    sizeof(err)), 0);
	/* Two ticks' lag, the later one written first: the latest tick's. */
	assert_int_equal(store_sample_insert(s, id, 2000, "tick.lag_ms", "", 1500, err,
	    sizeof(err)), 0);
	assert_int_equal(store_sample_insert(s, id, 1000, "tick.lag_ms", "", 250, err,
	    sizeof(err)), 0);
	assert_int_equal(metrics_render(s, &text, &len, err, sizeof(err)), 0);
	assert_non_null(strstr(text, "# TYPE cutover_watch_tick_lag_seconds gauge\n"
	    "cutover_watch_tick_lag_seconds{plan=\"viewgate\"} 1.500\n"));
	assert_non_null(strstr(text, "# TYPE cutover_move_old_messages gauge\n"
	    "cutover_move_old_messages{plan=\"viewgate\",outcome=\"moved\"} 40\n"
	    "cutover_move_old_messages{plan=\"viewgate\",outcome=\"left\"} 2\n"
	    "cutover_move_old_messages{plan=\"viewgate\",outcome=\"skipped\"} 3\n"));
	assert_non_null(strstr(text,
	    "cutover_move_old_may_duplicate_messages{plan=\"viewgate\"} 1\n"));
	assert_non_null(strstr(text,
	    "cutover_move_old_remaining_messages{plan=\"viewgate\"} 120\n"));
	assert_non_null(strstr(text,
	    "cutover_move_old_messages_per_second{plan=\"viewgate\"} 21.000\n"));
	assert_non_null(strstr(text, "cutover_move_old_eta_seconds{plan=\"viewgate\"} 5.714\n"));
	assert_non_null(strstr(text, "cutover_move_old_pass{plan=\"viewgate\"} 1\n"));
	free(text);
	store_close(s);
}

/* What serve shows of plan ID (its document, as the API's JSON, and
 * /metrics' move_old lines: the others hold times that move between two
 * renders), and its step 5's result as the result route serves it, into
 * OUT[0..2] (the caller frees them). */
static void
shown(struct store *s, int64_t id, char *out[3])
{
	struct store_step st;
	json_t *doc = NULL;
	char err[512], *text = NULL, *line, *keep;
	size_t len, n = 0;

	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	out[0] = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	assert_int_equal(metrics_render(s, &text, &len, err, sizeof(err)), 0);
	keep = out[1] = calloc(len + 1, 1);
	assert_non_null(keep);
	for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n"))
		if (strncmp(line, "cutover_move_old", 16) == 0)
			n += (size_t)sprintf(keep + n, "%s\n", line);
	assert_true(n > 0);
	free(text);
	assert_int_equal(store_step_get(s, id, 5, &st, err, sizeof(err)), 0);
	out[2] = st.result_json;
	st.result_json = NULL;
	store_step_clear(&st);
}

/* move_old's result written as its rest and a row per queue
 * (store_step_save_entries, as the step writes it while it runs) is shown
 * exactly as the same result written whole: the plan's document (the
 * API's and the page's), /metrics' move_old lines and the result route,
 * byte for byte;
 * with a few queues (the result inline) and with 3,000 (its list cut from
 * the document, the whole one behind result_url). */
static void
test_move_result_rows_shown_as_whole(void **state)
{
	static const int sizes[] = { 12, 3000 };

	(void)state;
	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		json_t *queues = json_array(), *res;
		struct store_entry *v = calloc((size_t)sizes[k], sizeof(*v));
		char **texts = calloc((size_t)sizes[k], sizeof(*texts)), *whole, *rest;
		char name[32], err[512], *a[3], *b[3];
		struct store *s;
		int64_t id;

		assert_non_null(v);
		assert_non_null(texts);
		for (int i = 0; i < sizes[k]; i++) {
			json_t *e;

			snprintf(name, sizeof(name), "delay.%ds", sizes[k] - i);
			e = json_pack("{s:s,s:i,s:i,s:i,s:i,s:{s:i},s:I,s:s,s:s}", "name",
			    name, "moved", i % 3, "left", i % 2, "skipped", 0, "pass_done", 1,
			    "left_why", "too_long", i % 2, "left_until_ms", (json_int_t)9000 + i,
			    "from", "timestamp", "destination", "viewgate.dest");
			texts[i] = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
			v[i] = (struct store_entry){ .name = json_string_value(json_object_get(e,
			    "name")), .ord = i, .json = texts[i] };
			json_array_append_new(queues, e);
		}
		res = json_pack("{s:b,s:i,s:I,s:o,s:{s:i,s:i,s:i,s:i},s:{s:i,s:i,s:f,"
		    "s:n,s:I}}", "ok", 0, "pass", 1, "pass_started_ms", (json_int_t)5000,
		    "queues", queues, "counts", "moved", 40, "left", 2, "skipped", 3,
		    "may_duplicate", 1, "progress", "remaining", 120, "taken", 42, "per_s",
		    21.5, "eta_ms", "updated_ms", (json_int_t)1000);
		whole = json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_incref(queues);
		json_object_set_new(res, "queues", json_array());
		rest = json_dumps(res, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_object_set_new(res, "queues", queues);
		s = with_move_plan(&id);
		assert_int_equal(store_step_update(s, id, 5, "running", 1000, 0, whole, NULL,
		    err, sizeof(err)), 0);
		shown(s, id, a);
		assert_int_equal(store_step_save_entries(s, id, 5, rest, v, (size_t)sizes[k],
		    err, sizeof(err)), 0);
		shown(s, id, b);
		assert_string_equal(b[2], whole);
		for (int i = 0; i < 3; i++) {
			assert_string_equal(a[i], b[i]);
			free(a[i]);
			free(b[i]);
		}
		for (int i = 0; i < sizes[k]; i++)
			free(texts[i]);
		free(texts);
		free(v);
		free(whole);
		free(rest);
		json_decref(res);
		store_close(s);
	}
}

/* Hold I of DOC: its what, step, kind, alert and todo as one line. */
static void
hold_is(const json_t *doc, size_t i, const char *want)
{
	const json_t *h = json_array_get(json_object_get(doc, "holds"), i);
	char got[512];

	assert_non_null(h);
	snprintf(got, sizeof(got), "%s|%lld|%s|%lld|%s",
	    json_string_value(json_object_get(h, "what")),
	    (long long)json_integer_value(json_object_get(h, "step")),
	    json_string_value(json_object_get(h, "kind")),
	    (long long)json_integer_value(json_object_get(h, "alert")),
	    json_string_value(json_object_get(h, "todo")));
	assert_string_equal(got, want);
	assert_non_null(json_string_value(json_object_get(h, "says")));
}

/* A plan nothing holds needs no one; a gate waiting for approval holds it
 * (step and kind), and so does each open alert (number and kind): the
 * document says so while the plan's status still reads "running". */
static void
test_holds_gate_and_alerts(void **state)
{
	struct store *s;
	json_t *doc;
	char err[512];
	int64_t id, a1, a2;
	bool raised;

	(void)state;
	s = with_plan(&id);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 0);
	assert_true(json_is_false(json_object_get(doc, "needs_person")));
	json_decref(doc);

	for (int i = 0; i < 4; i++)
		assert_int_equal(store_step_update(s, id, i, "succeeded", 1, 2, "{}", NULL,
		    err, sizeof(err)), 0);
	assert_int_equal(store_step_update(s, id, 4, "waiting_approval", 3, 0, NULL, NULL,
	    err, sizeof(err)), 0);
	assert_int_equal(store_alert_raise(s, id, "parking", "3 messages in the parking "
	    "queue", 10, &a1, &raised, err, sizeof(err)), 0);
	assert_int_equal(store_alert_raise(s, id, "probe_late", "a probe came 9 s late",
	    11, &a2, &raised, err, sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_string_equal(json_string_value(json_object_get(doc, "status")), "running");
	assert_true(json_is_true(json_object_get(doc, "needs_person")));
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 3);
	hold_is(doc, 0, "gate|5|flip|0|approve step 5 (flip)");
	{
		char w1[128], w2[128];

		snprintf(w1, sizeof(w1), "alert|0|parking|%lld|acknowledge alert %lld "
		    "(parking) once understood", (long long)a1, (long long)a1);
		snprintf(w2, sizeof(w2), "alert|0|probe_late|%lld|acknowledge alert %lld "
		    "(probe_late) once understood", (long long)a2, (long long)a2);
		hold_is(doc, 1, w1);
		hold_is(doc, 2, w2);
	}
	assert_int_equal(view_holds_rank(doc), VIEW_HOLD_GATE);
	json_decref(doc);

	/* The watch running with an alert open: the alert holds it. */
	assert_int_equal(store_step_update(s, id, 4, "succeeded", 3, 4, "{}", NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(store_step_update(s, id, 5, "running", 5, 0, NULL, NULL, err,
	    sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(doc, "holds"), 0), "step")), 6);
	assert_non_null(strstr(json_string_value(json_object_get(json_array_get(
	    json_object_get(doc, "holds"), 0), "says")), "the watch does not end"));
	assert_int_equal(view_holds_rank(doc), VIEW_HOLD_ALERT);
	json_decref(doc);

	/* Archived: filed away, nothing holds it. */
	assert_int_equal(store_plan_set_status(s, id, "aborted", err, sizeof(err)), 0);
	assert_int_equal(store_plan_set_archived(s, id, 99, err, sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 0);
	assert_true(json_is_false(json_object_get(doc, "needs_person")));
	json_decref(doc);
	store_close(s);
}

/* A failed step holds its plan with its error and what to do; a plan the
 * engine cannot run is held by that alone (its gate would wait unanswered),
 * with the alert's "what to do". */
static void
test_holds_failed_and_cannot_run(void **state)
{
	struct store *s;
	json_t *doc, *h;
	char err[512], want[256];
	int64_t id, a;
	bool raised;

	(void)state;
	s = with_plan(&id);
	assert_int_equal(store_step_update(s, id, 0, "failed", 1, 2, NULL, "no such queue",
	    err, sizeof(err)), 0);
	assert_int_equal(store_plan_set_status(s, id, "failed", err, sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 1);
	hold_is(doc, 0, "failed|1|measure_horizon|0|retry step 1 (measure_horizon) once "
	    "the cause is fixed, or abort the plan");
	h = json_array_get(json_object_get(doc, "holds"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(h, "says")), "no such queue"));
	assert_int_equal(view_holds_rank(doc), VIEW_HOLD_FAILED);
	json_decref(doc);

	assert_int_equal(store_plan_set_status(s, id, "running", err, sizeof(err)), 0);
	assert_int_equal(store_step_update(s, id, 0, "waiting_approval", 1, 0, NULL, NULL,
	    err, sizeof(err)), 0);
	assert_int_equal(store_alert_raise(s, id, "plan_cannot_run", "its YAML no longer "
	    "loads; what to do: run the version that submitted it", 10, &a, &raised, err,
	    sizeof(err)), 0);
	assert_int_equal(view_plan(s, id, &doc, err, sizeof(err)), 0);
	assert_int_equal(json_array_size(json_object_get(doc, "holds")), 1);
	snprintf(want, sizeof(want), "cannot_run|0|plan_cannot_run|%lld|run the version "
	    "that submitted it", (long long)a);
	hold_is(doc, 0, want);
	json_decref(doc);
	store_close(s);
}

/* A plan of NAME at step state STEP (NULL: none run yet) with STATUS. */
static int64_t
listed(struct store *s, const char *name, const char *status, const char *step,
    int64_t now)
{
	char err[512];
	int64_t id;

	assert_int_equal(store_plan_insert(s, name, plan_text, strlen(plan_text), now, &id,
	    err, sizeof(err)), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(store_step_insert(s, id, i, i == 1 ? "declare_ladder" :
		    i == 2 ? "flip" : "measure_horizon", i == 2, err, sizeof(err)), 0);
	if (step != NULL) {
		assert_int_equal(store_step_update(s, id, 0, "succeeded", 1, 2, "{}", NULL,
		    err, sizeof(err)), 0);
		assert_int_equal(store_step_update(s, id, 1, "succeeded", 1, 2, "{}", NULL,
		    err, sizeof(err)), 0);
		assert_int_equal(store_step_update(s, id, 2, step, 3, 0, NULL, NULL, err,
		    sizeof(err)), 0);
	}
	assert_int_equal(store_plan_set_status(s, id, status, err, sizeof(err)), 0);
	return id;
}

/* The plan list says what holds each plan and puts them in the order a
 * person should look: waiting for approval, failed, alerts open, running,
 * finished (newest first within each), not newest first; "attention"
 * names each plan's place, which the page filters on. */
static void
test_list_by_need(void **state)
{
	static const char *const want[][2] = {
		{ "p-gate", "approval" }, { "p-failed", "failed" }, { "p-alert-done", "alert" },
		{ "p-alert", "alert" }, { "p-quiet-new", "running" }, { "p-quiet", "running" },
		{ "p-aborted", "finished" }, { "p-done", "finished" },
	};
	struct store *s = NULL;
	json_t *doc, *plans, *o;
	char err[512];
	int64_t gate, failed, alert, quiet, a;
	bool raised;

	(void)state;
	unlink(db);
	assert_int_equal(store_open(db, &s, err, sizeof(err)), 0);
	(void)listed(s, "p-done", "succeeded", "succeeded", 50);
	gate = listed(s, "p-gate", "running", "waiting_approval", 100);
	quiet = listed(s, "p-quiet", "running", NULL, 150);
	failed = listed(s, "p-failed", "failed", "failed", 200);
	(void)listed(s, "p-aborted", "aborted", NULL, 250);
	alert = listed(s, "p-alert", "running", NULL, 300);
	(void)listed(s, "p-quiet-new", "running", NULL, 400);
	/* an alert open on a plan that has ended still needs a person */
	a = listed(s, "p-alert-done", "succeeded", "succeeded", 500);
	assert_int_equal(store_alert_raise(s, a, "parking", "1 message parked", 10, &a,
	    &raised, err, sizeof(err)), 0);
	assert_int_equal(store_alert_raise(s, alert, "parking", "1 message parked", 10, &a,
	    &raised, err, sizeof(err)), 0);
	assert_int_equal(view_plan_list(s, NULL, &doc, err, sizeof(err)), 0);
	plans = json_object_get(doc, "plans");
	assert_int_equal(json_array_size(plans), 8);
	for (size_t i = 0; i < 8; i++) {
		o = json_array_get(plans, i);
		assert_string_equal(json_string_value(json_object_get(o, "name")), want[i][0]);
		assert_string_equal(json_string_value(json_object_get(o, "attention")), want[i][1]);
	}
	o = json_array_get(plans, 0);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), gate);
	assert_true(json_is_true(json_object_get(o, "needs_person")));
	hold_is(o, 0, "gate|3|flip|0|approve step 3 (flip)");
	o = json_array_get(plans, 1);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), failed);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(o, "holds"), 0), "what")), "failed");
	o = json_array_get(plans, 3);
	assert_int_equal(json_integer_value(json_object_get(o, "alerts_open")), 1);
	assert_null(json_object_get(o, "alerts"));	/* the list carries the count */
	assert_int_equal(json_integer_value(json_object_get(json_array_get(
	    json_object_get(o, "holds"), 0), "alert")), a);
	o = json_array_get(plans, 5);
	assert_int_equal(json_integer_value(json_object_get(o, "id")), quiet);
	assert_true(json_is_false(json_object_get(o, "needs_person")));
	assert_int_equal(json_array_size(json_object_get(o, "holds")), 0);
	json_decref(doc);
	store_close(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_host),
		cmocka_unit_test(test_flip_will_do),
		cmocka_unit_test(test_name_held_until_archived),
		cmocka_unit_test(test_large_result_without_long_lists),
		cmocka_unit_test(test_rows_left_in_the_store),
		cmocka_unit_test(test_deliveries_counted),
		cmocka_unit_test(test_move_progress_in_metrics),
		cmocka_unit_test(test_move_result_rows_shown_as_whole),
		cmocka_unit_test(test_holds_gate_and_alerts),
		cmocka_unit_test(test_holds_failed_and_cannot_run),
		cmocka_unit_test(test_list_by_need),
	};
	const char *tmp = getenv("TMPDIR");
	char wal[PATH_MAX + 32];
	int rc;

	snprintf(dir, sizeof(dir), "%s/test_view.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL)
		return 1;
	snprintf(db, sizeof(db), "%s/v.db", dir);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(db);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s-shm", db);
	unlink(wal);
	snprintf(wal, sizeof(wal), "%s.lock", db);
	unlink(wal);
	rmdir(dir);
	return rc;
}
