#!/bin/sh
# test_load: the API under load from a second process while a plan runs.
# wrk hammers GET /api/plans/{id} on loopback while the engine declares,
# verifies and canaries a ladder: no error responses, and the engine's
# progress is not held up (the plan finishes as fast as without load,
# within a bound).
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
port=$((20000 + ($$ + 4243) % 20000))
server=http://127.0.0.1:$port
serve_pid=
failures=0
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	for plan in "$tmp"/plan*.yaml; do
		[ -f "$plan" ] && "$bin" ladder teardown "$plan" >/dev/null 2>&1
	done
	for q in "$name"a.dest "$name"b.dest; do
		curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" \
		    -X DELETE "$CUTOVER_TEST_MGMT/api/queues/%2F/$q" >/dev/null 2>&1
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

write_plan() { # SUFFIX
	cat >"$tmp/plan$1.yaml" <<PLAN
name: $name$1
broker:
  amqp: $CUTOVER_TEST_AMQP
  management: $CUTOVER_TEST_MGMT
  username: $CUTOVER_TEST_USER
  password: env:CUTOVER_TEST_PASSWORD
old:
  queues: { names: [$name$1.old] }
ladder:
  prefix: $name$1
  unit: 100ms
  levels: 8
  destinations: [$name$1.dest]
  create_destinations: true
canary:
  delays: [100ms, 700ms, 1500ms]
steps: [declare_ladder, verify_ladder, canary]
PLAN
}

submit() { # SUFFIX: prints the id
	curl -sS -X POST -H "Authorization: Bearer $token" --data-binary @"$tmp/plan$1.yaml" \
	    "$server/api/plans" | jq -r .id
}

# Seconds (with ms) from the plan's submission to its end, from the API.
run_time() { # ID
	t=0
	until [ "$(curl -fsS "$server/api/plans/$1" | jq -r .status)" = succeeded ]; do
		t=$((t + 1))
		if [ $t -gt 600 ]; then
			fail "plan $1 did not succeed"
			curl -fsS "$server/api/plans/$1" | jq -c '.steps[] | {kind, status, error}' >&2
			echo 0
			return
		fi
		sleep 0.1
	done
	curl -fsS "$server/api/plans/$1/history" |
	    jq '(.events | map(.ts_ms) | max) - (.events | map(.ts_ms) | min)'
}

token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'tester:%s\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" >"$tmp/operators"
"$bin" serve --db "$tmp/cutover.db" --listen "127.0.0.1:$port" \
    --operators "$tmp/operators" 2>"$tmp/serve.log" &
serve_pid=$!
i=0
until curl -fsS "$server/healthz" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 100 ] && { echo "serve did not start" >&2; exit 1; }
	sleep 0.1
done

# Without load: the reference.
write_plan a
ida=$(submit a)
quiet=$(run_time "$ida")

# With load: wrk from a second process for the whole run.
write_plan b
idb=$(submit b)
wrk -t2 -c32 -d12s --latency "$server/api/plans/$idb" >"$tmp/wrk.txt" 2>&1 &
wrk_pid=$!
loaded=$(run_time "$idb")
wait "$wrk_pid"

requests=$(awk '/requests in/ {print $1}' "$tmp/wrk.txt")
errors=$(grep -E "Non-2xx|Socket errors" "$tmp/wrk.txt" || true)
[ -n "$requests" ] && [ "$requests" -gt 1000 ] || fail "wrk made only ${requests:-0} requests"
[ -z "$errors" ] || fail "errors under load: $errors"
# Not held up: at most 2 s (or 50 %) slower than without load.
bound=$((quiet + 2000 > quiet * 3 / 2 ? quiet + 2000 : quiet * 3 / 2))
[ "$loaded" -le "$bound" ] || fail "the plan took $loaded ms under load, $quiet ms without"
grep -E "Requests/sec|99%" "$tmp/wrk.txt"
echo "load: plan $quiet ms without load, $loaded ms under $requests requests; no errors"
[ $failures -eq 0 ]
