/* denied: refused requests into the plans' histories, bounded per plan
 * and minute and per plan in all (denied.h). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "clock.h"
#include "denied.h"
#include "export.h"
#include "log.h"

static const int statuses[] = { 401, 403, 409 };
#define NSTATUS	(sizeof(statuses) / sizeof(statuses[0]))

/* One plan's counts. */
struct slot {
	int64_t plan_id;		/* 0: free */
	int64_t minute;			/* the UTC minute counted (ms / 60000) */
	int recorded;			/* events recorded in that minute */
	int64_t more[NSTATUS];		/* refusals counted, not recorded, by status */
	int64_t total;			/* request.denied* events the plan holds */
	int64_t used;			/* when last touched, for eviction */
};

struct denied {
	pthread_mutex_t mu;
	struct slot v[DENIED_PLANS];
};

struct denied *
denied_new(void)
{
	struct denied *d = calloc(1, sizeof(*d));

	if (d != NULL && pthread_mutex_init(&d->mu, NULL) != 0) {
		free(d);
		return NULL;
	}
	return d;
}

/* Appends KIND with DETAILS (stolen) to PLAN's history; logs a failure. */
static int
append(struct store *s, int64_t plan, int64_t now, const char *actor, const char *kind,
    json_t *details)
{
	char *text = json_dumps(details, JSON_COMPACT | JSON_PRESERVE_ORDER), err[512];
	int rc = -1;

	json_decref(details);
	if (text == NULL)
		snprintf(err, sizeof(err), "out of memory");
	else
		rc = store_append_event(s, plan, now, actor, kind, text, NULL, err,
		    sizeof(err));
	free(text);
	if (rc != 0)
		log_event("error", NULL, NULL, "recording a refused request of plan %lld: "
		    "%s", (long long)plan, err);
	return rc;
}

/* Writes slot SL's counted refusals (if any) as one event. */
static void
write_more(struct slot *sl, struct store *s, int64_t now)
{
	char from[EXPORT_TIME_MAX], to[EXPORT_TIME_MAX];
	int64_t n = 0;
	json_t *by = json_object();

	for (size_t k = 0; k < NSTATUS; k++) {
		char key[8];

		n += sl->more[k];
		snprintf(key, sizeof(key), "%d", statuses[k]);
		if (sl->more[k] > 0)
			json_object_set_new(by, key, json_integer((json_int_t)sl->more[k]));
	}
	if (n == 0 || sl->total >= DENIED_MAX) {
		json_decref(by);
		return;
	}
	export_time_utc(sl->minute * 60000, from);
	export_time_utc(sl->minute * 60000 + 59999, to);
	if (append(s, sl->plan_id, now, DENIED_ACTOR, "request.denied.more",
	    json_pack("{s:I,s:s,s:s,s:o,s:s}", "count", (json_int_t)n, "from_utc", from,
	    "to_utc", to, "by_status", by, "why", "more refusals in that minute than "
	    "are recorded one by one")) == 0)
		sl->total++;
	memset(sl->more, 0, sizeof(sl->more));
}

/* The slot of PLAN (taking the least recently used one if it has none),
 * its counts moved on to MINUTE. NULL when PLAN is not a plan. */
static struct slot *
slot_of(struct denied *d, struct store *s, int64_t plan, int64_t minute, int64_t now)
{
	struct slot *sl = NULL;
	struct store_plan p;
	char err[512];

	for (size_t i = 0; i < DENIED_PLANS && sl == NULL; i++)
		if (d->v[i].plan_id == plan)
			sl = &d->v[i];
	if (sl == NULL) {
		if (store_plan_get(s, plan, &p, err, sizeof(err)) != 0)
			return NULL;
		sl = &d->v[0];
		for (size_t i = 1; i < DENIED_PLANS; i++)
			if (d->v[i].used < sl->used)
				sl = &d->v[i];
		if (sl->plan_id != 0)
			write_more(sl, s, now);
		memset(sl, 0, sizeof(*sl));
		if (store_count_events(s, plan, "request.denied", &sl->total, err,
		    sizeof(err)) != 0) {
			log_event("error", NULL, NULL, "counting refused requests: %s", err);
			return NULL;
		}
		sl->plan_id = plan;
		sl->minute = minute;
	}
	if (sl->minute != minute) {
		write_more(sl, s, now);
		sl->minute = minute;
		sl->recorded = 0;
	}
	sl->used = now;
	return sl;
}

void
denied_note(struct denied *d, struct store *s, const struct denied_request *r,
    int64_t now_ms)
{
	struct slot *sl;
	size_t k;

	for (k = 0; k < NSTATUS && statuses[k] != r->status; k++)
		;
	if (d == NULL || k == NSTATUS || r->plan_id <= 0)
		return;
	pthread_mutex_lock(&d->mu);
	if ((sl = slot_of(d, s, r->plan_id, now_ms / 60000, now_ms)) == NULL ||
	    sl->total >= DENIED_MAX)
		goto done;
	if (sl->recorded >= DENIED_PER_MINUTE) {
		sl->more[k]++;
		goto done;
	}
	if (append(s, r->plan_id, now_ms, r->actor != NULL ? r->actor : DENIED_ACTOR,
	    "request.denied", json_pack("{s:i,s:s,s:s,s:s,s:s,s:s?,s:b}", "status",
	    r->status, "method", r->method, "route", r->route, "path", r->path, "why",
	    r->why != NULL ? r->why : "", "from", r->from, "authenticated",
	    r->actor != NULL)) == 0) {
		sl->recorded++;
		sl->total++;
	}
done:
	pthread_mutex_unlock(&d->mu);
}

/* Writes the counts of every minute before BEFORE_MINUTE, stamped NOW. */
static void
flush(struct denied *d, struct store *s, int64_t before_minute, int64_t now)
{
	pthread_mutex_lock(&d->mu);
	for (size_t i = 0; i < DENIED_PLANS; i++)
		if (d->v[i].plan_id != 0 && d->v[i].minute < before_minute)
			write_more(&d->v[i], s, now);
	pthread_mutex_unlock(&d->mu);
}

void
denied_flush(struct denied *d, struct store *s, int64_t now_ms)
{
	if (d != NULL)
		flush(d, s, now_ms / 60000, now_ms);
}

void
denied_free(struct denied *d, struct store *s)
{
	if (d == NULL)
		return;
	if (s != NULL)
		flush(d, s, INT64_MAX, clock_now_ms());
	pthread_mutex_destroy(&d->mu);
	free(d);
}
