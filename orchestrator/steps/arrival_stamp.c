/* arrival_stamp: the probe of the broker's arrival stamp (arrival_stamp.h). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "arrival_stamp.h"
#include "errbuf.h"
#include "topology.h"

#define PROBE_TIMEOUT_MS 10000

/* Each stamping's name and what it means for move_old, a row per value. */
static const struct stamping {
	const char *name;
	const char *meaning;
} stampings[] = {
	[ARRIVAL_OFF] = { "off",
	    "the broker does not stamp arrivals: move_old's `from: "
	    "arrival` gives no entry time (its second source, or unknown)" },
	[ARRIVAL_KEPT] = { "kept",
	    "the broker stamps arrivals but keeps a header a "
	    "publisher set, which may be an earlier publish's copy: move_old's "
	    "`from: arrival` is not trusted (set message_interceptors.incoming."
	    "set_header_timestamp.overwrite = true to trust it)" },
	[ARRIVAL_OVERWRITE] = { "overwrite",
	    "the broker stamps every arrival with its own "
	    "clock in ms: move_old's `from: arrival` is an exact entry time" },
};

/* S's row of stampings[], or a row of "?" for a value outside it. */
static const struct stamping *
stamping(enum arrival_stamping s)
{
	static const struct stamping unknown = { "?", "?" };

	return (unsigned)s < sizeof(stampings) / sizeof(stampings[0]) ?
	    &stampings[s] : &unknown;
}

const char *
arrival_stamping_name(enum arrival_stamping s)
{
	return stamping(s)->name;
}

const char *
arrival_stamping_meaning(enum arrival_stamping s)
{
	return stamping(s)->meaning;
}

enum arrival_stamping
arrival_verdict(bool plain_has, int64_t preset_ms)
{
	if (!plain_has)
		return ARRIVAL_OFF;
	return preset_ms == ARRIVAL_PROBE_PRESET ? ARRIVAL_KEPT : ARRIVAL_OVERWRITE;
}

/* Takes one message from QUEUE: whether it has the header, and its value
 * (-1 without). Returns 0, or a negative broker code with ERR. */
static int
take(struct broker *b, const char *queue, bool *has, int64_t *ms, char *err,
    size_t errlen)
{
	struct broker_delivery d = { 0 };
	const struct broker_header *h;
	int rc = broker_get(b, queue, false, &d, err, errlen);

	if (rc == BROKER_EMPTY) {
		errbuf_set(err, errlen, "the probe's message did not come back from "
		    "queue '%s'", queue);
		return BROKER_ERR;
	}
	if (rc != 0)
		return rc;
	h = broker_header_find(&d, ARRIVAL_HEADER);
	*has = h != NULL && h->kind == BROKER_KIND_INT;
	*ms = *has ? h->num : -1;
	broker_delivery_free(&d);
	return 0;
}

int
arrival_probe(struct broker *b, const char *tag, enum arrival_stamping *out,
    char *err, size_t errlen)
{
	struct topology_arg expires = { .key = "x-expires", .is_int = true,
	    .num = 60000 };
	struct broker_field preset = { .key = ARRIVAL_HEADER, .is_int = true,
	    .num = ARRIVAL_PROBE_PRESET };
	struct broker_message m = { 0 };
	char queue[256], e[256];
	bool plain_has = false, preset_has = false;
	int64_t plain_ms, preset_ms;
	int rc;

	snprintf(queue, sizeof(queue), "cutover.arrival.%s.%ld", tag, (long)getpid());
	if ((rc = broker_queue_declare(b, queue, false, &expires, 1, err, errlen)) != 0)
		return rc;
	m.routing_key = queue;
	m.body = "probe";
	m.len = 5;
	m.mandatory = true;
	m.transient = true;
	/* One without the header (is there a stamp?), one with it set (is a
	 * publisher's kept?), read back in that order. */
	if ((rc = broker_publish(b, &m, PROBE_TIMEOUT_MS, err, errlen)) != 0)
		goto done;
	m.headers = &preset;
	m.nheaders = 1;
	if ((rc = broker_publish(b, &m, PROBE_TIMEOUT_MS, err, errlen)) != 0 ||
	    (rc = take(b, queue, &plain_has, &plain_ms, err, errlen)) != 0 ||
	    (rc = take(b, queue, &preset_has, &preset_ms, err, errlen)) != 0)
		goto done;
	*out = arrival_verdict(plain_has, preset_ms);
done:
	(void)broker_queue_delete(b, queue, 0, NULL, e, sizeof(e));
	return rc;
}
