/* tls: the TLS settings a plan gives for one service it reaches (the
 * broker's `broker.tls`, the flag service's `flag.tls`), and the words
 * every TLS client of cutover (AMQP over rabbitmq-c, the management API,
 * the flag client and the remote CLI over libcurl) uses to say why a
 * certificate was refused. Pure: no I/O beyond reading the environment
 * for the key passphrase reference. */
#ifndef CUTOVER_TLS_H
#define CUTOVER_TLS_H

#include <stdbool.h>
#include <stddef.h>

/* What to trust and what to present. All-zero (or a NULL pointer where a
 * function takes one) means: verify the server against the system's CA
 * store and the URL's host, present no client certificate. */
struct tls_opts {
	char *ca_file;         /* PEM bundle of the CAs to trust, or NULL */
	char *cert_file;       /* client certificate (mutual TLS), or NULL */
	char *key_file;        /* its private key (PEM), with cert_file */
	char *key_passphrase;  /* env:NAME reference, or NULL: key not encrypted */
	char *server_name;     /* name the server's certificate must carry,
	                        * or NULL: the URL's host */
	bool no_verify;        /* `verify: false`: certificate and name NOT
	                        * checked (reported loudly wherever used) */
	char *where;           /* "broker.tls (FILE:LINE:COL)" for messages,
	                        * or NULL when the plan gives no tls map */
};

/* Frees what T holds (not T itself) and zeroes it. T may be NULL. */
void tls_opts_free(struct tls_opts *t);

/* Copies SRC into DST (deep). Returns 0, or -1 out of memory (DST then
 * holds nothing). SRC may be NULL: DST becomes all-zero. */
int tls_opts_copy(struct tls_opts *dst, const struct tls_opts *src);

/* What WHERE should say of T in a message: T->where, or DEFAULT_WHERE
 * when the plan gave no tls map (T NULL or without where). */
const char *tls_where(const struct tls_opts *t, const char *default_where);

/* Writes into OUT why the peer's certificate was refused, from an X.509
 * verification code (OpenSSL's X509_V_ERR_*: unknown CA, expired, not yet
 * valid, name mismatch, ...), naming HOST (the name checked) and what the
 * plan can change (T's WHERE). Returns OUT. */
char *tls_verify_words(long code, const char *host, const struct tls_opts *t,
    const char *default_where, char *out, size_t outlen);

/* Resolves T->key_passphrase ("env:NAME"). Returns 0 and sets *OUT to the
 * value (owned by the environment; NULL when T names no passphrase), or
 * -1 with ERR (which never holds the value). */
int tls_passphrase(const struct tls_opts *t, const char **out, char *err,
    size_t errlen);

/* The warning every user of T prints or logs when T turns verification
 * off, naming T's place in the plan; NULL when verification is on. */
const char *tls_insecure_warning(const struct tls_opts *t,
    const char *default_where, char *out, size_t outlen);

#endif
