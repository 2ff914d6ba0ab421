/* broker_url: the amqp:// or amqps:// URL (broker_url_parse, see broker.h)
 * and the password reference ("env:NAME") resolved at each connect.
 *
 * Not rabbitmq-c's amqp_parse_url: in 0.11 (tried on each input) it gives
 * one "could not parse AMQP URL" for every fault, where this names which;
 * it reads "amqp://h/" as the vhost "" (here "/"), "amqp://:5672/v" as
 * host "localhost" and "amqp://h:0/v" as port 0 (both refused here),
 * "%00" as the end of the vhost (refused here), and refuses a vhost with
 * bytes above 0x7f such as "caf%C3%A9" (taken here). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

/* Refuses what URL must not be or hold: empty, neither amqp:// nor
 * amqps://, credentials, a query or a fragment. Sets U->tls, *AUTH to the
 * authority after the scheme and *END to where it ends. Returns 0, or
 * BROKER_ERR with ERR. */
static int
url_check_form(const char *url, struct broker_url *u, const char **auth,
    const char **end, char *err, size_t errlen)
{
	const char *p;

	if (url == NULL || url[0] == '\0') {
		errbuf_set(err, errlen, "no broker URL given");
		return BROKER_ERR;
	}
	if (strncmp(url, "amqps://", 8) == 0) {
		u->tls = true;
		p = url + 8;
	} else if (strncmp(url, "amqp://", 7) == 0) {
		p = url + 7;
	} else {
		errbuf_set(err, errlen, "broker URL: must start with amqp:// "
		    "or amqps://");
		return BROKER_ERR;
	}
	*end = p + strcspn(p, "/?#");
	if (memchr(p, '@', (size_t)(*end - p)) != NULL) {
		errbuf_set(err, errlen, "broker URL: credentials do not belong in "
		    "the URL; give the username and an env: password reference "
		    "in the plan");
		return BROKER_ERR;
	}
	if (strpbrk(p, "?#") != NULL) {
		errbuf_set(err, errlen, "broker URL: query strings and fragments "
		    "are not supported");
		return BROKER_ERR;
	}
	*auth = p;
	return 0;
}

/* Copies the host of the authority P..END ("host", "host:port", "[v6]",
 * "[v6]:port") into U->host and sets *PORT to the port's first digit (the
 * port runs to END), or NULL when there is none. Returns 0, or BROKER_ERR
 * with ERR. */
static int
url_host(const char *p, const char *end, struct broker_url *u,
    const char **port, char *err, size_t errlen)
{
	const char *host, *hend;
	size_t n;

	*port = NULL;
	if (*p == '[') {
		host = p + 1;
		if ((hend = memchr(host, ']', (size_t)(end - host))) == NULL) {
			errbuf_set(err, errlen, "broker URL: '[' without ']' "
			    "around an IPv6 address");
			return BROKER_ERR;
		}
		if (hend + 1 < end) {
			if (hend[1] != ':') {
				errbuf_set(err, errlen, "broker URL: expected ':' "
				    "and a port after the IPv6 address");
				return BROKER_ERR;
			}
			*port = hend + 2;
		}
	} else {
		host = p;
		hend = memchr(p, ':', (size_t)(end - p));
		if (hend != NULL)
			*port = hend + 1;
		else
			hend = end;
	}
	n = (size_t)(hend - host);
	if (n == 0) {
		errbuf_set(err, errlen, "broker URL: no host");
		return BROKER_ERR;
	}
	if (n >= sizeof(u->host)) {
		errbuf_set(err, errlen, "broker URL: host longer than %zu bytes",
		    sizeof(u->host) - 1);
		return BROKER_ERR;
	}
	memcpy(u->host, host, n);
	u->host[n] = '\0';
	return 0;
}

/* Sets U->port from the digits PORT..PEND (5672, or 5671 for amqps://,
 * when PORT is NULL).
 * Returns 0, or BROKER_ERR with ERR. */
static int
url_port(const char *port, const char *pend, struct broker_url *u, char *err,
    size_t errlen)
{
	long v;

	u->port = u->tls ? 5671 : 5672;
	if (port == NULL)
		return 0;
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
		errbuf_set(err, errlen, "broker URL: the port must be a "
		    "number from 1 to 65535");
		return BROKER_ERR;
	}
	u->port = (int)v;
	return 0;
}

/* Sets U->vhost from P, the URL's path without its leading '/',
 * percent-decoded ("/" when empty). Returns 0, or BROKER_ERR with ERR. */
static int
url_vhost(const char *p, struct broker_url *u, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; *p != '\0'; p++) {
		int c = (unsigned char)*p;

		if (c == '/') {
			errbuf_set(err, errlen, "broker URL: the vhost must be one "
			    "path segment; write '/' inside it as %%2f");
			return BROKER_ERR;
		}
		if (c == '%') {
			int hi = hex_value((unsigned char)p[1]);
			int lo = hi < 0 ? -1 : hex_value((unsigned char)p[2]);

			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
				errbuf_set(err, errlen, "broker URL: bad "
				    "percent-encoding in the vhost (expected "
				    "%%XX, not %%00)");
				return BROKER_ERR;
			}
			c = hi * 16 + lo;
			p += 2;
		}
		if (i + 1 >= sizeof(u->vhost)) {
			errbuf_set(err, errlen, "broker URL: vhost longer than %zu "
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

int
broker_url_parse(const char *url, struct broker_url *u, char *err,
    size_t errlen)
{
	const char *auth, *end, *port;
	int rc;

	memset(u, 0, sizeof(*u));
	if ((rc = url_check_form(url, u, &auth, &end, err, errlen)) != 0 ||
	    (rc = url_host(auth, end, u, &port, err, errlen)) != 0 ||
	    (rc = url_port(port, end, u, err, errlen)) != 0)
		return rc;
	/* The path, without its leading '/', is the vhost. */
	return url_vhost(*end == '/' ? end + 1 : end, u, err, errlen);
}

/* Resolves REF ("env:NAME"). Returns 0 and sets *OUT to the value (owned
 * by the environment), or BROKER_ERR. Never puts the value in ERR. */
int
broker__resolve_password(const char *ref, const char **out, char *err, size_t errlen)
{
	const char *name, *c, *v;

	*out = NULL;
	if (ref == NULL || strncmp(ref, "env:", 4) != 0) {
		/* Not repeated: it may be a literal password. */
		errbuf_set(err, errlen, "the broker password must be a reference "
		    "such as env:NAME, not a literal");
		return BROKER_ERR;
	}
	name = ref + 4;
	for (c = name; *c != '\0'; c++)
		if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
		    *c == '_' || (c > name && *c >= '0' && *c <= '9')))
			break;
	if (c == name || *c != '\0' || c - name > 128) {
		errbuf_set(err, errlen, "the broker password reference must be "
		    "env:NAME with NAME made of letters, digits and '_'");
		return BROKER_ERR;
	}
	if ((v = getenv(name)) == NULL) {
		errbuf_set(err, errlen, "the broker password reference env:%s "
		    "names an environment variable that is not set", name);
		return BROKER_ERR;
	}
	if (v[0] == '\0') {
		errbuf_set(err, errlen, "the broker password reference env:%s "
		    "names an environment variable that is empty", name);
		return BROKER_ERR;
	}
	*out = v;
	return 0;
}
