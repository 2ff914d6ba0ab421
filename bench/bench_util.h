/* bench_util: what the benchmark programs share — their plans' head, the
 * broker's CPU time, a monotonic clock in seconds, the median of a few
 * rounds, the old queue the move benches fill and the BENCH line bench/run
 * collects. Not part of cutover. */
#ifndef CUTOVER_BENCH_UTIL_H
#define CUTOVER_BENCH_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

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

/* The move benches' old queue OLDQ, their ladder (12 classic levels of
 * 1 s, prefix PREFIX, into destination DEST, which it creates) and their
 * move_old section, as fast as it goes, moving by timestamp; one %d: the
 * prefetch. */
#define BENCH_PLAN_MOVE(OLDQ, PREFIX, DEST) \
	"old:\n" \
	"  queues: { names: [" OLDQ "] }\n" \
	"ladder:\n" \
	"  naming: cutover\n" \
	"  prefix: " PREFIX "\n" \
	"  unit: 1s\n" \
	"  levels: 12\n" \
	"  queue_type: classic\n" \
	"  destinations: [" DEST "]\n" \
	"  create_destinations: true\n" \
	"move_old:\n" \
	"  rate: 1000000/s\n" \
	"  prefetch: %d\n" \
	"  stragglers: 1s\n" \
	"  entry:\n" \
	"    - { queues: { match: '^bench' }, from: timestamp }\n"

/* A plan's flag section for a static flag the bench serves at a URL
 * (three %s, the same URL: the watch reads it each tick), and its canary,
 * which the plan needs beside its flip. */
#define BENCH_PLAN_FLAG "flag:\n" \
	"  kind: http\n" \
	"  on: { method: PUT, url: '%s', body: '{\"enabled\":true}' }\n" \
	"  off: { method: PUT, url: '%s', body: '{\"enabled\":false}' }\n" \
	"  read: { url: '%s', pointer: /enabled, on: true, off: false }\n" \
	"canary: { delays: [1s], max_lateness: 2s }\n"

struct broker;
struct mgmt;

/* The value of environment variable NAME, or DFLT when it is unset or
 * empty; with DFLT NULL it must be set: else says "bench_WHO: set NAME
 * (bench/WHO does)" on stderr and exits 2. */
const char *bench_env(const char *who, const char *name, const char *dflt);

struct topology_arg;
struct step_ctx;

/* Fills A[0..2] with an old delay queue's arguments: x-message-ttl TTL_MS,
 * dead-lettering through the default exchange to DEST (the benches' old
 * queues). A holds 3. */
void bench_old_args(struct topology_arg *a, int64_t ttl_ms, const char *dest);

/* Opens a connection to the bench's broker (CUTOVER_BENCH_AMQP, _USER,
 * the password by reference to CUTOVER_BENCH_PASSWORD) into *B. Returns
 * 0, or -1 with ERR. */
int bench_broker_open(struct broker **b, char *err, size_t errlen);

struct plan;
struct store;

/* Loads plan text YAML as file NAME (plan_load_buffer) into *P. Returns 0,
 * or -1 with each of the plan's errors on a line of stderr. */
int bench_plan_load(const char *name, const char *yaml, struct plan **p);

/* A store as the engine has it for plan P (YAML, its text): a SQLite file
 * in a fresh directory (DIR, 64 bytes; its file DB, 128 bytes), the plan
 * and its steps inserted, into *S and *PLAN_ID. Returns 0, or -1 with ERR
 * (what was made is bench_store_remove's to remove). */
int bench_store_open(const struct plan *p, const char *yaml, char *dir, char *db,
    struct store **s, int64_t *plan_id, char *err, size_t errlen);

/* Closes S and removes its file DB (with its -wal and -shm) and DIR, each
 * only when made (an empty string: not). */
void bench_store_remove(struct store *s, const char *dir, const char *db);

/* Deletes on B what plan P's steps declared: the ladder's queues (and
 * its exchanges when EXCHANGES), and the watch's probe queue. */
void bench_plan_objects_delete(struct broker *b, const struct plan *p, bool exchanges);

/* Does the work of item I (of N) on B, a connection of
 * bench_parallel's; ARG is the caller's. Returns 0, or -1 with ERR. */
typedef int (*bench_item_fn)(struct broker *b, int i, void *arg, char *err,
    size_t errlen);

/* Runs FN for every item 0..N-1 over THREADS connections of their own
 * (bench_broker_open), each taking the next item left: declaring 100,000
 * queues one after another would take the broker's round trips one at a
 * time. WHO names the bench in a failure. Returns 0, or -1 (said why). */
int bench_parallel(int n, int threads, bench_item_fn fn, void *arg, const char *who);

/* One tick of the watch on C as the engine runs it, its state carried
 * from *STATE (NULL before the first) to the next. WHO names the bench in
 * a failure. Returns 0, or -1 (said why) when it failed or ended. */
int bench_watch_tick(struct step_ctx *c, json_t **state, const char *who);

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

/* GETs the management API's listing of the queues of M's vhost with the
 * query QUERY (what follows the '?') and drops it: the cost of one look.
 * Returns 0, or -1 having said "bench_WHO: WHAT: why" on stderr. */
int bench_queue_listing(struct mgmt *m, const char *query, const char *who,
    const char *what);

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
