#!/bin/sh
# test_operators: `cutover operators` as an operator runs it. add prints a
# token once on stdout and writes only its sha256 (mode 0600), refuses a
# name twice or a bad name and leaves the file as it was; list names them;
# remove takes one line out and keeps the comments; a replaced file keeps
# its mode; a file serve would
# refuse is not changed; --config finds serve.yaml's file. Then a real
# `cutover serve` on that file lets the added operator act and refuses a
# removed one, and a refused token is told where tokens come from.
# Usage: test_operators.sh CUTOVER
set -u
bin=$1
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"

ops=$tmp/operators
# add: the token on stdout alone, its hash in the file, nothing else.
expect 0 "$bin" operators add alice --file "$ops"
alice=$(cat "$tmp/out")
[ "$(printf '%s' "$alice" | wc -c)" -eq 64 ] || fail "alice's token is '$alice'"
contains "$tmp/err" "shown this once"
contains "$tmp/err" "restart it"
[ "$(cat "$ops")" = "alice:$(printf '%s' "$alice" | sha256sum | cut -d' ' -f1)" ] ||
    fail "the file holds $(cat "$ops")"
grep -qF "$alice" "$ops" && fail "the token itself is in the file"
[ "$(stat -c %a "$ops")" = 600 ] || fail "the file's mode is $(stat -c %a "$ops")"
contains "$tmp/err" "readable by you alone"
# A comment kept; bob added after it; the mode the file was given kept.
printf '# the payments team\n' >>"$ops"
chmod 640 "$ops"
expect 0 "$bin" operators add bob --file "$ops"
bob=$(cat "$tmp/out")
[ "$alice" != "$bob" ] || fail "two operators got the same token"
cp "$ops" "$tmp/before"
expect 1 "$bin" operators add alice --file "$ops"
contains "$tmp/err" "'alice' is already an operator"
expect 1 "$bin" operators add 'al ice' --file "$ops"
contains "$tmp/err" "cannot be an operator's name"
cmp -s "$ops" "$tmp/before" || fail "a refused add changed the file"
[ "$(stat -c %a "$ops")" = 640 ] || fail "the file's mode became $(stat -c %a "$ops")"
expect 0 "$bin" operators list --file "$ops"
[ "$(cat "$tmp/out")" = "$(printf 'alice\nbob')" ] || fail "list printed $(cat "$tmp/out")"
# Usage errors.
expect 2 "$bin" operators
expect 2 "$bin" operators add --file "$ops"
expect 2 "$bin" operators list extra --file "$ops"
expect 2 "$bin" operators add x --file "$ops" --config "$tmp/serve.yaml"
# A file serve would refuse is not written over.
printf 'carol:not-a-hash\n' >"$tmp/broken"
expect 1 "$bin" operators add dave --file "$tmp/broken"
contains "$tmp/err" "$tmp/broken:1:"
[ "$(cat "$tmp/broken")" = "carol:not-a-hash" ] || fail "the broken file was changed"
# --config: the file serve.yaml names.
printf 'db: %s/x.db\noperators: %s\n' "$tmp" "$ops" >"$tmp/serve.yaml"
expect 0 "$bin" operators list --config "$tmp/serve.yaml"
contains "$tmp/out" "bob"

# serve on that file: alice may act (the plan is unknown: 404, not 401),
# a token nobody holds is refused, saying where tokens come from.
port=$(e2e_free_port 41) || { fail "no free port"; exit 1; }
abort_as() { # TOKEN: the HTTP status of an abort of plan 999
	curl -s -o "$tmp/answer" -w '%{http_code}' -X POST -H "Authorization: Bearer $1" \
	    "http://127.0.0.1:$port/api/plans/999/abort"
}
cli_serve_start "$tmp/cutover.db" "$ops" "$port"
[ "$(abort_as "$alice")" = 404 ] || fail "alice's token: $(cat "$tmp/answer")"
[ "$(abort_as "$bob")" = 404 ] || fail "bob's token: $(cat "$tmp/answer")"
[ "$(abort_as 0123abcd)" = 401 ] || fail "a stranger's token: $(cat "$tmp/answer")"
contains "$tmp/answer" "cutover operators add NAME"
cli_serve_stop
# remove: alice's line gone, the comment and bob's line as they were.
expect 0 "$bin" operators remove alice --file "$ops"
grep -q '^alice:' "$ops" && fail "alice is still in the file"
contains "$ops" "# the payments team"
contains "$ops" "bob:"
expect 1 "$bin" operators remove alice --file "$ops"
contains "$tmp/err" "no operator 'alice'"
cli_serve_start "$tmp/cutover.db" "$ops" "$port"
[ "$(abort_as "$alice")" = 401 ] || fail "removed alice's token: $(cat "$tmp/answer")"
[ "$(abort_as "$bob")" = 404 ] || fail "bob's token after alice left: $(cat "$tmp/answer")"
cli_serve_stop

[ "$failures" -eq 0 ] || { echo "test_operators: $failures failures" >&2; exit 1; }
echo "test_operators: ok"
