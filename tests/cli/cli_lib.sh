# cli_lib: what the command-line test scripts share, sourced after they set
# $tmp (a scratch directory) and failures=0: fail, expect, contains.
# shellcheck shell=sh
# $tmp is the sourcing script's (above):
# shellcheck disable=SC2154

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
