/* watch_verify: the watch re-verifies the whole ladder every probe_every
 * (step_verify_ladder), and its part of the state (struct wverify,
 * persisted as "verify"). Internal to the watch (watch_int.h). */
#include "watch_int.h"

/* A new watch's: not run yet. */
void
watch_verify_init(struct wverify *v)
{
	v->ok = -1;
}

/* Re-verifies the whole ladder every probe_every (and at the first tick).
 * Raises ladder_drift naming what differs. */
void
watch_verify_read(struct tick *t)
{
	struct wstate *w = t->w;
	const json_t *o, *counts;
	json_t *r = NULL;
	char why[1024], list[ALERT_MSG_MAX] = "";
	int64_t missing, drift;
	size_t i, n = 0;

	if (w->verify.next_ms != 0 && t->now < w->verify.next_ms)
		return;
	w->verify.next_ms = t->now + (t->p->watch.probe_every_ms > t->p->watch.interval_ms ?
	    t->p->watch.probe_every_ms : t->p->watch.interval_ms);
	if (step_verify_ladder(t->c, &r, why, sizeof(why)) == 0) {
		w->verify.ok = 1;
		w->verify.last_ms = t->now;
		json_decref(r);
		return;
	}
	counts = json_object_get(r, "counts");
	missing = jint(counts, "missing", 0);
	drift = jint(counts, "drift", 0);
	if (missing + drift == 0) {
		watch_unreachable(t, "verifying the ladder", why);
		json_decref(r);
		return;
	}
	w->verify.ok = 0;
	w->verify.last_ms = t->now;
	json_array_foreach(json_object_get(r, "objects"), i, o) {
		const char *st = json_string_value(json_object_get(o, "status"));

		if (st == NULL || strcmp(st, "ok") == 0)
			continue;
		if (n++ < NAMES_LISTED)
			sentences_add(list, sizeof(list), "%s %s: %s (%s)",
			    json_string_value(json_object_get(o, "kind")),
			    json_string_value(json_object_get(o, "name")), st,
			    json_string_value(json_object_get(o, "detail")));
	}
	watch_alert(t, "ladder_drift", "the ladder no longer verifies (%lld missing, %lld "
	    "drifted): %s%s", (long long)missing, (long long)drift, list,
	    n > NAMES_LISTED ? "; and more (cutover ladder verify)" : "");
	json_decref(r);
}

/* The persisted "verify" member: {"next_ms", "last_ms", "ok" (null: not
 * run yet)}, a new reference. */
json_t *
watch_verify_json(const struct wverify *v)
{
	return json_pack("{s:I,s:I,s:o}", "next_ms", (json_int_t)v->next_ms,
	    "last_ms", (json_int_t)v->last_ms,
	    "ok", v->ok < 0 ? json_null() : json_boolean(v->ok));
}

/* Reads the persisted "verify" member J into V. */
void
watch_verify_load(struct wverify *v, const json_t *j)
{
	const json_t *ok = json_object_get(j, "ok");

	v->next_ms = jint(j, "next_ms", 0);
	v->last_ms = jint(j, "last_ms", 0);
	v->ok = json_is_boolean(ok) ? json_is_true(ok) : -1;
}
