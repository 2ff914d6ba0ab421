/* plan_load_old: the plan loader's old section: which queues are the old
 * path (old.queues: a PCRE2 pattern whose matching cost is bounded, or a
 * list of names), old.library and what it implies once every section is
 * read (the selection, move_old.entry), max_message_ttl and
 * allow_expiring. Part of the loader (plan_load_int.h). */
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
#include "plan_library.h"
#include "plan_load_int.h"

/* Does PAT, matched against a NAME_MAX_LEN-byte name of every byte the
 * pattern itself holds (the worst case of nested repetition is a long run
 * of what it repeats), stay within PCRE2's limits? Returns 0, or -1 with
 * WHY naming the subject that hit one. */
static int
match_cost_ok(struct pattern *pat, const char *t, char *why, size_t whylen)
{
	char subject[QUEUE_NAME_MAX + 1], seen[256] = { 0 }, msg[128];
	bool matched;

	for (const unsigned char *c = (const unsigned char *)t; *c != '\0'; c++) {
		if (seen[*c] || *c < 0x20 || *c == 0x7f)
			continue;
		seen[*c] = 1;
		memset(subject, *c, QUEUE_NAME_MAX - 1);
		subject[QUEUE_NAME_MAX - 1] = '!';
		subject[QUEUE_NAME_MAX] = '\0';
		if (pattern_match(pat, subject, &matched, msg, sizeof(msg)) != 0) {
			snprintf(why, whylen, "%s on a %d-byte name of '%c' repeated", msg,
			    QUEUE_NAME_MAX, *c);
			return -1;
		}
	}
	return 0;
}

int
pl_conv_pattern(struct loader *ld, yaml_node_t *n, const char *what, char **out)
{
	static const char expect[] = "a PCRE2 pattern over queue names of at most "
	    "1024 bytes, such as '^delay\\.[0-9]+s$'";
	struct pattern *pat = NULL;
	const char *t;
	char why[256];
	int rc = -1;

	if ((t = py_conv_text(ld, n, what, expect)) == NULL)
		return -1;
	if (pattern_compile(t, &pat, why, sizeof(why)) != 0) {
		py_err_at(ld, n, "%s '%.100s%s' is not a valid regex (%s); "
		    "expected %s", what, t, strlen(t) > 100 ? "..." : "", why, expect);
		return -1;
	}
	if (match_cost_ok(pat, t, why, sizeof(why)) != 0)
		py_err_at(ld, n, "%s '%.100s%s' costs too much to match (%s); "
		    "expected a pattern without nested repetition", what, t,
		    strlen(t) > 100 ? "..." : "", why);
	else if ((*out = py_copy(ld, t)) != NULL)
		rc = 0;
	pattern_free(pat);
	return rc;
}

static void
load_match(struct loader *ld, yaml_node_t *n)
{
	if (pl_conv_pattern(ld, n, "old.queues.match", &ld->p->old.match) == 0)
		ld->match = n;
}

static void
load_names(struct loader *ld, yaml_node_t *n)
{
	static const char expect[] = "a list of old queue names, such as [delay.5s, delay.30s]";
	struct plan *p = ld->p;
	const char *t;
	yaml_node_t *item;
	char what[64];
	size_t count, i, j;

	if ((count = py_seq_items(ld, n, "old.queues.names", expect)) == 0)
		return;
	ld->names = n;
	if ((p->old.names = calloc(count, sizeof(char *))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(what, sizeof(what), "old.queues.names[%zu]", i);
		if ((t = py_conv_text(ld, item, what, "a queue name")) == NULL)
			continue;
		if (strlen(t) > QUEUE_NAME_MAX) {
			py_err_at(ld, item, "%s is %zu bytes long; expected a queue name of "
			    "at most %d bytes", what, strlen(t), QUEUE_NAME_MAX);
			continue;
		}
		for (j = 0; j < p->old.nnames; j++)
			if (strcmp(p->old.names[j], t) == 0)
				break;
		if (j < p->old.nnames) {
			py_err_at(ld, item, "%s '%.100s' is listed twice; expected distinct "
			    "queue names", what, t);
			continue;
		}
		if ((p->old.names[p->old.nnames] = py_copy(ld, t)) != NULL)
			p->old.nnames++;
	}
}

/* old.library: a row of the library table (plan_library.h), whose node
 * is kept for errors about the selection it implies. Returns whether the
 * key is written at all (valid or not). */
static bool
load_library(struct loader *ld, const struct sect *s)
{
	char names[128];
	yaml_node_t *n;
	const char *t;

	if ((n = py_field(ld, s, "library", 0, NULL)) == NULL)
		return false;
	plan_library_names(names, sizeof(names));
	if ((t = py_conv_text(ld, n, "old.library", names)) == NULL)
		return true;
	if ((ld->p->old.library = plan_library_find(t)) == NULL)
		py_err_at(ld, n, "old.library '%.40s' is unknown; expected %s", t, names);
	else
		ld->library = n;
	return true;
}

/* old.ladder: the old path is a delay ladder (cutover's, Kombu's or
 * NServiceBus's naming), whose level queues are the selection: N is the
 * section's node. Its naming, prefix, unit and levels as ladder's are
 * (a style with fixed ones gives them). */
static void
load_old_ladder(struct loader *ld, const struct sect *s, yaml_node_t *n)
{
	static const char *const keys[] = { "naming", "prefix", "unit", "levels", NULL };
	struct plan *p = ld->p;
	const struct ladder_style *style;
	enum ladder_naming naming = LADDER_NAMING_CUTOVER;
	char *naming_text = NULL, *prefix = NULL, names[64], err[256];
	int64_t unit_ms = 0;
	int levels = 0;
	yaml_node_t *ln;
	struct sect ls;

	if (py_get_map(ld, s, "ladder", 0, "a mapping with naming, prefix, unit and "
	    "levels", "old.ladder", &ls) != 0 || ls.map == NULL)
		return;
	py_check_keys(ld, &ls, keys);
	ladder_naming_list(", ", " or ", names, sizeof(names));
	if (py_get_text(ld, &ls, "naming", 0, names, &naming_text) == 0 &&
	    naming_text != NULL && ladder_naming_parse(naming_text, &naming) != 0) {
		py_err_at(ld, n, "old.ladder.naming '%.40s' is unknown; expected %s",
		    naming_text, names);
		goto done;
	}
	style = ladder_style(naming);
	(void)py_get_text(ld, &ls, "prefix", 0, "a name prefix", &prefix);
	(void)py_get_duration(ld, &ls, "unit", style->fixed_levels == 0, &unit_ms);
	if ((ln = py_field(ld, &ls, "levels", style->fixed_levels == 0, NULL)) != NULL)
		(void)py_conv_int(ld, ln, "old.ladder.levels", 1, LADDER_MAX_LEVELS, &levels);
	if (style->fixed_levels != 0) {
		unit_ms = unit_ms != 0 ? unit_ms : style->fixed_unit_ms;
		levels = levels != 0 ? levels : style->fixed_levels;
	}
	if (unit_ms <= 0 || levels <= 0)
		goto done;	/* said where they are written */
	if (ladder_init(&p->old.ladder, naming, prefix != NULL ? prefix :
	    style->default_prefix != NULL ? style->default_prefix : "", unit_ms,
	    levels, err, sizeof(err)) != 0) {
		py_err_at(ld, n, "old.ladder is not a ladder: %s", err);
		goto done;
	}
	p->old.from_ladder = true;
	if ((p->old.names = calloc((size_t)levels, sizeof(char *))) == NULL) {
		ld->oom = 1;
		goto done;
	}
	for (int k = 0; k < levels; k++) {
		char q[LADDER_NAME_MAX];

		ladder_level_queue(&p->old.ladder, k, q, sizeof(q));
		if ((p->old.names[k] = py_copy(ld, q)) == NULL)
			goto done;
		p->old.nnames++;
	}
	ld->old_ladder = n;
done:
	free(naming_text);
	free(prefix);
}

/* The old section of ROOT into the plan. */
void
pl_load_old(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "queues", "max_message_ttl",
	    "allow_expiring", "library", "ladder", NULL };
	static const char *const qkeys[] = { "match", "names", NULL };
	static const char qexpect[] = "{ match: REGEX } or { names: [queue, ...] }";
	yaml_node_pair_t *pm, *pn, *pl;
	yaml_node_t *n;
	struct sect s, q;
	bool library;

	if (py_get_map(ld, root, "old", 1, "a mapping with queues and optionally "
	    "max_message_ttl", "old", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	/* A library's queues are its selection unless the plan says; a
	 * ladder's are its level queues. */
	library = load_library(ld, &s);
	if ((pl = py_find_pair(ld, s.map, "ladder")) != NULL) {
		if (library || py_find_pair(ld, s.map, "queues") != NULL)
			py_err_at(ld, py_key_node(ld, pl), "old.ladder selects its own "
			    "level queues; expected no old.queues or old.library with it");
		else
			load_old_ladder(ld, &s, py_node_at(ld, pl->value));
		library = true;	/* old.queues is not required */
	}
	if (py_get_map(ld, &s, "queues", !library, qexpect, "old.queues", &q) == 0 &&
	    q.map != NULL) {
		py_check_keys(ld, &q, qkeys);
		pm = py_find_pair(ld, q.map, "match");
		pn = py_find_pair(ld, q.map, "names");
		if (pm == NULL && pn == NULL)
			py_err_at(ld, q.map, "old.queues has neither match nor names; "
			    "expected exactly one of them: %s", qexpect);
		if (pm != NULL && pn != NULL)
			py_err_at(ld, py_key_node(ld, pm < pn ? pn : pm), "old.queues has both "
			    "match and names; expected exactly one of them");
		if (pm != NULL)
			load_match(ld, py_node_at(ld, pm->value));
		if (pn != NULL)
			load_names(ld, py_node_at(ld, pn->value));
	}
	py_get_duration(ld, &s, "max_message_ttl", 0, &ld->p->old.max_message_ttl_ms);
	if ((n = py_field(ld, &s, "allow_expiring", 0, NULL)) != NULL)
		(void)py_conv_bool(ld, n, "old.allow_expiring", &ld->p->old.allow_expiring);
}

/* What old.library sets that the plan does not write itself: the
 * selection (old.queues) and move_old.entry, one rule per kind of queue in
 * the table's order. Runs once every section is read. */
void
pl_apply_library(struct loader *ld)
{
	const struct plan_library *l = ld->p->old.library;
	struct plan *p = ld->p;
	char match[PATTERN_LENGTH_MAX + 1];

	if (l == NULL)
		return;
	if (p->old.match == NULL && ld->names == NULL && ld->old_ladder == NULL) {
		if (plan_library_match(l, match, sizeof(match)) != 0 ||
		    (p->old.match = py_copy(ld, match)) == NULL)
			return;
		p->old.match_from_library = true;
		ld->match = ld->library;
	}
	if (p->move_old.nentries > 0 || ld->entries_given)
		return;
	if ((p->move_old.entries = calloc(l->nkinds, sizeof(*p->move_old.entries))) ==
	    NULL) {
		ld->oom = 1;
		return;
	}
	for (size_t i = 0; i < l->nkinds; i++) {
		struct plan_move_entry *e = &p->move_old.entries[i];

		if ((e->match = py_copy(ld, l->kinds[i].match)) == NULL)
			return;
		e->from = l->kinds[i].from;
		e->then = l->kinds[i].then;
		p->move_old.nentries++;
	}
	p->move_old.entries_from_library = true;
}
