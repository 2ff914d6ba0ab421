/* broker_tcp: the TCP connection under the AMQP client: a non-blocking
 * connect to every address of the host within the timeout, and the words
 * for why it failed. */
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "broker_int.h"

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
		left = deadline - clock_mono_ms();
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
int
broker__tcp_connect(const struct broker_url *u, int timeout_ms, int *fdp, char *err,
    size_t errlen)
{
	struct addrinfo hints, *res = NULL, *ai;
	char port[8], why[160] = "no address";
	int64_t deadline = clock_mono_ms() + timeout_ms;
	int fd = -1, gai, e, fl, one = 1, rc = BROKER_ECONNECT;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%d", u->port);
	if ((gai = getaddrinfo(u->host, port, &hints, &res)) != 0) {
		errbuf_set(err, errlen, "connecting to %s:%d: cannot resolve the "
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
		errbuf_set(err, errlen, "connecting to %s:%d: %s", u->host,
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
