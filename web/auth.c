/* auth: the operators file and constant-time bearer token checks. */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "auth.h"
#include "hex.h"

#define HASH_LEN	32
#define LINE_MAX_LEN	1024
#define OPERATORS_MAX	1000

struct operator {
	char name[AUTH_NAME_MAX];
	unsigned char hash[HASH_LEN];
};

struct auth {
	struct operator *v;
	size_t n;
};

static int
sha256(const void *p, size_t n, unsigned char md[HASH_LEN])
{
	unsigned int mdlen = 0;

	if (EVP_Digest(p, n, md, &mdlen, EVP_sha256(), NULL) != 1 || mdlen != HASH_LEN)
		return -1;
	return 0;
}

int
auth_hash_hex(const char *token, size_t len, char out[65])
{
	unsigned char md[HASH_LEN];

	if (sha256(token, len, md) != 0)
		return -1;
	hex_encode(md, HASH_LEN, out);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

bool
auth_name_valid(const char *s, size_t n)
{
	if (n == 0 || n >= AUTH_NAME_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && c != '.' && c != '_' && c != '@' && c != '-')
			return false;
	}
	return true;
}

static int
unhex(const char *s, size_t n, unsigned char out[HASH_LEN])
{
	if (n != 2 * HASH_LEN)
		return -1;
	for (size_t i = 0; i < HASH_LEN; i++) {
		unsigned int v;
		char two[3] = { s[2 * i], s[2 * i + 1], '\0' };

		if (!isxdigit((unsigned char)two[0]) || !isxdigit((unsigned char)two[1]) ||
		    sscanf(two, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	return 0;
}

/* Parses one line (comments and blanks already skipped) into OP. */
static int
parse_line(char *line, struct operator *op, const char **why)
{
	char *colon = strchr(line, ':'), *hex;
	size_t nlen, hlen;

	if (colon == NULL) {
		*why = "expected name:sha256hex";
		return -1;
	}
	nlen = (size_t)(colon - line);
	while (nlen > 0 && isspace((unsigned char)line[nlen - 1]))
		nlen--;
	hex = colon + 1;
	while (isspace((unsigned char)*hex))
		hex++;
	hlen = strlen(hex);
	if (!auth_name_valid(line, nlen)) {
		*why = "the name must be 1 to 64 of A-Z a-z 0-9 . _ @ -";
		return -1;
	}
	if (unhex(hex, hlen, op->hash) != 0) {
		*why = "expected the token's sha256 as 64 hex digits after the colon "
		    "(printf %s \"$TOKEN\" | sha256sum)";
		return -1;
	}
	memcpy(op->name, line, nlen);
	op->name[nlen] = '\0';
	return 0;
}

int
auth_load(const char *path, struct auth **out, char *err, size_t errlen)
{
	struct auth *a = NULL;
	FILE *f = NULL;
	char line[LINE_MAX_LEN + 2];
	const char *why = NULL;
	int lineno = 0, rc = -1;

	*out = NULL;
	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "operators file %s: %s", path, strerror(errno));
		return -1;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL ||
	    (a->v = calloc(OPERATORS_MAX, sizeof(*a->v))) == NULL) {
		snprintf(err, errlen, "operators file %s: out of memory", path);
		goto done;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		char *p = line, *end;
		size_t len = strlen(line);

		lineno++;
		if (len > LINE_MAX_LEN || (len > 0 && line[len - 1] != '\n' && !feof(f))) {
			snprintf(err, errlen, "%s:%d: line too long", path, lineno);
			goto done;
		}
		if ((end = strchr(p, '#')) != NULL)
			*end = '\0';
		while (isspace((unsigned char)*p))
			p++;
		end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*p == '\0')
			continue;
		if (a->n == OPERATORS_MAX) {
			snprintf(err, errlen, "%s:%d: more than %d operators", path, lineno,
			    OPERATORS_MAX);
			goto done;
		}
		if (parse_line(p, &a->v[a->n], &why) != 0) {
			snprintf(err, errlen, "%s:%d: %s", path, lineno, why);
			goto done;
		}
		for (size_t i = 0; i < a->n; i++) {
			if (strcmp(a->v[i].name, a->v[a->n].name) == 0) {
				snprintf(err, errlen, "%s:%d: operator '%s' appears twice", path,
				    lineno, a->v[i].name);
				goto done;
			}
			if (memcmp(a->v[i].hash, a->v[a->n].hash, HASH_LEN) == 0) {
				snprintf(err, errlen, "%s:%d: '%s' has the same token as '%s'",
				    path, lineno, a->v[a->n].name, a->v[i].name);
				goto done;
			}
		}
		a->n++;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "operators file %s: read error", path);
		goto done;
	}
	if (a->n == 0) {
		snprintf(err, errlen, "operators file %s: no operator in it (lines "
		    "name:sha256hex-of-token)", path);
		goto done;
	}
	*out = a;
	a = NULL;
	rc = 0;
done:
	OPENSSL_cleanse(line, sizeof(line));
	auth_free(a);
	if (f != NULL)
		fclose(f);
	return rc;
}

void
auth_free(struct auth *a)
{
	if (a == NULL)
		return;
	if (a->v != NULL)
		OPENSSL_cleanse(a->v, OPERATORS_MAX * sizeof(*a->v));
	free(a->v);
	free(a);
}

size_t
auth_count(const struct auth *a)
{
	return a != NULL ? a->n : 0;
}

const char *
auth_name(const struct auth *a, size_t i)
{
	return a != NULL && i < a->n ? a->v[i].name : NULL;
}

enum auth_result
auth_check(const struct auth *a, const char *header, char *name, size_t namelen)
{
	unsigned char md[HASH_LEN];
	const char *tok, *end;
	size_t len, found = 0, match = 0;

	if (namelen > 0)
		name[0] = '\0';
	if (a == NULL)
		return AUTH_UNCONFIGURED;
	if (header == NULL)
		return AUTH_NONE;
	while (*header == ' ' || *header == '\t')
		header++;
	if (strncasecmp(header, "Bearer", 6) != 0 ||
	    (header[6] != ' ' && header[6] != '\t'))
		return AUTH_MALFORMED;
	tok = header + 7;
	while (*tok == ' ' || *tok == '\t')
		tok++;
	end = tok + strlen(tok);
	while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	len = (size_t)(end - tok);
	if (len == 0 || len > AUTH_TOKEN_MAX)
		return AUTH_MALFORMED;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)tok[i] <= 0x20 || (unsigned char)tok[i] >= 0x7f)
			return AUTH_MALFORMED;
	if (sha256(tok, len, md) != 0)
		return AUTH_UNKNOWN;
	/* Every entry, no early exit; the index is selected with a mask. */
	for (size_t i = 0; i < a->n; i++) {
		size_t eq = (size_t)(CRYPTO_memcmp(md, a->v[i].hash, HASH_LEN) == 0);
		size_t mask = (size_t)0 - eq;

		found = (found & ~mask) | (i & mask);
		match |= eq;
	}
	OPENSSL_cleanse(md, sizeof(md));
	if (!match)
		return AUTH_UNKNOWN;
	if (namelen < AUTH_NAME_MAX)
		return AUTH_UNKNOWN;
	memcpy(name, a->v[found].name, AUTH_NAME_MAX);
	return AUTH_OK;
}
