# lib.sh: sourced by the bench/ scripts — building their programs, their
# throwaway broker, and the one line each figure bench/run tabulates:
#   BENCH<TAB>measure<TAB>cutover<TAB>peer<TAB>ratio<TAB>floor<TAB>ok|MISSED|-
# Needs $root (the repository) set by the script.
# shellcheck shell=sh

bench_build_dir=${CUTOVER_BENCH_BUILD:-$root/build-bench}

# bench_build TARGET...: builds the targets (Release, in $bench_build_dir);
# prints the build's log and exits 2 when that fails. With
# CUTOVER_BENCH_PREBUILT=1 it builds nothing and only checks they are
# there: bench.smoke runs the test suite's own build, which ctest must not
# rebuild under the tests running beside it.
bench_build() {
	if [ "${CUTOVER_BENCH_PREBUILT:-}" = 1 ]; then
		for _t in "$@"; do
			[ -x "$bench_build_dir/$_t" ] ||
			    { echo "bench: $bench_build_dir/$_t is not built" >&2; exit 2; }
		done
		return 0
	fi
	mkdir -p "$bench_build_dir"
	if ! { [ -f "$bench_build_dir/CMakeCache.txt" ] ||
	    cmake -S "$root" -B "$bench_build_dir" -DCMAKE_BUILD_TYPE=Release; } \
	    >"$bench_build_dir/bench-build.log" 2>&1 ||
	    ! cmake --build "$bench_build_dir" --target "$@" -j "$(nproc 2>/dev/null || echo 2)" \
	    >>"$bench_build_dir/bench-build.log" 2>&1; then
		cat "$bench_build_dir/bench-build.log" >&2
		echo "bench: building $* failed" >&2
		exit 2
	fi
}

# bench_install PACKAGE...: installs the Debian packages not installed yet;
# exits 2 when one cannot be. With CUTOVER_BENCH_PREBUILT=1 (bench.smoke,
# a test) it installs nothing: a missing one is an error naming it.
bench_install() {
	for _pkg in "$@"; do
		if [ "${CUTOVER_BENCH_PREBUILT:-}" = 1 ]; then
			dpkg-query -W -f='${Status}' "$_pkg" 2>/dev/null | grep -q "ok installed" ||
			    { echo "bench: $_pkg is not installed" >&2; exit 2; }
			continue
		fi
		dpkg-query -W -f='${Status}' "$_pkg" 2>/dev/null | grep -q "ok installed" ||
		    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		    "$_pkg" >/dev/null || { echo "bench: cannot install $_pkg" >&2; exit 2; }
	done
}

# bench_line MEASURE CUTOVER PEER RATIO FLOOR: prints the BENCH line, the
# verdict computed from RATIO and FLOOR ("<= X", ">= X" or "-"; a ratio
# that is not a number misses any floor), and returns 1 when the floor is
# missed (so `bench_line ... || rc=1`).
bench_line() {
	_ok=$(awk -v r="$4" -v f="$5" 'BEGIN {
		if (f == "-") { print "-"; exit }
		split(f, w, " ")
		if (r !~ /^[0-9.]+$/) { print "MISSED"; exit }
		if ((w[1] == "<=" && r + 0 <= w[2] + 0) || (w[1] == ">=" && r + 0 >= w[2] + 0))
			print "ok"
		else
			print "MISSED"
	}')
	printf 'BENCH\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$_ok"
	[ "$_ok" != MISSED ]
}

# bench_http_port N: the port for the bench's Nth HTTP server (serve 0,
# its peer 1): CUTOVER_BENCH_HTTP_PORT + N when that is set (a machine
# shared with other work hands each person their own ports), else a free
# one (e2e_free_port, tests/e2e/lib.sh, which the script sources).
bench_http_port() {
	if [ -n "${CUTOVER_BENCH_HTTP_PORT:-}" ]; then
		echo $((CUTOVER_BENCH_HTTP_PORT + $1))
	else
		e2e_free_port "$1"
	fi
}

# bench_ratio A B: A / B with two decimals ("-" when B is 0 or missing).
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'
}

# bench_broker PORT: the broker the bench runs against. With
# CUTOVER_BENCH_AMQP set (and _MGMT, _USER, _PASSWORD), that one, left
# running: bench.smoke runs every bench on the test suite's node, in a
# vhost of its own (the URL's path: "/" as %2f, or a name that needs no
# escaping); the node's name for rabbitmqctl is CUTOVER_BENCH_NODE, else
# scripts/broker's (cutover<amqp port>@localhost). Without it, a
# throwaway node of its own on PORT (scripts/broker; data in
# $CUTOVER_RUN_DIR when the script set it), which bench_broker_stop stops.
# Sets and exports the CUTOVER_BENCH_ broker variables, and sets
# bench_node, bench_vhost and bench_vhost_enc. Exits 2 when the node does
# not start.
bench_own_broker=
# bench_node and bench_vhost are for the scripts that source this:
# shellcheck disable=SC2034
bench_broker() {
	if [ -z "${CUTOVER_BENCH_AMQP:-}" ]; then
		bench_own_broker=$1
		"$root/scripts/broker" start --port "$1" || exit 2
		CUTOVER_BENCH_AMQP=amqp://127.0.0.1:$1/%2f
		CUTOVER_BENCH_MGMT=http://127.0.0.1:$(($1 + 10000))
		CUTOVER_BENCH_USER=guest
		CUTOVER_BENCH_PASSWORD=guest
	fi
	: "${CUTOVER_BENCH_MGMT:?is not set (with CUTOVER_BENCH_AMQP)}" \
	    "${CUTOVER_BENCH_USER:?is not set}" "${CUTOVER_BENCH_PASSWORD:?is not set}"
	export CUTOVER_BENCH_AMQP CUTOVER_BENCH_MGMT CUTOVER_BENCH_USER CUTOVER_BENCH_PASSWORD
	_hp=${CUTOVER_BENCH_AMQP#*://}
	bench_vhost_enc=${_hp#*/}
	[ "$bench_vhost_enc" != "$_hp" ] || bench_vhost_enc=%2F
	_hp=${_hp%%/*}
	bench_node=${CUTOVER_BENCH_NODE:-cutover${_hp##*:}@localhost}
	case $bench_vhost_enc in
	'' | %2f | %2F) bench_vhost=/ bench_vhost_enc=%2F ;;
	*[!A-Za-z0-9._~-]*)
		echo "bench: the vhost '$bench_vhost_enc' of CUTOVER_BENCH_AMQP needs" \
		    "unescaping; use one that does not" >&2
		exit 2
		;;
	*) bench_vhost=$bench_vhost_enc ;;
	esac
}

# bench_broker_stop: stops the node bench_broker started, if it did.
bench_broker_stop() {
	[ -z "$bench_own_broker" ] || "$root/scripts/broker" stop --port "$bench_own_broker"
}
