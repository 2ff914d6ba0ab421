/* bench_util: what the benchmark programs share — their plans' head, the
 * broker's CPU time, a monotonic clock in seconds, the median of a few
 * rounds, the old queue the move benches fill and the BENCH line bench/run
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

/* A benchmark plan's name, broker (BENCH_PLAN_BROKER: three %s) and old
 * selection, the benchmarks' old queues bench.delay.<n>ms. */
#define BENCH_PLAN_HEAD(NAME) \
	"name: " NAME "\n" \
	BENCH_PLAN_BROKER \
	"old:\n" \
	"  queues: { match: '^bench\\.delay\\.[0-9]+ms$' }\n"

struct broker;
struct mgmt;

/* Deletes and declares again QUEUE on B: a classic old delay queue of 10
 * minutes (x-message-ttl 600000) dead-lettering through the default
 * exchange to DEST, as the move benches' old path. Returns 0, or -1 with
 * ERR. */
int bench_old_queue(struct broker *b, const char *queue, const char *dest,
    char *err, size_t errlen);

/* Publishes N persistent messages into QUEUE on B through the default
 * exchange, each stamped with the AMQP timestamp of its publish (so a move
 * knows the delay it still owes), confirmed 500 at a time. Returns 0, or
 * -1 with ERR. */
int bench_fill_stamped(struct broker *b, const char *queue, int n, char *err,
    size_t errlen);

/* M's vhost percent-encoded as one path segment of the management API
 * ("%2F" for "/"), in a static buffer: the benches run in the vhost of
 * CUTOVER_BENCH_AMQP (bench.smoke runs them in one of its own). */
const char *bench_vhost_enc(const struct mgmt *m);

/* The broker's CPU time so far (user + system), in seconds, from
 * /proc/CUTOVER_BENCH_BROKER_PID/stat; -1 when unknown (the variable
 * unset, the process gone, the file unreadable). */
double bench_broker_cpu_s(void);

/* The same for the process PID (a decimal string; NULL or empty: -1). */
double bench_pid_cpu_s(const char *pid);

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
