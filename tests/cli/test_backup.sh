#!/bin/sh
# test_backup: `cutover backup` while `cutover serve` holds the database
# and writes to it (plans submitted through the API one after another):
# every copy is whole (history --verify on it passes), holds the plans
# the source held when it was taken, and serve went on answering and
# writing throughout. An OUT that exists, a --db that does not, and a
# damaged database are refused, leaving no file behind. --version names
# the schema the copies have.
# Usage: test_backup.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
cli_serve_operator 43

# Plans demo-N through the API (their broker is nowhere: the engine
# records their steps failing, which is writing too).
n=1
while [ $n -le 6 ]; do
	cli_submit $n
	expect 0 "$bin" backup --db "$tmp/live.db" --json "$tmp/b$n.db"
	[ "$(jq -r .verified "$tmp/out")" = true ] || fail "backup $n: $(cat "$tmp/out")"
	# The copy holds at least the plans submitted before it was taken.
	[ "$(jq '.plans | length' "$tmp/out")" -ge $n ] ||
	    fail "backup $n holds $(jq '.plans | length' "$tmp/out") plans"
	jq -e --arg p "demo-$n" '.plans | map(.name) | index($p)' "$tmp/out" >/dev/null ||
	    fail "backup $n lacks demo-$n: $(cat "$tmp/out")"
	expect 0 "$bin" history --db "$tmp/b$n.db" --verify
	n=$((n + 1))
done
curl -fsS "http://127.0.0.1:$port/healthz" >/dev/null || fail "serve stopped answering"
kill -0 "$serve_pid" 2>/dev/null || fail "serve is gone"
# The readable form says what the copy holds.
expect 0 "$bin" backup --db "$tmp/live.db" "$tmp/plain.db"
contains "$tmp/out" "a checked copy of $tmp/live.db (integrity and history verified)"
contains "$tmp/out" "demo-6"
contains "$tmp/out" "last event #"

# Refusals, each leaving nothing behind.
expect 1 "$bin" backup --db "$tmp/live.db" "$tmp/b1.db"
contains "$tmp/err" "exists: a backup never replaces a file"
expect 1 "$bin" backup --db "$tmp/typo.db" "$tmp/t.db"
[ ! -e "$tmp/typo.db" ] && [ ! -e "$tmp/t.db" ] || fail "a refused backup left a file"
cp "$tmp/b6.db" "$tmp/damaged.db"
# A page in the middle overwritten: SQLite's check finds it.
dd if=/dev/urandom of="$tmp/damaged.db" bs=4096 seek=2 count=1 conv=notrunc 2>/dev/null
expect 1 "$bin" backup --db "$tmp/damaged.db" "$tmp/from-damaged.db"
[ ! -e "$tmp/from-damaged.db" ] || fail "a backup of a damaged database was left"
expect 2 "$bin" backup "$tmp/x.db"
contains "$tmp/err" "--db FILE is required"

# The copies' schema is the one --version names.
expect 0 "$bin" --version --json
[ "$(sqlite3 "$tmp/b6.db" 'PRAGMA user_version')" = "$(jq -r .schema "$tmp/out")" ] ||
    fail "the copy's schema is not the one --version names"

[ "$failures" -eq 0 ] || { echo "test_backup: $failures failures" >&2; exit 1; }
echo "test_backup: ok"
