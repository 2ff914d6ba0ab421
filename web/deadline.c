/* deadline: the watcher that cuts connections whose request does not
 * arrive whole in time (deadline.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "deadline.h"
#include "log.h"

#define DEADLINE_TICK_MS	200	/* how often the watcher looks */

struct deadline_conn {
	struct deadline_conn *prev, *next;
	int fd;
	int64_t since;			/* monotonic ms the request began */
	int waiting;			/* the request has not arrived whole */
	int cut;			/* its socket was shut down */
};

struct deadline {
	pthread_mutex_t mu;		/* guards the list and stop */
	pthread_cond_t cv;		/* stop was set */
	pthread_t thread;
	struct deadline_conn *head;
	int64_t limit_ms;
	int stop;
};

/* Shuts down every connection past the limit; with D->mu held. The
 * socket stays open (libmicrohttpd closes it after deadline_remove), so
 * the descriptor cannot have been reused by then. */
static int
sweep(struct deadline *d, int64_t now)
{
	int n = 0;

	for (struct deadline_conn *c = d->head; c != NULL; c = c->next) {
		if (!c->waiting || c->cut || now - c->since < d->limit_ms)
			continue;
		shutdown(c->fd, SHUT_RDWR);
		c->cut = 1;
		n++;
	}
	return n;
}

static void *
watch(void *arg)
{
	struct deadline *d = arg;
	struct timespec ts;
	int n;

	pthread_mutex_lock(&d->mu);
	while (!d->stop) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)DEADLINE_TICK_MS * 1000000;
		ts.tv_sec += ts.tv_nsec / 1000000000;
		ts.tv_nsec %= 1000000000;
		pthread_cond_timedwait(&d->cv, &d->mu, &ts);
		if (d->stop)
			break;
		if ((n = sweep(d, clock_mono_ms())) > 0)
			log_event("warn", NULL, NULL, "http: closed %d connection(s) whose "
			    "request did not arrive whole within %lld ms", n,
			    (long long)d->limit_ms);
	}
	pthread_mutex_unlock(&d->mu);
	return NULL;
}

int
deadline_start(int64_t limit_ms, struct deadline **out, char *err, size_t errlen)
{
	struct deadline *d;
	pthread_condattr_t ca;
	int rc, made = 0;		/* 1: cv, 2: cv and mu */

	*out = NULL;
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		rc = ENOMEM;
		goto done;
	}
	d->limit_ms = limit_ms;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	rc = pthread_cond_init(&d->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (rc != 0)
		goto done;
	made = 1;
	if ((rc = pthread_mutex_init(&d->mu, NULL)) != 0)
		goto done;
	made = 2;
	if ((rc = pthread_create(&d->thread, NULL, watch, d)) != 0)
		goto done;
	*out = d;
done:
	if (rc != 0) {
		if (made == 2)
			pthread_mutex_destroy(&d->mu);
		if (made >= 1)
			pthread_cond_destroy(&d->cv);
		free(d);
		snprintf(err, errlen, "starting the request deadline: %s", strerror(rc));
		return -1;
	}
	return 0;
}

void
deadline_stop(struct deadline *d)
{
	if (d == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	d->stop = 1;
	pthread_cond_signal(&d->cv);
	pthread_mutex_unlock(&d->mu);
	pthread_join(d->thread, NULL);
	pthread_mutex_destroy(&d->mu);
	pthread_cond_destroy(&d->cv);
	free(d);
}

struct deadline_conn *
deadline_add(struct deadline *d, int fd)
{
	struct deadline_conn *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->fd = fd;
	c->since = clock_mono_ms();
	c->waiting = 1;
	pthread_mutex_lock(&d->mu);
	c->next = d->head;
	if (d->head != NULL)
		d->head->prev = c;
	d->head = c;
	pthread_mutex_unlock(&d->mu);
	return c;
}

/* Starts (WAITING) or stops C's clock. */
static void
mark(struct deadline *d, struct deadline_conn *c, int waiting)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	if (waiting)
		c->since = clock_mono_ms();
	c->waiting = waiting;
	pthread_mutex_unlock(&d->mu);
}

void
deadline_arrived(struct deadline *d, struct deadline_conn *c)
{
	mark(d, c, 0);
}

void
deadline_next(struct deadline *d, struct deadline_conn *c)
{
	mark(d, c, 1);
}

void
deadline_remove(struct deadline *d, struct deadline_conn *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&d->mu);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		d->head = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	pthread_mutex_unlock(&d->mu);
	free(c);
}
