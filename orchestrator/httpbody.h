/* httpbody: an HTTP answer's body as libcurl hands it over, gathered into
 * one growing buffer with a size limit — the write callback every HTTP
 * client of cutover (management API, flag service, remote CLI) uses; and
 * a request's method and body set on the handle, as the management API
 * client and the flag client send them. */
#ifndef CUTOVER_HTTPBODY_H
#define CUTOVER_HTTPBODY_H

#include <stdbool.h>
#include <stddef.h>

#include <curl/curl.h>

struct httpbody {
	char *p;          /* the body, NUL-terminated; owned; NULL until data */
	size_t len, cap;
	size_t max;       /* bytes accepted at most; set before use */
	int toobig;       /* the answer passed MAX: the transfer was stopped */
	int nomem;        /* growing the buffer failed: the transfer was stopped */
};

/* CURLOPT_WRITEFUNCTION, with a struct httpbody as CURLOPT_WRITEDATA.
 * Appends the data, or returns 0 (stopping the transfer) when it would
 * pass the limit or memory runs out, setting toobig or nomem. */
size_t httpbody_write(char *data, size_t size, size_t nmemb, void *arg);

/* Empties B for the next transfer, keeping its buffer and limit. */
void httpbody_reset(struct httpbody *b);

/* Sets METHOD on CURL with BODY (NULL: none): GET, and DELETE without a
 * body, as a request without one; any other method with BODY (an empty
 * one when NULL) as its fields. Returns whether it sends fields (a caller
 * that types its body chooses the Content-Type by it). */
bool httpbody_request(CURL *curl, const char *method, const char *body);

#endif
