#!/bin/sh
# test_publish: `cutover publish` and `cutover canary` as a user runs them,
# where no broker is needed: usage errors exit 2; a delay past the horizon,
# a wildcard destination and a broker that is down exit 1 with a clear
# message, and the password never shows. Usage: test_publish.sh CUTOVER
set -u
bin=$1
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

# expect STATUS CMD...: as cli_lib's, and keeps all output in $tmp/all too.
expect() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	cat "$tmp/out" "$tmp/err" >>"$tmp/all"
	[ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(cat "$tmp/err")"
}

# Port 1 on loopback: nothing listens there, the connection is refused.
cat >"$tmp/plan.yaml" <<'EOF'
name: publish-cli
broker:
  amqp: amqp://127.0.0.1:1/%2f
  management: http://127.0.0.1:1
  username: guest
  password: env:CUTOVER_PUBLISH_TEST_PASSWORD
old:
  queues: { names: [old.one] }
ladder:
  naming: cutover
  prefix: delay
  unit: 100ms
  levels: 5
  queue_type: quorum
  destinations: [email.delivery]
steps: [declare_ladder, verify_ladder, canary]
EOF
export CUTOVER_PUBLISH_TEST_PASSWORD=s3cret-never-shown
plan=$tmp/plan.yaml

# Usage errors.
expect 2 "$bin" publish "$plan" --dest email.delivery
contains "$tmp/err" "--delay and --dest are required"
expect 2 "$bin" publish "$plan" --delay 1s
expect 2 "$bin" publish --delay 1s --dest email.delivery
expect 2 "$bin" publish "$plan" --delay 1s --dest email.delivery --body a --body-file "$plan"
expect 2 "$bin" publish "$plan" --delay 1s --dest email.delivery --header novalue
expect 2 "$bin" publish "$plan" --delay 1s --dest email.delivery --bogus
expect 0 "$bin" publish --help
contains "$tmp/out" "--delay"
expect 2 "$bin" canary
expect 2 "$bin" canary "$plan" "$plan"
expect 0 "$bin" canary --help

# Refused before connecting: past the horizon (5 x 100ms levels: 3.1s at
# most, and 3.01s rounds up to 31 units, fits; 3.11s does not), wildcards,
# a bad duration, a missing body file.
expect 1 "$bin" publish "$plan" --delay 3.2s --dest email.delivery
contains "$tmp/err" "beyond the ladder's maximum of 3100ms"
expect 1 "$bin" publish "$plan" --delay 3.11s --dest email.delivery
contains "$tmp/err" "rounds up to 32 units"
# The plan's own max_delay holds, below what its ladder reaches (2s of
# 100ms units is a 5-level ladder reaching 3.1s).
sed 's/^  levels: 5$/  max_delay: 2s/' "$plan" >"$tmp/max.yaml"
expect 1 "$bin" publish "$tmp/max.yaml" --delay 2.5s --dest email.delivery
contains "$tmp/err" "beyond max_delay 2s"
expect 1 "$bin" publish "$plan" --delay 1s --dest 'email.#'
contains "$tmp/err" "'#'"
expect 1 "$bin" publish "$plan" --delay 1s --dest 'email.*'
contains "$tmp/err" "'*'"
expect 1 "$bin" publish "$plan" --delay 5 --dest email.delivery
contains "$tmp/err" "--delay '5'"
expect 1 "$bin" publish "$plan" --delay 1s --dest email.delivery --body-file "$tmp/none"
contains "$tmp/err" "cannot open"

# A broker that is down: exit 1, the reason, and no password anywhere.
expect 1 "$bin" publish "$plan" --delay 3.01s --dest email.delivery
contains "$tmp/err" "connecting to the broker"
contains "$tmp/err" "refused"
expect 1 "$bin" publish "$plan" --delay 1s --dest email.delivery --json
contains "$tmp/out" '"confirmed":false'
contains "$tmp/out" '"status":"no connection"'
expect 1 "$bin" canary "$plan"
contains "$tmp/err" "refused"
if grep -qF s3cret-never-shown "$tmp/all"; then
	fail "the password appears in the output"
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "publish cli: all checks passed"
