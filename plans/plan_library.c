/* plan_library: the table of library shapes (plan_library.h). Each row was
 * read in the library's own source: where it builds a delay queue's name
 * and arguments, and what it sets on the message it publishes there. The
 * patterns take the delay queues only, never the destination or consumer
 * queues the library also declares. */
#include <stdio.h>
#include <string.h>

#include "pattern.h"
#include "plan_library.h"
#include "move_entry.h"

/* What the arrival stamp is worth, said once for every kind that has no
 * stamp of its own. */
#define ARRIVAL_ONLY "the library sets no time on the message: the entry " \
	"time is the broker's arrival stamp where it overwrites one at every " \
	"publish (cutover check --broker says), else unknown"

static const struct plan_library libraries[] = {
	{ "symfony", "Symfony Messenger 5.4 to 7.x, AMQP transport", 2, {
		{ "delay queue", "delay_<exchange>_<routing key>_<ms>_delay",
		  "^delay_.+_[0-9]+_delay$",
		  "the transport's exchange, with the message's routing key", true,
		  "TTL + 10 s, renewed at each publish (declared every time)",
		  MOVE_FROM_ARRIVAL, MOVE_FROM_TIMESTAMP, false,
		  "the broker's arrival stamp where it overwrites one at every "
		  "publish; else the timestamp property, the sender's time() in "
		  "whole seconds, counted as the end of its second (up to 1 s "
		  "late, never early while the producers' clocks are not behind "
		  "cutover's)" },
		{ "retry queue", "delay_<exchange>_<routing key>_<ms>_retry",
		  "^delay_.+_[0-9]+_retry$",
		  "the default exchange, with the queue the message was received "
		  "from as key", true,
		  "TTL + 10 s, renewed at each publish (declared every time)",
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, true,
		  "a retried message keeps the timestamp of its first publish, "
		  "so the timestamp is never used here: the broker's arrival "
		  "stamp where it overwrites one at every publish, else unknown" },
	} },
	{ "laravel", "Laravel queue driver vladimir-yuldashev/laravel-queue-rabbitmq",
	  1, {
		{ "delay queue", "<queue>.delay.<ms>", "^.+\\.delay\\.[0-9]+$",
		  "the connection's exchange (or the default exchange), with the "
		  "queue's routing key (its name by default)", true,
		  "2 x TTL, renewed at each publish (declared every time)",
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, false, ARRIVAL_ONLY },
	} },
	{ "enqueue", "php-enqueue, RabbitMqDlxDelayStrategy", 2, {
		{ "topic delay queue", "enqueue.<topic>[.<routing key>].<ms>.x.delay",
		  "^enqueue\\..+\\.[0-9]+\\.x\\.delay$",
		  "the topic's exchange, with the message's routing key", true, NULL,
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, false, ARRIVAL_ONLY },
		{ "queue delay queue", "enqueue.<queue>.<ms>.delayed",
		  "^enqueue\\..+\\.[0-9]+\\.delayed$",
		  "the default exchange, with the queue's name as key", true, NULL,
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, false, ARRIVAL_ONLY },
	} },
	{ "easynetq", "EasyNetQ, DeadLetterExchangeAndMessageTtlScheduler", 1, {
		{ "future queue", "<message type>_<dd_hh_mm_ss> (and an exchange "
		  "<type's exchange>_<dd_hh_mm_ss> per delay)",
		  "^.+_[0-9]{2,}_[0-9]{2}_[0-9]{2}_[0-9]{2}$",
		  "the message type's exchange, with no key: each message keeps "
		  "its own routing key (its topic)", false, NULL,
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, false, ARRIVAL_ONLY },
	} },
	{ "machinery", "Machinery (Go), AMQP broker", 1, {
		{ "delay queue", "delay.<ms>.<exchange>.<routing key>",
		  "^delay\\.[0-9]+\\..+$",
		  "the configured exchange, with the task's routing key", true,
		  "2 x TTL, renewed at each publish (declared every time)",
		  MOVE_FROM_ARRIVAL, MOVE_FROM_UNKNOWN, false, ARRIVAL_ONLY },
	} },
};

#define NLIBRARIES (sizeof(libraries) / sizeof(libraries[0]))

const struct plan_library *
plan_library_find(const char *name)
{
	for (size_t i = 0; name != NULL && i < NLIBRARIES; i++)
		if (strcmp(libraries[i].name, name) == 0)
			return &libraries[i];
	return NULL;
}

char *
plan_library_names(char *out, size_t outlen)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < NLIBRARIES && off < outlen; i++)
		off += (size_t)snprintf(out + off, outlen - off, "%s%s", i == 0 ? "" :
		    i + 1 == NLIBRARIES ? " or " : ", ", libraries[i].name);
	return out;
}

int
plan_library_match(const struct plan_library *l, char *out, size_t outlen)
{
	size_t off = 0;
	int n;

	out[0] = '\0';
	if (l->nkinds == 1)
		return (size_t)snprintf(out, outlen, "%s", l->kinds[0].match) < outlen ?
		    0 : -1;
	for (size_t i = 0; i < l->nkinds; i++) {
		n = snprintf(out + off, outlen - off, "%s(?:%s)", i ? "|" : "",
		    l->kinds[i].match);
		if (n < 0 || (size_t)n >= outlen - off)
			return -1;
		off += (size_t)n;
	}
	return 0;
}

const struct plan_library_kind *
plan_library_kind_of(const struct plan_library *l, const char *name)
{
	char why[128];

	for (size_t i = 0; l != NULL && i < l->nkinds; i++) {
		struct pattern *re = NULL;
		bool m = false;
		int r;

		if (pattern_compile(l->kinds[i].match, &re, why, sizeof(why)) != 0)
			continue;
		r = pattern_match(re, name, &m, why, sizeof(why));
		pattern_free(re);
		if (r == 0 && m)
			return &l->kinds[i];
	}
	return NULL;
}

bool
plan_library_allows(const struct plan_library *l, const char *name, int from,
    char *why, size_t whylen)
{
	const struct plan_library_kind *k = plan_library_kind_of(l, name);

	if (k == NULL || !k->stamp_kept || from != MOVE_FROM_TIMESTAMP)
		return true;
	snprintf(why, whylen, "queue '%s' is a %s %s, whose messages keep the "
	    "timestamp of an earlier publish: `from: timestamp` would move them "
	    "early; use arrival or unknown for it", name, l->name, k->what);
	return false;
}
