/* test_move_old_rows (integration): move_old's state in a real SQLite
 * store, each old queue's entry a row of its own (move_old_rows.c), across
 * a kill -9 with a few hundred old queues: what the killed run persisted
 * is one moment's (every queue it had passed done, the batch it published
 * in flight), and the run started from it, as the engine starts it (the
 * result read back from the store), moves everything without loss, counts
 * the batch that may come twice, and leaves a result that reads back as
 * the one it returned; and old queues dead-lettering through many
 * exchanges, each read once. */
#include "itest_move_old.h"
#include "store.h"

#define NQUEUES 300
#define FIRST_MOVED 200		/* queues before it hold only what stays */
#define STAY_EVERY 20		/* of those, one in 20 holds 2 unstamped */
#define MOVE_EVERY 13		/* from FIRST_MOVED, one in 13 holds 5 stamped */
#define MOVE_TTL (4 * SEC)
#define MOVE_STEP 5		/* move_old's index among the plan's steps */

static const char rest[] =
    "flag:\n"
    "  kind: http\n"
    "  on: { method: PUT, url: 'http://127.0.0.1:9/flag', body: '{\"enabled\":true}' }\n"
    "  off: { method: PUT, url: 'http://127.0.0.1:9/flag', body: '{\"enabled\":false}' }\n"
    "  read: { url: 'http://127.0.0.1:9/flag', pointer: /enabled, on: true, off: false }\n"
    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old]\n";

static char names[NQUEUES][32];
static char dir[256], db[300];

/* Opens the test's database, failing the test when it cannot. */
static struct store *
db_open(void)
{
	struct store *s = NULL;
	char err[512];

	if (store_open(db, &s, err, sizeof(err)) != 0)
		fail_msg("store_open %s: %s", db, err);
	return s;
}

/* A new database with the plan and its steps pending; the plan's id. */
static int64_t
db_make(void)
{
	static const char *const kinds[] = { "measure_horizon", "declare_ladder",
	    "verify_ladder", "canary", "flip", "move_old" };
	const char *tmp = getenv("TMPDIR");
	struct store *s;
	char err[512];
	int64_t id;

	snprintf(dir, sizeof(dir), "%s/itmv_rows.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/cutover.db", dir);
	s = db_open();
	assert_int_equal(store_plan_insert(s, "itest-move", "name: itest-move\n", 17,
	    clock_now_ms(), &id, err, sizeof(err)), 0);
	for (int k = 0; k <= MOVE_STEP; k++)
		assert_int_equal(store_step_insert(s, id, k, kinds[k], 0, err, sizeof(err)), 0);
	store_close(s);
	return id;
}

/* Removes the database and its directory. */
static void
db_remove(void)
{
	static const char *const ext[] = { "", "-wal", "-shm" };
	char p[320];

	for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
		snprintf(p, sizeof(p), "%s%s", db, ext[i]);
		unlink(p);
	}
	rmdir(dir);
}

/* move_old's result as the engine reads it from the store. */
static json_t *
stored_result(int64_t id)
{
	struct store *s = db_open();
	struct store_step st;
	json_t *j;
	char err[512];

	assert_int_equal(store_step_get(s, id, MOVE_STEP, &st, err, sizeof(err)), 0);
	assert_non_null(st.result_json);
	j = json_loads(st.result_json, 0, NULL);
	assert_non_null(j);
	store_step_clear(&st);
	store_close(s);
	return j;
}

/* Consumes DEST for WANT deliveries at most (40 s), acking each; checks
 * that none arrived before the test's own not-before for it; counts each
 * body's deliveries into imove_sent[].arrived (any) and *TWICE. Returns
 * how many arrived. */
static int
drain_dest(int want, int *twice)
{
	int64_t until = clock_mono_ms() + 40 * SEC;
	int got = 0;
	char err[1024];

	*twice = 0;
	assert_int_equal(broker_consume(imove_ctx.amqp, DEST, 0, err, sizeof(err)), 0);
	while (got < want && clock_mono_ms() < until) {
		struct broker_delivery d = { 0 };
		size_t i;

		if (broker_next(imove_ctx.amqp, 1000, &d, err, sizeof(err)) != 0)
			continue;
		for (i = 0; i < imove_nsent && strcmp(imove_sent[i].body, d.body) != 0; i++)
			;
		if (i == imove_nsent)
			fail_msg("'%s' arrived, which the test did not send", d.body);
		if (imove_sent[i].not_before_ms == 0)
			fail_msg("'%s' arrived, which stays in its old queue", d.body);
		if (clock_now_ms() < imove_sent[i].not_before_ms)
			fail_msg("'%s' arrived %lld ms early", d.body,
			    (long long)(imove_sent[i].not_before_ms - clock_now_ms()));
		if (imove_sent[i].arrived)
			(*twice)++;
		imove_sent[i].arrived = true;
		got++;
		assert_int_equal(broker_ack(imove_ctx.amqp, &d, err, sizeof(err)), 0);
		broker_delivery_free(&d);
	}
	(void)broker_cancel(imove_ctx.amqp, err, sizeof(err));
	return got;
}

/* 300 old queues; ten of the first 200 hold messages the move leaves
 * (entry unknown, their TTL over the bound), eight of the last 100 hold
 * five stamped messages each. The run is killed once the ladder confirmed
 * its first batch (in the first queue whose messages go): the store holds
 * every queue's entry, each of the 200 before done with what it left, and
 * that batch in flight, of one moment. Started again from that, the step
 * passes only the queues not done, moves every message (none lost, none
 * early), and counts the batch that reached the ladder twice. */
static void
test_kill_between_row_and_ack_resumes_without_loss(void **state)
{
	int64_t now, ts, id, moved_nb;
	json_t *st, *r, *back, *m;
	const json_t *e;
	struct store *s;
	char body[32], err[512], *text;
	int nmoved = 0, nleft = 0, twice = 0, got;

	(void)state;
	imove_nsent = 0;
	id = db_make();
	imove_start_with("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "5s",
	    rest);
	now = clock_now_ms();
	ts = now / 1000;
	moved_nb = (ts + 1) * 1000 + MOVE_TTL;
	for (int i = 0; i < NQUEUES; i++) {
		bool stays = i < FIRST_MOVED && i % STAY_EVERY == 0;
		bool moves = i >= FIRST_MOVED && (i - FIRST_MOVED) % MOVE_EVERY == 0;

		snprintf(names[i], sizeof(names[i]), "old.r.%03d", i);
		imove_old_queue(names[i], moves ? MOVE_TTL : 60 * SEC, DEST);
		for (int k = 0; stays && k < 2; k++, nleft++) {
			snprintf(body, sizeof(body), "stay-%03d-%d", i, k);
			imove_put(names[i], body, 0, 0, NULL, 0);
		}
		for (int k = 0; moves && k < 5; k++, nmoved++) {
			snprintf(body, sizeof(body), "move-%03d-%d", i, k);
			imove_put(names[i], body, (uint64_t)ts, 0, NULL, moved_nb);
		}
	}
	imove_ctx.measured = m = imove_measure();
	imove_crash_after_confirm_in(now, db, id);
	imove_wait_depth(names[FIRST_MOVED], 5);

	/* What the killed run left in the store: one moment's. */
	st = stored_result(id);
	assert_int_equal(json_array_size(json_object_get(st, "queues")), NQUEUES);
	for (int i = 0; i < NQUEUES; i++) {
		e = imove_queue_entry(st, names[i]);
		assert_int_equal(imove_count_of(e, "pass_done"), i < FIRST_MOVED ? 1 : 0);
		assert_int_equal(imove_count_of(e, "left"), i < FIRST_MOVED &&
		    i % STAY_EVERY == 0 ? 2 : 0);
		assert_int_equal(imove_count_of(e, "in_flight"), i == FIRST_MOVED ?
		    imove_plan->move_old.prefetch : 0);
		assert_int_equal(imove_count_of(e, "moved"), 0);
	}
	/* The entries in the selection's order, as the step made them. */
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    json_object_get(st, "queues"), NQUEUES - 1), "name")), names[NQUEUES - 1]);

	/* Started again as the engine starts it. */
	s = db_open();
	imove_ctx.store = s;
	imove_ctx.plan_id = id;
	imove_ctx.state = st;
	r = imove_move();
	imove_ctx.state = NULL;
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "moved"), nmoved);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "left"), nleft);
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "may_duplicate"),
	    imove_plan->move_old.prefetch);
	assert_int_equal(imove_count_of(imove_queue_entry(r, names[FIRST_MOVED]),
	    "may_duplicate"), imove_plan->move_old.prefetch);
	for (int i = FIRST_MOVED; i < NQUEUES; i++)
		assert_int_equal(imove_depth(names[i]), 0);
	for (int i = 0; i < FIRST_MOVED; i += STAY_EVERY)
		assert_int_equal(imove_depth(names[i]), 2);
	got = drain_dest(nmoved + imove_plan->move_old.prefetch, &twice);
	fprintf(stderr, "%d deliveries of %d moved messages, %d of them second copies\n",
	    got, nmoved, twice);
	for (size_t i = 0; i < imove_nsent; i++)
		if (imove_sent[i].not_before_ms > 0 && !imove_sent[i].arrived)
			fail_msg("'%s' was lost", imove_sent[i].body);
	assert_int_equal(got, nmoved + imove_plan->move_old.prefetch);
	assert_int_equal(twice, imove_plan->move_old.prefetch);

	/* The engine writes the result whole at the run's end: it reads back
	 * as the step returned it. */
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	assert_int_equal(store_step_update(s, id, MOVE_STEP, NULL, 0, 0, text, NULL, err,
	    sizeof(err)), 0);
	back = stored_result(id);
	assert_true(json_equal(back, r));
	free(text);
	json_decref(back);
	json_decref(r);
	json_decref(st);
	imove_ctx.store = NULL;
	store_close(s);
	imove_ctx.measured = NULL;
	json_decref(m);
	db_remove();
}

/* Old queues dead-lettering each through an exchange of its own (a
 * fanout bound to the destination, the message's own key): the step reads
 * each exchange once, when the first queue names it, and keeps them all
 * while it works out the rest (more than it first makes room for), then
 * finds each message's destination through its queue's exchange as it
 * moves it: every message arrives, none early. */
static void
test_many_dead_letter_exchanges(void **state)
{
	enum { NX = 20 };
	char x[NX][32], err[1024], body[32];
	int64_t ts, nb;
	json_t *r, *m;
	int twice;

	(void)state;
	imove_nsent = 0;
	imove_start("    - { queues: { match: '^old\\.' }, from: timestamp }\n", "5s");
	ts = clock_now_ms() / 1000;
	nb = (ts + 1) * 1000 + MOVE_TTL;
	for (int i = 0; i < NX; i++) {
		snprintf(x[i], sizeof(x[i]), "itmv.dlx.%02d", i);
		snprintf(names[i], sizeof(names[i]), "old.x.%02d", i);
		if (broker_exchange_declare(imove_ctx.amqp, x[i], "fanout", true, NULL, 0, err,
		    sizeof(err)) != 0 || broker_queue_bind(imove_ctx.amqp, DEST, x[i], "",
		    err, sizeof(err)) != 0)
			fail_msg("exchange %s: %s", x[i], err);
		imove_old_queue_to(names[i], MOVE_TTL, x[i], NULL);
		snprintf(body, sizeof(body), "x-%02d", i);
		imove_put(names[i], body, (uint64_t)ts, 0, NULL, nb);
	}
	imove_ctx.measured = m = imove_measure();
	r = imove_move();
	assert_int_equal(imove_count_of(json_object_get(r, "counts"), "moved"), NX);
	assert_int_equal(drain_dest(NX, &twice), NX);
	assert_int_equal(twice, 0);
	for (int i = 0; i < NX; i++)
		assert_true(imove_sent[i].arrived);
	imove_ctx.measured = NULL;
	json_decref(m);
	json_decref(r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_kill_between_row_and_ack_resumes_without_loss, imove_setup,
		    imove_teardown),
		cmocka_unit_test_setup_teardown(test_many_dead_letter_exchanges,
		    imove_setup, imove_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
