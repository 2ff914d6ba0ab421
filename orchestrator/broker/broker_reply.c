/* broker_reply: what a broker's reply means: the status a reply code
 * maps to, and RabbitMQ's "inequivalent arg" text turned into a sentence
 * that says what exists and what the plan wants; the words for each
 * status (broker_status_name). Pure: no connection. */
#include <stdio.h>
#include <string.h>

#include "broker_int.h"
#include "errbuf.h"

/* The status for the AMQP reply CODE. */
int
broker__code_status(int code)
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
bool
broker__explain_inequivalent(const char *text, char *err, size_t errlen)
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
		errbuf_set(err, errlen, "%s '%s' exists without %s, the plan wants "
		    "%s = %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, arg, want);
	else if (want == NULL)
		errbuf_set(err, errlen, "%s '%s' exists with %s = %s, the plan has "
		    "no %s: it cannot be redeclared; delete it or change the "
		    "plan", kind, name, arg, have, arg);
	else
		errbuf_set(err, errlen, "%s '%s' exists with %s = %s, the plan "
		    "wants %s: it cannot be redeclared; delete it or change "
		    "the plan", kind, name, arg, have, want);
	return true;
}

ERRBUF_NAME_FUNCTION(broker_status_name, BROKER_STATUS_MAP, "unknown")
