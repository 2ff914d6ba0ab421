/* mgmt_open: opening and closing a management API client: the base URL
 * checked with libcurl's URL parser, the password reference, the reused
 * easy handle and its options. */
#include <stdlib.h>
#include <string.h>

#include "http_url.h"
#include "mgmt_int.h"

static bool
valid_env_name(const char *s)
{
	const char *p;

	if (s[0] == '\0' || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (p = s; *p != '\0'; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '_'))
			return false;
	return true;
}

/* What is wrong with a management URL, in mgmt's words: after the URL
 * quoted, or (QUOTED false: it may carry credentials) alone. */
static const struct {
	bool quoted;
	const char *text;
} base_faults[] = {
	[HTTP_URL_NOMEM] = { false, "out of memory" },
	[HTTP_URL_INVALID] = { true, " is not a valid URL" },
	[HTTP_URL_CREDENTIALS] = { false, "the management URL must not carry "
	    "credentials; give username and password (env:NAME)" },
	[HTTP_URL_SCHEME] = { true, ": scheme must be http or https" },
	[HTTP_URL_FRAGMENT] = { true, ": no query or fragment allowed" },
	[HTTP_URL_QUERY] = { true, ": no query or fragment allowed" },
};

/* Checks BASE_URL and stores its normalised form in *OUT (the caller
 * frees it). */
static int
parse_base(const char *base_url, char **out, char *err, size_t errlen)
{
	enum http_url_fault f;
	char *url = NULL;
	size_t n;
	int rc = MGMT_ERR_ARG;

	if (http_url_check(base_url, false, &f, &url) != 0) {
		/* The URL itself is only quoted once known to carry no
		 * credentials. */
		if (f == HTTP_URL_INVALID && strchr(base_url, '@') != NULL)
			errbuf_set(err, errlen, "mgmt: the management URL is not a "
			    "valid URL");
		else if (base_faults[f].quoted)
			errbuf_set(err, errlen, "mgmt: management URL \"%s\"%s",
			    base_url, base_faults[f].text);
		else
			errbuf_set(err, errlen, "mgmt: %s", base_faults[f].text);
		if (f == HTTP_URL_NOMEM)
			rc = MGMT_ERR_NOMEM;
		goto done;
	}
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		n--;
	if ((*out = malloc(n + 1)) == NULL) {
		rc = MGMT_ERR_NOMEM;
		errbuf_set(err, errlen, "mgmt: out of memory");
		goto done;
	}
	memcpy(*out, url, n);
	(*out)[n] = '\0';
	rc = 0;
done:
	curl_free(url);
	return rc;
}

/* Checks mgmt_open's arguments. Returns 0 and sets *ENVNAME to the NAME
 * of PASSWORD_REF's "env:NAME" (pointing into it), or MGMT_ERR_ARG with
 * ERR. */
static int
open_check(const char *base_url, const char *vhost, const char *username,
    const char *password_ref, long timeout_ms, struct mgmt **out,
    const char **envname, char *err, size_t errlen)
{
	if (out == NULL || base_url == NULL || vhost == NULL ||
	    username == NULL || password_ref == NULL) {
		errbuf_set(err, errlen, "mgmt_open: missing argument");
		return MGMT_ERR_ARG;
	}
	if (vhost[0] == '\0' || username[0] == '\0') {
		errbuf_set(err, errlen, "mgmt_open: %s is empty",
		    vhost[0] == '\0' ? "virtual host" : "username");
		return MGMT_ERR_ARG;
	}
	if (timeout_ms <= 0) {
		errbuf_set(err, errlen, "mgmt_open: timeout must be positive, not "
		    "%ld ms", timeout_ms);
		return MGMT_ERR_ARG;
	}
	/* Never quote PASSWORD_REF unless it is a reference: it could be a
	 * password given by mistake. */
	if (strncmp(password_ref, "env:", 4) != 0) {
		errbuf_set(err, errlen, "mgmt_open: the password must be a "
		    "reference env:NAME (a literal password is not accepted)");
		return MGMT_ERR_ARG;
	}
	*envname = password_ref + 4;
	if (!valid_env_name(*envname)) {
		errbuf_set(err, errlen, "mgmt_open: password reference %s: \"%s\" "
		    "is not a variable name", password_ref, *envname);
		return MGMT_ERR_ARG;
	}
	if (getenv(*envname) == NULL) {
		errbuf_set(err, errlen, "mgmt_open: password reference %s: "
		    "variable %s is not set", password_ref, *envname);
		return MGMT_ERR_ARG;
	}
	return 0;
}

/* Makes M's two header lists (without and with a JSON body) and its easy
 * handle, with the options every request shares. Returns 0, or
 * MGMT_ERR_NOMEM with ERR. */
static int
open_curl(struct mgmt *m, char *err, size_t errlen)
{
	if ((m->hdr_plain = curl_slist_append(NULL,
	    "Accept: application/json")) == NULL ||
	    (m->hdr_json = curl_slist_append(NULL,
	    "Accept: application/json")) == NULL ||
	    curl_slist_append(m->hdr_json,
	    "Content-Type: application/json") == NULL ||
	    curl_slist_append(m->hdr_json, "Expect:") == NULL) {
		errbuf_set(err, errlen, "mgmt_open: out of memory");
		return MGMT_ERR_NOMEM;
	}
	if ((m->curl = curl_easy_init()) == NULL) {
		errbuf_set(err, errlen, "mgmt_open: curl_easy_init failed");
		return MGMT_ERR_NOMEM;
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
	return 0;
}

int
mgmt_open(const char *base_url, const char *vhost, const char *username,
    const char *password_ref, long timeout_ms, struct mgmt **out,
    char *err, size_t errlen)
{
	return mgmt_open_list(&base_url, 1, NULL, vhost, username, password_ref,
	    timeout_ms, out, err, errlen);
}

int
mgmt_open_tls(const char *base_url, const struct tls_opts *tls,
    const char *vhost, const char *username, const char *password_ref,
    long timeout_ms, struct mgmt **out, char *err, size_t errlen)
{
	return mgmt_open_list(&base_url, 1, tls, vhost, username, password_ref,
	    timeout_ms, out, err, errlen);
}

int
mgmt_open_list(const char *const *base_urls, size_t nbases, const struct tls_opts *tls,
    const char *vhost, const char *username, const char *password_ref,
    long timeout_ms, struct mgmt **out, char *err, size_t errlen)
{
	struct mgmt *m = NULL;
	const char *envname = NULL;
	size_t n;
	int rc = MGMT_ERR_ARG;

	if (out != NULL)
		*out = NULL;
	if (base_urls == NULL || nbases == 0) {
		errbuf_set(err, errlen, "mgmt_open: no management URL");
		return MGMT_ERR_ARG;
	}
	if ((rc = open_check(base_urls[0], vhost, username, password_ref,
	    timeout_ms, out, &envname, err, errlen)) != 0)
		return rc;
	if ((m = calloc(1, sizeof(*m))) == NULL ||
	    (m->bases = calloc(nbases, sizeof(*m->bases))) == NULL) {
		free(m);
		errbuf_set(err, errlen, "mgmt_open: out of memory");
		return MGMT_ERR_NOMEM;
	}
	rc = MGMT_ERR_ARG;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		errbuf_set(err, errlen, "mgmt_open: curl_global_init failed");
		goto done;
	}
	m->global_init = 1;
	m->total_ms = timeout_ms;
	m->one_listing_max = MGMT_ONE_LISTING_MAX;
	m->connect_ms = timeout_ms < CONNECT_TIMEOUT_MS ? timeout_ms :
	    CONNECT_TIMEOUT_MS;
	for (m->nbases = 0; m->nbases < nbases; m->nbases++) {
		if (base_urls[m->nbases] == NULL) {
			rc = MGMT_ERR_ARG;
			errbuf_set(err, errlen, "mgmt_open: missing argument");
			goto done;
		}
		if ((rc = parse_base(base_urls[m->nbases], &m->bases[m->nbases],
		    err, errlen)) != 0)
			goto done;
	}
	m->base = m->bases[0];
	m->return_after_ms = MGMT_RETURN_AFTER_MS;

	rc = MGMT_ERR_NOMEM;
	n = 3 * strlen(vhost) + 1;
	if ((m->vhost = strdup(vhost)) == NULL ||
	    (m->username = strdup(username)) == NULL ||
	    (m->password_env = strdup(envname)) == NULL ||
	    (m->vhost_enc = malloc(n)) == NULL ||
	    tls_opts_copy(&m->tls, tls) != 0) {
		errbuf_set(err, errlen, "mgmt_open: out of memory");
		goto done;
	}
	mgmt_escape(vhost, m->vhost_enc, n);
	if ((rc = open_curl(m, err, errlen)) != 0)
		goto done;
	*out = m;
	m = NULL;
	rc = 0;
done:
	mgmt_close(m);
	return rc;
}

int
mgmt__open_again(const struct mgmt *m, struct mgmt **out, char *err, size_t errlen)
{
	char ref[256];
	int rc;

	snprintf(ref, sizeof(ref), "env:%s", m->password_env);
	if ((rc = mgmt_open_list((const char *const *)m->bases, m->nbases, &m->tls,
	    m->vhost, m->username, ref, m->total_ms, out, err, errlen)) != 0)
		return rc;
	(*out)->connect_ms = m->connect_ms;
	(*out)->return_after_ms = m->return_after_ms;
	(*out)->one_listing_max = m->one_listing_max;
	return 0;
}

unsigned long
mgmt_losses(const struct mgmt *m)
{
	return m->losses;
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
	for (size_t i = 0; i < m->nbases; i++)
		free(m->bases[i]);
	free(m->bases);
	free(m->vhost);
	free(m->vhost_enc);
	free(m->username);
	free(m->password_env);
	tls_opts_free(&m->tls);
	if (m->global_init)
		curl_global_cleanup();
	free(m);
}

void
mgmt_set_return_after(struct mgmt *m, int64_t ms)
{
	m->return_after_ms = ms;
}

const char *
mgmt_vhost(const struct mgmt *m)
{
	return m != NULL ? m->vhost : NULL;
}
