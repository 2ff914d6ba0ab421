/* move_old_id: the move id move_old gives each message it moves
 * (x-cutover-move-id): the same for every copy a crash makes of a
 * message, for consumers to deduplicate by. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "hex.h"
#include "move_old_int.h"

/* Feeds the digest X with N bytes at P, length first, so that no two
 * sequences of fields give the same input; P NULL is a field apart from
 * every string. Returns whether it could. */
static bool
feed(EVP_MD_CTX *x, const void *p, size_t n)
{
	unsigned char len[8];
	uint64_t v = p != NULL ? (uint64_t)n : UINT64_MAX;

	for (int i = 0; i < 8; i++)
		len[i] = (unsigned char)(v >> (8 * i));
	return EVP_DigestUpdate(x, len, sizeof(len)) == 1 &&
	    (p == NULL || n == 0 || EVP_DigestUpdate(x, p, n) == 1);
}

static bool
feed_str(EVP_MD_CTX *x, const char *s)
{
	return feed(x, s, s != NULL ? strlen(s) : 0);
}

static bool
feed_int(EVP_MD_CTX *x, int64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)((uint64_t)v >> (8 * i));
	return feed(x, b, sizeof(b));
}

/* Whether header KEY is one the broker writes when it dead-letters a
 * message: it changes each time an old ladder passes the message down a
 * level. */
static bool
is_death_header(const char *key)
{
	return strcmp(key, "x-death") == 0 || strncmp(key, "x-first-death-", 14) == 0 ||
	    strncmp(key, "x-last-death-", 13) == 0;
}

/* Whether header H goes into the id: not the redelivery count a quorum
 * queue adds, nor, in an old ladder, what dead-lettering writes. */
static bool
is_fed(const struct broker_header *h, bool levels)
{
	return h->key == NULL || (strcmp(h->key, "x-delivery-count") != 0 &&
	    !(levels && is_death_header(h->key)));
}

static bool
feed_header(EVP_MD_CTX *x, const struct broker_header *h)
{
	return feed_str(x, h->key) && feed_int(x, h->kind) && feed_int(x, h->num) &&
	    feed_str(x, h->str);
}

/* qsort's order of two header pointers: by key (none first), then as
 * delivered, so that the order is total. */
static int
header_order(const void *a, const void *b)
{
	const struct broker_header *ha = *(const struct broker_header *const *)a;
	const struct broker_header *hb = *(const struct broker_header *const *)b;
	int c;

	if (ha->key == NULL || hb->key == NULL)
		c = (ha->key != NULL) - (hb->key != NULL);
	else
		c = strcmp(ha->key, hb->key);
	return c != 0 ? c : (ha > hb) - (ha < hb);
}

/* Feeds X with D's headers that go into the id. In an old ladder they go
 * in their keys' order: a broker that dead-letters a message down a level
 * may hand its headers on sorted (RabbitMQ 3.x sorts the table when it
 * adds x-death), and the id must not change with that. Returns whether
 * it could. */
static bool
feed_headers(EVP_MD_CTX *x, const struct broker_delivery *d, bool levels)
{
	const struct broker_header **by_key;
	size_t n = 0;
	bool ok = true;

	if (!levels) {
		for (size_t i = 0; ok && i < d->nheaders; i++)
			if (is_fed(&d->headers[i], false))
				ok = feed_header(x, &d->headers[i]);
		return ok;
	}
	if (d->nheaders == 0)
		return true;
	if ((by_key = calloc(d->nheaders, sizeof(*by_key))) == NULL)
		return false;
	for (size_t i = 0; i < d->nheaders; i++)
		if (is_fed(&d->headers[i], true))
			by_key[n++] = &d->headers[i];
	qsort(by_key, n, sizeof(*by_key), header_order);
	for (size_t i = 0; ok && i < n; i++)
		ok = feed_header(x, by_key[i]);
	free(by_key);
	return ok;
}

int
move_old__id(const char *queue, bool levels, const struct broker_delivery *d,
    char out[MOVE_ID_LEN + 1])
{
	EVP_MD_CTX *x = EVP_MD_CTX_new();
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	bool ok;

	/* An old ladder's level dead-letters through an exchange of its own:
	 * the exchange a message comes by differs from level to level. */
	ok = x != NULL && EVP_DigestInit_ex(x, EVP_sha256(), NULL) == 1 &&
	    feed_str(x, queue) && feed_str(x, levels ? NULL : d->exchange) &&
	    feed_str(x, d->routing_key) && feed_str(x, d->message_id) &&
	    feed_str(x, d->content_type) && feed_int(x, d->has_timestamp) &&
	    feed_int(x, (int64_t)d->timestamp) && feed(x, d->body, d->len) &&
	    (levels || feed_int(x, (int64_t)d->nheaders)) && feed_headers(x, d, levels);
	ok = ok && EVP_DigestFinal_ex(x, md, &mdlen) == 1 && mdlen >= MOVE_ID_LEN / 2;
	EVP_MD_CTX_free(x);
	if (!ok)
		return -1;
	hex_encode(md, MOVE_ID_LEN / 2, out);
	return 0;
}
