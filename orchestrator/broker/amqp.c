/* amqp: cutover's AMQP 0-9-1 client on rabbitmq-c 0.11 (see amqp.h).
 *
 * rabbitmq-c answers requests (declare, bind, get, ...) itself; everything
 * the broker sends on its own (publisher confirms, returns, deliveries,
 * channel and connection closes) is read here, frame by frame, with
 * amqp_simple_wait_frame_noblock and handed to dispatch(). Frames that
 * arrive while rabbitmq-c waits for an answer are queued by the library and
 * read here later, in arrival order. */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* This module's header, then rabbitmq-c's of the same name: "amqp.h" in
 * quotes is this directory's, <amqp.h> the library's (orchestrator/broker
 * is not on the include path; the rest of the tree says "broker/amqp.h").
 * rabbitmq-c 0.12 and later install <rabbitmq-c/amqp.h> instead. */
#include "amqp.h"
#include "clock.h"
#include "errbuf.h"
#include "hex.h"
#if defined(__has_include)
#if __has_include(<rabbitmq-c/amqp.h>)
#define CUTOVER_RABBITMQ_C_DIR 1
#endif
#endif
#ifdef CUTOVER_RABBITMQ_C_DIR
#include <rabbitmq-c/amqp.h>
#include <rabbitmq-c/tcp_socket.h>
#else
#include <amqp.h>
#include <amqp_tcp_socket.h>
#endif

#define PUB_PENDING 1   /* a publish awaiting its verdict */
#define WHAT_MAX 1024   /* "binding queue '...' to exchange '...' ..." */
#define WHY_MAX 512     /* why a call failed */
#define TEXT_MAX 400    /* a broker reply text, as kept */

struct pub {
	uint64_t tag;           /* delivery tag on the channel it went out on */
	int result;             /* PUB_PENDING, 0 or a negative code */
	bool mandatory;
	bool returned;          /* basic.return seen; the ack follows */
	char *exchange;
	char *routing_key;
	char *message_id;
	char *detail;           /* why it failed */
};

struct queued {
	struct broker_delivery d;
	struct queued *next;
};

struct broker {
	struct broker_url url;
	char *username;
	char *password_ref;     /* "env:NAME": resolved at each connect */
	int timeout_ms;

	amqp_connection_state_t conn;   /* NULL: reconnect on the next call */
	amqp_channel_t chan;            /* 0: open a channel on the next call */
	amqp_channel_t last_chan;
	int channel_max;
	unsigned long epoch;            /* counts channel opens */
	uint64_t next_tag;              /* delivery tag of the next publish */
	int reply_code;                 /* of the reply that failed the */
	char reply_text[TEXT_MAX];      /* last call, and its text */

	struct pub *pubs;               /* published since the last wait */
	size_t npubs;
	size_t pubcap;

	char *consume_queue;            /* the consumer, kept across reopens */
	uint16_t prefetch;
	char *ctag;
	bool consuming;                 /* subscribed on the current channel */
	char *consumer_error;           /* why it ended, for broker_next */
	struct queued *qhead;
	struct queued *qtail;
};

static int dispatch(struct broker *, amqp_frame_t *, int64_t, const char *,
    char *, size_t);

/* The shared error-buffer helper, under the name this file calls it by. */
#define seterr errbuf_set

/* The shared monotonic clock, under the name this file calls it by. */
#define now_ms() clock_mono_ms()

static char *
dup_bytes(amqp_bytes_t b)
{
	char *s;

	if ((s = malloc(b.len + 1)) == NULL)
		return NULL;
	if (b.len > 0)
		memcpy(s, b.bytes, b.len);
	s[b.len] = '\0';
	return s;
}

/* Copies B, text from the broker, into BUF as a C string. */
static const char *
bytes_text(amqp_bytes_t b, char *buf, size_t len)
{
	if (b.len == 0 || b.bytes == NULL)
		buf[0] = '\0';
	else
		snprintf(buf, len, "%.*s", (int)(b.len < len ? b.len : len - 1),
		    (const char *)b.bytes);
	return buf;
}

static bool
bytes_is(amqp_bytes_t b, const char *s)
{
	size_t n = strlen(s);

	return b.len == n && (n == 0 || memcmp(b.bytes, s, n) == 0);
}

static bool
streq_null(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* AMQP short strings (names, keys) hold at most 255 bytes. */
static int
check_name(const char *kind, const char *name, bool empty_ok, char *err,
    size_t errlen)
{
	if (name == NULL || (!empty_ok && name[0] == '\0')) {
		seterr(err, errlen, "%s: a name is required", kind);
		return BROKER_ERR;
	}
	if (strlen(name) > 255) {
		seterr(err, errlen, "%s '%.40s...': longer than 255 bytes",
		    kind, name);
		return BROKER_ERR;
	}
	return 0;
}

static const char *
exchange_label(const char *name, char *buf, size_t len)
{
	if (name == NULL || name[0] == '\0')
		snprintf(buf, len, "the default exchange");
	else
		snprintf(buf, len, "exchange '%s'", name);
	return buf;
}

/* ---- URL and password ---- */

/* The shared hex-digit reader, under the name this file calls it by. */
#define hexval hex_value

int
broker_url_parse(const char *url, struct broker_url *u, char *err,
    size_t errlen)
{
	const char *p, *end, *host, *hend, *port = NULL, *pend = NULL;
	size_t n, i;
	long v;

	memset(u, 0, sizeof(*u));
	if (url == NULL || url[0] == '\0') {
		seterr(err, errlen, "no broker URL given");
		return BROKER_ERR;
	}
	if (strncmp(url, "amqps://", 8) == 0) {
		seterr(err, errlen, "broker URL: amqps:// (TLS) is not "
		    "supported yet; use amqp://");
		return BROKER_ERR;
	}
	if (strncmp(url, "amqp://", 7) != 0) {
		seterr(err, errlen, "broker URL: must start with amqp://");
		return BROKER_ERR;
	}
	p = url + 7;
	end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(end - p)) != NULL) {
		seterr(err, errlen, "broker URL: credentials do not belong in "
		    "the URL; give the username and an env: password reference "
		    "in the plan");
		return BROKER_ERR;
	}
	if (strpbrk(p, "?#") != NULL) {
		seterr(err, errlen, "broker URL: query strings and fragments "
		    "are not supported");
		return BROKER_ERR;
	}

	if (*p == '[') {
		host = p + 1;
		if ((hend = memchr(host, ']', (size_t)(end - host))) == NULL) {
			seterr(err, errlen, "broker URL: '[' without ']' "
			    "around an IPv6 address");
			return BROKER_ERR;
		}
		if (hend + 1 < end) {
			if (hend[1] != ':') {
				seterr(err, errlen, "broker URL: expected ':' "
				    "and a port after the IPv6 address");
				return BROKER_ERR;
			}
			port = hend + 2;
			pend = end;
		}
	} else {
		host = p;
		hend = memchr(p, ':', (size_t)(end - p));
		if (hend != NULL) {
			port = hend + 1;
			pend = end;
		} else
			hend = end;
	}
	n = (size_t)(hend - host);
	if (n == 0) {
		seterr(err, errlen, "broker URL: no host");
		return BROKER_ERR;
	}
	if (n >= sizeof(u->host)) {
		seterr(err, errlen, "broker URL: host longer than %zu bytes",
		    sizeof(u->host) - 1);
		return BROKER_ERR;
	}
	memcpy(u->host, host, n);
	u->host[n] = '\0';

	u->port = 5672;
	if (port != NULL) {
		v = 0;
		if (port == pend || pend - port > 5)
			v = -1;
		for (const char *c = port; v >= 0 && c < pend; c++) {
			if (*c < '0' || *c > '9')
				v = -1;
			else
				v = v * 10 + (*c - '0');
		}
		if (v < 1 || v > 65535) {
			/* Not repeated: it could be a misplaced password. */
			seterr(err, errlen, "broker URL: the port must be a "
			    "number from 1 to 65535");
			return BROKER_ERR;
		}
		u->port = (int)v;
	}

	/* The path, without its leading '/', is the vhost. */
	p = *end == '/' ? end + 1 : end;
	for (i = 0; *p != '\0'; p++) {
		int c = (unsigned char)*p;

		if (c == '/') {
			seterr(err, errlen, "broker URL: the vhost must be one "
			    "path segment; write '/' inside it as %%2f");
			return BROKER_ERR;
		}
		if (c == '%') {
			int hi = hexval((unsigned char)p[1]);
			int lo = hi < 0 ? -1 : hexval((unsigned char)p[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				seterr(err, errlen, "broker URL: bad "
				    "percent-encoding in the vhost (expected "
				    "%%XX, not %%00)");
				return BROKER_ERR;
			}
			c = hi * 16 + lo;
			p += 2;
		}
		if (i + 1 >= sizeof(u->vhost)) {
			seterr(err, errlen, "broker URL: vhost longer than %zu "
			    "bytes", sizeof(u->vhost) - 1);
			return BROKER_ERR;
		}
		u->vhost[i++] = (char)c;
	}
	u->vhost[i] = '\0';
	if (i == 0)
		snprintf(u->vhost, sizeof(u->vhost), "/");
	return 0;
}

/* Resolves REF ("env:NAME"). Returns 0 and sets *OUT to the value (owned
 * by the environment), or BROKER_ERR. Never puts the value in ERR. */
static int
resolve_password(const char *ref, const char **out, char *err, size_t errlen)
{
	const char *name, *c, *v;

	*out = NULL;
	if (ref == NULL || strncmp(ref, "env:", 4) != 0) {
		/* Not repeated: it may be a literal password. */
		seterr(err, errlen, "the broker password must be a reference "
		    "such as env:NAME, not a literal");
		return BROKER_ERR;
	}
	name = ref + 4;
	for (c = name; *c != '\0'; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		    *c == '_' || (c > name && *c >= '0' && *c <= '9')))
			break;
	if (c == name || *c != '\0' || c - name > 128) {
		seterr(err, errlen, "the broker password reference must be "
		    "env:NAME with NAME made of letters, digits and '_'");
		return BROKER_ERR;
	}
	if ((v = getenv(name)) == NULL) {
		seterr(err, errlen, "the broker password reference env:%s "
		    "names an environment variable that is not set", name);
		return BROKER_ERR;
	}
	if (v[0] == '\0') {
		seterr(err, errlen, "the broker password reference env:%s "
		    "names an environment variable that is empty", name);
		return BROKER_ERR;
	}
	*out = v;
	return 0;
}

/* ---- TCP ---- */

static const char *
connect_error(int e, int timeout_ms, char *buf, size_t len)
{
	switch (e) {
	case ECONNREFUSED:
		snprintf(buf, len, "connection refused (is a broker listening "
		    "on that port?)");
		break;
	case ETIMEDOUT:
		snprintf(buf, len, "no answer within %d ms", timeout_ms);
		break;
	case EHOSTUNREACH:
		snprintf(buf, len, "host unreachable");
		break;
	case ENETUNREACH:
		snprintf(buf, len, "network unreachable");
		break;
	default:
		snprintf(buf, len, "%s", strerror(e));
		break;
	}
	return buf;
}

/* Waits until the non-blocking connect on FD completes or DEADLINE passes.
 * Returns 0, ETIMEDOUT, or the socket's pending error. */
static int
wait_connected(int fd, int64_t deadline)
{
	struct pollfd pfd;
	socklen_t sl;
	int64_t left;
	int n, soerr;

	for (;;) {
		left = deadline - now_ms();
		if (left < 0)
			left = 0;
		pfd.fd = fd;
		pfd.events = POLLOUT;
		pfd.revents = 0;
		n = poll(&pfd, 1, (int)left);
		if (n > 0)
			break;
		if (n == 0)
			return ETIMEDOUT;
		if (errno != EINTR)
			return errno;
	}
	soerr = 0;
	sl = sizeof(soerr);
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
		return errno;
	return soerr;
}

/* Connects to U within TIMEOUT_MS. Returns 0 and sets *FDP to a connected,
 * non-blocking socket, or BROKER_ECONNECT with ERR. */
static int
tcp_connect(const struct broker_url *u, int timeout_ms, int *fdp, char *err,
    size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8], why[160] = "no address";
	int64_t deadline = now_ms() + timeout_ms;
	int fd = -1, gai, e, fl, one = 1, rc = BROKER_ECONNECT;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", u->port);
	if ((gai = getaddrinfo(u->host, port, &hints, &res)) != 0) {
		seterr(err, errlen, "connecting to %s:%d: cannot resolve the "
		    "host: %s", u->host, u->port, gai_strerror(gai));
		goto done;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd == -1) {
			connect_error(errno, timeout_ms, why, sizeof(why));
			continue;
		}
		(void)fcntl(fd, F_SETFD, FD_CLOEXEC);
		if ((fl = fcntl(fd, F_GETFL)) == -1 ||
		    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
			connect_error(errno, timeout_ms, why, sizeof(why));
			close(fd);
			fd = -1;
			continue;
		}
		e = connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 ? 0 : errno;
		if (e == EINPROGRESS || e == EINTR)
			e = wait_connected(fd, deadline);
		if (e == 0)
			break;
		connect_error(e, timeout_ms, why, sizeof(why));
		close(fd);
		fd = -1;
		if (e == ETIMEDOUT)
			break;
	}
	if (fd == -1) {
		seterr(err, errlen, "connecting to %s:%d: %s", u->host,
		    u->port, why);
		goto done;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	rc = 0;
done:
	if (res != NULL)
		freeaddrinfo(res);
	return rc;
}

/* ---- losing channels and connections ---- */

static void
pub_free(struct pub *p)
{
	free(p->exchange);
	free(p->routing_key);
	free(p->message_id);
	free(p->detail);
}

static void
pub_settle(struct pub *p, int result, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
pub_settle(struct pub *p, int result, const char *fmt, ...)
{
	va_list ap;
	char buf[WHY_MAX];

	if (p->result != PUB_PENDING)
		return;
	p->result = result;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	free(p->detail);
	p->detail = strdup(buf);
}

static void
queued_free_all(struct broker *b)
{
	struct queued *q, *next;

	for (q = b->qhead; q != NULL; q = next) {
		next = q->next;
		broker_delivery_free(&q->d);
		free(q);
	}
	b->qhead = b->qtail = NULL;
}

/* The channel is gone: unconfirmed publishes get RESULT, deliveries not yet
 * handed out are dropped (the broker redelivers them). */
static void
chan_lost(struct broker *b, int result, const char *why)
{
	size_t i;

	for (i = 0; i < b->npubs; i++)
		pub_settle(&b->pubs[i], result, "%s", why);
	queued_free_all(b);
	b->chan = 0;
	b->consuming = false;
	free(b->ctag);
	b->ctag = NULL;
}

static void
conn_lost(struct broker *b, int result, const char *why)
{
	chan_lost(b, result, why);
	if (b->conn != NULL) {
		amqp_destroy_connection(b->conn);
		b->conn = NULL;
	}
}

static int
code_status(int code)
{
	switch (code) {
	case AMQP_PRECONDITION_FAILED:
		return BROKER_EPRECONDITION;
	case AMQP_CONNECTION_FORCED:
		return BROKER_ELOST;
	default:
		return BROKER_EREFUSED;
	}
}

/* Reads a value out of the broker's "inequivalent arg" text: "the value
 * '1000' of type 'long'", "'true'", or "none" (absent: NULL). */
static const char *
inequivalent_value(const char *s, size_t n, char *buf, size_t len)
{
	char *q;
	size_t m;

	snprintf(buf, len, "%.*s", (int)n, s);
	if (strcmp(buf, "none") == 0)
		return NULL;
	if (strncmp(buf, "the value '", 11) == 0 &&
	    (q = strstr(buf + 11, "' of type '")) != NULL) {
		*q = '\0';
		memmove(buf, buf + 11, strlen(buf + 11) + 1);
	} else if ((m = strlen(buf)) >= 2 && buf[0] == '\'' &&
	    buf[m - 1] == '\'') {
		buf[m - 1] = '\0';
		memmove(buf, buf + 1, m - 1);
	}
	return buf;
}

/* Turns RabbitMQ's "PRECONDITION_FAILED - inequivalent arg 'x-message-ttl'
 * for queue 'q' in vhost '/': received the value '2000' of type 'signedint'
 * but current is the value '1000' of type 'long'" into "queue 'q' exists
 * with x-message-ttl = 1000, the plan wants 2000: ...". Returns false if
 * TEXT is not of that form. */
static bool
explain_inequivalent(const char *text, char *err, size_t errlen)
{
	static const char recv_s[] = "': received ";
	static const char cur_s[] = " but current is ";
	const char *p, *q, *r, *want, *have;
	char arg[128], kind[32], name[300], wbuf[300], hbuf[300];

	if ((p = strstr(text, "inequivalent arg '")) == NULL)
		return false;
	p += strlen("inequivalent arg '");
	if ((q = strstr(p, "' for ")) == NULL)
		return false;
	snprintf(arg, sizeof(arg), "%.*s", (int)(q - p), p);
	p = q + strlen("' for ");
	if ((q = strchr(p, ' ')) == NULL || q[1] != '\'')
		return false;
	snprintf(kind, sizeof(kind), "%.*s", (int)(q - p), p);
	p = q + 2;
	if ((q = strstr(p, "' in vhost '")) == NULL)
		return false;
	snprintf(name, sizeof(name), "%.*s", (int)(q - p), p);
	if ((p = strstr(q, recv_s)) == NULL)
		return false;
	p += strlen(recv_s);
	if ((r = strstr(p, cur_s)) == NULL)
		return false;
	want = inequivalent_value(p, (size_t)(r - p), wbuf, sizeof(wbuf));
	p = r + strlen(cur_s);
	have = inequivalent_value(p, strlen(p), hbuf, sizeof(hbuf));

	if (have == NULL)
		seterr(err, errlen, "%s '%s' exists without %s, the plan wants "
		    "%s = %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, arg, want);
	else if (want == NULL)
		seterr(err, errlen, "%s '%s' exists with %s = %s, the plan has "
		    "no %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, have, arg);
	else
		seterr(err, errlen, "%s '%s' exists with %s = %s, the plan "
		    "wants %s: it cannot be redeclared; delete it or change "
		    "the plan", kind, name, arg, have, want);
	return true;
}

/* Dispatches the frames rabbitmq-c queued while it waited for an answer:
 * they arrived before that answer. */
static void
drain_queued(struct broker *b, const char *what)
{
	amqp_frame_t f;
	struct timeval tv = { 0, 0 };
	char scratch[WHY_MAX];

	while (b->conn != NULL && b->chan != 0 &&
	    amqp_frames_enqueued(b->conn)) {
		if (amqp_simple_wait_frame_noblock(b->conn, &f, &tv) !=
		    AMQP_STATUS_OK)
			return;
		if (dispatch(b, &f, now_ms() + b->timeout_ms, what, scratch,
		    sizeof(scratch)) != 0)
			return;
	}
}

/* The broker closed the channel (C). Returns the status for the call that
 * saw it, with ERR. */
static int
on_channel_close(struct broker *b, const amqp_channel_close_t *c,
    const char *what, char *err, size_t errlen)
{
	amqp_channel_close_ok_t ok;
	char text[TEXT_MAX], why[WHY_MAX];
	int code = c->reply_code, status = code_status(code);

	bytes_text(c->reply_text, text, sizeof(text));
	if (text[0] == '\0')
		snprintf(text, sizeof(text), "code %d", code);
	drain_queued(b, what);
	b->reply_code = code;
	snprintf(b->reply_text, sizeof(b->reply_text), "%s", text);
	if (b->conn != NULL && b->chan != 0) {
		memset(&ok, 0, sizeof(ok));
		if (amqp_send_method(b->conn, b->chan,
		    AMQP_CHANNEL_CLOSE_OK_METHOD, &ok) < 0) {
			snprintf(why, sizeof(why), "the broker closed the "
			    "channel (%s) and the connection was lost", text);
			conn_lost(b, BROKER_ELOST, why);
		}
	}
	snprintf(why, sizeof(why), "the broker closed the channel: %s", text);
	chan_lost(b, status == BROKER_ELOST ? BROKER_ELOST : BROKER_EREFUSED,
	    why);
	if (!explain_inequivalent(text, err, errlen))
		seterr(err, errlen, "%s: %s", what, text);
	return status;
}

static int
on_connection_close(struct broker *b, const amqp_connection_close_t *c,
    const char *what, char *err, size_t errlen)
{
	amqp_connection_close_ok_t ok;
	char text[TEXT_MAX], why[WHY_MAX];
	int code = c->reply_code;

	bytes_text(c->reply_text, text, sizeof(text));
	if (text[0] == '\0')
		snprintf(text, sizeof(text), "code %d", code);
	drain_queued(b, what);
	b->reply_code = code;
	snprintf(b->reply_text, sizeof(b->reply_text), "%s", text);
	if (b->conn != NULL) {
		memset(&ok, 0, sizeof(ok));
		(void)amqp_send_method(b->conn, 0,
		    AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
	}
	snprintf(why, sizeof(why), "the broker closed the connection: %s",
	    text);
	conn_lost(b, BROKER_ELOST, why);
	seterr(err, errlen, "%s: the broker closed the connection: %s (it is "
	    "reopened on the next call)", what, text);
	return code_status(code);
}

/* rabbitmq-c reported CODE (an amqp_status_enum). After a library error the
 * connection is in no state to go on: it is dropped. */
static int
on_library_error(struct broker *b, int code, const char *what, char *err,
    size_t errlen)
{
	char why[WHY_MAX];

	if (code == AMQP_STATUS_TIMEOUT) {
		snprintf(why, sizeof(why), "no answer from the broker within "
		    "%d ms", b->timeout_ms);
		conn_lost(b, BROKER_ETIMEOUT, why);
		seterr(err, errlen, "%s: %s (the connection is reopened on the "
		    "next call)", what, why);
		return BROKER_ETIMEOUT;
	}
	snprintf(why, sizeof(why), "connection to %s:%d lost: %s", b->url.host,
	    b->url.port, amqp_error_string2(code));
	conn_lost(b, BROKER_ELOST, why);
	seterr(err, errlen, "%s: %s (it is reopened on the next call)", what,
	    why);
	return BROKER_ELOST;
}

/* Checks R, the answer to the request WHAT just made. Returns 0, or the
 * failure's status with ERR. */
static int
rpc_result(struct broker *b, amqp_rpc_reply_t r, const char *what, char *err,
    size_t errlen)
{
	char why[WHY_MAX];

	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		return 0;
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD)
			return on_channel_close(b, r.reply.decoded, what, err,
			    errlen);
		if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD)
			return on_connection_close(b, r.reply.decoded, what,
			    err, errlen);
		snprintf(why, sizeof(why), "unexpected answer (method 0x%08x)",
		    (unsigned)r.reply.id);
		conn_lost(b, BROKER_ELOST, why);
		seterr(err, errlen, "%s: %s", what, why);
		return BROKER_ELOST;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		return on_library_error(b, r.library_error, what, err, errlen);
	default:
		return on_library_error(b, AMQP_STATUS_UNEXPECTED_STATE, what,
		    err, errlen);
	}
}

/* ---- frames ---- */

/* Reads the next frame, waiting until DEADLINE (monotonic ms) at most.
 * Returns an amqp_status_enum. Everything read from earlier frames must
 * have been copied: their memory is recycled here. */
static int
next_frame(struct broker *b, int64_t deadline, amqp_frame_t *f)
{
	struct timeval tv;
	int64_t left = deadline - now_ms();

	if (left < 0)
		left = 0;
	tv.tv_sec = (time_t)(left / 1000);
	tv.tv_usec = (suseconds_t)(left % 1000) * 1000;
	amqp_maybe_release_buffers(b->conn);
	return amqp_simple_wait_frame_noblock(b->conn, f, &tv);
}

static bool
field_int(const amqp_field_value_t *v, int64_t *out)
{
	switch (v->kind) {
	case AMQP_FIELD_KIND_I8:
		*out = v->value.i8;
		return true;
	case AMQP_FIELD_KIND_U8:
		*out = v->value.u8;
		return true;
	case AMQP_FIELD_KIND_I16:
		*out = v->value.i16;
		return true;
	case AMQP_FIELD_KIND_U16:
		*out = v->value.u16;
		return true;
	case AMQP_FIELD_KIND_I32:
		*out = v->value.i32;
		return true;
	case AMQP_FIELD_KIND_U32:
		*out = v->value.u32;
		return true;
	case AMQP_FIELD_KIND_I64:
		*out = v->value.i64;
		return true;
	case AMQP_FIELD_KIND_U64:
	case AMQP_FIELD_KIND_TIMESTAMP:
		if (v->value.u64 > (uint64_t)INT64_MAX)
			return false;
		*out = (int64_t)v->value.u64;
		return true;
	default:
		return false;
	}
}

static bool
field_is_str(const amqp_field_value_t *v)
{
	return v->kind == AMQP_FIELD_KIND_UTF8 ||
	    v->kind == AMQP_FIELD_KIND_BYTES;
}

/* Fills X from one x-death entry. Returns 0, or -1 out of memory. */
static int
convert_death(const amqp_table_t *t, struct broker_death *x)
{
	const amqp_table_entry_t *e;
	int i, j;

	for (i = 0; i < t->num_entries; i++) {
		e = &t->entries[i];
		if (field_is_str(&e->value)) {
			char **dst = NULL;

			if (bytes_is(e->key, "queue"))
				dst = &x->queue;
			else if (bytes_is(e->key, "reason"))
				dst = &x->reason;
			else if (bytes_is(e->key, "exchange"))
				dst = &x->exchange;
			if (dst != NULL && *dst == NULL &&
			    (*dst = dup_bytes(e->value.value.bytes)) == NULL)
				return -1;
		} else if (bytes_is(e->key, "count"))
			(void)field_int(&e->value, &x->count);
		else if (bytes_is(e->key, "routing-keys") &&
		    e->value.kind == AMQP_FIELD_KIND_ARRAY &&
		    x->routing_keys == NULL) {
			const amqp_array_t *a = &e->value.value.array;

			if (a->num_entries <= 0)
				continue;
			x->routing_keys = calloc((size_t)a->num_entries,
			    sizeof(char *));
			if (x->routing_keys == NULL)
				return -1;
			for (j = 0; j < a->num_entries; j++) {
				if (!field_is_str(&a->entries[j]))
					continue;
				x->routing_keys[x->nrouting_keys] =
				    dup_bytes(a->entries[j].value.bytes);
				if (x->routing_keys[x->nrouting_keys++] == NULL)
					return -1;
			}
		}
	}
	return 0;
}

/* Copies the message properties P into D. Returns 0, or -1 out of memory. */
static int
convert_properties(const amqp_basic_properties_t *p, struct broker_delivery *d)
{
	const amqp_table_t *t = &p->headers;
	const amqp_table_entry_t *e;
	int i, j;

	if ((p->_flags & AMQP_BASIC_MESSAGE_ID_FLAG) &&
	    (d->message_id = dup_bytes(p->message_id)) == NULL)
		return -1;
	if ((p->_flags & AMQP_BASIC_CONTENT_TYPE_FLAG) &&
	    (d->content_type = dup_bytes(p->content_type)) == NULL)
		return -1;
	if (p->_flags & AMQP_BASIC_DELIVERY_MODE_FLAG)
		d->delivery_mode = p->delivery_mode;
	if (!(p->_flags & AMQP_BASIC_HEADERS_FLAG) || t->num_entries <= 0)
		return 0;

	d->headers = calloc((size_t)t->num_entries, sizeof(*d->headers));
	if (d->headers == NULL)
		return -1;
	for (i = 0; i < t->num_entries; i++) {
		struct broker_header *h = &d->headers[d->nheaders++];

		e = &t->entries[i];
		if ((h->key = dup_bytes(e->key)) == NULL)
			return -1;
		if (field_is_str(&e->value)) {
			h->kind = BROKER_KIND_STR;
			if ((h->str = dup_bytes(e->value.value.bytes)) == NULL)
				return -1;
		} else if (e->value.kind == AMQP_FIELD_KIND_BOOLEAN) {
			h->kind = BROKER_KIND_BOOL;
			h->num = e->value.value.boolean ? 1 : 0;
		} else if (field_int(&e->value, &h->num))
			h->kind = BROKER_KIND_INT;
		else
			h->kind = BROKER_KIND_OTHER;

		if (bytes_is(e->key, "x-death") && d->deaths == NULL &&
		    e->value.kind == AMQP_FIELD_KIND_ARRAY &&
		    e->value.value.array.num_entries > 0) {
			const amqp_array_t *a = &e->value.value.array;

			d->deaths = calloc((size_t)a->num_entries,
			    sizeof(*d->deaths));
			if (d->deaths == NULL)
				return -1;
			for (j = 0; j < a->num_entries; j++) {
				if (a->entries[j].kind != AMQP_FIELD_KIND_TABLE)
					continue;
				if (convert_death(&a->entries[j].value.table,
				    &d->deaths[d->ndeaths++]) != 0)
					return -1;
			}
		}
	}
	return 0;
}

/* Reads the content (header and body frames) of the message whose method
 * frame was just read, into D. Frames rabbitmq-c queued before that method
 * arrived are dispatched first. Returns 0, or a negative code with ERR. */
static int
read_content(struct broker *b, int64_t deadline, struct broker_delivery *d,
    const char *what, char *err, size_t errlen)
{
	amqp_frame_t f;
	uint64_t size = 0, got = 0;
	bool have_header = false;
	char why[WHY_MAX];
	int rc;

	for (;;) {
		if (have_header && got == size)
			return 0;
		if ((rc = next_frame(b, deadline, &f)) != AMQP_STATUS_OK) {
			if (rc == AMQP_STATUS_TIMEOUT) {
				snprintf(why, sizeof(why), "a message's "
				    "content did not arrive within the timeout"
				    );
				conn_lost(b, BROKER_ETIMEOUT, why);
				seterr(err, errlen, "%s: %s (the connection is "
				    "reopened on the next call)", what, why);
				return BROKER_ETIMEOUT;
			}
			return on_library_error(b, rc, what, err, errlen);
		}
		if (f.channel == 0 || f.channel != b->chan ||
		    f.frame_type == AMQP_FRAME_METHOD) {
			if (have_header && f.channel == b->chan) {
				conn_lost(b, BROKER_ELOST, "protocol error");
				seterr(err, errlen, "%s: a method frame "
				    "arrived inside a message's content", what);
				return BROKER_ELOST;
			}
			rc = dispatch(b, &f, deadline, what, err, errlen);
			if (rc != 0)
				return rc;
			if (b->conn == NULL || b->chan == 0) {
				seterr(err, errlen, "%s: the channel closed",
				    what);
				return BROKER_ELOST;
			}
			continue;
		}
		if (f.frame_type == AMQP_FRAME_HEADER && !have_header) {
			size = f.payload.properties.body_size;
			if (size > SIZE_MAX - 1 ||
			    (d->body = malloc((size_t)size + 1)) == NULL)
				goto nomem;
			d->body[0] = '\0';
			if (convert_properties(f.payload.properties.decoded,
			    d) != 0)
				goto nomem;
			have_header = true;
		} else if (f.frame_type == AMQP_FRAME_BODY && have_header &&
		    f.payload.body_fragment.len <= size - got) {
			memcpy(d->body + got, f.payload.body_fragment.bytes,
			    f.payload.body_fragment.len);
			got += f.payload.body_fragment.len;
			d->body[got] = '\0';
			d->len = (size_t)got;
		} else {
			conn_lost(b, BROKER_ELOST, "protocol error");
			seterr(err, errlen, "%s: unexpected frame (type %d) in "
			    "a message's content", what, f.frame_type);
			return BROKER_ELOST;
		}
	}
nomem:
	seterr(err, errlen, "%s: out of memory reading a message", what);
	conn_lost(b, BROKER_ELOST, "out of memory");
	return BROKER_ERR;
}

static void
on_ack(struct broker *b, uint64_t tag, bool multiple, bool nack)
{
	size_t i;
	struct pub *p;

	for (i = 0; i < b->npubs; i++) {
		p = &b->pubs[i];
		if (p->result != PUB_PENDING ||
		    (multiple ? p->tag > tag : p->tag != tag))
			continue;
		if (nack)
			pub_settle(p, BROKER_ENACKED, "nacked by the broker");
		else if (p->returned)
			pub_settle(p, BROKER_ERETURNED, "returned: no route");
		else
			p->result = 0;
	}
}

/* basic.return: the broker sends it before the ack, without a delivery
 * tag. Returns come in publish order, so the message is the earliest
 * pending mandatory one with the same exchange, routing key and message
 * id. */
static int
on_return(struct broker *b, amqp_frame_t *f, int64_t deadline, const char *what,
    char *err, size_t errlen)
{
	const amqp_basic_return_t *m = f->payload.method.decoded;
	struct broker_delivery d;
	struct pub *p;
	size_t i;
	int rc;

	memset(&d, 0, sizeof(d));
	d.exchange = dup_bytes(m->exchange);
	d.routing_key = dup_bytes(m->routing_key);
	if (d.exchange == NULL || d.routing_key == NULL) {
		broker_delivery_free(&d);
		seterr(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	if ((rc = read_content(b, deadline, &d, what, err, errlen)) != 0) {
		broker_delivery_free(&d);
		return rc;
	}
	for (i = 0; i < b->npubs; i++) {
		p = &b->pubs[i];
		if (p->result == PUB_PENDING && p->mandatory && !p->returned &&
		    strcmp(p->exchange, d.exchange) == 0 &&
		    strcmp(p->routing_key, d.routing_key) == 0 &&
		    streq_null(p->message_id, d.message_id)) {
			p->returned = true;
			break;
		}
	}
	broker_delivery_free(&d);
	return 0;
}

static int
on_deliver(struct broker *b, amqp_frame_t *f, int64_t deadline,
    const char *what, char *err, size_t errlen)
{
	const amqp_basic_deliver_t *m = f->payload.method.decoded;
	struct queued *q;
	bool ours;
	int rc;

	ours = b->consuming && b->ctag != NULL && bytes_is(m->consumer_tag,
	    b->ctag);
	if ((q = calloc(1, sizeof(*q))) == NULL) {
		seterr(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	q->d.tag = m->delivery_tag;
	q->d.redelivered = m->redelivered;
	q->d.exchange = dup_bytes(m->exchange);
	q->d.routing_key = dup_bytes(m->routing_key);
	if (q->d.exchange == NULL || q->d.routing_key == NULL) {
		rc = BROKER_ERR;
		seterr(err, errlen, "%s: out of memory", what);
		goto fail;
	}
	if ((rc = read_content(b, deadline, &q->d, what, err, errlen)) != 0)
		goto fail;
	if (!ours) {
		/* A consumer cancelled meanwhile: give it back. */
		(void)amqp_basic_reject(b->conn, b->chan, q->d.tag, 1);
		broker_delivery_free(&q->d);
		free(q);
		return 0;
	}
	q->d.epoch = b->epoch;
	q->d.unacked = true;
	if (b->qtail != NULL)
		b->qtail->next = q;
	else
		b->qhead = q;
	b->qtail = q;
	return 0;
fail:
	broker_delivery_free(&q->d);
	free(q);
	return rc;
}

/* Handles one frame the broker sent on its own. Content-bearing methods
 * read their content, until DEADLINE at most. Returns 0, or a negative code
 * with ERR when the frame closed the channel or the connection. */
static int
dispatch(struct broker *b, amqp_frame_t *f, int64_t deadline, const char *what,
    char *err, size_t errlen)
{
	if (f->frame_type != AMQP_FRAME_METHOD)
		return 0;       /* content of a message on a closed channel */
	if (f->channel == 0) {
		if (f->payload.method.id == AMQP_CONNECTION_CLOSE_METHOD)
			return on_connection_close(b,
			    f->payload.method.decoded, what, err, errlen);
		return 0;
	}
	if (f->channel != b->chan)
		return 0;       /* left over from a closed channel */

	switch (f->payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		const amqp_basic_ack_t *m = f->payload.method.decoded;

		on_ack(b, m->delivery_tag, m->multiple, false);
		return 0;
	}
	case AMQP_BASIC_NACK_METHOD: {
		const amqp_basic_nack_t *m = f->payload.method.decoded;

		on_ack(b, m->delivery_tag, m->multiple, true);
		return 0;
	}
	case AMQP_BASIC_RETURN_METHOD:
		return on_return(b, f, deadline, what, err, errlen);
	case AMQP_BASIC_DELIVER_METHOD:
		return on_deliver(b, f, deadline, what, err, errlen);
	case AMQP_BASIC_CANCEL_METHOD:
		if (b->consume_queue != NULL) {
			char buf[WHY_MAX];

			snprintf(buf, sizeof(buf), "the broker cancelled the "
			    "consumer on queue '%s' (the queue was deleted)",
			    b->consume_queue);
			free(b->consumer_error);
			b->consumer_error = strdup(buf);
			free(b->consume_queue);
			b->consume_queue = NULL;
			free(b->ctag);
			b->ctag = NULL;
			b->consuming = false;
		}
		return 0;
	case AMQP_CHANNEL_CLOSE_METHOD:
		return on_channel_close(b, f->payload.method.decoded, what, err,
		    errlen);
	default:
		return 0;
	}
}

/* Dispatches whatever already arrived, without waiting: a close that came
 * between calls, confirms, deliveries. */
static void
drain(struct broker *b)
{
	amqp_frame_t f;
	char scratch[WHY_MAX];
	int rc;

	while (b->conn != NULL && b->chan != 0) {
		rc = next_frame(b, 0, &f);
		if (rc == AMQP_STATUS_TIMEOUT)
			return;
		if (rc != AMQP_STATUS_OK) {
			on_library_error(b, rc, "", scratch, sizeof(scratch));
			return;
		}
		if (dispatch(b, &f, now_ms() + b->timeout_ms, "", scratch,
		    sizeof(scratch)) != 0)
			return;
	}
}

/* ---- connection and channel ---- */

static int
login_error(struct broker *b, amqp_rpc_reply_t r, char *err, size_t errlen)
{
	char text[WHY_MAX] = "";
	int code = 0, rc;

	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
		const amqp_connection_close_t *c = r.reply.decoded;

		code = c->reply_code;
		bytes_text(c->reply_text, text, sizeof(text));
	}
	b->reply_code = code;
	if (code == AMQP_ACCESS_REFUSED) {
		seterr(err, errlen, "logging in to %s:%d as '%s': the broker "
		    "refused the username or password (%s)", b->url.host,
		    b->url.port, b->username, text);
		rc = BROKER_EAUTH;
	} else if (code == AMQP_NOT_ALLOWED) {
		seterr(err, errlen, "opening vhost '%s' on %s:%d as '%s': %s",
		    b->url.vhost, b->url.host, b->url.port, b->username, text);
		rc = BROKER_EAUTH;
	} else if (code != 0) {
		seterr(err, errlen, "logging in to %s:%d: %s", b->url.host,
		    b->url.port, text);
		rc = code_status(code);
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    r.library_error == AMQP_STATUS_TIMEOUT) {
		seterr(err, errlen, "logging in to %s:%d: no answer within %d "
		    "ms", b->url.host, b->url.port, b->timeout_ms);
		rc = BROKER_ETIMEOUT;
	} else if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION &&
	    r.library_error == AMQP_STATUS_CONNECTION_CLOSED) {
		seterr(err, errlen, "logging in to %s:%d as '%s': the broker "
		    "closed the connection (wrong username or password, or no "
		    "access to vhost '%s'?)", b->url.host, b->url.port,
		    b->username, b->url.vhost);
		rc = BROKER_EAUTH;
	} else {
		const char *why = "unexpected answer";

		if (r.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION)
			why = amqp_error_string2(r.library_error);
		seterr(err, errlen, "logging in to %s:%d: %s", b->url.host,
		    b->url.port, why);
		rc = BROKER_ELOST;
	}
	if (code != 0) {
		amqp_connection_close_ok_t ok;

		memset(&ok, 0, sizeof(ok));
		(void)amqp_send_method(b->conn, 0,
		    AMQP_CONNECTION_CLOSE_OK_METHOD, &ok);
	}
	amqp_destroy_connection(b->conn);
	b->conn = NULL;
	return rc;
}

static int
connect_broker(struct broker *b, char *err, size_t errlen)
{
	amqp_socket_t *sock;
	amqp_rpc_reply_t r;
	amqp_table_entry_t props[2], caps[1];
	amqp_table_t props_t, caps_t;
	struct timeval tv;
	const char *password;
	int fd = -1, rc;

	rc = resolve_password(b->password_ref, &password, err, errlen);
	if (rc != 0)
		return rc;
	if ((rc = tcp_connect(&b->url, b->timeout_ms, &fd, err, errlen)) != 0)
		return rc;
	if ((b->conn = amqp_new_connection()) == NULL ||
	    (sock = amqp_tcp_socket_new(b->conn)) == NULL) {
		close(fd);
		if (b->conn != NULL)
			amqp_destroy_connection(b->conn);
		b->conn = NULL;
		seterr(err, errlen, "connecting to %s:%d: out of memory",
		    b->url.host, b->url.port);
		return BROKER_ERR;
	}
	amqp_tcp_socket_set_sockfd(sock, fd);   /* the connection owns it now */

	tv.tv_sec = b->timeout_ms / 1000;
	tv.tv_usec = (b->timeout_ms % 1000) * 1000;
	(void)amqp_set_handshake_timeout(b->conn, &tv);
	(void)amqp_set_rpc_timeout(b->conn, &tv);

	/* Ask to be told when the broker cancels our consumer. */
	caps[0].key = amqp_cstring_bytes("consumer_cancel_notify");
	caps[0].value.kind = AMQP_FIELD_KIND_BOOLEAN;
	caps[0].value.value.boolean = 1;
	caps_t.num_entries = 1;
	caps_t.entries = caps;
	props[0].key = amqp_cstring_bytes("connection_name");
	props[0].value.kind = AMQP_FIELD_KIND_UTF8;
	props[0].value.value.bytes = amqp_cstring_bytes("cutover");
	props[1].key = amqp_cstring_bytes("capabilities");
	props[1].value.kind = AMQP_FIELD_KIND_TABLE;
	props[1].value.value.table = caps_t;
	props_t.num_entries = 2;
	props_t.entries = props;

	/* Heartbeats off: rabbitmq-c only answers them while inside a call,
	 * and the engine may hold an idle handle for minutes. A dead peer is
	 * found by the request timeout, or by drain() between calls. */
	r = amqp_login_with_properties(b->conn, b->url.vhost, 0,
	    AMQP_DEFAULT_FRAME_SIZE, 0, &props_t, AMQP_SASL_METHOD_PLAIN,
	    b->username, password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL)
		return login_error(b, r, err, errlen);
	b->channel_max = amqp_get_channel_max(b->conn);
	if (b->channel_max <= 0 || b->channel_max > 65535)
		b->channel_max = 65535;
	b->last_chan = 0;
	b->chan = 0;
	return 0;
}

static int
subscribe(struct broker *b, char *err, size_t errlen)
{
	amqp_basic_consume_ok_t *ok;
	char what[WHAT_MAX];
	int rc;

	snprintf(what, sizeof(what), "consuming from queue '%s'",
	    b->consume_queue);
	if (b->prefetch > 0 &&
	    amqp_basic_qos(b->conn, b->chan, 0, b->prefetch, 0) == NULL &&
	    (rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
	    errlen)) != 0)
		return rc;
	ok = amqp_basic_consume(b->conn, b->chan,
	    amqp_cstring_bytes(b->consume_queue), amqp_empty_bytes, 0, 0, 0,
	    amqp_empty_table);
	if (ok == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	free(b->ctag);
	if ((b->ctag = dup_bytes(ok->consumer_tag)) == NULL) {
		seterr(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	b->consuming = true;
	return 0;
}

/* Opens the next channel number, in confirm mode, and resubscribes the
 * consumer. A fresh number each time lets frames left over from an earlier
 * channel be told apart and ignored. */
static int
open_channel(struct broker *b, char *err, size_t errlen)
{
	amqp_channel_t ch;
	int rc;

	ch = b->last_chan >= b->channel_max ? 1 : b->last_chan + 1;
	b->last_chan = ch;
	b->chan = ch;
	b->epoch++;
	b->next_tag = 1;
	if (amqp_channel_open(b->conn, ch) == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "opening a channel", err, errlen);
	if (amqp_confirm_select(b->conn, ch) == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn),
		    "enabling publisher confirms", err, errlen);
	if (b->consume_queue != NULL && (rc = subscribe(b, err, errlen)) != 0) {
		char buf[WHY_MAX];

		/* The call under way goes on; broker_next reports this. */
		snprintf(buf, sizeof(buf), "resubscribing after the channel "
		    "was reopened: %s", err);
		free(b->consumer_error);
		b->consumer_error = strdup(buf);
		free(b->consume_queue);
		b->consume_queue = NULL;
		if (b->conn == NULL)
			return rc;
	}
	return 0;
}

/* Every call starts here: reconnect or reopen the channel if an earlier
 * call lost it, then dispatch what arrived in between. */
static int
begin(struct broker *b, char *err, size_t errlen)
{
	int tries, rc = BROKER_ELOST;

	for (tries = 0; tries < 3; tries++) {
		if (b->conn == NULL &&
		    (rc = connect_broker(b, err, errlen)) != 0)
			return rc;
		if (b->chan == 0 && (rc = open_channel(b, err, errlen)) != 0)
			continue;
		drain(b);
		if (b->conn != NULL && b->chan != 0) {
			b->reply_code = 0;
			b->reply_text[0] = '\0';
			amqp_maybe_release_buffers(b->conn);
			return 0;
		}
		rc = BROKER_ELOST;
		seterr(err, errlen, "%s:%d: the channel closed as soon as it "
		    "was opened", b->url.host, b->url.port);
	}
	return rc;
}

int
broker_open(const char *url, const char *username, const char *password_ref,
    int timeout_ms, struct broker **out, char *err, size_t errlen)
{
	struct broker *b = NULL;
	const char *password;
	int rc;

	*out = NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL) {
		seterr(err, errlen, "opening the broker connection: out of "
		    "memory");
		return BROKER_ERR;
	}
	if ((rc = broker_url_parse(url, &b->url, err, errlen)) != 0)
		goto done;
	rc = BROKER_ERR;
	if (username == NULL || username[0] == '\0') {
		seterr(err, errlen, "connecting to %s:%d: a username is "
		    "required", b->url.host, b->url.port);
		goto done;
	}
	if (timeout_ms <= 0) {
		seterr(err, errlen, "connecting to %s:%d: the timeout must be "
		    "positive", b->url.host, b->url.port);
		goto done;
	}
	if ((rc = resolve_password(password_ref, &password, err, errlen)) != 0)
		goto done;
	b->timeout_ms = timeout_ms;
	if ((b->username = strdup(username)) == NULL ||
	    (b->password_ref = strdup(password_ref)) == NULL) {
		seterr(err, errlen, "opening the broker connection: out of "
		    "memory");
		rc = BROKER_ERR;
		goto done;
	}
	if ((rc = connect_broker(b, err, errlen)) != 0)
		goto done;
	if ((rc = open_channel(b, err, errlen)) != 0)
		goto done;
	*out = b;
	b = NULL;
done:
	broker_close(b);
	return rc;
}

void
broker_close(struct broker *b)
{
	size_t i;

	if (b == NULL)
		return;
	if (b->conn != NULL) {
		(void)amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(b->conn);
	}
	for (i = 0; i < b->npubs; i++)
		pub_free(&b->pubs[i]);
	free(b->pubs);
	queued_free_all(b);
	free(b->consume_queue);
	free(b->ctag);
	free(b->consumer_error);
	free(b->username);
	free(b->password_ref);
	free(b);
}

int
broker_reply_code(const struct broker *b)
{
	return b->reply_code;
}

/* ---- topology ---- */

/* Builds T from ARGS; *ENTRIES (free it) points into ARGS. */
static int
make_table(const struct topology_arg *args, size_t nargs,
    amqp_table_entry_t **entries, amqp_table_t *t, const char *what, char *err,
    size_t errlen)
{
	size_t i;

	*entries = NULL;
	t->num_entries = 0;
	t->entries = NULL;
	if (nargs == 0)
		return 0;
	if (args == NULL || nargs > 1024) {
		seterr(err, errlen, "%s: bad argument list", what);
		return BROKER_ERR;
	}
	if ((*entries = calloc(nargs, sizeof(**entries))) == NULL) {
		seterr(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	for (i = 0; i < nargs; i++) {
		amqp_table_entry_t *e = &(*entries)[i];

		if (args[i].key[0] == '\0') {
			seterr(err, errlen, "%s: an argument has no name",
			    what);
			free(*entries);
			*entries = NULL;
			return BROKER_ERR;
		}
		e->key = amqp_cstring_bytes(args[i].key);
		if (args[i].is_int) {
			/* RabbitMQ takes integer arguments (x-message-ttl,
			 * ...) of any integer type, and a signed int and a
			 * long of one value are equivalent on redeclare; a
			 * long long holds the ladder's TTLs. */
			e->value.kind = AMQP_FIELD_KIND_I64;
			e->value.value.i64 = args[i].num;
		} else {
			e->value.kind = AMQP_FIELD_KIND_UTF8;
			e->value.value.bytes = amqp_cstring_bytes(args[i].str);
		}
	}
	t->num_entries = (int)nargs;
	t->entries = *entries;
	return 0;
}

int
broker_exchange_declare(struct broker *b, const char *name, const char *type,
    bool durable, const struct topology_arg *args, size_t nargs, char *err,
    size_t errlen)
{
	amqp_table_entry_t *entries = NULL;
	amqp_table_t t;
	char what[WHAT_MAX];
	int rc;

	if ((rc = check_name("declaring exchange", name, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "declaring exchange '%s'", name);
	if (type == NULL || type[0] == '\0' || strlen(type) > 255) {
		seterr(err, errlen, "%s: an exchange type is required", what);
		return BROKER_ERR;
	}
	if ((rc = make_table(args, nargs, &entries, &t, what, err,
	    errlen)) != 0)
		return rc;
	if ((rc = begin(b, err, errlen)) != 0)
		goto done;
	if (amqp_exchange_declare(b->conn, b->chan, amqp_cstring_bytes(name),
	    amqp_cstring_bytes(type), 0, durable, 0, 0, t) == NULL)
		rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
done:
	free(entries);
	return rc;
}

int
broker_queue_declare(struct broker *b, const char *name, bool durable,
    const struct topology_arg *args, size_t nargs, char *err, size_t errlen)
{
	amqp_table_entry_t *entries = NULL;
	amqp_table_t t;
	char what[WHAT_MAX];
	int rc;

	if ((rc = check_name("declaring queue", name, false, err, errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "declaring queue '%s'", name);
	if ((rc = make_table(args, nargs, &entries, &t, what, err,
	    errlen)) != 0)
		return rc;
	if ((rc = begin(b, err, errlen)) != 0)
		goto done;
	if (amqp_queue_declare(b->conn, b->chan, amqp_cstring_bytes(name), 0,
	    durable, 0, 0, t) == NULL)
		rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
done:
	free(entries);
	return rc;
}

enum bind_op { BIND_QUEUE, UNBIND_QUEUE, BIND_EXCHANGE, UNBIND_EXCHANGE };

static int
bind_op(struct broker *b, enum bind_op op, const char *dest, const char *source,
    const char *key, char *err, size_t errlen)
{
	amqp_bytes_t d, s, k;
	char what[WHAT_MAX];
	const char *verb = (op == BIND_QUEUE || op == BIND_EXCHANGE) ?
	    "binding" : "unbinding";
	const char *kind = (op == BIND_QUEUE || op == UNBIND_QUEUE) ? "queue" :
	    "exchange";
	void *ok = NULL;
	int rc;

	if ((rc = check_name(verb, dest, false, err, errlen)) != 0 ||
	    (rc = check_name(verb, source, false, err, errlen)) != 0 ||
	    (rc = check_name(verb, key == NULL ? "" : key, true, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "%s %s '%s' %s exchange '%s' with key '%s'"
	    , verb, kind, dest, op == BIND_QUEUE || op == BIND_EXCHANGE ? "to"
	    : "from", source, key == NULL ? "" : key);
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	d = amqp_cstring_bytes(dest);
	s = amqp_cstring_bytes(source);
	k = amqp_cstring_bytes(key == NULL ? "" : key);
	switch (op) {
	case BIND_QUEUE:
		ok = amqp_queue_bind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case UNBIND_QUEUE:
		ok = amqp_queue_unbind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case BIND_EXCHANGE:
		ok = amqp_exchange_bind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	case UNBIND_EXCHANGE:
		ok = amqp_exchange_unbind(b->conn, b->chan, d, s, k,
		    amqp_empty_table);
		break;
	}
	if (ok == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	return 0;
}

int
broker_queue_bind(struct broker *b, const char *queue, const char *exchange,
    const char *key, char *err, size_t errlen)
{
	return bind_op(b, BIND_QUEUE, queue, exchange, key, err, errlen);
}

int
broker_queue_unbind(struct broker *b, const char *queue, const char *exchange,
    const char *key, char *err, size_t errlen)
{
	return bind_op(b, UNBIND_QUEUE, queue, exchange, key, err, errlen);
}

int
broker_exchange_bind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen)
{
	return bind_op(b, BIND_EXCHANGE, destination, source, key, err, errlen);
}

int
broker_exchange_unbind(struct broker *b, const char *destination,
    const char *source, const char *key, char *err, size_t errlen)
{
	return bind_op(b, UNBIND_EXCHANGE, destination, source, key, err,
	    errlen);
}

int
broker_queue_inspect(struct broker *b, const char *name,
    struct broker_queue_info *info, char *err, size_t errlen)
{
	amqp_queue_declare_ok_t *ok;
	char what[WHAT_MAX], scratch[WHY_MAX];
	int rc;

	if (info != NULL)
		memset(info, 0, sizeof(*info));
	if ((rc = check_name("checking queue", name, false, err, errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "checking queue '%s'", name);
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	ok = amqp_queue_declare(b->conn, b->chan, amqp_cstring_bytes(name), 1,
	    0, 0, 0, amqp_empty_table);
	if (ok == NULL) {
		rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, scratch,
		    sizeof(scratch));
		if (b->reply_code == AMQP_NOT_FOUND && rc == BROKER_EREFUSED)
			return BROKER_NOT_FOUND;
		seterr(err, errlen, "%s", scratch);
		return rc;
	}
	if (info != NULL) {
		info->messages = ok->message_count;
		info->consumers = ok->consumer_count;
	}
	return 0;
}

int
broker_exchange_exists(struct broker *b, const char *name, char *err,
    size_t errlen)
{
	char what[WHAT_MAX], scratch[WHY_MAX];
	int rc;

	if ((rc = check_name("checking exchange", name, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "checking exchange '%s'", name);
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	if (amqp_exchange_declare(b->conn, b->chan, amqp_cstring_bytes(name),
	    amqp_cstring_bytes("topic"), 1, 0, 0, 0, amqp_empty_table) != NULL)
		return 0;
	rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, scratch,
	    sizeof(scratch));
	if (b->reply_code == AMQP_NOT_FOUND && rc == BROKER_EREFUSED)
		return BROKER_NOT_FOUND;
	seterr(err, errlen, "%s", scratch);
	return rc;
}

int
broker_queue_delete(struct broker *b, const char *name, int flags,
    uint32_t *purged, char *err, size_t errlen)
{
	amqp_queue_delete_ok_t *ok;
	char what[WHAT_MAX], text[WHY_MAX];
	const char *cond;
	int rc;

	if (purged != NULL)
		*purged = 0;
	if ((rc = check_name("deleting queue", name, false, err, errlen)) != 0)
		return rc;
	if ((flags & BROKER_IF_EMPTY) && (flags & BROKER_IF_UNUSED))
		cond = " if empty and unused";
	else if (flags & BROKER_IF_EMPTY)
		cond = " if empty";
	else if (flags & BROKER_IF_UNUSED)
		cond = " if unused";
	else
		cond = "";
	snprintf(what, sizeof(what), "deleting queue '%s'%s", name, cond);
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	ok = amqp_queue_delete(b->conn, b->chan, amqp_cstring_bytes(name),
	    (flags & BROKER_IF_UNUSED) != 0, (flags & BROKER_IF_EMPTY) != 0);
	if (ok == NULL) {
		rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, text,
		    sizeof(text));
		if (b->reply_code == AMQP_NOT_IMPLEMENTED && flags != 0)
			seterr(err, errlen, "%s: quorum queues do not support "
			    "if-empty/if-unused delete (the broker answered "
			    "\"%s\" and closed the connection, which is "
			    "reopened on the next call); check that the queue "
			    "is empty, then delete it without conditions",
			    what, b->reply_text);
		else
			seterr(err, errlen, "%s", text);
		return rc;
	}
	if (purged != NULL)
		*purged = ok->message_count;
	return 0;
}

int
broker_exchange_delete(struct broker *b, const char *name, bool if_unused,
    char *err, size_t errlen)
{
	char what[WHAT_MAX];
	int rc;

	if ((rc = check_name("deleting exchange", name, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "deleting exchange '%s'%s", name,
	    if_unused ? " if unused" : "");
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	if (amqp_exchange_delete(b->conn, b->chan, amqp_cstring_bytes(name),
	    if_unused) == NULL)
		return rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	return 0;
}

/* ---- publishing ---- */

static int
publish_send(struct broker *b, const struct broker_message *m, char *err,
    size_t errlen)
{
	amqp_basic_properties_t props;
	amqp_table_entry_t *entries = NULL;
	amqp_bytes_t body;
	struct pub *p;
	const char *exchange = m->exchange == NULL ? "" : m->exchange;
	const char *key = m->routing_key == NULL ? "" : m->routing_key;
	char what[WHAT_MAX], xl[300];
	size_t i;
	int rc;

	exchange_label(exchange, xl, sizeof(xl));
	snprintf(what, sizeof(what), "publishing to %s with key '%s'", xl, key);
	if ((rc = check_name("publishing", exchange, true, err, errlen)) != 0 ||
	    (rc = check_name("publishing with routing key", key, true, err,
	    errlen)) != 0)
		return rc;
	if (m->len > 0 && m->body == NULL) {
		seterr(err, errlen, "%s: no body", what);
		return BROKER_ERR;
	}
	if (b->npubs == b->pubcap) {
		size_t cap = b->pubcap == 0 ? 16 : b->pubcap * 2;
		struct pub *np = realloc(b->pubs, cap * sizeof(*np));

		if (np == NULL) {
			seterr(err, errlen, "%s: out of memory", what);
			return BROKER_ERR;
		}
		b->pubs = np;
		b->pubcap = cap;
	}
	p = &b->pubs[b->npubs];
	memset(p, 0, sizeof(*p));
	p->result = PUB_PENDING;
	p->mandatory = m->mandatory;
	p->exchange = strdup(exchange);
	p->routing_key = strdup(key);
	if (m->message_id != NULL)
		p->message_id = strdup(m->message_id);
	if (p->exchange == NULL || p->routing_key == NULL ||
	    (m->message_id != NULL && p->message_id == NULL)) {
		seterr(err, errlen, "%s: out of memory", what);
		rc = BROKER_ERR;
		goto fail;
	}

	memset(&props, 0, sizeof(props));
	props._flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
	props.delivery_mode = m->transient ? 1 : 2;
	if (m->content_type != NULL) {
		props._flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
		props.content_type = amqp_cstring_bytes(m->content_type);
	}
	if (m->message_id != NULL) {
		props._flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
		props.message_id = amqp_cstring_bytes(m->message_id);
	}
	if (m->nheaders > 0) {
		if (m->headers == NULL || m->nheaders > 1024 ||
		    (entries = calloc(m->nheaders, sizeof(*entries))) == NULL) {
			seterr(err, errlen, "%s: bad or too many headers",
			    what);
			rc = BROKER_ERR;
			goto fail;
		}
		for (i = 0; i < m->nheaders; i++) {
			const struct broker_field *h = &m->headers[i];

			if (h->key == NULL || h->key[0] == '\0' ||
			    strlen(h->key) > 255) {
				seterr(err, errlen, "%s: header %zu has no "
				    "name or a name longer than 255 bytes",
				    what, i);
				rc = BROKER_ERR;
				goto fail;
			}
			entries[i].key = amqp_cstring_bytes(h->key);
			if (h->is_int) {
				entries[i].value.kind = AMQP_FIELD_KIND_I64;
				entries[i].value.value.i64 = h->num;
			} else {
				entries[i].value.kind = AMQP_FIELD_KIND_UTF8;
				entries[i].value.value.bytes =
				    amqp_cstring_bytes(h->str ? h->str : "");
			}
		}
		props._flags |= AMQP_BASIC_HEADERS_FLAG;
		props.headers.num_entries = (int)m->nheaders;
		props.headers.entries = entries;
	}
	body.len = m->len;
	body.bytes = (void *)m->body;

	rc = amqp_basic_publish(b->conn, b->chan, amqp_cstring_bytes(exchange),
	    amqp_cstring_bytes(key), m->mandatory, 0, &props, body);
	if (rc < 0) {
		rc = on_library_error(b, rc, what, err, errlen);
		goto fail;
	}
	p->tag = b->next_tag++;
	b->npubs++;
	free(entries);
	return 0;
fail:
	free(entries);
	pub_free(p);
	return rc;
}

int
broker_publish_async(struct broker *b, const struct broker_message *m,
    char *err, size_t errlen)
{
	int rc;

	if (m == NULL) {
		seterr(err, errlen, "publishing: no message");
		return BROKER_ERR;
	}
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	return publish_send(b, m, err, errlen);
}

static size_t
pending_count(const struct broker *b)
{
	size_t i, n = 0;

	for (i = 0; i < b->npubs; i++)
		if (b->pubs[i].result == PUB_PENDING)
			n++;
	return n;
}

int
broker_wait_confirms(struct broker *b, int timeout_ms, int *results,
    size_t nresults, size_t *npublished, char *err, size_t errlen)
{
	amqp_frame_t f;
	struct pub *first = NULL;
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	char scratch[WHY_MAX], xl[300];
	size_t i, nfailed = 0;
	int rc;

	if (npublished != NULL)
		*npublished = b->npubs;
	while (pending_count(b) > 0) {
		if (b->conn == NULL || b->chan == 0) {
			chan_lost(b, BROKER_ELOST, "the connection was lost");
			break;
		}
		rc = next_frame(b, deadline, &f);
		if (rc == AMQP_STATUS_TIMEOUT) {
			for (i = 0; i < b->npubs; i++)
				pub_settle(&b->pubs[i], BROKER_ETIMEOUT, "no "
				    "confirm within %d ms", timeout_ms);
			break;
		}
		if (rc != AMQP_STATUS_OK) {
			(void)on_library_error(b, rc,
			    "waiting for publisher confirms", scratch,
			    sizeof(scratch));
			continue;
		}
		(void)dispatch(b, &f, now_ms() + b->timeout_ms,
		    "waiting for publisher confirms", scratch, sizeof(scratch));
		if (now_ms() > deadline) {
			for (i = 0; i < b->npubs; i++)
				pub_settle(&b->pubs[i], BROKER_ETIMEOUT, "no "
				    "confirm within %d ms", timeout_ms);
			break;
		}
	}

	rc = 0;
	for (i = 0; i < b->npubs; i++) {
		if (results != NULL && i < nresults)
			results[i] = b->pubs[i].result;
		if (b->pubs[i].result != 0) {
			if (first == NULL)
				first = &b->pubs[i];
			nfailed++;
		}
	}
	if (first != NULL) {
		rc = first->result;
		exchange_label(first->exchange, xl, sizeof(xl));
		if (b->npubs == 1)
			seterr(err, errlen, "publishing to %s with key '%s': %s"
			    , xl, first->routing_key,
			    first->detail ? first->detail : "failed");
		else
			seterr(err, errlen, "%zu of %zu messages were not "
			    "confirmed; the first, to %s with key '%s': %s",
			    nfailed, b->npubs, xl, first->routing_key,
			    first->detail ? first->detail : "failed");
	}
	for (i = 0; i < b->npubs; i++)
		pub_free(&b->pubs[i]);
	b->npubs = 0;
	return rc;
}

int
broker_publish(struct broker *b, const struct broker_message *m, int timeout_ms,
    char *err, size_t errlen)
{
	int rc, result = 0;

	if (b->npubs > 0) {
		seterr(err, errlen, "publishing: %zu messages published "
		    "without waiting still await broker_wait_confirms",
		    b->npubs);
		return BROKER_ERR;
	}
	if ((rc = broker_publish_async(b, m, err, errlen)) != 0)
		return rc;
	rc = broker_wait_confirms(b, timeout_ms, &result, 1, NULL, err, errlen);
	return rc != 0 ? rc : result;
}

/* ---- receiving ---- */

int
broker_get(struct broker *b, const char *queue, bool manual_ack,
    struct broker_delivery *out, char *err, size_t errlen)
{
	amqp_rpc_reply_t r;
	const amqp_basic_get_ok_t *ok;
	char what[WHAT_MAX];
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = check_name("getting a message", queue, false, err,
	    errlen)) != 0)
		return rc;
	snprintf(what, sizeof(what), "getting a message from queue '%s'",
	    queue);
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	r = amqp_basic_get(b->conn, b->chan, amqp_cstring_bytes(queue), 0);
	if ((rc = rpc_result(b, r, what, err, errlen)) != 0)
		return rc;
	if (r.reply.id == AMQP_BASIC_GET_EMPTY_METHOD)
		return BROKER_EMPTY;
	ok = r.reply.decoded;
	out->tag = ok->delivery_tag;
	out->redelivered = ok->redelivered;
	out->remaining = ok->message_count;
	out->exchange = dup_bytes(ok->exchange);
	out->routing_key = dup_bytes(ok->routing_key);
	if (out->exchange == NULL || out->routing_key == NULL) {
		broker_delivery_free(out);
		conn_lost(b, BROKER_ELOST, "out of memory");
		seterr(err, errlen, "%s: out of memory", what);
		return BROKER_ERR;
	}
	if ((rc = read_content(b, now_ms() + b->timeout_ms, out, what, err,
	    errlen)) != 0) {
		broker_delivery_free(out);
		return rc;
	}
	out->epoch = b->epoch;
	out->unacked = true;
	if (!manual_ack && (rc = broker_ack(b, out, err, errlen)) != 0) {
		broker_delivery_free(out);
		return rc;
	}
	return 0;
}

int
broker_consume(struct broker *b, const char *queue, uint16_t prefetch,
    char *err, size_t errlen)
{
	int rc;

	if ((rc = check_name("consuming", queue, false, err, errlen)) != 0)
		return rc;
	if (b->consume_queue != NULL) {
		seterr(err, errlen, "consuming from queue '%s': this handle "
		    "already consumes from queue '%s'; cancel that first",
		    queue, b->consume_queue);
		return BROKER_ERR;
	}
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	free(b->consumer_error);
	b->consumer_error = NULL;
	if ((b->consume_queue = strdup(queue)) == NULL) {
		seterr(err, errlen, "consuming from queue '%s': out of memory",
		    queue);
		return BROKER_ERR;
	}
	b->prefetch = prefetch;
	if ((rc = subscribe(b, err, errlen)) != 0) {
		free(b->consume_queue);
		b->consume_queue = NULL;
	}
	return rc;
}

static bool
pop_delivery(struct broker *b, struct broker_delivery *out)
{
	struct queued *q = b->qhead;

	if (q == NULL)
		return false;
	if ((b->qhead = q->next) == NULL)
		b->qtail = NULL;
	*out = q->d;
	free(q);
	return true;
}

int
broker_next(struct broker *b, int timeout_ms, struct broker_delivery *out,
    char *err, size_t errlen)
{
	amqp_frame_t f;
	char what[WHAT_MAX];
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	int rc;

	memset(out, 0, sizeof(*out));
	if (pop_delivery(b, out))
		return 0;
	if (b->consume_queue == NULL && b->consumer_error == NULL) {
		seterr(err, errlen, "waiting for a delivery: no consumer; call "
		    "broker_consume first");
		return BROKER_ERR;
	}
	if ((rc = begin(b, err, errlen)) != 0)
		return rc;
	for (;;) {
		if (pop_delivery(b, out))
			return 0;
		if (b->consume_queue == NULL) {
			seterr(err, errlen, "waiting for a delivery: %s",
			    b->consumer_error != NULL ? b->consumer_error :
			    "the consumer ended");
			free(b->consumer_error);
			b->consumer_error = NULL;
			return BROKER_EREFUSED;
		}
		snprintf(what, sizeof(what), "waiting for a delivery from "
		    "queue '%s'", b->consume_queue);
		rc = next_frame(b, deadline, &f);
		if (rc == AMQP_STATUS_TIMEOUT) {
			seterr(err, errlen, "%s: nothing arrived within %d ms",
			    what, timeout_ms);
			return BROKER_ETIMEOUT;
		}
		if (rc != AMQP_STATUS_OK)
			return on_library_error(b, rc, what, err, errlen);
		if ((rc = dispatch(b, &f, now_ms() + b->timeout_ms, what, err,
		    errlen)) != 0)
			return rc;
		if (b->qhead == NULL && now_ms() > deadline) {
			seterr(err, errlen, "%s: nothing arrived within %d ms",
			    what, timeout_ms);
			return BROKER_ETIMEOUT;
		}
	}
}

static int
settle_delivery(struct broker *b, struct broker_delivery *d, bool ack,
    bool requeue, char *err, size_t errlen)
{
	const char *verb = ack ? "acknowledging" : "rejecting";
	char what[WHAT_MAX];
	int rc;

	if (!d->unacked) {
		seterr(err, errlen, "%s a message: it needs no acknowledgement "
		    "(already settled, or received with automatic "
		    "acknowledgement)", verb);
		return BROKER_ERR;
	}
	if (b->conn == NULL || b->chan == 0 || d->epoch != b->epoch) {
		d->unacked = false;
		seterr(err, errlen, "%s a message: the channel it came on has "
		    "closed since; the broker will deliver it again", verb);
		return BROKER_ELOST;
	}
	snprintf(what, sizeof(what), "%s a message", verb);
	rc = ack ? amqp_basic_ack(b->conn, b->chan, d->tag, 0) :
	    amqp_basic_reject(b->conn, b->chan, d->tag, requeue);
	if (rc < 0)
		return on_library_error(b, rc, what, err, errlen);
	d->unacked = false;
	return 0;
}

int
broker_ack(struct broker *b, struct broker_delivery *d, char *err,
    size_t errlen)
{
	return settle_delivery(b, d, true, false, err, errlen);
}

int
broker_reject(struct broker *b, struct broker_delivery *d, bool requeue,
    char *err, size_t errlen)
{
	return settle_delivery(b, d, false, requeue, err, errlen);
}

int
broker_cancel(struct broker *b, char *err, size_t errlen)
{
	struct broker_delivery d;
	char what[WHAT_MAX];
	int rc = 0;

	free(b->consumer_error);
	b->consumer_error = NULL;
	if (b->consume_queue == NULL)
		return 0;
	snprintf(what, sizeof(what), "cancelling the consumer on queue '%s'",
	    b->consume_queue);
	if (b->conn != NULL && b->chan != 0 && b->consuming &&
	    b->ctag != NULL && amqp_basic_cancel(b->conn, b->chan,
	    amqp_cstring_bytes(b->ctag)) == NULL)
		rc = rpc_result(b, amqp_get_rpc_reply(b->conn), what, err,
		    errlen);
	free(b->consume_queue);
	b->consume_queue = NULL;
	free(b->ctag);
	b->ctag = NULL;
	b->consuming = false;
	/* Prefetched deliveries not handed out go back to the queue. */
	while (pop_delivery(b, &d)) {
		if (b->conn != NULL && b->chan != 0 && d.epoch == b->epoch)
			(void)amqp_basic_reject(b->conn, b->chan, d.tag, 1);
		broker_delivery_free(&d);
	}
	return rc;
}

void
broker_delivery_free(struct broker_delivery *d)
{
	size_t i, j;

	if (d == NULL)
		return;
	free(d->exchange);
	free(d->routing_key);
	free(d->body);
	free(d->message_id);
	free(d->content_type);
	for (i = 0; i < d->nheaders; i++) {
		free(d->headers[i].key);
		free(d->headers[i].str);
	}
	free(d->headers);
	for (i = 0; i < d->ndeaths; i++) {
		free(d->deaths[i].queue);
		free(d->deaths[i].reason);
		free(d->deaths[i].exchange);
		for (j = 0; j < d->deaths[i].nrouting_keys; j++)
			free(d->deaths[i].routing_keys[j]);
		free(d->deaths[i].routing_keys);
	}
	free(d->deaths);
	memset(d, 0, sizeof(*d));
}

const struct broker_header *
broker_header_find(const struct broker_delivery *d, const char *key)
{
	size_t i;

	for (i = 0; i < d->nheaders; i++)
		if (strcmp(d->headers[i].key, key) == 0)
			return &d->headers[i];
	return NULL;
}
