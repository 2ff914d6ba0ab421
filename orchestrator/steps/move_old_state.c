/* move_old_state: move_old's state across runs and what it leaves: the
 * totals, the horizon the old path is left with, what a kill in the middle
 * of a batch left, the first sightings' index, the old path's publish
 * counters as the last pass begins, the step's state itself, resumed
 * or new (its entries read apart into the run's table:
 * move_old_entries.c), and the first sightings themselves. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "arrival_stamp.h"
#include "clock.h"
#include "errbuf.h"
#include "move_old_int.h"
#include "old_path.h"
#include "store.h"

int64_t
move_old__jint(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

void
move_old__set_int(json_t *o, const char *key, int64_t v)
{
	json_object_set_new(o, key, json_integer(v));
}

/* The horizon that is left once the last pass is done, and what the old
 * path alone would have needed: into STATE. */
void
move_old__horizon(struct step_ctx *c, json_t *state, const struct move_entries *es,
    int64_t last_pass_ms)
{
	int64_t h = last_pass_ms, old, allow = c->plan->watch.allowance_ms;

	for (size_t i = 0; i < es->n; i++)
		if (es->v[i].left_until_ms != INT64_MIN && es->v[i].left_until_ms > h)
			h = es->v[i].left_until_ms;
	h += allow;
	move_old__set_int(state, "horizon_ms", h);
	old = old_horizon_ms(c->measured, c->flip_ms > 0 ? c->flip_ms : last_pass_ms, allow);
	json_object_set_new(state, "old_horizon_ms", old > 0 ? json_integer(old) :
	    json_null());
	json_object_set_new(state, "saved_ms", old > h ? json_integer(old - h) :
	    json_integer(0));
}

/* Records in the plan's history what the move did and how much sooner the
 * old path can be left ("move_old.done"). */
void
move_old__record_done(struct step_ctx *c, const json_t *state)
{
	json_t *d = json_pack("{s:O,s:O,s:O,s:O}", "counts", json_object_get(state,
	    "counts"), "horizon_ms", json_object_get(state, "horizon_ms"),
	    "old_horizon_ms", json_object_get(state, "old_horizon_ms"), "saved_ms",
	    json_object_get(state, "saved_ms"));
	char why[256], *text = d != NULL ? json_dumps(d, JSON_COMPACT) : NULL;

	if (c->store != NULL && text != NULL)
		(void)store_append_event(c->store, c->plan_id, clock_now_ms(), "engine",
		    "move_old.done", text, NULL, why, sizeof(why));
	free(text);
	json_decref(d);
}

void
move_old__count(struct move_counts *t, const json_t *entry, int sign)
{
	t->moved += sign * move_old__jint(entry, "moved");
	t->left += sign * move_old__jint(entry, "left");
	t->skipped += sign * move_old__jint(entry, "skipped");
	t->dup += sign * move_old__jint(entry, "may_duplicate");
}

void
move_old__counts_set(json_t *state, const struct move_counts *t)
{
	json_object_set_new(state, "counts", json_pack("{s:I,s:I,s:I,s:I}", "moved",
	    (json_int_t)t->moved, "left", (json_int_t)t->left, "skipped",
	    (json_int_t)t->skipped, "may_duplicate", (json_int_t)t->dup));
}

void
move_old__totals(json_t *state, const struct move_entries *es, struct move_counts *t)
{
	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < es->n; i++) {
		t->moved += es->v[i].moved;
		t->left += es->v[i].left;
		t->skipped += es->v[i].skipped;
		t->dup += es->v[i].dup;
	}
	move_old__counts_set(state, t);
}

/* What a run killed in the middle of a batch left in entry E, taken up by
 * the run that begins at NOW: a queue whose gets were under way may have
 * had messages taken and given back unrecorded, all before NOW
 * ("unrecorded_until_ms", which first_seen never goes below); a batch in
 * flight may be in the ladder and back in its old queue both, so moved
 * twice ("may_duplicate"). */
void
move_old__after_kill(json_t *e, int64_t now)
{
	if (!json_is_object(e))
		return;
	if (json_is_true(json_object_get(e, "getting")) &&
	    move_old__jint(e, "unrecorded_until_ms") < now)
		move_old__set_int(e, "unrecorded_until_ms", now);
	json_object_del(e, "getting");
	if (move_old__jint(e, "in_flight") > 0)
		move_old__set_int(e, "may_duplicate", move_old__jint(e, "may_duplicate") +
		    move_old__jint(e, "in_flight"));
	json_object_del(e, "in_flight");
}

json_t *
move_old__seen_index(json_t *state)
{
	json_t *idx = json_object(), *list = json_object_get(state, "seen"), *keep, *v;
	const char *k;
	size_t i;

	if (idx == NULL || (keep = json_array()) == NULL) {
		json_decref(idx);
		return NULL;
	}
	json_array_foreach(list, i, v) {
		const json_t *had;

		k = json_string_value(json_array_get(v, 0));
		if (!json_is_array(v) || json_array_size(v) != 2 || k == NULL ||
		    strlen(k) != SEEN_KEY_LEN || !json_is_integer(json_array_get(v, 1)))
			continue;
		if ((had = json_object_get(idx, k)) == NULL ||
		    json_integer_value(json_array_get(had, 1)) <
		    json_integer_value(json_array_get(v, 1)))
			json_object_set(idx, k, v);
	}
	json_object_foreach(idx, k, v)
		json_array_append(keep, v);
	json_object_set_new(state, "seen", keep);
	return idx;
}

/* Records in STATE the old queues' publish counters, summed as the watch
 * sums them, as the last pass begins ("old_publishes"), from SEL's
 * statistics listing (old_select_counted): the watch, which starts later,
 * tells from them whether anything entered the old path after the move
 * saw it. A queue whose counter the listing lacks adds nothing, as the
 * watch has it. */
void
move_old__publishes_at_last_pass(const struct old_selection *sel, json_t *state)
{
	int64_t total = 0;

	for (size_t i = 0; i < sel->n; i++)
		if (sel->v[i].q->publish > 0)
			total += sel->v[i].q->publish;
	move_old__set_int(state, "old_publishes", total);
}

/* Asks the broker, once a call, whether it overwrites an arrival stamp
 * at every publish, into STATE ("arrival_stamps", "arrival_trusted"). A
 * probe that fails trusts nothing and says why. */
void
move_old__probe_arrival(struct step_ctx *c, json_t *state)
{
	enum arrival_stamping st = ARRIVAL_OFF;
	char why[512];

	if (!move_old__uses_arrival(c->plan))
		return;
	if (arrival_probe(c->old_amqp, c->plan->name, &st, why, sizeof(why)) != 0)
		json_object_set_new(state, "arrival_error", json_string(why));
	else
		json_object_del(state, "arrival_error");
	json_object_set_new(state, "arrival_stamps",
	    json_string(arrival_stamping_name(st)));
	json_object_set_new(state, "arrival_trusted",
	    json_boolean(st == ARRIVAL_OVERWRITE));
}

/* step_state_each's FN: an entry of the last state, taken up after a
 * kill, into the entries of the loading at ARG. */
struct loading {
	struct move_entries *es;
	int64_t now;
};

static int
load_entry(const json_t *e, void *arg)
{
	struct loading *l = arg;
	json_t *copy = json_deep_copy(e);
	int rc;

	if (copy == NULL)
		return -1;
	move_old__after_kill(copy, l->now);
	rc = move_old__entries_add(l->es, copy);
	json_decref(copy);
	return rc;
}

json_t *
move_old__state_of(struct step_ctx *c, int64_t now, struct move_entries *es,
    char *err, size_t errlen)
{
	json_t *s = c->state != NULL ? json_deep_copy(c->state) : NULL;
	struct loading l = { es, now };

	memset(es, 0, sizeof(*es));
	if (s == NULL || !json_is_array(json_object_get(s, "queues"))) {
		json_decref(s);
		s = json_pack("{s:b,s:I,s:I,s:[]}", "ok", 0, "pass", (json_int_t)1,
		    "pass_started_ms", (json_int_t)now, "queues");
	} else if (step_state_each(c, "queues", load_entry, &l, err, errlen) != 0) {
		json_decref(s);
		move_old__entries_free(es);
		return NULL;
	}
	/* The entries live in ES while the run goes on; the state's list is
	 * where the store puts them back. */
	if (s != NULL)
		json_object_set_new(s, "queues", json_array());
	if (s == NULL || move_old__entries_index(es) != 0) {
		json_decref(s);
		move_old__entries_free(es);
		errbuf_set(err, errlen, "reading the step's last result: out of memory");
		return NULL;
	}
	move_old__set_int(s, "stragglers_until_ms", (c->flip_ms > 0 ? c->flip_ms : now) +
	    c->plan->move_old.stragglers_ms);
	json_object_del(s, "error");
	return s;
}

/* The key of move id ID among the first sightings, into KEY: its first
 * SEEN_KEY_LEN digits (ids that share them are taken for messages alike,
 * which is never early). Returns KEY. */
static const char *
id_key(const char *id, char key[SEEN_KEY_LEN + 1])
{
	memcpy(key, id, SEEN_KEY_LEN);
	key[SEEN_KEY_LEN] = '\0';
	return key;
}

int64_t
move_old__first_seen(const json_t *state, const json_t *seen, const json_t *entry,
    const struct broker_delivery *d, const char *id)
{
	char key[SEEN_KEY_LEN + 1];
	const json_t *at = json_object_get(seen, id_key(id, key));
	int64_t t, un = move_old__jint(entry, "unrecorded_until_ms");

	if (!d->redelivered || json_is_true(json_object_get(state, "seen_full")) ||
	    !json_is_array(at) || !json_is_integer(json_array_get(at, 1)))
		return 0;
	t = json_integer_value(json_array_get(at, 1));
	return t > un ? t : un;
}

void
move_old__record_seen(json_t *state, json_t *seen, const char *id, int64_t first,
    int64_t now)
{
	char key[SEEN_KEY_LEN + 1];
	json_t *at = json_object_get(seen, id_key(id, key)), *list;

	if (first > 0 || json_is_true(json_object_get(state, "seen_full")))
		return;
	if (json_is_array(at)) {
		if (json_integer_value(json_array_get(at, 1)) < now)
			json_array_set_new(at, 1, json_integer(now));
		return;
	}
	if (json_object_size(seen) >= SEEN_MAX) {
		json_object_set_new(state, "seen_full", json_true());
		return;
	}
	if ((list = json_object_get(state, "seen")) == NULL || !json_is_array(list)) {
		list = json_array();
		json_object_set_new(state, "seen", list);
	}
	at = json_pack("[s,I]", key, (json_int_t)now);
	if (at == NULL || json_array_append_new(list, at) != 0 ||
	    json_object_set(seen, key, at) != 0)
		json_object_set_new(state, "seen_full", json_true());
}
