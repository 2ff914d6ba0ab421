/* plan: the migration plan's model — the plan's columns of the step-kind
 * table (names, default gates, order, needed sections), freeing — and the
 * checks that concern the plan as a whole (step presence and order, default
 * canary delays). The error list is plan_errors.c's; the YAML side is in
 * plan_load.c and the files of plan_load_int.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "ladder.h"
#include "plan.h"
#include "plan_flag.h"

/* The plan's columns of the step-kind table (step_kinds.def). */
static const struct plan_kind_row {
	const char *name;
	bool gate;
	const char *needs, *after;	/* names, space separated */
	const char *section, *why;
	const char *shows;		/* "LABEL=/pointer, ..." or NULL */
} kinds[PLAN_STEP_KIND_COUNT] = {
#define STEP_KIND(id, name, run, prepare, preview, events, flags, gate, needs, \
    after, section, why, shows) \
	[PLAN_STEP_##id] = { #name, gate, needs, after, section, why, shows },
#include "step_kinds.def"
#undef STEP_KIND
};

const char *
plan_step_kind_name(enum plan_step_kind kind)
{
	if ((int)kind < 0 || kind >= PLAN_STEP_KIND_COUNT)
		return "unknown";
	return kinds[kind].name;
}

bool
plan_step_kind_gated(enum plan_step_kind kind)
{
	return (int)kind >= 0 && kind < PLAN_STEP_KIND_COUNT && kinds[kind].gate;
}

char *
plan_step_kind_names(char *out, size_t outlen)
{
	size_t len = 0;

	if (outlen > 0)
		out[0] = '\0';
	for (int k = 0; k < PLAN_STEP_KIND_COUNT && len < outlen; k++) {
		int n = snprintf(out + len, outlen - len, "%s%s", k > 0 ? ", " : "",
		    kinds[k].name);

		if (n < 0)
			break;
		len += (size_t)n;
	}
	return out;
}

const char *
plan_step_kind_section(enum plan_step_kind kind, const char **why)
{
	if ((int)kind < 0 || kind >= PLAN_STEP_KIND_COUNT)
		return NULL;
	if (why != NULL)
		*why = kinds[kind].why;
	return kinds[kind].section;
}

int
plan_step_kind_parse(const char *name, enum plan_step_kind *out)
{
	int k;

	if (name == NULL)
		return -1;
	for (k = 0; k < PLAN_STEP_KIND_COUNT; k++) {
		if (strcmp(name, kinds[k].name) == 0) {
			if (out != NULL)
				*out = (enum plan_step_kind)k;
			return 0;
		}
	}
	return -1;
}

int
plan_find_step(const struct plan *p, enum plan_step_kind kind)
{
	size_t i;

	if (p == NULL)
		return -1;
	for (i = 0; i < p->nsteps; i++)
		if (p->steps[i].kind == kind)
			return (int)i;
	return -1;
}

static void
free_strings(char **v, size_t n)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Frees what B holds. */
static void
plan_broker_free(struct plan_broker *b)
{
	free(b->amqp);
	free(b->management);
	free_strings(b->amqp_urls, b->namqp);
	free_strings(b->management_urls, b->nmanagement);
	free(b->username);
	free(b->password);
	tls_opts_free(&b->tls);
}

const struct plan_broker *
plan_ladder_broker(const struct plan *p)
{
	return p->has_target ? &p->target : &p->broker;
}

void
plan_free(struct plan *p)
{
	size_t i;

	if (p == NULL)
		return;
	free(p->file);
	plan_broker_free(&p->broker);
	plan_broker_free(&p->target);
	tls_opts_free(&p->flag.tls);
	free(p->old.match);
	free_strings(p->old.names, p->old.nnames);
	if (p->destination_targets != NULL)
		for (i = 0; i < p->ndestinations; i++)
			free(p->destination_targets[i].name);
	free(p->destination_targets);
	free_strings(p->destinations, p->ndestinations);
	free(p->destinations_at);
	free(p->canary.delays_ms);
	plan_flag_free(p);
	for (i = 0; i < p->move_old.nentries; i++) {
		free(p->move_old.entries[i].match);
		free(p->move_old.entries[i].header);
	}
	free(p->move_old.entries);
	free(p->steps);
	free(p);
}

const char *
plan_destination_target(const struct plan *p, size_t i, bool *exchange)
{
	const struct plan_target *t = p->destination_targets != NULL ?
	    &p->destination_targets[i] : NULL;

	if (exchange != NULL)
		*exchange = t != NULL && t->name != NULL && t->exchange;
	return t != NULL && t->name != NULL ? t->name : p->destinations[i];
}

/* Index of the destination of P whose key or target is NAME, or -1. */
static int
destination_index(const struct plan *p, const char *name)
{
	for (size_t i = 0; i < p->ndestinations; i++)
		if (strcmp(p->destinations[i], name) == 0 ||
		    strcmp(plan_destination_target(p, i, NULL), name) == 0)
			return (int)i;
	return -1;
}

bool
plan_names_destination(const struct plan *p, const char *name)
{
	return destination_index(p, name) >= 0;
}

char *
plan_destination_where(const struct plan *p, const char *name, char *out,
    size_t outlen)
{
	const char *file = p->file != NULL ? p->file : "(plan)";
	int i = destination_index(p, name);

	if (i >= 0 && p->destinations_at != NULL && p->destinations_at[i].line > 0) {
		snprintf(out, outlen, "%s:%d:%d", file, p->destinations_at[i].line,
		    p->destinations_at[i].column);
		return out;
	}
	snprintf(out, outlen, "%s", file);
	return out;
}

const char *
plan_step_kind_shows(enum plan_step_kind kind)
{
	if ((int)kind < 0 || kind >= PLAN_STEP_KIND_COUNT)
		return NULL;
	return kinds[kind].shows;
}

int
plan_step_shows_next(const char **cur, char *label, size_t labellen, char *pointer,
    size_t pointerlen)
{
	const char *s = *cur, *eq;
	size_t n;

	if (s == NULL || *s == '\0')
		return -1;
	n = strcspn(s, ",");
	if ((eq = memchr(s, '=', n)) == NULL)
		return -1;
	snprintf(label, labellen, "%.*s", (int)(eq - s), s);
	snprintf(pointer, pointerlen, "%.*s", (int)(s + n - eq - 1), eq + 1);
	s += n;
	while (*s == ',' || *s == ' ')
		s++;
	*cur = s;
	return 0;
}

/* Checks step S (of kind AFTER, at index IB) against the steps NAMES
 * lists (space separated) as coming before it; when NEEDED, each must be
 * in the plan. Each error is at S. Returns 0, or -1 when out of memory. */
static int
check_before(const struct plan *p, enum plan_step_kind after, int ib,
    const char *names, int needed, struct plan_errors *errs)
{
	const struct plan_step *s = &p->steps[ib];
	enum plan_step_kind before;
	const char *a, *b = kinds[after].name;
	char name[40];
	int ia, rc = 0;
	size_t n;

	while (*names != '\0') {
		n = strcspn(names, " ");
		snprintf(name, sizeof(name), "%.*s", (int)n, names);
		names += n + (names[n] == ' ');
		if (plan_step_kind_parse(name, &before) != 0)
			continue;
		ia = plan_find_step(p, before);
		a = kinds[before].name;
		if (ia == -1 && needed)
			rc |= plan_errors_add(errs, s->line, s->column,
			    "step '%s' without step '%s'; expected %s before %s",
			    b, a, a, b);
		else if (ia > ib)
			rc |= plan_errors_add(errs, s->line, s->column,
			    "step '%s' comes before step '%s'; expected %s before %s",
			    b, a, a, b);
	}
	return rc;
}

/* The safe order of the steps (DESIGN.md §1), from the table's NEEDS
 * (must be in the plan, before) and AFTER (before, when in the plan). */
static int
check_order(const struct plan *p, struct plan_errors *errs)
{
	int k, ib, rc = 0;

	for (k = 0; k < PLAN_STEP_KIND_COUNT; k++) {
		if ((ib = plan_find_step(p, (enum plan_step_kind)k)) == -1)
			continue;
		rc |= check_before(p, (enum plan_step_kind)k, ib, kinds[k].needs, 1, errs);
		rc |= check_before(p, (enum plan_step_kind)k, ib, kinds[k].after, 0, errs);
	}
	return rc;
}

/* Fills the canary delays the plan leaves to their default: the TTL of
 * every level within the budget, so each low bit is exercised; where the
 * plan's max_delay cuts the levels short, that maximum itself, last. */
static int
default_canary(struct plan *p, struct plan_errors *errs)
{
	const struct plan_step *s;
	char budget[32], unit[32];
	int64_t ttl, limit, delays[LADDER_MAX_LEVELS];
	size_t n = 0;
	int k, i;

	if (p->canary.delays_ms != NULL || p->ladder.levels < 1 || p->ladder.unit_ms < 1)
		return 0;
	limit = ladder_limit_ms(&p->ladder);
	for (k = 0; k < p->ladder.levels; k++) {
		ttl = ladder_level_ttl_ms(&p->ladder, k);
		if (ttl > limit)
			ttl = limit;
		if (ttl < 0 || ttl > p->canary.budget_ms)
			break;
		delays[n++] = ttl;
		if (ttl == limit)
			break;
	}
	p->canary.delays_defaulted = true;
	if (n == 0) {
		if ((i = plan_find_step(p, PLAN_STEP_CANARY)) == -1)
			return 0;
		s = &p->steps[i];
		return plan_errors_add(errs, s->line, s->column, "step 'canary' has no "
		    "delay to send: the canary budget %s is below the ladder unit %s; "
		    "expected canary.budget of at least %s",
		    duration_format(p->canary.budget_ms, budget, sizeof(budget)),
		    duration_format(p->ladder.unit_ms, unit, sizeof(unit)), unit);
	}
	if ((p->canary.delays_ms = calloc(n, sizeof(int64_t))) == NULL)
		return -1;
	memcpy(p->canary.delays_ms, delays, n * sizeof(int64_t));
	p->canary.ndelays = n;
	return 0;
}

int
plan_validate(struct plan *p, struct plan_errors *errs)
{
	int rc = 0;

	if (p == NULL)
		return -1;
	rc |= check_order(p, errs);
	rc |= default_canary(p, errs);
	return rc ? -1 : 0;
}

char *
plan_probe_queue(const struct plan *p, char *out, size_t outlen)
{
	snprintf(out, outlen, "cutover.probe.%s", p->name);
	return out;
}

char *
plan_stats_exchange(const struct plan *p, char *out, size_t outlen)
{
	snprintf(out, outlen, "cutover.stats.%s", p->name);
	return out;
}

char *
plan_stats_queue(const struct plan *p, int64_t gen, char *out, size_t outlen)
{
	snprintf(out, outlen, "cutover.stats.%s.%lld", p->name, (long long)gen);
	return out;
}

char *
plan_canary_queue(const struct plan *p, char *out, size_t outlen)
{
	snprintf(out, outlen, "cutover.canary.%s", p->name);
	return out;
}

int
plan_own_queues(const struct plan *p,
    int (*fn)(void *arg, const char *name, const char *what), void *arg)
{
	char name[LADDER_NAME_MAX];
	int r;

	for (int k = 0; k < p->ladder.levels; k++)
		if ((r = fn(arg, ladder_level_queue(&p->ladder, k, name, sizeof(name)),
		    "level queue")) != 0)
			return r;
	if ((r = fn(arg, ladder_parking_queue(&p->ladder, name, sizeof(name)),
	    "parking queue")) != 0)
		return r;
	for (size_t i = 0; i < p->ndestinations; i++) {
		bool exchange;
		const char *target = plan_destination_target(p, i, &exchange);

		if (!exchange && (r = fn(arg, target, "destination queue")) != 0)
			return r;
	}
	if ((r = fn(arg, plan_probe_queue(p, name, sizeof(name)), "probe queue")) != 0)
		return r;
	if ((r = fn(arg, plan_stats_queue(p, 0, name, sizeof(name)),
	    "statistics queue")) != 0)
		return r;
	return fn(arg, plan_canary_queue(p, name, sizeof(name)), "canary queue");
}
