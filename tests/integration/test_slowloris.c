/* test_slowloris (integration): slow clients cannot starve `cutover serve`.
 * The real binary (CUTOVER_BINARY) runs on a free loopback port with an
 * empty database; tricklers open hundreds of connections from other
 * loopback addresses (127.0.0.0/8 is all local) and send one header line
 * every INTERVAL, never ending their request. Each check waits on its
 * condition with a ceiling: a fresh client's /healthz answers while one
 * address trickles 300 connections; a request that keeps trickling is cut
 * although it is never idle; and once the tricklers of
 * thirty addresses have filled every slot, the server is reachable again
 * without them giving up. Hostile bodies and requests are answered too, in
 * JSON and in time: plans nested 100000 deep, posted five at once, are
 * refused in milliseconds while /healthz keeps answering; a request line or
 * headers past their limits are 414 and 431; a connection over the
 * per-address limit is answered 503 with Retry-After. Needs no broker. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "clock.h"
#include "file_read.h"
#include "itest_run.h"
#include "server.h"

#define TRICKLE_MAX	300
/* Held from one address before /healthz is asked: what the fix lets one
 * address hold (server.h's SERVER_PER_IP_MAX), and fewer than main held. */
#define SERVER_PER_IP_MAX_SEEN	64

#define TOKEN		"slowloris-operator-token"
#define TOKEN_SHA256	"5310f6b255d0c14aea179e9176512d5596fe13d7278b1571f4ca3f24308a5c87"
#define POSTS		5	/* hostile plans posted at once */
#define NESTING		100000	/* lists within lists in each */

static char dir[256], db[300], logfile[300], ops[300];
static int port;
static pid_t server = -1;

/* Connections that never finish their request, fed from a thread. */
struct trickle {
	int n;
	int fd[TRICKLE_MAX];
	int closed[TRICKLE_MAX];	/* the server hung up */
	int lines[TRICKLE_MAX];		/* pieces sent */
	int interval_ms;
	int open;			/* still open */
	int stop;
	pthread_mutex_t mu;
	pthread_t thread;
};

/* A non-blocking socket from loopback address SRC to the server. */
static int
dial(const char *src)
{
	struct sockaddr_in sa = { 0 }, from = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	from.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		assert_true(errno == EINPROGRESS);
	return fd;
}

/* Feeds T: the request line first, then a header line every interval, and
 * notes each connection the server closes. */
static void *
feed(void *arg)
{
	struct trickle *t = arg;
	int64_t next = 0;
	char buf[256];

	for (;;) {
		int64_t now = clock_mono_ms();
		int send_now = now >= next;

		pthread_mutex_lock(&t->mu);
		if (t->stop) {
			pthread_mutex_unlock(&t->mu);
			return NULL;
		}
		for (int i = 0; i < t->n; i++) {
			ssize_t r;

			if (t->closed[i])
				continue;
			r = recv(t->fd[i], buf, sizeof(buf), MSG_DONTWAIT);
			if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ENOTCONN)) {
				t->closed[i] = 1;
				t->open--;
				continue;
			}
			if (!send_now)
				continue;
			if (t->lines[i] == 0)
				snprintf(buf, sizeof(buf), "GET /healthz HTTP/1.1\r\nHost: x\r\n");
			else
				snprintf(buf, sizeof(buf), "X-Trickle-%d: %d\r\n", t->lines[i], i);
			r = send(t->fd[i], buf, strlen(buf), MSG_DONTWAIT | MSG_NOSIGNAL);
			if (r > 0)
				t->lines[i]++;
			else if (errno == EPIPE || errno == ECONNRESET) {
				t->closed[i] = 1;
				t->open--;
			}
		}
		pthread_mutex_unlock(&t->mu);
		if (send_now)
			next = now + t->interval_ms;
		clock_sleep_ms(50);
	}
}

/* Opens N trickling connections, spread over addresses 127.0.X.Y from
 * FIRST on, PER_ADDR to an address, one piece every INTERVAL_MS. */
static void
trickle_start(struct trickle *t, int n, const char *first, int per_addr, int interval_ms)
{
	struct in_addr a;
	char src[INET_ADDRSTRLEN];

	memset(t, 0, sizeof(*t));
	assert_true(n <= TRICKLE_MAX);
	assert_int_equal(inet_pton(AF_INET, first, &a), 1);
	t->interval_ms = interval_ms;
	for (int i = 0; i < n; i++) {
		struct in_addr s = { htonl(ntohl(a.s_addr) + (uint32_t)(i / per_addr)) };

		inet_ntop(AF_INET, &s, src, sizeof(src));
		t->fd[i] = dial(src);
	}
	t->n = t->open = n;
	assert_int_equal(pthread_mutex_init(&t->mu, NULL), 0);
	assert_int_equal(pthread_create(&t->thread, NULL, feed, t), 0);
}

/* Connections of T still open that the server took (sent it a piece). */
static int
trickle_held(struct trickle *t, int *open)
{
	int held = 0;

	pthread_mutex_lock(&t->mu);
	for (int i = 0; i < t->n; i++)
		held += !t->closed[i] && t->lines[i] > 1;
	*open = t->open;
	pthread_mutex_unlock(&t->mu);
	return held;
}

static void
trickle_stop(struct trickle *t)
{
	pthread_mutex_lock(&t->mu);
	t->stop = 1;
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->thread, NULL);
	pthread_mutex_destroy(&t->mu);
	for (int i = 0; i < t->n; i++)
		close(t->fd[i]);
}

/* One GET /healthz from 127.0.0.1 with a ceiling of WAIT_MS: 1 when it
 * answered 200. */
static int
healthz_once(int wait_ms)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	int64_t end = clock_mono_ms() + wait_ms;
	struct pollfd p;
	char buf[512];
	size_t got = 0, sent = 0;
	int fd = dial("127.0.0.1"), ok = 0;

	while (clock_mono_ms() < end) {
		p.fd = fd;
		p.events = sent < sizeof(req) - 1 ? POLLOUT : POLLIN;
		if (poll(&p, 1, 50) <= 0)
			continue;
		if (sent < sizeof(req) - 1) {
			ssize_t r = send(fd, req + sent, sizeof(req) - 1 - sent, MSG_NOSIGNAL);

			if (r <= 0)
				break;
			sent += (size_t)r;
			continue;
		}
		ssize_t r = recv(fd, buf + got, sizeof(buf) - 1 - got, 0);

		if (r <= 0)
			break;
		got += (size_t)r;
		buf[got] = '\0';
		if (strstr(buf, "\r\n") != NULL) {
			ok = strncmp(buf, "HTTP/1.1 200", 12) == 0;
			break;
		}
	}
	close(fd);
	return ok;
}

/* Asks /healthz again and again, each try with a ceiling of 2 s, until it
 * answers or CEILING_MS passed; the milliseconds it took, or -1. */
static int64_t
healthz_within(int64_t ceiling_ms)
{
	int64_t t0 = clock_mono_ms();

	while (clock_mono_ms() - t0 < ceiling_ms) {
		if (healthz_once(2000))
			return clock_mono_ms() - t0;
		clock_sleep_ms(100);
	}
	return -1;
}

/* Waits (with a ceiling of CEILING_MS) until T holds at least N
 * connections the server accepted; fails otherwise. */
static void
wait_held(struct trickle *t, int n, int64_t ceiling_ms)
{
	int64_t t0 = clock_mono_ms();
	int open, held;

	while ((held = trickle_held(t, &open)) < n) {
		if (clock_mono_ms() - t0 > ceiling_ms)
			fail_msg("only %d trickling connections held (%d open), expected %d",
			    held, open, n);
		clock_sleep_ms(100);
	}
}

/* Asks /healthz (healthz_within CEILING_MS) while T, WHAT, trickles, then
 * stops T; fails when it did not answer. */
static void
healthz_while(struct trickle *t, const char *what, int64_t ceiling_ms)
{
	int64_t ms = healthz_within(ceiling_ms);
	int open, held = trickle_held(t, &open);

	trickle_stop(t);
	printf("%s: %d trickling, %d open; /healthz %s after %lld ms\n", what, held, open,
	    ms >= 0 ? "answered" : "did not answer", (long long)ms);
	if (ms < 0)
		fail_msg("/healthz did not answer within %lld s while %s trickled",
		    (long long)ceiling_ms / 1000, what);
}

static void
test_one_client_cannot_take_every_slot(void **state)
{
	struct trickle t;

	(void)state;
	trickle_start(&t, 300, "127.0.0.2", 300, 2000);
	wait_held(&t, SERVER_PER_IP_MAX_SEEN, 10000);
	/* A generous ceiling, below the request deadline: what answers here
	 * was let in, not waited out. */
	healthz_while(&t, "300 connections from one address", 8000);
}

static void
test_a_trickled_request_is_cut(void **state)
{
	struct trickle t;
	int64_t t0 = clock_mono_ms();
	int open = 8;

	(void)state;
	/* A header line every second: never idle for the idle timeout. */
	trickle_start(&t, 8, "127.0.0.3", 8, 1000);
	wait_held(&t, 8, 10000);
	while (trickle_held(&t, &open), open > 0 && clock_mono_ms() - t0 < 40000)
		clock_sleep_ms(200);
	trickle_stop(&t);
	printf("8 requests trickled one line a second: %d still open after %lld ms\n",
	    open, (long long)(clock_mono_ms() - t0));
	if (open > 0)
		fail_msg("%d requests trickling one header line a second were still open "
		    "after 40 s", open);
}

static void
test_many_clients_are_waited_out(void **state)
{
	struct trickle t;

	(void)state;
	/* 300 connections from 30 addresses: more than the server holds. */
	trickle_start(&t, 300, "127.0.1.1", 10, 2000);
	wait_held(&t, 200, 20000);
	healthz_while(&t, "300 connections from 30 addresses", 40000);
}

/* A blocking socket from loopback address SRC to the server, whose sends
 * and receives give up after WAIT_MS. */
static int
dial_wait(const char *src, int wait_ms)
{
	struct timeval tv = { wait_ms / 1000, (wait_ms % 1000) * 1000 };
	struct sockaddr_in sa = { 0 }, from = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	from.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &from.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

/* Sends N bytes of BUF on FD. Returns 0, or -1 when the server stopped
 * reading or the socket's wait ran out. */
static int
send_all(int fd, const char *buf, size_t n)
{
	while (n > 0) {
		ssize_t r = send(fd, buf, n, MSG_NOSIGNAL);

		if (r <= 0)
			return -1;
		buf += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Reads on FD into OUT (NUL-terminated) until the server closes, OUT is
 * full or the socket's wait runs out; with ONE, only until a whole answer
 * (headers and Content-Length bytes) is in. Returns the bytes read. */
static size_t
read_answer(int fd, char *out, size_t outlen, int one)
{
	size_t got = 0;
	ssize_t r;
	const char *end, *cl;

	out[0] = '\0';
	while (got + 1 < outlen && (r = recv(fd, out + got, outlen - 1 - got, 0)) > 0) {
		got += (size_t)r;
		out[got] = '\0';
		if (one && (end = strstr(out, "\r\n\r\n")) != NULL &&
		    (cl = strstr(out, "Content-Length: ")) != NULL && cl < end &&
		    got >= (size_t)(end + 4 - out) + strtoul(cl + 16, NULL, 10))
			break;
	}
	return got;
}

/* One request (HEAD, then BLEN bytes of BODY) from 127.0.0.1 with a
 * ceiling of WAIT_MS, its answer into OUT. Returns the milliseconds it
 * took, or -1 when it was not answered within the ceiling. */
static int64_t
exchange(const char *head, const char *body, size_t blen, char *out, size_t outlen,
    int wait_ms)
{
	int64_t t0 = clock_mono_ms();
	int fd = dial_wait("127.0.0.1", wait_ms), ok = 0;

	/* Why it failed, in place of an answer, so that a failure says. */
	if (send_all(fd, head, strlen(head)) != 0 || send_all(fd, body, blen) != 0)
		snprintf(out, outlen, "(no answer: sending failed after %lld ms: %s)",
		    (long long)(clock_mono_ms() - t0), strerror(errno));
	else if ((errno = 0, read_answer(fd, out, outlen, 0)) == 0)
		snprintf(out, outlen, "(no answer: nothing read after %lld ms: %s)",
		    (long long)(clock_mono_ms() - t0), errno != 0 ? strerror(errno) : "closed");
	else
		ok = clock_mono_ms() - t0 < wait_ms;
	close(fd);
	return ok ? clock_mono_ms() - t0 : -1;
}

/* A plan posted by an operator: its status line and error, and the time
 * its answer took (-1: none within the ceiling). */
struct post {
	pthread_t thread;
	const char *body;
	size_t len;
	int64_t ms;
	char answer[2048];
};

static void *
post_plan(void *arg)
{
	struct post *p = arg;
	char head[256];

	snprintf(head, sizeof(head), "POST /api/plans HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Bearer " TOKEN "\r\nContent-Type: application/yaml\r\n"
	    "Connection: close\r\nContent-Length: %zu\r\n\r\n", p->len);
	p->ms = exchange(head, p->body, p->len, p->answer, sizeof(p->answer), 15000);
	return NULL;
}

static void
test_hostile_plans_are_refused_in_time(void **state)
{
	struct post posts[POSTS];
	char *body = malloc(2 * NESTING + 2);
	int64_t t0, worst = 0, ms;
	int asked = 0, answered = 0, busy, refused = 0;

	(void)state;
	assert_non_null(body);
	memset(body, '[', NESTING);
	memset(body + NESTING, ']', NESTING);
	strcpy(body + 2 * NESTING, "\n");
	for (int i = 0; i < POSTS; i++) {
		memset(&posts[i], 0, sizeof(posts[i]));
		posts[i].body = body;
		posts[i].len = 2 * NESTING + 1;
		posts[i].ms = -2;	/* not back yet */
		assert_int_equal(pthread_create(&posts[i].thread, NULL, post_plan,
		    &posts[i]), 0);
	}
	/* /healthz all along, each try with a ceiling of 2 s, for at least 3 s
	 * and until every post is back. */
	t0 = clock_mono_ms();
	do {
		int64_t a = clock_mono_ms();

		asked++;
		if (healthz_once(2000)) {
			answered++;
			if ((ms = clock_mono_ms() - a) > worst)
				worst = ms;
		}
		clock_sleep_ms(100);
		busy = 0;
		for (int i = 0; i < POSTS; i++)
			busy |= __atomic_load_n(&posts[i].ms, __ATOMIC_SEQ_CST) == -2;
	} while ((busy || clock_mono_ms() - t0 < 3000) && clock_mono_ms() - t0 < 20000);
	for (int i = 0; i < POSTS; i++)
		pthread_join(posts[i].thread, NULL);
	printf("%d plans nested %d deep posted at once; /healthz answered %d of %d "
	    "times, the slowest in %lld ms\n", POSTS, NESTING, answered, asked,
	    (long long)worst);
	for (int i = 0; i < POSTS; i++) {
		printf("  post %d: %lld ms, %.*s\n", i, (long long)posts[i].ms,
		    (int)strcspn(posts[i].answer, "\r\n"), posts[i].answer);
		/* More than SERVER_LOADS_MAX at once: refused at once with a
		 * Retry-After, so that a thread stays free for /healthz; posted
		 * again as that says, it is checked. */
		if (strncmp(posts[i].answer, "HTTP/1.1 503", 12) == 0) {
			assert_non_null(strstr(posts[i].answer, "plans are being checked "
			    "already"));
			assert_non_null(strstr(posts[i].answer, "Retry-After: 1\r\n"));
			assert_true(++refused <= POSTS - SERVER_LOADS_MAX(SERVER_THREADS));
			clock_sleep_ms(1000);
			post_plan(&posts[i]);
			printf("  post %d again: %lld ms, %.*s\n", i, (long long)posts[i].ms,
			    (int)strcspn(posts[i].answer, "\r\n"), posts[i].answer);
		}
		if (posts[i].ms < 0 || posts[i].ms > 2000)
			fail_msg("a plan nested %d deep was answered after %lld ms; expected "
			    "within 2 s", NESTING, (long long)posts[i].ms);
		assert_int_equal(strncmp(posts[i].answer, "HTTP/1.1 400", 12), 0);
		assert_non_null(strstr(posts[i].answer, "the YAML nests more than 32 lists "
		    "and mappings deep here"));
	}
	/* Freed only now: a refused post is sent again from it above. */
	free(body);
	if (answered < asked || worst > 1000)
		fail_msg("/healthz answered %d of %d times while plans were posted, the "
		    "slowest in %lld ms; expected every time within 1 s", answered, asked,
		    (long long)worst);
}

/* Whether the answer ANSWER is STATUS with a JSON error containing TEXT. */
static void
assert_json_refusal(const char *answer, const char *status, const char *text)
{
	const char *body = strstr(answer, "\r\n\r\n");

	if (strncmp(answer, status, strlen(status)) != 0 || body == NULL ||
	    strncmp(body + 4, "{\"error\":\"", 10) != 0 || strstr(body, text) == NULL ||
	    strstr(answer, "Content-Type: application/json\r\n") == NULL)
		fail_msg("expected %s with a JSON error naming '%s', got:\n%.600s", status,
		    text, answer);
}

static void
test_refusals_are_json(void **state)
{
	static char answer[4096];
	char *big = malloc(48 * 1024);
	char *head = malloc(64 * 1024);
	int held[SERVER_PER_IP_MAX_SEEN], extra[4];
	char *log = NULL;
	size_t loglen;

	(void)state;
	assert_non_null(big);
	assert_non_null(head);
	/* Headers over 16 KiB: 431 naming the limit. */
	memset(big, 'x', 20 * 1024);
	big[20 * 1024] = '\0';
	snprintf(head, 64 * 1024, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n"
	    "Connection: close\r\n\r\n", big);
	assert_true(exchange(head, "", 0, answer, sizeof(answer), 5000) >= 0);
	assert_json_refusal(answer, "HTTP/1.1 431", "expected at most 16384 "
	    "(SERVER_HEADERS_MAX)");
	/* A request target over 8 KiB: 414 naming the limit. */
	big[10 * 1024] = '\0';
	snprintf(head, 64 * 1024, "GET /api/plans?q=%s HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n", big);
	assert_true(exchange(head, "", 0, answer, sizeof(answer), 5000) >= 0);
	assert_json_refusal(answer, "HTTP/1.1 414", "expected at most 8192 (SERVER_URI_MAX)");
	free(big);
	free(head);

	/* One address holds its 64 connections, each answered and kept alive;
	 * the next ones are answered 503 at once, with Retry-After. */
	for (int i = 0; i < SERVER_PER_IP_MAX_SEEN; i++) {
		static const char req[] = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

		held[i] = dial_wait("127.0.0.4", 5000);
		assert_int_equal(send_all(held[i], req, sizeof(req) - 1), 0);
		assert_true(read_answer(held[i], answer, sizeof(answer), 1) > 0);
		if (strncmp(answer, "HTTP/1.1 200", 12) != 0)
			fail_msg("connection %d of 127.0.0.4: %.200s", i + 1, answer);
	}
	for (int i = 0; i < 4; i++) {
		extra[i] = dial_wait("127.0.0.4", 5000);
		read_answer(extra[i], answer, sizeof(answer), 0);
		assert_json_refusal(answer, "HTTP/1.1 503", "this address holds 64 "
		    "connections already, the most one address may (SERVER_PER_IP_MAX)");
		assert_non_null(strstr(answer, "Retry-After: 1\r\n"));
	}
	printf("connections %d to %d of one address: %.*s\n", SERVER_PER_IP_MAX_SEEN + 1,
	    SERVER_PER_IP_MAX_SEEN + 4, (int)strcspn(answer, "\r\n"), answer);
	/* The operator sees it in the log: the first refusal at once, with
	 * the address (the next ones in the same second are counted into a
	 * later line, so that a flood cannot flood the log). */
	assert_int_equal(file_read(logfile, 1 << 24, &log, &loglen), FILE_READ_OK);
	if (strstr(log, "http refused 1 connection since the last such line: the "
	    "address held 64 already") == NULL || strstr(log, "the latest from "
	    "127.0.0.4") == NULL)
		fail_msg("serve's log does not say that it refused a connection of "
		    "127.0.0.4 over the per-address limit:\n%.2000s", log);
	free(log);
	for (int i = 0; i < 4; i++)
		close(extra[i]);
	for (int i = 0; i < SERVER_PER_IP_MAX_SEEN; i++)
		close(held[i]);
}

static int
setup(void **state)
{
	const char *tmp = getenv("TMPDIR"), *bin = getenv("CUTOVER_BINARY");
	char listen[64];
	FILE *f;

	(void)state;
	if (bin == NULL) {
		fprintf(stderr, "set CUTOVER_BINARY (ctest does)\n");
		return -1;
	}
	snprintf(dir, sizeof(dir), "%s/itest_slowloris.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (mkdtemp(dir) == NULL || (port = itest_free_port()) < 0)
		return -1;
	snprintf(db, sizeof(db), "%s/slow.db", dir);
	snprintf(logfile, sizeof(logfile), "%s/serve.log", dir);
	snprintf(ops, sizeof(ops), "%s/operators", dir);
	if ((f = fopen(ops, "w")) == NULL)
		return -1;
	fprintf(f, "slow:%s\n", TOKEN_SHA256);
	fclose(f);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	if ((server = fork()) < 0)
		return -1;
	if (server == 0) {
		int fd = open(logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0)
			dup2(fd, 2);
		execl(bin, bin, "serve", "--db", db, "--listen", listen, "--operators", ops,
		    (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 200; i++) {
		if (healthz_once(500))
			return 0;
		clock_sleep_ms(50);
	}
	fprintf(stderr, "cutover serve did not answer /healthz\n");
	return -1;
}

static int
teardown(void **state)
{
	char cmd[300];
	int st = 0;

	(void)state;
	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, &st, 0);
	}
	if (dir[0] != '\0' && getenv("CUTOVER_TEST_KEEP") == NULL) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			return -1;
	}
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hostile_plans_are_refused_in_time),
		cmocka_unit_test(test_refusals_are_json),
		cmocka_unit_test(test_one_client_cannot_take_every_slot),
		cmocka_unit_test(test_a_trickled_request_is_cut),
		cmocka_unit_test(test_many_clients_are_waited_out),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
