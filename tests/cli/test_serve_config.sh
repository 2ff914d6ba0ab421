#!/bin/sh
# test_serve_config: `cutover serve --config FILE` and `--check-config` as
# an operator runs them. Every malformed configuration under
# tests/serve/bad is refused (exit 1) with the FILE:LINE:COL error its first
# line announces; the shipped example (packaging/serve.yaml) passes; flags
# override the file; a notifier's env:NAME must be set, and neither its
# value nor a literal URL is ever printed; serve started with only --config
# listens where the file says and uses its database. Usage:
# test_serve_config.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	cli_cleanup
}
trap cleanup EXIT

lacks() { # FILE TEXT
	! grep -qF -- "$2" "$1" || fail "$1 holds '$2'"
}

# Every malformed configuration, one error each, where its first line says.
expect_each_refused "$src/tests/serve/bad" 25 "$bin" serve --check-config --config
expect 1 "$bin" serve --check-config --config "$src/tests/serve/bad/19-notifier-url-credentials.yaml"
lacks "$tmp/err" "hunter2"
expect 1 "$bin" serve --check-config --config "$tmp/absent.yaml"
contains "$tmp/err" "$tmp/absent.yaml: cannot open the configuration"

# The example the package installs as /etc/cutover/serve.yaml.
expect 0 "$bin" serve --check-config --config "$src/packaging/serve.yaml"
contains "$tmp/out" "listen     127.0.0.1:8080"
contains "$tmp/out" "db         /var/lib/cutover/cutover.db"
contains "$tmp/out" "workers    32"

# Flags override the file.
cat >"$tmp/serve.yaml" <<YAML
listen: 127.0.0.1:18709
db: $tmp/from-file.db
log_level: warn
workers: 4
notifiers:
  - { name: ops-slack, kind: slack, url: env:TEST_SC_SLACK, events: [step_failed] }
  - { name: hook, kind: webhook, url: 'http://127.0.0.1:18708/hook?token=sekrit',
      events: [plan_finished, gate_waiting], attempts: 2 }
YAML
expect 1 env -u TEST_SC_SLACK "$bin" serve --check-config --config "$tmp/serve.yaml"
contains "$tmp/err" "$tmp/serve.yaml:6:5: notifier ops-slack: env:TEST_SC_SLACK is not set"
TEST_SC_SLACK='https://hooks.slack.com/services/T0/B0/sekrit'
export TEST_SC_SLACK
expect 0 "$bin" serve --check-config --config "$tmp/serve.yaml"
contains "$tmp/out" "listen     127.0.0.1:18709"
contains "$tmp/out" "db         $tmp/from-file.db"
contains "$tmp/out" "log_level  warn"
contains "$tmp/out" "workers    4"
contains "$tmp/out" "ops-slack (slack, 5 attempts): step_failed"
contains "$tmp/out" "hook (webhook, 2 attempts): gate_waiting plan_finished"
lacks "$tmp/out" "sekrit"
expect 0 "$bin" serve --check-config --config "$tmp/serve.yaml" --listen 127.0.0.1:18708 \
    --db "$tmp/from-flag.db" --log-level debug --workers 7
contains "$tmp/out" "listen     127.0.0.1:18708"
contains "$tmp/out" "workers    7"
contains "$tmp/out" "db         $tmp/from-flag.db"
contains "$tmp/out" "log_level  debug"
# What the flags and the file say together is checked as serve would.
expect 1 "$bin" serve --check-config --config "$tmp/serve.yaml" --listen 0.0.0.0:18708
contains "$tmp/err" "needs --operators (or operators: in --config FILE)"
expect 1 "$bin" serve --check-config --config "$tmp/serve.yaml" --log-level loud
contains "$tmp/err" "log level 'loud' is unknown"
expect 1 "$bin" serve --check-config --config "$tmp/serve.yaml" --operators "$tmp/no-operators"
contains "$tmp/err" "no-operators"
printf 'log_level: info\n' >"$tmp/nodb.yaml"
expect 1 "$bin" serve --check-config --config "$tmp/nodb.yaml"
contains "$tmp/err" "--db FILE (or db: in --config FILE) is required"
expect 2 "$bin" serve --check-config
contains "$tmp/err" "--check-config needs --config FILE"
expect 1 "$bin" serve --config "$src/tests/serve/bad/04-unknown-key.yaml"
contains "$tmp/err" "04-unknown-key.yaml:3:1: unknown key 'port'"

# serve with only --config: the file's address and database.
"$bin" serve --config "$tmp/serve.yaml" >"$tmp/serve.out" 2>"$tmp/serve.err" &
pid=$!
i=0
until curl -fsS http://127.0.0.1:18709/healthz >"$tmp/health" 2>/dev/null; do
	i=$((i + 1))
	if [ "$i" -gt 300 ] || ! kill -0 "$pid" 2>/dev/null; then
		fail "serve --config did not answer on 127.0.0.1:18709: $(cat "$tmp/serve.err")"
		break
	fi
	sleep 0.1
done
[ -f "$tmp/from-file.db" ] || fail "serve --config did not open the file's db"
kill "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "serve --config exited $rc on SIGTERM: $(cat "$tmp/serve.err")"
# log_level warn: the info lines (serving, notify, stopped) are not written.
lacks "$tmp/serve.err" "level=info"
lacks "$tmp/serve.err" "sekrit"

[ "$failures" -eq 0 ] && echo "test_serve_config: ok" && exit 0
echo "test_serve_config: $failures failures" >&2
exit 1
