/* watch_state: the watch's persisted state as a whole — starting it,
 * reading it back from the JSON the engine kept and writing it out again,
 * with the summary the status page shows. The state is the shared figures
 * of struct wstate plus one part per file; each part starts, reads and
 * writes its own member (watch_int.h), and this file only puts them
 * together, in the order of the keys main's watch has always written.
 * Only watch.c calls it. */
#include "watch_int.h"

/* Starts W, a new watch in C at NOW (the flip's time when C has it) with
 * measure_horizon's largest TTL and its queue (TTL_QUEUE may be NULL):
 * the shared figures, then each part as its file starts it. */
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
	watch_old_init(&w->old);
	watch_ladder_init(&w->ladder);
	watch_probe_init(&w->probes, c->plan);
	watch_verify_init(&w->verify);
	watch_flag_init(&w->flag);
	watch_clock_init(&w->clock);
	watch_stats_init(&w->stats);
	watch_deadline_update(w);
}

/* The integer members of the state's top level: the shared figures. */
#define W(M, KEY, DFLT)	JFIELD(struct wstate, M, KEY, DFLT)
static const struct jfield top_fields[] = {
	W(started_ms, "started_ms", 0), W(flip_ms, "flip_ms", 0),
	W(max_ttl_ms, "max_ttl_ms", -1), W(allowance_ms, "allowance_ms", 0),
	W(last_old_entry_ms, "last_old_entry_ms", 0),
	W(deadline_ms, "deadline_ms", 0), W(ticks, "ticks", 0),
	W(last_tick_ms, "last_tick_ms", 0),
	W(ds_last_ms, "downsample_last_ms", 0),
};
#undef W

/* Reads a persisted state J into W: the shared figures, then each part
 * from its own member (a part a state from before lacks reads as a new
 * watch starts it). Returns 0, or -1 with ERR. */
int
watch_state_load(struct wstate *w, const json_t *j, char *err, size_t errlen)
{
	const char *ttl_queue = json_string_value(json_object_get(j, "max_ttl_queue"));

	memset(w, 0, sizeof(*w));
	if (jint(j, "version", -1) != WATCH_STATE_VERSION) {
		snprintf(err, errlen, "the persisted watch state has version %lld, this "
		    "binary reads version %d", (long long)jint(j, "version", -1),
		    WATCH_STATE_VERSION);
		return -1;
	}
	jint_fields(w, j, top_fields, JFIELDS_N(top_fields));
	snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
	    ttl_queue != NULL ? ttl_queue : "");
	watch_old_load(&w->old, json_object_get(j, "old"));
	watch_ladder_load(&w->ladder, json_object_get(j, "ladder"));
	watch_probe_load(&w->probes, json_object_get(j, "probe"));
	watch_verify_load(&w->verify, json_object_get(j, "verify"));
	watch_flag_load(&w->flag, json_object_get(j, "flag"));
	watch_clock_load(&w->clock, json_object_get(j, "clock"));
	watch_parking_load(&w->park, json_object_get(j, "parking"));
	watch_restart_load(&w->nodes, j);
	watch_levels_load(&w->levels, json_object_get(j, "levels"));
	watch_stats_load(&w->stats, json_object_get(j, "stats"));
	if (w->started_ms <= 0 || w->max_ttl_ms < 0 || w->deadline_ms <= 0 ||
	    w->probes.delay_ms <= 0) {
		snprintf(err, errlen, "the persisted watch state lacks its start, "
		    "largest TTL, deadline or probe delay");
		return -1;
	}
	return 0;
}

/* The state's summary, what the page shows: STATUS, the time left, both
 * paths' depths, the probes, OPEN_ALERTS. */
static json_t *
summary_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status)
{
	const struct wprobes *pr = &w->probes;
	json_t *sum, *depths = json_array();
	int64_t left = w->deadline_ms - t->now;

	if (w->clock.elapsed_ms >= 0 && watch_deadline_mono(w) - w->clock.elapsed_ms > left)
		left = watch_deadline_mono(w) - w->clock.elapsed_ms;
	if (t->lad.depth_seen)
		for (int k = 0; k < t->p->ladder.levels; k++)
			json_array_append_new(depths, json_integer(t->lad.depth[k]));
	sum = json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:{s:o,s:o,s:o},s:i,s:I}",
	    "status", status,
	    "time_left_ms", (json_int_t)(left > 0 ? left : 0),
	    "old_depth", int_or_null(t->old.depth, t->old.seen),
	    "old_nonempty", int_or_null(t->old.nonempty, t->old.seen),
	    "old_queues", int_or_null(t->old.queues, t->old.seen),
	    "ladder_depth", t->lad.depth_seen ? depths : json_null(),
	    "parking_depth", int_or_null(t->lad.parking_depth, t->lad.parking_seen),
	    "probes_in_flight", json_integer((json_int_t)pr->nout),
	    "probe_lateness_ms",
	    "last", int_or_null(pr->last_late, pr->have_late),
	    "p50", int_or_null(pr->nrecent ? watch_probe_p50(pr) : 0, pr->nrecent > 0),
	    "max", int_or_null(pr->max_late, pr->have_late),
	    "open_alerts", open_alerts,
	    "at_ms", (json_int_t)t->now);
	if (!t->lad.depth_seen)
		json_decref(depths);
	if (sum != NULL) {
		json_object_set_new(sum, "levels", watch_levels_summary(t, w));
		json_object_set_new(sum, "probe_budget_ms",
		    json_integer(watch_levels_budget(w)));
		json_object_set_new(sum, "parking_dead_letters", int_or_null(t->lvl.parking_dlx,
		    t->lvl.dlx_seen && t->lvl.parking_dlx >= 0));
		json_object_set_new(sum, "flag", json_string(watch_flag_name(w->flag.state)));
		json_object_set_new(sum, "statistics_lag_ms", int_or_null(t->now -
		    w->stats.fresh_ms, w->stats.fresh_ms > 0));
	}
	return sum;
}

/* The state as JSON (what the engine persists, a new reference, NULL when
 * out of memory), with the summary the status page shows (OPEN_ALERTS,
 * STATUS) and, when DONE, the old path's last reading (old_last) instead
 * of the last full pass's counters (old.seen). */
json_t *
watch_state_json(const struct tick *t, const struct wstate *w, int open_alerts,
    const char *status, bool done)
{
	json_t *j;

	j = json_pack("{s:i,s:I,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,"
	    "s:o,s:o,s:o,s:o,s:I,s:o,s:b}",
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
	    "old", watch_old_json(t, &w->old),
	    "ladder", watch_ladder_json(&w->ladder),
	    "probe", watch_probe_json(t, &w->probes),
	    "verify", watch_verify_json(&w->verify),
	    "downsample_last_ms", (json_int_t)w->ds_last_ms,
	    "summary", summary_json(t, w, open_alerts, status),
	    "done", done);
	if (j == NULL)
		return NULL;
	json_object_set_new(j, "clock", watch_clock_json(&w->clock));
	json_object_set_new(j, "parking", watch_parking_json(&w->park));
	watch_restart_json(j, &w->nodes);
	json_object_set_new(j, "levels", watch_levels_json(&w->levels));
	json_object_set_new(j, "flag", watch_flag_json(&w->flag));
	json_object_set_new(j, "stats", watch_stats_json(t, &w->stats));
	if (done && t->old.seen)
		json_object_set_new(j, "old_last", watch_old_last_json(t));
	/* Only a next full pass compares with the counters of the last
	 * ("seen", one per old queue): an ended watch makes none, and what
	 * remove_old reads is old_last. */
	if (done) {
		json_object_del(json_object_get(j, "old"), "seen");
		json_object_del(json_object_get(j, "old"), "seen_n");
	}
	return j;
}
