/* server: libmicrohttpd glue for the JSON API — per-request state, body
 * limits, authentication, the store connection pool, request logging. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "api.h"
#include "cache.h"
#include "clock.h"
#include "deadline.h"
#include "denied.h"
#include "log.h"
#include "page.h"
#include "server.h"
#include "store.h"
#include "textbuf.h"
#include "uri.h"

#define LOG_PATH_MAX	160		/* bytes of a path a log line shows */
#define DISCARD_MAX	(8 * 1024 * 1024)	/* past the limit, then hang up */
#define PEERS_MAX	SERVER_CONNECTIONS_MAX	/* addresses counted at once */

/* The connections one address holds. */
struct peer_count {
	int family;			/* AF_INET, AF_INET6; 0: a free slot */
	unsigned char addr[16];
	unsigned n;
};

/* One connection, from its accept to its close (libmicrohttpd's socket
 * context). */
struct conn {
	struct deadline_conn *deadline;	/* NULL: not watched */
	struct peer_count *peer;	/* its address's count, or NULL */
};

struct server {
	struct MHD_Daemon *mhd;
	struct deadline *deadline;	/* requests arrive whole in time */
	struct denied *denied;		/* refused requests into the history */
	const struct auth *ops;
	int reads_need_token;
	int fd;				/* the listening socket */
	uint16_t port;
	int sync_ok;			/* mu and cv initialised */
	pthread_mutex_t mu;		/* guards busy[] */
	pthread_cond_t cv;		/* a connection was given back */
	struct store **stores;		/* one per libmicrohttpd thread */
	struct cache *caches;		/* one per store connection */
	unsigned char *busy;
	size_t nstores;
	unsigned loads;			/* plans being checked; guarded by mu */
	unsigned loads_max;
	struct peer_count peers[PEERS_MAX];	/* guarded by mu */
	unsigned refused;		/* connections refused over the per-address
					 * limit since the last line said so; mu */
	int64_t refused_said_ms;	/* when that line was written (mono); mu */
	atomic_llong trimmed_ms;	/* when malloc_trim last ran (monotonic) */
};

/* One request, from its headers to its completion. */
struct request {
	int begun;			/* the handler has seen its headers */
	size_t uri_len;			/* the request target's bytes */
	int64_t t0;			/* monotonic ms */
	char method[12];		/* for the log line */
	char path[LOG_PATH_MAX];	/* for the log line, made printable */
	char actor[AUTH_NAME_MAX];	/* the authenticated operator, or "" */
	struct api_target target;
	struct page_target page;	/* the page or /metrics (page.h) */
	struct uri_query query;
	int bad_query;
	char *body;
	size_t len, cap, discarded;
	int toobig;
	int status;			/* answered with, 0 while not */
	bool built;			/* answered with what it built, not the cache's */
};

/* C's registration with the request deadline (deadline.h), or NULL. */
static struct deadline_conn *
conn_deadline(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
	    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	const struct conn *k = ci != NULL ? ci->socket_context : NULL;

	return k != NULL ? k->deadline : NULL;
}

/* Copies S for a log line: printable ASCII only, truncated. */
static void
log_copy(char *out, size_t outlen, const char *s)
{
	size_t n = 0;

	for (; s != NULL && *s != '\0' && n + 1 < outlen; s++)
		out[n++] = (*s > 0x20 && *s < 0x7f) ? *s : '?';
	if (s != NULL && *s != '\0' && outlen > 4) {
		memcpy(out + outlen - 4, "...", 3);
		n = outlen - 1;
	}
	out[n] = '\0';
}

/* Takes a store connection from the pool, waiting for one if need be. */
static struct store *
borrow(struct server *sv, size_t *slot)
{
	pthread_mutex_lock(&sv->mu);
	for (;;) {
		for (size_t i = 0; i < sv->nstores; i++) {
			if (!sv->busy[i]) {
				sv->busy[i] = 1;
				pthread_mutex_unlock(&sv->mu);
				*slot = i;
				return sv->stores[i];
			}
		}
		pthread_cond_wait(&sv->cv, &sv->mu);
	}
}

static void
give_back(struct server *sv, size_t slot)
{
	pthread_mutex_lock(&sv->mu);
	sv->busy[slot] = 0;
	pthread_cond_signal(&sv->cv);
	pthread_mutex_unlock(&sv->mu);
}

/* The response's reference to a shared body goes back once it is sent. */
static void
shared_sent(void *cls)
{
	cache_body_release(cls);
}

/* Queues R's answer on C: its body SHARED (a reference, given to the
 * response) when not NULL, else R's own (taken). */
static enum MHD_Result
respond_shared(struct MHD_Connection *c, struct request *rq, struct api_response *r,
    struct cache_body *shared)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (shared != NULL) {
		resp = MHD_create_response_from_buffer_with_free_callback_cls(shared->len,
		    shared->data, shared_sent, shared);
		if (resp == NULL) {
			cache_body_release(shared);
			return MHD_NO;
		}
	} else if (r->body != NULL) {
		resp = MHD_create_response_from_buffer(r->len, r->body, MHD_RESPMEM_MUST_FREE);
		if (resp == NULL)
			return MHD_NO;
		r->body = NULL;
		r->len = 0;
	} else if ((resp = MHD_create_response_from_buffer(0, (void *)"",
	    MHD_RESPMEM_PERSISTENT)) == NULL)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, r->type != NULL ?
	    r->type : "application/json");
	if (r->filename[0] != '\0') {
		char cd[sizeof(r->filename) + 32];

		snprintf(cd, sizeof(cd), "attachment; filename=\"%s\"", r->filename);
		MHD_add_response_header(resp, "Content-Disposition", cd);
	}
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (r->allow != NULL)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, r->allow);
	if (r->location[0] != '\0')
		MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, r->location);
	if (r->status == 401)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
		    "Bearer realm=\"cutover\"");
	if (r->retry_after > 0) {
		char ra[16];

		snprintf(ra, sizeof(ra), "%d", r->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	ret = MHD_queue_response(c, (unsigned int)r->status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES)
		rq->status = r->status;
	return ret;
}

/* Queues R's answer on C (taking R's body). */
static enum MHD_Result
respond(struct MHD_Connection *c, struct request *rq, struct api_response *r)
{
	return respond_shared(c, rq, r, NULL);
}

static enum MHD_Result
respond_error(struct MHD_Connection *c, struct request *rq, int status,
    const char *msg)
{
	struct api_response r = { 0 };
	enum MHD_Result ret;

	api_error(&r, status, "%s", msg);
	ret = respond(c, rq, &r);
	api_response_clear(&r);
	return ret;
}

/* Answers RQ from store S (pool slot SLOT) into R, or into *SHARED (a
 * reference, R then has no body) when the answer is kept: from the cache
 * when the database has not changed since the same answer was built, or
 * built now and kept for the next. Returns whether it was built now. */
static bool
answer(struct server *sv, struct store *s, size_t slot, struct request *rq,
    struct api_response *r, struct cache_body **shared)
{
	struct cache *c = &sv->caches[slot];
	uint64_t version = 0;
	char key[CACHE_KEY_MAX];
	int use = api_cache_key(&rq->target, &rq->query, key, sizeof(key)) &&
	    store_version(s, &version, NULL, 0) == 0;

	*shared = NULL;
	if (use && (*shared = cache_get(c, (int)rq->target.route, rq->target.plan_id, key,
	    version)) != NULL) {
		r->status = 200;
		return false;
	}
	api_handle(s, &rq->target, &rq->query, rq->body, rq->len,
	    rq->actor[0] != '\0' ? rq->actor : NULL, r);
	if (!use || r->status != 200 || r->body == NULL)
		return true;
	/* The cache and this response share the body: no copy of it. */
	if ((*shared = cache_body_new(r->body, r->len)) == NULL) {
		r->body = NULL;
		api_error(r, 500, "out of memory");
		return true;
	}
	r->body = NULL;
	r->len = 0;
	cache_put(c, (int)rq->target.route, rq->target.plan_id, key, version, *shared);
	return true;
}

/* Address SA (NULL: unknown) as text into OUT, or "" when unknown. */
static void
address_text(const struct sockaddr *sa, char *out, size_t outlen)
{
	out[0] = '\0';
	if (sa != NULL && sa->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out,
		    (socklen_t)outlen);
	else if (sa != NULL && sa->sa_family == AF_INET6)
		inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out,
		    (socklen_t)outlen);
}

/* C's peer address as text into OUT, or "" when unknown. */
static void
peer(struct MHD_Connection *c, char *out, size_t outlen)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c,
	    MHD_CONNECTION_INFO_CLIENT_ADDRESS);

	address_text(ci != NULL ? ci->client_addr : NULL, out, outlen);
}

/* Records RQ's answer R in the history when it is a refusal (denied.h),
 * with store S; writes the counts of minutes past either way. */
static void
note_denied(struct server *sv, struct store *s, struct MHD_Connection *c,
    const struct request *rq, const char *method, const struct api_response *r)
{
	struct denied_request d = { 0 };
	char from[INET6_ADDRSTRLEN];
	json_t *body = NULL;
	int64_t now = clock_now_ms();

	if (r->status == 401 || r->status == 403 || r->status == 409) {
		if (r->body != NULL)
			body = json_loadb(r->body, r->len, 0, NULL);
		peer(c, from, sizeof(from));
		d.plan_id = rq->target.plan_id;
		if (d.plan_id == 0 && json_is_integer(json_object_get(body, "id")))
			d.plan_id = json_integer_value(json_object_get(body, "id"));
		d.status = r->status;
		d.method = method;
		d.route = api_route_name(&rq->target);
		d.path = rq->path;
		d.actor = rq->actor[0] != '\0' ? rq->actor : NULL;
		d.from = from[0] != '\0' ? from : NULL;
		d.why = json_string_value(json_object_get(body, "error"));
		denied_note(sv->denied, s, &d, now);
		json_decref(body);
	}
	denied_flush(sv->denied, s, now);
}

/* Takes one of SV's places for checking a submitted plan. Returns whether
 * there was one (then give it back with load_end). */
static bool
load_begin(struct server *sv)
{
	bool ok;

	pthread_mutex_lock(&sv->mu);
	if ((ok = sv->loads < sv->loads_max))
		sv->loads++;
	pthread_mutex_unlock(&sv->mu);
	return ok;
}

/* Gives back the place load_begin took. */
static void
load_end(struct server *sv)
{
	pthread_mutex_lock(&sv->mu);
	sv->loads--;
	pthread_mutex_unlock(&sv->mu);
}

/* Gives the memory an answer built anew left free back to the system, at
 * most every SERVER_TRIM_MS: building one (a plan's document at 10,000
 * old queues, /metrics) allocates megabytes for a moment, and each
 * libmicrohttpd thread's malloc arena kept its high-water mark for good,
 * which made serve's memory depend on what readers had asked for. */
static void
trim(struct server *sv)
{
	long long now = (long long)clock_mono_ms(), last = atomic_load(&sv->trimmed_ms);

	if (now - last >= SERVER_TRIM_MS &&
	    atomic_compare_exchange_strong(&sv->trimmed_ms, &last, now))
		malloc_trim(0);
}

/* Answers the request from the store; a submitted plan only while fewer
 * than SERVER_LOADS_MAX threads check one, so that checking plans never
 * takes every thread from /healthz and the reads. */
static enum MHD_Result
handle(struct server *sv, struct MHD_Connection *c, struct request *rq)
{
	struct api_response r = { 0 };
	struct cache_body *shared = NULL;
	struct store *s;
	enum MHD_Result ret;
	size_t slot;
	bool loads, built = false;

	if (rq->page.kind != PAGE_NONE) {
		s = rq->page.kind == PAGE_METRICS ? borrow(sv, &slot) : NULL;
		ret = page_respond(c, &rq->page, s, &rq->status);
		if (s != NULL) {
			give_back(sv, slot);
			rq->built = true;
		}
		return ret;
	}
	loads = strcmp(api_route_name(&rq->target), "submit") == 0;
	if (loads && !load_begin(sv)) {
		api_error(&r, 503, "%u plans are being checked already, the most at once "
		    "(SERVER_LOADS_MAX); try again in a second", sv->loads_max);
		r.retry_after = 1;
		goto answer;
	}
	s = borrow(sv, &slot);
	built = answer(sv, s, slot, rq, &r, &shared);
	note_denied(sv, s, c, rq, rq->method, &r);
	give_back(sv, slot);
	if (loads)
		load_end(sv);
answer:
	ret = respond_shared(c, rq, &r, shared);
	api_response_clear(&r);
	rq->built = built;
	return ret;
}

static enum MHD_Result
add_param(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct request *rq = cls;

	(void)kind;
	if (uri_query_add(&rq->query, key, value) != 0) {
		rq->bad_query = 1;
		return MHD_NO;
	}
	return MHD_YES;
}

static const char *
unauthorized(enum auth_result ar)
{
	switch (ar) {
	case AUTH_UNCONFIGURED:
		return "no operators are configured, so nothing can be changed: make one "
		    "with `cutover operators add NAME --file FILE` on this server's machine "
		    "(it prints their token once), start cutover serve with --operators FILE "
		    "and send Authorization: Bearer TOKEN";
	case AUTH_NONE:
		return "this needs an operator's token: Authorization: Bearer TOKEN (an "
		    "operator's token comes from `cutover operators add NAME` on this "
		    "server's machine)";
	case AUTH_MALFORMED:
		return "the Authorization header must be Bearer TOKEN";
	default:
		return "the token is not an operator's: the token `cutover operators add "
		    "NAME` printed for you, with no space or line break in it (serve "
		    "reads the operators file when it starts: one added since needs a "
		    "restart)";
	}
}

/* Adds a header line's bytes ("KEY: VALUE\r\n") to the count at CLS. */
static enum MHD_Result
add_header_size(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	size_t *n = cls;

	(void)kind;
	*n += strlen(key) + (value != NULL ? strlen(value) : 0) + 4;
	return MHD_YES;
}

/* The request's headers are in: check their sizes, route, authenticate,
 * check the declared size; refusals are answered at once (libmicrohttpd
 * then drops any body and closes the connection). Otherwise the answer comes once the request
 * is fully read, so that the connection can be kept alive. */
static enum MHD_Result
begin(struct server *sv, struct MHD_Connection *c, struct request *rq, const char *url,
    const char *method)
{
	struct api_response r = { 0 };
	char path[URI_PATH_MAX];
	const char *cl;
	enum auth_result ar;
	enum MHD_Result ret;
	size_t head;

	if (rq->uri_len > SERVER_URI_MAX) {
		api_error(&r, 414, "the request target is %zu bytes long; expected at most "
		    "%d (SERVER_URI_MAX)", rq->uri_len, SERVER_URI_MAX);
		goto answer;
	}
	head = strlen(method) + rq->uri_len + 16;	/* " ", " HTTP/1.1\r\n" */
	MHD_get_connection_values(c, MHD_HEADER_KIND, add_header_size, &head);
	if (head > SERVER_HEADERS_MAX) {
		api_error(&r, 431, "the request line and headers take %zu bytes; expected "
		    "at most %d (SERVER_HEADERS_MAX)", head, SERVER_HEADERS_MAX);
		goto answer;
	}
	if (uri_decode(url, 0, path, sizeof(path)) != 0) {
		api_error(&r, 400, "malformed path: escapes must be %%XX and decode to "
		    "printable characters");
		goto answer;
	}
	if (page_route(path, &rq->page) != PAGE_NONE) {
		/* The page's files need no token; /metrics is a read like any. */
		if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
			api_error(&r, 405, "method %s is not allowed here; allowed: GET, HEAD",
			    strlen(method) <= 16 ? method : "(too long)");
			r.allow = "GET, HEAD";
			goto answer;
		}
		if (rq->page.kind == PAGE_METRICS && sv->reads_need_token &&
		    (ar = auth_check(sv->ops, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_AUTHORIZATION), rq->actor, sizeof(rq->actor))) != AUTH_OK) {
			api_error(&r, 401, "%s", unauthorized(ar));
			goto answer;
		}
		return MHD_YES;
	}
	if (api_route(method, path, &rq->target, &r) != 0)
		goto answer;
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_param, rq);
	if (rq->bad_query) {
		api_error(&r, 400, "malformed query: escapes must be %%XX and decode to "
		    "printable characters, at most %d parameters, none twice",
		    URI_PARAM_MAX);
		goto answer;
	}
	if (api_needs_token(&rq->target, sv->reads_need_token)) {
		ar = auth_check(sv->ops, MHD_lookup_connection_value(c, MHD_HEADER_KIND,
		    MHD_HTTP_HEADER_AUTHORIZATION), rq->actor, sizeof(rq->actor));
		if (ar != AUTH_OK) {
			struct store *s;
			size_t slot;

			api_error(&r, 401, "%s", unauthorized(ar));
			s = borrow(sv, &slot);
			note_denied(sv, s, c, rq, method, &r);
			give_back(sv, slot);
			goto answer;
		}
	}
	if (!rq->target.write)
		return MHD_YES;		/* answered on the next call: keep-alive */
	cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl != NULL) {
		size_t n = strspn(cl, "0123456789");

		if (n == 0 || cl[n] != '\0') {
			api_error(&r, 400, "malformed Content-Length");
			goto answer;
		}
		if (n > 9 || strtoul(cl, NULL, 10) > API_BODY_MAX) {
			api_error(&r, 413, "the body is larger than %d bytes", API_BODY_MAX);
			goto answer;
		}
	}
	return MHD_YES;
answer:
	ret = respond(c, rq, &r);
	api_response_clear(&r);
	return ret;
}

/* A piece of a write's body: kept up to API_BODY_MAX, then counted and
 * dropped (the answer is 413), and past DISCARD_MAX the connection is cut.
 * A read's body is ignored (dropped, within the same bound). */
static enum MHD_Result
take_body(struct request *rq, const char *data, size_t n)
{
	if (!rq->target.write) {
		rq->discarded += n;
		return rq->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (rq->toobig || n > API_BODY_MAX - rq->len) {
		rq->toobig = 1;
		rq->discarded += n;
		free(rq->body);
		rq->body = NULL;
		rq->len = rq->cap = 0;
		return rq->discarded > DISCARD_MAX ? MHD_NO : MHD_YES;
	}
	if (textbuf_grow(&rq->body, &rq->cap, rq->len + n + 1, 4096, API_BODY_MAX + 1) != 0)
		return MHD_NO;
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
	rq->body[rq->len] = '\0';
	return MHD_YES;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	struct server *sv = cls;
	struct request *rq = *con_cls;
	char msg[96];
	size_t n;

	(void)version;
	if (rq == NULL) {
		if ((rq = calloc(1, sizeof(*rq))) == NULL)
			return MHD_NO;
		*con_cls = rq;
		rq->t0 = clock_mono_ms();
		rq->uri_len = strlen(url);
	}
	if (!rq->begun) {
		rq->begun = 1;
		log_copy(rq->method, sizeof(rq->method), method);
		log_copy(rq->path, sizeof(rq->path), url);
		return begin(sv, c, rq, url, method);
	}
	if (*upload_size > 0) {
		n = *upload_size;
		*upload_size = 0;
		return take_body(rq, upload, n);
	}
	deadline_arrived(sv->deadline, conn_deadline(c));	/* all of it is in */
	if (rq->status != 0)
		return MHD_YES;
	if (rq->toobig) {
		snprintf(msg, sizeof(msg), "the body is larger than %d bytes", API_BODY_MAX);
		return respond_error(c, rq, 413, msg);
	}
	return handle(sv, c, rq);
}

/* The request line is in: the request begins here, with the length of its
 * target as it came (the handler's URL has lost its query). Returns the
 * request's state (NULL when out of memory: on_request makes it then). */
static void *
on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
	struct request *rq;

	(void)cls;
	(void)c;
	if ((rq = calloc(1, sizeof(*rq))) == NULL)
		return NULL;
	rq->t0 = clock_mono_ms();
	rq->uri_len = strlen(uri);
	/* For the log line of a request libmicrohttpd refuses itself. */
	strcpy(rq->method, "-");
	log_copy(rq->path, sizeof(rq->path), uri);
	rq->path[strcspn(rq->path, "?")] = '\0';
	return rq;
}

static const char *
termination(enum MHD_RequestTerminationCode toe)
{
	switch (toe) {
	case MHD_REQUEST_TERMINATED_COMPLETED_OK: return "completed";
	case MHD_REQUEST_TERMINATED_WITH_ERROR: return "error";
	case MHD_REQUEST_TERMINATED_TIMEOUT_REACHED: return "timed out";
	case MHD_REQUEST_TERMINATED_DAEMON_SHUTDOWN: return "server stopping";
	case MHD_REQUEST_TERMINATED_READ_ERROR: return "read error";
	case MHD_REQUEST_TERMINATED_CLIENT_ABORT: return "client closed";
	}
	return "closed";
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct server *sv = cls;
	struct request *rq = *con_cls;
	long long ms;

	deadline_next(sv->deadline, conn_deadline(c));
	if (rq == NULL)
		return;
	ms = (long long)(clock_mono_ms() - rq->t0);
	if (rq->status != 0)
		log_event(rq->status >= 500 ? "error" : "info", NULL, NULL,
		    "http %s %s status=%d ms=%lld%s%s", rq->method, rq->path, rq->status, ms,
		    rq->actor[0] != '\0' ? " operator=" : "", rq->actor);
	else
		log_event("warn", NULL, NULL, "http %s %s status=none ms=%lld (%s)",
		    rq->method, rq->path, ms, termination(toe));
	if (rq->built)
		trim(sv);
	free(rq->body);
	free(rq);
	*con_cls = NULL;
}

/* The count of connections from SA's address in SV (its mutex held),
 * taken for one more: a free slot is claimed for a new address. Returns
 * NULL for an address of no family counted, or when every slot is in use. */
static struct peer_count *
peer_take(struct server *sv, const struct sockaddr *sa)
{
	struct peer_count *free_slot = NULL;
	const unsigned char *a;
	size_t alen;

	if (sa != NULL && sa->sa_family == AF_INET) {
		a = (const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr;
		alen = 4;
	} else if (sa != NULL && sa->sa_family == AF_INET6) {
		a = (const unsigned char *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
		alen = 16;
	} else
		return NULL;
	for (size_t i = 0; i < PEERS_MAX; i++) {
		struct peer_count *p = &sv->peers[i];

		if (p->family == sa->sa_family && memcmp(p->addr, a, alen) == 0) {
			p->n++;
			return p;
		}
		if (p->family == 0 && free_slot == NULL)
			free_slot = p;
	}
	if (free_slot != NULL) {
		free_slot->family = sa->sa_family;
		memcpy(free_slot->addr, a, alen);
		free_slot->n = 1;
	}
	return free_slot;
}

/* Answers the connection on socket FD at once, before it has asked
 * anything, with a 503 saying that its address holds SERVER_PER_IP_MAX
 * connections, and shuts it down; libmicrohttpd then closes it as a client
 * that went away. What it sent already is read first, so that closing
 * does not reset the connection before the answer is read. The answer is
 * a few hundred bytes, which an empty socket buffer always takes. */
static void
refuse_connection(int fd)
{
	char body[256], msg[512], drain[4096];
	int blen, mlen;

	blen = snprintf(body, sizeof(body), "{\"error\":\"this address holds %d "
	    "connections already, the most one address may (SERVER_PER_IP_MAX); "
	    "close one or try again in a second\"}\n", SERVER_PER_IP_MAX);
	mlen = snprintf(msg, sizeof(msg), "HTTP/1.1 503 Service Unavailable\r\n"
	    "Content-Type: application/json\r\nCache-Control: no-store\r\n"
	    "X-Content-Type-Options: nosniff\r\nRetry-After: 1\r\n"
	    "Connection: close\r\nContent-Length: %d\r\n\r\n%s", blen, body);
	if (send(fd, msg, (size_t)mlen, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		log_event("warn", NULL, NULL, "http refusing a connection over the per-address "
		    "limit: %s", strerror(errno));
	for (int i = 0; i < 16 && recv(fd, drain, sizeof(drain), MSG_DONTWAIT) > 0; i++)
		;
	shutdown(fd, SHUT_RDWR);
}

/* Counts one more connection refused over the per-address limit, and
 * returns how many to say in a log line now (at most one line a second,
 * so that a client hammering the limit cannot flood the log), or 0 when
 * the count waits for a later line. Under SV's lock. */
static unsigned
refused_to_say(struct server *sv)
{
	int64_t now = clock_mono_ms();
	unsigned n = ++sv->refused;

	if (sv->refused_said_ms != 0 && now - sv->refused_said_ms < 1000)
		return 0;
	sv->refused = 0;
	sv->refused_said_ms = now;
	return n;
}

/* A connection opens (counted for its address, then watched by the request
 * deadline from now, or answered 503 at once when its address holds
 * SERVER_PER_IP_MAX already) or closes (forgotten before libmicrohttpd
 * closes its socket). */
static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode code)
{
	struct server *sv = cls;
	const union MHD_ConnectionInfo *ci, *ca;
	struct conn *k = *socket_context;
	bool over = false;
	unsigned refused = 0;
	int fd;

	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = NULL;
		if ((k = calloc(1, sizeof(*k))) == NULL)
			return;		/* neither counted nor watched */
		ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
		ca = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		fd = ci != NULL ? ci->connect_fd : -1;
		pthread_mutex_lock(&sv->mu);
		k->peer = peer_take(sv, ca != NULL ? ca->client_addr : NULL);
		over = k->peer != NULL && k->peer->n > SERVER_PER_IP_MAX;
		if (over)
			refused = refused_to_say(sv);
		pthread_mutex_unlock(&sv->mu);
		if (refused > 0) {
			char addr[64];

			address_text(ca != NULL ? ca->client_addr : NULL, addr, sizeof(addr));
			log_event("warn", NULL, NULL, "http refused %u connection%s since "
			    "the last such line: the address held %d already, the most "
			    "one address may (SERVER_PER_IP_MAX); the latest from %s",
			    refused, refused == 1 ? "" : "s", SERVER_PER_IP_MAX,
			    addr[0] != '\0' ? addr : "an unknown address");
		}
		if (over && fd != -1)
			refuse_connection(fd);
		else if (fd != -1)
			k->deadline = deadline_add(sv->deadline, fd);
		*socket_context = k;
		return;
	}
	if (k == NULL)
		return;
	if (k->peer != NULL) {
		pthread_mutex_lock(&sv->mu);
		if (--k->peer->n == 0)
			k->peer->family = 0;
		pthread_mutex_unlock(&sv->mu);
	}
	deadline_remove(sv->deadline, k->deadline);
	free(k);
	*socket_context = NULL;
}

/* Leaves every escape as it came: uri.c decodes, strictly, what it needs. */
static size_t
unescape_none(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static int
listen_socket(const struct sockaddr_storage *ss, socklen_t len, const char *spec,
    char *err, size_t errlen)
{
	int fd, one = 1, fl;

	if ((fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		snprintf(err, errlen, "listen %s: socket: %s", spec, strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss->ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (const struct sockaddr *)ss, len) == -1 || listen(fd, 128) == -1 ||
	    (fl = fcntl(fd, F_GETFL)) == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		snprintf(err, errlen, "listen %s: %s", spec, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* libmicrohttpd on SV's listening socket, with every limit of server.h.
 * The per-address limit is on_connection's, not libmicrohttpd's (which
 * closes the connection without a word). */
static struct MHD_Daemon *
start_mhd(struct server *sv, unsigned int flags, unsigned int threads,
    unsigned int timeout)
{
	return MHD_start_daemon(flags, 0, NULL, NULL, on_request, sv,
	    MHD_OPTION_LISTEN_SOCKET, (MHD_socket)sv->fd,
	    MHD_OPTION_THREAD_POOL_SIZE, threads,
	    MHD_OPTION_CONNECTION_TIMEOUT, timeout,
	    MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)SERVER_MEMORY_MAX,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned int)SERVER_CONNECTIONS_MAX,
	    MHD_OPTION_URI_LOG_CALLBACK, on_uri, sv,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, sv,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, sv,
	    MHD_OPTION_UNESCAPE_CALLBACK, unescape_none, NULL,
	    MHD_OPTION_STRICT_FOR_CLIENT, 1,
	    MHD_OPTION_END);
}

int
server_start(const struct server_config *cfg, struct server **out, char *err,
    size_t errlen)
{
	struct sockaddr_storage ss, bound;
	socklen_t len, blen = sizeof(bound);
	struct server *sv;
	sigset_t block, old;
	unsigned int flags = MHD_USE_AUTO_INTERNAL_THREAD;
	unsigned int threads = cfg->threads ? cfg->threads : SERVER_THREADS;
	unsigned int timeout = cfg->timeout_s ? cfg->timeout_s : SERVER_TIMEOUT_S;
	int loopback;

	*out = NULL;
	if (server_listen_parse(cfg->listen, &ss, &len, &loopback, err, errlen) != 0)
		return -1;
	if ((sv = calloc(1, sizeof(*sv))) == NULL)
		goto nomem;
	sv->fd = -1;
	sv->ops = cfg->operators;
	sv->reads_need_token = !loopback;
	sv->loads_max = SERVER_LOADS_MAX(threads);
	if (pthread_mutex_init(&sv->mu, NULL) != 0)
		goto nomem;
	if (pthread_cond_init(&sv->cv, NULL) != 0) {
		pthread_mutex_destroy(&sv->mu);
		goto nomem;
	}
	sv->sync_ok = 1;
	if ((sv->denied = denied_new()) == NULL)
		goto nomem;
	if ((sv->stores = calloc(threads, sizeof(*sv->stores))) == NULL ||
	    (sv->caches = calloc(threads, sizeof(*sv->caches))) == NULL ||
	    (sv->busy = calloc(threads, 1)) == NULL)
		goto nomem;
	for (; sv->nstores < threads; sv->nstores++) {
		if (store_open(cfg->db, &sv->stores[sv->nstores], err, errlen) != 0)
			goto fail;
		if (store_cache_limit(sv->stores[sv->nstores], SERVER_STORE_CACHE_KIB, err,
		    errlen) != 0) {
			sv->nstores++;		/* closed by server_stop */
			goto fail;
		}
	}
	if ((sv->fd = listen_socket(&ss, len, cfg->listen, err, errlen)) == -1)
		goto fail;
	if (getsockname(sv->fd, (struct sockaddr *)&bound, &blen) == 0)
		sv->port = ntohs(bound.ss_family == AF_INET6 ?
		    ((struct sockaddr_in6 *)&bound)->sin6_port :
		    ((struct sockaddr_in *)&bound)->sin_port);
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	/* The threads libmicrohttpd and the deadline start inherit this mask:
	 * signals go to the caller's thread, which runs the engine and owns the stop flag. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	if (deadline_start((int64_t)SERVER_REQUEST_S * 1000, &sv->deadline, err,
	    errlen) == 0)
		sv->mhd = start_mhd(sv, flags, threads, timeout);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (sv->deadline == NULL)
		goto fail;
	if (sv->mhd == NULL) {
		snprintf(err, errlen, "listen %s: the HTTP server did not start",
		    cfg->listen);
		goto fail;
	}
	*out = sv;
	return 0;
nomem:
	snprintf(err, errlen, "starting the HTTP server: out of memory");
fail:
	server_stop(sv);
	return -1;
}

uint16_t
server_port(const struct server *sv)
{
	return sv->port;
}

void
server_stop(struct server *sv)
{
	if (sv == NULL)
		return;
	if (sv->mhd != NULL)
		MHD_stop_daemon(sv->mhd);
	/* libmicrohttpd closes a listening socket it was given; close it
	 * ourselves only when it never got it. */
	if (sv->mhd == NULL && sv->fd != -1)
		close(sv->fd);
	deadline_stop(sv->deadline);	/* every connection is gone */
	denied_free(sv->denied, sv->nstores > 0 ? sv->stores[0] : NULL);
	for (size_t i = 0; i < sv->nstores; i++)
		store_close(sv->stores[i]);
	for (size_t i = 0; sv->caches != NULL && i < sv->nstores; i++)
		cache_clear(&sv->caches[i]);
	free(sv->caches);
	free(sv->stores);
	free(sv->busy);
	if (sv->sync_ok) {
		pthread_cond_destroy(&sv->cv);
		pthread_mutex_destroy(&sv->mu);
	}
	free(sv);
}
