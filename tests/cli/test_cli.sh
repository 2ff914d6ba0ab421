#!/bin/sh
# test_cli: the `cutover` command as a user runs it, where no broker is
# needed — output and exit status of check and encode, and the usage
# errors of old (test_broker_verbs.sh runs the broker's verbs, the
# integration tests the engine's and the server's). Usage: test_cli.sh
# CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

# encode: README's example (and docs/producers.md's), byte for byte.
expect 0 "$bin" encode --unit 1s --levels 6 --json 42s email.delivery
[ "$(cat "$tmp/out")" = '{"units":42,"entry_exchange":"delay.level.05","routing_key":"1.0.1.0.1.0.email.delivery","waits":[32,8,2]}' ] ||
    fail "encode --json printed $(cat "$tmp/out")"
expect 0 "$bin" encode --unit 1s --levels 6 42s email.delivery
contains "$tmp/out" "1.0.1.0.1.0.email.delivery"
contains "$tmp/out" "delay.level.05"
# ceiling: 1.2s is 2 units; options after positionals work too.
expect 0 "$bin" encode 1.2s email.delivery --unit 1s --max-delay 1h --json
contains "$tmp/out" '"units":2,'
contains "$tmp/out" '"routing_key":"0.0.0.0.0.0.0.0.0.0.1.0.email.delivery"'
# zero goes straight to the delivery exchange.
expect 0 "$bin" encode --unit 1s --levels 6 --json 0s a.b
contains "$tmp/out" '"entry_exchange":"delay.delivery"'
contains "$tmp/out" '"waits":[]'
# naming styles.
expect 0 "$bin" encode --unit 1s --levels 28 --naming kombu --json 5s celery
contains "$tmp/out" '"entry_exchange":"celery_delayed_2"'
expect 0 "$bin" encode --unit 1s --levels 28 --naming nservicebus --json 5s Sales
contains "$tmp/out" '"entry_exchange":"nsb.v2.delay-level-02"'
# kombu's prefix: P_celery_delayed_K; a fixed naming
# needs neither --unit nor --levels, and refuses others than its own (2),
# as nservicebus refuses a prefix.
expect 0 "$bin" encode --naming kombu --prefix p --json 5s celery
contains "$tmp/out" '"entry_exchange":"p_celery_delayed_2"'
expect 0 "$bin" encode --naming kombu --prefix p 0s celery
contains "$tmp/out" 'entry exchange p_celery_delayed_delivery'
expect 0 "$bin" encode --naming nservicebus --json 5s Sales
contains "$tmp/out" '"entry_exchange":"nsb.v2.delay-level-02"'
expect 2 "$bin" encode --naming kombu --levels 20 5s celery
contains "$tmp/err" "--levels 20: kombu naming has 28 levels"
expect 2 "$bin" encode --naming kombu --unit 2s 5s celery
contains "$tmp/err" "--unit 2s: kombu naming has a unit of 1s"
expect 2 "$bin" encode --naming nservicebus --unit 1m --levels 28 5s Sales
contains "$tmp/err" "--unit 1m: nservicebus naming has a unit of 1s"
expect 2 "$bin" encode --naming nservicebus --prefix p 5s Sales
contains "$tmp/err" "nservicebus naming has fixed names"
# --max-delay is the most it encodes, as a plan's ladder.max_delay.
expect 1 "$bin" encode --naming kombu --max-delay 30d 31d celery
contains "$tmp/err" "delay 31d is beyond max_delay 30d"
expect 0 "$bin" encode --naming kombu --max-delay 30d 30d celery
# beyond the horizon is refused, never truncated.
expect 1 "$bin" encode --unit 1s --levels 6 64s email.delivery
contains "$tmp/err" "delay 64s is beyond the ladder's maximum of 63s"
expect 1 "$bin" encode --unit 1s --levels 6 5s 'bad.*.dest'
expect 1 "$bin" encode --unit 0s --levels 6 5s d
contains "$tmp/err" "the unit must be greater than zero"
# a unit that does not parse is named as such, every time (it was once
# judged by an unset value).
for _ in 1 2 3 4 5 6 7 8; do
	expect 1 "$bin" encode --unit 1000000d --levels 6 5s d
	contains "$tmp/err" '"1000000d" is too large'
done
expect 1 "$bin" encode --unit 1s --levels 6 -- -5s d
# usage errors.
expect 2 "$bin" encode --unit 1s 5s d
expect 2 "$bin" encode --unit 1s --levels 6 --max-delay 1h 5s d
expect 2 "$bin" encode --unit 1s --levels 6 5s
expect 2 "$bin" encode --bogus
expect 2 "$bin" frobnicate
expect 2 "$bin"
expect 0 "$bin" --help
contains "$tmp/out" "  check      validate plans"

# check: every example is valid and prints its dry run and review.
for plan in "$src"/plans/examples/*.yaml; do
	expect 0 "$bin" check "$plan"
	contains "$tmp/out" "is valid"
	contains "$tmp/out" "exchanges ("
	contains "$tmp/out" "bindings ("
	contains "$tmp/out" "design review"
	contains "$tmp/out" "12. Which bounded metrics prove every stage is moving?"
	contains "$tmp/out" "[application must answer]"
	expect 0 "$bin" check --json "$plan"
	contains "$tmp/out" '"valid": true'
	contains "$tmp/out" '"review": ['
done
expect 0 "$bin" check "$src"/plans/examples/*.yaml
expect 0 "$bin" check "$src/plans/examples/orders.yaml"
contains "$tmp/out" "delay.level.19"
contains "$tmp/out" "x-message-ttl=524288000"
contains "$tmp/out" "alternate-exchange=delay.parking"
contains "$tmp/out" "key '*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.email.delivery'"
contains "$tmp/out" "[gate: waits for approval]"
# kombu: Kombu's prefix, reject-publish on classic
# level queues, a destination whose key is not its queue's name.
sed -e 's/^  queue_type: quorum .*/  queue_type: classic\n  prefix: p/' \
    -e 's/^  destinations: .*/  destinations: [celery, { key: emails.send, queue: emails }]/' \
    "$src/plans/examples/celery.yaml" >"$tmp/kombu.yaml"
expect 0 "$bin" check "$tmp/kombu.yaml"
contains "$tmp/out" "naming      kombu (prefix p)"
contains "$tmp/out" "x-overflow=reject-publish x-message-ttl=134217728000 x-dead-letter-exchange=p_celery_delayed_26"
contains "$tmp/out" "p_celery_delayed_delivery -> queue emails  key '*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.emails.send'"
contains "$tmp/out" "Celery converts a countdown to whole seconds with int()"

# check: every malformed plan is refused with FILE:LINE:COLUMN and its message.
expect_each_refused "$src/tests/plans/bad" 30 "$bin" check
expect 1 "$bin" check --json "$src/tests/plans/bad/$(ls "$src/tests/plans/bad" | head -n 1)"
contains "$tmp/out" '"valid": false'
contains "$tmp/out" '"line":'
expect 1 "$bin" check "$tmp/does-not-exist.yaml"
contains "$tmp/err" "does-not-exist.yaml"
expect 2 "$bin" check

# old remove --last-entry: a time that puts every deadline decades in the
# past is refused before anything is contacted — an epoch in seconds read
# as milliseconds (January 1970), or any time before 2000.
expect 2 "$bin" old remove --last-entry 1796040000 --dry-run "$src/plans/examples/demo.yaml"
contains "$tmp/err" "an epoch in seconds?"
contains "$tmp/err" "1796040000000"
expect 2 "$bin" old remove --last-entry 1970-01-01T00:00:00Z "$src/plans/examples/demo.yaml"
contains "$tmp/err" "before 2000"
expect 2 "$bin" old remove --dry-run "$src/plans/examples/demo.yaml"
contains "$tmp/err" "or --last-entry TIME"
contains "$tmp/err" "needs either --db FILE"
# Both is one too many: the database says when the last entry was.
expect 2 "$bin" old remove --db "$tmp/none.db" --last-entry 1796040000000 \
    "$src/plans/examples/demo.yaml"
# A database that is not there, or holds no such plan, says so before
# any broker is contacted, and creates nothing.
expect 1 "$bin" old remove --db "$tmp/typo.db" --dry-run "$src/plans/examples/demo.yaml"
contains "$tmp/err" "typo.db does not exist"
[ ! -e "$tmp/typo.db" ] || fail "old remove --db created the database it was given"
# The verbs that read or change what a database holds refuse one that
# is not there, and leave nothing behind.
for v in "status" "history --verify" "history demo" "approve --as me demo flip" \
    "ack --as me demo 1" "archive --as me demo"; do
	# shellcheck disable=SC2086 # the verb and its arguments are words
	expect 1 "$bin" $v --db "$tmp/typo.db"
	contains "$tmp/err" "typo.db does not exist"
	[ ! -e "$tmp/typo.db" ] || { fail "$v --db created the database it was given"; rm -f "$tmp/typo.db"; }
done
sqlite3 "$tmp/empty.db" 'create table t(x)'
# Mistakes answered with what was meant: a verb, a plan, a step (its kind
# with '-' for '_' is taken as it is), a step with no gate.
expect 2 "$bin" stauts --db "$tmp/empty.db"
contains "$tmp/err" "unknown verb 'stauts'; did you mean 'status'?"
expect 0 "$bin" submit --db "$tmp/near.db" "$src/plans/examples/demo.yaml"
expect 1 "$bin" status --db "$tmp/near.db" dmeo
contains "$tmp/err" "no plan 'dmeo' in $tmp/near.db (did you mean 'demo'?)"
expect 1 "$bin" approve --db "$tmp/near.db" --as me demo remove_olf
contains "$tmp/err" "plan 'demo' has no step 'remove_olf' (did you mean 'remove_old'?); its steps: 1 measure_horizon,"
contains "$tmp/err" "7 remove_old"
expect 1 "$bin" approve --db "$tmp/near.db" --as me demo 9
contains "$tmp/err" "plan 'demo' has no step '9'; its steps:"
expect 1 "$bin" approve --db "$tmp/near.db" --as me demo measure_horizon
contains "$tmp/err" "has no gate"
expect 0 "$bin" approve --db "$tmp/near.db" --as me demo remove-old
contains "$tmp/out" "approve recorded"
expect 1 "$bin" ack --db "$tmp/near.db" --as me demo 0
contains "$tmp/err" "has no alert 0: alerts are numbered from 1"
expect 1 "$bin" ack --db "$tmp/near.db" --as me demo parking
contains "$tmp/err" "plan 'demo' has no open alert 'parking'; it has no open alert"
expect 1 "$bin" old remove --db "$tmp/empty.db" --dry-run "$src/plans/examples/demo.yaml"
contains "$tmp/err" "holds no plan 'demo'"
expect 2 "$bin" old measure --last-entry 1796040000000 "$src/plans/examples/demo.yaml"

if [ "$failures" -ne 0 ]; then
	echo "$failures failure(s)" >&2
	exit 1
fi
echo "cli: all checks passed ($refused malformed plans)"
