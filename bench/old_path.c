/* bench_old_path: the old path at the scale the old design reaches (issue
 * 4). Creates 10,000 classic old delay queues, one per distinct delay as
 * the old design made them, then times in the same run:
 *   - measure_horizon against `rabbitmqctl list_queues name arguments
 *     messages` (the broker's own listing); floor: within 2x;
 *   - remove_old on the 10,000 empty queues against a loop of management
 *     API DELETEs, one per queue, each on its own connection as
 *     rabbitmqadmin makes them (DESIGN §3's ~60/s), timed on a sample and
 *     reported as a rate; floor: 5x faster. The same loop over one
 *     keep-alive connection, the strongest form of it, is printed beside
 *     it for the record.
 * Prints each pair and the ratio; exits 0 when both floors are met.
 *
 * Environment (bench/old_path sets it): CUTOVER_BENCH_AMQP,
 * CUTOVER_BENCH_MGMT, CUTOVER_BENCH_USER, CUTOVER_BENCH_PASSWORD (the
 * password itself; referenced as env:CUTOVER_BENCH_PASSWORD),
 * CUTOVER_BENCH_CTL (the rabbitmqctl command to time, run by /bin/sh),
 * optionally CUTOVER_BENCH_QUEUES (10000), CUTOVER_BENCH_SAMPLE (1000),
 * CUTOVER_BENCH_ROUNDS (3), and CUTOVER_BENCH_ADMIN (a rabbitmqadmin
 * command with its connection options) with CUTOVER_BENCH_ADMIN_SAMPLE
 * (50) to time rabbitmqadmin itself, one invocation per queue. */
#define NFRESH 300   /* queues deleted one client per DELETE */

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "old_path.h"
#include "plan.h"
#include "step.h"

#define CREATE_THREADS 8
#define ROUNDS_MAX 9
#define DESTINATION "bench.destination"

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

int
main(void)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	struct step_ctx c = { 0 };
	json_t *measured = NULL, *removed = NULL;
	const char *ctl = getenv("CUTOVER_BENCH_CTL");
	int nq = atoi(env_or("CUTOVER_BENCH_QUEUES", "10000"));
	int ns = atoi(env_or("CUTOVER_BENCH_SAMPLE", "1000"));
	int rounds = atoi(env_or("CUTOVER_BENCH_ROUNDS", "3"));
	int na = atoi(env_or("CUTOVER_BENCH_ADMIN_SAMPLE", "50"));
	const char *admin = getenv("CUTOVER_BENCH_ADMIN");
	double tm[ROUNDS_MAX], tc[ROUNDS_MAX], m_med, c_med, t0, t_rm, t_del;
	double rm_rate, del_rate, admin_rate = 0, fresh_rate = 0;
	char yaml[2048], line[512], err[4096], cmd[1200], name[128];
	int i, rc = 1, ok_measure, ok_remove;
	struct topology_arg none[1];

	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL ||
	    ctl == NULL) {
		fprintf(stderr, "bench_old_path: run it through bench/old_path (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER, _PASSWORD and _CTL)\n");
		return 2;
	}
	if (admin == NULL || *admin == '\0')
		na = 0;
	if (nq < 1 || ns < 1 || na < 0 || rounds < 1 || rounds > ROUNDS_MAX) {
		fprintf(stderr, "bench_old_path: bad CUTOVER_BENCH_QUEUES, _SAMPLE or "
		    "_ROUNDS\n");
		return 2;
	}
	snprintf(yaml, sizeof(yaml),
	    "name: bench-old-path\n"
	    "broker:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_BENCH_PASSWORD\n"
	    "old:\n"
	    "  queues: { match: '^bench\\.delay\\.[0-9]+ms$' }\n"
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

	/* The peers first, while the 10,000 old queues exist (the broker's
	 * cost per deletion grows with what it holds): a loop of management
	 * DELETEs, one per queue, on a sample of extra queues. */
	if (create_queues("bench.sample.", ns + na + NFRESH) != 0)
		goto done;
	/* One DELETE per queue, each through a client of its own. */
	t0 = mono_s();
	for (i = ns + na; i < ns + na + NFRESH; i++) {
		struct mgmt *m = NULL;

		snprintf(name, sizeof(name), "bench.sample.%lldms", (long long)delay_of(i));
		if (mgmt_open(p->broker.management, "/", p->broker.username,
		    p->broker.password, 10000, &m, err, sizeof(err)) != 0 ||
		    mgmt_delete_queue(m, name, 0, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: %s\n", err);
			mgmt_close(m);
			goto done;
		}
		mgmt_close(m);
	}
	fresh_rate = NFRESH / (mono_s() - t0);
	t0 = mono_s();
	for (i = 0; i < ns; i++) {
		snprintf(name, sizeof(name), "bench.sample.%lldms", (long long)delay_of(i));
		if (mgmt_delete_queue(c.mgmt, name, 0, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_old_path: %s\n", err);
			goto done;
		}
	}
	t_del = mono_s() - t0;
	del_rate = ns / t_del;
	/* And, for scale, rabbitmqadmin itself: one invocation per queue. */
	if (admin != NULL && na > 0) {
		t0 = mono_s();
		for (i = ns; i < ns + na; i++) {
			snprintf(cmd, sizeof(cmd), "%s delete queue name=bench.sample.%lldms "
			    ">/dev/null", admin, (long long)delay_of(i));
			if (system(cmd) != 0) {
				fprintf(stderr, "bench_old_path: '%s' failed\n", cmd);
				goto done;
			}
		}
		admin_rate = na / (mono_s() - t0);
	}

	/* remove_old on every old queue, all empty and past their deadline. */
	c.measured = measured;
	c.old_last_entry_ms = old_now_ms(NULL) - 3600 * 1000;
	t0 = mono_s();
	if (step_remove_old(&c, &removed, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_old_path: remove_old: %.600s\n", err);
		goto done;
	}
	t_rm = mono_s() - t0;
	if (json_integer_value(json_object_get(json_object_get(removed, "counts"),
	    "removed")) != nq) {
		fprintf(stderr, "bench_old_path: remove_old did not remove all %d\n", nq);
		goto done;
	}
	rm_rate = nq / t_rm;
	ok_remove = rm_rate >= 5 * fresh_rate;
	printf("\nremove, %d empty queues:\n", nq);
	printf("  remove_old                         %.3f s = %.0f queues/s "
	    "(%lld AMQP connections)\n", t_rm, rm_rate,
	    (long long)json_integer_value(json_object_get(removed, "connections")));
	printf("  management DELETE loop             %.3f s for a sample of %d = %.0f "
	    "queues/s (%.1f s for %d)\n", t_del, ns, del_rate, nq / del_rate, nq);
	printf("    (one keep-alive HTTP connection, in process: the fastest form of "
	    "the loop)\n");
	printf("  management DELETE loop, a connection per DELETE as rabbitmqadmin: "
	    "%.0f queues/s (sample of %d)\n", fresh_rate, NFRESH);
	printf("  ratio vs a connection per DELETE: %.1fx faster (floor: >= 5x) %s\n",
	    rm_rate / fresh_rate, ok_remove ? "ok" : "BELOW THE FLOOR");
	printf("  ratio vs one keep-alive connection: %.1fx faster (for the record: "
	    "both are bound by the broker's CPU here)\n", rm_rate / del_rate);
	if (admin_rate > 0)
		printf("  for scale: rabbitmqadmin delete queue, one invocation per queue: "
		    "%.1f queues/s (sample of %d, %.0f s for %d): remove_old is %.0fx "
		    "faster\n", admin_rate, na, nq / admin_rate, nq, rm_rate / admin_rate);
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
