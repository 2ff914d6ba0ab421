/* store_lock: the one-engine-per-database lock (DESIGN §4). An engine
 * (`cutover run`, `cutover serve`) takes an exclusive fcntl lock on a file
 * beside the database, DB.lock, which holds its pid; the kernel drops the
 * lock when the process ends however it ends, kill -9 included, so a lock
 * is never left stale. Readers and operator commands take no lock. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store.h"
#include "store_int.h"

/* The pid the lock file says holds it, or 0. */
static long
pid_in_file(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

int
store_lock_take(const char *db_path, struct store_lock *out, char *err, size_t errlen)
{
	struct flock fl;
	char path[4096], pid[32];
	int fd = -1, rc = -1, n;

	out->fd = -1;
	if ((size_t)snprintf(path, sizeof(path), "%s.lock", db_path) >= sizeof(path)) {
		errbuf_set(err, errlen, "database path %s is too long", db_path);
		return -1;
	}
	if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0) {
		errbuf_set(err, errlen, "opening the engine lock %s: %s", path,
		    strerror(errno));
		goto done;
	}
	memset(&fl, 0, sizeof(fl));
	fl.l_type = F_WRLCK;
	fl.l_whence = SEEK_SET;
	if (fcntl(fd, F_SETLK, &fl) != 0) {
		if (errno != EACCES && errno != EAGAIN) {
			errbuf_set(err, errlen, "locking %s: %s", path, strerror(errno));
			goto done;
		}
		/* The kernel knows the holder; the file says it too. */
		memset(&fl, 0, sizeof(fl));
		fl.l_type = F_WRLCK;
		fl.l_whence = SEEK_SET;
		if (fcntl(fd, F_GETLK, &fl) != 0 || fl.l_type == F_UNLCK)
			fl.l_pid = (pid_t)pid_in_file(fd);
		errbuf_set(err, errlen, "database %s is owned by another engine (pid %ld, "
		    "lock %s): one engine per database; stop that one first (read-only "
		    "verbs such as status and history work meanwhile)", db_path,
		    (long)fl.l_pid, path);
		rc = STORE_LOCKED;
		goto done;
	}
	n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
		errbuf_set(err, errlen, "writing the engine lock %s: %s", path,
		    strerror(errno));
		goto done;
	}
	out->fd = fd;
	return 0;
done:
	if (fd >= 0)
		close(fd);
	return rc;
}

void
store_lock_release(struct store_lock *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
}
