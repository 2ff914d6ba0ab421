/* test_watch_nodes: how the watch tells a broker restart from two looks
 * at the cluster's members (watch_nodes_compare): a VM restart (uptime
 * down, another os pid), an application restart (its counters down), a
 * node gone down and back, statistics gone for a while with only the
 * management agent restarted (no restart) or the node (one), members
 * joining and leaving; nothing when only time passed; and the nodes'
 * JSON round trip, the way the watch persists them. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cm.h"
#include "watch_nodes.h"

static struct watch_node
node(const char *name, int64_t uptime, const char *pid, int64_t conns)
{
	struct watch_node n;

	memset(&n, 0, sizeof(n));
	snprintf(n.name, sizeof(n.name), "%s", name);
	n.running = true;
	n.uptime_ms = uptime;
	snprintf(n.os_pid, sizeof(n.os_pid), "%s", pid);
	n.counters[0] = conns;
	n.counters[1] = 2 * conns;
	n.counters[2] = 10 * conns;
	return n;
}

static struct watch_nodes
one(struct watch_node a)
{
	struct watch_nodes n;

	memset(&n, 0, sizeof(n));
	n.v[n.n++] = a;
	return n;
}

/* Compares look A with the later look B (watch_nodes_compare, which
 * updates B) and fails unless it finds a change whose words hold each of
 * the phrases that follow, up to a NULL. */
static void
says(const struct watch_nodes *a, struct watch_nodes *b, ...)
{
	char what[512];
	const char *phrase;
	va_list ap;
	int rc = watch_nodes_compare(a, b, what, sizeof(what));

	if (rc != 1)
		fail_msg("watch_nodes_compare found no change (%d, \"%s\")", rc, what);
	va_start(ap, b);
	while ((phrase = va_arg(ap, const char *)) != NULL)
		if (strstr(what, phrase) == NULL) {
			va_end(ap);
			fail_msg("the change \"%s\" does not say \"%s\"", what, phrase);
		}
	va_end(ap);
}

/* Compares look A with the later look B and fails unless it finds no
 * change, and says nothing. */
static void
quiet(const struct watch_nodes *a, struct watch_nodes *b)
{
	char what[512];
	int rc = watch_nodes_compare(a, b, what, sizeof(what));

	if (rc != 0 || what[0] != '\0')
		fail_msg("watch_nodes_compare found a change (%d): \"%s\"", rc, what);
}

static void
test_time_passing_is_no_change(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 60000, "100", 5));
	struct watch_nodes b = one(node("rabbit@a", 70000, "100", 7));

	(void)state;
	quiet(&a, &b);
}

static void
test_vm_restart(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 5));
	struct watch_nodes b = one(node("rabbit@a", 3000, "200", 1));
	struct watch_nodes c = one(node("rabbit@a", 9000000, "300", 50));

	(void)state;
	says(&a, &b, "broker node 'rabbit@a' restarted", "uptime", NULL);
	/* Down long enough for the uptime to outgrow the last one: the
	 * process id still tells. */
	says(&a, &c, "os pid 300, was 100", NULL);
}

static void
test_application_restart(void **state)
{
	/* stop_app / start_app: same VM, its counters start again. */
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40));
	struct watch_nodes b = one(node("rabbit@a", 610000, "100", 1));

	(void)state;
	says(&a, &b, "the application restarted", NULL);
}

static void
test_down_then_back_without_statistics(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40));
	struct watch_nodes down = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes back = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes later = one(node("rabbit@a", 20000, "200", 2));

	(void)state;
	down.v[0].running = false;
	says(&a, &down, "'rabbit@a' is not running", NULL);
	/* What was known is kept while it is down ... */
	assert_int_equal(down.v[0].uptime_ms, 600000);
	assert_false(down.v[0].running);
	/* ... so that, running again without statistics, it counts as a
	 * restart, and the look after adopts the new figures quietly. */
	says(&down, &back, "'rabbit@a' is running again", NULL);
	quiet(&back, &later);
}

/* The management agent restarted (the plugin disabled and enabled): the
 * node runs on without statistics for a few looks, which is no restart
 * yet; the figures known before are kept and, once the statistics are
 * back with the uptime gone on and the same process, it was only the
 * agent. The same gap ending in a lower uptime is a restart. */
static void
test_statistics_gap_is_no_restart(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40));
	struct watch_nodes gap = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes gap2 = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes back = one(node("rabbit@a", 640000, "100", 40));
	struct watch_nodes fresh = one(node("rabbit@a", 4000, "200", 1));
	struct watch_nodes j;
	json_t *js;

	(void)state;
	quiet(&a, &gap);
	assert_true(gap.v[0].stats_lost);
	assert_int_equal(gap.v[0].uptime_ms, 600000);
	assert_int_equal(watch_nodes_stats_lost(&gap), 1);
	/* Kept across looks, and across a restart of cutover. */
	js = watch_nodes_json(&gap);
	watch_nodes_parse(js, &j);
	json_decref(js);
	assert_true(j.v[0].stats_lost);
	quiet(&j, &gap2);
	assert_true(gap2.v[0].stats_lost);
	assert_int_equal(gap2.v[0].uptime_ms, 600000);
	quiet(&gap2, &back);
	assert_true(back.v[0].agent_restarted);
	assert_false(back.v[0].stats_lost);
	assert_int_equal(watch_nodes_stats_lost(&back), 0);
	says(&gap2, &fresh, "'rabbit@a' restarted (uptime 4s, was 10m", NULL);
	assert_false(fresh.v[0].agent_restarted);
}

/* Statistics that stay away a minute: no longer waited for, the node is
 * taken for restarted (what broker_restart then says is the safe side),
 * and what it shows next is adopted quietly. */
static void
test_statistics_gone_a_minute_is_a_restart(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40));
	struct watch_nodes gap = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes later = one(node("rabbit@a", -1, "", -1));
	struct watch_nodes back = one(node("rabbit@a", 700000, "100", 40));

	(void)state;
	gap.at_ms = 1000000;
	later.at_ms = gap.at_ms + WATCH_NODE_STATS_WAIT_MS;
	quiet(&a, &gap);
	assert_int_equal(gap.v[0].lost_ms, 1000000);
	says(&gap, &later, "'rabbit@a' restarted, or its management agent "
	    "did: it has shown no statistics for 1m", NULL);
	assert_false(later.v[0].stats_lost);
	quiet(&later, &back);
	assert_false(back.v[0].agent_restarted);
}

static void
test_members_join_and_leave(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40));
	struct watch_nodes b = one(node("rabbit@a", 610000, "100", 41));
	struct watch_nodes c = one(node("rabbit@a", 620000, "100", 42));

	(void)state;
	b.v[b.n++] = node("rabbit@b", 5000, "7", 1);
	says(&a, &b, "'rabbit@b' joined the cluster", NULL);
	says(&b, &c, "'rabbit@b' left the cluster", NULL);
}

static void
test_json_round_trip(void **state)
{
	struct watch_nodes a = one(node("rabbit@a", 600000, "100", 40)), b;
	json_t *j;

	(void)state;
	a.v[a.n++] = node("rabbit@b", -1, "", -1);
	a.v[1].running = false;
	j = watch_nodes_json(&a);
	assert_non_null(j);
	watch_nodes_parse(j, &b);
	json_decref(j);
	assert_int_equal(b.n, 2);
	assert_memory_equal(&a.v[0], &b.v[0], sizeof(a.v[0]));
	assert_false(b.v[1].running);
	assert_int_equal(b.v[1].uptime_ms, -1);
	quiet(&a, &b);
}

CM_MAIN(NULL, NULL,
	cmocka_unit_test(test_time_passing_is_no_change),
	cmocka_unit_test(test_vm_restart),
	cmocka_unit_test(test_application_restart),
	cmocka_unit_test(test_down_then_back_without_statistics),
	cmocka_unit_test(test_statistics_gap_is_no_restart),
	cmocka_unit_test(test_statistics_gone_a_minute_is_a_restart),
	cmocka_unit_test(test_members_join_and_leave),
	cmocka_unit_test(test_json_round_trip))
