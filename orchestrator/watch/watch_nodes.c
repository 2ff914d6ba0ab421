/* watch_nodes: reads the broker's members and tells restarts from two
 * looks. */
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "sentences.h"
#include "watch_nodes.h"

static const char *const counter_names[WATCH_NODE_COUNTERS] = {
	"connection_created", "channel_created", "queue_declared"
};

int
watch_nodes_read(struct mgmt *m, struct watch_nodes *out, char *err,
    size_t errlen)
{
	struct mgmt_node_list l;
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = mgmt_list_nodes(m, &l, err, errlen)) != 0)
		return rc;
	for (size_t i = 0; i < l.n && out->n < WATCH_NODES_MAX; i++) {
		struct watch_node *w = &out->v[out->n++];
		const struct mgmt_node *nd = &l.v[i];

		snprintf(w->name, sizeof(w->name), "%s", nd->name);
		w->running = nd->running;
		w->uptime_ms = nd->running ? nd->uptime_ms : -1;
		snprintf(w->os_pid, sizeof(w->os_pid), "%s",
		    nd->running && nd->os_pid ? nd->os_pid : "");
		w->counters[0] = nd->running ? nd->connection_created : -1;
		w->counters[1] = nd->running ? nd->channel_created : -1;
		w->counters[2] = nd->running ? nd->queue_declared : -1;
	}
	mgmt_node_list_free(&l);
	return 0;
}

static const struct watch_node *
find(const struct watch_nodes *n, const char *name)
{
	for (size_t i = 0; i < n->n; i++)
		if (strcmp(n->v[i].name, name) == 0)
			return &n->v[i];
	return NULL;
}

/* Did node A (before) restart to become B (now)? Writes why into WHY. */
static bool
restarted(const struct watch_node *a, const struct watch_node *b, char *why,
    size_t whylen)
{
	char d1[32], d2[32];

	why[0] = '\0';
	if (a->uptime_ms >= 0 && b->uptime_ms >= 0 && b->uptime_ms < a->uptime_ms)
		sentences_add(why, whylen, "uptime %s, was %s", duration_format(b->uptime_ms,
		    d1, sizeof(d1)), duration_format(a->uptime_ms, d2, sizeof(d2)));
	if (a->os_pid[0] != '\0' && b->os_pid[0] != '\0' &&
	    strcmp(a->os_pid, b->os_pid) != 0)
		sentences_add(why, whylen, "os pid %s, was %s", b->os_pid, a->os_pid);
	for (int k = 0; k < WATCH_NODE_COUNTERS; k++)
		if (a->counters[k] >= 0 && b->counters[k] >= 0 &&
		    b->counters[k] < a->counters[k]) {
			sentences_add(why, whylen, "%s %lld, was %lld: the application "
			    "restarted", counter_names[k], (long long)b->counters[k],
			    (long long)a->counters[k]);
			break;
		}
	return why[0] != '\0';
}

int
watch_nodes_compare(const struct watch_nodes *before, struct watch_nodes *now,
    char *what, size_t whatlen)
{
	char why[256], d[32];
	int changes = 0;

	what[0] = '\0';
	for (size_t i = 0; i < now->n; i++) {
		struct watch_node *b = &now->v[i];
		const struct watch_node *a = find(before, b->name);

		if (a == NULL) {
			if (before->n > 0) {
				sentences_add(what, whatlen, "broker node '%s' joined the cluster",
				    b->name);
				changes++;
			}
			continue;
		}
		if (!b->running) {
			if (a->running) {
				sentences_add(what, whatlen, "broker node '%s' is not running",
				    b->name);
				changes++;
			}
			/* Keep what was known of it running, to compare with
			 * when it is back. */
			*b = *a;
			b->running = false;
			continue;
		}
		if (restarted(a, b, why, sizeof(why))) {
			sentences_add(what, whatlen, "broker node '%s' restarted (%s)", b->name, why);
			changes++;
			continue;
		}
		if (!a->running) {
			/* Back from down: what it shows now is its own. */
			sentences_add(what, whatlen, "broker node '%s' is running again", b->name);
			changes++;
			continue;
		}
		if (b->uptime_ms < 0 && (a->uptime_ms >= 0 || a->stats_lost)) {
			/* Running without statistics: the node or only its
			 * management agent started again. The look that has
			 * them back tells which, against what was known. */
			b->stats_lost = true;
			b->lost_ms = a->stats_lost ? a->lost_ms : now->at_ms;
			if (now->at_ms - b->lost_ms >= WATCH_NODE_STATS_WAIT_MS) {
				sentences_add(what, whatlen, "broker node '%s' restarted, or "
				    "its management agent did: it has shown no statistics "
				    "for %s", b->name, duration_format(now->at_ms -
				    b->lost_ms, d, sizeof(d)));
				changes++;
				/* What it shows next is its own. */
				b->stats_lost = false;
				b->lost_ms = 0;
				continue;
			}
		} else if (a->stats_lost && b->uptime_ms >= 0)
			b->agent_restarted = true;
		/* Some statistics not in: keep the last known. */
		if (b->uptime_ms < 0)
			b->uptime_ms = a->uptime_ms;
		if (b->os_pid[0] == '\0')
			memcpy(b->os_pid, a->os_pid, sizeof(b->os_pid));
		for (int k = 0; k < WATCH_NODE_COUNTERS; k++)
			if (b->counters[k] < 0)
				b->counters[k] = a->counters[k];
	}
	for (size_t i = 0; i < before->n; i++)
		if (find(now, before->v[i].name) == NULL) {
			sentences_add(what, whatlen, "broker node '%s' left the cluster",
			    before->v[i].name);
			changes++;
		}
	return changes;
}

size_t
watch_nodes_stats_lost(const struct watch_nodes *n)
{
	size_t lost = 0;

	for (size_t i = 0; i < n->n; i++)
		lost += n->v[i].stats_lost;
	return lost;
}

json_t *
watch_nodes_json(const struct watch_nodes *n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n->n; i++) {
		const struct watch_node *w = &n->v[i];

		json_array_append_new(a, json_pack("{s:s,s:b,s:I,s:s,s:[I,I,I],s:b,s:I}",
		    "name", w->name, "running", w->running,
		    "uptime_ms", (json_int_t)w->uptime_ms, "os_pid", w->os_pid,
		    "counters", (json_int_t)w->counters[0],
		    (json_int_t)w->counters[1], (json_int_t)w->counters[2],
		    "stats_lost", w->stats_lost, "lost_ms", (json_int_t)w->lost_ms));
	}
	return a;
}

void
watch_nodes_parse(const json_t *j, struct watch_nodes *out)
{
	const json_t *o;
	size_t i;

	memset(out, 0, sizeof(*out));
	json_array_foreach(j, i, o) {
		const char *name = json_string_value(json_object_get(o, "name"));
		const char *pid = json_string_value(json_object_get(o, "os_pid"));
		const json_t *up = json_object_get(o, "uptime_ms");
		const json_t *cs = json_object_get(o, "counters");
		struct watch_node *w;

		if (name == NULL || out->n == WATCH_NODES_MAX)
			continue;
		w = &out->v[out->n++];
		snprintf(w->name, sizeof(w->name), "%s", name);
		w->running = json_is_true(json_object_get(o, "running"));
		w->stats_lost = json_is_true(json_object_get(o, "stats_lost"));
		w->lost_ms = json_integer_value(json_object_get(o, "lost_ms"));
		w->uptime_ms = json_is_integer(up) ? json_integer_value(up) : -1;
		snprintf(w->os_pid, sizeof(w->os_pid), "%s", pid ? pid : "");
		for (int k = 0; k < WATCH_NODE_COUNTERS; k++) {
			const json_t *c = json_array_get(cs, (size_t)k);

			w->counters[k] = json_is_integer(c) ? json_integer_value(c) : -1;
		}
	}
}
