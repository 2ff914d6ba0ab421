#!/bin/sh
# test_load: the API under load from a second process while a plan runs.
# wrk hammers GET /api/plans/{id} on loopback while the engine declares,
# verifies and canaries a ladder: no error responses, and the engine is not
# held up: the plan completes (succeeds) while the load lasts or after it.
# How much slower it is under load is a figure, not a check: bench/load
# compares it with a quiet run measured in the same run.
#
# Usage: test_load.sh BUILD_DIR. Needs the broker of scripts/test.
set -u
bin=$1/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require test_load CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD
command -v wrk >/dev/null || { echo "test_load: wrk is missing (scripts/setup)" >&2; exit 1; }

e2e_setup "load$$" "" 4243
wrk_pid=
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	[ -n "$wrk_pid" ] && kill "$wrk_pid" 2>/dev/null && wait "$wrk_pid" 2>/dev/null
	load_cleanup_broker
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
# shellcheck source=load_plan.sh
. "$(dirname "$0")/load_plan.sh"

e2e_operator
e2e_serve_start test_load

# Under load: wrk from a second process for the whole run.
load_write_plan b
idb=$(load_submit b)
wrk -t2 -c32 -d12s --latency "$server/api/plans/$idb" >"$tmp/wrk.txt" 2>&1 &
wrk_pid=$!
loaded=$(load_run_time "$idb") || fail "plan $idb did not succeed under load"
wait "$wrk_pid"
wrk_pid=

requests=$(awk '/requests in/ {print $1}' "$tmp/wrk.txt")
[ -n "$requests" ] && [ "$requests" -gt 1000 ] || fail "wrk made only ${requests:-0} requests"
if grep -qE "Non-2xx|Socket errors" "$tmp/wrk.txt"; then
	fail "errors under load: $(grep -E "Non-2xx|Socket errors" "$tmp/wrk.txt")"
fi
grep -E "Requests/sec|99%" "$tmp/wrk.txt"
echo "load: plan done in $loaded ms under $requests requests; no errors"
[ $failures -eq 0 ]
