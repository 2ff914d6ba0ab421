/* arrival_stamp: whether the broker stamps each message's arrival in a
 * `timestamp_in_ms` header (RabbitMQ 3.12 and later, rabbitmq.conf
 * `message_interceptors.incoming.set_header_timestamp.overwrite`), and
 * whether it overwrites a header a publisher already set. The broker's
 * configuration is not readable over the management API, so the broker is
 * asked the only way that cannot be wrong: two messages through a queue of
 * cutover's own that lives for the probe alone. move_old trusts the stamp
 * as an entry time only from a broker that overwrites it: one that keeps
 * an existing header keeps a copy of an earlier publish's (a library
 * re-sending a received message with its headers), which is early. */
#ifndef CUTOVER_ARRIVAL_STAMP_H
#define CUTOVER_ARRIVAL_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "broker/broker.h"

#define ARRIVAL_HEADER "timestamp_in_ms"

enum arrival_stamping {
	ARRIVAL_OFF,		/* no stamp: the interceptor is not configured */
	ARRIVAL_KEPT,		/* stamped, but a publisher's header is kept */
	ARRIVAL_OVERWRITE	/* stamped at every publish: trusted */
};

/* "off", "kept" or "overwrite". */
const char *arrival_stamping_name(enum arrival_stamping s);

/* What S means for move_old, in a sentence. */
const char *arrival_stamping_meaning(enum arrival_stamping s);

/* The verdict of the probe's two messages (pure): PLAIN_HAS and
 * PLAIN_MS, whether the one published without the header came back with
 * one; PRESET_MS, the header of the one published with it set to
 * ARRIVAL_PROBE_PRESET (-1 when it came back without). */
#define ARRIVAL_PROBE_PRESET 1
enum arrival_stamping arrival_verdict(bool plain_has, int64_t preset_ms);

/* Asks the broker behind B (its vhost) with a queue named after TAG
 * (cutover.arrival.TAG.PID: not durable, expiring after a minute should
 * the probe not delete it). Returns 0 with *OUT, or a negative broker
 * code with ERR. */
int arrival_probe(struct broker *b, const char *tag, enum arrival_stamping *out,
    char *err, size_t errlen);

#endif
