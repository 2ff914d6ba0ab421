/* watch_ladder: the watch's look at the ladder — depth per level,
 * publishes into the level exchanges, and the parking queue, from which
 * cutover's own messages are taken out. Internal to the watch
 * (watch_int.h). */
#include "watch_int.h"

/* ---- the ladder ---- */

/* What a walk through parking takes: this plan's own canary and probe
 * messages. A parked probe still in flight is no longer awaited (it
 * came, to parking, because the probe queue was missing). */
static enum parking_pick
pick_own(const struct broker_delivery *d, void *arg)
{
	struct tick *t = arg;
	struct wstate *w = t->w;
	struct publish_info pi;

	if (!parking_own(d, t->p->name, &pi))
		return PARKING_LEAVE;
	if (strcmp(pi.purpose, PUBLISH_PROBE) == 0) {
		w->park_probe++;
		if (watch_levels_parked(w, &pi))
			w->probe_parked++;
		for (size_t i = 0; i < w->nout; i++)
			if (w->out[i].seq == pi.seq &&
			    w->out[i].not_before_ms == pi.not_before_ms) {
				w->out[i] = w->out[--w->nout];
				w->probe_parked++;
				break;
			}
	} else
		w->park_canary++;
	if (t->park_taken == NULL)
		t->park_taken = json_array();
	if (json_array_size(t->park_taken) < PARK_LISTED)
		json_array_append_new(t->park_taken, json_pack("{s:s,s:I,s:s}",
		    "purpose", pi.purpose, "seq", (json_int_t)pi.seq, "message_id",
		    d->message_id ? d->message_id : ""));
	return PARKING_TAKE;
}

/* The parking queue holds DEPTH messages: takes cutover's own out (a walk
 * when the depth is not what the last walk left), and raises parking for
 * the others, which stay where they are. */
static void
parking_sweep(struct tick *t, int64_t depth)
{
	struct wstate *w = t->w;
	struct parking_walk pw;
	int64_t before = w->park_canary + w->park_probe, left;
	char why[768], extra[300] = "";

	if (depth == 0) {
		w->park_known = w->park_foreign = w->park_unread = 0;
		w->park_requeues = 0;
		return;
	}
	if (depth != w->park_known && w->park_requeues < PARK_REQUEUES_MAX) {
		w->park_walks++;
		if (parking_walk(t->c->amqp, t->parking, PARK_WALK_READ, pick_own, t,
		    &pw, why, sizeof(why)) != 0) {
			watch_unreachable(t, "looking through the parking queue", why);
			return;
		}
		w->park_foreign = (int64_t)pw.left;
		w->park_unread = pw.end || pw.behind < 0 ? 0 : pw.behind;
		w->park_known = w->park_foreign + w->park_unread;
		w->park_requeues = pw.left > 0 ? w->park_requeues + 1 : 0;
		t->parking_depth = w->park_known;
	} else if (depth != w->park_known) {
		/* Not looked through: all of it may be foreign. */
		w->park_foreign = 0;
		w->park_unread = depth;
	}
	left = w->park_foreign + w->park_unread;
	if (left == 0)
		return;
	if (w->park_canary + w->park_probe > before)
		watch_appendf(extra, sizeof(extra), "%lld of cutover's own messages taken "
		    "out of it this tick", (long long)(w->park_canary + w->park_probe -
		    before));
	if (w->park_unread > 0)
		watch_appendf(extra, sizeof(extra), "%lld not looked through%s", (long long)
		    w->park_unread, w->park_requeues >= PARK_REQUEUES_MAX ? ": the "
		    "watch gave the foreign ones back often enough (a quorum queue "
		    "drops a message past its delivery-limit) and looks again once "
		    "parking is empty; remove them by hand" : "");
	watch_alert(t, "parking", "%lld message%s in the parking queue '%s' %s not "
	    "cutover's own: a delayed message no destination takes (its routing "
	    "key names the destination); its expected depth is zero%s%s%s",
	    (long long)left, left == 1 ? "" : "s", t->parking, left == 1 ? "is" :
	    "are", extra[0] ? " (" : "", extra, extra[0] ? ")" : "");
}

/* Lists the vhost's exchanges with their publish_in into T->exchanges,
 * once a tick (the ladder's bands and the old path's light pass read it).
 * Returns 0, or -1 with WHY. */
int
watch_exchanges(struct tick *t, char *why, size_t whylen)
{
	char path[900];

	if (t->exchanges != NULL)
		return 0;
	snprintf(path, sizeof(path), "/api/exchanges/%s?columns=name,"
	    "message_stats.publish_in", t->vhost);
	if (mgmt_request(t->c->mgmt, "GET", path, NULL, &t->exchanges, NULL, why,
	    whylen) != 0 || !json_is_array(t->exchanges)) {
		if (t->exchanges != NULL)
			snprintf(why, whylen, "the answer is not a list");
		json_decref(t->exchanges);
		t->exchanges = NULL;
		return -1;
	}
	return 0;
}

/* Depth of each level queue and of the parking queue (passive declares,
 * exact), and cumulative publishes into the level exchanges (one
 * exchange listing). Raises parking and ladder_drift (a level queue
 * gone). */
void
watch_ladder(struct tick *t)
{
	const struct ladder *l = &t->p->ladder;
	struct broker_queue_info qi;
	char name[LADDER_NAME_MAX], path[900], why[768];
	char xs[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	json_t *ans = NULL, *e;
	int64_t total = 0;
	size_t i;
	int r;

	t->depth_seen = true;
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		r = broker_queue_inspect(t->c->amqp, name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			t->depth[k] = 0;
			watch_alert(t, "ladder_drift", "level %d's queue '%s' does not exist: "
			    "messages whose bit %d is 1 have nowhere to wait", k, name, k);
			continue;
		}
		if (r != 0) {
			snprintf(path, sizeof(path), "reading level queue '%s'", name);
			watch_unreachable(t, path, why);
			t->depth_seen = false;
			break;
		}
		t->depth[k] = qi.messages;
	}
	r = broker_queue_inspect(t->c->amqp, t->parking, &qi, why, sizeof(why));
	if (r == BROKER_NOT_FOUND) {
		t->parking_missing = true;
		watch_alert(t, "ladder_drift", "the parking queue '%s' does not exist: %s",
		    t->parking, t->p->queue_type == PLAN_QUEUE_QUORUM ?
		    "a delayed message no destination takes is held in the level it "
		    "expires from (quorum dead-lettering retries until a queue takes "
		    "it), and the messages behind it there wait" :
		    "a delayed message no destination takes is dropped when it expires "
		    "(classic dead-lettering does not retry)");
	}
	else if (r != 0) {
		snprintf(path, sizeof(path), "reading the parking queue '%s'", t->parking);
		watch_unreachable(t, path, why);
	} else {
		t->parking_seen = true;
		t->parking_depth = qi.messages;
		parking_sweep(t, qi.messages);
	}

	for (int k = 0; k < l->levels; k++) {
		ladder_level_exchange(l, k, xs[k], sizeof(xs[k]));
		t->band[k] = -1;	/* until the listing names it */
	}
	if (watch_exchanges(t, why, sizeof(why)) != 0) {
		watch_unreachable(t, "listing the ladder's exchanges", why);
		return;
	}
	ans = t->exchanges;
	json_array_foreach(ans, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		for (int k = 0; n != NULL && k < l->levels; k++)
			if (strcmp(n, xs[k]) == 0) {
				t->band[k] = jint(json_object_get(e, "message_stats"),
				    "publish_in", 0);
				total += t->band[k];
			}
	}
	t->band_seen = true;
	t->w->ladder_publishes = total;
}
