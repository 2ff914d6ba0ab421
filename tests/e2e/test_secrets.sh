#!/bin/sh
# test_secrets: secrets never reach SQLite, logs, the page or the API. A
# plan whose broker password and flag token are env: references runs
# through cutover serve (measure, declare, verify, canary, a gated flip
# with a bad token so the flag service is called and refuses, on a feature
# made for this run that stays off), then the
# database file, its WAL, the server's log and every API answer are
# searched for the secret values: none may be found.
#
# Usage: test_secrets.sh BUILD_DIR. Needs the broker and Unleash of
# scripts/test (CUTOVER_TEST_*).
set -u
bin=$1/cutover
# shellcheck source=lib.sh
. "$(dirname "$0")/lib.sh"
e2e_require test_secrets CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER \
    CUTOVER_TEST_PASSWORD CUTOVER_TEST_UNLEASH_URL CUTOVER_TEST_UNLEASH_TOKEN
user=secrets$$
e2e_setup "secrets$$" "cutover-secrets-$(e2e_run_id)" 7919
# Whatever happened: stop the server, remove the plan's objects (the ladder
# torn down with the plan's user, so the user goes last) and the feature.
# A signal exits through it too.
trap 'e2e_cleanup_run; e2e_mgmt DELETE "/users/$user" >/dev/null 2>&1' EXIT
trap 'exit 1' HUP INT TERM

# The secrets: the broker password is the broker's real one (guest on the
# test node, too short to search for), so the test broker gets a user of
# its own with a long random password for this run.
SECRET_BROKER=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
SECRET_FLAG="*:*.$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export SECRET_BROKER SECRET_FLAG
mgmt() { curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" "$@"; }
mgmt -X PUT -H 'content-type: application/json' "$CUTOVER_TEST_MGMT/api/users/$user" \
    -d "{\"password\":\"$SECRET_BROKER\",\"tags\":\"administrator\"}" >/dev/null ||
    { echo "test_secrets: cannot create the broker user" >&2; exit 1; }
mgmt -X PUT -H 'content-type: application/json' \
    "$CUTOVER_TEST_MGMT/api/permissions/%2F/$user" \
    -d '{"configure":".*","write":".*","read":".*"}' >/dev/null
e2e_feature_new test_secrets

cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml "$user" env:SECRET_BROKER)
old:
  queues: { names: [$name.old] }
ladder:
  prefix: $name
  unit: 100ms
  levels: 6
  destinations: [$name.dest]
  create_destinations: true
canary:
  delays: [100ms, 300ms]
$(e2e_flag_yaml "$feature" env:SECRET_FLAG)
$(e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary flip!)
PLAN
mgmt -X PUT -H 'content-type: application/json' "$CUTOVER_TEST_MGMT/api/queues/%2F/$name.old" \
    -d '{"durable":true,"arguments":{"x-message-ttl":1000}}' >/dev/null
e2e_operator

e2e_serve_start test_secrets
e2e_submit test_secrets
e2e_step 5 waiting_approval 60
e2e_api POST "/api/plans/$id/steps/5/approve" >/dev/null
# The flag service refuses the token: the flip fails after one attempt.
e2e_step 5 failed 60

e2e_plan_json >"$tmp/plan.json"
curl -fsS "$server/api/plans/$id/history" >"$tmp/history.json"
# Every answer the API gives about the plan.
for path in /api/plans "/api/plans/$id" "/api/plans/$id/history" \
    "/api/plans/$id/samples?since=0" /metrics /healthz /; do
	curl -sS "$server$path" >>"$tmp/answers.txt" 2>&1
done
kill "$serve_pid"; wait "$serve_pid"; serve_pid=

for what in SECRET_BROKER SECRET_FLAG; do
	eval "secret=\$$what"
	for f in "$tmp"/cutover.db* "$tmp/serve.log" "$tmp/answers.txt"; do
		[ -f "$f" ] || continue
		# shellcheck disable=SC2154 # secret: assigned by the eval above
		if grep -aqF -- "$secret" "$f"; then
			fail "$what found in $(basename "$f")"
		fi
	done
done
# The run did exercise both secrets: the broker accepted the password
# (measure, declare, verify and canary succeeded), and the flag service
# was called with the token and refused it: the flip's error is the
# answer of Unleash's URL, HTTP 401 or 403, which nothing but a call to it
# can give, and the history records the request and its failure.
[ "$(jq -r '[.steps[0:4][].status] | join(",")' "$tmp/plan.json")" = \
    succeeded,succeeded,succeeded,succeeded ] ||
    fail "the steps before the flip did not all succeed: the broker password was not used"
flip_error=$(jq -r '.steps[4].error // ""' "$tmp/plan.json")
case $flip_error in
*"$CUTOVER_TEST_UNLEASH_URL/api/admin/"*": HTTP 401 "* | *"$CUTOVER_TEST_UNLEASH_URL/api/admin/"*": HTTP 403 "*) ;;
*) fail "the flip's error is not Unleash refusing the token: $flip_error" ;;
esac
[ "$(jq '[.events[] | select(.kind == "flip.requested" or .kind == "flip.failed")] | length' \
    "$tmp/history.json")" -eq 2 ] || fail "the history does not record the flip's request and failure"
[ "$(e2e_feature_enabled "$feature")" = false ] || fail "the refused flip turned feature $feature on"
[ $failures -eq 0 ] || exit 1
echo "secrets: neither secret is in the database, the log or $(wc -c <"$tmp/answers.txt") bytes of API answers"
