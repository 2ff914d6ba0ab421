/* server_listen: serve's listen address, read from its HOST:PORT text
 * (an IPv4 address, localhost or a bracketed IPv6 one), and whether it is
 * a loopback one (reads are open there, and nowhere else). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "server.h"

int
server_listen_parse(const char *spec, struct sockaddr_storage *ss, socklen_t *len,
    int *loopback, char *err, size_t errlen)
{
	struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
	const char *port, *end;
	char host[64];
	size_t hlen;
	long p = 0;
	int v6 = 0;

	memset(ss, 0, sizeof(*ss));
	if (spec[0] == '[') {
		if ((end = strchr(spec, ']')) == NULL || end[1] != ':')
			goto bad;
		hlen = (size_t)(end - spec - 1);
		if (hlen >= sizeof(host))
			goto bad;
		memcpy(host, spec + 1, hlen);
		port = end + 2;
		v6 = 1;
	} else {
		if ((end = strrchr(spec, ':')) == NULL)
			goto bad;
		hlen = (size_t)(end - spec);
		if (hlen == 0 || hlen >= sizeof(host))
			goto bad;
		memcpy(host, spec, hlen);
		port = end + 1;
	}
	host[hlen] = '\0';
	if (*port == '\0' || strlen(port) > 5)
		goto bad;
	for (const char *c = port; *c != '\0'; c++) {
		if (*c < '0' || *c > '9')
			goto bad;
		p = p * 10 + (*c - '0');
	}
	if (p > 65535)
		goto bad;
	if (v6) {
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons((uint16_t)p);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		*len = sizeof(*in6);
		return 0;
	}
	if (strcmp(host, "localhost") == 0)
		strcpy(host, "127.0.0.1");
	if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		goto bad;
	in4->sin_family = AF_INET;
	in4->sin_port = htons((uint16_t)p);
	*loopback = (ntohl(in4->sin_addr.s_addr) >> 24) == 127;
	*len = sizeof(*in4);
	return 0;
bad:
	snprintf(err, errlen, "listen address '%s': expected IPV4:PORT, localhost:PORT "
	    "or [IPV6]:PORT", spec);
	return -1;
}
