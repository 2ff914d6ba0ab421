/* itest_run: running the cutover binary and reading its history back. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "itest_run.h"
#include "store.h"

#define STARTED_MAX 64
#define CLEANUPS_MAX 64

/* What itest_cleanup undoes: processes started and not yet waited for,
 * and the cleanups registered, in order. */
static pid_t started[STARTED_MAX];
static int nstarted;
static struct {
	void (*fn)(void *);
	void *arg;
} cleanups[CLEANUPS_MAX];
static int ncleanups;
static int atexit_set;

static void
at_exit(void)
{
	itest_cleanup();
}

/* Registers at_exit once. libcurl (and the TLS library under it, which
 * registers an atexit handler of its own when first initialised) is
 * initialised first and never cleaned up here, so that it is still whole
 * when at_exit talks to the management API. */
static void
want_atexit(void)
{
	if (atexit_set)
		return;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (atexit(at_exit) == 0)
		atexit_set = 1;
}

static void
forget_pid(pid_t pid)
{
	for (int i = 0; i < nstarted; i++)
		if (started[i] == pid) {
			started[i] = started[--nstarted];
			return;
		}
}

/* In a child just forked: die with the test process. */
static void
die_with_parent(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(127);
}

void
itest_on_cleanup(void (*fn)(void *), void *arg)
{
	want_atexit();
	if (ncleanups == CLEANUPS_MAX)
		fail_msg("itest_on_cleanup: more than %d cleanups", CLEANUPS_MAX);
	cleanups[ncleanups].fn = fn;
	cleanups[ncleanups].arg = arg;
	ncleanups++;
}

void
itest_cleanup(void)
{
	while (nstarted > 0) {
		pid_t pid = started[--nstarted];

		if (kill(pid, SIGKILL) == 0 || errno != ESRCH)
			fprintf(stderr, "itest: pid %ld was not waited for: killed\n", (long)pid);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	while (ncleanups > 0) {
		ncleanups--;
		cleanups[ncleanups].fn(cleanups[ncleanups].arg);
	}
}

int
itest_cleanup_teardown(void **state)
{
	(void)state;
	itest_cleanup();
	return 0;
}

void
itest_skip(const char *why)
{
	const char *ci = getenv("CI");

	if (ci != NULL && strcmp(ci, "true") == 0)
		fail_msg("%s (a check skipped under CI=true is a failure)", why);
	print_message("SKIPPED: %s\n", why);
	skip();
}

void
itest_sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

static const char *
binary(void)
{
	const char *b = getenv("CUTOVER_BINARY");

	if (b == NULL)
		fail_msg("set CUTOVER_BINARY (ctest does)");
	return b;
}

int
itest_wait(pid_t pid)
{
	int st;

	forget_pid(pid);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
itest_exited(pid_t pid)
{
	int st;
	pid_t w = waitpid(pid, &st, WNOHANG);

	assert_true(w == 0 || w == pid);
	if (w == 0)
		return -1;
	forget_pid(pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int
itest_cutover(const char *arg, ...)
{
	const char *argv[24];
	va_list ap;
	pid_t pid, parent;

	va_start(ap, arg);
	itest_argv(argv, binary(), arg, ap);
	va_end(ap);
	parent = getpid();
	if ((pid = fork()) == 0) {
		die_with_parent(parent);
		dup2(2, 1);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	assert_true(pid > 0);
	return itest_wait(pid);
}

/* Starts the cutover binary with ARGV (after argv[0]) in the background,
 * with CUTOVER_FAULT=FAULT when FAULT is not NULL. Returns its pid. */
static pid_t
start(const char *const *argv, const char *fault)
{
	const char *bin = binary();
	pid_t parent = getpid(), pid;

	if (nstarted == STARTED_MAX)
		fail_msg("itest: more than %d processes started", STARTED_MAX);
	want_atexit();
	if ((pid = fork()) == 0) {
		die_with_parent(parent);
		if (fault != NULL)
			setenv("CUTOVER_FAULT", fault, 1);
		dup2(2, 1);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	assert_true(pid > 0);
	started[nstarted++] = pid;
	return pid;
}

pid_t
itest_start_run(const char *db, const char *planfile, const char *fault)
{
	const char *argv[] = { "cutover", "run", "--db", db, planfile, NULL };

	return start(argv, fault);
}

pid_t
itest_start_serve(const char *db)
{
	const char *argv[] = { "cutover", "serve", "--db", db, "--listen", "127.0.0.1:0",
	    NULL };

	return start(argv, NULL);
}

pid_t
itest_spawn(const char *out, char *const argv[])
{
	pid_t parent = getpid(), pid;
	int fd;

	if (nstarted == STARTED_MAX)
		fail_msg("itest_spawn: more than %d processes", STARTED_MAX);
	want_atexit();
	if ((pid = fork()) == 0) {
		die_with_parent(parent);
		if ((fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600)) >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	assert_true(pid > 0);
	started[nstarted++] = pid;
	return pid;
}

int
itest_stop(pid_t pid)
{
	kill(pid, SIGTERM);
	return itest_wait(pid);
}

static int
take_event(const struct store_event *ev, void *arg)
{
	struct itest_history *h = arg;

	if (h->n < ITEST_EVENTS_MAX) {
		json_t *d = json_loads(ev->details_json, 0, NULL);
		const char *name = json_string_value(json_object_get(d, "name"));

		snprintf(h->kinds[h->n], sizeof(h->kinds[0]), "%s", ev->kind);
		snprintf(h->actors[h->n], sizeof(h->actors[0]), "%s", ev->actor);
		snprintf(h->names[h->n], sizeof(h->names[0]), "%s", name ? name : "");
		json_decref(d);
	}
	h->n++;
	return 0;
}

void
itest_read_history(const char *db, const char *name, struct itest_history *h,
    char *status, size_t statuslen)
{
	struct store *s = NULL;
	struct store_plan p;
	struct store_verify v;
	char err[512];

	memset(h, 0, sizeof(*h));
	assert_int_equal(store_open(db, &s, err, sizeof(err)), 0);
	assert_int_equal(store_plan_find(s, name, &p, err, sizeof(err)), 0);
	snprintf(status, statuslen, "%s", p.status);
	assert_int_equal(store_each_event(s, p.id, take_event, h, err, sizeof(err)), 0);
	assert_int_equal(store_verify_events(s, &v, err, sizeof(err)), 0);
	assert_true(v.verified);
	store_close(s);
}

int
itest_count(const struct itest_history *h, const char *kind)
{
	int n = 0;

	for (int i = 0; i < h->n && i < ITEST_EVENTS_MAX; i++)
		n += strcmp(h->kinds[i], kind) == 0;
	return n;
}

void
itest_expect_counts(const struct itest_history *h, const char *counts)
{
	char kind[48], wrong[1024] = "";
	size_t len = 0;
	int want, got, used;

	for (const char *p = counts; sscanf(p, " %47[^= ]=%d%n", kind, &want, &used) == 2;
	    p += used) {
		if ((got = itest_count(h, kind)) != want && len < sizeof(wrong))
			len += (size_t)snprintf(wrong + len, sizeof(wrong) - len,
			    "%s%s: %d, not %d", len ? "; " : "", kind, got, want);
	}
	if (wrong[0] != '\0')
		fail_msg("the history's events: %s", wrong);
}

int
itest_count_named(const struct itest_history *h, const char *kind, const char *name)
{
	int n = 0;

	for (int i = 0; i < h->n && i < ITEST_EVENTS_MAX; i++)
		n += strcmp(h->kinds[i], kind) == 0 && strcmp(h->names[i], name) == 0;
	return n;
}

int
itest_run_part(const char *group, const struct CMUnitTest *tests, size_t n,
    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	const char *part = getenv("CUTOVER_TEST_PART");
	const char *only = getenv("CUTOVER_TEST_ONLY");
	struct CMUnitTest *kept;
	unsigned k = 1, m = 1;
	char extra;
	size_t i, nkept = 0;
	int rc;

	if ((part == NULL || *part == '\0') && (only == NULL || *only == '\0'))
		return _cmocka_run_group_tests(group, tests, n, setup, teardown);
	if (part != NULL && *part != '\0' && (sscanf(part, "%u/%u%c", &k, &m,
	    &extra) != 2 || m == 0 || k == 0 || k > m)) {
		fprintf(stderr, "CUTOVER_TEST_PART='%s': expected K/M with 1 <= K <= M\n", part);
		exit(2);
	}
	if ((kept = calloc(n, sizeof(*kept))) == NULL) {
		fprintf(stderr, "itest_run_part: out of memory\n");
		exit(2);
	}
	for (i = k - 1; i < n; i += m)
		if (only == NULL || *only == '\0' || strstr(tests[i].name, only) != NULL)
			kept[nkept++] = tests[i];
	rc = _cmocka_run_group_tests(group, kept, nkept, setup, teardown);
	free(kept);
	return rc;
}

int
itest_temp_dir(char *dir, size_t dirlen, const char *name)
{
	const char *tmp = getenv("TMPDIR");

	if ((size_t)snprintf(dir, dirlen, "%s/%s.XXXXXX", tmp && *tmp ? tmp : "/tmp",
	    name) >= dirlen) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return mkdtemp(dir) == NULL ? -1 : 0;
}

void
itest_argv(const char **argv, const char *bin, const char *arg, va_list ap)
{
	int n = 0;

	argv[n++] = bin;
	argv[n++] = arg;
	while (n < 23 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	argv[n] = NULL;
}

int
itest_main_group(const struct CMUnitTest *tests, size_t n, int argc, char **argv,
    CMFixtureFunction setup, CMFixtureFunction teardown)
{
	const char *filter = argc > 1 ? argv[1] : getenv("CUTOVER_TEST_FILTER");

	if (filter != NULL)
		cmocka_set_test_filter(filter);
	return itest_run_part("tests", tests, n, setup, teardown);
}

int
itest_main(const struct CMUnitTest *tests, size_t n, int argc, char **argv)
{
	return itest_main_group(tests, n, argc, argv, NULL, NULL);
}

int
itest_main_in_temp_dir(const struct CMUnitTest *tests, size_t n, int argc, char **argv,
    char *dir, size_t dirlen, const char *name)
{
	char cmd[600];
	int rc;

	if (itest_temp_dir(dir, dirlen, name) != 0) {
		fprintf(stderr, "itest_main_in_temp_dir: cannot make %s under TMPDIR: %s\n",
		    name, strerror(errno));
		return 1;
	}
	rc = itest_main(tests, n, argc, argv);
	itest_cleanup();	/* what the last test left, while its files exist */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0) {
		fprintf(stderr, "itest_main_in_temp_dir: could not remove %s\n", dir);
		rc = rc ? rc : 1;
	}
	return rc;
}

/* The first port of the kernel's ephemeral range (32768 when unreadable). */
static int
itest__ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int lo = 32768;

	if (f != NULL) {
		if (fscanf(f, "%d", &lo) != 1)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

/* 127.0.0.1:PORT into SA. */
static void
loopback(struct sockaddr_in *sa, int port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
}

int
itest_free_port(void)
{
	static unsigned next;
	struct sockaddr_in sa;
	int lo = itest__ephemeral_low(), span, i, port, fd, ok;

	/* Below the ephemeral range no outgoing connection takes the port
	 * between this check and the server's bind; the pid and a counter
	 * keep concurrent tests apart. */
	span = lo - ITEST_PORT_LOW;
	assert_true(span >= 1000);
	for (i = 0; i < span; i++) {
		port = ITEST_PORT_LOW +
		    (int)(((unsigned)getpid() * 7919u + next++) % (unsigned)span);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		loopback(&sa, port);
		ok = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
		if (ok)
			return port;
	}
	fail_msg("no free port in %d..%d", ITEST_PORT_LOW, lo - 1);
	return -1;
}

int
itest_connect(int port, int recv_timeout_s)
{
	struct sockaddr_in sa;
	struct timeval tv = { recv_timeout_s, 0 };
	int fd;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	loopback(&sa, port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		close(fd);
		return -1;
	}
	if (recv_timeout_s > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}
