/* bench_util: the vhost's path segment, the broker's CPU time from /proc, a monotonic clock in
 * seconds, the median of a few rounds and the BENCH line, for the
 * benchmark programs (bench_util.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "clock.h"
#include "broker/mgmt.h"

const char *
bench_vhost_enc(const struct mgmt *m)
{
	static char enc[3 * 256 + 1];

	if (mgmt_escape(mgmt_vhost(m), enc, sizeof(enc)) < 0)
		snprintf(enc, sizeof(enc), "%%2F");
	return enc;
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
	const char *pid = getenv("CUTOVER_BENCH_BROKER_PID");
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
