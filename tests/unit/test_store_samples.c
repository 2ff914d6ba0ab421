/* test_store_samples: the samples table — samples recorded and read back
 * per plan and from a time on, the schema's bounds on metric and label, and
 * the downsampling that keeps the largest value of each bucket. */

#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "fx.h"
#include "store.h"

struct samples {
	int64_t ts[16];
	char metric[16][32];
	char label[16][16];
	double value[16];
	size_t n;
};

static int
collect_sample(int64_t ts, const char *metric, const char *label, double value,
    void *arg)
{
	struct samples *s = arg;

	assert_true(s->n < 16);
	s->ts[s->n] = ts;
	snprintf(s->metric[s->n], sizeof(s->metric[0]), "%s", metric);
	snprintf(s->label[s->n], sizeof(s->label[0]), "%s", label);
	s->value[s->n] = value;
	s->n++;
	return 0;
}

static void
test_samples(void **state)
{
	struct fx *fx = *state;
	struct samples got = { .n = 0 };
	int64_t p1, p2;

	fx_open(fx);
	p1 = fx_plan(fx, "one", "abc", 1);
	p2 = fx_plan(fx, "two", "abc", 1);
#define SAMPLE(p, ts, m, l, v) assert_int_equal(store_sample_insert(fx->s, \
	(p), (ts), (m), (l), (v), FX_ERR(fx)), 0)
	SAMPLE(p1, 3000, "ladder.depth", "3", 12);
	SAMPLE(p1, 1000, "old.depth", "", 500);
	SAMPLE(p1, 2000, "old.depth", "", 250.5);
	SAMPLE(p2, 2500, "old.depth", "", 7);
	SAMPLE(p1, 2000, "parking.depth", NULL, 0);
	SAMPLE(p1, 4000, "ladder.depth", "0", 1e15);
#undef SAMPLE

	assert_int_equal(store_each_sample(fx->s, p1, 2000, collect_sample,
	    &got, FX_ERR(fx)), 0);
	assert_int_equal(got.n, 4);
	assert_int_equal(got.ts[0], 2000);
	assert_string_equal(got.metric[0], "old.depth");
	assert_string_equal(got.label[0], "");
	assert_true(got.value[0] == 250.5);
	assert_int_equal(got.ts[1], 2000);
	assert_string_equal(got.metric[1], "parking.depth");
	assert_string_equal(got.label[1], "");
	assert_int_equal(got.ts[2], 3000);
	assert_string_equal(got.label[2], "3");
	assert_int_equal(got.ts[3], 4000);
	assert_true(got.value[3] == 1e15);

	got.n = 0;
	assert_int_equal(store_each_sample(fx->s, p1, 0, collect_sample, &got,
	    FX_ERR(fx)), 0);
	assert_int_equal(got.n, 5);
	assert_int_equal(got.ts[0], 1000);
	got.n = 0;
	assert_int_equal(store_each_sample(fx->s, p1, 4001, collect_sample,
	    &got, FX_ERR(fx)), 0);
	assert_int_equal(got.n, 0);

	assert_int_equal(store_sample_insert(fx->s, p1, 1, "", "", 1, FX_ERR(fx)),
	    -1);
	fx_assert_prefix(fx->err, "inserting sample: CHECK constraint failed");
}

struct series {
	int rows;
	double max_value;
	int64_t first_ts;
};

static int
collect_depth(int64_t ts, const char *metric, const char *label, double v, void *arg)
{
	struct series *s = arg;

	(void)label;
	if (strcmp(metric, "old.depth") != 0)
		return 0;
	if (s->rows++ == 0)
		s->first_ts = ts;
	if (v > s->max_value)
		s->max_value = v;
	return 0;
}

static void
test_downsample_keeps_the_maximum_per_bucket(void **state)
{
	struct fx *fx = *state;
	struct series all = { 0 }, after = { 0 };
	int64_t plan, removed;

	plan = fx_open_plan(fx, "yaml");
	/* Ten minutes of 10 s samples of two series. */
	assert_int_equal(store_begin(fx->s, FX_ERR(fx)), 0);
	for (int i = 0; i < 60; i++) {
		assert_int_equal(store_sample_insert(fx->s, plan, 600000 + i * 10000,
		    "old.depth", "", i == 17 ? 500 : i, FX_ERR(fx)), 0);
		assert_int_equal(store_sample_insert(fx->s, plan, 600000 + i * 10000,
		    "ladder.depth", "3", 1, FX_ERR(fx)), 0);
	}
	assert_int_equal(store_commit(fx->s, FX_ERR(fx)), 0);
	assert_int_equal(store_each_sample(fx->s, plan, 0, collect_depth, &all, FX_ERR(fx)), 0);
	assert_int_equal(all.rows, 60);

	/* Fold everything older than 8 minutes in into 1-minute buckets. */
	removed = store_samples_downsample(fx->s, plan, 600000 + 8 * 60000, 60000, FX_ERR(fx));
	/* 8 buckets of 6 rows become 8 rows, for each of the two series. */
	assert_int_equal(removed, 2 * (48 - 8));
	assert_int_equal(store_each_sample(fx->s, plan, 0, collect_depth, &after, FX_ERR(fx)), 0);
	assert_int_equal(after.rows, 8 + 12);
	assert_true(after.max_value == 500);   /* the spike survives */
	assert_int_equal(after.first_ts, 600000);
	/* Doing it again changes nothing. */
	assert_int_equal(store_samples_downsample(fx->s, plan, 600000 + 8 * 60000, 60000,
	    FX_ERR(fx)), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, fx_setup, fx_teardown)
CM_MAIN(NULL, NULL,
	T(test_samples),
	T(test_downsample_keeps_the_maximum_per_bucket))
