/* flag_transport: HTTP for the flag client — one attempt with its
 * timeouts, the retry schedule, the record of every attempt, secrets from
 * env: references and their redaction, excerpts of answers. See
 * flag_transport.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flag_transport.h"
#include "http_url.h"
#include "sentences.h"
#include "utf8.h"

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

static void
redact(const struct flag_call *c, char *s)
{
	size_t i;

	for (i = 0; i < c->nsecrets; i++)
		errbuf_redact(s, c->secrets[i]);
}

/* Copies S into OUT (OUTLEN > 4 bytes) as valid UTF-8 of at most OUTLEN-1
 * bytes: control characters and runs of white space fold into one space,
 * invalid bytes become '?', and "..." ends a text that was cut. */
void
flag_fold(char *out, size_t outlen, const char *s)
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
int
flag_excerpt(const struct flag_call *c, const char *s, size_t len, int pretty,
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
	flag_fold(out, FLAG_EXCERPT_MAX + 1, t);
	free(t);
	return 0;
nomem:
	json_decref(j);
	return -1;
}

/* The environment variable of REF ("env:NAME"), stored among C's secrets
 * for redaction. WHAT names the plan field in messages. */
int
flag_resolve(struct flag_call *c, const char *ref, const char *what,
    const char **out, char *err, size_t errlen)
{
	const char *name, *v;
	char **s;

	*out = NULL;
	if (ref == NULL || strncmp(ref, "env:", 4) != 0 || ref[4] == '\0') {
		/* A literal secret is not quoted. */
		errbuf_set(err, errlen, "%s is not an env:NAME reference", what);
		return FLAG_ERR_ARG;
	}
	name = ref + 4;
	if ((v = getenv(name)) == NULL || v[0] == '\0') {
		errbuf_set(err, errlen, "%s: env:%s: variable %s is %s", what, name,
		    name, v == NULL ? "not set" : "empty");
		return FLAG_ERR_ARG;
	}
	if (strpbrk(v, "\r\n") != NULL) {
		errbuf_set(err, errlen, "%s: env:%s holds a line break", what,
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
	errbuf_set(err, errlen, "%s: out of memory", what);
	return FLAG_ERR_NOMEM;
}

/* ---- HTTP ---- */

/* What is wrong with a flag URL, in the flag client's words: after the
 * field and the URL quoted, or (QUOTED false: it may carry credentials)
 * after the field alone. */
static const struct {
	bool quoted;
	const char *text;
} url_faults[] = {
	[HTTP_URL_NOMEM] = { false, ": out of memory" },
	[HTTP_URL_INVALID] = { true, " is not a valid URL" },
	[HTTP_URL_CREDENTIALS] = { false, " must not carry credentials; give them "
	    "as env:NAME references (token, headers)" },
	[HTTP_URL_SCHEME] = { true, ": scheme must be http or https" },
	[HTTP_URL_FRAGMENT] = { true, " has a fragment" },
	[HTTP_URL_QUERY] = { true, " has a query" },
};

/* Checks URL: http or https, no credentials, no fragment, and no query
 * when it is a BASE that paths are appended to. WHAT names the plan field;
 * a URL with credentials is not quoted. */
int
flag_check_url(const char *url, const char *what, int base, char *err,
    size_t errlen)
{
	enum http_url_fault f;

	if (url == NULL || url[0] == '\0') {
		errbuf_set(err, errlen, "%s is missing", what);
		return FLAG_ERR_ARG;
	}
	if (strlen(url) >= URL_MAX) {
		errbuf_set(err, errlen, "%s is longer than %d bytes", what,
		    URL_MAX - 1);
		return FLAG_ERR_ARG;
	}
	if (http_url_check(url, !base, &f, NULL) == 0)
		return 0;
	if (f == HTTP_URL_INVALID && strchr(url, '@') != NULL)
		errbuf_set(err, errlen, "%s is not a valid URL", what);
	else if (url_faults[f].quoted)
		errbuf_set(err, errlen, "%s \"%s\"%s", what, url, url_faults[f].text);
	else
		errbuf_set(err, errlen, "%s%s", what, url_faults[f].text);
	return f == HTTP_URL_NOMEM ? FLAG_ERR_NOMEM : FLAG_ERR_ARG;
}

/* Why the last attempt, to URL, got no answer, into OUT. */
static void
transport_phrase(struct flag_call *c, CURLcode cc, const char *url, long tmo,
    char *out, size_t outlen)
{
	long oserr = 0;

	if (tls_curl_error(c->curl, cc, c->curlerr[0] != '\0' ? c->curlerr :
	    curl_easy_strerror(cc), &c->p->flag.tls, FLAG_TLS_WHERE, url, out,
	    outlen)) {
		redact(c, out);
		return;
	}
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

/* Records one attempt in the result; a write's with its OUTCOME
 * ("accepted", "refused": an answer other than 2xx, "not sent": no
 * connection, "in doubt": sent and no answer; NULL for a read). Returns 0
 * or FLAG_ERR_NOMEM. */
static int
record_attempt(struct flag_call *c, const char *role, const char *method,
    const char *url, long status, int64_t ms, const char *ex,
    const char *error, const char *outcome)
{
	json_t *a;

	a = json_pack("{s:s,s:s,s:s,s:i,s:I,s:s}", "call", role, "method",
	    method, "url", url, "status", (int)status, "ms", (json_int_t)ms,
	    "excerpt", ex);
	if (a == NULL)
		return FLAG_ERR_NOMEM;
	if ((error != NULL &&
	    json_object_set_new(a, "error", json_string(error)) != 0) ||
	    (outcome != NULL &&
	    json_object_set_new(a, "outcome", json_string(outcome)) != 0)) {
		json_decref(a);
		return FLAG_ERR_NOMEM;
	}
	if (json_array_append_new(c->attempts, a) != 0)
		return FLAG_ERR_NOMEM;
	return 0;
}

static int
perform(struct flag_call *c, const char *method, const char *url,
    const char *body, struct curl_slist *hdrs, long connect_ms, long tmo,
    CURLcode *cc)
{
	struct tls_curl tc;

	httpbody_reset(&c->answer);
	c->curlerr[0] = '\0';
	c->status = 0;
	if (tls_curl_prepare(c->curl, &c->p->flag.tls, url, &tc, c->curlerr,
	    sizeof(c->curlerr)) != 0) {
		*cc = CURLE_FAILED_INIT;
		return -1;
	}
	curl_easy_setopt(c->curl, CURLOPT_URL, tc.url);
	curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, tmo);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdrs);
	(void)httpbody_request(c->curl, method, body);
	*cc = curl_easy_perform(c->curl);
	tls_curl_release(c->curl, &tc);
	if (*cc == CURLE_OK)
		curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &c->status);
	return *cc == CURLE_OK ? 0 : -1;
}

/* The retry schedule of one flag_send (flag.h, struct flag_options). */
struct schedule {
	int64_t start;			/* clock_mono_ms of the first attempt */
	long wait;			/* before the next attempt */
};

/* Whether attempt N + 1 may start after N attempts: within the attempts
 * and the budget. Waits the backoff first when so. */
static bool
schedule_next(struct flag_call *c, struct schedule *s, int n)
{
	int64_t elapsed = clock_mono_ms() - s->start;

	if (n >= c->o.attempts || elapsed + s->wait >= c->o.budget_ms)
		return false;
	clock_sleep_ms(s->wait);
	s->wait = s->wait > c->o.backoff_max_ms / 2 ? c->o.backoff_max_ms :
	    s->wait * 2;
	return true;
}

/* What one attempt got. */
struct attempt {
	int rc;				/* perform's: 0 when an answer came */
	bool ok;			/* a 2xx answer */
	bool retry;			/* no answer, or a 5xx */
	bool unsent;			/* the request never left (before_request) */
	char ex[FLAG_EXCERPT_MAX + 1];	/* of the answer, redacted */
	char why[CURL_ERROR_SIZE + 64];	/* why no answer came */
};

/* The errors libcurl returns before a request's first byte leaves: no
 * address, no connection, or a TLS handshake that did not complete (the
 * request goes only over a finished handshake). A write that failed so
 * was not sent, and may be sent again; any other failure may have
 * reached the service. */
static const CURLcode unsent_codes[] = {
	CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT, CURLE_COULDNT_RESOLVE_PROXY,
	CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_CONNECT, CURLE_SSL_CONNECT_ERROR,
	CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_CERTPROBLEM,
	CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION, CURLE_USE_SSL_FAILED,
	CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_CRL_BADFILE,
	CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
	CURLE_SSL_INVALIDCERTSTATUS,
};

static bool
before_request(CURLcode cc)
{
	for (size_t i = 0; i < sizeof(unsent_codes) / sizeof(unsent_codes[0]); i++)
		if (cc == unsent_codes[i])
			return true;
	return false;
}

/* Sends METHOD URL once (S: the call's schedule, for the time left) and
 * records the attempt in C's result. A write goes on a connection of its
 * own: libcurl silently sends a request again when a reused connection
 * closes before any answer, and a write must not go twice unseen.
 * Returns 0 with A filled, or FLAG_ERR_NOMEM with ERR. */
static int
attempt_once(struct flag_call *c, const struct schedule *s, const char *label,
    const char *role, const char *method, const char *url, const char *body,
    struct curl_slist *hdrs, struct attempt *a, char *err, size_t errlen)
{
	int64_t t0, ms;
	long tmo, connect_ms, left;
	CURLcode cc;

	memset(a, 0, sizeof(*a));
	left = (long)(c->o.budget_ms - (clock_mono_ms() - s->start));
	if (left < 1)
		left = 1;
	tmo = c->o.timeout_ms < left ? c->o.timeout_ms : left;
	connect_ms = c->o.connect_timeout_ms < tmo ? c->o.connect_timeout_ms : tmo;
	curl_easy_setopt(c->curl, CURLOPT_FRESH_CONNECT,
	    strcmp(role, "write") == 0 ? 1L : 0L);
	t0 = clock_mono_ms();
	a->rc = perform(c, method, url, body, hdrs, connect_ms, tmo, &cc);
	ms = clock_mono_ms() - t0;
	if (a->rc != 0) {
		if (c->answer.nomem) {
			errbuf_set(err, errlen, "%s: %s %s: out of memory reading the "
			    "answer", label, method, url);
			return FLAG_ERR_NOMEM;
		}
		if (c->answer.toobig)
			snprintf(a->why, sizeof(a->why), "answer larger than %u bytes",
			    FLAG_ANSWER_MAX);
		else
			transport_phrase(c, cc, url, tmo, a->why, sizeof(a->why));
	} else if (flag_excerpt(c, c->answer.p, c->answer.len,
	    c->status < 200 || c->status > 299, a->ex) != 0) {
		errbuf_set(err, errlen, "%s: out of memory", label);
		return FLAG_ERR_NOMEM;
	}
	a->ok = a->rc == 0 && c->status >= 200 && c->status <= 299;
	/* A 4xx says the request itself is wrong: sending it again cannot
	 * help. A too large answer will be as large again. */
	a->retry = (a->rc != 0 && !c->answer.toobig) || c->status >= 500;
	a->unsent = a->rc != 0 && before_request(cc);
	if (record_attempt(c, role, method, url, c->status, ms, a->ex,
	    a->why[0] != '\0' ? a->why : NULL, strcmp(role, "write") != 0 ? NULL :
	    a->ok ? "accepted" : a->unsent ? "not sent" : a->rc == 0 ? "refused" :
	    "in doubt") != 0) {
		errbuf_set(err, errlen, "%s: out of memory", label);
		return FLAG_ERR_NOMEM;
	}
	return 0;
}

/* The error of a call whose last attempt A failed, after N attempts
 * since S began, into ERR. Returns its code. */
static int
send_failed(struct flag_call *c, const struct schedule *s, const struct attempt *a,
    int n, const char *label, const char *method, const char *url, char *err,
    size_t errlen)
{
	long long elapsed = (long long)(clock_mono_ms() - s->start);

	if (a->rc != 0) {
		errbuf_set(err, errlen, "%s: %s %s: %s (%d attempt%s in %lld ms)",
		    label, method, url, a->why, n, n == 1 ? "" : "s", elapsed);
		return c->answer.toobig ? FLAG_ERR_ANSWER : FLAG_ERR_TRANSPORT;
	}
	if (a->retry)
		errbuf_set(err, errlen, "%s: %s %s: HTTP %ld (%s) (%d attempt%s in "
		    "%lld ms)", label, method, url, c->status,
		    a->ex[0] != '\0' ? a->ex : "empty answer", n, n == 1 ? "" : "s",
		    elapsed);
	else
		errbuf_set(err, errlen, "%s: %s %s: HTTP %ld (%s), not retried",
		    label, method, url, c->status,
		    a->ex[0] != '\0' ? a->ex : "empty answer");
	if (c->status == 401 || c->status == 403)
		return FLAG_ERR_AUTH;
	if (c->status == 404)
		return FLAG_ERR_NOT_FOUND;
	return FLAG_ERR_HTTP;
}

/* After a write that got no answer or a 5xx (its error in ERR): did it
 * take? Reads the flag back through the provider. Returns 0 with *TOOK
 * true when it reads as the switch wants (recorded in the result), false
 * when it reads the other way (the write may be sent again); or
 * FLAG_ERR_UNCONFIRMED (or FLAG_ERR_NOMEM) with ERR saying why when it
 * cannot be read or reads neither: whether the write took is then
 * unknown, and sending it again could undo it (a toggle). */
static int
write_took(struct flag_call *c, const char *label, bool *took, char *err,
    size_t errlen)
{
	char rerr[512];
	int st = -1, rc;

	*took = false;
	rerr[0] = '\0';
	if ((rc = c->prov->read(c, label, &st, rerr, sizeof(rerr))) != 0) {
		if (rc == FLAG_ERR_NOMEM) {
			errbuf_set(err, errlen, "%s", rerr);
			return rc;
		}
		sentences_add(err, errlen, "reading the flag back then failed (%s): "
		    "the switch is unconfirmed and not sent again (a second write "
		    "could undo one that took)", rerr);
		return FLAG_ERR_UNCONFIRMED;
	}
	if (st == c->want) {
		if (json_object_set_new(c->result, "write_took_by", json_string(
		    "read-back after the write got no answer or a 5xx")) != 0) {
			errbuf_set(err, errlen, "%s: out of memory", label);
			return FLAG_ERR_NOMEM;
		}
		*took = true;
		return 0;
	}
	if (st < 0) {
		sentences_add(err, errlen, "read back, the flag reads neither on nor "
		    "off: the switch is unconfirmed and not sent again");
		return FLAG_ERR_UNCONFIRMED;
	}
	return 0;
}

/* A write left and got no answer (its error in ERR): the service may
 * have taken it, or may take it later (one that holds a write past the
 * client's timeout applies it when it gets to it), so it is in doubt and
 * is never sent again. Reads the flag back once: as wanted, the write is
 * resolved (the flag is where it was to go, and a late landing puts it
 * there again) and 0 is returned; otherwise FLAG_ERR_UNCONFIRMED (or
 * FLAG_ERR_NOMEM), the result's "in_doubt" true and ERR saying so. */
static int
write_in_doubt(struct flag_call *c, const char *label, char *err, size_t errlen)
{
	char rerr[512];
	int st = -1, rc;

	rerr[0] = '\0';
	if ((rc = c->prov->read(c, label, &st, rerr, sizeof(rerr))) == FLAG_ERR_NOMEM) {
		errbuf_set(err, errlen, "%s", rerr);
		return rc;
	}
	if (rc == 0 && st == c->want) {
		if (json_object_set_new(c->result, "write_took_by", json_string(
		    "read-back after the write got no answer")) != 0) {
			errbuf_set(err, errlen, "%s: out of memory", label);
			return FLAG_ERR_NOMEM;
		}
		return 0;
	}
	if (json_object_set_new(c->result, "in_doubt", json_true()) != 0) {
		errbuf_set(err, errlen, "%s: out of memory", label);
		return FLAG_ERR_NOMEM;
	}
	if (rc != 0)
		sentences_add(err, errlen, "the write is in doubt (it may still be "
		    "applied) and is not sent again; reading the flag back then failed "
		    "(%s)", rerr);
	else
		sentences_add(err, errlen, "the write is in doubt (it may still be "
		    "applied) and is not sent again; read back, the flag reads %s",
		    st == 1 ? "on" : st == 0 ? "off" : "neither on nor off");
	return FLAG_ERR_UNCONFIRMED;
}

/* Sends METHOD URL (BODY may be NULL) with HDRS as C's options say; ROLE
 * ("write", "read") and LABEL ("flag on", "flag read") go into the
 * attempts and messages. A read is sent again after no answer or a 5xx.
 * A write is one request in flight at a time: it is sent again only when
 * it cannot have left (no connection), or after a 5xx answer when the
 * flag, read back through C's provider, shows that it did not take (one
 * that reads as wanted is done, one that cannot be read back is
 * FLAG_ERR_UNCONFIRMED, never sent blind). A write that left and got no
 * answer is in doubt and never sent again (write_in_doubt). Returns 0 on
 * a 2xx answer (left in C->answer; for a write that was read back, the
 * read's answer), or a negative code with ERR set. */
int
flag_send(struct flag_call *c, const char *label, const char *role,
    const char *method, const char *url, const char *body,
    struct curl_slist *hdrs, char *err, size_t errlen)
{
	struct schedule s = { clock_mono_ms(), c->o.backoff_ms };
	struct attempt a;
	bool write = strcmp(role, "write") == 0, took;
	int n, rc, code;

	for (n = 1;; n++) {
		if ((rc = attempt_once(c, &s, label, role, method, url, body, hdrs, &a,
		    err, errlen)) != 0)
			return rc;
		if (a.ok)
			return 0;
		if (!a.retry || (write && !a.unsent && c->want < 0))
			break;
		if (write && !a.unsent) {
			/* Did it take? Its error first: the read replaces the answer. */
			code = send_failed(c, &s, &a, n, label, method, url, err, errlen);
			if (a.rc != 0)
				return write_in_doubt(c, label, err, errlen);
			if ((rc = write_took(c, label, &took, err, errlen)) != 0)
				return rc;
			if (took)
				return 0;
			if (!schedule_next(c, &s, n)) {
				sentences_add(err, errlen, "read back: not switched");
				return code;
			}
			continue;
		}
		if (!schedule_next(c, &s, n))
			break;
	}
	return send_failed(c, &s, &a, n, label, method, url, err, errlen);
}

/* Appends "NAME: VALUE" to *L. */
int
flag_add_header(struct curl_slist **l, const char *name, const char *value)
{
	struct curl_slist *n;
	size_t len = strlen(name) + strlen(value) + 3;
	char *h;

	if ((h = malloc(len)) == NULL)
		return -1;
	snprintf(h, len, "%s: %s", name, value);
	n = curl_slist_append(*l, h);
	OPENSSL_cleanse(h, len);
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
			OPENSSL_cleanse(n->data, strlen(n->data));
	curl_slist_free_all(l);
}

/* Ends C: frees everything but the result, which goes to *RESULT (or is
 * released). Zeroes the secrets and C's copy of the last answer. */
void
flag_call_close(struct flag_call *c, json_t **result, char *err, size_t errlen)
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
		OPENSSL_cleanse(c->secrets[i], strlen(c->secrets[i]));
		free(c->secrets[i]);
	}
	free(c->secrets);
	if (c->answer.p != NULL)
		OPENSSL_cleanse(c->answer.p, c->answer.cap);
	free(c->answer.p);
	if (result != NULL)
		*result = c->result;
	else
		json_decref(c->result);
	memset(c, 0, sizeof(*c));
}

/* Sets RESULT.read_back: VALUE (borrowed; NULL when absent) unless its
 * text is long or holds a secret, then an excerpt of it; STATE; EX. */
int
flag_record_read(struct flag_call *c, const json_t *value, int state,
    const char *ex)
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
		if (cut && flag_excerpt(c, text, strlen(text), 0, vex) != 0) {
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
