/* bench_util: the vhost's path segment, the broker's CPU time from /proc, a monotonic clock in
 * seconds, the median of a few rounds, the old queues' arguments, the
 * bench's broker connections (in parallel too), a plan's store and what
 * its steps declared, a watch tick and the BENCH line, for the
 * benchmark programs (bench_util.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "clock.h"
#include "broker/broker.h"
#include "broker/mgmt.h"
#include "errbuf.h"
#include "plan.h"
#include "step.h"
#include "store.h"
#include "topology.h"

const char *
bench_vhost_enc(const struct mgmt *m)
{
	static char enc[3 * 256 + 1];

	if (mgmt_escape(mgmt_vhost(m), enc, sizeof(enc)) < 0)
		snprintf(enc, sizeof(enc), "%%2F");
	return enc;
}

int
bench_queue_listing(struct mgmt *m, const char *query, const char *who, const char *what)
{
	char path[1024], err[1024];
	json_t *l = NULL;

	snprintf(path, sizeof(path), "/api/queues/%s?%s", bench_vhost_enc(m), query);
	if (mgmt_request(m, "GET", path, NULL, &l, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_%s: %s: %s\n", who, what, err);
		return -1;
	}
	json_decref(l);
	return 0;
}

void
bench_old_args(struct topology_arg *a, int64_t ttl_ms, const char *dest)
{
	memset(a, 0, 3 * sizeof(*a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	a[0].num = ttl_ms;
	snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
	snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
	snprintf(a[2].str, sizeof(a[2].str), "%s", dest);
}

const char *
bench_env(const char *who, const char *name, const char *dflt)
{
	const char *v = getenv(name);

	if (v != NULL && *v != '\0')
		return v;
	if (dflt == NULL) {
		fprintf(stderr, "bench_%s: set %s (bench/%s does)\n", who, name, who);
		exit(2);
	}
	return dflt;
}

int
bench_broker_open(struct broker **b, char *err, size_t errlen)
{
	return broker_open(getenv("CUTOVER_BENCH_AMQP"), getenv("CUTOVER_BENCH_USER"),
	    "env:CUTOVER_BENCH_PASSWORD", 30000, b, err, errlen);
}

int
bench_plan_load(const char *name, const char *yaml, struct plan **p)
{
	struct plan_errors errs = { 0 };
	char line[512];
	int rc = -1;

	if (plan_load_buffer(name, yaml, strlen(yaml), p, &errs) != 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
		goto done;
	}
	rc = 0;
done:
	plan_errors_free(&errs);
	return rc;
}

int
bench_store_open(const struct plan *p, const char *yaml, char *dir, char *db,
    struct store **s, int64_t *plan_id, char *err, size_t errlen)
{
	snprintf(dir, 64, "/tmp/bench-cutover.XXXXXX");
	db[0] = '\0';
	if (mkdtemp(dir) == NULL) {
		errbuf_set(err, errlen, "mkdtemp %s: %s", dir, strerror(errno));
		dir[0] = '\0';
		return -1;
	}
	snprintf(db, 128, "%s/cutover.db", dir);
	if (store_open(db, s, err, errlen) != 0 ||
	    store_plan_insert(*s, p->name, yaml, strlen(yaml), clock_now_ms(), plan_id,
	    err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < p->nsteps; i++)
		if (store_step_insert(*s, *plan_id, (int)i,
		    plan_step_kind_name(p->steps[i].kind), 0, err, errlen) != 0)
			return -1;
	return 0;
}

void
bench_store_remove(struct store *s, const char *dir, const char *db)
{
	static const char *const ext[] = { "", "-wal", "-shm" };
	char name[160];

	store_close(s);
	for (size_t k = 0; db[0] != '\0' && k < 3; k++) {
		snprintf(name, sizeof(name), "%s%s", db, ext[k]);
		unlink(name);
	}
	if (dir[0] != '\0')
		rmdir(dir);
}

void
bench_plan_objects_delete(struct broker *b, const struct plan *p, bool exchanges)
{
	char err[512], name[LADDER_NAME_MAX + 32];
	struct topology t;

	if (b == NULL || p == NULL)
		return;
	if (topology_build(p, &t, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < t.nqueues; i++)
			(void)broker_queue_delete(b, t.queues[i].name, 0, NULL, err,
			    sizeof(err));
		for (size_t i = 0; exchanges && i < t.nexchanges; i++)
			(void)broker_exchange_delete(b, t.exchanges[i].name, false, err,
			    sizeof(err));
		topology_free(&t);
	}
	snprintf(name, sizeof(name), "cutover.probe.%s", p->name);
	(void)broker_queue_delete(b, name, 0, NULL, err, sizeof(err));
}

/* What bench_parallel's threads share. */
struct parallel {
	int n;
	bench_item_fn fn;
	void *arg;
	const char *who;
	atomic_int next;
	atomic_int failed;
};

/* Takes the next item until none is left, over its own connection. */
static void *
parallel_loop(void *arg)
{
	struct parallel *pl = arg;
	struct broker *b = NULL;
	char err[1024];
	int i;

	if (bench_broker_open(&b, err, sizeof(err)) != 0)
		goto failed;
	while ((i = atomic_fetch_add(&pl->next, 1)) < pl->n)
		if (pl->fn(b, i, pl->arg, err, sizeof(err)) != 0)
			goto failed;
	broker_close(b);
	return NULL;
failed:
	fprintf(stderr, "%s: %s\n", pl->who, err);
	atomic_fetch_add(&pl->failed, 1);
	broker_close(b);
	return NULL;
}

int
bench_parallel(int n, int threads, bench_item_fn fn, void *arg, const char *who)
{
	struct parallel pl = { .n = n, .fn = fn, .arg = arg, .who = who };
	pthread_t th[64];
	int started = 0;

	atomic_init(&pl.next, 0);
	atomic_init(&pl.failed, 0);
	for (int i = 0; i < threads && i < 64; i++)
		if (pthread_create(&th[i], NULL, parallel_loop, &pl) == 0)
			started++;
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	if (started == 0)
		fprintf(stderr, "%s: no thread started\n", who);
	return started == 0 || atomic_load(&pl.failed) > 0 ? -1 : 0;
}

int
bench_watch_tick(struct step_ctx *c, json_t **state, const char *who)
{
	json_t *r = NULL;
	char err[2048];
	int rc;

	c->state = *state;
	c->again = false;
	rc = step_watch(c, &r, err, sizeof(err));
	if (rc != 0 || !c->again) {
		fprintf(stderr, "%s: the watch %s: %s\n", who, rc == 0 ? "ended" :
		    "failed", rc == 0 ? "its deadline came before the bench's ticks" : err);
		json_decref(r);
		return -1;
	}
	json_decref(*state);
	*state = r;
	return 0;
}

int
bench_old_queue(struct broker *b, const char *queue, const char *dest,
    char *err, size_t errlen)
{
	struct topology_arg a[3];
	char why[512];
	uint32_t purged;

	bench_old_args(a, 600000, dest);
	if (broker_queue_delete(b, queue, 0, &purged, why, sizeof(why)) != 0 ||
	    broker_queue_declare(b, queue, true, a, 3, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "declaring %s: %s", queue, why);
		return -1;
	}
	return 0;
}

int
bench_fill_stamped(struct broker *b, const char *queue, int n, char *err,
    size_t errlen)
{
	struct broker_message m;
	char body[64], why[512];

	memset(&m, 0, sizeof(m));
	m.exchange = "";
	m.routing_key = queue;
	m.body = body;
	for (int i = 0; i < n; i++) {
		m.len = (size_t)snprintf(body, sizeof(body), "bench message %d", i);
		m.timestamp = (uint64_t)(clock_now_ms() / 1000);
		if (broker_publish_async(b, &m, why, sizeof(why)) != 0)
			goto bad;
		if ((i + 1) % 500 == 0 || i + 1 == n)
			if (broker_wait_confirms(b, 30000, NULL, 0, NULL, why,
			    sizeof(why)) != 0)
				goto bad;
	}
	return 0;
bad:
	errbuf_set(err, errlen, "filling %s: %s", queue, why);
	return -1;
}

double
bench_mono_s(void)
{
	struct timespec ts;

	/* To the nanosecond: a short read (a store query) is timed too. */
	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return (double)clock_mono_ms() / 1e3;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double
bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
bench_line(const char *measure, const char *cutover, const char *peer,
    double ratio, const char *floor)
{
	double f = 0;
	int ok = 1;
	char r[32] = "-";

	if (ratio >= 0)
		snprintf(r, sizeof(r), "%.2f", ratio);
	if (strcmp(floor, "-") != 0) {
		f = atof(floor + 3);
		ok = ratio >= 0 && (floor[0] == '<' ? ratio <= f : ratio >= f);
	}
	printf("BENCH\t%s\t%s\t%s\t%s\t%s\t%s\n", measure, cutover, peer, r, floor,
	    strcmp(floor, "-") == 0 ? "-" : ok ? "ok" : "MISSED");
	return ok;
}

double
bench_broker_cpu_s(void)
{
	return bench_pid_cpu_s(getenv("CUTOVER_BENCH_BROKER_PID"));
}

double
bench_pid_cpu_s(const char *pid)
{
	char path[64], buf[1024], *p;
	unsigned long long utime, stime;
	size_t n;
	FILE *f;

	if (pid == NULL || *pid == '\0')
		return -1;
	snprintf(path, sizeof(path), "/proc/%s/stat", pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields 14 and 15, counted after the ")" that ends field 2. */
	if ((p = strrchr(buf, ')')) == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d "
	    "%*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2)
		return -1;
	return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}
