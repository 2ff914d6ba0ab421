/* flag: the feature-flag client behind the flip (DESIGN §1 step 5): sets a
 * plan's flag on or off and reads it back, for kind unleash (the admin API
 * of an Unleash server) and kind http (any service: a call for on, a call
 * for off, and a GET whose JSON holds the state at a JSON pointer).
 *
 * Every HTTP call has a connect and a whole-request timeout. A read is
 * retried with exponential backoff on connection errors, timeouts and 5xx
 * answers, never on 4xx, within a total time budget (struct flag_options).
 * A write (the switch) is one request in flight at a time. It is sent
 * again blind only when it cannot have left (no address, no connection,
 * or a TLS handshake that did not finish). After a 5xx
 * it may have taken, so the flag is read back first: reading as wanted,
 * the switch is done ("write_took_by" says so); reading the other way,
 * the write goes again (on a connection of its own); unreadable or
 * neither, FLAG_ERR_UNCONFIRMED, never sent blind (a toggle-style service
 * would be switched twice). A write that left and got no answer (a
 * timeout, a connection reset or closed) is *in doubt*: a service may
 * hold it and apply it long after the client gave up, so it is never sent
 * again; the flag is read back once, and unless it reads as wanted the
 * switch is FLAG_ERR_UNCONFIRMED with "in_doubt": true in the result (the
 * caller keeps reading the flag: steps/flag_settle.c). Every write
 * attempt has an "outcome": "accepted" (2xx), "refused" (another
 * answer), "not sent" or "in doubt". Every attempt is recorded in the
 * caller's result JSON:
 *
 *   { "kind": "unleash", "want": "on",
 *     "attempts": [ { "call": "write", "method": "POST",
 *         "url": "http://127.0.0.1:4242/api/admin/...", "status": 200,
 *         "ms": 14, "excerpt": "" }, ... ],
 *     "read_back": { "value": true, "found": true, "state": "on",
 *         "excerpt": "{\"name\":\"production\",\"enabled\":true,...}" },
 *     "confirmed": true }
 *
 * An attempt that got no answer has status 0 and an "error" member
 * ("connection refused", "timed out after 10000 ms ..."). Excerpts are at
 * most FLAG_EXCERPT_MAX bytes, white space folded, invalid UTF-8 as '?':
 * of an error answer, its message ("UnauthorizedError: You must log in to
 * use Unleash."); of the read-back, the Unleash environment (strategies
 * left out) or the http answer. read_back.value is the value found (null
 * and found false when there is none; an excerpt of it, with value_cut,
 * when it is long or quotes a secret).
 *
 * Secrets: the Unleash token and every header whose value is an env:NAME
 * reference are resolved from the environment at each call and used only
 * in request headers; they never appear in results or messages (any copy
 * an answer quotes becomes "***"), and URLs carrying credentials are
 * refused. No state is kept between calls: every call opens and closes its
 * own libcurl handle, and calls curl_global_init and curl_global_cleanup
 * (counted by libcurl; thread-safe since libcurl 7.84, see mgmt.h), so
 * calls from different threads do not interfere. */
#ifndef CUTOVER_FLAG_H
#define CUTOVER_FLAG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "errbuf.h"
#include "plan.h"

/* The return codes: X(NAME, CODE, WHAT), WHAT as flag_status_name gives
 * it. */
#define FLAG_STATUS_MAP(X)						\
	X(FLAG_OK, 0, "done")						\
	/* no flag; bad URL, pointer, env: */				\
	X(FLAG_ERR_ARG, -1, "bad argument")				\
	/* no answer, after every retry */				\
	X(FLAG_ERR_TRANSPORT, -2, "no answer")				\
	/* HTTP 401 or 403 */						\
	X(FLAG_ERR_AUTH, -3, "not authorised")				\
	/* HTTP 404: no feature, environment or URL */			\
	X(FLAG_ERR_NOT_FOUND, -4, "not found")				\
	/* other non-2xx (5xx: after retries) */			\
	X(FLAG_ERR_HTTP, -5, "unexpected HTTP status")			\
	/* 2xx, but not the JSON expected */				\
	X(FLAG_ERR_ANSWER, -6, "unexpected answer")			\
	/* read back another value */					\
	X(FLAG_ERR_MISMATCH, -7, "read back another value")		\
	X(FLAG_ERR_NOMEM, -8, "out of memory")				\
	/* a write got a 5xx and the read-back failed, or got no answer	\
	 * and does not read as taken: whether it took is unknown */	\
	X(FLAG_ERR_UNCONFIRMED, -9, "in doubt")

/* enum flag_status, and flag_status_name(RC): what flag code RC means, in
 * a word or three; "unknown" for any other value. */
ERRBUF_CODES(flag_status, FLAG_STATUS_MAP, flag_status_name);

/* What a read found, in flag_read's *STATE (an int, so -1 < 0 tests
 * "neither"): not a return code. */
enum flag_state {
	FLAG_STATE_NEITHER = -1,	/* neither value, or absent */
	FLAG_STATE_OFF = 0,
	FLAG_STATE_ON = 1
};

/* Bytes of an answer quoted in results and messages, at most. */
#define FLAG_EXCERPT_MAX	200
/* Bytes of an answer read, at most: a larger one is an error. */
#define FLAG_ANSWER_MAX		(16u * 1024 * 1024)

/* Timeouts and the retry schedule. Attempt k (k >= 2) starts backoff_ms *
 * 2^(k-2) after the previous one failed (at most backoff_max_ms), for at
 * most `attempts` attempts, and no attempt starts (or runs) past budget_ms
 * after the first one started: with the defaults 4 attempts, waits of 0.5,
 * 1 and 2 s, 30 s at most per HTTP call. */
struct flag_options {
	long	connect_timeout_ms;	/* connect phase of one attempt */
	long	timeout_ms;		/* one attempt, connect included */
	int	attempts;		/* >= 1 */
	long	backoff_ms;		/* first wait */
	long	backoff_max_ms;		/* longest wait */
	long	budget_ms;		/* all attempts of a call, with waits */
};

#define FLAG_CONNECT_TIMEOUT_MS	3000L
#define FLAG_TIMEOUT_MS		10000L
#define FLAG_ATTEMPTS		4
#define FLAG_BACKOFF_MS		500L
#define FLAG_BACKOFF_MAX_MS	4000L
#define FLAG_BUDGET_MS		30000L

/* Fills O with the defaults above. */
void flag_options_default(struct flag_options *o);

/* Sets P's flag on (ON true) or off, then reads it back and requires the
 * value expected; the read-back is not retried on a mismatch.
 *
 * kind unleash: POST {url}/api/admin/projects/{project}/features/{feature}/
 * environments/{environment}/on (or /off) with "Authorization: <token>",
 * then GET {url}/api/admin/projects/{project}/features/{feature}, whose
 * environments[] member named {environment} must have "enabled" true (or
 * false). kind http: the plan's on (or off) call, with its method, URL,
 * body (sent as application/json unless a Content-Type header is given)
 * and headers, then GET read_url with the same headers; the value at
 * read_pointer must equal read_on (or read_off) as JSON (json_equal).
 *
 * A write that got a 5xx is sent again only after a read-back found it
 * not taken; one that got no answer is never sent again (see the top of
 * this file).
 *
 * Returns 0 only when the read-back confirmed the value, or a negative
 * FLAG_ERR_* code (FLAG_ERR_UNCONFIRMED: a write may have taken, and the
 * flag could not be read to tell) with ERR (ERRLEN bytes; may be NULL) naming the call
 * (method and URL), the HTTP status and a short excerpt of the answer, or
 * the value found against the one expected. In both cases *RESULT is set,
 * when RESULT is not NULL, to a new object as shown above (the caller
 * releases it with json_decref); it is NULL only when ERR says the plan
 * has no flag or memory ran out. */
int flag_switch(const struct plan *p, bool on, json_t **result, char *err,
    size_t errlen);

/* As flag_switch, with the timeouts and retry schedule of O (NULL: the
 * defaults). */
int flag_switch_with(const struct plan *p, bool on,
    const struct flag_options *o, json_t **result, char *err, size_t errlen);

/* Reads P's flag, as flag_switch's read-back does, and stores in *STATE
 * (when STATE is not NULL; an out-parameter, never the return) an enum
 * flag_state: FLAG_STATE_ON (1), FLAG_STATE_OFF (0), or FLAG_STATE_NEITHER
 * (-1) when the value is neither or, for kind http, absent from the
 * answer. Returns 0 when the flag could be read (whatever *STATE is),
 * else a negative FLAG_ERR_* code with ERR set and *STATE -1; for kind
 * unleash, an answer without the environment or without its boolean
 * "enabled" is FLAG_ERR_ANSWER. *RESULT is set as by flag_switch, without
 * "want" and "confirmed". */
int flag_read(const struct plan *p, int *state, json_t **result, char *err,
    size_t errlen);

/* As flag_read, with the options of O (NULL: the defaults). */
int flag_read_with(const struct plan *p, const struct flag_options *o,
    int *state, json_t **result, char *err, size_t errlen);

/* Whether P has a flag: its flag.kind names a provider (flag_provider.h). */
bool flag_configured(const struct plan *p);

/* P's flag in words, for messages ("Unleash feature 'F' (URL, project P,
 * environment E)", "the flag read from URL", or "no flag"), into OUT
 * (OUTLEN bytes). Returns OUT. Never a secret. */
const char *flag_describe(const struct plan *p, char *out, size_t outlen);

/* P's flag as a new JSON object for the history: {"kind": "unleash",
 * "url", "feature", "environment"} or {"kind": "http", "read": URL}
 * ({"kind": null} without a flag); NULL when out of memory. The caller
 * releases it. Never a secret. */
json_t *flag_history(const struct plan *p);

/* Evaluates the RFC 6901 JSON pointer PTR in DOC: "" is DOC itself, and
 * each "/token" steps into an object member (with "~1" read as "/" and
 * "~0" as "~") or an array element (a decimal index without leading
 * zeros; "-" names no element). Returns 0 and stores the value in *OUT
 * (borrowed from DOC; NULL when PTR is well formed but names nothing in
 * DOC), or FLAG_ERR_ARG when PTR is malformed (it does not start with
 * "/", or has a "~" not followed by 0 or 1), with ERR set. */
int flag_json_pointer(const json_t *doc, const char *ptr, json_t **out,
    char *err, size_t errlen);

#endif
