/* test_plan_old: the old section's selection — a pattern or names that
 * would take one of the plan's own queues, or cost too much to match, are
 * refused. */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "plan.h"
#include "pt.h"

/* An old selection that takes one of the plan's
 * own queues (a level, the parking queue, a destination, the probe or the
 * canary queue) is refused where it is written, for every naming; the
 * pattern is PCRE2 (\\d, lookahead) and its cost is bounded. */
static void
test_old_selection_rules(void **state)
{
	static const char old_line[] = "  queues: { match: '^delay\\.[0-9]+s$' }\n";
	static const struct {
		const char *old, *ladder;	/* ladder: NULL keeps pt_base_plan's */
		int line, column;
		const char *msg;
	} bad[] = {
		{ "  queues: { match: '^delay\\.' }\n", NULL, 8, 20,
		  "selects 21 of this plan's own queues, such as the level queue "
		  "'delay.level.00'" },
		{ "  queues: { match: 'parking$' }\n", NULL, 8, 20,
		  "such as the parking queue 'delay.parking'" },
		{ "  queues: { match: '^email' }\n", NULL, 8, 20,
		  "such as the destination queue 'email.delivery'" },
		{ "  queues: { match: '^cutover\\.probe\\.' }\n", NULL, 8, 20,
		  "such as the probe queue 'cutover.probe.orders-delays'" },
		{ "  queues: { match: 'canary' }\n", NULL, 8, 20,
		  "such as the canary queue 'cutover.canary.orders-delays'" },
		{ "  queues: { match: '^orders' }\n",
		  "  prefix: orders\n  unit: 1s\n  max_delay: 12d\n", 8, 20,
		  "such as the level queue 'orders.level.00'" },
		{ "  queues: { match: '^celery_delayed_\\d+$' }\n",
		  "  naming: kombu\n  levels: 28\n", 8, 20,
		  "selects 28 of this plan's own queues" },
		{ "  queues: { names: [delay.5s, delay.level.03] }\n", NULL, 8, 31,
		  "old.queues.names[1] 'delay.level.03' is this plan's own level queue" },
		{ "  queues: { names: [billing.retry] }\n", NULL, 8, 21,
		  "old.queues.names[0] 'billing.retry' is this plan's own destination queue" },
		{ "  queues: { names: [cutover.canary.orders-delays] }\n", NULL, 8, 21,
		  "is this plan's own canary queue" },
		{ "  queues: { match: '^(delay|d+)+$' }\n", NULL, 8, 20,
		  "costs too much to match (match limit exceeded" },
		{ "  queues: { match: '^d+++elay$' }\n", NULL, 8, 20,
		  "is not a valid regex (quantifier does not follow a repeatable item" },
		{ "  queues: { match: '(?<=x' }\n", NULL, 8, 20, "is not a valid regex" },
	};
	static const char *const good[] = {
		"  queues: { match: '^delay\\.\\d+s$' }\n",
		"  queues: { match: '^delay\\.(?!level\\.|parking$)' }\n",
		"  queues: { match: '^delay\\.[[:digit:]]+s$' }\n",
		"  queues: { names: [delay.5s, delay.level] }\n",
	};
	char *t;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		t = pt_subst(pt_base_plan, old_line, bad[i].old);
		if (bad[i].ladder != NULL)
			pt_edit(&t, "  unit: 1s\n  max_delay: 12d\n", bad[i].ladder);
		pt_expect_error(t, bad[i].line, bad[i].column, bad[i].msg);
		free(t);
	}
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		struct plan *p;

		t = pt_subst(pt_base_plan, old_line, good[i]);
		p = pt_expect_valid(t);
		plan_free(p);
		free(t);
	}
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_old_selection_rules))
