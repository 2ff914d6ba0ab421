/* tls_curl: the plan's TLS settings on a libcurl handle, and libcurl's
 * TLS failures in cutover's words (see tls_curl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "tls_curl.h"

/* HOST and PORT of URL into HOST (HOSTLEN) and *PORT. Returns 0 or -1. */
static int
url_host_port(const char *url, char *host, size_t hostlen, long *port)
{
	CURLU *u = curl_url();
	char *h = NULL, *p = NULL;
	int rc = -1;

	if (u == NULL || curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_PORT, &p, CURLU_DEFAULT_PORT) != CURLUE_OK)
		goto done;
	snprintf(host, hostlen, "%s", h);
	*port = strtol(p, NULL, 10);
	rc = 0;
done:
	curl_free(h);
	curl_free(p);
	curl_url_cleanup(u);
	return rc;
}

/* TC->url: URL with its host replaced by NAME, and TC->connect_to taking
 * it to URL's own host and port. Returns 0, or -1 with ERR. */
static int
redirect_name(const char *url, const char *name, struct tls_curl *tc,
    char *err, size_t errlen)
{
	CURLU *u = curl_url();
	char host[512], entry[1100], *out = NULL;
	long port;
	int rc = -1;

	if (u == NULL || url_host_port(url, host, sizeof(host), &port) != 0 ||
	    curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_HOST, name, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK) {
		errbuf_set(err, errlen, "cannot request the server as '%s' "
		    "(server_name)", name);
		goto done;
	}
	/* An IPv6 host keeps its brackets in a CONNECT_TO entry. */
	snprintf(entry, sizeof(entry), "%s:%ld:%s%s%s:%ld", name, port,
	    strchr(host, ':') != NULL ? "[" : "", host,
	    strchr(host, ':') != NULL ? "]" : "", port);
	if ((tc->url = strdup(out)) == NULL ||
	    (tc->connect_to = curl_slist_append(NULL, entry)) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto done;
	}
	rc = 0;
done:
	curl_free(out);
	curl_url_cleanup(u);
	return rc;
}

int
tls_curl_prepare(CURL *curl, const struct tls_opts *t, const char *url,
    struct tls_curl *tc, char *err, size_t errlen)
{
	const char *pass = NULL;

	memset(tc, 0, sizeof(*tc));
	if (t != NULL && t->server_name != NULL && !t->no_verify) {
		if (redirect_name(url, t->server_name, tc, err, errlen) != 0)
			goto fail;
	} else if ((tc->url = strdup(url)) == NULL) {
		errbuf_set(err, errlen, "out of memory");
		goto fail;
	}
	if (tls_passphrase(t, &pass, err, errlen) != 0)
		goto fail;
	curl_easy_setopt(curl, CURLOPT_CONNECT_TO, tc->connect_to);
	curl_easy_setopt(curl, CURLOPT_CAINFO, t != NULL ? t->ca_file : NULL);
	curl_easy_setopt(curl, CURLOPT_SSLCERT, t != NULL ? t->cert_file : NULL);
	curl_easy_setopt(curl, CURLOPT_SSLKEY, t != NULL ? t->key_file : NULL);
	curl_easy_setopt(curl, CURLOPT_KEYPASSWD, pass);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER,
	    t != NULL && t->no_verify ? 0L : 1L);
	curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST,
	    t != NULL && t->no_verify ? 0L : 2L);
	return 0;
fail:
	tls_curl_release(curl, tc);
	return -1;
}

void
tls_curl_release(CURL *curl, struct tls_curl *tc)
{
	curl_easy_setopt(curl, CURLOPT_KEYPASSWD, NULL);
	curl_easy_setopt(curl, CURLOPT_CONNECT_TO, NULL);
	free(tc->url);
	curl_slist_free_all(tc->connect_to);
	memset(tc, 0, sizeof(*tc));
}

/* Whether libcurl's words S say the server refused or required a client
 * certificate (a TLS alert during or just after the handshake). */
static bool
client_cert_refused(const char *s)
{
	return strstr(s, "certificate required") != NULL ||
	    strstr(s, "alert bad certificate") != NULL ||
	    strstr(s, "alert unknown ca") != NULL ||
	    strstr(s, "alert handshake failure") != NULL;
}

bool
tls_curl_error(CURL *curl, CURLcode cc, const char *curlerr,
    const struct tls_opts *t, const char *default_where, const char *url,
    char *out, size_t outlen)
{
	const char *where = tls_where(t, default_where);
	char host[512] = "", words[512];
	long code = 0, port = 0;

	if (t != NULL && t->server_name != NULL)
		snprintf(host, sizeof(host), "%s", t->server_name);
	else if (url_host_port(url, host, sizeof(host), &port) != 0)
		snprintf(host, sizeof(host), "?");
	switch (cc) {
	case CURLE_PEER_FAILED_VERIFICATION:
		curl_easy_getinfo(curl, CURLINFO_SSL_VERIFYRESULT, &code);
		/* libcurl checks the name itself, after OpenSSL found the chain
		 * good: its verify result is then 0 or 1 (unspecified) and its
		 * words name the host. */
		if (code == 0 || strstr(curlerr, "host name") != NULL)
			code = 62;	/* X509_V_ERR_HOSTNAME_MISMATCH */
		snprintf(out, outlen, "TLS handshake: %s [%s]", tls_verify_words(
		    code, host, t, default_where, words, sizeof(words)), curlerr);
		return true;
	case CURLE_SSL_CACERT_BADFILE:
		snprintf(out, outlen, "%s: cannot read the CA bundle '%s' (%s)",
		    where, t != NULL && t->ca_file != NULL ? t->ca_file :
		    "system default", curlerr);
		return true;
	case CURLE_SSL_CERTPROBLEM:
		snprintf(out, outlen, "%s: cannot use the client certificate '%s' "
		    "with the key '%s' (wrong passphrase, or not a pair?): %s",
		    where, t != NULL && t->cert_file != NULL ? t->cert_file : "",
		    t != NULL && t->key_file != NULL ? t->key_file : "", curlerr);
		return true;
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
		if (client_cert_refused(curlerr)) {
			snprintf(out, outlen, "TLS: the server refused the client "
			    "certificate (%s): it requires one it trusts; set "
			    "cert and key in %s", curlerr, where);
			return true;
		}
		if (cc != CURLE_SSL_CONNECT_ERROR)
			return false;
		snprintf(out, outlen, "TLS handshake failed: %s%s", curlerr,
		    strstr(curlerr, "wrong version number") != NULL ?
		    " (is that port a TLS listener?)" : "");
		return true;
	default:
		return false;
	}
}
