/* watch_nodes: what the watch remembers of the broker's nodes from one
 * tick to the next, and how it tells that one restarted: its uptime went
 * down or its process id changed (the VM restarted: a kill -9, a crash, a
 * stop and start), its application counters went down (stop_app /
 * start_app), it stopped running, or the cluster's member list changed.
 * A restart matters because classic queues dead-letter at most once:
 * what expired in them while the node was down or recovering may be gone
 * although their depth reaches zero (DESIGN §3). */
#ifndef CUTOVER_WATCH_NODES_H
#define CUTOVER_WATCH_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "broker/mgmt.h"

#define WATCH_NODES_MAX 16	/* members remembered; more are not compared */
#define WATCH_NODE_NAME_MAX 256
#define WATCH_NODE_COUNTERS 3	/* connection_created, channel_created,
				 * queue_declared */

struct watch_node {
	char name[WATCH_NODE_NAME_MAX];
	bool running;
	int64_t uptime_ms;		/* -1: not known */
	char os_pid[24];		/* "": not known */
	int64_t counters[WATCH_NODE_COUNTERS]; /* -1: not known */
	bool stats_lost;		/* running, its statistics gone since a
					 * look that had them: the figures are
					 * that look's, until they are back */
	int64_t lost_ms;		/* since when (the looks' at_ms) */
	bool agent_restarted;		/* this look: its statistics are back
					 * and it did not restart (only its
					 * management agent did); not kept */
};

struct watch_nodes {
	struct watch_node v[WATCH_NODES_MAX];
	size_t n;
	int64_t at_ms;			/* when this look was made (the caller's
					 * clock); not kept */
};

/* How long a node may run without its statistics before the watch stops
 * waiting to tell its agent's restart from its own and takes it for a
 * restart: an agent's come back within seconds. */
#define WATCH_NODE_STATS_WAIT_MS 60000

/* Reads the cluster's members through M (mgmt_list_nodes) into OUT.
 * Returns 0, or a negative code with ERR. */
int watch_nodes_read(struct mgmt *m, struct watch_nodes *out, char *err,
    size_t errlen);

/* Compares NOW with BEFORE (the last tick's). Writes one "; "-separated
 * sentence per change into WHAT ("broker node 'rabbit@a' restarted
 * (uptime 3 s, was 2 min)", "... is not running", "... joined the
 * cluster", "... left the cluster") and returns how many changes there
 * were. A node that was running with statistics and runs without them is
 * no change yet: the management agent restarts without the node (a
 * plugin disabled and enabled, an agent that crashed), and so does the
 * node; which one it was shows when the statistics are back (its uptime
 * went on and its process is the same: stats_lost, then
 * agent_restarted); one without them for WATCH_NODE_STATS_WAIT_MS (by
 * the looks' at_ms) counts as restarted. A node that was down and runs
 * again restarted. What
 * NOW does not know about a node that did not restart, or is down, is
 * copied from BEFORE, so that the next comparison still has it. */
int watch_nodes_compare(const struct watch_nodes *before, struct watch_nodes *now,
    char *what, size_t whatlen);

/* How many of N's nodes have their statistics gone (stats_lost). */
size_t watch_nodes_stats_lost(const struct watch_nodes *n);

/* The nodes as JSON ([{"name","running","uptime_ms","os_pid",
 * "counters","stats_lost","lost_ms"}], a new reference), and back; unusable entries
 * are skipped. */
json_t *watch_nodes_json(const struct watch_nodes *n);
void watch_nodes_parse(const json_t *j, struct watch_nodes *out);

#endif
