/* flag_transport: what the flag client's parts share inside the flag
 * module (not a public interface; see flag.h for that): one call's state
 * (struct flag_call), HTTP with timeouts, retries and redaction of secrets,
 * env: references, excerpts of answers and the result's records. */
#ifndef CUTOVER_FLAG_TRANSPORT_H
#define CUTOVER_FLAG_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/crypto.h>

#include "clock.h"
#include "errbuf.h"
#include "flag.h"
#include "flag_provider.h"
#include "httpbody.h"
#include "tls_curl.h"

#define USER_AGENT	"cutover-flag/1"
#define JSON_TYPE	"application/json"
#define SOURCE_MAX	(64u * 1024)	/* of an answer, read for an excerpt */
#define URL_MAX		4096

/* One flag_switch or flag_read. */
#define FLAG_TLS_WHERE "flag.tls (not given: the system's CA store)"

struct flag_call {
	const struct plan	*p;
	const struct flag_provider *prov;	/* of p->flag.kind */
	struct flag_options	 o;
	CURL			*curl;
	int			 global_init;
	struct curl_slist	*hdr_write;	/* for the on/off call */
	struct curl_slist	*hdr_read;	/* for the read-back */
	char			**secrets;	/* resolved values, to redact */
	size_t			 nsecrets;
	int			 want;		/* a switch's: 1 on, 0 off; -1 a read */
	json_t			*result;
	json_t			*attempts;	/* borrowed from RESULT */
	struct httpbody		 answer;
	long			 status;	/* of the last attempt */
	char			 curlerr[CURL_ERROR_SIZE];
};


/* Copies S into OUT (OUTLEN > 4 bytes) as valid UTF-8 of at most OUTLEN-1
 * bytes: control characters and runs of white space fold into one space,
 * invalid bytes become '?', and "..." ends a text that was cut. */
void flag_fold(char *out, size_t outlen, const char *s);

/* An excerpt of the text S (LEN bytes, not NUL-terminated) into OUT
 * (FLAG_EXCERPT_MAX + 1 bytes), secrets redacted. With PRETTY, an error
 * object such as Unleash's {"name": ..., "message": ...} is shown as
 * "name: message". Returns 0, or -1 when out of memory. */
int flag_excerpt(const struct flag_call *c, const char *s, size_t len,
    int pretty, char *out);

/* The environment variable of REF ("env:NAME"), stored among C's secrets
 * for redaction. WHAT names the plan field in messages. */
int flag_resolve(struct flag_call *c, const char *ref, const char *what,
    const char **out, char *err, size_t errlen);

/* Checks URL: http or https, no credentials, no fragment, and no query
 * when it is a BASE that paths are appended to. WHAT names the plan field;
 * a URL with credentials is not quoted. */
int flag_check_url(const char *url, const char *what, int base, char *err,
    size_t errlen);

/* Sends METHOD URL (BODY may be NULL) with HDRS as C's options say; ROLE
 * ("write", "read") and LABEL ("flag on", "flag read") go into the
 * attempts and messages. A read is sent again after no answer or a 5xx.
 * A write is sent again only when it cannot have left (no connection), or
 * when the flag, read back through C's provider, shows that it did not
 * take; one that reads as wanted is done, and one that cannot be read
 * back is FLAG_ERR_UNCONFIRMED, never sent blind. Returns 0 on a 2xx
 * answer (left in C->answer; for a write that was read back, the read's
 * answer), or a negative code with ERR set. */
int flag_send(struct flag_call *c, const char *label, const char *role,
    const char *method, const char *url, const char *body,
    struct curl_slist *hdrs, char *err, size_t errlen);

/* Appends "NAME: VALUE" to *L. Returns 0, or -1 when out of memory. */
int flag_add_header(struct curl_slist **l, const char *name, const char *value);

/* Sets RESULT.read_back: VALUE (borrowed; NULL when absent) unless its
 * text is long or holds a secret, then an excerpt of it; STATE; EX. */
int flag_record_read(struct flag_call *c, const json_t *value, int state,
    const char *ex);

/* Ends C: frees everything but the result, which goes to *RESULT (or is
 * released). Zeroes the secrets and C's copy of the last answer. */
void flag_call_close(struct flag_call *c, json_t **result, char *err,
    size_t errlen);

#endif
