/* test_mgmt_pages (integration): the paged listing with statistics
 * (mgmt_list_queues_all) against a real node: more queues than one page,
 * all seen once and as the unpaginated listing shows them; and queues
 * deleted and created between pages, where every queue there throughout
 * must still be listed. */
#include "itest_json.h"
#include "itest_mgmt.h"

#define NQUEUES		1200	/* more than two pages of 500 */
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

	snprintf(page_prefix, sizeof(page_prefix), "%spage.", c->prefix);
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

/* 1,200 queues: in pages of 500 (ONE_MAX 0), or in one request (the
 * default, at this size): every one once, with the
 * columns asked for, as the broker's one unpaginated listing with
 * statistics has them. */
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
	print_message("%zu queues in %zu requests (%zu repeated)%s\n", pg.queues,
	    pg.requests, pg.repeats, pg.whole ? ", one listing" : "");
	assert_int_equal(count_ours(c, l), NQUEUES);
	assert_int_equal(pg.queues, json_array_size(l));
	assert_int_equal(pg.repeats, 0);
	if (one_max > 0) {
		assert_true(pg.whole);
		assert_int_equal(pg.requests, 1);
	} else {
		assert_false(pg.whole);
		assert_true(pg.requests >= 3);
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

/* What the hook does between two pages. */
struct churn {
	struct ctx *c;
	struct mgmt *other;		/* a second client: the hook runs inside
					 * a listing of the first */
	int after_page;			/* the page after which to act */
	int del_from, del_to;		/* our queues to delete, [from, to) */
	int create;			/* new queues to create before the rest */
	bool done;
};

static void
churn_hook(void *arg, int page, int size)
{
	struct churn *ch = arg;
	char name[160];

	(void)size;
	if (ch->done || page < ch->after_page)
		return;
	ch->done = true;
	for (int i = ch->del_from; i < ch->del_to; i++) {
		qname(ch->c, i, name, sizeof(name));
		delete_queue(ch->other, name);
	}
	/* Created before every one of ours in name order: they shift the
	 * pages the other way. */
	for (int i = 0; i < ch->create; i++) {
		snprintf(name, sizeof(name), "%sa.new.%d", ch->c->prefix, i);
		put_queue(ch->other, name);
	}
}

/* Lists through the churn CH and checks that every one of our queues that
 * was there throughout is listed; restores the queues deleted. */
static void
list_through(struct churn *ch)
{
	struct ctx *c = ch->c;
	struct mgmt_pages pg;
	json_t *l = NULL;
	char err[512], name[160];
	int missing = 0;

	/* Pages all the way, at this size too. */
	mgmt_set_one_listing_max(c->m, 0);
	mgmt_set_page_hook(c->m, churn_hook, ch);
	if (mgmt_list_queues_all(c->m, COLUMNS, &l, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	mgmt_set_page_hook(c->m, NULL, NULL);
	mgmt_set_one_listing_max(c->m, MGMT_ONE_LISTING_MAX);
	assert_true(ch->done);
	pg = mgmt_last_pages(c->m);
	print_message("deleted %d, created %d after page %d: %zu queues in %zu "
	    "requests (%zu repeated)\n", ch->del_to - ch->del_from, ch->create,
	    ch->after_page, pg.queues, pg.requests, pg.repeats);
	(void)count_ours(c, l);		/* order and uniqueness */
	for (int i = 0; i < NQUEUES; i++) {
		qname(c, i, name, sizeof(name));
		if ((i < ch->del_from || i >= ch->del_to) && !listed(l, name)) {
			if (missing++ < 5)
				print_message("missing: %s\n", name);
		}
	}
	assert_int_equal(missing, 0);
	/* The deletions shifted the next page past queues not read yet: it
	 * was asked for again. */
	assert_true(pg.repeats >= 1);
	json_decref(l);
	for (int i = ch->del_from; i < ch->del_to; i++) {
		qname(c, i, name, sizeof(name));
		put_queue(c->m, name);
	}
	for (int i = 0; i < ch->create; i++) {
		snprintf(name, sizeof(name), "%sa.new.%d", c->prefix, i);
		delete_queue(c->m, name);
	}
}

/* Queues deleted before the next page's start between two pages, more
 * than the pages' overlap, then so many that the next page is past the
 * end; and queues created before it (a page wholly before the last name
 * read). */
static void
test_churn_between_pages(void **state)
{
	struct ctx *c = *state;
	struct mgmt *other = NULL;
	char err[512];

	if (mgmt_open(c->url, "/", c->user, PASSWORD_REF, TIMEOUT_MS, &other, err,
	    sizeof(err)) != 0)
		fail_msg("%s", err);
	{
		struct churn ch = { .c = c, .other = other, .after_page = 1,
		    .del_from = 100, .del_to = 200, .create = 0 };
		list_through(&ch);
	}
	{
		/* After the second page (it ends near queue 960), 500 fewer. */
		struct churn ch = { .c = c, .other = other, .after_page = 2,
		    .del_from = 0, .del_to = 500, .create = 0 };
		list_through(&ch);
	}
	{
		struct churn ch = { .c = c, .other = other, .after_page = 1,
		    .del_from = 0, .del_to = 0, .create = 600 };
		list_through(&ch);
	}
	mgmt_close(other);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_than_a_page),
		cmocka_unit_test(test_churn_between_pages),
	};

	return cmocka_run_group_tests(tests, pages_setup, imgmt_group_teardown);
}
