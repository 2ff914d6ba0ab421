/* watch_state: the watch's persisted state — starting it, reading it back
 * from the JSON the engine kept, the deadline and the clocks it keeps,
 * and writing it out again. Internal to the watch (watch_int.h). */
#include "watch_int.h"

/* ---- state ---- */

/* Whether move_old's horizon stands: it moved or accounted for every
 * message in the old path when its last pass began, and nothing has
 * entered the old path since — old_moved_stands, the rule remove_old's
 * deadlines follow too. */
static bool
moved_stands(const struct wstate *w)
{
	return old_moved_stands(w->moved, w->last_old_entry_ms);
}

bool
watch_moved(struct wstate *w, const json_t *moved)
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
watch_update_deadline(struct wstate *w)
{
	int64_t from = w->last_old_entry_ms > w->flip_ms ? w->last_old_entry_ms : w->flip_ms;
	int64_t d = moved_stands(w) ? w->moved_horizon_ms :
	    from + w->max_ttl_ms + w->allowance_ms;

	if (d > w->deadline_ms)
		w->deadline_ms = d;
}

/* measure_horizon's largest TTL and its queue. Returns 0 or -1. */
int
watch_measured_ttl(const json_t *measured, int64_t *ttl, const char **queue)
{
	const json_t *sum = json_object_get(measured, "summary");

	*ttl = jint(sum, "max_ttl_ms", -1);
	*queue = json_string_value(json_object_get(sum, "max_ttl_queue"));
	return *ttl >= 0 ? 0 : -1;
}

/* The probe's delay: one watch.interval rounded up to whole units (at
 * least one unit, at most the ladder's largest delay). Sent at the end of
 * a tick, a probe is then due about when the next tick starts, which
 * reads it within the tick's own latency of its arrival (or waits a
 * moment for it): its lateness is measured, not blurred by a whole
 * interval between looks. One interval is short (few probes in flight,
 * a lost one known within an interval and the lateness bound) and still
 * crosses the levels of the bits of interval / unit (10 s on a 1 s
 * ladder: levels 3 and 1), through waiting and bypass bindings down to
 * the delivery exchange, as every delayed message ends; the canary
 * checked the other paths before the flip, and verify_ladder re-checks
 * every binding each probe_every. */
static int64_t
probe_delay(const struct plan *p)
{
	const struct ladder *l = &p->ladder;
	uint64_t units = (uint64_t)((p->watch.interval_ms + l->unit_ms - 1) / l->unit_ms);

	if (units < 1)
		units = 1;
	if (units > ladder_max_units(l))
		units = ladder_max_units(l);
	/* Never beyond the plan's max_delay, which publishing refuses. */
	if ((int64_t)units * l->unit_ms > ladder_limit_ms(l))
		return ladder_limit_ms(l);
	return (int64_t)units * l->unit_ms;
}

void
watch_state_init(struct wstate *w, const struct step_ctx *c, int64_t now, int64_t ttl,
    const char *ttl_queue)
{
	memset(w, 0, sizeof(*w));
	w->flip_ms = c->flip_ms > 0 ? c->flip_ms : now;
	w->started_ms = w->flip_ms;
	w->max_ttl_ms = ttl;
	snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
	    ttl_queue ? ttl_queue : "");
	w->allowance_ms = c->plan->watch.allowance_ms;
	w->last_old_entry_ms = w->flip_ms;
	w->old_publishes = -1;
	w->ladder_publishes = -1;
	w->probe_delay_ms = probe_delay(c->plan);
	w->verify_ok = -1;
	w->flag_state = STEP_FLAG_ON;	/* the flip read it back on */
	w->elapsed_ms = -1;
	watch_update_deadline(w);
}

/* The names of the STEP_FLAG_* states in the persisted state. */
static const struct {
	int state;
	const char *name;
} flag_states[] = {
	{ STEP_FLAG_ON, "on" },
	{ STEP_FLAG_OFF, "off" },
	{ STEP_FLAG_UNREADABLE, "unreadable" },
};

static const char *
flag_state_name(int state)
{
	for (size_t i = 0; i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (flag_states[i].state == state)
			return flag_states[i].name;
	return "unreadable";
}

/* Reads the persisted "flag" member F into W; a state without one (written
 * before the watch read the flag) is "on", as the flip left it. */
static void
flag_state_read(struct wstate *w, const json_t *f)
{
	const char *name = json_string_value(json_object_get(f, "state"));
	const char *detail = json_string_value(json_object_get(f, "detail"));

	w->flag_state = STEP_FLAG_ON;
	for (size_t i = 0; name != NULL &&
	    i < sizeof(flag_states) / sizeof(flag_states[0]); i++)
		if (strcmp(flag_states[i].name, name) == 0)
			w->flag_state = flag_states[i].state;
	w->flag_checked_ms = jint(f, "checked_ms", 0);
	w->flag_not_on_ms = jint(f, "not_on_since_ms", 0);
	snprintf(w->flag_detail, sizeof(w->flag_detail), "%s", detail ? detail : "");
}

/* The integer members of the persisted state, by the object they are in. */
#define W(M, KEY, DFLT)	JFIELD(struct wstate, M, KEY, DFLT)
static const struct jfield clock_fields[] = {
	W(mono_last_ms, "mono_last_ms", 0), W(elapsed_ms, "elapsed_ms", -1),
	W(entry_elapsed_ms, "entry_elapsed_ms", 0),
};
static const struct jfield parking_fields[] = {
	W(park_known, "known_depth", 0), W(park_foreign, "foreign", 0),
	W(park_unread, "unread", 0), W(park_requeues, "requeues", 0),
	W(park_walks, "walks", 0),
};
static const struct jfield own_taken_fields[] = {
	W(park_canary, "canary", 0), W(park_probe, "probe", 0),
};
static const struct jfield amo_fields[] = {
	W(amo_depth, "depth", -1), W(amo_at_ms, "at_ms", 0),
};
static const struct jfield top_fields[] = {
	W(started_ms, "started_ms", 0), W(flip_ms, "flip_ms", 0),
	W(max_ttl_ms, "max_ttl_ms", -1), W(allowance_ms, "allowance_ms", 0),
	W(last_old_entry_ms, "last_old_entry_ms", 0),
	W(deadline_ms, "deadline_ms", 0), W(ticks, "ticks", 0),
	W(last_tick_ms, "last_tick_ms", 0),
	W(ds_last_ms, "downsample_last_ms", 0),
};
static const struct jfield old_fields[] = {
	W(old_publishes, "publishes", -1), W(old_after_flip, "after_flip", 0),
	W(old_settled, "settled", 0), W(old_resets, "resets", 0),
	W(old_late, "late", 0), W(old_gone_empty, "gone_empty", 0),
	W(old_joined_over, "joined_unnamed", 0),
	W(unmeasured_seen, "unmeasured_queues", 0),
};
static const struct jfield probe_fields[] = {
	W(probe_delay_ms, "delay_ms", 0), W(probe_seq, "next_seq", 0),
	W(probe_next_ms, "next_mono_ms", 0),
	W(probe_checked_ms, "checked_mono_ms", 0),
	W(sent, "sent", 0), W(arrived, "arrived", 0), W(lost, "lost", 0),
	W(late, "late", 0), W(early, "early", 0),
	W(unmeasured, "unmeasured", 0), W(stale, "stale", 0),
	W(foreign, "foreign", 0), W(last_late, "last_lateness_ms", 0),
	W(max_late, "max_lateness_ms", 0), W(probe_parked, "parked", 0),
};
static const struct jfield verify_fields[] = {
	W(verify_next_ms, "next_ms", 0), W(verify_last_ms, "last_ms", 0),
};
#undef W

/* Reads the parts of a persisted state J added after its first form:
 * clock, parking, nodes, the at-most-once exposure, level leaders, the
 * next places pass and levels (a state without them reads as a new watch
 * would start them). */
static void
state_read_more(struct wstate *w, const json_t *j)
{
	const json_t *clk = json_object_get(j, "clock"), *pk = json_object_get(j, "parking");
	const json_t *amo = json_object_get(j, "old_at_most_once");
	const char *boot = json_string_value(json_object_get(clk, "boot_id"));
	const json_t *o;
	size_t i;

	snprintf(w->boot_id, sizeof(w->boot_id), "%s", boot ? boot : "");
	jint_fields(w, clk, clock_fields, JFIELDS_N(clock_fields));
	jint_fields(w, pk, parking_fields, JFIELDS_N(parking_fields));
	jint_fields(w, json_object_get(pk, "own_taken"), own_taken_fields,
	    JFIELDS_N(own_taken_fields));
	w->have_nodes = json_is_array(json_object_get(j, "nodes"));
	watch_nodes_parse(json_object_get(j, "nodes"), &w->nodes);
	jint_fields(w, amo, amo_fields, JFIELDS_N(amo_fields));
	w->have_leaders = json_is_array(json_object_get(j, "level_leaders"));
	json_array_foreach(json_object_get(j, "level_leaders"), i, o)
		if (i < LADDER_MAX_LEVELS && json_is_string(o))
			snprintf(w->leaders[i], sizeof(w->leaders[i]), "%s",
			    json_string_value(o));
	w->places_next_ms = jint(j, "places_next_mono_ms", 0);
	watch_levels_read(w, json_object_get(j, "levels"));
}

/* One probe in flight, as persisted: {"seq", "sent_ms", "not_before_ms",
 * "sent_mono_ms", "not_before_mono_ms"}; read back from O. */
json_t *
watch_probe_json(const struct probe *p)
{
	return json_pack("{s:I,s:I,s:I,s:I,s:I}", "seq", (json_int_t)p->seq,
	    "sent_ms", (json_int_t)p->sent_ms, "not_before_ms",
	    (json_int_t)p->not_before_ms, "sent_mono_ms", (json_int_t)p->sent_mono,
	    "not_before_mono_ms", (json_int_t)p->not_before_mono);
}

void
watch_probe_read(struct probe *p, const json_t *o)
{
	p->seq = jint(o, "seq", -1);
	p->sent_ms = jint(o, "sent_ms", 0);
	p->not_before_ms = jint(o, "not_before_ms", 0);
	p->sent_mono = jint(o, "sent_mono_ms", 0);
	p->not_before_mono = jint(o, "not_before_mono_ms", 0);
}

/* Moves P's monotonic stamps to this boot, from its wall-clock ones (WALL
 * and MONO: now). */
void
watch_probe_rebase(struct probe *p, int64_t wall, int64_t mono)
{
	p->sent_mono = mono + (p->sent_ms - wall);
	p->not_before_mono = mono + (p->not_before_ms - wall);
}

/* Brings the watch's monotonic times to this tick (wall clock WALL,
 * monotonic MONO): adds the monotonic time since the last tick to the
 * watch's age. Across a reboot (another boot id, or a clock behind the
 * last tick's) monotonic stamps mean nothing: the age grows by the wall
 * clock's difference instead (never by less than zero), and the probes'
 * monotonic times are rebased from their wall-clock stamps. */
void
watch_clock_tick(struct wstate *w, int64_t wall, int64_t mono)
{
	char boot[sizeof(w->boot_id)];
	bool same;

	(void)clock_boot_id(boot, sizeof(boot));
	same = strcmp(w->boot_id, boot) == 0 && w->mono_last_ms > 0 &&
	    mono >= w->mono_last_ms;
	if (w->elapsed_ms < 0) {
		/* The first tick (or a state from before): the flip and the
		 * last entry are known only on the wall clock. */
		w->elapsed_ms = wall > w->flip_ms ? wall - w->flip_ms : 0;
		w->entry_elapsed_ms = w->last_old_entry_ms > w->flip_ms ?
		    w->last_old_entry_ms - w->flip_ms : 0;
	} else if (same)
		w->elapsed_ms += mono - w->mono_last_ms;
	else if (wall > w->last_tick_ms)
		w->elapsed_ms += wall - w->last_tick_ms;
	if (!same) {
		w->probe_next_ms = 0;
		w->probe_checked_ms = 0;
		w->places_next_ms = 0;
		for (size_t i = 0; i < w->nout; i++)
			watch_probe_rebase(&w->out[i], wall, mono);
		watch_levels_rebase(w, wall, mono);
	}
	snprintf(w->boot_id, sizeof(w->boot_id), "%s", boot);
	w->mono_last_ms = mono;
}

/* The deadline in the watch's monotonic age: the last entry's age + the
 * largest TTL + the allowance, and at least the statistics' lag. */
int64_t
watch_mono_deadline(const struct wstate *w)
{
	int64_t d = moved_stands(w) ? w->moved_horizon_ms - w->flip_ms :
	    w->entry_elapsed_ms + w->max_ttl_ms + w->allowance_ms;

	return d > OLD_STATS_LAG_MS ? d : OLD_STATS_LAG_MS;
}

/* Has the deadline passed, on the step clock and in monotonic time, with
 * the statistics' lag after the flip? (Then the watch may end this tick.) */
bool
watch_past_deadline(const struct tick *t)
{
	const struct wstate *w = t->w;

	return t->now >= w->deadline_ms && t->now >= w->flip_ms + OLD_STATS_LAG_MS &&
	    w->elapsed_ms >= watch_mono_deadline(w);
}

/* Reads a persisted state J into W. Returns 0, or -1 with ERR. */
int
watch_state_read(struct wstate *w, const json_t *j, char *err, size_t errlen)
{
	const json_t *old = json_object_get(j, "old"), *lad = json_object_get(j, "ladder");
	const json_t *pr = json_object_get(j, "probe"), *ver = json_object_get(j, "verify");
	const json_t *o, *ok;
	size_t i;

	memset(w, 0, sizeof(*w));
	if (jint(j, "version", -1) != WATCH_STATE_VERSION) {
		snprintf(err, errlen, "the persisted watch state has version %lld, this "
		    "binary reads version %d", (long long)jint(j, "version", -1),
		    WATCH_STATE_VERSION);
		return -1;
	}
	jint_fields(w, j, top_fields, JFIELDS_N(top_fields));
	snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
	    json_string_value(json_object_get(j, "max_ttl_queue")) ?
	    json_string_value(json_object_get(j, "max_ttl_queue")) : "");
	jint_fields(w, old, old_fields, JFIELDS_N(old_fields));
	watch_old_pass_read(&w->pass, json_object_get(old, "pass"));
	json_array_foreach(json_object_get(old, "new_queues"), i, o)
		if (json_is_string(o) && w->nknown_new < NEW_KNOWN_MAX)
			snprintf(w->known_new[w->nknown_new++], LADDER_NAME_MAX, "%s",
			    json_string_value(o));
	w->ladder_publishes = jint(lad, "publishes", -1);
	jint_fields(w, pr, probe_fields, JFIELDS_N(probe_fields));
	json_array_foreach(json_object_get(pr, "outstanding"), i, o) {
		if (w->nout == PROBE_OUTSTANDING_MAX)
			break;
		watch_probe_read(&w->out[w->nout++], o);
	}
	json_array_foreach(json_object_get(pr, "recent_lateness_ms"), i, o)
		if (json_is_integer(o) && w->nrecent < PROBE_RECENT_MAX)
			w->recent[w->nrecent++] = json_integer_value(o);
	w->have_late = json_is_integer(json_object_get(pr, "last_lateness_ms"));
	jint_fields(w, ver, verify_fields, JFIELDS_N(verify_fields));
	ok = json_object_get(ver, "ok");
	w->verify_ok = json_is_boolean(ok) ? json_is_true(ok) : -1;
	flag_state_read(w, json_object_get(j, "flag"));
	state_read_more(w, j);
	if (w->started_ms <= 0 || w->max_ttl_ms < 0 || w->deadline_ms <= 0 ||
	    w->probe_delay_ms <= 0) {
		snprintf(err, errlen, "the persisted watch state lacks its start, "
		    "largest TTL, deadline or probe delay");
		return -1;
	}
	return 0;
}

/* Adds to J those later parts (state_read_more) and the probe's parked
 * count. */
static void
state_json_more(json_t *j, const struct wstate *w)
{
	json_t *leaders;

	json_object_set_new(json_object_get(j, "probe"), "parked",
	    json_integer(w->probe_parked));
	json_object_set_new(j, "clock", json_pack("{s:s,s:I,s:I,s:I}",
	    "boot_id", w->boot_id, "mono_last_ms", (json_int_t)w->mono_last_ms,
	    "elapsed_ms", (json_int_t)w->elapsed_ms,
	    "entry_elapsed_ms", (json_int_t)w->entry_elapsed_ms));
	json_object_set_new(j, "parking", json_pack("{s:{s:I,s:I},s:I,s:I,s:I,s:I,s:I}",
	    "own_taken", "canary", (json_int_t)w->park_canary,
	    "probe", (json_int_t)w->park_probe,
	    "foreign", (json_int_t)w->park_foreign,
	    "unread", (json_int_t)w->park_unread,
	    "known_depth", (json_int_t)w->park_known,
	    "requeues", (json_int_t)w->park_requeues,
	    "walks", (json_int_t)w->park_walks));
	json_object_set_new(j, "nodes", w->have_nodes ? watch_nodes_json(&w->nodes) :
	    json_null());
	json_object_set_new(j, "old_at_most_once", json_pack("{s:o,s:I}",
	    "depth", int_or_null(w->amo_depth, w->amo_depth >= 0),
	    "at_ms", (json_int_t)w->amo_at_ms));
	if (w->have_leaders && (leaders = json_array()) != NULL) {
		int last = LADDER_MAX_LEVELS - 1;

		while (last >= 0 && w->leaders[last][0] == '\0')
			last--;
		for (int k = 0; k <= last; k++)
			json_array_append_new(leaders, json_string(w->leaders[k]));
		json_object_set_new(j, "level_leaders", leaders);
	}
	json_object_set_new(j, "places_next_mono_ms", json_integer(w->places_next_ms));
	json_object_set_new(j, "levels", watch_levels_json(w));
}

/* Adds to OLD (the state's "old") what the watch knows of the old path's
 * members: "seen", the last full pass's queues and their publish
 * counters; "joined", the members measure_horizon did not measure, with
 * their TTLs (remove_old takes them as it takes the measured); and their
 * counts. A light pass carries the last full pass's forward. */
static void
old_members_json(json_t *old, const struct tick *t, const struct wstate *w)
{
	const json_t *prev = json_object_get(t->c->state, "old");
	const json_t *seen = t->seen != NULL ? t->seen : json_object_get(prev, "seen");
	const json_t *joined = t->joined != NULL ? t->joined :
	    json_object_get(prev, "joined");

	if (json_is_object(seen))
		json_object_set(old, "seen", (json_t *)seen);
	json_object_set_new(old, "joined", json_is_object(joined) ?
	    json_incref((json_t *)joined) : json_object());
	json_object_set_new(old, "late", json_integer(w->old_late));
	json_object_set_new(old, "gone_empty", json_integer(w->old_gone_empty));
	json_object_set_new(old, "joined_unnamed", json_integer(w->old_joined_over));
}

static int64_t
p50(const struct wstate *w)
{
	int64_t v[PROBE_RECENT_MAX];

	memcpy(v, w->recent, w->nrecent * sizeof(v[0]));
	qsort(v, w->nrecent, sizeof(v[0]), cmp_i64);
	return v[(50 * w->nrecent + 99) / 100 - 1];
}

/* The last tick's reading of each old queue, which remove_old compares
 * with its own before deleting: {"at_ms", "queues": [{"name", "publish"
 * (message_stats.publish, null when the statistics had none), "messages"
 * (exact when read so)}]}. */
static json_t *
last_sample_json(const struct tick *t)
{
	json_t *qs = json_array();

	for (size_t i = 0; i < t->nq; i++)
		json_array_append_new(qs, json_pack("{s:s,s:o,s:I}", "name", t->q[i].name,
		    "publish", int_or_null(t->q[i].publish, t->q[i].publish >= 0),
		    "messages", (json_int_t)(t->q[i].exact >= 0 ? t->q[i].exact :
		    t->q[i].listed)));
	return json_pack("{s:I,s:o}", "at_ms", (json_int_t)t->now, "queues", qs);
}

/* The probes' part of the state: the probe queue, the next probe, those
 * in flight, the counts and the latenesses. */
static json_t *
probe_json(const struct tick *t, const struct wstate *w)
{
	json_t *outs = json_array(), *recent = json_array();

	for (size_t i = 0; i < w->nout; i++)
		json_array_append_new(outs, watch_probe_json(&w->out[i]));
	for (size_t i = 0; i < w->nrecent; i++)
		json_array_append_new(recent, json_integer(w->recent[i]));
	return json_pack("{s:s,s:I,s:I,s:I,s:I,s:o,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,"
	    "s:o,s:o,s:o}",
	    "queue", t->probe_queue,
	    "delay_ms", (json_int_t)w->probe_delay_ms,
	    "next_seq", (json_int_t)w->probe_seq,
	    "next_mono_ms", (json_int_t)w->probe_next_ms,
	    "checked_mono_ms", (json_int_t)w->probe_checked_ms,
	    "outstanding", outs,
	    "sent", (json_int_t)w->sent, "arrived", (json_int_t)w->arrived,
	    "lost", (json_int_t)w->lost, "late", (json_int_t)w->late,
	    "early", (json_int_t)w->early, "unmeasured", (json_int_t)w->unmeasured,
	    "stale", (json_int_t)w->stale, "foreign", (json_int_t)w->foreign,
	    "recent_lateness_ms", recent,
	    "last_lateness_ms", int_or_null(w->last_late, w->have_late),
	    "max_lateness_ms", int_or_null(w->max_late, w->have_late));
}

/* The state's summary, what the page shows: STATUS, the time left, both
 * paths' depths, the probes, OPEN_ALERTS. */
static json_t *
summary_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status)
{
	json_t *sum, *depths = json_array();
	int64_t left = w->deadline_ms - t->now;

	if (w->elapsed_ms >= 0 && watch_mono_deadline(w) - w->elapsed_ms > left)
		left = watch_mono_deadline(w) - w->elapsed_ms;
	if (t->depth_seen)
		for (int k = 0; k < t->p->ladder.levels; k++)
			json_array_append_new(depths, json_integer(t->depth[k]));
	sum = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:i,s:I}",
	    "status", status,
	    "time_left_ms", (json_int_t)(left > 0 ? left : 0),
	    "old_depth", int_or_null(t->old_depth, t->old_seen),
	    "old_nonempty", int_or_null(t->old_nonempty, t->old_seen),
	    "old_queues", int_or_null(t->old_queues, t->old_seen),
	    "ladder_depth", t->depth_seen ? depths : json_null(),
	    "parking_depth", int_or_null(t->parking_depth, t->parking_seen),
	    "probes_in_flight", json_integer((json_int_t)w->nout),
	    "probe_lateness_ms",
	    "last", int_or_null(w->last_late, w->have_late),
	    "p50", int_or_null(w->nrecent ? p50(w) : 0, w->nrecent > 0),
	    "max", int_or_null(w->max_late, w->have_late),
	    "open_alerts", open_alerts,
	    "at_ms", (json_int_t)t->now);
	if (!t->depth_seen)
		json_decref(depths);
	if (sum != NULL) {
		json_object_set_new(sum, "levels", watch_levels_summary(t, w));
		json_object_set_new(sum, "probe_budget_ms",
		    json_integer(watch_levels_budget(w)));
		json_object_set_new(sum, "parking_dead_letters", int_or_null(t->parking_dlx,
		    t->dlx_seen && t->parking_dlx >= 0));
	}
	return sum;
}

/* The state as JSON (what the engine persists), with the summary the
 * status page shows. */
json_t *
watch_state_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status, bool done)
{
	json_t *j, *pr, *sum, *known = json_array();

	for (size_t i = 0; i < w->nknown_new; i++)
		json_array_append_new(known, json_string(w->known_new[i]));
	pr = probe_json(t, w);
	sum = summary_json(t, w, open_alerts, status);
	j = json_pack("{s:i,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,"
	    "s:{s:o,s:I,s:I,s:I,s:I,s:o},s:{s:o},s:o,s:{s:I,s:I,s:o},s:I,s:o,s:b}",
	    "version", WATCH_STATE_VERSION,
	    "started_ms", (json_int_t)w->started_ms,
	    "flip_ms", (json_int_t)w->flip_ms,
	    "max_ttl_ms", (json_int_t)w->max_ttl_ms,
	    "max_ttl_queue", w->max_ttl_queue,
	    "allowance_ms", (json_int_t)w->allowance_ms,
	    "last_old_entry_ms", (json_int_t)w->last_old_entry_ms,
	    "deadline_ms", (json_int_t)w->deadline_ms,
	    "ticks", (json_int_t)w->ticks,
	    "last_tick_ms", (json_int_t)w->last_tick_ms,
	    "old",
	    "publishes", int_or_null(w->old_publishes, w->old_publishes >= 0),
	    "after_flip", (json_int_t)w->old_after_flip,
	    "settled", (json_int_t)w->old_settled,
	    "resets", (json_int_t)w->old_resets,
	    "unmeasured_queues", (json_int_t)w->unmeasured_seen,
	    "new_queues", known,
	    "ladder",
	    "publishes", int_or_null(w->ladder_publishes, w->ladder_publishes >= 0),
	    "probe", pr,
	    "verify",
	    "next_ms", (json_int_t)w->verify_next_ms,
	    "last_ms", (json_int_t)w->verify_last_ms,
	    "ok", w->verify_ok < 0 ? json_null() : json_boolean(w->verify_ok),
	    "downsample_last_ms", (json_int_t)w->ds_last_ms,
	    "summary", sum,
	    "done", done);
	if (j != NULL) {
		state_json_more(j, w);
		json_object_set_new(j, "flag", json_pack("{s:s,s:o,s:o,s:s}",
		    "state", flag_state_name(w->flag_state),
		    "checked_ms", int_or_null(w->flag_checked_ms, w->flag_checked_ms > 0),
		    "not_on_since_ms", int_or_null(w->flag_not_on_ms,
		    w->flag_not_on_ms > 0), "detail", w->flag_detail));
		json_object_set_new(json_object_get(j, "summary"), "flag",
		    json_string(flag_state_name(w->flag_state)));
		json_object_set_new(json_object_get(j, "old"), "pass",
		    watch_old_pass_json(&w->pass));
		json_object_set(json_object_get(j, "old"), "held",
		    t->held != NULL ? t->held : json_object_get(json_object_get(
		    t->c->state, "old"), "held"));
		old_members_json(json_object_get(j, "old"), t, w);
		if (done && t->old_seen)
			json_object_set_new(j, "old_last", last_sample_json(t));
	}
	return j;
}
