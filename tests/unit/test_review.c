/* test_review: the design review `cutover check` prints. Classic level
 * queues get a warning on the queue-type question saying that they
 * dead-letter at most once and that a broker restart loses what expires
 * then; quorum ones get none. The old-path answer says the watch raises
 * broker_restart. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "review.h"

static const char plan_text[] =
    "name: review-test\n"
    "broker:\n"
    "  amqp: amqp://127.0.0.1:5672/%%2f\n"
    "  management: http://127.0.0.1:15672\n"
    "  username: guest\n"
    "  password: env:RABBIT_PASSWORD\n"
    "old:\n"
    "  queues: { match: '^delay\\.[0-9]+s$' }\n"
    "ladder:\n"
    "%s"
    "  queue_type: %s\n"
    "  destinations: [email.delivery]\n"
    "flag: { kind: unleash, url: 'http://127.0.0.1:4242', project: default,\n"
    "  environment: production, feature: delay-ladder, token: env:UNLEASH_TOKEN }\n"
    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, "
    "watch, remove_old]\n";

/* The answer object to the question starting with PREFIX in A. */
static const json_t *
answer(const json_t *a, const char *prefix)
{
	const json_t *o;
	size_t i;

	json_array_foreach(a, i, o)
		if (strncmp(json_string_value(json_object_get(o, "question")), prefix,
		    strlen(prefix)) == 0)
			return o;
	fail_msg("no question starting '%s'", prefix);
	return NULL;
}

static json_t *
review_of_ladder(const char *ladder, const char *queue_type)
{
	struct plan *p = NULL;
	char text[2048];
	json_t *a;

	snprintf(text, sizeof(text), plan_text, ladder, queue_type);
	assert_int_equal(plan_load_buffer("t.yaml", text, strlen(text), &p, NULL), 0);
	a = review_answers(p);
	plan_free(p);
	assert_non_null(a);
	assert_int_equal(json_array_size(a), REVIEW_QUESTIONS);
	return a;
}

static json_t *
review_of(const char *queue_type)
{
	return review_of_ladder("  unit: 1s\n  max_delay: 1h\n", queue_type);
}

static void
test_classic_levels_are_warned_about(void **state)
{
	json_t *a = review_of("classic");
	const char *w = json_string_value(json_object_get(answer(a, "Which queue type"),
	    "warning"));

	(void)state;
	assert_non_null(w);
	assert_non_null(strstr(w, "at most once"));
	assert_non_null(strstr(w, "restarts"));
	assert_non_null(strstr(w, "prefer queue_type: quorum"));
	assert_non_null(strstr(json_string_value(json_object_get(answer(a,
	    "How are delayed messages moved"), "answer")), "broker_restart"));
	json_decref(a);
}

static void
test_quorum_levels_are_not(void **state)
{
	json_t *a = review_of("quorum");

	(void)state;
	assert_null(json_object_get(answer(a, "Which queue type"), "warning"));
	json_decref(a);
}

/* What the libraries' own producers do that cutover's do not: Celery's
 * int() countdown, NServiceBus's clamped negative delay;
 * cutover's own naming warns of neither. */
static void
test_library_producers_are_warned_about(void **state)
{
	json_t *a = review_of_ladder("  naming: kombu\n", "quorum");
	const char *w = json_string_value(json_object_get(answer(a,
	    "Is duration conversion rounded up"), "warning"));

	(void)state;
	assert_non_null(w);
	assert_non_null(strstr(w, "int()"));
	assert_non_null(strstr(w, "up to one second early on any ladder"));
	assert_non_null(strstr(w, "1.9 s countdown arrived after 1.055 s"));
	json_decref(a);
	a = review_of_ladder("  naming: nservicebus\n", "quorum");
	w = json_string_value(json_object_get(answer(a, "Are out-of-range values"),
	    "warning"));
	assert_non_null(w);
	assert_non_null(strstr(w, "negative delay to 0"));
	assert_null(json_object_get(answer(a, "Is duration conversion"), "warning"));
	json_decref(a);
	a = review_of("quorum");
	assert_null(json_object_get(answer(a, "Is duration conversion"), "warning"));
	assert_null(json_object_get(answer(a, "Are out-of-range values"), "warning"));
	json_decref(a);
}

/* What the watch measures per level, and nothing more: the
 * level probes, the budget, pending dead-letters on quorum only, the
 * bands, and the oldest age's two sources; the cycle warning on the
 * consumer's question. */
static void
test_metrics_answer_says_what_is_measured(void **state)
{
	json_t *q = review_of("quorum"), *c = review_of("classic");
	const char *aq = json_string_value(json_object_get(answer(q,
	    "Which bounded metrics"), "answer"));
	const char *ac = json_string_value(json_object_get(answer(c,
	    "Which bounded metrics"), "answer"));
	const char *w = json_string_value(json_object_get(answer(q,
	    "When does the consumer acknowledge"), "warning"));

	(void)state;
	assert_non_null(strstr(aq, "waits in that level alone"));
	assert_non_null(strstr(aq, "reported as not probed"));
	assert_non_null(strstr(aq, "messages_dlx"));
	assert_non_null(strstr(aq, "[2^k, 2^(k+1)) units"));
	assert_non_null(strstr(aq, "head message's timestamp"));
	assert_non_null(strstr(aq, "at most the age of the level's last on-time probe"));
	assert_null(strstr(aq, "Depth and oldest-message age per level"));
	assert_non_null(strstr(ac, "not reported for classic"));
	assert_non_null(w);
	assert_non_null(strstr(w, "x-death"));
	assert_non_null(strstr(w, "cycle"));
	assert_non_null(strstr(w, "`cutover publish` strips them"));
	json_decref(q);
	json_decref(c);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_classic_levels_are_warned_about),
	cmocka_unit_test(test_quorum_levels_are_not),
	cmocka_unit_test(test_library_producers_are_warned_about),
	cmocka_unit_test(test_metrics_answer_says_what_is_measured))
