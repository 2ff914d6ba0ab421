/* api: the JSON API of `cutover serve`, independent of the HTTP library —
 * which route a method and path name, and what each route answers, read
 * from or written to the store. Writes only record operator commands and
 * submitted plans: nothing here talks to the broker or the flag service
 * (the engine acts on what is recorded).
 *
 * The routes are one table in api.c (routes[]): method, path, handler,
 * who may call it, whether its answer is cacheable, its query parameters.
 * Adding a route is a handler and a row there.
 *
 * A command is checked when recorded (409 with why when it makes no sense
 * then) and again when the engine acts on it, against the state it finds
 * (an abort queued just before may have ended the plan): its 202 answer
 * names the command, whose own route says "pending", "done" or "refused"
 * with the engine's reason.
 *
 * HEAD is answered wherever GET is. Errors are {"error":"…"}. */
#ifndef CUTOVER_API_H
#define CUTOVER_API_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "uri.h"

#define API_BODY_MAX	(1024 * 1024)	/* largest request body accepted */
#define API_COMMENT_MAX	1000		/* bytes of an operator's comment */

struct api_target {
	int route;		/* the row of api.c's route table */
	int write;		/* POST: changes something, needs an operator */
	int64_t plan_id;	/* the path's {plan}, or 0 */
	int64_t step;		/* {step} (1-based), or 0 */
	int64_t alert;		/* {alert}, or 0 */
	int64_t command;	/* {command}, or 0 */
};

struct api_response {
	int status;
	char *body;		/* JSON and a newline, malloc'd; owned */
	size_t len;
	const char *allow;	/* the Allow header of a 405, static */
	const char *type;	/* Content-Type, static; NULL: application/json */
	char filename[128];	/* Content-Disposition: attachment; or "" */
	char location[64];	/* the Location header of a 201, or "" */
	int retry_after;	/* seconds for Retry-After (a 503), or 0 */
};

/* Matches METHOD and the decoded PATH against the routes. Returns 0 and
 * fills T; or -1 with R holding the answer: 404 for no such route, 405
 * (with R->allow) for a method the route does not take. */
int api_route(const char *method, const char *path, struct api_target *t,
    struct api_response *r);

/* The name of T's route ("approve", "history", …: api.c's routes[]). */
const char *api_route_name(const struct api_target *t);

/* Whether the request T (from api_route) needs an operator's token: writes
 * always, reads when READS_NEED_TOKEN (not on loopback), /healthz never. */
int api_needs_token(const struct api_target *t, int reads_need_token);

/* Whether the answer to T with the query Q may come from, and go into, the
 * cache (cache.h): reads of the plan list, one plan's document, its
 * history, notifications or samples. When it may, writes the query's part
 * of the cache's key into KEY (KEYLEN bytes: the route's parameters
 * present, in the route's order, "name=value\n" each; "" without), and
 * returns 1; else 0 (a query the route does not take, or a key that does
 * not fit). */
int api_cache_key(const struct api_target *t, const struct uri_query *q, char *key,
    size_t keylen);

/* Writes the path of the route NAME ("plan", "approve", …) into OUT, its
 * placeholders filled in order from ARGS (as given: not escaped). Returns
 * 0, or -1 for no such route or when OUT is too small. */
int api_path(const char *name, const char *const *args, char *out, size_t outlen);

/* Answers the request T (from api_route) into R, with the store S, the
 * query Q, the request body BODY of LEN bytes (NULL and 0 for none), and,
 * for a write, ACTOR: the operator the caller authenticated (recorded as
 * who decided). Store failures are 500 (503 when the database is busy). */
void api_handle(struct store *s, const struct api_target *t, const struct uri_query *q,
    const char *body, size_t len, const char *actor, struct api_response *r);

/* Sets R to STATUS with {"error": message}. */
void api_error(struct api_response *r, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Frees what R holds and leaves it empty. */
void api_response_clear(struct api_response *r);

#endif
