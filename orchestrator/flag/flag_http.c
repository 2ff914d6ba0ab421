/* flag_http: the flag provider "http" (flag_provider.h) — any service
 * with an HTTP API: the plan's on and off calls, its headers (env: values
 * resolved) and the read-back of the value at a JSON pointer. See flag.h. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "flag_transport.h"
#include "plan_flag.h"

static bool
header_has(const struct plan *p, const char *name)
{
	size_t i;

	for (i = 0; i < plan_flag_http(p)->nheaders; i++)
		if (plan_flag_http(p)->headers[i].name != NULL &&
		    strcasecmp(plan_flag_http(p)->headers[i].name, name) == 0)
			return true;
	return false;
}

static bool
valid_method(const char *m)
{
	return m != NULL && (strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0 ||
	    strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0 ||
	    strcmp(m, "DELETE") == 0);
}

static bool
valid_header_name(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (s == NULL || *p == '\0')
		return false;
	for (; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == ':')
			return false;
	return true;
}

/* The headers of kind http: the plan's, env: values resolved now. */
static int
http_headers(struct flag_call *c, char *err, size_t errlen)
{
	const struct plan *p = c->p;
	const struct plan_header *h;
	const char *v;
	char what[128];
	size_t i;
	int rc;

	for (i = 0; i < plan_flag_http(p)->nheaders; i++) {
		h = &plan_flag_http(p)->headers[i];
		if (!valid_header_name(h->name) || h->value == NULL) {
			errbuf_set(err, errlen, "flag.headers: header %zu has no "
			    "valid name or no value", i + 1);
			return FLAG_ERR_ARG;
		}
		snprintf(what, sizeof(what), "flag.headers.%.60s", h->name);
		if (strncmp(h->value, "env:", 4) == 0) {
			if ((rc = flag_resolve(c, h->value, what, &v, err,
			    errlen)) != 0)
				return rc;
		} else {
			v = h->value;
			if (strpbrk(v, "\r\n") != NULL) {
				errbuf_set(err, errlen, "%s holds a line break",
				    what);
				return FLAG_ERR_ARG;
			}
		}
		if (flag_add_header(&c->hdr_write, h->name, v) != 0 ||
		    flag_add_header(&c->hdr_read, h->name, v) != 0)
			goto nomem;
	}
	if ((!header_has(p, "Content-Type") &&
	    flag_add_header(&c->hdr_write, "Content-Type", JSON_TYPE) != 0) ||
	    (!header_has(p, "Accept") &&
	    (flag_add_header(&c->hdr_write, "Accept", JSON_TYPE) != 0 ||
	    flag_add_header(&c->hdr_read, "Accept", JSON_TYPE) != 0)))
		goto nomem;
	return 0;
nomem:
	errbuf_set(err, errlen, "flag: out of memory");
	return FLAG_ERR_NOMEM;
}

static int
read_http(struct flag_call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	const struct plan *p = c->p;
	char ex[FLAG_EXCERPT_MAX + 1];
	json_t *j = NULL, *v = NULL, *won = NULL, *woff = NULL;
	json_error_t jerr;
	int rc;

	*state = FLAG_STATE_NEITHER;
	if ((won = json_loads(plan_flag_http(p)->read_on, JSON_DECODE_ANY, &jerr)) ==
	    NULL || (woff = json_loads(plan_flag_http(p)->read_off, JSON_DECODE_ANY,
	    &jerr)) == NULL) {
		rc = FLAG_ERR_ARG;
		errbuf_set(err, errlen, "%s: flag.read.%s is not JSON: %s", label,
		    won == NULL ? "on" : "off", jerr.text);
		goto done;
	}
	/* The pointer's syntax, checked before anything is sent. */
	if ((rc = flag_json_pointer(won, plan_flag_http(p)->read_pointer, &v, err,
	    errlen)) < 0)
		goto done;
	v = NULL;
	if ((rc = flag_send(c, label, "read", "GET", plan_flag_http(p)->read_url, NULL,
	    c->hdr_read, err, errlen)) != 0)
		goto done;
	if (flag_excerpt(c, c->answer.p, c->answer.len, 0, ex) != 0) {
		rc = FLAG_ERR_NOMEM;
		errbuf_set(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if ((j = json_loadb(c->answer.p, c->answer.len, JSON_DECODE_ANY,
	    &jerr)) == NULL) {
		rc = FLAG_ERR_ANSWER;
		errbuf_set(err, errlen, "%s: GET %s: HTTP %ld but the answer is "
		    "not JSON (%s): %s", label, plan_flag_http(p)->read_url, c->status,
		    jerr.text, ex);
		flag_record_read(c, NULL, -1, ex);
		goto done;
	}
	if ((rc = flag_json_pointer(j, plan_flag_http(p)->read_pointer, &v, err,
	    errlen)) < 0)
		goto done;
	if (v != NULL && json_equal(v, won))
		*state = FLAG_STATE_ON;
	else if (v != NULL && json_equal(v, woff))
		*state = FLAG_STATE_OFF;
	if (flag_record_read(c, v, *state, ex) != 0) {
		rc = FLAG_ERR_NOMEM;
		errbuf_set(err, errlen, "%s: out of memory", label);
		goto done;
	}
	rc = 0;
done:
	json_decref(j);
	json_decref(won);
	json_decref(woff);
	return rc;
}

static int
http_check(const struct plan *p, bool switching, bool on, char *err,
    size_t errlen)
{
	const struct plan_http_call *pc = on ? &plan_flag_http(p)->on : &plan_flag_http(p)->off;
	const char *name = on ? "flag.on" : "flag.off";
	char what[32];
	int rc;

	if (switching) {
		if (!valid_method(pc->method)) {
			errbuf_set(err, errlen, "%s.method must be GET, POST, PUT, "
			    "PATCH or DELETE", name);
			return FLAG_ERR_ARG;
		}
		snprintf(what, sizeof(what), "%s.url", name);
		if ((rc = flag_check_url(pc->url, what, 0, err, errlen)) != 0)
			return rc;
		if (strcmp(pc->method, "GET") == 0 && pc->body != NULL) {
			errbuf_set(err, errlen, "%s: a GET has no body", name);
			return FLAG_ERR_ARG;
		}
	}
	if ((rc = flag_check_url(plan_flag_http(p)->read_url, "flag.read.url", 0,
	    err, errlen)) != 0)
		return rc;
	if (plan_flag_http(p)->read_pointer == NULL || plan_flag_http(p)->read_on == NULL ||
	    plan_flag_http(p)->read_off == NULL) {
		errbuf_set(err, errlen, "flag.read needs pointer, on and off");
		return FLAG_ERR_ARG;
	}
	return 0;
}

static int
http_set(struct flag_call *c, bool on, const char *label, char *err,
    size_t errlen)
{
	const struct plan_http_call *pc = on ? &plan_flag_http(c->p)->on :
	    &plan_flag_http(c->p)->off;

	return flag_send(c, label, "write", pc->method, pc->url, pc->body,
	    c->hdr_write, err, errlen);
}

static void
http_mismatch(const struct plan *p, bool on, const char *label,
    const char *found, char *err, size_t errlen)
{
	errbuf_set(err, errlen, "%s: read back from GET %s: %s at "
	    "%s; expected %s (%s)", label, plan_flag_http(p)->read_url,
	    found, plan_flag_http(p)->read_pointer, on ? plan_flag_http(p)->read_on :
	    plan_flag_http(p)->read_off, on ? "on" : "off");
}

static void
http_describe(const struct plan *p, char *out, size_t outlen)
{
	snprintf(out, outlen, "the flag read from %s", plan_flag_http(p)->read_url);
}

static json_t *
http_history(const struct plan *p)
{
	return json_pack("{s:s,s:s}", "kind", "http", "read",
	    plan_flag_http(p)->read_url);
}

const struct flag_provider flag_http = {
	.name = "http",
	.check = http_check,
	.headers = http_headers,
	.set = http_set,
	.read = read_http,
	.mismatch = http_mismatch,
	.describe = http_describe,
	.history = http_history,
};
