/* pattern: PCRE2 regular expressions with bounded cost (see pattern.h). */
#define PCRE2_CODE_UNIT_WIDTH 8

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include "errbuf.h"
#include "pattern.h"

struct pattern {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	char *text;
};

int
pattern_compile(const char *text, struct pattern **out, char *err, size_t errlen)
{
	struct pattern *p = NULL;
	pcre2_compile_context *cctx = NULL;
	PCRE2_UCHAR msg[256];
	PCRE2_SIZE off = 0;
	size_t len = strlen(text);
	int code = 0, rc = -1;

	*out = NULL;
	if (len > PATTERN_LENGTH_MAX) {
		errbuf_set(err, errlen, "the pattern is %zu bytes long; at most %d are "
		    "accepted", len, PATTERN_LENGTH_MAX);
		return -1;
	}
	if ((p = calloc(1, sizeof(*p))) == NULL || (p->text = strdup(text)) == NULL ||
	    (cctx = pcre2_compile_context_create(NULL)) == NULL ||
	    (p->mctx = pcre2_match_context_create(NULL)) == NULL)
		goto nomem;
	pcre2_set_max_pattern_length(cctx, PATTERN_LENGTH_MAX);
	pcre2_set_parens_nest_limit(cctx, 64);
	pcre2_set_match_limit(p->mctx, PATTERN_MATCH_LIMIT);
	pcre2_set_depth_limit(p->mctx, PATTERN_DEPTH_LIMIT);
	pcre2_set_heap_limit(p->mctx, PATTERN_HEAP_LIMIT_KIB);
	p->code = pcre2_compile((PCRE2_SPTR)text, len, 0, &code, &off, cctx);
	if (p->code == NULL) {
		if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
			errbuf_set((char *)msg, sizeof(msg), "error %d", code);
		errbuf_set(err, errlen, "%s at offset %zu", (const char *)msg, (size_t)off);
		goto done;
	}
	if ((p->md = pcre2_match_data_create(1, NULL)) == NULL)
		goto nomem;
	*out = p;
	p = NULL;
	rc = 0;
	goto done;
nomem:
	errbuf_set(err, errlen, "out of memory compiling a pattern");
done:
	pcre2_compile_context_free(cctx);
	pattern_free(p);
	return rc;
}

int
pattern_match(struct pattern *p, const char *subject, bool *matched, char *err,
    size_t errlen)
{
	PCRE2_UCHAR msg[256];
	int r;

	*matched = false;
	r = pcre2_match(p->code, (PCRE2_SPTR)subject, strlen(subject), 0, 0, p->md,
	    p->mctx);
	if (r >= 0) {
		*matched = true;
		return 0;
	}
	if (r == PCRE2_ERROR_NOMATCH)
		return 0;
	if (pcre2_get_error_message(r, msg, sizeof(msg)) < 0)
		errbuf_set((char *)msg, sizeof(msg), "error %d", r);
	errbuf_set(err, errlen, "%s", (const char *)msg);
	return -1;
}

const char *
pattern_text(const struct pattern *p)
{
	return p->text;
}

void
pattern_free(struct pattern *p)
{
	if (p == NULL)
		return;
	pcre2_code_free(p->code);
	pcre2_match_data_free(p->md);
	pcre2_match_context_free(p->mctx);
	free(p->text);
	free(p);
}

int
pattern_exact(const char *name, char *out, size_t outlen)
{
	size_t o = 0;

	if (outlen < 3)
		return -1;
	out[o++] = '^';
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		bool plain = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= 'A' && *p <= 'Z') || *p == '_' || *p >= 0x80;

		if (o + 4 >= outlen)
			return -1;
		if (!plain)
			out[o++] = '\\';
		out[o++] = (char)*p;
	}
	out[o++] = '$';
	out[o] = '\0';
	return 0;
}
