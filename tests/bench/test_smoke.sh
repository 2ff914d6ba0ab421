#!/bin/sh
# test_smoke: every benchmark still runs. bench/run runs each bench/NAME
# at tiny sizes (10 old queues, 20 and 200 for bench/scale's old path, 20
# through a whole plan in serve for bench/serve_scale, a
# 3 s watch, 1 s wrk windows, a few hundred messages) against the test
# suite's node, in four vhosts of its own (removed afterwards, with whatever a bench left in them;
# bench/move_target moves between its vhost and one more it makes,
# bench/fleet runs 3 plans in 3 more), on the
# suite's build; each must exit 0 or 1 (1: a floor missed, which at these sizes
# says nothing) and print its BENCH lines, well formed, naming the size
# it ran at. It checks that the benches work, never how fast.
#
# Usage: test_smoke.sh BUILD_DIR. Needs the CUTOVER_TEST_* broker
# variables (scripts/test sets them). Exit 0, 1 on a failure, 77
# (skipped, in ctest) when everything ran but bench/api, whose nginx
# peer is not installed.
set -u

build=$(cd "${1:?usage: test_smoke.sh BUILD_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../e2e/lib.sh
. "$root/tests/e2e/lib.sh"
e2e_require bench.smoke CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER \
    CUTOVER_TEST_PASSWORD
t0=$(date +%s)
failures=0
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cutover-bench-smoke.XXXXXX")
vhost=cutover-bench-smoke-$$
groups="a b c d"
cleanup() {
	for _g in $groups; do
		e2e_mgmt DELETE "/vhosts/$vhost-$_g" >/dev/null 2>&1
		# bench/move_target's second vhost, when it could not remove it.
		e2e_mgmt DELETE "/vhosts/$vhost-$_g-target" >/dev/null 2>&1
		# bench/fleet's, one a plan, likewise.
		for _i in 1 2 3; do
			e2e_mgmt DELETE "/vhosts/$vhost-$_g-fleet-$_i" >/dev/null 2>&1
		done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM
for g in $groups; do
	e2e_mgmt PUT "/vhosts/$vhost-$g" >/dev/null &&
	    curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" -X PUT \
	    -H 'content-type: application/json' \
	    -d '{"configure":".*","write":".*","read":".*"}' \
	    "$CUTOVER_TEST_MGMT/api/permissions/$vhost-$g/$CUTOVER_TEST_USER" >/dev/null ||
	    { echo "test_smoke: cannot create vhost $vhost-$g" >&2; exit 1; }
done

# The suite's node (bench/lib.sh's bench_broker), its build.
_hp=${CUTOVER_TEST_AMQP#*://}
export CUTOVER_BENCH_MGMT="$CUTOVER_TEST_MGMT" CUTOVER_BENCH_USER="$CUTOVER_TEST_USER"
export CUTOVER_BENCH_PASSWORD="$CUTOVER_TEST_PASSWORD"
export CUTOVER_BENCH_BUILD="$build" CUTOVER_BENCH_PREBUILT=1
# watch_cost serves its flag on CUTOVER_BENCH_PORT - 1000.
flag_port=$(e2e_free_port 0) || exit 1
export CUTOVER_BENCH_PORT=$((flag_port + 1000))
# The tiny sizes, through each bench's own size variables.
export CUTOVER_BENCH_QUEUES=10 CUTOVER_BENCH_SAMPLE=3 CUTOVER_BENCH_ADMIN_SAMPLE=2 \
    CUTOVER_BENCH_ROUNDS=1 \
    CUTOVER_BENCH_WATCH_SECONDS=3 CUTOVER_BENCH_REF_SECONDS=1 CUTOVER_BENCH_INTERVAL_MS=1000 \
    CUTOVER_BENCH_MESSAGES=200 \
    CUTOVER_BENCH_SCALE_SIZES="1 2" CUTOVER_BENCH_SCALE_OLD_SIZES="20 200" \
    CUTOVER_BENCH_SCALE_TICKS=1 \
    CUTOVER_BENCH_DURATION=1s CUTOVER_BENCH_API_MARGIN=8 \
    CUTOVER_BENCH_WATCH_DAYS=0.05 CUTOVER_BENCH_OLD_QUEUES=10 \
    CUTOVER_BENCH_RATES=20 CUTOVER_BENCH_LATENESS_DURATION=1s \
    CUTOVER_BENCH_LATENESS_DELAYS="300ms 600ms" \
    CUTOVER_BENCH_FLEET_PLANS=3 CUTOVER_BENCH_FLEET_INTERVAL=1s CUTOVER_BENCH_FLEET_TICKS=2 \
    CUTOVER_BENCH_FLEET_DELAY_MS=1000 \
    CUTOVER_BENCH_SERVE_QUEUES=20 CUTOVER_BENCH_SERVE_HORIZON_MS=3000 \
    CUTOVER_BENCH_SERVE_INTERVAL=1s

# Every bench bench/run knows; bench/api only with its nginx peer.
names=$(sed -n 's/^all="\(.*\)"$/\1/p' "$root/bench/run")
[ -n "$names" ] || { echo "test_smoke: no bench list in bench/run" >&2; exit 1; }
skipped=
if ! command -v nginx >/dev/null 2>&1; then
	skipped=api
	echo "test_smoke: bench/api not run: nginx is not installed (nginx-light)" >&2
fi
# Each bench in bench/ is one bench/run knows.
for f in "$root"/bench/*; do
	n=${f##*/}
	case $n in *.* | run | README*) continue ;; esac
	[ -x "$f" ] || continue
	case " $names " in
	*" $n "*) ;;
	*) fail "bench/$n is not in bench/run's list, so bench.smoke does not run it" ;;
	esac
done

# Each bench program of the build is one a bench script runs.
for f in "$build"/bench_*; do
	[ -x "$f" ] || continue
	grep -qs "bench_build.*${f##*/}" "$root"/bench/* ||
	    fail "${f##*/} is built but no bench/ script runs it"
done

# Four bench/runs side by side, each in its own vhost: much of a
# bench's time is waiting (its windows, its canary's delays), so this
# cuts the test's time to about a third; the figures, which are not
# checked, are what pays. Each group mixes waiting and CPU.
# group G NAMES...: bench/run NAMES in vhost G, logs in $tmp/G.
group() {
	_g=$1
	shift
	CUTOVER_BENCH_AMQP="amqp://${_hp%%/*}/$vhost-$_g" CUTOVER_BENCH_LOGS=$tmp/$_g \
	    "$root/bench/run" "$@" >"$tmp/$_g.out" 2>"$tmp/$_g.err"
	echo $? >"$tmp/$_g.status"
}
ga='' gb='' gc='' gd=''
for n in $names; do
	[ "$n" != "$skipped" ] || continue
	case $n in
	old_path | move_old | serve_scale) ga="$ga $n" ;;
	api | scale | fleet) gb="$gb $n" ;;
	watch_cost | watch_db) gd="$gd $n" ;;
	*) gc="$gc $n" ;;
	esac
done
# shellcheck disable=SC2086 # the names, one word each
group a $ga &
# shellcheck disable=SC2086
group b $gb &
# shellcheck disable=SC2086
group c $gc &
# shellcheck disable=SC2086
group d $gd
wait
for g in $groups; do
	cat "$tmp/$g.err" "$tmp/$g.out"
	st=$(cat "$tmp/$g.status")
	[ "$st" -le 1 ] || fail "bench/run (vhost $vhost-$g) exited $st"
	grep -q '^| measure | cutover | peer | ratio | floor | ok |$' "$tmp/$g.out" ||
	    fail "bench/run (vhost $vhost-$g) printed no table"
done

# bench NAME MIN PATTERN: bench/NAME exited 0 or 1 and printed at least
# MIN BENCH lines, each of 7 fields with a verdict and at least one
# matching PATTERN (grep -E: the size it ran at).
bench() {
	_log=$(ls "$tmp"/[abcd]/"$1".log 2>/dev/null)
	[ -f "$_log" ] || { fail "bench/$1 did not run"; return; }
	_st=$(sed -n "s|^run: bench/$1: exit \([0-9]*\),.*|\1|p" "$tmp"/[abcd].err)
	[ "$_st" = 0 ] || [ "$_st" = 1 ] ||
	    { fail "bench/$1 exited ${_st:-?}:"; tail -n 20 "$_log" >&2; }
	grep '^BENCH	' "$_log" >"$tmp/$1.bench"
	_n=$(wc -l <"$tmp/$1.bench")
	[ "$_n" -ge "$2" ] || fail "bench/$1 printed $_n BENCH lines, not at least $2"
	awk -F '\t' 'NF != 7 || $2 == "" || $3 == "" || $7 !~ /^(ok|MISSED|-)$/' \
	    "$tmp/$1.bench" >"$tmp/$1.bad"
	[ ! -s "$tmp/$1.bad" ] || fail "bench/$1: malformed BENCH lines: $(cat "$tmp/$1.bad")"
	grep -qE "$3" "$tmp/$1.bench" ||
	    fail "bench/$1: no BENCH line matches '$3' (the size it ran at)"
}

tab=$(printf '\t')
bench old_path 3 'measure 10 old queues'
bench watch_cost 1 'watch broker CPU per tick, 10 old queues'
bench move_old 1 "move_old messages/s${tab}[1-9][0-9]* msg/s"
bench move_target 1 'move_old to another node, 200 messages'
bench scale 3 '2 destinations'
bench scale 8 '200 old queues'
bench watch_db 2 '10 old queues'
bench lateness 2 'ladder lateness, 20 msg/s'
bench load 1 'under API load'
bench fleet 3 '3 plans at 1s'
bench serve_scale 1 'whole plan, 20 old queues'
[ -n "$skipped" ] || bench api 2 '64 clients'

echo "bench.smoke: $(($(date +%s) - t0)) s"
[ $failures -eq 0 ] || { echo "test_smoke: $failures failure(s)" >&2; exit 1; }
[ -z "$skipped" ] || exit 77
exit 0
