/* check: what `cutover check` does with one plan, contacting nothing:
 * load and validate it, and for a valid one render the dry run (the
 * ladder, every object declare_ladder would create, the steps and gates)
 * and the design review, as text or JSON. The command (cli_check.c) and
 * the fuzz target over check's whole path (tests/fuzz) call the same
 * function. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "check.h"
#include "duration.h"
#include "plan.h"
#include "plan_flag.h"
#include "plan_library.h"
#include "review.h"
#include "steps/move_entry.h"
#include "topology.h"

static const char *
role_name(enum topology_role r)
{
	switch (r) {
	case TOPOLOGY_LEVEL: return "level";
	case TOPOLOGY_DELIVERY: return "delivery";
	case TOPOLOGY_PARKING: return "parking";
	case TOPOLOGY_DESTINATION: return "destination";
	}
	return "?";
}

static json_t *
args_json(const struct topology_arg *args, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; i < n; i++)
		json_object_set_new(o, args[i].key, args[i].is_int ?
		    json_integer(args[i].num) : json_string(args[i].str));
	return o;
}

/* What the plan's TLS settings for one service (broker, flag) are, with
 * the warning `verify: false` earns; NULL when the service uses no TLS. */
static json_t *
tls_json(const struct tls_opts *t, const char *path, bool used)
{
	char w[512];
	const char *warn = tls_insecure_warning(t, path, w, sizeof(w));
	json_t *o;

	if (!used)
		return NULL;
	o = json_pack("{s:s,s:b,s:s?,s:s?,s:s?}", "where", tls_where(t, path),
	    "verify", !t->no_verify, "ca", t->ca_file, "client_cert",
	    t->cert_file, "server_name", t->server_name);
	if (o != NULL && warn != NULL)
		json_object_set_new(o, "warning", json_string(warn));
	return o;
}

static bool
is_tls_url(const char *u)
{
	return u != NULL && (strncmp(u, "amqps://", 8) == 0 ||
	    strncmp(u, "https://", 8) == 0);
}

/* Does any of the N URLS (a cluster's) use TLS? */
static bool
any_tls_url(char *const *urls, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (is_tls_url(urls[i]))
			return true;
	return false;
}

/* Whether any URL of P's flag (its kind's, plan_flag.h) is https://. */
/* tls_json of broker section B ("broker.tls", "target.tls"). */
static json_t *
broker_tls_json(const struct plan_broker *b)
{
	char path[32];

	snprintf(path, sizeof(path), "%s.tls", b->section);
	return tls_json(&b->tls, path, is_tls_url(b->amqp) ||
	    is_tls_url(b->management) || any_tls_url(b->amqp_urls, b->namqp) ||
	    any_tls_url(b->management_urls, b->nmanagement));
}

static bool
flag_tls_url(const struct plan *p)
{
	const char *urls[8];
	size_t n = plan_flag_urls(p, urls, sizeof(urls) / sizeof(urls[0]));

	for (size_t i = 0; i < n; i++)
		if (is_tls_url(urls[i]))
			return true;
	return false;
}

/* A source of entry times and its fallback, as a plan writes them. */
static json_t *
sources_json(int from, int then)
{
	return then == MOVE_FROM_UNKNOWN ? json_string(move_from_name(from)) :
	    json_pack("[s,s]", move_from_name(from), move_from_name(then));
}

/* What P's old.library implies (NULL without one): the library's kinds of
 * delay queue with where they dead-letter, their expiry and the trust of
 * their entry times, the selection and the entry rules in force, and
 * which of those the plan wrote itself. */
static json_t *
library_json(const struct plan *p)
{
	const struct plan_library *l = p->old.library;
	json_t *o, *ks, *es;

	if (l == NULL)
		return NULL;
	ks = json_array();
	for (size_t i = 0; i < l->nkinds; i++) {
		const struct plan_library_kind *k = &l->kinds[i];

		json_array_append_new(ks, json_pack("{s:s,s:s,s:s,s:s,s:b,s:s?,s:o,s:s}",
		    "what", k->what, "shape", k->shape, "match", k->match,
		    "dead_letter", k->dead_letter, "dead_letter_key", k->dead_letter_key,
		    "expires", k->expiry, "entry", sources_json(k->from, k->then),
		    "trust", k->trust));
	}
	es = json_array();
	for (size_t i = 0; i < p->move_old.nentries; i++) {
		const struct plan_move_entry *e = &p->move_old.entries[i];

		json_array_append_new(es, json_pack("{s:s,s:o,s:s?}", "match", e->match,
		    "from", sources_json(e->from, e->then), "header", e->header));
	}
	o = json_pack("{s:s,s:s,s:o,s:s?,s:s,s:o,s:s}", "library", l->name,
	    "title", l->title, "kinds", ks, "selection", p->old.match,
	    "selection_from", p->old.match_from_library ? "library" : "plan",
	    "entry", es, "entry_from", p->move_old.entries_from_library ? "library" :
	    "plan");
	return o;
}

/* The dry run of a valid plan as JSON: what `check --json` prints and what
 * the human form is printed from. */
static json_t *
describe(const char *file, const struct plan *p, const struct topology *t)
{
	const struct ladder *l = &p->ladder;
	char u[32], m[32];
	json_t *o, *xs, *qs, *bs, *ps, *ss;

	xs = json_array();
	for (size_t i = 0; i < t->nexchanges; i++) {
		const struct topology_exchange *x = &t->exchanges[i];

		json_array_append_new(xs, json_pack("{s:s,s:s,s:s,s:o}", "name", x->name,
		    "type", x->type, "role", role_name(x->role),
		    "arguments", args_json(x->args, x->nargs)));
	}
	qs = json_array();
	for (size_t i = 0; i < t->nqueues; i++) {
		const struct topology_queue *q = &t->queues[i];

		json_array_append_new(qs, json_pack("{s:s,s:s,s:o}", "name", q->name,
		    "role", role_name(q->role), "arguments", args_json(q->args, q->nargs)));
	}
	bs = json_array();
	for (size_t i = 0; i < t->nbindings; i++) {
		const struct topology_binding *b = &t->bindings[i];

		json_array_append_new(bs, json_pack("{s:s,s:s,s:s,s:s}", "source", b->source,
		    "destination", b->destination,
		    "destination_type", b->to_exchange ? "exchange" : "queue",
		    "routing_key", b->key));
	}
	ps = json_array();
	for (size_t i = 0; i < t->npolicies; i++) {
		const struct topology_policy *pol = &t->policies[i];

		json_array_append_new(ps, json_pack("{s:s,s:s,s:s,s:i,s:{s:s}}", "name",
		    pol->name, "pattern", pol->pattern, "apply-to", pol->apply_to,
		    "priority", pol->priority, "definition", pol->arg.key, pol->arg.str));
	}
	ss = json_array();
	for (size_t i = 0; i < p->nsteps; i++)
		json_array_append_new(ss, json_pack("{s:s,s:b}", "step",
		    plan_step_kind_name(p->steps[i].kind), "gate", p->steps[i].gate));

	o = json_pack("{s:s,s:s,s:b,s:{s:s,s:s,s:s,s:I,s:i,s:s,s:I,s:s},s:o,s:o,s:o,s:o,s:o}",
	    "file", file, "plan", p->name, "valid", 1,
	    "ladder",
	    "naming", ladder_naming_name(l->naming),
	    "prefix", l->prefix,
	    "unit", duration_format(l->unit_ms, u, sizeof(u)),
	    "unit_ms", (json_int_t)l->unit_ms,
	    "levels", l->levels,
	    "max_delay", duration_format(ladder_max_delay_ms(l), m, sizeof(m)),
	    "max_delay_ms", (json_int_t)ladder_max_delay_ms(l),
	    "queue_type", p->queue_type == PLAN_QUEUE_QUORUM ? "quorum" : "classic",
	    "exchanges", xs, "queues", qs, "bindings", bs, "steps", ss,
	    "review", review_answers(p));
	if (o != NULL) {
		json_t *tb = broker_tls_json(&p->broker);
		json_t *tt = p->has_target ? broker_tls_json(&p->target) : NULL;
		json_t *tf = tls_json(&p->flag.tls, "flag.tls", flag_tls_url(p));
		json_t *ts = json_object();

		json_object_set_new(json_object_get(o, "ladder"), "create_destinations",
		    json_boolean(p->create_destinations));
		json_object_set_new(json_object_get(o, "ladder"), "publish_limit_ms",
		    json_integer((json_int_t)ladder_limit_ms(l)));
		json_object_set_new(o, "policies", ps);
		if (p->old.library != NULL)
			json_object_set_new(o, "old", library_json(p));
		if (tb != NULL)
			json_object_set_new(ts, "broker", tb);
		if (tt != NULL)
			json_object_set_new(ts, "target", tt);
		if (p->has_target)
			json_object_set_new(o, "brokers", json_pack("{s:s,s:s}",
			    "old_path", p->broker.amqp, "ladder", p->target.amqp));
		if (tf != NULL)
			json_object_set_new(ts, "flag", tf);
		json_object_set_new(o, "tls", ts);
	} else
		json_decref(ps);
	return o;
}

static void
print_args(FILE *out, json_t *args)
{
	const char *k;
	json_t *v;

	json_object_foreach(args, k, v) {
		if (json_is_integer(v))
			fprintf(out, " %s=%lld", k, (long long)json_integer_value(v));
		else
			fprintf(out, " %s=%s", k, json_string_value(v));
	}
}

/* The head of check's report on D: the file and plan, TLS, the ladder. */
static void
print_plan_head(FILE *out, json_t *d)
{
	json_t *lad = json_object_get(d, "ladder"), *v;
	char desc[64];
	const char *k;

	fprintf(out, "%s: plan %s is valid\n\n", json_string_value(json_object_get(d, "file")),
	    json_string_value(json_object_get(d, "plan")));
	json_object_foreach(json_object_get(d, "tls"), k, v) {
		json_t *w = json_object_get(v, "warning");

		fprintf(out, "%-6s TLS  %s\n", k, w != NULL ?
		    json_string_value(w) : "verified (certificate and name)");
	}
	if (json_object_size(json_object_get(d, "tls")) > 0)
		fprintf(out, "\n");
	if ((v = json_object_get(d, "brokers")) != NULL)
		fprintf(out, "brokers\n  old path    %s (measured, moved out of, removed)\n"
		    "  ladder      %s (the target: declared, verified, canaried, "
		    "flipped to)\n\n", json_string_value(json_object_get(v, "old_path")),
		    json_string_value(json_object_get(v, "ladder")));
	fprintf(out, "ladder\n  naming      %s", json_string_value(json_object_get(lad, "naming")));
	if (*json_string_value(json_object_get(lad, "prefix")) != '\0')
		fprintf(out, " (prefix %s)", json_string_value(json_object_get(lad, "prefix")));
	fprintf(out, "\n  unit        %s\n  levels      %d\n  max delay   %s (%s)\n"
	    "  queue type  %s\n",
	    json_string_value(json_object_get(lad, "unit")),
	    (int)json_integer_value(json_object_get(lad, "levels")),
	    json_string_value(json_object_get(lad, "max_delay")),
	    duration_describe(json_integer_value(json_object_get(lad, "max_delay_ms")),
	    desc, sizeof(desc)),
	    json_string_value(json_object_get(lad, "queue_type")));
	if (json_integer_value(json_object_get(lad, "publish_limit_ms")) <
	    json_integer_value(json_object_get(lad, "max_delay_ms")))
		fprintf(out, "  publishes   at most %s (ladder.max_delay; longer "
		    "delays are refused)\n", duration_format(json_integer_value(
		    json_object_get(lad, "publish_limit_ms")), desc, sizeof(desc)));
}

/* What D's old.library implies, when it has one: each kind of delay
 * queue, then the selection and entry rules in force and whose they are. */
static void
print_library(FILE *out, json_t *d)
{
	json_t *o = json_object_get(d, "old"), *v, *f;
	bool own_entry;
	size_t i;

	if (o == NULL)
		return;
	own_entry = strcmp(json_string_value(json_object_get(o, "entry_from")),
	    "plan") == 0;
	fprintf(out, "\nold path (library %s: %s)\n",
	    json_string_value(json_object_get(o, "library")),
	    json_string_value(json_object_get(o, "title")));
	json_array_foreach(json_object_get(o, "kinds"), i, v) {
		f = json_object_get(v, "entry");
		fprintf(out, "  %s  %s\n    dead-letters to  %s\n    expires          %s\n"
		    "    entry time       %s%s%s: %s\n",
		    json_string_value(json_object_get(v, "what")),
		    json_string_value(json_object_get(v, "shape")),
		    json_string_value(json_object_get(v, "dead_letter")),
		    json_is_string(json_object_get(v, "expires")) ?
		    json_string_value(json_object_get(v, "expires")) : "never",
		    json_is_array(f) ? json_string_value(json_array_get(f, 0)) :
		    json_string_value(f), json_is_array(f) ? ", then " : "",
		    json_is_array(f) ? json_string_value(json_array_get(f, 1)) : "",
		    json_string_value(json_object_get(v, "trust")));
	}
	if (json_is_string(json_object_get(o, "selection")))
		fprintf(out, "  selection        %s (%s)\n",
		    json_string_value(json_object_get(o, "selection")),
		    strcmp(json_string_value(json_object_get(o, "selection_from")),
		    "plan") == 0 ? "old.queues: the plan's own" :
		    "the library's; old.queues overrides it");
	else
		fprintf(out, "  selection        old.queues.names (the plan's own)\n");
	fprintf(out, "  move_old.entry   %s\n", own_entry ? "the plan's own (the "
	    "library's rules are not used)" : "the library's, first match wins; "
	    "move_old.entry overrides them");
	json_array_foreach(json_object_get(o, "entry"), i, v) {
		f = json_object_get(v, "from");
		fprintf(out, "    %zu. %s  from: %s%s%s%s%s\n", i + 1,
		    json_string_value(json_object_get(v, "match")),
		    json_is_array(f) ? "[" : "", json_is_array(f) ?
		    json_string_value(json_array_get(f, 0)) : json_string_value(f),
		    json_is_array(f) ? ", " : "", json_is_array(f) ?
		    json_string_value(json_array_get(f, 1)) : "", json_is_array(f) ? "]" : "");
	}
}

/* The exchanges and queues of D's topology. */
static void
print_nodes(FILE *out, json_t *d)
{
	bool create = json_is_true(json_object_get(json_object_get(d, "ladder"),
	    "create_destinations"));
	json_t *v;
	size_t i;

	fprintf(out, "\nexchanges (%zu)\n", json_array_size(json_object_get(d, "exchanges")));
	json_array_foreach(json_object_get(d, "exchanges"), i, v) {
		fprintf(out, "  %-32s %-6s %-11s", json_string_value(json_object_get(v, "name")),
		    json_string_value(json_object_get(v, "type")),
		    json_string_value(json_object_get(v, "role")));
		print_args(out, json_object_get(v, "arguments"));
		if (strcmp(json_string_value(json_object_get(v, "role")), "destination") == 0)
			fprintf(out, " (bound; its owner's, of its type: must exist already)");
		fprintf(out, "\n");
	}
	fprintf(out, "\nqueues (%zu)\n", json_array_size(json_object_get(d, "queues")));
	json_array_foreach(json_object_get(d, "queues"), i, v) {
		const char *role = json_string_value(json_object_get(v, "role"));

		fprintf(out, "  %-32s %-11s", json_string_value(json_object_get(v, "name")), role);
		print_args(out, json_object_get(v, "arguments"));
		if (strcmp(role, "destination") == 0)
			fprintf(out, "  (bound; %s)", create ? "created if missing: "
			    "ladder.create_destinations" : "must exist already");
		fprintf(out, "\n");
	}
}

/* The bindings and policies of D's topology. */
static void
print_edges(FILE *out, json_t *d)
{
	json_t *v;
	size_t i;

	fprintf(out, "\nbindings (%zu)\n", json_array_size(json_object_get(d, "bindings")));
	json_array_foreach(json_object_get(d, "bindings"), i, v)
		fprintf(out, "  %s -> %s %s  key '%s'\n",
		    json_string_value(json_object_get(v, "source")),
		    json_string_value(json_object_get(v, "destination_type")),
		    json_string_value(json_object_get(v, "destination")),
		    json_string_value(json_object_get(v, "routing_key")));
	if (json_array_size(json_object_get(d, "policies")) > 0) {
		fprintf(out, "\npolicies (%zu)\n",
		    json_array_size(json_object_get(d, "policies")));
		json_array_foreach(json_object_get(d, "policies"), i, v) {
			fprintf(out, "  %s  pattern %s  apply-to %s  priority %lld ",
			    json_string_value(json_object_get(v, "name")),
			    json_string_value(json_object_get(v, "pattern")),
			    json_string_value(json_object_get(v, "apply-to")),
			    (long long)json_integer_value(json_object_get(v, "priority")));
			print_args(out, json_object_get(v, "definition"));
			fprintf(out, "\n");
		}
	}
}

/* D's steps, and the design review's answers. */
static void
print_steps_and_review(FILE *out, json_t *d)
{
	json_t *v;
	size_t i, n = 0;

	fprintf(out, "\nsteps\n");
	json_array_foreach(json_object_get(d, "steps"), i, v)
		fprintf(out, "  %zu. %s%s\n", i + 1, json_string_value(json_object_get(v, "step")),
		    json_is_true(json_object_get(v, "gate")) ? "  [gate: waits for approval]" : "");

	fprintf(out, "\ndesign review\n");
	json_array_foreach(json_object_get(d, "review"), i, v) {
		json_t *w = json_object_get(v, "warning");
		int app = strcmp(json_string_value(json_object_get(v, "answered_by")),
		    "application") == 0;

		fprintf(out, "  %2zu. %s\n      %s%s\n", i + 1,
		    json_string_value(json_object_get(v, "question")),
		    app ? "[application must answer] " : "",
		    json_string_value(json_object_get(v, "answer")));
		if (w != NULL)
			fprintf(out, "      warning: %s\n", json_string_value(w));
		n += app;
	}
	fprintf(out, "\n%zu of %d questions need the application's answer.\n", n, REVIEW_QUESTIONS);
}

/* Prints check's report D for a person. */
static void
print_human(FILE *out, json_t *d)
{
	print_plan_head(out, d);
	print_library(out, d);
	print_nodes(out, d);
	print_edges(out, d);
	print_steps_and_review(out, d);
}

int
check_plan(const char *file, const char *buf, size_t len, int json, FILE *out,
    FILE *errout, json_t *results)
{
	struct plan_errors errs = { 0 };
	struct topology t = { 0 };
	struct plan *p = NULL;
	char line[512], err[256];
	json_t *d = NULL, *ea;
	int rc = -1;

	if ((buf != NULL ? plan_load_buffer(file, buf, len, &p, &errs) :
	    plan_load_file(file, &p, &errs)) != 0) {
		ea = json_array();
		for (size_t i = 0; i < errs.n; i++) {
			if (!json)
				fprintf(errout, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
			json_array_append_new(ea, json_pack("{s:i,s:i,s:s}", "line", errs.v[i].line,
			    "column", errs.v[i].column, "message", errs.v[i].message));
		}
		json_array_append_new(results, json_pack("{s:s,s:b,s:o}", "file", file,
		    "valid", 0, "errors", ea));
		goto done;
	}
	if (topology_build(p, &t, err, sizeof(err)) != 0) {
		fprintf(errout, "%s: %s\n", file, err);
		json_array_append_new(results, json_pack("{s:s,s:b,s:[{s:i,s:i,s:s}]}", "file",
		    file, "valid", 0, "errors", "line", 0, "column", 0, "message", err));
		goto done;
	}
	d = describe(file, p, &t);
	if (!json)
		print_human(out, d);
	json_array_append(results, d);
	rc = 0;
done:
	json_decref(d);
	topology_free(&t);
	plan_free(p);
	plan_errors_free(&errs);
	return rc;
}

