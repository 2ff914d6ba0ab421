/* bench_scale_old: the old path's steps at several numbers of old queues
 * (bench/scale runs it after bench_scale). For each size (10,000 and
 * 100,000 classic old delay queues by default, TTLs spread over a day,
 * one queue in SHARE_EVERY holding FILL stamped messages so that move_old
 * has work), on one broker, in one run, times as the engine runs them
 * (a plan in a real SQLite store, so that the steps persist as they do
 * under the engine):
 *   - measure_horizon;
 *   - one watch tick over the old path: its first tick (a full pass, the
 *     vhost listed) and its light ticks after it, and the broker CPU a
 *     tick costs in the steady state (a full pass every 30 ticks) against
 *     one full listing's (the node's Erlang VM, /proc/PID/stat, less its
 *     idle rate);
 *   - move_old's pass over every old queue;
 *   - remove_old as the engine runs it (inputs from the store, its result
 *     written back), first with every old queue waiting for its deadline
 *     (the last entry into the old path just now), then again with that
 *     result as its state (as the engine runs it every watch.interval
 *     while queues wait), then begun anew on every old queue empty and
 *     past its deadline.
 * Prints each step's time per queue at each size, one BENCH line per step
 * with the cost per queue at the largest size against the smallest's
 * (floor: <= 1.2), the watch's broker CPU per tick against a full
 * listing's (floor: <= 0.1), the peak RSS of this process (the steps run
 * in it as in serve's engine) against 64 MB, and the broker's memory at
 * each size. Exits 1 when a floor is missed, 2 on failure.
 *
 * Environment (bench/scale sets it): CUTOVER_BENCH_AMQP, _MGMT, _USER,
 * _PASSWORD, CUTOVER_BENCH_BROKER_PID (optional: no CPU figures without
 * it); optionally CUTOVER_BENCH_SCALE_OLD_SIZES ("10000 100000"),
 * CUTOVER_BENCH_SCALE_TICKS (light ticks timed, 5) and
 * CUTOVER_BENCH_SCALE_MOVE_MAX (no move_old, and no messages, at larger
 * sizes: move_old's pass still costs each queue more as they grow). */
#include <arpa/inet.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "clock.h"
#include "heap.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"
#include "step_kinds.h"
#include "store.h"
#include "textbuf.h"
#include "topology.h"

#define SIZES_MAX 6
#define TICKS_MAX 20
#define CREATE_THREADS 8
#define SHARE_EVERY 100		/* one old queue in 100 holds messages */
#define FILL 3			/* messages in each of those */
#define FULL_EVERY 30		/* the watch's ticks between full passes */
#define FLOOR_PER_QUEUE 1.2
#define FLOOR_WATCH_CPU 0.1
#define RSS_LIMIT_MB 64.0
#define DESTINATION "bench.destination"
#define DAY_MS 86400000LL
#define HOUR_MS 3600000LL

enum { MEASURE, WATCH_FULL, WATCH_LIGHT, MOVE, REMOVE_WAIT, REMOVE_AGAIN, REMOVE,
	LISTING, OURS, NSTEPS };

static const char *const step_names[NSTEPS] = {
	"measure_horizon", "the watch's first tick (full pass)",
	"a watch tick (light pass)", "move_old's pass",
	"remove_old, every queue waiting", "remove_old run again, every queue waiting",
	"remove_old",
	"a full listing (GET /api/queues, statistics)",
	"cutover's listing (statistics; by name past 20,000)"
};

/* What one size measured. */
struct size_run {
	int n;				/* old queues */
	double s[NSTEPS];		/* wall seconds of each step */
	double cpu_full, cpu_light, cpu_listing, cpu_ours; /* broker CPU s, net
					 * of idle; -1 unknown */
	struct mgmt_pages pages;	/* what cutover's listing cost */
	double rss_mb;			/* the steps' peak RSS in the size (not the
					 * bench's own work between them) */
	double rss[NSTEPS];		/* its peak in each step, MB */
	double rss0[NSTEPS];		/* the RSS each step began with, MB */
	double rss_now;			/* the RSS at the last mark, MB */
	double self[NSTEPS];		/* this process's CPU in each step
					 * (user + system), s */
	double broker_mb;		/* the node's memory with N old queues */
	double wait_cpu, wait_next;	/* remove_old's run again while queues
					 * wait: the broker's CPU over it (-1
					 * unknown), and how long after it the
					 * next would be (again_after_ms), s */
	long long moved, removed, full_passes, light_passes;
	char full_why[128];		/* why the watch's last full pass was
					 * one (its state's old.pass.why) */
	bool move;			/* move_old runs at this size */
};

/* The TTL of old queue I of N: spread from 1 s to about a day. */
static int64_t
ttl_of(int i, int n)
{
	return 1000 + (int64_t)i * (DAY_MS - 1000) / n;
}

/* Does old queue I of R hold messages for move_old? One in SHARE_EVERY
 * when move_old runs, of those whose TTL outlasts the bench (an hour):
 * a shorter one could let its messages expire before the pass. */
static bool
holds(const struct size_run *r, int i)
{
	return r->move && i % SHARE_EVERY == SHARE_EVERY / 2 && ttl_of(i, r->n) >= HOUR_MS;
}

/* The messages R's old queues hold for move_old. */
static long long
held(const struct size_run *r)
{
	long long n = 0;

	for (int i = 0; i < r->n; i++)
		n += holds(r, i) ? FILL : 0;
	return n;
}

/* The plan's flag, served from a thread of this process: the watch reads
 * it each tick, and a flag service's work is not the broker's. */
struct flag_server {
	int fd;
	int port;
	pthread_t th;
	atomic_bool stop;
};

static void *
flag_serve(void *arg)
{
	static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	    "Content-Length: 17\r\nConnection: close\r\n\r\n{\"enabled\":true}\n";
	struct flag_server *f = arg;
	char req[2048];

	while (!atomic_load(&f->stop)) {
		int cfd = accept(f->fd, NULL, NULL);

		if (cfd < 0)
			continue;
		(void)!read(cfd, req, sizeof(req));
		(void)!write(cfd, answer, sizeof(answer) - 1);
		close(cfd);
	}
	return NULL;
}

/* Starts F on an ephemeral port of 127.0.0.1. Returns 0 or -1. */
static int
flag_start(struct flag_server *f)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	atomic_init(&f->stop, false);
	if ((f->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(f->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(f->fd, 16) != 0 ||
	    getsockname(f->fd, (struct sockaddr *)&a, &len) != 0 ||
	    pthread_create(&f->th, NULL, flag_serve, f) != 0) {
		perror("bench_scale_old: the flag's server");
		return -1;
	}
	f->port = ntohs(a.sin_port);
	return 0;
}

static void
flag_stop(struct flag_server *f)
{
	atomic_store(&f->stop, true);
	shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->th, NULL);
	close(f->fd);
}


/* Declares old queue I of R's N (ARG, a bench_item_fn); when R runs
 * move_old, those that holds() names are filled with FILL stamped
 * messages. */
static int
create_one(struct broker *b, int i, void *arg, char *err, size_t errlen)
{
	const struct size_run *r = arg;
	int n = r->n;
	struct topology_arg a[3];
	char name[128];

	bench_old_args(a, ttl_of(i, n), DESTINATION);
	snprintf(name, sizeof(name), "bench.delay.%lldms", (long long)ttl_of(i, n));
	if (broker_queue_declare(b, name, true, a, 3, err, errlen) != 0 ||
	    (holds(r, i) && bench_fill_stamped(b, name, FILL, err, errlen) != 0))
		return -1;
	return 0;
}

/* Declares R's old queues over CREATE_THREADS connections. Returns 0 or
 * -1. */
static int
create_old(const struct size_run *r)
{
	double t0 = bench_mono_s();

	if (bench_parallel(r->n, CREATE_THREADS, create_one, (void *)r,
	    "bench_scale_old") != 0)
		return -1;
	printf("%d old queues: declared in %.1f s (%lld of them hold %d messages)\n", r->n,
	    bench_mono_s() - t0, held(r) / FILL, FILL);
	fflush(stdout);
	return 0;
}

/* This process's peak RSS in MB since the last reset (VmHWM), -1 unknown;
 * RESET starts a new peak (clear_refs 5). */
static double
peak_rss_mb(bool reset)
{
	char line[256];
	double kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "VmHWM: %lf kB", &kb) == 1)
			break;
	fclose(f);
	if (reset && (f = fopen("/proc/self/clear_refs", "w")) != NULL) {
		fputs("5", f);
		fclose(f);
	}
	return kb < 0 ? -1 : kb / 1024;
}

/* This process's CPU time so far (user + system), s. */
static double
self_cpu_s(void)
{
	struct rusage u;

	if (getrusage(RUSAGE_SELF, &u) != 0)
		return 0;
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	    (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

/* rss_mark's K for a reading that ends the bench's own work between
 * steps (its peers' listings, the results it records as the engine
 * would): not the steps' peak. */
#define BETWEEN_STEPS (-2)

/* Ends R's peak RSS reading since the last (into R->rss[K] when K >= 0,
 * and, unless K is BETWEEN_STEPS, R's steps' peak of the size) and begins
 * the next, once what the step left free went back to the system, as the
 * engine gives it back after each step's run (engine_step.c). */
static void
rss_mark(struct size_run *r, int k)
{
	double mb = peak_rss_mb(false);

	malloc_trim(0);
	(void)peak_rss_mb(true);

	if (k >= 0) {
		r->rss[k] = mb;
		r->rss0[k] = r->rss_now;
	}
	/* The peak just reset is the RSS now: what the next step begins
	 * with, which its peak includes. */
	r->rss_now = peak_rss_mb(false);
	if (k != BETWEEN_STEPS && mb > r->rss_mb)
		r->rss_mb = mb;
}

/* A run of one size: its plan, steps' context and store. */
struct bench {
	struct plan *p;
	struct step_ctx c;
	struct store *s;
	json_t *measured, *moved, *removed;
	int64_t flip_ms;		/* the flip, an hour before the run */
	char dir[64], db[128];
	double idle_rate;		/* the node's CPU s/s with nothing running */
};

/* Loads the plan (flag on FLAG_PORT), opens the steps' context and a
 * store in a fresh directory, as the engine has them. Returns 0 or -1. */
static int
bench_open(struct bench *b, int flag_port)
{
	char yaml[3072], err[4096], url[128];
	int64_t id;

	snprintf(url, sizeof(url), "http://127.0.0.1:%d/flag", flag_port);
	snprintf(yaml, sizeof(yaml),
	    BENCH_PLAN_HEAD("bench-scale-old")
	    "ladder: { naming: cutover, prefix: bench.so, unit: 1s, levels: 17,\n"
	    "          queue_type: classic, destinations: [" DESTINATION "],\n"
	    "          create_destinations: true }\n"
	    BENCH_PLAN_FLAG
	    "watch: { interval: 10s, allowance: 1s, probe_every: 1h }\n"
	    "move_old: { rate: 1000000/s, stragglers: 1m,\n"
	    "            entry: [ { queues: { match: '^bench\\.delay\\.' }, from: timestamp } ] }\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old,\n"
	    "        watch, remove_old]\n",
	    BENCH_PLAN_BROKER_ARGS, url, url, url);
	if (bench_plan_load("bench-scale-old.yaml", yaml, &b->p) != 0)
		return -1;
	if (step_ctx_open(&b->c, b->p, err, sizeof(err)) != 0 ||
	    bench_store_open(b->p, yaml, b->dir, b->db, &b->s, &id, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_scale_old: %s\n", err);
		return -1;
	}
	b->c.store = b->s;
	b->c.plan_id = id;
	/* Long enough ago that move_old's stragglers' window is over: one
	 * pass. */
	b->flip_ms = b->c.flip_ms = clock_now_ms() - 3600 * 1000;
	return 0;
}

/* Records in B's store that the plan's step of KIND succeeded at ENDED_MS
 * with the result TEXT (NULL: none), as the engine would have: what a
 * later step's prepare reads. Returns 0 or -1 (said why). */
static int
step_recorded_text(struct bench *b, enum plan_step_kind kind, const char *text,
    int64_t ended_ms)
{
	char err[512];
	int rc = store_step_update(b->s, b->c.plan_id, plan_find_step(b->p, kind),
	    "succeeded", ended_ms, ended_ms, text, NULL, err, sizeof(err));

	if (rc != 0)
		fprintf(stderr, "bench_scale_old: recording %s: %s\n",
		    plan_step_kind_name(kind), err);
	return rc;
}

/* step_recorded_text with RESULT's text (NULL: none). */
static int
step_recorded(struct bench *b, enum plan_step_kind kind, const json_t *result,
    int64_t ended_ms)
{
	char *text = result != NULL ? json_dumps(result, JSON_COMPACT |
	    JSON_PRESERVE_ORDER) : NULL;
	int rc = step_recorded_text(b, kind, text, ended_ms);

	free(text);
	return rc;
}

/* The text of the result B's store holds for the plan's step of KIND
 * (owned), as the engine reads it: whole, or APART (without its rows, as
 * the engine reads the state of a kind that reads its entries apart), or
 * NULL (said why). */
static char *
step_text(struct bench *b, enum plan_step_kind kind, bool apart)
{
	struct store_step st = { 0 };
	char err[512], *text;
	int idx = plan_find_step(b->p, kind);

	if ((apart ? store_step_get_apart(b->s, b->c.plan_id, idx, &st, err, sizeof(err)) :
	    store_step_get(b->s, b->c.plan_id, idx, &st, err, sizeof(err))) != 0 ||
	    st.result_json == NULL) {
		fprintf(stderr, "bench_scale_old: reading %s's result back: %s\n",
		    plan_step_kind_name(kind), st.result_json == NULL ? "none" : err);
		store_step_clear(&st);
		return NULL;
	}
	text = st.result_json;
	st.result_json = NULL;
	store_step_clear(&st);
	return text;
}

/* The result B's store holds for the plan's step of KIND (a new
 * reference), or NULL (said why). */
static json_t *
step_result(struct bench *b, enum plan_step_kind kind)
{
	char *text = step_text(b, kind, false);
	json_t *j = text != NULL ? json_loads(text, 0, NULL) : NULL;

	if (text != NULL && j == NULL)
		fprintf(stderr, "bench_scale_old: %s's result does not parse\n",
		    plan_step_kind_name(kind));
	free(text);
	return j;
}

/* step_event_sink_fn: the event recorded at once, as the engine does
 * (engine__event), into B's store (ARG). */
static int
record_event(void *arg, const char *kind, json_t *details)
{
	struct bench *b = arg;
	char err[512], *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER);
	int rc;

	rc = store_append_event(b->s, b->c.plan_id, clock_now_ms(), "engine", kind,
	    text != NULL ? text : "{}", NULL, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "bench_scale_old: recording %s: %s\n", kind, err);
	free(text);
	json_decref(details);
	return rc;
}

/* Records the run of KIND that gave RESULT (its TEXT) as the engine does
 * (engine__transition_ran): the result with STATUS and its rows and, once
 * the step ended (STATUS not "running"), the events its kind's hook finds
 * (an ended remove_old's: one per queue removed), each recorded as it is
 * found, all in one transaction. Returns 0, or -1 with ERR. */
static int
record_run(struct bench *b, enum plan_step_kind kind, const char *status,
    int64_t ended, const char *text, const json_t *result, char *err, size_t errlen)
{
	const struct step_kind *sk = step_kind_of(kind);
	bool ended_run = strcmp(status, "running") != 0 && sk->events != NULL;

	if (store_begin(b->s, err, errlen) != 0)
		return -1;
	if (store_step_update_rows(b->s, b->c.plan_id, plan_find_step(b->p, kind), status,
	    ended, ended, text, NULL, step_rows_source(&b->c.rows, b->c.rows_kept),
	    &b->c.rows, b->c.rows.n, err, errlen) != 0)
		goto fail;
	if (ended_run) {
		b->c.events.sink = record_event;
		b->c.events.sink_arg = b;
		if (sk->events(&b->c, result, err, errlen) != 0)
			goto fail;
	}
	return store_commit(b->s, err, errlen);
fail:
	store_rollback(b->s);
	return -1;
}

/* One run of a step as the engine runs it (engine__step_advance): its
 * state read from STATE (its last result as the store holds it, borrowed,
 * NULL: none) as the engine reads it (step_state_load), its inputs through PREPARE from the store (the results recorded
 * there), its result written back as text with STATUS (ended now unless
 * it is "running"), what it left free given back. Sets *OUT to its result
 * and *AGAIN. Returns 0 or -1 (said why). */
static int
engine_run(struct bench *b, enum plan_step_kind kind, step_prepare_fn prepare,
    step_fn step, const char *state, const char *status, json_t **out, bool *again)
{
	struct step_store_inputs src = { .s = b->s, .plan_id = b->c.plan_id, .p = b->p };
	char err[2048], *text = NULL;
	json_t *st = NULL, *r = NULL;
	int64_t now = clock_now_ms(), ended = strcmp(status, "running") == 0 ? 0 : now;
	int rc;

	if (state != NULL)
		st = step_state_load(kind, state);
	step_ctx_begin_run(&b->c, b->p, b->s, b->c.plan_id, st);
	if (st != NULL && (step_kind_of(kind)->flags & STEP_KIND_STATE_ENTRIES)) {
		b->c.state_text = state;
		b->c.state_idx = plan_find_step(b->p, kind);
	}
	b->c.rows_wanted = (step_kind_of(kind)->flags & STEP_KIND_RESULT_ROWS) != 0;
	b->c.inputs = step_inputs_of_store(&src);
	rc = prepare != NULL ? prepare(&b->c, &b->c.inputs, &r, err, sizeof(err)) : 0;
	if (prepare != NULL && rc == 0)
		malloc_trim(0);		/* as the engine, after a prepare */
	if (rc == 0)
		rc = step(&b->c, &r, err, sizeof(err));
	*again = b->c.again;
	step_ctx_drop_inputs(&b->c);
	json_decref(st);
	if (rc != 0) {
		fprintf(stderr, "bench_scale_old: %s failed: %.2000s\n",
		    plan_step_kind_name(kind), err);
		step_ctx_end_run(&b->c);
		json_decref(r);
		return -1;
	}
	text = json_dumps(r, JSON_COMPACT | JSON_PRESERVE_ORDER);
	rc = record_run(b, kind, status, ended, text, r, err, sizeof(err));
	step_ctx_end_run(&b->c);
	free(text);
	*out = r;
	malloc_trim(0);
	if (rc != 0)
		fprintf(stderr, "bench_scale_old: recording %s: %s\n",
		    plan_step_kind_name(kind), err);
	return rc;
}

/* One watch tick as the engine runs it (engine_run), its state its last
 * result as B's store holds it (none at the FIRST); nothing of it held
 * between ticks, as the engine holds nothing. Returns 0 or -1 (said
 * why). */
static int
engine_tick(struct bench *b, bool first)
{
	json_t *r = NULL;
	char *text = NULL;
	bool again = false;
	int rc;

	/* Without its rows, as the engine reads it (state_read): the last
	 * full pass's counters are read from the store by a full pass only. */
	if (!first && (text = step_text(b, PLAN_STEP_WATCH, (step_kind_of(
	    PLAN_STEP_WATCH)->flags & STEP_KIND_STATE_ENTRIES) != 0)) == NULL)
		return -1;
	rc = engine_run(b, PLAN_STEP_WATCH, step_watch_prepare, step_watch, text,
	    "running", &r, &again);
	free(text);
	json_decref(r);
	if (rc != 0)
		return -1;
	if (!again) {
		fprintf(stderr, "bench_scale_old: the watch ended: its deadline came "
		    "before the bench's ticks\n");
		return -1;
	}
	return 0;
}

/* Records in B's store the watch's result as its last tick would write
 * it: its last sample of every queue of the vhost ("old_last", as
 * watch_old_last_json writes it), read now from one statistics listing
 * into a table and written as text a queue at a time, the last entry into
 * the old path 0 until last_entry_at sets it. No tree of the listing or
 * of the sample is made: at 100,000 queues they would be some 150 MB in
 * this process just before remove_old runs, holes serve never has.
 * Returns 0 or -1 (said why). */
static int
watch_ended(struct bench *b)
{
	struct old_counters o;
	struct textbuf t = { 0 };
	char err[1024], num[2][24], *name;
	int rc = -1;

	if (old_counters_read(&b->c, &o, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_scale_old: the watch's last sample: %s\n", err);
		return -1;
	}
	textbuf_printf(&t, "{\"ok\":true,\"last_old_entry_ms\":0,\"old_last\":"
	    "{\"at_ms\":%lld,\"queues\":[", (long long)old_now_ms(NULL));
	for (size_t i = 0; i < o.n && !t.failed; i++) {
		json_t *js = json_string(o.v[i].name);

		name = js != NULL ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
		json_decref(js);
		snprintf(num[0], sizeof(num[0]), "%lld", (long long)o.v[i].publish);
		snprintf(num[1], sizeof(num[1]), "%lld", (long long)o.v[i].messages);
		if (name == NULL)
			t.failed = true;
		else
			textbuf_printf(&t, "%s{\"name\":%s,\"publish\":%s,\"messages\":%s}",
			    i > 0 ? "," : "", name, o.v[i].publish >= 0 ? num[0] : "null",
			    o.v[i].messages >= 0 ? num[1] : "null");
		free(name);
	}
	textbuf_printf(&t, "]}}");
	if (t.failed)
		fprintf(stderr, "bench_scale_old: the watch's last sample: out of memory\n");
	else
		rc = step_recorded_text(b, PLAN_STEP_WATCH, t.p, old_now_ms(NULL));
	free(t.p);
	old_counters_free(&o);
	return rc;
}

/* Records in B's store the watch's result (as watch_ended wrote it) with
 * AT_MS as the last entry into the old path, and the flip as ended then:
 * the number is put in place in the result's text, which is not parsed
 * (a tree of its 100,000-queue sample would be some 45 MB). Returns 0 or
 * -1 (said why). */
static int
last_entry_at(struct bench *b, int64_t at_ms)
{
	static const char key[] = "\"last_old_entry_ms\":";
	char *text = step_text(b, PLAN_STEP_WATCH, false), *at, *end;
	struct textbuf t = { 0 };
	int rc = -1;

	/* watch_ended writes the key once, first, before any queue's name. */
	if (text == NULL || (at = strstr(text, key)) == NULL) {
		fprintf(stderr, "bench_scale_old: the watch's result has no last entry\n");
		free(text);
		return -1;
	}
	at += sizeof(key) - 1;
	for (end = at; *end == '-' || (*end >= '0' && *end <= '9'); end++)
		;
	textbuf_printf(&t, "%.*s%lld%s", (int)(at - text), text, (long long)at_ms, end);
	if (!t.failed && step_recorded_text(b, PLAN_STEP_WATCH, t.p, old_now_ms(NULL)) == 0 &&
	    step_recorded(b, PLAN_STEP_FLIP, NULL, at_ms) == 0)
		rc = 0;
	free(text);
	free(t.p);
	return rc;
}

/* Whether remove_old's RESULT has each of the N old queues waiting or
 * removed (the shortest TTLs, from 1 s, come due between two runs): 0,
 * with *REMOVED how many it removed, else -1 (said why). */
static int
waiting_or_removed(const json_t *result, int n, long long *removed)
{
	const json_t *counts = json_object_get(result, "counts");
	long long w = (long long)json_integer_value(json_object_get(counts, "waiting"));

	*removed = (long long)json_integer_value(json_object_get(counts, "removed"));
	if (w + *removed == n && w > 0)
		return 0;
	fprintf(stderr, "bench_scale_old: remove_old has %lld of %d old queues "
	    "waiting and %lld removed\n", w, n, *removed);
	return -1;
}

/* Removes what B left on the broker (the ladder, its destination, the
 * watch's probe queue, any old queue remove_old did not delete) and its
 * store. */
static void
bench_close(struct bench *b, int n)
{
	char err[512], name[LADDER_NAME_MAX + 32];

	if (b->c.amqp != NULL) {
		/* remove_old deleted them all when the run got that far. */
		for (int i = 0; b->removed == NULL && i < n; i++) {
			snprintf(name, sizeof(name), "bench.delay.%lldms",
			    (long long)ttl_of(i, n));
			(void)broker_queue_delete(b->c.amqp, name, 0, NULL, err, sizeof(err));
		}
		bench_plan_objects_delete(b->c.amqp, b->p, true);
		(void)broker_queue_delete(b->c.amqp, DESTINATION, 0, NULL, err, sizeof(err));
	}
	step_ctx_close(&b->c);
	bench_store_remove(b->s, b->dir, b->db);
	json_decref(b->measured);
	json_decref(b->moved);
	json_decref(b->removed);
	plan_free(b->p);
}

/* The vhost's listing with statistics as the watch makes it (OURS:
 * mgmt_list_queues_all), or the broker's one listing, read and dropped in
 * a child process, so that its trees (some 100 MB at 100,000 queues)
 * never count in the steps' process, whose RSS the bench measures: the
 * holes they left were the start of the next step's peak. What cutover's
 * listing cost comes back into *PAGES. Returns 0 or -1. */
static int
full_listing(struct bench *b, bool ours, struct mgmt_pages *pages)
{
	char path[256], err[1024];
	json_t *l = NULL;
	int rc, fd[2], status;
	pid_t pid;
	ssize_t got;

	memset(pages, 0, sizeof(*pages));
	if (pipe(fd) != 0 || (pid = fork()) < 0) {
		perror("bench_scale_old: a child for the listing");
		return -1;
	}
	if (pid == 0) {
		close(fd[0]);
		snprintf(path, sizeof(path), "/api/queues/%s?columns=" OLD_WATCH_COLUMNS,
		    bench_vhost_enc(b->c.mgmt));
		rc = ours ? mgmt_list_queues_all(b->c.mgmt, OLD_WATCH_COLUMNS, &l, err,
		    sizeof(err)) : mgmt_request(b->c.mgmt, "GET", path, NULL, &l, NULL,
		    err, sizeof(err));
		if (rc != 0)
			fprintf(stderr, "bench_scale_old: %s: %s\n", ours ?
			    "cutover's listing" : "the broker's listing", err);
		*pages = mgmt_last_pages(b->c.mgmt);
		if (write(fd[1], pages, sizeof(*pages)) != (ssize_t)sizeof(*pages))
			rc = -1;
		_exit(rc != 0 ? 1 : 0);
	}
	close(fd[1]);
	got = read(fd[0], pages, sizeof(*pages));
	close(fd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0 || got != (ssize_t)sizeof(*pages))
		return -1;
	return 0;
}

/* The node's memory in MB (GET /api/nodes: mem_used), -1 unknown. */
static double
broker_mem_mb(struct bench *b)
{
	json_t *l = NULL;
	char err[512];
	double mb = -1;

	if (mgmt_request(b->c.mgmt, "GET", "/api/nodes?columns=mem_used", NULL, &l, NULL,
	    err, sizeof(err)) == 0 && json_array_size(l) > 0)
		mb = (double)json_integer_value(json_object_get(json_array_get(l, 0),
		    "mem_used")) / (1024.0 * 1024.0);
	json_decref(l);
	return mb;
}

/* The node's CPU seconds beyond its idle rate since CPU0 (at T0), -1
 * unknown. */
static double
net_cpu(const struct bench *b, double cpu0, double t0)
{
	double cpu = bench_broker_cpu_s();

	if (cpu0 < 0 || cpu < 0 || b->idle_rate < 0)
		return -1;
	return cpu - cpu0 - b->idle_rate * (bench_mono_s() - t0);
}

/* Says step K of R as soon as it ends (a size of 100,000 old queues runs
 * for hours, and a step that fails leaves only what was said before):
 * its time, per queue, the broker's CPU over it (CPU < 0: unknown) and
 * this process's peak RSS in it. */
static void
step_said(const struct size_run *r, int k, double cpu)
{
	char cpus[48] = "broker CPU unknown", rss[80] = "", self[48] = "";

	if (cpu >= 0)
		snprintf(cpus, sizeof(cpus), "broker CPU %.3f s", cpu);
	if (r->rss[k] > 0)
		snprintf(rss, sizeof(rss), ", peak RSS %.1f MB (%.1f MB at its start)",
		    r->rss[k], r->rss0[k]);
	if (r->self[k] > 0)
		snprintf(self, sizeof(self), ", cutover CPU %.3f s", r->self[k]);
	printf("# %d old queues: %s: %.3f s, %.2f us/queue, %s%s%s\n", r->n,
	    step_names[k], r->s[k], 1e6 * r->s[k] / r->n, cpus, self, rss);
	fflush(stdout);
}

/* The watch as the engine runs it (engine_tick), measure_horizon's
 * result and the flip recorded before it: its first tick, then TICKS
 * light ones (the median counts), each with the broker's CPU; then one
 * paged listing alone and the broker's unpaginated one (which past about
 * 50,000 queues gets no answer: -1, not a failure), each in a child
 * process (full_listing). Returns 0 or -1. */
static int
run_watch(struct bench *b, struct size_run *r, int ticks)
{
	double t[TICKS_MAX], cpu[TICKS_MAX], self[TICKS_MAX], t0, c0, u0;
	struct mgmt_pages pages;
	const json_t *pass;
	json_t *state;
	char *text;

	/* Its result is stored (engine_run): only its end moves before the
	 * flip. */
	if (step_recorded(b, PLAN_STEP_MEASURE_HORIZON, NULL, b->flip_ms - 60000) != 0 ||
	    step_recorded(b, PLAN_STEP_FLIP, NULL, b->flip_ms) != 0)
		return -1;
	/* Not held through the ticks, as the engine does not hold it. */
	json_decref(b->measured);
	b->measured = NULL;
	rss_mark(r, BETWEEN_STEPS);
	t0 = bench_mono_s();
	c0 = bench_broker_cpu_s();
	u0 = self_cpu_s();
	if (engine_tick(b, true) != 0)
		return -1;
	r->self[WATCH_FULL] = self_cpu_s() - u0;
	r->s[WATCH_FULL] = bench_mono_s() - t0;
	r->cpu_full = net_cpu(b, c0, t0);
	rss_mark(r, WATCH_FULL);
	step_said(r, WATCH_FULL, r->cpu_full);
	for (int k = 0; k < ticks; k++) {
		t0 = bench_mono_s();
		c0 = bench_broker_cpu_s();
		u0 = self_cpu_s();
		if (engine_tick(b, false) != 0)
			return -1;
		self[k] = self_cpu_s() - u0;
		t[k] = bench_mono_s() - t0;
		cpu[k] = net_cpu(b, c0, t0);
	}
	r->self[WATCH_LIGHT] = bench_median(self, ticks);
	r->s[WATCH_LIGHT] = bench_median(t, ticks);
	rss_mark(r, WATCH_LIGHT);
	/* A light tick costs the node less than its own idle work's noise
	 * (the rate subtracted, read over seconds): a net below zero is
	 * that noise, counted as none. Unknown only when the full pass's is
	 * (the node's CPU or its idle rate could not be read). */
	r->cpu_light = r->cpu_full < 0 ? -1 : bench_median(cpu, ticks);
	if (r->cpu_light < 0 && r->cpu_full >= 0)
		r->cpu_light = 0;
	step_said(r, WATCH_LIGHT, r->cpu_light);
	/* The steps after run as the bench hands them their inputs. */
	if ((b->measured = step_result(b, PLAN_STEP_MEASURE_HORIZON)) == NULL)
		return -1;
	b->c.measured = b->measured;
	b->c.flip_ms = b->flip_ms;
	/* Its passes, read and let go: without the rows (the counters of
	 * every queue), and not held through the steps after. */
	if ((text = step_text(b, PLAN_STEP_WATCH, true)) == NULL ||
	    (state = json_loads(text, 0, NULL)) == NULL) {
		fprintf(stderr, "bench_scale_old: the watch's result does not read back\n");
		free(text);
		return -1;
	}
	free(text);
	pass = json_object_get(json_object_get(state, "old"), "pass");
	r->full_passes = (long long)json_integer_value(json_object_get(pass, "full"));
	r->light_passes = (long long)json_integer_value(json_object_get(pass, "light"));
	snprintf(r->full_why, sizeof(r->full_why), "%s",
	    json_is_string(json_object_get(pass, "why")) ?
	    json_string_value(json_object_get(pass, "why")) : "?");
	json_decref(state);
	t0 = bench_mono_s();
	c0 = bench_broker_cpu_s();
	if (full_listing(b, true, &r->pages) != 0)
		return -1;
	r->s[OURS] = bench_mono_s() - t0;
	r->cpu_ours = net_cpu(b, c0, t0);
	step_said(r, OURS, r->cpu_ours);
	t0 = bench_mono_s();
	c0 = bench_broker_cpu_s();
	if (full_listing(b, false, &pages) != 0) {
		r->s[LISTING] = -1;
		r->cpu_listing = -1;
		return 0;
	}
	r->s[LISTING] = bench_mono_s() - t0;
	r->cpu_listing = net_cpu(b, c0, t0);
	step_said(r, LISTING, r->cpu_listing);
	return 0;
}

/* Runs STEP into *OUT, timed into R->s[K] (K < 0: not kept) with its
 * peak RSS. Returns 0 or -1 (said why). */
static int
timed_step(struct bench *b, step_fn step, const char *what, json_t **out,
    struct size_run *r, int k)
{
	char err[4096];
	double t0 = bench_mono_s(), c0 = bench_broker_cpu_s(), u0 = self_cpu_s();

	rss_mark(r, BETWEEN_STEPS);
	b->c.state = NULL;
	b->c.again = false;
	if (step(&b->c, out, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_scale_old: %s: %.2000s\n", what, err);
		return -1;
	}
	if (k >= 0) {
		r->s[k] = bench_mono_s() - t0;
		r->self[k] = self_cpu_s() - u0;
	}
	rss_mark(r, k);
	if (k >= 0)
		step_said(r, k, net_cpu(b, c0, t0));
	return 0;
}

/* The plan's step of KIND run as the engine runs it (engine_run: PREPARE,
 * STEP, its last result STATE, its text, NULL: none; recorded with
 * STATUS), timed as timed_step times a step into R's step K, its result
 * into *OUT. */
static int
timed_run(struct bench *b, enum plan_step_kind kind, step_prepare_fn prepare,
    step_fn step, const char *state, const char *status, json_t **out,
    struct size_run *r, int k)
{
	double t0 = bench_mono_s(), c0 = bench_broker_cpu_s(), u0 = self_cpu_s(), cpu;
	bool again = false;

	rss_mark(r, BETWEEN_STEPS);
	if (engine_run(b, kind, prepare, step, state, status, out, &again) != 0)
		return -1;
	r->s[k] = bench_mono_s() - t0;
	r->self[k] = self_cpu_s() - u0;
	rss_mark(r, k);
	cpu = net_cpu(b, c0, t0);
	step_said(r, k, cpu);
	if (k == REMOVE_AGAIN) {
		r->wait_cpu = cpu;
		r->wait_next = (double)json_integer_value(json_object_get(*out,
		    "again_after_ms")) / 1000;
		printf("# %d old queues: remove_old's next run while queues wait: %.1f s "
		    "after it\n", r->n, r->wait_next);
	}
	return 0;
}

/* Prints what the engine reads of B's plan at a turn with work to do
 * (a watch tick): before, each step up to the watch with its result
 * (measure_horizon's a row per old queue: a text of megabytes); now, the
 * step it is at, without its result. For the record, not a floor. */
static void
tick_read(struct bench *b, int n)
{
	struct store_step st = { 0 };
	char err[512];
	int watch = plan_find_step(b->p, PLAN_STEP_WATCH);
	double t0 = bench_mono_s(), every, current;

	/* Ten times each, the mean. */
	for (int k = 0; k < 10; k++)
		for (int i = 0; i <= watch; i++) {
			(void)store_step_get(b->s, b->c.plan_id, i, &st, err, sizeof(err));
			store_step_clear(&st);
		}
	every = (bench_mono_s() - t0) / 10;
	t0 = bench_mono_s();
	for (int k = 0; k < 10; k++) {
		(void)store_step_current(b->s, b->c.plan_id, &st, err, sizeof(err));
		store_step_clear(&st);
	}
	current = (bench_mono_s() - t0) / 10;
	printf("# %d old queues: the engine's read of the plan at a tick: %.2f ms with "
	    "each step's result up to the watch (before), %.3f ms the current step "
	    "alone (now)\n", n, 1e3 * every, 1e3 * current);
}

/* The node's idle CPU rate over SECONDS, into B. */
static void
idle_rate(struct bench *b, double seconds)
{
	double c0 = bench_broker_cpu_s(), t0 = bench_mono_s(), c1;

	struct timespec ts = { .tv_sec = (time_t)seconds,
	    .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };

	nanosleep(&ts, NULL);
	c1 = bench_broker_cpu_s();
	b->idle_rate = c0 < 0 || c1 < 0 ? -1 : (c1 - c0) / (bench_mono_s() - t0);
}

/* One size: N old queues declared, the steps timed, everything removed.
 * Returns 0 or -1. */
static int
one_size(struct size_run *r, int ticks, int flag_port)
{
	struct bench b;
	json_t *lad = NULL, *waited = NULL, *again = NULL;
	char *waited_text = NULL;
	long long early = 0;
	int rc = -1, n = r->n;
	long long found;

	memset(&b, 0, sizeof(b));
	rss_mark(r, BETWEEN_STEPS);
	if (bench_open(&b, flag_port) != 0 || create_old(r) != 0)
		goto done;
	r->broker_mb = broker_mem_mb(&b);
	/* In the plan's order: the ladder after the measure, which refuses
	 * a ladder that exists beside a flag that reads on. */
	if (timed_run(&b, PLAN_STEP_MEASURE_HORIZON, NULL, step_measure_horizon, NULL,
	    "succeeded", &b.measured, r, MEASURE) != 0 ||
	    timed_step(&b, step_declare_ladder, "declare_ladder", &lad, r, -1) != 0)
		goto done;
	json_decref(lad);
	lad = NULL;
	found = (long long)json_integer_value(json_object_get(json_object_get(b.measured,
	    "summary"), "queues"));
	if (found != n) {
		fprintf(stderr, "bench_scale_old: measure_horizon found %lld old queues, "
		    "not %d\n", found, n);
		goto done;
	}
	idle_rate(&b, n >= 10000 ? 5 : 1);
	/* The node's own work with no step running (its statistics of
	 * every queue): what every step's broker figure sits on. */
	if (b.idle_rate >= 0)
		printf("# %d old queues: the node's CPU while no step runs: %.2f CPUs\n",
		    n, b.idle_rate);
	if (run_watch(&b, r, ticks) != 0)
		goto done;
	tick_read(&b, n);
	if (r->move && timed_step(&b, step_move_old, "move_old", &b.moved, r, MOVE) != 0)
		goto done;
	r->moved = (long long)json_integer_value(json_object_get(json_object_get(b.moved,
	    "counts"), "moved"));
	/* remove_old as the engine runs it after the watch, its inputs read
	 * from the store (none held here), the watch's last listing its last
	 * sample. First with the last entry into the old path (and the flip)
	 * now: every queue waits for its deadline (but the shortest TTLs,
	 * which may come due by the second run); then again with that
	 * result as its state, as the engine runs it while queues wait. */
	idle_rate(&b, 1.5);
	if (watch_ended(&b) != 0 || (b.moved != NULL &&
	    step_recorded(&b, PLAN_STEP_MOVE_OLD, b.moved, old_now_ms(NULL)) != 0))
		goto done;
	b.c.measured = b.c.moved = b.c.watched = NULL;
	json_decref(b.measured);
	b.measured = NULL;
	if (last_entry_at(&b, old_now_ms(NULL)) != 0 ||
	    timed_run(&b, PLAN_STEP_REMOVE_OLD, step_remove_old_prepare,
	    step_remove_old, NULL, "running", &waited, r, REMOVE_WAIT) != 0 ||
	    waiting_or_removed(waited, n, &early) != 0)
		goto done;
	/* Its result as the engine reads it back from the store as its
	 * state (its entries left in their rows), the tree gone. */
	if ((waited_text = step_text(&b, PLAN_STEP_REMOVE_OLD, true)) == NULL)
		goto done;
	json_decref(waited);
	waited = NULL;
	if (timed_run(&b, PLAN_STEP_REMOVE_OLD, step_remove_old_prepare,
	    step_remove_old, waited_text, "running", &again, r, REMOVE_AGAIN) != 0 ||
	    waiting_or_removed(again, n, &early) != 0)
		goto done;
	free(waited_text);
	json_decref(again);
	waited_text = NULL;
	again = NULL;
	/* Then begun anew with the last entry two days ago, so that every
	 * queue is past its deadline (move_old's horizon, its pass's start +
	 * the allowance, 1 s, once it is over). */
	if (last_entry_at(&b, old_now_ms(NULL) - 2 * DAY_MS) != 0)
		goto done;
	if (timed_run(&b, PLAN_STEP_REMOVE_OLD, step_remove_old_prepare,
	    step_remove_old, NULL, "succeeded", &b.removed, r, REMOVE) != 0)
		goto done;
	/* Those removed while the others waited are gone to this run. */
	r->removed = early + (long long)json_integer_value(json_object_get(
	    json_object_get(b.removed, "counts"), "removed"));
	if (r->removed != n || r->moved != held(r)) {
		char *mj = json_dumps(json_object_get(b.moved, "counts"), JSON_COMPACT),
		    *rj = json_dumps(json_object_get(b.removed, "counts"), JSON_COMPACT);

		fprintf(stderr, "bench_scale_old: %d old queues: move_old moved %lld "
		    "messages (%s), remove_old removed %lld queues (%s)\n", n, r->moved,
		    mj ? mj : "?", r->removed, rj ? rj : "?");
		free(mj);
		free(rj);
		goto done;
	}
	rss_mark(r, BETWEEN_STEPS);
	rc = 0;
done:
	json_decref(lad);
	json_decref(waited);
	json_decref(again);
	free(waited_text);
	bench_close(&b, n);
	return rc;
}

/* Prints the figures of R at its size. */
static void
print_size(const struct size_run *r)
{
	printf("%7d old queues (broker %.0f MB, the steps' peak RSS %.1f MB; the watch: %lld "
	    "full, %lld light passes, the last full one for %s):\n", r->n, r->broker_mb,
	    r->rss_mb, r->full_passes, r->light_passes, r->full_why);
	for (int k = 0; k < NSTEPS; k++) {
		if (k == MOVE && !r->move) {
			printf("  %-46s not run (CUTOVER_BENCH_SCALE_MOVE_MAX)\n", step_names[k]);
			continue;
		}
		if (r->s[k] < 0) {
			printf("  %-46s no answer\n", step_names[k]);
			continue;
		}
		printf("  %-46s %8.3f s  %8.2f us/queue", step_names[k], r->s[k],
		    1e6 * r->s[k] / r->n);
		/* The listings are the bench's, not a step's. */
		if (k == OURS)
			printf("  %zu requests (%zu gone)\n", r->pages.requests,
			    r->pages.gone);
		else if (k == LISTING)
			printf("\n");
		else
			printf("  cutover CPU %7.3f s  peak RSS %6.1f MB\n", r->self[k],
			    r->rss[k]);
	}
	printf("  broker CPU (net of idle): full tick %.3f s, light tick %.3f s, "
	    "listing %.3f s, cutover's listing %.3f s\n", r->cpu_full, r->cpu_light,
	    r->cpu_listing, r->cpu_ours);
	fflush(stdout);
}

/* The BENCH lines of the NRUNS sizes of RUNS, the smallest against the
 * largest (for move_old, the largest that ran it). Returns 1 when every
 * floor is met, else 0. */
static int
print_lines(const struct size_run *runs, int nruns)
{
	const struct size_run *lo = &runs[0], *hi = &runs[nruns - 1];
	static const int per_queue[] = { MEASURE, WATCH_FULL, WATCH_LIGHT, MOVE,
	    REMOVE_WAIT, REMOVE_AGAIN, REMOVE, LISTING, OURS };
	char m[192], a[160], b[160];
	int ok = 1;
	double tick, ratio, peer;

	for (size_t i = 0; i < sizeof(per_queue) / sizeof(*per_queue); i++) {
		int k = per_queue[i], h = nruns - 1;
		double ph, pl = lo->s[k] / lo->n;

		while (k == MOVE && h > 0 && !runs[h].move)
			h--;
		hi = &runs[h];
		ph = hi->s[k] / hi->n;
		if (h == 0)	/* move_old ran at one size only */
			continue;
		if (hi->s[k] < 0 || lo->s[k] < 0) {
			snprintf(m, sizeof(m), "%s, %d old queues, per queue", step_names[k],
			    hi->n);
			bench_line(m, "no answer", "-", -1, "-");
			continue;
		}
		snprintf(m, sizeof(m), "%s, %d old queues, per queue", step_names[k], hi->n);
		snprintf(a, sizeof(a), "%.2f us/queue (%.2f s)", 1e6 * ph, hi->s[k]);
		snprintf(b, sizeof(b), "%d old queues: %.2f us/queue", lo->n, 1e6 * pl);
		/* The listings have no floor: they are what the steps stand on. */
		ok &= bench_line(m, a, b, ph / pl, k == LISTING || k == OURS ? "-" :
		    "<= 1.2");
	}
	hi = &runs[nruns - 1];
	/* The steady state: a full pass every FULL_EVERY ticks, light ones
	 * between. */
	tick = hi->cpu_full < 0 || hi->cpu_light < 0 ? -1 :
	    (hi->cpu_full + (FULL_EVERY - 1) * (hi->cpu_light > 0 ? hi->cpu_light : 0)) /
	    FULL_EVERY;
	/* Against the broker's one listing; where it got no answer, against
	 * the paged one (named). */
	peer = hi->cpu_listing > 0 ? hi->cpu_listing : hi->cpu_ours;
	ratio = tick < 0 || peer <= 0 ? -1 : tick / peer;
	snprintf(m, sizeof(m), "watch broker CPU per tick, %d old queues", hi->n);
	snprintf(a, sizeof(a), "%.3f s (light %.3f, full %.3f every %d)", tick,
	    hi->cpu_light, hi->cpu_full, FULL_EVERY);
	snprintf(b, sizeof(b), "one full listing%s %.3f s", hi->cpu_listing > 0 ? "" :
	    " (cutover's: the broker's one got no answer)", peer);
	ok &= bench_line(m, a, b, ratio, "<= 0.1");
	/* While queues wait, the broker's CPU per second over one run and the
	 * pause the engine then makes until the next. */
	snprintf(m, sizeof(m), "remove_old's broker CPU while queues wait, %d old "
	    "queues", hi->n);
	snprintf(a, sizeof(a), "%.3f CPUs (%.2f s a run, the next %.1f s after it)",
	    hi->wait_cpu < 0 ? -1 : hi->wait_cpu / (hi->s[REMOVE_AGAIN] + hi->wait_next),
	    hi->wait_cpu, hi->wait_next);
	ok &= bench_line(m, a, "one CPU", hi->wait_cpu < 0 ? -1 :
	    hi->wait_cpu / (hi->s[REMOVE_AGAIN] + hi->wait_next), "<= 0.1");
	snprintf(m, sizeof(m), "peak RSS of the steps' process, %d old queues", hi->n);
	snprintf(a, sizeof(a), "%.1f MB", hi->rss_mb);
	snprintf(b, sizeof(b), "limit %.0f MB", RSS_LIMIT_MB);
	ok &= bench_line(m, a, b, hi->rss_mb / RSS_LIMIT_MB, "<= 1.0");
	snprintf(m, sizeof(m), "broker memory with %d old queues", hi->n);
	snprintf(a, sizeof(a), "%.0f MB", hi->broker_mb);
	snprintf(b, sizeof(b), "%d old queues: %.0f MB", lo->n, lo->broker_mb);
	bench_line(m, a, b, lo->broker_mb > 0 ? hi->broker_mb / lo->broker_mb : -1, "-");
	return ok;
}

int
main(void)
{
	const char *sizes_env = getenv("CUTOVER_BENCH_SCALE_OLD_SIZES");
	const char *ticks_env = getenv("CUTOVER_BENCH_SCALE_TICKS");
	const char *move_max = getenv("CUTOVER_BENCH_SCALE_MOVE_MAX");
	struct size_run runs[SIZES_MAX];
	struct flag_server flag;
	char buf[256], *tok, *save = NULL;
	int nsizes = 0, ticks = ticks_env != NULL ? atoi(ticks_env) : 5, rc = 2;

	/* malloc as serve sets it: the steps' RSS is serve's. */
	heap_bound_maps();
	memset(runs, 0, sizeof(runs));
	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL) {
		fprintf(stderr, "bench_scale_old: run it through bench/scale (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER and _PASSWORD)\n");
		return 2;
	}
	snprintf(buf, sizeof(buf), "%s", sizes_env ? sizes_env : "10000 100000");
	for (tok = strtok_r(buf, " ,", &save); tok != NULL && nsizes < SIZES_MAX;
	    tok = strtok_r(NULL, " ,", &save)) {
		runs[nsizes].n = atoi(tok);
		runs[nsizes].move = move_max == NULL || runs[nsizes].n <= atoi(move_max);
		nsizes++;
	}
	if (nsizes < 2 || ticks < 1 || ticks > TICKS_MAX) {
		fprintf(stderr, "bench_scale_old: CUTOVER_BENCH_SCALE_OLD_SIZES needs 2 to "
		    "%d sizes, CUTOVER_BENCH_SCALE_TICKS 1 to %d\n", SIZES_MAX, TICKS_MAX);
		return 2;
	}
	if (flag_start(&flag) != 0)
		return 2;
	for (int s = 0; s < nsizes; s++) {
		if (runs[s].n < 1 || one_size(&runs[s], ticks, flag.port) != 0)
			goto done;
		print_size(&runs[s]);
	}
	rc = print_lines(runs, nsizes) ? 0 : 1;
done:
	flag_stop(&flag);
	return rc;
}
