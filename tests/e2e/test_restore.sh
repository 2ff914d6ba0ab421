#!/bin/sh
# test_restore: a migration resumed on another machine from serve's last
# scheduled backup, under live traffic. `cutover serve` runs a plan with
# backups every 10 s (serve.yaml's floor); it is killed with SIGKILL and
# its database deleted (with -wal and -shm) in the middle of a step, the
# newest checked backup is restored with `cutover restore` into a new
# directory, and a new serve on a new port finishes the plan there
# (approvals through the API, as an operator would). The flag is a real
# Unleash feature, written through flag_counter.py, which counts every
# write: Unleash itself logs nothing for a switch that changes nothing.
#
# TRIAL `watch`: killed mid-watch, after a backup taken mid-watch: the
# restored watch records watch.restored, keeps the deadline the backup
# held (never earlier) and ends by itself; remove_old takes a fresh
# baseline. TRIAL `move_old`: the flip approved just after a backup at its
# gate, killed once move_old has moved some: the backup knows of neither
# the flip nor the move, the gate is approved again on the new machine,
# and the flip reads the flag on instead of writing it again; move_old
# then moves what is left.
#
# It passes only if the plan succeeds on the new machine, lost 0 and
# early 0 (cutover-traffic), the flag was written exactly once (the
# flip's), no old queue is left, `history --verify` passes on the restored
# database and on the history downloaded from the new serve (its export,
# checked offline), and that history has one state.restored naming the
# backup's last event. It prints the backups' size and time, how long the
# restore and the new serve took to resume, and lost, early and
# duplicates.
#
# Usage: test_restore.sh BUILD_DIR watch|move_old. Needs the broker and
# Unleash of scripts/test (CUTOVER_TEST_AMQP, CUTOVER_TEST_MGMT,
# CUTOVER_TEST_USER, CUTOVER_TEST_PASSWORD, CUTOVER_TEST_UNLEASH_URL,
# _TOKEN, _CLIENT_TOKEN) and python3.
set -u
build=$1
trial=${2:-}
bin=$build/cutover
here=$(dirname "$0")
# shellcheck source=lib.sh
. "$here/lib.sh"
e2e_require test_restore
case $trial in
watch | move_old) ;;
*) echo "usage: test_restore.sh BUILD_DIR watch|move_old" >&2; exit 2 ;;
esac
e2e_setup "rs$$" "cutover-restore-$(e2e_run_id)" 11
who="restore.$trial"
counter_pid=
# The lost machine's directory, the backups shipped off it, the new one.
old_dir=$tmp/machine1
shipped=$tmp/shipped
new_dir=$tmp/machine2
mkdir -p "$old_dir/backups" "$shipped" "$new_dir/backups"

# Whatever happened: the counter, then what every e2e run stops.
cleanup() {
	[ -n "$counter_pid" ] && kill "$counter_pid" 2>/dev/null && wait "$counter_pid" 2>/dev/null
	e2e_cleanup_run
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

# ms: the wall clock in milliseconds.
ms() {
	date +%s%3N
}

# The flag service, its writes counted: one JSON line each in
# $tmp/flag-writes.log.
counter_port=$(e2e_free_port 14)
python3 "$here/flag_counter.py" "$counter_port" "$CUTOVER_TEST_UNLEASH_URL" \
    "$tmp/flag-writes.log" 2>"$tmp/counter.log" &
counter_pid=$!
e2e_within 10 test -f "$tmp/flag-writes.log.ready" ||
    { echo "$who: flag_counter.py did not start" >&2; cat "$tmp/counter.log" >&2; exit 1; }
: >"$tmp/flag-writes.log"
e2e_feature_new "$who"
e2e_operator

# The plan's flag is the test Unleash's feature, reached through the
# counter (the producer reads it there too; reads are not counted).
plan_body() (
	CUTOVER_TEST_UNLEASH_URL=http://127.0.0.1:$counter_port
	e2e_plan_body "$name" "$feature" max_lateness=10s "$@"
)
if [ "$trial" = watch ]; then
	# allowance 20s: a watch of about 30 s, long enough for a backup
	# taken in it and a kill after that; max_lateness 10s as test_e2e's.
	plan_body=$(plan_body allowance=20s)
else
	plan_body=$(plan_body move_old)
fi
cat >"$tmp/plan.yaml" <<PLAN
name: $name
$(e2e_broker_yaml)
$plan_body
PLAN
if [ "$trial" = watch ]; then
	# 100 messages a second, delays 1-10 s in 500 ms steps (19 old queues).
	e2e_traffic_start "$tmp/plan.yaml" --rate 100 --min-delay 1s --max-delay 10s \
	    --delay-step 500ms
	e2e_old_ready "$who" 19 messages
	n_remove=7
else
	# 100 messages a second, delays 5-30 s in 5 s steps (6 old queues,
	# about 1,700 messages waiting in them), every one stamped with the
	# AMQP timestamp: move_old moves them all, with what is left of their
	# delay.
	e2e_traffic_start "$tmp/plan.yaml" --rate 100 --min-delay 5s --max-delay 30s \
	    --delay-step 5s --stamp-timestamp 100
	e2e_old_ready "$who" 6 messages
	n_remove=8
fi
n_flip=5

# serve_yaml DIR: a serve.yaml backing up into DIR/backups every 10 s.
serve_yaml() {
	cat >"$1/serve.yaml" <<YAML
backup:
  directory: $1/backups
  interval: 10s
  keep: 5
YAML
}

# backups DIR: how many checked copies serve logged into DIR/backups.
backups() {
	grep -c "msg=\"backup: $1/backups/[^ ]* checked" "$tmp/serve.log"
}

# more_backups DIR N: whether serve logged more than N checked copies
# into DIR/backups.
more_backups() {
	[ "$(backups "$1")" -gt "$2" ]
}

# backup_wait DIR N: waits up to 25 s until serve logged more than N
# checked copies into DIR/backups; exits 1 when it did not.
backup_wait() {
	e2e_within 25 more_backups "$1" "$2" || {
		fail "no checked backup in $1/backups within 25 s"
		e2e_show_plan
		exit 1
	}
}

# moving_or_late: whether move_old (step 6) runs and has moved a
# message, or 7 s have passed since $backup_seen_ms.
moving_or_late() {
	[ "$(e2e_moving 6)" -ge 1 ] 2>/dev/null || [ $(($(ms) - backup_seen_ms)) -ge 7000 ]
}

# backup_figures: serve's /metrics, its backups' figures among them, into
# $tmp/metrics1.txt.
backup_figures() {
	curl -fsS "$server/metrics" >"$tmp/metrics1.txt"
}

# The lost machine: serve with its backups.
serve_yaml "$old_dir"
e2e_serve_start "$who" "$old_dir/cutover.db" --config "$old_dir/serve.yaml"
e2e_submit "$who"
e2e_step "$n_flip" waiting_approval 120
# The new machine's port, one that neither this serve nor the counter has.
new_port=$(e2e_free_port 17)

if [ "$trial" = watch ]; then
	e2e_api POST "/api/plans/$id/steps/$n_flip/approve" >/dev/null
	e2e_step 6 running 60
	# A backup begun once the watch runs (a copy takes well under a
	# second), then the kill a moment later: what the lost engine did in
	# between (its ticks, probes, samples) is lost.
	sleep 1
	seen=$(backups "$old_dir")
	backup_wait "$old_dir" "$seen"
	backup_figures
	sleep 2
else
	# The flip approved just after a backup at its gate; the kill once
	# move_old has moved some, or 7 s after that backup at the latest:
	# before the next one, due 10 s after it began.
	seen=$(backups "$old_dir")
	backup_wait "$old_dir" "$seen"
	backup_seen_ms=$(ms)
	backup_figures
	e2e_api POST "/api/plans/$id/steps/$n_flip/approve" >/dev/null
	e2e_within 10 moving_or_late
	moved_before=$(e2e_moving 6)
fi
at_kill=$(e2e_plan_json | jq -c '[.steps[] | "\(.kind):\(.status)"]')

# The machine is lost: serve killed, its database gone. The backups were
# shipped off it; the new machine restores the newest checked one.
kill -9 "$serve_pid"
wait "$serve_pid" 2>/dev/null
serve_pid=
killed_ms=$(ms)
writes_before=$(wc -l <"$tmp/flag-writes.log")
newest=$(grep "msg=\"backup: $old_dir/backups/[^ ]* checked" "$tmp/serve.log" | tail -n 1 |
    sed 's/.*msg="backup: \([^ ]*\) checked.*/\1/')
[ -f "$newest" ] || { fail "the newest checked backup '$newest' is not there"; exit 1; }
cp "$newest" "$shipped/"
backup=$shipped/${newest##*/}
rm -f "$old_dir/cutover.db" "$old_dir/cutover.db-wal" "$old_dir/cutover.db-shm"
rm -rf "$old_dir"

serve_yaml "$new_dir"
t0=$(ms)
"$bin" restore --db "$new_dir/cutover.db" --json "$backup" >"$tmp/restore.json" \
    2>"$tmp/restore.log" || { fail "cutover restore failed: $(cat "$tmp/restore.log")"; exit 1; }
restore_ms=$(($(ms) - t0))
backup_last=$(jq .last_event.id "$tmp/restore.json")
# What the backup held: the watch running (its deadline), or the flip at
# its gate (the move_old trial).
"$bin" status --db "$new_dir/cutover.db" "$name" --json >"$tmp/restored-status.json"
held=$(jq -c '[.steps[] | "\(.kind):\(.status)"]' "$tmp/restored-status.json")
held_flip=$(jq -r ".steps[$n_flip - 1].status" "$tmp/restored-status.json")
if [ "$trial" = watch ]; then
	[ "$(jq -r '.steps[5].status' "$tmp/restored-status.json")" = running ] ||
	    fail "the newest backup does not hold the watch running: $held"
	backup_deadline=$(jq '.steps[5].result.deadline_ms // 0' "$tmp/restored-status.json")
else
	[ "$held_flip" = waiting_approval ] ||
	    fail "the newest backup does not hold the flip at its gate: $held"
fi

server=http://127.0.0.1:$new_port
t0=$(ms)
e2e_serve_start "$who" "$new_dir/cutover.db" --config "$new_dir/serve.yaml"
healthz_ms=$(($(ms) - t0))

# A backup that holds the flip at its gate: the operator on the new
# machine approves it again. The lost engine switched the flag; this one
# must read it on and not write it a second time.
if [ "$held_flip" = waiting_approval ]; then
	e2e_api POST "/api/plans/$id/steps/$n_flip/approve" >/dev/null
fi
e2e_step "$n_remove" waiting_approval 180
e2e_api POST "/api/plans/$id/steps/$n_remove/approve" >/dev/null
# The producer stops (one signal: it drains what it has in flight) while
# remove_old takes its fresh baseline.
kill -TERM "$traffic_pid"
e2e_plan_done 120
e2e_traffic_stop signalled
e2e_traffic_check both

# One flag write in all: the flip's, made on the lost machine (or on the
# new one, when the backup was taken after it... never both).
writes=$(wc -l <"$tmp/flag-writes.log")
on_writes=$(grep -c '"method": "POST".*/environments/production/on"' "$tmp/flag-writes.log")
[ "$writes" = 1 ] && [ "$on_writes" = 1 ] || {
	fail "the flag service got $writes write(s) ($on_writes switching on); expected 1"
	cat "$tmp/flag-writes.log" >&2
}
[ "$(e2e_feature_enabled "$feature")" = true ] || fail "feature $feature is not on after the plan"

# The restored history: it verifies, and names the gap.
db=$new_dir/cutover.db
"$bin" history --db "$db" --verify >"$tmp/verify.txt" 2>&1 ||
    { fail "history --verify failed on the restored database"; cat "$tmp/verify.txt" >&2; }
"$bin" history --db "$db" "$name" --json >"$tmp/history.json" || fail "history $name failed"
restored=$(jq -c '[.events[] | select(.kind == "state.restored")]' "$tmp/history.json")
[ "$(printf '%s' "$restored" | jq length)" = 1 ] || fail "the history has $(printf '%s' \
    "$restored" | jq length) state.restored events, expected 1"
gap_id=$(printf '%s' "$restored" | jq '.[0].details.backup_last_event.id')
[ "$gap_id" = "$backup_last" ] ||
    fail "state.restored names event $gap_id; the backup's last is $backup_last"
# The history as an operator downloads it from the new serve checks
# offline too.
curl -fsS "$server/api/plans/$id/export?format=json" >"$tmp/export.json" &&
    "$bin" history --verify "$tmp/export.json" >"$tmp/export-verify.txt" 2>&1 ||
    { fail "the new serve's export of the history does not verify"; cat "$tmp/export-verify.txt" >&2; }
count() {
	jq "[.events[] | select(.kind == \"$1\")] | length" "$tmp/history.json"
}
flip_requested=$(count flip.requested)
flip_confirmed=$(count flip.confirmed)
[ "$flip_confirmed" = 1 ] || fail "the history has $flip_confirmed flip.confirmed, expected 1"
[ "$flip_requested" -le 1 ] || fail "the history has $flip_requested flip.requested"
if [ "$trial" = watch ]; then
	[ "$(count watch.restored)" = 1 ] || fail "the history has $(count watch.restored)" \
	    "watch.restored events, expected 1"
	# The deadline the backup held is kept: the watch ended no earlier.
	watch_end=$(jq '.steps[5].ended_ms' "$tmp/plan.json")
	[ "$backup_deadline" -gt 0 ] || fail "the backup's watch state shows no deadline"
	[ "$watch_end" -ge "$backup_deadline" ] ||
	    fail "the watch ended at $watch_end, before the backup's deadline $backup_deadline"
else
	[ "$(count move_old.done)" -ge 1 ] || fail "the history has no move_old.done"
	moved=$(jq '.steps[5].result.counts.moved // 0' "$tmp/plan.json")
fi
old_left=$(e2e_old_count)
[ "$old_left" = 0 ] || fail "$old_left old queues are left"

metric() {
	awk -v m="$1" '$1 == m { print $2 }' "$tmp/metrics1.txt"
}
# The figures /metrics gave just after the backup restored from was made.
echo "$who: backups every 10 s: the one restored, $(metric cutover_backup_size_bytes) bytes," \
    "made and checked in" \
    "$(awk -v s="$(metric cutover_backup_duration_seconds)" 'BEGIN { printf "%d", s * 1000 }') ms" \
    "($(wc -c <"$backup") bytes shipped); $(backups "$new_dir") more on the new machine"
echo "$who: killed at $at_kill"
echo "$who: backup $(basename "$backup") held $held (its last event $backup_last)"
# What the new engine recorded first, after the restore.
first=$(jq -r --argjson t "$t0" '[.events[] | select(.ts_ms >= $t and .kind != "state.restored")][0] |
    "\(.kind) \(.ts_ms - $t)"' "$tmp/history.json")
echo "$who: restore took $restore_ms ms ($((t0 - killed_ms)) ms after the kill), the new serve" \
    "answered in $healthz_ms ms, its engine's first event: ${first% *} at ${first##* } ms"
[ "$trial" = move_old ] && echo "$who: moved before the kill ${moved_before:-0}, in all $moved (the restored step's count)"
echo "$who: flag writes $writes (before the kill $writes_before); flip requested" \
    "$flip_requested, confirmed $flip_confirmed"
echo "$who: confirmed $confirmed (old $old_sent, ladder $ladder_sent), delivered $delivered," \
    "lost $lost, early $early, duplicates $dups, lateness p99 $p99 ms max $lmax ms"
echo "$who: $(cat "$tmp/verify.txt")"
echo "$who: gap: $(printf '%s' "$restored" | jq -r '.[0].details.gap // .[0].details.what // empty')"
[ "$failures" -eq 0 ] || { echo "$who: $failures failure(s)" >&2; exit 1; }
echo "$who: passed"
