/* traffic: `cutover-traffic`, the traffic simulator of tests/e2e/. It plays
 * the producer a migration is done under: an old-style producer that
 * creates one queue per distinct delay (PREFIX.<n>ms, TTL n, dead-lettering
 * to the destination) and publishes into it (or, with --old-ladder, into
 * the plan's old.ladder), until the feature flag says to publish into the
 * plan's ladder instead (on the target broker when the plan names one).
 * Consumers on the destination queues (on both brokers then) record every
 * arrival; at the end it reports, per path and in total, what was sent,
 * confirmed, delivered, duplicated, lost and early, and the lateness (and
 * what arrived moved by move_old), and exits 0 only when nothing confirmed
 * was lost and nothing came early. See usage() in traffic_options.c and
 * tests/e2e/README.md. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/rand.h>

#include "broker/broker.h"
#include "duration.h"
#include "hex.h"
#include "ladder.h"
#include "log.h"
#include "plan.h"
#include "plan_flag.h"
#include "publish.h"
#include "step.h"
#include "topology.h"
#include "traffic.h"

#define OPEN_TIMEOUT_MS		5000	/* connect and every request */
#define BATCH_MAX		512	/* messages published per confirm wait */
#define TICK_MS			20	/* a batch at most every tick */
#define BACKOFF_MS		100	/* after a connection failure, doubling */
#define BACKOFF_MAX_MS		2000
#define LOGGED_ERRORS		10	/* then one in LOG_EVERY */
#define LOG_EVERY		1000

/* The only global: what the signal handler saw. */
static volatile sig_atomic_t got_signal;

/* What the producer's batch decided for one message. */
struct pick {
	size_t dest;
	size_t step;			/* delay = min + step x step_ms */
	int64_t delay_ms;
	bool skip;			/* its old queue could not be declared */
};

struct producer {
	const struct traffic_options *o;
	const struct plan *p;
	struct broker *b;		/* the old path's broker */
	struct broker *lb;		/* the ladder's: B unless the plan has
					 * a target */
	struct traffic_book *book;
	struct traffic_flag *flag;
	char run[TRAFFIC_RUN_MAX];
	uint64_t rng;
	size_t nsteps;			/* distinct delays */
	bool *declared;			/* [dest x nsteps + step] */
	uint64_t old_queues;		/* distinct old queues declared */
	uint64_t declare_errors;
	uint64_t skipped;		/* scheduled, never attempted */
	uint64_t logged;
	bool down;			/* the connection failed, not back yet */
	bool pause;			/* back off before the next batch */
	int64_t backoff_ms;
	struct pick picks[BATCH_MAX];
	uint64_t seqs[BATCH_MAX];	/* of each message published in a batch */
	size_t pidx[BATCH_MAX];		/* and its pick */
	int results[BATCH_MAX];
};

static void
on_signal(int sig)
{
	(void)sig;
	if (got_signal < 100)
		got_signal++;
}

/* xorshift64*: the delays and destinations, reproducible with --seed. */
static uint64_t
rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/* A uniform number below N (N > 0). */
static uint64_t
rng_below(uint64_t *s, uint64_t n)
{
	uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;

	while ((x = rng_next(s)) >= lim)
		;
	return x % n;
}

/* Writes the old queue of delay DELAY_MS to destination DEST. */
static void
old_queue_name(const struct producer *pr, size_t dest, int64_t delay_ms,
    char *out, size_t outlen)
{
	if (pr->o->ndests == 1)
		snprintf(out, outlen, "%s.%" PRId64 "ms", pr->o->old_prefix,
		    delay_ms);
	else
		snprintf(out, outlen, "%s.%s.%" PRId64 "ms", pr->o->old_prefix,
		    pr->o->dests[dest], delay_ms);
}

/* Logs a producer failure: the first few, then one in LOG_EVERY. */
static void
log_failure(struct producer *pr, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
log_failure(struct producer *pr, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (pr->logged++ >= LOGGED_ERRORS && pr->logged % LOG_EVERY != 0)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_event("warn", pr->p->name, "traffic", "%s%s", msg,
	    pr->logged == LOGGED_ERRORS ? " (from now on one failure in 1000 "
	    "is logged)" : "");
}

static bool
is_connection_failure(int rc)
{
	return rc == BROKER_ELOST || rc == BROKER_ECONNECT ||
	    rc == BROKER_ETIMEOUT || rc == BROKER_EAUTH;
}

/* Notes the outcome of a broker call: a connection failure after a working
 * connection is one loss; the next call reconnects. */
static void
note_call(struct producer *pr, int rc)
{
	if (rc == 0) {
		pr->down = false;
		pr->backoff_ms = BACKOFF_MS;
		return;
	}
	if (!is_connection_failure(rc))
		return;
	if (!pr->down)
		traffic_book_loss(pr->book, false, 1);
	pr->down = true;
	pr->pause = true;
}

/* Declares the old queue of PK (classic, durable, x-message-ttl = the
 * delay, dead-lettering through the default exchange to the destination),
 * once per run unless a publish into it came back. Returns 0, or the
 * broker's negative code. */
static int
declare_old(struct producer *pr, const struct pick *pk)
{
	struct topology_arg args[3];
	char name[LADDER_NAME_MAX], err[1024];
	size_t slot = pk->dest * pr->nsteps + pk->step;
	int rc;

	if (pr->declared[slot])
		return 0;
	old_queue_name(pr, pk->dest, pk->delay_ms, name, sizeof(name));
	memset(args, 0, sizeof(args));
	snprintf(args[0].key, sizeof(args[0].key), "x-message-ttl");
	args[0].is_int = true;
	args[0].num = pk->delay_ms;
	snprintf(args[1].key, sizeof(args[1].key), "x-dead-letter-exchange");
	snprintf(args[2].key, sizeof(args[2].key),
	    "x-dead-letter-routing-key");
	snprintf(args[2].str, sizeof(args[2].str), "%s",
	    pr->o->dests[pk->dest]);
	rc = broker_queue_declare(pr->b, name, true, args, 3, err,
	    sizeof(err));
	note_call(pr, rc);
	if (rc != 0) {
		pr->declare_errors++;
		log_failure(pr, "declaring old queue %s: %s", name, err);
		return rc;
	}
	pr->declared[slot] = true;
	pr->old_queues++;
	return 0;
}

static enum traffic_state
state_of(int result)
{
	switch (result) {
	case BROKER_OK:
		return TRAFFIC_CONFIRMED;
	case BROKER_ENACKED:
		return TRAFFIC_NACKED;
	case BROKER_ERETURNED:
		return TRAFFIC_RETURNED;
	default:
		/* Lost, timed out, channel closed: it may have been taken. */
		return TRAFFIC_UNCONFIRMED;
	}
}

/* Publishes one message of PK on PATH without waiting. Returns what
 * broker_publish_async returns (or BROKER_ERR for a message that cannot be
 * built), with ERR; *SEQ is its number in the book, or UINT64_MAX when it
 * did not get one. */
static int
send_one(struct producer *pr, const struct pick *pk, enum traffic_path path,
    uint64_t *seq, char *err, size_t errlen)
{
	const struct ladder *l = path == TRAFFIC_LADDER ? &pr->p->ladder :
	    &pr->p->old.ladder;
	const char *dest = pr->o->dests[pk->dest];
	struct broker_field hdr[7];
	struct broker_message m;
	char exchange[LADDER_NAME_MAX], key[LADDER_KEY_MAX + 1];
	char id[PUBLISH_ID_MAX], body[160];
	int64_t not_before;
	uint64_t units;
	int n;

	*seq = UINT64_MAX;
	if (path == TRAFFIC_LADDER || pr->o->old_ladder) {
		if (ladder_encode(l, pk->delay_ms, &units, err, errlen) != 0 ||
		    ladder_routing_key(l, units, dest, key, sizeof(key), err,
		    errlen) != 0)
			return BROKER_ERR;
		ladder_entry_exchange(l, units, exchange, sizeof(exchange));
	} else {
		exchange[0] = '\0';
		old_queue_name(pr, pk->dest, pk->delay_ms, key, sizeof(key));
	}
	not_before = traffic_wall_ms() + pk->delay_ms;
	if (traffic_book_add(pr->book, path, not_before, seq, err, errlen) != 0)
		return BROKER_ERR;
	snprintf(id, sizeof(id), "traffic.%s.%" PRIu64, pr->run, *seq);
	n = snprintf(body, sizeof(body), "{\"seq\":%" PRIu64 ",\"path\":\"%s\","
	    "\"delay_ms\":%" PRId64 "}", *seq, traffic_path_name(path),
	    pk->delay_ms);
	memset(hdr, 0, sizeof(hdr));
	hdr[0].key = PUBLISH_HDR_PLAN;
	hdr[0].str = pr->p->name;
	hdr[1].key = PUBLISH_HDR_PURPOSE;
	hdr[1].str = TRAFFIC_PURPOSE;
	hdr[2].key = PUBLISH_HDR_SEQ;
	hdr[2].is_int = true;
	hdr[2].num = (int64_t)*seq;
	hdr[3].key = PUBLISH_HDR_DELAY;
	hdr[3].is_int = true;
	hdr[3].num = pk->delay_ms;
	hdr[4].key = PUBLISH_HDR_NOT_BEFORE;
	hdr[4].is_int = true;
	hdr[4].num = not_before;
	hdr[5].key = TRAFFIC_HDR_PATH;
	hdr[5].str = traffic_path_name(path);
	hdr[6].key = TRAFFIC_HDR_RUN;
	hdr[6].str = pr->run;
	memset(&m, 0, sizeof(m));
	m.exchange = exchange;
	m.routing_key = key;
	m.body = body;
	m.len = n > 0 && (size_t)n < sizeof(body) ? (size_t)n : 0;
	m.headers = hdr;
	m.nheaders = 7;
	m.message_id = id;
	m.content_type = "application/json";
	m.mandatory = true;
	if (pr->o->stamp_percent > 0 && ((int64_t)(*seq % 100) < pr->o->stamp_percent ||
	    (pr->o->unstamped_max_ms > 0 && pk->delay_ms > pr->o->unstamped_max_ms)))
		m.timestamp = (uint64_t)((not_before - pk->delay_ms) / 1000);
	return broker_publish_async(path == TRAFFIC_LADDER ? pr->lb : pr->b, &m,
	    err, errlen);
}

/* Sends N messages (N <= BATCH_MAX) on the path the flag says, then waits
 * for their confirms and records each verdict. */
static void
produce_batch(struct producer *pr, size_t n)
{
	enum traffic_path path = traffic_flag_get(pr->flag) ? TRAFFIC_LADDER :
	    TRAFFIC_OLD;
	struct pick *pk;
	size_t i, npub = 0, np = 0, nbad = 0;
	uint64_t seq;
	char err[1024];
	int rc;

	for (i = 0; i < n; i++) {
		pk = &pr->picks[i];
		pk->dest = (size_t)rng_below(&pr->rng, pr->o->ndests);
		pk->step = (size_t)rng_below(&pr->rng, pr->nsteps);
		pk->delay_ms = pr->o->min_delay_ms + (int64_t)pk->step *
		    pr->o->step_ms;
		pk->skip = false;
	}
	/* Declares first: no request while publishes await their confirms.
	 * A queue the broker refuses is skipped; a lost connection skips the
	 * rest of the batch. */
	for (i = 0; path == TRAFFIC_OLD && !pr->o->old_ladder && i < n; i++) {
		rc = declare_old(pr, &pr->picks[i]);
		pr->picks[i].skip = rc != 0;
		if (is_connection_failure(rc)) {
			while (++i < n)
				pr->picks[i].skip = true;
		}
	}
	for (i = 0; i < n; i++) {
		pk = &pr->picks[i];
		if (pk->skip) {
			pr->skipped++;
			continue;
		}
		rc = send_one(pr, pk, path, &seq, err, sizeof(err));
		if (rc == 0) {
			pr->seqs[npub] = seq;
			pr->pidx[npub++] = i;
			continue;
		}
		/* Lost while sending: it may have gone out. Anything else:
		 * it did not. */
		note_call(pr, rc);
		if (seq != UINT64_MAX)
			traffic_book_settle(pr->book, seq, rc == BROKER_ELOST ?
			    TRAFFIC_UNCONFIRMED : TRAFFIC_NOT_SENT);
		log_failure(pr, "publishing on the %s path: %s",
		    traffic_path_name(path), err);
		pr->skipped += n - i - 1;
		break;
	}
	if (npub == 0)
		return;
	rc = broker_wait_confirms(path == TRAFFIC_LADDER ? pr->lb : pr->b,
	    (int)pr->o->confirm_timeout_ms,
	    pr->results, npub, &np, err, sizeof(err));
	if (np != npub)
		log_failure(pr, "%zu messages awaited confirms, %zu expected",
		    np, npub);
	for (i = 0; i < npub; i++) {
		int r = i < np ? pr->results[i] : BROKER_ELOST;

		traffic_book_settle(pr->book, pr->seqs[i], state_of(r));
		if (r != 0)
			nbad++;
		if (r == BROKER_ERETURNED && path == TRAFFIC_OLD &&
		    !pr->o->old_ladder) {
			/* Its queue is gone (deleted under us): declare it
			 * again next time. */
			pk = &pr->picks[pr->pidx[i]];
			if (pr->declared[pk->dest * pr->nsteps + pk->step]) {
				pr->declared[pk->dest * pr->nsteps + pk->step] =
				    false;
				pr->old_queues--;
			}
		}
	}
	note_call(pr, rc);
	if (rc != 0)
		log_failure(pr, "%zu of %zu messages on the %s path not "
		    "confirmed: %s", nbad, npub, traffic_path_name(path), err);
}

/* Makes sure every destination queue exists on broker B, declaring a
 * missing one as the plan's ladder would (never touching an existing one),
 * so that what the old queues dead-letter has somewhere to go. Returns 0
 * or -1. */
static int
ensure_destinations(struct producer *pr, struct broker *b, char *err,
    size_t errlen)
{
	struct topology t;
	char why[1024];
	size_t i, j;
	int rc = -1, st;

	if (topology_build(pr->p, &t, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "%s", why);
		return -1;
	}
	for (i = 0; i < pr->o->ndests; i++) {
		const struct topology_queue *q = NULL;

		for (j = 0; j < t.nqueues; j++)
			if (t.queues[j].role == TOPOLOGY_DESTINATION &&
			    strcmp(t.queues[j].name, pr->o->dests[i]) == 0)
				q = &t.queues[j];
		if (q == NULL) {
			snprintf(err, errlen, "destination %s: not in the plan's "
			    "topology", pr->o->dests[i]);
			goto done;
		}
		st = broker_queue_inspect(b, q->name, NULL, why, sizeof(why));
		if (st == 0)
			continue;
		if (st == BROKER_NOT_FOUND)
			st = broker_queue_declare(b, q->name, true, q->args,
			    q->nargs, why, sizeof(why));
		if (st != 0) {
			snprintf(err, errlen, "destination queue %.255s: %.700s",
			    q->name, why);
			goto done;
		}
		log_event("info", pr->p->name, "traffic", "declared destination "
		    "queue %s%s, which did not exist", q->name, b != pr->lb ?
		    " on the source broker" : "");
	}
	rc = 0;
done:
	topology_free(&t);
	return rc;
}

/* One progress line on stderr. */
static void
progress(struct producer *pr, const char *phase, int64_t start_ms,
    uint64_t *last_confirmed, int64_t *last_ms)
{
	struct traffic_tally t[TRAFFIC_NPATHS];
	uint64_t confirmed, inflight, unconfirmed, failed;
	int64_t now = traffic_mono_ms();
	double rate;

	traffic_book_tally(pr->book, t);
	confirmed = t[0].confirmed + t[1].confirmed;
	inflight = confirmed - t[0].delivered_confirmed -
	    t[1].delivered_confirmed;
	unconfirmed = t[0].unconfirmed + t[1].unconfirmed;
	failed = t[0].nacked + t[0].returned + t[1].nacked + t[1].returned;
	rate = now > *last_ms ? (double)(confirmed - *last_confirmed) * 1000.0 /
	    (double)(now - *last_ms) : 0.0;
	log_event("info", pr->p->name, "traffic", "%s t=%.0fs rate=%.0f/s "
	    "flag=%s sent old=%" PRIu64 " ladder=%" PRIu64 " confirmed=%"
	    PRIu64 " delivered=%" PRIu64 " in_flight=%" PRIu64 " unconfirmed=%"
	    PRIu64 " nacked_or_returned=%" PRIu64 " old_queues=%" PRIu64, phase,
	    (double)(now - start_ms) / 1000.0, rate,
	    traffic_flag_get(pr->flag) ? "on" : "off", t[0].sent, t[1].sent,
	    confirmed, t[0].delivered + t[1].delivered, inflight, unconfirmed,
	    failed, pr->old_queues);
	*last_confirmed = confirmed;
	*last_ms = now;
}

static uint64_t
get_u(const json_t *o, const char *path, const char *key)
{
	return (uint64_t)json_integer_value(json_object_get(
	    json_object_get(o, path), key));
}

/* The report as text, from its JSON. */
static void
print_text(const json_t *r, FILE *f)
{
	static const char *const rows[] = { "old", "ladder", "total" };
	const json_t *flag = json_object_get(r, "flag");
	const json_t *on = json_object_get(flag, "first_on_s");
	const json_t *lat;

	fprintf(f, "cutover-traffic: run %s, plan %s: produced %.1f s at %"
	    JSON_INTEGER_FORMAT " msg/s, drain %.1f s (%s)\n",
	    json_string_value(json_object_get(r, "run")),
	    json_string_value(json_object_get(r, "plan")),
	    json_real_value(json_object_get(r, "produced_s")),
	    json_integer_value(json_object_get(r, "rate")),
	    json_real_value(json_object_get(r, "drain_s")),
	    json_is_true(json_object_get(r, "drained")) ? "every confirmed "
	    "message arrived" : "timed out or interrupted");
	fprintf(f, "flag (%s): ", json_string_value(json_object_get(flag,
	    "source")));
	if (json_is_real(on))
		fprintf(f, "on at %.1f s", json_real_value(on));
	else
		fprintf(f, "never on");
	fprintf(f, ", %" JSON_INTEGER_FORMAT " change(s), %" JSON_INTEGER_FORMAT
	    " read(s), %" JSON_INTEGER_FORMAT " read error(s)\n",
	    json_integer_value(json_object_get(flag, "changes")),
	    json_integer_value(json_object_get(flag, "reads")),
	    json_integer_value(json_object_get(flag, "errors")));
	fprintf(f, "%-7s %8s %9s %6s %8s %11s %9s %10s %6s %6s %7s %7s %7s\n",
	    "path", "sent", "confirmed", "nacked", "returned", "unconfirmed",
	    "delivered", "duplicates", "lost", "early", "p50 ms", "p99 ms",
	    "max ms");
	for (size_t i = 0; i < 3; i++) {
		fprintf(f, "%-7s %8" PRIu64 " %9" PRIu64 " %6" PRIu64 " %8"
		    PRIu64 " %11" PRIu64 " %9" PRIu64 " %10" PRIu64 " %6" PRIu64
		    " %6" PRIu64, rows[i], get_u(r, rows[i], "sent"),
		    get_u(r, rows[i], "confirmed"), get_u(r, rows[i], "nacked"),
		    get_u(r, rows[i], "returned"),
		    get_u(r, rows[i], "unconfirmed"),
		    get_u(r, rows[i], "delivered"),
		    get_u(r, rows[i], "duplicates"), get_u(r, rows[i], "lost"),
		    get_u(r, rows[i], "early"));
		lat = json_object_get(json_object_get(r, rows[i]),
		    "lateness_ms");
		if (json_is_object(lat))
			fprintf(f, " %7" JSON_INTEGER_FORMAT " %7"
			    JSON_INTEGER_FORMAT " %7" JSON_INTEGER_FORMAT "\n",
			    json_integer_value(json_object_get(lat, "p50")),
			    json_integer_value(json_object_get(lat, "p99")),
			    json_integer_value(json_object_get(lat, "max")));
		else
			fprintf(f, " %7s %7s %7s\n", "-", "-", "-");
	}
	fprintf(f, "old queues declared: %" JSON_INTEGER_FORMAT "; not sent: %"
	    JSON_INTEGER_FORMAT "; skipped: %" JSON_INTEGER_FORMAT "; foreign "
	    "deliveries: %" JSON_INTEGER_FORMAT "; connection losses: producer %"
	    JSON_INTEGER_FORMAT ", consumers %" JSON_INTEGER_FORMAT "\n",
	    json_integer_value(json_object_get(r, "old_queues")),
	    json_integer_value(json_object_get(r, "not_sent")),
	    json_integer_value(json_object_get(r, "skipped")),
	    json_integer_value(json_object_get(r, "foreign")),
	    json_integer_value(json_object_get(json_object_get(r,
	    "connection_losses"), "producer")),
	    json_integer_value(json_object_get(json_object_get(r,
	    "connection_losses"), "consumers")));
	lat = json_object_get(json_object_get(r, "moved"), "lateness_ms");
	if (json_is_object(lat))
		fprintf(f, "moved (a move id): %" PRIu64 " messages, %" PRIu64
		    " duplicates (%" PRIu64 " also delivered unmoved), %" PRIu64
		    " early, %" PRIu64 " read on the "
		    "source, %" PRIu64 " under two ids; lateness min %"
		    JSON_INTEGER_FORMAT " p50 %" JSON_INTEGER_FORMAT " p99 %"
		    JSON_INTEGER_FORMAT " max %" JSON_INTEGER_FORMAT " ms\n",
		    get_u(r, "moved", "delivered"),
		    get_u(r, "moved", "duplicates"),
		    get_u(r, "moved", "unmoved_copies"), get_u(r, "moved", "early"),
		    get_u(r, "moved", "on_source"),
		    get_u(r, "moved", "id_changed"),
		    json_integer_value(json_object_get(lat, "min")),
		    json_integer_value(json_object_get(lat, "p50")),
		    json_integer_value(json_object_get(lat, "p99")),
		    json_integer_value(json_object_get(lat, "max")));
	fprintf(f, "%s: lost %" PRIu64 ", early %" PRIu64 ", confirmed %"
	    PRIu64 "\n", json_is_true(json_object_get(r, "ok")) ? "PASS" :
	    "FAIL", get_u(r, "total", "lost"), get_u(r, "total", "early"),
	    get_u(r, "total", "confirmed"));
}

/* Builds the whole report; stores whether the run passed in *OK. Returns
 * a new object, or NULL when out of memory. */
static json_t *
build_report(struct producer *pr, int64_t produced_ms, int64_t drain_ms,
    bool drained, int64_t start_ms, bool *ok)
{
	json_t *r = NULL, *paths;
	uint64_t lost = 0, early = 0, foreign, ploss, closs, not_sent;

	*ok = false;
	if ((paths = traffic_book_report(pr->book, &lost, &early)) == NULL)
		return NULL;
	pthread_mutex_lock(&pr->book->mu);
	foreign = pr->book->foreign;
	ploss = pr->book->producer_losses;
	closs = pr->book->consumer_losses;
	not_sent = pr->book->not_sent;
	pthread_mutex_unlock(&pr->book->mu);
	*ok = lost == 0 && early == 0 &&
	    get_u(paths, "total", "confirmed") > 0;
	r = json_pack("{s:s,s:s,s:b,s:I,s:f,s:f,s:b,s:{s:I,s:I,s:I},s:I,s:I,"
	    "s:I,s:I,s:I,s:{s:I,s:I}}",
	    "run", pr->run,
	    "plan", pr->p->name,
	    "ok", *ok,
	    "rate", (json_int_t)pr->o->rate,
	    "produced_s", (double)produced_ms / 1000.0,
	    "drain_s", (double)drain_ms / 1000.0,
	    "drained", drained,
	    "delays_ms", "min", (json_int_t)pr->o->min_delay_ms,
	    "max", (json_int_t)pr->o->max_delay_ms,
	    "step", (json_int_t)pr->o->step_ms,
	    "old_queues", (json_int_t)pr->old_queues,
	    "declare_errors", (json_int_t)pr->declare_errors,
	    "not_sent", (json_int_t)not_sent,
	    "skipped", (json_int_t)pr->skipped,
	    "foreign", (json_int_t)foreign,
	    "connection_losses", "producer", (json_int_t)ploss,
	    "consumers", (json_int_t)closs);
	if (r == NULL || json_object_update(r, paths) != 0) {
		json_decref(r);
		r = NULL;
	} else
		traffic_flag_report(pr->flag, start_ms, r);
	json_decref(paths);
	return r;
}

/* Makes up the run's id and, without --seed, the seed. Returns 0 or -1. */
static int
make_run(struct producer *pr)
{
	unsigned char rnd[14];

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	hex_encode(rnd, 6, pr->run);
	if (pr->o->seeded)
		pr->rng = pr->o->seed;
	else
		memcpy(&pr->rng, rnd + 6, sizeof(pr->rng));
	/* xorshift must not start at zero; mix so that small seeds spread. */
	pr->rng = (pr->rng ^ 0x9E3779B97F4A7C15ULL) * 0xBF58476D1CE4E5B9ULL;
	if (pr->rng == 0)
		pr->rng = 1;
	return 0;
}

int
main(int argc, char **argv)
{
	struct traffic_options o;
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	struct traffic_book book;
	struct traffic_flag flag;
	struct traffic_consumer cons[2 * TRAFFIC_DESTS_MAX];
	struct producer *pr = NULL;
	struct sigaction sa;
	sigset_t block, old;
	json_t *report = NULL;
	char err[1024], line[512], *out;
	uint64_t planned = 0, due, last_confirmed = 0;
	int64_t start, now, produced_ms, drain_start, drain_ms, next_progress;
	int64_t last_ms, wait, next_batch;
	size_t i, ncons = 0;
	bool book_ok = false, curl_ok = false, drained = false, ok = false;
	int rc, sig_at_end, exit_code = TRAFFIC_EXIT_FAIL;

	memset(&flag, 0, sizeof(flag));
	memset(cons, 0, sizeof(cons));
	if ((rc = traffic_options_parse(argc, argv, &o)) != 0)
		return rc == 1 ? TRAFFIC_EXIT_PASS : rc;
	if (plan_load_file(o.plan_file, &p, &errs) != 0) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line,
			    sizeof(line)));
		plan_errors_free(&errs);
		return TRAFFIC_EXIT_FAIL;
	}
	if ((rc = traffic_options_check(&o, p, &flag)) != 0) {
		exit_code = rc;
		goto done;
	}
	if ((pr = calloc(1, sizeof(*pr))) == NULL) {
		fprintf(stderr, "cutover-traffic: out of memory\n");
		goto done;
	}
	pr->o = &o;
	pr->p = p;
	pr->book = &book;
	pr->flag = &flag;
	pr->backoff_ms = BACKOFF_MS;
	pr->nsteps = (size_t)((o.max_delay_ms - o.min_delay_ms) / o.step_ms + 1);
	if ((pr->declared = calloc(o.ndests * pr->nsteps, sizeof(bool))) ==
	    NULL || make_run(pr) != 0) {
		fprintf(stderr, "cutover-traffic: out of memory or no random "
		    "bytes\n");
		goto done;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
		fprintf(stderr, "cutover-traffic: libcurl would not initialise\n");
		goto done;
	}
	curl_ok = true;
	if (traffic_book_init(&book, err, sizeof(err)) != 0) {
		fprintf(stderr, "cutover-traffic: %s\n", err);
		goto done;
	}
	book_ok = true;

	/* Signals: counted in the main thread only; the others block them. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);

	/* With a target, the old path is on the source and the ladder on
	 * the target: a connection each, and the destinations on both (the
	 * old path delivers on the source what comes due before the move). */
	if ((rc = step_broker_open(&p->broker, OPEN_TIMEOUT_MS, &pr->b, err, sizeof(err))) != 0 ||
	    (p->has_target && (rc = step_broker_open(&p->target, OPEN_TIMEOUT_MS,
	    &pr->lb, err, sizeof(err))) != 0)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "cutover-traffic: %s\n", err);
		goto done;
	}
	if (!p->has_target)
		pr->lb = pr->b;
	if (ensure_destinations(pr, pr->lb, err, sizeof(err)) != 0 ||
	    (p->has_target && ensure_destinations(pr, pr->b, err,
	    sizeof(err)) != 0)) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "cutover-traffic: %s\n", err);
		goto done;
	}
	if (traffic_flag_start(&flag, err, sizeof(err)) != 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		fprintf(stderr, "cutover-traffic: %s\n", err);
		goto done;
	}
	for (i = 0; i < (p->has_target ? 2 : 1) * o.ndests; i++) {
		cons[i].book = &book;
		cons[i].plan = p;
		cons[i].source = i >= o.ndests;
		cons[i].broker_at = cons[i].source ? &p->broker :
		    plan_ladder_broker(p);
		cons[i].queue = o.dests[i % o.ndests];
		cons[i].run = pr->run;
		if (traffic_consumer_start(&cons[i], err, sizeof(err)) != 0) {
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			fprintf(stderr, "cutover-traffic: %s\n", err);
			goto done;
		}
		ncons++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);

	log_event("info", p->name, "traffic", "run %s: %" PRId64 " msg/s to %zu "
	    "destination(s), delays %" PRId64 "..%" PRId64 " ms in steps of %"
	    PRId64 " ms, flag %s", pr->run, o.rate, o.ndests, o.min_delay_ms,
	    o.max_delay_ms, o.step_ms, traffic_flag_get(&flag) ? "on" : "off");

	/* Produce: as many messages as the rate says by now, in batches. */
	start = last_ms = traffic_mono_ms();
	next_progress = start + o.progress_ms;
	next_batch = start;
	while (got_signal == 0) {
		now = traffic_mono_ms();
		if (o.duration_ms > 0 && now - start >= o.duration_ms)
			break;
		if (o.progress_ms > 0 && now >= next_progress) {
			progress(pr, "producing", start, &last_confirmed,
			    &last_ms);
			next_progress = now + o.progress_ms;
		}
		if (pr->pause) {
			/* A connection failure: wait before the next try. */
			traffic_sleep_ms(pr->backoff_ms);
			pr->backoff_ms = pr->backoff_ms * 2 > BACKOFF_MAX_MS ?
			    BACKOFF_MAX_MS : pr->backoff_ms * 2;
			pr->pause = false;
			now = traffic_mono_ms();
		}
		due = (uint64_t)((now - start) * o.rate / 1000) - planned;
		if (due > (uint64_t)o.rate) {
			/* More than a second behind: what was missed stays
			 * missed, as with a real producer that gave up. */
			pr->skipped += due - (uint64_t)o.rate;
			planned += due - (uint64_t)o.rate;
			due = (uint64_t)o.rate;
		}
		/* One batch per tick at most, so that confirms are waited
		 * for in batches: 4 messages a batch at 200 msg/s. */
		if (due == 0 || now < next_batch) {
			wait = (int64_t)((planned + 1) * 1000 / (uint64_t)o.rate) -
			    (now - start);
			if (wait < next_batch - now)
				wait = next_batch - now;
			traffic_sleep_ms(wait < 1 ? 1 : wait > TICK_MS ? TICK_MS :
			    wait);
			continue;
		}
		if (due > BATCH_MAX)
			due = BATCH_MAX;
		next_batch = now + TICK_MS;
		produce_batch(pr, (size_t)due);
		planned += due;
	}
	produced_ms = traffic_mono_ms() - start;
	sig_at_end = got_signal;
	log_event("info", p->name, "traffic", "stopped producing after %.1f s "
	    "(%s); draining for at most %.1f s", (double)produced_ms / 1000.0,
	    sig_at_end ? "signal" : "duration",
	    (double)o.drain_timeout_ms / 1000.0);

	/* Drain: until every confirmed message arrived, or the timeout, or
	 * another signal. */
	drain_start = traffic_mono_ms();
	for (;;) {
		struct traffic_tally t[TRAFFIC_NPATHS];

		traffic_book_tally(&book, t);
		if (t[0].confirmed + t[1].confirmed == t[0].delivered_confirmed +
		    t[1].delivered_confirmed) {
			drained = true;
			break;
		}
		now = traffic_mono_ms();
		if (got_signal != sig_at_end ||
		    now - drain_start >= o.drain_timeout_ms)
			break;
		if (o.progress_ms > 0 && now >= next_progress) {
			progress(pr, "draining", start, &last_confirmed,
			    &last_ms);
			next_progress = now + o.progress_ms;
		}
		traffic_sleep_ms(100);
	}
	drain_ms = traffic_mono_ms() - drain_start;

	traffic_flag_stop(&flag);
	for (i = 0; i < ncons; i++)
		traffic_consumer_stop(&cons[i]);
	ncons = 0;
	if ((report = build_report(pr, produced_ms, drain_ms, drained, start,
	    &ok)) == NULL) {
		fprintf(stderr, "cutover-traffic: out of memory for the report\n");
		goto done;
	}
	if (o.json) {
		if ((out = json_dumps(report, JSON_COMPACT |
		    JSON_REAL_PRECISION(9))) == NULL) {
			fprintf(stderr, "cutover-traffic: out of memory\n");
			goto done;
		}
		printf("%s\n", out);
		free(out);
	} else
		print_text(report, stdout);
	fflush(stdout);
	exit_code = ok ? TRAFFIC_EXIT_PASS : TRAFFIC_EXIT_FAIL;
done:
	json_decref(report);
	traffic_flag_free(&flag);
	for (i = 0; i < ncons; i++)
		traffic_consumer_stop(&cons[i]);
	if (pr != NULL) {
		if (pr->lb != pr->b)
			broker_close(pr->lb);
		broker_close(pr->b);
		free(pr->declared);
		free(pr);
	}
	if (book_ok)
		traffic_book_free(&book);
	if (curl_ok)
		curl_global_cleanup();
	plan_free(p);
	return exit_code;
}
