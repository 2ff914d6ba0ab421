/* test_mgmt_items: a listing's answer read one element at a time
 * (mgmt__items_each) and a queue list built from it a queue at a time:
 * every element once, in order, whatever its strings hold, and an answer
 * that is no array refused rather than read in part. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker/mgmt_int.h"
#include "cm.h"

/* What the callback saw: each element's compact JSON, one a line. */
struct seen {
	char out[8192];
	size_t n;
	int stop_at;			/* return an error at this element, -1 never */
};

static int
record(void *arg, json_t *item, char *err, size_t errlen)
{
	struct seen *s = arg;
	char *t;

	if ((int)s->n == s->stop_at) {
		snprintf(err, errlen, "stopped");
		return MGMT_ERR_ARG;
	}
	t = json_dumps(item, JSON_COMPACT | JSON_ENCODE_ANY);
	assert_non_null(t);
	strncat(s->out, t, sizeof(s->out) - strlen(s->out) - 2);
	strcat(s->out, "\n");
	free(t);
	s->n++;
	return 0;
}

static int
each(const char *text, struct seen *s, char *err, size_t errlen)
{
	memset(s->out, 0, sizeof(s->out));
	s->n = 0;
	return mgmt__items_each(text, strlen(text), "GET /api/queues", record, s, err,
	    errlen);
}

/* Strings that hold the characters an element's end is found by
 * (brackets, commas, quotes, backslashes) do not cut it, and nested
 * objects and arrays are whole. */
static void
test_every_element_whole(void **state)
{
	struct seen s = { .stop_at = -1 };
	char err[256] = "";

	(void)state;
	assert_int_equal(each(" [ {\"name\":\"a],b\"} ,{\"name\":\"q\\\"}{[\",\"arguments\":"
	    "{\"x\":[1,{\"y\":\"]\"}]}},\n{\"name\":\"c\\\\\"}\t]\n", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 3);
	assert_string_equal(s.out, "{\"name\":\"a],b\"}\n"
	    "{\"name\":\"q\\\"}{[\",\"arguments\":{\"x\":[1,{\"y\":\"]\"}]}}\n"
	    "{\"name\":\"c\\\\\"}\n");
	assert_int_equal(each("[]", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(each(" [ ] ", &s, err, sizeof(err)), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(each("[{\"name\":\"only\"}]", &s, err, sizeof(err)), 0);
	assert_string_equal(s.out, "{\"name\":\"only\"}\n");
}

/* Anything but one whole array is refused, not read in part. */
static void
test_not_an_array(void **state)
{
	static const char *const bad[] = {
		"", "{}", "{\"name\":\"a\"}", "[", "[{\"name\":\"a\"}", "[{\"name\":\"a\"},",
		"[{\"name\":\"a\"},]", "[,{\"name\":\"a\"}]", "[{\"name\":\"a\"}] x",
		"[{\"name\":\"a\"}][]", "[{\"name\":\"a\" {\"name\":\"b\"}]",
		"[{\"name\":\"a\"}}]", "[{\"name\":\"a]"
	};
	struct seen s = { .stop_at = -1 };
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		err[0] = '\0';
		if (each(bad[i], &s, err, sizeof(err)) != MGMT_ERR_ANSWER)
			fail_msg("'%s' was taken as an array of %zu", bad[i], s.n);
		assert_non_null(strstr(err, "GET /api/queues"));
	}
}

/* The callback's error ends the reading with it. */
static void
test_callback_stops(void **state)
{
	struct seen s = { .stop_at = 1 };
	char err[256] = "";

	(void)state;
	assert_int_equal(each("[{\"a\":1},{\"a\":2},{\"a\":3}]", &s, err, sizeof(err)),
	    MGMT_ERR_ARG);
	assert_int_equal(s.n, 1);
	assert_string_equal(err, "stopped");
}

/* Checks that queue IT is the next one of the listing ARG (a counter,
 * from N - 1 down). */
static int
next_queue(void *arg, json_t *it, char *err, size_t errlen)
{
	int *next = arg;
	char name[64];

	(void)err;
	(void)errlen;
	snprintf(name, sizeof(name), "bench.delay.%05dms", (*next)--);
	assert_string_equal(json_string_value(json_object_get(it, "name")), name);
	return 0;
}

/* A listing of many queues: read from its text, every queue is handed
 * over once, in order; built into a list, each one is in it with its own
 * columns, sorted by name. */
static void
test_many_queues_listed(void **state)
{
	enum { N = 5000 };
	struct mgmt_queue_list from_tree;
	json_t *arr = json_array();
	char *text, err[256] = "", name[64];
	int next = N - 1;

	(void)state;
	for (int i = N - 1; i >= 0; i--) {
		snprintf(name, sizeof(name), "bench.delay.%05dms", i);
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b,s:I,s:{s:I,s:s,s:s},"
		    "s:s?,s:{s:I}}", "name", name, "type", i % 7 == 0 ? "quorum" : "classic",
		    "durable", i % 2, "messages", (json_int_t)i,
		    "arguments", "x-message-ttl", (json_int_t)(1000 + i),
		    "x-dead-letter-exchange", "", "x-dead-letter-routing-key", name,
		    "policy", i % 5 == 0 ? "p" : NULL, "message_stats", "publish",
		    (json_int_t)(2 * i)));
	}
	text = json_dumps(arr, JSON_INDENT(1));
	assert_non_null(text);
	assert_int_equal(mgmt__items_each(text, strlen(text), "GET /api/queues",
	    next_queue, &next, err, sizeof(err)), 0);
	assert_int_equal(next, -1);
	assert_int_equal(mgmt__queues_from_json(arr, 0, "GET /api/queues", &from_tree,
	    err, sizeof(err)), 0);
	assert_int_equal(from_tree.n, N);
	for (size_t i = 0; i < from_tree.n; i++) {
		const struct mgmt_queue *q = &from_tree.v[i];

		snprintf(name, sizeof(name), "bench.delay.%05zums", i);
		assert_string_equal(q->name, name);
		assert_string_equal(q->dead_letter_routing_key, name);
		assert_string_equal(q->dead_letter_exchange, "");
		assert_string_equal(q->type, i % 7 == 0 ? "quorum" : "classic");
		assert_int_equal(q->durable, i % 2);
		assert_int_equal(q->messages, i);
		assert_int_equal(q->message_ttl, 1000 + i);
		assert_int_equal(q->publish, 2 * i);
		assert_int_equal(q->expires, -1);
		assert_int_equal(q->consumers, -1);
		if (i % 5 == 0)
			assert_string_equal(q->policy, "p");
		else
			assert_null(q->policy);
		assert_ptr_equal(mgmt_queue_list_find(&from_tree, name), q);
	}
	mgmt_queue_list_free(&from_tree);
	free(text);
	json_decref(arr);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_every_element_whole),
	cmocka_unit_test(test_not_an_array),
	cmocka_unit_test(test_callback_stops),
	cmocka_unit_test(test_many_queues_listed))
