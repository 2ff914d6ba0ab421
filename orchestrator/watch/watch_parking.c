/* watch_parking: the watch's walk through the parking queue, which takes
 * cutover's own messages out (a killed canary's, probes parked while the
 * probe queue was missing) and raises parking for the others, and
 * parking's part of the state (struct wparking, persisted as "parking").
 * Internal to the watch (watch_int.h). */
#include "watch_int.h"

/* Why an alert parking closes (or says its cause is gone): only cutover's
 * own messages, or none, are in the parking queue now. */
#define PARKING_GONE "the parking queue holds none of others' messages now: they " \
	"were moved or removed"

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
		w->park.probe++;
		watch_probe_parked(&w->probes, &pi, watch_levels_parked(&w->levels,
		    &pi));
	} else
		w->park.canary++;
	if (t->park_taken == NULL)
		t->park_taken = json_array();
	if (json_array_size(t->park_taken) < PARK_LISTED)
		json_array_append_new(t->park_taken, json_pack("{s:s,s:I,s:s}",
		    "purpose", pi.purpose, "seq", (json_int_t)pi.seq, "message_id",
		    d->message_id ? d->message_id : ""));
	return PARKING_TAKE;
}

/* The parking queue holds DEPTH messages, as watch_ladder_read just read
 * it: takes cutover's own out (a walk when the depth is not what the last
 * walk left), and raises parking for the others, which stay where they
 * are. Returns the depth parking holds now (what a walk left, else
 * DEPTH). */
int64_t
watch_parking_read(struct tick *t, int64_t depth)
{
	struct wstate *w = t->w;
	struct parking_walk pw;
	int64_t before = w->park.canary + w->park.probe, left;
	char why[768], extra[300] = "";

	if (depth == 0) {
		w->park.known = w->park.foreign = w->park.unread = 0;
		w->park.requeues = 0;
		watch_alert_over(t, "parking", PARKING_GONE);
		return depth;
	}
	if (depth != w->park.known && w->park.requeues < PARK_REQUEUES_MAX) {
		w->park.walks++;
		if (parking_walk(t->c->amqp, t->parking, PARK_WALK_READ, pick_own, t,
		    &pw, why, sizeof(why)) != 0) {
			watch_unreachable(t, "looking through the parking queue", why);
			return depth;
		}
		w->park.foreign = (int64_t)pw.left;
		w->park.unread = pw.end || pw.behind < 0 ? 0 : pw.behind;
		w->park.known = w->park.foreign + w->park.unread;
		w->park.requeues = pw.left > 0 ? w->park.requeues + 1 : 0;
		depth = w->park.known;
	} else if (depth != w->park.known) {
		/* Not looked through: all of it may be foreign. */
		w->park.foreign = 0;
		w->park.unread = depth;
	}
	left = w->park.foreign + w->park.unread;
	if (left == 0) {
		watch_alert_over(t, "parking", PARKING_GONE);
		return depth;
	}
	if (w->park.canary + w->park.probe > before)
		sentences_add(extra, sizeof(extra), "%lld of cutover's own messages taken "
		    "out of it this tick", (long long)(w->park.canary + w->park.probe -
		    before));
	if (w->park.unread > 0)
		sentences_add(extra, sizeof(extra), "%lld not looked through%s", (long long)
		    w->park.unread, w->park.requeues >= PARK_REQUEUES_MAX ? ": the "
		    "watch gave the foreign ones back often enough (a quorum queue "
		    "drops a message past its delivery-limit) and looks again once "
		    "parking is empty; remove them by hand" : "");
	watch_alert(t, "parking", "%lld message%s in the parking queue '%s' %s not "
	    "cutover's own: a delayed message no destination takes (its routing "
	    "key names the destination); its expected depth is zero%s%s%s",
	    (long long)left, left == 1 ? "" : "s", t->parking, left == 1 ? "is" :
	    "are", extra[0] ? " (" : "", extra, extra[0] ? ")" : "");
	return depth;
}

/* The integer members of the persisted "parking" and its "own_taken". */
static const struct jfield parking_fields[] = {
	JFIELD(struct wparking, foreign, "foreign", 0),
	JFIELD(struct wparking, unread, "unread", 0),
	JFIELD(struct wparking, known, "known_depth", 0),
	JFIELD(struct wparking, requeues, "requeues", 0),
	JFIELD(struct wparking, walks, "walks", 0),
};
static const struct jfield own_taken_fields[] = {
	JFIELD(struct wparking, canary, "canary", 0),
	JFIELD(struct wparking, probe, "probe", 0),
};

/* The persisted "parking" member: {"own_taken": {"canary", "probe"},
 * "foreign", "unread", "known_depth", "requeues", "walks"}, a new
 * reference. */
json_t *
watch_parking_json(const struct wparking *k)
{
	json_t *own = json_object(), *j = json_pack("{s:o}", "own_taken", own);

	if (j == NULL)
		return NULL;
	jint_fields_put(own, k, own_taken_fields, JFIELDS_N(own_taken_fields));
	jint_fields_put(j, k, parking_fields, JFIELDS_N(parking_fields));
	return j;
}

/* Reads the persisted "parking" member J into K. */
void
watch_parking_load(struct wparking *k, const json_t *j)
{
	jint_fields(k, j, parking_fields, JFIELDS_N(parking_fields));
	jint_fields(k, json_object_get(j, "own_taken"), own_taken_fields,
	    JFIELDS_N(own_taken_fields));
}
