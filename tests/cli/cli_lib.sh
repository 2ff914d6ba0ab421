# cli_lib: what the command-line test scripts share, sourced first (after
# set -u and their arguments): a scratch directory $tmp, removed at exit
# (the EXIT trap cli_cleanup, which a script with more to clean up replaces
# by one of its own that calls cli_cleanup), the failure count failures;
# fail, expect, contains, expect_each_refused (every malformed file of a
# folder refused where it says), and serve started and stopped for a test
# (cli_serve_start, cli_serve_operator, cli_submit, cli_serve_stop).
# shellcheck shell=sh
# $bin is the sourcing script's:
# shellcheck disable=SC2154

tmp=$(mktemp -d)
failures=0
serve_pid=
trap cli_cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# expect STATUS CMD...: runs CMD, keeps its stdout/stderr in $tmp/out, err.
expect() {
	want=$1
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want: $(cat "$tmp/err")"
}

contains() { # FILE TEXT
	grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 600 "$1")"
}

# expect_each_refused DIR MIN CMD...: runs CMD FILE for each FILE of
# DIR/*.yaml, which must exit 1 with the error its first line announces
# ("# expect: LINE:COLUMN: MESSAGE") on stderr, as FILE:LINE:COLUMN:
# ...MESSAGE...; DIR must hold MIN such files at least. Sets refused to
# how many it ran.
expect_each_refused() {
	_dir=$1
	_min=$2
	shift 2
	refused=0
	for _file in "$_dir"/*.yaml; do
		refused=$((refused + 1))
		expect 1 "$@" "$_file"
		_want=$(sed -n '1s/^# expect: //p' "$_file")
		_pos=${_want%%: *}
		_msg=${_want#*: }
		grep -F -- "$_file:$_pos: " "$tmp/err" | grep -qF -- "$_msg" ||
		    fail "$*: no '$_file:$_pos: ...$_msg...' in: $(cat "$tmp/err")"
	done
	[ "$refused" -ge "$_min" ] || fail "only $refused files under $_dir"
}

# cli_serve_start DB OPERATORS PORT [CONFIG]: `cutover serve` on DB with the
# operators file OPERATORS on 127.0.0.1:PORT (and the serve.yaml CONFIG),
# its log in $tmp/serve.log; waits for it (e2e_serve_wait: the caller sources
# tests/e2e/lib.sh). Sets serve_pid.
cli_serve_start() {
	_seen=$(e2e_serving_lines "$3")
	"$bin" serve --db "$1" --listen "127.0.0.1:$3" --operators "$2" ${4:+--config "$4"} \
	    2>>"$tmp/serve.log" &
	serve_pid=$!
	e2e_serve_wait "$(basename "$0")" "$3" "$_seen"
}

# cli_serve_operator BASE [CONFIG]: an operator (the token in $token) and
# `cutover serve` on $tmp/live.db on a free port (from BASE, e2e_free_port:
# the caller sources tests/e2e/lib.sh) in $port, its URL in $server.
cli_serve_operator() {
	expect 0 "$bin" operators add tester --file "$tmp/operators"
	token=$(cat "$tmp/out")
	port=$(e2e_free_port "$1") || { fail "no free port"; exit 1; }
	server=http://127.0.0.1:$port
	cli_serve_start "$tmp/live.db" "$tmp/operators" "$port" ${2:+"$2"}
}

# cli_submit N: the demo plan as demo-N through the API of cli_serve_operator.
cli_submit() {
	sed "s/^name: demo\$/name: demo-$1/" "$src/plans/examples/demo.yaml" >"$tmp/p$1.yaml"
	curl -fsS -o /dev/null -X POST -H "Authorization: Bearer $token" \
	    -H 'Content-Type: application/yaml' --data-binary "@$tmp/p$1.yaml" \
	    "$server/api/plans" || fail "submitting demo-$1"
}

# cli_serve_stop: stops the serve cli_serve_start started, and waits for it.
cli_serve_stop() {
	[ -z "${serve_pid:-}" ] || { kill "$serve_pid" 2>/dev/null; wait "$serve_pid" 2>/dev/null; }
	serve_pid=
}

# cli_cleanup: the EXIT trap: stops the serve a test started, if any, and
# removes $tmp.
cli_cleanup() {
	cli_serve_stop
	rm -rf "$tmp"
}
