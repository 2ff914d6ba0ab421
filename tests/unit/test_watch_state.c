/* test_watch_state: the watch's persisted state survives an upgrade in the
 * middle of a watch. tests/unit/watch_state_v1.json is a state as the
 * watch wrote it before each of its parts owned its own (every member
 * set, the summary of the tick below); read back and written out again it
 * must come out byte for byte the same, every key in its place (the
 * members added since, such as the statistics' markers, set too). A
 * state from before the later members (clock, parking, nodes, levels,
 * flag, stats) reads as a new watch starts them, and another version is
 * refused. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "watch_int.h"

#define DUMP_FLAGS	(JSON_COMPACT | JSON_PRESERVE_ORDER)

struct fixture {
	struct plan *plan;
	struct step_ctx c;
	struct wstate w;
	struct tick t;
};

/* SUB under the source tree (CUTOVER_SOURCE_DIR, set by ctest) into PATH. */
static void
source_path(const char *sub, char *path, size_t len)
{
	const char *d = getenv("CUTOVER_SOURCE_DIR");

	if (d == NULL || d[0] == '\0')
		fail_msg("CUTOVER_SOURCE_DIR is not set (ctest sets it to the source tree)");
	if ((size_t)snprintf(path, len, "%s/%s", d, sub) >= len)
		fail_msg("CUTOVER_SOURCE_DIR is too long");
}

/* The tick the fixture's summary was written at: the example plan orders,
 * the old path and the ladder seen, parking holding 3 dead-letters. */
static void
tick_for(struct fixture *f, json_t *state)
{
	struct plan_errors errs = { 0 };
	char path[1024];

	source_path("plans/examples/orders.yaml", path, sizeof(path));
	if (plan_load_file(path, &f->plan, &errs) != 0)
		fail_msg("%s does not load", path);
	plan_errors_free(&errs);
	memset(&f->c, 0, sizeof(f->c));
	memset(&f->t, 0, sizeof(f->t));
	f->c.plan = f->plan;
	f->c.state = state;
	f->t.c = &f->c;
	f->t.p = f->plan;
	f->t.w = &f->w;
	f->t.now = 1795000180000;
	snprintf(f->t.probe_queue, sizeof(f->t.probe_queue), "cutover.x.probe");
	f->t.old.seen = true;
	f->t.lad.depth_seen = true;
	f->t.lvl.dlx_seen = true;
	f->t.lvl.parking_dlx = 3;
}

/* A fixture at tick_for's tick whose watch state STATE is loaded
 * (watch_state_load must take it: its error fails the test otherwise);
 * free it with fixture_free. */
static struct fixture *
loaded(json_t *state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256];

	assert_non_null(f);
	tick_for(f, state);
	if (watch_state_load(&f->w, state, err, sizeof(err)) != 0)
		fail_msg("watch_state_load: %s", err);
	return f;
}

static void
fixture_free(struct fixture *f)
{
	plan_free(f->plan);
	free(f);
}

static json_t *
load_fixture(void)
{
	char path[1024];
	json_error_t je;
	json_t *j;

	source_path("tests/unit/watch_state_v1.json", path, sizeof(path));
	if ((j = json_load_file(path, 0, &je)) == NULL)
		fail_msg("%s: %s", path, je.text);
	return j;
}

/* The state written before reads back and writes out the same. */
static void
test_state_round_trips_unchanged(void **unused)
{
	json_t *in = load_fixture(), *out;
	struct fixture *f = loaded(in);
	char *a, *b;

	(void)unused;
	assert_int_equal(f->w.probes.nout, 2);
	assert_int_equal(f->w.levels.lv[0].p.seq, 18);
	assert_int_equal(f->w.flag.state, STEP_FLAG_OFF);
	assert_int_equal(f->w.old.pass.xpub, 77);
	assert_int_equal(f->w.park.canary, 2);
	assert_int_equal(f->w.clock.entry_elapsed_ms, 4900);
	assert_int_equal(f->w.stats.counted, 2);
	assert_int_equal(f->w.stats.marks[1], 1795000160000);
	assert_int_equal(f->w.old.pass.fresh_ms, 1795000159000);
	out = watch_state_json(&f->t, &f->w, 2, "watching", false);
	assert_non_null(out);
	a = json_dumps(in, DUMP_FLAGS);
	b = json_dumps(out, DUMP_FLAGS);
	assert_string_equal(b, a);
	free(a);
	free(b);
	json_decref(out);
	json_decref(in);
	fixture_free(f);
}

/* A state from before the later members: each part starts as a new
 * watch's does, where that differs from zero. */
static void
test_sparse_state_reads_as_new_parts(void **unused)
{
	json_t *in = json_pack("{s:i,s:I,s:I,s:I,s:{s:I}}", "version", 1,
	    "started_ms", (json_int_t)5, "max_ttl_ms", (json_int_t)1,
	    "deadline_ms", (json_int_t)9, "probe", "delay_ms", (json_int_t)3);
	struct fixture *f = loaded(in);

	(void)unused;
	assert_int_equal(f->w.clock.elapsed_ms, -1);
	assert_int_equal(f->w.old.publishes, -1);
	assert_int_equal(f->w.old.pass.xpub, -1);
	assert_int_equal(f->w.ladder.publishes, -1);
	assert_int_equal(f->w.nodes.amo_depth, -1);
	assert_false(f->w.nodes.have_last);
	assert_int_equal(f->w.verify.ok, -1);
	assert_int_equal(f->w.flag.state, STEP_FLAG_ON);
	assert_int_equal(f->w.stats.counted, -1);
	assert_int_equal(f->w.stats.fresh_ms, 0);
	assert_int_equal(f->w.old.pass.fresh_ms, 0);
	json_decref(in);
	fixture_free(f);
}

/* Another version, or a state without its start, is refused. */
static void
test_other_version_refused(void **unused)
{
	struct wstate *w = calloc(1, sizeof(*w));
	json_t *v2 = json_pack("{s:i}", "version", 2);
	json_t *nostart = json_pack("{s:i}", "version", 1);
	char err[256];

	(void)unused;
	assert_int_equal(watch_state_load(w, v2, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "version 2"));
	assert_int_equal(watch_state_load(w, nostart, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "lacks its start"));
	json_decref(v2);
	json_decref(nostart);
	free(w);
}

/* The last full pass's counters: a state from before has them in
 * old.seen, read by name (an integer, "lost", null); a state now counts
 * them (old.seen_n) in its "entries" (rows the engine keeps apart); rows
 * missing, or no count at all, is no last pass (the next is a first
 * look). */
static void
test_last_pass_counters(void **unused)
{
	json_t *in = load_fixture();
	struct step_ctx c = { 0 };
	struct seen_table s;
	const struct seen_row *r;
	char err[256];

	(void)unused;
	c.state = in;
	assert_int_equal(watch_seen_read(&c, &s, err, sizeof(err)), 0);
	assert_true(s.have);
	assert_int_equal(s.n, 3);
	assert_non_null(r = watch_seen_find(&s, "delay.600"));
	assert_int_equal(r->kind, SEEN_COUNT);
	assert_int_equal(r->publish, 10);
	assert_int_equal(watch_seen_find(&s, "delay.60")->kind, SEEN_NONE);
	assert_int_equal(watch_seen_find(&s, "delay.5")->kind, SEEN_LOST);
	assert_null(watch_seen_find(&s, "delay.6"));
	watch_seen_free(&s);
	json_decref(in);

	in = json_pack("{s:{s:i},s:[{s:s,s:i},{s:s,s:s},{s:s,s:n}]}", "old", "seen_n", 3,
	    "entries", "name", "q.b", "publish", 5, "name", "q.a", "publish", "lost", "name",
	    "q.c", "publish");
	c.state = in;
	assert_int_equal(watch_seen_read(&c, &s, err, sizeof(err)), 0);
	assert_true(s.have);
	assert_string_equal(s.v[0].name, "q.a");	/* by name */
	assert_int_equal(watch_seen_find(&s, "q.a")->kind, SEEN_LOST);
	assert_int_equal(watch_seen_find(&s, "q.b")->publish, 5);
	assert_int_equal(watch_seen_find(&s, "q.c")->kind, SEEN_NONE);
	watch_seen_free(&s);
	json_object_set_new(json_object_get(in, "old"), "seen_n", json_integer(4));
	assert_int_equal(watch_seen_read(&c, &s, err, sizeof(err)), 0);
	assert_false(s.have);
	watch_seen_free(&s);
	json_object_del(json_object_get(in, "old"), "seen_n");
	assert_int_equal(watch_seen_read(&c, &s, err, sizeof(err)), 0);
	assert_false(s.have);
	assert_int_equal(s.n, 0);
	watch_seen_free(&s);
	json_decref(in);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_state_round_trips_unchanged),
	cmocka_unit_test(test_sparse_state_reads_as_new_parts),
	cmocka_unit_test(test_other_version_refused),
	cmocka_unit_test(test_last_pass_counters))
