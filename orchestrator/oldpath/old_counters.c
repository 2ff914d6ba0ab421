/* old_counters: the old queues' publish counters and depths as remove_old
 * compares them: the watch's last sample (its "old_last") against a
 * statistics listing read just before deleting. One depth reading says
 * nothing about what arrived and left since; the cumulative publish
 * counter does, as long as it is readable and has not been reset.
 *
 * The watch's depths are exact (it ends only once passive declares find
 * every old queue empty); a listing's are the statistics, which lag by
 * 5-10 s (DESIGN §3) and, just after the watch, still show the last
 * messages of the longest-TTL queues that have expired since. So depths
 * are compared only kind with kind (an exact depth against a listing's
 * once refused e2e.cutover's 19 s and 20 s queues as "holds more messages
 * than at the watch's last sample"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "old_path.h"
#include "strblocks.h"

static int64_t
int_or(const json_t *j, int64_t dflt)
{
	return json_is_integer(j) ? json_integer_value(j) : dflt;
}

static int
counter_cmp(const void *a, const void *b)
{
	return strcmp(((const struct old_counter *)a)->name,
	    ((const struct old_counter *)b)->name);
}

int
old_counters_put(struct old_counters *o, const char *name, int64_t publish,
    int64_t messages)
{
	const struct old_measured_queue *m;
	void *v;

	if (o->n == o->cap) {
		size_t cap = o->cap > 0 ? 2 * o->cap : 256;

		if ((v = realloc(o->v, cap * sizeof(*o->v))) == NULL)
			return -1;
		o->v = v;
		o->cap = cap;
	}
	if ((m = old_measured_find(o->names_from, name)) != NULL)
		o->v[o->n].name = m->name;
	else if ((o->v[o->n].name = strblocks_put(&o->text, name)) == NULL)
		return -1;
	o->v[o->n].publish = publish;
	o->v[o->n++].messages = messages;
	return 0;
}

int
old_counters_add(struct old_counters *o, const json_t *e)
{
	const char *name = json_string_value(json_object_get(e, "name"));
	const json_t *pub = json_object_get(e, "publish");

	if (name == NULL)
		return 0;
	if (pub == NULL)
		pub = json_object_get(json_object_get(e, "message_stats"), "publish");
	return old_counters_put(o, name, int_or(pub, -1),
	    int_or(json_object_get(e, "messages"), -1));
}

void
old_counters_end(struct old_counters *o)
{
	if (o->n > 1)
		qsort(o->v, o->n, sizeof(*o->v), counter_cmp);
}

/* Fills O from the array ARR of {"name", "publish" or "message_stats":
 * {"publish"}, "messages"}, the names copied: O outlives ARR. */
static int
from_array(const json_t *arr, int64_t at_ms, struct old_counters *o, char *err,
    size_t errlen)
{
	const json_t *e;
	size_t i;

	memset(o, 0, sizeof(*o));
	o->at_ms = at_ms;
	if (!json_is_array(arr)) {
		snprintf(err, errlen, "the queue listing is not a list");
		return -1;
	}
	/* Room for them all at once: no array grown by doubling. */
	if ((o->v = calloc(json_array_size(arr) + 1, sizeof(*o->v))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	o->cap = json_array_size(arr) + 1;
	json_array_foreach(arr, i, e)
		if (old_counters_add(o, e) != 0) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	old_counters_end(o);
	return 0;
}

int
old_counters_read(struct step_ctx *c, struct old_counters *o, char *err, size_t errlen)
{
	struct old_listing l;
	char why[768];
	int64_t at = old_now_ms(c);

	memset(o, 0, sizeof(*o));
	/* Statistics on (message_stats needs them): see
	 * mgmt_list_queues_all for how they are read past 20,000 queues,
	 * and why no queue there throughout is missed. */
	if (old_listing_read(c->old_mgmt, OLD_WATCH_COLUMNS, &l, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the publish counters: %s", why);
		return -1;
	}
	if ((o->v = calloc(l.n + 1, sizeof(*o->v))) == NULL) {
		old_listing_free(&l);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	o->cap = l.n + 1;
	/* In name order, as the counters are kept; the names' blocks are
	 * taken over. */
	for (size_t i = 0; i < l.n; i++)
		o->v[o->n++] = (struct old_counter){ .name = l.v[i].name,
		    .publish = l.v[i].publish, .messages = l.v[i].messages };
	o->text = l.text;
	l.text = NULL;
	o->at_ms = at;
	old_listing_free(&l);
	return 0;
}

int
old_counters_from_sample(const json_t *last, struct old_counters *o, char *err,
    size_t errlen)
{
	memset(o, 0, sizeof(*o));
	if (!json_is_array(json_object_get(last, "queues"))) {
		snprintf(err, errlen, "the sample has no queues");
		return -1;
	}
	if (from_array(json_object_get(last, "queues"),
	    int_or(json_object_get(last, "at_ms"), 0), o, err, errlen) != 0) {
		old_counters_free(o);
		return -1;
	}
	o->exact = json_is_true(json_object_get(last, "exact"));
	return 0;
}

bool
old_last_in_entries(const json_t *last)
{
	const char *in = json_string_value(json_object_get(last, "queues_in"));

	return in != NULL && strcmp(in, OLD_LAST_IN_ENTRIES) == 0;
}

int
old_counters_from_watch(const json_t *watched, struct old_counters *o, char *err,
    size_t errlen)
{
	const json_t *last = json_object_get(watched, "old_last");
	const json_t *list = old_last_in_entries(last) ?
	    json_object_get(watched, "entries") : json_object_get(last, "queues");

	memset(o, 0, sizeof(*o));
	if (!json_is_array(list)) {
		snprintf(err, errlen, "the watch's state has no last sample of the old "
		    "queues (\"old_last\"): it has not ended, or an older version ran it");
		return -1;
	}
	if (from_array(list, int_or(json_object_get(last, "at_ms"), 0), o, err,
	    errlen) != 0) {
		old_counters_free(o);
		return -1;
	}
	/* Written only by the tick that ends the watch, which read every old
	 * queue with a passive declare (watch.c, tick_status). */
	o->exact = true;
	return 0;
}

const struct old_counter *
old_counters_find(const struct old_counters *o, const char *name)
{
	struct old_counter key = { .name = name };

	if (o->n == 0)
		return NULL;
	return bsearch(&key, o->v, o->n, sizeof(*o->v), counter_cmp);
}

void
old_counters_free(struct old_counters *o)
{
	free(o->v);
	strblocks_free(&o->text);
	memset(o, 0, sizeof(*o));
}

enum old_use
old_counters_judge(const struct old_counters *base, const struct old_counter *n,
    bool now_exact, const char *name, const char *base_what, char *why, size_t whylen)
{
	const struct old_counter *b = old_counters_find(base, name);
	int64_t bp = b != NULL ? b->publish : -1, np = n != NULL ? n->publish : -1;
	char t[40];

	old_time_format(base->at_ms, t, sizeof(t));
	why[0] = '\0';
	if (bp >= 0 && np < 0) {
		snprintf(why, whylen, "its publish counter, %lld at %s (%s), cannot be "
		    "read now: the statistics were reset or the node restarted",
		    (long long)bp, base_what, t);
		return OLD_USE_UNCOUNTED;
	}
	if (bp >= 0 && np < bp) {
		snprintf(why, whylen, "its publish counter went backwards, from %lld at "
		    "%s (%s) to %lld: the statistics were reset or the node restarted",
		    (long long)bp, base_what, t, (long long)np);
		return OLD_USE_UNCOUNTED;
	}
	if (np > (bp > 0 ? bp : 0)) {
		snprintf(why, whylen, "%lld publish%s into it since %s (%s; counter %s%lld, "
		    "now %lld)", (long long)(np - (bp > 0 ? bp : 0)),
		    np - (bp > 0 ? bp : 0) == 1 ? "" : "es", base_what, t,
		    bp < 0 ? "none, i.e. " : "", (long long)(bp > 0 ? bp : 0),
		    (long long)np);
		return OLD_USE_PUBLISHED;
	}
	if (b != NULL && n != NULL && base->exact == now_exact &&
	    n->messages > b->messages && b->messages >= 0) {
		snprintf(why, whylen, "it holds more messages than at %s (%s): %lld, then "
		    "%lld; something dead-letters into it", base_what, t,
		    (long long)b->messages, (long long)n->messages);
		return OLD_USE_PUBLISHED;
	}
	return OLD_USE_NONE;
}
