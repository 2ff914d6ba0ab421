/* backup_schedule: serve's scheduled backups (backup_schedule.h). One
 * thread waits for the next copy's time on a monotonic clock (a stepped
 * wall clock moves no copy), makes it with store_backup on its own
 * connection, checks it with store_backup_verify on a connection to the
 * copy, and only then removes what is beyond `keep`: a schedule whose
 * copies stop checking never deletes the last ones that did. The figures
 * /metrics reads are this file's, one schedule per process (serve's). */
#define _DEFAULT_SOURCE		/* timegm */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backup_schedule.h"
#include "clock.h"
#include "errbuf.h"
#include "log.h"
#include "store.h"

#define STAMP_LEN	16		/* YYYYMMDDTHHMMSSZ */
#define STAMP_SHAPE	"dddddddd" "Tdddddd" "Z"

struct backup_schedule {
	char *dir;
	char *prefix;			/* the database file's name, no extension */
	int64_t interval_ms;
	int keep;
	struct store *s;		/* the thread's connection to the database */
	pthread_t thread;
	bool started;
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* on CLOCK_MONOTONIC: the stop */
	atomic_int stop;		/* also ends a statement in progress */
};

/* The schedule's figures, for /metrics (backup_schedule_figures). */
static pthread_mutex_t fig_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	bool active;
	int64_t began_mono, last_ok_mono;
	struct backup_figures f;
} fig;

bool
backup_schedule_figures(struct backup_figures *f)
{
	bool active;

	pthread_mutex_lock(&fig_mu);
	active = fig.active;
	if (active) {
		*f = fig.f;
		f->age_ms = clock_mono_ms() - (fig.last_ok_mono != 0 ? fig.last_ok_mono :
		    fig.began_mono);
	}
	pthread_mutex_unlock(&fig_mu);
	return active;
}

/* One attempt into the figures: OK with its copy's SIZE, or a failure. */
static void
figures_attempt(bool ok, int64_t duration_ms, int64_t size)
{
	pthread_mutex_lock(&fig_mu);
	fig.f.last_duration_ms = duration_ms;
	if (ok) {
		fig.last_ok_mono = clock_mono_ms();
		fig.f.last_success_ms = clock_now_ms();
		fig.f.last_size = size;
		fig.f.successes++;
	} else
		fig.f.failures++;
	pthread_mutex_unlock(&fig_mu);
}

/* Whether NAME is one of B's copies (PREFIX-YYYYMMDDTHHMMSSZ.db); its
 * time, in ms since the epoch, into *AT (NULL: not wanted). */
static bool
is_copy(const struct backup_schedule *b, const char *name, int64_t *at)
{
	size_t p = strlen(b->prefix);
	const char *t = name + p + 1;
	struct tm tm;

	if (strncmp(name, b->prefix, p) != 0 || name[p] != '-' ||
	    strlen(t) != STAMP_LEN + 3 || strcmp(t + STAMP_LEN, ".db") != 0)
		return false;
	for (size_t i = 0; i < STAMP_LEN; i++)
		if (STAMP_SHAPE[i] == 'd' ? (t[i] < '0' || t[i] > '9') : t[i] != STAMP_SHAPE[i])
			return false;
	if (at == NULL)
		return true;
	memset(&tm, 0, sizeof(tm));
	if (sscanf(t, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
	    &tm.tm_hour, &tm.tm_min, &tm.tm_sec) != 6)
		return false;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*at = (int64_t)timegm(&tm) * 1000;
	return true;
}

/* qsort's order of two names: the stamp sorts as the time it says (one
 * prefix, fixed width). */
static int
by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
free_names(char **v, long n)
{
	while (n > 0)
		free(v[--n]);
	free(v);
}

/* The names of B's copies in its directory, oldest first, into *NAMES
 * (freed with free_names). Returns the count, or -1 with ERR. */
static long
list_copies(const struct backup_schedule *b, char ***names, char *err, size_t errlen)
{
	struct dirent *e;
	size_t n = 0, cap = 0;
	char **v = NULL;
	DIR *d;

	*names = NULL;
	if ((d = opendir(b->dir)) == NULL) {
		errbuf_set(err, errlen, "reading %s: %s", b->dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d)) != NULL) {
		if (!is_copy(b, e->d_name, NULL))
			continue;
		if (n == cap) {
			char **grown = realloc(v, (cap = cap ? 2 * cap : 32) * sizeof(*v));

			if (grown == NULL)
				goto oom;
			v = grown;
		}
		if ((v[n] = strdup(e->d_name)) == NULL)
			goto oom;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), by_name);
	*names = v;
	return (long)n;
oom:
	closedir(d);
	free_names(v, (long)n);
	errbuf_set(err, errlen, "reading %s: out of memory", b->dir);
	return -1;
}

/* Removes B's oldest copies beyond its keep: only names of its own copies,
 * and only after a new one checked (the caller's). */
static void
prune(const struct backup_schedule *b)
{
	char **names, err[512], path[4096];
	long n, removed = 0;

	if ((n = list_copies(b, &names, err, sizeof(err))) < 0) {
		log_event("warn", NULL, NULL, "backup: older copies not removed: %s", err);
		return;
	}
	for (long i = 0; i + b->keep < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", b->dir, names[i]);
		if (unlink(path) == 0)
			removed++;
		else
			log_event("warn", NULL, NULL, "backup: removing %s (beyond keep %d): %s",
			    path, b->keep, strerror(errno));
	}
	if (removed > 0)
		log_event("info", NULL, NULL, "backup: removed %ld older %s beyond keep %d",
		    removed, removed == 1 ? "copy" : "copies", b->keep);
	free_names(names, n);
}

/* How long to wait for the first copy: an interval after the newest copy
 * in the directory when that one is younger than the interval (a restart
 * does not make one more), else none. */
static int64_t
first_wait_ms(const struct backup_schedule *b)
{
	int64_t at, age;
	char **names, err[512];
	long n;

	if ((n = list_copies(b, &names, err, sizeof(err))) <= 0) {
		free_names(names, 0);
		return 0;
	}
	age = is_copy(b, names[n - 1], &at) ? clock_now_ms() - at : -1;
	free_names(names, n);
	return age >= 0 && age < b->interval_ms ? b->interval_ms - age : 0;
}

/* Makes one copy into PATH and checks it; a copy made that does not
 * check is removed. Returns 0 with its size in *SIZE; -1 with ERR (a
 * failure); -2 when the stop ended it. */
static int
copy_once(struct backup_schedule *b, const char *path, int64_t *size, char *err,
    size_t errlen)
{
	struct store *c = NULL;
	bool made = false;
	struct stat st;
	int rc = -1;

	if (store_backup(b->s, path, err, errlen) != 0)
		goto done;
	made = true;
	if (store_open(path, &c, err, errlen) != 0)
		goto done;
	store_stop_on(c, &b->stop);
	if (store_backup_verify(c, path, err, errlen) != 0)
		goto done;
	if (stat(path, &st) != 0) {
		errbuf_set(err, errlen, "the checked copy %s: %s", path, strerror(errno));
		goto done;
	}
	*size = (int64_t)st.st_size;
	rc = 0;
done:
	store_close(c);
	/* A copy that did not check is worse than none: it would be trusted. */
	if (rc != 0 && made)
		(void)unlink(path);
	return rc != 0 && atomic_load(&b->stop) ? -2 : rc;
}

/* One scheduled copy: named for now, made, checked, counted, logged, and
 * what is beyond keep removed once it checked. */
static void
backup_once(struct backup_schedule *b)
{
	char path[4096], stamp[STAMP_LEN + 1], err[1024];
	int64_t t0 = clock_mono_ms(), size = 0, took;
	time_t now = (time_t)(clock_now_ms() / 1000);
	struct tm tm;
	int rc;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(path, sizeof(path), "%s/%s-%s.db", b->dir, b->prefix, stamp);
	rc = copy_once(b, path, &size, err, sizeof(err));
	took = clock_mono_ms() - t0;
	if (rc == -2) {
		log_event("info", NULL, NULL, "backup: %s stopped by the shutdown, and "
		    "removed", path);
		return;
	}
	figures_attempt(rc == 0, took, size);
	if (rc != 0) {
		log_event("error", NULL, NULL, "backup failed: %s (after %lld ms); the next "
		    "is tried in %lld s", err, (long long)took,
		    (long long)(b->interval_ms / 1000));
		return;
	}
	log_event("info", NULL, NULL, "backup: %s checked (integrity and history), "
	    "%lld bytes in %lld ms", path, (long long)size, (long long)took);
	prune(b);
}

/* Waits on B->cv until UNTIL (CLOCK_MONOTONIC, ms) or the stop. Returns
 * whether the stop came. */
static bool
wait_until(struct backup_schedule *b, int64_t until)
{
	struct timespec ts = { .tv_sec = (time_t)(until / 1000),
	    .tv_nsec = (long)(until % 1000) * 1000000L };
	bool stop;

	pthread_mutex_lock(&b->mu);
	while (!atomic_load(&b->stop) && clock_mono_ms() < until &&
	    pthread_cond_timedwait(&b->cv, &b->mu, &ts) != ETIMEDOUT)
		;
	stop = atomic_load(&b->stop) != 0;
	pthread_mutex_unlock(&b->mu);
	return stop;
}

/* The thread: a copy at each due time, the next one an interval after the
 * one before (those missed while a copy took longer are skipped). */
static void *
run(void *arg)
{
	struct backup_schedule *b = arg;
	int64_t due = clock_mono_ms() + first_wait_ms(b);

	while (!wait_until(b, due)) {
		backup_once(b);
		due += b->interval_ms;
		while (due <= clock_mono_ms())
			due += b->interval_ms;
	}
	return NULL;
}

/* The database file's name without its directory and extension: what the
 * copies' names begin with ("cutover" for /var/lib/cutover/cutover.db). */
static char *
prefix_of(const char *db_path)
{
	const char *base = strrchr(db_path, '/');
	char *p, *dot;

	p = strdup(base != NULL ? base + 1 : db_path);
	if (p != NULL && (dot = strrchr(p, '.')) != NULL && dot != p)
		*dot = '\0';
	return p;
}

int
backup_schedule_start(const char *db_path, const char *directory, int64_t interval_ms,
    int keep, struct backup_schedule **out, char *err, size_t errlen)
{
	struct backup_schedule *b;
	pthread_condattr_t ca;
	sigset_t block, old;
	int rc;

	*out = NULL;
	if ((b = calloc(1, sizeof(*b))) == NULL) {
		errbuf_set(err, errlen, "backup: out of memory");
		return -1;
	}
	pthread_mutex_init(&b->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&b->cv, &ca);
	pthread_condattr_destroy(&ca);
	b->interval_ms = interval_ms;
	b->keep = keep;
	if ((b->dir = strdup(directory)) == NULL || (b->prefix = prefix_of(db_path)) == NULL ||
	    b->prefix[0] == '\0') {
		errbuf_set(err, errlen, "backup: out of memory, or no file name in %s",
		    db_path);
		goto fail;
	}
	if (store_open(db_path, &b->s, err, errlen) != 0)
		goto fail;
	store_stop_on(b->s, &b->stop);
	pthread_mutex_lock(&fig_mu);
	memset(&fig, 0, sizeof(fig));
	fig.active = true;
	fig.began_mono = clock_mono_ms();
	fig.f.interval_ms = interval_ms;
	pthread_mutex_unlock(&fig_mu);
	/* Signals stay the caller's: its thread owns serve's stop flag. */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	rc = pthread_create(&b->thread, NULL, run, b);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		errbuf_set(err, errlen, "backup: cannot start its thread: %s", strerror(rc));
		goto fail;
	}
	b->started = true;
	log_event("info", NULL, NULL, "backup: into %s every %lld s, keeping %d checked "
	    "copies named %s-YYYYMMDDTHHMMSSZ.db", b->dir, (long long)(interval_ms / 1000),
	    keep, b->prefix);
	*out = b;
	return 0;
fail:
	backup_schedule_stop(b);
	return -1;
}

void
backup_schedule_stop(struct backup_schedule *b)
{
	if (b == NULL)
		return;
	pthread_mutex_lock(&b->mu);
	atomic_store(&b->stop, 1);
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	if (b->started)
		pthread_join(b->thread, NULL);
	pthread_mutex_lock(&fig_mu);
	fig.active = false;
	pthread_mutex_unlock(&fig_mu);
	store_close(b->s);
	pthread_cond_destroy(&b->cv);
	pthread_mutex_destroy(&b->mu);
	free(b->dir);
	free(b->prefix);
	free(b);
}
