/* tls_curl: the plan's TLS settings (tls.h) applied to a libcurl easy
 * handle, and libcurl's TLS failures said in the words every TLS client
 * of cutover uses (no route, handshake, unknown CA, name mismatch,
 * expired, client certificate required). Shared by the management API
 * client, the flag client and the remote CLI. */
#ifndef CUTOVER_TLS_CURL_H
#define CUTOVER_TLS_CURL_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

#include "tls.h"

/* What one prepared request holds until tls_curl_release. */
struct tls_curl {
	char *url;                     /* the URL to request */
	struct curl_slist *connect_to; /* with server_name: where it goes */
};

/* Prepares CURL for a request to URL under T (NULL: libcurl's defaults,
 * which verify against the system's CAs and the URL's host): CA bundle,
 * client certificate and key, the key's passphrase (resolved now; libcurl
 * keeps a copy until tls_curl_release), verification (off only with
 * T->no_verify). With T->server_name, TC->url is URL with its host
 * replaced by that name and TC->connect_to sends it to URL's host and
 * port, so that libcurl checks the certificate against the name. Returns
 * 0 (free TC with tls_curl_release), or -1 with ERR (nothing to free). */
int tls_curl_prepare(CURL *curl, const struct tls_opts *t, const char *url,
    struct tls_curl *tc, char *err, size_t errlen);

/* Clears the passphrase from CURL and frees what TC holds. */
void tls_curl_release(CURL *curl, struct tls_curl *tc);

/* When CC (with libcurl's error buffer CURLERR) is a TLS failure of a
 * request to URL under T, writes what failed into OUT, naming the plan's
 * settings (T's where, else DEFAULT_WHERE), and returns true; returns
 * false for any other failure. */
bool tls_curl_error(CURL *curl, CURLcode cc, const char *curlerr,
    const struct tls_opts *t, const char *default_where, const char *url,
    char *out, size_t outlen);

#endif
