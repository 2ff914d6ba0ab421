/* old_fence: closes a quorum old queue before remove_old deletes it.
 * Quorum queues refuse if-empty, so the delete cannot be conditional;
 * instead a policy for exactly that queue (max-length 0, overflow
 * reject-publish) fences it, a marker message of ours takes it over that
 * limit (checked on 3.10.8: a quorum queue at max-length 0 still takes the
 * first message, and refuses every publish once it holds one), and a probe
 * that the broker must refuse proves the fence is in force. Fences are
 * named OLD_FENCE_PREFIX + plan + "=" + n, so a later run finds and
 * removes any a crashed run left. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "old_path.h"
#include "pattern.h"

#define FENCE_WAIT_MS	30000	/* for the queue listing to name the fence */
#define FENCE_POLL_MS	200
#define PUBLISH_TIMEOUT_MS 5000
#define MARKER_BODY	"cutover fence marker: never meant for a consumer"

/* Writes "PREFIX PLAN =" into OUT. */
static void
fence_prefix(const char *plan, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%s=", OLD_FENCE_PREFIX, plan);
}

/* The queue name a fence's PATTERN ("^NAME$", escaped) matches, into
 * OUT. Returns 0, or -1 when PATTERN is not of that form. */
static int
pattern_queue(const char *pattern, char *out, size_t outlen)
{
	size_t len = strlen(pattern), o = 0;

	if (len < 2 || pattern[0] != '^' || pattern[len - 1] != '$')
		return -1;
	for (size_t i = 1; i + 1 < len && o + 1 < outlen; i++) {
		if (pattern[i] == '\\' && i + 2 < len)
			i++;
		out[o++] = pattern[i];
	}
	out[o] = '\0';
	return 0;
}

int
old_fence_sweep(struct mgmt *m, struct broker *b, const char *plan, char *err,
    size_t errlen)
{
	struct mgmt_policy_list pl = { 0 };
	char prefix[OLD_FENCE_NAME_MAX], queue[256], why[512];
	int n = 0;

	fence_prefix(plan, prefix, sizeof(prefix));
	if (mgmt_list_policies(m, &pl, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the policies for leftover fences: %s", why);
		return -1;
	}
	for (size_t i = 0; i < pl.n; i++) {
		int markers = 2;	/* a seal publishes at most two */
		int r;

		if (strncmp(pl.v[i].name, prefix, strlen(prefix)) != 0)
			continue;
		/* While it is still fenced, take back the markers a crashed seal
		 * left at the head of its queue: they would dead-letter to a
		 * consumer when they expire. */
		if (b != NULL && pattern_queue(pl.v[i].pattern, queue, sizeof(queue)) == 0)
			(void)old_fence_unseal(b, queue, pl.v[i].name, &markers, why,
			    sizeof(why));
		r = mgmt_delete_policy(m, pl.v[i].name, why, sizeof(why));
		if (r != 0 && r != MGMT_NOT_FOUND) {
			snprintf(err, errlen, "removing leftover fence '%s': %s",
			    pl.v[i].name, why);
			n = -1;
			break;
		}
		n++;
	}
	mgmt_policy_list_free(&pl);
	return n;
}

/* The definition of fence F: its queue's own policy's (so that a queue
 * that is left keeps its TTL and dead-lettering while fenced), with
 * max-length 0 and overflow reject-publish. */
static json_t *
fence_definition(const struct mgmt_policy_list *pl, const char *own)
{
	json_t *def = json_deep_copy(mgmt_policy_definition(pl, own));

	if (def == NULL)
		def = json_object();
	json_object_set_new(def, "max-length", json_integer(0));
	json_object_set_new(def, "overflow", json_string("reject-publish"));
	return def;
}

/* Waits until the fast queue listing (the queue records: no statistics
 * lag) names each put fence as its queue's policy, up to FENCE_WAIT_MS. */
static void
fence_wait(struct mgmt *m, struct old_fence *f, size_t n)
{
	int64_t until = clock_now_ms() + FENCE_WAIT_MS;
	char why[512];

	for (;;) {
		struct mgmt_queue_list l = { 0 };
		size_t waiting = 0;

		if (mgmt_list_queues(m, &l, why, sizeof(why)) == 0) {
			for (size_t i = 0; i < n; i++) {
				const struct mgmt_queue *q;

				if (!f[i].put || f[i].effective)
					continue;
				q = mgmt_queue_list_find(&l, f[i].queue);
				if (q != NULL && q->policy != NULL &&
				    strcmp(q->policy, f[i].policy) == 0)
					f[i].effective = true;
				else
					waiting++;
			}
		} else
			waiting = n;
		mgmt_queue_list_free(&l);
		if (waiting == 0 || clock_now_ms() >= until)
			return;
		clock_sleep_ms(FENCE_POLL_MS);
	}
}

int
old_fence_put(struct mgmt *m, const char *plan, struct old_fence *f,
    const char *const *own, size_t n, char *err, size_t errlen)
{
	struct mgmt_policy_list pl = { 0 };
	char prefix[OLD_FENCE_NAME_MAX], pattern[3 * 256 + 3], path[3 * 256 + 128];
	char vhost[3 * 256 + 1], why[512];
	json_t *args = NULL;
	int top = 0, rc = -1;

	fence_prefix(plan, prefix, sizeof(prefix));
	if (mgmt_list_policies(m, &pl, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the policies before fencing: %s", why);
		return -1;
	}
	/* A queue's x-overflow argument wins over a policy's overflow: with
	 * drop-head and max-length 0, whatever enters would be dropped or
	 * dead-lettered at once, so such a queue is not fenced. */
	if (mgmt_escape(mgmt_vhost(m), vhost, sizeof(vhost)) < 0)
		vhost[0] = '\0';
	snprintf(path, sizeof(path), "/api/queues/%s?disable_stats=true&"
	    "enable_queue_totals=true&columns=name,arguments", vhost);
	if (mgmt_request(m, "GET", path, NULL, &args, NULL, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "reading the queues' arguments before fencing: %s",
		    why);
		mgmt_policy_list_free(&pl);
		return -1;
	}
	/* Above every policy of the vhost: only one applies to a queue, the
	 * one of the highest priority, and it must be the fence. */
	for (size_t k = 0; k < pl.n; k++)
		if (strncmp(pl.v[k].name, prefix, strlen(prefix)) != 0 &&
		    pl.v[k].priority > top)
			top = pl.v[k].priority;
	for (size_t i = 0; i < n; i++) {
		json_t *def;
		int r;

		const char *ov = json_string_value(json_object_get(json_object_get(
		    old_json_by_name(args, f[i].queue), "arguments"), "x-overflow"));

		snprintf(f[i].policy, sizeof(f[i].policy), "%s%zu", prefix, i);
		f[i].put = f[i].effective = false;
		if (ov != NULL && strcmp(ov, "reject-publish") != 0) {
			snprintf(f[i].why, sizeof(f[i].why), "its x-overflow argument '%.40s' "
			    "overrides a fence's reject-publish (what entered would be "
			    "dropped or dead-lettered at once), so it cannot be fenced", ov);
			continue;
		}
		if (pattern_exact(f[i].queue, pattern, sizeof(pattern)) != 0) {
			snprintf(f[i].why, sizeof(f[i].why), "its name is too long for "
			    "a fence pattern");
			continue;
		}
		def = fence_definition(&pl, own[i]);
		r = mgmt_put_policy(m, f[i].policy, pattern, "queues", top + 1, def,
		    why, sizeof(why));
		json_decref(def);
		if (r != 0) {
			snprintf(f[i].why, sizeof(f[i].why), "putting its fence failed: %s",
			    why);
			continue;
		}
		f[i].put = true;
	}
	fence_wait(m, f, n);
	for (size_t i = 0; i < n; i++)
		if (f[i].put && !f[i].effective)
			snprintf(f[i].why, sizeof(f[i].why), "its fence '%s' was not its "
			    "policy within %d s", f[i].policy, FENCE_WAIT_MS / 1000);
	rc = 0;
	json_decref(args);
	mgmt_policy_list_free(&pl);
	return rc;
}

int
old_fence_remove(struct mgmt *m, struct old_fence *f, size_t n, char *err,
    size_t errlen)
{
	char why[512];
	int rc = 0;

	for (size_t i = 0; i < n; i++) {
		if (!f[i].put)
			continue;
		int r = mgmt_delete_policy(m, f[i].policy, why, sizeof(why));

		if (r != 0 && r != MGMT_NOT_FOUND) {
			if (rc == 0)
				snprintf(err, errlen, "removing fence '%s' of queue '%s': %s "
				    "(the next run removes it)", f[i].policy, f[i].queue, why);
			rc = -1;
			continue;
		}
		f[i].put = false;
	}
	return rc;
}

static int
publish_marker(struct broker *b, const char *queue, const char *id, char *why,
    size_t whylen)
{
	struct broker_message m = { 0 };

	m.routing_key = queue;
	m.body = MARKER_BODY;
	m.len = strlen(MARKER_BODY);
	m.message_id = id;
	m.mandatory = true;
	return broker_publish(b, &m, PUBLISH_TIMEOUT_MS, why, whylen);
}

int
old_fence_unseal(struct broker *b, const char *queue, const char *id, int *markers,
    char *why, size_t whylen)
{
	int tries = *markers + 1;

	/* Our markers entered an empty queue, so they are at its head. */
	while (*markers > 0 && tries-- > 0) {
		struct broker_delivery d = { 0 };
		int r = broker_get(b, queue, true, &d, why, whylen);

		if (r == BROKER_EMPTY)
			return 0;	/* expired already */
		if (r != 0)
			return -1;
		if (d.message_id != NULL && strcmp(d.message_id, id) == 0) {
			r = broker_ack(b, &d, why, whylen);
			if (r == 0)
				(*markers)--;
		} else
			r = broker_reject(b, &d, true, why, whylen);
		broker_delivery_free(&d);
		if (r != 0)
			return -1;
	}
	return *markers == 0 ? 0 : -1;
}

int
old_fence_seal(struct broker *b, const char *queue, const char *id, int *markers,
    bool *sealed, char *why, size_t whylen)
{
	char w2[512];
	int r;

	*markers = 0;
	*sealed = false;
	r = publish_marker(b, queue, id, why, whylen);
	if (r == BROKER_ENACKED) {
		snprintf(why, whylen, "the fenced queue refused remove_old's marker: "
		    "it already holds a message");
		return 0;
	}
	if (r != 0)
		return -1;
	*markers = 1;
	r = publish_marker(b, queue, id, why, whylen);
	if (r == BROKER_ENACKED) {
		*sealed = true;	/* refused: the fence is in force */
		return 0;
	}
	if (r == 0)
		(*markers)++;
	if (old_fence_unseal(b, queue, id, markers, w2, sizeof(w2)) != 0)
		snprintf(why, whylen, "the fence was not in force (a second marker was "
		    "taken), and %d marker%s could not be taken back: %s", *markers,
		    *markers == 1 ? "" : "s", w2);
	else if (r == 0)
		snprintf(why, whylen, "the fence was not yet in force (the broker took "
		    "a second marker; both taken back)");
	return r == 0 ? 0 : -1;
}
