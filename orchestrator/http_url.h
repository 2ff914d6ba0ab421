/* http_url: an http:// or https:// URL as the management client and the
 * flag client accept it, checked with libcurl's URL parser (CURLU): one
 * check for both, each caller saying what is wrong in its own words. */
#ifndef CUTOVER_HTTP_URL_H
#define CUTOVER_HTTP_URL_H

#include <stdbool.h>

/* What http_url_check found wrong, in the order it checks. */
enum http_url_fault {
	HTTP_URL_NOMEM,		/* out of memory */
	HTTP_URL_INVALID,	/* not a URL libcurl can parse */
	HTTP_URL_CREDENTIALS,	/* it carries a user or a password */
	HTTP_URL_SCHEME,	/* neither http nor https */
	HTTP_URL_FRAGMENT,	/* it has a #fragment */
	HTTP_URL_QUERY,		/* it has a ?query, and QUERY_OK was false */
};

/* Checks URL: parsable, no user or password, scheme http or https, no
 * fragment, and no query unless QUERY_OK. Returns 0 and, when NORM is not
 * NULL, URL as libcurl writes it back in *NORM (free it with curl_free);
 * or -1 with *FAULT saying what is wrong. Never says it in words: a URL
 * with credentials must not be quoted, and each caller names its field. */
int http_url_check(const char *url, bool query_ok, enum http_url_fault *fault,
    char **norm);

#endif
