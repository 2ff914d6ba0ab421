/* source_addr: an LD_PRELOAD library for the benches' wrk runs: binds each
 * IPv4 TCP socket to the loopback address CUTOVER_BENCH_SOURCE (such as
 * 127.0.0.2) before it connects, so that two wrk runs on one machine come
 * from two addresses and each stays under serve's limit of connections
 * per address (SERVER_PER_IP_MAX, web/server.h): 64 clients on a plan's
 * samples and 64 on its document at once, as two groups of readers on
 * two machines would be. Without the variable it changes nothing. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* connect(2), with FD first bound to CUTOVER_BENCH_SOURCE (port 0: any)
 * when that is set and ADDR is IPv4. A bind that fails fails the connect,
 * with bind's errno: a bench must not measure from an address it did not
 * ask for. */
int
connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	static int (*real_connect)(int, const struct sockaddr *, socklen_t);
	const char *source = getenv("CUTOVER_BENCH_SOURCE");
	struct sockaddr_in from;

	if (real_connect == NULL &&
	    (real_connect = (int (*)(int, const struct sockaddr *, socklen_t))
	    dlsym(RTLD_NEXT, "connect")) == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (source != NULL && *source != '\0' && addr != NULL &&
	    addr->sa_family == AF_INET) {
		memset(&from, 0, sizeof(from));
		from.sin_family = AF_INET;
		if (inet_pton(AF_INET, source, &from.sin_addr) != 1) {
			errno = EINVAL;
			return -1;
		}
		if (bind(fd, (const struct sockaddr *)&from, sizeof(from)) != 0)
			return -1;
	}
	return real_connect(fd, addr, len);
}
