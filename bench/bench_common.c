/* bench_common: the broker's CPU time from /proc, for the benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

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
