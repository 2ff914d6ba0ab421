/* test_pattern (unit): pattern (PCRE2 with bounded cost), policy (which
 * broker policy applies to an object, one apply-to table) and the old
 * selector built on them: PCRE syntax the broker accepts, a limit hit is
 * an error and never a non-match, the policy of the highest priority whose
 * apply-to and pattern fit, and no selection of the plan's own queues. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "old_path.h"
#include "pattern.h"
#include "plan.h"
#include "policy.h"

/* Compiles TEXT, which must compile. */
static struct pattern *
compiled(const char *text)
{
	struct pattern *p = NULL;
	char err[256];

	if (pattern_compile(text, &p, err, sizeof(err)) != 0)
		fail_msg("'%s' does not compile: %s", text, err);
	assert_non_null(p);
	assert_string_equal(pattern_text(p), text);
	return p;
}

static void
test_pcre_syntax(void **state)
{
	static const struct { const char *re, *subject; int match; } cases[] = {
		{ "^P\\.level\\.\\d+$", "P.level.07", 1 },
		{ "^P\\.level\\.\\d+$", "P.level.x", 0 },
		{ "^delay\\.(?!level\\.)", "delay.5s", 1 },
		{ "^delay\\.(?!level\\.)", "delay.level.00", 0 },
		{ "^a.*?b$", "a-b", 1 },
		{ "\\w+\\.parking$", "orders.parking", 1 },
		{ "^[[:digit:]]+$", "123", 1 },
		{ "level", "delay.level.00", 1 },	/* unanchored: anywhere */
		{ "^d.lay$", "d\xc3\xa9lay", 0 },	/* byte-wise: two bytes, one dot */
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pattern *p = compiled(cases[i].re);

		bool m;

		if (pattern_match(p, cases[i].subject, &m, err, sizeof(err)) != 0 ||
		    m != cases[i].match)
			fail_msg("'%s' on '%s': expected %d", cases[i].re, cases[i].subject,
			    cases[i].match);
		pattern_free(p);
	}
}

/* pattern_exact: a policy pattern that matches the one name it is for,
 * whatever that name's punctuation, and nothing else. */
static void
test_exact(void **state)
{
	static const struct { const char *name, *pattern, *other; } cases[] = {
		{ "celery_delayed_delivery", "^celery_delayed_delivery$", "xcelery_delayed_delivery" },
		{ "nsb.v2.delay-delivery", "^nsb\\.v2\\.delay\\-delivery$", "nsbXv2.delay-delivery" },
		{ "a+b(c)", "^a\\+b\\(c\\)$", "aab(c)" },
	};
	char out[64], err[256];
	bool m;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct pattern *p;

		assert_int_equal(pattern_exact(cases[i].name, out, sizeof(out)), 0);
		assert_string_equal(out, cases[i].pattern);
		p = compiled(out);
		assert_int_equal(pattern_match(p, cases[i].name, &m, err, sizeof(err)), 0);
		assert_true(m);
		assert_int_equal(pattern_match(p, cases[i].other, &m, err, sizeof(err)), 0);
		assert_false(m);
		pattern_free(p);
	}
	assert_int_equal(pattern_exact("celery_delayed_delivery", out, 10), -1);
}

static void
test_refused(void **state)
{
	char long_re[PATTERN_LENGTH_MAX + 2], err[256];
	struct pattern *p = (struct pattern *)&err;

	(void)state;
	assert_int_equal(pattern_compile("^d+++elay$", &p, err, sizeof(err)), -1);
	assert_null(p);
	assert_non_null(strstr(err, "quantifier does not follow a repeatable item"));
	assert_int_equal(pattern_compile("^(a", &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at offset 3"));
	memset(long_re, 'a', sizeof(long_re) - 1);
	long_re[sizeof(long_re) - 1] = '\0';
	assert_int_equal(pattern_compile(long_re, &p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "at most 1024"));
	long_re[PATTERN_LENGTH_MAX] = '\0';		/* exactly the limit */
	p = compiled(long_re);
	pattern_free(p);
	pattern_free(NULL);
}

/* Catastrophic backtracking ends at the match limit with an error: the
 * answer is unknown, not "no match". */
static void
test_limits_are_errors(void **state)
{
	char subject[256], err[256];
	struct pattern *p = compiled("^(a|aa)+$");
	bool m = true;

	(void)state;
	memset(subject, 'a', sizeof(subject) - 2);
	subject[sizeof(subject) - 2] = '!';
	subject[sizeof(subject) - 1] = '\0';
	assert_int_equal(pattern_match(p, subject, &m, err, sizeof(err)), -1);
	assert_false(m);
	assert_non_null(strstr(err, "limit"));
	assert_int_equal(pattern_match(p, "aaaa", &m, err, sizeof(err)), 0);
	assert_true(m);
	pattern_free(p);
}

static void
test_apply_to_table(void **state)
{
	static const struct {
		const char *apply_to;
		enum policy_object kind;
		const char *type;
		bool applies;
	} cases[] = {
		{ "all", POLICY_QUEUE, "quorum", true },
		{ "all", POLICY_EXCHANGE, NULL, true },
		{ NULL, POLICY_QUEUE, "classic", true },
		{ "queues", POLICY_QUEUE, "quorum", true },
		{ "queues", POLICY_QUEUE, "stream", true },
		{ "queues", POLICY_EXCHANGE, NULL, false },
		{ "quorum_queues", POLICY_QUEUE, "quorum", true },
		{ "quorum_queues", POLICY_QUEUE, "classic", false },
		{ "classic_queues", POLICY_QUEUE, "classic", true },
		{ "classic_queues", POLICY_QUEUE, "quorum", false },
		{ "classic_queues", POLICY_QUEUE, NULL, false },
		{ "streams", POLICY_QUEUE, "stream", true },
		{ "streams", POLICY_QUEUE, "quorum", false },
		{ "exchanges", POLICY_EXCHANGE, NULL, true },
		{ "exchanges", POLICY_QUEUE, "classic", false },
		{ "bogus", POLICY_QUEUE, "classic", false },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (policy_applies(cases[i].apply_to, cases[i].kind, cases[i].type) !=
		    cases[i].applies)
			fail_msg("apply-to %s, %s %s: expected %d", cases[i].apply_to ?
			    cases[i].apply_to : "(none)", cases[i].kind == POLICY_QUEUE ?
			    "queue" : "exchange", cases[i].type ? cases[i].type : "",
			    cases[i].applies);
}

static void
test_policy_for(void **state)
{
	struct policy_set s;
	const struct policy *p, *unknown;
	json_error_t je;
	char err[256];
	json_t *listing = json_loads("["
	    "{\"name\":\"low\",\"pattern\":\"^P\\\\.level\\\\.\\\\d+$\",\"apply-to\":\"queues\","
	    " \"priority\":1,\"definition\":{\"message-ttl\":5}},"
	    "{\"name\":\"high\",\"pattern\":\"^P\\\\.level\\\\.0\\\\d$\",\"apply-to\":\"quorum_queues\","
	    " \"priority\":9,\"definition\":{\"expires\":7}},"
	    "{\"name\":\"x\",\"pattern\":\"^P\\\\.\",\"apply-to\":\"exchanges\",\"priority\":50,"
	    " \"definition\":{}},"
	    "{\"name\":\"broken\",\"pattern\":\"^P\\\\.level\\\\.(1\",\"apply-to\":\"all\","
	    " \"priority\":5,\"definition\":{}},"
	    "{\"pattern\":\"nameless\"}]", 0, &je);

	(void)state;
	assert_non_null(listing);
	assert_int_equal(policy_set_load(&s, listing, err, sizeof(err)), 0);
	assert_int_equal(s.n, 4);
	p = policy_for(&s, "P.level.03", POLICY_QUEUE, "quorum", &unknown);
	assert_non_null(p);
	assert_string_equal(p->name, "high");
	assert_int_equal(p->expires_ms, 7);
	assert_int_equal(p->ttl_ms, -1);
	assert_null(unknown);		/* "broken" is below "high" */
	p = policy_for(&s, "P.level.03", POLICY_QUEUE, "classic", &unknown);
	assert_string_equal(p->name, "low");
	assert_int_equal(p->ttl_ms, 5);
	assert_non_null(unknown);	/* "broken" (5) is above "low" (1) */
	assert_string_equal(unknown->name, "broken");
	p = policy_for(&s, "P.level.x", POLICY_QUEUE, "quorum", &unknown);
	assert_null(p);
	p = policy_for(&s, "P.delivery", POLICY_EXCHANGE, NULL, &unknown);
	assert_string_equal(p->name, "x");
	assert_null(unknown);
	policy_set_free(&s);
	policy_set_free(&s);
}

/* The old selector, with a selection the loader refuses put in place as
 * an older stored plan could hold it: never one of the plan's own queues,
 * and a name the pattern cannot decide is an error. */
static void
test_old_selector(void **state)
{
	static const char yaml[] =
	    "name: sel\n"
	    "broker: { amqp: 'amqp://127.0.0.1:5672/%2f', management: "
	    "'http://127.0.0.1:15672', username: guest, password: env:P }\n"
	    "old: { queues: { match: '^delay\\.\\d+s$' } }\n"
	    "ladder: { prefix: delay, unit: 1s, levels: 4, destinations: [delay.out] }\n"
	    "steps: [measure_horizon]\n";
	static const struct { const char *name; int selected; } cases[] = {
		{ "delay.5s", 1 },
		{ "delay.level.00", 0 },
		{ "delay.level.03", 0 },
		{ "delay.level.04", 1 },	/* not a level of 4 */
		{ "delay.parking", 0 },
		{ "delay.out", 0 },
		{ "cutover.probe.sel", 0 },
		{ "cutover.canary.sel", 0 },
		{ "delayed", 1 },
	};
	struct old_selector sel;
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char err[512], subject[256];
	bool selected;

	(void)state;
	assert_int_equal(plan_load_buffer("t.yaml", yaml, strlen(yaml), &p, &errs), 0);
	free(p->old.match);
	assert_non_null(p->old.match = strdup("^(delay|cutover)"));
	assert_int_equal(old_selector_init(&sel, p, err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (old_selector_test(&sel, cases[i].name, &selected, err,
		    sizeof(err)) != 0 || selected != cases[i].selected)
			fail_msg("'%s': expected %d", cases[i].name, cases[i].selected);
	assert_true(old_selector_own(&sel, "delay.level.02"));
	old_selector_free(&sel);

	free(p->old.match);
	assert_non_null(p->old.match = strdup("^(a|aa)+$"));
	assert_int_equal(old_selector_init(&sel, p, err, sizeof(err)), 0);
	memset(subject, 'a', sizeof(subject) - 2);
	subject[sizeof(subject) - 2] = '!';
	subject[sizeof(subject) - 1] = '\0';
	assert_int_equal(old_selector_test(&sel, subject, &selected, err, sizeof(err)),
	    -1);
	assert_non_null(strstr(err, "cannot decide"));
	old_selector_free(&sel);

	free(p->old.match);
	assert_non_null(p->old.match = strdup("^(delay"));
	assert_int_equal(old_selector_init(&sel, p, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "not a usable PCRE2 pattern"));
	old_selector_free(&sel);
	plan_free(p);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_pcre_syntax),
	cmocka_unit_test(test_exact),
	cmocka_unit_test(test_refused),
	cmocka_unit_test(test_limits_are_errors),
	cmocka_unit_test(test_apply_to_table),
	cmocka_unit_test(test_policy_for),
	cmocka_unit_test(test_old_selector))
