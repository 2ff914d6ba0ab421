#!/bin/sh
# test_schema_newer: a database a newer cutover wrote (a schema version
# one past this one's) is refused by every verb that opens it, with a
# message naming both versions and what to do, and is left as it was,
# byte for byte: the database, its -wal (commits not yet checkpointed into
# it, as a newer cutover killed mid-run leaves them) and its -shm. No
# broker.
# Usage: test_schema_newer.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
writer=
trap '[ -n "$writer" ] && kill -9 "$writer" 2>/dev/null; cli_cleanup' EXIT

expect 0 "$bin" --version --json
ours=$(jq -r .schema "$tmp/out")
newer=$((ours + 1))
db=$tmp/newer.db

# A database of this version with a plan in it, then a newer cutover's
# migration as SQLite leaves it when that process dies before any
# checkpoint: user_version and a table of its own in the WAL only.
expect 0 "$bin" submit --db "$db" "$src/plans/examples/demo.yaml"
mkfifo "$tmp/sql"
sqlite3 "$db" <"$tmp/sql" >"$tmp/sqlite.out" 2>&1 &
writer=$!
exec 3>"$tmp/sql"
printf '%s\n' "PRAGMA wal_autocheckpoint = 0;" "BEGIN;" \
    "CREATE TABLE later_table (x INTEGER);" "PRAGMA user_version = $newer;" "COMMIT;" \
    ".print written" >&3
i=0
until grep -q written "$tmp/sqlite.out"; do
	i=$((i + 1))
	[ $i -gt 100 ] && { fail "sqlite3 did not write: $(cat "$tmp/sqlite.out")"; exit 1; }
	sleep 0.1
done
kill -9 "$writer"
wait "$writer" 2>/dev/null
writer=
exec 3>&-
[ -s "$db-wal" ] && [ -s "$db-shm" ] || fail "no -wal and -shm to keep: $(ls -l "$tmp")"
# The main file still says ours: the newer version is in the WAL alone.
[ "$(od -An -tu1 -j60 -N4 "$db" | tr -d ' ')" = "000$ours" ] ||
    fail "the main file's header already names $(od -An -tu1 -j60 -N4 "$db")"

sums() {
	sha256sum "$db" "$db-wal" "$db-shm" | awk '{ print $1 }' | tr '\n' ' '
}
before=$(sums)
mkdir "$tmp/kept"
cp "$db" "$db-wal" "$db-shm" "$tmp/kept/"
refusal="database $db has schema version $newer; this cutover knows up to $ours: upgrade cutover"

# Each verb that opens a database, on the files as the newer cutover left
# them: refused, saying so, nothing changed.
refused() { # WHAT STATUS CMD...
	_what=$1 _status=$2
	shift 2
	cp "$tmp/kept/newer.db" "$tmp/kept/newer.db-wal" "$tmp/kept/newer.db-shm" "$tmp/"
	expect "$_status" "$@"
	contains "$tmp/err" "$refusal"
	[ "$(sums)" = "$before" ] || fail "$_what changed the newer database"
	[ -e "$db-wal" ] || fail "$_what removed the -wal"
}
refused run 1 "$bin" run --db "$db" "$src/plans/examples/demo.yaml"
refused status 1 "$bin" status --db "$db"
refused history 1 "$bin" history --db "$db" --verify
refused submit 1 "$bin" submit --db "$db" "$src/plans/examples/demo.yaml"
refused backup 1 "$bin" backup --db "$db" "$tmp/copy.db"
[ ! -e "$tmp/copy.db" ] || fail "a refused backup left $tmp/copy.db"
refused serve 1 "$bin" serve --db "$db" --listen 127.0.0.1:0
# A restore of it: refused (a database with its WAL beside it is no
# backup), changing nothing, leaving no new file.
cp "$tmp/kept/newer.db" "$tmp/kept/newer.db-wal" "$tmp/kept/newer.db-shm" "$tmp/"
expect 1 "$bin" restore --db "$tmp/restored.db" "$db"
[ "$(sums)" = "$before" ] || fail "restore changed the newer database"
[ ! -e "$tmp/restored.db" ] || fail "a refused restore left $tmp/restored.db"
# A backup the newer cutover made (one file, no WAL): refused for its
# schema, left as it was.
mkdir "$tmp/scratch"
cp "$tmp/kept/newer.db" "$tmp/kept/newer.db-wal" "$tmp/scratch/"
sqlite3 "$tmp/scratch/newer.db" "VACUUM INTO '$tmp/backup7.db'" ||
    fail "cannot make the newer backup"
backup_sum=$(sha256sum "$tmp/backup7.db")
expect 1 "$bin" restore --db "$tmp/restored.db" "$tmp/backup7.db"
contains "$tmp/err" "has schema version $newer; this cutover knows up to $ours: upgrade cutover"
[ "$(sha256sum "$tmp/backup7.db")" = "$backup_sum" ] || fail "restore changed the backup"
[ ! -e "$tmp/restored.db" ] || fail "a refused restore left $tmp/restored.db"

[ "$failures" -eq 0 ] || { echo "test_schema_newer: $failures failure(s)" >&2; exit 1; }
echo "test_schema_newer: ok"
