#!/bin/sh
# test_dashboards: dashboards/ against the real thing. `promtool check
# rules` on the alert rules and `promtool test rules` on their unit tests;
# then a real plan through `cutover serve` (with a backup section) against
# the test broker and Unleash, to its gated flip and on into the watch, whose /metrics must
# pass `promtool check metrics` at both points; every metric the Grafana
# dashboard (well-formed JSON) and the alert rules name must be a family
# that /metrics exports, and every series of the rules' unit tests must
# have its metric's label names as /metrics writes them. Every object is
# named after this run and removed on every exit path.
# Usage: test_dashboards.sh BUILD_DIR SOURCE_DIR
set -u
build=$1
src=$2
bin=$build/cutover
for v in CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD \
    CUTOVER_TEST_UNLEASH_URL CUTOVER_TEST_UNLEASH_TOKEN; do
	eval "val=\${$v:-}"
	[ -n "$val" ] || { echo "FAIL: set $v (scripts/test does)" >&2; exit 1; }
done
for c in promtool jq curl; do
	command -v $c >/dev/null || { echo "FAIL: $c is missing (scripts/setup)" >&2; exit 1; }
done

# shellcheck source=../e2e/lib.sh
. "$src/tests/e2e/lib.sh"
tmp=$(mktemp -d)
name=dash$$
feature=cutover-dash-$(e2e_run_id)
port=$(e2e_free_port 7) || exit 1
server=http://127.0.0.1:$port
serve_pid=
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	[ -f "$tmp/plan.yaml" ] && "$bin" ladder teardown "$tmp/plan.yaml" >/dev/null 2>&1
	e2e_broker_remove "$name"
	e2e_feature_delete "$feature"
	[ -n "${CUTOVER_TEST_KEEP:-}" ] && echo "kept $tmp" >&2 || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

rules=$src/dashboards/cutover-alerts.yml
grafana=$src/dashboards/grafana-cutover.json
unit=$src/tests/dashboards/cutover-alerts.test.yml

# ---- the rules and their unit tests, on their own ----
promtool check rules "$rules" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "promtool check rules"; }
promtool test rules "$unit" >"$tmp/out" 2>&1 || { cat "$tmp/out" >&2; fail "promtool test rules"; }
jq -e '.panels | length > 0' "$grafana" >/dev/null 2>&1 ||
    fail "$grafana is not a dashboard (well-formed JSON with panels)"

# ---- a real plan ----
{
	echo "name: $name"
	e2e_broker_yaml
	e2e_plan_body "$name" "$feature"
} >"$tmp/plan.yaml"
e2e_feature_create "$feature" || { echo "FAIL: cannot create feature $feature" >&2; exit 1; }
# one old queue with a 2 s TTL (the watch's horizon is seconds), and the
# destination its consumers would own
curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" -X PUT \
    -H 'content-type: application/json' -d '{"durable":true}' \
    "$CUTOVER_TEST_MGMT/api/queues/%2F/$name.email" >/dev/null ||
    { echo "FAIL: cannot declare the destination queue" >&2; exit 1; }
curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" -X PUT \
    -H 'content-type: application/json' -d '{"durable":true,"arguments":{"x-message-ttl":2000}}' \
    "$CUTOVER_TEST_MGMT/api/queues/%2F/$name.delay.2000ms" >/dev/null ||
    { echo "FAIL: cannot declare the old queue" >&2; exit 1; }
token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
printf 'tester:%s\n' "$(printf '%s' "$token" | sha256sum | cut -d' ' -f1)" >"$tmp/operators"
# A backup section, so that /metrics has the backup families the rules name.
mkdir "$tmp/backups"
printf 'backup:\n  directory: %s\n  interval: 10s\n' "$tmp/backups" >"$tmp/serve.yaml"
"$bin" serve --db "$tmp/c.db" --listen "127.0.0.1:$port" --operators "$tmp/operators" \
    --config "$tmp/serve.yaml" 2>"$tmp/serve.log" &
serve_pid=$!
e2e_within 30 curl -fs -o /dev/null "$server/healthz" || { echo "FAIL: serve did not start" >&2; exit 1; }
api() { # METHOD PATH [BODY-FILE]
	curl -sS -X "$1" -H "Authorization: Bearer $token" ${3:+--data-binary "@$3"} "$server$2"
}
id=$(api POST /api/plans "$tmp/plan.yaml" | jq -r .id)
[ -n "$id" ] && [ "$id" != null ] || { echo "FAIL: submit" >&2; cat "$tmp/serve.log" >&2; exit 1; }
step_is() { # N STATUS (or the plan is over: then stop waiting)
	api GET "/api/plans/$id" >"$tmp/plan.json"
	[ "$(jq -r .status "$tmp/plan.json")" = running ] || return 0
	[ "$(jq -r ".steps[$(($1 - 1))].status" "$tmp/plan.json")" = "$2" ]
}
step_was() { # N STATUS: as the last step_is read it
	[ "$(jq -r ".steps[$(($1 - 1))].status" "$tmp/plan.json")" = "$2" ]
}
plan_failed() {
	echo "the plan is $(jq -r .status "$tmp/plan.json"): $(jq -c '[.steps[] |
	    select(.error != null) | {kind, error}]' "$tmp/plan.json")" >&2
	exit 1
}
e2e_within 120 step_is 5 waiting_approval && step_was 5 waiting_approval ||
    { fail "the flip never waited for approval"; plan_failed; }
curl -fsS "$server/metrics" >"$tmp/m1" || fail "GET /metrics"
grep -q "^cutover_gate_waiting_seconds{plan=\"$name\",step=\"flip\"} " "$tmp/m1" ||
    fail "no cutover_gate_waiting_seconds for the waiting flip"
api POST "/api/plans/$id/steps/5/approve" >/dev/null
has_level() { curl -fsS "$server/metrics" >"$tmp/m2" && grep -q '^cutover_ladder_level_moving{' "$tmp/m2"; }
e2e_within 120 has_level || fail "the watch's per-level metrics never appeared"
api POST "/api/plans/$id/abort" >/dev/null
for m in m1 m2; do
	promtool check metrics <"$tmp/$m" >"$tmp/out" 2>&1 ||
	    { cat "$tmp/out" >&2; fail "promtool check metrics ($m)"; }
done

# ---- every metric named is one /metrics exports ----
sed -n 's/^# TYPE \([^ ]*\) \(.*\)$/\1 \2/p' "$tmp/m2" >"$tmp/families"
exported() { # NAME: a family, or a histogram's _bucket/_sum/_count
	grep -q "^$1 " "$tmp/families" && return 0
	for suf in _bucket _sum _count; do
		b=${1%"$suf"}
		[ "$b" != "$1" ] && grep -q "^$b histogram" "$tmp/families" && return 0
	done
	return 1
}
{
	jq -r '.panels[].targets[].expr, .templating.list[].definition' "$grafana"
	sed -n 's/^ *expr: *//p; /expr: >-/,/^ *[a-z]*:/p' "$rules"
} | grep -o 'cutover_[a-z0-9_]*' | sort -u >"$tmp/named"
[ -s "$tmp/named" ] || fail "no metric named in the dashboard or the rules"
while read -r m; do
	exported "$m" || fail "$m is named by dashboards/ but /metrics exports no such family"
done <"$tmp/named"

# ---- the unit tests' series are shaped like /metrics ----
labels() { # a series: its name and its label names, sorted
	printf '%s ' "${1%%\{*}"
	printf '%s' "$1" | sed -n 's/^[^{]*{\(.*\)}$/\1/p' | sed 's/="[^"]*"//g' |
	    tr ',' '\n' | sort | tr '\n' ' '
	echo
}
grep -v '^#' "$tmp/m2" "$tmp/m1" | cut -d: -f2- | sed 's/ [^ ]*$//' | while read -r s; do
	labels "$s"
done | sort -u >"$tmp/shapes"
# (a family this run wrote no sample of is checked by name only, and said so)
sed -n "s/^ *- series: '\(.*\)'$/\1/p" "$unit" | while read -r s; do
	sh=$(labels "$s")
	if grep -q "^${s%%\{*} " "$tmp/shapes"; then
		grep -qxF "$sh" "$tmp/shapes" || echo "$s"
	elif exported "${s%%\{*}"; then
		echo "test_dashboards: note: no sample of ${s%%\{*} in this run; its labels are not checked" >&2
	else
		echo "$s"
	fi
done >"$tmp/unshaped"
[ -s "$tmp/unshaped" ] && fail "series of $unit that /metrics does not write so: $(tr '\n' ' ' <"$tmp/unshaped")"

if [ "$failures" -ne 0 ]; then
	echo "test_dashboards: $failures failure(s)" >&2
	exit 1
fi
echo "test_dashboards: ok ($(wc -l <"$tmp/named") metrics named, $(grep -c "series:" "$unit") unit-test series, /metrics passes promtool)"
