#!/bin/sh
# test_kill: a whole plan under live traffic with its engine killed by
# SIGKILL at random points. A demo-like plan (unit 100ms, a
# horizon of about 30 s, no gates) runs as `cutover run --db` against the
# real broker and a real Unleash flag (a feature made for this run), while
# cutover-traffic publishes old-style until the flag flips, then into the
# ladder. The engine is killed KILLS times (default 20), each after a random
# delay drawn from SEED, and started again each time; then it runs to the
# end. It passes only if every restart resumed the plan (never failed,
# never went back a step), the plan succeeded, the flag went on exactly once
# and never off (Unleash's event log of the feature) after exactly one
# recorded flip request, lost 0 and early 0 (cutover-traffic's report),
# and `history --verify` passes. A table of the kill points is printed;
# replay a failure with CUTOVER_KILL_SEED=SEED.
#
# Usage: test_kill.sh BUILD_DIR. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT, CUTOVER_TEST_USER,
# CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL, _TOKEN, _CLIENT_TOKEN).
# CUTOVER_KILL_SEED, CUTOVER_KILL_POINTS (20) and CUTOVER_KILL_MAX_S
# (the longest delay before a kill in the watch, 2) override the defaults.
set -u
build=$1
bin=$build/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"

seed=${CUTOVER_KILL_SEED:-$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}
points=${CUTOVER_KILL_POINTS:-20}
max_s=${CUTOVER_KILL_MAX_S:-2}
echo "test_kill: seed $seed ($points kills; replay with CUTOVER_KILL_SEED=$seed)"

# At the end, whatever happened, the plan's objects leave the broker too
# where teardown refused them (a level or parking still holding messages).
e2e_begin test_kill "kill$$" "cutover-kill-$$-$seed"
db=$tmp/cutover.db

# The feature of this run, off.
e2e_feature_new test_kill

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
$(e2e_plan_body "$name" "$feature" allowance=20s gates=no)
PLAN

# Live traffic: 100 messages a second, delays 1-10 s in 500 ms steps (19
# old queues, a horizon of about 30 s), until told to stop.
e2e_traffic_start "$tmp/plan.yaml" --rate 100 --min-delay 1s --max-delay 10s --delay-step 500ms
# The old queues exist before the plan measures them.
e2e_old_ready test_kill 19

# status: "N KIND STATUS PLAN_STATUS" of the plan's current step.
status() {
	"$bin" status --db "$db" "$name" --json 2>/dev/null | jq -r '
	    . as $p | ([.steps[] | select(.status != "succeeded")][0] // .steps[-1]) as $s |
	    "\($s.n // 0) \($s.kind) \($s.status) \($p.status)"'
}

engine() {
	"$bin" run --db "$db" "$tmp/plan.yaml" >>"$tmp/engine.log" 2>&1 &
	engine_pid=$!
}

# The delays, from SEED by the Park-Miller generator (exact in awk's
# doubles, the same with every awk): the first 15 % very short (0.01-0.2 s:
# measure, declare and verify take about 0.15 s together), the next 25 %
# short (0.05-1 s: the canary, which starts again when killed, and the
# flip), the rest 0.2 s to MAX_S (the watch, which keeps its deadline
# across restarts).
delays=$(awk -v s="$seed" -v n="$points" -v m="$max_s" 'BEGIN {
    x = s % 2147483646 + 1
    for (i = 0; i < n; i++) {
        x = (x * 16807) % 2147483647
        r = x / 2147483647
        if (i < n * 0.15) printf "%.2f\n", 0.01 + r * 0.19
        else if (i < n * 0.4) printf "%.2f\n", 0.05 + r * 0.95
        else printf "%.2f\n", 0.2 + r * (m - 0.2)
    } }')
printf '%-5s %-7s %s\n' kill delay_s "step at the kill (n kind status plan)" >"$tmp/table"
k=0
resumed=0
last_n=0
engine
# The kills start once the plan is recorded: a kill before that leaves
# nothing to resume (on a loaded machine `run` can take longer than the
# shortest delay to get there), and each kill must find a plan to resume.
t=0
until [ -n "$(status)" ]; do
	t=$((t + 1))
	[ $t -gt 600 ] && { echo "test_kill: the plan was not recorded within 30 s" >&2;
	    cat "$tmp/engine.log" >&2; exit 1; }
	sleep 0.05
done
for d in $delays; do
	sleep "$d"
	if ! kill -0 "$engine_pid" 2>/dev/null; then
		wait "$engine_pid"
		rc=$?
		engine_pid=
		fail "the engine ended (exit $rc) before kill $((k + 1)): the plan is" \
		    "shorter than the kills; $(status)"
		break
	fi
	kill -9 "$engine_pid"
	wait "$engine_pid" 2>/dev/null
	engine_pid=
	k=$((k + 1))
	at=$(status)
	printf '%-5s %-7s %s\n' "$k" "$d" "$at" >>"$tmp/table"
	# The previous restart resumed: the plan is still running, at the step
	# it was at or later.
	set -- $at
	if [ "${4:-}" = running ] && [ "${1:-0}" -ge "$last_n" ]; then
		[ $k -gt 1 ] && resumed=$((resumed + 1))
	else
		fail "kill $k: the plan is '$at' (it was at step $last_n)"
	fi
	last_n=${1:-0}
	engine
done

# The last engine runs the plan to its end; it resumed the last kill
# when the plan succeeds.
# No operator acknowledges an alert here, so one open for 30 s holds the
# watch for good: that ends the wait.
[ -n "$engine_pid" ] || engine
t=0
held=0
while kill -0 "$engine_pid" 2>/dev/null && [ $t -lt 360 ]; do
	sleep 1
	t=$((t + 1))
	alerts=$("$bin" status --db "$db" "$name" --json 2>/dev/null |
	    jq -r '.alerts[]? | "\(.kind): \(.message)"')
	if [ -n "$alerts" ]; then held=$((held + 1)); else held=0; fi
	if [ $held -ge 30 ]; then
		fail "the watch holds on an alert open for 30 s: $alerts"
		break
	fi
done
if kill -0 "$engine_pid" 2>/dev/null; then
	[ $held -ge 30 ] || fail "the plan did not end within 360 s: $(status)"
	kill -9 "$engine_pid"
fi
wait "$engine_pid"
run_rc=$?
engine_pid=
plan_status=$("$bin" status --db "$db" "$name" --json | jq -r .status)
[ "$plan_status" = succeeded ] && [ $k -gt 0 ] && resumed=$((resumed + 1))
[ "$run_rc" = 0 ] && [ "$plan_status" = succeeded ] ||
    fail "the plan ended $plan_status (run exit $run_rc)"

# Stop the producer (one signal: it drains what is in flight, then reports).
e2e_traffic_stop
e2e_traffic_check both

# One flag call per switch: Unleash logged one transition to on and none
# to off for this run's feature, and the history one flip request.
e2e_unleash GET "/api/admin/events/$feature" >"$tmp/events.json" ||
    fail "cannot read Unleash's events of $feature"
on=$(jq '[.events[] | select(.type == "feature-environment-enabled")] | length' "$tmp/events.json")
off=$(jq '[.events[] | select(.type == "feature-environment-disabled")] | length' "$tmp/events.json")
[ "$on" = 1 ] && [ "$off" = 0 ] ||
    fail "the flag went on $on time(s) and off $off time(s); expected 1 and 0"
"$bin" history --db "$db" "$name" --json >"$tmp/history.json" ||
    fail "history $name failed"
requested=$(jq '[.events[] | select(.kind == "flip.requested")] | length' "$tmp/history.json")
flips=$(jq '[.events[] | select(.kind == "flip.confirmed")] | length' "$tmp/history.json")
[ "$requested" = 1 ] && [ "$flips" = 1 ] ||
    fail "the history has $requested flip.requested and $flips flip.confirmed; expected 1 and 1"
"$bin" history --db "$db" --verify >"$tmp/verify.txt" 2>&1 || {
	fail "history --verify failed"
	cat "$tmp/verify.txt" >&2
}
old_left=$(e2e_old_count)
[ "$old_left" = 0 ] || fail "$old_left old queues are left"
[ "$resumed" = "$k" ] && [ "$k" = "$points" ] ||
    fail "resumed $resumed of $k kills ($points planned)"

cat "$tmp/table"
echo "kill: seed $seed: $k kills, resumed $resumed/$k, flag on $on off $off," \
    "flip requested $requested confirmed $flips, plan $plan_status"
echo "kill: confirmed $confirmed (old $old_sent, ladder $ladder_sent), lost $lost, early $early," \
    "old queues left $old_left"
if [ "$failures" -ne 0 ]; then
	echo "kill: $failures failure(s); replay with CUTOVER_KILL_SEED=$seed" >&2
	tail -n 30 "$tmp/engine.log" >&2
	exit 1
fi
echo "kill: passed"
