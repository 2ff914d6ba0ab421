/* ladder_naming: the naming styles of the ladder as data, one row each
 * (DESIGN.md §2, §3). A new style is one more row here; the plan loader,
 * `cutover encode` and the name and pattern functions of ladder.c read
 * everything from its row. */
#include <stdio.h>
#include <string.h>

#include "ladder.h"

/* In the order of enum ladder_naming; a style code never names needs no
 * enumerator, only its row. */
static const struct ladder_style styles[] = {
	[LADDER_NAMING_CUTOVER] = {
		.name = "cutover", .prefix = LADDER_PREFIX_REQUIRED,
		.default_prefix = "delay", .joiner = ".",
		.level = "level.", .level_digits = 2,
		.delivery = "delivery", .parking = "parking",
		.fixed_levels = 0, .fixed_unit_ms = 0, .destination_word = "*",
	},
	[LADDER_NAMING_KOMBU] = {
		/* kombu/transport/native_delayed_delivery.py: a prefix P makes
		 * P_celery_delayed_K and P_celery_delayed_delivery; its level
		 * queues carry reject-publish whatever their type. */
		.name = "kombu", .prefix = LADDER_PREFIX_OPTIONAL, .joiner = "_",
		.level = "celery_delayed_", .level_digits = 0,
		.delivery = "celery_delayed_delivery", .parking = "celery_delayed_parking",
		.fixed_levels = 28, .fixed_unit_ms = 1000, .destination_word = "*",
		.library = true,
		.classic_overflow = true,
		.producer_rounding = "Celery converts a countdown to whole seconds with int() "
		    "before it builds the routing key, so a Celery producer can "
		    "publish up to one second early on any ladder (measured: a 1.9 s "
		    "countdown arrived after 1.055 s); round up before calling Celery "
		    "where early delivery matters.",
	},
	[LADDER_NAMING_NSERVICEBUS] = {
		.name = "nservicebus", .prefix = LADDER_PREFIX_NONE, .joiner = "",
		.level = "nsb.v2.delay-level-", .level_digits = 2,
		.delivery = "nsb.v2.delay-delivery", .parking = "nsb.v2.delay-parking",
		.fixed_levels = 28, .fixed_unit_ms = 1000, .destination_word = "*",
		.library = true,
		.quorum_only = true,
		.producer_range = "NServiceBus clamps a negative delay to 0: such a message "
		    "is delivered at once, not refused.",
	},
};

#define NSTYLES ((int)(sizeof(styles) / sizeof(styles[0])))

const struct ladder_style *
ladder_style(enum ladder_naming naming)
{
	if ((int)naming < 0 || (int)naming >= NSTYLES)
		return NULL;
	return &styles[naming];
}

const char *
ladder_naming_name(enum ladder_naming naming)
{
	const struct ladder_style *s = ladder_style(naming);

	return s != NULL ? s->name : "unknown";
}

int
ladder_naming_parse(const char *name, enum ladder_naming *out)
{
	int i;

	if (name == NULL || out == NULL)
		return -1;
	for (i = 0; i < NSTYLES; i++)
		if (strcmp(name, styles[i].name) == 0) {
			*out = (enum ladder_naming)i;
			return 0;
		}
	return -1;
}

char *
ladder_naming_list(const char *sep, const char *last, char *out, size_t outlen)
{
	size_t pos = 0;
	int i, n;

	if (out == NULL || outlen == 0)
		return out;
	out[0] = '\0';
	for (i = 0; i < NSTYLES; i++) {
		n = snprintf(out + pos, outlen - pos, "%s%s",
		    i == 0 ? "" : i == NSTYLES - 1 ? last : sep, styles[i].name);
		if (n < 0 || (size_t)n >= outlen - pos) {
			out[0] = '\0';
			return out;
		}
		pos += (size_t)n;
	}
	return out;
}
