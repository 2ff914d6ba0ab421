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
e2e_require test_move CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD \
    CUTOVER_TEST_UNLEASH_URL CUTOVER_TEST_UNLEASH_TOKEN CUTOVER_TEST_UNLEASH_CLIENT_TOKEN
tmp=$(mktemp -d)
name=mv$$
feature=cutover-move-$(e2e_run_id)
port=$(e2e_free_port 7) || exit 1
server=http://127.0.0.1:$port
serve_pid=
traffic_pid=
failures=0

trap e2e_cleanup_run EXIT
trap 'exit 1' HUP INT TERM

api() { curl -sS -X "$1" -H "Authorization: Bearer $token" "$server$2"; }
plan_json() { curl -fsS "$server/api/plans/$id"; }
wait_for() { e2e_wait_step "$server" "$id" "$@" || { fail "step $1 did not become $2"; exit 1; }; }

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { match: '^$name\\.delay\\.[0-9]+ms\$' }
ladder:
  prefix: $name
  unit: 1s
  levels: 10
  destinations: [$name.email]
canary:
  delays: [1s, 2s, 3s]
  max_lateness: 10s
flag:
  kind: unleash
  url: $CUTOVER_TEST_UNLEASH_URL
  project: default
  environment: production
  feature: $feature
  token: env:CUTOVER_TEST_UNLEASH_TOKEN
watch:
  interval: 1s
  allowance: 8s
  probe_every: 5s
move_old:
  rate: 150/s
  prefetch: 50
  unknown_entry_max_lateness: 15s
  stragglers: 10s
  entry:
    - { queues: { match: '^$name\\.delay\\.' }, from: timestamp }
steps:
  - measure_horizon
  - declare_ladder
  - verify_ladder
  - canary
  - { step: flip, gate: true }
  - move_old
  - watch
  - remove_old
PLAN

e2e_feature_create "$feature" || { echo "test_move: cannot create feature $feature in Unleash" >&2; exit 1; }
[ "$(e2e_feature_enabled "$feature")" = false ] || { echo "test_move: feature $feature is not off" >&2; exit 1; }

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'tester:%s\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" >"$tmp/operators"

# Live traffic: 100 messages a second, delays 5 s - 100 s in 5 s steps
# (20 old queues), until told to stop; it then waits for every confirmed
# message (up to the longest delay + 60 s).
UNLEASH_CLIENT_TOKEN=$CUTOVER_TEST_UNLEASH_CLIENT_TOKEN \
    "$build/cutover-traffic" --plan "$tmp/plan.yaml" --old-prefix "$name.delay" \
    --rate 100 --min-delay 5s --max-delay 100s --delay-step 5s --progress 0 \
    --stamp-timestamp 70 --unstamped-max-delay 45s --drain-timeout 300s \
    --json >"$tmp/traffic.json" 2>"$tmp/traffic.log" &
traffic_pid=$!
# The old path carries traffic before the plan starts: every old queue
# holds messages (up to 60 s).
t=0
until [ "$(e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq "[.[] | select((.name |
    startswith(\"$name.delay.\")) and .messages > 0)] | length")" -ge 20 ]; do
	t=$((t + 1))
	[ $t -gt 300 ] && { echo "test_move: the old path never held 20 queues with messages" >&2; exit 1; }
	sleep 0.2
done

e2e_serve_start test_move
id=$(curl -sS -X POST -H "Authorization: Bearer $token" --data-binary @"$tmp/plan.yaml" \
    "$server/api/plans" | jq -r .id)
[ -n "$id" ] && [ "$id" != null ] || { echo "test_move: submit failed" >&2; exit 1; }

# The flip once the old path holds 1,500 messages.
t=0
until [ "$(e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq "[.[] | select(.name |
    startswith(\"$name.delay.\")) | .messages] | add // 0")" -ge 1500 ]; do
	t=$((t + 1))
	[ $t -gt 600 ] && { echo "test_move: the old path never held 1500 messages" >&2; exit 1; }
	sleep 0.2
done
wait_for 5 waiting_approval 120
api POST "/api/plans/$id/steps/5/approve" >/dev/null
flip_at=$(date +%s)
# kill -9 while move_old has moved some and not all: nothing may be lost.
e2e_kill_serve_moving test_move 6
wait_for 6 succeeded 300
wait_for 7 succeeded 400
wait_for 8 succeeded 120
# The plan's own status follows its last step's in a later turn.
t=0
until [ "$(plan_json | jq -r .status)" = succeeded ]; do
	t=$((t + 1))
	[ $t -gt 300 ] && break
	sleep 0.1
done
ended_at=$(date +%s)
plan_json >"$tmp/plan.json"
[ "$(jq -r .status "$tmp/plan.json")" = succeeded ] || fail "the plan did not succeed"

# Stop the producer: it drains what is in flight, waits for every
# confirmed message, then reports.
kill -TERM "$traffic_pid"
wait "$traffic_pid"
traffic_rc=$?
traffic_pid=

move=$(jq -c '.steps[5].result' "$tmp/plan.json")
moved=$(printf '%s' "$move" | jq .counts.moved)
left=$(printf '%s' "$move" | jq .counts.left)
unknown_left=$(printf '%s' "$move" | jq '[.queues[].left_why.unknown_entry // 0] | add')
saved=$(printf '%s' "$move" | jq '.saved_ms // 0')
old_h=$(printf '%s' "$move" | jq '.old_horizon_ms // 0')
new_h=$(printf '%s' "$move" | jq '.horizon_ms // 0')
confirmed=$(jq .total.confirmed "$tmp/traffic.json")
delivered=$(jq .total.delivered "$tmp/traffic.json")
lost=$(jq .total.lost "$tmp/traffic.json")
early=$(jq .total.early "$tmp/traffic.json")
dups=$(jq .total.duplicates "$tmp/traffic.json")
old_sent=$(jq .old.confirmed "$tmp/traffic.json")
[ "$traffic_rc" -eq 0 ] || fail "cutover-traffic exited $traffic_rc"
[ "$lost" = 0 ] || fail "lost $lost"
[ "$early" = 0 ] || fail "early $early"
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
old_left=$(e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq "[.[] | select((.name | startswith(\"$name.delay.\")) and .messages > 0)] | length")
[ "$old_left" = 0 ] || fail "$old_left old queues still hold messages"

echo "move: old-path messages confirmed $old_sent; total confirmed $confirmed, delivered $delivered, duplicates $dups"
echo "move: moved $moved (before kill -9: $moved_before), left $left (unknown entry $unknown_left)"
echo "move: remove_old removed $removed old queues"
echo "move: lost $lost, early $early; plan ended $((ended_at - flip_at)) s after the flip;" \
    "old horizon $old_h, horizon left $new_h, saved $saved ms"
[ "$failures" -eq 0 ] || { echo "move: $failures failure(s)" >&2; exit 1; }
echo "move: passed"
