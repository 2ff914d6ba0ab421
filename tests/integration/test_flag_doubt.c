/* test_flag_doubt (integration): the flag client, kind http, when a write
 * may have been applied: applied then a 500, then closed, then unreadable,
 * written again only on a new connection, a slow write in doubt; never
 * written again blind. */
#include "itest_flag.h"

struct faults {
	int write_fail_n, applied_fail_n, applied_close_n, reads_fail_after;
};

/* Starts T's service as a toggle-style one (each write flips the flag)
 * with faults F and switches its flag on; returns what the switch
 * returned. Fails unless the service took exactly one write (a second
 * would have switched the toggle back). iflag_http_end releases T. */
static int
toggle_on(struct iflag_http *t, struct faults f)
{
	int rc;

	iflag_http_begin(t, "/enabled");
	t->s.toggle = 1;
	t->s.write_fail_n = f.write_fail_n;
	t->s.applied_fail_n = f.applied_fail_n;
	t->s.applied_close_n = f.applied_close_n;
	t->s.reads_fail_after = f.reads_fail_after;
	rc = flag_switch_with(&t->hp.p, true, &t->o, &t->r, t->err,
	    sizeof(t->err));
	if (t->s.writes != 1)
		fail_msg("the service took %d writes for one switch on (a toggle "
		    "now reads %s): %s", t->s.writes, json_is_true(t->s.value) ?
		    "on" : "off", t->err);
	return rc;
}

/* A toggle-style service that applies the write and then answers 500
 * (CLOSE: closes the connection without an answer): the write is not sent
 * again, since the read-back shows it applied; a second one would have
 * switched the flag back off. */
static void
applied_then_lost(int close)
{
	struct iflag_http t;

	if (toggle_on(&t, (struct faults){ .applied_fail_n = !close,
	    .applied_close_n = close }) != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_true(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(iflag_nattempts(t.r, "write"), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), close ? 0 : 500);
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 1),
	    "call")), "read");
	iflag_http_end(&t);
}

static void
test_http_applied_then_500(void **state)
{
	(void)state;
	applied_then_lost(0);
}

static void
test_http_applied_then_closed(void **state)
{
	(void)state;
	applied_then_lost(1);
}

/* The write is applied, its answer is a 500, and then the flag cannot be
 * read: the switch is reported unconfirmed, not written again blind. */
static void
test_http_applied_then_unreadable(void **state)
{
	struct iflag_http t;

	(void)state;
	assert_int_equal(toggle_on(&t, (struct faults){ .applied_fail_n = 1,
	    .reads_fail_after = 1 }), FLAG_ERR_UNCONFIRMED);
	assert_false(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(iflag_nattempts(t.r, "write"), 1);
	assert_int_equal(iflag_nattempts(t.r, "read"), t.o.attempts);
	iflag_assert_contains(t.err, "flag on: PUT ");
	iflag_assert_contains(t.err, "HTTP 500");
	iflag_assert_contains(t.err, "unconfirmed");
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	iflag_http_end(&t);
}

/* A write that answered 500 without taking, read back off, is sent again
 * on a connection of its own: on the connection the read left open,
 * libcurl would send it once more by itself when the service closes it
 * without an answer (here: after applying it), and a toggle would be
 * switched back. */
static void
test_http_write_again_on_a_new_connection(void **state)
{
	struct iflag_http t;

	(void)state;
	if (toggle_on(&t, (struct faults){ .write_fail_n = 1,
	    .applied_close_n = 1 }) != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_int_equal(iflag_nattempts(t.r, "write"), 2);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), 500);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 2)), 0);
	iflag_http_end(&t);
}

/* A write that gets no answer within the timeout is in doubt: the service
 * may apply it later (this one does, after 4 s), so it is never sent
 * again as if not applied; the switch is unconfirmed, the result says so,
 * and the attempt's outcome is recorded. */
static void
test_http_slow_write_in_doubt(void **state)
{
	struct iflag_http t;
	int i, rc;

	(void)state;
	iflag_http_begin(&t, "/enabled");
	/* The slow answer takes four times the timeout; the quick one has a
	 * whole second on a loaded machine. */
	t.o.timeout_ms = 1000;
	t.s.slow_n = 1;
	t.s.slow_ms = 4000;
	rc = flag_switch_with(&t.hp.p, true, &t.o, &t.r, t.err,
	    sizeof(t.err));
	if (rc != FLAG_ERR_UNCONFIRMED)
		fail_msg("flag on returned %d (%s) with %zu writes: a write without an "
		    "answer was not left in doubt", rc, t.err, iflag_nattempts(t.r, "write"));
	assert_int_equal(iflag_nattempts(t.r, "write"), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), 0);
	iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(t.r, 0),
	    "error")), "timed out after 1000 ms");
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 0),
	    "outcome")), "in doubt");
	assert_true(json_is_true(json_object_get(t.r, "in_doubt")));
	assert_false(json_is_true(json_object_get(t.r, "confirmed")));
	iflag_assert_contains(t.err, "in doubt");
	/* It lands late, once: the service took one write. */
	for (i = 0; i < 400; i++) {
		pthread_mutex_lock(&t.s.mu);
		rc = t.s.writes;
		pthread_mutex_unlock(&t.s.mu);
		if (rc > 0)
			break;
		iflag_nap(20);
	}
	pthread_mutex_lock(&t.s.mu);
	assert_int_equal(t.s.writes, 1);
	assert_true(json_is_true(t.s.value));
	pthread_mutex_unlock(&t.s.mu);
	iflag_http_end(&t);
}

ITEST_MAIN(iflag_main,
	cmocka_unit_test(test_http_applied_then_500),
	cmocka_unit_test(test_http_applied_then_closed),
	cmocka_unit_test(test_http_applied_then_unreadable),
	cmocka_unit_test(test_http_write_again_on_a_new_connection),
	cmocka_unit_test(test_http_slow_write_in_doubt))
