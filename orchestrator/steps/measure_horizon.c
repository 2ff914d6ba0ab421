/* measure_horizon: finds the old delay queues (old_select), reads each
 * one's effective TTL and dead-letter chain (old_chain.c), and works out
 * the horizon of the old path: the latest moment a message that is in it,
 * or still enters it, can come out. What remove_old and the engine share
 * with it is the old-path library, orchestrator/oldpath/. */
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "errbuf.h"
#include "old_path.h"
#include "sentences.h"
#include "step.h"

#define NAMES_IN_ERR 10	/* queue names an error message lists at most */

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
	return json_pack("{s:I,s:o,s:o}", "chain_ttl_ms", (json_int_t)ch->ttl_ms[i],
	    "dead_letters_to", ch->to[i] != NULL ? json_incref(ch->to[i]) : json_array(),
	    "fed_by", ch->from[i] != NULL ? json_incref(ch->from[i]) : json_array());
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
				old_queue_note(oq, "its expiry (%s) "
				    "is no shorter than its TTL (%s): declared again at each "
				    "publish, as libraries do, it outlives its last message; "
				    "the watch alerts if it vanishes holding messages", e,
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
			    oq->q->name, e, source, h, oq->ttl_source != NULL ? oq->ttl_source : "");
		expiring_note(oq, horizon, msg, warnings, names, sizeof(names), ++n);
	}
	if (n == 0 || p->old.allow_expiring)
		return 0;
	if (nquorum == 0)
		errbuf_set(err, errlen, "%zu old queue%s sooner than %s horizon (TTL + "
		    "watch.allowance), so the broker can delete %s with messages still "
		    "waiting: %s%s; remove the expiry (x-expires or the policy's "
		    "expires), or set old.allow_expiring: true to go on with a warning "
		    "(the watch alerts when an old queue vanishes while holding "
		    "messages)", n, n == 1 ? " expires" : "s expire", n == 1 ? "its" :
		    "their", n == 1 ? "it" : "them", names, n > NAMES_IN_ERR ?
		    " and more" : "");
	else
		errbuf_set(err, errlen, "%zu old queue%s so that the broker can delete %s "
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

/* The entry of old queue I of S, with its part of CHAIN when computed (a
 * new reference, NULL out of memory). */
static json_t *
queue_json(const struct old_selection *s, const struct old_chain *chain, size_t i)
{
	const struct old_queue *oq = &s->v[i];
	const struct mgmt_queue *q = oq->q;
	json_t *e = json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o}",
	    "name", q->name, "type", q->type,
	    "ttl_ms", int_or_null(oq->ttl_ms),
	    "ttl_source", str_or_null(oq->ttl_source),
	    "expires_ms", int_or_null(oq->expires_ms),
	    "messages", int_or_null(q->messages),
	    "consumers", int_or_null(q->consumers),
	    "durable", q->durable,
	    "policy", str_or_null(q->policy),
	    "note", str_or_null(oq->note));

	if (e != NULL && chain->n > 0) {
		json_t *part = json_pack_chain(chain, i);

		json_object_update(e, part);
		json_decref(part);
	}
	return e;
}

/* Hands over one entry per old queue of S: into ROWS, an entry's text at
 * a time, when not NULL (the engine writes them a row each), else
 * appended to QUEUES; and adds them up into T. Returns 0, or -1 out of
 * memory. */
static int
queues_json(const struct old_selection *s, const struct old_chain *chain,
    struct step_rows *rows, json_t *queues, struct tally *t)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct old_queue *oq = &s->v[i];
		int64_t ttl = chain->n > 0 ? chain->ttl_ms[i] : oq->ttl_ms;

		if (oq->q->messages > 0) {
			t->non_empty++;
			t->total += oq->q->messages;
		}
		if (ttl >= 0 && (t->longest == NULL || ttl > t->max_ttl)) {
			t->longest = oq;
			t->max_ttl = ttl;
		}
		if (step_rows_put(rows, queues, queue_json(s, chain, i)) != 0)
			return -1;
	}
	return 0;
}

/* Writes into ERR why an empty selection S (in C's vhost) has no horizon. */
static void
empty_selection_err(const struct step_ctx *c, const struct old_selection *s,
    char *err, size_t errlen)
{
	const struct plan *p = c->plan;

	if (p->old.match != NULL)
		errbuf_set(err, errlen, "old.queues.match '%s' selects no queue in vhost "
		    "'%s' (of %zu queues): an empty selection has no horizon; check "
		    "the pattern and the vhost", p->old.match, mgmt_vhost(c->old_mgmt),
		    s->list.n);
	else
		errbuf_set(err, errlen, "none of the %zu queues old.queues.names lists "
		    "exists in vhost '%s': an empty selection has no horizon",
		    p->old.nnames, mgmt_vhost(c->old_mgmt));
}

/* Writes into ERR and REASONING why S, with old queues that have no TTL,
 * has no horizon. */
static void
no_ttl_err(const struct old_selection *s, char *err, size_t errlen, char *reasoning,
    size_t rlen)
{
	char names[1024];

	list_no_ttl(s, names, sizeof(names));
	errbuf_set(err, errlen, "%zu old queue%s no TTL, so %s messages could wait "
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
	    "dead-letter chain of old queues that ends in it" : t->longest->ttl_source != NULL ?
	    t->longest->ttl_source : "",
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
	if (queues_json(&s, &chain, c->rows_wanted ? &c->rows : NULL, queues, &t) != 0) {
		errbuf_set(err, errlen, "the %zu old queues' entries: %s", s.n,
		    c->rows.err[0] != '\0' ? c->rows.err : "out of memory");
		step_rows_clear(&c->rows);	/* none rather than some */
		goto done;
	}
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
		errbuf_set(err, errlen, "%s", expiring_err);
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
