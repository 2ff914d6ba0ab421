/* watch: the watch step — from the flip until the old path's deadline, one
 * tick per call (the engine calls it again one watch.interval later with
 * the state this tick returned): samples the old path (total depth,
 * non-empty queues, cumulative publishes) and the ladder (depth per level,
 * parking depth, cumulative publishes into the level exchanges), sends and
 * collects probes through the ladder (and one per level whose TTL is
 * within the probe budget, each waiting in that level alone, with the
 * levels' pending dead-letters and publish bands: watch_levels.c),
 * re-verifies the ladder, raises
 * alerts, downsamples old samples, and finishes only when the deadline has
 * passed, the old path is empty and no alert is open. Each tick also reads
 * the plan's flag back: off (someone turned it off: producers are back on
 * the old path) or unreadable, it raises flag_off or flag_unreadable and
 * the watch cannot end that tick, whatever was acknowledged; read on again
 * after reading off, the last entry into the old path is that moment.
 *
 * The deadline is max(flip, last entry into the old path) + the largest
 * old TTL + watch.allowance, and never moves earlier. Everything a resumed
 * watch needs (its start, its deadline, the counters it compares against,
 * the probes in flight) is in the state it returns, so a watch killed at
 * any instant resumes where it was.
 *
 * The deadline must have passed on the wall clock and in monotonic time
 * since the flip (the state keeps how long the watch has run, measured
 * on CLOCK_MONOTONIC), so a clock jumped forward cannot end the watch
 * early. Probe timing and lateness are monotonic too.
 *
 * Parking holds only what no destination takes; cutover's own messages
 * that end there (a killed canary's, probes parked while the probe queue
 * was missing) are taken out and accounted for, and only the others
 * raise the parking alert. A restart of a broker node (watch_nodes) or a
 * level queue's new leader raises broker_restart with the old-path
 * messages exposed to at-most-once dead-lettering, which holds the watch
 * until acknowledged. */
#include "watch_int.h"

/* ---- names ---- */

/* Fills T's names and the topology whose queues the old selection must
 * not catch. Returns 0 or -1 with ERR. */
static int
names(struct tick *t, char *err, size_t errlen)
{
	const struct ladder *l = &t->p->ladder;
	char why[512];

	if (mgmt_escape(mgmt_vhost(t->c->mgmt), t->vhost, sizeof(t->vhost)) < 0 ||
	    mgmt_escape(mgmt_vhost(t->c->old_mgmt), t->old_vhost,
	    sizeof(t->old_vhost)) < 0) {
		snprintf(err, errlen, "the vhost name is too long");
		return -1;
	}
	plan_probe_queue(t->p, t->probe_queue, sizeof(t->probe_queue));
	plan_canary_queue(t->p, t->canary_queue, sizeof(t->canary_queue));
	if (ladder_check_destination(l, t->probe_queue, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "the probe destination of plan '%s': %s",
		    t->p->name, why);
		return -1;
	}
	if (plan_names_destination(t->p, t->probe_queue)) {
		snprintf(err, errlen, "ladder.destinations lists '%s', which the "
		    "watch's probes need for themselves; rename that destination",
		    t->probe_queue);
		return -1;
	}
	ladder_delivery_exchange(l, t->delivery, sizeof(t->delivery));
	ladder_parking_queue(l, t->parking, sizeof(t->parking));
	ladder_destination_pattern(l, t->probe_queue, t->probe_pattern,
	    sizeof(t->probe_pattern));
	return topology_build(t->p, &t->topo, err, errlen);
}


/* ---- the step ---- */

/* The first tick on a state older than a restore of the database from a
 * backup: what happened between the backup and the restore is not
 * recorded. The probes in flight then were read by the process that went
 * on after the backup, so they are forgotten rather than called lost;
 * the old path is read as on every tick (its counters against the last
 * recorded ones count every publish since as an entry, moving the
 * deadline later, never earlier). Hands the engine a watch.restored
 * event. Returns 0, or -1 when out of memory. */
static int
tick_restored(struct tick *t)
{
	size_t probes = watch_probe_forget(&t->w->probes);
	size_t levels = watch_levels_forget(&t->w->levels);
	char when[40];

	return step_events_add(&t->c->events, "watch.restored", json_pack(
	    "{s:I,s:s,s:I,s:I,s:s}", "restored_ms", (json_int_t)t->c->restored_ms,
	    "restored", old_time_format(t->c->restored_ms, when, sizeof(when)),
	    "probes_forgotten", (json_int_t)probes, "level_probes_forgotten",
	    (json_int_t)levels, "what", "the watch resumed from a state older than the "
	    "restore: probes in flight at the backup are not waited for (one arriving "
	    "now counts as stale), and the old path's counters since the last "
	    "recorded ones count as entries, moving the deadline later, never "
	    "earlier"));
}

/* Starts tick T of the watch in C: its state W read back from C->state
 * (the largest TTL never shrinks), or begun now; *PREV_DEADLINE is the
 * deadline before this tick. Brings the watch's clock to this tick; after
 * a reboot every part whose stamps are monotonic rebases them. Returns 0
 * or -1 with ERR. */
static int
tick_begin(struct tick *t, struct wstate *w, struct step_ctx *c,
    int64_t *prev_deadline, char *err, size_t errlen)
{
	const char *ttl_queue = NULL;
	int64_t ttl;

	t->c = c;
	t->p = c->plan;
	t->w = w;
	t->now = watch_clock_now(c);
	t->mono = clock_mono_ms();
	if (c->store == NULL || c->amqp == NULL || c->mgmt == NULL ||
	    c->old_amqp == NULL || c->old_mgmt == NULL) {
		snprintf(err, errlen, "the watch needs the store and the broker "
		    "connections (it is run by the engine)");
		return -1;
	}
	if (c->measured_queues != NULL)
		t->mq = c->measured_queues;
	else if (old_measured_read(c->measured, &t->own_mq) == 0)
		t->mq = &t->own_mq;
	else {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if (watch_deadline_measured(c->measured, &ttl, &ttl_queue) != 0) {
		snprintf(err, errlen, "the watch needs measure_horizon's result with the "
		    "largest old TTL (summary.max_ttl_ms), and has none");
		return -1;
	}
	if (json_is_object(c->state) && json_object_get(c->state, "version") != NULL) {
		if (watch_state_load(w, c->state, err, errlen) != 0)
			return -1;
		if (ttl > w->max_ttl_ms) {
			w->max_ttl_ms = ttl;
			snprintf(w->max_ttl_queue, sizeof(w->max_ttl_queue), "%s",
			    ttl_queue ? ttl_queue : "");
		}
	} else {
		watch_state_init(w, c, t->now, ttl, ttl_queue);
		if (watch_deadline_moved(w, c->moved)) {
			/* The deadline only grows: begun again from the move's. */
			w->deadline_ms = 0;
			watch_deadline_update(w);
		}
	}
	(void)watch_deadline_moved(w, c->moved);
	*prev_deadline = w->deadline_ms;
	if (names(t, err, errlen) != 0)
		return -1;
	watch_stats_names(t);
	if (!watch_clock_tick(w, t->now, t->mono)) {
		watch_probe_rebase(&w->probes, w->last_tick_ms, t->now, t->mono);
		watch_restart_rebase(&w->nodes);
		watch_levels_rebase(&w->levels, t->now, t->mono);
	}
	if (w->ticks > 0 && c->restored_ms > w->last_tick_ms && tick_restored(t) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	w->ticks++;
	w->last_tick_ms = t->now;
	return 0;
}

/* The tick's looks, in the order they must run. Each part reads what the
 * ones before it read or moved this tick (named after each), so the order
 * is decided here and nowhere else:
 *
 *   0. the statistics marker (watch_stats_mark): before the old path's
 *      listing, which a later tick's will count it in;
 *   1. the probes (watch_probe_read): first of all, so that a probe's
 *      arrival is read closest to when it happened; acknowledges the last
 *      tick's (recorded by now) and declares the probe queue, whose
 *      T->probe_ready steps 8 to 10 read;
 *   2. the old path (watch_old_read): reads nothing of this tick's before
 *      it; counts publishes into the old path (moving the last entry and
 *      the largest TTL) and lists the vhost's exchanges for its pass
 *      schedule (T->exchanges) and, on a full pass, its queues
 *      (T->old.listing);
 *   3. the flag (watch_flag_read): after the old path, whose last entry it
 *      reads: read on again after reading off, it moves the last entry to
 *      now unless the old path's count already did;
 *   4. the last entry's monotonic age (watch_clock_entry), when step 2 or
 *      3 moved the last entry;
 *   5. the ladder (watch_ladder_read, and parking through it): after the
 *      old path, whose exchange listing (T->exchanges) gives the level
 *      exchanges' publishes without a second listing;
 *   6. the levels' pending dead-letters (watch_levels_read): from the old
 *      path's queue listing (T->old.listing) on a full pass, one GET per
 *      queue on a light one (T->old.full);
 *   7. the nodes (watch_restart_read): after the old path, whose queues'
 *      depths this tick (T->old.q) are the old-path messages a restart
 *      would expose;
 *   8. the ladder's re-verification (watch_verify_read): reads nothing of
 *      this tick's; before step 10, which reads its verdict;
 *   9. the probes due now (watch_probe_await, watch_probe_lost), when the
 *      probe queue is ready (step 1): after every other look, so that
 *      waiting for them does not delay those; lost reads when await's
 *      last read found the probe queue empty;
 *  10. the level probes and pending dead-letters (watch_levels_check):
 *      reads when the probe queue was last seen empty (step 9), the
 *      ladder's missing parking queue (5), the levels' dead-letters (6)
 *      and the ladder's verdict (8);
 *  11. the deadline (watch_deadline_update): last, from the last entry and
 *      largest TTL steps 2 and 3 moved (PREV_DEADLINE: before the tick).
 *
 * Returns 0 or -1 with ERR (the old path's local failures). */
static int
tick_look(struct tick *t, int64_t prev_deadline, char *err, size_t errlen)
{
	struct wstate *w = t->w;
	int64_t entry_before;

	watch_stats_mark(t);					/* 0 */
	watch_probe_read(t);					/* 1 */
	entry_before = w->last_old_entry_ms;
	if (watch_old_read(t, err, errlen) != 0)		/* 2 */
		return -1;
	watch_flag_read(t);					/* 3 */
	if (w->last_old_entry_ms != entry_before)		/* 4 */
		watch_clock_entry(&w->clock);
	watch_ladder_read(t);					/* 5 */
	watch_levels_read(t);					/* 6 */
	watch_restart_read(t);					/* 7 */
	watch_verify_read(t);					/* 8 */
	if (t->probe_ready) {					/* 9 */
		watch_probe_await(t);
		watch_probe_lost(t);
	}
	watch_levels_check(t);					/* 10 */
	watch_deadline_update(w);				/* 11 */
	if (w->deadline_ms != prev_deadline && !t->deadline_moved) {
		t->deadline_moved = true;
		snprintf(t->moved_why, sizeof(t->moved_why), "largest TTL now %lld ms",
		    (long long)w->max_ttl_ms);
	}
	return 0;
}

/* May it end? The deadline has passed (and the statistics have had
 * time to show every publish before the flip), nothing failed, every
 * broker node shows its statistics (so that a restart is not missed), the
 * old path is empty by exact counts, every queue read, and the statistics
 * are seen to count every publish up to the deadline and about now
 * (watch_stats_current, the last: what else it waits for says more). Sets *READY when
 * so, and returns the status to show (OPEN: the alerts open now). */
static const char *
tick_status(struct tick *t, int open, bool *ready)
{
	struct wstate *w = t->w;
	const char *status;

	*ready = false;
	if (t->failed)
		status = "waiting: the broker did not answer every question this tick";
	else if (t->flag_held)
		status = "waiting: the flag does not read on (see the flag alert)";
	else if (!watch_deadline_past(t))
		status = "waiting for the deadline";
	else if (watch_nodes_stats_lost(&w->nodes.last) +
	    watch_nodes_stats_lost(&w->nodes.target_last) > 0)
		/* A restart it cannot rule out yet would expose old-path
		 * messages (broker_restart): not over before it knows. */
		status = "waiting: a broker node shows no statistics (its management "
		    "agent or the node restarted; their return tells which, within "
		    "a minute)";
	else if (!t->old.full || watch_old_exact(t, true) != 0)
		status = "waiting: the broker did not answer every question this tick";
	else if (t->old.depth > 0) {
		status = "waiting for the old path to drain";
		if (t->now >= w->deadline_ms + (w->allowance_ms > OLD_STATS_LAG_MS ?
		    w->allowance_ms : OLD_STATS_LAG_MS))
			watch_alert(t, "old_not_drained", "%lld message%s still in %lld old "
			    "queue%s past the deadline: a TTL longer than measured, a "
			    "policy or a consumer holding them? (cutover old)",
			    (long long)t->old.depth, t->old.depth == 1 ? "" : "s",
			    (long long)t->old.nonempty, t->old.nonempty == 1 ? "" : "s");
	} else {
		/* Empty by exact reads of every old queue: what old_not_drained
		 * said is over. */
		watch_alert_over(t, "old_not_drained", "the old path is empty by "
		    "exact reads of every old queue");
		if (!watch_stats_current(t))
			/* Drained by exact reads, but a publish the statistics do
			 * not show yet may have passed through an old queue: they
			 * must count up to about now. */
			status = "waiting: the management statistics lag (they do not "
			    "count the watch's own recent publishes yet; see "
			    "statistics_lag_ms)";
		else {
			status = "watching";
			*ready = true;
		}
	}
	if (*ready && (open > 0 || t->na > 0))
		status = "waiting: an alert is open (acknowledge it once understood)";
	else if (*ready && (w->probes.nout > 0 || watch_levels_in_flight(&w->levels) > 0))
		status = "finishing: waiting for the probes in flight";
	return status;
}

/* What each part adds to the tick's sample row, in the row's order (the
 * probes' and levels' latenesses were added as they arrived, before). */
static int (*const samplers[])(struct tick *t) = {
	watch_old_samples, watch_ladder_samples, watch_levels_samples,
};

/* Adds each part's samples and writes them. Returns 0 or -1 with ERR. */
static int
tick_samples(struct tick *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof(samplers) / sizeof(samplers[0]); i++)
		if (samplers[i](t) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	return watch_write_samples(t, err, errlen);
}

/* Records the tick (samples, alerts) and ends the watch when READY and
 * nothing is open, in flight or newly alerted: *DONE then, and *STATUS
 * "done". *OPEN: the alerts open after. Returns 0 or -1 with ERR. */
static int
tick_record(struct tick *t, bool ready, int *open, bool *done,
    const char **status, char *err, size_t errlen)
{
	bool alerted = t->na > 0;

	if (tick_samples(t, err, errlen) != 0 ||
	    watch_write_alerts(t, err, errlen) != 0)
		return -1;
	if ((*open = watch_count_open(t, err, errlen)) < 0)
		return -1;
	if (ready && *open == 0 && t->w->probes.nout == 0 &&
	    watch_levels_in_flight(&t->w->levels) == 0 && !alerted) {
		if (watch_probe_remove(t) == 0 && watch_stats_remove(t) == 0) {
			*done = true;
			*status = "done";
		} else if (watch_write_alerts(t, err, errlen) != 0 ||
		    (*open = watch_count_open(t, err, errlen)) < 0)
			return -1;
	}
	return 0;
}

/* The step's result for RC: the state (when the watch has started), "ok",
 * and the error. */
static json_t *
tick_result(const struct tick *t, const struct wstate *w, int open,
    const char *status, bool done, int rc, const char *err)
{
	json_t *r;

	if (w->started_ms != 0)
		r = watch_state_json(t, w, open >= 0 ? open : 0, rc < 0 ? "failed" :
		    status, done);
	else
		r = json_object();
	if (r == NULL)
		r = json_object();
	json_object_set_new(r, "ok", json_boolean(rc >= 0));
	if (rc < 0)
		json_object_set_new(r, "error", json_string(err));
	return r;
}

int
step_watch_prepare(struct step_ctx *c, struct step_inputs *in, json_t **result,
    char *err, size_t errlen)
{
	c->flip_ms = step_input_ended(in, PLAN_STEP_FLIP);
	if (step_old_inputs(c, in, false, err, errlen) != 0) {
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	step_inputs_release(in);
	if (step_restored(c, err, errlen) != 0) {
		*result = json_pack("{s:b,s:s}", "ok", 0, "error", err);
		return -1;
	}
	return 0;
}

int
step_watch(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct wstate w;
	struct tick t;
	const char *status = "watching";
	int64_t prev_deadline;
	int open = 0, rc = -1;
	bool ready = false, done = false;

	*result = NULL;
	err[0] = '\0';
	memset(&t, 0, sizeof(t));
	memset(&w, 0, sizeof(w));
	if (tick_begin(&t, &w, c, &prev_deadline, err, errlen) != 0)
		goto done;
	if (tick_look(&t, prev_deadline, err, errlen) != 0)
		goto done;
	if ((open = watch_count_open(&t, err, errlen)) < 0)
		goto done;
	status = tick_status(&t, open, &ready);
	if (t.probe_ready && !(ready && open == 0 && t.na == 0)) {
		watch_probe_send(&t);
		watch_levels_send(&t, &w.probes.seq);
	}
	/* Every question of the tick answered: what broker_unreachable said
	 * is over (watch_write_alerts keeps it when this tick raised it). */
	if (!t.failed)
		watch_alert_over(&t, "broker_unreachable", "the broker answered every "
		    "question of a tick again");
	if (tick_record(&t, ready, &open, &done, &status, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	c->again = rc == 0 && !done;
	*result = tick_result(&t, &w, open, status, done, rc, err);
	/* An ended watch's rows are its last sample of the old queues,
	 * which remove_old reads; no next full pass reads counters. */
	if (done)
		watch_old_last_rows(&t, *result);
	else if (watch_old_rows(&t, *result) != 0) {
		/* The state stands; the last pass's rows stay, which its count
		 * (old.seen_n, this pass's) no longer matches: the next full
		 * pass is a first look, which moves the last entry to now. */
		snprintf(err, errlen, "keeping the old queues' counters: %s",
		    c->rows.err[0] != '\0' ? c->rows.err : "out of memory");
		step_rows_clear(&c->rows);
		c->rows_kept = true;
		json_object_set_new(*result, "entries", json_array());
		json_object_set_new(*result, "ok", json_false());
		json_object_set_new(*result, "error", json_string(err));
		c->again = false;
		rc = -1;
	}
	topology_free(&t.topo);
	old_measured_free(&t.own_mq);
	json_decref(t.old.held);
	json_decref(t.park_taken);
	old_listing_free(&t.old.listing);
	json_decref(t.exchanges);
	if (t.old_exchanges != t.exchanges)
		json_decref(t.old_exchanges);
	json_decref(t.old.joined);
	free(t.old.q);
	free(t.s);
	return rc;
}
