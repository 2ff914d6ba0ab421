/* broker_tls: the TLS socket under the AMQP client for amqps:// URLs
 * (rabbitmq-c's SSL socket): the CA bundle, the client certificate and
 * key, the name the broker's certificate must carry, and the words for
 * why a handshake failed (no route, handshake, unknown CA, name mismatch,
 * expired, client certificate required). */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "broker_int.h"

#define DEFAULT_WHERE "broker.tls (not given: the system's CA store)"

/* What the verification callback saw during one handshake. */
struct seen {
	long code;              /* first X509_V_ERR_*, or 0 */
};

static int seen_index = -1;
static pthread_once_t seen_once = PTHREAD_ONCE_INIT;

static void
seen_init(void)
{
	seen_index = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, NULL);
}

/* The certificate store's verification callback: keeps the first error
 * so that the message can say which it was (rabbitmq-c only says that
 * verification failed). Changes no verdict. */
static int
verify_cb(int ok, X509_STORE_CTX *x)
{
	SSL *ssl;
	struct seen *s = NULL;

	if (ok)
		return ok;
	ssl = X509_STORE_CTX_get_ex_data(x, SSL_get_ex_data_X509_STORE_CTX_idx());
	if (ssl != NULL)
		s = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), seen_index);
	if (s != NULL && s->code == 0)
		s->code = X509_STORE_CTX_get_error(x);
	return ok;
}

/* The last OpenSSL error's reason, or "" (the queue is this thread's). */
static const char *
ssl_reason(void)
{
	unsigned long e = ERR_peek_last_error();
	const char *r = e != 0 ? ERR_reason_error_string(e) : NULL;

	return r != NULL ? r : "";
}

/* Loads what B->tls names into CTX through SOCK. Returns 0, or BROKER_ERR
 * with ERR naming the file and the plan's place. */
static int
load_files(struct broker *b, amqp_socket_t *sock, SSL_CTX *ctx, char *err,
    size_t errlen)
{
	const struct tls_opts *t = &b->tls;
	const char *where = tls_where(t, DEFAULT_WHERE), *pass;
	char why[WHY_MAX];

	if (t->ca_file != NULL) {
		if (amqp_ssl_socket_set_cacert(sock, t->ca_file) != 0) {
			errbuf_set(err, errlen, "%s: cannot read the CA bundle "
			    "'%s' (%s)", where, t->ca_file, ssl_reason());
			return BROKER_ERR;
		}
	} else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
		errbuf_set(err, errlen, "%s: cannot load the system's CA store",
		    where);
		return BROKER_ERR;
	}
	if (t->cert_file == NULL)
		return 0;
	if (tls_passphrase(t, &pass, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "%s", why);
		return BROKER_ERR;
	}
	if (pass != NULL)
		amqp_ssl_socket_set_key_passwd(sock, pass);
	if (amqp_ssl_socket_set_key(sock, t->cert_file, t->key_file) != 0) {
		errbuf_set(err, errlen, "%s: cannot use the client certificate "
		    "'%s' with the key '%s' (%s: a wrong key_passphrase, or a key "
		    "that is not the certificate's?)", where, t->cert_file,
		    t->key_file, ssl_reason());
		return BROKER_ERR;
	}
	return 0;
}

/* Sets what CTX checks of the broker's certificate. Returns 0, or
 * BROKER_ERR with ERR. */
static int
set_verify(struct broker *b, amqp_socket_t *sock, SSL_CTX *ctx, char *err,
    size_t errlen)
{
	const struct tls_opts *t = &b->tls;
	const char *name = t->server_name != NULL ? t->server_name : b->url.host;
	X509_VERIFY_PARAM *param = SSL_CTX_get0_param(ctx);
	unsigned char ip[16];
	int ok;

	/* The name is checked by OpenSSL during the handshake (IP SANs too),
	 * not by rabbitmq-c's own check after it. */
	amqp_ssl_socket_set_verify_hostname(sock, 0);
	if (t->no_verify) {
		amqp_ssl_socket_set_verify_peer(sock, 0);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
		return 0;
	}
	amqp_ssl_socket_set_verify_peer(sock, 1);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	X509_STORE_set_verify_cb(SSL_CTX_get_cert_store(ctx), verify_cb);
	if (inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1)
		ok = X509_VERIFY_PARAM_set1_ip_asc(param, name);
	else
		ok = X509_VERIFY_PARAM_set1_host(param, name, 0);
	if (ok != 1) {
		errbuf_set(err, errlen, "%s: cannot check the name '%s'",
		    tls_where(t, DEFAULT_WHERE), name);
		return BROKER_ERR;
	}
	return 0;
}

/* Says why opening the TLS socket within CONNECT_MS failed with STATUS. */
static void
open_error(struct broker *b, int status, int connect_ms, const struct seen *s,
    char *err, size_t errlen)
{
	const char *name = b->tls.server_name != NULL ? b->tls.server_name :
	    b->url.host;
	char why[WHY_MAX];
	int fd = -1;

	if (s->code != 0) {
		errbuf_set(err, errlen, "TLS handshake with %s:%d: %s", b->url.host,
		    b->url.port, tls_verify_words(s->code, name, &b->tls,
		    DEFAULT_WHERE, why, sizeof(why)));
		return;
	}
	if (status == AMQP_STATUS_SSL_CONNECTION_FAILED ||
	    status == AMQP_STATUS_SSL_ERROR ||
	    status == AMQP_STATUS_SSL_PEER_VERIFY_FAILED ||
	    status == AMQP_STATUS_SSL_HOSTNAME_VERIFY_FAILED) {
		const char *r = ssl_reason();

		errbuf_set(err, errlen, "TLS handshake with %s:%d failed: %s%s",
		    b->url.host, b->url.port, r[0] != '\0' ? r :
		    amqp_error_string2(status), r[0] == '\0' ||
		    strstr(r, "wrong version") != NULL ||
		    strstr(r, "packet length") != NULL ? " (the server did not "
		    "answer in TLS: is that port a TLS listener? amqps:// "
		    "needs one)" : "");
		return;
	}
	/* Before TLS: say why the TCP connect failed, in tcp_connect's words. */
	if (broker__tcp_connect(&b->url, connect_ms, &fd, err, errlen) == 0) {
		close(fd);
		errbuf_set(err, errlen, "connecting to %s:%d over TLS: %s",
		    b->url.host, b->url.port, amqp_error_string2(status));
	}
}

int
broker__tls_socket_open(struct broker *b, int connect_ms, char *err, size_t errlen)
{
	amqp_socket_t *sock;
	SSL_CTX *ctx;
	struct seen s = { 0 };
	struct timeval tv;
	int status, rc;

	(void)pthread_once(&seen_once, seen_init);
	if (seen_index < 0 || (sock = amqp_ssl_socket_new(b->conn)) == NULL ||
	    (ctx = amqp_ssl_socket_get_context(sock)) == NULL) {
		errbuf_set(err, errlen, "connecting to %s:%d: cannot set up TLS",
		    b->url.host, b->url.port);
		return BROKER_ERR;
	}
	if ((rc = load_files(b, sock, ctx, err, errlen)) != 0 ||
	    (rc = set_verify(b, sock, ctx, err, errlen)) != 0)
		return rc;
	(void)SSL_CTX_set_ex_data(ctx, seen_index, &s);
	tv.tv_sec = connect_ms / 1000;
	tv.tv_usec = (connect_ms % 1000) * 1000;
	ERR_clear_error();
	status = amqp_socket_open_noblock(sock, b->url.host, b->url.port, &tv);
	(void)SSL_CTX_set_ex_data(ctx, seen_index, NULL);
	if (status == AMQP_STATUS_OK)
		return 0;
	open_error(b, status, connect_ms, &s, err, errlen);
	return BROKER_ECONNECT;
}

bool
broker__tls_login_refused(const struct broker *b, int status, char *err, size_t errlen)
{
	const char *r, *where = tls_where(&b->tls, "broker.tls");

	if (!b->url.tls)
		return false;
	r = ssl_reason();
	if (strstr(r, "certificate required") != NULL ||
	    strstr(r, "bad certificate") != NULL ||
	    strstr(r, "unknown ca") != NULL) {
		errbuf_set(err, errlen, "TLS with %s:%d: the broker refused "
		    "cutover's client certificate (%s): it requires one it "
		    "trusts; set cert and key in %s", b->url.host, b->url.port,
		    r, where);
		return true;
	}
	if (status != AMQP_STATUS_SSL_ERROR && status != AMQP_STATUS_SOCKET_ERROR &&
	    status != AMQP_STATUS_CONNECTION_CLOSED)
		return false;
	/* The alert is not always still in OpenSSL's queue by now. */
	if (b->tls.cert_file == NULL)
		errbuf_set(err, errlen, "TLS with %s:%d: the broker ended the "
		    "session during login (%s) and cutover presented no client "
		    "certificate: a broker that requires one (RabbitMQ's "
		    "fail_if_no_peer_cert) does so; set cert and key in %s",
		    b->url.host, b->url.port, r[0] != '\0' ? r :
		    amqp_error_string2(status), where);
	else
		errbuf_set(err, errlen, "TLS with %s:%d: the broker ended the "
		    "session during login (%s); does it trust the client "
		    "certificate in %s?", b->url.host, b->url.port,
		    r[0] != '\0' ? r : amqp_error_string2(status), where);
	return true;
}
