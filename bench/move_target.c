/* bench_move_target: messages moved per second from one RabbitMQ node to
 * another by the move_old step of a plan with `target:` against
 * RabbitMQ's own shovel (a dynamic shovel of the rabbitmq_shovel plugin,
 * ack-mode on-confirm, deleting itself after the source queue's length)
 * moving the same number of stamped messages between the same two nodes,
 * in the same run. Prints one BENCH line; exits 1 when the floor (the
 * step at least 0.8 of the shovel's messages per second) is missed, 2 when
 * it cannot run.
 *
 * Environment: CUTOVER_BENCH_AMQP, CUTOVER_BENCH_MGMT (the source node,
 * where the shovel runs), CUTOVER_BENCH_TARGET_AMQP,
 * CUTOVER_BENCH_TARGET_MGMT (the target node), CUTOVER_BENCH_USER and
 * CUTOVER_BENCH_PASSWORD (both nodes'), CUTOVER_BENCH_MESSAGES (default
 * 10000), CUTOVER_BENCH_PREFETCH (move_old.prefetch, default the plan's
 * own default, 100). bench/move_target sets them, and, when it started
 * the nodes, CUTOVER_BENCH_SOURCE_PID and CUTOVER_BENCH_TARGET_PID (their
 * Erlang VMs): then each move's CPU time on both nodes and in this
 * process is printed beside the figures, for on two shared cores the
 * brokers' CPU sets the pace. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>

#include <jansson.h>

#include "bench_util.h"
#include "clock.h"
#include "ladder.h"
#include "plan.h"
#include "store.h"
#include "step.h"
#include "broker/mgmt.h"

/* The bench's environment variable NAME, or DFLT (bench_env). */
#define ENV(name, dflt) bench_env("move_target", name, dflt)
#define OLDQ "bench.mt.old.600s"
#define DEST "bench.mt.dest"
#define SHOVELQ "bench.mt.shovelled"
#define SHOVEL "bench-mt-shovel"
#define WAIT_MS (10 * 60 * 1000)	/* the longest the shovel is waited for */

/* What the bench holds: the plan, its step context (c.old_amqp and
 * c.old_mgmt the source node, c.amqp the target), the store move_old
 * persists its progress in, as under the engine. */
struct bench {
	struct plan *p;
	struct step_ctx c;
	struct store *s;
	char dir[64], db[96];
};

/* Loads the plan: the old queue on the source node, a 12-level ladder of
 * 1 s units on the target, move_old unpaced with PREFETCH. Returns 0, or
 * -1 having said why. */
static int
load_plan(struct bench *b, int prefetch)
{
	char yaml[4096];
	int rc = -1;

	snprintf(yaml, sizeof(yaml),
	    BENCH_PLAN_BROKER
	    "name: bench-move-target\n"
	    "target:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_BENCH_PASSWORD\n"
	    BENCH_PLAN_MOVE(OLDQ, "bench.mt", DEST)
	    /* The steps before move_old that a plan must have: the bench
	     * runs only declare_ladder and move_old (the flip as if made, so
	     * the flag is never called). */
	    "canary: { delays: [1s], max_lateness: 2s }\n"
	    "flag:\n"
	    "  kind: http\n"
	    "  on: { method: PUT, url: 'http://127.0.0.1:9/f', body: '{\"on\":true}' }\n"
	    "  off: { method: PUT, url: 'http://127.0.0.1:9/f', body: '{\"on\":false}' }\n"
	    "  read: { url: 'http://127.0.0.1:9/f', pointer: /on, on: true, off: false }\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old]\n", BENCH_PLAN_BROKER_ARGS,
	    ENV("CUTOVER_BENCH_TARGET_AMQP", NULL), ENV("CUTOVER_BENCH_TARGET_MGMT", NULL),
	    ENV("CUTOVER_BENCH_USER", NULL), prefetch);
	if (bench_plan_load("bench-move-target.yaml", yaml, &b->p) != 0)
		goto done;
	rc = 0;
done:
	return rc;
}

/* Opens the plan's brokers and a store in a temporary directory holding
 * the plan and its steps, so that move_old persists as the engine runs
 * it. Returns 0, or -1 having said why. */
static int
bench_open(struct bench *b)
{
	char err[2048];
	int64_t id;

	if (step_ctx_open(&b->c, b->p, err, sizeof(err)) != 0)
		goto bad;
	snprintf(b->dir, sizeof(b->dir), "/tmp/bench-move-target.XXXXXX");
	if (mkdtemp(b->dir) == NULL) {
		snprintf(err, sizeof(err), "no temporary directory");
		b->dir[0] = '\0';
		goto bad;
	}
	snprintf(b->db, sizeof(b->db), "%s/cutover.db", b->dir);
	if (store_open(b->db, &b->s, err, sizeof(err)) != 0 ||
	    store_plan_insert(b->s, b->p->name, "{}", 2, clock_now_ms(), &id, err,
	    sizeof(err)) != 0)
		goto bad;
	for (size_t i = 0; i < b->p->nsteps; i++)
		if (store_step_insert(b->s, id, (int)i,
		    plan_step_kind_name(b->p->steps[i].kind), 0, err, sizeof(err)) != 0)
			goto bad;
	b->c.store = b->s;
	b->c.plan_id = id;
	return 0;
bad:
	fprintf(stderr, "bench_move_target: %s\n", err);
	return -1;
}

/* The old queue on the source node, filled with N messages stamped now:
 * each owes about 10 minutes, within the ladder's 68. */
static int
old_filled(struct bench *b, int n)
{
	char err[1024];

	if (bench_old_queue(b->c.old_amqp, OLDQ, DEST, err, sizeof(err)) != 0 ||
	    bench_fill_stamped(b->c.old_amqp, OLDQ, n, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_move_target: source: %s\n", err);
		return -1;
	}
	return 0;
}

/* CPU seconds so far of the source node, the target node (-1 each when
 * its pid is not given) and this process. */
struct cpu {
	double src, tgt, self;
};

static void
cpu_now(struct cpu *c)
{
	struct rusage ru;

	c->src = bench_pid_cpu_s(getenv("CUTOVER_BENCH_SOURCE_PID"));
	c->tgt = bench_pid_cpu_s(getenv("CUTOVER_BENCH_TARGET_PID"));
	c->self = -1;
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		c->self = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
		    (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* "source S s, target T s, bench B s" per 10,000 messages of N, from A to
 * Z, into OUT ("?" for a node whose pid is not given). */
static void
cpu_text(const struct cpu *a, const struct cpu *z, int n, char *out, size_t outlen)
{
	double per = 10000.0 / (double)(n > 0 ? n : 1);
	char s[32] = "?", t[32] = "?";

	if (a->src >= 0 && z->src >= 0)
		snprintf(s, sizeof(s), "%.2f", (z->src - a->src) * per);
	if (a->tgt >= 0 && z->tgt >= 0)
		snprintf(t, sizeof(t), "%.2f", (z->tgt - a->tgt) * per);
	snprintf(out, outlen, "source %s s, target %s s, bench %.2f s", s, t,
	    (z->self - a->self) * per);
}

/* move_old moving the old queue's N messages into the target's ladder,
 * timed from the step's call to its return (its listing of the old
 * queues, its persists and its last acks included). Returns the messages
 * it moved and *MS, or -1. */
static int64_t
run_move_old(struct bench *b, int64_t *ms)
{
	json_t *r = NULL;
	char err[2048];
	int64_t t0, moved = -1;

	/* The flip ten seconds ago, the stragglers' window (1 s) over: the
	 * step's last pass, at once. */
	b->c.flip_ms = clock_now_ms() - 10000;
	t0 = clock_mono_ms();
	if (step_move_old(&b->c, &r, err, sizeof(err)) != 0)
		fprintf(stderr, "bench_move_target: move_old: %s\n", err);
	else if (b->c.again)
		fprintf(stderr, "bench_move_target: move_old asked to be called again\n");
	else
		moved = json_integer_value(json_object_get(json_object_get(r, "counts"),
		    "moved"));
	*ms = clock_mono_ms() - t0;
	json_decref(r);
	return moved;
}

/* amqp://USER:PASSWORD@HOST:PORT/VHOST for the shovel, from URL (an
 * amqp://HOST:PORT/VHOST of the bench) into OUT. Returns 0, or -1. */
static int
shovel_uri(const char *url, char *out, size_t outlen)
{
	char u[256], pw[256];
	const char *rest = strstr(url, "://");
	int n;

	if (rest == NULL || mgmt_escape(ENV("CUTOVER_BENCH_USER", NULL), u, sizeof(u)) < 0 ||
	    mgmt_escape(ENV("CUTOVER_BENCH_PASSWORD", NULL), pw, sizeof(pw)) < 0)
		return -1;
	n = snprintf(out, outlen, "%.*s://%s:%s@%s", (int)(rest - url), url, u, pw,
	    rest + 3);
	return n > 0 && (size_t)n < outlen ? 0 : -1;
}

/* Whether the shovel's parameter is still on the source node: 1, 0 (it
 * deleted itself), or -1 when the API cannot say. */
static int
shovel_there(struct bench *b, const char *path)
{
	char why[512];
	long status = 0;

	if (mgmt_request(b->c.old_mgmt, "GET", path, NULL, NULL, &status, why,
	    sizeof(why)) == 0)
		return 1;
	return status == 404 ? 0 : -1;
}

/* Where the shovel publishes on the target: into a plain queue of its
 * own (SHOVELQ, declared afresh: the floor's peer), or into the ladder
 * (EXCHANGE with KEY: the entry exchange of the delay the old messages
 * owe, as a producer publishes, the like-for-like peer), its arrivals
 * counted in QUEUE (the level queue the messages wait in). */
struct shovel_dest {
	const char *exchange;		/* NULL: SHOVELQ */
	const char *key;
	const char *queue;		/* where its messages are counted */
};

/* The shovel moving the old queue's N messages to D on the target: a
 * dynamic shovel on the source node, ack-mode on-confirm (acked at the
 * source after the target's confirm, as move_old does), deleting itself
 * once it has moved the queue's length. Timed from its declaration until
 * D's queue holds N more than before (*MS, the figure), and until the
 * shovel is gone (*GONE_MS). Returns the messages it moved there, or -1. */
static int64_t
run_shovel(struct bench *b, const struct shovel_dest *d, int n, int64_t *ms,
    int64_t *gone_ms)
{
	struct broker_queue_info qi = { 0 };
	char path[512], src[1024], dst[1024], why[1024];
	json_t *def = NULL;
	int64_t t0, held = -1, base = 0;
	uint32_t purged;
	int there = 1, polls = 0;

	*ms = *gone_ms = -1;
	snprintf(path, sizeof(path), "/api/parameters/shovel/%s/" SHOVEL,
	    bench_vhost_enc(b->c.old_mgmt));
	if (shovel_uri(ENV("CUTOVER_BENCH_AMQP", NULL), src, sizeof(src)) != 0 ||
	    shovel_uri(ENV("CUTOVER_BENCH_TARGET_AMQP", NULL), dst, sizeof(dst)) != 0) {
		fprintf(stderr, "bench_move_target: the shovel's URIs do not fit\n");
		return -1;
	}
	if (d->exchange == NULL && (broker_queue_delete(b->c.amqp, SHOVELQ, 0, &purged,
	    why, sizeof(why)) != 0 || broker_queue_declare(b->c.amqp, SHOVELQ, true, NULL,
	    0, why, sizeof(why)) != 0)) {
		fprintf(stderr, "bench_move_target: target: declaring %s: %s\n", SHOVELQ, why);
		return -1;
	}
	if (broker_queue_inspect(b->c.amqp, d->queue, &qi, why, sizeof(why)) != 0) {
		fprintf(stderr, "bench_move_target: target: %s\n", why);
		return -1;
	}
	base = qi.messages;
	def = d->exchange == NULL ? json_pack("{s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}}",
	    "value", "src-protocol", "amqp091", "src-uri", src, "src-queue", OLDQ,
	    "dest-protocol", "amqp091", "dest-uri", dst, "dest-queue", SHOVELQ,
	    "ack-mode", "on-confirm", "src-delete-after", "queue-length") :
	    json_pack("{s:{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}}", "value",
	    "src-protocol", "amqp091", "src-uri", src, "src-queue", OLDQ,
	    "dest-protocol", "amqp091", "dest-uri", dst, "dest-exchange", d->exchange,
	    "dest-exchange-key", d->key, "ack-mode", "on-confirm",
	    "src-delete-after", "queue-length");
	t0 = clock_mono_ms();
	if (def == NULL || mgmt_request(b->c.old_mgmt, "PUT", path, def, NULL, NULL, why,
	    sizeof(why)) != 0) {
		fprintf(stderr, "bench_move_target: declaring the shovel: %s\n",
		    def == NULL ? "out of memory" : why);
		goto done;
	}
	while (clock_mono_ms() - t0 < WAIT_MS) {
		if (*ms < 0) {
			if (broker_queue_inspect(b->c.amqp, d->queue, &qi, why,
			    sizeof(why)) != 0) {
				fprintf(stderr, "bench_move_target: target: %s\n", why);
				goto done;
			}
			if ((int64_t)qi.messages - base >= n)
				*ms = clock_mono_ms() - t0;
		}
		/* The parameter's GET costs the source node more than a
		 * passive declare costs the target: every 20th poll until the
		 * queue is full, then every one. */
		if (*ms >= 0 || ++polls % 20 == 0) {
			if ((there = shovel_there(b, path)) < 0) {
				fprintf(stderr, "bench_move_target: reading the shovel\n");
				goto done;
			}
			if (there == 0 && *gone_ms < 0)
				*gone_ms = clock_mono_ms() - t0;
		}
		if (*ms >= 0 && *gone_ms >= 0)
			break;
		if (there == 0 && *ms < 0) {
			/* Gone: it moved what it will; the queue has it all. */
			if (broker_queue_inspect(b->c.amqp, d->queue, &qi, why,
			    sizeof(why)) == 0 && (int64_t)qi.messages - base >= n)
				continue;
			fprintf(stderr, "bench_move_target: the shovel went, %" PRId64
			    " of %d moved\n", (int64_t)qi.messages - base, n);
			goto done;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 2000000L }, NULL);
	}
	if (*ms < 0 || *gone_ms < 0)
		fprintf(stderr, "bench_move_target: the shovel did not finish in %d s\n",
		    WAIT_MS / 1000);
	else
		held = (int64_t)qi.messages - base;
done:
	if (there != 0)
		(void)mgmt_request(b->c.old_mgmt, "DELETE", path, NULL, NULL, NULL, why,
		    sizeof(why));
	json_decref(def);
	return held;
}

/* Removes what the bench made on both nodes, its store and its plan. */
static void
bench_close(struct bench *b)
{
	char e[512], name[LADDER_NAME_MAX];
	json_t *r = NULL;
	uint32_t purged;

	if (b->c.old_amqp != NULL)
		(void)broker_queue_delete(b->c.old_amqp, OLDQ, 0, &purged, e, sizeof(e));
	if (b->c.amqp != NULL) {
		/* What was moved waits in the levels: emptied with them, then
		 * the rest of the ladder goes. */
		(void)broker_queue_delete(b->c.amqp, SHOVELQ, 0, &purged, e, sizeof(e));
		(void)broker_queue_delete(b->c.amqp, DEST, 0, &purged, e, sizeof(e));
		for (int k = 0; k < b->p->ladder.levels; k++)
			(void)broker_queue_delete(b->c.amqp, ladder_level_queue(&b->p->ladder,
			    k, name, sizeof(name)), 0, &purged, e, sizeof(e));
		(void)step_teardown_ladder(&b->c, &r, e, sizeof(e));
		json_decref(r);
	}
	step_ctx_close(&b->c);
	store_close(b->s);
	if (b->dir[0] != '\0') {
		snprintf(name, sizeof(name), "%s-wal", b->db);
		(void)unlink(name);
		snprintf(name, sizeof(name), "%s-shm", b->db);
		(void)unlink(name);
		(void)unlink(b->db);
		(void)rmdir(b->dir);
	}
	plan_free(b->p);
}

/* The old queue filled again with N messages and the shovel run to D
 * (run_shovel: *MS, *GONE_MS), its CPU time per 10,000 messages into
 * CPU (cpu_text). Returns what it moved, or -1. */
static int64_t
shovel_phase(struct bench *b, const struct shovel_dest *d, int n, int64_t *ms,
    int64_t *gone_ms, char *cpu, size_t cpulen)
{
	struct cpu a, z;
	int64_t moved;

	if (old_filled(b, n) != 0)
		return -1;
	cpu_now(&a);
	if ((moved = run_shovel(b, d, n, ms, gone_ms)) < 0)
		return -1;
	cpu_now(&z);
	cpu_text(&a, &z, n, cpu, cpulen);
	return moved;
}

/* The like-for-like peer's destination into D: the entry exchange and
 * routing key of the delay the old messages owe (600 s, rounded up as
 * move_old does) towards DEST, and the level queue they enter, written
 * into the caller's buffers. Returns 0, or -1 having said why. */
static int
ladder_dest(const struct bench *b, struct shovel_dest *d, char *ex, char *key,
    char *queue)
{
	const struct ladder *l = &b->p->ladder;
	uint64_t units;
	char why[256];

	if (ladder_encode(l, 600000, &units, why, sizeof(why)) != 0 ||
	    ladder_routing_key(l, units, DEST, key, LADDER_KEY_MAX + 1, why,
	    sizeof(why)) != 0) {
		fprintf(stderr, "bench_move_target: the ladder's key: %s\n", why);
		return -1;
	}
	ladder_entry_exchange(l, units, ex, LADDER_NAME_MAX);
	ladder_level_queue(l, ladder_entry_level(units), queue, LADDER_NAME_MAX);
	d->exchange = ex;
	d->key = key;
	d->queue = queue;
	return 0;
}

int
main(void)
{
	int n = atoi(ENV("CUTOVER_BENCH_MESSAGES", "10000"));
	int prefetch = atoi(ENV("CUTOVER_BENCH_PREFETCH", "100"));
	struct bench b;
	json_t *r = NULL;
	int64_t ms_step, ms_shovel, gone_ms, moved, shovelled, ms_like, gone_like, liked;
	struct cpu c0, c1;
	struct shovel_dest plain = { NULL, NULL, SHOVELQ }, like;
	char err[2048], measure[160], fig[64], peer[128], cpu_step[96], cpu_shovel[96],
	    cpu_like[96], ex[LADDER_NAME_MAX], key[LADDER_KEY_MAX + 1], lq[LADDER_NAME_MAX];
	double x, y, z;
	int rc = 2;

	memset(&b, 0, sizeof(b));
	if (n <= 0 || prefetch <= 0) {
		fprintf(stderr, "bench_move_target: bad message count or prefetch\n");
		return 2;
	}
	if (load_plan(&b, prefetch) != 0)
		return 2;
	if (bench_open(&b) != 0)
		goto done;
	if (step_declare_ladder(&b.c, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_move_target: declare_ladder: %s\n", err);
		goto done;
	}
	if (ladder_dest(&b, &like, ex, key, lq) != 0)
		goto done;
	if (old_filled(&b, n) != 0)
		goto done;
	cpu_now(&c0);
	if ((moved = run_move_old(&b, &ms_step)) < 0)
		goto done;
	cpu_now(&c1);
	cpu_text(&c0, &c1, n, cpu_step, sizeof(cpu_step));
	/* Then the peers: the shovel into a plain queue (the floor's), and
	 * the same shovel publishing into the ladder's entry exchange,
	 * paying its routing as move_old and producers do. */
	if ((shovelled = shovel_phase(&b, &plain, n, &ms_shovel, &gone_ms,
	    cpu_shovel, sizeof(cpu_shovel))) < 0 ||
	    (liked = shovel_phase(&b, &like, n, &ms_like, &gone_like, cpu_like,
	    sizeof(cpu_like))) < 0)
		goto done;
	x = (double)moved * 1000.0 / (double)(ms_step > 0 ? ms_step : 1);
	y = (double)shovelled * 1000.0 / (double)(ms_shovel > 0 ? ms_shovel : 1);
	z = (double)liked * 1000.0 / (double)(ms_like > 0 ? ms_like : 1);
	fprintf(stderr, "bench_move_target: move_old (prefetch %d) moved %" PRId64 " of %d "
	    "in %" PRId64 " ms; the shovel %" PRId64 " in %" PRId64 " ms (gone after %"
	    PRId64 " ms)\n", prefetch, moved, n, ms_step, shovelled, ms_shovel, gone_ms);
	fprintf(stderr, "bench_move_target: the shovel into the ladder (%s, key %s) %"
	    PRId64 " in %" PRId64 " ms (gone after %" PRId64 " ms)\n", ex, key, liked,
	    ms_like, gone_like);
	fprintf(stderr, "bench_move_target: CPU per 10,000 messages: move_old %s; "
	    "the shovel %s; the shovel into the ladder %s (each until it is gone)\n",
	    cpu_step, cpu_shovel, cpu_like);
	snprintf(measure, sizeof(measure), "move_old to another node, %d messages, "
	    "msg/s vs rabbitmq_shovel", n);
	snprintf(fig, sizeof(fig), "%.0f msg/s", x);
	snprintf(peer, sizeof(peer), "rabbitmq_shovel on-confirm %.0f msg/s", y);
	rc = bench_line(measure, fig, peer, moved == n && y > 0 ? x / y : -1,
	    ">= 0.8") ? 0 : 1;
	snprintf(measure, sizeof(measure), "move_old to another node, %d messages, "
	    "msg/s vs rabbitmq_shovel into the ladder", n);
	snprintf(peer, sizeof(peer), "rabbitmq_shovel on-confirm into the ladder's "
	    "entry exchange %.0f msg/s", z);
	(void)bench_line(measure, fig, peer, moved == n && z > 0 ? x / z : -1, "-");
done:
	json_decref(r);
	bench_close(&b);
	return rc;
}
