#!/bin/sh
# test_broker_silence: a broker that stops answering for longer than
# cutover's timeouts, twice, holds a plan and fails nothing. The node's
# Erlang VM is stopped (SIGSTOP: the sockets stay open, nothing answers,
# as in a long garbage collection, a hung disk or a network cut without a
# reset) past the 10 s every broker call waits:
#   1. for 12 s while move_old moves the old queues' messages (10 a
#      second): its gets and publishes find the node silent (the step
#      rides that out itself, or fails and the engine runs it again);
#   2. for 25 s while remove_old waits at its gate, then the gate
#      approved: the step's connections cannot be opened (an AMQP login
#      given up after 10 s, twice), which used to fail the plan until an
#      operator's retry.
# It passes only if the plan succeeds without one, the history shows
# remove_old run again (step.broker_retry) and broker_unreachable raised
# and closed by the engine, no step failed, every
# old-path message (stamped, moved into the ladder) reached its
# destination (some twice: what was in flight when the node went silent is
# moved again, as move_old's may_duplicate counts) and every old queue is
# gone.
#
# Usage: test_broker_silence.sh BUILD_DIR. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
# CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL, _TOKEN, _CLIENT_TOKEN)
# and a node of its own (scripts/broker pid finds its VM).
set -u
build=$1
bin=$build/cutover
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_begin test_broker_silence "bs$$" "cutover-silence-$(e2e_run_id)" 11

amqp_port=${CUTOVER_TEST_AMQP##*:}
amqp_port=${amqp_port%%/*}
vm=$("$root/scripts/broker" pid --port "$amqp_port") ||
    { echo "test_broker_silence: no Erlang VM for the node on $amqp_port" >&2; exit 1; }
# Whatever happens, the node answers again before the run's objects go.
trap 'kill -CONT "$vm" 2>/dev/null; e2e_cleanup_run' EXIT

# mgmt_send METHOD PATH BODY: one call to the node's management API with a
# JSON body; prints the answer, fails on an HTTP error.
mgmt_send() {
	curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" -X "$1" \
	    -H 'Content-Type: application/json' --data "$3" "$CUTOVER_TEST_MGMT/api$2"
}

# silence SECONDS: the node's VM stopped for SECONDS, then continued.
silence() {
	kill -STOP "$vm" || { fail "cannot stop the node's VM ($vm)"; return; }
	sleep "$1"
	kill -CONT "$vm"
}

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { match: '^$name\\.delay\\.[0-9]+ms\$' }
$(e2e_ladder_yaml "$name" "$feature" unit=1s levels=7 delays="1s, 2s" max_lateness=10s \
    interval=1s allowance=3s probe_every=5s)
move_old:
  rate: 10/s
  prefetch: 50
  stragglers: 8s
  entry:
    - { queues: { match: '^$name\\.delay\\.' }, from: timestamp }
$(e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary flip move_old watch remove_old!)
PLAN

e2e_feature_new test_broker_silence
e2e_operator

# The old path: three queues of 20, 25 and 30 s dead-lettering to the
# destination, 20 stamped messages in each.
mgmt_send PUT "/queues/%2F/$name.email" '{"durable":true}' >/dev/null ||
    { echo "test_broker_silence: cannot declare $name.email" >&2; exit 1; }
sent=0
now=$(date +%s)
for ttl in 20000 25000 30000; do
	q=$name.delay.${ttl}ms
	mgmt_send PUT "/queues/%2F/$q" "{\"durable\":true,\"arguments\":{\"x-message-ttl\":$ttl,
	    \"x-dead-letter-exchange\":\"\",\"x-dead-letter-routing-key\":\"$name.email\"}}" \
	    >/dev/null || { echo "test_broker_silence: cannot declare $q" >&2; exit 1; }
	for i in $(seq 1 20); do
		mgmt_send POST "/exchanges/%2F/amq.default/publish" "{\"routing_key\":\"$q\",
		    \"payload\":\"m-$ttl-$i\",\"payload_encoding\":\"string\",
		    \"properties\":{\"delivery_mode\":2,\"timestamp\":$now}}" | grep -q '"routed":true' ||
		    { echo "test_broker_silence: a publish to $q was not routed" >&2; exit 1; }
		sent=$((sent + 1))
	done
done

e2e_serve_start test_broker_silence
e2e_submit test_broker_silence

# 1. While move_old moves: 10 of the 60 moved, 5 s of moving left.
t=0
until [ "$(e2e_moving 6)" -ge 10 ] 2>/dev/null; do
	t=$((t + 1))
	[ $t -gt 600 ] && { fail "move_old never moved 10 messages"; e2e_show_plan; exit 1; }
	sleep 0.1
done
silence 12

# 2. At remove_old's gate: the step opens its connections once approved.
e2e_step 8 waiting_approval 240
kill -STOP "$vm" || fail "cannot stop the node's VM ($vm)"
e2e_api POST "/api/plans/$id/steps/8/approve" >/dev/null
sleep 25
kill -CONT "$vm"

e2e_plan_done 240
curl -fsS "$server/api/plans/$id/history" >"$tmp/history.json"
retries=$(jq '[.events[] | select(.kind == "step.broker_retry")] | length' "$tmp/history.json")
move_retries=$(jq '[.events[] | select(.kind == "step.broker_retry" and .details.kind == "move_old")] | length' "$tmp/history.json")
remove_retries=$(jq '[.events[] | select(.kind == "step.broker_retry" and .details.kind == "remove_old")] | length' "$tmp/history.json")
failed=$(jq '[.events[] | select(.kind == "step.failed" or .kind == "plan.failed")] | length' "$tmp/history.json")
raised=$(jq '[.events[] | select(.kind == "alert.raised" and .details.alert == "broker_unreachable")] | length' "$tmp/history.json")
[ "$remove_retries" -ge 1 ] || fail "remove_old was not run again after the broker's silence"
[ "$failed" = 0 ] || fail "$failed step.failed or plan.failed events"
[ "$raised" -ge 1 ] || fail "broker_unreachable was not raised"
# Nobody acknowledged it: it closed once the broker answered again.
still_open=$(jq '[.alerts[]? | select(.kind == "broker_unreachable" and (.acked_ms // 0) == 0)] | length' \
    "$tmp/plan.json")
closed=$(jq '[.events[] | select(.kind == "alert.acked" and .actor == "engine" and
    .details.kind == "broker_unreachable")] | length' "$tmp/history.json")
[ "$still_open" = 0 ] || fail "broker_unreachable is still open"
[ "$closed" -ge 1 ] || fail "the engine did not close broker_unreachable"

# Every message reaches the destination: moved ones through the ladder
# (their 20-30 s from their stamp), none lost.
t=0
until [ "$(e2e_mgmt GET "/queues/%2F/$name.email?columns=messages" | jq '.messages // 0')" -ge "$sent" ] 2>/dev/null; do
	t=$((t + 1))
	[ $t -gt 450 ] && break
	sleep 0.2
done
delivered=$(e2e_mgmt GET "/queues/%2F/$name.email?columns=messages" | jq '.messages // 0')
[ "$delivered" -ge "$sent" ] || fail "the destination holds $delivered of $sent messages"
old_left=$(e2e_old_count)
[ "$old_left" = 0 ] || fail "$old_left old queues are left"
moved=$(jq '.steps[5].result.counts.moved // 0' "$tmp/plan.json")
may_dup=$(jq '.steps[5].result.counts.may_duplicate // 0' "$tmp/plan.json")

echo "broker_silence: step.broker_retry $retries (move_old $move_retries, remove_old $remove_retries)," \
    "broker_unreachable raised $raised, failures recorded $failed"
echo "broker_silence: sent $sent, moved $moved (may be duplicates: $may_dup), delivered $delivered," \
    "old queues left $old_left"
[ "$failures" -eq 0 ] || { echo "broker_silence: $failures failure(s)" >&2; exit 1; }
echo "broker_silence: passed"
