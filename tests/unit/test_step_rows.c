/* test_step_rows: a run's long result list handed over a row at a time
 * through a temporary file (step_rows.c), read back as written, and the
 * events a step hands over going to a sink as they are added. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "step.h"

/* Rows read back in their order and out of it, each its text and name
 * as written: a row without a name is "(none)", a row of 200 KB whole
 * (longer than the buffer the rows before it needed), one added after a
 * read read back too; past the end is ERANGE; cleared, nothing is held. */
static void
test_round_trip(void **state)
{
	struct step_rows rows = { 0 };
	struct store_entry e;
	char *big = malloc(200001), name[32];
	json_t *el;

	(void)state;
	memset(big, 'x', 200000);
	big[200000] = '\0';
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof(name), "old.q%04d", i);
		el = json_pack("{s:s,s:i}", "name", name, "ttl_ms", i * 1000);
		assert_int_equal(step_rows_put(&rows, NULL, el), 0);
	}
	assert_int_equal(step_rows_put(&rows, NULL, json_pack("{s:s}", "note", big)), 0);
	assert_int_equal(rows.n, 1001);
	assert_int_equal(step_rows_get(&rows, 7, &e), 0);
	assert_string_equal(e.name, "old.q0007");
	assert_string_equal(e.json, "{\"name\":\"old.q0007\",\"ttl_ms\":7000}");
	assert_int_equal(e.ord, 7);
	for (size_t i = 0; i < 1000; i++) {
		assert_int_equal(step_rows_get(&rows, i, &e), 0);
		snprintf(name, sizeof(name), "old.q%04zu", i);
		assert_string_equal(e.name, name);
		assert_int_equal(e.ord, (int64_t)i);
	}
	assert_int_equal(step_rows_get(&rows, 1000, &e), 0);
	assert_string_equal(e.name, "(none)");
	assert_int_equal(strlen(e.json), 200000 + strlen("{\"note\":\"\"}"));
	el = json_pack("{s:s}", "name", "old.last");
	assert_int_equal(step_rows_add(&rows, el), 0);	/* borrowed */
	json_decref(el);
	assert_int_equal(step_rows_get(&rows, 1001, &e), 0);
	assert_string_equal(e.json, "{\"name\":\"old.last\"}");
	assert_int_equal(step_rows_get(&rows, 0, &e), 0);
	assert_string_equal(e.name, "old.q0000");
	errno = 0;
	assert_int_equal(step_rows_get(&rows, 1002, &e), -1);
	assert_int_equal(errno, ERANGE);
	step_rows_clear(&rows);
	assert_null(rows.f);
	assert_null(rows.at);
	assert_int_equal(rows.n, 0);
	step_rows_clear(&rows);		/* safe again */
	free(big);
}

/* Without rows (a step run by hand) the element goes into the list; a
 * temporary directory that is not there is said, with where, and nothing
 * is kept. */
static void
test_list_and_no_dir(void **state)
{
	struct step_rows rows = { 0 };
	json_t *list = json_array();
	const char *before = getenv("TMPDIR");
	char *saved = before != NULL ? strdup(before) : NULL;

	(void)state;
	assert_int_equal(step_rows_put(NULL, list, json_pack("{s:s}", "name", "a")), 0);
	assert_int_equal(json_array_size(list), 1);
	setenv("TMPDIR", "/nonexistent/cutover-rows", 1);
	assert_int_equal(step_rows_put(&rows, list, json_pack("{s:s}", "name", "b")), -1);
	assert_non_null(strstr(rows.err, "cannot make a temporary file"));
	assert_non_null(strstr(rows.err, "/nonexistent/cutover-rows"));
	assert_int_equal(rows.n, 0);
	assert_int_equal(json_array_size(list), 1);
	step_rows_clear(&rows);
	if (saved != NULL)
		setenv("TMPDIR", saved, 1);
	else
		unsetenv("TMPDIR");
	free(saved);
	json_decref(list);
}

/* What the sink of test_sink saw. */
struct sunk {
	char kinds[64];
	int n, fail_at;
};

static int
sink(void *arg, const char *kind, json_t *details)
{
	struct sunk *s = arg;

	json_decref(details);
	if (++s->n == s->fail_at)
		return -1;
	strcat(s->kinds, kind);
	strcat(s->kinds, ";");
	return 0;
}

/* With a sink, each event goes to it as it is added and none is kept;
 * the sink's failure is the add's. */
static void
test_sink(void **state)
{
	struct step_events ev = { 0 };
	struct sunk s = { .fail_at = 3 };

	(void)state;
	ev.sink = sink;
	ev.sink_arg = &s;
	assert_int_equal(step_events_add(&ev, "old.queue_removed", NULL), 0);
	assert_int_equal(step_events_add(&ev, "old.queue_gone",
	    json_pack("{s:s}", "name", "q")), 0);
	assert_string_equal(s.kinds, "old.queue_removed;old.queue_gone;");
	assert_int_equal(ev.n, 0);
	assert_null(ev.v);
	assert_int_equal(step_events_add(&ev, "old.queue_removed", NULL), -1);
	assert_int_equal(s.n, 3);
	step_events_clear(&ev);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_round_trip),
	cmocka_unit_test(test_list_and_no_dir),
	cmocka_unit_test(test_sink))
