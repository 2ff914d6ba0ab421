/* plan_check: the plan loader's checks across sections, once they are all
 * read — each step's section is there (or old.library stands in for
 * it), and the old selection takes none of
 * the plan's own queues. The checks on the plan model are plan_validate's,
 * in plan.c. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "pattern.h"
#include "plan.h"
#include "plan_load_int.h"

/* Each step whose kind cannot run without a plan section (the step-kind
 * table's SECTION) needs that section: an error at the step otherwise. */
void
pc_check_sections(struct loader *ld, const struct sect *root)
{
	const struct plan *p = ld->p;
	const char *section, *why;

	for (size_t i = 0; i < p->nsteps; i++) {
		const struct plan_step *st = &p->steps[i];

		if ((section = plan_step_kind_section(st->kind, &why)) == NULL ||
		    py_find_pair(ld, root->map, section) != NULL)
			continue;
		/* old.library gives move_old what its section would: where
		 * each old queue's messages carry their entry time. */
		if (st->kind == PLAN_STEP_MOVE_OLD && p->move_old.entries_from_library)
			continue;
		if (plan_errors_add(ld->errs, st->line, st->column, "step '%s' needs a "
		    "%s section %s", plan_step_kind_name(st->kind), section, why) == -1)
			ld->oom = 1;
	}
}

/* What check_own looks for in a plan's own queues. */
struct own_check {
	struct loader *ld;
	struct pattern *re;		/* old.queues.match, or NULL */
	const char *name;		/* or one of old.queues.names */
	const char *found, *what;	/* the first own queue selected */
	char name_buf[QUEUE_NAME_MAX + 1];
	size_t n;			/* how many are */
	int failed;			/* a match could not be decided */
	char why[256];
};

/* plan_own_queues' callback: counts NAME when the selection takes it. */
static int
own_selected(void *arg, const char *name, const char *what)
{
	struct own_check *oc = arg;
	bool m;

	if (oc->re != NULL) {
		if (pattern_match(oc->re, name, &m, oc->why, sizeof(oc->why)) != 0) {
			snprintf(oc->name_buf, sizeof(oc->name_buf), "%s", name);
			oc->failed = 1;
			return -1;	/* stops the walk */
		}
	} else
		m = strcmp(oc->name, name) == 0;
	if (m && oc->n++ == 0) {
		snprintf(oc->name_buf, sizeof(oc->name_buf), "%s", name);
		oc->found = oc->name_buf;
		oc->what = what;
	}
	return 0;
}

/* The old selection must not take any of the plan's own queues (ladder,
 * parking, destinations, probe, canary): reported at old.queues.match, at
 * the old.queues.names entry that names one, or at old.ladder when one of
 * its level queues is one. Needs the ladder loaded. */
void
pc_check_own(struct loader *ld)
{
	struct plan *p = ld->p;
	struct own_check oc;
	char why[256], what[64];

	if (p->ladder.levels <= 0)
		return;
	/* A library's selection is named as the library's: the plan does
	 * not write it, and old.queues is how to replace it. */
	snprintf(what, sizeof(what), "%s%s", p->old.match_from_library ?
	    "old.library's selection" : "old.queues.match", p->old.match_from_library ?
	    " (write old.queues to replace it)" : "");
	if (ld->match != NULL && p->old.match != NULL) {
		memset(&oc, 0, sizeof(oc));
		oc.ld = ld;
		if (pattern_compile(p->old.match, &oc.re, why, sizeof(why)) != 0) {
			ld->oom = 1;	/* it compiled in load_match */
			return;
		}
		plan_own_queues(p, own_selected, &oc);
		if (oc.failed)
			py_err_at(ld, ld->match, "%s '%.100s' cannot be decided for "
			    "this plan's own queue '%s' (%s); expected a simpler pattern",
			    what, p->old.match, oc.name_buf, oc.why);
		else if (oc.n > 0)
			py_err_at(ld, ld->match, "%s '%.100s' selects %zu of this "
			    "plan's own queues, such as the %s '%s'; expected a pattern that "
			    "selects only the old delay queues, never the ladder, its "
			    "destinations, the probe, statistics or canary queue", what,
			    p->old.match, oc.n, oc.what, oc.found);
		pattern_free(oc.re);
	}
	/* An old ladder may share some level queues with the new one on the
	 * same broker (a ladder rebuilt with fewer levels under its names:
	 * those it shares are kept, the rest are the old path). When it shares
	 * every one, nothing is left to be the old path: the plan mistook its
	 * own ladder for the old one. With target: they are another broker's. */
	if (ld->old_ladder != NULL && !p->has_target && p->old.nnames > 0) {
		size_t nown = 0;

		for (size_t i = 0; i < p->old.nnames; i++) {
			memset(&oc, 0, sizeof(oc));
			oc.ld = ld;
			oc.name = p->old.names[i];
			plan_own_queues(p, own_selected, &oc);
			nown += oc.n > 0;
		}
		if (nown == p->old.nnames)
			py_err_at(ld, ld->old_ladder, "every level queue of old.ladder "
			    "('%s' to '%s') is this plan's own ladder's, so there would be "
			    "no old path; expected the old ladder's own prefix or naming "
			    "(or target: when the new ladder is on another broker)",
			    p->old.names[0], p->old.names[p->old.nnames - 1]);
	}
	if (ld->names == NULL)
		return;
	for (size_t i = 0; i < (size_t)(ld->names->data.sequence.items.top -
	    ld->names->data.sequence.items.start); i++) {
		yaml_node_t *item = py_seq_item(ld, ld->names, i);

		if (item == NULL || item->type != YAML_SCALAR_NODE)
			continue;
		memset(&oc, 0, sizeof(oc));
		oc.ld = ld;
		oc.name = py_text(item);
		plan_own_queues(p, own_selected, &oc);
		if (oc.n > 0)
			py_err_at(ld, item, "old.queues.names[%zu] '%s' is this plan's own %s; "
			    "expected only old delay queues, never the ladder, its "
			    "destinations, the probe, statistics or canary queue", i, oc.found, oc.what);
	}
}
