/* plan_load: reads a migration plan (DESIGN.md §2) from YAML into struct
 * plan with libyaml's document API. Every key, type and value is checked
 * where it is written, and every error is collected with the line and
 * column of the node it is about: the key for an unknown or refused key,
 * the value for a bad value, the mapping for a missing key. This file holds
 * plan_load_buffer/file, the root and the smaller sections' loaders (name,
 * broker, canary, flag, watch, steps); the old section is plan_load_old.c's,
 * the ladder plan_load_ladder.c's, move_old plan_move_old.c's; the YAML
 * reader and scalar conversions are plan_yaml.c's, the file and its document
 * plan_yaml_read.c's, the checks across sections plan_check.c's,
 * plan_section.h's helpers plan_section.c's (plan_load_int.h between them).
 * The checks on the plan as a whole are plan_validate's, in plan.c. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "duration.h"
#include "plan_flag.h"
#include "ladder.h"
#include "pattern.h"
#include "plan.h"
#include "plan_library.h"
#include "plan_load_int.h"
#include "plan_section.h"

static void
load_name(struct loader *ld, const struct sect *root)
{
	static const char expect[] = "1 to 64 characters of [a-z0-9._-]";
	const char *t;
	yaml_node_t *n;
	size_t len, i;

	if ((n = py_field(ld, root, "name", 1, "a plan name of 1 to 64 characters "
	    "[a-z0-9._-]")) == NULL)
		return;
	if ((t = py_conv_text(ld, n, "name", expect)) == NULL)
		return;
	len = strlen(t);
	if (len > PLAN_NAME_MAX) {
		py_err_at(ld, n, "name is %zu characters long; expected %s", len, expect);
		return;
	}
	for (i = 0; i < len; i++) {
		if ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= '0' && t[i] <= '9') ||
		    t[i] == '.' || t[i] == '_' || t[i] == '-')
			continue;
		if (t[i] > ' ' && t[i] < 0x7f)
			py_err_at(ld, n, "name '%s' contains '%c'; expected %s", t, t[i], expect);
		else
			py_err_at(ld, n, "name '%s' contains byte 0x%02x; expected %s", t,
			    (unsigned char)t[i], expect);
		return;
	}
	memcpy(ld->p->name, t, len + 1);
}

/* A target is another broker: one of its AMQP URLs that is one of the
 * broker's would build the ladder beside the old path, as a plan without
 * a target does, while the plan says otherwise. Errs at the target's
 * amqp (S: the target section). */
static void
check_target_apart(struct loader *ld, const struct sect *s)
{
	const struct plan *p = ld->p;
	yaml_node_pair_t *at = py_find_pair(ld, s->map, "amqp");

	for (size_t i = 0; i < p->target.namqp; i++)
		for (size_t j = 0; j < p->broker.namqp; j++)
			if (strcmp(p->target.amqp_urls[i], p->broker.amqp_urls[j]) == 0) {
				py_err_at(ld, at != NULL ? py_node_at(ld, at->value) :
				    s->map, "target.amqp '%s' is broker.amqp's too; a "
				    "target is another broker (leave target out to "
				    "build the ladder beside the old path)",
				    p->target.amqp_urls[i]);
				return;
			}
}

/* Reads broker section KEY of ROOT ("broker", or "target": the broker
 * the ladder is built on when it is another) into B; REQUIRED says
 * whether the plan must have it. Returns whether ROOT has it. */
static bool
load_broker(struct loader *ld, const struct sect *root, const char *key,
    int required, struct plan_broker *b)
{
	static const char *const keys[] = { "amqp", "management", "username",
	    "password", "tls", "return_after", NULL };
	struct sect s;
	const char *urls[2 * BROKER_URLS_MAX];
	char tls[32];
	size_t nurls = 0;

	b->section = key;
	if (py_get_map(ld, root, key, required, "a mapping with amqp, management "
	    "(each a URL or a list of a cluster's URLs), username and password",
	    key, &s) != 0 || s.map == NULL)
		return false;
	snprintf(tls, sizeof(tls), "%s.tls", key);
	py_check_keys(ld, &s, keys);
	if (py_get_urls(ld, &s, "amqp", 1, URL_AMQP, BROKER_URLS_MAX,
	    &b->amqp_urls, &b->namqp) == 0 && b->namqp > 0)
		b->amqp = py_copy(ld, b->amqp_urls[0]);
	if (py_get_urls(ld, &s, "management", 1, URL_HTTP_BASE, BROKER_URLS_MAX,
	    &b->management_urls, &b->nmanagement) == 0 && b->nmanagement > 0)
		b->management = py_copy(ld, b->management_urls[0]);
	py_get_text(ld, &s, "username", 1, "the user for AMQP and the management API",
	    &b->username);
	py_get_secret(ld, &s, "password", 1, "env:RABBIT_PASSWORD", &b->password);
	pt_load_tls(ld, &s, tls, &b->tls);
	py_get_duration(ld, &s, "return_after", 0, &b->return_after_ms);
	for (size_t i = 0; i < b->namqp && nurls < 2 * BROKER_URLS_MAX; i++)
		urls[nurls++] = b->amqp_urls[i];
	for (size_t i = 0; i < b->nmanagement && nurls < 2 * BROKER_URLS_MAX; i++)
		urls[nurls++] = b->management_urls[i];
	pt_check_used(ld, &s, tls, &b->tls, urls, nurls);
	if (b == &ld->p->target)
		check_target_apart(ld, &s);
	return true;
}

static void
load_canary(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "delays", "max_lateness", "budget", NULL };
	static const char expect[] = "a list of durations, such as [1s, 2s, 3s, 7s], "
	    "or no delays for one per level within the budget";
	struct plan *p = ld->p;
	yaml_node_t *n, *item;
	char what[64], a[32], b[32];
	int64_t ms, max;
	size_t count, i;
	struct sect s;

	if (py_get_map(ld, root, "canary", 0, "a mapping with delays, max_lateness "
	    "and budget", "canary", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	py_get_duration(ld, &s, "budget", 0, &p->canary.budget_ms);
	py_get_duration(ld, &s, "max_lateness", 0, &p->canary.max_lateness_ms);
	if ((n = py_field(ld, &s, "delays", 0, NULL)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "canary.delays", expect)) == 0)
		return;
	if ((p->canary.delays_ms = calloc(count, sizeof(int64_t))) == NULL) {
		ld->oom = 1;
		return;
	}
	max = p->ladder.levels > 0 ? ladder_limit_ms(&p->ladder) : -1;
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(what, sizeof(what), "canary.delays[%zu]", i);
		if (py_conv_duration(ld, item, what, &ms) == -1)
			continue;
		if (ms > p->canary.budget_ms) {
			py_err_at(ld, item, "%s %s is beyond the canary budget of %s; expected "
			    "at most %s, or a larger canary.budget", what, py_text(item),
			    duration_format(p->canary.budget_ms, a, sizeof(a)), a);
			continue;
		}
		if (max > 0 && ms > max) {
			py_err_at(ld, item, "%s %s is beyond the ladder's largest delay %s; "
			    "expected at most %s", what, py_text(item),
			    duration_format(max, b, sizeof(b)), b);
			continue;
		}
		p->canary.delays_ms[p->canary.ndelays++] = ms;
	}
}

/* The flag section: its kind names a provider (plan_flag.h), whose own
 * loader reads the rest. */
static void
load_flag(struct loader *ld, const struct sect *root)
{
	const char *keys[PLAN_FLAG_KEYS_MAX + 1];
	const struct plan_flag_kind *prov = NULL;
	struct plan *p = ld->p;
	char kinds[128], expect[160];
	struct plan_section ps;
	yaml_node_t *n;
	const char *t;
	struct sect s;

	plan_flag_kinds(kinds, sizeof(kinds));
	snprintf(expect, sizeof(expect), "a mapping with kind %s", kinds);
	if (py_get_map(ld, root, "flag", 0, expect, "flag", &s) != 0 || s.map == NULL)
		return;
	if ((n = py_field(ld, &s, "kind", 1, kinds)) != NULL &&
	    (t = py_conv_text(ld, n, "flag.kind", kinds)) != NULL &&
	    (prov = plan_flag_kind_find(t)) == NULL)
		py_err_at(ld, n, "flag.kind '%.40s' is unknown; expected %s", t, kinds);
	p->flag.kind = prov != NULL ? prov->name : NULL;
	if (prov == NULL) {
		plan_flag_keys(keys, sizeof(keys) / sizeof(keys[0]));
		py_check_keys(ld, &s, keys);
		return;
	}
	ps.ld = ld;
	ps.s = &s;
	py_check_keys(ld, &s, prov->keys);
	if ((p->flag.settings = calloc(1, prov->size)) == NULL) {
		ld->oom = 1;
		return;
	}
	prov->load(&ps, p->flag.settings);
}

static void
load_watch(struct loader *ld, const struct sect *root)
{
	static const char *const keys[] = { "interval", "allowance", "probe_every", NULL };
	struct plan *p = ld->p;
	struct sect s;

	if (py_get_map(ld, root, "watch", 0, "a mapping with interval, allowance and "
	    "probe_every", "watch", &s) != 0 || s.map == NULL)
		return;
	py_check_keys(ld, &s, keys);
	py_get_duration(ld, &s, "interval", 0, &p->watch.interval_ms);
	py_get_duration(ld, &s, "allowance", 0, &p->watch.allowance_ms);
	py_get_duration(ld, &s, "probe_every", 0, &p->watch.probe_every_ms);
}

/* One item of steps as it is written: a step name or { step, gate }. */
struct step_item {
	yaml_node_t		*node;		/* the step name's node */
	const char		*name;
	enum plan_step_kind	 kind;
	bool			 gate, gate_given;
};

/* Reads ITEM (at PATH, NAMES listing the kinds) into SI, setting *BAD for
 * each error it reports. Returns 0 when ITEM names a step kind, -1 when it
 * is to be skipped. */
static int
step_item_read(struct loader *ld, yaml_node_t *item, const char *path,
    const char *names, struct step_item *si, int *bad)
{
	static const char *const keys[] = { "step", "gate", NULL };
	char what[48];
	struct sect s;

	si->gate = false;
	si->gate_given = false;
	si->node = item;
	if (item->type == YAML_MAPPING_NODE) {
		s.map = item;
		s.path = path;
		py_check_keys(ld, &s, keys);
		snprintf(what, sizeof(what), "%s.gate", path);
		if ((si->node = py_field(ld, &s, "gate", 0, NULL)) != NULL) {
			si->gate_given = true;
			if (py_conv_bool(ld, si->node, what, &si->gate) == -1)
				*bad = 1;
		}
		if ((si->node = py_field(ld, &s, "step", 1, names)) == NULL) {
			*bad = 1;
			return -1;
		}
		snprintf(what, sizeof(what), "%s.step", path);
	} else if (item->type == YAML_SCALAR_NODE)
		snprintf(what, sizeof(what), "%s", path);
	else {
		py_err_at(ld, item, "%s is a list; expected a step name or "
		    "{ step: NAME, gate: true }", path);
		*bad = 1;
		return -1;
	}
	if ((si->name = py_conv_text(ld, si->node, what, names)) == NULL) {
		*bad = 1;
		return -1;
	}
	if (plan_step_kind_parse(si->name, &si->kind) == -1) {
		py_err_at(ld, si->node, "unknown step '%.40s'; expected one of: %s",
		    si->name, names);
		*bad = 1;
		return -1;
	}
	return 0;
}

/* Appends SI, written at ITEM, to the plan's steps. Returns 0, or -1 after
 * reporting that its kind is there already. */
static int
step_add(struct loader *ld, const struct step_item *si, const yaml_node_t *item)
{
	struct plan *p = ld->p;
	struct plan_step *st;
	size_t j;

	for (j = 0; j < p->nsteps; j++)
		if (p->steps[j].kind == si->kind)
			break;
	if (j < p->nsteps) {
		py_err_at(ld, si->node, "step '%s' appears twice (first at line %d); "
		    "expected each step at most once", si->name, p->steps[j].line);
		return -1;
	}
	st = &p->steps[p->nsteps++];
	st->kind = si->kind;
	st->gate = si->gate_given ? si->gate : plan_step_kind_gated(si->kind);
	st->line = py_mark_num(item->start_mark.line);
	st->column = py_mark_num(item->start_mark.column);
	return 0;
}

static void
load_steps(struct loader *ld, const struct sect *root)
{
	static const char expect[] = "a list of steps, each a step name or "
	    "{ step: NAME, gate: true }";
	struct plan *p = ld->p;
	struct step_item si;
	yaml_node_t *n, *item;
	char path[32];
	size_t count, i;
	char names[256];
	int bad = 0;

	plan_step_kind_names(names, sizeof(names));
	if ((n = py_field(ld, root, "steps", 1, expect)) == NULL)
		return;
	if ((count = py_seq_items(ld, n, "steps", expect)) == 0)
		return;
	if ((p->steps = calloc(count, sizeof(*p->steps))) == NULL) {
		ld->oom = 1;
		return;
	}
	for (i = 0; i < count; i++) {
		item = py_seq_item(ld, n, i);
		snprintf(path, sizeof(path), "steps[%zu]", i);
		if (step_item_read(ld, item, path, names, &si, &bad) == 0 &&
		    step_add(ld, &si, item) == -1)
			bad = 1;
	}
	pc_check_sections(ld, root);
	if (bad) {
		/* Order checks on half the steps would only add noise. */
		free(p->steps);
		p->steps = NULL;
		p->nsteps = 0;
	}
}

static void
load_root(struct loader *ld, yaml_node_t *root)
{
	static const char *const keys[] = { "name", "broker", "target", "old",
	    "ladder", "canary", "flag", "watch", "move_old", "steps", NULL };
	static const char expect[] = "a mapping with name, broker, old, ladder and steps";
	struct sect s = { root, "" };

	if (root->type != YAML_MAPPING_NODE) {
		py_err_at(ld, root, "the plan %s; expected %s", py_is_null(root) ? "is empty" :
		    root->type == YAML_SCALAR_NODE ? "is a scalar" : "is a list", expect);
		return;
	}
	py_check_keys(ld, &s, keys);
	load_name(ld, &s);
	(void)load_broker(ld, &s, "broker", 1, &ld->p->broker);
	ld->p->has_target = load_broker(ld, &s, "target", 0, &ld->p->target);
	pl_load_old(ld, &s);
	pl_load_ladder(ld, &s);
	load_canary(ld, &s);
	load_flag(ld, &s);
	load_watch(ld, &s);
	pm_load_move_old(ld, &s);
	pl_apply_library(ld);
	load_steps(ld, &s);
}

static struct plan *
plan_new(const char *file)
{
	struct plan *p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	if ((p->file = strdup(file)) == NULL) {
		free(p);
		return NULL;
	}
	p->queue_type = PLAN_QUEUE_QUORUM;
	p->broker.return_after_ms = 30 * 1000;
	p->target.return_after_ms = 30 * 1000;
	p->canary.budget_ms = PLAN_DEFAULT_CANARY_BUDGET_MS;
	p->canary.max_lateness_ms = 2000;
	p->flag.kind = NULL;
	p->flag.settle_ms = PLAN_DEFAULT_FLAG_SETTLE_MS;
	p->watch.interval_ms = 10 * 1000;
	p->watch.allowance_ms = 30 * 1000;
	p->watch.probe_every_ms = 60 * 1000;
	p->move_old.rate_per_s = 500;
	p->move_old.prefetch = 100;
	p->move_old.stragglers_ms = 60 * 1000;
	return p;
}

/* Starts a load into LD: ERRS emptied and named FILE, a new plan in LD->p.
 * Returns 0, or -1 with the reason in ERRS or LD->oom. */
static int
load_begin(struct loader *ld, const char *file, const char *buf, size_t len,
    struct plan **out, struct plan_errors *errs)
{
	memset(errs, 0, sizeof(*errs));
	memset(ld, 0, sizeof(*ld));
	ld->errs = errs;
	if (file == NULL)
		file = "(plan)";
	if ((errs->file = strdup(file)) == NULL) {
		ld->oom = 1;
		return -1;
	}
	if (out == NULL || (buf == NULL && len > 0)) {
		if (plan_errors_add(errs, 0, 0, "no plan given; expected a buffer and "
		    "a place for the plan") == -1)
			ld->oom = 1;
		return -1;
	}
	if ((ld->p = plan_new(file)) == NULL) {
		ld->oom = 1;
		return -1;
	}
	return 0;
}

int
plan_load_buffer(const char *file, const char *buf, size_t len, struct plan **out,
    struct plan_errors *errs)
{
	struct plan_errors local;
	struct py_document d = { 0 };
	yaml_node_t *root;
	struct loader ld;
	struct plan *p;
	int rc = -1;

	if (out != NULL)
		*out = NULL;
	if (errs == NULL)
		errs = &local;
	if (load_begin(&ld, file, buf, len, out, errs) == -1)
		goto done;
	if (py_read_document(&ld, &d, buf, len, &root, "a YAML mapping with name, "
	    "broker, old, ladder and steps", "plan") == -1)
		goto done;
	load_root(&ld, root);
	pc_check_own(&ld);
	if (plan_validate(ld.p, errs) == -1)
		ld.oom = 1;

done:
	p = ld.p;
	if (py_load_end(&ld, &d, "plan") && p != NULL) {
		*out = p;
		p = NULL;
		plan_errors_free(errs);
		rc = 0;
	}
	plan_free(p);
	if (errs == &local)
		plan_errors_free(&local);
	return rc;
}

int
plan_load_file(const char *path, struct plan **out, struct plan_errors *errs)
{
	char *buf = NULL;
	size_t len = 0;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (py_read_file(path, "plan", "a plan of a few kilobytes", &buf, &len, errs) != 0)
		return -1;
	rc = plan_load_buffer(path, buf, len, out, errs);
	free(buf);
	return rc;
}
