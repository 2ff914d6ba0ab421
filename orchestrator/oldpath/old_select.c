/* old_select: which queues a plan's old selection selects (old_selector:
 * old.queues.match or .names, never the plan's own queues) and, for the
 * queues the broker has, each one's effective TTL and expiry with the
 * notes that explain them (old_select, old_path.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "old_path.h"
#include "pattern.h"
#include "policy.h"
#include "sentences.h"
#include "strblocks.h"

static int64_t
int_or(const json_t *j, int64_t dflt)
{
	return json_is_integer(j) ? json_integer_value(j) : dflt;
}

/* The operator policy of OPS that applies to queue Q (policy_for), or NULL.
 * *UNREADABLE is set to a higher-priority one PCRE2 cannot decide for Q
 * (its pattern does not compile, or the match hit a limit), or NULL. */
static const struct policy *
op_policy_for(const struct policy_set *ops, const struct mgmt_queue *q,
    const struct policy **unreadable)
{
	return policy_for(ops, q->name, POLICY_QUEUE, q->type, unreadable);
}

void
old_queue_note(struct old_queue *oq, const char *fmt, ...)
{
	char buf[OLD_NOTE_MAX];
	char *note;
	va_list ap;

	snprintf(buf, sizeof(buf), "%s", oq->note != NULL ? oq->note : "");
	va_start(ap, fmt);
	sentences_vadd(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if ((note = strdup(buf)) == NULL)
		return;
	free(oq->note);
	oq->note = note;
}

/* Sets OQ's TTL source to KIND, or "KIND:NAME" when NAME is not NULL (cut
 * at OLD_SOURCE_MAX - 1 bytes), a text S holds once for all the queues
 * that share it; out of memory leaves it NULL. */
static void
set_source(struct old_selection *s, struct old_queue *oq, const char *kind,
    const char *name)
{
	char buf[OLD_SOURCE_MAX];

	if (name != NULL)
		snprintf(buf, sizeof(buf), "%s:%s", kind, name);
	else
		snprintf(buf, sizeof(buf), "%s", kind);
	for (size_t i = 0; i < s->nsource_seen; i++)
		if (strcmp(s->source_seen[i], buf) == 0) {
			oq->ttl_source = s->source_seen[i];
			return;
		}
	oq->ttl_source = strblocks_put(&s->sources, buf);
	if (oq->ttl_source != NULL && s->nsource_seen < OLD_SOURCES_SEEN)
		s->source_seen[s->nsource_seen++] = oq->ttl_source;
}

/* Keeps the lower of OQ's TTL so far and V (ignored when < 0), naming its
 * source (in S); a tie keeps the source considered first. */
static void
lower_ttl(struct old_selection *s, struct old_queue *oq, int64_t v, const char *kind,
    const char *name)
{
	if (v < 0 || (oq->ttl_ms >= 0 && v >= oq->ttl_ms))
		return;
	oq->ttl_ms = v;
	set_source(s, oq, kind, name);
}

static void
lower_expires(struct old_queue *oq, int64_t v)
{
	if (v >= 0 && (oq->expires_ms < 0 || v < oq->expires_ms))
		oq->expires_ms = v;
}

/* Works out OQ's effective TTL and expiry (of selection S) and writes its
 * notes. */
static void
assess(const struct step_ctx *c, struct old_selection *s, struct old_queue *oq,
    const struct mgmt_policy_list *pl, const struct policy_set *ops)
{
	const struct mgmt_queue *q = oq->q;
	const struct policy *op, *unreadable;
	int64_t policy_expires = -1;
	char a[32], b[32];

	oq->ttl_ms = -1;
	oq->expires_ms = q->expires;
	for (size_t k = 0; q->policy != NULL && k < pl->n; k++)
		if (strcmp(pl->v[k].name, q->policy) == 0)
			policy_expires = int_or(json_object_get(pl->v[k].definition,
			    "expires"), -1);
	lower_expires(oq, policy_expires);
	lower_ttl(s, oq, q->message_ttl, "argument", NULL);
	lower_ttl(s, oq, q->policy_message_ttl, "policy", q->policy);
	if (q->message_ttl >= 0 && q->policy_message_ttl >= 0 &&
	    q->message_ttl != q->policy_message_ttl) {
		duration_format(q->message_ttl, a, sizeof(a));
		duration_format(q->policy_message_ttl, b, sizeof(b));
		if (q->policy_message_ttl < q->message_ttl)
			old_queue_note(oq, "policy '%s' message-ttl %s is lower than its "
			    "x-message-ttl %s: the policy's applies", q->policy, b, a);
		else
			old_queue_note(oq, "its x-message-ttl %s is lower than policy '%s' "
			    "message-ttl %s: the argument applies", a, q->policy, b);
	}
	op = op_policy_for(ops, q, &unreadable);
	if (op != NULL) {
		if (op->ttl_ms >= 0 && (oq->ttl_ms < 0 || op->ttl_ms < oq->ttl_ms))
			old_queue_note(oq, "operator policy '%s' lowers its TTL to %s", op->name,
			    duration_format(op->ttl_ms, a, sizeof(a)));
		lower_ttl(s, oq, op->ttl_ms, "operator-policy", op->name);
		lower_expires(oq, op->expires_ms);
	}
	if (unreadable != NULL && unreadable->ttl_ms >= 0)
		old_queue_note(oq, "operator policy '%s' has a pattern PCRE2 cannot decide for "
		    "this queue ('%s'); its message-ttl %s was not applied, so the horizon "
		    "may be later than needed", unreadable->name, unreadable->pattern,
		    duration_format(unreadable->ttl_ms, a, sizeof(a)));
	if (oq->ttl_ms < 0 && c->plan->old.max_message_ttl_ms > 0) {
		oq->ttl_ms = c->plan->old.max_message_ttl_ms;
		set_source(s, oq, "max_message_ttl", NULL);
		old_queue_note(oq, "no queue TTL: old.max_message_ttl (%s) bounds its messages",
		    duration_format(oq->ttl_ms, a, sizeof(a)));
	} else if (oq->ttl_ms < 0)
		old_queue_note(oq, "no TTL (no x-message-ttl, no policy message-ttl): its "
		    "messages may wait forever unless old.max_message_ttl bounds them");
	if (q->consumers > 0)
		old_queue_note(oq, "has %lld consumer%s: probably not a delay queue",
		    (long long)q->consumers, q->consumers == 1 ? "" : "s");
	if (strcmp(q->type, "stream") == 0)
		old_queue_note(oq, "a stream: not a delay queue");
	if (oq->expires_ms >= 0)
		old_queue_note(oq, "expires after %s unused, with whatever it holds",
		    duration_format(oq->expires_ms, a, sizeof(a)));
	if (!q->durable)
		old_queue_note(oq, "not durable: its messages do not survive a broker restart");
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct old_queue *)a)->q->name,
	    ((const struct old_queue *)b)->q->name);
}

void
old_selection_free(struct old_selection *s)
{
	mgmt_queue_list_free(&s->list);
	for (size_t i = 0; s->v != NULL && i < s->n; i++)
		free(s->v[i].note);
	strblocks_free(&s->sources);
	free(s->v);
	free(s->missing);
	memset(s, 0, sizeof(*s));
}

static int
str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* plan_own_queues' callback: appends NAME to the selector ARG. */
static int
add_own(void *arg, const char *name, const char *what)
{
	struct old_selector *s = arg;

	(void)what;
	if ((s->own[s->nown] = strdup(name)) == NULL)
		return -1;
	s->nown++;
	return 0;
}

void
old_selector_free(struct old_selector *s)
{
	pattern_free(s->re);
	free(s->names);
	for (size_t i = 0; i < s->nown; i++)
		free(s->own[i]);
	free(s->own);
	memset(s, 0, sizeof(*s));
}

int
old_selector_init(struct old_selector *s, const struct plan *p, char *err, size_t errlen)
{
	char why[512];

	memset(s, 0, sizeof(*s));
	if (p->old.match != NULL &&
	    pattern_compile(p->old.match, &s->re, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "old.queues.match '%.200s' is not a usable PCRE2 "
		    "pattern: %s", p->old.match, why);
		return -1;
	}
	/* Levels, parking, destinations, probe, statistics and canary. */
	if ((s->own = calloc((size_t)p->ladder.levels + p->ndestinations + 4,
	    sizeof(*s->own))) == NULL ||
	    (s->names = calloc(p->old.nnames + 1, sizeof(*s->names))) == NULL ||
	    plan_own_queues(p, add_own, s) != 0) {
		snprintf(err, errlen, "out of memory");
		old_selector_free(s);
		return -1;
	}
	qsort(s->own, s->nown, sizeof(*s->own), str_cmp);
	plan_stats_exchange(p, s->stats_prefix, sizeof(s->stats_prefix) - 1);
	strcat(s->stats_prefix, ".");
	if (s->re == NULL) {
		memcpy(s->names, p->old.names, p->old.nnames * sizeof(*s->names));
		s->nnames = p->old.nnames;
		qsort(s->names, s->nnames, sizeof(*s->names), str_cmp);
	}
	return 0;
}

bool
old_selector_own(const struct old_selector *s, const char *name)
{
	return bsearch(&name, s->own, s->nown, sizeof(*s->own), str_cmp) != NULL ||
	    strncmp(name, s->stats_prefix, strlen(s->stats_prefix)) == 0;
}

int
old_selector_test(struct old_selector *s, const char *name, bool *selected,
    char *err, size_t errlen)
{
	char why[512];
	int m;

	*selected = false;
	if (old_selector_own(s, name))
		return 0;
	if (s->re == NULL) {
		*selected = bsearch(&name, s->names, s->nnames, sizeof(*s->names),
		    str_cmp) != NULL;
		return 0;
	}
	if ((m = pattern_match(s->re, name, selected, why, sizeof(why))) < 0)
		snprintf(err, errlen, "old.queues.match cannot decide whether it selects "
		    "queue '%.255s' (%s): refusing to guess", name, why);
	return m;
}

/* old_select and old_select_counted: COUNTED chooses the listing. */
static int
select_from(struct step_ctx *c, bool counted, struct old_selection *s, char *err,
    size_t errlen)
{
	const struct plan *p = c->plan;
	struct mgmt_policy_list pl = { 0 };
	struct policy_set ops = { 0 };
	struct old_selector sel = { 0 };
	char why[512];
	size_t i;
	bool selected;
	int rc = -1;

	memset(s, 0, sizeof(*s));
	if (old_selector_init(&sel, p, err, errlen) != 0)
		goto done;
	s->at_ms = old_now_ms(c);
	if ((counted ? mgmt_list_queues_counted : mgmt_list_queues)(c->old_mgmt, &s->list,
	    why, sizeof(why)) != 0) {
		snprintf(err, errlen, "listing the queues: %s", why);
		goto done;
	}
	if (mgmt_list_policies(c->old_mgmt, &pl, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the policies: %s", why);
		goto done;
	}
	if (policy_set_read(c->old_mgmt, "operator-policies", &ops, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the operator policies: %s", why);
		goto done;
	}
	/* Room for every listed queue, filled only as far as selected:
	 * malloc, as calloc would clear (and so touch) all of it. */
	if ((s->v = malloc((s->list.n + p->old.nnames + 1) * sizeof(*s->v))) == NULL ||
	    (s->missing = calloc(p->old.nnames + 1, sizeof(*s->missing))) == NULL) {
		snprintf(err, errlen, "out of memory for %zu queues", s->list.n);
		goto done;
	}
	if (sel.re != NULL) {
		for (i = 0; i < s->list.n; i++) {
			if (old_selector_test(&sel, s->list.v[i].name, &selected, err,
			    errlen) != 0)
				goto done;
			if (selected)
				s->v[s->n++] = (struct old_queue){ .q = &s->list.v[i] };
		}
	} else {
		for (i = 0; i < p->old.nnames; i++) {
			const struct mgmt_queue *q = mgmt_queue_list_find(&s->list,
			    p->old.names[i]);

			if (old_selector_own(&sel, p->old.names[i]))
				continue;
			if (q != NULL)
				s->v[s->n++] = (struct old_queue){ .q = q };
			else
				s->missing[s->nmissing++] = p->old.names[i];
		}
		qsort(s->v, s->n, sizeof(*s->v), name_cmp);
	}
	for (i = 0; i < s->n; i++) {
		assess(c, s, &s->v[i], &pl, &ops);
		if (s->v[i].ttl_ms < 0)
			s->nottl++;
	}
	rc = 0;
done:
	old_selector_free(&sel);
	mgmt_policy_list_free(&pl);
	policy_set_free(&ops);
	if (rc != 0)
		old_selection_free(s);
	return rc;
}

int
old_select(struct step_ctx *c, struct old_selection *s, char *err, size_t errlen)
{
	return select_from(c, false, s, err, errlen);
}

int
old_select_counted(struct step_ctx *c, struct old_selection *s, char *err,
    size_t errlen)
{
	return select_from(c, true, s, err, errlen);
}
