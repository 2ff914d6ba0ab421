/* broker_needs: checks the broker's version and feature flags against
 * what a plan needs (see broker_needs.h). One table row per need. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_needs.h"
#include "errbuf.h"
#include "sentences.h"

/* One thing a plan may need of its broker: feature flag FLAG enabled, or
 * (FLAG NULL) a RabbitMQ version of at least MAJOR.MINOR, when the plan's
 * level queues are of type QUEUE_TYPE. */
static const struct need {
	enum plan_queue_type queue_type;
	const char *need;
	const char *flag;
	int major, minor;
	const char *why;
} needs[] = {
	{ PLAN_QUEUE_QUORUM, "quorum queues", "quorum_queue", 0, 0,
	    "ladder.queue_type: quorum declares quorum level queues" },
	{ PLAN_QUEUE_QUORUM, "at-least-once dead-lettering", NULL, 3, 10,
	    "quorum level queues dead-letter with x-dead-letter-strategy="
	    "at-least-once, which RabbitMQ has since 3.10" },
	{ PLAN_QUEUE_QUORUM, "at-least-once dead-lettering", "stream_queue", 0, 0,
	    "quorum level queues dead-letter with x-dead-letter-strategy="
	    "at-least-once; without feature flag stream_queue the broker "
	    "silently falls back to at-most-once, which loses a delayed message "
	    "whose next level is unavailable" },
};

/* VERSION ("3.10.8", "4.0.5") as MAJOR and MINOR; 0 when they parse. */
static int
version_parse(const char *version, int *major, int *minor)
{
	return version != NULL && sscanf(version, "%d.%d", major, minor) == 2 ? 0 : -1;
}

/* Whether VERSION is at least MAJOR.MINOR. */
static bool
version_at_least(const char *version, int major, int minor)
{
	int vmaj, vmin;

	if (version_parse(version, &vmaj, &vmin) != 0)
		return false;
	return vmaj > major || (vmaj == major && vmin >= minor);
}

/* Checks need N against A; appends its row to ROWS and, when it fails, a
 * sentence to ERR. Returns true when met, false when not. */
static bool
need_met(const struct need *n, const struct mgmt_about *a, json_t *rows,
    char *err, size_t errlen)
{
	json_t *row = json_pack("{s:s,s:s}", "need", n->need, "why", n->why);
	char want[32];
	int ok;

	if (n->flag != NULL) {
		const char *state = mgmt_about_flag(a, n->flag);

		/* Listed and enabled; a flag a 4.x broker no longer lists
		 * (required flags may be dropped) is always on there. */
		ok = state != NULL ? strcmp(state, "enabled") == 0 :
		    version_at_least(a->version, 4, 0);
		json_object_set_new(row, "flag", json_string(n->flag));
		json_object_set_new(row, "state", json_string(state ? state : "not listed"));
		if (!ok)
			sentences_add(err, errlen, "the broker (RabbitMQ %s) cannot honour "
			    "this plan: feature flag %s is %s (%s); enable it with "
			    "`rabbitmqctl enable_feature_flag %s`", a->version, n->flag,
			    state ? state : "unknown to it", n->why, n->flag);
	} else {
		snprintf(want, sizeof(want), "%d.%d", n->major, n->minor);
		ok = version_at_least(a->version, n->major, n->minor);
		json_object_set_new(row, "min_version", json_string(want));
		json_object_set_new(row, "state", json_string(a->version));
		if (!ok)
			sentences_add(err, errlen, "the broker (RabbitMQ %s) cannot honour "
			    "this plan: %s needs RabbitMQ %s or later (%s)", a->version,
			    n->need, want, n->why);
	}
	json_object_set_new(row, "ok", json_boolean(ok));
	json_array_append_new(rows, row);
	return ok;
}

int
needs_evaluate(const struct plan *p, const struct mgmt_about *a, json_t **report,
    char *err, size_t errlen)
{
	json_t *rows = json_array();
	size_t i;
	int met = 1;

	if (err != NULL && errlen > 0)
		*err = '\0';
	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		if (needs[i].queue_type == p->queue_type)
			met &= need_met(&needs[i], a, rows, err, errlen);
	*report = json_pack("{s:s,s:s?,s:b,s:o}", "version", a->version, "erlang",
	    a->erlang, "ok", met, "needs", rows);
	return met ? 0 : -1;
}

int
needs_check(struct mgmt *m, const struct plan *p, json_t **report, char *err,
    size_t errlen)
{
	struct mgmt_about a;
	char why[512];
	bool flags = false;
	size_t i;
	int r;

	*report = NULL;
	for (i = 0; i < sizeof(needs) / sizeof(needs[0]); i++)
		flags |= needs[i].queue_type == p->queue_type && needs[i].flag != NULL;
	if ((r = mgmt_read_about(m, flags, &a, why, sizeof(why))) != 0) {
		errbuf_set(err, errlen, "checking the broker's version and feature flags: %s%s",
		    why, r == MGMT_ERR_AUTH ? "; RabbitMQ 3.x shows feature flags only "
		    "to users with the administrator tag, and without them cutover "
		    "cannot confirm that the broker has the feature flags this plan "
		    "needs (stream_queue: at-least-once dead-lettering)" : "");
		*report = json_pack("{s:b,s:[],s:s}", "ok", 0, "needs", "error", err);
		return -1;
	}
	r = needs_evaluate(p, &a, report, err, errlen);
	mgmt_about_free(&a);
	return r;
}
