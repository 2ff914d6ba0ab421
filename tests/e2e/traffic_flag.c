/* traffic_flag: cutover-traffic's view of the feature flag, read the way a
 * producer reads it: Unleash's client API (GET {url}/api/client/features/
 * {feature} with a backend token; "enabled" says whether it is on), every
 * interval, on its own thread; or, for a plan whose flag is kind http, the
 * plan's own read (flag_read_with). A read that fails keeps the last value. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>

#include "flag.h"
#include "httpbody.h"
#include "log.h"
#include "traffic.h"

#define ANSWER_MAX	(1024 * 1024)	/* bytes of a client API answer */
#define READ_TIMEOUT_MS	2000L
#define LOGGED_ERRORS	5		/* read failures logged, at most */

/* Reads the flag from Unleash's client API. Returns 0 and stores 1 or 0 in
 * *STATE, or -1 with ERR. The token never appears in ERR. */
static int
read_unleash(struct traffic_flag *f, int *state, char *err, size_t errlen)
{
	CURL *c = f->curl;
	struct curl_slist *hdrs = NULL, *h;
	struct httpbody a = { .max = ANSWER_MAX };
	char auth[1024], cerr[CURL_ERROR_SIZE] = "";
	const char *token;
	json_t *doc = NULL, *en;
	long status = 0;
	CURLcode cc;
	int rc = -1;

	if (strncmp(f->token_ref, "env:", 4) != 0 ||
	    (token = getenv(f->token_ref + 4)) == NULL || token[0] == '\0') {
		snprintf(err, errlen, "client token %s: the environment variable "
		    "is not set (expected env:NAME naming a backend token)",
		    f->token_ref);
		goto done;
	}
	if ((size_t)snprintf(auth, sizeof(auth), "Authorization: %s", token) >=
	    sizeof(auth) || strpbrk(token, "\r\n") != NULL) {
		snprintf(err, errlen, "client token %s: too long or not one "
		    "line", f->token_ref);
		goto done;
	}
	if ((h = curl_slist_append(hdrs, auth)) == NULL)
		goto nomem;
	hdrs = h;
	if ((h = curl_slist_append(hdrs, "Accept: application/json")) == NULL)
		goto nomem;
	hdrs = h;
	if ((h = curl_slist_append(hdrs, "UNLEASH-APPNAME: cutover-traffic")) ==
	    NULL)
		goto nomem;
	hdrs = h;
	curl_easy_setopt(c, CURLOPT_URL, f->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, READ_TIMEOUT_MS / 2);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, READ_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, httpbody_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "cutover-traffic/1");
	if ((cc = curl_easy_perform(c)) != CURLE_OK) {
		snprintf(err, errlen, "GET %s: %s", f->url, a.toobig ?
		    "answer larger than 1 MiB" : cerr[0] != '\0' ? cerr :
		    curl_easy_strerror(cc));
		goto done;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status == 401 || status == 403) {
		snprintf(err, errlen, "GET %s: HTTP %ld: the client token %s is "
		    "refused (a backend token for the environment is expected)",
		    f->url, status, f->token_ref);
		goto done;
	}
	if (status == 404) {
		snprintf(err, errlen, "GET %s: HTTP 404: no such feature for "
		    "this token's project and environment", f->url);
		goto done;
	}
	if (status != 200) {
		snprintf(err, errlen, "GET %s: HTTP %ld", f->url, status);
		goto done;
	}
	if ((doc = json_loadb(a.p ? a.p : "", a.len, 0, NULL)) == NULL ||
	    !json_is_boolean(en = json_object_get(doc, "enabled"))) {
		snprintf(err, errlen, "GET %s: expected a JSON object with a "
		    "boolean \"enabled\"", f->url);
		goto done;
	}
	*state = json_is_true(en) ? 1 : 0;
	rc = 0;
	goto done;
nomem:
	snprintf(err, errlen, "reading the flag: out of memory");
done:
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(hdrs);
	json_decref(doc);
	free(a.p);
	return rc;
}

/* Reads the flag once, as F's mode says. Returns 0 and stores the state,
 * or -1 with ERR. */
static int
read_once(struct traffic_flag *f, int *state, char *err, size_t errlen)
{
	struct flag_options o;

	if (f->mode == TRAFFIC_FLAG_UNLEASH)
		return read_unleash(f, state, err, errlen);
	flag_options_default(&o);
	o.attempts = 1;
	o.connect_timeout_ms = READ_TIMEOUT_MS / 2;
	o.timeout_ms = READ_TIMEOUT_MS;
	o.budget_ms = READ_TIMEOUT_MS;
	if (flag_read_with(f->plan, &o, state, NULL, err, errlen) != 0)
		return -1;
	if (*state != 0 && *state != 1) {
		snprintf(err, errlen, "the plan's flag read gave neither its on "
		    "nor its off value");
		return -1;
	}
	return 0;
}

/* Stores the outcome of one read. Call with the mutex held. */
static void
note(struct traffic_flag *f, int rc, int state, const char *why)
{
	f->reads++;
	if (rc != 0) {
		if (f->errors++ < LOGGED_ERRORS)
			log_event("warn", f->plan->name, "traffic", "reading the flag "
			    "failed, keeping %s: %s%s", f->state ? "on" : "off",
			    why, f->errors == LOGGED_ERRORS ?
			    " (further failures are only counted)" : "");
		snprintf(f->last_error, sizeof(f->last_error), "%.*s",
		    (int)sizeof(f->last_error) - 1, why);
		return;
	}
	if (state != f->state) {
		f->changes++;
		log_event("info", f->plan->name, "traffic", "the flag is now %s: new "
		    "messages go to the %s path", state ? "on" : "off",
		    state ? "ladder" : "old");
	}
	if (state && f->first_on_ms == 0)
		f->first_on_ms = traffic_mono_ms();
	f->state = state;
}

static void *
poll_main(void *arg)
{
	struct traffic_flag *f = arg;
	struct timespec until;
	char why[600];
	int64_t next = traffic_mono_ms() + f->interval_ms;
	int state = 0, rc;

	pthread_mutex_lock(&f->mu);
	while (!f->stop) {
		int64_t now = traffic_mono_ms();

		if (now < next) {
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_sec += (time_t)((next - now) / 1000);
			until.tv_nsec += (long)((next - now) % 1000) * 1000000L;
			if (until.tv_nsec >= 1000000000L) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000L;
			}
			(void)pthread_cond_timedwait(&f->cv, &f->mu, &until);
			continue;
		}
		next = now + f->interval_ms;
		pthread_mutex_unlock(&f->mu);
		rc = read_once(f, &state, why, sizeof(why));
		pthread_mutex_lock(&f->mu);
		note(f, rc, state, why);
	}
	pthread_mutex_unlock(&f->mu);
	return NULL;
}

int
traffic_flag_start(struct traffic_flag *f, char *err, size_t errlen)
{
	char why[600];
	int state = 0;

	f->state = f->mode == TRAFFIC_FLAG_LADDER ? 1 : 0;
	if (f->mode == TRAFFIC_FLAG_LADDER)
		f->first_on_ms = traffic_mono_ms();
	if (pthread_mutex_init(&f->mu, NULL) != 0)
		goto nores;
	if (pthread_cond_init(&f->cv, NULL) != 0) {
		pthread_mutex_destroy(&f->mu);
		goto nores;
	}
	f->inited = true;
	f->started = false;
	if (f->mode == TRAFFIC_FLAG_OLD || f->mode == TRAFFIC_FLAG_LADDER)
		return 0;
	if (f->mode == TRAFFIC_FLAG_UNLEASH && (f->curl = curl_easy_init()) ==
	    NULL) {
		snprintf(err, errlen, "reading the flag: no libcurl handle");
		return -1;
	}
	if (read_once(f, &state, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the flag: %s", why);
		return -1;
	}
	f->reads = 1;
	f->state = state;
	if (state)
		f->first_on_ms = traffic_mono_ms();
	if (pthread_create(&f->thread, NULL, poll_main, f) != 0) {
		snprintf(err, errlen, "reading the flag: cannot start a thread");
		return -1;
	}
	f->started = true;
	return 0;
nores:
	snprintf(err, errlen, "reading the flag: no mutex or condition");
	return -1;
}

int
traffic_flag_get(struct traffic_flag *f)
{
	int state;

	pthread_mutex_lock(&f->mu);
	state = f->state;
	pthread_mutex_unlock(&f->mu);
	return state;
}

void
traffic_flag_report(struct traffic_flag *f, int64_t start_mono_ms, json_t *obj)
{
	static const char *const sources[] = { "fixed-old", "fixed-ladder",
	    "unleash", "plan" };
	json_t *o;

	pthread_mutex_lock(&f->mu);
	o = json_pack("{s:s,s:s,s:I,s:I,s:I}",
	    "source", sources[f->mode],
	    "state", f->state ? "on" : "off",
	    "reads", (json_int_t)f->reads,
	    "errors", (json_int_t)f->errors,
	    "changes", (json_int_t)f->changes);
	if (o != NULL) {
		if (f->first_on_ms != 0)
			json_object_set_new(o, "first_on_s", json_real((double)
			    (f->first_on_ms > start_mono_ms ? f->first_on_ms -
			    start_mono_ms : 0) / 1000.0));
		else
			json_object_set_new(o, "first_on_s", json_null());
		if (f->errors > 0)
			json_object_set_new(o, "last_error",
			    json_string(f->last_error));
	}
	pthread_mutex_unlock(&f->mu);
	if (o != NULL)
		json_object_set_new(obj, "flag", o);
}

void
traffic_flag_stop(struct traffic_flag *f)
{
	if (!f->started)
		return;
	pthread_mutex_lock(&f->mu);
	f->stop = true;
	pthread_cond_signal(&f->cv);
	pthread_mutex_unlock(&f->mu);
	pthread_join(f->thread, NULL);
	f->started = false;
}

void
traffic_flag_free(struct traffic_flag *f)
{
	traffic_flag_stop(f);
	if (f->curl != NULL)
		curl_easy_cleanup(f->curl);
	f->curl = NULL;
	free(f->url);
	f->url = NULL;
	if (f->inited) {
		pthread_cond_destroy(&f->cv);
		pthread_mutex_destroy(&f->mu);
		f->inited = false;
	}
}
