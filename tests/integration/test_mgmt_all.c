/* test_mgmt_all (integration): the listing of every queue with statistics
 * (mgmt_list_queues_all) against a real node, in one request and by name
 * (the names, then each queue's own GET): every queue seen once and as
 * the broker's one listing shows it; and queues deleted and created
 * between two of its requests, where every queue there throughout must
 * still be listed and one deleted before its own request must not; and
 * the same listing read a queue at a time into the watch's table
 * (old_listing_read), which holds what the JSON listing says. */
#include "itest_json.h"
#include "itest_mgmt.h"
#include "old_path.h"

#define NQUEUES		1200
#define COLUMNS		"name,messages,message_stats.publish,arguments"

/* The name of our queue I into OUT. */
static void
qname(const struct ctx *c, int i, char *out, size_t outlen)
{
	snprintf(out, outlen, "%spage.%04d", c->prefix, i);
}

static void
put_queue(struct mgmt *m, const char *name)
{
	char err[512];

	if (mgmt_put_queue(m, name, false, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

static void
delete_queue(struct mgmt *m, const char *name)
{
	char err[512];

	if (mgmt_delete_queue(m, name, 0, err, sizeof(err)) < 0)
		fail_msg("%s", err);
}

static int
pages_setup(void **state)
{
	struct ctx *c;
	char name[160];

	if (imgmt_group_setup(state) != 0)
		return -1;
	c = *state;
	for (int i = 0; i < NQUEUES; i++) {
		qname(c, i, name, sizeof(name));
		put_queue(c->m, name);
	}
	return 0;
}

/* How many of L's names are ours (the prefix's "page." queues); fails on
 * a name twice or out of order. */
static size_t
count_ours(const struct ctx *c, const json_t *l)
{
	char page_prefix[128];
	const char *name, *prev = NULL;
	const json_t *e;
	size_t i, n = 0;

	snprintf(page_prefix, sizeof(page_prefix), "%spage.", c->prefix);	/* ours */
	json_array_foreach(l, i, e) {
		name = json_string_value(json_object_get(e, "name"));
		assert_non_null(name);
		if (prev != NULL && strcmp(prev, name) >= 0)
			fail_msg("'%s' after '%s': not in name order, or twice", name,
			    prev);
		prev = name;
		n += strncmp(name, page_prefix, strlen(page_prefix)) == 0;
	}
	return n;
}

/* Is queue NAME in listing L? */
static bool
listed(const json_t *l, const char *name)
{
	return ijson_named(l, name) != NULL;
}

/* 1,200 queues: by name (ONE_MAX 0), or in one request (the default, at
 * this size): every one once, with the columns asked for, as the broker's
 * one listing with statistics has them. */
static void
more_than_a_page(struct ctx *c, long one_max)
{
	struct mgmt_pages pg;
	json_t *l = NULL, *whole = NULL, *e, *w;
	char err[512], path[256];
	size_t i, k;

	mgmt_set_one_listing_max(c->m, one_max);
	if (mgmt_list_queues_all(c->m, COLUMNS, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	mgmt_set_one_listing_max(c->m, MGMT_ONE_LISTING_MAX);
	pg = mgmt_last_pages(c->m);
	print_message("%zu queues in %zu requests (%zu gone)%s\n", pg.queues,
	    pg.requests, pg.gone, pg.whole ? ", one listing" : "");
	assert_int_equal(count_ours(c, l), NQUEUES);
	assert_int_equal(pg.queues, json_array_size(l));
	assert_int_equal(pg.gone, 0);
	if (one_max > 0) {
		assert_true(pg.whole);
		assert_int_equal(pg.requests, 1);
	} else {
		/* The names, then one request for each queue. */
		assert_false(pg.whole);
		assert_int_equal(pg.requests, json_array_size(l) + 1);
	}

	snprintf(path, sizeof(path), "/api/queues/%%2F?columns=" COLUMNS);
	if (mgmt_request(c->m, "GET", path, NULL, &whole, NULL, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	assert_int_equal(json_array_size(whole), json_array_size(l));
	json_array_foreach(l, i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));

		for (k = 0; k < json_array_size(whole); k++)
			if (strcmp(json_string_value(json_object_get(json_array_get(whole,
			    k), "name")), name) == 0)
				break;
		assert_true(k < json_array_size(whole));
		w = json_array_get(whole, k);
		assert_true(json_equal(json_object_get(e, "arguments"),
		    json_object_get(w, "arguments")));
		assert_null(json_object_get(e, "consumers"));	/* not asked for */
	}
	json_decref(whole);
	json_decref(l);
}

static void
test_more_than_a_page(void **state)
{
	more_than_a_page(*state, 0);
	more_than_a_page(*state, MGMT_ONE_LISTING_MAX);
}

/* J's integer, or -1 when it is absent or not one (as the table has it). */
static long long
int_or(const json_t *j)
{
	return json_is_integer(j) ? (long long)json_integer_value(j) : -1;
}

/* Does table T differ from listing L (name order, depth, publish
 * counter, x-message-ttl)? Returns 0 with DIFF "", or 1 with DIFF saying
 * where. */
static int
table_differs(const struct old_listing *t, const json_t *l, char *diff, size_t len)
{
	const json_t *j;
	size_t i;

	diff[0] = '\0';
	if (t->n != json_array_size(l)) {
		snprintf(diff, len, "%zu queues against %zu", t->n, json_array_size(l));
		return 1;
	}
	json_array_foreach(l, i, j) {
		const char *name = json_string_value(json_object_get(j, "name"));
		const json_t *ms = json_object_get(j, "message_stats");
		long long m = int_or(json_object_get(j, "messages")),
		    p = int_or(json_object_get(ms, "publish")),
		    ttl = int_or(json_object_get(json_object_get(j, "arguments"),
		    "x-message-ttl"));

		if (name == NULL || strcmp(t->v[i].name, name) != 0 ||
		    t->v[i].messages != m || t->v[i].publish != p || t->v[i].ttl_ms != ttl) {
			snprintf(diff, len, "queue %zu: '%s' %lld %lld %lld against '%s' %lld "
			    "%lld %lld", i, t->v[i].name, (long long)t->v[i].messages,
			    (long long)t->v[i].publish, (long long)t->v[i].ttl_ms,
			    name ? name : "?", m, p, ttl);
			return 1;
		}
	}
	return 0;
}

/* The listing read into a table (old_listing_read), in one request and
 * by name: every queue of the JSON listing, in its order, with its
 * depth, publish counter and x-message-ttl argument (one of ours has
 * one, one has a message published into it). */
static void
test_listing_table(void **state)
{
	struct ctx *c = *state;
	struct old_listing t;
	json_t *l = NULL, *args = json_pack("{s:i}", "x-message-ttl", 45000);
	char err[512], ttl_q[160], pub_q[160], diff[512];
	const struct old_listed *e;
	const json_t *j;

	snprintf(ttl_q, sizeof(ttl_q), "%sttl.q", c->prefix);
	snprintf(pub_q, sizeof(pub_q), "%spage.0007", c->prefix);
	if (mgmt_put_queue(c->m, ttl_q, false, args, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	json_decref(args);
	imgmt_publish(c, pub_q, "one");
	/* The statistics show it, and the new queue's depth, within
	 * seconds; until then the two listings could read them differently. */
	for (int k = 0; k < 300; k++, imgmt_nap(100)) {
		if (mgmt_list_queues_all(c->m, COLUMNS, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		j = ijson_named(l, pub_q);
		if (json_integer_value(json_object_get(json_object_get(j, "message_stats"),
		    "publish")) == 1 && json_integer_value(json_object_get(j, "messages")) == 1 &&
		    json_is_integer(json_object_get(ijson_named(l, ttl_q), "messages")))
			break;
		json_decref(l);
		l = NULL;
	}
	assert_non_null(l);
	json_decref(l);
	for (long one_max = 0; one_max <= MGMT_ONE_LISTING_MAX; one_max +=
	    MGMT_ONE_LISTING_MAX) {
		/* The statistics move between two listings (a queue's depth
		 * shows seconds after it is declared): read both again until
		 * a pair agrees. */
		for (int k = 0; k < 10; k++, imgmt_nap(500)) {
			if (k > 0) {
				json_decref(l);
				old_listing_free(&t);
			}
			mgmt_set_one_listing_max(c->m, one_max);
			if (old_listing_read(c->m, COLUMNS, &t, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			if (mgmt_list_queues_all(c->m, COLUMNS, &l, err, sizeof(err)) != 0)
				fail_msg("%s", err);
			mgmt_set_one_listing_max(c->m, MGMT_ONE_LISTING_MAX);
			if (table_differs(&t, l, diff, sizeof(diff)) == 0)
				break;
		}
		if (diff[0] != '\0')
			fail_msg("the table and the listing differ: %s", diff);
		assert_non_null(e = old_listing_find(&t, ttl_q));
		assert_int_equal(e->ttl_ms, 45000);
		assert_int_equal(e->publish, -1);
		assert_non_null(e = old_listing_find(&t, pub_q));
		assert_int_equal(e->ttl_ms, -1);
		assert_int_equal(e->publish, 1);
		assert_int_equal(e->messages, 1);
		assert_null(old_listing_find(&t, "no such queue"));
		json_decref(l);
		old_listing_free(&t);
	}
	delete_queue(c->m, ttl_q);
}

/* What the hook does between two requests. */
struct churn {
	struct ctx *c;
	struct mgmt *other;		/* a second client: the hook runs inside
					 * a listing of the first */
	size_t after;			/* the request after which to act */
	int del_from, del_to;		/* our queues to delete, [from, to) */
	int create;			/* new queues to create before the rest */
	bool done;
};

static void
churn_hook(void *arg, size_t request)
{
	struct churn *ch = arg;
	char name[160];

	if (ch->done || request < ch->after)
		return;
	ch->done = true;
	for (int i = ch->del_from; i < ch->del_to; i++) {
		qname(ch->c, i, name, sizeof(name));
		delete_queue(ch->other, name);
	}
	/* Created before every one of ours in name order. */
	for (int i = 0; i < ch->create; i++) {
		snprintf(name, sizeof(name), "%sa.new.%d", ch->c->prefix, i);
		put_queue(ch->other, name);
	}
}

/* Lists through the churn CH, by name, and checks that every one of our
 * queues that was there throughout is listed, and that none deleted
 * before its own request is; restores the queues deleted. Returns how
 * many of the deleted ones had been read before (listed). */
static int
list_through(struct churn *ch)
{
	struct ctx *c = ch->c;
	struct mgmt_pages pg;
	json_t *l = NULL;
	char err[512], name[160];
	int missing = 0, read_before = 0;

	mgmt_set_one_listing_max(c->m, 0);
	mgmt_set_listing_hook(c->m, churn_hook, ch);
	if (mgmt_list_queues_all(c->m, COLUMNS, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	mgmt_set_listing_hook(c->m, NULL, NULL);
	mgmt_set_one_listing_max(c->m, MGMT_ONE_LISTING_MAX);
	assert_true(ch->done);
	pg = mgmt_last_pages(c->m);
	print_message("deleted %d, created %d after request %zu: %zu queues in %zu "
	    "requests (%zu gone)\n", ch->del_to - ch->del_from, ch->create, ch->after,
	    pg.queues, pg.requests, pg.gone);
	(void)count_ours(c, l);		/* order and uniqueness */
	for (int i = 0; i < NQUEUES; i++) {
		qname(c, i, name, sizeof(name));
		if (i >= ch->del_from && i < ch->del_to)
			read_before += listed(l, name);
		else if (!listed(l, name) && missing++ < 5)
			print_message("missing: %s\n", name);
	}
	assert_int_equal(missing, 0);
	/* Each deleted queue was read before the deletion, or found gone by
	 * its own request: never both, never neither. */
	assert_int_equal((size_t)(ch->del_to - ch->del_from - read_before), pg.gone);
	for (int i = 0; i < ch->create; i++) {
		snprintf(name, sizeof(name), "%sa.new.%d", c->prefix, i);
		assert_false(listed(l, name));	/* named after the names were read */
	}
	json_decref(l);
	for (int i = ch->del_from; i < ch->del_to; i++) {
		qname(c, i, name, sizeof(name));
		put_queue(c->m, name);
	}
	for (int i = 0; i < ch->create; i++) {
		snprintf(name, sizeof(name), "%sa.new.%d", c->prefix, i);
		delete_queue(c->m, name);
	}
	return read_before;
}

/* Queues deleted after the names were read, before their own requests;
 * queues deleted in the middle of the requests, some read already and
 * some not; and queues created after the names were read. */
static void
test_churn_between_requests(void **state)
{
	struct ctx *c = *state;
	struct mgmt *other = NULL;
	char err[512];

	if (mgmt_open(c->url, "/", c->user, PASSWORD_REF, TIMEOUT_MS, &other, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	{
		struct churn ch = { .c = c, .other = other, .after = 1,
		    .del_from = 100, .del_to = 200, .create = 0 };

		assert_int_equal(list_through(&ch), 0);
	}
	{
		/* After about 600 of the queues' own requests: ours are named
		 * after the others of the vhost, so fewer of them were read. */
		struct churn ch = { .c = c, .other = other, .after = 600,
		    .del_from = 0, .del_to = 1200, .create = 0 };
		int before = list_through(&ch);

		assert_true(before < 1200);
	}
	{
		struct churn ch = { .c = c, .other = other, .after = 1,
		    .del_from = 0, .del_to = 0, .create = 600 };

		assert_int_equal(list_through(&ch), 0);
	}
	mgmt_close(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_than_a_page),
		cmocka_unit_test(test_listing_table),
		cmocka_unit_test(test_churn_between_requests),
	};

	return cmocka_run_group_tests(tests, pages_setup, imgmt_group_teardown);
}
