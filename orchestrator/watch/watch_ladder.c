/* watch_ladder: the watch's look at the ladder — depth per level,
 * publishes into the level exchanges, and the parking queue's depth
 * (handed to watch_parking.c, which takes cutover's own messages out) —
 * and the ladder's part of the state (struct wladder, persisted as
 * "ladder"). Internal to the watch (watch_int.h). */
#include "watch_int.h"

/* ---- the ladder ---- */

/* A new watch's: no publishes seen yet. */
void
watch_ladder_init(struct wladder *l)
{
	l->publishes = -1;
}

/* Lists VHOST's exchanges with their publish_in through M into *OUT,
 * unless listed already this tick. Returns 0, or -1 with WHY. */
static int
list_exchanges(struct mgmt *m, const char *vhost, json_t **out, char *why,
    size_t whylen)
{
	char path[900];

	if (*out != NULL)
		return 0;
	snprintf(path, sizeof(path), "/api/exchanges/%s?columns=name,"
	    "message_stats.publish_in", vhost);
	if (mgmt_request(m, "GET", path, NULL, out, NULL, why, whylen) != 0 ||
	    !json_is_array(*out)) {
		if (*out != NULL)
			snprintf(why, whylen, "the answer is not a list");
		json_decref(*out);
		*out = NULL;
		return -1;
	}
	return 0;
}

/* Lists the ladder's vhost's exchanges with their publish_in into
 * T->exchanges, once a tick (the ladder's bands read it). Returns 0, or
 * -1 with WHY. */
int
watch_ladder_exchanges(struct tick *t, char *why, size_t whylen)
{
	return list_exchanges(t->c->mgmt, t->vhost, &t->exchanges, why, whylen);
}

/* The same for the old path's vhost into T->old_exchanges (the old
 * path's pass schedule reads it): one listing for both when they share a
 * broker. */
int
watch_old_exchanges(struct tick *t, char *why, size_t whylen)
{
	if (!t->p->has_target) {
		if (watch_ladder_exchanges(t, why, whylen) != 0)
			return -1;
		t->old_exchanges = t->exchanges;
		return 0;
	}
	return list_exchanges(t->c->old_mgmt, t->old_vhost, &t->old_exchanges, why,
	    whylen);
}

/* Depth of each level queue and of the parking queue (passive declares,
 * exact), and cumulative publishes into the level exchanges (one
 * exchange listing). Raises parking and ladder_drift (a level queue
 * gone). */
void
watch_ladder_read(struct tick *t)
{
	const struct ladder *l = &t->p->ladder;
	struct broker_queue_info qi;
	char name[LADDER_NAME_MAX], path[900], why[768];
	char xs[LADDER_MAX_LEVELS][LADDER_NAME_MAX];
	json_t *ans = NULL, *e;
	int64_t total = 0;
	size_t i;
	int r;

	t->lad.depth_seen = true;
	for (int k = 0; k < l->levels; k++) {
		ladder_level_queue(l, k, name, sizeof(name));
		r = broker_queue_inspect(t->c->amqp, name, &qi, why, sizeof(why));
		if (r == BROKER_NOT_FOUND) {
			t->lad.depth[k] = 0;
			watch_alert(t, "ladder_drift", "level %d's queue '%s' does not exist: "
			    "messages whose bit %d is 1 have nowhere to wait", k, name, k);
			continue;
		}
		if (r != 0) {
			snprintf(path, sizeof(path), "reading level queue '%s'", name);
			watch_unreachable(t, path, why);
			t->lad.depth_seen = false;
			break;
		}
		t->lad.depth[k] = qi.messages;
	}
	r = broker_queue_inspect(t->c->amqp, t->parking, &qi, why, sizeof(why));
	if (r == BROKER_NOT_FOUND) {
		t->lad.parking_missing = true;
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
		t->lad.parking_seen = true;
		t->lad.parking_depth = watch_parking_read(t, qi.messages);
	}

	for (int k = 0; k < l->levels; k++) {
		ladder_level_exchange(l, k, xs[k], sizeof(xs[k]));
		t->lad.band[k] = -1;	/* until the listing names it */
	}
	if (watch_ladder_exchanges(t, why, sizeof(why)) != 0) {
		watch_unreachable(t, "listing the ladder's exchanges", why);
		return;
	}
	ans = t->exchanges;
	json_array_foreach(ans, i, e) {
		const char *n = json_string_value(json_object_get(e, "name"));

		for (int k = 0; n != NULL && k < l->levels; k++)
			if (strcmp(n, xs[k]) == 0) {
				t->lad.band[k] = jint(json_object_get(e, "message_stats"),
				    "publish_in", 0);
				total += t->lad.band[k];
			}
	}
	t->lad.band_seen = true;
	t->w->ladder.publishes = total;
}

/* The ladder's samples this tick: each level's depth (ladder.depth), the
 * parking queue's (parking.depth) and the publishes into the level
 * exchanges (ladder.publishes). Returns 0, or -1 when out of memory. */
int
watch_ladder_samples(struct tick *t)
{
	char label[8];

	for (int k = 0; t->lad.depth_seen && k < t->p->ladder.levels; k++) {
		snprintf(label, sizeof(label), "%d", k);
		if (watch_sample(t, t->now, "ladder.depth", label, (double)t->lad.depth[k]))
			return -1;
	}
	if (t->lad.parking_seen && watch_sample(t, t->now, "parking.depth", "",
	    (double)t->lad.parking_depth))
		return -1;
	if (t->w->ladder.publishes >= 0 && watch_sample(t, t->now, "ladder.publishes", "",
	    (double)t->w->ladder.publishes))
		return -1;
	return 0;
}

/* The persisted "ladder" member: {"publishes"} (null: not yet), a new
 * reference. */
json_t *
watch_ladder_json(const struct wladder *l)
{
	return json_pack("{s:o}", "publishes", int_or_null(l->publishes,
	    l->publishes >= 0));
}

/* Reads the persisted "ladder" member J into L. */
void
watch_ladder_load(struct wladder *l, const json_t *j)
{
	l->publishes = jint(j, "publishes", -1);
}
