/* traffic_book: cutover-traffic's record of every message it sent (path,
 * not-before, the broker's verdict) and every arrival, and the figures the
 * report is made of. Guarded by one mutex: the producer and the consumers
 * write to it from their own threads. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "traffic.h"

#define TRAFFIC_CHUNK	65536u		/* records per chunk */

int64_t
traffic_mono_ms(void)
{
	return clock_mono_ms();
}

int64_t
traffic_wall_ms(void)
{
	return clock_now_ms();
}

void
traffic_sleep_ms(int64_t ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	(void)nanosleep(&ts, NULL);
}

const char *
traffic_path_name(enum traffic_path path)
{
	return path == TRAFFIC_LADDER ? "ladder" : "old";
}

int
traffic_book_init(struct traffic_book *b, char *err, size_t errlen)
{
	memset(b, 0, sizeof(*b));
	if (pthread_mutex_init(&b->mu, NULL) != 0) {
		snprintf(err, errlen, "the message book: no mutex");
		return -1;
	}
	return 0;
}

void
traffic_book_free(struct traffic_book *b)
{
	for (size_t i = 0; i < b->nchunks; i++)
		free(b->chunks[i]);
	free(b->chunks);
	pthread_mutex_destroy(&b->mu);
	memset(b, 0, sizeof(*b));
}

/* The record of SEQ, or NULL. Call with the mutex held. */
static struct traffic_rec *
rec_at(struct traffic_book *b, uint64_t seq)
{
	if (seq >= b->nrecs)
		return NULL;
	return &b->chunks[seq / TRAFFIC_CHUNK][seq % TRAFFIC_CHUNK];
}

int
traffic_book_add(struct traffic_book *b, enum traffic_path path,
    int64_t not_before_ms, uint64_t *seq, char *err, size_t errlen)
{
	struct traffic_rec *r;
	int rc = -1;

	pthread_mutex_lock(&b->mu);
	if (b->nrecs == (uint64_t)b->nchunks * TRAFFIC_CHUNK) {
		if (b->nchunks == b->capchunks) {
			size_t cap = b->capchunks ? b->capchunks * 2 : 16;
			struct traffic_rec **nc;

			if ((nc = realloc(b->chunks, cap * sizeof(*nc))) == NULL)
				goto nomem;
			b->chunks = nc;
			b->capchunks = cap;
		}
		if ((b->chunks[b->nchunks] = calloc(TRAFFIC_CHUNK,
		    sizeof(struct traffic_rec))) == NULL)
			goto nomem;
		b->nchunks++;
	}
	*seq = b->nrecs++;
	r = rec_at(b, *seq);
	r->not_before_ms = not_before_ms;
	r->path = (uint8_t)path;
	r->state = TRAFFIC_PENDING;
	b->tally[path].sent++;
	b->tally[path].pending++;
	rc = 0;
	goto done;
nomem:
	snprintf(err, errlen, "recording message %llu: out of memory",
	    (unsigned long long)b->nrecs);
done:
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void
traffic_book_settle(struct traffic_book *b, uint64_t seq,
    enum traffic_state state)
{
	struct traffic_rec *r;
	struct traffic_tally *t;

	pthread_mutex_lock(&b->mu);
	if ((r = rec_at(b, seq)) == NULL || r->state != TRAFFIC_PENDING ||
	    state == TRAFFIC_PENDING)
		goto done;
	t = &b->tally[r->path];
	t->pending--;
	r->state = (uint8_t)state;
	switch (state) {
	case TRAFFIC_CONFIRMED:
		t->confirmed++;
		if (r->deliveries > 0)
			t->delivered_confirmed++;
		break;
	case TRAFFIC_NACKED:
		t->nacked++;
		break;
	case TRAFFIC_RETURNED:
		t->returned++;
		break;
	case TRAFFIC_UNCONFIRMED:
		t->unconfirmed++;
		break;
	default:
		t->sent--;
		b->not_sent++;
		break;
	}
done:
	pthread_mutex_unlock(&b->mu);
}

/* The first 8 hex digits of move id ID as a number (0 when it has none):
 * enough to tell two ids of one message apart. */
static uint32_t
id_prefix(const char *id)
{
	uint32_t v = 0;

	for (int i = 0; i < 8 && isxdigit((unsigned char)id[i]); i++)
		v = v << 4 | (uint32_t)(isdigit((unsigned char)id[i]) ? id[i] - '0' :
		    (tolower((unsigned char)id[i]) - 'a' + 10));
	return v;
}

int
traffic_book_deliver(struct traffic_book *b, uint64_t seq,
    enum traffic_path path, int64_t arrived_ms,
    const struct traffic_arrival *a)
{
	struct traffic_rec *r;
	struct traffic_tally *t;
	const char *id = a != NULL ? a->move_id : NULL;
	int rc;

	pthread_mutex_lock(&b->mu);
	if (a != NULL && a->on_source)
		b->on_source++;
	else
		b->on_target++;
	if ((r = rec_at(b, seq)) == NULL || r->path != (uint8_t)path ||
	    r->state == TRAFFIC_NOT_SENT) {
		b->foreign++;
		rc = -1;
		goto done;
	}
	if (id != NULL) {
		/* move_old gives every copy of a message one id: consumers
		 * drop the second by it. */
		if (r->moved++ == 0)
			r->move_id = id_prefix(id);
		else if (r->move_id != id_prefix(id))
			b->move_id_changed++;
		if (a->on_source)
			b->moved_on_source++;
	}
	t = &b->tally[r->path];
	if (r->deliveries++ > 0) {
		t->duplicates++;
		rc = 1;
		goto done;
	}
	r->arrived_ms = arrived_ms;
	t->delivered++;
	if (r->state == TRAFFIC_CONFIRMED)
		t->delivered_confirmed++;
	if (arrived_ms < r->not_before_ms)
		t->early++;
	rc = 0;
done:
	pthread_mutex_unlock(&b->mu);
	return rc;
}

void
traffic_book_loss(struct traffic_book *b, bool consumer, uint64_t n)
{
	pthread_mutex_lock(&b->mu);
	if (consumer)
		b->consumer_losses += n;
	else
		b->producer_losses += n;
	pthread_mutex_unlock(&b->mu);
}

void
traffic_book_tally(struct traffic_book *b, struct traffic_tally *out)
{
	pthread_mutex_lock(&b->mu);
	memcpy(out, b->tally, sizeof(b->tally));
	pthread_mutex_unlock(&b->mu);
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least P percent at or below. */
static int64_t
rank(const int64_t *v, size_t n, unsigned p)
{
	size_t k = (size_t)(((unsigned long long)n * p + 99) / 100);

	return v[k > 0 ? k - 1 : 0];
}

/* O with "lateness_ms" set to the min, p50, p99 and max of the N
 * lateness values V (sorted here), or null when there are none. Returns
 * O, or NULL (O freed) when out of memory. */
static json_t *
with_lateness(json_t *o, int64_t *v, size_t n)
{
	json_t *lat;

	if (n == 0)
		lat = json_null();
	else {
		qsort(v, n, sizeof(*v), cmp_i64);
		lat = json_pack("{s:I,s:I,s:I,s:I}", "min", (json_int_t)v[0],
		    "p50", (json_int_t)rank(v, n, 50), "p99", (json_int_t)rank(v, n, 99),
		    "max", (json_int_t)v[n - 1]);
	}
	if (lat == NULL || json_object_set_new(o, "lateness_ms", lat) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/* One path's (or the total's) object. V holds N lateness values, sorted
 * here. */
static json_t *
path_object(const struct traffic_tally *t, uint64_t lost, int64_t *v, size_t n)
{
	json_t *o;

	if ((o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}",
	    "sent", (json_int_t)t->sent,
	    "confirmed", (json_int_t)t->confirmed,
	    "nacked", (json_int_t)t->nacked,
	    "returned", (json_int_t)t->returned,
	    "unconfirmed", (json_int_t)(t->unconfirmed + t->pending),
	    "delivered", (json_int_t)t->delivered,
	    "duplicates", (json_int_t)t->duplicates,
	    "lost", (json_int_t)lost,
	    "early", (json_int_t)t->early)) == NULL)
		return NULL;
	return with_lateness(o, v, n);
}

/* The "moved" object: messages of which a delivery carried a move id
 * (N of them, their first arrivals' lateness in V, sorted here), their
 * DUPS deliveries after the first, UNMOVED of them also delivered without
 * a move id, EARLY first arrivals before not-before, and the book's counts
 * of moved copies on the source and of messages moved under two ids. NULL
 * when out of memory. */
static json_t *
moved_object(const struct traffic_book *b, int64_t *v, size_t n, uint64_t dups,
    uint64_t unmoved, uint64_t early)
{
	json_t *o;

	if ((o = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I}", "delivered", (json_int_t)n,
	    "duplicates", (json_int_t)dups, "unmoved_copies", (json_int_t)unmoved,
	    "early", (json_int_t)early,
	    "on_source", (json_int_t)b->moved_on_source,
	    "id_changed", (json_int_t)b->move_id_changed)) == NULL)
		return NULL;
	return with_lateness(o, v, n);
}

json_t *
traffic_book_report(struct traffic_book *b, uint64_t *lost_out,
    uint64_t *early_out)
{
	int64_t *mv = NULL;
	size_t nmv = 0;
	uint64_t mdups = 0, munmoved = 0, mearly = 0;
	struct traffic_tally total;
	uint64_t lost[TRAFFIC_NPATHS] = { 0 };
	int64_t *lat[TRAFFIC_NPATHS] = { NULL }, *all = NULL;
	size_t nlat[TRAFFIC_NPATHS] = { 0 }, nall = 0;
	json_t *out = NULL, *o;
	uint64_t i;
	int p;

	pthread_mutex_lock(&b->mu);
	for (p = 0; p < TRAFFIC_NPATHS; p++)
		if (b->tally[p].delivered > 0 && (lat[p] = calloc(
		    (size_t)b->tally[p].delivered, sizeof(int64_t))) == NULL)
			goto done;
	if ((all = calloc((size_t)(b->tally[0].delivered +
	    b->tally[1].delivered) + 1, sizeof(int64_t))) == NULL ||
	    (mv = calloc((size_t)(b->tally[0].delivered +
	    b->tally[1].delivered) + 1, sizeof(int64_t))) == NULL)
		goto done;
	for (i = 0; i < b->nrecs; i++) {
		const struct traffic_rec *r = rec_at(b, i);

		if (r->deliveries == 0) {
			if (r->state == TRAFFIC_CONFIRMED)
				lost[r->path]++;
			continue;
		}
		if (nlat[r->path] < b->tally[r->path].delivered)
			lat[r->path][nlat[r->path]++] = r->arrived_ms -
			    r->not_before_ms;
		all[nall++] = r->arrived_ms - r->not_before_ms;
		if (r->moved > 0) {
			mv[nmv++] = r->arrived_ms - r->not_before_ms;
			mdups += r->deliveries - 1;
			munmoved += r->deliveries > r->moved;
			mearly += r->arrived_ms < r->not_before_ms;
		}
	}
	memset(&total, 0, sizeof(total));
	for (p = 0; p < TRAFFIC_NPATHS; p++) {
		const struct traffic_tally *t = &b->tally[p];

		total.sent += t->sent;
		total.pending += t->pending;
		total.confirmed += t->confirmed;
		total.nacked += t->nacked;
		total.returned += t->returned;
		total.unconfirmed += t->unconfirmed;
		total.delivered += t->delivered;
		total.delivered_confirmed += t->delivered_confirmed;
		total.duplicates += t->duplicates;
		total.early += t->early;
	}
	if ((out = json_object()) == NULL)
		goto done;
	for (p = 0; p < TRAFFIC_NPATHS; p++)
		if ((o = path_object(&b->tally[p], lost[p], lat[p], nlat[p])) ==
		    NULL || json_object_set_new(out, traffic_path_name(p), o) != 0)
			goto fail;
	if ((o = path_object(&total, lost[0] + lost[1], all, nall)) == NULL ||
	    json_object_set_new(out, "total", o) != 0 ||
	    (o = moved_object(b, mv, nmv, mdups, munmoved, mearly)) == NULL ||
	    json_object_set_new(out, "moved", o) != 0 ||
	    (o = json_pack("{s:I,s:I}", "source", (json_int_t)b->on_source,
	    "target", (json_int_t)b->on_target)) == NULL ||
	    json_object_set_new(out, "arrivals", o) != 0)
		goto fail;
	*lost_out = lost[0] + lost[1];
	*early_out = total.early;
	goto done;
fail:
	json_decref(out);
	out = NULL;
done:
	pthread_mutex_unlock(&b->mu);
	for (p = 0; p < TRAFFIC_NPATHS; p++)
		free(lat[p]);
	free(all);
	free(mv);
	return out;
}
