/* bench_watch_cost: the broker CPU the watch costs at 10,000 old queues.
 * Declares CUTOVER_BENCH_QUEUES classic old delay queues (TTLs spread
 * from 1 s to 24 h, as user input made them), a ladder, then measures the
 * broker's CPU time (/proc/PID/stat of the node) in four windows, one
 * tick every CUTOVER_BENCH_INTERVAL_MS:
 *   - idle: nothing but the node itself (the baseline, per second), just
 *     before and just after the watch;
 *   - the watch: step_watch each tick, as the engine runs it, for
 *     CUTOVER_BENCH_WATCH_SECONDS, after its first tick (its first look,
 *     a full pass, once per watch: shown apart);
 *   - today's listing: the request the watch made every tick before its
 *     light passes (every queue with statistics, the same columns), alone;
 *   - rabbitmqctl: the same listing by the broker's own CLI each tick
 *     (`list_queues name messages`, the peer).
 * Each window's CPU less the idle baseline, per tick. Prints them, the
 * watch's full and light passes, and the BENCH lines; exits 1 when the
 * watch costs more than 0.1 of today's listing per tick (a floor against
 * the listing alone: today's watch did that and more each tick).
 *
 * Environment (bench/watch_cost sets it): CUTOVER_BENCH_AMQP,
 * CUTOVER_BENCH_MGMT, CUTOVER_BENCH_USER, CUTOVER_BENCH_PASSWORD,
 * CUTOVER_BENCH_CTL, CUTOVER_BENCH_BROKER_PID, CUTOVER_BENCH_FLAG (the URL
 * of the plan's flag, a static {"enabled":true}: the watch reads it each
 * tick, and it is not the broker's work); optionally
 * CUTOVER_BENCH_QUEUES (10000), CUTOVER_BENCH_WATCH_SECONDS (600),
 * CUTOVER_BENCH_REF_SECONDS (the idle, today's and rabbitmqctl windows:
 * the watch's, at most 120), CUTOVER_BENCH_INTERVAL_MS (10000). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "clock.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"
#include "store.h"

#define FLOOR 0.1
#define DESTINATION "bench.destination"

/* What one window cost. */
struct window {
	const char *label;
	int ticks;
	double s;			/* wall-clock seconds */
	double cpu_s;			/* the broker's CPU seconds */
};

static double
broker_cpu(void)
{
	return bench_broker_cpu_s();
}

static void
sleep_until_mono(int64_t at)
{
	int64_t d = at - clock_mono_ms();
	struct timespec ts;

	if (d <= 0)
		return;
	ts.tv_sec = (time_t)(d / 1000);
	ts.tv_nsec = (long)(d % 1000) * 1000000;
	nanosleep(&ts, NULL);
}

/* One tick's work of a window; ARG is the bench. Returns 0 or -1. */
typedef int (*tick_fn)(void *arg);

/* Runs FN every INTERVAL_MS for SECONDS into W (FN NULL: idle). Returns
 * 0 or -1. */
static int
run_window(struct window *w, tick_fn fn, void *arg, int seconds, int interval_ms)
{
	int64_t t0 = clock_mono_ms(), end = t0 + (int64_t)seconds * 1000;
	double c0 = broker_cpu();

	w->ticks = 0;
	for (int64_t at = t0; at < end; at += interval_ms) {
		sleep_until_mono(at);
		if (fn != NULL && fn(arg) != 0)
			return -1;
		w->ticks++;
	}
	sleep_until_mono(end);
	w->s = (double)(clock_mono_ms() - t0) / 1000;
	w->cpu_s = broker_cpu() - c0;
	if (c0 < 0 || w->cpu_s < 0) {
		fprintf(stderr, "bench_watch_cost: cannot read the broker's CPU time "
		    "(CUTOVER_BENCH_BROKER_PID)\n");
		return -1;
	}
	printf("  %-28s %4d ticks in %6.1f s: broker CPU %7.2f s\n", w->label, w->ticks,
	    w->s, w->cpu_s);
	fflush(stdout);
	return 0;
}

/* W's broker CPU per tick beyond the idle rate of IDLE. */
static double
per_tick(const struct window *w, const struct window *idle)
{
	double net = w->cpu_s - idle->cpu_s / idle->s * w->s;

	return w->ticks > 0 ? net / w->ticks : 0;
}

struct bench {
	struct plan *p;
	struct step_ctx c;
	struct store *s;
	int64_t plan_id;
	json_t *measured, *state;
	char db[128], dir[64];
	int failed_ticks;
};

/* A tick of the watch, its state carried to the next as the engine does. */
static int
watch_tick(void *arg)
{
	struct bench *b = arg;

	return bench_watch_tick(&b->c, &b->state, "bench_watch_cost");
}

/* Today's listing: what the watch asked every tick before light passes. */
static int
listing_tick(void *arg)
{
	struct bench *b = arg;

	return bench_queue_listing(b->c.mgmt, "columns=" OLD_WATCH_COLUMNS
	    ",messages_dlx,head_message_timestamp", "watch_cost", "today's listing");
}

static int
ctl_tick(void *arg)
{
	char cmd[1200];

	(void)arg;
	snprintf(cmd, sizeof(cmd), "%s >/dev/null", getenv("CUTOVER_BENCH_CTL"));
	if (system(cmd) != 0) {
		fprintf(stderr, "bench_watch_cost: '%s' failed\n", getenv("CUTOVER_BENCH_CTL"));
		return -1;
	}
	return 0;
}

/* Declares N old queues bench.delay.<ttl>ms over one connection, TTLs
 * from 1 s to about 24 h. Returns 0 or -1. */
static int
create_old(struct bench *b, int n)
{
	struct topology_arg a[1];
	char name[128], err[512];
	int64_t t0 = clock_mono_ms();

	memset(a, 0, sizeof(a));
	snprintf(a[0].key, sizeof(a[0].key), "x-message-ttl");
	a[0].is_int = true;
	for (int i = 0; i < n; i++) {
		a[0].num = 1000 + (int64_t)i * (86400000 / n);
		snprintf(name, sizeof(name), "bench.delay.%lldms", (long long)a[0].num);
		if (broker_queue_declare(b->c.amqp, name, true, a, 1, err, sizeof(err)) != 0) {
			fprintf(stderr, "bench_watch_cost: %s\n", err);
			return -1;
		}
	}
	printf("declared %d classic old delay queues in %.1f s\n", n,
	    (double)(clock_mono_ms() - t0) / 1000);
	return 0;
}

/* The plan, its ladder, measure_horizon's result, the store. Returns 0
 * or -1. */
static int
bench_open(struct bench *b, int nq, int interval_ms)
{
	char yaml[2048], err[4096];
	json_t *r = NULL;
	int rc = -1;

	snprintf(yaml, sizeof(yaml),
	    BENCH_PLAN_HEAD("bench-watch-cost")
	    "ladder: { naming: cutover, prefix: bench, unit: 1s, levels: 20,\n"
	    "          queue_type: quorum, destinations: [" DESTINATION "],\n"
	    "          create_destinations: true }\n"
	    BENCH_PLAN_FLAG
	    "watch: { interval: %dms, allowance: 30s, probe_every: 1m }\n"
    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, watch]\n",
	    getenv("CUTOVER_BENCH_AMQP"), getenv("CUTOVER_BENCH_MGMT"),
	    getenv("CUTOVER_BENCH_USER"), getenv("CUTOVER_BENCH_FLAG"),
	    getenv("CUTOVER_BENCH_FLAG"), getenv("CUTOVER_BENCH_FLAG"), interval_ms);
	if (bench_plan_load("bench-watch-cost.yaml", yaml, &b->p) != 0)
		goto done;
	if (step_ctx_open(&b->c, b->p, err, sizeof(err)) != 0 ||
	    create_old(b, nq) != 0 ||
	    step_declare_ladder(&b->c, &r, err, sizeof(err)) != 0 ||
	    step_measure_horizon(&b->c, &b->measured, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_watch_cost: %s\n", err);
		goto done;
	}
	if (bench_store_open(b->p, yaml, b->dir, b->db, &b->s, &b->plan_id, err,
	    sizeof(err)) != 0) {
		fprintf(stderr, "bench_watch_cost: %s\n", err);
		goto done;
	}
	b->c.store = b->s;
	b->c.plan_id = b->plan_id;
	b->c.measured = b->measured;
	b->c.flip_ms = clock_now_ms() - 60000;
	rc = 0;
done:
	json_decref(r);
	return rc;
}

static void
bench_close(struct bench *b)
{
	char err[512];
	const json_t *mq = json_object_get(b->measured, "queues"), *e;
	size_t i;

	if (b->c.amqp != NULL) {
		json_array_foreach(mq, i, e)
			(void)broker_queue_delete(b->c.amqp, json_string_value(json_object_get(e,
			    "name")), 0, NULL, err, sizeof(err));
		bench_plan_objects_delete(b->c.amqp, b->p, false);
	}
	step_ctx_close(&b->c);
	bench_store_remove(b->s, b->dir, b->db);
	json_decref(b->measured);
	json_decref(b->state);
	plan_free(b->p);
}

int
main(void)
{
	struct bench b;
	struct window idle = { "idle (no watch)", 0, 0, 0 },
	    idle2 = { "idle again", 0, 0, 0 },
	    first = { "the watch's first tick", 0, 0, 0 },
	    watch = { "cutover's watch", 0, 0, 0 },
	    today = { "today's listing", 0, 0, 0 },
	    ctl = { "rabbitmqctl list_queues", 0, 0, 0 };
	int nq = atoi(bench_env("watch_cost", "CUTOVER_BENCH_QUEUES", "10000"));
	int ws = atoi(bench_env("watch_cost", "CUTOVER_BENCH_WATCH_SECONDS", "600"));
	int iv = atoi(bench_env("watch_cost", "CUTOVER_BENCH_INTERVAL_MS", "10000"));
	int rs = atoi(bench_env("watch_cost", "CUTOVER_BENCH_REF_SECONDS", "0"));
	const json_t *pass;
	double w, t, k, noise;
	int rc = 2;

	memset(&b, 0, sizeof(b));
	if (rs == 0)
		rs = ws < 120 ? ws : 120;
	if (getenv("CUTOVER_BENCH_AMQP") == NULL || getenv("CUTOVER_BENCH_MGMT") == NULL ||
	    getenv("CUTOVER_BENCH_USER") == NULL || getenv("CUTOVER_BENCH_PASSWORD") == NULL ||
	    getenv("CUTOVER_BENCH_CTL") == NULL || getenv("CUTOVER_BENCH_FLAG") == NULL ||
	    broker_cpu() < 0) {
		fprintf(stderr, "bench_watch_cost: run it through bench/watch_cost (it sets "
		    "CUTOVER_BENCH_AMQP, _MGMT, _USER, _PASSWORD, _CTL, _FLAG and _BROKER_PID)\n");
		return 2;
	}
	if (nq < 1 || ws < iv / 1000 || rs < iv / 1000 || iv < 100) {
		fprintf(stderr, "bench_watch_cost: bad CUTOVER_BENCH_QUEUES, _WATCH_SECONDS, "
		    "_REF_SECONDS or _INTERVAL_MS\n");
		return 2;
	}
	if (bench_open(&b, nq, iv) != 0)
		goto done;
	printf("\nbroker CPU, one tick every %d ms:\n", iv);
	/* The baseline: idle windows just before and just after the watch
	 * (after a heavy window the node spends a while collecting garbage). */
	if (run_window(&idle, NULL, &b, rs, iv) != 0 ||
	    run_window(&first, watch_tick, &b, (iv + 999) / 1000, iv) != 0 ||
	    run_window(&watch, watch_tick, &b, ws, iv) != 0 ||
	    run_window(&idle2, NULL, &b, rs, iv) != 0 ||
	    run_window(&today, listing_tick, &b, rs, iv) != 0 ||
	    run_window(&ctl, ctl_tick, &b, rs, iv) != 0)
		goto done;
	noise = (idle.cpu_s / idle.s - idle2.cpu_s / idle2.s) * iv / 2000;
	printf("  idle rates: %.3f and %.3f CPU s/s: +-%.3f s a tick of noise\n",
	    idle.cpu_s / idle.s, idle2.cpu_s / idle2.s, noise < 0 ? -noise : noise);
	idle.cpu_s += idle2.cpu_s;
	idle.s += idle2.s;
	w = per_tick(&watch, &idle);
	t = per_tick(&today, &idle);
	k = per_tick(&ctl, &idle);
	pass = json_object_get(json_object_get(b.state, "old"), "pass");
	printf("\nper tick, beyond the idle node's %.3f CPU s/s:\n", idle.cpu_s / idle.s);
	printf("  cutover's watch  %.3f s (%lld full passes, %lld light, of %lld old "
	    "queues)\n", w, (long long)json_integer_value(json_object_get(pass, "full")),
	    (long long)json_integer_value(json_object_get(pass, "light")),
	    (long long)json_integer_value(json_object_get(pass, "queues")));
	printf("  today's listing  %.3f s\n  rabbitmqctl      %.3f s\n", t, k);
	printf("  (the watch's first tick, once: %.3f s)\n", per_tick(&first, &idle));
	printf("  the watch saves %.3f s of broker CPU a tick: %.1f%% of a core\n", t - w,
	    100 * (t - w) / (iv / 1000.0));
	printf("BENCH\twatch broker CPU per tick, %d old queues\t%.3f s\ttoday's listing "
	    "%.3f s\t%.3f\t<= %.1f\t%s\n", nq, w, t, t > 0 ? w / t : 0, FLOOR,
	    t > 0 && w <= FLOOR * t ? "ok" : "MISSED");
	printf("BENCH\twatch broker CPU per tick against rabbitmqctl\t%.3f s\t"
	    "rabbitmqctl list_queues %.3f s\t%.3f\t-\t-\n", w, k, k > 0 ? w / k : 0);
	rc = t > 0 && w <= FLOOR * t ? 0 : 1;
done:
	bench_close(&b);
	return rc;
}
