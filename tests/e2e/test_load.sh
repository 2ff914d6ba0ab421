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
for v in CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || { echo "test_load: $v is not set (scripts/test sets it)" >&2; exit 1; }
done
for t in jq wrk; do
	command -v $t >/dev/null || { echo "test_load: $t is missing (scripts/setup)" >&2; exit 1; }
done

tmp=$(mktemp -d)
name=load$$
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
port=$(e2e_free_port 4243) || exit 1
server=http://127.0.0.1:$port
serve_pid=
failures=0
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	[ -n "$wrk_pid" ] && kill "$wrk_pid" 2>/dev/null && wait "$wrk_pid" 2>/dev/null
	load_cleanup_broker
	rm -rf "$tmp"
}
wrk_pid=
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# shellcheck source=load_plan.sh
. "$(dirname "$0")/load_plan.sh"

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'tester:%s\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" >"$tmp/operators"
"$bin" serve --db "$tmp/cutover.db" --listen "127.0.0.1:$port" \
    --operators "$tmp/operators" 2>"$tmp/serve.log" &
serve_pid=$!
i=0
until curl -fsS "$server/healthz" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 300 ] && { echo "serve did not start within 30 s" >&2; exit 1; }
	sleep 0.1
done

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
