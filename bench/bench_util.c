/* bench_util: the vhost's path segment, the broker's CPU time from /proc, a monotonic clock in
 * seconds, the median of a few rounds, the move benches' old queue and the
 * BENCH line, for the benchmark programs (bench_util.h). */
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
bench_old_queue(struct broker *b, const char *queue, const char *dest,
    char *err, size_t errlen)
{
	struct topology_arg a[3];
	char why[512];
	uint32_t purged;

	memset(a, 0, sizeof(a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	a[0].num = 600000;
	snprintf(a[1].key, sizeof(a[1].key), "x-dead-letter-exchange");
	snprintf(a[2].key, sizeof(a[2].key), "x-dead-letter-routing-key");
	snprintf(a[2].str, sizeof(a[2].str), "%s", dest);
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
	return (double)clock_mono_ms() / 1e3;
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
