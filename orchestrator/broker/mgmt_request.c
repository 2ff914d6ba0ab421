/* mgmt_request: the management API client's transport: one request over
 * the handle's libcurl easy handle (made again on a cluster's next node
 * when no answer came, see mgmt_open_list), its answer parsed as JSON, and
 * an error message that names the call and says why, with the password
 * redacted (see mgmt.h); the words for each of the client's codes. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "mgmt_int.h"
#include "log.h"
#include "sentences.h"

/* A public call's start: no client or no result is the caller's mistake,
 * named by CALL; OUT is emptied. Returns 0 or MGMT_ERR_ARG. */
int
mgmt__begin(const char *call, const struct mgmt *m, void *out, size_t size,
    char *err, size_t errlen)
{
	if (out == NULL || m == NULL) {
		errbuf_set(err, errlen, "%s: no client or result", call);
		return MGMT_ERR_ARG;
	}
	memset(out, 0, size);
	return 0;
}

/* "METHOD /path" for messages: a long query string is cut to "?...". */
void
mgmt__describe(char *out, size_t outlen, const char *method, const char *path)
{
	const char *q = strchr(path, '?');

	if (q == NULL || strlen(path) <= 100)
		snprintf(out, outlen, "%s %s", method, path);
	else
		snprintf(out, outlen, "%s %.*s?...", method, (int)(q - path),
		    path);
}

/* Copies up to OUTLEN-1 bytes of S into OUT, control characters and runs
 * of white space folded into one space, "..." appended when cut. */
static void
fold(char *out, size_t outlen, const char *s, size_t slen)
{
	size_t i, n = 0;
	int space = 0;

	if (outlen < 4) {
		if (outlen > 0)
			out[0] = '\0';
		return;
	}
	for (i = 0; i < slen && s[i] != '\0'; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x20 || c == 0x7f || c == ' ') {
			space = n > 0;
			continue;
		}
		if (n + (space ? 2 : 1) >= outlen - 3) {
			memcpy(out + n, "...", 4);
			return;
		}
		if (space) {
			out[n++] = ' ';
			space = 0;
		}
		out[n++] = (char)c;
	}
	out[n] = '\0';
}

/* A short excerpt of the answer in M->answer: "error: reason" when it is
 * the broker's JSON error object, else the folded text. */
static void
excerpt(struct mgmt *m, char *out, size_t outlen)
{
	json_t *j, *e, *r;
	json_error_t jerr;
	char tmp[EXCERPT_MAX * 2];

	out[0] = '\0';
	if (m->answer.len == 0) {
		snprintf(out, outlen, "empty answer");
		return;
	}
	j = json_loadb(m->answer.p, m->answer.len, 0, &jerr);
	e = json_object_get(j, "error");
	r = json_object_get(j, "reason");
	if (json_is_string(e) && json_is_string(r))
		snprintf(tmp, sizeof(tmp), "%s: %s", json_string_value(e),
		    json_string_value(r));
	else if (json_is_string(r))
		snprintf(tmp, sizeof(tmp), "%s", json_string_value(r));
	else if (json_is_string(e))
		snprintf(tmp, sizeof(tmp), "%s", json_string_value(e));
	else {
		fold(out, outlen < EXCERPT_MAX ? outlen : EXCERPT_MAX,
		    m->answer.p, m->answer.len);
		json_decref(j);
		return;
	}
	json_decref(j);
	fold(out, outlen < EXCERPT_MAX ? outlen : EXCERPT_MAX, tmp,
	    strlen(tmp));
}

/* Says why a transfer got no HTTP answer. */
static void
transport_error(struct mgmt *m, CURLcode cc, const char *what, char *err,
    size_t errlen)
{
	char detail[CURL_ERROR_SIZE + 64], why[CURL_ERROR_SIZE + 512];
	const char *phrase;
	long oserr = 0;

	snprintf(detail, sizeof(detail), "%s",
	    m->curlerr[0] != '\0' ? m->curlerr : curl_easy_strerror(cc));
	if (tls_curl_error(m->curl, cc, detail, &m->tls, MGMT_TLS_WHERE,
	    m->base, why, sizeof(why))) {
		errbuf_set(err, errlen, "%s: %s (%s)", what, why, m->base);
		return;
	}
	/* TLS's refusals above are answers; these are the node's absence. */
	m->losses++;
	switch (cc) {
	case CURLE_COULDNT_CONNECT:
		curl_easy_getinfo(m->curl, CURLINFO_OS_ERRNO, &oserr);
		if (oserr == ECONNREFUSED)
			phrase = "connection refused";
		else if (oserr == EHOSTUNREACH)
			phrase = "host unreachable";
		else if (oserr == ENETUNREACH)
			phrase = "network unreachable";
		else
			phrase = NULL;
		if (phrase != NULL)
			errbuf_set(err, errlen, "%s: %s (%s)", what, phrase,
			    m->base);
		else
			errbuf_set(err, errlen, "%s: cannot connect: %s (%s)",
			    what, detail, m->base);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		errbuf_set(err, errlen, "%s: timed out (connect %ld ms, request "
		    "%ld ms): %s (%s)", what, m->connect_ms, m->request_ms,
		    detail, m->base);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		errbuf_set(err, errlen, "%s: cannot resolve host: %s (%s)", what,
		    detail, m->base);
		break;
	case CURLE_GOT_NOTHING:
		errbuf_set(err, errlen, "%s: connection closed without an answer "
		    "(%s)", what, m->base);
		break;
	default:
		errbuf_set(err, errlen, "%s: %s (%s)", what, detail, m->base);
		break;
	}
}

/* Checks a request's METHOD, PATH and BODY, and finds the password.
 * Returns 0 and sets *PASSWORD (owned by the environment; set as soon as
 * it is found, so that the caller can redact it), or MGMT_ERR_ARG with
 * ERR. */
static int
request_check(const struct mgmt *m, const char *method, const char *path,
    const json_t *body, const char *what, const char **password, char *err,
    size_t errlen)
{
	int get = strcmp(method, "GET") == 0;

	if (!get && strcmp(method, "PUT") != 0 && strcmp(method, "POST") != 0 &&
	    strcmp(method, "DELETE") != 0) {
		errbuf_set(err, errlen, "%s: method must be GET, PUT, POST or "
		    "DELETE", what);
		return MGMT_ERR_ARG;
	}
	if (strncmp(path, "/api/", 5) != 0) {
		errbuf_set(err, errlen, "%s: path must start with /api/", what);
		return MGMT_ERR_ARG;
	}
	if (get && body != NULL) {
		errbuf_set(err, errlen, "%s: a GET has no body", what);
		return MGMT_ERR_ARG;
	}
	if ((*password = getenv(m->password_env)) == NULL) {
		errbuf_set(err, errlen, "%s: password reference env:%s: variable "
		    "%s is not set", what, m->password_env, m->password_env);
		return MGMT_ERR_ARG;
	}
	if (body != NULL && !json_is_object(body) && !json_is_array(body)) {
		errbuf_set(err, errlen, "%s: body must be a JSON object or array",
		    what);
		return MGMT_ERR_ARG;
	}
	return 0;
}

/* Sets *URL to the base URL followed by PATH and *PAYLOAD to BODY as
 * compact JSON (left NULL without a body); the caller frees both. Returns
 * 0, or MGMT_ERR_NOMEM with ERR. */
static int
request_prepare(const struct mgmt *m, const char *path, const json_t *body,
    const char *what, char **url, char **payload, char *err, size_t errlen)
{
	size_t n = strlen(m->base) + strlen(path) + 1;

	if ((*url = malloc(n)) == NULL) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		return MGMT_ERR_NOMEM;
	}
	snprintf(*url, n, "%s%s", m->base, path);
	if (body != NULL &&
	    (*payload = json_dumps(body, JSON_COMPACT)) == NULL) {
		errbuf_set(err, errlen, "%s: cannot encode the body", what);
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

long
mgmt__timeout_ms(const struct mgmt *m, const char *path)
{
	static const char prefix[] = "/api/queues";
	size_t end = strcspn(path, "?"), len = sizeof(prefix) - 1;

	/* "/api/queues" or "/api/queues/VHOST", nothing after. */
	if (strncmp(path, prefix, len) != 0 || (end > len && (path[len] != '/' ||
	    memchr(path + len + 1, '/', end - len - 1) != NULL)))
		return m->total_ms;
	return m->total_ms > LISTING_TIMEOUT_MS ? m->total_ms : LISTING_TIMEOUT_MS;
}

/* Sets the easy handle up for METHOD on URL (of PATH) with PASSWORD and
 * PAYLOAD (NULL: no body), the connect within CONNECT_MS, the whole
 * request within mgmt__timeout_ms, and empties the answer buffer. */
static void
request_setopt(struct mgmt *m, const char *method, const char *url,
    const char *path, const char *password, const char *payload, long connect_ms)
{
	httpbody_reset(&m->answer);
	m->curlerr[0] = '\0';
	curl_easy_setopt(m->curl, CURLOPT_URL, url);
	curl_easy_setopt(m->curl, CURLOPT_PASSWORD, password);
	curl_easy_setopt(m->curl, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	m->request_ms = mgmt__timeout_ms(m, path);
	curl_easy_setopt(m->curl, CURLOPT_TIMEOUT_MS, m->request_ms);
	curl_easy_setopt(m->curl, CURLOPT_HTTPHEADER,
	    httpbody_request(m->curl, method, payload) && payload != NULL ?
	    m->hdr_json : m->hdr_plain);
}

/* Says why a transfer that ended with CC (not CURLE_OK) brought no
 * answer. Returns MGMT_ERR_NOMEM, MGMT_ERR_ANSWER or MGMT_ERR_TRANSPORT,
 * with ERR. */
static int
perform_error(struct mgmt *m, CURLcode cc, const char *what, char *err,
    size_t errlen)
{
	if (m->answer.nomem) {
		errbuf_set(err, errlen, "%s: out of memory reading the answer",
		    what);
		return MGMT_ERR_NOMEM;
	}
	if (m->answer.toobig) {
		errbuf_set(err, errlen, "%s: answer larger than %u bytes", what,
		    MGMT_ANSWER_MAX);
		return MGMT_ERR_ANSWER;
	}
	transport_error(m, cc, what, err, errlen);
	return MGMT_ERR_TRANSPORT;
}

/* A 2xx answer: stores its JSON in *ANSWER (NULL when the body is empty;
 * released when ANSWER is NULL). Returns 0, or MGMT_ERR_ANSWER with ERR
 * when the body is not JSON. */
static int
answer_json(struct mgmt *m, long status, const char *what, json_t **answer,
    char *err, size_t errlen)
{
	char ex[EXCERPT_MAX];
	json_t *j = NULL;
	json_error_t jerr;

	if (m->answer.len > 0 && !m->answer_text) {
		j = json_loadb(m->answer.p, m->answer.len, 0, &jerr);
		if (j == NULL) {
			excerpt(m, ex, sizeof(ex));
			errbuf_set(err, errlen, "%s: HTTP %ld but the answer is "
			    "not JSON (%s): %s", what, status, jerr.text, ex);
			return MGMT_ERR_ANSWER;
		}
	}
	if (answer != NULL)
		*answer = j;
	else
		json_decref(j);
	return 0;
}

/* The request's result from the HTTP STATUS of the answer in M->answer:
 * 0 (2xx, see answer_json), MGMT_NOT_FOUND, MGMT_ERR_AUTH or
 * MGMT_ERR_HTTP, with ERR when not 0. */
static int
answer_result(struct mgmt *m, long status, const char *what, json_t **answer,
    char *err, size_t errlen)
{
	char ex[EXCERPT_MAX];

	if (status >= 200 && status <= 299)
		return answer_json(m, status, what, answer, err, errlen);
	if (status == 404) {
		errbuf_set(err, errlen, "%s: not found (HTTP 404)", what);
		return MGMT_NOT_FOUND;
	}
	excerpt(m, ex, sizeof(ex));
	if (status == 401 || status == 403) {
		errbuf_set(err, errlen, "%s: HTTP %ld (%s) as user %s", what,
		    status, ex, m->username);
		return MGMT_ERR_AUTH;
	}
	errbuf_set(err, errlen, "%s: HTTP %ld (%s)", what, status, ex);
	return MGMT_ERR_HTTP;
}

/* May METHOD be sent again to another node after no answer came? */
static int
repeatable(const char *method)
{
	return strcmp(method, "GET") == 0 || strcmp(method, "PUT") == 0 ||
	    strcmp(method, "DELETE") == 0 || strcmp(method, "HEAD") == 0;
}

/* One transfer of METHOD PATH to the node in use, its connect within
 * CONNECT_MS. Returns what mgmt_request does; MGMT_ERR_TRANSPORT when no
 * answer came. */
static int
request_once(struct mgmt *m, const char *method, const char *path,
    const json_t *body, const char *what, const char *password,
    long connect_ms, json_t **answer, long *http_status, char *err,
    size_t errlen)
{
	char *url = NULL, *payload = NULL;
	struct tls_curl tc;
	CURLcode cc;
	long status = 0;
	int rc;

	if ((rc = request_prepare(m, path, body, what, &url, &payload, err,
	    errlen)) != 0)
		goto done;
	if (tls_curl_prepare(m->curl, &m->tls, url, &tc, err, errlen) != 0) {
		rc = MGMT_ERR_ARG;
		goto done;
	}
	request_setopt(m, method, tc.url, path, password, payload, connect_ms);
	cc = curl_easy_perform(m->curl);
	/* Keep the secrets in libcurl's memory no longer than needed. */
	curl_easy_setopt(m->curl, CURLOPT_PASSWORD, "");
	tls_curl_release(m->curl, &tc);
	if (cc != CURLE_OK) {
		rc = perform_error(m, cc, what, err, errlen);
		goto done;
	}
	curl_easy_getinfo(m->curl, CURLINFO_RESPONSE_CODE, &status);
	if (http_status != NULL)
		*http_status = status;
	rc = answer_result(m, status, what, answer, err, errlen);
done:
	free(payload);
	free(url);
	return rc;
}

/* On a later node than the first, once m->return_after_ms have passed
 * since it moved there or last tried: sends METHOD PATH (repeatable ones
 * only) to the earlier nodes in order, each connect within
 * RETURN_CONNECT_MS (a node slower than that is not one to go back to yet,
 * and the request waits for the try); the first that answers, whatever
 * its HTTP status, is the node in use from then on. Sets *ANSWERED and
 * returns what request_once returned for it (with ERR); otherwise M stays
 * on its node, *ANSWERED is false and ERR untouched. */
static int
request_earlier(struct mgmt *m, const char *method, const char *path,
    const json_t *body, const char *what, const char *password,
    json_t **answer, long *http_status, bool *answered, char *err,
    size_t errlen)
{
	size_t from = m->cur;
	long connect_ms = m->connect_ms < RETURN_CONNECT_MS ? m->connect_ms :
	    RETURN_CONNECT_MS;
	char why[1024];
	int rc;

	*answered = false;
	if (from == 0 || m->return_after_ms <= 0 || !repeatable(method) ||
	    clock_mono_ms() - m->return_from < m->return_after_ms)
		return 0;
	for (size_t i = 0; i < from; i++) {
		m->cur = i;
		m->base = m->bases[i];
		why[0] = '\0';
		rc = request_once(m, method, path, body, what, password,
		    connect_ms, answer, http_status, why, sizeof(why));
		if (rc != MGMT_ERR_TRANSPORT) {
			log_event("info", NULL, NULL, "management: %s answers again; "
			    "back to it from %s", m->base, m->bases[from]);
			if (rc != 0)
				errbuf_set(err, errlen, "%s", why);
			m->return_from = clock_mono_ms();
			*answered = true;
			return rc;
		}
	}
	m->cur = from;
	m->base = m->bases[from];
	m->return_from = clock_mono_ms();
	return 0;
}

void
mgmt__answer_release(struct mgmt *m)
{
	if (m->answer.cap <= MGMT_ANSWER_KEEP_MAX)
		return;
	free(m->answer.p);
	m->answer.p = NULL;
	m->answer.len = m->answer.cap = 0;
}

int
mgmt_request(struct mgmt *m, const char *method, const char *path,
    const json_t *body, json_t **answer, long *http_status,
    char *err, size_t errlen)
{
	char what[WHAT_MAX], tried[1024] = "";
	const char *password = NULL;
	size_t start, k;
	bool answered;
	int rc;

	if (answer != NULL)
		*answer = NULL;
	if (http_status != NULL)
		*http_status = 0;
	if (m == NULL || method == NULL || path == NULL) {
		errbuf_set(err, errlen, "mgmt_request: no client, method or path");
		return MGMT_ERR_ARG;
	}
	mgmt__describe(what, sizeof(what), method, path);
	if ((rc = request_check(m, method, path, body, what, &password, err,
	    errlen)) != 0)
		goto done;
	rc = request_earlier(m, method, path, body, what, password, answer,
	    http_status, &answered, err, errlen);
	if (answered)
		goto done;
	/* The node in use first, then the others in the order given. */
	start = m->cur;
	for (k = 0; k < m->nbases; k++) {
		m->cur = (start + k) % m->nbases;
		m->base = m->bases[m->cur];
		rc = request_once(m, method, path, body, what, password,
		    m->connect_ms, answer, http_status, err, errlen);
		if (rc != MGMT_ERR_TRANSPORT || !repeatable(method))
			break;
		sentences_add(tried, sizeof(tried), "%s", err);
	}
	if (k > 0 && k < m->nbases) {
		log_event("warn", NULL, NULL, "management: %s; %s answered instead",
		    tried, m->base);
		m->return_from = clock_mono_ms();
	} else if (k == m->nbases && m->nbases > 1)
		errbuf_set(err, errlen, "%s", tried);
done:
	/* Whatever came back (an answer, libcurl's or jansson's words) is
	 * quoted in ERR: the password must not be. */
	if (rc != 0 && password != NULL && err != NULL && errlen > 0)
		errbuf_redact(err, password);
	if (!m->answer_text)
		mgmt__answer_release(m);
	return rc;
}

/* GET PATH, expecting an array (IS_ARRAY) or an object. A 404 here is an
 * error (a listing of a vhost that does not exist). */
int
mgmt__listing_not_found(const struct mgmt *m, const char *path, char *err,
    size_t errlen)
{
	char what[WHAT_MAX];

	mgmt__describe(what, sizeof(what), "GET", path);
	errbuf_set(err, errlen, "%s: not found (HTTP 404; does virtual host \"%s\" "
	    "exist?)", what, m->vhost);
	return MGMT_ERR_HTTP;
}

int
mgmt__get_json(struct mgmt *m, const char *path, int is_array, json_t **out,
    char *err, size_t errlen)
{
	char what[WHAT_MAX];
	int rc;

	*out = NULL;
	rc = mgmt_request(m, "GET", path, NULL, out, NULL, err, errlen);
	if (rc == MGMT_NOT_FOUND)
		return mgmt__listing_not_found(m, path, err, errlen);
	if (rc != 0)
		return rc;
	if (is_array ? !json_is_array(*out) : !json_is_object(*out)) {
		mgmt__describe(what, sizeof(what), "GET", path);
		errbuf_set(err, errlen, "%s: answer is not a JSON %s", what,
		    is_array ? "array" : "object");
		json_decref(*out);
		*out = NULL;
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

int
mgmt__get_array(struct mgmt *m, const char *path, const char *label, size_t size,
    json_t **json, void **v, size_t *n, char *err, size_t errlen)
{
	int rc;

	*v = NULL;
	*n = 0;
	if ((rc = mgmt__get_json(m, path, 1, json, err, errlen)) != 0)
		return rc;
	*n = json_array_size(*json);
	if (*n > 0 && (*v = calloc(*n, size)) == NULL) {
		json_decref(*json);
		*json = NULL;
		*n = 0;
		errbuf_set(err, errlen, "GET %s: out of memory", label != NULL ? label :
		    path);
		return MGMT_ERR_NOMEM;
	}
	return 0;
}

int
mgmt__get_object(struct mgmt *m, const char *prefix, const char *name,
    const char *a_kind, const char *query, json_t **out, char *err, size_t errlen)
{
	char what[WHAT_MAX];
	struct path p;
	int rc;

	*out = NULL;
	/* An empty NAME is said by its kind ("queue"), a path too long by
	 * the listing ("GET /api/queues"). */
	if ((rc = mgmt__path_object(&p, m, prefix, name, strchr(a_kind, ' ') + 1, err,
	    errlen)) != 0)
		return rc;
	if (query != NULL)
		mgmt__path_add(&p, query);
	snprintf(what, sizeof(what), "GET %.*s", (int)strlen(prefix) - 1, prefix);
	if ((rc = mgmt__path_check(&p, what, err, errlen)) != 0)
		return rc;
	if ((rc = mgmt_request(m, "GET", p.s, NULL, out, NULL, err, errlen)) != 0)
		return rc;
	if (!json_is_object(*out) || mgmt__str_member(*out, "name") == NULL) {
		errbuf_set(err, errlen, "GET %.*s: answer is not %s",
		    (int)strcspn(p.s, "?"), p.s, a_kind);
		json_decref(*out);
		*out = NULL;
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

ERRBUF_NAME_FUNCTION(mgmt_status_name, MGMT_STATUS_MAP, "unknown")
