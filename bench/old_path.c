/* bench_old_path: the old path at the scale the old design reaches.
 * Creates 10,000 classic old delay queues, one per distinct delay as
 * the old design made them, then times in the same run:
 *   - measure_horizon against `rabbitmqctl list_queues name arguments
 *     messages` (the broker's own listing), floor: no slower; and against
 *     the management API's own listing of the columns it reads, floor:
 *     at most 1.15x (the interface's floor: what measure_horizon reads
 *     besides is small). The watch's paged listing with statistics is
 *     timed beside them;
 *   - remove_old on the 10,000 empty queues against loops of management
 *     API DELETEs, one per queue, on a fresh population of the same size:
 *     curl run once per queue from a shell loop (the loop an operator
 *     writes; DESIGN §3's ~60/s), floor: 5x faster; the same DELETEs over
 *     one keep-alive connection in process (a program's loop, not a
 *     shell's: the fastest form a loop of DELETEs can take), floor: 3x
 *     faster; and rabbitmqadmin once per queue, for the record. Each line
 *     gives the broker's CPU per queue deleted, which is what bounds them
 *     all, and remove_old's rate against that bound (the CPUs / the
 *     broker's CPU per queue) has a floor: 90 % of it.
 * Prints each pair and the ratio, and a BENCH line per figure for
 * bench/run (bench/lib.sh); exits 0 when every floor is met.
 *
 * Environment (bench/old_path sets it): CUTOVER_BENCH_AMQP,
 * CUTOVER_BENCH_MGMT, CUTOVER_BENCH_USER, CUTOVER_BENCH_PASSWORD (the
 * password itself; referenced as env:CUTOVER_BENCH_PASSWORD),
 * CUTOVER_BENCH_CTL (the rabbitmqctl command to time, run by /bin/sh),
 * CUTOVER_BENCH_BROKER_PID (the broker's OS process, for its CPU time;
 * optional), optionally CUTOVER_BENCH_QUEUES (10000), CUTOVER_BENCH_SAMPLE
 * (300 queues for the curl loop), CUTOVER_BENCH_ROUNDS (3), and
 * CUTOVER_BENCH_ADMIN (a rabbitmqadmin command with its connection
 * options) with CUTOVER_BENCH_ADMIN_SAMPLE (50). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"
#include "mgmt_test.h"

#define CREATE_THREADS 8
#define ROUNDS_MAX 9
#define DESTINATION "bench.destination"
#define LOOP_PREFIX "bench.loop."

/* The loops of DELETEs a client per queue, run by /bin/sh with the names
 * of the queues to delete on standard input. */
#define CURL_LOOP "while read -r q; do curl -fsS -o /dev/null " \
	"-u \"$CUTOVER_BENCH_USER:$CUTOVER_BENCH_PASSWORD\" -X DELETE " \
	"\"$CUTOVER_BENCH_MGMT/api/queues/$CUTOVER_BENCH_VHOST_ENC/$q\" || exit 1; done"
#define ADMIN_LOOP "while read -r q; do $CUTOVER_BENCH_ADMIN delete queue " \
	"name=\"$q\" >/dev/null || exit 1; done"

/* Queues deleted one way, and what it took. */
struct removal {
	int n;				/* queues deleted */
	double s;			/* wall-clock seconds */
	double cpu_s;			/* the broker's CPU seconds, -1 unknown */
};

/* The old queues create_queues declares. */
struct create {
	const char *prefix;		/* queue names: PREFIX<delay>ms */
	bool used;			/* one message in and out of each, so
					 * that it has a publish counter */
};

/* The delay of old queue I, in ms: distinct delays from 1 s up, as user
 * input (and jitter) made them. */
static int64_t
delay_of(int i)
{
	return 1000 + (int64_t)i * 7;
}

/* Publishes one message into queue NAME and takes it out again, as an old
 * queue in use has seen: remove_old leaves a queue without a publish
 * counter (a publish since its reading cannot be ruled out). Returns 0 or
 * -1 with ERR. */
static int
use_queue(struct broker *b, const char *name, char *err, size_t errlen)
{
	struct broker_message m = { .routing_key = name, .body = "x", .len = 1,
	    .transient = true };
	struct broker_delivery d;

	memset(&d, 0, sizeof(d));
	if (broker_publish(b, &m, 30000, err, errlen) != 0 ||
	    broker_get(b, name, false, &d, err, errlen) != 0)
		return -1;
	broker_delivery_free(&d);
	return 0;
}

/* Declares old queue I of CR (a bench_item_fn). */
static int
create_one(struct broker *b, int i, void *arg, char *err, size_t errlen)
{
	const struct create *cr = arg;
	struct topology_arg a[3];
	char name[128];

	bench_old_args(a, delay_of(i), DESTINATION);
	snprintf(name, sizeof(name), "%s%lldms", cr->prefix, (long long)delay_of(i));
	if (broker_queue_declare(b, name, true, a, 3, err, errlen) != 0 ||
	    (cr->used && use_queue(b, name, err, errlen) != 0))
		return -1;
	return 0;
}

/* Declares N old queues PREFIX<delay>ms, each USED (use_queue) if so.
 * Returns 0 or -1. */
static int
create_queues(const char *prefix, int n, bool used)
{
	struct create cr = { .prefix = prefix, .used = used };
	double t0 = bench_mono_s();

	if (bench_parallel(n, CREATE_THREADS, create_one, &cr, "bench_old_path") != 0)
		return -1;
	printf("created %d classic old delay queues (%s<delay>ms) in %.1f s\n", n,
	    prefix, bench_mono_s() - t0);
	return 0;
}

static void
print_rounds(const char *label, const double *v, int n)
{
	printf("  %-34s", label);
	for (int i = 0; i < n; i++)
		printf(" %.3f", v[i]);
	printf(" s\n");
}

/* The broker's CPU time so far (bench_util.h). */
static double
broker_cpu_s(void)
{
	return bench_broker_cpu_s();
}

static double
rate(const struct removal *r)
{
	return r->s > 0 ? r->n / r->s : 0;
}

/* Adds to R N queues deleted between T0 and now, and the broker's CPU
 * since CPU0; R's CPU stays unknown once a reading failed. */
static void
removal_add(struct removal *r, int n, double t0, double cpu0)
{
	double cpu = broker_cpu_s();

	r->n += n;
	r->s += bench_mono_s() - t0;
	if (r->cpu_s < 0 || cpu0 < 0 || cpu < 0)
		r->cpu_s = -1;
	else
		r->cpu_s += cpu - cpu0;
}

/* Deletes old queues [FROM, TO) of LOOP_PREFIX one management DELETE at a
 * time over C's keep-alive connection. Returns 0 or -1. */
static int
delete_keepalive(struct step_ctx *c, int from, int to, struct removal *r)
{
	char name[128], err[512];
	double t0, cpu0 = broker_cpu_s();

	t0 = bench_mono_s();
	for (int i = from; i < to; i++) {
		snprintf(name, sizeof(name), LOOP_PREFIX "%lldms", (long long)delay_of(i));
		if (mgmt_delete_queue(c->mgmt, name, 0, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: %s\n", err);
			return -1;
		}
	}
	removal_add(r, to - from, t0, cpu0);
	return 0;
}

/* Deletes N old queues of LOOP_PREFIX from FROM on by SCRIPT, a /bin/sh
 * loop that reads their names on standard input. Returns 0 or -1. */
static int
delete_by_command(const char *script, int from, int n, struct removal *r)
{
	char cmd[1024];
	double t0, cpu0 = broker_cpu_s();
	FILE *sh;
	int st;

	snprintf(cmd, sizeof(cmd), "/bin/sh -c '%s'", script);
	t0 = bench_mono_s();
	if ((sh = popen(cmd, "w")) == NULL) {
		fprintf(stderr, "bench_old_path: cannot run /bin/sh\n");
		return -1;
	}
	for (int i = from; i < from + n; i++)
		fprintf(sh, LOOP_PREFIX "%lldms\n", (long long)delay_of(i));
	if ((st = pclose(sh)) != 0) {
		fprintf(stderr, "bench_old_path: '%s' failed (status %d)\n", script, st);
		return -1;
	}
	removal_add(r, n, t0, cpu0);
	return 0;
}

/* Waits (up to 2 minutes: statistics come every few seconds) until the
 * watch's listing shows a publish counter for each of the N old queues;
 * that listing is then *LAST (the caller's reference). Returns 0 or -1. */
static int
wait_counters(struct step_ctx *c, int n, json_t **last)
{
	char path[256], err[512];
	json_t *l = NULL, *e;
	size_t i;
	int counted = 0;

	snprintf(path, sizeof(path), "/api/queues/%s?columns=" OLD_WATCH_COLUMNS,
	    bench_vhost_enc(c->mgmt));
	for (double t0 = bench_mono_s(); bench_mono_s() - t0 < 120; sleep(1)) {
		counted = 0;
		if (mgmt_request(c->mgmt, "GET", path, NULL, &l, NULL, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: %s\n", err);
			return -1;
		}
		json_array_foreach(l, i, e) {
			const char *name = json_string_value(json_object_get(e, "name"));

			counted += name != NULL && strncmp(name, "bench.delay.", 12) == 0 &&
			    json_integer_value(json_object_get(json_object_get(e,
			    "message_stats"), "publish")) > 0;
		}
		if (counted >= n) {
			*last = l;
			return 0;
		}
		json_decref(l);
		l = NULL;
	}
	fprintf(stderr, "bench_old_path: after 2 minutes the statistics show a publish "
	    "counter for %d of the %d old queues\n", counted, n);
	return -1;
}

/* Prints R as one line, with how many times faster REF is, if given. */
static void
print_removal(const char *label, const struct removal *r,
    const struct removal *ref)
{
	printf("  %-28s %6d in %7.2f s = %6.1f queues/s", label, r->n, r->s, rate(r));
	if (r->cpu_s >= 0)
		printf(", broker CPU %.2f ms/queue (%.2f CPUs busy)",
		    1000 * r->cpu_s / r->n, r->cpu_s / r->s);
	if (ref != NULL)
		printf(": remove_old %.1fx", rate(ref) / rate(r));
	printf("\n");
}

/* What a run reads from its environment. */
struct run {
	const char *ctl;		/* the rabbitmqctl listing to time */
	int nq, ncurl, rounds, nadmin;
	struct plan *p;
	struct step_ctx c;
	json_t *measured, *removed, *watched;	/* watched: the watch's last sample */
	double c_med;			/* rabbitmqctl's median, seconds */
	struct removal rm, curl, keep, admin;
};

/* Fills R's sizes from the environment. Returns 0, or -1 (said why). */
static int
run_config(struct run *r)
{
	const char *admin_cmd = getenv("CUTOVER_BENCH_ADMIN");

	r->ctl = getenv("CUTOVER_BENCH_CTL");
	r->nq = atoi(bench_env("old_path", "CUTOVER_BENCH_QUEUES", "10000"));
	r->ncurl = atoi(bench_env("old_path", "CUTOVER_BENCH_SAMPLE", "300"));
	r->rounds = atoi(bench_env("old_path", "CUTOVER_BENCH_ROUNDS", "3"));
	r->nadmin = atoi(bench_env("old_path", "CUTOVER_BENCH_ADMIN_SAMPLE", "50"));
	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL ||
	    r->ctl == NULL) {
		fprintf(stderr, "bench_old_path: run it through bench/old_path (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER, _PASSWORD and _CTL)\n");
		return -1;
	}
	if (admin_cmd == NULL || *admin_cmd == '\0')
		r->nadmin = 0;
	if (r->nq < 2 || r->ncurl < 1 || r->nadmin < 0 || r->rounds < 1 ||
	    r->rounds > ROUNDS_MAX) {
		fprintf(stderr, "bench_old_path: bad CUTOVER_BENCH_QUEUES, _SAMPLE or "
		    "_ROUNDS\n");
		return -1;
	}
	return 0;
}

/* Loads the bench's plan, opens its step context, declares the
 * destination and creates the old queues. Returns 0, or -1 (said why). */
static int
run_setup(struct run *r)
{
	char yaml[2048], err[4096];
	struct topology_arg none[1];

	snprintf(yaml, sizeof(yaml),
	    "name: bench-old-path\n"
	    BENCH_PLAN_BROKER
	    "old:\n"
	    "  queues: { match: '^bench\\.delay\\.[0-9]+ms$' }\n"
	    "ladder: { naming: cutover, prefix: bench, unit: 1s, levels: 20,\n"
	    "          queue_type: quorum, destinations: [" DESTINATION "] }\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder]\n",
	    BENCH_PLAN_BROKER_ARGS);
	if (bench_plan_load("bench-old-path.yaml", yaml, &r->p) != 0)
		return -1;
	if (step_ctx_open(&r->c, r->p, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: %s\n", err);
		return -1;
	}
	/* CURL_LOOP's path names the vhost as the management API wants it. */
	setenv("CUTOVER_BENCH_VHOST_ENC", bench_vhost_enc(r->c.mgmt), 1);
	memset(none, 0, sizeof(none));
	if (broker_queue_declare(r->c.amqp, DESTINATION, true, none, 0, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: %s\n", err);
		return -1;
	}
	return create_queues("bench.delay.", r->nq, true);
}

/* One round of measure_horizon (its time in *S); checks it found every
 * queue. Returns 0, or -1 (said why). */
static int
measure_once(struct run *r, double *s)
{
	char err[4096];
	double t0 = bench_mono_s();
	long long found;

	json_decref(r->measured);
	if (step_measure_horizon(&r->c, &r->measured, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: measure_horizon: %s\n", err);
		return -1;
	}
	*s = bench_mono_s() - t0;
	found = (long long)json_integer_value(json_object_get(json_object_get(
	    r->measured, "summary"), "queues"));
	if (found != r->nq) {
		fprintf(stderr, "bench_old_path: measure_horizon found %lld queues, "
		    "not %d\n", found, r->nq);
		return -1;
	}
	return 0;
}

/* The management API's own listing of the columns measure_horizon's
 * listing asks for (mgmt_list_queues: statistics off, the queues' own
 * totals), one request parsed, into *S. Returns 0, or -1 (said why). */
static int
api_listing_once(struct run *r, double *s)
{
	double t0 = bench_mono_s();

	if (bench_queue_listing(r->c.mgmt, "disable_stats=true&enable_queue_totals=true&"
	    "columns=name,type,durable,arguments,policy,messages", "old_path",
	    "the API's listing") != 0)
		return -1;
	*s = bench_mono_s() - t0;
	return 0;
}

/* measure_horizon against the broker's own listing (rabbitmqctl) and the
 * management API's listing of the same columns (the floor of any client
 * of that interface: measure_horizon reads the policies, the operator
 * policies, the consumers and the dead-letter bindings besides),
 * interleaved; prints them and the BENCH lines. Returns 1 when the floors
 * are met, 0 when not, -1 on failure (said why). */
static int
measure_rounds(struct run *r)
{
	double tm[ROUNDS_MAX], tc[ROUNDS_MAX], ta[ROUNDS_MAX], t0, m_med, a_med;
	char cmd[1200], m[128], a[128], b[160];
	int ok;

	snprintf(cmd, sizeof(cmd), "%s >/dev/null", r->ctl);
	for (int i = 0; i < r->rounds; i++) {
		if (measure_once(r, &tm[i]) != 0)
			return -1;
		t0 = bench_mono_s();
		if (system(cmd) != 0) {
			fprintf(stderr, "bench_old_path: '%s' failed\n", r->ctl);
			return -1;
		}
		tc[i] = bench_mono_s() - t0;
		if (api_listing_once(r, &ta[i]) != 0)
			return -1;
	}
	printf("\nmeasure, %d queues (%d rounds):\n", r->nq, r->rounds);
	print_rounds("measure_horizon", tm, r->rounds);
	print_rounds("rabbitmqctl list_queues", tc, r->rounds);
	print_rounds("the API's listing, same columns", ta, r->rounds);
	m_med = bench_median(tm, r->rounds);
	r->c_med = bench_median(tc, r->rounds);
	a_med = bench_median(ta, r->rounds);
	ok = m_med <= r->c_med;
	printf("  median: measure_horizon %.3f s, rabbitmqctl %.3f s: ratio %.2f "
	    "(floor: <= 1.00) %s\n", m_med, r->c_med, m_med / r->c_med,
	    ok ? "ok" : "BELOW THE FLOOR");
	snprintf(m, sizeof(m), "measure %d old queues (median of %d)", r->nq, r->rounds);
	snprintf(a, sizeof(a), "%.2f s", m_med);
	snprintf(b, sizeof(b), "rabbitmqctl list_queues %.2f s", r->c_med);
	bench_line(m, a, b, m_med / r->c_med, "<= 1.0");
	snprintf(m, sizeof(m), "measure %d old queues, against the API's listing "
	    "(median of %d)", r->nq, r->rounds);
	snprintf(b, sizeof(b), "GET /api/queues, the same columns, %.2f s", a_med);
	ok &= bench_line(m, a, b, m_med / a_med, "<= 1.15");
	return ok;
}

/* The watch's listing of the same queues, statistics on, as it makes it
 * on a full pass: page by page (not a floor: how long that read takes
 * here). Returns 0, or -1 (said why). */
static int
watch_listing(struct run *r)
{
	double tw[ROUNDS_MAX], t0, med;
	char err[4096], m[128], a[128], b[160];

	for (int i = 0; i < r->rounds; i++) {
		json_t *listing = NULL;

		t0 = bench_mono_s();
		if (mgmt_list_queues_all(r->c.mgmt, OLD_WATCH_COLUMNS, &listing, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: the watch's listing: %s\n", err);
			return -1;
		}
		tw[i] = bench_mono_s() - t0;
		json_decref(listing);
	}
	med = bench_median(tw, r->rounds);
	print_rounds("the watch's listing, with stats", tw, r->rounds);
	printf("  median: %.3f s a tick, %.2fx rabbitmqctl's listing\n", med,
	    med / r->c_med);
	snprintf(m, sizeof(m), "the watch's listing each tick, %d queues", r->nq);
	snprintf(a, sizeof(a), "%.2f s", med);
	snprintf(b, sizeof(b), "rabbitmqctl list_queues %.2f s", r->c_med);
	bench_line(m, a, b, med / r->c_med, "-");
	return 0;
}

/* remove_old on every old queue, all empty and past their deadline, once
 * the statistics show each one's publish counter, as a plan runs it:
 * after the watch, whose last sample of the old queues is its baseline
 * (that listing stands in for it). Returns 0, or -1. */
static int
remove_all(struct run *r)
{
	char err[4096];
	double t0, cpu0;
	json_t *last = NULL;

	if (wait_counters(&r->c, r->nq, &last) != 0)
		return -1;
	r->watched = json_pack("{s:{s:I,s:o}}", "old_last", "at_ms",
	    (json_int_t)old_now_ms(NULL), "queues", last);
	r->c.watched = r->watched;
	r->c.measured = r->measured;
	r->c.old_last_entry_ms = old_now_ms(NULL) - 3600 * 1000;
	cpu0 = broker_cpu_s();
	t0 = bench_mono_s();
	if (step_remove_old(&r->c, &r->removed, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: remove_old: %.600s\n", err);
		return -1;
	}
	removal_add(&r->rm, r->nq, t0, cpu0);
	if (json_integer_value(json_object_get(json_object_get(r->removed, "counts"),
	    "removed")) != r->nq) {
		fprintf(stderr, "bench_old_path: remove_old did not remove all %d\n", r->nq);
		return -1;
	}
	return 0;
}

/* The peers: loops of management DELETEs, one per queue, on a fresh
 * population of the same size, so that they delete from a broker that
 * holds what remove_old's did. The keep-alive loop takes all of it, in
 * two halves; the client-per-queue loops take their samples between the
 * halves, when the broker holds as many queues as it held on average
 * during remove_old. Returns 0, or -1. */
static int
remove_peers(struct run *r)
{
	int nq = r->nq;

	if (create_queues(LOOP_PREFIX, nq + r->ncurl + r->nadmin, false) != 0)
		return -1;
	if (delete_keepalive(&r->c, 0, nq / 2, &r->keep) != 0 ||
	    delete_by_command(CURL_LOOP, nq, r->ncurl, &r->curl) != 0 ||
	    (r->nadmin > 0 && delete_by_command(ADMIN_LOOP, nq + r->ncurl, r->nadmin,
	    &r->admin) != 0) ||
	    delete_keepalive(&r->c, nq / 2, nq, &r->keep) != 0)
		return -1;
	return 0;
}

/* Prints the removals against each other. Returns 1 when remove_old is
 * at least 5x the curl loop, else 0. */
static int
print_removals(const struct run *r)
{
	int ok = rate(&r->rm) >= 5 * rate(&r->curl);

	printf("\nremove, %d empty queues:\n", r->nq);
	print_removal("remove_old", &r->rm, NULL);
	printf("    (%lld AMQP connections; includes re-reading the selection)\n",
	    (long long)json_integer_value(json_object_get(r->removed, "connections")));
	printf("  a loop of management API DELETEs, one per queue:\n");
	print_removal("curl per queue (sh loop)", &r->curl, &r->rm);
	print_removal("keep-alive, in process", &r->keep, &r->rm);
	if (r->nadmin > 0)
		print_removal("rabbitmqadmin per queue", &r->admin, &r->rm);
	printf("  floor: remove_old >= 5x the loop of DELETEs, a client per queue "
	    "(curl): %.1fx %s\n", rate(&r->rm) / rate(&r->curl), ok ? "ok" :
	    "BELOW THE FLOOR");
	printf("  against the keep-alive loop (a program's, not a shell's), the bound "
	    "is the broker's CPU: %ld here (the CPUs busy above)\n",
	    sysconf(_SC_NPROCESSORS_ONLN));
	return ok;
}

/* The removal's BENCH lines; the first against what the broker's CPU
 * allows (all its CPUs, each deletion costing what it cost during
 * remove_old), the last against the fastest loop of DELETEs. Returns 1
 * when those two floors are met, else 0. */
static int
removal_lines(const struct run *r)
{
	const struct removal *rm = &r->rm;
	double bound = rm->cpu_s > 0 ?
	    (double)sysconf(_SC_NPROCESSORS_ONLN) * rm->n / rm->cpu_s : -1;
	char m[128], a[128], b[160];
	int ok;

	snprintf(m, sizeof(m), "remove %d empty queues", r->nq);
	if (rm->cpu_s >= 0)
		snprintf(a, sizeof(a), "%.0f/s, broker %.2f ms CPU/queue, %.2f CPUs busy",
		    rate(rm), 1000 * rm->cpu_s / rm->n, rm->cpu_s / rm->s);
	else
		snprintf(a, sizeof(a), "%.0f/s (broker CPU unknown)", rate(rm));
	snprintf(b, sizeof(b), "broker CPU bound %ld CPUs / %.2f ms = %.0f/s",
	    sysconf(_SC_NPROCESSORS_ONLN), rm->cpu_s >= 0 ? 1000 * rm->cpu_s / rm->n : 0,
	    bound);
	ok = bench_line(m, a, b, bound > 0 ? rate(rm) / bound : -1, ">= 0.9");
	snprintf(m, sizeof(m), "remove %d empty queues, against curl per queue", r->nq);
	snprintf(a, sizeof(a), "%.0f/s", rate(rm));
	snprintf(b, sizeof(b), "curl DELETE per queue %.0f/s", rate(&r->curl));
	bench_line(m, a, b, rate(rm) / rate(&r->curl), ">= 5");
	snprintf(m, sizeof(m), "remove %d empty queues, against a keep-alive loop", r->nq);
	snprintf(b, sizeof(b), "keep-alive DELETE loop %.0f/s", rate(&r->keep));
	ok &= bench_line(m, a, b, rate(rm) / rate(&r->keep), ">= 3");
	return ok;
}

int
main(void)
{
	struct run r = { 0 };
	char err[512];
	/* 2 until every figure is taken: a bench that could not run is not
	 * one that missed a floor (bench/old_path's exit status). */
	int rc = 2, ok_measure, ok_remove, ok_bound;

	if (run_config(&r) != 0)
		return 2;
	if (run_setup(&r) != 0 || (ok_measure = measure_rounds(&r)) < 0 ||
	    watch_listing(&r) != 0 || remove_all(&r) != 0 || remove_peers(&r) != 0)
		goto done;
	ok_remove = print_removals(&r);
	ok_bound = removal_lines(&r);
	rc = ok_measure && ok_remove && ok_bound ? 0 : 1;
done:
	if (r.c.amqp != NULL)
		broker_queue_delete(r.c.amqp, DESTINATION, 0, NULL, err, sizeof(err));
	json_decref(r.removed);
	json_decref(r.measured);
	json_decref(r.watched);
	step_ctx_close(&r.c);
	plan_free(r.p);
	return rc;
}
