/* httpbody: gathering an HTTP answer's body with a limit, and setting a
 * request's method and body. */
#include <string.h>

#include "httpbody.h"
#include "textbuf.h"

size_t
httpbody_write(char *data, size_t size, size_t nmemb, void *arg)
{
	struct httpbody *b = arg;
	size_t n = size * nmemb;

	if (nmemb != 0 && n / nmemb != size)
		return 0;
	if (n > b->max || b->len + n > b->max) {
		b->toobig = 1;
		return 0;
	}
	if (textbuf_grow(&b->p, &b->cap, b->len + n + 1, 8192, 0) != 0) {
		b->nomem = 1;
		return 0;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return n;
}

void
httpbody_reset(struct httpbody *b)
{
	b->len = 0;
	b->toobig = b->nomem = 0;
	if (b->p != NULL)
		b->p[0] = '\0';
}

bool
httpbody_request(CURL *curl, const char *method, const char *body)
{
	bool get = strcmp(method, "GET") == 0;

	if (get || (body == NULL && strcmp(method, "DELETE") == 0)) {
		curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, get ? NULL : method);
		return false;
	}
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body != NULL ? body : "");
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE,
	    (long)(body != NULL ? strlen(body) : 0));
	curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST,
	    strcmp(method, "POST") == 0 ? NULL : method);
	return true;
}
