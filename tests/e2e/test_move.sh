#!/bin/sh
# test_move: move_old under live traffic. Old queues with TTLs of 5 s to
# 100 s (the old horizon) carry traffic from cutover-traffic, 70% of it
# stamped with the AMQP timestamp and the rest (delays up to 45 s only: a
# legacy producer of short delays) unstamped. The plan
# (unknown_entry_max_lateness 15s) flips, moves the waiting messages
# into the ladder while `cutover serve` is killed -9 once mid-move and
# started again, watches only what stayed and removes the emptied old
# queues (remove_old, at the move's horizon). It passes only if the plan
# ends well before the old horizon, every confirmed message was delivered
# (lost 0), none early, unstamped messages of queues over the bound were
# left (and drained in place), and the history records the time saved.
#
# Usage: test_move.sh BUILD_DIR. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
# CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL, _TOKEN, _CLIENT_TOKEN).
set -u
build=$1
bin=$build/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_begin test_move "mv$$" "cutover-move-$(e2e_run_id)" 7

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { match: '^$name\\.delay\\.[0-9]+ms\$' }
$(e2e_ladder_yaml "$name" "$feature" unit=1s levels=10 delays="1s, 2s, 3s" max_lateness=10s \
    interval=1s allowance=8s probe_every=5s)
move_old:
  rate: 150/s
  prefetch: 50
  unknown_entry_max_lateness: 15s
  stragglers: 10s
  entry:
    - { queues: { match: '^$name\\.delay\\.' }, from: timestamp }
$(e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary flip! move_old watch remove_old)
PLAN

e2e_feature_new test_move
e2e_operator

# Live traffic: 100 messages a second, delays 5 s - 100 s in 5 s steps
# (20 old queues), until told to stop; it then waits for every confirmed
# message (up to the longest delay + 60 s).
e2e_traffic_start "$tmp/plan.yaml" --rate 100 --min-delay 5s --max-delay 100s --delay-step 5s \
    --stamp-timestamp 70 --unstamped-max-delay 45s --drain-timeout 300s
# The old path carries traffic before the plan starts: every old queue
# holds messages (up to 60 s).
e2e_old_ready test_move 20 messages

e2e_serve_start test_move
e2e_submit test_move

# The flip once the old path holds 1,500 messages.
t=0
until [ "$(e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq "[.[] | select(.name |
    startswith(\"$name.delay.\")) | .messages] | add // 0")" -ge 1500 ]; do
	t=$((t + 1))
	[ $t -gt 600 ] && { echo "test_move: the old path never held 1500 messages" >&2; exit 1; }
	sleep 0.2
done
e2e_step 5 waiting_approval 120
e2e_api POST "/api/plans/$id/steps/5/approve" >/dev/null
flip_at=$(date +%s)
# kill -9 while move_old has moved some and not all: nothing may be lost.
e2e_kill_serve_moving test_move 6
e2e_step 6 succeeded 300
e2e_step 7 succeeded 400
e2e_step 8 succeeded 120
# The plan's own status follows its last step's in a later turn.
e2e_plan_done 30
ended_at=$(date +%s)

# Stop the producer: it drains what is in flight, waits for every
# confirmed message, then reports.
e2e_traffic_stop
e2e_traffic_check

move=$(jq -c '.steps[5].result' "$tmp/plan.json")
moved=$(printf '%s' "$move" | jq .counts.moved)
left=$(printf '%s' "$move" | jq .counts.left)
unknown_left=$(printf '%s' "$move" | jq '[.queues[].left_why.unknown_entry // 0] | add')
saved=$(printf '%s' "$move" | jq '.saved_ms // 0')
old_h=$(printf '%s' "$move" | jq '.old_horizon_ms // 0')
new_h=$(printf '%s' "$move" | jq '.horizon_ms // 0')
[ "${moved:-0}" -gt 0 ] || fail "move_old moved nothing"
[ "${unknown_left:-0}" -gt 0 ] || fail "no unstamped message of a queue over the bound was left"
# The plan ended before the old horizon (108 s after the flip), with all
# its steps, and the move saved at least 15 s of watching (about 40 s on
# a quiet machine, 26 s seen at load 30: the move's last pass starts
# later on a loaded one).
[ "${saved:-0}" -ge 15000 ] || fail "the move saved ${saved} ms, expected at least 15 s"
[ $((ended_at - flip_at)) -lt 108 ] || fail "the plan took $((ended_at - flip_at)) s after the flip"
events=$(curl -fsS "$server/api/plans/$id/history" | jq '[.events[]? | select(.kind == "move_old.done")] | length')
[ "${events:-0}" -ge 1 ] || fail "the history has no move_old.done event"
# remove_old deleted the emptied old queues at the move's horizon, not at
# last entry + the largest TTL (which the saved time and the plan's
# length above would not allow).
removed=$(jq '.steps[7].result.counts.removed // 0' "$tmp/plan.json")
[ "${removed:-0}" -gt 0 ] || fail "remove_old removed no old queue"
old_left=$(e2e_old_count messages)
[ "$old_left" = 0 ] || fail "$old_left old queues still hold messages"

echo "move: old-path messages confirmed $old_sent; total confirmed $confirmed, delivered $delivered, duplicates $dups"
echo "move: moved $moved (before kill -9: $moved_before), left $left (unknown entry $unknown_left)"
echo "move: remove_old removed $removed old queues"
echo "move: lost $lost, early $early; plan ended $((ended_at - flip_at)) s after the flip;" \
    "old horizon $old_h, horizon left $new_h, saved $saved ms"
[ "$failures" -eq 0 ] || { echo "move: $failures failure(s)" >&2; exit 1; }
echo "move: passed"
