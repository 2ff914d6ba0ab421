#!/bin/sh
# shellcheck disable=SC2154
# (sf_report, in symfony/lib.sh, sets the sf_* figures this reads.)
#
# test_symfony: a real Symfony Messenger 5.4 application (Debian's
# packages; tests/e2e/symfony) migrated by a whole plan under its own live
# traffic, nothing done by hand but what an operator does: approving the
# flip and remove_old through the API.
#
# The app dispatches DelayStamp'd messages of 24 distinct delays between
# 1.3 s and 15 s, none a whole number of units, 8 a second; Symfony makes
# a delay queue per delay (delay_<exchange>__<ms>_delay: x-expires = TTL
# + 10 s, timestamp in whole seconds), its handler fails every 5th
# message once and every 15th twice, and Messenger retries those through
# delay_<exchange>_<queue>_<ms>_retry queues (a retry keeps its first
# timestamp, so move_old reads no entry time there). 6 of the delays are
# first used after measure_horizon ran, before the flip. Once the feature
# flag is on the app's sender (examples/symfony) puts delayed messages and
# retries into the ladder. The plan: measure_horizon, declare_ladder,
# verify_ladder, canary, flip (gated), move_old, watch, remove_old (gated).
#
# It passes only if the plan succeeds, no send (first attempt or retry)
# was lost or received before its send time + its delay, move_old moved
# messages, and no Symfony delay queue is left. With `kill`, the engine
# (cutover serve) is killed -9 while move_old is moving and started again.
# It prints the messages, the moved, lateness p50/p99/max per path (the
# path a send took: old or ladder) and the time from the flip to the end.
#
# Usage: test_symfony.sh BUILD_DIR [kill]. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_*) and php with Debian's Symfony Messenger.
set -u
build=$1
mode=${2:-}
bin=$build/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
# shellcheck source=symfony/lib.sh
. "$(dirname "$0")/symfony/lib.sh"
sf_require test_symfony
e2e_setup "sf$$" "cutover-sf-$(e2e_run_id)" 11
started=$(date +%s)

trap 'sf_cleanup; e2e_cleanup_run' EXIT
trap 'exit 1' HUP INT TERM

# old_delays N: whether the broker holds N _delay queues of this run and
# a _retry queue.
old_delays() {
	[ "$(count_old _delay)" -ge "$1" ] && [ "$(count_old _retry)" -ge 1 ]
}

# count_old SUFFIX: how many of Symfony's delay queues of this run end in
# SUFFIX (_delay or _retry).
count_old() {
	sf_old_queues | grep -c -- "$1\$"
}

e2e_feature_new test_symfony
e2e_operator

# The old path is whatever the selection takes: both kinds of Symfony's
# delay queues. move_old reads _delay queues' timestamps; a _retry queue's
# is the message's first, older than its entry, so its entry is unknown
# (moved with the queue's whole TTL, a retry delay of 2 s at most).
cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { match: '^delay_$name\\.x_.*_[0-9]+_(delay|retry)\$' }
$(e2e_ladder_yaml "$name" "$feature" prefix="$name.ladder" levels=8 \
    destinations="{ key: $name.x, exchange: $name.x }, $name.messages" max_lateness=10s \
    allowance=15s)
move_old:
  rate: 500/s
  prefetch: 50
  unknown_entry_max_lateness: 5s
  stragglers: 4s
  entry:
    - { queues: { match: '_delay\$' }, from: timestamp }
    - { queues: { match: '_retry\$' }, from: unknown }
$(e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary flip! move_old watch remove_old!)
PLAN

# The app: its worker, then its producer on the 18 first delays; the old
# path holds all of them and retries before the plan starts.
sf_env
sf_worker
sf_producer 8 1361,1789,2213,2671,3109,3583,4027,4451,4903,5347,5791,6263,6709,7151,7603,8059,8513,8969 \
    9421,10337,11251,12157,13063,14929
e2e_within 60 old_delays 18 || {
	echo "test_symfony: the app made no 18 delay queues and a retry queue within 60 s" >&2
	cat "$tmp/producer.err" "$tmp/worker.err" >&2
	exit 1
}

e2e_serve_start test_symfony
e2e_submit test_symfony

e2e_step 1 succeeded 60
measured=$(jq '.steps[0].result.queues | length' "$tmp/plan.json")
# Delays first used now: queues the selection takes after the measure.
touch "$tmp/late"
e2e_step 5 waiting_approval 120
e2e_within 30 old_delays 24 ||
    fail "the late delays made no queues before the flip ($(count_old _delay) _delay queues)"
old_at_flip=$(sf_old_queues | wc -l)
e2e_api POST "/api/plans/$id/steps/5/approve" >/dev/null
flip_at=$(date +%s)

if [ "$mode" = kill ]; then
	# kill -9 while move_old has moved some: nothing may be lost.
	e2e_kill_serve_moving test_symfony 6
	echo "symfony: serve killed -9 in move_old after $moved_before moved, started again"
fi

e2e_step 6 succeeded 120
e2e_step 8 waiting_approval 120
e2e_api POST "/api/plans/$id/steps/8/approve" >/dev/null
e2e_step 8 succeeded 120
# The plan's own status follows its last step's in a later turn.
e2e_plan_done 30
ended_at=$(date +%s)
# At the plan's end, before Symfony's queues could expire on their own
# (10 s after their last use): none is left, and remove_old removed or
# found gone every one it selected.
old_at_end=$(sf_old_queues | wc -l)

# The app stops producing; every send arrives (the longest delay and a
# retry), then the worker stops.
sf_stop_producer
e2e_within 60 sf_drained || fail "$(sf_pending) sends or messages not received or handled within 60 s of the last dispatch"
sf_stop_worker

sf_report >"$tmp/report"
cat "$tmp/report"
moved=$(jq '.steps[5].result.counts.moved // 0' "$tmp/plan.json")
left_in_old=$(jq '.steps[5].result.counts.left // 0' "$tmp/plan.json")
removed=$(jq '.steps[7].result.counts.removed // 0' "$tmp/plan.json")
gone=$(jq '.steps[7].result.counts.gone // 0' "$tmp/plan.json")
not_removed=$(jq -r '.steps[7].result.entries[]? | select(.outcome != "removed" and .outcome != "gone") |
    "\(.name) (\(.outcome): \(.reason // ""))"' "$tmp/plan.json")
[ -z "$not_removed" ] || fail "remove_old left: $not_removed"
[ "$sf_lost" = 0 ] || fail "lost $sf_lost"
[ "$sf_early" = 0 ] || fail "early $sf_early"
[ "$sf_handled" = "$sf_messages" ] || fail "$sf_handled of $sf_messages messages were handled"
[ "${sf_old:-0}" -gt 0 ] && [ "${sf_ladder:-0}" -gt 0 ] ||
    fail "both paths must carry sends (old $sf_old, ladder $sf_ladder)"
[ "${sf_retries:-0}" -gt 0 ] || fail "no retry was sent"
[ "${moved:-0}" -gt 0 ] || fail "move_old moved nothing"
[ "$old_at_end" = 0 ] || fail "$old_at_end old queues were left at the plan's end"

echo "symfony: ${mode:-plain} run: old queues measured $measured, at the flip $old_at_flip;" \
    "moved $moved, left in the old path $left_in_old; remove_old removed $removed, found gone $gone"
echo "symfony: messages $sf_messages, retries $sf_retries, lost $sf_lost, early $sf_early;" \
    "flip to end $((ended_at - flip_at)) s; whole test $(($(date +%s) - started)) s"
[ "$failures" -eq 0 ] || { echo "symfony: $failures failure(s)" >&2; exit 1; }
echo "symfony: passed"
