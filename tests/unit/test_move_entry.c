/* test_move_entry: move_old's arithmetic. A moved
 * message must never come out before the moment the old queue would have
 * let it out: every case checks the delay against that moment, at the
 * edges where rounding goes wrong (the timestamp's second, the unit, a
 * message already due, the ladder's largest delay, the lateness bound). */

#include <string.h>

#include "cm.h"
#include "move_entry.h"

#define NOW 1795003200500LL	/* half a second into a second */
#define MIN (60 * 1000LL)

static struct move_rule
rule(enum move_from from, int64_t ttl_ms, int64_t unit_ms)
{
	struct move_rule r = { from, ttl_ms, unit_ms, 1000LL * MIN, 2 * MIN,
	    MOVE_FROM_UNKNOWN, 0 };

	return r;
}

/* The property the whole suite rests on: now + delay >= not before, and
 * the delay is whole units and less than one unit more than needed. */
static void
assert_never_early(const struct move_rule *r, const struct move_decision *d,
    int64_t now)
{
	assert_int_equal(d->verdict, MOVE_GO);
	assert_true(now + d->delay_ms >= d->not_before_ms);
	assert_int_equal(d->delay_ms % r->unit_ms, 0);
	if (d->not_before_ms > now)
		assert_true(now + d->delay_ms - d->not_before_ms < r->unit_ms);
	else
		assert_int_equal(d->delay_ms, 0);
}

/* Decides for rule R and stamp M at NOW into D (move_decide); fails the
 * test, with move_decide's words, unless it can. Returns the verdict. */
static enum move_verdict
decide(const struct move_rule *r, const struct move_stamp *m, struct move_decision *d)
{
	if (move_decide(r, m, NOW, d) != 0)
		fail_msg("move_decide failed: %s", d->why);
	return d->verdict;
}

static void
test_timestamp_counts_the_end_of_its_second(void **state)
{
	struct move_rule r = rule(MOVE_FROM_TIMESTAMP, 10 * 1000, 1000);
	struct move_stamp m = { .has_timestamp = true,
	    .timestamp_s = 1795003200 };	/* NOW's own second */
	struct move_decision d;

	(void)state;
	(void)decide(&r, &m, &d);
	/* It may have entered at .999: not before 1795003211.000. */
	assert_int_equal(d.entry_ms, 1795003201000LL);
	assert_int_equal(d.not_before_ms, 1795003211000LL);
	assert_int_equal(d.used, MOVE_FROM_TIMESTAMP);
	/* 10.5 s left: 11 units of 1 s, never 10. */
	assert_int_equal(d.delay_ms, 11000);
	assert_never_early(&r, &d, NOW);
	/* Exactly on a second: still the end of that second. */
	assert_int_equal(move_decide(&r, &m, 1795003201000LL, &d), 0);
	assert_int_equal(d.delay_ms, 10000);
	assert_never_early(&r, &d, 1795003201000LL);
}

static void
test_rounds_up_to_the_unit(void **state)
{
	struct move_rule r = rule(MOVE_FROM_HEADER, 90 * 1000, MIN);
	struct move_stamp m = { .has_header = true, .header_is_int = true,
	    .header_num = NOW - 1 };
	struct move_decision d;

	(void)state;
	/* Entered 1 ms ago: 89.999 s left, two units of a minute. */
	(void)decide(&r, &m, &d);
	assert_int_equal(d.not_before_ms, NOW - 1 + 90 * 1000);
	assert_int_equal(d.delay_ms, 2 * MIN);
	assert_never_early(&r, &d, NOW);
	/* Exactly one unit left: one unit, not two. */
	m.header_num = NOW - 30 * 1000;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.delay_ms, MIN);
	assert_never_early(&r, &d, NOW);
	/* One millisecond more than a unit: two. */
	m.header_num = NOW - 30 * 1000 + 1;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.delay_ms, 2 * MIN);
	assert_never_early(&r, &d, NOW);
}

static void
test_header_rfc3339(void **state)
{
	struct move_rule r = rule(MOVE_FROM_HEADER, 60 * 1000, 1000);
	struct move_stamp m = { .has_header = true,
	    .header_str = "2026-11-18T11:20:00.250Z" };
	struct move_decision d;

	(void)state;
	assert_int_equal(move_decide(&r, &m, 1795000800000LL + 1000, &d), 0);
	assert_int_equal(d.entry_ms, 1795000800250LL);
	assert_int_equal(d.not_before_ms, 1795000860250LL);
	assert_int_equal(d.delay_ms, 60000);	/* 59.25 s left */
	assert_never_early(&r, &d, 1795000800000LL + 1000);
}

static void
test_already_due_goes_at_once(void **state)
{
	struct move_rule r = rule(MOVE_FROM_TIMESTAMP, 5000, 1000);
	struct move_stamp m = { .has_timestamp = true,
	    .timestamp_s = (NOW - 60 * 1000) / 1000 };
	struct move_decision d;

	(void)state;
	/* Due a minute ago (the old queue is late): delay 0, the ladder's
	 * shortest path, never held back. */
	(void)decide(&r, &m, &d);
	assert_true(d.not_before_ms < NOW);
	assert_int_equal(d.delay_ms, 0);
	assert_never_early(&r, &d, NOW);
	/* Due exactly now: 0 as well. */
	m.timestamp_s = 1795003194;	/* end 1795003195.000 + 5 s = NOW - 500 */
	r.ttl_ms = 5500;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.not_before_ms, NOW);
	assert_int_equal(d.delay_ms, 0);
}

static void
test_unknown_within_the_bound_takes_the_full_ttl(void **state)
{
	struct move_rule r = rule(MOVE_FROM_UNKNOWN, 2 * MIN, 1000);
	struct move_stamp m = { 0 };
	struct move_decision d;

	(void)state;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_UNKNOWN);
	assert_int_equal(d.entry_ms, -1);
	assert_int_equal(d.not_before_ms, NOW + 2 * MIN);
	assert_int_equal(d.delay_ms, 2 * MIN);
	assert_never_early(&r, &d, NOW);
	/* A queue with a timestamp rule and an unstamped message: the same. */
	r.from = MOVE_FROM_TIMESTAMP;
	assert_int_equal(decide(&r, &m, &d), MOVE_GO);
	assert_int_equal(d.used, MOVE_FROM_UNKNOWN);
	assert_non_null(strstr(d.why, "no timestamp"));
}

/* Unknown, but first seen by an earlier look of the move (which took it
 * and gave it back): it entered no later than that, so not before the
 * sighting + TTL rather than NOW + TTL, and still never early. A sighting
 * not before NOW, or not a time after 2000, bounds nothing; a known entry
 * does not use it. */
static void
test_unknown_first_seen_earlier(void **state)
{
	struct move_rule r = rule(MOVE_FROM_UNKNOWN, 90 * 1000, 1000);
	struct move_stamp m = { .seen_ms = NOW - 30 * 1000 };
	struct move_decision d;

	(void)state;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.entry_ms, -1);
	assert_int_equal(d.not_before_ms, NOW - 30 * 1000 + 90 * 1000);
	assert_int_equal(d.delay_ms, 60 * 1000);
	assert_never_early(&r, &d, NOW);
	/* Seen more than its TTL ago: due already, at once. */
	m.seen_ms = NOW - 91 * 1000;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.delay_ms, 0);
	assert_never_early(&r, &d, NOW);
	/* Left (over the bound): its not-before is the sighting's too. */
	r.unknown_max_lateness_ms = 1000;
	m.seen_ms = NOW - 30 * 1000;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	assert_int_equal(d.not_before_ms, NOW + 60 * 1000);
	r.unknown_max_lateness_ms = 2 * MIN;
	/* Not a bound: later than NOW, before 2000, none. */
	m.seen_ms = NOW + 5000;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.not_before_ms, NOW + 90 * 1000);
	m.seen_ms = 12345;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.not_before_ms, NOW + 90 * 1000);
	/* A known entry: the sighting plays no part. */
	r.from = MOVE_FROM_TIMESTAMP;
	m.has_timestamp = true;
	m.timestamp_s = (uint64_t)(NOW / 1000);
	m.seen_ms = NOW - 60 * 1000;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.not_before_ms, (NOW / 1000 + 1) * 1000 + 90 * 1000);
}

static void
test_unknown_over_the_bound_is_left(void **state)
{
	struct move_rule r = rule(MOVE_FROM_TIMESTAMP, 2 * MIN + 1, 1000);
	struct move_stamp m = { 0 };
	struct move_decision d;

	(void)state;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	assert_non_null(strstr(d.why, "unknown_entry_max_lateness"));
	/* The default bound, 0: nothing unknown is moved. */
	r.unknown_max_lateness_ms = 0;
	r.ttl_ms = 1000;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
}

static void
test_unreadable_stamps_are_unknown(void **state)
{
	struct move_rule r = rule(MOVE_FROM_HEADER, 10 * MIN, 1000);
	struct move_stamp m = { .has_header = true, .header_is_int = true,
	    .header_num = 1795003200 };	/* seconds, not milliseconds */
	struct move_decision d;

	(void)state;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	m.header_is_int = false;
	m.header_str = "yesterday";
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	assert_non_null(strstr(d.why, "not a time"));
	m.header_str = NULL;		/* a table or a float */
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	r.from = MOVE_FROM_TIMESTAMP;
	m.has_timestamp = true;
	m.timestamp_s = 1795003200500ULL;	/* milliseconds in the property */
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_TOO_LONG);
	m.timestamp_s = 0;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
}

static void
test_beyond_the_ladder_is_left(void **state)
{
	struct move_rule r = rule(MOVE_FROM_HEADER, 20 * MIN, 1000);
	struct move_stamp m = { .has_header = true, .header_is_int = true,
	    .header_num = NOW };
	struct move_decision d;

	(void)state;
	r.max_delay_ms = 20 * MIN;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.delay_ms, 20 * MIN);	/* exactly the largest */
	m.header_num = NOW + 1;			/* 1 ms more: over it */
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_TOO_LONG);
	assert_non_null(strstr(d.why, "beyond"));
}

static void
test_bad_rule(void **state)
{
	struct move_rule r = rule(MOVE_FROM_UNKNOWN, 1000, 0);
	struct move_stamp m = { 0 };
	struct move_decision d;

	(void)state;
	assert_int_equal(move_decide(&r, &m, NOW, &d), -1);
	r.unit_ms = 1000;
	r.ttl_ms = -1;
	assert_int_equal(move_decide(&r, &m, NOW, &d), -1);
	assert_string_equal(move_from_name(MOVE_FROM_HEADER), "header");
}

/* The broker's arrival stamp is exact to the ms: no second to round. */
static void
test_arrival_is_exact(void **state)
{
	struct move_rule r = rule(MOVE_FROM_ARRIVAL, 10 * 1000, 1000);
	struct move_stamp m = { .has_arrival = true, .arrival_ms = NOW - 2300,
	    .has_timestamp = true, .timestamp_s = 1795003100 };
	struct move_decision d;

	(void)state;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_ARRIVAL);
	assert_int_equal(d.entry_ms, NOW - 2300);
	assert_int_equal(d.not_before_ms, NOW + 7700);
	assert_int_equal(d.delay_ms, 8000);
	assert_never_early(&r, &d, NOW);
	/* No stamp the caller trusts: unknown, the timestamp not read. */
	m.has_arrival = false;
	r.unknown_max_lateness_ms = 0;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_UNKNOWN);
	assert_int_equal(d.verdict, MOVE_LEAVE_UNKNOWN);
	assert_non_null(strstr(d.why, "no arrival stamp the broker overwrites"));
	/* One before 2000 is not a time. */
	m.has_arrival = true;
	m.arrival_ms = 1;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_UNKNOWN);
}

/* from: [arrival, timestamp]: the second source only for a message the
 * first gives no time for, and unknown with both reasons when neither. */
static void
test_second_source(void **state)
{
	struct move_rule r = rule(MOVE_FROM_ARRIVAL, 10 * 1000, 1000);
	struct move_stamp m = { .has_timestamp = true, .timestamp_s = 1795003198 };
	struct move_decision d;

	(void)state;
	r.then = MOVE_FROM_TIMESTAMP;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_TIMESTAMP);
	assert_int_equal(d.entry_ms, 1795003199000LL);
	assert_string_equal(d.why, "");
	assert_never_early(&r, &d, NOW);
	m.has_arrival = true;
	m.arrival_ms = 1795003198400LL;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_ARRIVAL);
	assert_int_equal(d.entry_ms, 1795003198400LL);
	assert_never_early(&r, &d, NOW);
	m.has_arrival = false;
	m.has_timestamp = false;
	r.unknown_max_lateness_ms = 0;
	assert_int_equal(decide(&r, &m, &d), MOVE_LEAVE_UNKNOWN);
	assert_non_null(strstr(d.why, "no arrival stamp the broker overwrites; no "
	    "timestamp property"));
}

/* death: the end of the second of the newest x-death entry, only when it
 * is the message's first death there; the rule's rest (the lower levels
 * of a ladder) comes after the queue's TTL, known or not. */
static void
test_death_and_rest(void **state)
{
	struct move_rule r = rule(MOVE_FROM_DEATH, 4000, 1000);
	struct move_stamp m = { 0 };
	struct move_decision d;

	(void)state;
	r.rest_ms = 3000;		/* bits 1 and 0 below level 2 */
	m.has_death = true;
	m.death_s = NOW / 1000 - 2;	/* 2.5 s ago, at the latest 1.5 s ago */
	m.death_count = 1;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_DEATH);
	assert_int_equal(d.entry_ms, (NOW / 1000 - 1) * 1000);
	assert_int_equal(d.not_before_ms, (NOW / 1000 - 1) * 1000 + 4000 + 3000);
	assert_never_early(&r, &d, NOW);

	/* Dead-lettered from there before: its time is the first one. */
	m.death_count = 2;
	(void)decide(&r, &m, &d);
	assert_int_equal(d.used, MOVE_FROM_UNKNOWN);
	assert_non_null(strstr(d.why, "count 2"));

	/* Unknown: from now, the whole TTL and the rest. */
	r.unknown_max_lateness_ms = 4000;
	m.has_death = false;
	assert_int_equal(decide(&r, &m, &d), MOVE_GO);
	assert_int_equal(d.not_before_ms, NOW + 4000 + 3000);
	assert_never_early(&r, &d, NOW);

	r.rest_ms = -1;
	assert_int_equal(move_decide(&r, &m, NOW, &d), -1);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_timestamp_counts_the_end_of_its_second),
	cmocka_unit_test(test_unknown_first_seen_earlier),
	cmocka_unit_test(test_rounds_up_to_the_unit),
	cmocka_unit_test(test_header_rfc3339),
	cmocka_unit_test(test_already_due_goes_at_once),
	cmocka_unit_test(test_unknown_within_the_bound_takes_the_full_ttl),
	cmocka_unit_test(test_unknown_over_the_bound_is_left),
	cmocka_unit_test(test_unreadable_stamps_are_unknown),
	cmocka_unit_test(test_beyond_the_ladder_is_left),
	cmocka_unit_test(test_bad_rule),
	cmocka_unit_test(test_arrival_is_exact),
	cmocka_unit_test(test_second_source),
	cmocka_unit_test(test_death_and_rest))
