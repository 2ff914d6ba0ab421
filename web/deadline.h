/* deadline: a bound on the time a request may take to arrive whole.
 * libmicrohttpd's connection timeout is an idle timeout, which a client
 * trickling one header line every few seconds never meets, so a few
 * hundred such clients hold every connection slot for as long as they
 * like. Here each connection is registered with the time its request
 * began (its accept, or the end of the previous request); a watcher
 * thread shuts down the socket of every connection whose request has not
 * arrived whole within the limit, and libmicrohttpd then closes it as a
 * client that went away. */
#ifndef CUTOVER_DEADLINE_H
#define CUTOVER_DEADLINE_H

#include <stdint.h>
#include <stddef.h>

struct deadline;
struct deadline_conn;

/* Starts the watcher: requests must arrive whole within LIMIT_MS. Returns
 * 0 and *OUT (stop it with deadline_stop), or -1 with ERR. */
int deadline_start(int64_t limit_ms, struct deadline **out, char *err, size_t errlen);

/* Stops the watcher thread and frees D (NULL is fine); every connection
 * must have been removed first. */
void deadline_stop(struct deadline *d);

/* A connection on socket FD was accepted: its first request begins now.
 * Returns its registration (NULL when out of memory: the connection is
 * then not watched). */
struct deadline_conn *deadline_add(struct deadline *d, int fd);

/* C's request arrived whole: the clock stops until deadline_next. */
void deadline_arrived(struct deadline *d, struct deadline_conn *c);

/* C's request was answered: the next one, if any, begins now. */
void deadline_next(struct deadline *d, struct deadline_conn *c);

/* C is closing: forgets it (before its socket is closed) and frees it. */
void deadline_remove(struct deadline *d, struct deadline_conn *c);

#endif
