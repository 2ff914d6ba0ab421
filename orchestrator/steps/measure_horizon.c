/* measure_horizon: finds the old delay queues, reads each one's effective
 * TTL and dead-letter chain (old_chain.c), and works out the horizon of
 * the old path: the latest moment a message that is in it, or still
 * enters it, can come out. Also the parts
 * of old_path.h that remove_old and the engine share with it. */
#define _XOPEN_SOURCE 700	/* strptime */
#define _DEFAULT_SOURCE		/* timegm */
#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "duration.h"
#include "old_path.h"
#include "pattern.h"
#include "policy.h"
#include "sentences.h"
#include "step.h"

#define NAMES_IN_ERR 10	/* queue names an error message lists at most */

int64_t
old_now_ms(const struct step_ctx *c)
{
	if (c != NULL && c->now_ms != 0)
		return c->now_ms;
	return clock_now_ms();
}

int64_t
old_deadline_ms(int64_t last_entry_ms, int64_t ttl_ms, int64_t allowance_ms)
{
	if (last_entry_ms <= 0 || ttl_ms < 0)
		return -1;
	return last_entry_ms + ttl_ms + (allowance_ms > 0 ? allowance_ms : 0);
}

bool
old_moved_stands(const json_t *moved, int64_t last_entry_ms)
{
	const json_t *h = json_object_get(moved, "horizon_ms");
	const json_t *at = json_object_get(moved, "pass_started_ms");

	return json_is_true(json_object_get(moved, "ok")) && json_is_integer(h) &&
	    json_integer_value(h) > 0 && json_is_integer(at) &&
	    json_integer_value(at) > 0 && last_entry_ms <= json_integer_value(at);
}

int64_t
old_horizon_ms(const json_t *measured, int64_t last_entry_ms, int64_t allowance_ms)
{
	const json_t *q;
	int64_t h = -1, d;
	size_t i;

	if (last_entry_ms <= 0 || !json_is_array(json_object_get(measured, "queues")))
		return -1;
	json_array_foreach(json_object_get(measured, "queues"), i, q) {
		const json_t *t = json_object_get(q, "chain_ttl_ms");

		if (!json_is_integer(t))
			t = json_object_get(q, "ttl_ms");
		if (!json_is_integer(t))
			return -1;
		d = old_deadline_ms(last_entry_ms, json_integer_value(t), allowance_ms);
		if (d > h)
			h = d;
	}
	return h;
}

char *
old_time_format(int64_t ms, char *out, size_t outlen)
{
	char date[32];
	time_t secs;
	struct tm tm;
	int64_t frac;

	frac = ms % 1000;
	if (frac < 0)
		frac += 1000;
	secs = (time_t)((ms - frac) / 1000);
	if (gmtime_r(&secs, &tm) == NULL ||
	    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm) == 0) {
		snprintf(out, outlen, "%lld ms", (long long)ms);
		return out;
	}
	if (frac != 0)
		snprintf(out, outlen, "%s.%03dZ", date, (int)frac);
	else
		snprintf(out, outlen, "%sZ", date);
	return out;
}

/* RFC 3339's date and time without fraction or offset, as old_time_parse
 * takes it: 'd' a digit, 'T' either case of the letter, the rest itself. */
static const char stamp_shape[] = "dddd-dd-ddTdd:dd:dd";

/* Whether the first bytes of P have stamp_shape (strptime alone would take
 * fewer digits, spaces and signs). */
static bool
has_stamp_shape(const char *p)
{
	for (size_t i = 0; stamp_shape[i] != '\0'; i++) {
		char c = p[i], want = stamp_shape[i];

		if (want == 'd' ? (c < '0' || c > '9') :
		    want == 'T' ? (c != 'T' && c != 't') : c != want)
			return false;
	}
	return true;
}

int
old_time_parse(const char *text, int64_t *ms, char *err, size_t errlen)
{
	char stamp[sizeof(stamp_shape)], when[40];
	const char *p;
	struct tm tm, back;
	time_t secs;
	int frac = 0, nfrac = 0;
	size_t i;

	if (text == NULL || *text == '\0')
		goto bad;
	for (i = 0; text[i] >= '0' && text[i] <= '9'; i++)
		;
	if (text[i] == '\0') {
		if (i > 15)		/* past year 33658: not a time */
			goto bad;
		*ms = strtoll(text, NULL, 10);
		if (*ms <= 0)
			goto bad;
		if (*ms < OLD_TIME_MIN_MS) {
			snprintf(err, errlen, "'%s' is %s as epoch milliseconds, before "
			    "2000: an epoch in seconds? expected milliseconds (e.g. "
			    "%s000)", text, old_time_format(*ms, when, sizeof(when)), text);
			return -1;
		}
		return 0;
	}
	if (!has_stamp_shape(text))
		goto bad;
	memcpy(stamp, text, sizeof(stamp) - 1);
	stamp[sizeof(stamp) - 1] = '\0';
	stamp[10] = 'T';
	memset(&tm, 0, sizeof(tm));
	p = strptime(stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL || *p != '\0' || tm.tm_year < 70)
		goto bad;
	p = text + sizeof(stamp) - 1;
	if (*p == '.') {
		p++;
		while (*p >= '0' && *p <= '9') {
			if (nfrac == 3)
				goto bad;	/* finer than a millisecond */
			frac = frac * 10 + (*p++ - '0');
			nfrac++;
		}
		if (nfrac == 0)
			goto bad;
		while (nfrac++ < 3)
			frac *= 10;
	}
	if ((*p != 'Z' && *p != 'z') || p[1] != '\0')
		goto bad;
	/* timegm carries a day, hour or second past its range into the next
	 * (February 30th is March 2nd, 23:59:60 is the next minute): a time
	 * that does not come back as written is refused. */
	back = tm;
	secs = timegm(&back);
	if (secs == (time_t)-1 || back.tm_year != tm.tm_year ||
	    back.tm_mon != tm.tm_mon || back.tm_mday != tm.tm_mday ||
	    back.tm_hour != tm.tm_hour || back.tm_min != tm.tm_min ||
	    back.tm_sec != tm.tm_sec)
		goto bad;
	*ms = (int64_t)secs * 1000 + frac;
	if (*ms < OLD_TIME_MIN_MS) {
		snprintf(err, errlen, "'%.80s' is before 2000: no message entered "
		    "the old path then, and every deadline from it is long past", text);
		return -1;
	}
	return 0;
bad:
	snprintf(err, errlen, "'%.80s' is not a time: expected epoch milliseconds "
	    "(e.g. 1795003200000) or RFC 3339 UTC (e.g. 2026-11-30T12:00:00Z)",
	    text ? text : "");
	return -1;
}

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

static void add_note(struct old_queue *oq, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
add_note(struct old_queue *oq, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sentences_vadd(oq->note, sizeof(oq->note), fmt, ap);
	va_end(ap);
}

/* Keeps the lower of OQ's TTL so far and V (ignored when < 0), naming its
 * source; a tie keeps the source considered first. */
static void
lower_ttl(struct old_queue *oq, int64_t v, const char *kind, const char *name)
{
	if (v < 0 || (oq->ttl_ms >= 0 && v >= oq->ttl_ms))
		return;
	oq->ttl_ms = v;
	if (name != NULL)
		snprintf(oq->ttl_source, sizeof(oq->ttl_source), "%s:%s", kind, name);
	else
		snprintf(oq->ttl_source, sizeof(oq->ttl_source), "%s", kind);
}

static void
lower_expires(struct old_queue *oq, int64_t v)
{
	if (v >= 0 && (oq->expires_ms < 0 || v < oq->expires_ms))
		oq->expires_ms = v;
}

/* Works out OQ's effective TTL and expiry and writes its notes. */
static void
assess(const struct step_ctx *c, struct old_queue *oq, const struct mgmt_policy_list *pl,
    const struct policy_set *ops)
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
	lower_ttl(oq, q->message_ttl, "argument", NULL);
	lower_ttl(oq, q->policy_message_ttl, "policy", q->policy);
	if (q->message_ttl >= 0 && q->policy_message_ttl >= 0 &&
	    q->message_ttl != q->policy_message_ttl) {
		duration_format(q->message_ttl, a, sizeof(a));
		duration_format(q->policy_message_ttl, b, sizeof(b));
		if (q->policy_message_ttl < q->message_ttl)
			add_note(oq, "policy '%s' message-ttl %s is lower than its "
			    "x-message-ttl %s: the policy's applies", q->policy, b, a);
		else
			add_note(oq, "its x-message-ttl %s is lower than policy '%s' "
			    "message-ttl %s: the argument applies", a, q->policy, b);
	}
	op = op_policy_for(ops, q, &unreadable);
	if (op != NULL) {
		if (op->ttl_ms >= 0 && (oq->ttl_ms < 0 || op->ttl_ms < oq->ttl_ms))
			add_note(oq, "operator policy '%s' lowers its TTL to %s", op->name,
			    duration_format(op->ttl_ms, a, sizeof(a)));
		lower_ttl(oq, op->ttl_ms, "operator-policy", op->name);
		lower_expires(oq, op->expires_ms);
	}
	if (unreadable != NULL && unreadable->ttl_ms >= 0)
		add_note(oq, "operator policy '%s' has a pattern PCRE2 cannot decide for "
		    "this queue ('%s'); its message-ttl %s was not applied, so the horizon "
		    "may be later than needed", unreadable->name, unreadable->pattern,
		    duration_format(unreadable->ttl_ms, a, sizeof(a)));
	if (oq->ttl_ms < 0 && c->plan->old.max_message_ttl_ms > 0) {
		oq->ttl_ms = c->plan->old.max_message_ttl_ms;
		snprintf(oq->ttl_source, sizeof(oq->ttl_source), "max_message_ttl");
		add_note(oq, "no queue TTL: old.max_message_ttl (%s) bounds its messages",
		    duration_format(oq->ttl_ms, a, sizeof(a)));
	} else if (oq->ttl_ms < 0)
		add_note(oq, "no TTL (no x-message-ttl, no policy message-ttl): its "
		    "messages may wait forever unless old.max_message_ttl bounds them");
	if (q->consumers > 0)
		add_note(oq, "has %lld consumer%s: probably not a delay queue",
		    (long long)q->consumers, q->consumers == 1 ? "" : "s");
	if (strcmp(q->type, "stream") == 0)
		add_note(oq, "a stream: not a delay queue");
	if (oq->expires_ms >= 0)
		add_note(oq, "expires after %s unused, with whatever it holds",
		    duration_format(oq->expires_ms, a, sizeof(a)));
	if (!q->durable)
		add_note(oq, "not durable: its messages do not survive a broker restart");
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
	/* Levels, parking, destinations, probe and canary. */
	if ((s->own = calloc((size_t)p->ladder.levels + p->ndestinations + 3,
	    sizeof(*s->own))) == NULL ||
	    (s->names = calloc(p->old.nnames + 1, sizeof(*s->names))) == NULL ||
	    plan_own_queues(p, add_own, s) != 0) {
		snprintf(err, errlen, "out of memory");
		old_selector_free(s);
		return -1;
	}
	qsort(s->own, s->nown, sizeof(*s->own), str_cmp);
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
	return bsearch(&name, s->own, s->nown, sizeof(*s->own), str_cmp) != NULL;
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
	if ((counted ? mgmt_list_queues_counted : mgmt_list_queues)(c->mgmt, &s->list,
	    why, sizeof(why)) != 0) {
		snprintf(err, errlen, "listing the queues: %s", why);
		goto done;
	}
	if (mgmt_list_policies(c->mgmt, &pl, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the policies: %s", why);
		goto done;
	}
	if (policy_set_read(c->mgmt, "operator-policies", &ops, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the operator policies: %s", why);
		goto done;
	}
	if ((s->v = calloc(s->list.n + p->old.nnames + 1, sizeof(*s->v))) == NULL ||
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
				s->v[s->n++].q = &s->list.v[i];
		}
	} else {
		for (i = 0; i < p->old.nnames; i++) {
			const struct mgmt_queue *q = mgmt_queue_list_find(&s->list,
			    p->old.names[i]);

			if (old_selector_own(&sel, p->old.names[i]))
				continue;
			if (q != NULL)
				s->v[s->n++].q = q;
			else
				s->missing[s->nmissing++] = p->old.names[i];
		}
		qsort(s->v, s->n, sizeof(*s->v), name_cmp);
	}
	for (i = 0; i < s->n; i++) {
		assess(c, &s->v[i], &pl, &ops);
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

static json_t *
int_or_null(int64_t v)
{
	return v >= 0 ? json_integer(v) : json_null();
}

static json_t *
str_or_null(const char *s)
{
	return s != NULL && *s != '\0' ? json_string(s) : json_null();
}

/* Queue I's part of CH, as its measured entry records it:
 * {"chain_ttl_ms", "dead_letters_to": [...], "fed_by": [...]}. */
static json_t *
json_pack_chain(const struct old_chain *ch, size_t i)
{
	return json_pack("{s:I,s:O,s:O}", "chain_ttl_ms", (json_int_t)ch->ttl_ms[i],
	    "dead_letters_to", ch->to[i], "fed_by", ch->from[i]);
}

/* Describes the selector of the plan, as the result records it. */
static json_t *
selector_json(const struct plan *p)
{
	json_t *names;

	if (p->old.match != NULL)
		return json_pack("{s:s}", "match", p->old.match);
	names = json_array();
	for (size_t i = 0; i < p->old.nnames; i++)
		json_array_append_new(names, json_string(p->old.names[i]));
	return json_pack("{s:o}", "names", names);
}

/* Writes "a, b, c and N more" of the selected queues without a TTL. */
static void
list_no_ttl(const struct old_selection *s, char *out, size_t outlen)
{
	size_t off = 0, shown = 0;

	out[0] = '\0';
	for (size_t i = 0; i < s->n && off < outlen; i++) {
		if (s->v[i].ttl_ms >= 0)
			continue;
		if (shown == NAMES_IN_ERR) {
			snprintf(out + off, outlen - off, " and %zu more", s->nottl - shown);
			return;
		}
		off += (size_t)snprintf(out + off, outlen - off, "%s'%s'",
		    shown ? ", " : "", s->v[i].q->name);
		shown++;
	}
}

/* Why a classic old queue OQ whose expiry is no shorter than its own TTL
 * (and that no other old queue feeds: CHAIN_TTL is its own TTL) is not
 * refused: RabbitMQ counts the expiry from the queue's last use, and a
 * producer that declares the queue at each publish (as the libraries that
 * make such queues do) renews it then, so the queue outlives its last
 * message by EXPIRES - TTL. A producer that declares it once and then only
 * publishes does not renew it; such a queue vanishing with messages in it
 * is what the watch's old_vanished alert names. */
static bool
expires_after_ttl(const struct old_queue *oq, int64_t chain_ttl)
{
	return strcmp(oq->q->type, "classic") == 0 && oq->ttl_ms >= 0 &&
	    chain_ttl == oq->ttl_ms && oq->expires_ms >= oq->ttl_ms;
}

/* Appends to WARNINGS the old_expiring entry of OQ with MSG and its figures,
 * and names it in NAMES (the Nth such queue). */
static void
expiring_note(const struct old_queue *oq, int64_t horizon, const char *msg,
    json_t *warnings, char *names, size_t nameslen, size_t n)
{
	size_t off = strlen(names);
	char e[32], h[32];

	json_array_append_new(warnings, json_pack("{s:s,s:s,s:I,s:I,s:s}", "kind",
	    "old_expiring", "queue", oq->q->name, "expires_ms",
	    (json_int_t)oq->expires_ms, "horizon_ms", (json_int_t)horizon,
	    "message", msg));
	if (n <= NAMES_IN_ERR && off < nameslen)
		snprintf(names + off, nameslen - off, "%s'%s' (%s%sexpires after %s, "
		    "horizon %s)", n > 1 ? ", " : "", oq->q->name,
		    strcmp(oq->q->type, "classic") == 0 ? "" : oq->q->type,
		    strcmp(oq->q->type, "classic") == 0 ? "" : ", ",
		    duration_format(oq->expires_ms, e, sizeof(e)),
		    duration_format(horizon, h, sizeof(h)));
}

/* Old queues that expire (x-expires, or a policy's expires). A classic
 * queue whose expiry is no shorter than its TTL is accepted with a note
 * (expires_after_ttl says why). Refused, unless old.allow_expiring makes
 * them warnings in WARNINGS: any other queue that expires sooner than its
 * horizon (its TTL + watch.allowance; with CHAIN_TTL, not NULL, the TTL of
 * its dead-letter chain up to and including it), which the broker can
 * delete with the messages published last before the flip still in it;
 * and any quorum (or stream) queue with an expiry at all, since RabbitMQ
 * does not renew a quorum queue's expiry when it is declared again: a
 * producer that declares it at each publish does not keep it alive, and
 * the broker deletes it with whatever it holds. Returns 0, or -1 with ERR. */
static int
expiring_check(const struct step_ctx *c, struct old_selection *s,
    const int64_t *chain_ttl, json_t *warnings, char *err, size_t errlen)
{
	const struct plan *p = c->plan;
	int64_t allowance = p->watch.allowance_ms;
	char names[1024] = "", e[32], h[32], t[32], msg[700];
	size_t n = 0, nquorum = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct old_queue *oq = &s->v[i];
		int64_t ttl = chain_ttl != NULL ? chain_ttl[i] : oq->ttl_ms;
		int64_t horizon = ttl + allowance;
		bool classic = strcmp(oq->q->type, "classic") == 0;
		const char *source = oq->q->expires == oq->expires_ms ?
		    "its x-expires argument" : "a policy's expires";

		if (oq->expires_ms < 0 || ttl < 0)
			continue;
		duration_format(oq->expires_ms, e, sizeof(e));
		if (classic && expires_after_ttl(oq, ttl)) {
			if (oq->expires_ms < horizon)
				add_note(oq, "its expiry (%s) is no shorter than its TTL (%s): "
				    "declared again at each publish, as libraries do, it "
				    "outlives its last message; the watch alerts if it "
				    "vanishes holding messages", e,
				    duration_format(oq->ttl_ms, t, sizeof(t)));
			continue;
		}
		if (classic && oq->expires_ms >= horizon)
			continue;
		duration_format(horizon, h, sizeof(h));
		if (!classic) {
			snprintf(msg, sizeof(msg), "old %s queue '%s' expires after %s unused "
			    "(%s): RabbitMQ does not renew a %s queue's expiry when it is "
			    "declared again, so it deletes the queue with whatever it holds "
			    "%s after its first declaration, however its producer uses it",
			    oq->q->type, oq->q->name, e, source, oq->q->type, e);
			nquorum++;
		} else
			snprintf(msg, sizeof(msg), "old queue '%s' expires after %s unused "
			    "(%s), sooner than its horizon of %s (TTL %s + allowance): the "
			    "broker can delete it with messages still waiting in it",
			    oq->q->name, e, source, h, oq->ttl_source);
		expiring_note(oq, horizon, msg, warnings, names, sizeof(names), ++n);
	}
	if (n == 0 || p->old.allow_expiring)
		return 0;
	if (nquorum == 0)
		snprintf(err, errlen, "%zu old queue%s sooner than %s horizon (TTL + "
		    "watch.allowance), so the broker can delete %s with messages still "
		    "waiting: %s%s; remove the expiry (x-expires or the policy's "
		    "expires), or set old.allow_expiring: true to go on with a warning "
		    "(the watch alerts when an old queue vanishes while holding "
		    "messages)", n, n == 1 ? " expires" : "s expire", n == 1 ? "its" :
		    "their", n == 1 ? "it" : "them", names, n > NAMES_IN_ERR ?
		    " and more" : "");
	else
		snprintf(err, errlen, "%zu old queue%s so that the broker can delete %s "
		    "with messages still waiting: %s%s; %zu %s quorum: RabbitMQ never "
		    "renews a quorum queue's expiry when it is declared again, so it "
		    "runs from its first declaration and the queue goes with whatever "
		    "it holds, with or without cutover (a library declaring its delay "
		    "queues as quorum, e.g. through a vhost's default queue type, "
		    "loses messages this way). Remove the expiry (x-expires or the "
		    "policy's expires) or declare them classic; old.allow_expiring: "
		    "true goes on with a warning", n, n == 1 ? " expires" : "s expire",
		    n == 1 ? "it" : "them", names, n > NAMES_IN_ERR ? " and more" : "",
		    nquorum, nquorum == 1 ? "is" : "are");
	return -1;
}

/* What the selected old queues add up to: how many hold messages and how
 * many, and the one with the largest TTL (its own, or its chain's). */
struct tally {
	size_t non_empty;
	int64_t total;
	int64_t max_ttl;		/* -1 while no TTL is known */
	const struct old_queue *longest;	/* NULL likewise */
};

/* Appends one entry per old queue of S to QUEUES (with its part of CHAIN,
 * when computed) and adds them up into T. */
static void
queues_json(const struct old_selection *s, const struct old_chain *chain,
    json_t *queues, struct tally *t)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct old_queue *oq = &s->v[i];
		const struct mgmt_queue *q = oq->q;

		if (q->messages > 0) {
			t->non_empty++;
			t->total += q->messages;
		}
		int64_t ttl = chain->n > 0 ? chain->ttl_ms[i] : oq->ttl_ms;

		if (ttl >= 0 && (t->longest == NULL || ttl > t->max_ttl)) {
			t->longest = oq;
			t->max_ttl = ttl;
		}
		json_array_append_new(queues, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,"
		    "s:b,s:o,s:o}",
		    "name", q->name, "type", q->type,
		    "ttl_ms", int_or_null(oq->ttl_ms),
		    "ttl_source", str_or_null(oq->ttl_source),
		    "expires_ms", int_or_null(oq->expires_ms),
		    "messages", int_or_null(q->messages),
		    "consumers", int_or_null(q->consumers),
		    "durable", q->durable,
		    "policy", str_or_null(q->policy),
		    "note", str_or_null(oq->note)));
		if (chain->n > 0) {
			json_t *part = json_pack_chain(chain, i);

			json_object_update(json_array_get(queues, i), part);
			json_decref(part);
		}
	}
}

/* Writes into ERR why an empty selection S (in C's vhost) has no horizon. */
static void
empty_selection_err(const struct step_ctx *c, const struct old_selection *s,
    char *err, size_t errlen)
{
	const struct plan *p = c->plan;

	if (p->old.match != NULL)
		snprintf(err, errlen, "old.queues.match '%s' selects no queue in vhost "
		    "'%s' (of %zu queues): an empty selection has no horizon; check "
		    "the pattern and the vhost", p->old.match, mgmt_vhost(c->mgmt),
		    s->list.n);
	else
		snprintf(err, errlen, "none of the %zu queues old.queues.names lists "
		    "exists in vhost '%s': an empty selection has no horizon",
		    p->old.nnames, mgmt_vhost(c->mgmt));
}

/* Writes into ERR and REASONING why S, with old queues that have no TTL,
 * has no horizon. */
static void
no_ttl_err(const struct old_selection *s, char *err, size_t errlen, char *reasoning,
    size_t rlen)
{
	char names[1024];

	list_no_ttl(s, names, sizeof(names));
	snprintf(err, errlen, "%zu old queue%s no TTL, so %s messages could wait "
	    "forever and the old path has no horizon: %s; set old.max_message_ttl "
	    "to the longest per-message TTL its publishers use", s->nottl,
	    s->nottl == 1 ? " has" : "s have", s->nottl == 1 ? "its" : "their", names);
	snprintf(reasoning, rlen, "No horizon: %zu of %zu old queues "
	    "%s no TTL and the plan gives no old.max_message_ttl.", s->nottl, s->n,
	    s->nottl == 1 ? "has" : "have");
}

/* Writes into REASONING how HORIZON follows from S and T (ALLOWANCE). */
static void
horizon_reasoning(const struct old_selection *s, const struct tally *t,
    int64_t horizon, int64_t allowance, char *reasoning, size_t rlen)
{
	char a[32], b[32], t1[40], t2[40];

	snprintf(reasoning, rlen, "%zu old queue%s, %zu non-empty holding "
	    "%lld message%s; the largest TTL is %s (%s, %s). A message already in the "
	    "old path comes out by %s (measured at %s + %s + allowance %s); messages "
	    "may still enter until the flip, so the final horizon is the last entry "
	    "into the old path + %s + %s.",
	    s->n, s->n == 1 ? "" : "s", t->non_empty, (long long)t->total,
	    t->total == 1 ? "" : "s",
	    duration_format(t->max_ttl, a, sizeof(a)), t->longest->q->name,
	    t->max_ttl > t->longest->ttl_ms ? "the sum of the TTLs along the "
	    "dead-letter chain of old queues that ends in it" : t->longest->ttl_source,
	    old_time_format(horizon, t1, sizeof(t1)),
	    old_time_format(s->at_ms, t2, sizeof(t2)), a,
	    duration_format(allowance, b, sizeof(b)), a, b);
}

/* The result's "summary" member. */
static json_t *
summary_json(const struct old_selection *s, const struct tally *t, int64_t horizon,
    int64_t allowance, const char *reasoning)
{
	return json_pack("{s:i,s:i,s:I,s:o,s:o,s:I,s:I,s:o,s:b,s:s,s:s}",
	    "queues", (int)s->n, "non_empty", (int)t->non_empty, "total_messages",
	    (json_int_t)t->total,
	    "max_ttl_ms", t->longest && s->nottl == 0 ? json_integer(t->max_ttl) :
	    json_null(),
	    "max_ttl_queue", t->longest && s->nottl == 0 ?
	    json_string(t->longest->q->name) : json_null(),
	    "measured_at_ms", (json_int_t)s->at_ms, "allowance_ms", (json_int_t)allowance,
	    "horizon_ms", horizon >= 0 ? json_integer(horizon) : json_null(),
	    "horizon_provisional", 1, "reasoning", reasoning,
	    "counts_from", "management statistics (they lag by up to 5-10 s)");
}

int
step_measure_horizon(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	const struct plan *p = c->plan;
	struct old_selection s = { 0 };
	struct old_chain chain = { 0 };
	struct tally t = { .max_ttl = -1 };
	bool chain_failed = false;
	json_t *queues = json_array(), *missing = json_array(), *summary;
	json_t *warnings = json_array();
	int64_t horizon = -1, allowance = p->watch.allowance_ms;
	char reasoning[1024] = "", expiring_err[2048] = "";
	int rc = -1, expiring_rc = 0;

	*result = NULL;
	if (step_prior_run(c, err, errlen) != 0)
		goto done;
	if (old_select(c, &s, err, errlen) != 0)
		goto done;
	/* Dead-letter chains among the old queues: a queue fed by others can
	 * hold a message as long as the whole chain. */
	if (s.n > 0 && s.nottl == 0 &&
	    old_chain_compute(c, &s, &chain, err, errlen) != 0)
		chain_failed = true;
	for (size_t i = 0; i < s.nmissing; i++)
		json_array_append_new(missing, json_string(s.missing[i]));
	/* Before the queues' entries are written: it adds to their notes. */
	if (s.n > 0 && s.nottl == 0 && !chain_failed)
		expiring_rc = expiring_check(c, &s, chain.n > 0 ? chain.ttl_ms : NULL,
		    warnings, expiring_err, sizeof(expiring_err));
	queues_json(&s, &chain, queues, &t);
	if (s.n == 0) {
		empty_selection_err(c, &s, err, errlen);
		goto done;
	}
	if (s.nottl > 0) {
		no_ttl_err(&s, err, errlen, reasoning, sizeof(reasoning));
		goto done;
	}
	if (chain_failed) {
		snprintf(reasoning, sizeof(reasoning), "No horizon: %s.", err);
		goto done;
	}
	if (expiring_rc != 0) {
		snprintf(err, errlen, "%s", expiring_err);
		snprintf(reasoning, sizeof(reasoning), "Refused: an old queue expires "
		    "sooner than its horizon and old.allow_expiring is not set.");
		goto done;
	}
	horizon = s.at_ms + t.max_ttl + allowance;
	horizon_reasoning(&s, &t, horizon, allowance, reasoning, sizeof(reasoning));
	rc = 0;
done:
	summary = summary_json(&s, &t, horizon, allowance, reasoning);
	*result = json_pack("{s:b,s:o,s:o,s:o,s:o,s:o}", "ok", rc == 0,
	    "selector", selector_json(p), "queues", queues, "missing", missing,
	    "summary", summary, "warnings", warnings);
	if (rc != 0)
		json_object_set_new(*result, "error", json_string(err));
	old_chain_free(&chain);
	old_selection_free(&s);
	return rc;
}
