/* flag: the feature-flag client behind the flip (kind unleash and kind
 * http), with timeouts, retries and read-back. See flag.h for the contract
 * of each function. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <openssl/crypto.h>
#include <jansson.h>

#include "flag.h"
#include "clock.h"
#include "errbuf.h"
#include "httpbody.h"

#define USER_AGENT	"cutover-flag/1"
#define JSON_TYPE	"application/json"
#define SOURCE_MAX	(64u * 1024)	/* of an answer, read for an excerpt */
#define URL_MAX		4096


/* One flag_switch or flag_read. */
struct call {
	const struct plan	*p;
	struct flag_options	 o;
	CURL			*curl;
	int			 global_init;
	struct curl_slist	*hdr_write;	/* for the on/off call */
	struct curl_slist	*hdr_read;	/* for the read-back */
	char			**secrets;	/* resolved values, to redact */
	size_t			 nsecrets;
	json_t			*result;
	json_t			*attempts;	/* borrowed from RESULT */
	struct httpbody		 answer;
	long			 status;	/* of the last attempt */
	char			 curlerr[CURL_ERROR_SIZE];
};

/* The shared error-buffer helper, under the name this file calls it by. */
#define seterr errbuf_set

/* Zeroes N bytes at P in a way the compiler keeps: OpenSSL's cleanse,
 * under the name this file calls it by. */
#define wipe OPENSSL_cleanse

/* The shared monotonic clock and sleep, under the names this file calls
 * them by. */
#define now_ms() clock_mono_ms()
#define nap clock_sleep_ms

void
flag_options_default(struct flag_options *o)
{
	o->connect_timeout_ms = FLAG_CONNECT_TIMEOUT_MS;
	o->timeout_ms = FLAG_TIMEOUT_MS;
	o->attempts = FLAG_ATTEMPTS;
	o->backoff_ms = FLAG_BACKOFF_MS;
	o->backoff_max_ms = FLAG_BACKOFF_MAX_MS;
	o->budget_ms = FLAG_BUDGET_MS;
}

/* ---- secrets and excerpts ---- */

/* Replaces every occurrence of SECRET in S with "***" in place (a secret
 * of 1 or 2 bytes becomes as many '*'): S never grows. */
static void
redact_one(char *s, const char *secret)
{
	size_t sl, n;
	char *p = s;

	if (s == NULL || secret == NULL || (sl = strlen(secret)) == 0)
		return;
	while ((p = strstr(p, secret)) != NULL) {
		n = sl < 3 ? sl : 3;
		memset(p, '*', n);
		memmove(p + n, p + sl, strlen(p + sl) + 1);
		p += n;
	}
}

static void
redact(const struct call *c, char *s)
{
	size_t i;

	for (i = 0; i < c->nsecrets; i++)
		redact_one(s, c->secrets[i]);
}

/* Length of the valid UTF-8 sequence at S (N bytes left), or 0. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

/* Copies S into OUT (OUTLEN > 4 bytes) as valid UTF-8 of at most OUTLEN-1
 * bytes: control characters and runs of white space fold into one space,
 * invalid bytes become '?', and "..." ends a text that was cut. */
static void
fold(char *out, size_t outlen, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t left = strlen(s), n = 0, k, need;
	int space = 0;

	for (; left > 0; p += k, left -= k) {
		k = utf8_seq(p, left);
		if (*p < 0x20 || *p == 0x7f || *p == ' ') {
			space = n > 0;
			k = 1;
			continue;
		}
		need = (space ? 1 : 0) + (k == 0 ? 1 : k);
		if (n + need > outlen - 1 - 3) {
			memcpy(out + n, "...", 4);
			return;
		}
		if (space) {
			out[n++] = ' ';
			space = 0;
		}
		if (k == 0) {
			out[n++] = '?';
			k = 1;
		} else {
			memcpy(out + n, p, k);
			n += k;
		}
	}
	out[n] = '\0';
}

/* An excerpt of the text S (LEN bytes, not NUL-terminated) into OUT
 * (FLAG_EXCERPT_MAX + 1 bytes), secrets redacted. With PRETTY, an error
 * object such as Unleash's {"name": ..., "message": ...} is shown as
 * "name: message". Returns 0, or -1 when out of memory. */
static int
excerpt(const struct call *c, const char *s, size_t len, int pretty,
    char *out)
{
	json_t *j = NULL, *name, *msg;
	json_error_t jerr;
	const char *ns, *ms;
	char *t = NULL;
	size_t i, n;

	out[0] = '\0';
	if (s == NULL || len == 0)
		return 0;
	if (pretty && (j = json_loadb(s, len, 0, &jerr)) != NULL &&
	    json_is_object(j)) {
		msg = json_object_get(j, "message");
		if (!json_is_string(msg))
			msg = json_object_get(j, "reason");
		if (!json_is_string(msg))
			msg = json_object_get(j, "error");
		name = json_object_get(j, "name");
		if (!json_is_string(name) || name == msg)
			name = NULL;
		if (json_is_string(msg)) {
			ms = json_string_value(msg);
			ns = name != NULL ? json_string_value(name) : "";
			n = strlen(ns) + 2 + strlen(ms);
			if ((t = malloc(n + 1)) == NULL)
				goto nomem;
			snprintf(t, n + 1, "%s%s%s", ns,
			    ns[0] != '\0' ? ": " : "", ms);
		}
	}
	json_decref(j);
	j = NULL;
	if (t == NULL) {
		n = len < SOURCE_MAX ? len : SOURCE_MAX;
		if ((t = malloc(n + 1)) == NULL)
			goto nomem;
		for (i = 0; i < n; i++)
			t[i] = s[i] != '\0' ? s[i] : ' ';
		t[n] = '\0';
	}
	redact(c, t);
	fold(out, FLAG_EXCERPT_MAX + 1, t);
	free(t);
	return 0;
nomem:
	json_decref(j);
	return -1;
}

/* The environment variable of REF ("env:NAME"), stored among C's secrets
 * for redaction. WHAT names the plan field in messages. */
static int
resolve(struct call *c, const char *ref, const char *what, const char **out,
    char *err, size_t errlen)
{
	const char *name, *v;
	char **s;

	*out = NULL;
	if (ref == NULL || strncmp(ref, "env:", 4) != 0 || ref[4] == '\0') {
		/* A literal secret is not quoted. */
		seterr(err, errlen, "%s is not an env:NAME reference", what);
		return FLAG_ERR_ARG;
	}
	name = ref + 4;
	if ((v = getenv(name)) == NULL || v[0] == '\0') {
		seterr(err, errlen, "%s: env:%s: variable %s is %s", what, name,
		    name, v == NULL ? "not set" : "empty");
		return FLAG_ERR_ARG;
	}
	if (strpbrk(v, "\r\n") != NULL) {
		seterr(err, errlen, "%s: env:%s holds a line break", what,
		    name);
		return FLAG_ERR_ARG;
	}
	if (c->nsecrets >= SIZE_MAX / sizeof(*c->secrets) - 1 ||
	    (s = realloc(c->secrets, (c->nsecrets + 1) *
	    sizeof(*c->secrets))) == NULL)
		goto nomem;
	c->secrets = s;
	if ((c->secrets[c->nsecrets] = strdup(v)) == NULL)
		goto nomem;
	*out = c->secrets[c->nsecrets++];
	return 0;
nomem:
	seterr(err, errlen, "%s: out of memory", what);
	return FLAG_ERR_NOMEM;
}

/* ---- HTTP ---- */

/* Checks URL: http or https, no credentials, no fragment, and no query
 * when it is a BASE that paths are appended to. WHAT names the plan field;
 * a URL with credentials is not quoted. */
static int
check_url(const char *url, const char *what, int base, char *err,
    size_t errlen)
{
	CURLU *u = NULL;
	char *part = NULL;
	int rc = FLAG_ERR_ARG;

	if (url == NULL || url[0] == '\0') {
		seterr(err, errlen, "%s is missing", what);
		return FLAG_ERR_ARG;
	}
	if (strlen(url) >= URL_MAX) {
		seterr(err, errlen, "%s is longer than %d bytes", what,
		    URL_MAX - 1);
		return FLAG_ERR_ARG;
	}
	if ((u = curl_url()) == NULL) {
		seterr(err, errlen, "%s: out of memory", what);
		return FLAG_ERR_NOMEM;
	}
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK) {
		if (strchr(url, '@') != NULL)
			seterr(err, errlen, "%s is not a valid URL", what);
		else
			seterr(err, errlen, "%s \"%s\" is not a valid URL",
			    what, url);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK) {
		seterr(err, errlen, "%s must not carry credentials; give them "
		    "as env:NAME references (token, headers)", what);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &part, 0) != CURLUE_OK ||
	    (strcmp(part, "http") != 0 && strcmp(part, "https") != 0)) {
		seterr(err, errlen, "%s \"%s\": scheme must be http or https",
		    what, url);
		goto done;
	}
	curl_free(part);
	part = NULL;
	if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
		seterr(err, errlen, "%s \"%s\" has a fragment", what, url);
		goto done;
	}
	if (base && curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK) {
		seterr(err, errlen, "%s \"%s\" has a query", what, url);
		goto done;
	}
	rc = 0;
done:
	curl_free(part);
	curl_url_cleanup(u);
	return rc;
}

/* Why the last attempt got no answer, into OUT. */
static void
transport_phrase(struct call *c, CURLcode cc, long tmo, char *out,
    size_t outlen)
{
	long oserr = 0;

	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(c->curl, CURLINFO_OS_ERRNO, &oserr);
		if (oserr == ECONNREFUSED)
			snprintf(out, outlen, "connection refused");
		else if (oserr == EHOSTUNREACH)
			snprintf(out, outlen, "host unreachable");
		else if (oserr == ENETUNREACH)
			snprintf(out, outlen, "network unreachable");
		else
			snprintf(out, outlen, "cannot connect: %s",
			    c->curlerr[0] != '\0' ? c->curlerr :
			    curl_easy_strerror(cc));
		break;
	case CURLE_OPERATION_TIMEDOUT:
		snprintf(out, outlen, "timed out after %ld ms (connect "
		    "timeout %ld ms)", tmo, c->o.connect_timeout_ms < tmo ?
		    c->o.connect_timeout_ms : tmo);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		snprintf(out, outlen, "cannot resolve host: %s",
		    c->curlerr[0] != '\0' ? c->curlerr :
		    curl_easy_strerror(cc));
		break;
	case CURLE_GOT_NOTHING:
		snprintf(out, outlen, "connection closed without an answer");
		break;
	default:
		snprintf(out, outlen, "%s", c->curlerr[0] != '\0' ?
		    c->curlerr : curl_easy_strerror(cc));
		break;
	}
	redact(c, out);
}

/* Records one attempt in the result. Returns 0 or FLAG_ERR_NOMEM. */
static int
record_attempt(struct call *c, const char *role, const char *method,
    const char *url, long status, int64_t ms, const char *ex,
    const char *error)
{
	json_t *a;

	a = json_pack("{s:s,s:s,s:s,s:i,s:I,s:s}", "call", role, "method",
	    method, "url", url, "status", (int)status, "ms", (json_int_t)ms,
	    "excerpt", ex);
	if (a == NULL)
		return FLAG_ERR_NOMEM;
	if (error != NULL &&
	    json_object_set_new(a, "error", json_string(error)) != 0) {
		json_decref(a);
		return FLAG_ERR_NOMEM;
	}
	if (json_array_append_new(c->attempts, a) != 0)
		return FLAG_ERR_NOMEM;
	return 0;
}

static int
perform(struct call *c, const char *method, const char *url,
    const char *body, struct curl_slist *hdrs, long connect_ms, long tmo,
    CURLcode *cc)
{
	int get = strcmp(method, "GET") == 0;
	int post = strcmp(method, "POST") == 0;

	httpbody_reset(&c->answer);
	c->curlerr[0] = '\0';
	c->status = 0;
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, tmo);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	if (get || (body == NULL && strcmp(method, "DELETE") == 0)) {
		curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST,
		    get ? NULL : method);
	} else {
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS,
		    body != NULL ? body : "");
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDSIZE,
		    (long)(body != NULL ? strlen(body) : 0));
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST,
		    post ? NULL : method);
	}
	*cc = curl_easy_perform(c->curl);
	if (*cc == CURLE_OK)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
	return *cc == CURLE_OK ? 0 : -1;
}

/* Sends METHOD URL (BODY may be NULL) with HDRS, retrying on no answer and
 * on 5xx as C's options say; ROLE ("write", "read") and LABEL ("flag on",
 * "flag read") go into the attempts and messages. Returns 0 on a 2xx
 * answer, which is left in C->answer, or a negative code with ERR set. */
static int
send_retried(struct call *c, const char *label, const char *role,
    const char *method, const char *url, const char *body,
    struct curl_slist *hdrs, char *err, size_t errlen)
{
	char ex[FLAG_EXCERPT_MAX + 1], why[CURL_ERROR_SIZE + 64];
	int64_t start, t0, ms, elapsed;
	long wait, tmo, connect_ms, left;
	CURLcode cc;
	int n, rc, retry = 0;

	start = now_ms();
	wait = c->o.backoff_ms;
	for (n = 1;; n++) {
		left = (long)(c->o.budget_ms - (now_ms() - start));
		if (left < 1)
			left = 1;
		tmo = c->o.timeout_ms < left ? c->o.timeout_ms : left;
		connect_ms = c->o.connect_timeout_ms < tmo ?
		    c->o.connect_timeout_ms : tmo;
		t0 = now_ms();
		rc = perform(c, method, url, body, hdrs, connect_ms, tmo, &cc);
		ms = now_ms() - t0;
		ex[0] = why[0] = '\0';
		if (rc != 0) {
			if (c->answer.nomem) {
				seterr(err, errlen, "%s: %s %s: out of memory "
				    "reading the answer", label, method, url);
				return FLAG_ERR_NOMEM;
			}
			if (c->answer.toobig)
				snprintf(why, sizeof(why), "answer larger than "
				    "%u bytes", FLAG_ANSWER_MAX);
			else
				transport_phrase(c, cc, tmo, why, sizeof(why));
		} else if (excerpt(c, c->answer.p, c->answer.len,
		    c->status < 200 || c->status > 299, ex) != 0) {
			seterr(err, errlen, "%s: out of memory", label);
			return FLAG_ERR_NOMEM;
		}
		if (record_attempt(c, role, method, url, c->status, ms, ex,
		    why[0] != '\0' ? why : NULL) != 0) {
			seterr(err, errlen, "%s: out of memory", label);
			return FLAG_ERR_NOMEM;
		}
		if (rc == 0 && c->status >= 200 && c->status <= 299)
			return 0;
		/* A 4xx says the request itself is wrong: sending it again
		 * cannot help. A too large answer will be as large again. */
		retry = (rc != 0 && !c->answer.toobig) || c->status >= 500;
		elapsed = now_ms() - start;
		if (!retry || n >= c->o.attempts ||
		    elapsed + wait >= c->o.budget_ms)
			break;
		nap(wait);
		wait = wait > c->o.backoff_max_ms / 2 ? c->o.backoff_max_ms :
		    wait * 2;
	}
	elapsed = now_ms() - start;
	if (rc != 0) {
		seterr(err, errlen, "%s: %s %s: %s (%d attempt%s in %lld ms)",
		    label, method, url, why, n, n == 1 ? "" : "s",
		    (long long)elapsed);
		return c->answer.toobig ? FLAG_ERR_ANSWER : FLAG_ERR_TRANSPORT;
	}
	if (retry)
		seterr(err, errlen, "%s: %s %s: HTTP %ld (%s) (%d attempt%s in "
		    "%lld ms)", label, method, url, c->status,
		    ex[0] != '\0' ? ex : "empty answer", n, n == 1 ? "" : "s",
		    (long long)elapsed);
	else
		seterr(err, errlen, "%s: %s %s: HTTP %ld (%s), not retried",
		    label, method, url, c->status,
		    ex[0] != '\0' ? ex : "empty answer");
	if (c->status == 401 || c->status == 403)
		return FLAG_ERR_AUTH;
	if (c->status == 404)
		return FLAG_ERR_NOT_FOUND;
	return FLAG_ERR_HTTP;
}

/* ---- a call's set-up ---- */

static int
header_has(const struct plan *p, const char *name)
{
	size_t i;

	for (i = 0; i < p->flag.nheaders; i++)
		if (p->flag.headers[i].name != NULL &&
		    strcasecmp(p->flag.headers[i].name, name) == 0)
			return 1;
	return 0;
}

/* Appends "NAME: VALUE" to *L. */
static int
add_header(struct curl_slist **l, const char *name, const char *value)
{
	struct curl_slist *n;
	size_t len = strlen(name) + strlen(value) + 3;
	char *h;

	if ((h = malloc(len)) == NULL)
		return -1;
	snprintf(h, len, "%s: %s", name, value);
	n = curl_slist_append(*l, h);
	wipe(h, len);
	free(h);
	if (n == NULL)
		return -1;
	*l = n;
	return 0;
}

/* Frees L, its header values zeroed first (some are secrets). */
static void
free_headers(struct curl_slist *l)
{
	struct curl_slist *n;

	for (n = l; n != NULL; n = n->next)
		if (n->data != NULL)
			wipe(n->data, strlen(n->data));
	curl_slist_free_all(l);
}

static int
valid_method(const char *m)
{
	return m != NULL && (strcmp(m, "GET") == 0 || strcmp(m, "POST") == 0 ||
	    strcmp(m, "PUT") == 0 || strcmp(m, "PATCH") == 0 ||
	    strcmp(m, "DELETE") == 0);
}

static int
valid_header_name(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	if (s == NULL || *p == '\0')
		return 0;
	for (; *p != '\0'; p++)
		if (*p <= 0x20 || *p >= 0x7f || *p == ':')
			return 0;
	return 1;
}

/* The headers of kind unleash: the token, resolved now. */
static int
unleash_headers(struct call *c, char *err, size_t errlen)
{
	const struct plan *p = c->p;
	const char *token;
	int rc;

	if ((rc = resolve(c, p->flag.token, "flag.token", &token, err,
	    errlen)) != 0)
		return rc;
	if (add_header(&c->hdr_write, "Authorization", token) != 0 ||
	    add_header(&c->hdr_write, "Content-Type", JSON_TYPE) != 0 ||
	    add_header(&c->hdr_write, "Accept", JSON_TYPE) != 0 ||
	    add_header(&c->hdr_read, "Authorization", token) != 0 ||
	    add_header(&c->hdr_read, "Accept", JSON_TYPE) != 0) {
		seterr(err, errlen, "flag: out of memory");
		return FLAG_ERR_NOMEM;
	}
	return 0;
}

/* The headers of kind http: the plan's, env: values resolved now. */
static int
http_headers(struct call *c, char *err, size_t errlen)
{
	const struct plan *p = c->p;
	const struct plan_header *h;
	const char *v;
	char what[128];
	size_t i;
	int rc;

	for (i = 0; i < p->flag.nheaders; i++) {
		h = &p->flag.headers[i];
		if (!valid_header_name(h->name) || h->value == NULL) {
			seterr(err, errlen, "flag.headers: header %zu has no "
			    "valid name or no value", i + 1);
			return FLAG_ERR_ARG;
		}
		snprintf(what, sizeof(what), "flag.headers.%.60s", h->name);
		if (strncmp(h->value, "env:", 4) == 0) {
			if ((rc = resolve(c, h->value, what, &v, err,
			    errlen)) != 0)
				return rc;
		} else {
			v = h->value;
			if (strpbrk(v, "\r\n") != NULL) {
				seterr(err, errlen, "%s holds a line break",
				    what);
				return FLAG_ERR_ARG;
			}
		}
		if (add_header(&c->hdr_write, h->name, v) != 0 ||
		    add_header(&c->hdr_read, h->name, v) != 0)
			goto nomem;
	}
	if ((!header_has(p, "Content-Type") &&
	    add_header(&c->hdr_write, "Content-Type", JSON_TYPE) != 0) ||
	    (!header_has(p, "Accept") &&
	    (add_header(&c->hdr_write, "Accept", JSON_TYPE) != 0 ||
	    add_header(&c->hdr_read, "Accept", JSON_TYPE) != 0)))
		goto nomem;
	return 0;
nomem:
	seterr(err, errlen, "flag: out of memory");
	return FLAG_ERR_NOMEM;
}

static int
check_plan(const struct plan *p, bool switching, bool on, char *err,
    size_t errlen)
{
	const struct plan_http_call *pc = on ? &p->flag.on : &p->flag.off;
	const char *name = on ? "flag.on" : "flag.off";
	char what[32];
	int rc;

	if (p->flag.kind == PLAN_FLAG_UNLEASH) {
		if ((rc = check_url(p->flag.url, "flag.url", 1, err,
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
		if ((rc = check_url(pc->url, what, 0, err, errlen)) != 0)
			return rc;
		if (strcmp(pc->method, "GET") == 0 && pc->body != NULL) {
			seterr(err, errlen, "%s: a GET has no body", name);
			return FLAG_ERR_ARG;
		}
	}
	if ((rc = check_url(p->flag.read_url, "flag.read.url", 0,
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
call_open(struct call *c, const struct plan *p, const struct flag_options *o,
    bool switching, bool on, char *err, size_t errlen)
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

/* Ends C: frees everything but the result, which goes to *RESULT (or is
 * released). Zeroes the secrets and C's copy of the last answer. */
static void
call_close(struct call *c, json_t **result, char *err, size_t errlen)
{
	size_t i;

	if (c->curl != NULL)
		curl_easy_cleanup(c->curl);
	if (c->global_init)
		curl_global_cleanup();
	free_headers(c->hdr_write);
	free_headers(c->hdr_read);
	if (err != NULL && errlen > 0)
		redact(c, err);
	for (i = 0; i < c->nsecrets; i++) {
		wipe(c->secrets[i], strlen(c->secrets[i]));
		free(c->secrets[i]);
	}
	free(c->secrets);
	if (c->answer.p != NULL)
		wipe(c->answer.p, c->answer.cap);
	free(c->answer.p);
	if (result != NULL)
		*result = c->result;
	else
		json_decref(c->result);
	memset(c, 0, sizeof(*c));
}

/* ---- JSON pointer ---- */

/* The array index TOK (decimal, no leading zeros), or -1. */
static long long
array_index(const char *tok)
{
	long long v = 0;
	const char *p;

	if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0'))
		return -1;
	for (p = tok; *p != '\0'; p++) {
		if (*p < '0' || *p > '9' || v > (LLONG_MAX - 9) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

int
flag_json_pointer(const json_t *doc, const char *ptr, json_t **out,
    char *err, size_t errlen)
{
	json_t *cur = (json_t *)doc;
	const char *p, *q, *end;
	char *tok = NULL;
	long long idx;
	size_t n;
	int rc = FLAG_ERR_ARG;

	if (out != NULL)
		*out = NULL;
	if (doc == NULL || ptr == NULL || out == NULL) {
		seterr(err, errlen, "flag_json_pointer: no document, pointer "
		    "or result");
		return FLAG_ERR_ARG;
	}
	if (ptr[0] == '\0') {
		*out = cur;
		return 0;
	}
	if (ptr[0] != '/') {
		seterr(err, errlen, "JSON pointer \"%.100s\" does not start "
		    "with '/'", ptr);
		return FLAG_ERR_ARG;
	}
	if ((tok = malloc(strlen(ptr) + 1)) == NULL) {
		seterr(err, errlen, "flag_json_pointer: out of memory");
		return FLAG_ERR_NOMEM;
	}
	for (p = ptr; *p == '/'; p = end) {
		p++;
		end = p + strcspn(p, "/");
		for (n = 0, q = p; q < end; q++) {
			if (*q != '~') {
				tok[n++] = *q;
				continue;
			}
			if (q + 1 < end && (q[1] == '0' || q[1] == '1')) {
				tok[n++] = q[1] == '0' ? '~' : '/';
				q++;
				continue;
			}
			seterr(err, errlen, "JSON pointer \"%.100s\" has a '~' "
			    "not followed by 0 or 1", ptr);
			goto done;
		}
		tok[n] = '\0';
		if (json_is_object(cur))
			cur = json_object_get(cur, tok);
		else if (json_is_array(cur)) {
			idx = array_index(tok);
			cur = idx < 0 || (unsigned long long)idx >=
			    json_array_size(cur) ? NULL :
			    json_array_get(cur, (size_t)idx);
		} else
			cur = NULL;
	}
	*out = cur;
	rc = cur != NULL ? 0 : 1;
done:
	free(tok);
	return rc;
}

/* ---- reading ---- */

/* Sets RESULT.read_back: VALUE (borrowed; NULL when absent) unless its
 * text is long or holds a secret, then an excerpt of it; STATE; EX. */
static int
record_read(struct call *c, const json_t *value, int state, const char *ex)
{
	char vex[FLAG_EXCERPT_MAX + 1];
	json_t *rb, *v;
	char *text = NULL;
	size_t i;
	int cut = 0;

	if (value != NULL) {
		text = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
		if (text == NULL)
			return FLAG_ERR_NOMEM;
		cut = strlen(text) > FLAG_EXCERPT_MAX;
		for (i = 0; i < c->nsecrets && !cut; i++)
			cut = strstr(text, c->secrets[i]) != NULL;
		if (cut && excerpt(c, text, strlen(text), 0, vex) != 0) {
			free(text);
			return FLAG_ERR_NOMEM;
		}
		free(text);
	}
	if (value == NULL)
		v = json_null();
	else if (cut)
		v = json_string(vex);
	else
		v = json_deep_copy(value);
	rb = json_pack("{s:o,s:b,s:s,s:s}", "value", v, "found", value != NULL,
	    "state", state == 1 ? "on" : state == 0 ? "off" : "unknown",
	    "excerpt", ex);
	if (rb == NULL)
		return FLAG_ERR_NOMEM;
	if (cut && json_object_set_new(rb, "value_cut", json_true()) != 0) {
		json_decref(rb);
		return FLAG_ERR_NOMEM;
	}
	if (json_object_set_new(c->result, "read_back", rb) != 0)
		return FLAG_ERR_NOMEM;
	return 0;
}

/* Percent-encodes S as one path segment into a new string, or NULL. */
static char *
segment(struct call *c, const char *s)
{
	char *e, *out;

	if ((e = curl_easy_escape(c->curl, s, 0)) == NULL)
		return NULL;
	out = strdup(e);
	curl_free(e);
	return out;
}

/* "{url}/api/admin/projects/{project}/features/{feature}" and SUFFIX. */
static char *
unleash_url(struct call *c, const char *suffix)
{
	const struct plan *p = c->p;
	char *proj, *feat, *out = NULL;
	size_t n, base;

	proj = segment(c, p->flag.project);
	feat = segment(c, p->flag.feature);
	if (proj == NULL || feat == NULL)
		goto done;
	base = strlen(p->flag.url);
	while (base > 0 && p->flag.url[base - 1] == '/')
		base--;
	n = base + strlen(proj) + strlen(feat) + strlen(suffix) + 64;
	if ((out = malloc(n)) == NULL)
		goto done;
	snprintf(out, n, "%.*s/api/admin/projects/%s/features/%s%s",
	    (int)base, p->flag.url, proj, feat, suffix);
done:
	free(proj);
	free(feat);
	return out;
}

/* ".../features/{feature}/environments/{environment}/on" (or off). */
static char *
unleash_switch_url(struct call *c, bool on)
{
	char *env, *suffix = NULL, *url = NULL;
	size_t n;

	if ((env = segment(c, c->p->flag.environment)) == NULL)
		return NULL;
	n = strlen(env) + 32;
	if ((suffix = malloc(n)) != NULL) {
		snprintf(suffix, n, "/environments/%s/%s", env,
		    on ? "on" : "off");
		url = unleash_url(c, suffix);
	}
	free(env);
	free(suffix);
	return url;
}

static int
read_unleash(struct call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	const struct plan *p = c->p;
	char ex[FLAG_EXCERPT_MAX + 1], *url = NULL, *envs = NULL, *t;
	json_t *j = NULL, *arr, *e, *env = NULL, *en = NULL;
	const char *name;
	json_error_t jerr;
	size_t i, n;
	int rc;

	*state = -1;
	if ((url = unleash_url(c, "")) == NULL) {
		rc = FLAG_ERR_NOMEM;
		seterr(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if ((rc = send_retried(c, label, "read", "GET", url, NULL, c->hdr_read,
	    err, errlen)) != 0)
		goto done;
	rc = FLAG_ERR_ANSWER;
	if ((j = json_loadb(c->answer.p, c->answer.len, 0, &jerr)) == NULL) {
		if (excerpt(c, c->answer.p, c->answer.len, 0, ex) != 0)
			ex[0] = '\0';
		seterr(err, errlen, "%s: GET %s: HTTP %ld but the answer is "
		    "not JSON (%s): %s", label, url, c->status, jerr.text, ex);
		goto done;
	}
	arr = json_object_get(j, "environments");
	n = json_array_size(arr);
	for (i = 0; i < n; i++) {
		e = json_array_get(arr, i);
		name = json_string_value(json_object_get(e, "name"));
		if (name != NULL && strcmp(name, p->flag.environment) == 0) {
			env = e;
			break;
		}
	}
	if (env == NULL) {
		/* Name the environments there are. */
		for (i = 0, n = 0; i < json_array_size(arr); i++) {
			name = json_string_value(json_object_get(
			    json_array_get(arr, i), "name"));
			n += name != NULL ? strlen(name) + 2 : 0;
		}
		if ((envs = calloc(1, n + 1)) != NULL)
			for (i = 0; i < json_array_size(arr); i++) {
				name = json_string_value(json_object_get(
				    json_array_get(arr, i), "name"));
				if (name == NULL)
					continue;
				if (envs[0] != '\0')
					strcat(envs, ", ");
				strcat(envs, name);
			}
		seterr(err, errlen, "%s: GET %s: feature \"%s\" has no "
		    "environment \"%s\" (it has: %s)", label, url,
		    p->flag.feature, p->flag.environment,
		    envs != NULL && envs[0] != '\0' ? envs : "none");
		excerpt(c, c->answer.p, c->answer.len, 0, ex);
		if (record_read(c, NULL, -1, ex) != 0)
			rc = FLAG_ERR_NOMEM;
		goto done;
	}
	/* The excerpt is the environment, less its strategies. */
	if ((e = json_deep_copy(env)) == NULL) {
		rc = FLAG_ERR_NOMEM;
		goto done;
	}
	json_object_del(e, "strategies");
	t = json_dumps(e, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(e);
	if (t == NULL || excerpt(c, t, strlen(t), 0, ex) != 0) {
		free(t);
		rc = FLAG_ERR_NOMEM;
		goto done;
	}
	free(t);
	en = json_object_get(env, "enabled");
	*state = json_is_true(en) ? 1 : json_is_false(en) ? 0 : -1;
	if ((rc = record_read(c, en, *state, ex)) != 0) {
		seterr(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if (*state == -1) {
		rc = FLAG_ERR_ANSWER;
		seterr(err, errlen, "%s: GET %s: environment \"%s\" has no "
		    "boolean \"enabled\": %s", label, url, p->flag.environment,
		    ex);
		goto done;
	}
	rc = 0;
done:
	if (rc != 0)
		*state = -1;
	json_decref(j);
	free(envs);
	free(url);
	return rc;
}

static int
read_http(struct call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	const struct plan *p = c->p;
	char ex[FLAG_EXCERPT_MAX + 1];
	json_t *j = NULL, *v = NULL, *won = NULL, *woff = NULL;
	json_error_t jerr;
	int rc;

	*state = -1;
	if ((won = json_loads(p->flag.read_on, JSON_DECODE_ANY, &jerr)) ==
	    NULL || (woff = json_loads(p->flag.read_off, JSON_DECODE_ANY,
	    &jerr)) == NULL) {
		rc = FLAG_ERR_ARG;
		seterr(err, errlen, "%s: flag.read.%s is not JSON: %s", label,
		    won == NULL ? "on" : "off", jerr.text);
		goto done;
	}
	/* The pointer's syntax, checked before anything is sent. */
	if ((rc = flag_json_pointer(won, p->flag.read_pointer, &v, err,
	    errlen)) < 0)
		goto done;
	v = NULL;
	if ((rc = send_retried(c, label, "read", "GET", p->flag.read_url, NULL,
	    c->hdr_read, err, errlen)) != 0)
		goto done;
	if (excerpt(c, c->answer.p, c->answer.len, 0, ex) != 0) {
		rc = FLAG_ERR_NOMEM;
		seterr(err, errlen, "%s: out of memory", label);
		goto done;
	}
	if ((j = json_loadb(c->answer.p, c->answer.len, JSON_DECODE_ANY,
	    &jerr)) == NULL) {
		rc = FLAG_ERR_ANSWER;
		seterr(err, errlen, "%s: GET %s: HTTP %ld but the answer is "
		    "not JSON (%s): %s", label, p->flag.read_url, c->status,
		    jerr.text, ex);
		record_read(c, NULL, -1, ex);
		goto done;
	}
	if ((rc = flag_json_pointer(j, p->flag.read_pointer, &v, err,
	    errlen)) < 0)
		goto done;
	if (v != NULL && json_equal(v, won))
		*state = 1;
	else if (v != NULL && json_equal(v, woff))
		*state = 0;
	if (record_read(c, v, *state, ex) != 0) {
		rc = FLAG_ERR_NOMEM;
		seterr(err, errlen, "%s: out of memory", label);
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
read_flag(struct call *c, const char *label, int *state, char *err,
    size_t errlen)
{
	if (c->p->flag.kind == PLAN_FLAG_UNLEASH)
		return read_unleash(c, label, state, err, errlen);
	return read_http(c, label, state, err, errlen);
}

/* What was found, for a mismatch message: the value's text (or "nothing
 * at POINTER"), into OUT. */
static void
found_text(struct call *c, char *out, size_t outlen)
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
		fold(out, outlen, t);
	free(t);
}

/* ---- the API ---- */

int
flag_read_with(const struct plan *p, const struct flag_options *o,
    int *state, json_t **result, char *err, size_t errlen)
{
	struct call c;
	int rc, st = -1;

	if (result != NULL)
		*result = NULL;
	if ((rc = call_open(&c, p, o, false, false, err, errlen)) == 0)
		rc = read_flag(&c, "flag read", &st, err, errlen);
	if (state != NULL)
		*state = rc == 0 ? st : -1;
	call_close(&c, result, err, errlen);
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
	struct call c;
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
		rc = send_retried(&c, label, "write", "POST", url, NULL,
		    c.hdr_write, err, errlen);
	} else {
		pc = on ? &p->flag.on : &p->flag.off;
		rc = send_retried(&c, label, "write", pc->method, pc->url,
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
	call_close(&c, result, err, errlen);
	return rc;
}

int
flag_switch(const struct plan *p, bool on, json_t **result, char *err,
    size_t errlen)
{
	return flag_switch_with(p, on, NULL, result, err, errlen);
}
