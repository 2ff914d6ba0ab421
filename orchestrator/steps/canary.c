/* canary: the canary step — synthetic delayed messages, published with
 * confirms through the plan's ladder to a queue private to the plan, each
 * checked for its path and its timing; and one to a destination nobody
 * binds, which must reach the parking queue and is then removed from it.
 *
 * Re-running is safe: every run has its own batch id (header
 * x-cutover-batch), and messages of another batch that reach the canary
 * queue (a run that crashed) are discarded and counted. The step uses the
 * real clock, not C->now_ms: it measures the broker's TTLs. Lateness and
 * every wait are measured on the monotonic clock (the canary publishes
 * and consumes in one process), so a wall-clock jump neither hides an
 * early delivery nor cuts a wait short; wall times are only recorded. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "duration.h"
#include "errbuf.h"
#include "hex.h"
#include "parking.h"
#include "publish.h"
#include "sentences.h"
#include "clock.h"
#include "step.h"

/* How long past not-before + max_lateness the canary keeps waiting for a
 * message. A message not there by not-before + max_lateness has failed
 * already; the grace only decides how it is reported. Within it, "late":
 * the path works but slowly (broker load, a quorum leader election, a
 * stalled consumer), a matter of capacity. After it, "lost": a path is
 * broken (a binding, a dead-letter target), a matter of topology. On a
 * healthy 100 ms quorum ladder (local node, RabbitMQ 3.10) lateness is
 * about 10 ms at the median and was at most 243 ms in ten runs; a second
 * is four times that worst case and still keeps a failing canary short. */
#define CANARY_GRACE_MS		1000

/* The canary queue removes itself this long after its last use, should a
 * crash leave it behind (x-expires: no consumer and no get for that long). */
#define CANARY_QUEUE_EXPIRES_MS	(10 * 60 * 1000)

#define CANARY_HDR_BATCH	"x-cutover-batch"
#define CANARY_PREFETCH		100
#define CANARY_POLL_MS		100
#define CANARY_RETRIES		3	/* reconnects while consuming */
/* The longest the canary waits for a delivery before it looks whether the
 * process is asked to stop: a canary of long delays must not hold a
 * SIGTERM for as long. */
#define CANARY_STOP_LOOK_MS	500
#define PARKING_LISTED		10	/* other parked messages described */
#define ERRORS_LISTED		4	/* failed messages named in ERR */

struct sent {
	int64_t delay_ms;
	struct publish_receipt rc;
	int status;			/* publish_delayed's verdict */
	char pub_err[512];
	int64_t arrived_ms;		/* 0 until it arrives (wall clock, as
					 * sent_ms + monotonic time since) */
	int64_t late_ms;		/* arrival - not-before, monotonic */
	const char *outcome;		/* NULL until decided */
	char detail[640];
};

struct canary {
	struct step_ctx *c;
	const struct plan *p;
	char batch[48];
	char queue[LADDER_NAME_MAX];	/* the canary destination, and its queue */
	char unbound[LADDER_NAME_MAX];	/* a destination nobody binds */
	char delivery[LADDER_NAME_MAX];
	char parking[LADDER_NAME_MAX];
	char pattern[LADDER_NAME_MAX];	/* the canary queue's binding key */
	char level_queue[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	struct sent *v;			/* one per canary delay */
	size_t n;
	struct sent probe;		/* the message to the unbound destination */
	bool probe_in_canary_queue;
	long stale, foreign, duplicates;
	/* What this run holds on the broker, for the cleanup. */
	bool reused;			/* the canary queue was there already */
	bool declared;			/* the queue is to be deleted at the end */
	bool bound;			/* its binding is to be removed */
	bool consuming;			/* its consumer is to be cancelled */
	bool sent;			/* the messages went out */
};

static int
new_batch(char *out, size_t outlen, char *err, size_t errlen)
{
	unsigned char rnd[8];
	char hex[17];

	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		errbuf_set(err, errlen, "no random bytes for a canary batch id");
		return -1;
	}
	hex_encode(rnd, sizeof(rnd), hex);
	snprintf(out, outlen, "%" PRId64 "-%s", clock_now_ms(), hex);
	return 0;
}

/* Fills K's names from the plan. Returns 0 or -1 with ERR. */
static int
names(struct canary *k, char *err, size_t errlen)
{
	const struct ladder *l = &k->p->ladder;
	char why[512];

	snprintf(k->queue, sizeof(k->queue), "cutover.canary.%s", k->p->name);
	snprintf(k->unbound, sizeof(k->unbound), "cutover.canary.%s.unbound",
	    k->p->name);
	if (ladder_check_destination(l, k->queue, why, sizeof(why)) != 0 ||
	    ladder_check_destination(l, k->unbound, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "the canary destination of plan '%s': %s",
		    k->p->name, why);
		return -1;
	}
	/* As a routing key or as what one reaches. */
	if (plan_names_destination(k->p, k->queue) ||
	    plan_names_destination(k->p, k->unbound)) {
		errbuf_set(err, errlen, "ladder.destinations lists '%s', which the canary "
		    "needs for itself; rename that destination",
		    plan_names_destination(k->p, k->queue) ? k->queue : k->unbound);
		return -1;
	}
	ladder_delivery_exchange(l, k->delivery, sizeof(k->delivery));
	ladder_parking_queue(l, k->parking, sizeof(k->parking));
	ladder_destination_pattern(l, k->queue, k->pattern, sizeof(k->pattern));
	for (int j = 0; j < l->levels; j++)
		ladder_level_queue(l, j, k->level_queue[j], LADDER_NAME_MAX);
	return 0;
}

/* Publishes one canary message (SEQ, to DEST) and records it in S. */
static void
send_one(struct canary *k, struct sent *s, size_t seq, const char *dest)
{
	struct broker_field batch = { .key = CANARY_HDR_BATCH, .str = k->batch };
	struct publish_request r;
	char body[128];

	snprintf(body, sizeof(body), "{\"canary\":\"%s\",\"seq\":%zu}", k->batch, seq);
	memset(&r, 0, sizeof(r));
	r.plan = k->p->name;
	r.purpose = PUBLISH_CANARY;
	r.seq = (int64_t)seq;
	r.delay_ms = s->delay_ms;
	r.destination = dest;
	r.body = body;
	r.len = strlen(body);
	r.content_type = "application/json";
	r.headers = &batch;
	r.nheaders = 1;
	s->status = publish_delayed(k->c->amqp, &k->p->ladder, &r, &s->rc,
	    s->pub_err, sizeof(s->pub_err));
	if (s->status != PUBLISH_OK) {
		s->outcome = "lost";
		snprintf(s->detail, sizeof(s->detail), "not published: %s", s->pub_err);
	}
}

static int
by_delay_desc(const void *a, const void *b)
{
	const struct sent *x = *(const struct sent *const *)a;
	const struct sent *y = *(const struct sent *const *)b;

	return (x->delay_ms < y->delay_ms) - (x->delay_ms > y->delay_ms);
}

/* Publishes every canary message, longest delay first: publishing takes a
 * few milliseconds each, and this way none is due before the last is
 * sent, so arrivals are read as they come. Then the parking probe. */
static int
send_all(struct canary *k, char *err, size_t errlen)
{
	struct sent **order;
	int64_t unit = k->p->ladder.unit_ms;

	if ((order = calloc(k->n, sizeof(*order))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < k->n; i++)
		order[i] = &k->v[i];
	qsort(order, k->n, sizeof(*order), by_delay_desc);
	for (size_t i = 0; i < k->n; i++)
		send_one(k, order[i], (size_t)(order[i] - k->v), k->queue);
	free(order);
	/* One unit: through level 0 and its dead-lettering into the delivery
	 * exchange, the way parked messages really come (a plan's max_delay
	 * below one unit still rounds up to it). */
	if (unit > ladder_limit_ms(&k->p->ladder))
		unit = ladder_limit_ms(&k->p->ladder);
	k->probe.delay_ms = unit <= k->p->canary.budget_ms ? unit : 0;
	send_one(k, &k->probe, k->n, k->unbound);
	return 0;
}

/* Checks the path D took: delivered by the exchange the last level
 * dead-letters into (or the delivery exchange itself), with the routing key
 * sent, and an x-death that names each level whose bit is 1 exactly once,
 * as expired, and no other queue. (RabbitMQ 3.10 does not keep x-death in
 * crossing order, so the order is not checked here: the topology allows no
 * other, each level dead-letters only into the one below.) Sets S's outcome
 * to wrong_path with a detail, or leaves it. */
static void
check_path(const struct canary *k, struct sent *s, const struct broker_delivery *d)
{
	const struct ladder *l = &k->p->ladder;
	uint64_t u = s->rc.units;
	bool seen[LADDER_MAX_LEVELS] = { false };
	char want[LADDER_NAME_MAX];
	int low = -1, j;

	for (j = 0; j < l->levels && low < 0; j++)
		if (u >> j & 1)
			low = j;
	if (low < 0)
		snprintf(want, sizeof(want), "%s", k->delivery);
	else
		ladder_dead_letter_exchange(l, low, want, sizeof(want));
	s->detail[0] = '\0';
	if (d->exchange == NULL || strcmp(d->exchange, want) != 0)
		sentences_add(s->detail, sizeof(s->detail), "delivered by exchange '%s', "
		    "expected '%s'", d->exchange ? d->exchange : "", want);
	if (d->routing_key == NULL || strcmp(d->routing_key, s->rc.routing_key) != 0)
		sentences_add(s->detail, sizeof(s->detail), "routing key '%s', sent '%s'",
		    d->routing_key ? d->routing_key : "", s->rc.routing_key);
	for (size_t i = 0; i < d->ndeaths; i++) {
		const struct broker_death *x = &d->deaths[i];
		const char *q = x->queue ? x->queue : "";

		for (j = 0; j < l->levels; j++)
			if (strcmp(q, k->level_queue[j]) == 0)
				break;
		if (j == l->levels) {
			sentences_add(s->detail, sizeof(s->detail), "x-death names queue "
			    "'%s', not a level of this ladder", q);
			continue;
		}
		if (!(u >> j & 1))
			sentences_add(s->detail, sizeof(s->detail), "waited in level %d "
			    "(%s), whose bit is 0", j, q);
		if (seen[j])
			sentences_add(s->detail, sizeof(s->detail), "x-death names level "
			    "%d twice", j);
		if (x->count != 1)
			sentences_add(s->detail, sizeof(s->detail), "crossed level %d %"
			    PRId64 " times", j, x->count);
		if (x->reason == NULL || strcmp(x->reason, "expired") != 0)
			sentences_add(s->detail, sizeof(s->detail), "left level %d as '%s', "
			    "expected 'expired'", j, x->reason ? x->reason : "");
		seen[j] = true;
	}
	for (j = l->levels - 1; j >= 0; j--)
		if ((u >> j & 1) && !seen[j])
			sentences_add(s->detail, sizeof(s->detail), "x-death lacks level %d "
			    "(%s): it never waited there", j, k->level_queue[j]);
	if (s->detail[0] != '\0')
		s->outcome = "wrong_path";
}

/* Takes one delivery from the canary queue, received at AT_MONO
 * (monotonic). Its arrival is recorded on the wall clock as the send time
 * plus the monotonic time since, so lateness = arrived - not-before holds
 * in the record too. */
static void
take(struct canary *k, const struct broker_delivery *d, int64_t at_mono)
{
	const struct broker_header *bh = broker_header_find(d, CANARY_HDR_BATCH);
	struct publish_info pi;
	struct sent *s;
	char why[256];
	int64_t late;

	if (publish_read(d, &pi, why, sizeof(why)) != 0 ||
	    strcmp(pi.plan, k->p->name) != 0 ||
	    strcmp(pi.purpose, PUBLISH_CANARY) != 0) {
		k->foreign++;
		return;
	}
	if (bh == NULL || bh->kind != BROKER_KIND_STR ||
	    strcmp(bh->str, k->batch) != 0) {
		k->stale++;
		return;
	}
	if (pi.seq == (int64_t)k->n) {
		k->probe_in_canary_queue = true;
		return;
	}
	if (pi.seq < 0 || pi.seq > (int64_t)k->n) {
		k->foreign++;
		return;
	}
	s = &k->v[pi.seq];
	if (s->arrived_ms != 0 || s->status != PUBLISH_OK) {
		k->duplicates++;   /* at-least-once dead-lettering may copy */
		return;
	}
	s->late_ms = late = at_mono - s->rc.not_before_mono_ms;
	s->arrived_ms = s->rc.not_before_ms + late;
	check_path(k, s, d);
	if (s->outcome != NULL)
		return;
	if (late < 0) {
		s->outcome = "early";
		snprintf(s->detail, sizeof(s->detail), "arrived %" PRId64 " ms before "
		    "its not-before time: a level's TTL is shorter than the plan "
		    "(a policy? cutover ladder verify)", -late);
	} else if (late > k->p->canary.max_lateness_ms) {
		s->outcome = "late";
		snprintf(s->detail, sizeof(s->detail), "%" PRId64 " ms late, more "
		    "than canary.max_lateness %" PRId64 " ms", late,
		    k->p->canary.max_lateness_ms);
	} else
		s->outcome = "ok";
}

/* Consumes the canary queue until every confirmed message has arrived or
 * the last one's bound (not-before + max_lateness + grace) has passed.
 * Returns 0, or -1 with ERR when consuming itself failed. */
static int
consume(struct canary *k, char *err, size_t errlen)
{
	struct broker_delivery d;
	int64_t deadline = 0, now, bound;
	size_t expected = 0, arrived = 0;
	char why[512];
	int r, retries = 0;

	for (size_t i = 0; i < k->n; i++) {
		if (k->v[i].status != PUBLISH_OK)
			continue;
		expected++;
		bound = k->v[i].rc.not_before_mono_ms + k->p->canary.max_lateness_ms +
		    CANARY_GRACE_MS;
		if (bound > deadline)
			deadline = bound;
	}
	while (arrived < expected) {
		now = clock_mono_ms();
		if (now >= deadline)
			break;
		if (step_stop_asked(k->c)) {
			errbuf_set(err, errlen, "stopped while waiting for the canary's "
			    "messages; the canary runs again at the next start");
			return -1;
		}
		r = broker_next(k->c->amqp, (int)(deadline - now < CANARY_STOP_LOOK_MS ?
		    deadline - now : CANARY_STOP_LOOK_MS), &d, why, sizeof(why));
		if (r == BROKER_ETIMEOUT)
			continue;	/* the deadline, or a look at the stop */
		if (r == BROKER_ELOST && ++retries <= CANARY_RETRIES)
			continue;   /* the next call reconnects and resubscribes */
		if (r != 0) {
			errbuf_set(err, errlen, "consuming the canary queue '%s': %s",
			    k->queue, why);
			return -1;
		}
		take(k, &d, clock_mono_ms());
		(void)broker_ack(k->c->amqp, &d, why, sizeof(why));
		broker_delivery_free(&d);
		arrived = 0;
		for (size_t i = 0; i < k->n; i++)
			if (k->v[i].arrived_ms != 0)
				arrived++;
	}
	for (size_t i = 0; i < k->n; i++) {
		struct sent *s = &k->v[i];

		if (s->outcome != NULL)
			continue;
		s->outcome = "lost";
		snprintf(s->detail, sizeof(s->detail), "did not arrive within %" PRId64
		    " ms of its not-before time (max_lateness %" PRId64 " ms + %d ms "
		    "grace): a binding or dead-letter target on its path is missing",
		    k->p->canary.max_lateness_ms + CANARY_GRACE_MS,
		    k->p->canary.max_lateness_ms, CANARY_GRACE_MS);
	}
	return 0;
}

/* Describes parked message D for the report. */
static json_t *
describe_parked(const struct broker_delivery *d)
{
	struct publish_info pi;
	char why[128];
	json_t *o = json_pack("{s:s,s:s}", "routing_key",
	    d->routing_key ? d->routing_key : "", "message_id",
	    d->message_id ? d->message_id : "");

	if (o != NULL && publish_read(d, &pi, why, sizeof(why)) == 0) {
		json_object_set_new(o, "plan", json_string(pi.plan));
		json_object_set_new(o, "purpose", json_string(pi.purpose));
	}
	return o;
}

/* What the walk through parking looks for: the canary's probe. */
struct probe_pick {
	const struct canary *k;
	json_t *others;			/* described, up to PARKING_LISTED */
};

static enum parking_pick
pick_probe(const struct broker_delivery *d, void *arg)
{
	struct probe_pick *pp = arg;

	if (d->message_id != NULL &&
	    strcmp(d->message_id, pp->k->probe.rc.message_id) == 0)
		return PARKING_TAKE_STOP;
	if (json_array_size(pp->others) < PARKING_LISTED)
		json_array_append_new(pp->others, describe_parked(d));
	return PARKING_LEAVE;
}

/* Looks through the parking queue for the probe (parking_walk): removes
 * the probe and only the probe, and gives the others back. OTHERS
 * receives a description of up to PARKING_LISTED of them, and *NOTHERS,
 * once the probe is found, how many other messages the queue held then:
 * those read before it plus those behind it (counted by the broker when
 * it handed the probe over; a passive declare right after the requeue
 * may not count them yet). Returns 0, with *FOUND true when the probe was
 * found and removed, or -1 with ERR on failure. */
static int
walk_parking(struct canary *k, json_t *others, int64_t *nothers, bool *found,
    char *err, size_t errlen)
{
	struct probe_pick pp = { k, others };
	struct parking_walk pw;

	*found = false;
	json_array_clear(others);
	if (parking_walk(k->c->amqp, k->parking, PARKING_WALK_MAX, pick_probe, &pp,
	    &pw, err, errlen) != 0)
		return -1;
	if (pw.stopped) {
		*nothers = (int64_t)pw.left + (pw.behind > 0 ? pw.behind : 0);
		*found = true;
		return 0;
	}
	if (!pw.end) {
		errbuf_set(err, errlen, "the parking queue '%s' holds more than %d "
		    "other messages; the canary's was not among the first %d and "
		    "is left there", k->parking, PARKING_WALK_MAX, PARKING_WALK_MAX);
		return -1;
	}
	return 0;
}

/* Waits for the probe in the parking queue until its bound, removes it,
 * and reports the other parked messages. Fills PARKING; returns 0 with
 * *WORKS true when the parking path works, false when it does not (DETAIL
 * says why), or -1 with ERR when the check itself failed. */
static int
check_parking(struct canary *k, json_t *parking, bool *works, char *detail,
    size_t dlen, char *err, size_t errlen)
{
	struct broker_queue_info qi = { 0 };
	json_t *others = json_array();
	int64_t deadline, walked = -1, arrived = 0, nothers = 0;
	char why[512];
	int r, found = 0;	/* 1 found, 0 not, -1 the check failed */
	bool got;

	*works = false;
	detail[0] = '\0';
	if (k->probe.status != PUBLISH_OK) {
		snprintf(detail, dlen, "the message to the unbound destination '%s' "
		    "was %s", k->unbound, k->probe.detail);
		goto report;
	}
	deadline = k->probe.rc.not_before_mono_ms + k->p->canary.max_lateness_ms +
	    CANARY_GRACE_MS;
	for (;;) {
		int64_t now = clock_mono_ms();

		r = broker_queue_inspect(k->c->amqp, k->parking, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			snprintf(detail, dlen, "the parking queue '%s' does not exist",
			    k->parking);
			goto report;
		}
		if (r != 0) {
			errbuf_set(err, errlen, "inspecting the parking queue '%s': %s",
			    k->parking, why);
			found = -1;
			goto report;
		}
		/* Walk only when something new may be there. */
		if (qi.messages > 0 && (int64_t)qi.messages != walked) {
			r = walk_parking(k, others, &nothers, &got, err, errlen);
			found = r < 0 ? -1 : got;
			if (found != 0) {
				arrived = clock_now_ms();
				break;
			}
			walked = qi.messages;
		}
		if (now >= deadline)
			break;
		if (step_stop_asked(k->c)) {
			errbuf_set(err, errlen, "stopped while waiting for the message to "
			    "the unbound destination; the canary runs again at the next start");
			found = -1;
			goto report;
		}
		clock_sleep_ms(deadline - now < CANARY_POLL_MS ? deadline - now : CANARY_POLL_MS);
	}
	if (found == 0) {
		snprintf(detail, dlen, "the message to the unbound destination '%s' "
		    "did not reach the parking queue '%s' within %" PRId64 " ms of its "
		    "not-before time%s: is the delivery exchange's alternate-exchange "
		    "set, and the parking exchange bound? (cutover ladder verify)%s",
		    k->unbound, k->parking, k->p->canary.max_lateness_ms +
		    CANARY_GRACE_MS, k->probe_in_canary_queue ? " (it came to the "
		    "canary queue instead: something there binds every destination)" : "",
		    qi.consumers > 0 ? "; the parking queue has a consumer, which may "
		    "have taken it" : "");
		nothers = qi.messages;
	}
report:
	json_object_set_new(parking, "ok", json_boolean(found == 1));
	json_object_set_new(parking, "queue", json_string(k->parking));
	json_object_set_new(parking, "destination", json_string(k->unbound));
	json_object_set_new(parking, "sent_ms", json_integer(k->probe.rc.sent_ms));
	json_object_set_new(parking, "found_ms", found == 1 ?
	    json_integer(arrived) : json_null());
	json_object_set_new(parking, "removed", json_boolean(found == 1));
	json_object_set_new(parking, "other_messages", json_integer(nothers));
	json_object_set_new(parking, "others", others);
	if (detail[0] != '\0')
		json_object_set_new(parking, "detail", json_string(detail));
	if (found < 0)
		return -1;
	*works = found == 1;
	return 0;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile P of the N sorted values V. */
static int64_t
percentile(const int64_t *v, size_t n, int p)
{
	size_t rank = ((size_t)p * n + 99) / 100;

	return v[rank > 0 ? rank - 1 : 0];
}

static json_t *
message_json(const struct canary *k, const struct sent *s, size_t seq)
{
	json_t *levels = json_array(), *o;

	for (int j = k->p->ladder.levels - 1; j >= 0; j--)
		if (s->rc.units >> j & 1)
			json_array_append_new(levels, json_integer(j));
	o = json_pack("{s:i,s:I,s:I,s:o,s:s,s:I,s:I,s:o,s:o,s:s}",
	    "seq", (int)seq, "delay_ms", (json_int_t)s->delay_ms,
	    "units", (json_int_t)s->rc.units, "levels", levels,
	    "routing_key", s->rc.routing_key,
	    "sent_ms", (json_int_t)s->rc.sent_ms,
	    "not_before_ms", (json_int_t)s->rc.not_before_ms,
	    "arrived_ms", s->arrived_ms ? json_integer(s->arrived_ms) : json_null(),
	    "lateness_ms", s->arrived_ms ? json_integer(s->late_ms) : json_null(),
	    "outcome", s->outcome ? s->outcome : "lost");
	if (o != NULL && s->detail[0] != '\0' && strcmp(s->outcome, "ok") != 0)
		json_object_set_new(o, "detail", json_string(s->detail));
	return o;
}

/* Builds the per-message list and the summary into RESULT and writes what
 * failed into WHY. Returns the number of messages not ok. */
static size_t
summarise(const struct canary *k, json_t *result, char *why, size_t whylen)
{
	json_t *msgs = json_array(), *sum;
	int64_t *late = calloc(k->n ? k->n : 1, sizeof(int64_t));
	size_t nlate = 0, bad = 0, lost = 0, early = 0, slow = 0, wrong = 0,
	    unconfirmed = 0;
	char d[32];

	for (size_t i = 0; i < k->n; i++) {
		const struct sent *s = &k->v[i];
		const char *o = s->outcome ? s->outcome : "lost";

		json_array_append_new(msgs, message_json(k, s, i));
		if (s->arrived_ms != 0 && late != NULL)
			late[nlate++] = s->late_ms;
		if (s->status != PUBLISH_OK)
			unconfirmed++;
		if (strcmp(o, "ok") == 0)
			continue;
		if (strcmp(o, "lost") == 0)
			lost++;
		else if (strcmp(o, "early") == 0)
			early++;
		else if (strcmp(o, "late") == 0)
			slow++;
		else
			wrong++;
		if (bad++ < ERRORS_LISTED)
			sentences_add(why, whylen, "%s (%" PRIu64 " unit%s) %s: %s",
			    duration_format(s->delay_ms, d, sizeof(d)), s->rc.units,
			    s->rc.units == 1 ? "" : "s", o, s->detail);
	}
	if (bad > ERRORS_LISTED)
		sentences_add(why, whylen, "and %zu more", bad - ERRORS_LISTED);
	if (nlate > 0)
		qsort(late, nlate, sizeof(*late), cmp_i64);
	sum = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i,s:i}",
	    "count", (int)k->n, "arrived", (int)nlate, "lost", (int)lost,
	    "early", (int)early, "late", (int)slow, "wrong_path", (int)wrong,
	    "unconfirmed", (int)unconfirmed, "duplicates", (int)k->duplicates,
	    "stale_discarded", (int)k->stale, "foreign_discarded", (int)k->foreign);
	json_object_set_new(sum, "p50_ms", nlate ?
	    json_integer(percentile(late, nlate, 50)) : json_null());
	json_object_set_new(sum, "p99_ms", nlate ?
	    json_integer(percentile(late, nlate, 99)) : json_null());
	json_object_set_new(sum, "max_ms", nlate ?
	    json_integer(late[nlate - 1]) : json_null());
	json_object_set_new(result, "messages", msgs);
	json_object_set_new(result, "summary", sum);
	free(late);
	return bad;
}

/* Fills K for C's plan: its delays, the names it uses and a new batch id.
 * Returns 0, or -1 with ERR. */
static int
canary_init(struct canary *k, struct step_ctx *c, char *err, size_t errlen)
{
	k->c = c;
	k->p = c->plan;
	if (k->p->canary.ndelays == 0) {
		errbuf_set(err, errlen, "the plan has no canary delays");
		return -1;
	}
	if ((k->v = calloc(k->p->canary.ndelays, sizeof(*k->v))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		return -1;
	}
	k->n = k->p->canary.ndelays;
	for (size_t i = 0; i < k->n; i++)
		k->v[i].delay_ms = k->p->canary.delays_ms[i];
	if (names(k, err, errlen) != 0 || new_batch(k->batch, sizeof(k->batch),
	    err, errlen) != 0)
		return -1;
	return 0;
}

/* The canary queue: reused when a crashed run left it (its stale
 * messages are told apart by batch), else declared to expire by itself
 * should this run crash too; then bound to the delivery exchange. Sets
 * K's reused, declared and bound as it goes, for the cleanup. Returns 0,
 * or -1 with ERR. */
static int
canary_queue_open(struct canary *k, char *err, size_t errlen)
{
	struct topology_arg qargs[1];
	char why[1024];
	int r;

	r = broker_queue_inspect(k->c->amqp, k->queue, NULL, why, sizeof(why));
	if (r == 0)
		k->reused = true;
	else if (r != BROKER_NOT_FOUND) {
		errbuf_set(err, errlen, "inspecting the canary queue '%s': %s", k->queue, why);
		return -1;
	}
	k->declared = true;	/* from here on, remove it at the end */
	if (!k->reused) {
		memset(qargs, 0, sizeof(qargs));
		snprintf(qargs[0].key, sizeof(qargs[0].key), "x-expires");
		qargs[0].is_int = true;
		qargs[0].num = CANARY_QUEUE_EXPIRES_MS;
		if (broker_queue_declare(k->c->amqp, k->queue, false, qargs, 1, why,
		    sizeof(why)) != 0) {
			errbuf_set(err, errlen, "declaring the canary queue '%s': %s",
			    k->queue, why);
			return -1;
		}
	}
	k->bound = true;
	if (broker_queue_bind(k->c->amqp, k->queue, k->delivery, k->pattern, why,
	    sizeof(why)) != 0) {
		errbuf_set(err, errlen, "binding the canary queue '%s' to the delivery "
		    "exchange '%s': %s (is the ladder declared?)", k->queue, k->delivery,
		    why);
		return -1;
	}
	return 0;
}

/* Consumes the canary queue, sends every message, takes them as they come
 * and cancels the consumer. Sets K's consuming and sent as it goes.
 * Returns 0, or -1 with ERR. */
static int
canary_send_and_take(struct canary *k, char *err, size_t errlen)
{
	char why[1024];

	if (broker_consume(k->c->amqp, k->queue, CANARY_PREFETCH, why,
	    sizeof(why)) != 0) {
		errbuf_set(err, errlen, "consuming the canary queue '%s': %s", k->queue, why);
		return -1;
	}
	k->consuming = true;
	if (send_all(k, err, errlen) != 0)
		return -1;
	k->sent = true;
	if (consume(k, err, errlen) != 0)
		return -1;
	if (broker_cancel(k->c->amqp, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "cancelling the canary consumer: %s", why);
		return -1;
	}
	k->consuming = false;
	return 0;
}

/* Removes what K holds on C's broker (its consumer, the canary queue's
 * binding, the queue), also after a failure (K may be NULL: nothing), and
 * records it in CLEANUP ("ok", "purged", "detail"). Returns 0, or -1 with
 * what could not be removed in WHY. */
static int
canary_cleanup(struct step_ctx *c, const struct canary *k, json_t *cleanup,
    char *why, size_t whylen)
{
	char detail[768];
	uint32_t purged = 0;

	why[0] = '\0';
	if (k != NULL && k->consuming && broker_cancel(c->amqp, detail,
	    sizeof(detail)) != 0)
		sentences_add(why, whylen, "cancelling the consumer: %s", detail);
	if (k != NULL && k->bound && broker_queue_unbind(c->amqp, k->queue,
	    k->delivery, k->pattern, detail, sizeof(detail)) != 0)
		sentences_add(why, whylen, "unbinding the canary queue: %s", detail);
	if (k != NULL && k->declared && broker_queue_delete(c->amqp, k->queue, 0,
	    &purged, detail, sizeof(detail)) != 0)
		sentences_add(why, whylen, "deleting the canary queue '%s': %s",
		    k->queue, detail);
	json_object_set_new(cleanup, "ok", json_boolean(why[0] == '\0'));
	json_object_set_new(cleanup, "purged", json_integer(purged));
	if (why[0] == '\0')
		return 0;
	json_object_set_new(cleanup, "detail", json_string(why));
	return -1;
}

/* Adds K's batch, queue and bounds to RESULT, and its summary when the
 * messages went out and none is there yet. */
static void
canary_describe(const struct canary *k, json_t *result)
{
	char failed[2048] = "";

	if (json_object_get(result, "summary") == NULL && k->sent)
		(void)summarise(k, result, failed, sizeof(failed));
	json_object_set_new(result, "batch", json_string(k->batch));
	json_object_set_new(result, "queue", json_string(k->queue));
	json_object_set_new(result, "queue_reused", json_boolean(k->reused));
	json_object_set_new(result, "max_lateness_ms",
	    json_integer(k->p->canary.max_lateness_ms));
	json_object_set_new(result, "grace_ms", json_integer(CANARY_GRACE_MS));
}

int
step_canary(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct canary *k;
	json_t *parking = json_object(), *cleanup = json_object();
	char why[1024], pdetail[768], failed[2048] = "";
	bool parking_works = false;
	size_t bad = 0;
	int rc = -1;

	*result = json_object();
	err[0] = '\0';
	if ((k = calloc(1, sizeof(*k))) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	if (canary_init(k, c, err, errlen) != 0)
		goto done;
	if (canary_queue_open(k, err, errlen) != 0)
		goto done;
	if (canary_send_and_take(k, err, errlen) != 0)
		goto done;
	if (check_parking(k, parking, &parking_works, pdetail, sizeof(pdetail), err,
	    errlen) < 0)
		goto done;
	bad = summarise(k, *result, failed, sizeof(failed));
	if (!parking_works)
		sentences_add(failed, sizeof(failed), "parking: %s", pdetail);
	if (bad > 0 || !parking_works) {
		errbuf_set(err, errlen, "canary failed: %s", failed);
		goto done;
	}
	rc = 0;
done:
	/* Remove the canary queue and its binding, also after a failure. */
	if (canary_cleanup(c, k, cleanup, why, sizeof(why)) != 0) {
		if (rc == 0)
			errbuf_set(err, errlen, "the canary passed but its queue was not "
			    "removed: %s", why);
		rc = -1;
	}
	if (k != NULL) {
		canary_describe(k, *result);
		free(k->v);
		free(k);
	}
	if (json_object_get(parking, "ok") == NULL)
		json_object_set_new(parking, "ok", json_false());
	json_object_set_new(*result, "parking", parking);
	json_object_set_new(*result, "cleanup", cleanup);
	json_object_set_new(*result, "ok", json_boolean(rc == 0));
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	return rc;
}
