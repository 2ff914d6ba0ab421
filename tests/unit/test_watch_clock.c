/* test_watch_clock: a probe's lateness across a reboot of the watch's
 * machine. Its monotonic stamps are moved to the new boot from its wall
 * ones, and so is the probe queue's last look: a probe that came out
 * while the machine was down is dated between that look and now, never
 * from the boot's start, however much longer the machine was down than
 * it has been up since. */
#include <stdint.h>
#include <string.h>

#include "cm.h"
#include "watch_int.h"

#define HOUR_MS 3600000LL
#define ML_MS 1000		/* canary.max_lateness */

/* The last boot: a probe sent at its monotonic 50 s (wall W0), due 5 s
 * later, the probe queue seen empty at 56 s, the last tick at W0 + 6 s. */
#define W0 1796000000000LL

static struct probe
sent_probe(void)
{
	struct probe p = { .seq = 4, .sent_ms = W0, .not_before_ms = W0 + 5000,
	    .sent_mono = 50000, .not_before_mono = 55000 };

	return p;
}

/* Down DOWN_MS, up UP_MS since (the probe read now): the bounds of its
 * lateness after the rebase, from a last look CHECKED (0: none). */
static void
after_reboot(int64_t down_ms, int64_t up_ms, int64_t checked, int64_t *lo, int64_t *up)
{
	struct probe p = sent_probe();
	int64_t wall = W0 + 6000 + down_ms, last_tick = W0 + 6000;

	watch_clock_stamp_rebase(&p, wall, up_ms);
	checked = watch_clock_checked_rebase(checked, last_tick, wall, up_ms);
	watch_clock_lateness(checked, &p, up_ms, lo, up);
}

/* Down 20 hours, up 42 minutes: the probe came out some time in those 20
 * hours; it is not known to be late (its lower bound is the last look, 1 s
 * past its due time), so it is unmeasured, not late. */
static void
test_down_longer_than_up(void **state)
{
	int64_t lo, up;

	(void)state;
	after_reboot(20 * HOUR_MS, 42 * 60000, 56000, &lo, &up);
	assert_int_equal(lo, 1000);
	assert_true(lo <= ML_MS);
	assert_int_equal(up, 20 * HOUR_MS + 1000);
	/* Up longer than down: the same bounds. */
	after_reboot(20 * HOUR_MS, 30 * HOUR_MS, 56000, &lo, &up);
	assert_int_equal(lo, 1000);
	assert_int_equal(up, 20 * HOUR_MS + 1000);
	/* Never looked before the reboot: from its sending. */
	after_reboot(20 * HOUR_MS, 42 * 60000, 0, &lo, &up);
	assert_int_equal(lo, -5000);
	assert_int_equal(up, 20 * HOUR_MS + 1000);
	/* And again after a second reboot before any look. */
	assert_int_equal(watch_clock_checked_rebase(PROBE_NEVER_CHECKED, W0, W0 + 1, 5),
	    PROBE_NEVER_CHECKED);
}

/* On the same boot nothing moves: a probe read 3 s after its due time,
 * the queue last seen empty before it was due, is 0 to 3 s late; seen
 * empty 2 s after it was due, 2 to 3 s late. */
static void
test_same_boot(void **state)
{
	struct probe p = sent_probe();
	int64_t lo, up;

	(void)state;
	watch_clock_lateness(54000, &p, 58000, &lo, &up);
	assert_int_equal(lo, -1000);
	assert_int_equal(up, 3000);
	watch_clock_lateness(57000, &p, 58000, &lo, &up);
	assert_int_equal(lo, 2000);
	assert_int_equal(up, 3000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_down_longer_than_up),
		cmocka_unit_test(test_same_boot),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
