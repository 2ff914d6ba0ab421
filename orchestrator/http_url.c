/* http_url: the http(s) URL check the management and flag clients share
 * (see http_url.h). */
#include <string.h>

#include <curl/curl.h>

#include "http_url.h"

/* Whether U has PART (CURLUPART_*). */
static bool
has_part(CURLU *u, CURLUPart part)
{
	char *p = NULL;
	bool has = curl_url_get(u, part, &p, 0) == CURLUE_OK;

	curl_free(p);
	return has;
}

int
http_url_check(const char *url, bool query_ok, enum http_url_fault *fault,
    char **norm)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	int rc = -1;

	if (norm != NULL)
		*norm = NULL;
	if (u == NULL)
		*fault = HTTP_URL_NOMEM;
	else if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		*fault = HTTP_URL_INVALID;
	else if (has_part(u, CURLUPART_USER) || has_part(u, CURLUPART_PASSWORD))
		*fault = HTTP_URL_CREDENTIALS;
	else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0))
		*fault = HTTP_URL_SCHEME;
	else if (has_part(u, CURLUPART_FRAGMENT))
		*fault = HTTP_URL_FRAGMENT;
	else if (!query_ok && has_part(u, CURLUPART_QUERY))
		*fault = HTTP_URL_QUERY;
	else if (norm != NULL && curl_url_get(u, CURLUPART_URL, norm, 0) != CURLUE_OK)
		*fault = HTTP_URL_INVALID;
	else
		rc = 0;
	curl_free(scheme);
	curl_url_cleanup(u);
	return rc;
}
