/* remove_old_when: which queues remove_old takes (the old path's members:
 * measured, joined while the watch looked, or appeared since), when each
 * may go (its deadline, or the wait an earlier run gave it), and the
 * evidence of use it weighs before any delete: publish counters against a
 * baseline, a node's restart, messages still held. Whatever time can
 * resolve is a wait (the step runs again); only what a person must act on
 * leaves a queue and fails the step. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "remove_old_int.h"
#include "sentences.h"
#include "step.h"

static int64_t
jint(const json_t *o, const char *key)
{
	return json_integer_value(json_object_get(o, key));
}

/* Makes IT's text *TEXT a shape of kind K, written when it is read. */
static void
text_shape(const char **text, unsigned char *kind, enum text_kind k)
{
	if (*kind == TEXT_OWN)
		free((char *)*text);
	*text = NULL;
	*kind = (unsigned char)k;
}

/* Replaces IT's text *TEXT (held as *KIND says) with BUF's copy (out of
 * memory: with nothing). */
static void
text_set(const char **text, unsigned char *kind, const char *buf)
{
	text_shape(text, kind, TEXT_NONE);
	*text = strdup(buf);
	*kind = *text != NULL ? TEXT_OWN : TEXT_NONE;
}

/* Sets *TEXT to FMT's words (cut at MAX - 1 bytes, MAX at most
 * REASON_MAX), added as a sentence to AFTER when that is not NULL. */
static void text_vset(const char **text, unsigned char *kind, size_t max,
    const char *after, const char *fmt, va_list ap)
    __attribute__((format(printf, 5, 0)));

static void
text_vset(const char **text, unsigned char *kind, size_t max, const char *after,
    const char *fmt, va_list ap)
{
	char buf[REASON_MAX] = "";

	if (after != NULL) {
		snprintf(buf, max, "%s", after);
		sentences_vadd(buf, max, fmt, ap);
	} else
		vsnprintf(buf, max, fmt, ap);
	text_set(text, kind, buf);
}

void
rm_set_reason(struct item *it, enum outcome o, const char *fmt, ...)
{
	va_list ap;

	it->outcome = o;
	if (strchr(fmt, '%') == NULL && strlen(fmt) < REASON_MAX) {
		/* Nothing to format: the literal itself, no copy. */
		text_shape(&it->reason, &it->reason_is, TEXT_FIXED);
		it->reason = fmt;
		return;
	}
	va_start(ap, fmt);
	text_vset(&it->reason, &it->reason_is, REASON_MAX, NULL, fmt, ap);
	va_end(ap);
}

void
rm_add_reason(const struct rm_run *r, struct item *it, const char *fmt, ...)
{
	char now[REASON_MAX];
	va_list ap;

	va_start(ap, fmt);
	text_vset(&it->reason, &it->reason_is, REASON_MAX,
	    rm_reason(r, it, now, sizeof(now)), fmt, ap);
	va_end(ap);
}

void
rm_set_basis(struct item *it, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	text_vset(&it->basis, &it->basis_is, BASIS_MAX, NULL, fmt, ap);
	va_end(ap);
}

void
rm_basis_is(struct item *it, enum text_kind k)
{
	text_shape(&it->basis, &it->basis_is, k);
}

/* The shapes' words, each from the item's figures and its run's. */

static void
make_deadline(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	char t1[40], d[32], basis[BASIS_MAX];

	snprintf(buf, len, "not yet past its deadline %s (%s): %s to go",
	    old_time_format(it->deadline_ms, t1, sizeof(t1)),
	    rm_basis(r, it, basis, sizeof(basis)),
	    rm_to_go(it->deadline_ms - r->now, d, sizeof(d)));
}

static void
make_entry(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	const struct step_ctx *c = r->c;
	char a[32], b[32], t[40];

	snprintf(buf, len, "last entry %s + TTL %s + allowance %s",
	    old_time_format(c->old_last_entry_ms, t, sizeof(t)),
	    duration_format(it->ttl_ms, a, sizeof(a)),
	    duration_format(c->plan->watch.allowance_ms, b, sizeof(b)));
}

static void
make_moved(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	const struct step_ctx *c = r->c;
	char a[32], t[40];

	(void)it;
	snprintf(buf, len, "move_old's last pass, begun %s, left nothing in it and "
	    "nothing entered the old path since, + allowance %s",
	    old_time_format(jint(c->moved, "pass_started_ms"), t, sizeof(t)),
	    duration_format(c->plan->watch.allowance_ms, a, sizeof(a)));
}

static void
make_moved_left(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	const struct step_ctx *c = r->c;
	const struct old_moved_queue *e = old_moved_find(r->moved, it->name);
	int64_t from = jint(c->moved, "pass_started_ms"), left = e != NULL ? e->left : 0;
	char a[32], t[40];

	if (e != NULL && e->left_until_ms > from)
		from = e->left_until_ms;
	snprintf(buf, len, "move_old's last pass left %lld message%s not before %s, + "
	    "allowance %s", (long long)left, left == 1 ? "" : "s",
	    old_time_format(from, t, sizeof(t)),
	    duration_format(c->plan->watch.allowance_ms, a, sizeof(a)));
}

static const struct text_row {
	enum text_kind kind;
	void (*make)(const struct rm_run *, const struct item *, char *, size_t);
} shapes[] = {
	{ TEXT_DEADLINE, make_deadline },
	{ TEXT_ENTRY, make_entry },
	{ TEXT_MOVED, make_moved },
	{ TEXT_MOVED_LEFT, make_moved_left },
};

/* TEXT, held as KIND says, as words: BUF when a shape's. */
static const char *
text_of(const struct rm_run *r, const struct item *it, const char *text,
    unsigned char kind, char *buf, size_t len)
{
	if (kind == TEXT_OWN || kind == TEXT_FIXED)
		return text;
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (shapes[i].kind == kind) {
			shapes[i].make(r, it, buf, len);
			return buf;
		}
	return "";
}

const char *
rm_reason(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	return text_of(r, it, it->reason, it->reason_is, buf, len);
}

const char *
rm_basis(const struct rm_run *r, const struct item *it, char *buf, size_t len)
{
	return text_of(r, it, it->basis, it->basis_is, buf, len);
}

void
rm_items_free(struct item *items, size_t n)
{
	for (size_t i = 0; items != NULL && i < n; i++) {
		text_shape(&items[i].reason, &items[i].reason_is, TEXT_NONE);
		text_shape(&items[i].basis, &items[i].basis_is, TEXT_NONE);
	}
}

/* Makes IT wait for KIND from R->now: its outcome and its wait's
 * figures, not its reason. */
static void
wait_set(const struct rm_run *r, struct item *it, enum wait_kind kind)
{
	int64_t allowance = r->c->plan->watch.allowance_ms;

	it->outcome = OUT_WAIT;
	it->wait = kind;
	it->wait_since_ms = r->now;
	if (kind == WAIT_DEADLINE)
		it->wait_until_ms = it->deadline_ms;
	else if (rm_wait_runs_ttl(kind)) {
		/* At least one baseline window too: a publish made while it
		 * waits then shows in its counter before the wait ends. */
		it->wait_until_ms = r->now + (it->ttl_ms > 0 ? it->ttl_ms : 0) + allowance;
		if (it->wait_until_ms < r->now + OLD_BASELINE_WINDOW_MS)
			it->wait_until_ms = r->now + OLD_BASELINE_WINDOW_MS;
	} else
		it->wait_until_ms = r->now + OLD_BASELINE_WINDOW_MS;
}

void
rm_wait(const struct rm_run *r, struct item *it, enum wait_kind kind,
    const char *fmt, ...)
{
	char until[40], d[32], buf[REASON_MAX];
	va_list ap;

	wait_set(r, it, kind);
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (kind != WAIT_DEADLINE)
		sentences_add(buf, sizeof(buf), "checked again from %s "
		    "(%s)", old_time_format(it->wait_until_ms, until, sizeof(until)),
		    rm_wait_runs_ttl(kind) ? "now + its TTL + allowance, a baseline window at "
		    "least" :
		    duration_format(OLD_BASELINE_WINDOW_MS, d, sizeof(d)));
	text_set(&it->reason, &it->reason_is, buf);
}

char *
rm_to_go(int64_t ms, char *out, size_t outlen)
{
	static const struct { const char *unit; int64_t s; } parts[] = {
		{ "d", 86400 }, { "h", 3600 }, { "m", 60 }, { "s", 1 }
	};
	int64_t left = (ms + 999) / 1000;
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < 4 && off < outlen; i++) {
		if (left < parts[i].s && !(i == 3 && off == 0))
			continue;
		off += (size_t)snprintf(out + off, outlen - off, "%lld%s",
		    (long long)(left / parts[i].s), parts[i].unit);
		left %= parts[i].s;
	}
	return out;
}

int
rm_baseline(struct rm_run *r, char *err, size_t errlen)
{
	const json_t *own = json_object_get(r->prev, "baseline");

	if (json_is_object(own)) {
		r->base_what = "remove_old's baseline";
		r->base_own = true;
		/* As an earlier version wrote it: a list of its own. */
		if (json_is_array(json_object_get(own, "queues")))
			return old_counters_from_sample(own, &r->base, err, errlen);
		r->base = r->prev_base;		/* taken over */
		memset(&r->prev_base, 0, sizeof(r->prev_base));
		r->base.at_ms = json_integer_value(json_object_get(own, "at_ms"));
		r->base.exact = json_is_true(json_object_get(own, "exact"));
		return 0;
	}
	if (r->c->watched_last != NULL) {
		/* Read by the prepare: taken over, as it is read once a run. */
		r->base_what = "the watch's last sample";
		r->base = *r->c->watched_last;
		free(r->c->watched_last);
		r->c->watched_last = NULL;
		return 0;
	}
	if (r->c->watched != NULL) {
		r->base_what = "the watch's last sample";
		return old_counters_from_watch(r->c->watched, &r->base, err, errlen);
	}
	r->base_what = "remove_old's first reading";
	return old_counters_read(r->c, &r->base, err, errlen);
}

/* Makes every item of ITEMS not yet decided that selection S holds wait
 * one baseline window, for WHY, with a fresh baseline taken now. */
static void
wait_baseline(struct rm_run *r, const struct old_selection *s, struct item *items,
    size_t nitems, const char *why)
{
	for (size_t i = 0; i < nitems; i++)
		if (items[i].outcome == OUT_NONE && old_sel_find(s, items[i].name) != NULL)
			rm_wait(r, &items[i], WAIT_BASELINE, "%s", why);
	r->new_baseline = true;
}

bool
rm_restarted(struct rm_run *r, const struct old_selection *s, struct item *items,
    size_t nitems)
{
	struct mgmt_node_list nodes = { 0 };
	const struct mgmt_node *n = NULL;
	char why[REASON_MAX], t1[40], t2[40];
	int64_t started = 0, wall = old_now_ms(NULL);

	if (r->c->restored_ms > r->base.at_ms) {
		old_time_format(r->c->restored_ms, t1, sizeof(t1));
		old_time_format(r->base.at_ms, t2, sizeof(t2));
		snprintf(why, sizeof(why), "the database was restored from a backup at "
		    "%s, after %s (%s): nothing is deleted on readings older than the "
		    "restore, so a fresh baseline was taken", t1, r->base_what, t2);
		wait_baseline(r, s, items, nitems, why);
		return true;
	}
	if (r->base.at_ms <= 0 || mgmt_list_nodes(r->c->old_mgmt, &nodes, why,
	    sizeof(why)) != 0)
		return false;	/* the counters' own jumps still show a reset */
	for (size_t i = 0; i < nodes.n; i++)
		if (nodes.v[i].uptime_ms >= 0 &&
		    wall - nodes.v[i].uptime_ms > r->base.at_ms &&
		    wall - nodes.v[i].uptime_ms > started) {
			started = wall - nodes.v[i].uptime_ms;
			n = &nodes.v[i];
		}
	if (n != NULL) {
		old_time_format(started, t1, sizeof(t1));
		old_time_format(r->base.at_ms, t2, sizeof(t2));
		snprintf(why, sizeof(why), "node %s started at %s, after %s (%s): its "
		    "publish counters began again from zero, so a fresh baseline was "
		    "taken", n->name, t1, r->base_what, t2);
		wait_baseline(r, s, items, nitems, why);
	}
	mgmt_node_list_free(&nodes);
	return n != NULL;
}

/* Gives IT the wait an earlier run recorded for it (rm_last_read), if any. */
static void
prev_wait(const struct rm_run *r, struct item *it)
{
	const struct rm_waited *w = rm_waited_find(r, it->name);

	if (w == NULL)
		return;
	it->waited = (enum wait_kind)w->kind;
	it->wait_since_ms = w->since_ms;
	it->wait_until_ms = w->until_ms;
}

static void
item_init(struct rm_run *r, struct item *it, const char *name, const char *type,
    int64_t ttl)
{
	*it = (struct item){ .name = name, .type = type != NULL ? type : "",
	    .ttl_ms = ttl, .deadline_ms = -1, .seen = -1, .purged = -1,
	    .at_ms = r->now };
	prev_wait(r, it);
}

size_t
rm_items(struct rm_run *r, const struct old_selection *s, struct item *items)
{
	const json_t *joined = json_object_get(json_object_get(r->c->watched, "old"),
	    "joined"), *ttl;
	const char *name;
	size_t i, n = r->mq->n;

	/* The measured, each at its place in the measure's list. */
	for (i = 0; i < r->mq->n && items != NULL; i++) {
		const struct old_measured_queue *m = &r->mq->v[i];
		struct item *it = &items[m->ord];

		/* Fed by other old queues: its messages can come out as late
		 * as the whole chain allows. */
		item_init(r, it, m->name, m->type, m->chain_ttl_ms > m->ttl_ms ?
		    m->chain_ttl_ms : m->ttl_ms);
		it->m = m;
	}
	/* Joined while the watch looked: members like the measured. */
	json_object_foreach((json_t *)joined, name, ttl) {
		const struct old_queue *oq = old_sel_find(s, name);

		if (old_measured_find(r->mq, name) != NULL)
			continue;
		if (items != NULL)
			item_init(r, &items[n], name, oq != NULL ? oq->q->type : "",
			    json_is_integer(ttl) ? json_integer_value(ttl) : -1);
		n++;
	}
	/* Appeared after the watch's last look: members from when remove_old
	 * first saw them. */
	for (i = 0; i < s->n; i++) {
		const struct old_queue *oq = &s->v[i];
		struct item *it = items != NULL ? &items[n] : NULL;

		if (old_measured_find(r->mq, oq->q->name) != NULL ||
		    json_object_get(joined, oq->q->name) != NULL)
			continue;
		n++;
		if (it == NULL)
			continue;
		item_init(r, it, oq->q->name, oq->q->type, oq->ttl_ms);
		if (it->waited == WAIT_NONE) {	/* else its first sighting stands */
			it->waited = WAIT_NEW;
			it->wait_since_ms = r->now;
			it->wait_until_ms = r->now + (oq->ttl_ms > 0 ? oq->ttl_ms : 0) +
			    r->c->plan->watch.allowance_ms;
			if (it->wait_until_ms < r->now + OLD_BASELINE_WINDOW_MS)
				it->wait_until_ms = r->now + OLD_BASELINE_WINDOW_MS;
		}
	}
	/* Removed by an earlier run of this step and no longer listed: kept,
	 * so that the last result still names every queue it deleted. */
	for (i = 0; i < r->nremoved; i++) {
		const struct rm_removed *q = &r->removed[i];

		if (old_measured_find(r->mq, q->name) != NULL ||
		    json_object_get(joined, q->name) != NULL || old_sel_find(s, q->name) != NULL)
			continue;
		if (items != NULL)
			item_init(r, &items[n], q->name, q->type, q->ttl_ms);
		n++;
	}
	return n;
}

/* The deadline move_old gives IT, selected as OQ: when the move's
 * horizon stands (old_moved_stands, as the watch decides it: the move
 * succeeded and the watch, whose counters start from its last pass, saw
 * nothing enter the old path after that pass began), that pass covered
 * the queue (not skipped) and its TTL is not higher than the move saw,
 * the later of the not-before of what the pass left in it
 * ("left_until_ms") and the pass's start, + the allowance. A message
 * entering later is the watch's and the publish counters' to catch (and
 * the exact empty check's), as ever. Sets what it is made of as IT's
 * basis (make_moved, make_moved_left). Returns it, or -1 when the old deadline stands. */
static int64_t
moved_deadline(const struct rm_run *r, const struct old_queue *oq, struct item *it)
{
	const struct step_ctx *c = r->c;
	const json_t *m = c->moved;
	const struct old_moved_queue *e;
	int64_t from = jint(m, "pass_started_ms");

	/* The last entry is the watch's: without its result there is none. */
	if (c->watched == NULL || !old_moved_stands(m, c->old_last_entry_ms))
		return -1;
	e = old_moved_find(r->moved, it->name);
	if (e == NULL || e->skipped_why || e->skipped > 0 || e->pass_done < jint(m, "pass") ||
	    e->ttl_ms < 0 || oq->ttl_ms > e->ttl_ms)
		return -1;
	if (e->left > 0) {
		if (e->left_until_ms < 0)
			return -1;
		if (e->left_until_ms > from)
			from = e->left_until_ms;
		rm_basis_is(it, TEXT_MOVED_LEFT);
	} else
		rm_basis_is(it, TEXT_MOVED);
	return from + c->plan->watch.allowance_ms;
}

/* Sets IT's deadline (selected as OQ): move_old's (moved_deadline), else
 * last entry + its TTL + allowance; an earlier run's wait, when later,
 * stands. */
static void
set_deadline(const struct rm_run *r, const struct old_queue *oq, struct item *it)
{
	const struct step_ctx *c = r->c;
	char t2[40];

	if ((it->deadline_ms = moved_deadline(r, oq, it)) < 0) {
		it->deadline_ms = old_deadline_ms(c->old_last_entry_ms, it->ttl_ms,
		    c->plan->watch.allowance_ms);
		rm_basis_is(it, TEXT_ENTRY);
	}
	if (it->waited != WAIT_NONE && it->deadline_ms >= 0 &&
	    it->wait_until_ms > it->deadline_ms) {
		it->deadline_ms = it->wait_until_ms;
		rm_set_basis(it, "%s %s", rm_wait_basis(it->waited),
		    old_time_format(it->wait_since_ms, t2, sizeof(t2)));
	}
}

/* Weighs the evidence of use of IT (present in S) since R's baseline: a
 * publish makes it wait its TTL again from now (a second time, after such
 * a wait, leaves it: a producer still publishes there); counters that are
 * no longer comparable make it wait one baseline window. Both take a new
 * baseline. Returns true when IT may go on to be checked. */
static bool
judge(struct rm_run *r, const struct old_counter *now, struct item *it)
{
	char why[REASON_MAX / 2];

	switch (old_counters_judge(&r->base, now, false, it->name, r->base_what, why,
	    sizeof(why))) {
	case OLD_USE_NONE:
		return true;
	case OLD_USE_PUBLISHED:
		r->new_baseline = true;
		if (it->waited == WAIT_USED || it->waited == WAIT_HELD) {
			const struct old_counter *b = old_counters_find(&r->base, it->name);

			/* Short: it heads the page when the step fails. */
			rm_set_reason(it, OUT_LEFT, "published into again after a wait "
			    "(counter %lld, now %lld): a producer still uses the old path; "
			    "switch it to the ladder, then retry",
			    (long long)(b != NULL && b->publish > 0 ? b->publish : 0),
			    (long long)now->publish);
			return false;
		}
		rm_wait(r, it, WAIT_USED, "%s: the old path was used after the watch; "
		    "its deadline moves to now + its TTL + allowance", why);
		return false;
	case OLD_USE_UNCOUNTED:
		r->new_baseline = true;
		rm_wait(r, it, WAIT_BASELINE, "%s: a fresh baseline was taken", why);
		return false;
	}
	return false;
}

size_t
rm_triage(struct rm_run *r, const struct old_selection *s, struct item *items,
    size_t nitems, struct item **todo)
{
	size_t i, n = 0;

	for (i = 0; i < nitems; i++) {
		struct item *it = &items[i];
		const struct old_queue *oq = old_sel_find(s, it->name);
		struct old_counter now;

		it->at_ms = r->now;
		if (it->outcome != OUT_NONE)
			continue;
		if (oq == NULL) {
			if (mgmt_queue_list_find(&s->list, it->name) != NULL)
				rm_set_reason(it, OUT_LEFT, "no longer selected by old.queues: "
				    "not touched");
			else
				rm_set_reason(it, OUT_GONE, "already gone (not in the queue "
				    "listing)");
			continue;
		}
		it->type = oq->q->type;
		/* A TTL raised since the measure moves the deadline later. */
		if (oq->ttl_ms > it->ttl_ms)
			it->ttl_ms = oq->ttl_ms;
		set_deadline(r, oq, it);
		if (it->deadline_ms < 0) {
			rm_set_reason(it, OUT_LEFT, "no TTL is known for it, so it has no "
			    "deadline; set old.max_message_ttl to the longest TTL its "
			    "producers give a message");
			continue;
		}
		/* The selection's listing is the reading now (statistics). */
		now = (struct old_counter){ .name = it->name, .publish = oq->q->publish,
		    .messages = oq->q->messages };
		if (!judge(r, &now, it))
			continue;
		if (r->now < it->deadline_ms) {
			/* An earlier wait goes on as it began (rm_wait dates a
			 * wait from now). */
			int64_t since = it->waited != WAIT_NONE ? it->wait_since_ms : r->now;

			wait_set(r, it, WAIT_DEADLINE);
			text_shape(&it->reason, &it->reason_is, TEXT_DEADLINE);
			it->wait = it->waited != WAIT_NONE ? it->waited : WAIT_DEADLINE;
			it->wait_since_ms = since;
			continue;
		}
		todo[n++] = it;
	}
	return n;
}

void
rm_held(struct rm_run *r, struct item *it, uint32_t messages)
{
	if (it->waited == WAIT_HELD) {
		rm_set_reason(it, OUT_LEFT, "holds %u message%s after waiting its TTL "
		    "once more: they do not expire (a longer TTL, a policy?) or it is "
		    "still published to; see `cutover old`, then retry", messages,
		    messages == 1 ? "" : "s");
		return;
	}
	rm_wait(r, it, WAIT_HELD, "holds %u message%s although past its deadline: "
	    "something entered it late; it waits for them to come out", messages,
	    messages == 1 ? "" : "s");
}

void
rm_keep_baseline(struct rm_run *r, const struct old_selection *s)
{
	r->kept_listed = NULL;
	r->kept_base = NULL;
	if (r->new_baseline)
		r->kept_listed = s;
	else if (r->base_own)
		r->kept_base = &r->base;
}

bool
rm_kept_counter(const struct rm_run *r, const char *name, int64_t *publish,
    int64_t *messages)
{
	const struct mgmt_queue *q;
	const struct old_counter *b;

	if (r->kept_listed != NULL &&
	    (q = mgmt_queue_list_find(&r->kept_listed->list, name)) != NULL) {
		*publish = q->publish;
		*messages = q->messages;
		return true;
	}
	if (r->kept_base != NULL && (b = old_counters_find(r->kept_base, name)) != NULL) {
		*publish = b->publish;
		*messages = b->messages;
		return true;
	}
	return false;
}

void
rm_state_json(const struct rm_run *r, json_t *result)
{
	const struct old_counters *b = r->kept_base;

	if (r->kept_listed != NULL)
		json_object_set_new(result, "baseline", json_pack("{s:I,s:b,s:b}",
		    "at_ms", (json_int_t)r->kept_listed->at_ms, "exact", 0,
		    "in_entries", 1));
	else if (b != NULL)
		json_object_set_new(result, "baseline", json_pack("{s:I,s:b,s:b}",
		    "at_ms", (json_int_t)b->at_ms, "exact", b->exact, "in_entries", 1));
}
