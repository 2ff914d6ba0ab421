/* tls: the plan's TLS settings (struct tls_opts, see tls.h) and the words
 * for a refused certificate that every TLS client of cutover shares. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/x509_vfy.h>

#include "errbuf.h"
#include "tls.h"

void
tls_opts_free(struct tls_opts *t)
{
	if (t == NULL)
		return;
	free(t->ca_file);
	free(t->cert_file);
	free(t->key_file);
	free(t->key_passphrase);
	free(t->server_name);
	free(t->where);
	memset(t, 0, sizeof(*t));
}

static int
copy_str(char **dst, const char *src)
{
	*dst = NULL;
	if (src == NULL)
		return 0;
	return (*dst = strdup(src)) == NULL ? -1 : 0;
}

int
tls_opts_copy(struct tls_opts *dst, const struct tls_opts *src)
{
	memset(dst, 0, sizeof(*dst));
	if (src == NULL)
		return 0;
	dst->no_verify = src->no_verify;
	if (copy_str(&dst->ca_file, src->ca_file) != 0 ||
	    copy_str(&dst->cert_file, src->cert_file) != 0 ||
	    copy_str(&dst->key_file, src->key_file) != 0 ||
	    copy_str(&dst->key_passphrase, src->key_passphrase) != 0 ||
	    copy_str(&dst->server_name, src->server_name) != 0 ||
	    copy_str(&dst->where, src->where) != 0) {
		tls_opts_free(dst);
		return -1;
	}
	return 0;
}

const char *
tls_where(const struct tls_opts *t, const char *default_where)
{
	return t != NULL && t->where != NULL ? t->where : default_where;
}

/* The X.509 verification codes cutover names, and what each means to an
 * operator; NULL words: a name mismatch (said with the name). */
static const struct {
	long code;
	const char *words;
	bool ca;                /* the fix is the CA bundle */
} verify_words[] = {
	{ X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, "unknown CA: the "
	    "server's certificate is not signed by a CA that is trusted", true },
	{ X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT, "unknown CA: the server's "
	    "certificate is not signed by a CA that is trusted", true },
	{ X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE, "unknown CA: the "
	    "server's certificate is not signed by a CA that is trusted", true },
	{ X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN, "unknown CA: the server's "
	    "certificate chain ends in a CA that is not trusted", true },
	{ X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT, "unknown CA: the server's "
	    "certificate is self-signed and not trusted", true },
	{ X509_V_ERR_CERT_UNTRUSTED, "unknown CA: the server's certificate "
	    "is not trusted", true },
	{ X509_V_ERR_CERT_HAS_EXPIRED, "expired: the server's certificate (or "
	    "one in its chain) is past its notAfter date", false },
	{ X509_V_ERR_CERT_NOT_YET_VALID, "not yet valid: the server's "
	    "certificate's notBefore date is in the future", false },
	{ X509_V_ERR_CERT_REVOKED, "revoked: the server's certificate is "
	    "revoked", false },
	{ X509_V_ERR_INVALID_PURPOSE, "wrong purpose: the server's "
	    "certificate is not for TLS servers", false },
	{ X509_V_ERR_HOSTNAME_MISMATCH, NULL, false },
	{ X509_V_ERR_IP_ADDRESS_MISMATCH, NULL, false },
};

char *
tls_verify_words(long code, const char *host, const struct tls_opts *t,
    const char *default_where, char *out, size_t outlen)
{
	const char *where = tls_where(t, default_where);
	size_t i, n = sizeof(verify_words) / sizeof(verify_words[0]);

	for (i = 0; i < n && verify_words[i].code != code; i++)
		;
	if (i == n)
		snprintf(out, outlen, "certificate verification failed (X.509 "
		    "error %ld; see %s)", code, where);
	else if (verify_words[i].words == NULL)
		snprintf(out, outlen, "name mismatch: the server's certificate "
		    "does not name '%s' (the URL's host, or server_name in %s)",
		    host, where);
	else if (verify_words[i].ca)
		snprintf(out, outlen, "%s (set ca in %s to the CA that signed "
		    "it)", verify_words[i].words, where);
	else
		snprintf(out, outlen, "%s (%s)", verify_words[i].words, where);
	return out;
}

int
tls_passphrase(const struct tls_opts *t, const char **out, char *err,
    size_t errlen)
{
	const char *v;

	*out = NULL;
	if (t == NULL || t->key_passphrase == NULL)
		return 0;
	if (strncmp(t->key_passphrase, "env:", 4) != 0) {
		errbuf_set(err, errlen, "%s: key_passphrase must be an env:NAME "
		    "reference", tls_where(t, "tls"));
		return -1;
	}
	if ((v = getenv(t->key_passphrase + 4)) == NULL || v[0] == '\0') {
		errbuf_set(err, errlen, "%s: key_passphrase %s names an "
		    "environment variable that is %s", tls_where(t, "tls"),
		    t->key_passphrase, v == NULL ? "not set" : "empty");
		return -1;
	}
	*out = v;
	return 0;
}

const char *
tls_insecure_warning(const struct tls_opts *t, const char *default_where,
    char *out, size_t outlen)
{
	if (t == NULL || !t->no_verify)
		return NULL;
	snprintf(out, outlen, "TLS VERIFICATION IS OFF (%s: verify: false): "
	    "the server's certificate and name are not checked; anyone on the "
	    "path can impersonate it", tls_where(t, default_where));
	return out;
}
