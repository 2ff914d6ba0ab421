/* mgmt: a client for the RabbitMQ management HTTP API (libcurl + jansson).
 * See mgmt.h for the contract of each function. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <jansson.h>

#include "mgmt.h"
#include "errbuf.h"
#include "httpbody.h"

#define CONNECT_TIMEOUT_MS	5000L	/* at most, to connect */
#define PATH_MAX_LEN		4096	/* encoded path and query */
#define WHAT_MAX		160	/* "METHOD /path" in messages */
#define EXCERPT_MAX		160	/* bytes of an answer quoted */
#define USER_AGENT		"cutover-mgmt/1"

/* Columns of the fast listing; with disable_stats the broker has no
 * effective_policy_definition and no consumers (checked on 3.10.8). */
#define FAST_COLUMNS	"name,type,durable,arguments,policy,messages"
#define PAGE_COLUMNS	"name,type,durable,arguments,policy," \
			"effective_policy_definition,messages,consumers"
#define QUEUE_COLUMNS	"name,type,durable,arguments,policy," \
			"operator_policy,effective_policy_definition," \
			"messages,consumers"


struct mgmt {
	CURL			*curl;
	struct curl_slist	*hdr_plain;	/* without a body */
	struct curl_slist	*hdr_json;	/* with a JSON body */
	char			*base;		/* http://host:port */
	char			*vhost;
	char			*vhost_enc;
	char			*username;
	char			*password_env;	/* NAME of env:NAME */
	long			 connect_ms;
	long			 total_ms;
	int			 global_init;
	struct httpbody		 answer;
	char			 curlerr[CURL_ERROR_SIZE];
};

/* A path being built: literal pieces and encoded segments. */
struct path {
	char	s[PATH_MAX_LEN];
	size_t	len;
	int	overflow;
};

/* The shared error-buffer helper, under the name this file calls it by. */
#define seterr errbuf_set

static int
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

int
mgmt_escape(const char *s, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;
	size_t n = 0;

	if (s == NULL || out == NULL || outlen == 0)
		return -1;
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (unreserved(*p)) {
			if (n + 1 >= outlen)
				goto toolong;
			out[n++] = (char)*p;
		} else {
			if (n + 3 >= outlen)
				goto toolong;
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 0xf];
		}
	}
	out[n] = '\0';
	if (n > INT_MAX)
		return -1;
	return (int)n;
toolong:
	out[0] = '\0';
	return -1;
}

static void
path_add(struct path *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->overflow || p->len + n >= sizeof(p->s)) {
		p->overflow = 1;
		return;
	}
	memcpy(p->s + p->len, lit, n + 1);
	p->len += n;
}

static void
path_seg(struct path *p, const char *seg)
{
	int n;

	if (p->overflow)
		return;
	n = mgmt_escape(seg, p->s + p->len, sizeof(p->s) - p->len);
	if (n < 0) {
		p->overflow = 1;
		p->s[p->len] = '\0';
		return;
	}
	p->len += (size_t)n;
}

/* Starts P as PREFIX followed by the encoded vhost, e.g. "/api/queues/%2F". */
static void
path_vhost(struct path *p, const struct mgmt *m, const char *prefix)
{
	p->len = 0;
	p->overflow = 0;
	p->s[0] = '\0';
	path_add(p, prefix);
	path_add(p, m->vhost_enc);
}

static int
path_check(const struct path *p, const char *what, char *err, size_t errlen)
{
	if (p->overflow) {
		seterr(err, errlen, "%s: path longer than %d bytes once "
		    "encoded", what, PATH_MAX_LEN - 1);
		return MGMT_ERR_ARG;
	}
	return 0;
}

static int
check_name(const char *name, const char *kind, char *err, size_t errlen)
{
	if (name == NULL || name[0] == '\0') {
		seterr(err, errlen, "mgmt: %s name is empty", kind);
		return MGMT_ERR_ARG;
	}
	return 0;
}

/* "METHOD /path" for messages: a long query string is cut to "?...". */
static void
describe(char *out, size_t outlen, const char *method, const char *path)
{
	const char *q = strchr(path, '?');

	if (q == NULL || strlen(path) <= 100)
		snprintf(out, outlen, "%s %s", method, path);
	else
		snprintf(out, outlen, "%s %.*s?...", method, (int)(q - path),
		    path);
}

/* Replaces every occurrence of SECRET in S with "***" in place: the
 * result is never longer (a secret of 1 or 2 bytes becomes as many '*'). */
static void
redact(char *s, const char *secret)
{
	size_t sl, n;
	char *p = s;

	if (secret == NULL || (sl = strlen(secret)) == 0)
		return;
	while ((p = strstr(p, secret)) != NULL) {
		n = sl < 3 ? sl : 3;
		memset(p, '*', n);
		memmove(p + n, p + sl, strlen(p + sl) + 1);
		p += n;
	}
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
	char detail[CURL_ERROR_SIZE + 64];
	const char *phrase;
	long oserr = 0;

	snprintf(detail, sizeof(detail), "%s",
	    m->curlerr[0] != '\0' ? m->curlerr : curl_easy_strerror(cc));
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
			seterr(err, errlen, "%s: %s (%s)", what, phrase,
			    m->base);
		else
			seterr(err, errlen, "%s: cannot connect: %s (%s)",
			    what, detail, m->base);
		break;
	case CURLE_OPERATION_TIMEDOUT:
		seterr(err, errlen, "%s: timed out (connect %ld ms, request "
		    "%ld ms): %s (%s)", what, m->connect_ms, m->total_ms,
		    detail, m->base);
		break;
	case CURLE_COULDNT_RESOLVE_HOST:
		seterr(err, errlen, "%s: cannot resolve host: %s (%s)", what,
		    detail, m->base);
		break;
	case CURLE_GOT_NOTHING:
		seterr(err, errlen, "%s: connection closed without an answer "
		    "(%s)", what, m->base);
		break;
	default:
		seterr(err, errlen, "%s: %s (%s)", what, detail, m->base);
		break;
	}
}

int
mgmt_request(struct mgmt *m, const char *method, const char *path,
    const json_t *body, json_t **answer, long *http_status,
    char *err, size_t errlen)
{
	char what[WHAT_MAX], ex[EXCERPT_MAX];
	char *url = NULL, *payload = NULL;
	const char *password = NULL;
	json_t *j = NULL;
	json_error_t jerr;
	CURLcode cc;
	size_t n;
	long status = 0;
	int rc = MGMT_ERR_ARG, get;

	if (answer != NULL)
		*answer = NULL;
	if (http_status != NULL)
		*http_status = 0;
	if (m == NULL || method == NULL || path == NULL) {
		seterr(err, errlen, "mgmt_request: no client, method or path");
		return MGMT_ERR_ARG;
	}
	describe(what, sizeof(what), method, path);
	get = strcmp(method, "GET") == 0;
	if (!get && strcmp(method, "PUT") != 0 && strcmp(method, "POST") != 0 &&
	    strcmp(method, "DELETE") != 0) {
		seterr(err, errlen, "%s: method must be GET, PUT, POST or "
		    "DELETE", what);
		goto done;
	}
	if (strncmp(path, "/api/", 5) != 0) {
		seterr(err, errlen, "%s: path must start with /api/", what);
		goto done;
	}
	if (get && body != NULL) {
		seterr(err, errlen, "%s: a GET has no body", what);
		goto done;
	}
	if ((password = getenv(m->password_env)) == NULL) {
		seterr(err, errlen, "%s: password reference env:%s: variable "
		    "%s is not set", what, m->password_env, m->password_env);
		goto done;
	}
	if (body != NULL && !json_is_object(body) && !json_is_array(body)) {
		seterr(err, errlen, "%s: body must be a JSON object or array",
		    what);
		goto done;
	}
	rc = MGMT_ERR_NOMEM;
	n = strlen(m->base) + strlen(path) + 1;
	if ((url = malloc(n)) == NULL) {
		seterr(err, errlen, "%s: out of memory", what);
		goto done;
	}
	snprintf(url, n, "%s%s", m->base, path);
	if (body != NULL &&
	    (payload = json_dumps(body, JSON_COMPACT)) == NULL) {
		seterr(err, errlen, "%s: cannot encode the body", what);
		goto done;
	}

	httpbody_reset(&m->answer);
	m->curlerr[0] = '\0';
	curl_easy_setopt(m->curl, CURLOPT_URL, url);
	curl_easy_setopt(m->curl, CURLOPT_PASSWORD, password);
	curl_easy_setopt(m->curl, CURLOPT_CONNECTTIMEOUT_MS, m->connect_ms);
	curl_easy_setopt(m->curl, CURLOPT_TIMEOUT_MS, m->total_ms);
	if (get || (payload == NULL && strcmp(method, "DELETE") == 0)) {
		curl_easy_setopt(m->curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(m->curl, CURLOPT_CUSTOMREQUEST,
		    get ? NULL : method);
		curl_easy_setopt(m->curl, CURLOPT_HTTPHEADER, m->hdr_plain);
	} else {
		curl_easy_setopt(m->curl, CURLOPT_POSTFIELDS,
		    payload != NULL ? payload : "");
		curl_easy_setopt(m->curl, CURLOPT_POSTFIELDSIZE,
		    (long)(payload != NULL ? strlen(payload) : 0));
		curl_easy_setopt(m->curl, CURLOPT_CUSTOMREQUEST,
		    strcmp(method, "POST") == 0 ? NULL : method);
		curl_easy_setopt(m->curl, CURLOPT_HTTPHEADER,
		    payload != NULL ? m->hdr_json : m->hdr_plain);
	}
	cc = curl_easy_perform(m->curl);
	/* Keep the secret in libcurl's memory no longer than needed. */
	curl_easy_setopt(m->curl, CURLOPT_PASSWORD, "");
	if (cc != CURLE_OK) {
		if (m->answer.nomem) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "%s: out of memory reading the "
			    "answer", what);
		} else if (m->answer.toobig) {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "%s: answer larger than %u bytes",
			    what, MGMT_ANSWER_MAX);
		} else {
			rc = MGMT_ERR_TRANSPORT;
			transport_error(m, cc, what, err, errlen);
		}
		goto done;
	}
	curl_easy_getinfo(m->curl, CURLINFO_RESPONSE_CODE, &status);
	if (http_status != NULL)
		*http_status = status;

	if (status >= 200 && status <= 299) {
		if (m->answer.len > 0) {
			j = json_loadb(m->answer.p, m->answer.len, 0, &jerr);
			if (j == NULL) {
				rc = MGMT_ERR_ANSWER;
				excerpt(m, ex, sizeof(ex));
				seterr(err, errlen, "%s: HTTP %ld but the "
				    "answer is not JSON (%s): %s", what,
				    status, jerr.text, ex);
				goto done;
			}
		}
		if (answer != NULL) {
			*answer = j;
			j = NULL;
		}
		rc = 0;
		goto done;
	}
	if (status == 404) {
		rc = MGMT_NOT_FOUND;
		seterr(err, errlen, "%s: not found (HTTP 404)", what);
		goto done;
	}
	excerpt(m, ex, sizeof(ex));
	if (status == 401 || status == 403) {
		rc = MGMT_ERR_AUTH;
		seterr(err, errlen, "%s: HTTP %ld (%s) as user %s", what,
		    status, ex, m->username);
	} else {
		rc = MGMT_ERR_HTTP;
		seterr(err, errlen, "%s: HTTP %ld (%s)", what, status, ex);
	}
done:
	/* Whatever came back (an answer, libcurl's or jansson's words) is
	 * quoted in ERR: the password must not be. */
	if (rc != 0 && password != NULL && err != NULL && errlen > 0)
		redact(err, password);
	json_decref(j);
	free(payload);
	free(url);
	return rc;
}

/* GET PATH, expecting an array (IS_ARRAY) or an object. A 404 here is an
 * error (a listing of a vhost that does not exist). */
static int
get_json(struct mgmt *m, const char *path, int is_array, json_t **out,
    char *err, size_t errlen)
{
	char what[WHAT_MAX];
	int rc;

	*out = NULL;
	rc = mgmt_request(m, "GET", path, NULL, out, NULL, err, errlen);
	if (rc == MGMT_NOT_FOUND) {
		describe(what, sizeof(what), "GET", path);
		seterr(err, errlen, "%s: not found (HTTP 404; does virtual "
		    "host \"%s\" exist?)", what, m->vhost);
		return MGMT_ERR_HTTP;
	}
	if (rc != 0)
		return rc;
	if (is_array ? !json_is_array(*out) : !json_is_object(*out)) {
		describe(what, sizeof(what), "GET", path);
		seterr(err, errlen, "%s: answer is not a JSON %s", what,
		    is_array ? "array" : "object");
		json_decref(*out);
		*out = NULL;
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

/* ---- open, close ---- */

static int
valid_env_name(const char *s)
{
	const char *p;

	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (p = s; *p != '\0'; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_'))
			return 0;
	return 1;
}

/* Checks BASE_URL and stores its normalised form in M->base. */
static int
parse_base(struct mgmt *m, const char *base_url, char *err, size_t errlen)
{
	CURLU *u = NULL;
	char *part = NULL, *url = NULL;
	size_t n;
	int rc = MGMT_ERR_ARG;

	if ((u = curl_url()) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "mgmt: out of memory");
		goto done;
	}
	/* The URL itself is only quoted once known to carry no credentials. */
	if (curl_url_set(u, CURLUPART_URL, base_url, 0) != CURLUE_OK) {
		if (strchr(base_url, '@') != NULL)
			seterr(err, errlen, "mgmt: the management URL is not a "
			    "valid URL");
		else
			seterr(err, errlen, "mgmt: management URL \"%s\" is "
			    "not a valid URL", base_url);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_USER, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PASSWORD, &part, 0) == CURLUE_OK) {
		seterr(err, errlen, "mgmt: the management URL must not carry "
		    "credentials; give username and password (env:NAME)");
		goto done;
	}
	if (curl_url_get(u, CURLUPART_SCHEME, &part, 0) != CURLUE_OK ||
	    (strcmp(part, "http") != 0 && strcmp(part, "https") != 0)) {
		seterr(err, errlen, "mgmt: management URL \"%s\": scheme must "
		    "be http or https", base_url);
		goto done;
	}
	curl_free(part);
	part = NULL;
	if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK ||
	    curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) == CURLUE_OK) {
		seterr(err, errlen, "mgmt: management URL \"%s\": no query or "
		    "fragment allowed", base_url);
		goto done;
	}
	if (curl_url_get(u, CURLUPART_URL, &url, 0) != CURLUE_OK) {
		seterr(err, errlen, "mgmt: management URL \"%s\" is not a "
		    "valid URL", base_url);
		goto done;
	}
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if ((m->base = malloc(n + 1)) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "mgmt: out of memory");
		goto done;
	}
	memcpy(m->base, url, n);
	m->base[n] = '\0';
	rc = 0;
done:
	curl_free(part);
	curl_free(url);
	curl_url_cleanup(u);
	return rc;
}

int
mgmt_open(const char *base_url, const char *vhost, const char *username,
    const char *password_ref, long timeout_ms, struct mgmt **out,
    char *err, size_t errlen)
{
	struct mgmt *m = NULL;
	const char *envname;
	size_t n;
	int rc = MGMT_ERR_ARG;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || base_url == NULL || vhost == NULL ||
	    username == NULL || password_ref == NULL) {
		seterr(err, errlen, "mgmt_open: missing argument");
		return MGMT_ERR_ARG;
	}
	if (vhost[0] == '\0' || username[0] == '\0') {
		seterr(err, errlen, "mgmt_open: %s is empty",
		    vhost[0] == '\0' ? "virtual host" : "username");
		return MGMT_ERR_ARG;
	}
	if (timeout_ms <= 0) {
		seterr(err, errlen, "mgmt_open: timeout must be positive, not "
		    "%ld ms", timeout_ms);
		return MGMT_ERR_ARG;
	}
	/* Never quote PASSWORD_REF unless it is a reference: it could be a
	 * password given by mistake. */
	if (strncmp(password_ref, "env:", 4) != 0) {
		seterr(err, errlen, "mgmt_open: the password must be a "
		    "reference env:NAME (a literal password is not accepted)");
		return MGMT_ERR_ARG;
	}
	envname = password_ref + 4;
	if (!valid_env_name(envname)) {
		seterr(err, errlen, "mgmt_open: password reference %s: \"%s\" "
		    "is not a variable name", password_ref, envname);
		return MGMT_ERR_ARG;
	}
	if (getenv(envname) == NULL) {
		seterr(err, errlen, "mgmt_open: password reference %s: "
		    "variable %s is not set", password_ref, envname);
		return MGMT_ERR_ARG;
	}

	if ((m = calloc(1, sizeof(*m))) == NULL) {
		seterr(err, errlen, "mgmt_open: out of memory");
		return MGMT_ERR_NOMEM;
	}
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		seterr(err, errlen, "mgmt_open: curl_global_init failed");
		goto done;
	}
	m->global_init = 1;
	m->total_ms = timeout_ms;
	m->connect_ms = timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms :
	    CONNECT_TIMEOUT_MS;
	if ((rc = parse_base(m, base_url, err, errlen)) != 0)
		goto done;

	rc = MGMT_ERR_NOMEM;
	n = 3 * strlen(vhost) + 1;
	if ((m->vhost = strdup(vhost)) == NULL ||
	    (m->username = strdup(username)) == NULL ||
	    (m->password_env = strdup(envname)) == NULL ||
	    (m->vhost_enc = malloc(n)) == NULL) {
		seterr(err, errlen, "mgmt_open: out of memory");
		goto done;
	}
	mgmt_escape(vhost, m->vhost_enc, n);
	if ((m->hdr_plain = curl_slist_append(NULL,
	    "Accept: application/json")) == NULL ||
	    (m->hdr_json = curl_slist_append(NULL,
	    "Accept: application/json")) == NULL ||
	    curl_slist_append(m->hdr_json,
	    "Content-Type: application/json") == NULL ||
	    curl_slist_append(m->hdr_json, "Expect:") == NULL) {
		seterr(err, errlen, "mgmt_open: out of memory");
		goto done;
	}
	if ((m->curl = curl_easy_init()) == NULL) {
		seterr(err, errlen, "mgmt_open: curl_easy_init failed");
		goto done;
	}
	curl_easy_setopt(m->curl, CURLOPT_ERRORBUFFER, m->curlerr);
	curl_easy_setopt(m->curl, CURLOPT_NOSIGNAL, 1L);
	m->answer.max = MGMT_ANSWER_MAX;
	curl_easy_setopt(m->curl, CURLOPT_WRITEFUNCTION, httpbody_write);
	curl_easy_setopt(m->curl, CURLOPT_WRITEDATA, &m->answer);
	curl_easy_setopt(m->curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
	curl_easy_setopt(m->curl, CURLOPT_USERNAME, m->username);
	curl_easy_setopt(m->curl, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(m->curl, CURLOPT_USERAGENT, USER_AGENT);
	curl_easy_setopt(m->curl, CURLOPT_PATH_AS_IS, 1L);
	curl_easy_setopt(m->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(m->curl, CURLOPT_FOLLOWLOCATION, 0L);
	*out = m;
	m = NULL;
	rc = 0;
done:
	mgmt_close(m);
	return rc;
}

void
mgmt_close(struct mgmt *m)
{
	if (m == NULL)
		return;
	if (m->curl != NULL)
		curl_easy_cleanup(m->curl);
	curl_slist_free_all(m->hdr_plain);
	curl_slist_free_all(m->hdr_json);
	free(m->answer.p);
	free(m->base);
	free(m->vhost);
	free(m->vhost_enc);
	free(m->username);
	free(m->password_env);
	if (m->global_init)
		curl_global_cleanup();
	free(m);
}

void
mgmt_set_timeouts(struct mgmt *m, long connect_ms, long total_ms)
{
	if (m == NULL)
		return;
	if (connect_ms > 0)
		m->connect_ms = connect_ms;
	if (total_ms > 0)
		m->total_ms = total_ms;
}

const char *
mgmt_vhost(const struct mgmt *m)
{
	return m != NULL ? m->vhost : NULL;
}

/* ---- JSON helpers ---- */

/* A non-negative integer member, or -1 (absent, null, not a number). */
static int64_t
int_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);
	double d;

	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ?
		    (int64_t)json_integer_value(v) : -1;
	if (json_is_real(v)) {
		d = json_real_value(v);
		if (d >= 0 && d < 9.2e18 && d == (double)(int64_t)d)
			return (int64_t)d;
	}
	return -1;
}

/* A string member, or NULL (absent, null, not a string). */
static const char *
str_member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Makes OBJ[KEY] an object (an empty one when absent or not an object)
 * and returns it, borrowed from OBJ. NULL when out of memory. */
static json_t *
object_member(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	if (json_is_object(v))
		return v;
	if (json_object_set_new(obj, key, json_object()) != 0)
		return NULL;
	return json_object_get(obj, key);
}

/* A deep copy of A, or an empty object when A is NULL; NULL on failure. */
static json_t *
copy_or_empty(const json_t *a)
{
	return a != NULL ? json_deep_copy(a) : json_object();
}

static int
body_error(const char *method, const struct path *p, char *err,
    size_t errlen)
{
	seterr(err, errlen, "%s %s: cannot build the request body (out of "
	    "memory, or a string that is not UTF-8)", method, p->s);
	return MGMT_ERR_ARG;
}

static void
copy_str(char *dst, size_t dstlen, const char *src)
{
	snprintf(dst, dstlen, "%s", src != NULL ? src : "");
}

/* ---- overview ---- */

int
mgmt_overview(struct mgmt *m, struct mgmt_overview *ov, char *err,
    size_t errlen)
{
	json_t *j = NULL;
	int rc;

	if (ov == NULL) {
		seterr(err, errlen, "mgmt_overview: no result");
		return MGMT_ERR_ARG;
	}
	memset(ov, 0, sizeof(*ov));
	if ((rc = get_json(m, "/api/overview", 0, &j, err, errlen)) != 0)
		return rc;
	copy_str(ov->rabbitmq_version, sizeof(ov->rabbitmq_version),
	    str_member(j, "rabbitmq_version"));
	copy_str(ov->management_version, sizeof(ov->management_version),
	    str_member(j, "management_version"));
	copy_str(ov->erlang_version, sizeof(ov->erlang_version),
	    str_member(j, "erlang_version"));
	copy_str(ov->cluster_name, sizeof(ov->cluster_name),
	    str_member(j, "cluster_name"));
	copy_str(ov->node, sizeof(ov->node), str_member(j, "node"));
	json_decref(j);
	if (ov->rabbitmq_version[0] == '\0') {
		seterr(err, errlen, "GET /api/overview: the answer has no "
		    "rabbitmq_version; is this a RabbitMQ management API?");
		return MGMT_ERR_ANSWER;
	}
	return 0;
}

/* ---- queues ---- */

static int
queue_cmp(const void *a, const void *b)
{
	return strcmp(((const struct mgmt_queue *)a)->name,
	    ((const struct mgmt_queue *)b)->name);
}

static char *
stash(char **p, const char *s)
{
	char *r = *p;
	size_t n = strlen(s) + 1;

	memcpy(r, s, n);
	*p += n;
	return r;
}

/* Builds *OUT from ITEMS, an array of queue objects. With STATS, the
 * objects come from a statistics listing (effective_policy_definition,
 * consumers); otherwise policy_message_ttl and consumers stay -1. */
static int
queues_from_json(const json_t *items, int stats, const char *what,
    struct mgmt_queue_list *out, char *err, size_t errlen)
{
	const json_t *it, *args;
	struct mgmt_queue *q;
	const char *name, *type, *policy;
	size_t i, n, size = 0;
	char *p;

	memset(out, 0, sizeof(*out));
	n = json_array_size(items);
	for (i = 0; i < n; i++) {
		it = json_array_get(items, i);
		if ((name = str_member(it, "name")) == NULL) {
			seterr(err, errlen, "%s: queue %zu of the answer has "
			    "no name", what, i);
			return MGMT_ERR_ANSWER;
		}
		type = str_member(it, "type");
		policy = str_member(it, "policy");
		size += strlen(name) + 1 + (type ? strlen(type) : 0) + 1;
		if (policy != NULL && policy[0] != '\0')
			size += strlen(policy) + 1;
	}
	if ((n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) ||
	    (out->strings = malloc(size + 1)) == NULL) {
		free(out->v);
		out->v = NULL;
		seterr(err, errlen, "%s: out of memory for %zu queues", what,
		    n);
		return MGMT_ERR_NOMEM;
	}
	p = out->strings;
	for (i = 0; i < n; i++) {
		it = json_array_get(items, i);
		q = &out->v[i];
		q->name = stash(&p, str_member(it, "name"));
		type = str_member(it, "type");
		q->type = stash(&p, type != NULL ? type : "");
		policy = str_member(it, "policy");
		q->policy = policy != NULL && policy[0] != '\0' ?
		    stash(&p, policy) : NULL;
		q->durable = json_is_true(json_object_get(it, "durable"));
		q->messages = int_member(it, "messages");
		args = json_object_get(it, "arguments");
		q->message_ttl = int_member(args, "x-message-ttl");
		q->expires = int_member(args, "x-expires");
		if (stats) {
			q->consumers = int_member(it, "consumers");
			q->policy_message_ttl = int_member(json_object_get(it,
			    "effective_policy_definition"), "message-ttl");
		} else {
			q->consumers = -1;
			q->policy_message_ttl = -1;
		}
	}
	out->n = n;
	if (n > 1)
		qsort(out->v, n, sizeof(*out->v), queue_cmp);
	return 0;
}

static struct mgmt_queue *
find_queue(const struct mgmt_queue_list *l, const char *name)
{
	struct mgmt_queue key;

	if (l == NULL || l->n == 0 || name == NULL)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.name = name;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), queue_cmp);
}

const struct mgmt_queue *
mgmt_queue_list_find(const struct mgmt_queue_list *l, const char *name)
{
	return find_queue(l, name);
}

void
mgmt_queue_list_free(struct mgmt_queue_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	free(l->strings);
	memset(l, 0, sizeof(*l));
}

/* Fills policy_message_ttl from the named policies' definitions. */
static int
join_policies(struct mgmt *m, struct mgmt_queue_list *l, char *err,
    size_t errlen)
{
	struct mgmt_policy_list pl;
	size_t i, k;
	int rc;

	if ((rc = mgmt_list_policies(m, &pl, err, errlen)) != 0)
		return rc;
	for (i = 0; i < l->n; i++) {
		if (l->v[i].policy == NULL)
			continue;
		for (k = 0; k < pl.n; k++)
			if (strcmp(pl.v[k].name, l->v[i].policy) == 0) {
				l->v[i].policy_message_ttl = int_member(
				    pl.v[k].definition, "message-ttl");
				break;
			}
	}
	mgmt_policy_list_free(&pl);
	return 0;
}

/* Sets consumers from GET /api/consumers/{vhost}: 0 unless listed. */
static int
join_consumers(struct mgmt *m, struct mgmt_queue_list *l, char *err,
    size_t errlen)
{
	struct path p;
	struct mgmt_queue *q;
	json_t *j = NULL;
	const char *name;
	size_t i;
	int rc;

	path_vhost(&p, m, "/api/consumers/");
	path_add(&p, "?columns=queue.name");
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	for (i = 0; i < l->n; i++)
		l->v[i].consumers = 0;
	for (i = 0; i < json_array_size(j); i++) {
		name = str_member(json_object_get(json_array_get(j, i),
		    "queue"), "name");
		if ((q = find_queue(l, name)) != NULL)
			q->consumers++;
	}
	json_decref(j);
	return 0;
}

int
mgmt_list_queues(struct mgmt *m, struct mgmt_queue_list *out, char *err,
    size_t errlen)
{
	struct path p;
	json_t *j = NULL;
	int rc;

	if (out == NULL) {
		seterr(err, errlen, "mgmt_list_queues: no result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if (m == NULL) {
		seterr(err, errlen, "mgmt_list_queues: no client");
		return MGMT_ERR_ARG;
	}
	path_vhost(&p, m, "/api/queues/");
	path_add(&p, "?disable_stats=true&enable_queue_totals=true&columns="
	    FAST_COLUMNS);
	if ((rc = path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		goto done;
	if ((rc = queues_from_json(j, 0, "GET /api/queues", out, err,
	    errlen)) != 0)
		goto done;
	json_decref(j);
	j = NULL;
	if ((rc = join_policies(m, out, err, errlen)) != 0)
		goto done;
	rc = join_consumers(m, out, err, errlen);
done:
	json_decref(j);
	if (rc != 0)
		mgmt_queue_list_free(out);
	return rc;
}

/* GET one page into *ANSWER (the whole object, items checked). */
static int
get_page(struct mgmt *m, const char *name_regex, int page, int page_size,
    json_t **answer, struct mgmt_page *pg, char *err, size_t errlen)
{
	struct path p;
	char num[64], what[WHAT_MAX];
	json_t *j = NULL;
	int rc;

	*answer = NULL;
	if (page < 1 || page_size < 1 || page_size > MGMT_PAGE_SIZE_MAX) {
		seterr(err, errlen, "mgmt: page %d, page size %d: the page "
		    "must be at least 1 and the size 1 to %d", page, page_size,
		    MGMT_PAGE_SIZE_MAX);
		return MGMT_ERR_ARG;
	}
	path_vhost(&p, m, "/api/queues/");
	snprintf(num, sizeof(num), "?page=%d&page_size=%d", page, page_size);
	path_add(&p, num);
	if (name_regex != NULL && name_regex[0] != '\0') {
		path_add(&p, "&name=");
		path_seg(&p, name_regex);
		path_add(&p, "&use_regex=true");
	}
	path_add(&p, "&columns=" PAGE_COLUMNS);
	if ((rc = path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 0, &j, err, errlen)) != 0)
		return rc;
	if (!json_is_array(json_object_get(j, "items"))) {
		describe(what, sizeof(what), "GET", p.s);
		seterr(err, errlen, "%s: answer has no items array (not a "
		    "paginated answer)", what);
		json_decref(j);
		return MGMT_ERR_ANSWER;
	}
	if (pg != NULL) {
		pg->page = (int)int_member(j, "page");
		pg->page_size = (int)int_member(j, "page_size");
		pg->page_count = (int)int_member(j, "page_count");
		pg->item_count = (long)int_member(j, "item_count");
		pg->filtered_count = (long)int_member(j, "filtered_count");
		pg->total_count = (long)int_member(j, "total_count");
	}
	*answer = j;
	return 0;
}

int
mgmt_list_queues_page(struct mgmt *m, const char *name_regex, int page,
    int page_size, struct mgmt_queue_list *out, struct mgmt_page *pg,
    char *err, size_t errlen)
{
	json_t *j = NULL;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_queues_page: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if (pg != NULL)
		memset(pg, 0, sizeof(*pg));
	if ((rc = get_page(m, name_regex, page, page_size, &j, pg, err,
	    errlen)) != 0)
		return rc;
	rc = queues_from_json(json_object_get(j, "items"), 1,
	    "GET /api/queues (page)", out, err, errlen);
	json_decref(j);
	return rc;
}

int
mgmt_list_queues_paged(struct mgmt *m, const char *name_regex,
    int page_size, struct mgmt_queue_list *out, char *err, size_t errlen)
{
	struct mgmt_page pg;
	json_t *all = NULL, *j = NULL;
	int rc, page;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_queues_paged: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((all = json_array()) == NULL) {
		seterr(err, errlen, "mgmt_list_queues_paged: out of memory");
		return MGMT_ERR_NOMEM;
	}
	for (page = 1;; page++) {
		if ((rc = get_page(m, name_regex, page, page_size, &j, &pg,
		    err, errlen)) != 0)
			goto done;
		if (json_array_extend(all, json_object_get(j, "items")) != 0) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "mgmt_list_queues_paged: out of "
			    "memory");
			goto done;
		}
		json_decref(j);
		j = NULL;
		if (page >= pg.page_count)
			break;
	}
	rc = queues_from_json(all, 1, "GET /api/queues (pages)", out, err,
	    errlen);
done:
	json_decref(j);
	json_decref(all);
	return rc;
}

int
mgmt_get_queue(struct mgmt *m, const char *name, struct mgmt_queue_info *out,
    char *err, size_t errlen)
{
	struct mgmt_queue *q;
	struct path p;
	json_t *j = NULL;
	const char *s;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_get_queue: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = check_name(name, "queue", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/queues/");
	path_add(&p, "/");
	path_seg(&p, name);
	path_add(&p, "?columns=" QUEUE_COLUMNS);
	if ((rc = path_check(&p, "GET /api/queues", err, errlen)) != 0)
		return rc;
	rc = mgmt_request(m, "GET", p.s, NULL, &j, NULL, err, errlen);
	if (rc != 0)
		return rc;
	if (!json_is_object(j) || str_member(j, "name") == NULL) {
		seterr(err, errlen, "GET %.*s: answer is not a queue",
		    (int)strcspn(p.s, "?"), p.s);
		json_decref(j);
		return MGMT_ERR_ANSWER;
	}
	if ((out->arguments = object_member(j, "arguments")) == NULL ||
	    (out->effective_policy = object_member(j,
	    "effective_policy_definition")) == NULL) {
		json_decref(j);
		memset(out, 0, sizeof(*out));
		seterr(err, errlen, "mgmt_get_queue: out of memory");
		return MGMT_ERR_NOMEM;
	}
	out->json = j;
	q = &out->q;
	q->name = str_member(j, "name");
	q->type = (s = str_member(j, "type")) != NULL ? s : "";
	s = str_member(j, "policy");
	q->policy = s != NULL && s[0] != '\0' ? s : NULL;
	s = str_member(j, "operator_policy");
	out->operator_policy = s != NULL && s[0] != '\0' ? s : NULL;
	q->durable = json_is_true(json_object_get(j, "durable"));
	q->messages = int_member(j, "messages");
	q->consumers = int_member(j, "consumers");
	q->message_ttl = int_member(out->arguments, "x-message-ttl");
	q->expires = int_member(out->arguments, "x-expires");
	q->policy_message_ttl = int_member(out->effective_policy,
	    "message-ttl");
	return 0;
}

void
mgmt_queue_info_free(struct mgmt_queue_info *q)
{
	if (q == NULL)
		return;
	json_decref(q->json);
	memset(q, 0, sizeof(*q));
}

/* ---- exchanges ---- */

int
mgmt_get_exchange(struct mgmt *m, const char *name, struct mgmt_exchange *out,
    char *err, size_t errlen)
{
	struct path p;
	json_t *j = NULL;
	const char *s;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_get_exchange: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = check_name(name, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "GET /api/exchanges", err, errlen)) != 0)
		return rc;
	rc = mgmt_request(m, "GET", p.s, NULL, &j, NULL, err, errlen);
	if (rc != 0)
		return rc;
	if (!json_is_object(j) || str_member(j, "name") == NULL) {
		seterr(err, errlen, "GET %s: answer is not an exchange", p.s);
		json_decref(j);
		return MGMT_ERR_ANSWER;
	}
	if ((out->arguments = object_member(j, "arguments")) == NULL) {
		json_decref(j);
		memset(out, 0, sizeof(*out));
		seterr(err, errlen, "mgmt_get_exchange: out of memory");
		return MGMT_ERR_NOMEM;
	}
	out->json = j;
	out->name = str_member(j, "name");
	out->type = (s = str_member(j, "type")) != NULL ? s : "";
	out->durable = json_is_true(json_object_get(j, "durable"));
	out->auto_delete = json_is_true(json_object_get(j, "auto_delete"));
	out->internal = json_is_true(json_object_get(j, "internal"));
	return 0;
}

void
mgmt_exchange_free(struct mgmt_exchange *x)
{
	if (x == NULL)
		return;
	json_decref(x->json);
	memset(x, 0, sizeof(*x));
}

/* ---- bindings ---- */

int
mgmt_list_bindings_from(struct mgmt *m, const char *exchange,
    struct mgmt_binding_list *out, char *err, size_t errlen)
{
	struct mgmt_binding *b;
	struct path p;
	json_t *j = NULL, *it;
	const char *dt;
	size_t i, n;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_bindings_from: no client or "
		    "result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = check_name(exchange, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, exchange);
	path_add(&p, "/bindings/source");
	if ((rc = path_check(&p, "GET /api/exchanges", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	n = json_array_size(j);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "GET %s: out of memory", p.s);
		goto done;
	}
	for (i = 0; i < n; i++) {
		it = json_array_get(j, i);
		b = &out->v[i];
		b->source = str_member(it, "source");
		b->destination = str_member(it, "destination");
		b->routing_key = str_member(it, "routing_key");
		b->properties_key = str_member(it, "properties_key");
		dt = str_member(it, "destination_type");
		if (b->source == NULL || b->destination == NULL ||
		    b->routing_key == NULL || b->properties_key == NULL ||
		    dt == NULL) {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: binding %zu of the answer "
			    "lacks a field", p.s, i);
			goto done;
		}
		if (strcmp(dt, "queue") == 0)
			b->destination_type = MGMT_DEST_QUEUE;
		else if (strcmp(dt, "exchange") == 0)
			b->destination_type = MGMT_DEST_EXCHANGE;
		else {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: binding %zu has "
			    "destination_type \"%s\"", p.s, i, dt);
			goto done;
		}
		if ((b->arguments = object_member(it, "arguments")) == NULL) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "GET %s: out of memory", p.s);
			goto done;
		}
	}
	out->n = n;
	out->json = j;
	j = NULL;
	rc = 0;
done:
	json_decref(j);
	if (rc != 0) {
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

void
mgmt_binding_list_free(struct mgmt_binding_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	json_decref(l->json);
	memset(l, 0, sizeof(*l));
}

/* "/api/bindings/{vhost}/e/{source}/q|e/{dest}" into P. */
static int
binding_path(struct path *p, struct mgmt *m, const char *source,
    enum mgmt_dest kind, const char *dest, char *err, size_t errlen)
{
	int rc;

	if ((rc = check_name(source, "source exchange", err, errlen)) != 0 ||
	    (rc = check_name(dest, "destination", err, errlen)) != 0)
		return rc;
	if (kind != MGMT_DEST_QUEUE && kind != MGMT_DEST_EXCHANGE) {
		seterr(err, errlen, "mgmt: binding destination kind %d",
		    (int)kind);
		return MGMT_ERR_ARG;
	}
	path_vhost(p, m, "/api/bindings/");
	path_add(p, "/e/");
	path_seg(p, source);
	path_add(p, kind == MGMT_DEST_QUEUE ? "/q/" : "/e/");
	path_seg(p, dest);
	return 0;
}

int
mgmt_add_binding(struct mgmt *m, const char *source, enum mgmt_dest kind,
    const char *dest, const char *routing_key, const json_t *arguments,
    char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || routing_key == NULL) {
		seterr(err, errlen, "mgmt_add_binding: no client or routing "
		    "key");
		return MGMT_ERR_ARG;
	}
	if (arguments != NULL && !json_is_object(arguments)) {
		seterr(err, errlen, "mgmt_add_binding: arguments must be an "
		    "object");
		return MGMT_ERR_ARG;
	}
	if ((rc = binding_path(&p, m, source, kind, dest, err, errlen)) != 0 ||
	    (rc = path_check(&p, "POST /api/bindings", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "routing_key",
	    json_string(routing_key)) != 0 ||
	    json_object_set_new(body, "arguments",
	    copy_or_empty(arguments)) != 0) {
		json_decref(body);
		return body_error("POST", &p, err, errlen);
	}
	rc = mgmt_request(m, "POST", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND) {
		seterr(err, errlen, "POST %s: not found (HTTP 404): exchange "
		    "\"%s\" or %s \"%s\" does not exist", p.s, source,
		    kind == MGMT_DEST_QUEUE ? "queue" : "exchange", dest);
		rc = MGMT_ERR_HTTP;
	}
	return rc;
}

int
mgmt_delete_binding(struct mgmt *m, const char *source, enum mgmt_dest kind,
    const char *dest, const char *properties_key, char *err, size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL || properties_key == NULL) {
		seterr(err, errlen, "mgmt_delete_binding: no client or "
		    "properties key");
		return MGMT_ERR_ARG;
	}
	if ((rc = binding_path(&p, m, source, kind, dest, err, errlen)) != 0)
		return rc;
	path_add(&p, "/");
	path_seg(&p, properties_key);
	if ((rc = path_check(&p, "DELETE /api/bindings", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}

/* ---- policies ---- */

int
mgmt_list_policies(struct mgmt *m, struct mgmt_policy_list *out, char *err,
    size_t errlen)
{
	struct mgmt_policy *pol;
	struct path p;
	json_t *j = NULL, *it;
	const char *s;
	size_t i, n;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_policies: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	path_vhost(&p, m, "/api/policies/");
	if ((rc = path_check(&p, "GET /api/policies", err, errlen)) != 0)
		return rc;
	if ((rc = get_json(m, p.s, 1, &j, err, errlen)) != 0)
		return rc;
	n = json_array_size(j);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		rc = MGMT_ERR_NOMEM;
		seterr(err, errlen, "GET %s: out of memory", p.s);
		goto done;
	}
	for (i = 0; i < n; i++) {
		it = json_array_get(j, i);
		pol = &out->v[i];
		pol->name = str_member(it, "name");
		pol->pattern = str_member(it, "pattern");
		pol->apply_to = (s = str_member(it, "apply-to")) != NULL ? s :
		    "all";
		pol->priority = (int)json_integer_value(json_object_get(it,
		    "priority"));
		if (pol->name == NULL || pol->pattern == NULL) {
			rc = MGMT_ERR_ANSWER;
			seterr(err, errlen, "GET %s: policy %zu of the answer "
			    "has no name or pattern", p.s, i);
			goto done;
		}
		if ((pol->definition = object_member(it, "definition")) ==
		    NULL) {
			rc = MGMT_ERR_NOMEM;
			seterr(err, errlen, "GET %s: out of memory", p.s);
			goto done;
		}
	}
	out->n = n;
	out->json = j;
	j = NULL;
	rc = 0;
done:
	json_decref(j);
	if (rc != 0) {
		free(out->v);
		memset(out, 0, sizeof(*out));
	}
	return rc;
}

int
mgmt_list_nodes(struct mgmt *m, struct mgmt_node_list *out, char *err,
    size_t errlen)
{
	static const char path[] = "/api/nodes?columns=name,running,uptime,"
	    "os_pid,connection_created,channel_created,queue_declared";
	size_t n;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_nodes: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	if ((rc = get_json(m, path, 1, &out->json, err, errlen)) != 0)
		return rc;
	n = json_array_size(out->json);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		mgmt_node_list_free(out);
		seterr(err, errlen, "GET /api/nodes: out of memory");
		return MGMT_ERR_NOMEM;
	}
	for (out->n = 0; out->n < n; out->n++) {
		const json_t *it = json_array_get(out->json, out->n);
		struct mgmt_node *nd = &out->v[out->n];

		if ((nd->name = str_member(it, "name")) == NULL) {
			seterr(err, errlen, "GET /api/nodes: node %zu of the answer "
			    "has no name", out->n);
			mgmt_node_list_free(out);
			return MGMT_ERR_ANSWER;
		}
		nd->running = json_is_true(json_object_get(it, "running"));
		nd->uptime_ms = int_member(it, "uptime");
		nd->os_pid = str_member(it, "os_pid");
		nd->connection_created = int_member(it, "connection_created");
		nd->channel_created = int_member(it, "channel_created");
		nd->queue_declared = int_member(it, "queue_declared");
	}
	return 0;
}

void
mgmt_node_list_free(struct mgmt_node_list *l)
{
	if (l != NULL) {
		free(l->v);
		json_decref(l->json);
		memset(l, 0, sizeof(*l));
	}
}

static int
cmp_place(const void *a, const void *b)
{
	return strcmp(((const struct mgmt_queue_place *)a)->name,
	    ((const struct mgmt_queue_place *)b)->name);
}

int
mgmt_list_queue_places(struct mgmt *m, struct mgmt_queue_place_list *out,
    char *err, size_t errlen)
{
	struct path p;
	size_t n, i;
	int rc;

	if (out == NULL || m == NULL) {
		seterr(err, errlen, "mgmt_list_queue_places: no client or result");
		return MGMT_ERR_ARG;
	}
	memset(out, 0, sizeof(*out));
	path_vhost(&p, m, "/api/queues/");
	path_add(&p, "?disable_stats=true&enable_queue_totals=true&columns=name,"
	    "type,node,leader,members,online");
	if ((rc = path_check(&p, "GET /api/queues", err, errlen)) != 0 ||
	    (rc = get_json(m, p.s, 1, &out->json, err, errlen)) != 0)
		return rc;
	n = json_array_size(out->json);
	if (n > 0 && (out->v = calloc(n, sizeof(*out->v))) == NULL) {
		mgmt_queue_place_list_free(out);
		seterr(err, errlen, "GET /api/queues: out of memory");
		return MGMT_ERR_NOMEM;
	}
	for (i = 0; i < n; i++) {
		const json_t *it = json_array_get(out->json, i);
		struct mgmt_queue_place *q = &out->v[out->n];
		const char *type = str_member(it, "type");

		if ((q->name = str_member(it, "name")) == NULL)
			continue;
		q->type = type != NULL ? type : "";
		if (strcmp(q->type, "classic") == 0) {
			q->leader = str_member(it, "node");
			q->members = q->online = 1;
		} else {
			q->leader = str_member(it, "leader");
			q->members = json_array_size(json_object_get(it, "members"));
			q->online = json_array_size(json_object_get(it, "online"));
		}
		out->n++;
	}
	qsort(out->v, out->n, sizeof(*out->v), cmp_place);
	return 0;
}

const struct mgmt_queue_place *
mgmt_queue_place_find(const struct mgmt_queue_place_list *l, const char *name)
{
	struct mgmt_queue_place key = { .name = name };

	if (l == NULL || l->n == 0 || name == NULL)
		return NULL;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), cmp_place);
}

void
mgmt_queue_place_list_free(struct mgmt_queue_place_list *l)
{
	if (l != NULL) {
		free(l->v);
		json_decref(l->json);
		memset(l, 0, sizeof(*l));
	}
}

void
mgmt_policy_list_free(struct mgmt_policy_list *l)
{
	if (l == NULL)
		return;
	free(l->v);
	json_decref(l->json);
	memset(l, 0, sizeof(*l));
}

int
mgmt_put_policy(struct mgmt *m, const char *name, const char *pattern,
    const char *apply_to, int priority, const json_t *definition,
    char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || pattern == NULL || !json_is_object(definition)) {
		seterr(err, errlen, "mgmt_put_policy: no client, pattern or "
		    "definition object");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "policy", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/policies/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "PUT /api/policies", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "pattern", json_string(pattern)) != 0 ||
	    json_object_set_new(body, "definition",
	    json_deep_copy(definition)) != 0 ||
	    json_object_set_new(body, "apply-to",
	    json_string(apply_to != NULL ? apply_to : "all")) != 0 ||
	    json_object_set_new(body, "priority",
	    json_integer(priority)) != 0) {
		json_decref(body);
		return body_error("PUT", &p, err, errlen);
	}
	rc = mgmt_request(m, "PUT", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND)
		rc = MGMT_ERR_HTTP;	/* the vhost does not exist */
	return rc;
}

int
mgmt_delete_policy(struct mgmt *m, const char *name, char *err,
    size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL) {
		seterr(err, errlen, "mgmt_delete_policy: no client");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "policy", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/policies/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "DELETE /api/policies", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}

/* ---- declare and delete ---- */

int
mgmt_put_queue(struct mgmt *m, const char *name, bool durable,
    const json_t *arguments, char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || (arguments != NULL && !json_is_object(arguments))) {
		seterr(err, errlen, "mgmt_put_queue: no client, or arguments "
		    "not an object");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "queue", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/queues/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "PUT /api/queues", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "durable", json_boolean(durable)) != 0 ||
	    json_object_set_new(body, "auto_delete", json_false()) != 0 ||
	    json_object_set_new(body, "arguments",
	    copy_or_empty(arguments)) != 0) {
		json_decref(body);
		return body_error("PUT", &p, err, errlen);
	}
	rc = mgmt_request(m, "PUT", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND)
		rc = MGMT_ERR_HTTP;
	return rc;
}

int
mgmt_delete_queue(struct mgmt *m, const char *name, int flags, char *err,
    size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL) {
		seterr(err, errlen, "mgmt_delete_queue: no client");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "queue", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/queues/");
	path_add(&p, "/");
	path_seg(&p, name);
	if (flags & MGMT_IF_EMPTY)
		path_add(&p, (flags & MGMT_IF_UNUSED) ?
		    "?if-empty=true&if-unused=true" : "?if-empty=true");
	else if (flags & MGMT_IF_UNUSED)
		path_add(&p, "?if-unused=true");
	if ((rc = path_check(&p, "DELETE /api/queues", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}

int
mgmt_put_exchange(struct mgmt *m, const char *name, const char *type,
    bool durable, const json_t *arguments, char *err, size_t errlen)
{
	struct path p;
	json_t *body = NULL;
	int rc;

	if (m == NULL || type == NULL ||
	    (arguments != NULL && !json_is_object(arguments))) {
		seterr(err, errlen, "mgmt_put_exchange: no client or type, or "
		    "arguments not an object");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "PUT /api/exchanges", err, errlen)) != 0)
		return rc;
	if ((body = json_object()) == NULL ||
	    json_object_set_new(body, "type", json_string(type)) != 0 ||
	    json_object_set_new(body, "durable", json_boolean(durable)) != 0 ||
	    json_object_set_new(body, "auto_delete", json_false()) != 0 ||
	    json_object_set_new(body, "internal", json_false()) != 0 ||
	    json_object_set_new(body, "arguments",
	    copy_or_empty(arguments)) != 0) {
		json_decref(body);
		return body_error("PUT", &p, err, errlen);
	}
	rc = mgmt_request(m, "PUT", p.s, body, NULL, NULL, err, errlen);
	json_decref(body);
	if (rc == MGMT_NOT_FOUND)
		rc = MGMT_ERR_HTTP;
	return rc;
}

int
mgmt_delete_exchange(struct mgmt *m, const char *name, char *err,
    size_t errlen)
{
	struct path p;
	int rc;

	if (m == NULL) {
		seterr(err, errlen, "mgmt_delete_exchange: no client");
		return MGMT_ERR_ARG;
	}
	if ((rc = check_name(name, "exchange", err, errlen)) != 0)
		return rc;
	path_vhost(&p, m, "/api/exchanges/");
	path_add(&p, "/");
	path_seg(&p, name);
	if ((rc = path_check(&p, "DELETE /api/exchanges", err, errlen)) != 0)
		return rc;
	return mgmt_request(m, "DELETE", p.s, NULL, NULL, NULL, err, errlen);
}
