/* watch_deadline: the old path's deadline as the watch keeps it — from the
 * flip or the last entry into the old path plus the largest old TTL and
 * the allowance, or move_old's horizon while it stands — on the step
 * clock and in the watch's monotonic age, never earlier than before. It
 * writes the shared figures of struct wstate the deadline is made of
 * (deadline_ms, moved_*), and nothing of any part. A leaf: it calls no
 * other file of the watch (watch_int.h). */
#include "watch_int.h"

/* Whether move_old's horizon stands: it moved or accounted for every
 * message in the old path when its last pass began, and nothing has
 * entered the old path since — old_moved_stands, the rule remove_old's
 * deadlines follow too. */
static bool
moved_stands(const struct wstate *w)
{
	return old_moved_stands(w->moved, w->last_old_entry_ms);
}

/* Takes move_old's horizon from MOVED (its result, or NULL) into W.
 * Returns whether it had one. */
bool
watch_deadline_moved(struct wstate *w, const json_t *moved)
{
	w->moved = moved;
	w->moved_publishes = -1;
	if (!json_is_true(json_object_get(moved, "ok")) ||
	    jint(moved, "horizon_ms", 0) <= 0 || jint(moved, "pass_started_ms", 0) <= 0)
		return false;
	w->moved_horizon_ms = jint(moved, "horizon_ms", 0);
	w->moved_at_ms = jint(moved, "pass_started_ms", 0);
	w->moved_publishes = jint(moved, "old_publishes", -1);
	return true;
}

/* The deadline the state's figures give, never earlier than the last:
 * after move_old, what stayed in the old path (moved_stands), else the
 * last entry + the largest TTL. */
void
watch_deadline_update(struct wstate *w)
{
	int64_t from = w->last_old_entry_ms > w->flip_ms ? w->last_old_entry_ms : w->flip_ms;
	int64_t d = moved_stands(w) ? w->moved_horizon_ms :
	    from + w->max_ttl_ms + w->allowance_ms;

	if (d > w->deadline_ms)
		w->deadline_ms = d;
}

/* measure_horizon's largest TTL and its queue, from its result MEASURED.
 * Returns 0 or -1 (none). */
int
watch_deadline_measured(const json_t *measured, int64_t *ttl, const char **queue)
{
	const json_t *sum = json_object_get(measured, "summary");

	*ttl = jint(sum, "max_ttl_ms", -1);
	*queue = json_string_value(json_object_get(sum, "max_ttl_queue"));
	return *ttl >= 0 ? 0 : -1;
}

/* The deadline in the watch's monotonic age: the last entry's age + the
 * largest TTL + the allowance, and at least the statistics' lag. */
int64_t
watch_deadline_mono(const struct wstate *w)
{
	int64_t d = moved_stands(w) ? w->moved_horizon_ms - w->flip_ms :
	    w->clock.entry_elapsed_ms + w->max_ttl_ms + w->allowance_ms;

	return d > OLD_STATS_LAG_MS ? d : OLD_STATS_LAG_MS;
}

/* Has the deadline passed, on the step clock and in monotonic time, with
 * the statistics' lag after the flip? (Then the watch may end this tick.) */
bool
watch_deadline_past(const struct tick *t)
{
	const struct wstate *w = t->w;

	return t->now >= w->deadline_ms && t->now >= w->flip_ms + OLD_STATS_LAG_MS &&
	    w->clock.elapsed_ms >= watch_deadline_mono(w);
}
