/* itest_old: the old-path tests' plans, queues, policies and result readers
 * (itest_old.h). */
#include "itest_old.h"
#include "pattern.h"

char iold_prefix[64];		/* "itest.old.PID." */
char iold_rprefix[80];	/* the same as a regex: "itest\\.old\\.PID\\." */

void
iold_set_prefix(void)
{
	char stem[64];

	itest_cleanup();
	snprintf(iold_prefix, sizeof(iold_prefix), "itest.old.%ld.", (long)getpid());
	snprintf(iold_rprefix, sizeof(iold_rprefix), "itest\\.old\\.%ld\\.", (long)getpid());
	snprintf(stem, sizeof(stem), "itest.old.%ld", (long)getpid());
	itest_prefix_cleanup(stem);
}

struct plan *
iold_load_plan(const char *old_yaml, const char *allowance)
{
	char yaml[4096], broker[1024];

	itest_broker_yaml(NULL, broker, sizeof(broker));
	snprintf(yaml, sizeof(yaml),
	    "name: itest-old\n"
	    "%s"
	    "old:\n"
	    "%s"
	    "ladder: { naming: cutover, prefix: %sladder, unit: 1s, levels: 8,\n"
	    "          queue_type: quorum, destinations: [%sdest], create_destinations: true }\n"
	    "watch: { allowance: %s }\n"
	    "steps: [measure_horizon, declare_ladder, verify_ladder]\n",
	    broker, old_yaml, iold_prefix, iold_prefix, allowance);
	return itest_plan_load("itest-old.yaml", yaml);
}

struct plan *
iold_match_plan(const char *group, const char *max_ttl, const char *allowance)
{
	char old[512];

	snprintf(old, sizeof(old), "  queues: { match: '^%s%s\\.[0-9]{2}$' }\n%s%s%s",
	    iold_rprefix, group, max_ttl ? "  max_message_ttl: " : "", max_ttl ? max_ttl : "",
	    max_ttl ? "\n" : "");
	return iold_load_plan(old, allowance);
}

void
iold_make_queue(struct broker *b, const char *name, int64_t ttl_ms, int64_t expires_ms,
    bool quorum)
{
	struct topology_arg a[5];
	char full[128], err[1024];
	size_t n = 0;

	memset(a, 0, sizeof(a));
	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	snprintf(a[n].key, sizeof(a[n].key), "x-dead-letter-exchange");
	a[n++].str[0] = '\0';
	snprintf(a[n].key, sizeof(a[n].key), "x-dead-letter-routing-key");
	snprintf(a[n++].str, sizeof(a[0].str), "%sdest", iold_prefix);
	if (ttl_ms >= 0) {
		snprintf(a[n].key, sizeof(a[n].key), "x-message-ttl");
		a[n].is_int = true;
		a[n++].num = ttl_ms;
	}
	if (expires_ms >= 0) {
		snprintf(a[n].key, sizeof(a[n].key), "x-expires");
		a[n].is_int = true;
		a[n++].num = expires_ms;
	}
	if (quorum) {
		snprintf(a[n].key, sizeof(a[n].key), "x-queue-type");
		snprintf(a[n++].str, sizeof(a[0].str), "quorum");
	}
	if (broker_queue_declare(b, full, true, a, n, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", full, err);
}

void
iold_publish_to(struct broker *b, const char *name, const char *body)
{
	struct broker_message m = { 0 };
	char full[128], err[1024];

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	m.routing_key = full;
	m.body = body;
	m.len = strlen(body);
	m.mandatory = true;
	if (broker_publish(b, &m, 5000, err, sizeof(err)) != 0)
		fail_msg("publishing to %s: %s", full, err);
}

bool
iold_exists(struct broker *b, const char *name, uint32_t *messages)
{
	struct broker_queue_info qi;
	char full[128], err[1024];
	int r;

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	r = broker_queue_inspect(b, full, &qi, err, sizeof(err));
	if (r != 0 && r != BROKER_NOT_FOUND)
		fail_msg("inspecting %s: %s", full, err);
	if (messages != NULL)
		*messages = qi.messages;
	return r == 0;
}

void
iold_drop_queue(struct broker *b, const char *name)
{
	char full[128], err[1024];

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	broker_queue_delete(b, full, 0, NULL, err, sizeof(err));
}

void
iold_touch(struct broker *b, const char *name)
{
	struct broker_delivery d;
	char full[128], err[1024];

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	iold_publish_to(b, name, "touch");
	if (broker_get(b, full, false, &d, err, sizeof(err)) != 0)
		fail_msg("taking the touch message back from %s: %s", full, err);
	broker_delivery_free(&d);
}

int64_t
iold_counter_in(const json_t *listing, const char *name)
{
	char full[128];

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	return itest_publish_counter(listing, full);
}

json_t *
iold_await_counters(struct mgmt *m, const char *const *names, const int64_t *want,
    size_t n)
{
	char err[1024];

	for (int tries = 0; ; tries++) {
		json_t *l = NULL;
		size_t ok = 0;

		if (mgmt_request(m, "GET", "/api/queues/%2F?columns=name,message_stats.publish",
		    NULL, &l, NULL, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		for (size_t i = 0; i < n; i++) {
			int64_t v = iold_counter_in(l, names[i]);

			if (want != NULL ? v == want[i] : v >= 1)
				ok++;
		}
		if (ok == n)
			return l;
		json_decref(l);
		if (tries == 120)
			fail_msg("the statistics never showed the publish counters of %zu "
			    "queues (%zu did)", n, ok);
		clock_sleep_ms(500);
	}
}

void
iold_touch_all(struct step_ctx *c, const char *group, int width, int n)
{
	char (*names)[32] = calloc((size_t)n, sizeof(*names));
	const char **pn = calloc((size_t)n, sizeof(*pn));
	size_t k = 0;

	assert_non_null(names);
	assert_non_null(pn);
	for (int i = 0; i < n; i++) {
		snprintf(names[k], sizeof(names[k]), "%s.%0*d", group, width, i);
		iold_touch(c->amqp, names[k]);
		pn[k] = names[k];
		k++;
	}
	json_decref(iold_await_counters(c->mgmt, pn, NULL, k));
	free(pn);
	free(names);
}

void
iold_put_policy(struct mgmt *m, bool operator_policy, const char *name,
    const char *pattern_tail, int64_t ttl_ms)
{
	char pname[128], pattern[160], path[256], err[1024];
	json_t *body;
	int r;

	snprintf(pname, sizeof(pname), "%s%s", iold_prefix, name);
	snprintf(pattern, sizeof(pattern), "^%s%s", iold_rprefix, pattern_tail);
	if (!operator_policy) {
		body = json_pack("{s:I}", "message-ttl", (json_int_t)ttl_ms);
		r = mgmt_put_policy(m, pname, pattern, "queues", 7, body, err, sizeof(err));
		json_decref(body);
	} else {
		body = json_pack("{s:s,s:{s:I},s:s,s:i}", "pattern", pattern, "definition",
		    "message-ttl", (json_int_t)ttl_ms, "apply-to", "queues", "priority", 7);
		snprintf(path, sizeof(path), "/api/operator-policies/%%2F/%s", pname);
		r = mgmt_request(m, "PUT", path, body, NULL, NULL, err, sizeof(err));
		json_decref(body);
	}
	if (r != 0)
		fail_msg("putting policy %s: %s", pname, err);
}

void
iold_drop_policies(struct mgmt *m)
{
	char pname[128], path[256], err[1024];

	snprintf(pname, sizeof(pname), "%spol-a", iold_prefix);
	mgmt_delete_policy(m, pname, err, sizeof(err));
	snprintf(pname, sizeof(pname), "%spol-b", iold_prefix);
	mgmt_delete_policy(m, pname, err, sizeof(err));
	snprintf(path, sizeof(path), "/api/operator-policies/%%2F/%sop", iold_prefix);
	mgmt_request(m, "DELETE", path, NULL, NULL, NULL, err, sizeof(err));
}

void
iold_policy_on(struct mgmt *m, const char *name, const char *queue,
    const json_t *definition)
{
	char pname[128], full[128], pattern[3 * 128 + 3], err[1024];

	snprintf(pname, sizeof(pname), "%s%s", iold_prefix, name);
	snprintf(full, sizeof(full), "%s%s", iold_prefix, queue);
	assert_int_equal(pattern_exact(full, pattern, sizeof(pattern)), 0);
	if (mgmt_put_policy(m, pname, pattern, "queues", 7, definition, err,
	    sizeof(err)) != 0)
		fail_msg("putting policy %s: %s", pname, err);
	/* As an operator's change just made: the queue records name it at
	 * once, the statistics listing only some seconds later, and what
	 * remove_old does must follow the records. */
	for (int tries = 0;; tries++) {
		struct mgmt_queue_list l = { 0 };
		const struct mgmt_queue *q;
		bool on;

		if (mgmt_list_queues(m, &l, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		q = mgmt_queue_list_find(&l, full);
		on = q != NULL && q->policy != NULL && strcmp(q->policy, pname) == 0;
		mgmt_queue_list_free(&l);
		if (on)
			break;
		if (tries == 150)
			fail_msg("the queue listing never named policy %s on %s", pname, full);
		clock_sleep_ms(200);
	}
}

void
iold_policy_start(void **state, struct made *made, const char *group,
    struct step_ctx *c, char *dest, size_t destlen)
{
	static char pname[128];
	char err[1024];

	iold_set_prefix();
	snprintf(pname, sizeof(pname), "%spol-%s", iold_prefix, group);
	made->p = iold_match_plan(group, NULL, "1s");
	made->policy = pname;
	*state = made;
	itest_ctx_open(c, made->p);
	snprintf(dest, destlen, "%s%s.dest", iold_prefix, group);
	if (broker_queue_declare(c->amqp, dest, true, NULL, 0, err, sizeof(err)) != 0)
		fail_msg("declaring %s: %s", dest, err);
}

const json_t *
iold_entry(const json_t *r, const char *key, const char *name)
{
	const json_t *o;
	char full[128];
	size_t i;

	snprintf(full, sizeof(full), "%s%s", iold_prefix, name);
	json_array_foreach(json_object_get(r, key), i, o)
		if (strcmp(json_string_value(json_object_get(o, "name")), full) == 0)
			return o;
	return NULL;
}

const char *
iold_str_of(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : "(null)";
}

const char *
iold_outcome(const json_t *r, const char *name)
{
	const json_t *e = iold_entry(r, "entries", name);

	if (e == NULL)
		fail_msg("no entry for %s%s", iold_prefix, name);
	return iold_str_of(e, "outcome");
}

int
iold_made_teardown(void **state)
{
	struct made *m = *state;
	struct step_ctx c;
	char x[128], err[1024];

	if (m == NULL || m->p == NULL)
		return 0;
	itest_ctx_open(&c, m->p);
	for (size_t i = 0; i < 8 && m->queues[i] != NULL; i++)
		iold_drop_queue(c.amqp, m->queues[i]);
	if (m->policy != NULL)
		mgmt_delete_policy(c.mgmt, m->policy, err, sizeof(err));
	if (m->exchange != NULL) {
		snprintf(x, sizeof(x), "%s%s", iold_prefix, m->exchange);
		broker_exchange_delete(c.amqp, x, false, err, sizeof(err));
	}
	step_ctx_close(&c);
	plan_free(m->p);
	m->p = NULL;
	return 0;
}

int
iold_expiring_teardown(void **state)
{
	struct plan *p;
	struct step_ctx c;
	char pname[128], err[1024];

	(void)state;
	iold_set_prefix();
	p = iold_match_plan("x", NULL, "1s");
	if (step_ctx_open(&c, p, err, sizeof(err)) == 0) {
		iold_drop_queue(c.amqp, "x.00");
		iold_drop_queue(c.amqp, "x.01");
		iold_drop_queue(c.amqp, "x.02");
		iold_drop_queue(c.amqp, "x.03");
		iold_drop_queue(c.amqp, "x.04");
		snprintf(pname, sizeof(pname), "%spol-x", iold_prefix);
		mgmt_delete_policy(c.mgmt, pname, err, sizeof(err));
		step_ctx_close(&c);
	}
	plan_free(p);
	return 0;
}

