/* flag: the feature-flag client behind the flip (kind unleash and kind
 * http): its public calls, a call's set-up and the read-back's verdict.
 * See flag.h for the contract of each function; the transport is in
 * flag_transport.c, the kinds in flag_unleash.c and flag_http.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "flag_transport.h"

/* ---- a call's set-up ---- */

static int
check_plan(const struct plan *p, bool switching, bool on, char *err,
    size_t errlen)
{
	const struct plan_http_call *pc = on ? &p->flag.on : &p->flag.off;
	const char *name = on ? "flag.on" : "flag.off";
	char what[32];
	int rc;

	if (p->flag.kind == PLAN_FLAG_UNLEASH) {
		if ((rc = flag_check_url(p->flag.url, "flag.url", 1, err,
		    errlen)) != 0)
			return rc;
		if (p->flag.project == NULL || p->flag.project[0] == '\0' ||
		    p->flag.feature == NULL || p->flag.feature[0] == '\0' ||
		    p->flag.environment == NULL ||
		    p->flag.environment[0] == '\0') {
			seterr(err, errlen, "flag: kind unleash needs project, "
			    "feature and environment");
			return FLAG_ERR_ARG;
		}
		return 0;
	}
	if (switching) {
		if (!valid_method(pc->method)) {
			seterr(err, errlen, "%s.method must be GET, POST, PUT, "
			    "PATCH or DELETE", name);
			return FLAG_ERR_ARG;
		}
		snprintf(what, sizeof(what), "%s.url", name);
		if ((rc = flag_check_url(pc->url, what, 0, err, errlen)) != 0)
			return rc;
		if (strcmp(pc->method, "GET") == 0 && pc->body != NULL) {
			seterr(err, errlen, "%s: a GET has no body", name);
			return FLAG_ERR_ARG;
		}
	}
	if ((rc = flag_check_url(p->flag.read_url, "flag.read.url", 0,
	    err, errlen)) != 0)
		return rc;
	if (p->flag.read_pointer == NULL || p->flag.read_on == NULL ||
	    p->flag.read_off == NULL) {
		seterr(err, errlen, "flag.read needs pointer, on and off");
		return FLAG_ERR_ARG;
	}
	return 0;
}

/* Starts C for P: checks the plan, resolves secrets, opens libcurl, and
 * creates the result. */
static int
call_open(struct flag_call *c, const struct plan *p,
    const struct flag_options *o, bool switching, bool on, char *err,
    size_t errlen)
{
	int rc;

	memset(c, 0, sizeof(*c));
	c->p = p;
	if (o != NULL)
		c->o = *o;
	else
		flag_options_default(&c->o);
	if (c->o.attempts < 1)
		c->o.attempts = 1;
	if (c->o.connect_timeout_ms < 1)
		c->o.connect_timeout_ms = FLAG_CONNECT_TIMEOUT_MS;
	if (c->o.timeout_ms < 1)
		c->o.timeout_ms = FLAG_TIMEOUT_MS;
	if (c->o.backoff_ms < 0)
		c->o.backoff_ms = 0;
	if (c->o.backoff_max_ms < c->o.backoff_ms)
		c->o.backoff_max_ms = c->o.backoff_ms;
	if (c->o.budget_ms < 1)
		c->o.budget_ms = FLAG_BUDGET_MS;
	if (p == NULL || (p->flag.kind != PLAN_FLAG_UNLEASH &&
	    p->flag.kind != PLAN_FLAG_HTTP)) {
		seterr(err, errlen, "the plan has no flag");
		return FLAG_ERR_ARG;
	}
	c->result = json_pack("{s:s,s:[]}", "kind",
	    p->flag.kind == PLAN_FLAG_UNLEASH ? "unleash" : "http", "attempts");
	if (c->result == NULL ||
	    (switching && json_object_set_new(c->result, "want",
	    json_string(on ? "on" : "off")) != 0))
		goto nomem;
	c->attempts = json_object_get(c->result, "attempts");
	if ((rc = check_plan(p, switching, on, err, errlen)) != 0)
		return rc;
	if (p->flag.kind == PLAN_FLAG_UNLEASH)
		rc = unleash_headers(c, err, errlen);
	else
		rc = http_headers(c, err, errlen);
	if (rc != 0)
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		seterr(err, errlen, "flag: libcurl initialisation failed");
		return FLAG_ERR_NOMEM;
	}
	c->global_init = 1;
	if ((c->curl = curl_easy_init()) == NULL)
		goto nomem;
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_USERAGENT, USER_AGENT);
	c->answer.max = FLAG_ANSWER_MAX;
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, httpbody_write);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->answer);
	curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, c->curlerr);
	curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	return 0;
nomem:
	seterr(err, errlen, "flag: out of memory");
	return FLAG_ERR_NOMEM;
}

static int
read_flag(struct flag_call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	if (c->p->flag.kind == PLAN_FLAG_UNLEASH)
		return read_unleash(c, label, state, err, errlen);
	return read_http(c, label, state, err, errlen);
}

/* What was found, for a mismatch message: the value's text (or "nothing
 * at POINTER"), into OUT. */
static void
found_text(struct flag_call *c, char *out, size_t outlen)
{
	json_t *rb = json_object_get(c->result, "read_back");
	json_t *v = json_object_get(rb, "value");
	char *t;

	if (!json_is_true(json_object_get(rb, "found"))) {
		snprintf(out, outlen, "nothing there");
		return;
	}
	if ((t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY)) == NULL) {
		snprintf(out, outlen, "(a value)");
		return;
	}
	if (outlen > 4)
		flag_fold(out, outlen, t);
	free(t);
}

/* ---- the API ---- */

int
flag_read_with(const struct plan *p, const struct flag_options *o,
    int *state, json_t **result, char *err, size_t errlen)
{
	struct flag_call c;
	int rc, st = -1;

	if (result != NULL)
		*result = NULL;
	if ((rc = call_open(&c, p, o, false, false, err, errlen)) == 0)
		rc = read_flag(&c, "flag read", &st, err, errlen);
	if (state != NULL)
		*state = rc == 0 ? st : -1;
	flag_call_close(&c, result, err, errlen);
	return rc;
}

int
flag_read(const struct plan *p, int *state, json_t **result, char *err,
    size_t errlen)
{
	return flag_read_with(p, NULL, state, result, err, errlen);
}

int
flag_switch_with(const struct plan *p, bool on, const struct flag_options *o,
    json_t **result, char *err, size_t errlen)
{
	const struct plan_http_call *pc;
	const char *label = on ? "flag on" : "flag off";
	char found[FLAG_EXCERPT_MAX + 1];
	char *url = NULL;
	struct flag_call c;
	int rc, st = -1;

	if (result != NULL)
		*result = NULL;
	if ((rc = call_open(&c, p, o, true, on, err, errlen)) != 0)
		goto done;
	if (p->flag.kind == PLAN_FLAG_UNLEASH) {
		if ((url = unleash_switch_url(&c, on)) == NULL) {
			rc = FLAG_ERR_NOMEM;
			seterr(err, errlen, "%s: out of memory", label);
			goto done;
		}
		rc = flag_send(&c, label, "write", "POST", url, NULL,
		    c.hdr_write, err, errlen);
	} else {
		pc = on ? &p->flag.on : &p->flag.off;
		rc = flag_send(&c, label, "write", pc->method, pc->url,
		    pc->body, c.hdr_write, err, errlen);
	}
	if (rc != 0)
		goto done;
	if ((rc = read_flag(&c, label, &st, err, errlen)) != 0)
		goto done;
	if (st != (on ? 1 : 0)) {
		rc = FLAG_ERR_MISMATCH;
		found_text(&c, found, sizeof(found));
		if (p->flag.kind == PLAN_FLAG_UNLEASH)
			seterr(err, errlen, "%s: read back: feature \"%s\" in "
			    "environment \"%s\" has enabled %s; expected %s",
			    label, p->flag.feature, p->flag.environment, found,
			    on ? "true" : "false");
		else
			seterr(err, errlen, "%s: read back from GET %s: %s at "
			    "%s; expected %s (%s)", label, p->flag.read_url,
			    found, p->flag.read_pointer, on ? p->flag.read_on :
			    p->flag.read_off, on ? "on" : "off");
		goto done;
	}
	rc = 0;
done:
	if (c.result != NULL &&
	    json_object_set_new(c.result, "confirmed", json_boolean(rc == 0)) !=
	    0 && rc == 0) {
		rc = FLAG_ERR_NOMEM;
		seterr(err, errlen, "%s: out of memory", label);
	}
	free(url);
	flag_call_close(&c, result, err, errlen);
	return rc;
}

int
flag_switch(const struct plan *p, bool on, json_t **result, char *err,
    size_t errlen)
{
	return flag_switch_with(p, on, NULL, result, err, errlen);
}
