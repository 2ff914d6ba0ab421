/* verify_ladder: reads the ladder back from the broker and compares every
 * object with the plan. Half a ladder is incorrect routing, not degraded
 * capacity, so any difference fails. For a library's naming (kombu,
 * nservicebus) the library's own objects are checked as it declares them:
 * exchanges without arguments, the delivery exchange's effective alternate
 * exchange from cutover's policy (naming a policy that hides it), and the
 * library's "#.KEY" destination bindings accepted with a warning. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "broker_needs.h"
#include "errbuf.h"
#include "policy.h"
#include "sentences.h"
#include "step.h"
#include "topology.h"

struct verify {
	json_t *objects;
	int ok, missing, drift;
	int warnings;			/* of the ok: right, with a caveat */
};

/* Queue policy keys and the queue arguments they stand for. A ladder queue
 * must not have any of them set to something the plan does not say. */
static const struct {
	const char *policy;
	const char *arg;
} queue_keys[] = {
	{ "message-ttl", "x-message-ttl" },
	{ "dead-letter-exchange", "x-dead-letter-exchange" },
	{ "dead-letter-strategy", "x-dead-letter-strategy" },
	{ "overflow", "x-overflow" },
	{ "dead-letter-routing-key", "x-dead-letter-routing-key" },
	{ "max-length", "x-max-length" },
	{ "max-length-bytes", "x-max-length-bytes" },
	{ "expires", "x-expires" },
	{ "delivery-limit", "x-delivery-limit" },
	{ NULL, NULL }
};

static void report(struct verify *v, const char *kind, const char *name,
    const char *status, const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void
report(struct verify *v, const char *kind, const char *name, const char *status,
    const char *fmt, ...)
{
	char detail[512] = "";
	va_list ap;

	if (fmt != NULL) {
		va_start(ap, fmt);
		vsnprintf(detail, sizeof(detail), fmt, ap);
		va_end(ap);
	}
	json_array_append_new(v->objects, json_pack("{s:s,s:s,s:s,s:s}", "kind", kind,
	    "name", name, "status", status, "detail", detail));
	if (strcmp(status, "ok") == 0)
		v->ok++;
	else if (strcmp(status, "warning") == 0) {
		v->ok++;
		v->warnings++;
	} else if (strcmp(status, "missing") == 0)
		v->missing++;
	else
		v->drift++;
}

/* Writes a JSON scalar as text for messages. */
static const char *
json_text(const json_t *j, char *out, size_t outlen)
{
	if (j == NULL)
		snprintf(out, outlen, "(not set)");
	else if (json_is_integer(j))
		snprintf(out, outlen, "%lld", (long long)json_integer_value(j));
	else if (json_is_string(j))
		snprintf(out, outlen, "%s", json_string_value(j));
	else {
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);

		snprintf(out, outlen, "%s", s ? s : "?");
		free(s);
	}
	return out;
}

/* Does the broker's value J equal the planned argument A? */
static int
arg_equal(const struct topology_arg *a, const json_t *j)
{
	if (a->is_int)
		return json_is_integer(j) && json_integer_value(j) == a->num;
	return json_is_string(j) && strcmp(json_string_value(j), a->str) == 0;
}

/* Adds to DIFF every way the queue's ARGS differ from the planned ones, and
 * every unplanned argument that could drop, delay or misroute a message.
 * Returns how many differences it found. */
static int
arg_diffs(const struct topology_queue *q, const json_t *args, char *diff, size_t difflen)
{
	char have[128], want[128];
	int n = 0;

	for (size_t i = 0; i < q->nargs; i++) {
		const struct topology_arg *a = &q->args[i];
		const json_t *j;

		if (strcmp(a->key, "x-queue-type") == 0)
			continue;               /* compared with the queue's type */
		j = json_object_get(args, a->key);
		if (!arg_equal(a, j)) {
			sentences_add(diff, difflen, "%s is %s, the plan wants %s", a->key,
			    json_text(j, have, sizeof(have)),
			    topology_arg_format(a, want, sizeof(want)));
			n++;
		}
	}
	for (size_t k = 0; queue_keys[k].policy != NULL; k++) {
		const json_t *aj = json_object_get(args, queue_keys[k].arg);

		if (aj != NULL && topology_arg_find(q->args, q->nargs, queue_keys[k].arg) == NULL) {
			sentences_add(diff, difflen, "unplanned argument %s = %s", queue_keys[k].arg,
			    json_text(aj, have, sizeof(have)));
			n++;
		}
	}
	return n;
}

/* Adds to DIFF every key of policy definition DEF (named NAME) that sets
 * something the plan does not say for queue Q. Returns how many. */
static int
policy_diffs(const struct topology_queue *q, const json_t *def, const char *name,
    char *diff, size_t difflen)
{
	char have[128], want[128];
	int n = 0;

	for (size_t k = 0; queue_keys[k].policy != NULL; k++) {
		const struct topology_arg *a = topology_arg_find(q->args, q->nargs,
		    queue_keys[k].arg);
		const json_t *pj = json_object_get(def, queue_keys[k].policy);

		if (pj == NULL || (a != NULL && arg_equal(a, pj)))
			continue;
		sentences_add(diff, difflen, "policy '%s' sets %s = %s, the plan wants %s",
		    name ? name : "?", queue_keys[k].policy, json_text(pj, have, sizeof(have)),
		    a ? topology_arg_format(a, want, sizeof(want)) : "it unset");
		n++;
	}
	return n;
}

/* The policy of POLICIES that applies to object NAME of KIND (queue type
 * TYPE), as the broker picks it (policy_for). A policy whose pattern PCRE2
 * cannot read, or whose match hits a limit, counts as applying when no
 * higher one does: better a false alarm than a missed override. */
static const struct policy *
effective_policy(const struct policy_set *policies, const char *name,
    enum policy_object kind, const char *type)
{
	const struct policy *unknown, *p = policy_for(policies, name, kind, type, &unknown);

	return unknown != NULL ? unknown : p;
}

static int
verify_queue(struct step_ctx *c, struct verify *v, const struct topology_queue *q,
    const struct policy_set *policies, const struct policy_set *op_policies,
    char *err, size_t errlen)
{
	struct mgmt_queue_info qi;
	const struct topology_arg *type = topology_arg_find(q->args, q->nargs, "x-queue-type");
	const char *kind = q->role == TOPOLOGY_DESTINATION ? "destination" : "queue";
	char why[512], diff[1024] = "";
	int r, n = 0;

	r = mgmt_get_queue(c->mgmt, q->name, &qi, why, sizeof(why));
	if (r == MGMT_NOT_FOUND && q->role == TOPOLOGY_DESTINATION) {
		report(v, kind, q->name, "missing", "no such queue, listed by "
		    "ladder.destinations at %s: a typo? Its consumers declare it (or "
		    "ladder.create_destinations: true lets declare_ladder create it)",
		    plan_destination_where(c->plan, q->name, why, sizeof(why)));
		return 0;
	}
	if (r == MGMT_NOT_FOUND) {
		report(v, kind, q->name, "missing", "no such queue");
		return 0;
	}
	if (r != 0) {
		errbuf_set(err, errlen, "reading queue '%s': %s", q->name, why);
		return -1;
	}
	if (q->role == TOPOLOGY_DESTINATION) {
		/* Owned by its consumers: it must exist and be durable. */
		if (!qi.q.durable)
			report(v, kind, q->name, "drift", "not durable: its messages do not "
			    "survive a broker restart");
		else
			report(v, kind, q->name, "ok", "%s", qi.q.type);
		goto done;
	}
	if (type != NULL && strcmp(qi.q.type, type->str) != 0) {
		sentences_add(diff, sizeof(diff), "type is %s, the plan wants %s", qi.q.type,
		    type->str);
		n++;
	}
	if (!qi.q.durable) {
		sentences_add(diff, sizeof(diff), "not durable");
		n++;
	}
	/* The queue's own report of its effective policy lags by the statistics
	 * interval (seconds after a policy changes); the policy lists are
	 * current, so the effective policy is worked out from them. */
	{
		const struct policy *up = effective_policy(policies, q->name,
		    POLICY_QUEUE, qi.q.type);
		const struct policy *op = effective_policy(op_policies, q->name,
		    POLICY_QUEUE, qi.q.type);

		n += arg_diffs(q, qi.arguments, diff, sizeof(diff));
		if (up != NULL)
			n += policy_diffs(q, up->definition, up->name, diff, sizeof(diff));
		if (op != NULL)
			n += policy_diffs(q, op->definition, op->name, diff, sizeof(diff));
	}
	if (n)
		report(v, kind, q->name, "drift", "%s", diff);
	else
		report(v, kind, q->name, "ok", NULL);
done:
	mgmt_queue_info_free(&qi);
	return 0;
}

/* The naming style of P's ladder when a library declares that ladder
 * itself (ladder_style's library), else NULL. */
static const struct ladder_style *
library_style(const struct plan *p)
{
	const struct ladder_style *s = ladder_style(p->ladder.naming);

	return s != NULL && s->library ? s : NULL;
}

/* Adds to DIFF every argument of an exchange the library LIB declares: it
 * declares its exchanges with none, so its next declare would fail with
 * 406 PRECONDITION_FAILED. */
static void
library_args(const struct ladder_style *lib, const json_t *args, char *diff,
    size_t difflen)
{
	const char *key;
	json_t *val;
	char have[128];

	json_object_foreach((json_t *)args, key, val)
		sentences_add(diff, difflen, "argument %s = %s: %s declares this exchange "
		    "with no arguments, so its next declare fails with 406 "
		    "PRECONDITION_FAILED", key, json_text(val, have, sizeof(have)),
		    lib->name);
}

/* The policy of POLICIES named NAME, or NULL. */
static const struct policy *
policy_named(const struct policy_set *policies, const char *name)
{
	for (size_t i = 0; i < policies->n; i++)
		if (strcmp(policies->v[i].name, name) == 0)
			return &policies->v[i];
	return NULL;
}

/* Adds to DIFF how exchange MX's effective alternate exchange, the one the
 * broker takes from the policy that applies to it (its own report of
 * which, current as policies change; only one applies), differs from what
 * TP, the plan's policy for it, sets; naming the policy that applies
 * instead of TP when one does. */
static void
effective_ae(const struct mgmt_exchange *mx, const struct topology_policy *tp,
    const struct policy_set *policies, char *diff, size_t difflen)
{
	const struct policy *eff;
	const json_t *pae;
	char have[128];

	if (mx->policy == NULL) {
		sentences_add(diff, difflen, "no policy applies to it, so it has no "
		    "alternate exchange: delayed messages no destination takes are dropped, "
		    "not parked (policy '%s' sets %s = %s)", tp->name, tp->arg.key,
		    tp->arg.str);
		return;
	}
	if ((eff = policy_named(policies, mx->policy)) == NULL) {
		sentences_add(diff, difflen, "policy '%s' applies to it, but the vhost's "
		    "policies do not list it", mx->policy);
		return;
	}
	pae = json_object_get(eff->definition, tp->arg.key);
	if (arg_equal(&tp->arg, pae))
		return;
	json_text(pae, have, sizeof(have));
	if (strcmp(eff->name, tp->name) == 0)
		sentences_add(diff, difflen, "its policy '%s' sets %s = %s, the plan wants %s",
		    eff->name, tp->arg.key, have, tp->arg.str);
	else
		sentences_add(diff, difflen, "policy '%s' (priority %lld) applies to it "
		    "instead of '%s' (priority %d), since only one policy applies to an "
		    "object, and sets %s%s%s: delayed messages no destination takes are %s",
		    eff->name, (long long)eff->priority, tp->name, tp->priority,
		    pae != NULL ? tp->arg.key : "no ", pae != NULL ? " = " : tp->arg.key,
		    pae != NULL ? have : "",
		    pae != NULL ? "sent elsewhere, not parked" : "dropped, not parked");
}

/* Checks the plan's policy TP against POLICIES: it exists with the planned
 * pattern, apply-to, priority and key. */
static void
verify_policy(struct verify *v, const struct topology_policy *tp,
    const struct policy_set *policies)
{
	const struct policy *p = policy_named(policies, tp->name);
	const json_t *pae;
	char diff[768] = "", have[128];

	if (p == NULL) {
		report(v, "policy", tp->name, "missing", "no such policy: exchange '%s' gets "
		    "its %s from it", tp->target, tp->arg.key);
		return;
	}
	if (strcmp(p->pattern, tp->pattern) != 0)
		sentences_add(diff, sizeof(diff), "pattern is %s, the plan wants %s",
		    p->pattern, tp->pattern);
	if (p->apply_to == NULL || strcmp(p->apply_to, tp->apply_to) != 0)
		sentences_add(diff, sizeof(diff), "apply-to is %s, the plan wants %s",
		    p->apply_to ? p->apply_to : "all", tp->apply_to);
	if (p->priority != tp->priority)
		sentences_add(diff, sizeof(diff), "priority is %lld, the plan wants %d",
		    (long long)p->priority, tp->priority);
	pae = json_object_get(p->definition, tp->arg.key);
	if (!arg_equal(&tp->arg, pae))
		sentences_add(diff, sizeof(diff), "%s is %s, the plan wants %s", tp->arg.key,
		    json_text(pae, have, sizeof(have)), tp->arg.str);
	if (*diff != '\0')
		report(v, "policy", tp->name, "drift", "%s", diff);
	else
		report(v, "policy", tp->name, "ok", NULL);
}

static int
verify_exchange(struct step_ctx *c, struct verify *v, const struct topology *t,
    const struct topology_exchange *x, const struct policy_set *policies,
    char *err, size_t errlen)
{
	const struct ladder_style *lib = library_style(c->plan);
	const struct topology_policy *tp = topology_policy_for(t, x->name);
	struct mgmt_exchange mx;
	const struct policy *pol;
	const struct topology_arg *ae = topology_arg_find(x->args, x->nargs,
	    "alternate-exchange");
	char why[512], diff[768] = "", have[128];
	int r;

	r = mgmt_get_exchange(c->mgmt, x->name, &mx, why, sizeof(why));
	if (r == MGMT_NOT_FOUND && x->role == TOPOLOGY_DESTINATION) {
		report(v, "destination", x->name, "missing", "no such exchange, listed by "
		    "ladder.destinations at %s: its owner declares it",
		    plan_destination_where(c->plan, x->name, why, sizeof(why)));
		return 0;
	}
	if (r == MGMT_NOT_FOUND) {
		report(v, "exchange", x->name, "missing", "no such exchange");
		return 0;
	}
	if (r != 0) {
		errbuf_set(err, errlen, "reading exchange '%s': %s", x->name, why);
		return -1;
	}
	if (x->role == TOPOLOGY_DESTINATION) {
		/* Its owner's, of its type: it must exist and be durable. */
		if (!mx.durable)
			report(v, "destination", x->name, "drift", "exchange not durable: "
			    "its bindings do not survive a broker restart");
		else
			report(v, "destination", x->name, "ok", "%s exchange", mx.type);
		mgmt_exchange_free(&mx);
		return 0;
	}
#define ADD(...) sentences_add(diff, sizeof(diff), __VA_ARGS__)
	if (strcmp(mx.type, x->type) != 0)
		ADD("type is %s, the plan wants %s", mx.type, x->type);
	if (!mx.durable)
		ADD("not durable");
	if (mx.auto_delete)
		ADD("auto-delete");
	if (mx.internal)
		ADD("internal: publishers cannot enter here");
	if (lib && x->role != TOPOLOGY_PARKING)
		library_args(lib, mx.arguments, diff, sizeof(diff));
	if (tp != NULL) {
		effective_ae(&mx, tp, policies, diff, sizeof(diff));
		goto checked;
	}
	if (ae != NULL && !arg_equal(ae, json_object_get(mx.arguments, "alternate-exchange")))
		ADD("alternate-exchange is %s, the plan wants %s",
		    json_text(json_object_get(mx.arguments, "alternate-exchange"), have,
		    sizeof(have)), ae->str);
	if (ae == NULL && json_object_get(mx.arguments, "alternate-exchange") != NULL)
		ADD("unplanned alternate-exchange %s",
		    json_text(json_object_get(mx.arguments, "alternate-exchange"), have,
		    sizeof(have)));
	pol = effective_policy(policies, x->name, POLICY_EXCHANGE, NULL);
	if (pol != NULL) {
		const json_t *pae = json_object_get(pol->definition, "alternate-exchange");

		if (pae != NULL && (ae == NULL || !arg_equal(ae, pae)))
			ADD("policy '%s' sets alternate-exchange = %s", pol->name,
			    json_text(pae, have, sizeof(have)));
	}
checked:
#undef ADD
	if (*diff != '\0')
		report(v, "exchange", x->name, "drift", "%s", diff);
	else
		report(v, "exchange", x->name, "ok", NULL);
	mgmt_exchange_free(&mx);
	return 0;
}

/* Is KEY a destination binding of the safe shape: exactly LEVELS "*" words,
 * then literal words? Such a binding routes only its own destination. */
static int
safe_destination_key(const char *key, int levels)
{
	for (int i = 0; i < levels; i++) {
		if (key[0] != '*' || key[1] != '.')
			return 0;
		key += 2;
	}
	return *key != '\0' && strpbrk(key, "*#") == NULL;
}

/* The literal words a library's destination binding key "#.WORDS" ends
 * in, or NULL when KEY is not of that shape. */
static const char *
library_suffix(const char *key)
{
	if (strncmp(key, "#.", 2) != 0 || key[2] == '\0' || strpbrk(key + 2, "*#") != NULL)
		return NULL;
	return key + 2;
}

/* Where exchange EXCH, reached from the delivery exchange by a library's
 * "#.SUFFIX" binding, sends a message whose key ends in SUFFIX: a queue
 * bound to it with SUFFIX (Kombu: the task's exchange and queue), or any
 * queue when it is a fanout (NServiceBus: the endpoint's exchange). Writes
 * the first such queue (QUEUE set: only QUEUE counts) into OUT. Returns 0
 * with *FOUND true when there is one, false when EXCH routes SUFFIX to no
 * queue (or does not exist); -1 with ERR. */
static int
library_route(struct step_ctx *c, const char *exch, const char *suffix,
    const char *queue, bool *found, char *out, size_t outlen, char *err,
    size_t errlen)
{
	struct mgmt_exchange mx;
	struct mgmt_binding_list bl;
	char why[512];
	int r, fanout;

	*found = false;
	r = mgmt_get_exchange(c->mgmt, exch, &mx, why, sizeof(why));
	if (r == MGMT_NOT_FOUND)
		return 0;
	if (r != 0) {
		errbuf_set(err, errlen, "reading exchange '%s': %s", exch, why);
		return -1;
	}
	fanout = strcmp(mx.type, "fanout") == 0;
	mgmt_exchange_free(&mx);
	if (mgmt_list_bindings_from(c->mgmt, exch, &bl, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "reading the bindings of exchange '%s': %s", exch, why);
		return -1;
	}
	for (size_t j = 0; j < bl.n && !*found; j++) {
		const struct mgmt_binding *b = &bl.v[j];

		*found = b->destination_type == MGMT_DEST_QUEUE &&
		    (fanout || strcmp(b->routing_key, suffix) == 0) &&
		    (queue == NULL || strcmp(b->destination, queue) == 0);
		if (*found)
			snprintf(out, outlen, "%s", b->destination);
	}
	mgmt_binding_list_free(&bl);
	return 0;
}

/* Reports the delivery exchange's binding MB to an exchange, named NAME,
 * for a library's naming: of the library's shape ("#.SUFFIX" to an
 * exchange that routes SUFFIX to a queue) it is valid, with the warning
 * that suffix matching collides; otherwise it is drift. Returns 0, or -1
 * with ERR. */
static int
report_library_binding(struct step_ctx *c, struct verify *v, const struct mgmt_binding *mb,
    const char *name, char *err, size_t errlen)
{
	const char *suffix = library_suffix(mb->routing_key);
	char queue[LADDER_NAME_MAX];
	bool routed;

	if (suffix == NULL) {
		report(v, "binding", name, "drift", "unplanned binding: it could misroute or "
		    "copy delayed messages");
		return 0;
	}
	if (library_route(c, mb->destination, suffix, NULL, &routed, queue,
	    sizeof(queue), err, errlen) != 0)
		return -1;
	if (!routed)
		report(v, "binding", name, "drift", "exchange '%s' routes '%s' to no queue: "
		    "delayed messages for it are dropped there (the delivery exchange's "
		    "alternate exchange never sees them)", mb->destination, suffix);
	else
		report(v, "binding", name, "warning", "the library's destination binding, "
		    "to queue '%s' through exchange '%s'; '#.' matches by suffix, so a "
		    "delayed message for any destination ending in '.%s' reaches it too",
		    queue, mb->destination, suffix);
	return 0;
}

/* Looks, among the delivery exchange's bindings BL, for the library's
 * route to destination queue B->destination: "#.KEY" (KEY: the
 * destination's routing key) to an exchange that routes KEY to that
 * queue. Writes that exchange into EXCH. Returns 0 with *FOUND true when
 * there is one, false when not; -1 with ERR. */
static int
library_destination(struct step_ctx *c, const struct mgmt_binding_list *bl,
    const struct topology_binding *b, bool *found, char *exch, size_t exchlen,
    char *err, size_t errlen)
{
	char queue[LADDER_NAME_MAX];
	const char *key = b->key;

	*found = false;
	/* B's key is one word per level, then the destination's routing key
	 * (which, in a destination's long form, is not the queue's name). */
	for (int w = 0; w < c->plan->ladder.levels && key != NULL; w++)
		key = (key = strchr(key, '.')) != NULL ? key + 1 : NULL;
	if (key == NULL || b->to_exchange)
		return 0;
	for (size_t j = 0; j < bl->n; j++) {
		const struct mgmt_binding *mb = &bl->v[j];
		const char *suffix = library_suffix(mb->routing_key);
		int r;

		if (mb->destination_type != MGMT_DEST_EXCHANGE || suffix == NULL ||
		    strcmp(suffix, key) != 0)
			continue;
		r = library_route(c, mb->destination, suffix, b->destination, found,
		    queue, sizeof(queue), err, errlen);
		if (r != 0)
			return r;
		if (*found) {
			snprintf(exch, exchlen, "%s", mb->destination);
			return 0;
		}
	}
	return 0;
}

static int
verify_bindings(struct step_ctx *c, struct verify *v, const struct topology *t,
    const struct topology_exchange *x, char *err, size_t errlen)
{
	struct mgmt_binding_list bl;
	char why[512], name[3 * LADDER_NAME_MAX + 32], exch[LADDER_NAME_MAX];
	bool lib = library_style(c->plan) != NULL && x->role == TOPOLOGY_DELIVERY;
	size_t i, j;
	int rc = -1;

	if (mgmt_list_bindings_from(c->mgmt, x->name, &bl, why, sizeof(why)) != 0) {
		errbuf_set(err, errlen, "reading the bindings of exchange '%s': %s", x->name, why);
		return -1;
	}
	for (i = 0; i < t->nbindings; i++) {
		const struct topology_binding *b = &t->bindings[i];
		bool via_library = false;
		int found = 0;

		if (strcmp(b->source, x->name) != 0)
			continue;
		for (j = 0; j < bl.n && !found; j++)
			found = strcmp(bl.v[j].destination, b->destination) == 0 &&
			    (bl.v[j].destination_type == MGMT_DEST_EXCHANGE) == b->to_exchange &&
			    strcmp(bl.v[j].routing_key, b->key) == 0;
		snprintf(name, sizeof(name), "%s -> %s %s '%s'", b->source,
		    b->to_exchange ? "exchange" : "queue", b->destination, b->key);
		if (found) {
			report(v, "binding", name, "ok", NULL);
			continue;
		}
		if (lib && !b->to_exchange && library_destination(c, &bl, b, &via_library,
		    exch, sizeof(exch), err, errlen) != 0)
			goto done;
		found = via_library;
		if (found)
			report(v, "binding", name, "warning", "not bound so, but the library's "
			    "binding through exchange '%s' routes it ('#.' suffix matching)",
			    exch);
		else
			report(v, "binding", name, "missing", "no such binding");
	}
	for (j = 0; j < bl.n; j++) {
		const struct mgmt_binding *mb = &bl.v[j];
		int planned = 0;

		for (i = 0; i < t->nbindings && !planned; i++)
			planned = strcmp(t->bindings[i].source, x->name) == 0 &&
			    strcmp(t->bindings[i].destination, mb->destination) == 0 &&
			    (mb->destination_type == MGMT_DEST_EXCHANGE) ==
			    t->bindings[i].to_exchange &&
			    strcmp(t->bindings[i].key, mb->routing_key) == 0;
		if (planned)
			continue;
		snprintf(name, sizeof(name), "%s -> %s %s '%s'", x->name,
		    mb->destination_type == MGMT_DEST_EXCHANGE ? "exchange" : "queue",
		    mb->destination, mb->routing_key);
		if (x->role == TOPOLOGY_DELIVERY && mb->destination_type == MGMT_DEST_QUEUE &&
		    safe_destination_key(mb->routing_key, c->plan->ladder.levels))
			report(v, "binding", name, "ok",
			    "a destination bound outside the plan; it routes only its own key");
		else if (lib && mb->destination_type == MGMT_DEST_EXCHANGE) {
			if (report_library_binding(c, v, mb, name, err, errlen) != 0)
				goto done;
		} else
			report(v, "binding", name, "drift",
			    "unplanned binding: it could misroute or copy delayed messages");
	}
	rc = 0;
done:
	mgmt_binding_list_free(&bl);
	return rc;
}

int
step_verify_ladder(struct step_ctx *c, json_t **result, char *err, size_t errlen)
{
	struct verify v = { json_array(), 0, 0, 0, 0 };
	struct policy_set policies = { 0 }, op_policies = { 0 };
	struct topology t;
	json_t *broker = NULL;
	size_t i;
	int rc = -1, failed = 1;

	*result = NULL;
	memset(&t, 0, sizeof(t));
	/* What the plan needs of the broker first: a ladder that matches the
	 * plan on a broker without at-least-once dead-lettering still loses
	 * messages. */
	if (needs_check(c->mgmt, c->plan, &broker, err, errlen) != 0)
		goto done;
	if (topology_build(c->plan, &t, err, errlen) != 0)
		goto done;
	if (policy_set_read(c->mgmt, "policies", &policies, err, errlen) != 0 ||
	    policy_set_read(c->mgmt, "operator-policies", &op_policies, err, errlen) != 0)
		goto done;
	for (i = 0; i < t.nexchanges; i++)
		if (verify_exchange(c, &v, &t, &t.exchanges[i], &policies, err, errlen) != 0)
			goto done;
	for (i = 0; i < t.npolicies; i++)
		verify_policy(&v, &t.policies[i], &policies);
	for (i = 0; i < t.nqueues; i++)
		if (verify_queue(c, &v, &t.queues[i], &policies, &op_policies, err, errlen) != 0)
			goto done;
	for (i = 0; i < t.nexchanges; i++)
		if (t.exchanges[i].role != TOPOLOGY_DESTINATION &&  /* its owner's */
		    verify_bindings(c, &v, &t, &t.exchanges[i], err, errlen) != 0)
			goto done;
	failed = 0;
	if (v.missing || v.drift) {
		errbuf_set(err, errlen, "the ladder differs from the plan: %d missing, %d drifted "
		    "(of %d objects)", v.missing, v.drift, v.ok + v.missing + v.drift);
		goto done;
	}
	rc = 0;
done:
	*result = json_pack("{s:b,s:o,s:{s:i,s:i,s:i,s:i}}", "ok", rc == 0,
	    "objects", v.objects, "counts", "ok", v.ok, "missing", v.missing,
	    "drift", v.drift, "warnings", v.warnings);
	if (broker != NULL)
		json_object_set_new(*result, "broker", broker);
	if (failed)
		json_object_set_new(*result, "error", json_string(err));
	policy_set_free(&policies);
	policy_set_free(&op_policies);
	topology_free(&t);
	return rc;
}
