#!/bin/sh
# test_schema_upgrade: a database written by each earlier schema version
# cutover shipped (tests/fixtures/schema/vN: made by that version's own
# code, killed mid-watch; README.md there says how) is opened by this
# cutover, migrated, and its plan finishes by itself: `cutover run` with
# the same plan file exits 0, every step succeeded, `history --verify`
# passes across the migration, and the database's user_version is the one
# `--version --json` names. The fixtures run side by side, each in a vhost
# of its own on the test's node.
#
# What the plan had on the broker when it was killed is made again from
# the fixture's broker.json (the ladder, the old queues drained, the
# destination with the old path's messages, the probe queue with the
# probes that came out while nothing read them), and its Unleash feature
# is on. Nothing in the database is edited: as in an upgrade in place,
# the plan's broker and flag service stay at the address it names
# (127.0.83.1, schema_lib.sh), forwarded here to the test's node and
# Unleash, and its secrets come from the environment variables it names.
# Usage: test_schema_upgrade.sh BUILD_DIR
set -u
build=$1
bin=${CUTOVER_BINARY:-$build/cutover}
src=${CUTOVER_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
fixtures=$src/tests/fixtures/schema
# shellcheck source=lib.sh
. "$src/tests/e2e/lib.sh"
# shellcheck source=../fixtures/schema/schema_lib.sh
. "$fixtures/schema_lib.sh"
e2e_require test_schema_upgrade
command -v socat >/dev/null || { echo "test_schema_upgrade: socat is missing" >&2; exit 1; }
port=$(printf '%s' "$CUTOVER_TEST_AMQP" | sed -n 's|^amqp://[^/]*:\([0-9]*\)/.*|\1|p')
[ -n "$port" ] || { echo "test_schema_upgrade: no port in $CUTOVER_TEST_AMQP" >&2; exit 1; }

tmp=$(mktemp -d)
failures=0
versions=$(for d in "$fixtures"/v*/; do sed -n 's/^schema //p' "$d/made.txt"; done)
cleanup() {
	for n in $versions; do
		[ -f "$tmp/v$n.pid" ] && kill -9 "$(cat "$tmp/v$n.pid")" 2>/dev/null
		schema_broker_remove "$n"
		e2e_feature_delete "$(schema_feature "$n")"
	done
	schema_mgmt DELETE "/users/$schema_plan_user" >/dev/null 2>&1
	schema_forward_stop "$tmp"
	[ -n "${CUTOVER_TEST_KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
[ -n "$versions" ] || { echo "test_schema_upgrade: no fixture in $fixtures" >&2; exit 1; }
"$bin" --version --json >"$tmp/version" || exit 1
ours=$(jq -r .schema "$tmp/version")

schema_forward_start "$tmp" "$port" || exit 1
for n in $versions; do
	feature=$(schema_feature "$n")
	schema_broker_recreate "$n" "$fixtures/v$n/broker.json" ||
	    { fail "v$n: the broker could not be made as it was"; continue; }
	e2e_feature_delete "$feature"
	{ e2e_feature_create "$feature" && e2e_unleash POST \
	    "/api/admin/projects/default/features/$feature/environments/production/on" \
	    >/dev/null; } || { fail "v$n: feature $feature could not be turned on"; continue; }
	[ "$(sqlite3 "$fixtures/v$n/cutover.db" 'PRAGMA user_version')" = "$n" ] ||
	    fail "v$n: the fixture's user_version is not $n"
	cp "$fixtures/v$n/cutover.db" "$tmp/v$n.db"
	# The plan file it was run with: the YAML it stored, byte for byte
	# (read from a copy the current cutover never opens).
	cp "$fixtures/v$n/cutover.db" "$tmp/v$n.read.db"
	sqlite3 "$tmp/v$n.read.db" "SELECT writefile('$tmp/v$n.yaml', yaml) FROM plans
	    WHERE id = 1" >/dev/null || fail "v$n: cannot read its plan"
	# Bounded: a watch that cannot end would wait for a person forever.
	( CUTOVER_SCHEMA_PASSWORD=$schema_plan_password \
	    UNLEASH_TOKEN=$CUTOVER_TEST_UNLEASH_TOKEN \
	    exec timeout 120 "$bin" run --db "$tmp/v$n.db" "$tmp/v$n.yaml" \
	    >"$tmp/v$n.out" 2>"$tmp/v$n.log" ) &
	echo $! >"$tmp/v$n.pid"
done
# The test's node is the suite's, not the one the fixture ran on (another
# name; schema 3 on remember the nodes): the watch sees that node leave
# and this one join, and says so (broker_restart), as it must. That alert,
# naming the fixture's node, is acknowledged, as its operator would once
# understood; any other alert is a failure, and ends that run.
node=$(schema_mgmt GET /overview | jq -r .node)
alive=1
while [ $alive -eq 1 ]; do
	alive=0
	for n in $versions; do
		[ -f "$tmp/v$n.pid" ] && kill -0 "$(cat "$tmp/v$n.pid")" 2>/dev/null || continue
		alive=1
		made_on=$(sed -n 's/^node //p' "$fixtures/v$n/made.txt")
		sqlite3 -separator ' ' "$tmp/v$n.db" "SELECT id, kind FROM alerts WHERE
		    acked_ms IS NULL" 2>/dev/null | while read -r alert kind; do
			grep -qx "$alert" "$tmp/v$n.acked" 2>/dev/null && continue
			if [ "$kind" = broker_restart ] && [ "$made_on" != "$node" ] &&
			    sqlite3 "$tmp/v$n.db" "SELECT message FROM alerts WHERE id = $alert" |
			    grep -qF "broker node '$made_on' left the cluster"; then
				"$bin" ack --db "$tmp/v$n.db" --as schema-upgrade-test "schema-v$n" \
				    "$alert" --comment "the test's node, not $made_on" \
				    >/dev/null && echo "$alert" >>"$tmp/v$n.acked"
			else
				echo "$kind" >>"$tmp/v$n.alerts"
				kill "$(cat "$tmp/v$n.pid")"
			fi
		done
	done
	sleep 0.5
done
for n in $versions; do
	[ -f "$tmp/v$n.pid" ] || continue
	[ ! -s "$tmp/v$n.alerts" ] || fail "v$n: alerts raised: $(sort -u "$tmp/v$n.alerts")"
	rc=0
	wait "$(cat "$tmp/v$n.pid")" || rc=$?
	rm -f "$tmp/v$n.pid"
	[ $rc -eq 0 ] || { fail "v$n: cutover run exited $rc: $(tail -n 15 "$tmp/v$n.log")"; continue; }
	[ "$(sqlite3 "$tmp/v$n.db" 'PRAGMA user_version')" = "$ours" ] ||
	    fail "v$n: user_version is $(sqlite3 "$tmp/v$n.db" 'PRAGMA user_version'), not $ours"
	[ "$(sqlite3 "$tmp/v$n.db" "SELECT status FROM plans WHERE id = 1")" = succeeded ] ||
	    fail "v$n: the plan is not succeeded"
	[ "$(sqlite3 "$tmp/v$n.db" "SELECT count(*) FROM steps WHERE plan_id = 1 AND
	    status <> 'succeeded'")" = 0 ] || fail "v$n: a step did not succeed"
	"$bin" history --db "$tmp/v$n.db" --verify >"$tmp/v$n.verify" 2>&1 ||
	    fail "v$n: history --verify: $(cat "$tmp/v$n.verify")"
	# remove_old took the old path away; the destination kept every
	# message the old path delivered into it.
	queues=$(schema_mgmt GET "/queues/$(schema_vhost "$n")?columns=name,messages")
	[ "$(printf '%s' "$queues" | jq --arg p "schema-v$n.old." \
	    '[.[] | select(.name | startswith($p))] | length')" = 0 ] ||
	    fail "v$n: old queues are left: $queues"
	[ "$(printf '%s' "$queues" | jq --arg d "schema-v$n.dest" \
	    '.[] | select(.name == $d) | .messages')" = "$(jq --arg d "schema-v$n.dest" \
	    '[.messages[] | select(.queue == $d) | .messages[]] | length' \
	    "$fixtures/v$n/broker.json")" ] || fail "v$n: the destination lost messages: $queues"
	echo "test_schema_upgrade: schema $n: $(grep -c . "$tmp/v$n.log") log lines, plan succeeded"
done

[ "$failures" -eq 0 ] || { echo "test_schema_upgrade: $failures failure(s)" >&2; exit 1; }
echo "test_schema_upgrade: ok ($(echo "$versions" | wc -w) fixtures)"
