#!/bin/sh
# test_broker_needs: a broker that cannot honour a plan is refused before
# anything is declared, naming the missing feature flag.
# Starts its own fresh RabbitMQ 3.10 node (scripts/broker, on a free port,
# data under a scratch directory) with feature flag stream_queue disabled —
# on such a node quorum queues silently dead-letter at-most-once — and
# checks that `check --broker` and `ladder declare` refuse a quorum plan
# naming stream_queue, that nothing was declared, that a classic plan
# passes with the version reported, and that a user who may not read the
# feature flags gets a quorum plan refused saying so. Stops only the node
# it started (the user goes with it).
# Usage: test_broker_needs.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
command -v jq >/dev/null || { echo "FAIL: jq is missing (scripts/setup)" >&2; exit 1; }
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
p=itestneeds$$
export CUTOVER_RUN_DIR="$tmp/run"
unset CUTOVER_BROKER_VERSION
# AMQP P, management P + 10000 and distribution P + 20000, all below the
# kernel's ephemeral range (32768 up): an outgoing connection's local port
# there once took the distribution port (dist_port_already_used).
port=$("$src/scripts/broker" free-port --port $((6000 + $$ % 2000))) || exit 1
started=0

cleanup() {
	[ $started -eq 1 ] && "$src/scripts/broker" stop --port "$port" >/dev/null 2>&1
	cli_cleanup
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# Every 3.10 flag but stream_queue (and the three it does not need).
started=1
"$src/scripts/broker" start --port "$port" --version 3.10 \
    --feature-flags quorum_queue,implicit_default_bindings,virtual_host_metadata,maintenance_mode_status,user_limits \
    >"$tmp/start.log" 2>&1 || { cat "$tmp/start.log" >&2; echo "FAIL: no node" >&2; exit 1; }
api=http://127.0.0.1:$((port + 10000))/api
state=$(curl -fsS -u guest:guest "$api/feature-flags" | jq -r '.[] | select(.name == "stream_queue") | .state')
[ "$state" = disabled ] || fail "stream_queue is '$state' on the fresh node, expected disabled"

plan() { # TYPE: a plan of TYPE level queues for the fresh node
	cat <<YAML
name: $p
broker:
  amqp: amqp://127.0.0.1:$port/%2f
  management: http://127.0.0.1:$((port + 10000))
  username: guest
  password: env:NEEDS_PASSWORD
old:
  queues: { match: '^$p\.old\.[0-9]+\$' }
ladder:
  naming: cutover
  prefix: $p
  unit: 100ms
  levels: 3
  queue_type: $1
  destinations: [$p.dest]
  create_destinations: true
steps: [measure_horizon, declare_ladder, verify_ladder]
YAML
}
export NEEDS_PASSWORD=guest
plan quorum >"$tmp/quorum.yaml"
plan classic >"$tmp/classic.yaml"

expect 1 "$bin" check --broker "$tmp/quorum.yaml"
contains "$tmp/err" "feature flag stream_queue is disabled"
contains "$tmp/err" "falls back to at-most-once"
contains "$tmp/out" "broker: RabbitMQ 3.10."
contains "$tmp/out" "MISSING at-least-once dead-lettering: feature flag stream_queue disabled"

expect 1 "$bin" check --json --broker "$tmp/quorum.yaml"
[ "$(jq -r '.valid' "$tmp/out")" = false ] || fail "check --json: valid is not false"
[ "$(jq -r '.plans[0].broker.needs[] | select(.flag == "stream_queue") | .state' "$tmp/out")" = disabled ] ||
    fail "check --json: no stream_queue disabled in $(cat "$tmp/out")"

expect 1 "$bin" ladder declare "$tmp/quorum.yaml"
contains "$tmp/err" "feature flag stream_queue is disabled"
contains "$tmp/err" "Nothing was declared"
n=$(curl -fsS -u guest:guest "$api/queues/%2F?columns=name" | jq --arg p "$p." '[.[] | select(.name | startswith($p))] | length')
[ "$n" = 0 ] || fail "ladder declare refused but $n queues of $p exist"

expect 1 "$bin" ladder verify "$tmp/quorum.yaml"
contains "$tmp/err" "feature flag stream_queue is disabled"

# Classic level queues need neither flag.
expect 0 "$bin" check --broker "$tmp/classic.yaml"
contains "$tmp/out" "broker: RabbitMQ 3.10."

# A user without the administrator tag: 3.10 hides the feature flags from
# it (HTTP 401), so a quorum plan cannot be confirmed; a classic one needs
# no flag and passes.
curl -fsS -u guest:guest -X PUT -H 'content-type: application/json' \
    -d '{"password":"guest","tags":"policymaker"}' "$api/users/$p" >/dev/null &&
curl -fsS -u guest:guest -X PUT -H 'content-type: application/json' \
    -d '{"configure":".*","write":".*","read":".*"}' "$api/permissions/%2F/$p" >/dev/null ||
    fail "creating user $p"
sed "s/username: guest/username: $p/" "$tmp/quorum.yaml" >"$tmp/quorum-pm.yaml"
sed "s/username: guest/username: $p/" "$tmp/classic.yaml" >"$tmp/classic-pm.yaml"
expect 1 "$bin" check --broker "$tmp/quorum-pm.yaml"
contains "$tmp/err" "GET /api/feature-flags?columns=name,state,stability: HTTP 401"
contains "$tmp/err" "only to users with the administrator tag"
expect 0 "$bin" check --broker "$tmp/classic-pm.yaml"
contains "$tmp/out" "broker: RabbitMQ 3.10."

if [ $failures -gt 0 ]; then
	echo "test_broker_needs: $failures failure(s)" >&2
	exit 1
fi
echo "test_broker_needs: ok"
