/* publish: encodes, stamps and publishes one delayed message into a ladder
 * with publisher confirms and mandatory; reads the stamps back. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "duration.h"
#include "clock.h"
#include "errbuf.h"
#include "hex.h"
#include "publish.h"

#define NSTAMPS 5

static bool
is_stamp(const char *key)
{
	static const char *const stamps[NSTAMPS] = { PUBLISH_HDR_PLAN,
	    PUBLISH_HDR_PURPOSE, PUBLISH_HDR_SEQ, PUBLISH_HDR_DELAY,
	    PUBLISH_HDR_NOT_BEFORE };

	for (size_t i = 0; i < NSTAMPS; i++)
		if (strcmp(key, stamps[i]) == 0)
			return true;
	return false;
}

/* Checks R's own fields (not the delay or the destination, which the
 * ladder checks). Returns 0 or -1 with ERR. */
static int
check_request(const struct publish_request *r, char *err, size_t errlen)
{
	if (r->plan == NULL || r->plan[0] == '\0') {
		errbuf_set(err, errlen, "publishing: no plan name");
		return -1;
	}
	if (r->purpose == NULL || (strcmp(r->purpose, PUBLISH_CANARY) != 0 &&
	    strcmp(r->purpose, PUBLISH_PROBE) != 0 &&
	    strcmp(r->purpose, PUBLISH_MANUAL) != 0)) {
		errbuf_set(err, errlen, "publishing: purpose '%s'; expected canary, "
		    "probe or manual", r->purpose ? r->purpose : "(none)");
		return -1;
	}
	if (r->len > 0 && r->body == NULL) {
		errbuf_set(err, errlen, "publishing: a body of %zu bytes without data",
		    r->len);
		return -1;
	}
	if (r->nheaders > PUBLISH_MAX_HEADERS ||
	    (r->nheaders > 0 && r->headers == NULL)) {
		errbuf_set(err, errlen, "publishing: %zu extra headers; expected at "
		    "most %d", r->nheaders, PUBLISH_MAX_HEADERS);
		return -1;
	}
	for (size_t i = 0; i < r->nheaders; i++) {
		const char *k = r->headers[i].key;

		if (k == NULL || k[0] == '\0' || strlen(k) > 255) {
			errbuf_set(err, errlen, "publishing: header %zu has no name or "
			    "one longer than 255 bytes", i + 1);
			return -1;
		}
		if (is_stamp(k) || strcmp(k, "x-death") == 0) {
			errbuf_set(err, errlen, "publishing: header '%s' is set by "
			    "cutover (or the broker); choose another name", k);
			return -1;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(k, r->headers[j].key) == 0) {
				errbuf_set(err, errlen, "publishing: header '%s' is given "
				    "twice", k);
				return -1;
			}
	}
	if (r->delay_ms < 0) {
		errbuf_set(err, errlen, "publishing: delay of %" PRId64 " ms; expected "
		    "zero or more", r->delay_ms);
		return -1;
	}
	return 0;
}

static int
make_id(const struct publish_request *r, int64_t sent_ms, char *out,
    size_t outlen, char *err, size_t errlen)
{
	unsigned char rnd[8];
	char hex[17];
	int n;

	if (RAND_bytes(rnd, sizeof(rnd)) != 1) {
		errbuf_set(err, errlen, "publishing: no random bytes for a message id");
		return -1;
	}
	hex_encode(rnd, sizeof(rnd), hex);
	n = snprintf(out, outlen, "cutover.%s.%s.%" PRId64 ".%" PRId64 ".%s",
	    r->plan, r->purpose, r->seq, sent_ms, hex);
	if (n < 0 || (size_t)n >= outlen) {
		errbuf_set(err, errlen, "publishing: message id for plan '%.64s' does "
		    "not fit in %zu bytes", r->plan, outlen);
		return -1;
	}
	return 0;
}

static int
map_status(int rc)
{
	switch (rc) {
	case BROKER_OK:
		return PUBLISH_OK;
	case BROKER_ENACKED:
		return PUBLISH_ENACKED;
	case BROKER_ERETURNED:
		return PUBLISH_ERETURNED;
	case BROKER_EREFUSED:
	case BROKER_EPRECONDITION:
		return PUBLISH_EREFUSED;
	case BROKER_ECONNECT:
	case BROKER_EAUTH:
		return PUBLISH_ECONNECT;
	case BROKER_ELOST:
		return PUBLISH_ELOST;
	case BROKER_ETIMEOUT:
		return PUBLISH_ETIMEOUT;
	default:
		return PUBLISH_ERR;
	}
}

/* What to do about a failed publish, as the operator reads it. */
static const char *
hint(int status, uint64_t units)
{
	switch (status) {
	case PUBLISH_ERETURNED:
		return units == 0 ?
		    "no destination queue is bound for it and the delivery exchange "
		    "has no working alternate exchange (cutover ladder verify)" :
		    "the entry level's wait binding is missing (cutover ladder verify)";
	case PUBLISH_ENACKED:
		return "the broker did not take it (a queue at its length limit "
		    "with reject-publish, or a node failure); publish it again";
	case PUBLISH_EREFUSED:
		return "is the ladder declared? (cutover ladder declare)";
	case PUBLISH_ELOST:
	case PUBLISH_ETIMEOUT:
		return "the message may or may not have been taken";
	default:
		return NULL;
	}
}

/* Fills RC for request R on ladder L: units, routing key, entry exchange,
 * the send and not-before times, and the message id (R's, or a new one).
 * Returns PUBLISH_OK, or PUBLISH_EINPUT with ERR. */
static int
receipt_prepare(const struct ladder *l, const struct publish_request *r,
    struct publish_receipt *rc, char *err, size_t errlen)
{
	char why[768];

	if (ladder_encode(l, r->delay_ms, &rc->units, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "publishing to '%.80s': %s",
		    r->destination ? r->destination : "", why);
		return PUBLISH_EINPUT;
	}
	if (ladder_routing_key(l, rc->units, r->destination, rc->routing_key,
	    sizeof(rc->routing_key), why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "publishing to '%.80s': %s",
		    r->destination ? r->destination : "", why);
		return PUBLISH_EINPUT;
	}
	ladder_entry_exchange(l, rc->units, rc->exchange, sizeof(rc->exchange));
	rc->sent_ms = clock_now_ms();
	rc->sent_mono_ms = clock_mono_ms();
	/* units <= 2^32 - 1 and the unit fits the ladder's checks, so this
	 * is at most ladder_max_delay_ms: no overflow. */
	rc->not_before_ms = rc->sent_ms + (int64_t)rc->units * l->unit_ms;
	rc->not_before_mono_ms = rc->sent_mono_ms + (int64_t)rc->units * l->unit_ms;
	if (r->message_id != NULL) {
		if (r->message_id[0] == '\0' ||
		    strlen(r->message_id) >= sizeof(rc->message_id)) {
			errbuf_set(err, errlen, "publishing: a message id must have 1 to "
			    "%zu bytes", sizeof(rc->message_id) - 1);
			return PUBLISH_EINPUT;
		}
		snprintf(rc->message_id, sizeof(rc->message_id), "%s", r->message_id);
	} else if (make_id(r, rc->sent_ms, rc->message_id, sizeof(rc->message_id),
	    err, errlen) != 0)
		return PUBLISH_EINPUT;
	return PUBLISH_OK;
}

/* Writes the message's headers into HDR (room for NSTAMPS + R's): the
 * stamps, then R's own. Returns how many. */
static size_t
headers_fill(struct broker_field *hdr, const struct publish_request *r,
    const struct publish_receipt *rc)
{
	size_t n = 0;

	hdr[n].key = PUBLISH_HDR_PLAN;
	hdr[n++].str = r->plan;
	hdr[n].key = PUBLISH_HDR_PURPOSE;
	hdr[n++].str = r->purpose;
	hdr[n].key = PUBLISH_HDR_SEQ;
	hdr[n].is_int = true;
	hdr[n++].num = r->seq;
	hdr[n].key = PUBLISH_HDR_DELAY;
	hdr[n].is_int = true;
	hdr[n++].num = r->delay_ms;
	hdr[n].key = PUBLISH_HDR_NOT_BEFORE;
	hdr[n].is_int = true;
	hdr[n++].num = rc->not_before_ms;
	for (size_t i = 0; i < r->nheaders; i++)
		hdr[n++] = r->headers[i];
	return n;
}

int
publish_delayed(struct broker *b, const struct ladder *l,
    const struct publish_request *r, struct publish_receipt *out,
    char *err, size_t errlen)
{
	struct publish_receipt rc_local, *rc = out != NULL ? out : &rc_local;
	struct broker_field hdr[NSTAMPS + PUBLISH_MAX_HEADERS];
	struct broker_message m;
	char why[768], d[32];
	const char *h;
	int st;

	memset(rc, 0, sizeof(*rc));
	if (b == NULL || l == NULL || r == NULL) {
		errbuf_set(err, errlen, "publishing: no broker, ladder or request");
		return PUBLISH_ERR;
	}
	if (check_request(r, err, errlen) != 0)
		return PUBLISH_EINPUT;
	if ((st = receipt_prepare(l, r, rc, err, errlen)) != PUBLISH_OK)
		return st;
	memset(hdr, 0, sizeof(hdr));
	memset(&m, 0, sizeof(m));
	m.exchange = rc->exchange;
	m.routing_key = rc->routing_key;
	m.body = r->body;
	m.len = r->len;
	m.headers = hdr;
	m.nheaders = headers_fill(hdr, r, rc);
	m.message_id = rc->message_id;
	m.content_type = r->content_type;
	m.mandatory = true;
	st = map_status(broker_publish(b, &m, r->timeout_ms > 0 ? r->timeout_ms :
	    PUBLISH_TIMEOUT_MS, why, sizeof(why)));
	if (st == PUBLISH_OK)
		return PUBLISH_OK;
	h = hint(st, rc->units);
	errbuf_set(err, errlen, "%s to '%s' (%" PRIu64 " unit%s) not confirmed: %s%s%s",
	    duration_format(r->delay_ms, d, sizeof(d)), r->destination, rc->units,
	    rc->units == 1 ? "" : "s", why, h ? "; " : "", h ? h : "");
	return st;
}

ERRBUF_NAME_FUNCTION(publish_status_name, PUBLISH_STATUS_MAP, "failed")

/* The header KEY of D, a string (TEXT) or an integer. Returns it, or NULL
 * with ERR saying it is missing or of the other type. */
static const struct broker_header *
header_of(const struct broker_delivery *d, const char *key, bool text, char *err,
    size_t errlen)
{
	const struct broker_header *h = broker_header_find(d, key);

	if (h != NULL && h->kind == (text ? BROKER_KIND_STR : BROKER_KIND_INT))
		return h;
	errbuf_set(err, errlen, "header %s is %s", key, h == NULL ? "missing" :
	    text ? "not a string" : "not an integer");
	return NULL;
}

int
publish_read(const struct broker_delivery *d, struct publish_info *out,
    char *err, size_t errlen)
{
	/* Where each header goes: a string's into TEXT, an integer's NUM. */
	const struct {
		const char *key;
		const char **text;
		int64_t *num;
	} fields[] = {
		{ PUBLISH_HDR_PLAN, &out->plan, NULL },
		{ PUBLISH_HDR_PURPOSE, &out->purpose, NULL },
		{ PUBLISH_HDR_SEQ, NULL, &out->seq },
		{ PUBLISH_HDR_DELAY, NULL, &out->delay_ms },
		{ PUBLISH_HDR_NOT_BEFORE, NULL, &out->not_before_ms },
	};
	const struct broker_header *h;

	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if ((h = header_of(d, fields[i].key, fields[i].text != NULL, err,
		    errlen)) == NULL) {
			memset(out, 0, sizeof(*out));
			return -1;
		}
		if (fields[i].text != NULL)
			*fields[i].text = h->str;
		else
			*fields[i].num = h->num;
	}
	return 0;
}
