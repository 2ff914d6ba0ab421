/* broker_conn: the handle: opening it (the URLs parsed, the settings
 * checked, the first node that answers connected and its channel opened
 * through broker_session.c) and closing it. */
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

int
broker_open(const char *url, const char *username, const char *password_ref,
    int timeout_ms, struct broker **out, char *err, size_t errlen)
{
	return broker_open_list(&url, 1, NULL, username, password_ref, timeout_ms,
	    out, err, errlen);
}

int
broker_open_tls(const char *url, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen)
{
	return broker_open_list(&url, 1, tls, username, password_ref, timeout_ms,
	    out, err, errlen);
}

int
broker_open_list(const char *const *urls, size_t nurls, const struct tls_opts *tls,
    const char *username, const char *password_ref, int timeout_ms,
    struct broker **out, char *err, size_t errlen)
{
	struct broker *b = NULL;
	const char *password;
	int rc = BROKER_ERR;

	*out = NULL;
	if (nurls == 0) {
		errbuf_set(err, errlen, "opening the broker connection: no URL");
		return BROKER_ERR;
	}
	if ((b = calloc(1, sizeof(*b))) == NULL ||
	    (b->urls = calloc(nurls, sizeof(*b->urls))) == NULL) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		goto done;
	}
	for (b->nurls = 0; b->nurls < nurls; b->nurls++)
		if ((rc = broker_url_parse(urls[b->nurls], &b->urls[b->nurls], err,
		    errlen)) != 0)
			goto done;
	b->url = b->urls[0];
	b->return_after_ms = BROKER_RETURN_AFTER_MS;
	rc = BROKER_ERR;
	if (tls_opts_copy(&b->tls, tls) != 0) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		goto done;
	}
	if (username == NULL || username[0] == '\0') {
		errbuf_set(err, errlen, "connecting to %s:%d: a username is "
		    "required", b->url.host, b->url.port);
		goto done;
	}
	if (timeout_ms <= 0) {
		errbuf_set(err, errlen, "connecting to %s:%d: the timeout must be "
		    "positive", b->url.host, b->url.port);
		goto done;
	}
	if ((rc = broker__resolve_password(password_ref, &password, err, errlen)) != 0)
		goto done;
	b->timeout_ms = timeout_ms;
	if ((b->username = strdup(username)) == NULL ||
	    (b->password_ref = strdup(password_ref)) == NULL) {
		errbuf_set(err, errlen, "opening the broker connection: out of "
		    "memory");
		rc = BROKER_ERR;
		goto done;
	}
	if ((rc = broker__connect_any(b, err, errlen)) != 0)
		goto done;
	if ((rc = broker__open_channel(b, err, errlen)) != 0)
		goto done;
	*out = b;
	b = NULL;
done:
	broker_close(b);
	return rc;
}

void
broker_close(struct broker *b)
{
	size_t i;

	if (b == NULL)
		return;
	if (b->conn != NULL) {
		(void)amqp_connection_close(b->conn, AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(b->conn);
	}
	for (i = 0; i < b->npubs; i++)
		broker__pub_free(&b->pubs[i]);
	free(b->pubs);
	broker__queued_free_all(b);
	free(b->open);
	free(b->consume_queue);
	free(b->ctag);
	free(b->kept_ctag);
	free(b->consumer_error);
	free(b->username);
	free(b->password_ref);
	tls_opts_free(&b->tls);
	free(b->urls);
	free(b);
}

void
broker_set_return_after(struct broker *b, int64_t ms)
{
	b->return_after_ms = ms;
}

unsigned long
broker_losses(const struct broker *b)
{
	return b->losses;
}

int
broker_reply_code(const struct broker *b)
{
	return b->reply_code;
}
