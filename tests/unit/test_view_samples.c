/* test_view_samples: a plan's samples as the API's text
 * (web/view_samples.c), on a real SQLite file, against what jansson makes
 * of the same samples as a document (the answer the API gave before the
 * text was written from the rows): reals at every precision and
 * exponent, an infinite value, labels to escape or with bytes that are
 * not UTF-8, paging by next_since; and the read cache (web/cache.c) that
 * keeps such pages: keyed by the query, bounded in bytes. */

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cm.h"
#include "cache.h"
#include "fx.h"
#include "store.h"
#include "view.h"

/* The walk's FN for the reference: each sample as the view's document
 * had it. */
static int
as_object(int64_t ts_ms, const char *metric, const char *label, double value, void *arg)
{
	json_t *a = arg, *o;

	if (json_array_size(a) == VIEW_SAMPLES_MAX + 1)
		return 1;
	o = json_object();
	json_object_set_new(o, "ts_ms", json_integer((json_int_t)ts_ms));
	json_object_set_new(o, "metric", view_string(metric));
	json_object_set_new(o, "label", view_string(label != NULL ? label : ""));
	json_object_set_new(o, "value", isfinite(value) ? json_real(value) : json_null());
	json_array_append_new(a, o);
	return 0;
}

/* What jansson made of plan ID's samples since SINCE: the reference. */
static char *
reference(struct store *s, int64_t id, int64_t since)
{
	json_t *a = json_array(), *doc, *next = json_null();
	char err[256], *text, *line;

	assert_int_equal(store_each_sample(s, id, since, as_object, a, err, sizeof(err)), 0);
	if (json_array_size(a) > VIEW_SAMPLES_MAX) {
		next = json_incref(json_object_get(json_array_get(a, VIEW_SAMPLES_MAX), "ts_ms"));
		json_array_remove(a, VIEW_SAMPLES_MAX);
	}
	doc = json_pack("{s:I,s:I,s:o,s:b,s:o}", "plan", (json_int_t)id, "since",
	    (json_int_t)since, "samples", a, "truncated", !json_is_null(next),
	    "next_since", next);
	text = json_dumps(doc, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(doc);
	assert_non_null(text);
	assert_non_null(line = malloc(strlen(text) + 2));
	sprintf(line, "%s\n", text);
	free(text);
	return line;
}

/* Plan ID's samples since SINCE as the view writes them; asserts it is
 * the reference, byte for byte. */
static void
same_as_reference(struct store *s, int64_t id, int64_t since)
{
	char err[256], *text = NULL, *want = reference(s, id, since);
	size_t len = 0;

	assert_int_equal(view_samples_text(s, id, since, &text, &len, err, sizeof(err)), 0);
	assert_int_equal(len, strlen(text));
	assert_string_equal(text, want);
	free(text);
	free(want);
}

/* Reals of every shape, an infinity, labels to escape and to repair: the
 * text is jansson's. */
static void
test_text_is_janssons(void **state)
{
	static const double values[] = {
		0, -0.0, 1, 3895, 0.1, 1.0 / 3, 2.5e-7, 1e-5, 1e-4, 123456.789,
		1e16, 1e17, 1.5e17, 123456789012345678.0, 1e21, 1e300, -1e-300,
		5e-324, 1.7976931348623157e308, -42.125, INFINITY, -INFINITY,
	};
	static const char *const labels[] = {
		"", "0", "27", "a\"b\\c", "tab\there\nline\r", "\x01\x1f\b\f", "slash/é",
		"\xff\xfe bad", "日本", "\xe2\x80\xa8", "\x7f",
	};
	struct fx *fx = *state;
	struct store *s;
	char err[256];
	int64_t id = fx_open_plan(fx, "abc"), ts = 1795000000000;

	s = fx->s;
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++)
		assert_int_equal(store_sample_insert(s, id, ts + (int64_t)i, "ladder.depth",
		    labels[i % (sizeof(labels) / sizeof(labels[0]))], values[i], err,
		    sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++)
		assert_int_equal(store_sample_insert(s, id, ts + 100, labels[i][0] != '\0' ?
		    labels[i] : "m", labels[i], (double)i, err, sizeof(err)), 0);
	same_as_reference(s, id, 0);
	same_as_reference(s, id, ts + 5);
	same_as_reference(s, id, ts + 101);	/* none: an empty list */
}

/* Past VIEW_SAMPLES_MAX the answer is truncated, next_since the first
 * sample left out, and the next page starts there. */
static void
test_pages(void **state)
{
	struct fx *fx = *state;
	struct store *s;
	char err[256], *text = NULL;
	json_t *doc;
	size_t len;
	int64_t id = fx_open_plan(fx, "abc"), ts = 1795000000000, next;

	s = fx->s;
	assert_int_equal(store_begin(s, err, sizeof(err)), 0);
	for (int i = 0; i < VIEW_SAMPLES_MAX + 7; i++)
		assert_int_equal(store_sample_insert(s, id, ts + i / 2, "old.depth", "",
		    i * 0.5, err, sizeof(err)), 0);
	assert_int_equal(store_commit(s, err, sizeof(err)), 0);
	same_as_reference(s, id, 0);
	assert_int_equal(view_samples_text(s, id, 0, &text, &len, err, sizeof(err)), 0);
	assert_non_null(doc = json_loads(text, 0, NULL));
	assert_true(json_is_true(json_object_get(doc, "truncated")));
	next = json_integer_value(json_object_get(doc, "next_since"));
	assert_int_equal(next, ts + VIEW_SAMPLES_MAX / 2);
	assert_int_equal(json_array_size(json_object_get(doc, "samples")), VIEW_SAMPLES_MAX);
	json_decref(doc);
	free(text);
	same_as_reference(s, id, next);
	assert_int_equal(view_samples_text(s, id + 1, 0, &text, &len, err, sizeof(err)),
	    STORE_NOT_FOUND);
	assert_null(text);
}

/* A body of LEN bytes of C, with one reference. */
static struct cache_body *
body(char c, size_t len)
{
	char *data = malloc(len + 1);
	struct cache_body *b;

	assert_non_null(data);
	memset(data, c, len);
	data[len] = '\0';
	assert_non_null(b = cache_body_new(data, len));
	return b;
}

/* Puts a new body of LEN bytes of C into the cache as ROUTE 5 of plan 1
 * at version 7 with KEY, keeping no reference of its own. */
static void
put(struct cache *c, const char *key, char fill, size_t len)
{
	struct cache_body *b = body(fill, len);

	cache_put(c, 5, 1, key, 7, b);
	cache_body_release(b);
}

/* Whether the cache has ROUTE 5/plan 1/KEY at VERSION, of LEN bytes of
 * FILL. */
static bool
has(struct cache *c, const char *key, uint64_t version, char fill, size_t len)
{
	struct cache_body *b = cache_get(c, 5, 1, key, version);
	bool yes = b != NULL && b->len == len && b->data[0] == fill && b->data[len - 1] == fill;

	cache_body_release(b);
	return yes;
}

/* The cache answers a route, plan and query it kept, at the version it
 * was built at, and nothing else; it keeps its bodies under
 * CACHE_BYTES_MAX, dropping the oldest, and never one larger; a body it
 * drops lives on while a response still sends it. */
static void
test_cache_keys_and_bytes(void **state)
{
	struct cache c = { 0 };
	size_t page = CACHE_BYTES_MAX / 3 + 1;
	struct cache_body *held;

	(void)state;
	put(&c, "since=0\n", 'a', 5);
	put(&c, "since=9\n", 'b', 6);
	assert_true(has(&c, "since=0\n", 7, 'a', 5));
	assert_true(has(&c, "since=9\n", 7, 'b', 6));
	assert_false(has(&c, "since=0\n", 8, 'a', 5));	/* changed since */
	assert_null(cache_get(&c, 5, 1, "", 7));
	assert_null(cache_get(&c, 5, 2, "since=0\n", 7));
	assert_null(cache_get(&c, 4, 1, "since=0\n", 7));
	assert_non_null(held = cache_get(&c, 5, 1, "since=0\n", 7));	/* being sent */
	put(&c, "since=1\n", 'c', page);
	put(&c, "since=2\n", 'd', page);
	assert_true(c.bytes <= CACHE_BYTES_MAX);
	put(&c, "since=3\n", 'e', page);	/* the oldest go */
	assert_true(c.bytes <= CACHE_BYTES_MAX);
	assert_null(cache_get(&c, 5, 1, "since=0\n", 7));
	assert_int_equal(held->len, 5);	/* dropped, still whole for its sender */
	assert_memory_equal(held->data, "aaaaa", 5);
	cache_body_release(held);
	assert_true(has(&c, "since=3\n", 7, 'e', page));
	put(&c, "big\n", 'f', CACHE_BYTES_MAX + 1);
	assert_null(cache_get(&c, 5, 1, "big\n", 7));
	assert_true(c.bytes <= CACHE_BYTES_MAX);
	cache_clear(&c);
	assert_int_equal(c.bytes, 0);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test_setup_teardown(test_text_is_janssons, fx_setup, fx_teardown),
	cmocka_unit_test_setup_teardown(test_pages, fx_setup, fx_teardown),
	cmocka_unit_test(test_cache_keys_and_bytes))
