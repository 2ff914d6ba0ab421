/* server: the HTTP side of `cutover serve` — libmicrohttpd's threads
 * answering the JSON API (api.h) from their own connections to the store,
 * with the limits every request meets before a handler sees it: bodies over
 * API_BODY_MAX are 413, a request target over SERVER_URI_MAX is 414, a
 * request line and headers over SERVER_HEADERS_MAX are 431, paths and
 * queries must decode strictly (uri.h), idle connections time out, a
 * request must arrive whole (line, headers and body) within
 * SERVER_REQUEST_S of its connection's start or of the end of the previous
 * request, one address holds at most SERVER_PER_IP_MAX connections (so
 * slow clients cannot take every slot: the next is answered 503 at once
 * and closed), at most SERVER_LOADS_MAX threads check a submitted plan at
 * a time (the others stay free for /healthz and reads; a submission beyond
 * is 503), and writes (and, away from loopback, reads) need an operator's
 * bearer token (auth.h). Every refusal is JSON, {"error": "…"} naming the
 * limit, except what libmicrohttpd refuses before any callback of ours
 * runs, with its own HTML page: a request line and headers beyond
 * SERVER_MEMORY_MAX, a Content-Length that is not a number. One log line
 * per request: method, path, status, milliseconds and, for a write, the
 * operator — never a header value or a body. */
#ifndef CUTOVER_SERVER_H
#define CUTOVER_SERVER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "auth.h"

#define SERVER_THREADS		4	/* libmicrohttpd threads, one store each */
/* Each thread's store connection keeps at most this much of the database
 * (KiB): its answers are cached (cache.h), and a step's result of
 * megabytes read once would otherwise stay in every thread's. */
#define SERVER_STORE_CACHE_KIB	256
/* At most this often (ms), memory freed after an answer built anew goes
 * back to the system (malloc_trim): its cost, under a millisecond, is
 * paid only by answers that cost more to build. */
#define SERVER_TRIM_MS		250
#define SERVER_TIMEOUT_S	15	/* an idle connection is closed after */
#define SERVER_HEADERS_MAX	(16 * 1024)	/* request line and headers */
#define SERVER_URI_MAX		8192	/* the request target, query included */
/* libmicrohttpd's memory for one connection, where the request line and
 * headers must fit: above the two limits before, so that what goes past
 * them is read whole and answered by us, in JSON; and no larger, since
 * libmicrohttpd 0.9.75 zeroes all of it for every request of a kept-alive
 * connection (at 64 KiB, a fifth of what an API answer cost). 16 KiB of
 * headers is what Node's HTTP server allows; proxies' and browsers' stay
 * well under. */
#define SERVER_MEMORY_MAX	(32 * 1024)
#define SERVER_CONNECTIONS_MAX	256
#define SERVER_PER_IP_MAX	64	/* connections from one address */
#define SERVER_REQUEST_S	12	/* a request must arrive whole within */
/* Threads checking a submitted plan at once: one fewer than the threads
 * (at least 1), so that one is always free to answer /healthz. */
#define SERVER_LOADS_MAX(threads)	((threads) > 1 ? (threads) - 1 : 1)

struct server;

struct server_config {
	const char *db;			/* the store's path; opened per thread */
	const char *listen;		/* HOST:PORT (server_listen_parse) */
	const struct auth *operators;	/* borrowed; NULL: every write is 401 */
	unsigned threads;		/* 0: SERVER_THREADS */
	unsigned timeout_s;		/* 0: SERVER_TIMEOUT_S */
};

/* Parses a listen address: IPV4:PORT, localhost:PORT or [IPV6]:PORT (no
 * name resolution), PORT 0 to 65535 (0: any free port). Sets *LOOPBACK when
 * the address is a loopback one. Returns 0 or -1 with ERR. */
int server_listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
    int *loopback, char *err, size_t errlen);

/* Opens C->threads store connections, binds C->listen and starts serving
 * in libmicrohttpd's threads, which never take SIGINT or SIGTERM (the
 * caller's thread does). When the address is not loopback, reads need a
 * token too (except /healthz). Returns 0 and a server to stop with
 * server_stop, or -1 with ERR (nothing left open). */
int server_start(const struct server_config *c, struct server **out, char *err,
    size_t errlen);

/* The port the server listens on (useful after port 0). */
uint16_t server_port(const struct server *sv);

/* Stops accepting, lets requests in flight finish, joins the threads,
 * closes the store connections and frees SV (NULL is fine). */
void server_stop(struct server *sv);

#endif
