/* bench_old_queues: declares a benchmark's old path, a queue per delay at
 * scale, for the benches that drive `cutover serve` from a script
 * (bench/serve_scale): N classic queues PREFIX.delay.<ttl>ms, their TTLs
 * spread evenly over [MIN_MS, MAX_MS), each dead-lettering through the
 * default exchange to DEST; one in EVERY holds FILL messages stamped with
 * the AMQP timestamp (so move_old has work). Declared over 8 connections
 * of their own (CUTOVER_BENCH_AMQP, _USER, _PASSWORD).
 *
 * Usage: bench_old_queues N PREFIX MIN_MS MAX_MS DEST [EVERY FILL]
 * Prints "declared N old queues in S s (M messages)"; exits 0, 2 on
 * failure (said why on stderr). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "broker/broker.h"
#include "topology.h"

#define THREADS 8

struct old_queues {
	int n;
	const char *prefix;
	long long min_ms, max_ms;
	const char *dest;
	int every, fill;
};

/* Queue I's TTL: MAX_MS - MIN_MS >= N, so every queue has its own. */
static long long
ttl_of(const struct old_queues *o, int i)
{
	return o->min_ms + (long long)i * (o->max_ms - o->min_ms) / o->n;
}

static int
declare_one(struct broker *b, int i, void *arg, char *err, size_t errlen)
{
	const struct old_queues *o = arg;
	struct topology_arg a[3];
	char name[256];

	bench_old_args(a, ttl_of(o, i), o->dest);
	snprintf(name, sizeof(name), "%s.delay.%lldms", o->prefix, ttl_of(o, i));
	if (broker_queue_declare(b, name, true, a, 3, err, errlen) != 0)
		return -1;
	if (o->every > 0 && o->fill > 0 && i % o->every == o->every / 2)
		return bench_fill_stamped(b, name, o->fill, err, errlen);
	return 0;
}

/* Reads argument S as a whole number from LO up; exits 2 when it is not. */
static long long
number(const char *what, const char *s, long long lo)
{
	char *end;
	long long v = strtoll(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo) {
		fprintf(stderr, "bench_old_queues: %s '%s' is not a whole number from %lld\n",
		    what, s, lo);
		exit(2);
	}
	return v;
}

int
main(int argc, char **argv)
{
	struct old_queues o = { 0 };
	double t0;
	long long held = 0;

	if (argc != 6 && argc != 8) {
		fprintf(stderr, "usage: bench_old_queues N PREFIX MIN_MS MAX_MS DEST [EVERY FILL]\n");
		return 2;
	}
	o.n = (int)number("N", argv[1], 1);
	o.prefix = argv[2];
	o.min_ms = number("MIN_MS", argv[3], 1);
	o.max_ms = number("MAX_MS", argv[4], o.min_ms + o.n);
	o.dest = argv[5];
	if (argc == 8) {
		o.every = (int)number("EVERY", argv[6], 1);
		o.fill = (int)number("FILL", argv[7], 0);
	}
	t0 = bench_mono_s();
	if (bench_parallel(o.n, THREADS, declare_one, &o, "old_queues") != 0)
		return 2;
	for (int i = 0; o.every > 0 && i < o.n; i++)
		held += i % o.every == o.every / 2 ? o.fill : 0;
	printf("declared %d old queues in %.1f s (%lld messages)\n", o.n,
	    bench_mono_s() - t0, held);
	return 0;
}
