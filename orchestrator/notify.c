/* notify: the notifiers' threads (notify.h). One, the filler, takes the
 * events each notifier has not looked at yet into pending deliveries
 * (moving the notifier's cursor in the same transaction): database work
 * only, so a pending delivery is recorded, and counted, however long its
 * receiver takes. Then one sender per notifier sends what is due of its
 * own, one delivery at a time, each attempt recorded with its outcome, and
 * waits for the next poll, the filler's nudge or the stop. A 2xx is
 * delivered; a 4xx other than 408 and 429 fails at once (the receiver
 * refuses it); anything else is tried again after the notifier's backoff,
 * doubled each time (at most 5 min), until its attempts are spent. A
 * delivery whose POST got through but whose record did not (the process
 * killed in between) is sent again on restart: at least once, never lost.
 * The threads share only the mutex below; each has its own store
 * connection, and a sender its own libcurl handle per attempt. */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>

#include "clock.h"
#include "errbuf.h"
#include "log.h"
#include "notify.h"
#include "notify_body.h"
#include "store.h"
#include "store_notify.h"

#define POLL_MS			250
#define EVENTS_PER_TURN		256
#define CONNECT_TIMEOUT_MS	5000
#define REQUEST_TIMEOUT_MS	10000
#define BACKOFF_MAX_MS		(5 * 60 * 1000)
#define URL_MAX			4096

/* One notifier's sender and what it owns. */
struct worker {
	struct notify *n;
	const struct serve_notifier *nt;
	struct store *s;		/* its own connection */
	int64_t settled;		/* under n->mu: how far the filler had gone
					 * when a pass of this sender left nothing due;
					 * -1 before the first */
	pthread_t thread;
	int started;
	/* Under n->mu: the notification of the service itself waiting to go
	 * (notify_service), its attempts so far, when the next is due
	 * (monotonic ms) and its generation (a newer one replaces it). */
	char *svc_body;
	char svc_event[32];
	int svc_attempts;
	int64_t svc_due;
	unsigned long svc_gen;
};

struct notify {
	const struct serve_config *c;
	struct worker *w;		/* one sender per notifier */
	struct store *s;		/* the filler's connection */
	int64_t *cursors;		/* the filler's, per notifier: the last event
					 * looked at */
	pthread_t filler;
	int filler_started;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* the threads wait on it: a nudge, the stop */
	pthread_cond_t settled_cv;	/* notify_flush waits on it */
	int64_t filled;			/* every notifier's deliveries are recorded up
					 * to this event (the least cursor) */
	unsigned long fill_nudges;	/* bumped by notify_flush, for the filler */
	unsigned long send_nudges;	/* bumped by the filler and notify_flush */
	char svc_said[32];		/* the service event said last ("": none) */
	int stop;
};

static int
stopping(struct notify *n)
{
	int v;

	pthread_mutex_lock(&n->mu);
	v = n->stop;
	pthread_mutex_unlock(&n->mu);
	return v;
}

/* REALTIME now plus MS, for pthread_cond_timedwait. */
static struct timespec
after_ms(int64_t ms)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	t.tv_sec += t.tv_nsec / 1000000000L;
	t.tv_nsec %= 1000000000L;
	return t;
}

/* What one event becomes for the notifier being filled. */
struct fill {
	struct store *s;
	const struct serve_notifier *nt;
	int64_t last_id;
	int failed;
	char *err;
	size_t errlen;
};

static int
fill_one(const struct store_event *ev, void *arg)
{
	struct fill *f = arg;
	enum notify_event e;

	f->last_id = ev->id;
	if (serve_notify_event_of(ev->kind, &e) != 0 || !(f->nt->events & (1u << e)))
		return 0;
	if (store_notify_enqueue(f->s, f->nt->name, serve_notify_kind_name(f->nt->kind),
	    ev->id, ev->plan_id, serve_notify_event_name(e), clock_now_ms(), f->err,
	    f->errlen) != 0) {
		f->failed = 1;
		return 1;
	}
	return 0;
}

/* fill's peek: whether there is an event after the cursor at all. */
static int
any_event(const struct store_event *ev, void *arg)
{
	(void)ev;
	*(int *)arg = 1;
	return 1;
}

/* Takes the events after notifier I's cursor into its deliveries and
 * moves the cursor, in one transaction; nothing is written when there is
 * no new event (a read, so that an idle notifier costs the engine no
 * write lock). *MOVED 1 when the cursor moved. */
static int
fill(struct notify *n, size_t i, int *moved, char *err, size_t errlen)
{
	const struct serve_notifier *nt = &n->c->notifiers[i];
	struct fill f = { n->s, nt, n->cursors[i], 0, err, errlen };
	int any = 0;

	if (store_notify_events_after(n->s, n->cursors[i], 1, any_event, &any, err,
	    errlen) != 0)
		return -1;
	if (!any)
		return 0;
	if (store_begin(n->s, err, errlen) != 0)
		return -1;
	if (store_notify_events_after(n->s, n->cursors[i], EVENTS_PER_TURN, fill_one, &f,
	    err, errlen) != 0 || f.failed ||
	    store_notify_cursor_set(n->s, nt->name, f.last_id, err, errlen) != 0 ||
	    store_commit(n->s, err, errlen) != 0) {
		store_rollback(n->s);
		return -1;
	}
	n->cursors[i] = f.last_id;
	*moved = 1;
	return 0;
}

/* Waits on N->cv (N->mu held) until *COUNTER moves from SEEN, the stop,
 * or POLL_MS. */
static void
wait_nudge(struct notify *n, const unsigned long *counter, unsigned long seen)
{
	struct timespec until = after_ms(POLL_MS);

	while (!n->stop && *counter == seen &&
	    pthread_cond_timedwait(&n->cv, &n->mu, &until) != ETIMEDOUT)
		;
}

/* The filler's thread: every notifier's new events into its deliveries,
 * then a nudge to the senders when any were taken or the mark moved. */
static void *
fill_all(void *arg)
{
	struct notify *n = arg;
	unsigned long seen;
	char err[1024];
	int64_t least;
	int moved;

	while (!stopping(n)) {
		pthread_mutex_lock(&n->mu);
		seen = n->fill_nudges;
		pthread_mutex_unlock(&n->mu);
		store_transient_clear(n->s);
		moved = 0;
		least = INT64_MAX;
		for (size_t i = 0; i < n->c->nnotifiers && !stopping(n); i++) {
			if (fill(n, i, &moved, err, sizeof(err)) != 0)
				log_event(store_transient(n->s) ? "warn" : "error", NULL,
				    NULL, "notify %s: %s", n->c->notifiers[i].name, err);
			if (n->cursors[i] < least)
				least = n->cursors[i];
		}
		pthread_mutex_lock(&n->mu);
		/* New deliveries, or a new mark for notify_flush: the senders
		 * look now rather than at their next poll. */
		if (moved || least != n->filled) {
			n->send_nudges++;
			pthread_cond_broadcast(&n->cv);
		}
		n->filled = least;
		wait_nudge(n, &n->fill_nudges, seen);
		pthread_mutex_unlock(&n->mu);
	}
	return NULL;
}

static size_t
discard(char *p, size_t size, size_t nmemb, void *arg)
{
	(void)p;
	(void)arg;
	return size * nmemb;
}

static int
on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
	(void)dt;
	(void)dn;
	(void)ut;
	(void)un;
	return stopping(arg);
}

/* POSTs BODY to notifier NT. *HTTP gets the status (0: no answer), WHY
 * what went wrong (never the URL). Returns 0 when answered (any status),
 * -1 when not (WHY says why), -2 when stopped mid-way. */
static int
post(struct notify *n, const struct serve_notifier *nt, const char *body, long *http,
    char *why, size_t whylen)
{
	struct curl_slist *h = NULL, *t = NULL;
	char url[URL_MAX];
	CURLcode cc;
	CURL *cu = NULL;
	int rc = -1;

	*http = 0;
	if (serve_notifier_url(nt, url, sizeof(url), why, whylen) != 0)
		goto done;
	if ((h = curl_slist_append(NULL, "Content-Type: application/json")) != NULL &&
	    (t = curl_slist_append(h, "Expect:")) != NULL)
		h = t;
	if ((cu = curl_easy_init()) == NULL || t == NULL) {
		errbuf_set(why, whylen, "out of memory");
		goto done;
	}
	curl_easy_setopt(cu, CURLOPT_URL, url);
	curl_easy_setopt(cu, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(cu, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(cu, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(cu, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(cu, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	curl_easy_setopt(cu, CURLOPT_TIMEOUT_MS, (long)REQUEST_TIMEOUT_MS);
	curl_easy_setopt(cu, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(cu, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(cu, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(cu, CURLOPT_XFERINFODATA, n);
	curl_easy_setopt(cu, CURLOPT_USERAGENT, "cutover-notify");
	cc = curl_easy_perform(cu);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		rc = -2;
		goto done;
	}
	if (cc != CURLE_OK) {
		/* curl_easy_strerror names the failure, not the URL. */
		errbuf_set(why, whylen, "%s", curl_easy_strerror(cc));
		goto done;
	}
	curl_easy_getinfo(cu, CURLINFO_RESPONSE_CODE, http);
	rc = 0;
done:
	OPENSSL_cleanse(url, sizeof(url));
	curl_slist_free_all(h);
	if (cu != NULL)
		curl_easy_cleanup(cu);
	return rc;
}

/* Backoff after attempt K of notifier NT: its first retry delay,
 * doubled each attempt, at most BACKOFF_MAX_MS. */
static int64_t
backoff_after(const struct serve_notifier *nt, int k)
{
	int64_t wait = nt->backoff_ms;

	for (int i = 1; i < k && wait < BACKOFF_MAX_MS; i++)
		wait *= 2;
	return wait < BACKOFF_MAX_MS ? wait : BACKOFF_MAX_MS;
}

/* Makes one attempt at delivery D of W's notifier and records it. */
static int
attempt(struct worker *w, const struct store_delivery *d, char *err, size_t errlen)
{
	const struct serve_notifier *nt = w->nt;
	char why[256] = "", *body = NULL;
	const char *status = "pending";
	int k = d->attempts + 1, permanent = 0, sent, rc = -1;
	int64_t now, next = 0;
	long http = 0;

	if (notify_body(nt->kind, d, &body, err, errlen) != 0)
		return -1;
	sent = post(w->n, nt, body, &http, why, sizeof(why));
	if (sent == -2) {
		rc = 0;		/* stopped: left pending, never recorded as tried */
		goto done;
	}
	if (sent == 0 && http >= 200 && http < 300) {
		status = "delivered";
		why[0] = '\0';
	} else {
		if (sent == 0) {
			snprintf(why, sizeof(why), "HTTP %ld", http);
			permanent = http >= 400 && http < 500 && http != 408 && http != 429;
		}
		if (permanent || k >= nt->attempts)
			status = "failed";
	}
	now = clock_now_ms();
	if (strcmp(status, "pending") == 0)
		next = now + backoff_after(nt, k);
	if (store_notify_attempt(w->s, d->id, k, now, (int)http, why[0] ? why : NULL, status,
	    next, err, errlen) != 0)
		goto done;
	if (strcmp(status, "delivered") == 0)
		log_event("info", d->plan_name, NULL, "notify %s: %s (event %lld) delivered, "
		    "HTTP %ld, attempt %d", nt->name, d->event, (long long)d->event_id, http, k);
	else
		log_event(status[0] == 'f' ? "error" : "warn", d->plan_name, NULL, "notify %s: "
		    "%s (event %lld) attempt %d of %d: %s; %s", nt->name, d->event,
		    (long long)d->event_id, k, nt->attempts, why, status[0] == 'f' ?
		    "given up" : "trying again");
	rc = 0;
done:
	free(body);
	return rc;
}

/* Makes one attempt at W's notification of the service itself when one
 * is due: delivered, it is dropped; refused (4xx other than 408 and 429)
 * or out of attempts, it is dropped and said; otherwise it waits for its
 * backoff. Nothing is recorded in the database (notify_service says why). */
static void
send_service(struct worker *w)
{
	struct notify *n = w->n;
	char *body = NULL, event[32], why[256] = "";
	unsigned long gen;
	long http = 0;
	int k, sent, permanent;

	pthread_mutex_lock(&n->mu);
	if (w->svc_body != NULL && clock_mono_ms() >= w->svc_due)
		body = strdup(w->svc_body);
	gen = w->svc_gen;
	k = w->svc_attempts + 1;
	snprintf(event, sizeof(event), "%s", w->svc_event);
	pthread_mutex_unlock(&n->mu);
	if (body == NULL)
		return;
	sent = post(n, w->nt, body, &http, why, sizeof(why));
	free(body);
	if (sent == -2)
		return;		/* stopped */
	if (sent == 0 && http >= 200 && http < 300) {
		log_event("info", NULL, NULL, "notify %s: %s delivered, HTTP %ld, attempt %d",
		    w->nt->name, event, http, k);
		permanent = 1;
	} else {
		if (sent == 0)
			snprintf(why, sizeof(why), "HTTP %ld", http);
		permanent = sent == 0 && http >= 400 && http < 500 && http != 408 &&
		    http != 429;
		log_event(permanent || k >= w->nt->attempts ? "error" : "warn", NULL, NULL,
		    "notify %s: %s attempt %d of %d: %s; %s", w->nt->name, event, k,
		    w->nt->attempts, why, permanent || k >= w->nt->attempts ? "given up" :
		    "trying again");
	}
	pthread_mutex_lock(&n->mu);
	if (w->svc_gen == gen) {	/* not replaced meanwhile */
		w->svc_attempts = k;
		w->svc_due = clock_mono_ms() + backoff_after(w->nt, k);
		if (permanent || k >= w->nt->attempts) {
			free(w->svc_body);
			w->svc_body = NULL;
		}
	}
	pthread_mutex_unlock(&n->mu);
}

/* Sends what is due of W's notifier; *SETTLED 1 when it stopped because
 * nothing more was due (not because of the stop). */
static int
deliver_due(struct worker *w, int *settled, char *err, size_t errlen)
{
	struct store_delivery d;

	*settled = 0;
	while (!stopping(w->n)) {
		if (store_notify_due(w->s, w->nt->name, clock_now_ms(), &d, err, errlen) != 0)
			return -1;
		if (d.id == 0) {
			*settled = 1;
			return 0;
		}
		if (attempt(w, &d, err, errlen) != 0) {
			store_delivery_clear(&d);
			return -1;
		}
		store_delivery_clear(&d);
	}
	return 0;
}

/* One notifier's sender: a pass, then a wait for the next poll (a retry
 * comes due), the filler's nudge or the stop. A pass that left nothing
 * due tells notify_flush how far the filler had gone before it began. */
static void *
send_own(void *arg)
{
	struct worker *w = arg;
	struct notify *n = w->n;
	unsigned long seen;
	int64_t filled;
	char err[1024];
	int settled;

	while (!stopping(n)) {
		pthread_mutex_lock(&n->mu);
		seen = n->send_nudges;
		filled = n->filled;
		pthread_mutex_unlock(&n->mu);
		send_service(w);
		store_transient_clear(w->s);
		if (deliver_due(w, &settled, err, sizeof(err)) != 0)
			log_event(store_transient(w->s) ? "warn" : "error", NULL, NULL,
			    "notify %s: %s", w->nt->name, err);
		pthread_mutex_lock(&n->mu);
		if (settled) {
			w->settled = filled;
			pthread_cond_broadcast(&n->settled_cv);
		}
		wait_nudge(n, &n->send_nudges, seen);
		pthread_mutex_unlock(&n->mu);
	}
	return NULL;
}

int
notify_start(const char *db_path, const struct serve_config *c, struct notify **out,
    char *err, size_t errlen)
{
	struct notify *n;
	size_t i;

	*out = NULL;
	if ((n = calloc(1, sizeof(*n))) == NULL) {
		errbuf_set(err, errlen, "notifiers: out of memory");
		return -1;
	}
	/* Counted by libcurl (as mgmt_open's), made before any thread starts. */
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		errbuf_set(err, errlen, "notifiers: curl_global_init failed");
		free(n);
		return -1;
	}
	n->c = c;
	n->filled = -1;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	pthread_cond_init(&n->settled_cv, NULL);
	if ((n->w = calloc(c->nnotifiers + 1, sizeof(*n->w))) == NULL ||
	    (n->cursors = calloc(c->nnotifiers + 1, sizeof(*n->cursors))) == NULL) {
		errbuf_set(err, errlen, "notifiers: out of memory");
		goto fail;
	}
	/* Every cursor is set before any thread runs: a new notifier starts
	 * at the newest event as of this start. */
	if (store_open(db_path, &n->s, err, errlen) != 0)
		goto fail;
	for (i = 0; i < c->nnotifiers; i++) {
		struct worker *w = &n->w[i];

		w->n = n;
		w->nt = &c->notifiers[i];
		w->settled = -1;
		if (store_notify_cursor(n->s, w->nt->name, &n->cursors[i], err, errlen) != 0 ||
		    store_open(db_path, &w->s, err, errlen) != 0)
			goto fail;
	}
	if (pthread_create(&n->filler, NULL, fill_all, n) != 0) {
		errbuf_set(err, errlen, "notifiers: cannot start their thread");
		goto fail;
	}
	n->filler_started = 1;
	for (i = 0; i < c->nnotifiers; i++) {
		if (pthread_create(&n->w[i].thread, NULL, send_own, &n->w[i]) != 0) {
			errbuf_set(err, errlen, "notifiers: cannot start the thread of %s",
			    c->notifiers[i].name);
			goto fail;
		}
		n->w[i].started = 1;
	}
	for (i = 0; i < c->nnotifiers; i++)
		log_event("info", NULL, NULL, "notify %s: %s, %d attempts, first retry after "
		    "%lld ms", c->notifiers[i].name, serve_notify_kind_name(c->notifiers[i].kind),
		    c->notifiers[i].attempts, (long long)c->notifiers[i].backoff_ms);
	*out = n;
	return 0;
fail:
	notify_stop(n);
	return -1;
}

/* How many senders of N have not settled up to event UPTO; N->mu held. */
static size_t
unsettled(const struct notify *n, int64_t upto)
{
	size_t left = 0;

	for (size_t i = 0; i < n->c->nnotifiers; i++)
		if (n->w[i].settled < upto)
			left++;
	return left;
}

size_t
notify_flush(struct notify *n, int64_t upto, int64_t timeout_ms,
    const volatile sig_atomic_t *stop)
{
	int64_t deadline = clock_mono_ms() + timeout_ms, now;
	int late[SERVE_NOTIFIERS_MAX] = { 0 };
	struct timespec until;
	size_t left;

	if (n == NULL)
		return 0;
	pthread_mutex_lock(&n->mu);
	n->fill_nudges++;
	n->send_nudges++;
	pthread_cond_broadcast(&n->cv);
	/* Woken by each settled pass; the slices see *STOP, which a signal
	 * handler sets without a broadcast. */
	while ((left = unsettled(n, upto)) > 0 && (stop == NULL || !*stop) &&
	    (now = clock_mono_ms()) < deadline) {
		until = after_ms(deadline - now < 100 ? deadline - now : 100);
		pthread_cond_timedwait(&n->settled_cv, &n->mu, &until);
	}
	for (size_t i = 0; i < n->c->nnotifiers && i < SERVE_NOTIFIERS_MAX; i++)
		late[i] = n->w[i].settled < upto;
	pthread_mutex_unlock(&n->mu);
	for (size_t i = 0; left > 0 && i < n->c->nnotifiers && i < SERVE_NOTIFIERS_MAX; i++)
		if (late[i])
			log_event("warn", NULL, NULL, "notify %s: still sending; what is "
			    "pending goes at the next run or serve", n->c->notifiers[i].name);
	return left;
}

void
notify_service(struct notify *n, const char *event, const char *text)
{
	const char *cond;
	size_t clen;
	int64_t now = clock_now_ms();
	char err[256];

	if (n == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	/* A "_resolved" event only follows its condition; no event twice. */
	cond = strstr(event, "_resolved");
	clen = cond != NULL ? (size_t)(cond - event) : 0;
	if (strcmp(n->svc_said, event) == 0 || (cond != NULL &&
	    (strlen(n->svc_said) != clen || strncmp(n->svc_said, event, clen) != 0))) {
		pthread_mutex_unlock(&n->mu);
		return;
	}
	snprintf(n->svc_said, sizeof(n->svc_said), "%s", event);
	pthread_mutex_unlock(&n->mu);
	for (size_t i = 0; i < n->c->nnotifiers; i++) {
		struct worker *w = &n->w[i];
		char *body;

		if (notify_service_body(w->nt->kind, event, text, now, &body, err,
		    sizeof(err)) != 0) {
			log_event("error", NULL, NULL, "notify %s: %s: %s", w->nt->name, event,
			    err);
			continue;
		}
		pthread_mutex_lock(&n->mu);
		free(w->svc_body);
		w->svc_body = body;
		snprintf(w->svc_event, sizeof(w->svc_event), "%s", event);
		w->svc_attempts = 0;
		w->svc_due = 0;
		w->svc_gen++;
		pthread_mutex_unlock(&n->mu);
	}
	pthread_mutex_lock(&n->mu);
	n->send_nudges++;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

void
notify_service_cb(void *arg, const char *event, const char *text)
{
	notify_service(arg, event, text);
}

void
notify_stop(struct notify *n)
{
	size_t i;

	if (n == NULL)
		return;
	pthread_mutex_lock(&n->mu);
	n->stop = 1;
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	/* Every thread has been told before the first join: each sender
	 * abandons its request in flight at once, so the stop waits for no
	 * receiver's timeout. */
	if (n->filler_started)
		pthread_join(n->filler, NULL);
	for (i = 0; n->w != NULL && i < n->c->nnotifiers; i++)
		if (n->w[i].started)
			pthread_join(n->w[i].thread, NULL);
	for (i = 0; n->w != NULL && i < n->c->nnotifiers; i++) {
		store_close(n->w[i].s);
		free(n->w[i].svc_body);
	}
	store_close(n->s);
	free(n->w);
	free(n->cursors);
	pthread_cond_destroy(&n->settled_cv);
	pthread_cond_destroy(&n->cv);
	pthread_mutex_destroy(&n->mu);
	free(n);
	curl_global_cleanup();
}
