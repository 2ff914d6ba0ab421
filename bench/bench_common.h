/* bench_common: what the benchmarks share: the broker's CPU time from
 * its OS process, and the start of their plans. */
#ifndef CUTOVER_BENCH_COMMON_H
#define CUTOVER_BENCH_COMMON_H

/* A benchmark plan's name, broker (amqp, management and user: three %s,
 * the password env:CUTOVER_BENCH_PASSWORD) and old selection, the
 * benchmarks' old queues bench.delay.<n>ms. */
#define BENCH_PLAN_HEAD(NAME) \
	"name: " NAME "\n" \
	"broker:\n" \
	"  amqp: %s\n" \
	"  management: %s\n" \
	"  username: %s\n" \
	"  password: env:CUTOVER_BENCH_PASSWORD\n" \
	"old:\n" \
	"  queues: { match: '^bench\\.delay\\.[0-9]+ms$' }\n"

/* The broker's CPU time so far (user + system), in seconds, from
 * /proc/CUTOVER_BENCH_BROKER_PID/stat; -1 when unknown (the variable
 * unset, the process gone, the file unreadable). */
double bench_broker_cpu_s(void);

#endif
