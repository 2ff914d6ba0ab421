/* flag: the feature-flag client behind the flip: the table of flag
 * providers (flag_provider.h), its public calls, a call's set-up and the
 * read-back's verdict, the words for each code. See flag.h for the contract of each function; the
 * transport is in flag_transport.c, the providers in flag_unleash.c and
 * flag_http.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "errbuf.h"
#include "flag_transport.h"
#include "log.h"

/* ---- the providers ---- */

extern const struct flag_provider flag_unleash, flag_http;

/* Every flag provider, by the name a plan's flag.kind gives. */
static const struct flag_provider *const providers[] = {
	&flag_unleash,
	&flag_http,
};

const struct flag_provider *
flag_provider_find(const char *name)
{
	size_t i;

	if (name == NULL)
		return NULL;
	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, name) == 0)
			return providers[i];
	return NULL;
}

/* ---- a call's set-up ---- */

/* O (NULL: the defaults) into OUT, each value brought within its range. */
static void
options_of(struct flag_options *out, const struct flag_options *o)
{
	if (o != NULL)
		*out = *o;
	else
		flag_options_default(out);
	if (out->attempts < 1)
		out->attempts = 1;
	if (out->connect_timeout_ms < 1)
		out->connect_timeout_ms = FLAG_CONNECT_TIMEOUT_MS;
	if (out->timeout_ms < 1)
		out->timeout_ms = FLAG_TIMEOUT_MS;
	if (out->backoff_ms < 0)
		out->backoff_ms = 0;
	if (out->backoff_max_ms < out->backoff_ms)
		out->backoff_max_ms = out->backoff_ms;
	if (out->budget_ms < 1)
		out->budget_ms = FLAG_BUDGET_MS;
}

/* Starts C for P: checks the plan, resolves secrets, opens libcurl, and
 * creates the result. */
static int
call_open(struct flag_call *c, const struct plan *p,
    const struct flag_options *o, bool switching, bool on, char *err,
    size_t errlen)
{
	char warn[512];
	int rc;

	memset(c, 0, sizeof(*c));
	c->p = p;
	c->want = switching ? (on ? 1 : 0) : -1;
	options_of(&c->o, o);
	if (p == NULL || (c->prov = flag_provider_find(p->flag.kind)) ==
	    NULL) {
		errbuf_set(err, errlen, "the plan has no flag");
		return FLAG_ERR_ARG;
	}
	c->result = json_pack("{s:s,s:[]}", "kind", c->prov->name,
	    "attempts");
	if (c->result == NULL ||
	    (switching && json_object_set_new(c->result, "want",
	    json_string(on ? "on" : "off")) != 0))
		goto nomem;
	c->attempts = json_object_get(c->result, "attempts");
	if ((rc = c->prov->check(p, switching, on, err, errlen)) != 0)
		return rc;
	if ((rc = c->prov->headers(c, err, errlen)) != 0)
		return rc;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		errbuf_set(err, errlen, "flag: libcurl initialisation failed");
		return FLAG_ERR_NOMEM;
	}
	c->global_init = 1;
	if ((c->curl = curl_easy_init()) == NULL)
		goto nomem;
	if (tls_insecure_warning(&p->flag.tls, "flag.tls", warn, sizeof(warn)) != NULL)
		log_event("warn", p->name, NULL, "%s", warn);
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
	errbuf_set(err, errlen, "flag: out of memory");
	return FLAG_ERR_NOMEM;
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
		rc = c.prov->read(&c, "flag read", &st, err, errlen);
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
	const char *label = on ? "flag on" : "flag off";
	char found[FLAG_EXCERPT_MAX + 1];
	struct flag_call c;
	int rc, st = -1;

	if (result != NULL)
		*result = NULL;
	if ((rc = call_open(&c, p, o, true, on, err, errlen)) != 0)
		goto done;
	if ((rc = c.prov->set(&c, on, label, err, errlen)) != 0)
		goto done;
	if ((rc = c.prov->read(&c, label, &st, err, errlen)) != 0)
		goto done;
	if (st != (on ? 1 : 0)) {
		rc = FLAG_ERR_MISMATCH;
		found_text(&c, found, sizeof(found));
		c.prov->mismatch(p, on, label, found, err, errlen);
		goto done;
	}
	rc = 0;
done:
	if (c.result != NULL &&
	    json_object_set_new(c.result, "confirmed", json_boolean(rc == 0)) !=
	    0 && rc == 0) {
		rc = FLAG_ERR_NOMEM;
		errbuf_set(err, errlen, "%s: out of memory", label);
	}
	flag_call_close(&c, result, err, errlen);
	return rc;
}

int
flag_switch(const struct plan *p, bool on, json_t **result, char *err,
    size_t errlen)
{
	return flag_switch_with(p, on, NULL, result, err, errlen);
}

bool
flag_configured(const struct plan *p)
{
	return p != NULL && flag_provider_find(p->flag.kind) != NULL;
}

const char *
flag_describe(const struct plan *p, char *out, size_t outlen)
{
	const struct flag_provider *prov;

	if (p == NULL || (prov = flag_provider_find(p->flag.kind)) == NULL)
		snprintf(out, outlen, "no flag");
	else
		prov->describe(p, out, outlen);
	return out;
}

json_t *
flag_history(const struct plan *p)
{
	const struct flag_provider *prov;

	if (p == NULL || (prov = flag_provider_find(p->flag.kind)) == NULL)
		return json_pack("{s:n}", "kind");
	return prov->history(p);
}

ERRBUF_NAME_FUNCTION(flag_status_name, FLAG_STATUS_MAP, "unknown")
