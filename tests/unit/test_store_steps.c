/* test_store_steps: the steps table — a plan's steps inserted, updated,
 * read back, refused when wrong, and reset for a retry — and a long
 * result list kept a row per element (step_entries): read back as the
 * one result it was or a part at a time, written element by element or
 * with a run's whole result, all or nothing, and gone with a whole result
 * or a reset. */

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cm.h"
#include "fx.h"
#include "store.h"

/* Fails unless step ST reads STATUS with no attempt on record: no start,
 * no end, no result, no error. */
static void
assert_unattempted(const struct store_step *st, const char *status)
{
	assert_string_equal(st->status, status);
	assert_int_equal(st->started_ms, 0);
	assert_int_equal(st->ended_ms, 0);
	assert_null(st->result_json);
	assert_null(st->error);
}

static void
test_steps(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	plan = fx_open_plan(fx, "abc");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "measure_horizon", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_insert(fx->s, plan, 1, "flip", 1,
	    FX_ERR(fx)), 0);

	assert_int_equal(store_step_get(fx->s, plan, 1, &st, FX_ERR(fx)), 0);
	assert_int_equal(st.plan_id, plan);
	assert_int_equal(st.idx, 1);
	assert_string_equal(st.kind, "flip");
	assert_int_equal(st.gate, 1);
	assert_unattempted(&st, "pending");
	store_step_clear(&st);

	assert_int_equal(store_step_update(fx->s, plan, 0, "running", 5000, 0,
	    NULL, NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "succeeded", 0, 9000,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}", NULL,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.kind, "measure_horizon");
	assert_int_equal(st.gate, 0);
	assert_string_equal(st.status, "succeeded");
	assert_int_equal(st.started_ms, 5000);
	assert_int_equal(st.ended_ms, 9000);
	assert_string_equal(st.result_json,
	    "{\"horizon_ms\":7200000,\"queues\":[\"delay.5s\"]}");
	assert_null(st.error);
	store_step_clear(&st);
	assert_null(st.result_json);

	/* An error, and a NULL status that leaves the status alone. */
	assert_int_equal(store_step_update(fx->s, plan, 1, "failed", 10000,
	    11000, NULL, "flag read back off after on", FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 1, NULL, 0, 0,
	    "{}", NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 1, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "failed");
	assert_string_equal(st.error, "flag read back off after on");
	assert_string_equal(st.result_json, "{}");
	assert_int_equal(st.started_ms, 10000);
	assert_int_equal(st.ended_ms, 11000);
	store_step_clear(&st);

	/* Refusals. */
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0,
	    FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "inserting step 0 of plan 1: "
	    "UNIQUE constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, NULL, 0, 0,
	    "{not json", NULL, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 0, "done", 0, 0,
	    NULL, NULL, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(store_step_update(fx->s, plan, 7, "running", 1, 0,
	    NULL, NULL, FX_ERR(fx)), -1);
	assert_string_equal(fx->err, "updating step 7 of plan 1: no such step");
	assert_int_equal(store_step_get(fx->s, plan, 7, &st, FX_ERR(fx)),
	    STORE_NOT_FOUND);
	assert_null(st.result_json);
	assert_null(st.error);
}

static void
test_step_reset_clears_the_attempt(void **state)
{
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "canary", 0, FX_ERR(fx)), 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "failed", 10, 20, "{\"lost\":1}",
	    "1 message lost", FX_ERR(fx)), 0);
	assert_int_equal(store_step_reset(fx->s, plan, 0, "pending", FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_unattempted(&st, "pending");
	store_step_clear(&st);
}

/* Step 0 of PLAN's result as store_step_get reads it into GOT (the
 * caller frees it). */
static char *
result_of(struct fx *fx, int64_t plan)
{
	struct store_step st;
	char *r;

	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	r = st.result_json;
	st.result_json = NULL;
	store_step_clear(&st);
	return r;
}

/* How many rows step_entries holds, through a second connection. */
static int
rows_held(struct fx *fx)
{
	sqlite3 *raw = fx_raw_open(fx->path);
	sqlite3_stmt *st = NULL;
	int n = -1;

	if (sqlite3_prepare_v2(raw, "SELECT count(*) FROM step_entries", -1, &st,
	    NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(raw);
	return n;
}

/* A result written as its rest and a row per "queues" element reads back
 * byte for byte as the whole result written at once (its members in
 * their order, the list in its elements' order, whatever order the rows
 * were written in); a later write of one element changes that one only;
 * a write that fails (an element that is not JSON) leaves result and
 * rows as they were; a whole result takes the rows away, as does a reset;
 * the rows go into the top-level "queues" only, whatever the text around
 * it holds, and a result with none cannot be read with rows. */
static void
test_entries_read_as_one_result(void **state)
{
	static const char whole[] =
	    "{\"ok\":false,\"pass\":1,\"queues\":[{\"name\":\"old.b\",\"moved\":0},"
	    "{\"name\":\"old.a\",\"moved\":2,\"left_why\":{}},"
	    "{\"name\":\"old.\\\"c\\u00e9\",\"moved\":1.50}],"
	    "\"counts\":{\"moved\":3}}";
	static const char rest[] =
	    "{\"ok\":false,\"pass\":1,\"queues\":[],\"counts\":{\"moved\":3}}";
	struct store_entry v[3] = {
		{ "old.\"c\u00e9", 2, "{\"name\":\"old.\\\"c\\u00e9\",\"moved\":1.50}" },
		{ "old.b", 0, "{\"name\":\"old.b\",\"moved\":0}" },
		{ "old.a", 1, "{\"name\":\"old.a\",\"moved\":2,\"left_why\":{}}" },
	};
	struct store_entry one = { "old.b", 0, "{\"name\":\"old.b\",\"moved\":4}" };
	struct store_entry bad = { "old.a", 1, "{not json" };
	struct fx *fx = *state;
	struct store_step st;
	int64_t plan;
	char *r;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "move_old", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_save_entries(fx->s, plan, 0, rest, v, 3,
	    FX_ERR(fx)), 0);
	r = result_of(fx, plan);
	assert_string_equal(r, whole);
	free(r);
	assert_int_equal(store_step_save_entries(fx->s, plan, 0, rest, &one, 1,
	    FX_ERR(fx)), 0);
	r = result_of(fx, plan);
	assert_non_null(strstr(r, "\"queues\":[{\"name\":\"old.b\",\"moved\":4},"
	    "{\"name\":\"old.a\",\"moved\":2,"));
	free(r);
	/* All or nothing: the rest given with a bad element is not kept. */
	assert_int_equal(store_step_save_entries(fx->s, plan, 0,
	    "{\"ok\":true,\"queues\":[]}", &bad, 1, FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	r = result_of(fx, plan);
	assert_non_null(strstr(r, "{\"ok\":false,\"pass\":1,\"queues\":[{\"name\":"
	    "\"old.b\",\"moved\":4},"));
	free(r);
	assert_int_equal(rows_held(fx), 3);
	/* A whole result is the result: the rows go with it. */
	assert_int_equal(store_step_update(fx->s, plan, 0, NULL, 0, 0, whole,
	    NULL, FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 0);
	r = result_of(fx, plan);
	assert_string_equal(r, whole);
	free(r);
	assert_int_equal(store_step_save_entries(fx->s, plan, 0, rest, v, 3,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_reset(fx->s, plan, 0, "pending",
	    FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 0);
	assert_null(result_of(fx, plan));
	/* The top-level "queues" takes the rows, not one nested before it nor
	 * one inside a string; a result without one cannot take them. */
	assert_int_equal(store_step_save_entries(fx->s, plan, 0,
	    "{\"a\":{\"queues\":[1]},\"s\":\"\\\"queues\\\":[]\\\\\","
	    " \"queues\" : [ ] ,\"z\":[\"]\"]}", &one, 1, FX_ERR(fx)), 0);
	r = result_of(fx, plan);
	assert_string_equal(r, "{\"a\":{\"queues\":[1]},\"s\":\"\\\"queues\\\":[]\\\\\","
	    " \"queues\" : [{\"name\":\"old.b\",\"moved\":4}] ,\"z\":[\"]\"]}");
	free(r);
	assert_int_equal(store_step_save_entries(fx->s, plan, 0, "{\"a\":{\"queues\":[]}}",
	    &one, 1, FX_ERR(fx)), 0);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), -1);
	assert_string_equal(fx->err, "reading step 0 of plan 1: its result has no "
	    "list (\"queues\" or \"entries\") for its 1 rows");
	assert_int_equal(store_step_reset(fx->s, plan, 0, "pending", FX_ERR(fx)), 0);
	/* Rows of a step that is not there are refused. */
	assert_int_equal(store_step_save_entries(fx->s, plan, 5, rest, v, 3,
	    FX_ERR(fx)), -1);
	assert_string_equal(fx->err, "updating step 5 of plan 1: no such step");
}

/* What test_each's reader saw: each element's name, joined. */
struct seen {
	char names[256];
	int n, stop_at;
};

static int
see(const json_t *e, void *arg)
{
	struct seen *s = arg;
	const char *name = json_string_value(json_object_get(e, "name"));

	if (++s->n == s->stop_at)
		return 7;
	strncat(s->names, name != NULL ? name : "?", sizeof(s->names) - strlen(s->names) - 2);
	strcat(s->names, ";");
	return 0;
}

/* A run's result written with its "entries" a row each
 * (store_step_update_rows) reads back as the whole result, its status,
 * times and error written with it; the next run's rows replace every row
 * of the last, however many fewer; none given is a whole result's write
 * (the rows go); the status refused leaves result and rows as they were;
 * "queues", when a result has it, is where rows go; read apart, the
 * result is as written and the rows come one at a time, in order, until
 * the reader stops. */
static void
test_update_rows(void **state)
{
	struct store_entry v[3] = {
		{ "old.a", 0, "{\"name\":\"old.a\",\"outcome\":\"waiting\"}" },
		{ "old.b", 1, "{\"name\":\"old.b\",\"outcome\":\"removed\"}" },
		{ "old.c", 2, "{\"name\":\"old.c\",\"outcome\":\"waiting\"}" },
	};
	struct store_entry w[1] = {
		{ "old.c", 0, "{\"name\":\"old.c\",\"outcome\":\"removed\"}" },
	};
	struct fx *fx = *state;
	struct store_step st;
	struct seen seen;
	bool bad = true;
	int64_t plan;
	char *r;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "remove_old", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, "running", 100, 0,
	    "{\"ok\":true,\"entries\":[],\"waiting\":{}}", NULL, store_entry_of_array,
	    v, 3, FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 3);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_int_equal(st.started_ms, 100);
	assert_string_equal(st.result_json, "{\"ok\":true,\"entries\":["
	    "{\"name\":\"old.a\",\"outcome\":\"waiting\"},"
	    "{\"name\":\"old.b\",\"outcome\":\"removed\"},"
	    "{\"name\":\"old.c\",\"outcome\":\"waiting\"}],\"waiting\":{}}");
	store_step_clear(&st);
	/* Apart: the result as written, and its rows one at a time. */
	assert_int_equal(store_step_get_apart(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_string_equal(st.result_json, "{\"ok\":true,\"entries\":[],\"waiting\":{}}");
	store_step_clear(&st);
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_step_rows_each(fx->s, plan, 0, see, &seen, &bad,
	    FX_ERR(fx)), 0);
	assert_false(bad);
	assert_string_equal(seen.names, "old.a;old.b;old.c;");
	seen = (struct seen){ .stop_at = 2 };
	assert_int_equal(store_step_rows_each(fx->s, plan, 0, see, &seen, &bad,
	    FX_ERR(fx)), 7);
	assert_string_equal(seen.names, "old.a;");
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_step_rows_each(fx->s, plan, 1, see, &seen, &bad,
	    FX_ERR(fx)), 0);
	assert_int_equal(seen.n, 0);
	/* The next run's one row is all there is. */
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, "failed", 0, 200,
	    "{\"ok\":false,\"entries\":[]}", "1 left", store_entry_of_array, w, 1,
	    FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 1);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "failed");
	assert_int_equal(st.ended_ms, 200);
	assert_string_equal(st.error, "1 left");
	assert_string_equal(st.result_json, "{\"ok\":false,\"entries\":["
	    "{\"name\":\"old.c\",\"outcome\":\"removed\"}]}");
	store_step_clear(&st);
	/* Refused whole: neither the result nor the rows change. */
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, "done", 0, 0,
	    "{\"ok\":true,\"entries\":[]}", NULL, store_entry_of_array, v, 3,
	    FX_ERR(fx)), -1);
	assert_non_null(strstr(fx->err, "CHECK constraint failed"));
	assert_int_equal(rows_held(fx), 1);
	r = result_of(fx, plan);
	assert_string_equal(r, "{\"ok\":false,\"entries\":["
	    "{\"name\":\"old.c\",\"outcome\":\"removed\"}]}");
	free(r);
	/* No reader: the rows there stay with the result written (the
	 * watch's light tick), its status too. */
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, "running", 0, 0,
	    "{\"ok\":true,\"tick\":2,\"entries\":[]}", NULL, NULL, NULL, 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 1);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_string_equal(st.result_json, "{\"ok\":true,\"tick\":2,\"entries\":["
	    "{\"name\":\"old.c\",\"outcome\":\"removed\"}]}");
	store_step_clear(&st);
	/* Restarted (a retry that goes on from the last result): result and
	 * rows as they were, no end, no error. */
	assert_int_equal(store_step_update(fx->s, plan, 0, "failed", 0, 300, NULL, "lost",
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_restart(fx->s, plan, 0, "running", 400, FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 1);
	assert_int_equal(store_step_get(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_string_equal(st.status, "running");
	assert_int_equal(st.started_ms, 400);
	assert_int_equal(st.ended_ms, 0);
	assert_null(st.error);
	assert_non_null(strstr(st.result_json, "old.c"));
	store_step_clear(&st);
	/* None given: the result written is the whole result. */
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, NULL, 0, 0,
	    "{\"entries\":[{\"name\":\"x\"}]}", NULL, store_entry_of_array, NULL, 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(rows_held(fx), 0);
	r = result_of(fx, plan);
	assert_string_equal(r, "{\"entries\":[{\"name\":\"x\"}]}");
	free(r);
	/* "queues" first, when a result has both. */
	assert_int_equal(store_step_update_rows(fx->s, plan, 0, NULL, 0, 0,
	    "{\"entries\":[],\"queues\":[]}", NULL, store_entry_of_array, w,
	    1, FX_ERR(fx)), 0);
	r = result_of(fx, plan);
	assert_string_equal(r, "{\"entries\":[],\"queues\":["
	    "{\"name\":\"old.c\",\"outcome\":\"removed\"}]}");
	free(r);
}

/* A result read a part at a time: each element of its top-level "queues"
 * in order (its rows, when it has them), whatever strings and nested
 * lists hold, and the rest with "queues" empty; a reader that stops stops
 * it; a step without a result, or none at all, gives nothing; its times
 * alone come without the result. */
static void
test_each(void **state)
{
	static const char whole[] =
	    "{\"a\":{\"queues\":[1]},\"s\":\"\\\"queues\\\":[{]\", \"queues\" : [ "
	    "{\"name\":\"old.b\",\"to\":[\"x\",\"]\"]} , {\"name\":\"old.\\\"a\"} ] ,"
	    "\"z\":[\"]\"]}";
	static const char rest[] = "{\"ok\":true,\"queues\":[],\"n\":2}";
	struct store_entry v[2] = {
		{ "old.d", 1, "{\"name\":\"old.d\"}" },
		{ "old.c", 0, "{\"name\":\"old.c\",\"moved\":1}" },
	};
	struct fx *fx = *state;
	struct seen seen = { .stop_at = -1 };
	struct store_step st;
	int64_t plan;
	char *r;

	plan = fx_open_plan(fx, "yaml");
	assert_int_equal(store_step_insert(fx->s, plan, 0, "measure_horizon", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_insert(fx->s, plan, 1, "move_old", 0,
	    FX_ERR(fx)), 0);
	assert_int_equal(store_step_each(fx->s, plan, 0, "queues", see, &seen, &r, FX_ERR(fx)), 0);
	assert_null(r);
	assert_int_equal(store_step_each(fx->s, plan, 9, "queues", see, &seen, &r, FX_ERR(fx)), 0);
	assert_null(r);
	assert_int_equal(seen.n, 0);
	assert_int_equal(store_step_update(fx->s, plan, 0, "succeeded", 10, 20, whole,
	    NULL, FX_ERR(fx)), 0);
	assert_int_equal(store_step_each(fx->s, plan, 0, "queues", see, &seen, &r, FX_ERR(fx)), 0);
	assert_string_equal(seen.names, "old.b;old.\"a;");
	assert_string_equal(r, "{\"a\":{\"queues\":[1]},\"s\":\"\\\"queues\\\":[{]\", "
	    "\"queues\" : [] ,\"z\":[\"]\"]}");
	free(r);
	/* Without a reader: the rest alone. */
	assert_int_equal(store_step_each(fx->s, plan, 0, "queues", NULL, NULL, &r, FX_ERR(fx)), 0);
	assert_non_null(strstr(r, "\"queues\" : [] ,"));
	free(r);
	seen = (struct seen){ .stop_at = 2 };
	assert_int_equal(store_step_each(fx->s, plan, 0, "queues", see, &seen, &r, FX_ERR(fx)), -1);
	assert_null(r);
	assert_string_equal(seen.names, "old.b;");
	assert_non_null(strstr(fx->err, "its reader stopped"));
	/* Rows, in their order. */
	assert_int_equal(store_step_save_entries(fx->s, plan, 1, rest, v, 2,
	    FX_ERR(fx)), 0);
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_step_each(fx->s, plan, 1, "queues", see, &seen, &r, FX_ERR(fx)), 0);
	assert_string_equal(seen.names, "old.c;old.d;");
	assert_string_equal(r, rest);
	free(r);
	/* The times without the result. */
	assert_int_equal(store_step_times(fx->s, plan, 0, &st, FX_ERR(fx)), 0);
	assert_int_equal(st.ended_ms, 20);
	assert_string_equal(st.status, "succeeded");
	assert_null(st.result_json);
	assert_int_equal(store_step_times(fx->s, plan, 9, &st, FX_ERR(fx)),
	    STORE_NOT_FOUND);
}

/* Any top-level list of a result's text, by its name: its elements in
 * order, not a nested list of that name, nor a string that looks like
 * it; the list emptied in place after; a text without it gives nothing
 * and stays; an element that does not parse says so. */
static void
test_json_each(void **state)
{
	char text[] = "{\"x\":{\"entries\":[{\"name\":\"no\"}]},\"s\":\"\\\"entries\\\":[\","
	    "\"entriesx\":[{\"name\":\"no\"}],\"entries\":[{\"name\":\"a\"},"
	    "{\"name\":\"b]\"}],\"n\":1}";
	char none[] = "{\"queues\":[{\"name\":\"q\"}]}";
	struct seen seen = { .stop_at = -1 };
	bool bad = true;

	(void)state;
	assert_int_equal(store_json_each(text, "entries", see, &seen, &bad), 0);
	assert_false(bad);
	assert_string_equal(seen.names, "a;b];");
	store_json_empty(text, "entries");
	assert_string_equal(text, "{\"x\":{\"entries\":[{\"name\":\"no\"}]},"
	    "\"s\":\"\\\"entries\\\":[\",\"entriesx\":[{\"name\":\"no\"}],"
	    "\"entries\":[],\"n\":1}");
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_json_each(text, "entries", see, &seen, &bad), 0);
	assert_int_equal(seen.n, 0);
	assert_int_equal(store_json_each(none, "entries", see, &seen, &bad), 0);
	store_json_empty(none, "entries");
	assert_string_equal(none, "{\"queues\":[{\"name\":\"q\"}]}");
	assert_int_equal(store_json_each("{\"entries\":[{\"name\":}]}", "entries", see,
	    &seen, &bad), -1);
	assert_true(bad);
}

/* A list inside a member's object, by the names joined with dots: that
 * object's list, not a top-level one of its name nor one of a later
 * object; a path through a member that is not an object, or one whose
 * object lacks the list, gives nothing; the list emptied in place. */
static void
test_json_each_path(void **state)
{
	char text[] = "{\"queues\":[{\"name\":\"top\"}],\"old_last\":{\"at_ms\":5,"
	    "\"s\":\"\\\"queues\\\":[\",\"x\":{\"queues\":[{\"name\":\"deep\"}]},"
	    "\"queues\" : [{\"name\":\"q1\"},{\"name\":\"q2\"}]},\"n\":[1]}";
	char later[] = "{\"a\":{\"b\":1},\"c\":{\"queues\":[{\"name\":\"no\"}]}}";
	struct seen seen = { .stop_at = -1 };
	bool bad = true;

	(void)state;
	assert_int_equal(store_json_each(text, "old_last.queues", see, &seen, &bad), 0);
	assert_false(bad);
	assert_string_equal(seen.names, "q1;q2;");
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_json_each(text, "old_last.x.queues", see, &seen, &bad), 0);
	assert_string_equal(seen.names, "deep;");
	seen = (struct seen){ .stop_at = -1 };
	assert_int_equal(store_json_each(later, "a.queues", see, &seen, &bad), 0);
	assert_int_equal(store_json_each(text, "n.queues", see, &seen, &bad), 0);
	assert_int_equal(store_json_each(text, "old_last.none", see, &seen, &bad), 0);
	assert_int_equal(seen.n, 0);
	store_json_empty(text, "old_last.queues");
	assert_string_equal(text, "{\"queues\":[{\"name\":\"top\"}],\"old_last\":"
	    "{\"at_ms\":5,\"s\":\"\\\"queues\\\":[\",\"x\":{\"queues\":"
	    "[{\"name\":\"deep\"}]},\"queues\" : []},\"n\":[1]}");
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_steps),
	T(test_step_reset_clears_the_attempt),
	T(test_entries_read_as_one_result),
	T(test_update_rows),
	T(test_each),
	cmocka_unit_test(test_json_each),
	cmocka_unit_test(test_json_each_path))
