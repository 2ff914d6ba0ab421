/* review: answers the article's design-review checklist from a plan. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "ladder.h"
#include "review.h"
#include "topology.h"

/* Appends one answer; FMT builds the answer text. WARNING may be NULL. */
static void
add(json_t *a, const char *question, const char *by, const char *warning,
    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
add(json_t *a, const char *question, const char *by, const char *warning,
    const char *fmt, ...)
{
	char text[1280];
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	o = json_pack("{s:s,s:s,s:s}", "question", question, "answered_by", by,
	    "answer", text);
	if (o != NULL && warning != NULL)
		json_object_set_new(o, "warning", json_string(warning));
	if (o != NULL)
		json_array_append_new(a, o);
}

/* Writes into LEAST which levels the watch probes at least (those whose
 * TTL is within the allowance alone). */
static void
probed_least(const struct plan *p, char *least, size_t leastlen)
{
	const struct ladder *l = &p->ladder;
	int probed_min = -1;

	while (probed_min + 1 < l->levels &&
	    ladder_level_ttl_ms(l, probed_min + 1) <= p->watch.allowance_ms)
		probed_min++;
	if (probed_min >= 0)
		snprintf(least, leastlen, "at least levels 0-%d here", probed_min);
	else
		snprintf(least, leastlen, "here only levels within the largest old TTL");
}

/* Writes P's destinations into DESTS: "a, b (to exchange x)". */
static void
destinations_text(const struct plan *p, char *dests, size_t destslen)
{
	size_t off = 0;

	dests[0] = '\0';
	for (size_t i = 0; i < p->ndestinations && off < destslen; i++) {
		bool to_exchange;
		const char *target = plan_destination_target(p, i, &to_exchange);

		off += (size_t)snprintf(dests + off, destslen - off, "%s%s",
		    i ? ", " : "", p->destinations[i]);
		if ((strcmp(target, p->destinations[i]) != 0 || to_exchange) &&
		    off < destslen)
			off += (size_t)snprintf(dests + off, destslen - off,
			    " (to %s %s)", to_exchange ? "exchange" : "queue", target);
	}
}

/* The unit, the largest delay, out-of-range delays and rounding. */
static void
answer_delays(json_t *a, const struct plan *p, const struct ladder_style *style)
{
	const struct ladder *l = &p->ladder;
	char unit[32], max[32], desc[64], lim[32];

	duration_format(l->unit_ms, unit, sizeof(unit));
	duration_format(ladder_max_delay_ms(l), max, sizeof(max));
	add(a, "What is the base time unit?", "plan", NULL,
	    "%s: every delay is a whole number of %s units; this is the ladder's "
	    "resolution.", unit, unit);
	add(a, "What is the maximum supported delay?", "plan", NULL,
	    "%s, that is %s ((2^%d - 1) x %s), with %d levels.", max,
	    duration_describe(ladder_max_delay_ms(l), desc, sizeof(desc)), l->levels, unit,
	    l->levels);
	add(a, "Are out-of-range values rejected?", "plan", style->producer_range,
	    "Yes where cutover encodes (publish, canary, probes): a delay above %s%s is "
	    "refused, never truncated. Producers that build routing keys themselves "
	    "must refuse them too.", duration_format(ladder_limit_ms(l), lim, sizeof(lim)),
	    ladder_limit_ms(l) < ladder_max_delay_ms(l) ? " (the plan's max_delay)" : "");
	add(a, "Is duration conversion rounded up?", "plan", style->producer_rounding,
	    "Yes: units = ceil(delay / %s) (%s + 1ms becomes 2 units), so delivery is "
	    "never before the requested time.", unit, unit);
}

/* The queue type, the producer's confirms, destination bindings and where
 * unroutable messages go. */
static void
answer_paths(json_t *a, const struct plan *p)
{
	const struct ladder *l = &p->ladder;
	char dex[LADDER_NAME_MAX], pex[LADDER_NAME_MAX], pq[LADDER_NAME_MAX];
	char dests[512];

	ladder_delivery_exchange(l, dex, sizeof(dex));
	ladder_parking_exchange(l, pex, sizeof(pex));
	ladder_parking_queue(l, pq, sizeof(pq));
	destinations_text(p, dests, sizeof(dests));
	if (p->queue_type == PLAN_QUEUE_QUORUM)
		add(a, "Which queue type and dead-letter safety mode are used?", "plan", NULL,
		    "Quorum level queues with x-dead-letter-strategy=at-least-once and "
		    "x-overflow=reject-publish: a message moves between levels with the "
		    "broker's internal confirms.");
	else
		add(a, "Which queue type and dead-letter safety mode are used?", "plan",
		    "classic level queues dead-letter at most once: a delayed message is "
		    "lost if it expires while the broker restarts or its next level is "
		    "unavailable (a broker killed mid-watch lost 262 messages from classic "
		    "queues), and no depth shows it; prefer queue_type: quorum",
		    "Classic level queues; dead-lettering is at-most-once.");
	add(a, "How does the producer confirm entry into the broker?", "application", NULL,
	    "cutover's own publishes (canary, probes, `cutover publish`) use publisher "
	    "confirms with mandatory. Your producers must wait for the broker's confirm "
	    "before reporting a delayed job as accepted.");
	add(a, "Who declares final destination bindings?", "plan", NULL,
	    "declare_ladder binds %s on %s with an exact word count (%d bit words, then "
	    "the destination) %s; consumers should declare their own bindings too.",
	    p->ndestinations ? dests : "(none)", dex, l->levels, p->create_destinations ?
	    "and creates missing queues (ladder.create_destinations)" :
	    "and refuses a missing queue (each must exist: a typo would make a queue "
	    "nobody consumes)");
	add(a, "Where do unroutable messages go?", "plan", NULL,
	    "%s has alternate-exchange %s (fanout) into %s, whose normal depth is zero; "
	    "the watch alerts when it is not.%s%s%s", dex, pex, pq,
	    ladder_style(l->naming)->library ? " It gets it from policy " TOPOLOGY_AE_POLICY_PREFIX : "",
	    ladder_style(l->naming)->library ? dex : "",
	    ladder_style(l->naming)->library ? ", which declare_ladder sets: the library "
	    "declares the exchange with no arguments. A policy of higher priority "
	    "matching it would hide that one (only one applies); verify_ladder names it." :
	    "");
}

/* How the messages already waiting get through the migration. */
static void
answer_migration(json_t *a, const struct plan *p)
{
	const char *steps_left, *moved;
	char ex[32];

	if (plan_find_step(p, PLAN_STEP_FLIP) < 0)
		steps_left = "This plan has no flip step: producers are not switched by it.";
	else if (plan_find_step(p, PLAN_STEP_REMOVE_OLD) < 0)
		steps_left = "This plan flips producers but has no remove_old step: old queues "
		    "stay until removed by hand.";
	else
		steps_left = "New publishes switch to the ladder at the flip; messages already in "
		    "old queues drain through them; each old queue is deleted only when empty "
		    "and past its own horizon.";
	if (plan_find_step(p, PLAN_STEP_MOVE_OLD) < 0)
		moved = "They are not moved.";
	else if (p->has_target)
		moved = "move_old moves those waiting in the old path to the ladder on "
		    "the target broker with what each still owes, rounded up to the "
		    "ladder's unit (never early), each acknowledged on the old broker "
		    "only after the target confirmed it; what cannot go drains where "
		    "it is.";
	else
		moved = "move_old moves those waiting in the old path into the ladder "
		    "with what each still owes, rounded up to the ladder's unit (never "
		    "early), each acknowledged in its old queue only after the ladder "
		    "confirmed it; what cannot go drains where it is.";
	add(a, "How are delayed messages moved during a broker migration?", "plan", NULL,
	    "%s %s The watch lasts one old horizon plus an allowance of %s. "
	    "Classic old queues dead-letter at most once: a broker restart during the "
	    "watch raises broker_restart with how many old-path messages it exposed, "
	    "and the watch holds until it is acknowledged. The old path is what "
	    "old.queues selects at each look, not a list: a queue a library declares "
	    "after the measure joins it (its TTL counts, it is removed by the same "
	    "rules). An old classic queue that expires is accepted when its expiry is "
	    "at least its TTL: declared again at each publish, as libraries do, it "
	    "outlives its last message. A quorum old queue with an expiry is refused: "
	    "RabbitMQ never renews a quorum queue's expiry, so it is deleted with "
	    "whatever it holds.",
	    moved, steps_left, duration_format(p->watch.allowance_ms, ex, sizeof(ex)));
}

/* What only the application can answer: acknowledging, idempotency. */
static void
answer_application(json_t *a)
{
	add(a, "When does the consumer acknowledge?", "application",
	    "a consumer that republishes a message it got from the ladder with its "
	    "headers copied (a retry; Celery's retries copy them) brings back x-death "
	    "entries naming level queues: RabbitMQ takes dead-lettering into a queue "
	    "that x-death already names, with no newer 'rejected' death, for a cycle "
	    "and drops the message without a word (neither its destination nor "
	    "parking gets it). Republish without x-death and x-first-death-*/"
	    "x-last-death-*; `cutover publish` strips them",
	    "Only the application can answer: acknowledge after the job's effect is "
	    "durable, and expect redelivery.");
	add(a, "Which jobs require durable idempotency?", "application", NULL,
	    "Only the application can answer: every job whose effect must not happen "
	    "twice (payments, emails, external calls) needs an idempotency key or a "
	    "durable claim; dead-lettering is at-least-once.");
}

/* The metrics that show every stage moving. */
static void
answer_metrics(json_t *a, const struct plan *p)
{
	const struct ladder *l = &p->ladder;
	char ex[32], ex2[32], least[64];

	probed_least(p, least, sizeof(least));
	add(a, "Which bounded metrics prove every stage is moving?", "plan", NULL,
	    "Per level (label: level 0-%d), sampled every %s: depth; %s; client "
	    "publishes entering the level (its exchange's publish_in: the delay band "
	    "[2^k, 2^(k+1)) units, the watch's own probes included); and a probe that "
	    "waits in that level alone, sent again as each comes out, for every level "
	    "whose TTL is within the probe budget (the largest measured old TTL + the "
	    "allowance %s: %s), one later than its TTL + the "
	    "allowance raising level_late naming the level; a level with a longer "
	    "TTL is reported as not probed. Oldest age: the head message's timestamp "
	    "where the broker reports one (classic level queues, messages carrying a "
	    "timestamp: the age since the publisher stamped it), otherwise at most "
	    "the age of the level's last on-time probe. Also parking depth, old-path "
	    "depth and publishes, and the path probe's lateness against its "
	    "not-before time; no routing key or raw delay as a label.",
	    l->levels - 1, duration_format(p->watch.interval_ms, ex, sizeof(ex)),
	    p->queue_type == PLAN_QUEUE_QUORUM ? "pending dead-letters (messages_dlx; "
	    "held longer than the allowance raises dead_letters_pending with the "
	    "count)" : "pending dead-letters are not reported for classic queues",
	    duration_format(p->watch.allowance_ms, ex2, sizeof(ex2)), least);
}

json_t *
review_answers(const struct plan *p)
{
	const struct ladder_style *style = ladder_style(p->ladder.naming);
	json_t *a;

	if (style == NULL || (a = json_array()) == NULL)
		return NULL;
	answer_delays(a, p, style);
	answer_paths(a, p);
	answer_migration(a, p);
	answer_application(a);
	answer_metrics(a, p);
	return a;
}
