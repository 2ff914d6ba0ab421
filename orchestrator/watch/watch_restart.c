/* watch_restart: broker restarts seen by the watch (a node of the old
 * path's broker or, with a target, of the target restarted; a level
 * queue's new leader), and the nodes' part of the state (struct wnodes:
 * the last look at each broker's nodes and the level queues' leaders, the
 * old-path messages a restart would expose). Internal to the watch
 * (watch_int.h). */
#include "watch_int.h"

/* ---- broker restarts ---- */

/* The old-path messages exposed to at-most-once dead-lettering now: the
 * depth of the old queues measure_horizon found classic, or did not
 * measure (their type is not known). -1 when the old path was not seen
 * this tick. */
static int64_t
old_at_most_once(const struct tick *t)
{
	const struct old_measured_queue *hit;
	int64_t total = 0;

	if (!t->old.seen)
		return -1;
	for (size_t k = 0; k < t->old.nq; k++) {
		int64_t d = t->old.q[k].exact >= 0 ? t->old.q[k].exact : t->old.q[k].listed;

		if (d <= 0)
			continue;
		hit = old_measured_find(t->mq, t->old.q[k].name);
		if (hit == NULL || hit->type == NULL || strcmp(hit->type, "classic") == 0)
			total += d;
	}
	return total;
}

/* Reads where each level queue runs (every probe_every, and whenever a
 * node changed): one without a leader or an online member is down
 * (ladder_drift, by name: a quorum queue can stay so after a node
 * restart while the API says "live"); a leader that moved since the last
 * look is a change, said in WHAT. Returns the number of changes. */
static int
watch_places(struct tick *t, char *what, size_t whatlen)
{
	const struct ladder *l = &t->p->ladder;
	struct wstate *w = t->w;
	struct mgmt_queue_place_list pl;
	const struct mgmt_queue_place *q;
	char name[LADDER_NAME_MAX], why[512], names[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	const char *levels[LADDER_MAX_LEVELS];
	int changes = 0;

	w->nodes.places_next_ms = t->mono + (t->p->watch.probe_every_ms >
	    t->p->watch.interval_ms ? t->p->watch.probe_every_ms :
	    t->p->watch.interval_ms);
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, names[k], sizeof(names[k]));
		levels[k] = names[k];
	}
	/* The level queues one by one: a listing would walk every old queue. */
	if (mgmt_list_queue_places_of(t->c->mgmt, levels, (size_t)l->levels, &pl, why,
	    sizeof(why)) != 0) {
		watch_unreachable(t, "reading where the level queues run", why);
		return 0;
	}
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		if ((q = mgmt_queue_place_find(&pl, name)) == NULL)
			continue;	/* watch_ladder_read says it is missing */
		if (q->leader == NULL || q->online == 0) {
			watch_alert(t, "ladder_drift", "level %d's queue '%s' is down: no "
			    "leader, %zu of %zu members online (a quorum queue can stay "
			    "so after a node restart although the API says it is live; "
			    "rabbitmqctl list_queues name state): messages whose bit %d "
			    "is 1 cannot wait there", k, name, q->online, q->members, k);
			continue;
		}
		if (w->nodes.have_leaders && w->nodes.leaders[k][0] != '\0' &&
		    strcmp(w->nodes.leaders[k], q->leader) != 0) {
			sentences_add(what, whatlen, "level queue '%s' has a new leader "
			    "'%s' (was '%s')", name, q->leader, w->nodes.leaders[k]);
			changes++;
		}
		snprintf(w->nodes.leaders[k], sizeof(w->nodes.leaders[k]), "%s", q->leader);
	}
	w->nodes.have_leaders = true;
	mgmt_queue_place_list_free(&pl);
	return changes;
}

/* A cluster node that the management API lists with running: false
 * raises broker_node_down, naming it (and, with WHICH, the broker: the
 * plan has a target), at every tick while it stays so (an
 * acknowledgement does not outlast the condition): the watch goes on
 * through the nodes that answer, but queues whose home (classic) or
 * members (quorum) are on that node are out of reach or under-replicated,
 * so the old path cannot be shown drained and the watch cannot end. */
static void
watch_nodes_down(struct tick *t, const struct watch_nodes *n, const char *which)
{
	char names[ALERT_MSG_MAX / 2] = "";
	size_t down = 0;

	for (size_t i = 0; i < n->n; i++)
		if (!n->v[i].running) {
			sentences_add(names, sizeof(names), "'%s'", n->v[i].name);
			down++;
		}
	if (down == 0)
		return;
	watch_alert(t, "broker_node_down", "%s%sbroker node%s %s of %zu %s down (GET "
	    "/api/nodes says running: false); the watch goes on through the "
	    "nodes that answer, and waits until %s running again: queues whose "
	    "home or members are on %s are out of reach or under-replicated",
	    which != NULL ? which : "", which != NULL ? ": " : "",
	    down == 1 ? "" : "s", names, n->n, down == 1 ? "is" : "are",
	    down == 1 ? "it is" : "they are", down == 1 ? "it" : "them");
}

/* Reads the nodes of broker M (WHICH names it when the plan has two
 * brokers, else NULL), compares them with *LAST when *HAVE, and keeps
 * them there: each change a sentence in WHAT, a node whose statistics
 * came back without a restart named in T->agent_back. Raises
 * broker_node_down for a node that is not running. Returns how many
 * changes there were. */
static int
look_nodes(struct tick *t, struct mgmt *m, struct watch_nodes *last, bool *have,
    const char *which, char *what, size_t whatlen)
{
	struct watch_nodes now;
	char why[512], doing[80];
	int changes = 0;

	if (which != NULL)
		snprintf(doing, sizeof(doing), "reading the nodes of %s", which);
	else
		snprintf(doing, sizeof(doing), "reading the broker's nodes");
	if (watch_nodes_read(m, &now, why, sizeof(why)) != 0) {
		watch_unreachable(t, doing, why);
		return 0;
	}
	now.at_ms = t->now;
	if (*have)
		changes = watch_nodes_compare(last, &now, what, whatlen);
	for (size_t i = 0; i < now.n; i++)
		if (now.v[i].agent_restarted)
			sentences_add(t->agent_back, sizeof(t->agent_back), "'%s'",
			    now.v[i].name);
	*last = now;
	*have = true;
	watch_nodes_down(t, last, which);
	return changes;
}

#define OLD_BROKER	"the old path's broker (broker:)"
#define TARGET_BROKER	"the target broker (target:)"

/* Looks at the brokers' nodes (look_nodes: the old path's and, with a
 * target, the target's) and where the level queues run (watch_places): a
 * node that restarted, is down, joined or left, or a level queue's new
 * leader raises broker_restart. On the old path's broker it says how many
 * old-path messages were in classic old queues at the last sample before
 * it, all exposed to at-most-once dead-lettering; on the target, that the
 * ladder's messages on it were (a classic ladder's, at most once). With a
 * target, the alert names the broker of each change. Then remembers this
 * tick's nodes and old-path figure for the next. */
void
watch_restart_read(struct tick *t)
{
	struct wnodes *w = &t->w->nodes;
	bool two = t->p->has_target;
	char what[ALERT_MSG_MAX] = "", twhat[ALERT_MSG_MAX] = "", msg[ALERT_MSG_MAX] = "";
	char tb[40];
	int64_t amo = old_at_most_once(t);
	int changes, tchanges = 0;

	changes = look_nodes(t, t->c->old_mgmt, &w->last, &w->have_last,
	    two ? OLD_BROKER : NULL, what, sizeof(what));
	if (two)
		tchanges = look_nodes(t, t->c->mgmt, &w->target_last, &w->have_target_last,
		    TARGET_BROKER, twhat, sizeof(twhat));
	/* The level queues are on the ladder's broker: the target's, if any. */
	if (changes + tchanges > 0 || t->mono >= w->places_next_ms) {
		if (two)
			tchanges += watch_places(t, twhat, sizeof(twhat));
		else
			changes += watch_places(t, what, sizeof(what));
	}
	if (changes > 0 && w->amo_depth >= 0)
		sentences_add(msg, sizeof(msg), "%s%s%s: %lld old-path message%s %s in "
		    "classic old queues at the last sample before it (%s), exposed to "
		    "at-most-once dead-lettering: any that expired while the node was "
		    "down or recovering may be lost, although the old path still "
		    "drains to 0", two ? "on " : "", two ? OLD_BROKER ", " : "", what,
		    (long long)w->amo_depth, w->amo_depth == 1 ? "" : "s",
		    w->amo_depth == 1 ? "was" : "were", old_time_format(w->amo_at_ms, tb,
		    sizeof(tb)));
	else if (changes > 0)
		sentences_add(msg, sizeof(msg), "%s%s%s: the old path was not seen before "
		    "it, so how many of its messages were exposed to at-most-once "
		    "dead-lettering is not known", two ? "on " : "",
		    two ? OLD_BROKER ", " : "", what);
	if (tchanges > 0)
		sentences_add(msg, sizeof(msg), "on " TARGET_BROKER ", where the ladder "
		    "is, %s: what waited in classic level queues was exposed to "
		    "at-most-once dead-lettering (quorum ones dead-letter at least "
		    "once)", twhat);
	if (msg[0] != '\0')
		watch_alert(t, "broker_restart", "%s; compare what the destinations "
		    "received, then acknowledge", msg);
	/* While a node's statistics are gone, whether it restarted is not
	 * known yet: the figure from before the gap is the one a restart
	 * exposed, so it is kept. */
	if (amo >= 0 && watch_nodes_stats_lost(&w->last) == 0) {
		w->amo_depth = amo;
		w->amo_at_ms = t->now;
	}
}

/* After a reboot (watch_clock_tick): the next look at where the level
 * queues run, a monotonic time, is due at once. */
void
watch_restart_rebase(struct wnodes *n)
{
	n->places_next_ms = 0;
}

/* Adds the nodes' part N to the persisted state J: "nodes" (null before
 * the first look), "target_nodes" (the target's, once looked at),
 * "old_at_most_once" {"depth" (null: not seen), "at_ms"},
 * "level_leaders" (once looked at) and "places_next_mono_ms". */
void
watch_restart_json(json_t *j, const struct wnodes *n)
{
	json_t *leaders;

	json_object_set_new(j, "nodes", n->have_last ? watch_nodes_json(&n->last) :
	    json_null());
	if (n->have_target_last)
		json_object_set_new(j, "target_nodes", watch_nodes_json(&n->target_last));
	json_object_set_new(j, "old_at_most_once", json_pack("{s:o,s:I}",
	    "depth", int_or_null(n->amo_depth, n->amo_depth >= 0),
	    "at_ms", (json_int_t)n->amo_at_ms));
	if (n->have_leaders && (leaders = json_array()) != NULL) {
		int last = LADDER_MAX_LEVELS - 1;

		while (last >= 0 && n->leaders[last][0] == '\0')
			last--;
		for (int k = 0; k <= last; k++)
			json_array_append_new(leaders, json_string(n->leaders[k]));
		json_object_set_new(j, "level_leaders", leaders);
	}
	json_object_set_new(j, "places_next_mono_ms", json_integer(n->places_next_ms));
}

/* Reads the nodes' part from the persisted state J (its members above; a
 * state without them reads as a new watch starts them). */
void
watch_restart_load(struct wnodes *n, const json_t *j)
{
	const json_t *amo = json_object_get(j, "old_at_most_once"), *o;
	size_t i;

	n->have_last = json_is_array(json_object_get(j, "nodes"));
	watch_nodes_parse(json_object_get(j, "nodes"), &n->last);
	n->have_target_last = json_is_array(json_object_get(j, "target_nodes"));
	watch_nodes_parse(json_object_get(j, "target_nodes"), &n->target_last);
	n->amo_depth = jint(amo, "depth", -1);
	n->amo_at_ms = jint(amo, "at_ms", 0);
	n->have_leaders = json_is_array(json_object_get(j, "level_leaders"));
	json_array_foreach(json_object_get(j, "level_leaders"), i, o)
		if (i < LADDER_MAX_LEVELS && json_is_string(o))
			snprintf(n->leaders[i], sizeof(n->leaders[i]), "%s",
			    json_string_value(o));
	n->places_next_ms = jint(j, "places_next_mono_ms", 0);
}
