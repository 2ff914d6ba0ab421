/* test_move_old_entries: move_old's entries kept as texts while a run
 * works through the old queues (move_old_entries.c): found by name (the
 * first of a name, as the state had them), appended when new, opened as
 * a tree and written back with the figures the run sums, and handed back
 * whole in their order. */

#include <stdint.h>
#include <string.h>

#include "cm.h"
#include "move_old_int.h"

/* Entries as a state has them: out of name order, one name twice (the
 * first wins), one without a name; a queue never seen gets a new entry at
 * the end, with nothing moved and no pass done; the figures follow each
 * entry's text, "left_until_ms" null or missing as none. */
static void
test_find_append_figures(void **state)
{
	struct move_entries es = { 0 };
	json_t *e, *all;
	int64_t ord;

	(void)state;
	e = json_pack("[{s:s,s:I,s:I,s:n},{s:s,s:I,s:I,s:I,s:I},{s:s,s:I},{s:I}]",
	    "name", "old.b", "moved", (json_int_t)5, "pass_done", (json_int_t)1,
	    "left_until_ms", "name", "old.a", "moved", (json_int_t)2, "left",
	    (json_int_t)3, "may_duplicate", (json_int_t)4, "left_until_ms",
	    (json_int_t)1700000000000, "name", "old.b", "moved", (json_int_t)9,
	    "moved", (json_int_t)7);
	for (size_t i = 0; i < json_array_size(e); i++)
		assert_int_equal(move_old__entries_add(&es, json_array_get(e, i)), 0);
	json_decref(e);
	e = json_integer(1);
	assert_int_equal(move_old__entries_add(&es, e), -1);	/* no object */
	json_decref(e);
	assert_int_equal(move_old__entries_index(&es), 0);
	assert_int_equal(es.n, 4);
	assert_int_equal(move_old__entries_of(&es, "old.a"), 1);
	assert_int_equal(move_old__entries_of(&es, "old.b"), 0);
	assert_int_equal(es.v[0].moved, 5);
	assert_int_equal(es.v[0].pass_done, 1);
	assert_true(es.v[0].left_until_ms == INT64_MIN);
	assert_int_equal(es.v[1].left, 3);
	assert_int_equal(es.v[1].dup, 4);
	assert_true(es.v[1].left_until_ms == 1700000000000);
	assert_string_equal(es.v[3].name, "");
	/* A queue the state has no entry for. */
	ord = move_old__entries_of(&es, "old.c");
	assert_int_equal(ord, 4);
	assert_string_equal(es.v[4].name, "old.c");
	assert_string_equal(es.v[4].text,
	    "{\"name\":\"old.c\",\"moved\":0,\"left\":0,\"skipped\":0,\"pass_done\":0}");
	/* Opened, changed, written back: text and figures. */
	e = move_old__entries_open(&es, ord);
	assert_non_null(e);
	json_object_set_new(e, "moved", json_integer(11));
	json_object_set_new(e, "pass_done", json_integer(2));
	json_object_set_new(e, "left_until_ms", json_integer(42));
	assert_int_equal(move_old__entries_put(&es, ord, e), 0);
	json_decref(e);
	assert_int_equal(es.v[4].moved, 11);
	assert_int_equal(es.v[4].pass_done, 2);
	assert_true(es.v[4].left_until_ms == 42);
	assert_non_null(strstr(es.v[4].text, "\"moved\":11"));
	/* Written back longer than any text before (a reason of 3,000
	 * characters), then shorter again: each time exactly its text. */
	{
		char *why = malloc(3001), *want;

		assert_non_null(why);
		memset(why, 'x', 3000);
		why[3000] = '\0';
		e = move_old__entries_open(&es, 2);
		json_object_set_new(e, "why", json_string(why));
		assert_int_equal(move_old__entries_put(&es, 2, e), 0);
		want = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		assert_string_equal(es.v[2].text, want);
		free(want);
		json_object_del(e, "why");
		assert_int_equal(move_old__entries_put(&es, 2, e), 0);
		want = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
		assert_string_equal(es.v[2].text, want);
		assert_true(strlen(es.v[2].text) < 100);
		free(want);
		json_decref(e);
		free(why);
	}
	/* All of them back, in their order. */
	all = move_old__entries_array(&es);
	assert_int_equal(json_array_size(all), 5);
	assert_string_equal(json_string_value(json_object_get(json_array_get(all, 2),
	    "name")), "old.b");
	assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 2),
	    "moved")), 9);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(all, 4),
	    "moved")), 11);
	json_decref(all);
	move_old__entries_free(&es);
	assert_null(es.v);
	assert_int_equal(es.n, 0);
	move_old__entries_free(&es);	/* safe again */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_find_append_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
