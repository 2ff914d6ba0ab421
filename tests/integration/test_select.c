/* test_select (integration): which queues count as "old" and which broker
 * policies count as applying, on a real RabbitMQ node (CUTOVER_TEST_AMQP,
 * CUTOVER_TEST_MGMT, CUTOVER_TEST_USER, password env:CUTOVER_TEST_PASSWORD).
 * An old selection that also matches the plan's own ladder, destinations,
 * probe or canary queue never selects them (measure, remove_old); a policy
 * written in PCRE (`\d`) is matched as the broker matches it (verify's
 * drift, measure's operator policies), for every apply-to the broker
 * knows. Every name carries a per-run prefix; the teardown removes what a
 * test made, also when it failed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "itest_broker.h"
#include "itest_json.h"
#include "itest_plan.h"
#include "ladder.h"
#include "old_path.h"
#include "plan.h"
#include "step.h"

#define HOUR_MS (60 * 60 * 1000)

static char prefix[64];		/* "itsel.PID" */
static char rprefix[80];	/* the same as a regex: "itsel\\.PID" */
static char planname[64];	/* "itsel-PID" */

/* What a test made on the broker, for its teardown. */
struct made {
	struct plan *p;
	struct step_ctx c;
	bool open;
	char queues[8][128];	/* extra queues (old, probe, canary) */
	size_t nqueues;
	char policies[4][128];
	size_t npolicies;
	char op_policies[4][128];
	size_t nop_policies;
};

static struct made made;

static void
set_names(void)
{
	snprintf(prefix, sizeof(prefix), "itsel.%ld", (long)getpid());
	snprintf(rprefix, sizeof(rprefix), "itsel\\.%ld", (long)getpid());
	snprintf(planname, sizeof(planname), "itsel-%ld", (long)getpid());
}

/* Loads the test plan: a cutover ladder of 4 levels named PREFIX, one
 * destination PREFIX.dest, the old selection OLD_YAML. */
static struct plan *
load_plan(const char *old_yaml)
{
	struct itest_plan b;

	itest_plan_begin(&b, planname, NULL);
	itest_plan_addf(&b,
	    "old:\n"
	    "  queues: %s\n"
	    "  max_message_ttl: 1h\n"
	    "ladder:\n"
	    "  naming: cutover\n"
	    "  prefix: %s\n"
	    "  unit: 1s\n"
	    "  levels: 4\n"
	    "  queue_type: quorum\n"
	    "  destinations: [%s.dest]\n"
	    "  create_destinations: true\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder]\n",
	    old_yaml, prefix, prefix);
	return itest_plan_load("itest-select.yaml", b.text);
}

/* Loads the plan, opens its context and declares its ladder. */
static void
start(const char *old_yaml)
{
	json_t *r = NULL;
	char err[1024];

	made.p = load_plan(old_yaml);
	if (step_ctx_open(&made.c, made.p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
	made.open = true;
	if (step_declare_ladder(&made.c, &r, err, sizeof(err)) != 0)
		fail_msg("declare_ladder: %s", err);
	json_decref(r);
}

/* Declares durable classic queue NAME with TTL_MS, remembered for the
 * teardown. */
static void
make_queue(const char *name, int64_t ttl_ms)
{
	struct topology_arg a[1];
	char err[1024];

	itest_arg_int(&a[0], "x-message-ttl", ttl_ms);
	assert_true(made.nqueues < sizeof(made.queues) / sizeof(made.queues[0]));
	snprintf(made.queues[made.nqueues++], sizeof(made.queues[0]), "%s", name);
	if (broker_queue_declare(made.c.amqp, name, true, a, 1, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", name, err);
}

/* Puts policy NAME (operator policy when OP) with PATTERN, APPLY_TO and
 * message-ttl TTL_MS at priority 100, remembered for the teardown. Returns
 * 0, or -1 with ERR when the broker refused it. */
static int
try_policy(bool op, const char *name, const char *pattern, const char *apply_to,
    int64_t ttl_ms, char *err, size_t errlen)
{
	char path[256];
	json_t *body;
	int r;

	if (!op) {
		if (made.npolicies == 0 || strcmp(made.policies[made.npolicies - 1], name) != 0)
			snprintf(made.policies[made.npolicies++], sizeof(made.policies[0]),
			    "%s", name);
		body = json_pack("{s:I}", "message-ttl", (json_int_t)ttl_ms);
		r = mgmt_put_policy(made.c.mgmt, name, pattern, apply_to, 100, body, err,
		    errlen);
	} else {
		snprintf(made.op_policies[made.nop_policies++], sizeof(made.op_policies[0]),
		    "%s", name);
		body = json_pack("{s:s,s:{s:I},s:s,s:i}", "pattern", pattern, "definition",
		    "message-ttl", (json_int_t)ttl_ms, "apply-to", apply_to, "priority", 100);
		snprintf(path, sizeof(path), "/api/operator-policies/%%2F/%s", name);
		r = mgmt_request(made.c.mgmt, "PUT", path, body, NULL, NULL, err, errlen);
	}
	json_decref(body);
	return r != 0 ? -1 : 0;
}

static void
put_policy(bool op, const char *name, const char *pattern, const char *apply_to,
    int64_t ttl_ms)
{
	char err[1024];

	if (try_policy(op, name, pattern, apply_to, ttl_ms, err, sizeof(err)) != 0)
		fail_msg("putting policy %s: %s", name, err);
}

static int
teardown(void **state)
{
	char path[256], err[1024];
	json_t *r = NULL;

	(void)state;
	if (made.open) {
		for (size_t i = 0; i < made.npolicies; i++)
			mgmt_delete_policy(made.c.mgmt, made.policies[i], err, sizeof(err));
		for (size_t i = 0; i < made.nop_policies; i++) {
			snprintf(path, sizeof(path), "/api/operator-policies/%%2F/%s",
			    made.op_policies[i]);
			mgmt_request(made.c.mgmt, "DELETE", path, NULL, NULL, NULL, err,
			    sizeof(err));
		}
		for (size_t i = 0; i < made.nqueues; i++)
			broker_queue_delete(made.c.amqp, made.queues[i], 0, NULL, err,
			    sizeof(err));
		if (step_teardown_ladder(&made.c, &r, err, sizeof(err)) != 0)
			fprintf(stderr, "# teardown of the ladder: %s\n", err);
		json_decref(r);
		for (size_t i = 0; i < made.p->ndestinations; i++)
			broker_queue_delete(made.c.amqp, made.p->destinations[i], 0, NULL, err,
			    sizeof(err));
		step_ctx_close(&made.c);
	}
	plan_free(made.p);
	memset(&made, 0, sizeof(made));
	return 0;
}

/* Does the JSON array KEY of R hold an entry named NAME? */
static bool
lists(const json_t *r, const char *key, const char *name)
{
	return ijson_named(json_object_get(r, key), name) != NULL;
}

/* Fails naming every entry of KEY in R other than the queue ONLY. */
static void
assert_only(const json_t *r, const char *key, const char *only, const char *what)
{
	const json_t *o;
	size_t i, others = 0;

	json_array_foreach(json_object_get(r, key), i, o) {
		const char *n = json_string_value(json_object_get(o, "name"));

		if (strcmp(n, only) != 0) {
			fprintf(stderr, "# %s lists '%s' (%s)\n", what, n,
			    json_string_value(json_object_get(o, "outcome")) ?
			    json_string_value(json_object_get(o, "outcome")) : "measured");
			others++;
		}
	}
	if (others > 0 || !lists(r, key, only))
		fail_msg("%s lists %zu queue(s) besides the old queue '%s'%s", what, others,
		    only, lists(r, key, only) ? "" : ", and not the old queue itself");
}

/* Measures, then runs remove_old as a dry run: both must see only OLDQ. */
static void
measure_and_dry_run(const char *oldq)
{
	struct old_remove_opts dry = { .dry_run = true };
	json_t *measured = NULL, *r = NULL;
	char err[1024];

	if (step_measure_horizon(&made.c, &measured, err, sizeof(err)) != 0)
		fail_msg("measure_horizon: %s", err);
	assert_only(measured, "queues", oldq, "measure_horizon");
	made.c.measured = measured;
	made.c.old_last_entry_ms = made.c.now_ms - 2 * HOUR_MS;
	old_remove(&made.c, &dry, &r, err, sizeof(err));
	assert_non_null(r);
	assert_only(r, "entries", oldq, "old remove --dry-run");
	json_decref(r);
	made.c.measured = NULL;
	json_decref(measured);
}

/* A measure recorded before the fix may list the ladder's queues: a
 * dry run leaves each of them, as no longer selected, and would delete
 * only OLDQ. */
static void
stale_measure_dry_run(const char *oldq)
{
	struct old_remove_opts dry = { .dry_run = true };
	json_t *measured = NULL, *r = NULL, *qs, *fake;
	const json_t *e;
	char err[1024], level[128];
	size_t i, would = 0;

	if (step_measure_horizon(&made.c, &measured, err, sizeof(err)) != 0)
		fail_msg("measure_horizon: %s", err);
	qs = json_object_get(measured, "queues");
	assert_int_equal(json_array_size(qs), 1);
	for (int k = 0; k < made.p->ladder.levels; k++) {
		fake = json_deep_copy(json_array_get(qs, 0));
		ladder_level_queue(&made.p->ladder, k, level, sizeof(level));
		json_object_set_new(fake, "name", json_string(level));
		json_object_set_new(fake, "type", json_string("quorum"));
		json_array_append_new(qs, fake);
	}
	made.c.measured = measured;
	made.c.old_last_entry_ms = made.c.now_ms - 2 * HOUR_MS;
	old_remove(&made.c, &dry, &r, err, sizeof(err));
	assert_non_null(r);
	json_array_foreach(json_object_get(r, "entries"), i, e) {
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *outcome = json_string_value(json_object_get(e, "outcome"));

		fprintf(stderr, "# stale measure: %s %s\n", outcome, name);
		if (strcmp(outcome, "would_remove") == 0) {
			would++;
			assert_string_equal(name, oldq);
		}
	}
	assert_int_equal(would, 1);
	json_decref(r);
	made.c.measured = NULL;
	json_decref(measured);
}

/* A plan whose old selection also matches its own ladder
 * (here '^PREFIX\.' over a ladder named PREFIX, with a destination
 * PREFIX.dest), or names its own queues, as a plan stored before `check`
 * refused them could: measure and remove_old select none of them. */
static void
test_own_queues_are_never_old(void **state)
{
	char oldq[128], match[160], probe[128], canary[128], level[128], parking[128];
	const char *names[6];

	(void)state;
	set_names();
	snprintf(oldq, sizeof(oldq), "%s.old.5s", prefix);
	snprintf(probe, sizeof(probe), "cutover.probe.%s", planname);
	snprintf(canary, sizeof(canary), "cutover.canary.%s", planname);
	start("{ names: [itsel.none] }");
	made.c.now_ms = old_now_ms(NULL);
	make_queue(oldq, 5000);
	itest_give_publish_counter(made.c.amqp, made.c.mgmt, oldq);
	make_queue(probe, 5000);
	make_queue(canary, 5000);

	/* The match: check now refuses it, so put it in place as a stored
	 * plan would hold it. */
	snprintf(match, sizeof(match), "^%s\\.", rprefix);
	made.p->old.match = strdup(match);
	assert_non_null(made.p->old.match);
	measure_and_dry_run(oldq);
	stale_measure_dry_run(oldq);

	/* The names: the old queue, a level, the parking queue, the
	 * destination, the probe and the canary queue. */
	ladder_level_queue(&made.p->ladder, 0, level, sizeof(level));
	ladder_parking_queue(&made.p->ladder, parking, sizeof(parking));
	names[0] = oldq;
	names[1] = level;
	names[2] = parking;
	names[3] = made.p->destinations[0];
	names[4] = probe;
	names[5] = canary;
	free(made.p->old.match);
	made.p->old.match = NULL;
	for (size_t i = 0; i < made.p->old.nnames; i++)
		free(made.p->old.names[i]);
	free(made.p->old.names);
	made.p->old.nnames = 0;
	made.p->old.names = calloc(6, sizeof(char *));
	assert_non_null(made.p->old.names);
	for (size_t i = 0; i < 6; i++) {
		made.p->old.names[i] = strdup(names[i]);
		assert_non_null(made.p->old.names[i]);
		made.p->old.nnames++;
	}
	measure_and_dry_run(oldq);
}

/* The number of level queues verify reports as drift, and whether one of
 * them names policy POLICY. */
static int
level_drifts(const char *policy, bool *named)
{
	json_t *r = NULL;
	const json_t *o;
	char err[1024];
	size_t i;
	int n = 0;

	*named = false;
	step_verify_ladder(&made.c, &r, err, sizeof(err));
	assert_non_null(r);
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *st = json_string_value(json_object_get(o, "status"));
		const char *detail = json_string_value(json_object_get(o, "detail"));

		if (strcmp(json_string_value(json_object_get(o, "kind")), "queue") != 0 ||
		    strstr(name, ".level.") == NULL || strcmp(st, "drift") != 0)
			continue;
		n++;
		if (detail != NULL && strstr(detail, policy) != NULL)
			*named = true;
	}
	json_decref(r);
	return n;
}

/* A policy ^PREFIX\.level\.\d+$ with message-ttl 1 (PCRE,
 * as the broker reads it) over the declared ladder is drift on every level
 * queue, for apply-to queues, quorum_queues and all; applied to
 * classic_queues it does not concern these quorum levels. A broker older
 * than 3.12 refuses the per-type apply-to values: those cases are then
 * reported as not run (the table itself is unit-tested in test_pattern);
 * queues and all must run. */
static void
test_pcre_policy_is_drift(void **state)
{
	static const struct { const char *apply_to; bool applies, per_type; } cases[] = {
		{ "queues", true, false },
		{ "quorum_queues", true, true },
		{ "all", true, false },
		{ "classic_queues", false, true },
	};
	char pname[128], pattern[160], err[1024];
	bool named;
	int n, ran = 0;

	(void)state;
	set_names();
	start("{ names: [itsel.none] }");
	n = level_drifts("-", &named);
	assert_int_equal(n, 0);
	snprintf(pname, sizeof(pname), "%s.pcre", prefix);
	snprintf(pattern, sizeof(pattern), "^%s\\.level\\.\\d+$", rprefix);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (try_policy(false, pname, pattern, cases[i].apply_to, 1, err,
		    sizeof(err)) != 0) {
			if (!cases[i].per_type || strstr(err, "unrecognised") == NULL)
				fail_msg("putting policy %s: %s", pname, err);
			fprintf(stderr, "# NOT RUN: this broker refuses apply-to %s (%s)\n",
			    cases[i].apply_to, err);
			continue;
		}
		ran++;
		n = level_drifts(pname, &named);
		fprintf(stderr, "# policy '%s' apply-to %s: %d level queue(s) drift\n",
		    pattern, cases[i].apply_to, n);
		if (cases[i].applies) {
			assert_int_equal(n, made.p->ladder.levels);
			assert_true(named);
		} else
			assert_int_equal(n, 0);
	}
	assert_true(ran >= 2);
}

/* PCRE policies, measure's side: an operator policy ^PREFIX\.old\.\d+s$
 * with a message-ttl lower than the queue's argument sets its TTL. */
static void
test_pcre_operator_policy_lowers_ttl(void **state)
{
	char oldq[128], match[160], pname[128], pattern[160], err[1024];
	json_t *measured = NULL;
	const json_t *q;

	(void)state;
	set_names();
	snprintf(match, sizeof(match), "{ match: '^%s\\.old\\.' }", rprefix);
	start(match);
	snprintf(oldq, sizeof(oldq), "%s.old.5s", prefix);
	make_queue(oldq, 5000);
	snprintf(pname, sizeof(pname), "%s.op", prefix);
	snprintf(pattern, sizeof(pattern), "^%s\\.old\\.\\d+s$", rprefix);
	put_policy(true, pname, pattern, "queues", 1000);
	if (step_measure_horizon(&made.c, &measured, err, sizeof(err)) != 0)
		fail_msg("measure_horizon: %s", err);
	q = json_array_get(json_object_get(measured, "queues"), 0);
	assert_non_null(q);
	fprintf(stderr, "# %s: ttl_ms %lld from %s\n", oldq,
	    (long long)json_integer_value(json_object_get(q, "ttl_ms")),
	    json_string_value(json_object_get(q, "ttl_source")));
	assert_int_equal(json_integer_value(json_object_get(q, "ttl_ms")), 1000);
	json_decref(measured);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_own_queues_are_never_old, teardown),
		cmocka_unit_test_teardown(test_pcre_policy_is_drift, teardown),
		cmocka_unit_test_teardown(test_pcre_operator_policy_lowers_ttl, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
