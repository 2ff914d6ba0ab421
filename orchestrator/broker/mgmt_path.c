/* mgmt_path: percent-encoding (mgmt_escape, see mgmt.h) and building the
 * encoded request paths of the management API client. */
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "mgmt_int.h"

static bool
unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

int
mgmt_escape(const char *s, char *out, size_t outlen)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;
	size_t n = 0;

	if (s == NULL || out == NULL || outlen == 0)
		return -1;
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (unreserved(*p)) {
			if (n + 1 >= outlen)
				goto toolong;
			out[n++] = (char)*p;
		} else {
			if (n + 3 >= outlen)
				goto toolong;
			out[n++] = '%';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 0xf];
		}
	}
	out[n] = '\0';
	if (n > INT_MAX)
		return -1;
	return (int)n;
toolong:
	out[0] = '\0';
	return -1;
}

void
mgmt__path_add(struct path *p, const char *lit)
{
	size_t n = strlen(lit);

	if (p->overflow || p->len + n >= sizeof(p->s)) {
		p->overflow = 1;
		return;
	}
	memcpy(p->s + p->len, lit, n + 1);
	p->len += n;
}

void
mgmt__path_seg(struct path *p, const char *seg)
{
	int n;

	if (p->overflow)
		return;
	n = mgmt_escape(seg, p->s + p->len, sizeof(p->s) - p->len);
	if (n < 0) {
		p->overflow = 1;
		p->s[p->len] = '\0';
		return;
	}
	p->len += (size_t)n;
}

/* Starts P as PREFIX followed by the encoded vhost, e.g. "/api/queues/%2F". */
void
mgmt__path_vhost(struct path *p, const struct mgmt *m, const char *prefix)
{
	p->len = 0;
	p->overflow = 0;
	p->s[0] = '\0';
	mgmt__path_add(p, prefix);
	mgmt__path_add(p, m->vhost_enc);
}

int
mgmt__path_check(const struct path *p, const char *what, char *err, size_t errlen)
{
	if (p->overflow) {
		errbuf_set(err, errlen, "%s: path longer than %d bytes once "
		    "encoded", what, PATH_MAX_LEN - 1);
		return MGMT_ERR_ARG;
	}
	return 0;
}

/* Starts P as PREFIX, the encoded vhost, "/" and the encoded NAME, e.g.
 * "/api/queues/%2F/q". Returns 0, or MGMT_ERR_ARG with ERR when NAME is
 * empty (KIND says what it names). */
int
mgmt__path_object(struct path *p, const struct mgmt *m, const char *prefix,
    const char *name, const char *kind, char *err, size_t errlen)
{
	int rc;

	if ((rc = mgmt__check_name(name, kind, err, errlen)) != 0)
		return rc;
	mgmt__path_vhost(p, m, prefix);
	mgmt__path_add(p, "/");
	mgmt__path_seg(p, name);
	return 0;
}
