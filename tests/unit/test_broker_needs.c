/* test_broker_needs: the verdict on a broker's version and feature flags
 * (needs_evaluate), from answers shaped as RabbitMQ 3.10.8 and 4.0.5 give
 * them: a quorum plan needs quorum_queue and stream_queue enabled and
 * RabbitMQ 3.10 or later, a classic plan nothing; an unlisted flag counts
 * as enabled from 4.0 only; every refusal names what is missing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "broker_needs.h"
#include "plan.h"

/* The smallest plan with a ladder: only its queue type matters here. */
static const char plan_text[] =
    "name: needs-test\n"
    "broker: { amqp: 'amqp://127.0.0.1/%%2f', management: 'http://127.0.0.1:15672',\n"
    "  username: guest, password: env:P }\n"
    "old: { queues: { names: [old.1] } }\n"
    "ladder: { unit: 100ms, levels: 4, queue_type: %s, destinations: [d] }\n"
    "steps: [measure_horizon, declare_ladder]\n";

/* needs_evaluate for a plan of QUEUE_TYPE on a broker of VERSION whose
 * feature flags are FLAGS (JSON text, or NULL). Returns its code; the
 * report's "ok" must agree with it. */
static int
verdict(const char *queue_type, const char *version, const char *flags,
    char *err, size_t errlen)
{
	struct mgmt_about a = { .version = version, .erlang = "27" };
	struct plan *p = NULL;
	char text[2048];
	json_t *report = NULL;
	int rc;

	snprintf(text, sizeof(text), plan_text, queue_type);
	assert_int_equal(plan_load_buffer("t.yaml", text, strlen(text), &p, NULL), 0);
	a.flags = flags ? json_loads(flags, 0, NULL) : NULL;
	rc = needs_evaluate(p, &a, &report, err, errlen);
	assert_non_null(report);
	assert_string_equal(json_string_value(json_object_get(report, "version")), version);
	assert_int_equal(json_is_true(json_object_get(report, "ok")), rc == 0);
	json_decref(report);
	json_decref(a.flags);
	plan_free(p);
	return rc;
}

static const char flags_310[] = "[{\"name\":\"quorum_queue\",\"state\":\"enabled\"},"
    "{\"name\":\"stream_queue\",\"state\":\"enabled\"}]";
static const char flags_310_no_stream[] = "[{\"name\":\"quorum_queue\",\"state\":\"enabled\"},"
    "{\"name\":\"stream_queue\",\"state\":\"disabled\"}]";

/* Fails unless a quorum plan on a broker of VERSION with FLAGS (see
 * verdict) is refused with an error that holds each of the phrases that
 * follow, up to a NULL; the failure names the phrase and the error. */
static void
refused(const char *version, const char *flags, ...)
{
	char err[1024];
	const char *phrase;
	va_list ap;

	if (verdict("quorum", version, flags, err, sizeof(err)) != -1)
		fail_msg("a quorum plan on RabbitMQ %s with %s was not refused", version,
		    flags);
	va_start(ap, flags);
	while ((phrase = va_arg(ap, const char *)) != NULL)
		if (strstr(err, phrase) == NULL) {
			va_end(ap);
			fail_msg("RabbitMQ %s: the error \"%s\" does not say \"%s\"", version,
			    err, phrase);
		}
	va_end(ap);
}

static void
test_quorum_plan_on_a_full_broker(void **state)
{
	char err[1024];

	(void)state;
	assert_int_equal(verdict("quorum", "3.10.8", flags_310, err, sizeof(err)), 0);
	assert_string_equal(err, "");
	assert_int_equal(verdict("quorum", "4.0.5", flags_310, err, sizeof(err)), 0);
}

static void
test_stream_queue_disabled_is_named(void **state)
{
	char err[1024];

	(void)state;
	assert_int_equal(verdict("quorum", "3.10.8", flags_310_no_stream, err,
	    sizeof(err)), -1);
	assert_non_null(strstr(err, "feature flag stream_queue is disabled"));
	assert_non_null(strstr(err, "at-most-once"));
	assert_null(strstr(err, "quorum_queue"));
}

static void
test_changing_flag_is_not_enabled(void **state)
{
	(void)state;
	refused("3.10.8", "[{\"name\":\"quorum_queue\",\"state\":\"state_changing\"},"
	    "{\"name\":\"stream_queue\",\"state\":\"enabled\"}]",
	    "feature flag quorum_queue is state_changing", NULL);
}

static void
test_old_broker_lacks_at_least_once(void **state)
{
	(void)state;
	refused("3.9.29", flags_310, "RabbitMQ 3.9.29", "needs RabbitMQ 3.10 or later", NULL);
}

static void
test_unlisted_flag_counts_only_from_4_0(void **state)
{
	char err[1024];

	(void)state;
	assert_int_equal(verdict("quorum", "4.1.0", "[]", err, sizeof(err)), 0);
	refused("3.12.1", "[]", "feature flag quorum_queue is unknown to it",
	    "feature flag stream_queue is unknown to it", NULL);
}

static void
test_classic_plan_needs_nothing(void **state)
{
	char err[1024];

	(void)state;
	assert_int_equal(verdict("classic", "3.8.0", NULL, err, sizeof(err)), 0);
	assert_string_equal(err, "");
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_quorum_plan_on_a_full_broker),
	cmocka_unit_test(test_stream_queue_disabled_is_named),
	cmocka_unit_test(test_changing_flag_is_not_enabled),
	cmocka_unit_test(test_old_broker_lacks_at_least_once),
	cmocka_unit_test(test_unlisted_flag_counts_only_from_4_0),
	cmocka_unit_test(test_classic_plan_needs_nothing))
