/* move_old: the step that takes the messages waiting in the old delay
 * queues and republishes each into the ladder with its remaining delay,
 * so that the cutover need not wait a whole old horizon.
 *
 * Safety. A message is taken with manual acknowledgement (with basic.get,
 * and from a consumer while a queue holds more than two batches; only a
 * get-empty ends a pass: take), republished with publisher confirms and
 * `mandatory` (its body,
 * properties and application headers as received, the dead-letter history
 * and the expiration dropped, x-cutover-* headers added), and acked in the
 * old queue only after its confirm. One that is left (its remaining delay
 * beyond the ladder, its entry time unknown over the bound, no
 * destination, a nack, a return, no confirm) is held unacknowledged until
 * the queue's pass ends and then rejected with requeue: it stays in the
 * old queue and drains there. A crash anywhere loses nothing: the broker
 * requeues what was not acked (a message confirmed but not yet acked is
 * then moved twice: each copy carries the same x-cutover-move-id for
 * consumers to deduplicate by, and the result counts them as
 * may_duplicate).
 *
 * Unknown entry times. A message a look took and gave back (left, or
 * taken by a killed run) comes back marked redelivered; the look recorded
 * when it saw it ("seen", by move id), and it entered no later than that,
 * so it is due at that sighting + TTL (move_decide), not at a later run's
 * clock + TTL: never early, and never later for a restart.
 *
 * Progress. The step's state (its result) is persisted once a batch,
 * before the batch is published, so counts survive a kill -9 (a queue
 * found empty by a passive declare, nothing taken, is written with a later
 * one); each queue's entry is a row of its own, and a batch writes only
 * the entries that changed (move_old_rows.c); resumed, it passes again
 * over the queues its pass had not finished. There are two passes over the queues: one at
 * once, and the last once the stragglers' window (flip +
 * move_old.stragglers) is over, for what producers still published into
 * the old path; in between the step sets ctx.again (like the watch: the engine
 * calls it again). Then it works out the horizon that is left. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arrival_stamp.h"
#include "clock.h"
#include "errbuf.h"
#include "fault.h"
#include "ladder.h"
#include "move_old_int.h"
#include "plan_library.h"
#include "publish.h"
#include "sentences.h"

#define HELD_MAX 10000		/* messages left unacked in one queue's pass */
#define CONSUME_WAIT_MS 50	/* the longest a batch waits for its first
				 * delivery (the consumer sends it as soon as
				 * the batch before last is acked), */
#define CONSUME_GAP_MS 25	/* and for the next one: longer, and the
				 * queue is taken to be draining (the gets
				 * then say whether it is) */
#define MOVE_HDR_FROM "x-cutover-moved-from"
#define MOVE_HDR_AT "x-cutover-moved-at"
#define MOVE_HDR_ENTRY "x-cutover-entry"
#define MOVE_HDR_ID "x-cutover-move-id"
#define PERSIST_EMPTY_MS 2000	/* the longest empty queues' passes go
				 * unwritten */

/* Why a message is left, as the result counts them. */
enum left_why {
	LEFT_TOO_LONG, LEFT_UNKNOWN, LEFT_NO_DEST, LEFT_UNCONFIRMED, LEFT_N
};

static const char *const left_names[LEFT_N] = {
	"too_long", "unknown_entry", "no_destination", "not_confirmed"
};

/* One queue's pass. */
struct pass {
	struct step_ctx *c;
	const struct old_queue *oq;
	struct move_rule rule;
	struct move_target target;
	json_t *entry;			/* the queue's entry, open while its
					 * pass runs */
	int64_t ord;			/* its place among the entries */
	json_t *state;			/* the whole state, persisted each batch */
	struct move_entries *es;	/* the state's entries (but ENTRY's) */
	struct move_rows *rows;		/* the run's writes of it */
	json_t *seen;			/* the state's first sightings by key
					 * (each its "seen" element) */
	struct broker_delivery *held;	/* left, unacked until the pass ends */
	size_t nheld;
	int64_t left[LEFT_N];
	int64_t left_until_ms;		/* latest not-before of what is left */
	int64_t moved_in_call;
	int64_t t0_mono;
	int level;			/* the old ladder's level the queue is
					 * (old.ladder), else -1 */
	int entry_rule;			/* the move_old.entry rule it follows,
					 * -1: none (or a level) */
	struct move_progress *pg;	/* the run's, shared by every queue */
	int64_t had;			/* what PG counts as still in the queue */
	bool owes_rest;			/* the batch holds a message that owes
					 * lower levels of the old ladder */
	bool consuming;			/* the pass's consumer runs */
	bool consumed;			/* it ran: the pass goes on with gets */
};

/* Persists the state with the queue's entry (when the engine runs the
 * step). */
static void
persist(struct pass *ps)
{
	move_old__progress_write(ps->pg, ps->state);
	move_old__rows_write(ps->rows, ps->state, ps->es, ps->entry, ps->ord);
}

/* Writes the pass's left counts into its entry. */
static void
record_left(struct pass *ps)
{
	json_t *why = json_object();
	int64_t n = 0;

	for (int i = 0; i < LEFT_N; i++) {
		if (ps->left[i] > 0)
			move_old__set_int(why, left_names[i], ps->left[i]);
		n += ps->left[i];
	}
	move_old__set_int(ps->entry, "left", n);
	json_object_set_new(ps->entry, "left_why", why);
	json_object_set_new(ps->entry, "left_until_ms", n > 0 ?
	    json_integer(ps->left_until_ms) : json_null());
}

/* Keeps D unacked until the pass ends (taking it over), counted as left
 * for WHY. Returns 0, or -1 once HELD_MAX are held: the pass ends there,
 * and what it has not examined is left too, until now + the queue's TTL
 * at the latest. */
static int
hold(struct pass *ps, struct broker_delivery *d, enum left_why why,
    int64_t not_before_ms)
{
	int64_t rest;

	ps->left[why]++;
	if (not_before_ms > ps->left_until_ms)
		ps->left_until_ms = not_before_ms;
	ps->held[ps->nheld++] = *d;
	memset(d, 0, sizeof(*d));
	if (ps->nheld < HELD_MAX)
		return 0;
	rest = old_now_ms(ps->c) + ps->rule.ttl_ms;
	if (rest > ps->left_until_ms)
		ps->left_until_ms = rest;
	json_object_set_new(ps->entry, "held_limit", json_true());
	return -1;
}

/* Rejects every held message with requeue: they stay in the old queue. */
static void
release(struct pass *ps)
{
	char e[256];

	for (size_t i = 0; i < ps->nheld; i++) {
		(void)broker_reject(ps->c->old_amqp, &ps->held[i], true, e, sizeof(e));
		broker_delivery_free(&ps->held[i]);
	}
	ps->nheld = 0;
}

/* Waits as long as the plan's rate asks before moving more. */
static void
pace(struct pass *ps)
{
	int64_t rate = ps->c->plan->move_old.rate_per_s, due, now;
	struct timespec ts;

	if (rate <= 0)
		return;
	due = ps->t0_mono + ps->moved_in_call * 1000 / rate;
	now = clock_mono_ms();
	if (due <= now)
		return;
	ts.tv_sec = (time_t)((due - now) / 1000);
	ts.tv_nsec = (long)((due - now) % 1000) * 1000000L;
	nanosleep(&ts, NULL);
}

/* What D says of its entry time under the pass's rule. */
static void
stamp_of(const struct pass *ps, const struct broker_delivery *d, struct move_stamp *m)
{
	const struct plan_move_entry *e;
	const struct broker_header *h;
	int idx = (int)move_old__jint(ps->entry, "entry_rule");

	memset(m, 0, sizeof(*m));
	m->has_timestamp = d->has_timestamp;
	m->timestamp_s = d->timestamp;
	/* The newest entry comes first: when it came into this queue. */
	if (d->ndeaths > 0 && d->deaths[0].time_s > 0) {
		m->has_death = true;
		m->death_s = d->deaths[0].time_s;
		m->death_count = d->deaths[0].count;
	}
	/* Only a broker that overwrites it makes the stamp this publish's. */
	if (json_is_true(json_object_get(ps->state, "arrival_trusted")) &&
	    (h = broker_header_find(d, ARRIVAL_HEADER)) != NULL &&
	    h->kind == BROKER_KIND_INT) {
		m->has_arrival = true;
		m->arrival_ms = h->num;
	}
	if (idx < 0 || (ps->rule.from != MOVE_FROM_HEADER &&
	    ps->rule.then != MOVE_FROM_HEADER))
		return;
	e = &ps->c->plan->move_old.entries[idx];
	if ((h = broker_header_find(d, e->header)) == NULL)
		return;
	m->has_header = true;
	m->header_is_int = h->kind == BROKER_KIND_INT;
	m->header_num = h->num;
	m->header_str = h->kind == BROKER_KIND_STR ? h->str : NULL;
}

/* Publishes D (move id ID) into the ladder per decision DEC towards
 * destination DEST, without waiting. Returns 0, or a negative broker code
 * with ERR. */
static int
send_moved(struct pass *ps, const struct broker_delivery *d, const char *id,
    const struct move_decision *dec, int dest, int64_t now, char *err, size_t errlen)
{
	const struct plan *p = ps->c->plan;
	struct broker_field hdr[7];
	struct broker_message m;
	char ex[LADDER_NAME_MAX], key[LADDER_KEY_MAX + 1], why[256];
	uint64_t units;

	if (ladder_encode(&p->ladder, dec->delay_ms, &units, why, sizeof(why)) != 0 ||
	    ladder_routing_key(&p->ladder, units, p->destinations[dest], key,
	    sizeof(key), why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "encoding a delay of %" PRId64 " ms: %s",
		    dec->delay_ms, why);
		return BROKER_ERR;
	}
	ladder_entry_exchange(&p->ladder, units, ex, sizeof(ex));
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = (struct broker_field){ .key = PUBLISH_HDR_PLAN, .str = p->name };
	hdr[1] = (struct broker_field){ .key = MOVE_HDR_FROM, .str = ps->oq->q->name };
	hdr[2] = (struct broker_field){ .key = PUBLISH_HDR_NOT_BEFORE, .is_int = true,
	    .num = dec->not_before_ms };
	hdr[3] = (struct broker_field){ .key = PUBLISH_HDR_DELAY, .is_int = true,
	    .num = dec->delay_ms };
	hdr[4] = (struct broker_field){ .key = MOVE_HDR_AT, .is_int = true, .num = now };
	hdr[5] = (struct broker_field){ .key = MOVE_HDR_ENTRY,
	    .str = move_from_name(dec->used) };
	hdr[6] = (struct broker_field){ .key = MOVE_HDR_ID, .str = id };
	memset(&m, 0, sizeof(m));
	m.exchange = ex;
	m.routing_key = key;
	m.body = d->body;
	m.len = d->len;
	m.headers = hdr;
	m.nheaders = sizeof(hdr) / sizeof(hdr[0]);
	m.mandatory = true;
	m.like = d;
	return broker_publish_async(ps->c->amqp, &m, err, errlen);
}

/* Adds N to the queue's count of messages that may reach the ladder twice
 * (republished, and not certainly acked in the old queue). */
static void
may_duplicate(struct pass *ps, int64_t n)
{
	if (n > 0)
		move_old__set_int(ps->entry, "may_duplicate", move_old__jint(ps->entry, "may_duplicate") + n);
}

/* The batch's N messages OUT, of which the first NPUB were published,
 * cannot be settled (the step fails): the confirms are collected as far
 * as they come and every one is held, to be returned to its old queue
 * with the rest (one published and confirmed is then delivered twice,
 * never lost, and counted as such). */
static void
abandon(struct pass *ps, struct broker_delivery *out, int n, int npub,
    const int64_t *nb)
{
	char why[256];

	if (npub > 0)
		(void)broker_wait_confirms(ps->c->amqp, 1000, NULL, 0, NULL, why,
		    sizeof(why));
	may_duplicate(ps, npub);
	for (int i = 0; i < n; i++)
		(void)hold(ps, &out[i], LEFT_UNCONFIRMED, nb[i]);
}

/* The verdicts of the batch's N messages, published since the last wait,
 * into RESULTS (0: confirmed; one never published, or whose verdict did
 * not come, is not). */
static void
confirms(struct pass *ps, int *results, int n)
{
	size_t npub = 0;
	char why[512];

	if (n <= 0)
		return;
	(void)broker_wait_confirms(ps->c->amqp, PUBLISH_TIMEOUT_MS, results,
	    (size_t)n, &npub, why, sizeof(why));
	for (int i = (int)npub; i < n; i++)
		results[i] = BROKER_ERR;
}

/* Acks in its old queue each of the batch's N messages OUT that RESULTS
 * (confirms) says was confirmed (a multiple ack for as many as no message
 * still held lies among: broker_ack_many); every other stays, held (*END once the
 * held limit is reached). Counts the moved into the queue's entry. */
static void
settle(struct pass *ps, struct broker_delivery *out, const int *results, int n,
    const int64_t *nb, bool *end)
{
	struct step_ctx *c = ps->c;
	struct broker_delivery **acking = calloc((size_t)(n > 0 ? n : 1), sizeof(*acking));
	int *acked = calloc((size_t)(n > 0 ? n : 1), sizeof(*acked));
	int64_t moved = 0;
	size_t nack = 0;
	char why[512];

	if (n > 0)
		fault_point("move_old.confirmed");	/* in the ladder, not acked */
	if (n > 0 && ps->owes_rest)
		/* The same, with messages that the old ladder, given back,
		 * may pass down to a lower level before the next run. */
		fault_point("move_old.confirmed_rest");
	for (int i = 0; i < n && acking != NULL; i++)
		if (results[i] == 0)
			acking[nack++] = &out[i];
	/* Acked only after its confirm, the batch in as few frames as the
	 * messages still held allow (one at a time when out of memory);
	 * everything else stays. */
	if (nack > 0 && acked != NULL)
		(void)broker_ack_many(c->old_amqp, acking, nack, acked, why, sizeof(why));
	for (int i = 0, k = 0; i < n; i++) {
		if (results[i] == 0) {
			moved++;
			/* Confirmed, and the ack did not reach the broker: it
			 * redelivers it in the old queue, so it may come twice. */
			if (acking == NULL || acked == NULL ? broker_ack(c->old_amqp,
			    &out[i], why, sizeof(why)) != 0 : acked[k++] != 0)
				may_duplicate(ps, 1);
			broker_delivery_free(&out[i]);
		} else if (hold(ps, &out[i], LEFT_UNCONFIRMED, nb[i]) != 0)
			*end = true;
	}
	move_old__set_int(ps->entry, "moved", move_old__jint(ps->entry, "moved") + moved);
	json_object_del(ps->entry, "in_flight");
	ps->moved_in_call += moved;
	free(acking);
	free(acked);
}

/* What batch() keeps of each message it will publish. */
struct going {
	char id[MOVE_ID_LEN + 1];
	struct move_decision dec;
	int dest;
	int64_t now;
};

/* Returns TAKEN[FROM..TO-1], taken and not examined, to their old queue
 * at once: as if never taken (the broker marks them redelivered, and no
 * sighting was recorded for them). */
static void
give_back(struct pass *ps, struct broker_delivery *taken, size_t from, size_t to)
{
	char why[256];

	for (size_t k = from; k < to; k++) {
		(void)broker_reject(ps->c->old_amqp, &taken[k], true, why, sizeof(why));
		broker_delivery_free(&taken[k]);
	}
}

/* Stops the pass's consumer, keeping what it delivered for the batches
 * to come: from here the pass takes with basic.get, and only a get-empty
 * with nothing kept still to hand out ends it. Returns 0, or a negative
 * broker code with WHY. */
static int
stop_consuming(struct pass *ps, char *why, size_t whylen)
{
	if (!ps->consuming)
		return 0;
	ps->consuming = false;
	return broker_cancel_keep(ps->c->old_amqp, why, whylen);
}

/* After a batch of gets that left more than two batches in the queue
 * (LAST: the batch's last get; a get says exactly what its queue still
 * holds), and while the pass holds nothing, a consumer for the rest: it
 * sends the next batch while the ladder confirms the one before (two
 * batches in its window: never more than one published and not acked)
 * and costs the old broker less than a get for each message. One that
 * cannot start leaves the pass to the gets. */
static void
start_consuming(struct pass *ps, const struct broker_delivery *last)
{
	int prefetch = ps->c->plan->move_old.prefetch;
	char why[512];

	if (ps->consumed || ps->nheld > 0 || last->remaining <= 2 * (uint32_t)prefetch)
		return;
	ps->consumed = true;
	ps->consuming = broker_consume(ps->c->old_amqp, ps->oq->q->name,
	    (uint16_t)(2 * prefetch), why, sizeof(why)) == 0;
}

/* Takes up to the plan's prefetch of messages into TAKEN (*NTAKEN; the
 * first *NDELIVERED of them delivered, the rest from gets, which say what
 * the queue still holds): with gets, and from the consumer
 * (start_consuming) while it runs and delivers whole batches; once it
 * does not (the queue draining, or its window filled by messages the pass
 * holds), what it delivered is handed out first and gets take the rest. *EMPTY when a get found the queue empty
 * and nothing delivered waits to be handed out: the pass has seen every
 * message. Returns 0, or a negative broker code with WHY (TAKEN[0..
 * *NTAKEN-1] then to give back). */
static int
take(struct pass *ps, struct broker_delivery *taken, size_t *ntaken,
    size_t *ndelivered, bool *empty, char *why, size_t whylen)
{
	struct broker *b = ps->c->old_amqp;
	size_t max = (size_t)ps->c->plan->move_old.prefetch, got = 0, more = 0;
	int rc;

	*ntaken = *ndelivered = 0;
	*empty = false;
	/* A message held keeps its place in the consumer's window. */
	if (ps->nheld > 0 && (rc = stop_consuming(ps, why, whylen)) != 0)
		return rc;
	rc = broker_next_many(b, max, CONSUME_WAIT_MS, CONSUME_GAP_MS, taken, &got, why,
	    whylen);
	*ntaken = *ndelivered = got;
	if (rc != 0 || got == max)
		return rc;
	if (ps->consuming) {
		if ((rc = stop_consuming(ps, why, whylen)) != 0)
			return rc;
		rc = broker_next_many(b, max - got, 0, 0, taken + got, &more, why, whylen);
		*ntaken = *ndelivered = got += more;
		if (rc != 0 || got == max)
			return rc;
	}
	rc = broker_get_many(b, ps->oq->q->name, max - got, taken + got, &more, empty,
	    why, whylen);
	*ntaken = got + more;
	/* What the consumer sent before its cancel came before the answers
	 * to the gets: anything still queued is the next batch's. */
	if (*empty && broker_has_queued(b))
		*empty = false;
	if (rc == 0 && !*empty && more > 0)
		start_consuming(ps, &taken[got + more - 1]);
	return rc;
}

/* A batch published and not settled yet: its messages in the order they
 * were published, and each one's not-before (for what is left). */
struct flight {
	struct broker_delivery *out;
	int64_t *nb;
	int n;
};

/* Takes up to the plan's prefetch of messages into CUR (every get sent at
 * once: one round trip for the batch), settles PREV (the batch before:
 * its confirms, then an ack for each confirmed one) and publishes those
 * of CUR that go, leaving them to the next call (or the pass's end) to
 * settle: the source answers the gets while the ladder's broker routes,
 * stores and confirms PREV. What is published and not acked is never
 * more than one batch. Sets *END when
 * the queue has no more to take (or the held limit is reached). Returns 0,
 * or -1 with ERR (PREV settled and nothing of CUR in flight: the step
 * fails).
 *
 * A kill -9 can come anywhere, so what the next run must know is
 * persisted first, once a batch, before CUR is published: the sightings,
 * how many are about to be published ("in_flight": each may end in the
 * ladder and, not acked, back in the old queue) and, unless the pass
 * ends, that the next batch's gets are under way ("getting": their first
 * sightings may go unrecorded). The pass persisted "getting" before its
 * first batch. */
static int
batch(struct pass *ps, struct flight *cur, struct flight *prev, int *results,
    bool *end, char *err, size_t errlen)
{
	struct step_ctx *c = ps->c;
	int prefetch = c->plan->move_old.prefetch, n = 0, rc = 0, i;
	struct broker_delivery *out = cur->out;
	int64_t *nb = cur->nb;
	struct going *g = calloc((size_t)prefetch, sizeof(*g));
	struct broker_delivery *taken = calloc((size_t)prefetch, sizeof(*taken));
	struct move_stamp st;
	struct move_rule rule;
	char why[512], scope[LADDER_NAME_MAX] = "";
	int ret = -1, ldest;
	size_t ntaken = 0, ndelivered = 0, k;
	bool empty = false;

	cur->n = 0;
	if (g == NULL || taken == NULL) {
		errbuf_set(err, errlen, "out of memory");
		confirms(ps, results, prev->n);
		settle(ps, prev->out, results, prev->n, prev->nb, end);
		prev->n = 0;
		goto done;
	}
	rc = take(ps, taken, &ntaken, &ndelivered, &empty, why, sizeof(why));
	/* Whatever the gets did: the batch before is settled first. */
	confirms(ps, results, prev->n);
	settle(ps, prev->out, results, prev->n, prev->nb, end);
	prev->n = 0;
	if (rc != 0) {
		give_back(ps, taken, 0, ntaken);
		errbuf_set(err, errlen, "taking messages from old queue '%s': %s",
		    ps->oq->q->name, why);
		goto done;
	}
	if (*end) {
		/* The held limit, reached by what the batch before left. */
		give_back(ps, taken, 0, ntaken);
		ntaken = 0;
	}
	/* What the fault point after the next confirms asks: this batch's. */
	ps->owes_rest = false;
	/* A level of an old ladder: its move ids are of the ladder's
	 * delivery exchange (worked out here, not kept with each queue's
	 * pass). */
	if (ps->level >= 0)
		ladder_delivery_exchange(&c->plan->old.ladder, scope, sizeof(scope));
	for (k = 0; k < ntaken; k++) {
		struct broker_delivery *d = &taken[k];
		struct going *o = &g[n];
		int64_t first;

		ps->pg->taken++;
		/* A get says what its queue still holds; a delivery does not. */
		move_old__progress_queue(ps->pg, &ps->had, k < ndelivered ? ps->had - 1 :
		    d->remaining);
		o->now = old_now_ms(c);
		if (move_old__id(ps->level >= 0 ? scope : ps->oq->q->name,
		    ps->level >= 0, d, o->id) != 0) {
			/* No id, so no first sighting either: it stays. */
			give_back(ps, taken, k, ntaken);
			errbuf_set(err, errlen, "no digest for a message of old queue '%s'",
			    ps->oq->q->name);
			abandon(ps, out, n, 0, nb);
			goto done;
		}
		stamp_of(ps, d, &st);
		st.seen_ms = first = move_old__first_seen(ps->state, ps->seen, ps->entry, d,
		    o->id);
		rule = ps->rule;
		ldest = -1;
		if (ps->level >= 0 && (ldest = move_old__level_key(c->plan, ps->level,
		    d->routing_key, &rule.rest_ms, why, sizeof(why))) < 0) {
			/* Out of the old ladder by its level's TTL and every
			 * level below it at the latest: under twice the TTL. */
			if (hold(ps, d, LEFT_NO_DEST, o->now + 2 * ps->rule.ttl_ms) != 0)
				break;
			continue;
		}
		(void)move_decide(&rule, &st, o->now, &o->dec);
		if (o->dec.entry_ms < 0)
			move_old__record_seen(ps->state, ps->seen, o->id, first, o->now);
		if (o->dec.verdict != MOVE_GO) {
			if (hold(ps, d, o->dec.verdict == MOVE_LEAVE_TOO_LONG ?
			    LEFT_TOO_LONG : LEFT_UNKNOWN, o->dec.not_before_ms) != 0)
				break;
			continue;
		}
		o->dest = ldest >= 0 ? ldest : ps->target.dest >= 0 ? ps->target.dest :
		    move_target_dest(c, &ps->target, d->routing_key, why, sizeof(why));
		if (o->dest < 0) {
			if (hold(ps, d, LEFT_NO_DEST, o->dec.not_before_ms) != 0)
				break;
			continue;
		}
		nb[n] = o->dec.not_before_ms;
		out[n++] = *d;
		memset(d, 0, sizeof(*d));
		if (rule.rest_ms > 0)
			ps->owes_rest = true;
	}
	if (k < ntaken) {
		/* The held limit: the pass ends, and what it has not examined
		 * goes back. */
		give_back(ps, taken, k + 1, ntaken);
		*end = true;
	}
	if (empty) {
		move_old__progress_queue(ps->pg, &ps->had, 0);
		*end = true;
	}
	if (n > 0)
		move_old__set_int(ps->entry, "in_flight", n);
	if (*end)
		json_object_del(ps->entry, "getting");
	else
		json_object_set_new(ps->entry, "getting", json_true());
	record_left(ps);
	persist(ps);
	for (i = 0; i < n; i++)
		if (send_moved(ps, &out[i], g[i].id, &g[i].dec, g[i].dest, g[i].now,
		    err, errlen) != 0) {
			/* Its frame may have gone out before the failure. */
			abandon(ps, out, n, i + 1, nb);
			json_object_del(ps->entry, "in_flight");
			goto done;
		}
	cur->n = n;
	ret = 0;
done:
	if (ret != 0)
		json_object_del(ps->entry, "getting");
	free(taken);
	free(g);
	return ret;
}

/* One pass over queue OQ: batches one after another, each settling the
 * one before, the last settled once the queue has no more. Returns 0, or
 * -1 with ERR. */
static int
pass_queue(struct pass *ps, char *err, size_t errlen)
{
	struct step_ctx *c = ps->c;
	int prefetch = c->plan->move_old.prefetch, rc = -1, cur = 0;
	struct flight fl[2];
	int *results = calloc((size_t)prefetch, sizeof(*results));
	char why[512];
	bool end = false;

	memset(fl, 0, sizeof(fl));
	for (int k = 0; k < 2; k++) {
		fl[k].out = calloc((size_t)prefetch, sizeof(*fl[k].out));
		fl[k].nb = calloc((size_t)prefetch, sizeof(*fl[k].nb));
	}
	ps->held = calloc(HELD_MAX + (size_t)prefetch + 1, sizeof(*ps->held));
	if (fl[0].out == NULL || fl[1].out == NULL || fl[0].nb == NULL ||
	    fl[1].nb == NULL || results == NULL || ps->held == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	memset(ps->left, 0, sizeof(ps->left));
	ps->left_until_ms = 0;
	/* The first batch's gets are under way from here (each batch says
	 * so of the next). */
	json_object_set_new(ps->entry, "getting", json_true());
	persist(ps);
	while (!end) {
		if (batch(ps, &fl[cur], &fl[!cur], results, &end, err, errlen) != 0)
			goto done;
		cur = !cur;
		if (!end)
			pace(ps);
		/* Between batches, the last one's acknowledgements and its
		 * state's write behind: as a kill here would leave it. */
		if (!end && step_stop_asked(c)) {
			errbuf_set(err, errlen, "stopped in the middle of old queue '%s'; "
			    "the move goes on from there at the next start", ps->oq->q->name);
			goto done;
		}
	}
	rc = 0;
done:
	/* The last batch published: settled (on a failure nothing is in
	 * flight). */
	confirms(ps, results, fl[!cur].n);
	settle(ps, fl[!cur].out, results, fl[!cur].n, fl[!cur].nb, &end);
	fl[!cur].n = 0;
	/* Before the held messages go back (a consumer would have them
	 * again), the consumer stops, and what it delivered and the pass did
	 * not hand out goes back too (only after a failure or at the held
	 * limit: else a pass ends with nothing kept). */
	ps->consuming = ps->consumed = false;
	(void)broker_cancel(c->old_amqp, why, sizeof(why));
	/* Whatever was taken is recorded in the state the step returns. */
	json_object_del(ps->entry, "getting");
	/* Over, or failed: what it still holds is the next pass's. */
	move_old__progress_queue(ps->pg, &ps->had, 0);
	release(ps);
	record_left(ps);
	free(ps->held);
	ps->held = NULL;
	for (int k = 0; k < 2; k++) {
		free(fl[k].out);
		free(fl[k].nb);
	}
	free(results);
	return rc;
}

/* Sets up the pass of OQ: its rule and target. Returns 0, or -1 with ERR
 * (appended to, for the refusal that names every queue). */
/* prepare_queue for a level queue of the old ladder (old.ladder): a
 * message entered it when the level above dead-lettered it there (its
 * newest x-death), else when it was published (its timestamp), else it
 * is taken to have just entered (the whole level, never early); after the
 * level it owes the lower levels its routing key's bits name, and goes to
 * the destination the key ends with. */
static int
prepare_level(struct pass *ps, const struct old_queue *oq, char *err, size_t errlen)
{
	const struct plan *p = ps->c->plan;
	char name[LADDER_NAME_MAX];

	for (int k = 0; k < p->old.ladder.levels && ps->level < 0; k++)
		if (strcmp(ladder_level_queue(&p->old.ladder, k, name, sizeof(name)),
		    oq->q->name) == 0)
			ps->level = k;
	if (ps->level < 0) {
		sentences_add(err, errlen, "old queue '%s' is no level of old.ladder",
		    oq->q->name);
		return -1;
	}
	memset(&ps->rule, 0, sizeof(ps->rule));
	ps->rule.from = MOVE_FROM_DEATH;
	ps->rule.then = MOVE_FROM_TIMESTAMP;
	ps->rule.ttl_ms = ladder_level_ttl_ms(&p->old.ladder, ps->level);
	ps->rule.unit_ms = p->ladder.unit_ms;
	ps->rule.max_delay_ms = ladder_limit_ms(&p->ladder);
	ps->rule.unknown_max_lateness_ms = ps->rule.ttl_ms;
	ps->entry_rule = -1;
	move_target_free(&ps->target);
	return 0;
}

static int
prepare_queue(struct pass *ps, const struct old_queue *oq, struct move_targets *ts,
    char *err, size_t errlen)
{
	const struct plan *p = ps->c->plan;
	char why[1024];
	int idx;

	ps->oq = oq;
	ps->level = -1;
	if (p->old.from_ladder)
		return prepare_level(ps, oq, err, errlen);
	if (oq->ttl_ms < 0) {
		sentences_add(err, errlen, "old queue '%s' has no TTL: its messages' "
		    "remaining delay cannot be known", oq->q->name);
		return -1;
	}
	why[0] = '\0';
	if ((idx = move_old__entry_for(p, oq->q->name, why, sizeof(why))) == -2) {
		sentences_add(err, errlen, "%s", why);
		return -1;
	}
	ps->rule.from = idx >= 0 ? (enum move_from)p->move_old.entries[idx].from :
	    MOVE_FROM_UNKNOWN;
	ps->rule.then = idx >= 0 ? (enum move_from)p->move_old.entries[idx].then :
	    MOVE_FROM_UNKNOWN;
	if (!plan_library_allows(p->old.library, oq->q->name, ps->rule.from, why,
	    sizeof(why)) || !plan_library_allows(p->old.library, oq->q->name,
	    ps->rule.then, why, sizeof(why))) {
		sentences_add(err, errlen, "move_old.entry[%d]: %s", idx, why);
		return -1;
	}
	if (!json_is_true(json_object_get(ps->state, "arrival_trusted"))) {
		/* An untrusted stamp is no source: the queue is as if the
		 * rule did not name it (its other source, or unknown). */
		if (ps->rule.then == MOVE_FROM_ARRIVAL)
			ps->rule.then = MOVE_FROM_UNKNOWN;
		if (ps->rule.from == MOVE_FROM_ARRIVAL) {
			ps->rule.from = ps->rule.then;
			ps->rule.then = MOVE_FROM_UNKNOWN;
		}
	}
	ps->rule.ttl_ms = oq->ttl_ms;
	ps->rule.unit_ms = p->ladder.unit_ms;
	ps->rule.max_delay_ms = ladder_limit_ms(&p->ladder);
	ps->rule.unknown_max_lateness_ms = p->move_old.unknown_max_lateness_ms;
	ps->entry_rule = idx;
	if (move_target_read(ps->c, ts, oq->q, &ps->target, why, sizeof(why)) != 0) {
		sentences_add(err, errlen, "%s", why);
		return -1;
	}
	return 0;
}

/* Writes into the open entry of PS what prepare_queue worked out: the
 * queue's TTL, its rule and where its messages go. */
static void
describe(struct pass *ps)
{
	const struct plan *p = ps->c->plan;

	move_old__set_int(ps->entry, "ttl_ms", ps->rule.ttl_ms);
	move_old__set_int(ps->entry, "entry_rule", ps->entry_rule);
	if (ps->level >= 0)
		move_old__set_int(ps->entry, "level", ps->level);
	json_object_set_new(ps->entry, "from", json_string(move_from_name(ps->rule.from)));
	if (ps->level >= 0 || ps->rule.then != MOVE_FROM_UNKNOWN)
		json_object_set_new(ps->entry, "then",
		    json_string(move_from_name(ps->rule.then)));
	json_object_set_new(ps->entry, "destination", ps->level < 0 &&
	    ps->target.dest >= 0 ? json_string(p->destinations[ps->target.dest]) :
	    json_string("(each message's routing key)"));
}

/* Whether the pass of PS may end at once: the queue holds no message
 * ready now (a passive declare, exact), which is all a pass through it
 * would find (its gets say "empty"; what enters it later is the next
 * pass's, as after any pass). Then its entry says what such a pass says,
 * and *EMPTY is set. Most old queues are empty; this spares each a round
 * of gets, a consumer's cancel and two writes of the whole state. A queue
 * gone, or one that holds messages, is left to pass_queue. Returns 0, or
 * -1 with ERR. */
static int
pass_if_empty(struct pass *ps, bool *empty, char *err, size_t errlen)
{
	struct broker_queue_info qi = { 0 };
	char why[512];
	int rc = broker_queue_inspect(ps->c->old_amqp, ps->oq->q->name, &qi, why,
	    sizeof(why));

	*empty = false;
	if (rc == BROKER_NOT_FOUND || (rc == 0 && qi.messages > 0))
		return 0;
	if (rc < 0) {
		errbuf_set(err, errlen, "counting old queue '%s': %s", ps->oq->q->name, why);
		return -1;
	}
	*empty = true;
	move_old__progress_queue(ps->pg, &ps->had, 0);
	memset(ps->left, 0, sizeof(ps->left));
	record_left(ps);
	return 0;
}

/* A queue whose every message is left (entry unknown, TTL over the
 * bound): not touched; its depth is counted as skipped. */
static int
skip_queue(struct pass *ps, char *err, size_t errlen)
{
	struct broker_queue_info qi = { 0 };
	char why[512];
	int rc = broker_queue_inspect(ps->c->old_amqp, ps->oq->q->name, &qi, why, sizeof(why));

	if (rc < 0 && rc != BROKER_NOT_FOUND) {	/* gone: nothing to skip */
		errbuf_set(err, errlen, "counting old queue '%s': %s", ps->oq->q->name, why);
		return -1;
	}
	move_old__progress_queue(ps->pg, &ps->had, 0);
	move_old__set_int(ps->entry, "skipped", qi.messages);
	move_old__set_int(ps->entry, "left", 0);
	json_object_set_new(ps->entry, "left_until_ms", qi.messages > 0 ?
	    json_integer(old_now_ms(ps->c) + ps->oq->ttl_ms) : json_null());
	json_object_set_new(ps->entry, "skipped_why", json_string("entry time unknown "
	    "and its TTL over move_old.unknown_entry_max_lateness"));
	return 0;
}

/* The result of a run that could not read its last state: that state as
 * it was (its entries are its rows, which stand), with ERR. */
static json_t *
unread(struct step_ctx *c, const char *err)
{
	json_t *r = c->state != NULL ? json_deep_copy(c->state) : json_object();

	if (r != NULL) {
		json_object_set_new(r, "ok", json_false());
		json_object_set_new(r, "error", json_string(err));
	}
	c->rows_kept = c->rows_wanted;
	return r;
}

int
step_move_old_prepare(struct step_ctx *c, struct step_inputs *in, json_t **result,
    char *err, size_t errlen)
{
	c->flip_ms = step_input_ended(in, PLAN_STEP_FLIP);
	/* measure_horizon's result without its queues (at 100,000 old
	 * queues, a hundred megabytes of tree): the step reads only its
	 * summary. Its own last result is C->state. */
	if (step_input_apart(in, PLAN_STEP_MEASURE_HORIZON, "queues", NULL, NULL,
	    &c->measured) != 0) {
		errbuf_set(err, errlen, "reading measure_horizon's result failed: out of "
		    "memory, the database could not be read, or it does not parse");
		*result = unread(c, err);
		return -1;
	}
	if (step_restored(c, err, errlen) != 0) {
		*result = unread(c, err);
		return -1;
	}
	return 0;
}

/* Hands every entry of ES over as the result's rows (C->rows), or, for a
 * run without the engine, into STATE's "queues". Returns 0, or -1 with ERR
 * (the rows of the last write stand then, as after a kill). */
static int
hand_entries(struct step_ctx *c, json_t *state, const struct move_entries *es,
    char *err, size_t errlen)
{
	json_t *all;

	if (!c->rows_wanted) {
		if ((all = move_old__entries_array(es)) == NULL) {
			errbuf_set(err, errlen, "the result's %zu entries: out of memory", es->n);
			return -1;
		}
		json_object_set_new(state, "queues", all);
		return 0;
	}
	for (size_t i = 0; i < es->n; i++)
		if (step_rows_add_text(&c->rows, es->v[i].name, es->v[i].text) != 0) {
			errbuf_set(err, errlen, "the result's %zu entries: %s", es->n,
			    c->rows.err);
			step_rows_clear(&c->rows);
			c->rows_kept = true;
			return -1;
		}
	return 0;
}

/* Puts the entry PS has open back among the entries and closes it.
 * Returns 0, or -1 with ERR when out of memory. */
static int
close_entry(struct pass *ps, char *err, size_t errlen)
{
	int rc = move_old__entries_put(ps->es, ps->ord, ps->entry);

	json_decref(ps->entry);
	ps->entry = NULL;
	if (rc != 0)
		errbuf_set(err, errlen, "out of memory");
	return rc;
}

int
step_move_old(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct old_selection sel = { 0 };
	struct move_targets ts = { 0 };
	struct move_rows rows = { 0 };
	struct move_entries es = { 0 };
	struct move_counts counts;
	struct move_progress pg;
	struct pass ps;
	int64_t now = old_now_ms(c), pass, *ords = NULL;
	json_t *state, *seen = NULL;
	char why[1024];
	int rc = -1;
	int64_t persisted = clock_mono_ms();
	bool empty, counted;

	memset(&ps, 0, sizeof(ps));
	err[0] = '\0';
	if ((state = move_old__state_of(c, now, &es, err, errlen)) == NULL) {
		*result = unread(c, err);
		return -1;
	}
	*result = state;
	pass = move_old__jint(state, "pass");
	if (pass > 1 && now < move_old__jint(state, "stragglers_until_ms")) {
		/* Between the first pass and the last: every pass returns what
		 * it leaves to its queue, and a quorum queue counts those
		 * returns against its delivery-limit, so there are two. */
		c->again = true;
		rc = 0;
		goto done;
	}
	/* As the last pass begins, the old queues' publish counters come with
	 * the selection's listing (statistics on), not a listing of their
	 * own: at 10,000 old queues a listing costs seconds. A broker that
	 * does not answer that listing (one with 100,000 queues may not) is
	 * listed without them, and the watch then assumes an entry at its
	 * first look, as when they cannot be read. */
	counted = move_old__jint(state, "pass_started_ms") >= move_old__jint(state,
	    "stragglers_until_ms") && json_object_get(state, "old_publishes") == NULL &&
	    old_select_counted(c, &sel, why, sizeof(why)) == 0;
	if (!counted && old_select(c, &sel, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "selecting the old queues: %s", why);
		goto done;
	}
	if ((ords = calloc(sel.n + 1, sizeof(*ords))) == NULL ||
	    move_old__rows_start(&rows, c, sel.n) != 0) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	move_old__probe_arrival(c, state);
	if ((seen = move_old__seen_index(state)) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	/* Every queue's rule and target first, and every destination an old
	 * ladder delivers to: refuse before moving anything. A queue's pass
	 * works them out again (from what this read): a run keeps one
	 * queue's at a time. */
	if (c->plan->old.from_ladder ? move_old__ladder_dests(c, err, errlen) != 0 :
	    move_targets_read(c, &ts, err, errlen) != 0)
		goto done;
	move_old__progress_start(&pg);
	for (size_t i = 0; i < sel.n; i++) {
		ps = (struct pass){ .c = c, .pg = &pg, .state = state, .seen = seen,
		    .es = &es, .rows = &rows };
		if ((ords[i] = move_old__entries_of(&es, sel.v[i].q->name)) < 0) {
			errbuf_set(err, errlen, "out of memory");
			goto done;
		}
		(void)prepare_queue(&ps, &sel.v[i], &ts, err, errlen);
		move_target_free(&ps.target);
		if (es.v[ords[i]].pass_done < pass)
			move_old__progress_queue(&pg, &ps.had, sel.v[i].q->messages);
	}
	if (err[0] != '\0')
		goto done;
	move_old__totals(state, &es, &counts);
	if (counted)
		move_old__publishes_at_last_pass(&sel, state);
	for (size_t i = 0; i < sel.n; i++) {
		if (es.v[ords[i]].pass_done >= pass)
			continue;
		ps = (struct pass){ .c = c, .pg = &pg, .state = state, .seen = seen,
		    .es = &es, .rows = &rows, .ord = ords[i], .t0_mono = clock_mono_ms() };
		/* What the first loop counted of it, as it counted it. */
		ps.had = sel.v[i].q->messages > 0 ? sel.v[i].q->messages : 0;
		if ((ps.entry = move_old__entries_open(&es, ps.ord)) == NULL) {
			errbuf_set(err, errlen, "out of memory");
			goto done;
		}
		if (prepare_queue(&ps, &sel.v[i], &ts, err, errlen) != 0)
			goto done;
		describe(&ps);
		empty = false;
		move_old__count(&counts, ps.entry, -1);
		if (ps.rule.from == MOVE_FROM_UNKNOWN &&
		    ps.rule.ttl_ms > ps.rule.unknown_max_lateness_ms) {
			if (skip_queue(&ps, err, errlen) != 0)
				goto done;
		} else if (pass_if_empty(&ps, &empty, err, errlen) != 0 ||
		    (!empty && pass_queue(&ps, err, errlen) != 0))
			goto done;
		move_old__set_int(ps.entry, "pass_done", pass);
		move_old__count(&counts, ps.entry, 1);
		move_target_free(&ps.target);
		if (close_entry(&ps, err, errlen) != 0)
			goto done;
		move_old__rows_changed(&rows, ps.ord);
		/* An empty queue's pass, which a kill only makes the next run
		 * repeat, is written with the next queue's, or after
		 * PERSIST_EMPTY_MS for the page's progress. */
		if (!empty || clock_mono_ms() - persisted >= PERSIST_EMPTY_MS) {
			move_old__counts_set(state, &counts);
			persist(&ps);
			persisted = clock_mono_ms();
		}
	}
	move_old__totals(state, &es, &counts);
	move_old__progress_write(&pg, state);
	if (move_old__jint(state, "pass_started_ms") < move_old__jint(state, "stragglers_until_ms")) {
		/* Producers may still have published into the old path since
		 * this pass began: another pass once the stragglers' window is
		 * over (the engine calls again each watch.interval). */
		move_old__set_int(state, "pass", pass + 1);
		move_old__set_int(state, "pass_started_ms", move_old__jint(state, "stragglers_until_ms"));
		c->again = true;
		rc = 0;
		goto done;
	}
	move_old__horizon(c, state, &es, move_old__jint(state, "pass_started_ms"));
	json_object_set_new(state, "ok", json_true());
	move_old__record_done(c, state);
	rc = 0;
done:
	/* A pass that stopped: what its entry says so far is the state's. */
	if (ps.entry != NULL && close_entry(&ps, why, sizeof(why)) != 0 && rc == 0)
		rc = -1;
	move_target_free(&ps.target);
	if (hand_entries(c, state, &es, rc == 0 ? err : why, rc == 0 ? errlen :
	    sizeof(why)) != 0 && rc == 0) {
		c->again = false;
		rc = -1;
	}
	if (rc < 0 && err[0] == '\0')
		errbuf_set(err, errlen, "%s", why);
	if (rc < 0 && err[0] != '\0')
		json_object_set_new(state, "error", json_string(err));
	free(ords);
	move_targets_free(&ts);
	move_old__rows_free(&rows);
	json_decref(seen);
	move_old__entries_free(&es);
	old_selection_free(&sel);
	return rc;
}
