/* api: the JSON API of `cutover serve`, independent of the HTTP library —
 * which route a method and path name, and what each route answers, read
 * from or written to the store. Writes only record operator commands and
 * submitted plans: nothing here talks to the broker or the flag service
 * (the engine acts on what is recorded).
 *
 *   GET  /healthz                                   200, 503
 *   GET  /api/plans[?name=NAME]                     200
 *   POST /api/plans              (the plan's YAML)  201, 400, 409
 *   GET  /api/plans/ID                              200, 404
 *   GET  /api/plans/ID/history                      200, 404
 *   GET  /api/plans/ID/samples[?since=MS]           200, 400, 404
 *   POST /api/plans/ID/steps/N/approve  {"comment"} 202, 400, 404, 409
 *   POST /api/plans/ID/steps/N/retry    {"comment"} 202, 400, 404, 409
 *   POST /api/plans/ID/abort            {"comment"} 202, 400, 404, 409
 *   POST /api/plans/ID/alerts/A/ack     {"comment"} 202, 400, 404, 409
 *   GET  /api/plans/ID/commands/C                   200, 404
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

enum api_route {
	API_HEALTHZ,
	API_PLANS,		/* list, or submit */
	API_PLAN,
	API_HISTORY,
	API_SAMPLES,
	API_APPROVE,
	API_RETRY,
	API_ABORT,
	API_ACK,
	API_COMMAND		/* what became of a recorded command */
};

struct api_target {
	enum api_route route;
	int write;		/* POST: changes something, needs an operator */
	int64_t plan_id;
	int64_t arg;		/* step number (1-based) or alert id */
};

struct api_response {
	int status;
	char *body;		/* JSON and a newline, malloc'd; owned */
	size_t len;
	const char *allow;	/* the Allow header of a 405, static */
	char location[64];	/* the Location header of a 201, or "" */
};

/* Matches METHOD and the decoded PATH against the routes. Returns 0 and
 * fills T; or -1 with R holding the answer: 404 for no such route, 405
 * (with R->allow) for a method the route does not take. */
int api_route(const char *method, const char *path, struct api_target *t,
    struct api_response *r);

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
