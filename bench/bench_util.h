/* bench_util: what the benchmark programs share — a monotonic clock in
 * seconds, the median of a few rounds and the BENCH line bench/run
 * collects. Not part of cutover. */
#ifndef CUTOVER_BENCH_UTIL_H
#define CUTOVER_BENCH_UTIL_H

/* A plan's broker section for the bench's broker (CUTOVER_BENCH_AMQP,
 * _MGMT, _USER; the password by reference to CUTOVER_BENCH_PASSWORD), as
 * a printf format and its arguments: printf(BENCH_PLAN_BROKER,
 * BENCH_PLAN_BROKER_ARGS). */
#define BENCH_PLAN_BROKER "broker:\n  amqp: %s\n  management: %s\n" \
	"  username: %s\n  password: env:CUTOVER_BENCH_PASSWORD\n"
#define BENCH_PLAN_BROKER_ARGS getenv("CUTOVER_BENCH_AMQP"), \
	getenv("CUTOVER_BENCH_MGMT"), getenv("CUTOVER_BENCH_USER")

/* Seconds on CLOCK_MONOTONIC. */
double bench_mono_s(void);

/* The median of the N values of V (N >= 1); sorts V in place. */
double bench_median(double *v, int n);

/* Prints one BENCH line for bench/run, bench/lib.sh's format:
 * BENCH<TAB>MEASURE<TAB>CUTOVER<TAB>PEER<TAB>RATIO<TAB>FLOOR<TAB>ok|MISSED|-
 * (CUTOVER and PEER: figures as text; RATIO printed with two decimals, a
 * negative one as unknown, which misses any floor; FLOOR "<= X", ">= X"
 * or "-"). Returns 1 when the floor is met (or there is none), else 0. */
int bench_line(const char *measure, const char *cutover, const char *peer,
    double ratio, const char *floor);

#endif
