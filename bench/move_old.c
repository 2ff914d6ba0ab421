/* bench_move_old: messages moved per second by the move_old step
 * against the move an operator scripts without it, a management-API
 * get + publish loop (what `rabbitmqadmin get` / `publish` and shovel-style
 * scripts do: POST .../queues/Q/get with a count, then one POST
 * .../exchanges/X/publish per message), on the same broker in the same
 * run. Both move N stamped messages from a 10-minute old queue into the
 * same ladder; the peer is timed without any of the step's safety (it
 * acks on get). Prints the brief's BENCH line; exits 1 when the floor
 * (the step at least as fast as the peer) is missed, 2 when it cannot run.
 *
 * Environment: CUTOVER_BENCH_AMQP, CUTOVER_BENCH_MGMT, CUTOVER_BENCH_USER,
 * CUTOVER_BENCH_PASSWORD (bench/move_old sets them), CUTOVER_BENCH_MESSAGES
 * (default 5000). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bench_util.h"
#include "clock.h"
#include "ladder.h"
#include "plan.h"
#include "step.h"

/* The bench's environment variable NAME, or DFLT (bench_env). */
#define ENV(name, dflt) bench_env("move_old", name, dflt)
#define OLDQ "bench.mv.old.600s"
#define DEST "bench.mv.dest"
#define GET_COUNT 100

static struct plan *
load_plan(void)
{
	struct plan *p = NULL;
	char yaml[2048];

	setenv("CUTOVER_BENCH_PASSWORD_REF", ENV("CUTOVER_BENCH_PASSWORD", NULL), 1);
	snprintf(yaml, sizeof(yaml),
	    "name: bench-move\n"
	    "broker:\n"
	    "  amqp: %s\n"
	    "  management: %s\n"
	    "  username: %s\n"
	    "  password: env:CUTOVER_BENCH_PASSWORD_REF\n"
	    BENCH_PLAN_MOVE(OLDQ, "bench.mv", DEST)
	    "steps: [declare_ladder]\n", ENV("CUTOVER_BENCH_AMQP", NULL),
	    ENV("CUTOVER_BENCH_MGMT", NULL), ENV("CUTOVER_BENCH_USER", NULL), 200);
	if (bench_plan_load("bench-move.yaml", yaml, &p) != 0)
		exit(2);
	return p;
}

/* The old queue of 10 minutes, filled with N messages stamped now (each
 * has about 10 minutes to go, well within the ladder's 68 minutes). */
static int
old_filled(struct step_ctx *c, int n)
{
	char err[1024];

	if (bench_old_queue(c->amqp, OLDQ, DEST, err, sizeof(err)) != 0 ||
	    bench_fill_stamped(c->amqp, OLDQ, n, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_move_old: %s\n", err);
		return -1;
	}
	return 0;
}

/* The peer: management get (count GET_COUNT, acked on get) + one
 * management publish per message into the ladder, its delay from the
 * message's timestamp as the step computes it. Returns messages moved. */
static int64_t
peer(struct step_ctx *c, int n)
{
	const struct plan *p = c->plan;
	char path[512], ex[LADDER_NAME_MAX], key[LADDER_KEY_MAX + 1], why[512];
	int64_t moved = 0;

	while (moved < n) {
		json_t *req = json_pack("{s:i,s:s,s:s,s:i}", "count", GET_COUNT,
		    "ackmode", "ack_requeue_false", "encoding", "auto", "truncate",
		    50000), *got = NULL, *msg;
		size_t i;

		snprintf(path, sizeof(path), "/api/queues/%s/%s/get",
		    bench_vhost_enc(c->mgmt), OLDQ);
		if (mgmt_request(c->mgmt, "POST", path, req, &got, NULL, why,
		    sizeof(why)) != 0 || !json_is_array(got)) {
			fprintf(stderr, "bench_move_old: peer get: %s\n", why);
			json_decref(req);
			return -1;
		}
		json_decref(req);
		if (json_array_size(got) == 0) {
			json_decref(got);
			break;
		}
		json_array_foreach(got, i, msg) {
			const json_t *props = json_object_get(msg, "properties");
			int64_t ts = json_integer_value(json_object_get(props, "timestamp"));
			int64_t left = (ts + 1) * 1000 + 600000 - clock_now_ms();
			uint64_t units;
			json_t *pub, *ans = NULL;

			if (left < 0)
				left = 0;
			if (ladder_encode(&p->ladder, left, &units, why, sizeof(why)) != 0 ||
			    ladder_routing_key(&p->ladder, units, DEST, key, sizeof(key),
			    why, sizeof(why)) != 0) {
				fprintf(stderr, "bench_move_old: peer: %s\n", why);
				json_decref(got);
				return -1;
			}
			ladder_entry_exchange(&p->ladder, units, ex, sizeof(ex));
			pub = json_pack("{s:O,s:s,s:O,s:O}", "properties", props,
			    "routing_key", key, "payload", json_object_get(msg, "payload"),
			    "payload_encoding", json_object_get(msg, "payload_encoding"));
			snprintf(path, sizeof(path), "/api/exchanges/%s/%s/publish",
			    bench_vhost_enc(c->mgmt), ex);
			if (mgmt_request(c->mgmt, "POST", path, pub, &ans, NULL, why,
			    sizeof(why)) != 0) {
				fprintf(stderr, "bench_move_old: peer publish: %s\n", why);
				json_decref(pub);
				json_decref(got);
				return -1;
			}
			json_decref(pub);
			json_decref(ans);
			moved++;
		}
		json_decref(got);
	}
	return moved;
}

int
main(void)
{
	int n = atoi(ENV("CUTOVER_BENCH_MESSAGES", "5000"));
	struct step_ctx c = { 0 };
	struct plan *p = load_plan();
	int64_t t0, ms_step, ms_peer, moved_peer, moved_step;
	json_t *r = NULL;
	char err[2048];
	double a, b, ratio;
	uint32_t purged;
	int rc = 2;

	if (n <= 0 || step_ctx_open(&c, p, err, sizeof(err)) != 0 ||
	    step_declare_ladder(&c, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_move_old: %s\n", n <= 0 ? "bad message count" : err);
		goto done;
	}
	json_decref(r);
	r = NULL;
	if (old_filled(&c, n) != 0)
		goto done;
	c.flip_ms = clock_now_ms() - 10000;
	t0 = clock_mono_ms();
	if (step_move_old(&c, &r, err, sizeof(err)) != 0) {
		fprintf(stderr, "bench_move_old: move_old: %s\n", err);
		goto done;
	}
	ms_step = clock_mono_ms() - t0;
	moved_step = json_integer_value(json_object_get(json_object_get(r, "counts"),
	    "moved"));
	if (old_filled(&c, n) != 0)
		goto done;
	t0 = clock_mono_ms();
	if ((moved_peer = peer(&c, n)) < 0)
		goto done;
	ms_peer = clock_mono_ms() - t0;
	a = moved_step * 1000.0 / (double)(ms_step > 0 ? ms_step : 1);
	b = moved_peer * 1000.0 / (double)(ms_peer > 0 ? ms_peer : 1);
	ratio = b > 0 ? a / b : 0;
	fprintf(stderr, "bench_move_old: move_old moved %" PRId64 " in %" PRId64 " ms; "
	    "management get+publish moved %" PRId64 " in %" PRId64 " ms\n", moved_step,
	    ms_step, moved_peer, ms_peer);
	rc = moved_step == n && ratio >= 1.0 ? 0 : 1;
	printf("BENCH\tmove_old messages/s\t%.0f msg/s\tmgmt get+publish %.0f msg/s\t%.2f\t>= 1.0\t%s\n",
	    a, b, ratio, rc == 0 ? "ok" : "MISSED");
done:
	json_decref(r);
	r = NULL;
	if (c.amqp != NULL) {
		/* What was moved waits in the levels: emptied with them, then
		 * the rest of the ladder goes. */
		char e[256], name[LADDER_NAME_MAX];

		(void)broker_queue_delete(c.amqp, OLDQ, 0, &purged, e, sizeof(e));
		(void)broker_queue_delete(c.amqp, DEST, 0, &purged, e, sizeof(e));
		for (int k = 0; k < p->ladder.levels; k++)
			(void)broker_queue_delete(c.amqp, ladder_level_queue(&p->ladder, k,
			    name, sizeof(name)), 0, &purged, e, sizeof(e));
		(void)step_teardown_ladder(&c, &r, e, sizeof(e));
		json_decref(r);
	}
	step_ctx_close(&c);
	plan_free(p);
	return rc;
}
