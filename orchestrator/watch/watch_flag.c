/* watch_flag: the watch reads the plan's flag back every tick and holds
 * itself open while it does not read on. Internal to the watch
 * (watch_int.h). */
#include "watch_int.h"

/* ---- the flag ---- */

/* Reads the plan's flag back (one bounded GET). Off or unreadable: the
 * alert flag_off or flag_unreadable (raised again every tick, so an
 * acknowledgement does not outlast the condition) and the watch cannot end
 * this tick. While the flag reads off producers publish into the old path,
 * so when it reads on again, that moment is the last entry into the old
 * path and the deadline moves to it + the largest TTL + allowance. (While
 * it cannot be read nothing is known of the producers; publishes they make
 * into the old path show in the statistics as old_publish.) */
void
watch_flag(struct tick *t)
{
	struct wstate *w = t->w;
	char why[800], desc[400], since[40];
	int st = step_flag_check(t->p, why, sizeof(why));
	bool was_off = w->flag_state == STEP_FLAG_OFF;

	w->flag_state = st;
	w->flag_checked_ms = t->now;
	snprintf(w->flag_detail, sizeof(w->flag_detail), "%s", why);
	if (st == STEP_FLAG_ON) {
		w->flag_not_on_ms = 0;
		if (was_off && w->last_old_entry_ms < t->now) {
			w->last_old_entry_ms = t->now;
			t->deadline_moved = true;
			snprintf(t->moved_why, sizeof(t->moved_why), "the flag reads on "
			    "again after reading off: producers used the old path until "
			    "now");
		}
		return;
	}
	t->flag_held = true;
	if (w->flag_not_on_ms == 0)
		w->flag_not_on_ms = t->now;
	step_flag_describe(t->p, desc, sizeof(desc));
	old_time_format(w->flag_not_on_ms, since, sizeof(since));
	if (st == STEP_FLAG_OFF)
		watch_alert(t, "flag_off", "%s reads off (not on since %s): producers publish "
		    "into the old path again. The watch does not end and remove_old "
		    "deletes nothing until it reads on again (then the deadline moves "
		    "to that moment + the largest TTL + allowance), or abort the plan",
		    desc, since);
	else
		watch_alert(t, "flag_unreadable", "%s cannot be read (not on since %s): %s. "
		    "The watch does not end and remove_old deletes nothing until it "
		    "reads on again, or abort the plan", desc, since, why);
}
