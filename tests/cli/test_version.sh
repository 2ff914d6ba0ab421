#!/bin/sh
# test_version: `cutover --version` — cutover's version
# (CMake's project version), the git commit it was configured at (or
# "unknown" outside a git checkout), each library's version as its headers
# (pkg-config) and the loaded library say; the same in /healthz (version,
# commit) and /metrics (cutover_build_info) of `cutover serve`. No broker.
# Usage: test_version.sh CUTOVER SOURCE_DIR VERSION
set -u
bin=$1
src=$2
version=$3
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; cli_cleanup' EXIT
# shellcheck source=../e2e/lib.sh
. "$src/tests/e2e/lib.sh"

if commit=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then :; else
	commit=unknown
fi
# label pkg-config-module, one a line: the libraries --version names.
libs="rabbitmq_c:librabbitmq libcurl:libcurl sqlite:sqlite3 jansson:jansson
libyaml:yaml-0.1 libmicrohttpd:libmicrohttpd"

expect 0 "$bin" --version
[ "$(head -n 1 "$tmp/out")" = "cutover $version (commit $commit)" ] ||
    fail "--version's first line is '$(head -n 1 "$tmp/out")'," \
	"expected 'cutover $version (commit $commit)'"
for l in $libs; do
	want=$(pkg-config --modversion "${l#*:}")
	# name, built, running: the build machine runs what it built with.
	grep -qE "^${l%%:*} +$want +$want\$" "$tmp/out" ||
	    fail "--version lacks '${l%%:*} $want $want': $(cat "$tmp/out")"
done
expect 0 "$bin" --version --json
for l in $libs; do
	want=$(pkg-config --modversion "${l#*:}")
	got=$(jq -r --arg l "${l%%:*}" '.libraries[$l] | "\(.built) \(.running)"' "$tmp/out")
	[ "$got" = "$want $want" ] || fail "--version --json: ${l%%:*} is '$got', expected '$want $want'"
done
[ "$(jq -r '"\(.version) \(.commit)"' "$tmp/out")" = "$version $commit" ] ||
    fail "--version --json: $(cat "$tmp/out")"
# The schema it writes: the one state/store.h names.
schema=$(sed -n 's/^#define STORE_SCHEMA_VERSION \([0-9]*\)$/\1/p' "$src/state/store.h")
[ -n "$schema" ] && [ "$(jq -r .schema "$tmp/out")" = "$schema" ] ||
    fail "--version --json names schema '$(jq -r .schema "$tmp/out")', store.h $schema"
expect 0 "$bin" version
expect 2 "$bin" --version --yaml
contains "$tmp/err" "unexpected argument '--yaml'"

# serve: /healthz and /metrics.
port=$(e2e_free_port 21)
"$bin" serve --db "$tmp/db" --listen "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
server=$!
i=0
until curl -fsS -o "$tmp/healthz" "http://127.0.0.1:$port/healthz" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 600 ] && kill -0 "$server" 2>/dev/null || {
		fail "serve did not answer on $port: $(cat "$tmp/serve.log")"
		exit 1
	}
	sleep 0.1
done
[ "$(jq -r '"\(.status) \(.version) \(.commit)"' "$tmp/healthz")" = "ok $version $commit" ] ||
    fail "/healthz answered $(cat "$tmp/healthz")"
curl -fsS -o "$tmp/metrics" "http://127.0.0.1:$port/metrics" || fail "/metrics failed"
want="cutover_build_info{version=\"$version\",commit=\"$commit\""
for l in $libs; do
	want="$want,${l%%:*}=\"$(pkg-config --modversion "${l#*:}")\""
done
contains "$tmp/metrics" "$want} 1"
contains "$tmp/metrics" "# TYPE cutover_build_info gauge"
kill "$server"
wait "$server" || fail "serve exited $? on SIGTERM"
server=""

[ "$failures" -eq 0 ] || { echo "test_version: $failures failure(s)" >&2; exit 1; }
echo "test_version: ok"
