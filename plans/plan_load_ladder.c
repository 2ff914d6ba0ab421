/* plan_load_ladder: the plan loader's ladder section: the naming style,
 * prefix, unit, size (levels or max_delay), queue type, and the
 * destinations the delivery exchange routes to, each refused where it is
 * written when the ladder it makes would not be valid. Part of the loader
 * (plan_load_int.h). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "duration.h"
#include "ladder.h"
#include "plan.h"
#include "plan_load_int.h"

/* The largest delay of LEVELS levels of UNIT_MS, as text. */
static const char *
max_delay_text(int levels, int64_t unit_ms, char *out, size_t outlen)
{
	uint64_t units = ((uint64_t)1 << levels) - 1;

	if ((uint64_t)unit_ms > (uint64_t)INT64_MAX / units)
		snprintf(out, outlen, "%llu units", (unsigned long long)units);
	else
		duration_format((int64_t)units * unit_ms, out, outlen);
	return out;
}

/* Is NAME one of L's own exchanges or queues (a level's, the delivery
 * exchange, the parking exchange and queue)? A destination reaching one
 * would loop or copy delayed messages. */
static bool
ladder_own_name(const struct ladder *l, const char *name)
{
	char own[LADDER_NAME_MAX];

	for (int k = 0; k < l->levels; k++)
		if (strcmp(ladder_level_exchange(l, k, own, sizeof(own)), name) == 0)
			return true;
	return strcmp(ladder_delivery_exchange(l, own, sizeof(own)), name) == 0 ||
	    strcmp(ladder_parking_exchange(l, own, sizeof(own)), name) == 0;
}

/* The long form of destination WHAT (the mapping N): { key: K, queue: Q }
 * or { key: K, exchange: E }. Stores K's node in *KEY and the target in T
 * (its name a copy). Returns 0, or -1 after recording why. */
static int
read_destination_map(struct loader *ld, yaml_node_t *n, const char *what,
    const struct ladder *l, int ladder_ok, yaml_node_t **key, struct plan_target *t)
{
	static const char *const keys[] = { "key", "queue", "exchange", NULL };
	static const char expect[] = "{ key: ROUTING_KEY, queue: QUEUE } or "
	    "{ key: ROUTING_KEY, exchange: EXCHANGE }";
	struct sect s = { n, what };
	yaml_node_pair_t *pq, *px;
	yaml_node_t *tn;
	const char *name;
	char label[96];

	py_check_keys(ld, &s, keys);
	if ((*key = py_field(ld, &s, "key", 1, "the routing key its messages carry "
	    "after the bit words, such as destination_route")) == NULL)
		return -1;
	pq = py_find_pair(ld, n, "queue");
	px = py_find_pair(ld, n, "exchange");
	if (pq == NULL && px == NULL) {
		py_err_at(ld, n, "%s has neither queue nor exchange; expected %s", what,
		    expect);
		return -1;
	}
	if (pq != NULL && px != NULL) {
		py_err_at(ld, py_key_node(ld, pq < px ? px : pq), "%s has both queue and "
		    "exchange; expected one of them: %s", what, expect);
		return -1;
	}
	tn = py_node_at(ld, (pq != NULL ? pq : px)->value);
	snprintf(label, sizeof(label), "%s.%s", what, pq != NULL ? "queue" : "exchange");
	if ((name = py_conv_text(ld, tn, label, pq != NULL ? "the queue its messages "
	    "reach" : "the exchange its messages reach")) == NULL)
		return -1;
	if (strlen(name) > QUEUE_NAME_MAX) {
		py_err_at(ld, tn, "%s is %zu bytes long; expected at most %d", label,
		    strlen(name), QUEUE_NAME_MAX);
		return -1;
	}
	if (ladder_ok && ladder_own_name(l, name)) {
		py_err_at(ld, tn, "%s '%.100s' is one of the ladder's own; expected "
		    "the %s its consumers own", label, name, pq != NULL ? "queue" :
		    "exchange");
		return -1;
	}
	t->exchange = px != NULL;
	t->name = py_copy(ld, name);
	return t->name != NULL ? 0 : -1;
}

/* Where destination I of P's target was listed before I, or -1. */
static int
target_listed(const struct plan *p, size_t i, const char *name, bool exchange)
{
	bool ex;

	for (size_t j = 0; j < i; j++)
		if (strcmp(plan_destination_target(p, j, &ex), name) == 0 && ex == exchange)
			return (int)j;
	return -1;
}

/* Is the destination WHAT (ITEM, its key T at KEYNODE, reaching TARGET)
 * one the plan lists already, by key or by what it reaches? Then says so
 * at its place. */
static bool
destination_repeated(struct loader *ld, yaml_node_t *item, yaml_node_t *keynode,
    const char *what, const char *t, const struct plan_target *target)
{
	struct plan *p = ld->p;
	size_t j;
	bool ex;
	int dup;

	for (j = 0; j < p->ndestinations; j++)
		if (strcmp(p->destinations[j], t) == 0)
			break;
	if (j < p->ndestinations) {
		py_err_at(ld, keynode, "%s '%.100s' is listed twice; expected distinct "
		    "destinations", what, t);
		return true;
	}
	dup = target_listed(p, p->ndestinations, target->name != NULL ? target->name :
	    t, target->exchange);
	if (dup >= 0) {
		(void)plan_destination_target(p, (size_t)dup, &ex);
		py_err_at(ld, item, "%s reaches %s '%.100s', as the destination at "
		    "line %d column %d does; expected one routing key per queue or "
		    "exchange", what, ex ? "exchange" : "queue", target->name != NULL ?
		    target->name : t, p->destinations_at[dup].line,
		    p->destinations_at[dup].column);
		return true;
	}
	return false;
}

/* Reads ladder.destinations[I] (ITEM: a routing suffix, or a map with its
 * key and its queue or exchange), checked against ladder L, and appends
 * it to the plan; what is wrong with it is a plan error at its place. */
static void
load_destination(struct loader *ld, const struct ladder *l, int ladder_ok,
    yaml_node_t *item, size_t i)
{
	struct plan *p = ld->p;
	struct plan_target target;
	yaml_node_t *keynode = item;
	char what[64], keywhat[72], err[256];
	const char *t;

	snprintf(what, sizeof(what), "ladder.destinations[%zu]", i);
	memset(&target, 0, sizeof(target));
	if (item->type == YAML_MAPPING_NODE && read_destination_map(ld, item, what,
	    l, ladder_ok, &keynode, &target) != 0)
		return;
	snprintf(keywhat, sizeof(keywhat), "%s%s", what, item == keynode ? "" : ".key");
	if ((t = py_conv_text(ld, keynode, keywhat,
	    "a routing suffix such as email.delivery")) == NULL)
		goto skip;
	if (ladder_check_destination(l, t, err, sizeof(err)) == -1) {
		py_err_at(ld, keynode, "%s is not valid: %s", keywhat, err);
		goto skip;
	}
	if (destination_repeated(ld, item, keynode, what, t, &target))
		goto skip;
	if ((p->destinations[p->ndestinations] = py_copy(ld, t)) != NULL) {
		p->destination_targets[p->ndestinations] = target;
		p->destinations_at[p->ndestinations].line =
		    py_mark_num(item->start_mark.line);
		p->destinations_at[p->ndestinations].column =
		    py_mark_num(item->start_mark.column);
		p->ndestinations++;
		return;
	}
skip:
	free(target.name);
}

static void
load_destinations(struct loader *ld, const struct sect *s, int ladder_ok)
{
	static const char expect[] = "a list of destination routing suffixes, such "
	    "as [email.delivery, billing.retry], or { key: K, queue: Q } / "
	    "{ key: K, exchange: E } where the key is not the queue's name";
	struct plan *p = ld->p;
	struct ladder probe;
	const struct ladder *l = &p->ladder;
	yaml_node_t *n;
	char err[256];
	size_t count;

	if ((n = py_field(ld, s, "destinations", 1, expect)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "ladder.destinations", expect)) == 0)
		return;
	if (!ladder_ok) {
		/* Still check the words; the key length needs the real ladder. */
		if (ladder_init(&probe, LADDER_NAMING_CUTOVER, "delay", 1, 1,
		    err, sizeof(err)) == -1)
			return;
		l = &probe;
	}
	if ((p->destinations = calloc(count, sizeof(char *))) == NULL ||
	    (p->destinations_at = calloc(count, sizeof(*p->destinations_at))) == NULL ||
	    (p->destination_targets = calloc(count, sizeof(*p->destination_targets))) ==
	    NULL) {
		ld->oom = 1;
		return;
	}
	for (size_t i = 0; i < count; i++)
		load_destination(ld, l, ladder_ok, py_seq_item(ld, n, i), i);
}

/* The ladder section as load_ladder reads it, field by field. */
struct ladder_fields {
	struct sect		 s;
	enum ladder_naming	 naming;
	const struct ladder_style *style;	/* naming's row */
	int			 naming_ok;	/* ladder.naming absent or known */
	int			 fixed;		/* the style fixes levels and unit */
	int			 ok;		/* every field so far is valid */
	const char		*prefix;	/* NULL: the style's default */
	yaml_node_t		*unit_node;	/* NULL: the style's fixed unit */
	yaml_node_t		*max_node;	/* ladder.max_delay, when valid */
	int64_t			 unit_ms;
	int			 levels;
};

/* ladder.naming: a style of the naming table, cutover when absent. */
static void
read_naming(struct loader *ld, struct ladder_fields *f)
{
	const char *t;
	yaml_node_t *n;
	char names[128];

	ladder_naming_list(", ", " or ", names, sizeof(names));
	if ((n = py_field(ld, &f->s, "naming", 0, NULL)) != NULL) {
		if ((t = py_conv_text(ld, n, "ladder.naming", names)) == NULL)
			f->naming_ok = 0;
		else if (ladder_naming_parse(t, &f->naming) == -1) {
			py_err_at(ld, n, "ladder.naming '%.40s' is unknown; expected %s",
			    t, names);
			f->naming_ok = 0;
		}
	}
	f->ok = f->naming_ok;
	f->style = ladder_style(f->naming);
	f->fixed = f->style->fixed_levels != 0;
}

/* ladder.prefix: only for a style that takes one, its default when absent. */
static void
read_prefix(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_pair_t *ppre;
	yaml_node_t *n;
	struct ladder probe;
	const char *t;
	char err[256];

	if ((ppre = py_find_pair(ld, f->s.map, "prefix")) == NULL)
		return;
	n = py_node_at(ld, ppre->value);
	if (f->style->prefix == LADDER_PREFIX_NONE) {
		py_err_at(ld, py_key_node(ld, ppre), "ladder.prefix is not used with %s "
		    "naming, whose names are fixed; expected no prefix", f->style->name);
		f->ok = 0;
	} else if ((t = py_conv_text(ld, n, "ladder.prefix", "a name prefix such "
	    "as delay")) == NULL)
		f->ok = 0;
	else if (ladder_init(&probe, f->naming, t, 1, 1, err, sizeof(err)) == -1) {
		py_err_at(ld, n, "ladder.prefix is not valid: %s", err);
		f->ok = 0;
	} else
		f->prefix = t;
}

/* ladder.unit: required unless the style fixes it, and then only that. */
static void
read_unit(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_t *n;
	char a[32];

	n = py_field(ld, &f->s, "unit", f->naming_ok && !f->fixed, "a duration such "
	    "as 1s (the ladder's resolution)");
	if (n == NULL) {
		if (f->fixed)
			f->unit_ms = f->style->fixed_unit_ms;
		else
			f->ok = 0;
		return;
	}
	f->unit_node = n;
	if (py_conv_duration(ld, n, "ladder.unit", &f->unit_ms) == -1)
		f->ok = 0;
	else if (f->fixed && f->unit_ms != f->style->fixed_unit_ms) {
		duration_format(f->style->fixed_unit_ms, a, sizeof(a));
		py_err_at(ld, n, "ladder.unit %s conflicts with %s naming; expected %s "
		    "(its ladder is %d levels of %s) or no unit", py_text(n),
		    f->style->name, a, f->style->fixed_levels, a);
		f->ok = 0;
	}
}

/* ladder.levels (the node N): 1 to LADDER_MAX_LEVELS, or the style's own. */
static void
read_levels(struct loader *ld, struct ladder_fields *f, yaml_node_t *n)
{
	if (py_conv_int(ld, n, "ladder.levels", 1, LADDER_MAX_LEVELS, &f->levels) == -1)
		f->ok = 0;
	else if (f->fixed && f->levels != f->style->fixed_levels) {
		py_err_at(ld, n, "ladder.levels %d conflicts with %s naming; expected "
		    "%d (or no levels)", f->levels, f->style->name,
		    f->style->fixed_levels);
		f->ok = 0;
	}
}

/* ladder.max_delay (the node N): the levels it needs of the unit, which
 * become the ladder's unless LEVELS_GIVEN. */
static void
read_max_delay(struct loader *ld, struct ladder_fields *f, yaml_node_t *n,
    int levels_given)
{
	char a[32], b[32];
	uint64_t units;
	int64_t max_ms = 0;
	int lv, most;

	if (py_conv_duration(ld, n, "ladder.max_delay", &max_ms) == -1) {
		f->ok = 0;
		return;
	}
	ld->p->max_delay_ms = max_ms;
	f->max_node = n;
	if (f->unit_ms <= 0)
		return;
	units = (uint64_t)(max_ms / f->unit_ms) + (max_ms % f->unit_ms != 0);
	lv = ladder_levels_for(units);
	most = f->fixed ? f->style->fixed_levels : LADDER_MAX_LEVELS;
	if (lv == -1 || lv > most) {
		py_err_at(ld, n, "ladder.max_delay %s needs more than %d levels of %s; "
		    "expected at most %s", py_text(n), most,
		    duration_format(f->unit_ms, a, sizeof(a)),
		    max_delay_text(most, f->unit_ms, b, sizeof(b)));
		f->ok = 0;
	} else if (!levels_given)
		f->levels = lv;
}

/* Exactly one of ladder.max_delay and ladder.levels, unless the style
 * fixes the levels. */
static void
read_size(struct loader *ld, struct ladder_fields *f)
{
	yaml_node_pair_t *pmax, *plev;

	pmax = py_find_pair(ld, f->s.map, "max_delay");
	plev = py_find_pair(ld, f->s.map, "levels");
	if (pmax != NULL && plev != NULL) {
		py_err_at(ld, py_key_node(ld, pmax < plev ? plev : pmax), "ladder has both "
		    "max_delay and levels; expected exactly one of them");
		f->ok = 0;
	} else if (pmax == NULL && plev == NULL && f->naming_ok && !f->fixed) {
		py_err_at(ld, f->s.map, "ladder has neither max_delay nor levels; expected "
		    "exactly one: max_delay: DURATION (such as 12d) or levels: 1 to %d",
		    LADDER_MAX_LEVELS);
		f->ok = 0;
	}
	if (plev != NULL)
		read_levels(ld, f, py_node_at(ld, plev->value));
	if (pmax != NULL)
		read_max_delay(ld, f, py_node_at(ld, pmax->value), plev != NULL);
	if (f->fixed)
		f->levels = f->style->fixed_levels;
}

/* ladder.queue_type: quorum (the plan's default) or classic, unless the
 * style's library declares quorum level queues only. */
static void
read_queue_type(struct loader *ld, const struct ladder_fields *f)
{
	yaml_node_t *n;
	const char *t;

	if ((n = py_field(ld, &f->s, "queue_type", 0, NULL)) == NULL ||
	    (t = py_conv_text(ld, n, "ladder.queue_type", "quorum or classic")) == NULL)
		return;
	if (strcmp(t, "quorum") == 0)
		ld->p->queue_type = PLAN_QUEUE_QUORUM;
	else if (strcmp(t, "classic") == 0 && f->naming_ok && f->style->quorum_only)
		py_err_at(ld, n, "ladder.queue_type classic is not used with %s naming: "
		    "the library declares its level queues as quorum queues only, and "
		    "would fail against classic ones; expected quorum (or no "
		    "queue_type)", f->style->name);
	else if (strcmp(t, "classic") == 0)
		ld->p->queue_type = PLAN_QUEUE_CLASSIC;
	else
		py_err_at(ld, n, "ladder.queue_type '%.40s' is unknown; expected "
		    "quorum or classic", t);
}

/* Builds the plan's ladder from fields that were all valid. Returns true
 * when it is built, false otherwise. */
static bool
init_ladder(struct loader *ld, const struct ladder_fields *f)
{
	char err[256], unit[32];

	if (!f->ok)
		return false;
	if (ladder_init(&ld->p->ladder, f->naming, f->prefix != NULL ? f->prefix :
	    f->style->default_prefix, f->unit_ms, f->levels, err, sizeof(err)) == -1) {
		py_err_at(ld, f->unit_node != NULL ? f->unit_node : f->s.map, "ladder of "
		    "%d levels of %s is not valid: %s", f->levels,
		    duration_format(f->unit_ms, unit, sizeof(unit)), err);
		memset(&ld->p->ladder, 0, sizeof(ld->p->ladder));
		return false;
	}
	/* Publishing holds to the plan's own maximum, not the ladder's. */
	if (f->max_node != NULL && ladder_set_limit(&ld->p->ladder,
	    ld->p->max_delay_ms, err, sizeof(err)) == -1) {
		py_err_at(ld, f->max_node, "ladder.max_delay is not valid: %s", err);
		memset(&ld->p->ladder, 0, sizeof(ld->p->ladder));
		return false;
	}
	return true;
}

/* The ladder section of ROOT into the plan (ladder, destinations). */
void
pl_load_ladder(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "naming", "prefix", "unit", "max_delay",
	    "levels", "queue_type", "destinations", "create_destinations", NULL };
	struct ladder_fields f = { .naming = LADDER_NAMING_CUTOVER, .naming_ok = 1,
	    .ok = 1 };
	yaml_node_t *n;

	if (py_get_map(ld, root, "ladder", 1, "a mapping with unit, max_delay or levels, "
	    "and destinations", "ladder", &f.s) != 0 || f.s.map == NULL)
		return;
	py_check_keys(ld, &f.s, keys);
	read_naming(ld, &f);
	read_prefix(ld, &f);
	read_unit(ld, &f);
	read_size(ld, &f);
	read_queue_type(ld, &f);
	load_destinations(ld, &f.s, init_ladder(ld, &f));
	if ((n = py_field(ld, &f.s, "create_destinations", 0, NULL)) != NULL)
		(void)py_conv_bool(ld, n, "ladder.create_destinations",
		    &ld->p->create_destinations);
}
