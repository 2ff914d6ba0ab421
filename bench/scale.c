/* bench_scale: the scale of a plan. For ladders of
 * several sizes (destinations: 50, 100, 250, 500 by default) on a 20-level
 * quorum ladder, times in the same run the three steps whose work grows
 * with the plan's objects:
 *   - declare_ladder (the step: every exchange, queue, binding, policy;
 *     the destinations created, ladder.create_destinations);
 *   - verify_ladder (the step: every object read back and compared);
 *   - the watch's drift check: what watch_verify_read and watch_places run
 *     every probe_every (verify_ladder again, and the listing of where
 *     the queues run).
 * Each size runs CUTOVER_BENCH_ROUNDS times (3) on a fresh ladder, torn
 * down after (teardown_ladder, then the destinations); the median counts.
 * Prints each step's time per object at each size, and the per-object
 * cost of the largest size against the smallest's: the floor is 1.5 (cost
 * growing no faster than the number of objects). One BENCH line per step
 * (bench/lib.sh's format); exits 1 when a floor is missed, 2 on failure.
 *
 * Environment (bench/scale sets it): CUTOVER_BENCH_AMQP, _MGMT, _USER,
 * _PASSWORD; optionally CUTOVER_BENCH_SCALE_SIZES ("50 100 250 500") and
 * CUTOVER_BENCH_ROUNDS (3). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "plan.h"
#include "step.h"

#define SIZES_MAX 8
#define ROUNDS_MAX 9
#define FLOOR 1.5

enum { DECLARE, VERIFY, DRIFT, NSTEPS };

static const char *const step_names[NSTEPS] = {
	"declare_ladder", "verify_ladder", "the watch's drift check"
};

/* Writes into BUF (LEN bytes) the plan of a ladder with ND destinations,
 * prefix bench.sNNN.rR. Returns 0, or -1 when it does not fit. */
static int
plan_yaml(char *buf, size_t len, int nd, int round)
{
	size_t off;
	int n;

	n = snprintf(buf, len,
	    "name: bench-scale-%d-%d\n"
	    BENCH_PLAN_BROKER
	    "old:\n"
	    "  queues: { names: [bench.s.old] }\n"
	    "ladder:\n"
	    "  prefix: bench.s%d.r%d\n"
	    "  unit: 1s\n"
	    "  levels: 20\n"
	    "  queue_type: quorum\n"
	    "  create_destinations: true\n"
	    "  destinations:\n", nd, round, BENCH_PLAN_BROKER_ARGS, nd, round);
	if (n < 0 || (size_t)n >= len)
		return -1;
	off = (size_t)n;
	for (int i = 0; i < nd; i++) {
		n = snprintf(buf + off, len - off, "    - bench.s%d.r%d.dest%04d\n", nd,
		    round, i);
		if (n < 0 || (size_t)n >= len - off)
			return -1;
		off += (size_t)n;
	}
	n = snprintf(buf + off, len - off, "steps: [declare_ladder, verify_ladder]\n");
	return n < 0 || (size_t)n >= len - off ? -1 : 0;
}

/* The watch's drift check as it runs every probe_every: verify_ladder,
 * then the listing of where the queues run. Returns 0 or -1 with ERR. */
static int
drift_check(struct step_ctx *c, char *err, size_t errlen)
{
	struct mgmt_queue_place_list pl;
	json_t *r = NULL;
	int rc = step_verify_ladder(c, &r, err, errlen);

	json_decref(r);
	if (rc != 0)
		return -1;
	if (mgmt_list_queue_places(c->mgmt, &pl, err, errlen) != 0)
		return -1;
	mgmt_queue_place_list_free(&pl);
	return 0;
}

/* Removes what the plan of C declared: the ladder, then its destinations. */
static void
remove_all(struct step_ctx *c)
{
	json_t *r = NULL;
	char err[1024];

	if (step_teardown_ladder(c, &r, err, sizeof(err)) != 0)
		fprintf(stderr, "bench_scale: teardown: %s\n", err);
	json_decref(r);
	bool exchange;

	for (size_t i = 0; i < c->plan->ndestinations; i++)
		if (broker_queue_delete(c->amqp, plan_destination_target(c->plan, i,
		    &exchange), 0, NULL, err, sizeof(err)) != 0)
			fprintf(stderr, "bench_scale: deleting a destination: %s\n", err);
}

/* One round at ND destinations: times the three steps into T[NSTEPS] and
 * counts the objects into *OBJECTS. Returns 0 or -1. */
static int
one_round(int nd, int round, double *t, long *objects)
{
	struct plan *p = NULL;
	struct step_ctx c = { 0 };
	json_t *r = NULL;
	size_t len = 1024 + (size_t)nd * 64;
	char *yaml = malloc(len), err[4096];
	double t0;
	int rc = -1, declared = 0;

	if (yaml == NULL || plan_yaml(yaml, len, nd, round) != 0) {
		fprintf(stderr, "bench_scale: the plan does not fit\n");
		goto done;
	}
	if (bench_plan_load("bench-scale.yaml", yaml, &p) != 0)
		goto done;
	if (step_ctx_open(&c, p, err, sizeof(err)) != 0)
		goto failed;
	t0 = bench_mono_s();
	declared = 1;
	if (step_declare_ladder(&c, &r, err, sizeof(err)) != 0)
		goto failed;
	t[DECLARE] = bench_mono_s() - t0;
	*objects = (long)(json_integer_value(json_object_get(r, "exchanges")) +
	    json_integer_value(json_object_get(r, "queues")) +
	    json_integer_value(json_object_get(r, "bindings")) +
	    json_integer_value(json_object_get(r, "policies")));
	json_decref(r);
	r = NULL;
	t0 = bench_mono_s();
	if (step_verify_ladder(&c, &r, err, sizeof(err)) != 0)
		goto failed;
	t[VERIFY] = bench_mono_s() - t0;
	t0 = bench_mono_s();
	if (drift_check(&c, err, sizeof(err)) != 0)
		goto failed;
	t[DRIFT] = bench_mono_s() - t0;
	rc = 0;
	goto done;
failed:
	fprintf(stderr, "bench_scale: %d destinations: %.2000s\n", nd, err);
done:
	if (declared)
		remove_all(&c);
	json_decref(r);
	step_ctx_close(&c);
	plan_free(p);
	free(yaml);
	return rc;
}

int
main(void)
{
	const char *sizes_env = getenv("CUTOVER_BENCH_SCALE_SIZES");
	int sizes[SIZES_MAX], nsizes = 0, rounds = 3, rc = 0;
	long objects[SIZES_MAX] = { 0 };
	double per[SIZES_MAX][NSTEPS], v[NSTEPS][ROUNDS_MAX], t[NSTEPS];
	char buf[256], *tok, *save = NULL, m[160], a[160], b[160];

	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL) {
		fprintf(stderr, "bench_scale: run it through bench/scale (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER and _PASSWORD)\n");
		return 2;
	}
	if (getenv("CUTOVER_BENCH_ROUNDS") != NULL)
		rounds = atoi(getenv("CUTOVER_BENCH_ROUNDS"));
	snprintf(buf, sizeof(buf), "%s", sizes_env ? sizes_env : "50 100 250 500");
	for (tok = strtok_r(buf, " ,", &save); tok != NULL && nsizes < SIZES_MAX;
	    tok = strtok_r(NULL, " ,", &save))
		sizes[nsizes++] = atoi(tok);
	if (nsizes < 2 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "bench_scale: CUTOVER_BENCH_SCALE_SIZES needs 2 to %d "
		    "sizes, CUTOVER_BENCH_ROUNDS 1 to %d\n", SIZES_MAX, ROUNDS_MAX);
		return 2;
	}
	for (int s = 0; s < nsizes; s++) {
		if (sizes[s] < 1)
			return 2;
		for (int r = 0; r < rounds; r++) {
			if (one_round(sizes[s], r, t, &objects[s]) != 0)
				return 2;
			for (int k = 0; k < NSTEPS; k++)
				v[k][r] = t[k];
		}
		printf("%4d destinations, %5ld objects:", sizes[s], objects[s]);
		for (int k = 0; k < NSTEPS; k++) {
			double med = bench_median(v[k], rounds);

			per[s][k] = med / (double)objects[s];
			printf("  %s %.2f s (%.2f ms/object)", step_names[k], med,
			    1000 * per[s][k]);
		}
		printf("\n");
	}
	for (int k = 0; k < NSTEPS; k++) {
		int hi = nsizes - 1;
		double ratio = per[hi][k] / per[0][k];
		int ok = ratio <= FLOOR;	/* FLOOR, as bench_line reads it below */

		printf("%s: per object, %d destinations against %d: %.2fx (floor: <= %.1f) "
		    "%s\n", step_names[k], sizes[hi], sizes[0], ratio, FLOOR,
		    ok ? "ok" : "ABOVE THE FLOOR");
		snprintf(m, sizeof(m), "%s, %d destinations (%ld objects), per object",
		    step_names[k], sizes[hi], objects[hi]);
		snprintf(a, sizeof(a), "%.2f ms/object (%.2f s)", 1000 * per[hi][k],
		    per[hi][k] * (double)objects[hi]);
		snprintf(b, sizeof(b), "%d destinations (%ld objects): %.2f ms/object",
		    sizes[0], objects[0], 1000 * per[0][k]);
		if (!bench_line(m, a, b, ratio, "<= 1.5"))
			rc = 1;
	}
	return rc;
}
