/* bench_watch_samples: the watch's samples over a 12-day watch at a 10 s
 * interval (the database must stay under 100 MB). Writes, into a
 * real SQLite file through the store, what the watch writes for a 28-level
 * ladder each tick — old.depth, old.nonempty, old.publishes,
 * ladder.depth x 28 (label = level), ladder.publishes, parking.depth, and
 * a probe.lateness_ms every minute: 34 series — with the watch's
 * downsampling policy applied as the watch applies it
 * (step_watch_downsample, inside each tick's transaction, on the watch's
 * clock), and in the same run a peer that keeps every sample. Prints both
 * file sizes, the rows, and the ratio; exits 1 when the policy's file is
 * not under 100 MB.
 *
 * Beside the samples, each transaction writes what the engine keeps of
 * the plan at that scale: measure_horizon's result with
 * --old-queues queues (10,000) once, and the watch step's state at every
 * commit, carrying a last reading of every old queue (as the tick that
 * ends the watch writes it: an upper bound for the ticks before), so
 * the file holds the plan's own rows too, not only the samples. With
 * --keep the policy's file stays (DIR/policy.db, the plan marked
 * succeeded, its YAML a valid plan) for bench/watch_db to serve.
 *
 * The peer may be stopped early (--peer-days D < --days): its size is then
 * extrapolated linearly to the full watch (it keeps every row, so it grows
 * linearly) and printed as such. Ticks are written one transaction per
 * tick, like the watch; the store syncs every commit (synchronous=FULL),
 * so --batch N groups N ticks per transaction to save time: the rows and
 * the policy's runs are the same, only the number of commits differs.
 *
 *   bench_watch_samples [--days 12] [--peer-days 12] [--batch 1] [--dir DIR]
 *       [--old-queues 10000] [--keep]
 */
#include <sys/stat.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "bench_util.h"
#include "clock.h"
#include "step.h"
#include "store.h"

#define LEVELS		28
#define INTERVAL_MS	10000
#define PROBE_EVERY_MS	60000
#define LIMIT_BYTES	(100.0 * 1000 * 1000)
#define T0_MS		INT64_C(1795000000000)
#define DAY_MS		(24 * 60 * 60 * 1000)

#define WATCH_STEP	5	/* the watch's index among PLAN_STEPS */

static const char *const plan_steps[] = {
	"measure_horizon", "declare_ladder", "verify_ladder", "canary", "flip", "watch",
	"remove_old"
};

/* The plan stored: valid, so that serve shows it as it would a real one. */
static const char plan_yaml[] =
	"name: bench-watch\n"
	"broker:\n"
	"  amqp: amqp://127.0.0.1:1/%2f\n"
	"  management: http://127.0.0.1:1\n"
	"  username: guest\n"
	"  password: env:BENCH_PASSWORD\n"
	"old:\n"
	"  queues: { match: '^bench\\.delay\\.[0-9]+ms$' }\n"
	"ladder: { naming: kombu, queue_type: quorum, destinations: [bench.dest] }\n"
	"flag:\n"
	"  kind: http\n"
	"  on: { method: PUT, url: 'http://127.0.0.1:1/flag', body: '1' }\n"
	"  off: { method: PUT, url: 'http://127.0.0.1:1/flag', body: '0' }\n"
	"  read: { url: 'http://127.0.0.1:1/flag', pointer: /on, on: true, off: false }\n"
	"watch: { interval: 10s, allowance: 30s, probe_every: 1m }\n"
	"steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, watch,\n"
	"        remove_old]\n";

struct run {
	const char *label;
	bool downsample;
	char path[512];
	int64_t ticks, rows_written, rows_removed;
	double seconds;
	long long bytes;
};

/* A small deterministic generator, so both runs write the same values. */
static uint64_t
next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Writes tick I's samples as the watch does, plausible values: the old
 * path draining over two days, level depths wandering, publishes
 * growing, parking empty, a probe lateness of a few ms every minute. */
static int
write_tick(struct store *s, int64_t plan_id, int64_t i, uint64_t *rnd,
    double *ladder_pub, int64_t *rows, char *err, size_t errlen)
{
	int64_t ts = T0_MS + i * INTERVAL_MS, left = 2 * DAY_MS / INTERVAL_MS - i;
	double old = left > 0 ? (double)(left * 3) : 0;
	char label[8];
	int n = 0;

	if (store_sample_insert(s, plan_id, ts, "old.depth", "", old, err, errlen) != 0 ||
	    store_sample_insert(s, plan_id, ts, "old.nonempty", "",
	    left > 0 ? (double)(left / 20 + 1) : 0, err, errlen) != 0 ||
	    store_sample_insert(s, plan_id, ts, "old.publishes", "", 1234567, err,
	    errlen) != 0)
		return -1;
	n += 3;
	for (int k = 0; k < LEVELS; k++) {
		snprintf(label, sizeof(label), "%d", k);
		if (store_sample_insert(s, plan_id, ts, "ladder.depth", label,
		    (double)(next_rand(rnd) % (k < 12 ? 4000 : 60)), err, errlen) != 0)
			return -1;
		n++;
	}
	*ladder_pub += (double)(next_rand(rnd) % 500);
	if (store_sample_insert(s, plan_id, ts, "ladder.publishes", "", *ladder_pub, err,
	    errlen) != 0 || store_sample_insert(s, plan_id, ts, "parking.depth", "", 0,
	    err, errlen) != 0)
		return -1;
	n += 2;
	if (i % (PROBE_EVERY_MS / INTERVAL_MS) == 0) {
		if (store_sample_insert(s, plan_id, ts, "probe.lateness_ms", "",
		    (double)(3 + next_rand(rnd) % 40), err, errlen) != 0)
			return -1;
		n++;
	}
	*rows += n;
	return 0;
}

/* measure_horizon's result for NQ old queues, in the step's shape, and
 * the watch's state with a last reading of each, as JSON text (the caller
 * frees both). Returns 0 or -1. */
static int
plan_rows(int nq, char **measured, char **state)
{
	json_t *mq = json_array(), *last = json_array(), *m, *w;
	char name[64];

	for (int i = 0; i < nq; i++) {
		snprintf(name, sizeof(name), "bench.delay.%dms", 1000 + 7 * i);
		json_array_append_new(mq, json_pack("{s:s,s:s,s:i,s:s,s:n,s:i,s:i,s:b,"
		    "s:n,s:n}", "name", name, "type", "classic", "ttl_ms", 1000 + 7 * i,
		    "ttl_source", "argument", "expires_ms", "messages", i % 3,
		    "consumers", 0, "durable", 1, "policy", "note"));
		json_array_append_new(last, json_pack("{s:s,s:i,s:i}", "name", name,
		    "publish", 1000 + i, "messages", 0));
	}
	m = json_pack("{s:o,s:{s:i,s:I,s:s}}", "queues", mq, "summary", "queues", nq,
	    "max_ttl_ms", (json_int_t)(1000 + 7 * (nq - 1)), "max_ttl_queue", name);
	w = json_pack("{s:i,s:I,s:{s:s,s:i,s:i},s:{s:I,s:o}}", "version", 1, "ticks",
	    (json_int_t)0, "summary", "status", "watching", "old_depth", 0,
	    "old_queues", nq, "old_last", "at_ms", (json_int_t)T0_MS, "queues", last);
	*measured = m ? json_dumps(m, JSON_COMPACT) : NULL;
	*state = w ? json_dumps(w, JSON_COMPACT) : NULL;
	json_decref(m);
	json_decref(w);
	return *measured != NULL && *state != NULL ? 0 : -1;
}

static long long
file_bytes(const char *path)
{
	struct stat st;
	char p[600];
	long long total = 0;
	static const char *const ext[] = { "", "-wal", "-shm" };

	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", path, ext[i]);
		if (stat(p, &st) == 0)
			total += (long long)st.st_size;
	}
	return total;
}

/* Inserts the plan (its YAML, its steps, measure_horizon's result) into
 * S. Returns 0 and its id in *ID, or -1 with ERR. */
static int
plan_insert(struct store *s, const char *measured, int64_t *id, char *err,
    size_t errlen)
{
	if (store_plan_insert(s, "bench-watch", plan_yaml, strlen(plan_yaml), T0_MS, id,
	    err, errlen) != 0)
		return -1;
	for (int k = 0; k < (int)(sizeof(plan_steps) / sizeof(plan_steps[0])); k++)
		if (store_step_insert(s, *id, k, plan_steps[k], 0, err, errlen) != 0 ||
		    (k < WATCH_STEP && store_step_update(s, *id, k, "succeeded", T0_MS,
		    T0_MS, k == 0 ? measured : "{}", NULL, err, errlen) != 0))
			return -1;
	return store_step_update(s, *id, WATCH_STEP, "running", T0_MS, 0, NULL, NULL, err,
	    errlen);
}

/* Runs one watch of TICKS ticks into R->path, writing STATE as the
 * watch's state at each commit (and MEASURED as measure_horizon's
 * result). Returns 0 or -1. */
static int
run(struct run *r, int64_t ticks, int batch, const char *measured, const char *state)
{
	struct store *s = NULL;
	char err[512];
	uint64_t rnd = 0x9e3779b97f4a7c15ULL;
	double ladder_pub = 0, t0 = bench_mono_s();
	int64_t plan_id, ds_last = 0, removed;
	int rc = -1;

	unlink(r->path);
	if (store_open(r->path, &s, err, sizeof(err)) != 0 ||
	    plan_insert(s, measured, &plan_id, err, sizeof(err)) != 0)
		goto done;
	for (int64_t i = 0; i < ticks; i++) {
		if (i % batch == 0 && store_begin(s, err, sizeof(err)) != 0)
			goto done;
		if (write_tick(s, plan_id, i, &rnd, &ladder_pub, &r->rows_written, err,
		    sizeof(err)) != 0)
			goto done;
		if (r->downsample) {
			removed = step_watch_downsample(s, plan_id, T0_MS + i * INTERVAL_MS,
			    &ds_last, err, sizeof(err));
			if (removed < 0)
				goto done;
			r->rows_removed += removed;
		}
		if ((i + 1) % batch == 0 || i + 1 == ticks) {
			if (store_step_update(s, plan_id, WATCH_STEP, NULL, 0, 0, state, NULL,
			    err, sizeof(err)) != 0 || store_commit(s, err, sizeof(err)) != 0)
				goto done;
		}
		r->ticks = i + 1;
		if ((i + 1) % (DAY_MS / INTERVAL_MS) == 0)
			fprintf(stderr, "# %s: day %" PRId64 " written, %.0f s\n", r->label,
			    (i + 1) / (DAY_MS / INTERVAL_MS), bench_mono_s() - t0);
	}
	/* Finished, so that a serve started on the file leaves it be. */
	if (store_step_update(s, plan_id, WATCH_STEP, "succeeded", 0, T0_MS + ticks *
	    INTERVAL_MS, NULL, NULL, err, sizeof(err)) != 0 ||
	    store_plan_set_status(s, plan_id, "succeeded", err, sizeof(err)) != 0)
		goto done;
	rc = 0;
done:
	if (rc != 0)
		fprintf(stderr, "bench_watch_samples: %s: %s\n", r->label, err);
	store_close(s);	/* checkpoints the WAL into the file */
	r->seconds = bench_mono_s() - t0;
	r->bytes = file_bytes(r->path);
	return rc;
}

static void
usage(void)
{
	fprintf(stderr, "usage: bench_watch_samples [--days N] [--peer-days N] "
	    "[--batch N] [--dir DIR] [--old-queues N] [--keep]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	struct run pol = { "policy", true, "", 0, 0, 0, 0, 0 };
	struct run peer = { "peer", false, "", 0, 0, 0, 0, 0 };
	char dir[256] = "", tmpl[] = "/tmp/bench-watch.XXXXXX";
	double days = 12, peer_days = -1, peer12, mb;
	int batch = 1, rc = 1, nq = 10000;
	bool keep = false;
	char *measured = NULL, *state = NULL;
	int64_t ticks, peer_ticks;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--keep") == 0) {
			keep = true;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--days") == 0)
			days = atof(argv[++i]);
		else if (strcmp(argv[i], "--peer-days") == 0)
			peer_days = atof(argv[++i]);
		else if (strcmp(argv[i], "--batch") == 0)
			batch = atoi(argv[++i]);
		else if (strcmp(argv[i], "--old-queues") == 0)
			nq = atoi(argv[++i]);
		else if (strcmp(argv[i], "--dir") == 0)
			snprintf(dir, sizeof(dir), "%s", argv[++i]);
		else
			usage();
	}
	if (peer_days < 0 || peer_days > days)
		peer_days = days;
	if (days <= 0 || peer_days <= 0 || batch < 1 || nq < 1)
		usage();
	if (plan_rows(nq, &measured, &state) != 0) {
		fprintf(stderr, "bench_watch_samples: out of memory\n");
		return 1;
	}
	if (dir[0] == '\0') {
		if (mkdtemp(tmpl) == NULL) {
			perror("mkdtemp");
			return 1;
		}
		snprintf(dir, sizeof(dir), "%s", tmpl);
	}
	snprintf(pol.path, sizeof(pol.path), "%s/policy.db", dir);
	snprintf(peer.path, sizeof(peer.path), "%s/peer.db", dir);
	ticks = (int64_t)(days * DAY_MS / INTERVAL_MS);
	peer_ticks = (int64_t)(peer_days * DAY_MS / INTERVAL_MS);

	if (run(&pol, ticks, batch, measured, state) != 0 ||
	    run(&peer, peer_ticks, batch, measured, state) != 0)
		goto done;
	peer12 = (double)peer.bytes * (double)ticks / (double)peer_ticks;
	mb = (double)pol.bytes / 1e6;
	printf("watch samples: %.4g days at a %d s interval, %d levels, 34 series "
	    "(%" PRId64 " ticks, %d per transaction), %d old queues (the plan's rows: "
	    "%zu + %zu bytes)\n", days, INTERVAL_MS / 1000, LEVELS, ticks, batch, nq,
	    strlen(measured), strlen(state));
	printf("  policy (10 min buckets after 1 h, folded every 10 min): "
	    "%.1f MB, %" PRId64 " rows kept of %" PRId64 " written, %.0f s\n", mb,
	    pol.rows_written - pol.rows_removed, pol.rows_written, pol.seconds);
	if (peer_ticks == ticks)
		printf("  peer (every sample): %.1f MB, %" PRId64 " rows, %.0f s\n",
		    (double)peer.bytes / 1e6, peer.rows_written, peer.seconds);
	else
		printf("  peer (every sample): %.1f MB after %.4g days (%" PRId64 " rows, "
		    "%.0f s), stopped early; extrapolated linearly to %.4g days: %.1f MB\n",
		    (double)peer.bytes / 1e6, peer_days, peer.rows_written, peer.seconds,
		    days, peer12 / 1e6);
	printf("  ratio peer / policy: %.1fx; policy %s 100 MB\n",
	    peer12 / (double)pol.bytes, (double)pol.bytes < LIMIT_BYTES ? "under" :
	    "NOT under");
	printf("BENCH\tdatabase after %.4g days, %d old queues\t%.1f MB\tlimit 100 MB "
	    "(every sample kept: %.1f MB)\t%.2f\t<= 1.0\t%s\n", days, nq, mb,
	    peer12 / 1e6, (double)pol.bytes / LIMIT_BYTES,
	    (double)pol.bytes < LIMIT_BYTES ? "ok" : "MISSED");
	if (keep)
		printf("kept: %s\n", pol.path);
	rc = (double)pol.bytes < LIMIT_BYTES ? 0 : 1;
done:
	if (!keep)
		unlink(pol.path);
	unlink(peer.path);
	if (!keep && strcmp(dir, tmpl) == 0)
		rmdir(dir);
	free(measured);
	free(state);
	return rc;
}
