#!/bin/sh
# shellcheck disable=SC2154
# (sf_report, in symfony/lib.sh, sets the sf_* figures this reads.)
# test_symfony_sender: the Symfony example's ladder sender (examples/symfony)
# under a real Messenger 5.4 app (tests/e2e/symfony: Debian's packages),
# the flag on from the start. The ladder is declared by `cutover ladder
# declare`; the app dispatches DelayStamp'd messages of 24 distinct delays
# that are not whole units, its handler fails a share of them, and
# Messenger's retry listener retries those through the transport's sender.
# It passes only if every send (first attempts and retries) went into the
# ladder, none was lost or arrived before its send time + its delay, no
# Symfony delay queue was created, and the ladder's parking stayed empty.
# A retry carries the dead-letter history of its first pass through the
# ladder: were it not stripped, RabbitMQ would drop it as a cycle (lost).
#
# Usage: test_symfony_sender.sh BUILD_DIR. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_*) and php with Debian's Symfony Messenger.
set -u
build=$1
bin=$build/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=symfony/lib.sh
. "$(dirname "$0")/symfony/lib.sh"
sf_require test_symfony_sender
e2e_setup "sfs$$" "cutover-sfs-$(e2e_run_id)"

trap 'sf_cleanup; e2e_cleanup_run' EXIT
trap 'exit 1' HUP INT TERM

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { match: '^delay_$name\\.x_' }
ladder:
  prefix: $name.ladder
  unit: 100ms
  levels: 8
  destinations: [ { key: $name.x, exchange: $name.x }, $name.messages ]
$(e2e_flag_yaml "$feature")
steps: [declare_ladder]
PLAN

e2e_feature_new test_symfony_sender on

# The worker sets up the transport (exchange, queue), which the ladder
# binds as its destinations.
sf_env
sf_worker
e2e_within 30 sh -c "curl -fsS -u '$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD' \
    '$CUTOVER_TEST_MGMT/api/queues/%2F/$name.messages' >/dev/null 2>&1" ||
    { echo "test_symfony_sender: the worker made no queue $name.messages" >&2; cat "$tmp/worker.err" >&2; exit 1; }
"$bin" ladder declare "$tmp/plan.yaml" >"$tmp/declare.txt" 2>&1 ||
    { echo "test_symfony_sender: ladder declare failed" >&2; cat "$tmp/declare.txt" >&2; exit 1; }

# 10 messages a second for 8 s: 24 delays of 1.3 s to 14.9 s, the last 6
# first used after 3 s.
sf_producer 10 1361,1789,2213,2671,3109,3583,4027,4451,4903,5347,5791,6263,6709,7151,7603,8059,8513,8969 \
    9421,10337,11251,12157,13063,14929
sleep 3
touch "$tmp/late"
sleep 5
sf_stop_producer
e2e_within 40 sf_drained || fail "$(sf_pending) sends or messages not received or handled within 40 s of the last dispatch"
sf_stop_worker

sf_report >"$tmp/report"
cat "$tmp/report"
[ "${sf_messages:-0}" -gt 0 ] || fail "the producer sent nothing"
[ "${sf_retries:-0}" -gt 0 ] || fail "no retry was sent"
[ "$sf_lost" = 0 ] || fail "lost $sf_lost"
[ "$sf_early" = 0 ] || fail "early $sf_early"
[ "$sf_handled" = "$sf_messages" ] || fail "$sf_handled of $sf_messages messages were handled"
[ "$sf_old" = 0 ] || fail "$sf_old sends took Symfony's delay queues with the flag on"
[ "$sf_ladder" = "$sf_sends" ] || fail "$sf_ladder of $sf_sends sends took the ladder"
delays=$(awk -F '\t' '$1 == "send" { print $5 }' "$tmp/producer.log" "$tmp/worker.log" | sort -u | wc -l)
[ "$delays" -ge 26 ] || fail "only $delays distinct delays were sent (24 + 2 retry delays expected)"
left=$(sf_old_queues | wc -l)
[ "$left" = 0 ] || fail "$left Symfony delay queues exist: $(sf_old_queues | tr '\n' ' ')"
parked=$(e2e_mgmt GET "/queues/%2F/$name.ladder.parking" | jq .messages)
[ "$parked" = 0 ] || fail "parking holds $parked messages"
if [ -s "$tmp/worker.err" ] || [ -s "$tmp/producer.err" ]; then
	grep -v 'planned failure' "$tmp/worker.err" "$tmp/producer.err" | head -n 5 >&2
fi

echo "symfony sender: $delays distinct delays, lost $sf_lost, early $sf_early, parking $parked"
[ "$failures" -eq 0 ] || { echo "symfony sender: $failures failure(s)" >&2; exit 1; }
echo "symfony sender: passed"
