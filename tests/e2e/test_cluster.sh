#!/bin/sh
# test_cluster: a cutover on a 3-node cluster that loses a node mid-watch.
# The test starts its own cluster (scripts/broker
# cluster start: nodes on P, P+1, P+2) and runs the e2e plan with quorum
# level queues (replicated over the three nodes) under live traffic.
# cutover's plan lists the three nodes A, B, C in that order, so its AMQP
# connection and its management client use A, where the ladder's quorum
# leaders were declared; the producer and consumer list B, C, A (its old
# queues and the destination live on B). In the watch, A is killed
# (SIGKILL, by the pid of its Erlang VM). It passes only if cutover raises
# broker_node_down naming A, keeps watching through B and C (samples and
# probes recorded after the kill), raises it again after an
# acknowledgement while A is down (the watch waits), and once A is back
# and the alerts acknowledged the plan completes with every confirmed
# message delivered (lost 0) and none early.
#
# Usage: test_cluster.sh BUILD_DIR. Needs CUTOVER_TEST_CLUSTER_PORT (the
# cluster's first port; nothing may answer on it or the next two) and
# the Unleash of scripts/test (CUTOVER_TEST_UNLEASH_URL, _TOKEN,
# _CLIENT_TOKEN). CUTOVER_TEST_CLUSTER_SINGLE=1 lists only A in cutover's
# plan (what a plan could say before lists), to see the test fail.
set -u
build=$1
bin=$build/cutover
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require test_cluster CUTOVER_TEST_CLUSTER_PORT CUTOVER_TEST_UNLEASH_URL \
    CUTOVER_TEST_UNLEASH_TOKEN CUTOVER_TEST_UNLEASH_CLIENT_TOKEN

# The cluster runs RabbitMQ 4.0 (what clusters in production run): on
# 3.10.8, a quorum queue whose leader moved could be left without its
# at-least-once dead-letter worker (a RabbitMQ bug fixed in later 3.10
# releases), and the ladder's levels then stopped moving for minutes after
# the kill. CUTOVER_TEST_CLUSTER_VERSION=3.10 runs it on this machine's
# 3.10 instead.
export CUTOVER_BROKER_VERSION=${CUTOVER_TEST_CLUSTER_VERSION:-4.0}
pa=$CUTOVER_TEST_CLUSTER_PORT
pb=$((pa + 1))
pc=$((pa + 2))
victim=cutover$pa@localhost
# lib.sh's helpers talk to the node that stays up.
export CUTOVER_TEST_AMQP="amqp://127.0.0.1:$pb/%2f" CUTOVER_TEST_MGMT="http://127.0.0.1:$((pb + 10000))"
export CUTOVER_TEST_USER=guest CUTOVER_TEST_PASSWORD=guest
# A quorum queue's at-least-once dead-letter worker sends again what a
# dead leader never confirmed only after this (RabbitMQ's default is 180 s,
# longer than the test): the level that dead-letters into a queue whose
# leader is killed stalls that long, then delivers (late, never lost).
export CUTOVER_BROKER_DLX_CONFIRM_TIMEOUT_MS=${CUTOVER_BROKER_DLX_CONFIRM_TIMEOUT_MS:-10000}

e2e_setup "cl$$" "cutover-cluster-$(e2e_run_id)" 7
started=

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# Whatever happened: stop what it started (the producer, serve, the plan's
# objects, the feature, and every node of the cluster, the killed one
# included; CUTOVER_TEST_KEEP keeps the logs and the plan's JSON). A
# signal exits through it too.
cleanup() {
	e2e_cleanup_run
	[ -n "$started" ] && "$root/scripts/broker" cluster stop --port "$pa" >/dev/null 2>&1
	return 0
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Never take over another process's nodes: the three ports must be free.
for p in $pa $pb $pc; do
	if curl -s -o /dev/null --connect-timeout 2 "http://127.0.0.1:$p/" 2>/dev/null ||
	    [ $? -ne 7 ]; then
		echo "test_cluster: something answers on port $p; pick another CUTOVER_TEST_CLUSTER_PORT" >&2
		exit 1
	fi
done
started=1
t0=$(now_ms)
"$root/scripts/broker" cluster start --port "$pa" >"$tmp/cluster.log" 2>&1 || {
	echo "test_cluster: the cluster did not start" >&2
	cat "$tmp/cluster.log" >&2
	exit 1
}
echo "cluster: three nodes running after $(( ($(now_ms) - t0) / 1000 )) s"


# plan_yaml AMQP_LIST MGMT_LIST: the e2e plan (quorum level queues, the
# plan's default) with those broker URL lists.
plan_yaml() {
	printf 'name: %s\nbroker:\n  amqp: %s\n  management: %s\n' "$name" "$1" "$2"
	printf '  username: guest\n  password: env:CUTOVER_TEST_PASSWORD\n'
	e2e_plan_body "$name" "$feature"
}
a="amqp://127.0.0.1:$pa/%2f"; b="amqp://127.0.0.1:$pb/%2f"; c="amqp://127.0.0.1:$pc/%2f"
ma="http://127.0.0.1:$((pa + 10000))"; mb="http://127.0.0.1:$((pb + 10000))"
mc="http://127.0.0.1:$((pc + 10000))"
if [ "${CUTOVER_TEST_CLUSTER_SINGLE:-0}" = 1 ]; then
	plan_yaml "$a" "$ma" >"$tmp/plan.yaml"
else
	plan_yaml "[$a, $b, $c]" "[$ma, $mb, $mc]" >"$tmp/plan.yaml"
fi
plan_yaml "[$b, $c, $a]" "[$mb, $mc, $ma]" >"$tmp/traffic.yaml"
"$bin" check "$tmp/plan.yaml" >"$tmp/check.txt" 2>&1 || {
	echo "test_cluster: cutover check refuses the plan:" >&2
	cat "$tmp/check.txt" >&2
	exit 1
}

e2e_feature_new test_cluster
e2e_operator

# Live traffic, as in e2e.cutover but lighter (the cluster is three nodes
# on a shared machine): 150 a second, delays 1-12 s in 500 ms steps.
e2e_traffic_start "$tmp/traffic.yaml" --rate 150 --min-delay 1s --max-delay 12s --delay-step 500ms
e2e_old_ready test_cluster 23 messages

e2e_serve_start test_cluster
e2e_submit test_cluster

step_status() { e2e_plan_json | jq -r ".steps[$1 - 1].status"; }

# samples_after MS METRIC: how many samples of METRIC were taken after MS.
samples_after() {
	curl -fsS "$server/api/plans/$id/samples?since=$1" |
	    jq "[.samples[] | select(.metric == \"$2\" and .ts_ms > $1)] | length"
}

# open_down: the id of the open broker_node_down alert naming the victim.
open_down() {
	e2e_plan_json | jq -r --arg n "'$victim'" \
	    '[.alerts[] | select(.kind == "broker_node_down" and (.message | contains($n)))][0].id // empty'
}

e2e_step 5 waiting_approval 120
e2e_api POST "/api/plans/$id/steps/5/approve" >/dev/null
e2e_step 6 running 60
# A few ticks of the watch on the whole cluster first.
watch_sampled() { [ "$(samples_after 0 old.depth)" -ge 3 ]; }
e2e_within 30 watch_sampled || { fail "the watch recorded no samples"; e2e_show_plan; exit 1; }

# Kill A, the node cutover's AMQP connection and management client use.
pid=$("$root/scripts/broker" pid --port "$pa") || { fail "no pid for $victim"; exit 1; }
probes_before=$(samples_after 0 probe.lateness_ms)
killed_ms=$(now_ms)
kill -9 "$pid"
echo "cluster: killed $victim (pid $pid) in the watch"

# The alert names it (ceiling 60 s).
down_alerted() { [ -n "$(open_down)" ]; }
e2e_within 60 down_alerted || { fail "no broker_node_down alert naming $victim"; e2e_show_plan; exit 1; }
alert_ms=$(($(now_ms) - killed_ms))
# cutover goes on through B and C: samples from the management API and
# probes over AMQP taken after the kill (ceiling 60 s).
sampled_since_kill() { [ "$(samples_after "$killed_ms" old.depth)" -gt 0 ]; }
e2e_within 60 sampled_since_kill || {
	fail "no sample after the kill: the management API was not reached through the other nodes"
	e2e_show_plan
	exit 1
}
mgmt_ms=$(($(now_ms) - killed_ms))
# (Probe samples carry a monotonic timestamp: count them instead.)
# A probe crossing a level whose dead-letter target lost its leader waits
# for the dead-letter worker to send again (CUTOVER_BROKER_DLX_CONFIRM_
# TIMEOUT_MS, per round); under load that took over 53 s once: ceiling 180 s.
probed_since_kill() { [ "$(samples_after 0 probe.lateness_ms)" -gt "$probes_before" ]; }
e2e_within 180 probed_since_kill || { fail "no probe arrived after the kill: AMQP did not fail over"; e2e_show_plan; exit 1; }
probe_ms=$(($(now_ms) - killed_ms))
[ "$(step_status 6)" = running ] || fail "the watch is $(step_status 6) with $victim down, expected running"
grep -E 'AMQP: .*connected to|management: .*answered instead' "$tmp/serve.log" | head -n 4

# While A is down the watch waits: an acknowledged broker_node_down comes
# back (ceiling 30 s).
first=$(open_down)
e2e_api POST "/api/plans/$id/alerts/$first/ack" '{"comment":"seen; restarting the node"}' >/dev/null
down_again() { again=$(open_down) && [ -n "$again" ] && [ "$again" != "$first" ]; }
e2e_within 30 down_again || { fail "broker_node_down did not come back while $victim was down"; e2e_show_plan; }
[ "$(step_status 6)" = running ] || fail "the watch is $(step_status 6) with $victim down, expected running"

# A comes back (its data kept: it rejoins the cluster).
"$root/scripts/broker" start --port "$pa" >>"$tmp/cluster.log" 2>&1 || fail "$victim did not restart"
cluster_whole() { "$root/scripts/broker" cluster status --port "$pa" >/dev/null 2>&1; }
e2e_within 120 cluster_whole || fail "the cluster did not get three running nodes back"
back_ms=$(($(now_ms) - killed_ms))

# Every alert acknowledged (after the node is back none comes again),
# the watch ends, remove_old is approved, the plan succeeds (ceiling 180 s).
t=0
until [ "$(e2e_plan_json | jq -r .status)" = succeeded ]; do
	for al in $(e2e_plan_json | jq -r '.alerts[] | "\(.id):\(.kind)"'); do
		echo "$al" >>"$tmp/alerts.txt"
		e2e_api POST "/api/plans/$id/alerts/${al%%:*}/ack" '{"comment":"node back"}' >/dev/null
	done
	[ "$(step_status 7)" = waiting_approval ] &&
	    e2e_api POST "/api/plans/$id/steps/7/approve" >/dev/null
	t=$((t + 1))
	if [ $t -gt 180 ]; then
		fail "the plan did not succeed after $victim came back"
		e2e_show_plan
		break
	fi
	sleep 1
done

e2e_traffic_stop
if [ "$lost" != 0 ]; then
	echo "test_cluster: the plan's queues now (name, messages, messages_dlx, leader, online):" >&2
	e2e_mgmt GET "/queues/%2F?columns=name,messages,messages_dlx,leader,online,members,state" |
	    jq -r --arg n "$name." '.[] | select(.name | startswith($n)) |
		select((.name | contains(".delay.")) | not) |
		"\(.name) \(.messages) \(.messages_dlx) \(.leader) \(.online) \(.state)"' >&2
fi
e2e_traffic_check both
e2e_ladder_verifies

echo "cluster: confirmed $confirmed (old $old_sent, ladder $ladder_sent), delivered $delivered"
echo "cluster: lost $lost, early $early, lateness p99 ${p99} ms, max ${lmax} ms"
echo "cluster: after the kill: alert naming $victim in $alert_ms ms, a management sample" \
    "through another node in $mgmt_ms ms, a probe over AMQP in $probe_ms ms;" \
    "node back in $back_ms ms"
echo "cluster: alerts acknowledged: $(cut -d: -f2 "$tmp/alerts.txt" 2>/dev/null | sort | uniq -c | tr -s ' \n' ' ')"
[ "$failures" -eq 0 ] || { echo "cluster: $failures failure(s)" >&2; exit 1; }
echo "cluster: passed"
