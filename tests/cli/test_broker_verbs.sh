#!/bin/sh
# test_broker_verbs: the verbs that work on the broker, run as a user runs
# them against the real RabbitMQ node (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT,
# CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD): `check --broker` (the version
# and flags), `ladder declare` (twice, the
# same), `ladder verify`, `old measure`, `old remove --last-entry T
# --dry-run` (deletes nothing) and without --dry-run (deletes the empty old
# queues past their deadline), `ladder teardown` refusing while the
# parking queue holds a message, then removing the ladder. Every object is named after
# this run (itestcli<pid>) and removed on every exit path.
# Usage: test_broker_verbs.sh CUTOVER
set -u
bin=$1
for v in CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || { echo "FAIL: set $v (scripts/test does)" >&2; exit 1; }
done
command -v jq >/dev/null || { echo "FAIL: jq is missing (scripts/setup)" >&2; exit 1; }
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
p=itestcli$$
auth="$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD"
api=$CUTOVER_TEST_MGMT/api

# mgmt METHOD PATH [BODY]: one management API call; prints the body.
mgmt() {
	if [ $# -gt 2 ]; then
		curl -s -u "$auth" -X "$1" -H 'content-type: application/json' -d "$3" "$api$2"
	else
		curl -s -u "$auth" -X "$1" "$api$2"
	fi
}

# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
# Removes every queue, exchange and fence policy of this run, whatever
# happened; a signal exits through it too.
cleanup() {
	e2e_broker_remove "$p"
	cli_cleanup
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# exists KIND NAME: 0 when the broker has it.
exists() {
	[ "$(curl -s -o /dev/null -w '%{http_code}' -u "$auth" "$api/$1/%2F/$2")" = 200 ]
}

cat >"$tmp/plan.yaml" <<EOF
name: $p
broker:
  amqp: $CUTOVER_TEST_AMQP
  management: $CUTOVER_TEST_MGMT
  username: $CUTOVER_TEST_USER
  password: env:CUTOVER_TEST_PASSWORD
old:
  queues: { match: '^$p\.old\.[0-9]+$' }
ladder:
  naming: cutover
  prefix: $p
  unit: 100ms
  levels: 5
  queue_type: quorum
  destinations: [$p.dest]
  create_destinations: true
watch: { allowance: 1s }
steps: [measure_horizon, declare_ladder, verify_ladder]
EOF
plan=$tmp/plan.yaml

# Two old delay queues of 1 s, each with a publish counter (one message in
# and out: remove leaves a queue whose counter it cannot read).
for i in 1 2; do
	mgmt PUT "/queues/%2F/$p.old.$i" '{"durable":true,"arguments":{"x-message-ttl":1000}}' >/dev/null
	mgmt POST /exchanges/%2F/amq.default/publish \
	    "{\"properties\":{},\"routing_key\":\"$p.old.$i\",\"payload\":\"x\",\"payload_encoding\":\"string\"}" >/dev/null
	mgmt POST "/queues/%2F/$p.old.$i/get" '{"count":1,"ackmode":"ack_requeue_false","encoding":"auto"}' >/dev/null
done
for i in 1 2; do
	tries=0
	until mgmt GET "/queues/%2F/$p.old.$i" | grep -q '"publish":1[,}]'; do
		tries=$((tries + 1))
		[ $tries -le 120 ] || { fail "the statistics never showed $p.old.$i's publish counter"; exit 1; }
		sleep 0.5
	done
done

# check --broker: the node's version and the flags a quorum plan needs
# (scripts/test says which version it started: CUTOVER_TEST_BROKER_VERSION).
expect 0 "$bin" check --broker "$plan"
contains "$tmp/out" "broker: RabbitMQ ${CUTOVER_TEST_BROKER_VERSION:-}"
contains "$tmp/out" "ok      at-least-once dead-lettering: feature flag stream_queue enabled"
# The broker's verdict right after the plan's, before the long dry run.
sed -n 2p "$tmp/out" | grep -q "^broker: RabbitMQ" ||
    fail "check --broker's second line is '$(sed -n 2p "$tmp/out")', not the broker's verdict"
# A plan without move_old is not asked about arrival stamps; one with it
# is, through a queue of cutover's own that is gone afterwards (3.10 has
# no stamp; a 4.0 node has none unless rabbitmq.conf sets the interceptor).
grep -qF "arrival stamps" "$tmp/out" && fail "check --broker asked about arrival stamps for a plan without move_old"
sed -e 's/^steps: .*/steps: [measure_horizon, declare_ladder, verify_ladder, canary, flip, move_old, watch]/' \
    -e 's/^watch: .*/watch: { allowance: 1s }\nflag: { kind: unleash, url: http:\/\/127.0.0.1:4242, project: default, environment: production, feature: f, token: env:T }\nmove_old: { entry: [ { queues: { match: x }, from: [arrival, timestamp] } ] }/' \
    "$plan" >"$tmp/move.yaml"
expect 0 "$bin" check --broker "$tmp/move.yaml"
contains "$tmp/out" "info    arrival stamps (timestamp_in_ms): off: the broker does not stamp arrivals"
expect 0 "$bin" check --broker --json "$tmp/move.yaml"
contains "$tmp/out" '"arrival_stamps": {'
contains "$tmp/out" '"state": "off"'
[ "$(mgmt GET '/queues/%2F?columns=name' | grep -c 'cutover.arrival')" -eq 0 ] ||
    fail "check --broker left its arrival probe's queue"

# ladder declare: the whole ladder; a second time changes nothing.
expect 0 "$bin" ladder declare "$plan"
for k in 00 01 02 03 04; do
	exists queues "$p.level.$k" || fail "ladder declare made no queue $p.level.$k"
	exists exchanges "$p.level.$k" || fail "ladder declare made no exchange $p.level.$k"
done
exists exchanges "$p.delivery" || fail "ladder declare made no $p.delivery"
exists queues "$p.parking" || fail "ladder declare made no $p.parking"
expect 0 "$bin" ladder declare --json "$plan"
expect 0 "$bin" ladder verify --json "$plan"
contains "$tmp/out" '"ok":true'

# old measure: both queues, each with its TTL, and the horizon.
expect 0 "$bin" old measure --json "$plan"
contains "$tmp/out" "\"$p.old.1\""
contains "$tmp/out" "\"$p.old.2\""
contains "$tmp/out" '"ttl_ms":1000'

# old remove --dry-run: would remove both, deletes neither.
last=$(date -u -d '10 minutes ago' +%Y-%m-%dT%H:%M:%SZ)
expect 0 "$bin" old remove --last-entry "$last" --dry-run --json "$plan"
contains "$tmp/out" '"would_remove"'
exists queues "$p.old.1" || fail "old remove --dry-run deleted $p.old.1"
exists queues "$p.old.2" || fail "old remove --dry-run deleted $p.old.2"
# A last entry just now: both before their deadline, both left (exit 1).
expect 1 "$bin" old remove --last-entry "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$plan"
exists queues "$p.old.1" || fail "old remove deleted $p.old.1 before its deadline"
# Past their deadlines: both deleted.
expect 0 "$bin" old remove --last-entry "$last" --json "$plan"
contains "$tmp/out" '"removed"'
exists queues "$p.old.1" && fail "old remove left $p.old.1"
exists queues "$p.old.2" && fail "old remove left $p.old.2"

# ladder teardown: refused while the parking queue holds a message,
# naming it.
mgmt POST "/exchanges/%2F/$p.parking/publish" \
    '{"properties":{},"routing_key":"x","payload":"parked","payload_encoding":"string"}' >/dev/null
tries=0
until mgmt GET "/queues/%2F/$p.parking" | grep -q '"messages":1[,}]'; do
	tries=$((tries + 1))
	[ $tries -le 120 ] || { fail "the message never showed in $p.parking"; break; }
	sleep 0.5
done
expect 1 "$bin" ladder teardown "$plan"
cat "$tmp/out" >>"$tmp/err"
contains "$tmp/err" "$p.parking"
exists queues "$p.parking" || fail "ladder teardown deleted $p.parking holding a message"
exists exchanges "$p.level.00" || fail "ladder teardown deleted part of the ladder before refusing"
mgmt DELETE "/queues/%2F/$p.parking/contents" >/dev/null
expect 0 "$bin" ladder teardown "$plan"
for k in 00 03 04; do
	exists queues "$p.level.$k" && fail "ladder teardown left queue $p.level.$k"
	exists exchanges "$p.level.$k" && fail "ladder teardown left exchange $p.level.$k"
done
exists queues "$p.parking" && fail "ladder teardown left $p.parking"
exists queues "$p.dest" || fail "ladder teardown deleted the destination $p.dest"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "test_broker_verbs: all passed"
