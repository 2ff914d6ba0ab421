/* broker_publish: publishing with publisher confirms and `mandatory`:
 * each message awaits its verdict (ack, nack, return) until
 * broker_wait_confirms collects them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_int.h"

static const char *
exchange_label(const char *name, char *buf, size_t len)
{
	if (name == NULL || name[0] == '\0')
		snprintf(buf, len, "the default exchange");
	else
		snprintf(buf, len, "exchange '%s'", name);
	return buf;
}

/* Appends a pending publish of M (to EXCHANGE with KEY) to B->pubs; it is
 * counted in B->npubs once sent. Returns 0 and sets *OUT, or BROKER_ERR
 * with ERR. */
static int
pub_record(struct broker *b, const struct broker_message *m,
    const char *exchange, const char *key, const char *what, struct pub **out,
    char *err, size_t errlen)
{
	const char *mid = m->like != NULL ? m->like->message_id : m->message_id;
	struct pub *p;

	if (b->npubs == b->pubcap) {
		size_t cap = b->pubcap == 0 ? 16 : b->pubcap * 2;
		struct pub *np = realloc(b->pubs, cap * sizeof(*np));

		if (np == NULL) {
			errbuf_set(err, errlen, "%s: out of memory", what);
			return BROKER_ERR;
		}
		b->pubs = np;
		b->pubcap = cap;
	}
	p = &b->pubs[b->npubs];
	memset(p, 0, sizeof(*p));
	p->result = PUB_PENDING;
	p->mandatory = m->mandatory;
	p->exchange = strdup(exchange);
	p->routing_key = strdup(key);
	if (mid != NULL)
		p->message_id = strdup(mid);
	if (p->exchange == NULL || p->routing_key == NULL ||
	    (mid != NULL && p->message_id == NULL)) {
		errbuf_set(err, errlen, "%s: out of memory", what);
		broker__pub_free(p);
		return BROKER_ERR;
	}
	*out = p;
	return 0;
}

/* Fills PROPS with M's delivery mode, content type and message id, or
 * with M->like's properties as received, less the expiration (the broker
 * drops it when it dead-letters: kept, it would cut each wait short). */
static void
message_properties(const struct broker_message *m,
    amqp_basic_properties_t *props)
{
	const amqp_basic_properties_t *like = m->like != NULL ?
	    broker__delivery_properties(m->like) : NULL;

	memset(props, 0, sizeof(*props));
	if (like != NULL) {
		*props = *like;
		props->_flags &= ~(amqp_flags_t)(AMQP_BASIC_EXPIRATION_FLAG |
		    AMQP_BASIC_HEADERS_FLAG);
		props->headers.num_entries = 0;
		props->headers.entries = NULL;
		return;
	}
	props->_flags = AMQP_BASIC_DELIVERY_MODE_FLAG;
	props->delivery_mode = m->transient ? 1 : 2;
	if (m->content_type != NULL) {
		props->_flags |= AMQP_BASIC_CONTENT_TYPE_FLAG;
		props->content_type = amqp_cstring_bytes(m->content_type);
	}
	if (m->message_id != NULL) {
		props->_flags |= AMQP_BASIC_MESSAGE_ID_FLAG;
		props->message_id = amqp_cstring_bytes(m->message_id);
	}
	if (m->timestamp != 0) {
		props->_flags |= AMQP_BASIC_TIMESTAMP_FLAG;
		props->timestamp = m->timestamp;
	}
}

/* The dead-letter history a republished message must not carry: a
 * message re-entering with another queue's x-death can be taken for a
 * dead-letter cycle and dropped. */
static const char *const death_headers[] = { "x-death", "x-first-death-queue",
	"x-first-death-reason", "x-first-death-exchange", "x-last-death-queue",
	"x-last-death-reason", "x-last-death-exchange" };

/* Whether received header KEY stays when M republishes its message. */
static bool
kept_header(const struct broker_message *m, amqp_bytes_t key)
{
	for (size_t i = 0; i < sizeof(death_headers) / sizeof(death_headers[0]); i++)
		if (broker__bytes_is(key, death_headers[i]))
			return false;
	for (size_t i = 0; i < m->nheaders; i++)
		if (m->headers[i].key != NULL && broker__bytes_is(key, m->headers[i].key))
			return false;
	return true;
}

/* Adds M's headers to PROPS, after those of M->like that stay; *ENTRIES
 * (free it, also on failure) points into M and M->like. Returns 0, or
 * BROKER_ERR with ERR. */
static int
message_headers(const struct broker_message *m, amqp_basic_properties_t *props,
    amqp_table_entry_t **entries, const char *what, char *err, size_t errlen)
{
	const amqp_basic_properties_t *like = m->like != NULL ?
	    broker__delivery_properties(m->like) : NULL;
	const amqp_table_t *old = like != NULL &&
	    (like->_flags & AMQP_BASIC_HEADERS_FLAG) ? &like->headers : NULL;
	size_t i, n = 0, nold = old != NULL && old->num_entries > 0 ?
	    (size_t)old->num_entries : 0;

	*entries = NULL;
	if (m->nheaders == 0 && nold == 0)
		return 0;
	if ((m->nheaders > 0 && m->headers == NULL) || m->nheaders > 1024 ||
	    (*entries = calloc(m->nheaders + nold, sizeof(**entries))) == NULL) {
		errbuf_set(err, errlen, "%s: bad or too many headers", what);
		return BROKER_ERR;
	}
	for (i = 0; i < nold; i++)
		if (kept_header(m, old->entries[i].key))
			(*entries)[n++] = old->entries[i];
	for (i = 0; i < m->nheaders; i++) {
		const struct broker_field *h = &m->headers[i];
		amqp_table_entry_t *e = &(*entries)[n++];

		if (h->key == NULL || h->key[0] == '\0' ||
		    strlen(h->key) > 255) {
			errbuf_set(err, errlen, "%s: header %zu has no name or a "
			    "name longer than 255 bytes", what, i);
			return BROKER_ERR;
		}
		e->key = amqp_cstring_bytes(h->key);
		if (h->is_int) {
			e->value.kind = AMQP_FIELD_KIND_I64;
			e->value.value.i64 = h->num;
		} else {
			e->value.kind = AMQP_FIELD_KIND_UTF8;
			e->value.value.bytes =
			    amqp_cstring_bytes(h->str ? h->str : "");
		}
	}
	if (n == 0)
		return 0;
	props->_flags |= AMQP_BASIC_HEADERS_FLAG;
	props->headers.num_entries = (int)n;
	props->headers.entries = *entries;
	return 0;
}

static int
publish_send(struct broker *b, const struct broker_message *m, char *err,
    size_t errlen)
{
	amqp_basic_properties_t props;
	amqp_table_entry_t *entries = NULL;
	amqp_bytes_t body;
	struct pub *p;
	const char *exchange = m->exchange == NULL ? "" : m->exchange;
	const char *key = m->routing_key == NULL ? "" : m->routing_key;
	char what[WHAT_MAX], xl[300];
	int rc;

	exchange_label(exchange, xl, sizeof(xl));
	snprintf(what, sizeof(what), "publishing to %s with key '%s'", xl, key);
	if ((rc = broker__check_name("publishing", exchange, true, err, errlen)) != 0 ||
	    (rc = broker__check_name("publishing with routing key", key, true, err,
	    errlen)) != 0)
		return rc;
	if (m->len > 0 && m->body == NULL) {
		errbuf_set(err, errlen, "%s: no body", what);
		return BROKER_ERR;
	}
	if ((rc = pub_record(b, m, exchange, key, what, &p, err, errlen)) != 0)
		return rc;
	message_properties(m, &props);
	if ((rc = message_headers(m, &props, &entries, what, err, errlen)) != 0)
		goto fail;
	body.len = m->len;
	body.bytes = (void *)m->body;

	rc = amqp_basic_publish(b->conn, b->chan, amqp_cstring_bytes(exchange),
	    amqp_cstring_bytes(key), m->mandatory, 0, &props, body);
	if (rc < 0) {
		rc = broker__on_library_error(b, rc, what, err, errlen);
		goto fail;
	}
	p->tag = b->next_tag++;
	b->npubs++;
	free(entries);
	return 0;
fail:
	free(entries);
	broker__pub_free(p);
	return rc;
}

int
broker_publish_async(struct broker *b, const struct broker_message *m,
    char *err, size_t errlen)
{
	int rc;

	if (m == NULL) {
		errbuf_set(err, errlen, "publishing: no message");
		return BROKER_ERR;
	}
	if ((rc = broker__begin(b, err, errlen)) != 0)
		return rc;
	return publish_send(b, m, err, errlen);
}

static size_t
pending_count(const struct broker *b)
{
	size_t i, n = 0;

	for (i = 0; i < b->npubs; i++)
		if (b->pubs[i].result == PUB_PENDING)
			n++;
	return n;
}

/* Settles every publish still pending as not confirmed within TIMEOUT_MS. */
static void
pubs_timed_out(struct broker *b, int timeout_ms)
{
	size_t i;

	for (i = 0; i < b->npubs; i++)
		broker__pub_settle(&b->pubs[i], BROKER_ETIMEOUT, "no confirm within %d "
		    "ms", timeout_ms);
}

/* Reads frames until every publish since the last wait has its verdict,
 * DEADLINE passes (the rest time out: TIMEOUT_MS is for the message) or
 * the connection is lost. */
static void
wait_verdicts(struct broker *b, int64_t deadline, int timeout_ms)
{
	amqp_frame_t f;
	char scratch[WHY_MAX];
	int rc;

	while (pending_count(b) > 0) {
		if (b->conn == NULL || b->chan == 0) {
			broker__chan_lost(b, BROKER_ELOST, "the connection was lost");
			break;
		}
		rc = broker__next_frame(b, deadline, &f);
		if (rc == AMQP_STATUS_TIMEOUT) {
			pubs_timed_out(b, timeout_ms);
			break;
		}
		if (rc != AMQP_STATUS_OK) {
			(void)broker__on_library_error(b, rc,
			    "waiting for publisher confirms", scratch,
			    sizeof(scratch));
			continue;
		}
		(void)broker__dispatch(b, &f, clock_mono_ms() + b->timeout_ms,
		    "waiting for publisher confirms", scratch, sizeof(scratch));
		if (clock_mono_ms() > deadline) {
			pubs_timed_out(b, timeout_ms);
			break;
		}
	}
}

/* Copies each publish's verdict into RESULTS (NRESULTS at most). Returns
 * 0 if every one was confirmed, else the first other verdict with ERR
 * summarising. */
static int
verdicts(const struct broker *b, int *results, size_t nresults, char *err,
    size_t errlen)
{
	const struct pub *first = NULL;
	char xl[300];
	size_t i, nfailed = 0;

	for (i = 0; i < b->npubs; i++) {
		if (results != NULL && i < nresults)
			results[i] = b->pubs[i].result;
		if (b->pubs[i].result != 0) {
			if (first == NULL)
				first = &b->pubs[i];
			nfailed++;
		}
	}
	if (first == NULL)
		return 0;
	exchange_label(first->exchange, xl, sizeof(xl));
	if (b->npubs == 1)
		errbuf_set(err, errlen, "publishing to %s with key '%s': %s", xl,
		    first->routing_key, first->detail ? first->detail :
		    "failed");
	else
		errbuf_set(err, errlen, "%zu of %zu messages were not confirmed; "
		    "the first, to %s with key '%s': %s", nfailed, b->npubs,
		    xl, first->routing_key, first->detail ? first->detail :
		    "failed");
	return first->result;
}

int
broker_wait_confirms(struct broker *b, int timeout_ms, int *results,
    size_t nresults, size_t *npublished, char *err, size_t errlen)
{
	int64_t deadline = clock_mono_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	size_t i;
	int rc;

	if (npublished != NULL)
		*npublished = b->npubs;
	wait_verdicts(b, deadline, timeout_ms);
	rc = verdicts(b, results, nresults, err, errlen);
	for (i = 0; i < b->npubs; i++)
		broker__pub_free(&b->pubs[i]);
	b->npubs = 0;
	return rc;
}

int
broker_publish(struct broker *b, const struct broker_message *m, int timeout_ms,
    char *err, size_t errlen)
{
	int rc, result = 0;

	if (b->npubs > 0) {
		errbuf_set(err, errlen, "publishing: %zu messages published "
		    "without waiting still await broker_wait_confirms",
		    b->npubs);
		return BROKER_ERR;
	}
	if ((rc = broker_publish_async(b, m, err, errlen)) != 0)
		return rc;
	rc = broker_wait_confirms(b, timeout_ms, &result, 1, NULL, err, errlen);
	return rc != 0 ? rc : result;
}
