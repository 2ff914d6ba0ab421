#!/bin/sh
# test_move_target: move_old to a new broker under live traffic. The old
# path waits on a RabbitMQ 3.10 node (the source), the ladder is built on
# a 4.0 node (the plan's target); cutover-traffic publishes 100 delayed
# messages a second (2-20 s) into the old path, then, once the flag
# flips, into the target's ladder, and consumes the destination on both
# nodes. The old path is either one queue per delay (KIND queues, 70% of
# the messages stamped with the AMQP timestamp, the rest of the short
# delays unstamped) or a classic cutover-named ladder of 100 ms units
# (KIND ladder, old.ladder: entries from x-death, half the messages
# stamped). `cutover serve` runs the whole plan; during move_old it is
# killed twice with SIGKILL and started again on the same database: first
# by its own fault point between a batch's confirms on the target and its
# acks on the source (so that batch is in the ladder and back in the old
# path; from the old ladder, a batch that owes lower levels), then from
# outside once it has moved a third of what waited.
#
# It passes only if the plan succeeds, no confirmed message is lost, none
# arrives before the time it was first published plus its delay (each
# checked by cutover-traffic), every moved message (one carrying
# x-cutover-move-id) arrives on the target and under one move id, the
# duplicates are at least one (the first kill's batch: moved again, or
# delivered by the old path when its time there ran out), no more than
# move_old's may_duplicate and no more than move_old.prefetch per kill,
# and the old path holds nothing at the end. It prints the moved
# messages' lateness after their not-before (min, p50, p99, max).
#
# Usage: test_move_target.sh BUILD_DIR queues|ladder. Needs the two nodes
# and Unleash of scripts/test: CUTOVER_TEST_AMQP, _MGMT (the 3.10 node),
# CUTOVER_TEST_TARGET_AMQP, _MGMT (the 4.0 node: tests/support/on_broker.sh
# sets them for a test lent both), CUTOVER_TEST_USER, _PASSWORD,
# CUTOVER_TEST_UNLEASH_URL, _TOKEN, _CLIENT_TOKEN.
set -u
build=$1
kind=${2:-queues}
bin=$build/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
who="test_move_target($kind)"
case $kind in
queues | ladder) ;;
*) echo "$who: expected queues or ladder" >&2; exit 2 ;;
esac
e2e_require "$who" CUTOVER_TEST_TARGET_AMQP CUTOVER_TEST_TARGET_MGMT
e2e_begin "$who" "mt$$" "cutover-move-target-$(e2e_run_id)" 11
t_start=$(date +%s)

prefetch=25
kills=2
if [ "$kind" = queues ]; then
	old_prefix=$name.delay.
	old_yaml="  queues: { match: '^$name\\.delay\\.[0-9]+ms\$' }"
	# Unstamped messages (delays up to 8 s only) move with their whole
	# TTL: never early, up to 8 s late.
	entry_yaml="  unknown_entry_max_lateness: 8s
  entry:
    - { queues: { match: '^$name\\.delay\\.' }, from: timestamp }"
	traffic_opts="--stamp-timestamp 70 --unstamped-max-delay 8s --delay-step 1s"
else
	old_prefix=$name.old.level.
	old_yaml="  ladder: { naming: cutover, prefix: $name.old, unit: 100ms, levels: 8 }"
	entry_yaml=
	traffic_opts="--old-ladder --stamp-timestamp 50 --delay-step 300ms"
	# The old ladder, on the source: classic, 100 ms units, 8 levels
	# (25.5 s), delivering to the destination there.
	cat >"$tmp/old.yaml" <<PLAN
name: $name-old
$(e2e_broker_yaml)
old:
  queues: { names: [nothing.here] }
ladder:
  prefix: $name.old
  unit: 100ms
  levels: 8
  queue_type: classic
  destinations: [$name.email]
  create_destinations: true
steps: [measure_horizon, declare_ladder]
PLAN
	"$bin" ladder declare "$tmp/old.yaml" >"$tmp/old-declare.txt" 2>&1 ||
	    { cat "$tmp/old-declare.txt" >&2; echo "$who: cannot declare the old ladder" >&2; exit 1; }
fi

# The ladder on the target: 100 ms units, 9 levels (51 s), quorum.
cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
$(e2e_target_yaml)
old:
$old_yaml
$(e2e_ladder_yaml "$name" "$feature" max_lateness=10s)
move_old:
  rate: 300/s
  prefetch: $prefetch
  stragglers: 3s
$entry_yaml
$(e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary flip move_old watch remove_old)
PLAN

e2e_feature_new "$who"
e2e_operator

# Live traffic: 100 messages a second, delays 2-20 s, until told to stop;
# the destination is declared on both nodes and consumed on both.
# shellcheck disable=SC2086 # the options are words on purpose
e2e_traffic_start "$tmp/plan.yaml" --rate 100 --min-delay 2s --max-delay 20s \
    $traffic_opts --drain-timeout 60s

# old_depth: the messages waiting in the old path on the source.
old_depth() {
	e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq --arg p "$old_prefix" \
	    '[.[] | select(.name | startswith($p)) | .messages] | add // 0'
}
# About ten seconds of traffic wait in the old path before the plan
# starts (the management API's counts lag by up to 5 s).
until [ "$(old_depth)" -ge 700 ] 2>/dev/null; do
	[ $(($(date +%s) - t_start)) -gt 90 ] && {
		echo "$who: the old path never held 700 messages" >&2
		cat "$tmp/traffic.log" >&2
		exit 1
	}
	kill -0 "$traffic_pid" 2>/dev/null || { cat "$tmp/traffic.log" >&2; exit 1; }
	sleep 0.5
done
depth_at_start=$(old_depth)

# Kill 1: serve kills itself (SIGKILL) right after the first batch's
# confirms from the target, before its acks on the source: the batch is in
# the ladder and, unacked, back in its old queue.
# From an old ladder, a batch of whose messages some owe lower levels:
# given back, they may pass down a level before the next run takes them.
if [ "$kind" = ladder ]; then
	export CUTOVER_FAULT=crash:move_old.confirmed_rest
else
	export CUTOVER_FAULT=crash:move_old.confirmed
fi
e2e_serve_start "$who"
unset CUTOVER_FAULT
e2e_submit "$who"
t_submit=$(date +%s)
t=0
while kill -0 "$serve_pid" 2>/dev/null; do
	t=$((t + 1))
	[ $t -gt 600 ] && { fail "serve did not reach move_old's first confirm in 60 s"; e2e_show_plan; exit 1; }
	sleep 0.1
done
wait "$serve_pid" 2>/dev/null
serve_pid=
e2e_serve_start "$who"
# Kill 2, from outside, once the resumed step has moved another batch and
# a third of what waited at the start: in the queues (or levels) that hold
# the most and the longest, where a batch given back may stay long enough
# (or, in a ladder, be passed down a level) to be moved again.
moved_1=$(e2e_plan_json | jq -r '[.steps[5].result.queues[]?.moved // 0] | add // 0')
at=$((${moved_1:-0} + prefetch))
[ "$at" -ge $((depth_at_start / 3)) ] || at=$((depth_at_start / 3))
e2e_kill_serve_moving "$who" 6 "$at"
moved_2=$moved_before
e2e_step 6 succeeded 120
t_moved=$(date +%s)
# The producer stops with the move done: what it sent last (into the
# ladder) comes due while the watch and remove_old run.
kill -TERM "$traffic_pid"
e2e_step 8 succeeded 120
e2e_plan_done 30
e2e_traffic_stop signalled
e2e_traffic_check both
t_end=$(date +%s)

move=$(jq -c '.steps[5].result' "$tmp/plan.json")
moved=$(printf '%s' "$move" | jq .counts.moved)
left=$(printf '%s' "$move" | jq .counts.left)
may_dup=$(printf '%s' "$move" | jq '.counts.may_duplicate // 0')
m=$(jq -c .moved "$tmp/traffic.json")
m_n=$(printf '%s' "$m" | jq .delivered)
m_dups=$(printf '%s' "$m" | jq .duplicates)
m_unmoved=$(printf '%s' "$m" | jq .unmoved_copies)
m_early=$(printf '%s' "$m" | jq .early)
m_src=$(printf '%s' "$m" | jq .on_source)
m_ids=$(printf '%s' "$m" | jq .id_changed)
m_lat=$(printf '%s' "$m" | jq -r '.lateness_ms | if . == null then "-" else
    "min \(.min) p50 \(.p50) p99 \(.p99) max \(.max)" end')

[ "${moved:-0}" -gt 0 ] || fail "move_old moved nothing"
[ "${m_n:-0}" -gt 0 ] || fail "no message arrived with a move id"
[ "$m_early" = 0 ] || fail "$m_early moved messages arrived early"
[ "$m_src" = 0 ] || fail "$m_src moved copies arrived on the source"
[ "$m_ids" = 0 ] || fail "$m_ids messages arrived moved under two move ids"
# Every duplicate is counted by move_old, and within a batch per kill.
[ "${m_dups:-0}" -ge 1 ] || fail "no duplicate: the first kill's batch should arrive twice"
[ "${m_dups:-0}" -le "${may_dup:-0}" ] ||
    fail "$m_dups duplicates arrived, move_old counted may_duplicate $may_dup"
[ "${may_dup:-0}" -le $((kills * prefetch)) ] ||
    fail "may_duplicate $may_dup is over $kills kills x prefetch $prefetch"
[ "${dups:-0}" -le $((kills * prefetch)) ] ||
    fail "$dups duplicates in all, over $kills kills x prefetch $prefetch"
[ "$left" = 0 ] || fail "move_old left $left messages"
events=$(curl -fsS "$server/api/plans/$id/history" |
    jq '[.events[]? | select(.kind == "move_old.done")] | length')
[ "${events:-0}" -ge 1 ] || fail "the history has no move_old.done event"
old_left=$(old_depth)
[ "$old_left" = 0 ] || fail "the old path still holds $old_left messages"
if [ "$kind" = ladder ]; then
	# The old ladder's 8 level exchanges and its delivery exchange went
	# with it, each recorded once.
	gone_x=$(curl -fsS "$server/api/plans/$id/history" |
	    jq '[.events[]? | select(.kind == "old.exchange_removed")] | length')
	[ "${gone_x:-0}" = 9 ] || fail "the history records ${gone_x:-0} old exchanges removed, not 9"
fi

echo "move_target($kind): old path held $depth_at_start at the start; move_old moved $moved" \
    "(at the kills: $moved_1, $moved_2), left $left, may_duplicate $may_dup (prefetch $prefetch, $kills kills)"
echo "move_target($kind): traffic confirmed $confirmed (old $old_sent, ladder $ladder_sent)," \
    "delivered $delivered, duplicates $dups, lost $lost, early $early;" \
    "arrivals $(jq -c .arrivals "$tmp/traffic.json")"
echo "move_target($kind): moved messages $m_n, duplicates $m_dups (of which the old path" \
    "delivered $m_unmoved, without a move id), early $m_early;" \
    "lateness after not-before (ms) $m_lat"
echo "move_target($kind): submit to move_old done $((t_moved - t_submit)) s, to the end" \
    "$((t_end - t_submit)) s; whole test $((t_end - t_start)) s"
[ "$failures" -eq 0 ] || { echo "move_target($kind): $failures failure(s)" >&2; exit 1; }
echo "move_target($kind): passed"
