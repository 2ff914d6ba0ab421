/* bench_old_path: the old path at the scale the old design reaches (issue
 * 4). Creates 10,000 classic old delay queues, one per distinct delay as
 * the old design made them, then times in the same run:
 *   - measure_horizon against `rabbitmqctl list_queues name arguments
 *     messages` (the broker's own listing); floor: within 2x. The watch's
 *     listing with statistics is timed beside them;
 *   - remove_old on the 10,000 empty queues against loops of management
 *     API DELETEs, one per queue, on a fresh population of the same size:
 *     curl run once per queue from a shell loop (the loop an operator
 *     writes; DESIGN §3's ~60/s), floor: 5x faster; the same DELETEs over
 *     one keep-alive connection in process (a program's loop, not a
 *     shell's: the fastest form a loop of DELETEs can take) and
 *     rabbitmqadmin once per queue, for the record. Each line gives the
 *     broker's CPU per queue deleted, which is what bounds them all.
 * Prints each pair and the ratio; exits 0 when both floors are met.
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

#include "bench_common.h"
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
	"\"$CUTOVER_BENCH_MGMT/api/queues/%2F/$q\" || exit 1; done"
#define ADMIN_LOOP "while read -r q; do $CUTOVER_BENCH_ADMIN delete queue " \
	"name=\"$q\" >/dev/null || exit 1; done"

/* Queues deleted one way, and what it took. */
struct removal {
	int n;				/* queues deleted */
	double s;			/* wall-clock seconds */
	double cpu_s;			/* the broker's CPU seconds, -1 unknown */
};

struct create {
	const char *prefix;		/* queue names: PREFIX<delay>ms */
	int n;
	atomic_int next;
	atomic_int failed;
};

static double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *
env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v != NULL && *v != '\0' ? v : dflt;
}

/* The delay of old queue I, in ms: distinct delays from 1 s up, as user
 * input (and jitter) made them. */
static int64_t
delay_of(int i)
{
	return 1000 + (int64_t)i * 7;
}

/* Declares old queues until none is left, over its own connection. */
static void *
create_loop(void *arg)
{
	struct create *cr = arg;
	struct broker *b = NULL;
	struct topology_arg a[3];
	char name[128], err[512];
	int i;

	if (broker_open(getenv("CUTOVER_BENCH_AMQP"), getenv("CUTOVER_BENCH_USER"),
	    "env:CUTOVER_BENCH_PASSWORD", 30000, &b, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: %s\n", err);
		atomic_fetch_add(&cr->failed, 1);
		return NULL;
	}
	memset(a, 0, sizeof(a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
	snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
	snprintf(a[2].str, sizeof(a[2].str), DESTINATION);
	while ((i = atomic_fetch_add(&cr->next, 1)) < cr->n) {
		a[0].num = delay_of(i);
		snprintf(name, sizeof(name), "%s%lldms", cr->prefix,
		    (long long)delay_of(i));
		if (broker_queue_declare(b, name, true, a, 3, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: %s\n", err);
			atomic_fetch_add(&cr->failed, 1);
			break;
		}
	}
	broker_close(b);
	return NULL;
}

/* Declares N old queues PREFIX<delay>ms. Returns 0 or -1. */
static int
create_queues(const char *prefix, int n)
{
	struct create cr = { .prefix = prefix, .n = n };
	pthread_t th[CREATE_THREADS];
	int i, started = 0;
	double t0 = mono_s();

	atomic_init(&cr.next, 0);
	atomic_init(&cr.failed, 0);
	for (i = 0; i < CREATE_THREADS; i++)
		if (pthread_create(&th[i], NULL, create_loop, &cr) == 0)
			started++;
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (started == 0 || atomic_load(&cr.failed) > 0)
		return -1;
	printf("created %d classic old delay queues (%s<delay>ms) in %.1f s\n", n,
	    prefix, mono_s() - t0);
	return 0;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void
print_rounds(const char *label, const double *v, int n)
{
	printf("  %-34s", label);
	for (int i = 0; i < n; i++)
		printf(" %.3f", v[i]);
	printf(" s\n");
}

/* The broker's CPU time so far (bench_common.h). */
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
	r->s += mono_s() - t0;
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

	t0 = mono_s();
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
	t0 = mono_s();
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

int
main(void)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	struct step_ctx c = { 0 };
	json_t *measured = NULL, *removed = NULL;
	const char *ctl = getenv("CUTOVER_BENCH_CTL");
	const char *admin_cmd = getenv("CUTOVER_BENCH_ADMIN");
	int nq = atoi(env_or("CUTOVER_BENCH_QUEUES", "10000"));
	int ncurl = atoi(env_or("CUTOVER_BENCH_SAMPLE", "300"));
	int rounds = atoi(env_or("CUTOVER_BENCH_ROUNDS", "3"));
	int nadmin = atoi(env_or("CUTOVER_BENCH_ADMIN_SAMPLE", "50"));
	double tm[ROUNDS_MAX], tc[ROUNDS_MAX], tw[ROUNDS_MAX], m_med, c_med, t0, cpu0;
	struct removal rm = { 0 }, curl = { 0 }, keep = { 0 }, admin = { 0 };
	char yaml[2048], line[512], err[4096], cmd[1200];
	int i, rc = 1, ok_measure, ok_remove;
	struct topology_arg none[1];

	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL ||
	    ctl == NULL) {
		fprintf(stderr, "bench_old_path: run it through bench/old_path (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER, _PASSWORD and _CTL)\n");
		return 2;
	}
	if (admin_cmd == NULL || *admin_cmd == '\0')
		nadmin = 0;
	if (nq < 2 || ncurl < 1 || nadmin < 0 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "bench_old_path: bad CUTOVER_BENCH_QUEUES, _SAMPLE or "
		    "_ROUNDS\n");
		return 2;
	}
	snprintf(yaml, sizeof(yaml),
	    BENCH_PLAN_HEAD("bench-old-path")
	    "ladder: { naming: cutover, prefix: bench, unit: 1s, levels: 20,\n"
	    "          queue_type: quorum, destinations: [" DESTINATION "] }\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder]\n",
	    getenv("CUTOVER_BENCH_AMQP"), getenv("CUTOVER_BENCH_MGMT"),
	    getenv("CUTOVER_BENCH_USER"));
	if (plan_load_buffer("bench-old-path.yaml", yaml, strlen(yaml), &p, &errs) != 0) {
		for (size_t k = 0; k < errs.n; k++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, k, line, sizeof(line)));
		goto done;
	}
	if (step_ctx_open(&c, p, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: %s\n", err);
		goto done;
	}
	memset(none, 0, sizeof(none));
	if (broker_queue_declare(c.amqp, DESTINATION, true, none, 0, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: %s\n", err);
		goto done;
	}
	if (create_queues("bench.delay.", nq) != 0)
		goto done;

	/* measure_horizon against the broker's own listing, interleaved. */
	snprintf(cmd, sizeof(cmd), "%s >/dev/null", ctl);
	for (i = 0; i < rounds; i++) {
		json_decref(measured);
		t0 = mono_s();
		if (step_measure_horizon(&c, &measured, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: measure_horizon: %s\n", err);
			goto done;
		}
		tm[i] = mono_s() - t0;
		if (json_integer_value(json_object_get(json_object_get(measured, "summary"),
		    "queues")) != nq) {
			fprintf(stderr, "bench_old_path: measure_horizon found %lld queues, "
			    "not %d\n", (long long)json_integer_value(json_object_get(
			    json_object_get(measured, "summary"), "queues")), nq);
			goto done;
		}
		t0 = mono_s();
		if (system(cmd) != 0) {
			fprintf(stderr, "bench_old_path: '%s' failed\n", ctl);
			goto done;
		}
		tc[i] = mono_s() - t0;
	}
	printf("\nmeasure, %d queues (%d rounds):\n", nq, rounds);
	print_rounds("measure_horizon", tm, rounds);
	print_rounds("rabbitmqctl list_queues", tc, rounds);
	m_med = median(tm, rounds);
	c_med = median(tc, rounds);
	ok_measure = m_med <= 2 * c_med;
	printf("  median: measure_horizon %.3f s, rabbitmqctl %.3f s: ratio %.2f "
	    "(floor: <= 2.00) %s\n", m_med, c_med, m_med / c_med,
	    ok_measure ? "ok" : "BELOW THE FLOOR");

	/* The watch's listing of the same queues, statistics on, as it makes
	 * it each tick (not a floor: how long a tick's read takes here). */
	snprintf(cmd, sizeof(cmd), "/api/queues/%%2F?columns=" OLD_WATCH_COLUMNS);
	for (i = 0; i < rounds; i++) {
		json_t *listing = NULL;

		t0 = mono_s();
		if (mgmt_request(c.mgmt, "GET", cmd, NULL, &listing, NULL, err,
		    sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: the watch's listing: %s\n", err);
			goto done;
		}
		tw[i] = mono_s() - t0;
		json_decref(listing);
	}
	print_rounds("the watch's listing, with stats", tw, rounds);
	printf("  median: %.3f s a tick, %.2fx rabbitmqctl's listing\n",
	    median(tw, rounds), median(tw, rounds) / c_med);

	/* remove_old on every old queue, all empty and past their deadline. */
	c.measured = measured;
	c.old_last_entry_ms = old_now_ms(NULL) - 3600 * 1000;
	cpu0 = broker_cpu_s();
	t0 = mono_s();
	if (step_remove_old(&c, &removed, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: remove_old: %.600s\n", err);
		goto done;
	}
	removal_add(&rm, nq, t0, cpu0);
	if (json_integer_value(json_object_get(json_object_get(removed, "counts"),
	    "removed")) != nq) {
		fprintf(stderr, "bench_old_path: remove_old did not remove all %d\n", nq);
		goto done;
	}

	/* The peers: loops of management DELETEs, one per queue, on a fresh
	 * population of the same size, so that they delete from a broker
	 * that holds what remove_old's did. The keep-alive loop takes all of
	 * it, in two halves; the client-per-queue loops take their samples
	 * between the halves, when the broker holds as many queues as it
	 * held on average during remove_old. */
	if (create_queues(LOOP_PREFIX, nq + ncurl + nadmin) != 0)
		goto done;
	if (delete_keepalive(&c, 0, nq / 2, &keep) != 0 ||
	    delete_by_command(CURL_LOOP, nq, ncurl, &curl) != 0 ||
	    (nadmin > 0 && delete_by_command(ADMIN_LOOP, nq + ncurl, nadmin,
	    &admin) != 0) ||
	    delete_keepalive(&c, nq / 2, nq, &keep) != 0)
		goto done;

	ok_remove = rate(&rm) >= 5 * rate(&curl);
	printf("\nremove, %d empty queues:\n", nq);
	print_removal("remove_old", &rm, NULL);
	printf("    (%lld AMQP connections; includes re-reading the selection)\n",
	    (long long)json_integer_value(json_object_get(removed, "connections")));
	printf("  a loop of management API DELETEs, one per queue:\n");
	print_removal("curl per queue (sh loop)", &curl, &rm);
	print_removal("keep-alive, in process", &keep, &rm);
	if (nadmin > 0)
		print_removal("rabbitmqadmin per queue", &admin, &rm);
	printf("  floor: remove_old >= 5x the loop of DELETEs, a client per queue "
	    "(curl): %.1fx %s\n", rate(&rm) / rate(&curl), ok_remove ? "ok" :
	    "BELOW THE FLOOR");
	printf("  against the keep-alive loop (a program's, not a shell's), the bound "
	    "is the broker's CPU: %ld here (the CPUs busy above)\n",
	    sysconf(_SC_NPROCESSORS_ONLN));
	rc = ok_measure && ok_remove ? 0 : 1;
done:
	if (c.amqp != NULL)
		broker_queue_delete(c.amqp, DESTINATION, 0, NULL, err, sizeof(err));
	json_decref(removed);
	json_decref(measured);
	step_ctx_close(&c);
	plan_free(p);
	plan_errors_free(&errs);
	return rc;
}
