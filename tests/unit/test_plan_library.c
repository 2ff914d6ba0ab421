/* test_plan_library: old.library's presets. Each library's selection takes
 * exactly the delay queues it declares, named as its source builds them,
 * and none of its destination or consumer queues nor cutover's own; a
 * plan naming a library gets the selection and the entry rules unless it
 * writes them itself; a Symfony retry queue never
 * reads the timestamp; the arrival probe's verdicts; and what `cutover
 * check` prints of a library (and nothing new for a plan without one). */
#define _GNU_SOURCE	/* open_memstream */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cm.h"
#include "check.h"
#include "pattern.h"
#include "plan.h"
#include "plan_library.h"
#include "pt.h"
#include "steps/arrival_stamp.h"
#include "steps/move_entry.h"

/* A plan whose old section is OLD (and move_old section MOVE, may be ""). */
static char *
plan_text(const char *old, const char *move)
{
	char *t = NULL;

	assert_true(asprintf(&t,
	    "name: lib\n"
	    "broker:\n"
	    "  amqp: amqp://127.0.0.1:5672/%%2f\n"
	    "  management: http://127.0.0.1:15672\n"
	    "  username: guest\n"
	    "  password: env:RABBIT_PASSWORD\n"
	    "old:\n%s"
	    "ladder:\n"
	    "  unit: 1s\n"
	    "  max_delay: 1d\n"
	    "  destinations: [messages]\n"
	    "flag: { kind: unleash, url: http://127.0.0.1:4242, project: default, "
	    "environment: production, feature: f, token: env:T }\n"
	    "%s"
	    "steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, "
	    "move_old, watch, remove_old]\n", old, move) > 0);
	return t;
}

/* Whether the selection of library NAME takes queue Q. */
static bool
selects(const char *name, const char *q)
{
	const struct plan_library *l = plan_library_find(name);
	char match[1100], why[256];
	struct pattern *re = NULL;
	bool m = false;

	assert_non_null(l);
	assert_int_equal(plan_library_match(l, match, sizeof(match)), 0);
	assert_int_equal(pattern_compile(match, &re, why, sizeof(why)), 0);
	assert_int_equal(pattern_match(re, q, &m, why, sizeof(why)), 0);
	pattern_free(re);
	return m;
}

static void
test_selections_take_the_delay_queues_only(void **state)
{
	static const struct {
		const char *library, *queue, *kind;	/* kind NULL: not selected */
	} cases[] = {
		/* Symfony: delay_%exchange_name%_%routing_key%_%delay% + _delay
		 * or _retry; the routing key may be empty. */
		{ "symfony", "delay_messages__5000_delay", "delay queue" },
		{ "symfony", "delay_messages_orders.high_12345_delay", "delay queue" },
		{ "symfony", "delay_messages__1000_retry", "retry queue" },
		{ "symfony", "messages", NULL },
		{ "symfony", "delays", NULL },
		{ "symfony", "failed", NULL },
		{ "symfony", "delay_messages__5000_delayed", NULL },
		/* Laravel: <queue>.delay.<ttl ms>. */
		{ "laravel", "default.delay.60000", "delay queue" },
		{ "laravel", "emails.delay.5000", "delay queue" },
		{ "laravel", "default", NULL },
		{ "laravel", "default.failed", NULL },
		{ "laravel", "delay.level.03", NULL },
		/* enqueue: topic and queue delay queues. */
		{ "enqueue", "enqueue.app.default.5000.x.delay", "topic delay queue" },
		{ "enqueue", "enqueue.orders.5000.x.delay", "topic delay queue" },
		{ "enqueue", "enqueue.app.default.5000.delayed", "queue delay queue" },
		{ "enqueue", "enqueue.app.default", NULL },
		{ "enqueue", "enqueue.app.router", NULL },
		/* EasyNetQ: <type name>_<dd_hh_mm_ss>; subscriber queues are
		 * <type name>_<subscription id>. */
		{ "easynetq", "Shop.Messages.OrderPlaced, Shop.Messages_00_00_00_05",
		  "future queue" },
		{ "easynetq", "Shop.Messages.OrderPlaced, Shop.Messages_120_01_00_00",
		  "future queue" },
		{ "easynetq", "Shop.Messages.OrderPlaced, Shop.Messages_billing", NULL },
		{ "easynetq", "Shop.Messages.OrderPlaced, Shop.Messages", NULL },
		/* Machinery: delay.<ms>.<exchange>.<routing key>. */
		{ "machinery", "delay.5000.machinery_exchange.machinery_tasks",
		  "delay queue" },
		{ "machinery", "machinery_tasks", NULL },
		{ "machinery", "delay.level.05", NULL },
		{ "machinery", "delay.parking", NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct plan_library *l = plan_library_find(cases[i].library);
		const struct plan_library_kind *k = plan_library_kind_of(l, cases[i].queue);

		if (selects(cases[i].library, cases[i].queue) != (cases[i].kind != NULL) ||
		    (k != NULL) != (cases[i].kind != NULL) ||
		    (k != NULL && strcmp(k->what, cases[i].kind) != 0))
			fail_msg("%s: '%s' is %s, expected %s", cases[i].library,
			    cases[i].queue, k != NULL ? k->what : "not selected",
			    cases[i].kind != NULL ? cases[i].kind : "not selected");
	}
	assert_null(plan_library_find("django"));
}

/* The plan of plan_text(OLD, MOVE), which must load (pt_expect_valid);
 * the caller frees it. */
static struct plan *
valid_plan(const char *old, const char *move)
{
	char *t = plan_text(old, move);
	struct plan *p = pt_expect_valid(t);

	free(t);
	return p;
}

/* Fails naming WHAT unless plan P has the library LIBRARY (NULL: none),
 * the selection MATCH (NULL: none) written by the plan, ALLOW_EXPIRING,
 * NNAMES names, and NENTRIES entry rules, from the library or not as
 * ENTRIES_FROM_LIBRARY, the first reading FIRST_FROM. */
static void
expect_own(const char *what, const struct plan *p, const char *library,
    const char *match, bool allow_expiring, bool entries_from_library,
    size_t nnames, size_t nentries, enum move_from first_from)
{
	const char *lib = p->old.library != NULL ? p->old.library->name : NULL;

	if ((lib == NULL) != (library == NULL) || (lib != NULL && strcmp(lib, library) != 0))
		fail_msg("%s: library %s, not %s", what, lib ? lib : "none",
		    library ? library : "none");
	if ((p->old.match == NULL) != (match == NULL) ||
	    (match != NULL && strcmp(p->old.match, match) != 0))
		fail_msg("%s: old.match %s, not %s", what, p->old.match ? p->old.match :
		    "none", match ? match : "none");
	if (p->old.match_from_library)
		fail_msg("%s: the selection is taken for the library's", what);
	if (p->old.allow_expiring != allow_expiring)
		fail_msg("%s: allow_expiring %d, not %d", what, p->old.allow_expiring,
		    allow_expiring);
	if (p->old.nnames != nnames)
		fail_msg("%s: %zu names, not %zu", what, p->old.nnames, nnames);
	if (p->move_old.entries_from_library != entries_from_library ||
	    p->move_old.nentries != nentries)
		fail_msg("%s: %zu entry rules (%s), not %zu (%s)", what,
		    p->move_old.nentries, p->move_old.entries_from_library ?
		    "the library's" : "the plan's", nentries, entries_from_library ?
		    "the library's" : "the plan's");
	if (nentries > 0 && p->move_old.entries[0].from != (int)first_from)
		fail_msg("%s: the first entry rule reads %d, not %d", what,
		    (int)p->move_old.entries[0].from, (int)first_from);
}

static void
test_library_sets_what_the_plan_does_not_write(void **state)
{
	static const struct {
		const char *what, *old, *move, *library, *match;
		bool allow_expiring, entries_from_library;
		size_t nnames, nentries;
		enum move_from first_from;
	} own[] = {
		{ "explicit keys win, each on its own",
		  "  library: symfony\n  queues: { match: '^delay_app_' }\n"
		  "  allow_expiring: true\n", "move_old:\n  entry:\n    - { queues: "
		  "{ match: '_delay$' }, from: timestamp }\n", "symfony", "^delay_app_",
		  true, false, 0, 1, MOVE_FROM_TIMESTAMP },
		{ "names instead of a pattern",
		  "  library: easynetq\n  queues: { names: [a_00_00_00_05] }\n", "",
		  "easynetq", NULL, false, true, 1, 1, MOVE_FROM_ARRIVAL },
		{ "no library: nothing changes", "  queues: { match: '^old\\.' }\n",
		  "move_old:\n  rate: 100/s\n", NULL, "^old\\.", false, false, 0, 0,
		  MOVE_FROM_UNKNOWN },
	};
	const struct plan_library *sym = plan_library_find("symfony");
	char match[1100];
	struct plan *p;

	(void)state;
	p = valid_plan("  library: symfony\n", "");
	assert_ptr_equal(p->old.library, sym);
	assert_int_equal(plan_library_match(sym, match, sizeof(match)), 0);
	assert_string_equal(p->old.match, match);
	assert_true(p->old.match_from_library);
	/* Expiring queues are measure_horizon's to judge, library or not. */
	assert_false(p->old.allow_expiring);
	assert_true(p->move_old.entries_from_library);
	assert_int_equal(p->move_old.nentries, 2);
	assert_string_equal(p->move_old.entries[0].match, "^delay_.+_[0-9]+_delay$");
	assert_int_equal(p->move_old.entries[0].from, MOVE_FROM_ARRIVAL);
	assert_int_equal(p->move_old.entries[0].then, MOVE_FROM_TIMESTAMP);
	assert_string_equal(p->move_old.entries[1].match, "^delay_.+_[0-9]+_retry$");
	assert_int_equal(p->move_old.entries[1].from, MOVE_FROM_ARRIVAL);
	assert_int_equal(p->move_old.entries[1].then, MOVE_FROM_UNKNOWN);
	plan_free(p);

	/* What the plan writes itself, the library's presets or not. */
	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++) {
		p = valid_plan(own[i].old, own[i].move);
		expect_own(own[i].what, p, own[i].library, own[i].match, own[i].allow_expiring,
		    own[i].entries_from_library, own[i].nnames, own[i].nentries,
		    own[i].first_from);
		plan_free(p);
	}
}

/* plan_text(OLD, MOVE) must fail to load with an error at LINE:COLUMN
 * saying MSG (pt_expect_error). */
static void
expect_error(const char *old, const char *move, int line, int column,
    const char *msg)
{
	char *t = plan_text(old, move);

	pt_expect_error(t, line, column, msg);
	free(t);
}

static void
test_errors(void **state)
{
	(void)state;
	expect_error("  library: django\n", "", 8, 12, "old.library 'django' is "
	    "unknown; expected symfony, laravel, enqueue, easynetq or machinery");
	expect_error("  max_message_ttl: 2h\n", "", 8, 3, "queues");
	expect_error("  library: symfony\n", "move_old:\n  entry:\n    - { queues: "
	    "{ match: x }, from: [arrival, timestamp, header] }\n", 16, 37,
	    "is a list of 3; expected two sources");
	expect_error("  library: symfony\n", "move_old:\n  entry:\n    - { queues: "
	    "{ match: x }, from: [arrival, unknown] }\n", 16, 37,
	    "expected two different sources other than unknown");
	expect_error("  library: symfony\n", "move_old:\n  entry:\n    - { queues: "
	    "{ match: x }, from: [arrival, header] }\n", 16, 7,
	    "missing required key 'header'");
}

static void
test_retry_queues_never_read_the_timestamp(void **state)
{
	const struct plan_library *sym = plan_library_find("symfony");
	char why[512] = "";

	(void)state;
	assert_false(plan_library_allows(sym, "delay_messages__1000_retry",
	    MOVE_FROM_TIMESTAMP, why, sizeof(why)));
	assert_non_null(strstr(why, "keep the timestamp of an earlier publish"));
	assert_true(plan_library_allows(sym, "delay_messages__1000_retry",
	    MOVE_FROM_ARRIVAL, why, sizeof(why)));
	assert_true(plan_library_allows(sym, "delay_messages__1000_delay",
	    MOVE_FROM_TIMESTAMP, why, sizeof(why)));
	assert_true(plan_library_allows(NULL, "delay_messages__1000_retry",
	    MOVE_FROM_TIMESTAMP, why, sizeof(why)));
}

static void
test_arrival_verdicts(void **state)
{
	(void)state;
	assert_int_equal(arrival_verdict(false, ARRIVAL_PROBE_PRESET), ARRIVAL_OFF);
	assert_int_equal(arrival_verdict(false, -1), ARRIVAL_OFF);
	assert_int_equal(arrival_verdict(true, ARRIVAL_PROBE_PRESET), ARRIVAL_KEPT);
	assert_int_equal(arrival_verdict(true, 1795003200123LL), ARRIVAL_OVERWRITE);
	assert_string_equal(arrival_stamping_name(ARRIVAL_OVERWRITE), "overwrite");
	assert_non_null(strstr(arrival_stamping_meaning(ARRIVAL_KEPT),
	    "set_header_timestamp.overwrite = true"));
}

/* check's human output of TEXT into a new string. */
static char *
check_text(const char *text, int json)
{
	json_t *results = json_array();
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	assert_int_equal(check_plan("t.yaml", text, strlen(text), json, out, stderr,
	    results), 0);
	if (json)
		json_dumpf(results, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
	fclose(out);
	json_decref(results);
	return buf;
}

static void
test_check_prints_what_a_library_implies(void **state)
{
	/* What check (or check --json) says of each plan, and what it must
	 * not say. */
	static const struct {
		const char *what, *old, *move;
		int json;
		const char *has[8], *lacks[2];
	} cases[] = {
		{ "a library's presets", "  library: symfony\n", "", 0, {
		    "\nold path (library symfony: Symfony Messenger 5.4 to 7.x, AMQP "
		    "transport)\n  delay queue  delay_<exchange>_<routing key>_<ms>_delay\n",
		    "    dead-letters to  the default exchange, with the queue the message "
		    "was received from as key\n",
		    "    expires          TTL + 10 s, renewed at each publish",
		    "    entry time       arrival, then timestamp: the broker's arrival "
		    "stamp where it overwrites one",
		    "    entry time       arrival: a retried message keeps the timestamp "
		    "of its first publish, so the timestamp is never used here",
		    "  selection        (?:^delay_.+_[0-9]+_delay$)|(?:^delay_.+_[0-9]+_retry$) "
		    "(the library's; old.queues overrides it)\n",
		    "  move_old.entry   the library's, first match wins; move_old.entry "
		    "overrides them\n    1. ^delay_.+_[0-9]+_delay$  from: [arrival, "
		    "timestamp]\n    2. ^delay_.+_[0-9]+_retry$  from: arrival\n"
		    "\nexchanges (" }, { NULL } },
		{ "a library's presets, as JSON", "  library: symfony\n", "", 1, {
		    "\"old\":{\"library\":\"symfony\"",
		    "\"entry\":[\"arrival\",\"timestamp\"]",
		    "\"selection_from\":\"library\"",
		    "\"entry_from\":\"library\"" }, { NULL } },
		{ "the plan's own keys are named as such",
		  "  library: easynetq\n  queues: { match: '_00_00_00_05$' }\n",
		  "move_old:\n  entry:\n    - { queues: { match: '.' }, from: unknown }\n", 0, {
		    "    dead-letters to  the message type's exchange, "
		    "with no key: each message keeps its own routing key",
		    "    expires          never\n",
		    "_00_00_00_05$ (old.queues: the plan's own)\n",
		    "  move_old.entry   the plan's own (the library's "
		    "rules are not used)\n    1. .  from: unknown\n" }, { NULL } },
		{ "a selection by names is the plan's",
		  "  library: machinery\n  queues: { names: [delay.5000.x.y] }\n", "", 0, {
		    "  selection        old.queues.names (the plan's own)\n" }, { NULL } },
		{ "without a library, no word of one", "  queues: { match: '^old\\.' }\n",
		  "move_old:\n  rate: 100/s\n", 0, { NULL },
		  { "\nold path (library" } },
		{ "without a library, no word of one, as JSON",
		  "  queues: { match: '^old\\.' }\n", "move_old:\n  rate: 100/s\n", 1,
		  { NULL }, { "\"old\"" } },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = plan_text(cases[i].old, cases[i].move);
		char *out = check_text(t, cases[i].json);

		for (size_t k = 0; k < 8 && cases[i].has[k] != NULL; k++)
			if (strstr(out, cases[i].has[k]) == NULL)
				fail_msg("%s: check%s lacks '%s' in:\n%s", cases[i].what,
				    cases[i].json ? " --json" : "", cases[i].has[k], out);
		for (size_t k = 0; k < 2 && cases[i].lacks[k] != NULL; k++)
			if (strstr(out, cases[i].lacks[k]) != NULL)
				fail_msg("%s: check%s says '%s' in:\n%s", cases[i].what,
				    cases[i].json ? " --json" : "", cases[i].lacks[k], out);
		free(out);
		free(t);
	}
}

/* The whole of file PATH, or NULL. */
static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0, n;
	char chunk[4096];
	FILE *out;

	if (f == NULL)
		return NULL;
	out = open_memstream(&buf, &len);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, out);
	fclose(f);
	fclose(out);
	return buf;
}

/* docs/LIBRARIES.md and docs/plan-format.txt cannot drift from the table:
 * every library is named in both, and every kind's name shape and pattern
 * is in the former as the table has it. */
static void
test_docs_say_what_the_table_says(void **state)
{
	static const char *const names[] = { "symfony", "laravel", "enqueue",
	    "easynetq", "machinery" };
	const char *src = getenv("CUTOVER_SOURCE_DIR");
	char path[1024], want[600], list[128];
	char *md, *fmt;

	(void)state;
	if (src == NULL || src[0] == '\0')
		fail_msg("CUTOVER_SOURCE_DIR is not set (ctest sets it to the source tree)");
	snprintf(path, sizeof(path), "%s/docs/LIBRARIES.md", src);
	assert_non_null(md = slurp(path));
	snprintf(path, sizeof(path), "%s/docs/plan-format.txt", src);
	assert_non_null(fmt = slurp(path));
	plan_library_names(list, sizeof(list));
	snprintf(want, sizeof(want), "type: %s\n", list);
	if (strstr(fmt, want) == NULL)
		fail_msg("docs/plan-format.txt's old.library lacks '%s'", want);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const struct plan_library *l = plan_library_find(names[i]);

		assert_non_null(l);
		for (size_t k = 0; k < l->nkinds; k++) {
			snprintf(want, sizeof(want), "`%s`, pattern `%s`", l->kinds[k].shape,
			    l->kinds[k].match);
			if (strstr(md, want) == NULL)
				fail_msg("docs/LIBRARIES.md lacks '%s' (%s's %s)", want,
				    l->name, l->kinds[k].what);
		}
		snprintf(want, sizeof(want), "| `%s`", names[i]);
		if (strstr(md, want) == NULL)
			fail_msg("docs/LIBRARIES.md has no row for %s", names[i]);
	}
	free(md);
	free(fmt);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_selections_take_the_delay_queues_only),
	cmocka_unit_test(test_library_sets_what_the_plan_does_not_write),
	cmocka_unit_test(test_errors),
	cmocka_unit_test(test_retry_queues_never_read_the_timestamp),
	cmocka_unit_test(test_arrival_verdicts),
	cmocka_unit_test(test_check_prints_what_a_library_implies),
	cmocka_unit_test(test_docs_say_what_the_table_says))
