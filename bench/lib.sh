# lib.sh: sourced by the bench/ scripts — building their programs, their
# throwaway broker, and the one line each figure bench/run tabulates:
#   BENCH<TAB>measure<TAB>cutover<TAB>peer<TAB>ratio<TAB>floor<TAB>ok|MISSED|-
# Needs $root (the repository) set by the script.
# shellcheck shell=sh

bench_build_dir=${CUTOVER_BENCH_BUILD:-$root/build-bench}

# bench_build TARGET...: builds the targets (Release, in $bench_build_dir);
# prints the build's log and exits 2 when that fails.
bench_build() {
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
# exits 2 when one cannot be.
bench_install() {
	for _pkg in "$@"; do
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

# bench_ratio A B: A / B with two decimals ("-" when B is 0 or missing).
bench_ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 == 0) print "-"; else printf "%.2f\n", a / b }'
}
