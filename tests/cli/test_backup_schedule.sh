#!/bin/sh
# test_backup_schedule: serve.yaml's backup section on a real serve, a real
# SQLite file and plans submitted through the API. A copy is made at once
# and then every interval (the 10 s floor: no test-only shortcut), named
# NAME-YYYYMMDDTHHMMSSZ.db after the database; each one verifies
# (`cutover history --verify`) and holds the plans submitted before it;
# `keep` is honoured oldest first, after a new copy checked, and nothing
# but the copies' own names is ever removed; /metrics shows the age
# dropping after a copy. The backup directory removed (what works as root
# too, where a mode would not stop a write) is a failure counted and
# logged, serve goes on answering and taking plans, and the copies come
# back when the directory does. serve restarted within the interval makes
# no copy at once; its shutdown is prompt; without a backup section
# /metrics has no backup family.
# Usage: test_backup_schedule.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
dir=$tmp/backups
mkdir "$dir"
# What is not one of this database's copies stays: another file, another
# database's copy, a partial file; an old copy of its own goes first.
touch "$dir/notes.txt" "$dir/other-20200101T000000Z.db" \
    "$dir/live-20200101T000000Z.db.partial" "$dir/live-20200101T000000Z.db"
cat >"$tmp/serve.yaml" <<YAML
backup:
  directory: $dir
  interval: 10s
  keep: 2
YAML
expect 0 "$bin" serve --check-config --config "$tmp/serve.yaml" --db "$tmp/live.db"
contains "$tmp/out" "backup     $dir every 10 s, keeping 2"
cli_serve_operator 61 "$tmp/serve.yaml"
copies() { # this database's copies, oldest first
	find "$dir" -maxdepth 1 -name 'live-20[0-9]*Z.db' ! -name 'live-2020*' |
	    sed 's|.*/||' | sort
}
ncopies() { [ "$(copies | wc -l)" -ge "$1" ]; }
metric() { # NAME: its value in /metrics
	curl -fsS "$server/metrics" | sed -n "s/^$1 //p"
}
below() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a < b) }'; }
verify() { # COPY: whole, and holding at least N plans
	expect 0 "$bin" history --verify --db "$dir/$1"
	n=$(sqlite3 "$dir/$1" 'SELECT count(*) FROM plans')
	[ "$n" -ge "$2" ] || fail "$1 holds $n plans, expected at least $2"
}

# The first copy at once (the only copy of its own there is years old).
e2e_within 5 ncopies 1 || fail "no copy within 5 s of the start: $(ls "$dir")"
first=$(copies | head -n 1)
verify "$first" 0
age=$(metric cutover_backup_age_seconds)
below "$age" 5 || fail "cutover_backup_age_seconds is $age just after a copy"
[ "$(metric cutover_backup_failures_total)" = 0 ] || fail "a failure counted"
[ "$(metric cutover_backup_interval_seconds)" = 10 ] || fail "the interval is not 10 s"
below 0 "$(metric cutover_backup_size_bytes)" || fail "no size of the last copy"
below 1000000000 "$(metric cutover_backup_last_success_timestamp_seconds)" ||
    fail "no time of the last copy"
cli_submit 1
cli_submit 2
cli_submit 3

# The second an interval later: the age grew until it, and drops after it.
sleep 7
old_age=$(metric cutover_backup_age_seconds)
below 6 "$old_age" || fail "cutover_backup_age_seconds is $old_age 7 s after a copy"
e2e_within 8 ncopies 2 || fail "no second copy an interval after the first: $(ls "$dir")"
second=$(copies | tail -n 1)
# The copy is in the directory a moment before serve has checked it and
# counts it: the age drops then.
age_below() { new_age=$(metric cutover_backup_age_seconds); below "$new_age" "$1"; }
e2e_within 10 age_below 3 ||
    fail "cutover_backup_age_seconds did not drop after a copy: $old_age, then $new_age"
verify "$second" 3
[ ! -e "$dir/live-20200101T000000Z.db" ] || fail "the oldest copy is still there beyond keep 2"
cli_submit 4

# The third: keep 2 removes the first, and nothing else.
ncopies_after() { [ "$(copies | tail -n 1)" != "$1" ]; }
e2e_within 13 ncopies_after "$second" || fail "no third copy: $(ls "$dir")"
# The older ones go after the new copy has checked.
kept_two() { [ "$(copies | head -n 1)" = "$second" ] && [ "$(copies | wc -l)" -eq 2 ]; }
e2e_within 10 kept_two ||
    fail "keep 2: expected $second and one newer, found $(copies | tr '\n' ' ')"
third=$(copies | tail -n 1)
verify "$third" 4
for f in notes.txt other-20200101T000000Z.db live-20200101T000000Z.db.partial; do
	[ -e "$dir/$f" ] || fail "$f, not a copy of this database, was removed"
done
grep -q "backup: removed 1 older copy beyond keep 2" "$tmp/serve.log" ||
    fail "no log line of the copy removed"

# The directory gone: a failure counted and logged, serve goes on.
rm -rf "$dir"
failed() { [ "$(metric cutover_backup_failures_total)" = 1 ]; }
e2e_within 13 failed || fail "no failure counted with the directory gone"
grep -q 'level=error msg="backup failed: .*the next is tried in 10 s' "$tmp/serve.log" ||
    fail "no log line of the failed backup: $(tail -n 5 "$tmp/serve.log")"
curl -fsS -o /dev/null "$server/healthz" || fail "serve stopped answering"
kill -0 "$serve_pid" 2>/dev/null || fail "serve is gone"
cli_submit 5
fail_age=$(metric cutover_backup_age_seconds)
below 9 "$fail_age" || fail "the age ($fail_age) dropped after a failed backup"

# Back: the next interval makes a copy again.
mkdir "$dir"
e2e_within 13 ncopies 1 || fail "no copy after the directory came back"
back=$(copies | tail -n 1)
verify "$back" 5
[ "$(metric cutover_backup_failures_total)" = 1 ] || fail "the recovery counted as a failure"
e2e_within 10 age_below 3 || fail "the age did not drop after the recovery: $new_age"

# A restart within the interval makes no copy at once; the stop is prompt.
# The interval is an hour from here, so that a slow machine's restart is
# within it too.
t0=$(date +%s%N)
cli_serve_stop
t1=$(date +%s%N)
[ $(((t1 - t0) / 1000000)) -lt 3000 ] || fail "serve took $(((t1 - t0) / 1000000)) ms to stop"
before=$(copies)
sed 's/interval: 10s/interval: 1h/' "$tmp/serve.yaml" >"$tmp/serve-1h.yaml"
cli_serve_start "$tmp/live.db" "$tmp/operators" "$port" "$tmp/serve-1h.yaml"
sleep 3
[ "$(copies)" = "$before" ] || fail "a restart within the interval made a copy: $(copies | tr '\n' ' ')"
below 2 "$(metric cutover_backup_age_seconds)" || fail "the age does not count from serve's start"
cli_serve_stop

# `cutover run --config` backs up as serve does, while it runs a plan: here
# one whose broker accepts the connection and never answers, so that run
# waits on it until it is stopped.
python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$tmp/hole.port" &
hole_pid=$!
e2e_within 5 test -s "$tmp/hole.port" || fail "no listener for run's broker"
sed "s|127.0.0.1:5679|127.0.0.1:$(cat "$tmp/hole.port")|" "$src/plans/examples/demo.yaml" \
    >"$tmp/run.yaml"
mkdir "$tmp/runcopies"
sed "s|$dir|$tmp/runcopies|" "$tmp/serve.yaml" >"$tmp/run-serve.yaml"
DEMO_RABBIT_PASSWORD=x "$bin" run --db "$tmp/run.db" --config "$tmp/run-serve.yaml" \
    "$tmp/run.yaml" 2>"$tmp/run.log" &
run_pid=$!
run_copy() { find "$tmp/runcopies" -name 'run-20*Z.db' | grep -q .; }
e2e_within 10 run_copy || fail "run --config made no copy: $(cat "$tmp/run.log")"
kill "$run_pid" 2>/dev/null
wait "$run_pid"
kill "$hole_pid" 2>/dev/null
wait "$hole_pid" 2>/dev/null
expect 0 "$bin" history --verify --db "$(find "$tmp/runcopies" -name 'run-20*Z.db' | head -n 1)"
grep -q "backup: .*run-20.*checked" "$tmp/run.log" || fail "run's log says no copy: $(cat "$tmp/run.log")"

# No backup section: no backup family.
cli_serve_start "$tmp/live.db" "$tmp/operators" "$port"
curl -fsS "$server/metrics" >"$tmp/metrics"
grep -q '^cutover_backup_' "$tmp/metrics" && fail "/metrics has backup series without a backup section"
cli_serve_stop

[ "$failures" -eq 0 ] || { echo "test_backup_schedule: $failures failures" >&2; exit 1; }
echo "test_backup_schedule: ok"
