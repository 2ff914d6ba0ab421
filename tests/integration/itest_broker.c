/* itest_broker: what a test makes on the test broker and the test Unleash,
 * named for this run and removed whatever happens (through itest_run's
 * cleanups): vhosts, policies, queues and exchanges under a prefix, the
 * queues the engine names after a plan, Unleash features. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "broker/broker.h"
#include "broker/mgmt.h"
#include "clock.h"
#include "itest_broker.h"
#include "itest_unleash.h"
#include "itest_run.h"
#include "step.h"
#include "topology.h"

const char *
itest_run_id(void)
{
	static char id[48];
	unsigned int r = 0;
	FILE *f;

	if (id[0] == '\0') {
		if ((f = fopen("/dev/urandom", "rb")) != NULL) {
			if (fread(&r, sizeof(r), 1, f) != 1)
				r = 0;
			fclose(f);
		}
		if (r == 0)
			r = (unsigned int)time(NULL) ^ (unsigned int)clock();
		snprintf(id, sizeof(id), "itest%ldx%08x", (long)getpid(), r);
	}
	return id;
}

/* The management API of the test broker, on vhost "/". */
static struct mgmt *
test_mgmt(char *err, size_t errlen)
{
	const char *url = getenv("CUTOVER_TEST_MGMT"), *user = getenv("CUTOVER_TEST_USER");
	struct mgmt *m = NULL;

	if (url == NULL || user == NULL)
		snprintf(err, errlen, "set CUTOVER_TEST_MGMT and CUTOVER_TEST_USER");
	else if (mgmt_open(url, "/", user, "env:CUTOVER_TEST_PASSWORD", 10000, &m, err,
	    errlen) != 0)
		m = NULL;
	return m;
}

/* Deletes what ARG names, the path of a management API object (malloc'd,
 * freed here); one already gone is fine. */
static void
delete_object(void *arg)
{
	char err[512];
	struct mgmt *m = test_mgmt(err, sizeof(err));

	if (m == NULL || mgmt_request(m, "DELETE", arg, NULL, NULL, NULL, err,
	    sizeof(err)) < 0)
		fprintf(stderr, "itest: deleting %s: %s\n", (char *)arg, err);
	mgmt_close(m);
	free(arg);
}

/* Registers the deletion of the object at COLLECTION (a path ending in
 * "/") followed by NAME, encoded. */
static void
delete_later(const char *collection, const char *name)
{
	char path[300], enc[200];
	char *copy;

	assert_true(mgmt_escape(name, enc, sizeof(enc)) > 0);
	snprintf(path, sizeof(path), "%s%s", collection, enc);
	assert_non_null(copy = strdup(path));
	itest_on_cleanup(delete_object, copy);
}

void
itest_policy_cleanup(const char *name)
{
	delete_later("/api/policies/%2F/", name);
}

void
itest_queue_cleanup(const char *name)
{
	delete_later("/api/queues/%2F/", name);
}

void
itest_user_cleanup(const char *name)
{
	delete_later("/api/users/", name);
}

int
itest_broker_script_rc(const char *verb, const char *args)
{
	const char *src = getenv("CUTOVER_SOURCE_DIR"), *url = getenv("CUTOVER_TEST_AMQP");
	const char *c = url != NULL ? strrchr(url, ':') : NULL;
	char cmd[2048];
	int port = c != NULL ? atoi(c + 1) : 0;

	if (src == NULL || port <= 0) {
		fprintf(stderr, "scripts/broker %s: needs CUTOVER_SOURCE_DIR and a port in "
		    "CUTOVER_TEST_AMQP\n", verb);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "'%s/scripts/broker' %s %s --port %d >&2", src, verb,
	    args, port);
	return system(cmd);
}

void
itest_broker_script(const char *verb, const char *args)
{
	if (itest_broker_script_rc(verb, args) != 0)
		fail_msg("scripts/broker %s %s failed", verb, args);
}

/* Deletes every object of KIND ("queues", "exchanges", "policies" or
 * "operator-policies") on vhost "/" whose name starts with PREFIX. */
static void
delete_prefixed(struct mgmt *m, const char *kind, const char *prefix)
{
	char err[512], path[300], enc[400];
	json_t *all = NULL, *o;
	size_t i, n = strlen(prefix);

	snprintf(path, sizeof(path), "/api/%s/%%2F?columns=name", kind);
	if (mgmt_request(m, "GET", path, NULL, &all, NULL, err, sizeof(err)) != 0) {
		fprintf(stderr, "itest: listing %s: %s\n", kind, err);
		return;
	}
	json_array_foreach(all, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		int r;

		if (name == NULL || strncmp(name, prefix, n) != 0 ||
		    mgmt_escape(name, enc, sizeof(enc)) < 0)
			continue;
		snprintf(path, sizeof(path), "/api/%s/%%2F/%s", kind, enc);
		r = mgmt_request(m, "DELETE", path, NULL, NULL, NULL, err, sizeof(err));
		if (r != 0 && r != MGMT_NOT_FOUND)
			fprintf(stderr, "itest: deleting %s: %s\n", name, err);
	}
	json_decref(all);
}

static void
delete_prefix(void *arg)
{
	char err[512];
	struct mgmt *m = test_mgmt(err, sizeof(err));

	if (m == NULL)
		fprintf(stderr, "itest: cleaning up %s: %s\n", (char *)arg, err);
	else {
		delete_prefixed(m, "queues", arg);
		delete_prefixed(m, "exchanges", arg);
		delete_prefixed(m, "policies", arg);
		delete_prefixed(m, "operator-policies", arg);
	}
	mgmt_close(m);
	free(arg);
}

void
itest_prefix_cleanup(const char *prefix)
{
	char *copy = malloc(strlen(prefix) + 2);

	assert_non_null(copy);
	sprintf(copy, "%s.", prefix);
	itest_on_cleanup(delete_prefix, copy);
}

void
itest_plan_cleanup(const char *prefix, const char *plan_name)
{
	char name[300];

	itest_prefix_cleanup(prefix);
	snprintf(name, sizeof(name), "cutover.canary.%s", plan_name);
	itest_queue_cleanup(name);
	snprintf(name, sizeof(name), "cutover.probe.%s", plan_name);
	itest_queue_cleanup(name);
}

void
itest_vhost(const char *name, char *url, size_t urllen)
{
	const char *amqp = getenv("CUTOVER_TEST_AMQP"), *scheme, *slash = NULL;
	char err[512], path[300], enc[200];
	json_t *perm;
	struct mgmt *m;

	if (amqp != NULL && (scheme = strstr(amqp, "://")) != NULL)
		slash = strchr(scheme + 3, '/');
	if (slash == NULL)
		fail_msg("set CUTOVER_TEST_AMQP (amqp://host:port/vhost)");
	if ((m = test_mgmt(err, sizeof(err))) == NULL)
		fail_msg("%s", err);
	assert_true(mgmt_escape(name, enc, sizeof(enc)) > 0);
	snprintf(path, sizeof(path), "/api/vhosts/%s", enc);
	if (mgmt_request(m, "PUT", path, NULL, NULL, NULL, err, sizeof(err)) != 0)
		fail_msg("creating vhost %s: %s", name, err);
	delete_later("/api/vhosts/", name);
	perm = json_pack("{s:s, s:s, s:s}", "configure", ".*", "write", ".*", "read", ".*");
	snprintf(path, sizeof(path), "/api/permissions/%s/%s", enc, getenv("CUTOVER_TEST_USER"));
	if (mgmt_request(m, "PUT", path, perm, NULL, NULL, err, sizeof(err)) != 0)
		fail_msg("permissions on vhost %s: %s", name, err);
	json_decref(perm);
	mgmt_close(m);
	snprintf(url, urllen, "%.*s/%s", (int)(slash - amqp), amqp, enc);
}

void
itest_vhost_next(const char *tag, char *url, size_t urllen)
{
	static int serial;
	char vhost[128];

	itest_cleanup();
	snprintf(vhost, sizeof(vhost), "%s-%s%d", itest_run_id(), tag, ++serial);
	itest_vhost(vhost, url, urllen);
}

static void
delete_feature(void *arg)
{
	itest_feature_delete(arg);
	free(arg);
}

void
itest_unleash_feature(const char *name)
{
	char path[300], body[512];
	char *copy;
	long st;

	curl_global_init(CURL_GLOBAL_DEFAULT);	/* before itest_run's atexit */
	snprintf(body, sizeof(body), "{\"name\":\"%s\",\"type\":\"release\"}", name);
	if ((st = itest_unleash_call("POST", "/projects/default/features", body)) / 100 != 2)
		fail_msg("creating Unleash feature %s: HTTP %ld (set CUTOVER_TEST_UNLEASH_URL "
		    "and CUTOVER_TEST_UNLEASH_TOKEN; scripts/test does)", name, st);
	assert_non_null(copy = strdup(name));
	itest_on_cleanup(delete_feature, copy);
	snprintf(path, sizeof(path), "/projects/default/features/%s/environments/production/"
	    "strategies", name);
	snprintf(body, sizeof(body), "{\"name\":\"flexibleRollout\",\"constraints\":[],"
	    "\"parameters\":{\"rollout\":\"100\",\"stickiness\":\"default\","
	    "\"groupId\":\"%s\"}}", name);
	if ((st = itest_unleash_call("POST", path, body)) / 100 != 2)
		fail_msg("a strategy for Unleash feature %s: HTTP %ld", name, st);
}

int64_t
itest_publish_counter(const json_t *listing, const char *queue)
{
	const json_t *e;
	size_t i;

	json_array_foreach(listing, i, e)
		if (strcmp(json_string_value(json_object_get(e, "name")), queue) == 0) {
			const json_t *v = json_object_get(json_object_get(e,
			    "message_stats"), "publish");

			return json_is_integer(v) ? json_integer_value(v) : -1;
		}
	return -1;
}

void
itest_give_publish_counter(struct broker *b, struct mgmt *m, const char *queue)
{
	struct broker_message msg = { 0 };
	struct broker_delivery d;
	char err[1024], path[600], vh[300];
	json_t *l = NULL;

	msg.routing_key = queue;
	msg.body = "touch";
	msg.len = 5;
	msg.mandatory = true;
	if (broker_publish(b, &msg, 5000, err, sizeof(err)) != 0)
		fail_msg("publishing to %s: %s", queue, err);
	if (broker_get(b, queue, false, &d, err, sizeof(err)) != 0)
		fail_msg("taking the touch message back from %s: %s", queue, err);
	broker_delivery_free(&d);
	if (mgmt_escape(mgmt_vhost(m), vh, sizeof(vh)) < 0)
		fail_msg("vhost '%s' does not fit a path", mgmt_vhost(m));
	snprintf(path, sizeof(path), "/api/queues/%s?columns=name,message_stats.publish",
	    vh);
	for (int tries = 0; ; tries++) {
		if (mgmt_request(m, "GET", path, NULL, &l, NULL, err, sizeof(err)) != 0)
			fail_msg("%s", err);
		if (itest_publish_counter(l, queue) >= 1)
			break;
		json_decref(l);
		l = NULL;
		if (tries == 120)
			fail_msg("the statistics never showed a publish counter for %s", queue);
		clock_sleep_ms(500);
	}
	json_decref(l);
}

void
itest_broker_yaml(const char *amqp, char *out, size_t outlen)
{
	const char *mgmt = getenv("CUTOVER_TEST_MGMT"), *user = getenv("CUTOVER_TEST_USER");

	if (amqp == NULL)
		amqp = getenv("CUTOVER_TEST_AMQP");
	if (amqp == NULL || mgmt == NULL || user == NULL ||
	    getenv("CUTOVER_TEST_PASSWORD") == NULL)
		fail_msg("set CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER and "
		    "CUTOVER_TEST_PASSWORD (scripts/test does)");
	snprintf(out, outlen, "broker:\n  amqp: %s\n  management: %s\n  username: %s\n"
	    "  password: env:CUTOVER_TEST_PASSWORD\n", amqp, mgmt, user);
}

void
itest_delete_topology(struct broker *b, const struct plan *p)
{
	struct topology t;
	char err[512];

	if (topology_build(p, &t, err, sizeof(err)) != 0)
		return;
	for (size_t i = 0; i < t.nexchanges; i++)
		(void)broker_exchange_delete(b, t.exchanges[i].name, false, err,
		    sizeof(err));
	for (size_t i = 0; i < t.nqueues; i++)
		(void)broker_queue_delete(b, t.queues[i].name, 0, NULL, err,
		    sizeof(err));
	topology_free(&t);
}

struct plan *
itest_plan_load(const char *name, const char *yaml)
{
	struct plan_errors errs = { 0 };
	struct plan *p = NULL;
	char line[512];

	if (plan_load_buffer(name, yaml, strlen(yaml), &p, &errs) != 0) {
		for (size_t i = 0; i < errs.n; i++)
			fprintf(stderr, "%s\n", plan_error_format(&errs, i, line, sizeof(line)));
		plan_errors_free(&errs);
		fail_msg("test plan %s does not load", name);
	}
	return p;
}

void
itest_ctx_open(struct step_ctx *c, struct plan *p)
{
	char err[1024];

	if (step_ctx_open(c, p, err, sizeof(err)) != 0)
		fail_msg("%s", err);
}

void
itest_step_ok(step_fn fn, struct step_ctx *c)
{
	json_t *r = NULL;
	char err[1024];

	if (fn(c, &r, err, sizeof(err)) != 0) {
		char *s = json_dumps(r, JSON_COMPACT);

		fprintf(stderr, "step failed: %s\n%s\n", err, s ? s : "");
		free(s);
		json_decref(r);
		fail();
	}
	json_decref(r);
}

void
itest_arg_int(struct topology_arg *a, const char *key, int64_t num)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->key, sizeof(a->key), "%s", key);
	a->is_int = true;
	a->num = num;
}

void
itest_arg_str(struct topology_arg *a, const char *key, const char *str)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->key, sizeof(a->key), "%s", key);
	snprintf(a->str, sizeof(a->str), "%s", str);
}

const char *
itest_need_env(const char *name)
{
	const char *v = getenv(name);

	if (v == NULL || *v == '\0')
		fail_msg("set %s (and CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, "
		    "CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD, CUTOVER_BINARY; "
		    "scripts/test and ctest do)", name);
	return v;
}
