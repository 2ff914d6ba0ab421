#!/bin/sh
# test_fleet: one plan's hung broker does not stop another plan of the same
# serve. Plan "hung" has a broker that accepts connections and never
# answers (three nodes listed, all of them a listener of this test, so its
# declare_ladder waits the AMQP login's timeout on each, about 30 s, before
# it fails); plan "free", submitted once serve is inside that wait, declares
# and verifies a small ladder on the test broker. serve's workers turn each
# plan apart: "free" succeeds while "hung"'s step is still running. With one
# engine loop (--workers 1, as serve was before) "free" is not even picked
# up until "hung"'s step gives up (and is run again later, its broker
# silent). Checks behaviour, not speed: the bound is
# the hung step's own duration, recorded in the history.
#
# Usage: test_fleet.sh BUILD_DIR. Needs the broker of scripts/test;
# CUTOVER_TEST_SERVE_ARGS adds flags to serve (--workers 1 shows the
# failure this test is for).
set -u
bin=${CUTOVER_BINARY:-$1/cutover}
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require test_fleet CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER \
    CUTOVER_TEST_PASSWORD
command -v python3 >/dev/null || { echo "test_fleet: python3 is missing" >&2; exit 1; }

e2e_setup "fleet$(e2e_run_id | tr -d -)" "" 4250
hang_pid=
cleanup() {
	[ -n "$hang_pid" ] && kill "$hang_pid" 2>/dev/null && wait "$hang_pid" 2>/dev/null
	e2e_cleanup_run
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# The hung broker: three listeners that accept, note each connection in
# $tmp/accepted and hold it without a byte of answer.
p1=$(e2e_free_port 11) && p2=$(e2e_free_port 23) && p3=$(e2e_free_port 37) || exit 1
python3 -c '
import socket, sys, threading
held = []
def listen(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    return s
def accept(s, log):
    while True:
        c, _ = s.accept()
        held.append(c)
        with open(log, "a") as f:
            f.write("accepted\n")
socks = [listen(int(p)) for p in sys.argv[2:]]
open(sys.argv[1] + ".ready", "w").close()
ts = [threading.Thread(target=accept, args=(s, sys.argv[1]), daemon=True) for s in socks]
for t in ts:
    t.start()
for t in ts:
    t.join()
' "$tmp/accepted" "$p1" "$p2" "$p3" &
hang_pid=$!
e2e_within 10 test -f "$tmp/accepted.ready" || { echo "test_fleet: the hung broker did not start" >&2; exit 1; }

vh=${CUTOVER_TEST_AMQP##*/}
cat >"$tmp/hung.yaml" <<PLAN
name: $name-hung
broker:
  amqp: [amqp://127.0.0.1:$p1/$vh, amqp://127.0.0.1:$p2/$vh, amqp://127.0.0.1:$p3/$vh]
  management: http://127.0.0.1:$p1
  username: $CUTOVER_TEST_USER
  password: env:CUTOVER_TEST_PASSWORD
old:
  queues: { names: [$name-hung.old] }
ladder:
  prefix: $name-hung
  unit: 100ms
  levels: 4
  queue_type: classic
  destinations: [$name-hung.dest]
steps: [declare_ladder]
PLAN
# The plan that must not wait for it (e2e_cleanup_run tears down
# $tmp/plan.yaml's ladder and removes what is named $name).
cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
old:
  queues: { names: [$name.old] }
ladder:
  prefix: $name
  unit: 100ms
  levels: 4
  queue_type: classic
  destinations: [$name.dest]
  create_destinations: true
steps: [declare_ladder, verify_ladder]
PLAN

e2e_operator
# shellcheck disable=SC2086 # the extra flags, word by word
e2e_serve_start test_fleet "$tmp/cutover.db" ${CUTOVER_TEST_SERVE_ARGS:-}

# submit FILE: submits a plan, prints its id.
submit() {
	curl -sS -X POST -H "Authorization: Bearer $token" --data-binary @"$1" \
	    "$server/api/plans" | jq -r .id
}
# status ID: the plan's status and its first step's, "PLAN STEP".
status() {
	curl -fsS "$server/api/plans/$1" | jq -r '"\(.status) \(.steps[0].status)"'
}

hung=$(submit "$tmp/hung.yaml")
# serve is inside the hung plan's step: its broker has a connection.
e2e_within 30 test -s "$tmp/accepted" ||
    { fail "the hung plan never connected to its broker"; exit 1; }
id=$(submit "$tmp/plan.yaml")
case $id in '' | null) fail "the second plan was refused"; exit 1 ;; esac

# The free plan ends (either way) within the hung step's 30 s, or later
# when it waits for it; then, in the same look, the hung plan's step must
# still be running.
t=0
while :; do
	free=$(status "$id")
	held=$(status "$hung")
	case $free in succeeded* | failed*) break ;; esac
	t=$((t + 1))
	[ $t -gt 600 ] && { fail "plan $id did not end within 120 s: $free"; break; }
	sleep 0.2
done
echo "test_fleet: plan $id: $free; the hung plan $hung then: $held"
[ "${free%% *}" = succeeded ] || fail "plan $id did not succeed: $free ($(e2e_api GET "/api/plans/$id" | jq -c '[.steps[] | {kind, status, error}]'))"
[ "$held" = "running running" ] ||
    fail "plan $id ended only once the hung plan's step had ended ($held): one plan's broker held up the other"

# The hung plan's step gives up in its own time: a broker that does not
# answer is run again later (step.broker_retry), not failed, and the step
# started once.
e2e_within 90 sh -c "[ \"\$(curl -fsS '$server/api/plans/$hung/history' | jq '[.events[] |
    select(.kind == \"step.broker_retry\")] | length')\" -ge 1 ]" ||
    fail "the hung plan's step was not run again once its broker's timeouts were over"
[ "$(status "$hung")" = "running running" ] || fail "the hung plan is $(status "$hung"), not still running"
n=$(curl -fsS "$server/api/plans/$hung/history" | jq '[.events[] | select(.kind == "step.started")] | length')
[ "$n" = 1 ] || fail "the hung plan's step started $n times, not once"

[ $failures -eq 0 ] || { cat "$tmp/serve.log" >&2; exit 1; }
echo "test_fleet: ok"
