/* test_alert_kinds: the alert kinds' table (orchestrator/base/
 * alert_kinds.def) — every row says what its kind means, how to check and
 * clear it; every kind the code raises is a row (the raise sites read from
 * the sources); the store keeps whether an alert's cause is still there
 * and which alert one returns after; and the API's alerts carry the row's
 * "means", "check" and "clear" and "cause_present". */

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "alert_kinds.h"
#include "fx.h"
#include "store.h"
#include "view.h"

static void
test_rows_complete(void **state)
{
	const struct alert_kind *k;
	size_t i, j;

	(void)state;
	for (i = 0; (k = alert_kind_at(i)) != NULL; i++) {
		assert_true(strlen(k->name) >= 1 && strlen(k->name) <= 47);
		assert_int_equal(strspn(k->name, "abcdefghijklmnopqrstuvwxyz_"),
		    strlen(k->name));
		assert_true(strlen(k->means) > 20);
		assert_true(strlen(k->check) > 20);
		assert_true(strlen(k->clear) > 20);
		assert_true(alert_kind_find(k->name) == k);
		assert_true(alert_closes_text(k->closes)[0] != '\0');
		for (j = 0; j < i; j++)
			assert_string_not_equal(alert_kind_at(j)->name, k->name);
	}
	assert_true(i >= 16);
	assert_null(alert_kind_find("no_such_kind"));
	assert_false(alert_kind_tracks_cause("no_such_kind"));
	assert_true(alert_kind_tracks_cause("parking"));
	assert_true(alert_kind_tracks_cause("level_late"));
	assert_false(alert_kind_tracks_cause("old_publish"));
	/* The store's own name for it is the table's. */
	assert_non_null(alert_kind_find(STORE_ALERT_CANNOT_RUN));
}

/* The source file PATH whole, NUL-terminated (the caller frees it). */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		fail_msg("cannot read %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* The string literal at P (just past its opening quote) into OUT. */
static void
literal(const char *p, char *out, size_t len)
{
	size_t n = strcspn(p, "\"");

	snprintf(out, len, "%.*s", (int)n, p);
}

/* Argument ARG (from 0) of the call whose '(' is at P, trimmed, into OUT;
 * nested parentheses count as one argument. */
static void
argument(const char *p, int arg, char *out, size_t len)
{
	int depth = 0, at = 0;
	const char *start = p + 1;

	for (p++; *p != '\0'; p++) {
		if (*p == '(')
			depth++;
		else if (*p == ')' && depth-- == 0)
			break;
		else if (*p == ',' && depth == 0) {
			if (at++ == arg)
				break;
			start = p + 1;
		}
	}
	while (*start == ' ' || *start == '\t' || *start == '\n')
		start++;
	snprintf(out, len, "%.*s", (int)(p - start), start);
}

/* Checks every raise in source file PATH: the kind given to watch_alert,
 * watch_alert_over or store_alert_raise must be a literal the table has
 * (or STORE_ALERT_CANNOT_RUN, or the watch's pending kinds, which
 * watch_alert took). Returns how many raise sites it read. */
static int
check_file(const char *path)
{
	static const struct {
		const char *call;
		int arg;
	} calls[] = {
		{ "watch_alert(", 1 },
		{ "watch_alert_over(", 1 },
		{ "store_alert_raise(", 2 },
	};
	char *text = slurp(path), kind[128], name[128];
	int n = 0;

	for (size_t c = 0; c < sizeof(calls) / sizeof(calls[0]); c++) {
		for (const char *p = text; (p = strstr(p, calls[c].call)) != NULL; p++) {
			const char *open = p + strlen(calls[c].call) - 1;

			/* A declaration or definition, not a call. */
			if (p > text && (p[-1] == '\n' || p[-1] == '_' || p[-1] == '*'))
				continue;
			argument(open, calls[c].arg, kind, sizeof(kind));
			if (strncmp(kind, "const char *", 12) == 0)
				continue;       /* a prototype */
			n++;
			if (kind[0] == '"') {
				literal(kind + 1, name, sizeof(name));
				if (alert_kind_find(name) == NULL)
					fail_msg("%s raises alert kind '%s', which "
					    "orchestrator/base/alert_kinds.def lacks", path, name);
			} else if (strcmp(kind, "STORE_ALERT_CANNOT_RUN") != 0 &&
			    strcmp(kind, "t->a[i].kind") != 0 && strcmp(kind, "kind") != 0)
				fail_msg("%s raises an alert of kind '%s', which this test "
				    "cannot read: give the kind as a literal", path, kind);
		}
	}
	free(text);
	return n;
}

static void
test_every_raised_kind_in_table(void **state)
{
	static const char *const dirs[] = {
		"orchestrator", "orchestrator/watch", "orchestrator/steps",
		"orchestrator/cli", "state", "web", "plans",
	};
	const char *src = getenv("CUTOVER_SOURCE_DIR");
	char path[4096];
	int sites = 0;

	(void)state;
	if (src == NULL)
		skip();
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		DIR *d;
		struct dirent *e;

		snprintf(path, sizeof(path), "%s/%s", src, dirs[i]);
		assert_non_null(d = opendir(path));
		while ((e = readdir(d)) != NULL) {
			size_t l = strlen(e->d_name);

			if (l < 3 || strcmp(e->d_name + l - 2, ".c") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", src, dirs[i], e->d_name);
			sites += check_file(path);
		}
		closedir(d);
	}
	/* The raise sites as they are now: fewer means the scan went blind. */
	assert_true(sites >= 30);
}

/* store_each_alert's callback: keeps the last alert. */
static int
last_alert(const struct store_alert *a, void *arg)
{
	*(struct store_alert *)arg = *a;
	return 0;
}

static void
test_cause_and_return(void **state)
{
	struct fx *fx = *state;
	struct store_alert a;
	int64_t plan, id = 0, id2 = 0, id3 = 0;
	bool raised;

	plan = fx_open_plan(fx, "yaml");
	/* A kind whose cause the engine looks for: present from its raise. */
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "1 parked", 100, &id,
	    &raised, FX_ERR(fx)), 0);
	assert_int_equal(store_alert_get(fx->s, plan, id, &a, FX_ERR(fx)), 0);
	assert_true(a.cause_present);
	assert_int_equal(a.returns_after, 0);
	/* Acknowledged while it is there, it returns after that one. */
	assert_int_equal(store_alert_ack(fx->s, plan, id, "carol", "seen", 200, FX_ERR(fx)), 0);
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "1 parked", 300, &id2,
	    &raised, FX_ERR(fx)), 0);
	assert_true(raised);
	assert_int_equal(store_alert_get(fx->s, plan, id2, &a, FX_ERR(fx)), 0);
	assert_true(a.cause_present);
	assert_int_equal(a.returns_after, id);
	/* Gone: no alert of the kind has it any more, and the next one is a
	 * new occurrence. */
	assert_int_equal(store_alert_cause_gone(fx->s, plan, "parking", FX_ERR(fx)), 0);
	assert_int_equal(store_alert_get(fx->s, plan, id2, &a, FX_ERR(fx)), 0);
	assert_false(a.cause_present);
	assert_int_equal(store_alert_ack(fx->s, plan, id2, "engine", "gone", 400, FX_ERR(fx)), 0);
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "2 parked", 500, &id3,
	    &raised, FX_ERR(fx)), 0);
	assert_int_equal(store_alert_get(fx->s, plan, id3, &a, FX_ERR(fx)), 0);
	assert_true(a.cause_present);
	assert_int_equal(a.returns_after, 0);
	/* One occurrence: no cause to follow. */
	assert_int_equal(store_alert_raise(fx->s, plan, "old_publish", "3 entered", 600, &id,
	    &raised, FX_ERR(fx)), 0);
	assert_int_equal(store_each_alert(fx->s, plan, 1, last_alert, &a, FX_ERR(fx)), 2);
	assert_string_equal(a.kind, "old_publish");
	assert_false(a.cause_present);
	assert_int_equal(store_alert_get(fx->s, plan, 99999, &a, FX_ERR(fx)), STORE_NOT_FOUND);
}

static void
test_api_fields(void **state)
{
	struct fx *fx = *state;
	json_t *o = json_object(), *doc = json_object();
	int64_t plan, id = 0;
	bool raised;

	view_alert_facts(o, "parking", true);
	assert_string_equal(json_string_value(json_object_get(o, "means")),
	    alert_kind_find("parking")->means);
	assert_string_equal(json_string_value(json_object_get(o, "check")),
	    alert_kind_find("parking")->check);
	assert_string_equal(json_string_value(json_object_get(o, "clear")),
	    alert_kind_find("parking")->clear);
	assert_true(json_is_true(json_object_get(o, "cause_present")));
	json_decref(o);
	o = json_object();
	/* A kind the table lacks says nothing; one occurrence has no cause
	 * to follow. */
	view_alert_facts(o, "not_in_the_table", false);
	assert_int_equal(json_object_size(o), 0);
	json_decref(o);
	o = json_object();
	view_alert_facts(o, "probe", false);
	assert_string_equal(json_string_value(json_object_get(o, "means")),
	    alert_kind_find("probe")->means);
	assert_null(json_object_get(o, "cause_present"));
	json_decref(o);

	/* The ack's answer says the cause is still there, and how to clear it. */
	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_alert_raise(fx->s, plan, "parking", "1 parked", 100, &id,
	    &raised, FX_ERR(fx)), 0);
	view_ack_cause(fx->s, plan, id, doc);
	assert_true(json_is_true(json_object_get(doc, "cause_present")));
	assert_non_null(strstr(json_string_value(json_object_get(doc, "cause")),
	    "is still there"));
	assert_non_null(strstr(json_string_value(json_object_get(doc, "cause")),
	    "move each of them"));
	json_decref(doc);
	doc = json_object();
	assert_int_equal(store_alert_cause_gone(fx->s, plan, "parking", FX_ERR(fx)), 0);
	view_ack_cause(fx->s, plan, id, doc);
	assert_true(json_is_false(json_object_get(doc, "cause_present")));
	assert_null(json_object_get(doc, "cause"));
	json_decref(doc);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_rows_complete),
	cmocka_unit_test(test_every_raised_kind_in_table),
	cmocka_unit_test_setup_teardown(test_cause_and_return, fx_setup, fx_teardown),
	cmocka_unit_test_setup_teardown(test_api_fields, fx_setup, fx_teardown))
