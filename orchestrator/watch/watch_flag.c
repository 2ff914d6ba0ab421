/* watch_flag: the watch reads the plan's flag back every tick and holds
 * itself open while it does not read on; the flag's part of the state
 * (struct wflag, persisted as "flag"). Internal to the watch
 * (watch_int.h). */
#include "watch_int.h"

/* ---- the flag ---- */

/* The names of the STEP_FLAG_* states in the persisted state. */
static const struct {
	int state;
	const char *name;
} flag_states[] = {
	{ STEP_FLAG_ON, "on" },
	{ STEP_FLAG_OFF, "off" },
	{ STEP_FLAG_UNREADABLE, "unreadable" },
};

/* STATE's name in the persisted state and the summary ("unreadable" for
 * any other). */
const char *
watch_flag_name(int state)
{
	for (size_t i = 0; i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (flag_states[i].state == state)
			return flag_states[i].name;
	return "unreadable";
}

/* A new watch's flag: on, as the flip read it back. */
void
watch_flag_init(struct wflag *f)
{
	f->state = STEP_FLAG_ON;
}

/* Reads the plan's flag back (one bounded GET). Off or unreadable: the
 * alert flag_off or flag_unreadable (raised again every tick, so an
 * acknowledgement does not outlast the condition) and the watch cannot end
 * this tick. While the flag reads off producers publish into the old path,
 * so when it reads on again, that moment is the last entry into the old
 * path and the deadline moves to it + the largest TTL + allowance. (While
 * it cannot be read nothing is known of the producers; publishes they make
 * into the old path show in the statistics as old_publish.) */
void
watch_flag_read(struct tick *t)
{
	struct wstate *w = t->w;
	char why[800], desc[400], since[40];
	int st = step_flag_check(t->p, why, sizeof(why));
	bool was_off = w->flag.state == STEP_FLAG_OFF;

	w->flag.state = st;
	w->flag.checked_ms = t->now;
	snprintf(w->flag.detail, sizeof(w->flag.detail), "%s", why);
	if (st != STEP_FLAG_UNREADABLE)
		watch_alert_over(t, "flag_unreadable", "the flag reads again");
	if (st == STEP_FLAG_ON) {
		watch_alert_over(t, "flag_off", "the flag reads on again");
		w->flag.not_on_ms = 0;
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
	if (w->flag.not_on_ms == 0)
		w->flag.not_on_ms = t->now;
	step_flag_describe(t->p, desc, sizeof(desc));
	old_time_format(w->flag.not_on_ms, since, sizeof(since));
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

/* The persisted "flag" member: {"state", "checked_ms" (null: not yet),
 * "not_on_since_ms" (null: it reads on), "detail"}, a new reference. */
json_t *
watch_flag_json(const struct wflag *f)
{
	return json_pack("{s:s,s:o,s:o,s:s}",
	    "state", watch_flag_name(f->state),
	    "checked_ms", int_or_null(f->checked_ms, f->checked_ms > 0),
	    "not_on_since_ms", int_or_null(f->not_on_ms, f->not_on_ms > 0),
	    "detail", f->detail);
}

/* Reads the persisted "flag" member J into F; a state without one (written
 * before the watch read the flag) is "on", as the flip left it. */
void
watch_flag_load(struct wflag *f, const json_t *j)
{
	const char *name = json_string_value(json_object_get(j, "state"));
	const char *detail = json_string_value(json_object_get(j, "detail"));

	f->state = STEP_FLAG_ON;
	for (size_t i = 0; name != NULL &&
	    i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (strcmp(flag_states[i].name, name) == 0)
			f->state = flag_states[i].state;
	f->checked_ms = jint(j, "checked_ms", 0);
	f->not_on_ms = jint(j, "not_on_since_ms", 0);
	snprintf(f->detail, sizeof(f->detail), "%s", detail ? detail : "");
}
