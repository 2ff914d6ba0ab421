/* test_flag_doubt (integration): the flag client, kind http, when a write
 * may have been applied: applied then a 500, then closed, then unreadable,
 * written again only on a new connection, a slow write in doubt; never
 * written again blind. */
#include "itest_flag.h"

/* A switch on against a toggle-style flag service (each write flips the
 * flag) with some of its faults set. */
struct toggle {
	struct srv		 s;
	struct http_plan	 hp;	/* reads /enabled */
	struct flag_options	 o;	/* fast retries */
	json_t			*r;	/* the switch's result */
	char			 err[512];
	int			 rc;
};

struct faults {
	int write_fail_n, applied_fail_n, applied_close_n, reads_fail_after;
};

/* Starts T's service with faults F and switches its flag on; fails unless
 * the service took exactly one write (a second would have switched the
 * toggle back). toggle_end releases T. */
static void
toggle_on(struct toggle *t, struct faults f)
{
	memset(t, 0, sizeof(*t));
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	iflag_srv_start(&t->s);
	iflag_http_plan(&t->hp, &t->s, "/enabled");
	iflag_quick(&t->o);
	t->s.toggle = 1;
	t->s.write_fail_n = f.write_fail_n;
	t->s.applied_fail_n = f.applied_fail_n;
	t->s.applied_close_n = f.applied_close_n;
	t->s.reads_fail_after = f.reads_fail_after;
	t->rc = flag_switch_with(&t->hp.p, true, &t->o, &t->r, t->err,
	    sizeof(t->err));
	if (t->s.writes != 1)
		fail_msg("the service took %d writes for one switch on (a toggle "
		    "now reads %s): %s", t->s.writes, json_is_true(t->s.value) ?
		    "on" : "off", t->err);
}

static void
toggle_end(struct toggle *t)
{
	json_decref(t->r);
	iflag_srv_stop(&t->s);
}

/* A toggle-style service that applies the write and then answers 500
 * (CLOSE: closes the connection without an answer): the write is not sent
 * again, since the read-back shows it applied; a second one would have
 * switched the flag back off. */
static void
applied_then_lost(int close)
{
	struct toggle t;

	toggle_on(&t, (struct faults){ .applied_fail_n = !close,
	    .applied_close_n = close });
	if (t.rc != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_true(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(iflag_nattempts(t.r, "write"), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), close ? 0 : 500);
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(t.r, 1),
	    "call")), "read");
	toggle_end(&t);
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
	struct toggle t;

	(void)state;
	toggle_on(&t, (struct faults){ .applied_fail_n = 1, .reads_fail_after = 1 });
	assert_int_equal(t.rc, FLAG_ERR_UNCONFIRMED);
	assert_false(json_is_true(json_object_get(t.r, "confirmed")));
	assert_int_equal(iflag_nattempts(t.r, "write"), 1);
	assert_int_equal(iflag_nattempts(t.r, "read"), t.o.attempts);
	iflag_assert_contains(t.err, "flag on: PUT ");
	iflag_assert_contains(t.err, "HTTP 500");
	iflag_assert_contains(t.err, "unconfirmed");
	iflag_assert_not_leaked(t.r, t.err, "flag-secret-7f3a9c");
	toggle_end(&t);
}

/* A write that answered 500 without taking, read back off, is sent again
 * on a connection of its own: on the connection the read left open,
 * libcurl would send it once more by itself when the service closes it
 * without an answer (here: after applying it), and a toggle would be
 * switched back. */
static void
test_http_write_again_on_a_new_connection(void **state)
{
	struct toggle t;

	(void)state;
	toggle_on(&t, (struct faults){ .write_fail_n = 1, .applied_close_n = 1 });
	if (t.rc != 0)
		fail_msg("flag on: %s", t.err);
	assert_true(json_is_true(t.s.value));
	assert_int_equal(iflag_nattempts(t.r, "write"), 2);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 0)), 500);
	assert_int_equal(iflag_status_of(iflag_attempt(t.r, 2)), 0);
	toggle_end(&t);
}

/* A write that gets no answer within the timeout is in doubt: the service
 * may apply it later (this one does, after 4 s), so it is never sent
 * again as if not applied; the switch is unconfirmed, the result says so,
 * and the attempt's outcome is recorded. */
static void
test_http_slow_write_in_doubt(void **state)
{
	struct http_plan hp;
	struct flag_options o;
	char err[512] = "";
	json_t *r = NULL;
	struct srv s;
	int i, rc;

	(void)state;
	assert_int_equal(setenv(AUTH_ENV, AUTH_SECRET, 1), 0);
	iflag_srv_start(&s);
	iflag_http_plan(&hp, &s, "/enabled");
	iflag_quick(&o);
	/* The slow answer takes four times the timeout; the quick one has a
	 * whole second on a loaded machine. */
	o.timeout_ms = 1000;
	s.slow_n = 1;
	s.slow_ms = 4000;
	rc = flag_switch_with(&hp.p, true, &o, &r, err, sizeof(err));
	if (rc != FLAG_ERR_UNCONFIRMED)
		fail_msg("flag on returned %d (%s) with %zu writes: a write without an "
		    "answer was not left in doubt", rc, err, iflag_nattempts(r, "write"));
	assert_int_equal(iflag_nattempts(r, "write"), 1);
	assert_int_equal(iflag_status_of(iflag_attempt(r, 0)), 0);
	iflag_assert_contains(json_string_value(json_object_get(iflag_attempt(r, 0),
	    "error")), "timed out after 1000 ms");
	assert_string_equal(json_string_value(json_object_get(iflag_attempt(r, 0),
	    "outcome")), "in doubt");
	assert_true(json_is_true(json_object_get(r, "in_doubt")));
	assert_false(json_is_true(json_object_get(r, "confirmed")));
	iflag_assert_contains(err, "in doubt");
	/* It lands late, once: the service took one write. */
	for (i = 0; i < 400; i++) {
		pthread_mutex_lock(&s.mu);
		rc = s.writes;
		pthread_mutex_unlock(&s.mu);
		if (rc > 0)
			break;
		iflag_nap(20);
	}
	pthread_mutex_lock(&s.mu);
	assert_int_equal(s.writes, 1);
	assert_true(json_is_true(s.value));
	pthread_mutex_unlock(&s.mu);
	json_decref(r);
	iflag_srv_stop(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_applied_then_500),
		cmocka_unit_test(test_http_applied_then_closed),
		cmocka_unit_test(test_http_applied_then_unreadable),
		cmocka_unit_test(test_http_write_again_on_a_new_connection),
		cmocka_unit_test(test_http_slow_write_in_doubt),
	};

	return iflag_main(tests, sizeof(tests) / sizeof(tests[0]));
}
