#!/bin/sh
# test_tls: TLS everywhere cutover reaches a service,
# against a real RabbitMQ node this test starts with TLS listeners only and
# mutual TLS (scripts/broker --tls DIR --tls-peer: amqps on
# $CUTOVER_TEST_TLS_PORT, https management 10000 above), with certificates
# made here with openssl (tests/tls/certs.sh). It runs `cutover` as a user
# does and checks each case's exit status and message:
#   check: a valid TLS plan; options it cannot honour refused with FILE:LINE:COL
#   amqps + https, mutual TLS with an encrypted key: ladder declare, verify
#   unknown CA, name mismatch, no client certificate, expired (an openssl
#   s_server with an expired certificate, for amqps and for https),
#   no route, a port that does not speak TLS, verify: false (loudly reported)
#   the flag client over https (openssl s_server -WWW serving the flag) in a
#   whole `cutover run` up to the flip over amqps, and with an unknown CA
#   the remote CLI over https (cutover serve behind socat's TLS listener)
#   the key passphrase never reaches the database or the logs
# Every process it starts is registered and killed by pid on every exit
# path; the node and all it holds live under a temporary directory.
# Prints the TLS matrix (case -> message) at the end.
# Usage: test_tls.sh CUTOVER SOURCE_DIR
set -u
bin=$1
src=$2
port=${CUTOVER_TEST_TLS_PORT:-5724}
mport=$((port + 10000))
for c in openssl socat curl; do
	command -v $c >/dev/null || { echo "FAIL: $c is missing (scripts/setup)" >&2; exit 1; }
done
tmp=$(mktemp -d)
export CUTOVER_RUN_DIR=$tmp/run
pids=
failures=0
# The secrets of this run: the broker password, the key's passphrase.
TLS_TEST_PASSPHRASE="pp-$$-$(date +%s)"
export TLS_TEST_PW=guest TLS_TEST_PASSPHRASE

# shellcheck source=../e2e/lib.sh
. "$src/tests/e2e/lib.sh"
# shellcheck source=certs.sh
. "$src/tests/tls/certs.sh"

# register PID: killed by cleanup.
register() { pids="$pids $1"; }

cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null; done
	"$src/scripts/broker" stop --port "$port" >/dev/null 2>&1
	lp=$CUTOVER_RUN_DIR/broker-$port/launcher.pid
	[ -f "$lp" ] && kill -9 "$(cat "$lp")" 2>/dev/null
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' HUP INT TERM

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

# row CASE MESSAGE: one line of the matrix.
row() { printf '%s\t%s\n' "$1" "$2" >>"$tmp/matrix"; }

# expect WANT CASE PATTERN CMD...: CMD succeeds (WANT ok) or fails (WANT
# fail) and prints a line matching PATTERN (grep -E), kept for the matrix.
expect() {
	_want=$1 _case=$2 _pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	_rc=$?
	_msg=$(grep -E -e "$_pat" "$tmp/out" | head -n 1)
	if [ "$_want" = ok ] && [ $_rc -ne 0 ]; then
		fail "$_case: exit $_rc"; cat "$tmp/out" >&2
	elif [ "$_want" = fail ] && [ $_rc -eq 0 ]; then
		fail "$_case: exit 0, expected a failure"; cat "$tmp/out" >&2
	elif [ -z "$_msg" ]; then
		fail "$_case: no line matching /$_pat/"; cat "$tmp/out" >&2
	else
		echo "ok: $_case"
	fi
	row "$_case" "${_msg:-$(tail -n 1 "$tmp/out")}"
}
expect_ok() { expect ok "$@"; }
expect_fail() { expect fail "$@"; }

# wait_tls PORT: until a TLS server answers a handshake on PORT (60 s at most).
wait_tls() {
	_i=0
	until openssl s_client -connect "127.0.0.1:$1" </dev/null >/dev/null 2>&1; do
		_i=$((_i + 1))
		[ $_i -gt 120 ] && { echo "FAIL: nothing answers TLS on $1" >&2; exit 1; }
		sleep 0.5
	done
}

c=$tmp/certs
tls_make_certs "$c" || { echo "FAIL: openssl could not make the certificates" >&2; exit 1; }
p=itesttls$$

# plan FILE TLS_LINES [AMQP [MGMT [FLAG_LINES [STEPS]]]]: a plan for this run.
plan() {
	cat >"$1" <<EOF
name: $p
broker:
  amqp: ${3:-amqps://127.0.0.1:$port/%2f}
  management: ${4:-https://127.0.0.1:$mport}
  username: guest
  password: env:TLS_TEST_PW
$2
old:
  queues: { match: '^$p\.old\.[0-9]+$' }
ladder:
  naming: cutover
  prefix: $p
  unit: 1s
  levels: 4
  queue_type: classic
  destinations: [$p.dest]
  create_destinations: true
canary:
  delays: [1s, 2s]
${5:-}
steps: [${6:-measure_horizon, declare_ladder, verify_ladder}]
EOF
}
mtls="  tls:
    ca: $c/ca.pem
    cert: $c/client.pem
    key: $c/client-enc.key
    key_passphrase: env:TLS_TEST_PASSPHRASE"
# tls_client CA [SERVER_NAME]: broker.tls lines that trust CA and present
# the client's certificate (its key unencrypted), naming SERVER_NAME.
tls_client() {
	printf '  tls:\n    ca: %s\n    cert: %s\n    key: %s' "$1" "$c/client.pem" "$c/client.key"
	if [ -n "${2:-}" ]; then printf '\n    server_name: %s' "$2"; fi
}

# ---- check: what the plan loader accepts and refuses (no broker needed)
plan "$tmp/good.yaml" "$mtls"
expect_ok "check: amqps + https, mutual TLS" "broker +TLS +verified" "$bin" check "$tmp/good.yaml"
plan "$tmp/bad1.yaml" "  tls:
    ca: $c/ca.pem
    cert: $c/client.pem"
expect_fail "check: cert without key" "bad1.yaml:[0-9]+:[0-9]+: .*cert without key" \
    "$bin" check "$tmp/bad1.yaml"
plan "$tmp/bad2.yaml" "  tls:
    verify: false
    ca: $c/ca.pem"
expect_fail "check: verify: false with ca" "bad2.yaml:[0-9]+:[0-9]+: .*would not be checked" \
    "$bin" check "$tmp/bad2.yaml"
plan "$tmp/bad3.yaml" "  tls:
    ca: $c/ca.pem" "amqp://127.0.0.1:$port/%2f" "http://127.0.0.1:$mport"
expect_fail "check: tls map, no TLS URL" "bad3.yaml:[0-9]+:[0-9]+: broker.tls is given but no URL" \
    "$bin" check "$tmp/bad3.yaml"
plan "$tmp/bad4.yaml" "  tls:
    ca: $tmp/no-such-ca.pem"
expect_fail "check: unreadable CA file" "bad4.yaml:[0-9]+:[0-9]+: broker.tls.ca: cannot read" \
    "$bin" check "$tmp/bad4.yaml"
plan "$tmp/bad5.yaml" "  tls:
    ca: $c/ca.pem
    cert: $c/client.pem
    key: $c/client-enc.key
    key_passphrase: $TLS_TEST_PASSPHRASE"
expect_fail "check: literal passphrase" "bad5.yaml:[0-9]+:[0-9]+: broker.tls.key_passphrase" \
    "$bin" check "$tmp/bad5.yaml"
grep -q -- "$TLS_TEST_PASSPHRASE" "$tmp/out" && fail "check repeated a literal passphrase"

# ---- the TLS node: amqps + https only, client certificates required
"$src/scripts/broker" start --port "$port" --tls "$c" --tls-peer >"$tmp/broker.out" 2>&1
rc=$?
[ -f "$CUTOVER_RUN_DIR/broker-$port/launcher.pid" ] &&
    register "$(cat "$CUTOVER_RUN_DIR/broker-$port/launcher.pid")"
[ $rc -eq 0 ] || { cat "$tmp/broker.out" >&2; echo "FAIL: the TLS node did not start" >&2; exit 1; }

expect_ok "amqps + https, mutual TLS, encrypted key: declare" "^declared " \
    "$bin" ladder declare "$tmp/good.yaml"
expect_ok "amqps + https, mutual TLS, encrypted key: verify" " 0 missing, 0 drift" \
    "$bin" ladder verify "$tmp/good.yaml"

plan "$tmp/ca.yaml" "$(tls_client "$c/wrong-ca.pem")"
expect_fail "amqps: unknown CA" "AMQP: TLS handshake with 127.0.0.1:$port: unknown CA.*ca.yaml:" \
    "$bin" ladder verify "$tmp/ca.yaml"
plan "$tmp/name.yaml" "$(tls_client "$c/ca.pem" broker.example)"
expect_fail "amqps: name mismatch" "name mismatch: .*'broker.example'.*name.yaml:" \
    "$bin" ladder verify "$tmp/name.yaml"
plan "$tmp/sni.yaml" "$(tls_client "$c/ca.pem" localhost)"
expect_ok "amqps + https: server_name localhost for URLs at 127.0.0.1" " 0 missing, 0 drift" \
    "$bin" ladder verify "$tmp/sni.yaml"
plan "$tmp/nocert.yaml" "  tls:
    ca: $c/ca.pem"
expect_fail "amqps: no client certificate (mTLS node)" "(refused cutover's client certificate|presented no client certificate).*nocert.yaml:" \
    "$bin" ladder verify "$tmp/nocert.yaml"
expect_fail "https: no client certificate (mTLS node, remote CLI)" "refused the client certificate" \
    "$bin" status --server "https://127.0.0.1:$mport" --cacert "$c/ca.pem"
expect_fail "https: mutual TLS (remote CLI --cert/--key to the node: TLS done, no cutover API there)" \
    "the server's answer is not the API's|HTTP 40" \
    "$bin" status --server "https://127.0.0.1:$mport" --cacert "$c/ca.pem" --cert "$c/client.pem" \
    --key "$c/client.key"
expect_fail "https: unknown CA (remote CLI to the node)" "TLS handshake: unknown CA" \
    "$bin" status --server "https://127.0.0.1:$mport" --cacert "$c/wrong-ca.pem"
expect_fail "amqps: passphrase variable unset" "key_passphrase env:TLS_TEST_PASSPHRASE names an environment variable that is not set" \
    env -u TLS_TEST_PASSPHRASE "$bin" ladder verify "$tmp/good.yaml"
expect_fail "amqps: wrong passphrase" "cannot use the client certificate" \
    env TLS_TEST_PASSPHRASE=wrong "$bin" ladder verify "$tmp/good.yaml"
plan "$tmp/off.yaml" "  tls:
    verify: false
    cert: $c/client.pem
    key: $c/client.key"
expect_ok "check: verify: false reported" "TLS VERIFICATION IS OFF" "$bin" check "$tmp/off.yaml"
expect_ok "amqps + https: verify: false, reported at run" "level=warn .*TLS VERIFICATION IS OFF" \
    "$bin" ladder verify "$tmp/off.yaml"

# An expired certificate, no route, and a port that speaks no TLS.
eport=$(e2e_free_port 11)
(cd "$c" && exec openssl s_server -quiet -accept "127.0.0.1:$eport" -cert expired.pem \
    -key server.key -www) >/dev/null 2>&1 &
register $!
wait_tls "$eport"
plan "$tmp/exp.yaml" "$mtls" "amqps://127.0.0.1:$eport/%2f"
expect_fail "amqps: expired certificate" "AMQP: TLS handshake with 127.0.0.1:$eport: expired" \
    "$bin" ladder verify "$tmp/exp.yaml"
plan "$tmp/exp2.yaml" "$mtls" "" "https://127.0.0.1:$eport"
expect_fail "https: expired certificate" "TLS handshake: expired" \
    "$bin" ladder verify "$tmp/exp2.yaml"
dead=$(e2e_free_port 23)
plan "$tmp/route.yaml" "$mtls" "amqps://127.0.0.1:$dead/%2f"
expect_fail "amqps: no route (nothing listens)" "connecting to 127.0.0.1:$dead: connection refused" \
    "$bin" ladder verify "$tmp/route.yaml"

# cutover serve (plain HTTP) behind socat's TLS listener: the remote CLI.
sport=$(e2e_free_port 31)
"$bin" serve --db "$tmp/serve.db" --listen "127.0.0.1:$sport" >"$tmp/serve.log" 2>&1 &
register $!
tport=$(e2e_free_port 37)
socat "OPENSSL-LISTEN:$tport,bind=127.0.0.1,reuseaddr,fork,cert=$c/server.pem,key=$c/server.key,verify=0" \
    "TCP:127.0.0.1:$sport" >/dev/null 2>&1 &
register $!
wait_tls "$tport"
i=0
until curl -fsS "http://127.0.0.1:$sport/api/plans" >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -gt 120 ] && { echo "FAIL: cutover serve did not answer" >&2; exit 1; }
	sleep 0.5
done
plan "$tmp/plain.yaml" "$mtls" "amqps://127.0.0.1:$sport/%2f"
expect_fail "amqps: the port speaks no TLS" "TLS handshake with 127.0.0.1:$sport failed" \
    "$bin" ladder verify "$tmp/plain.yaml"
expect_ok "remote CLI: https --server with --cacert" "." \
    "$bin" status --server "https://localhost:$tport" --cacert "$c/ca.pem"
expect_fail "remote CLI: https --server, system CA store" "TLS handshake: unknown CA" \
    "$bin" status --server "https://127.0.0.1:$tport"
expect_fail "remote CLI: --cacert with http://" "--cacert is for an https:// --server" \
    "$bin" status --server "http://127.0.0.1:$sport" --cacert "$c/ca.pem"

# The flag client over https: openssl s_server -WWW serves the flag's files.
fdir=$tmp/flag
mkdir -p "$fdir"
echo '{"ok":true}' >"$fdir/on.json"
echo '{"ok":true}' >"$fdir/off.json"
echo '{"enabled":true}' >"$fdir/state.json"
fport=$(e2e_free_port 41)
(cd "$fdir" && exec openssl s_server -quiet -accept "127.0.0.1:$fport" -cert "$c/server.pem" \
    -key "$c/server.key" -WWW) >/dev/null 2>&1 &
register $!
wait_tls "$fport"
flag_yaml() { # CA [SERVER_NAME]
	cat <<EOF
flag:
  kind: http
  on: { method: GET, url: 'https://localhost:$fport/on.json' }
  off: { method: GET, url: 'https://localhost:$fport/off.json' }
  read: { url: 'https://localhost:$fport/state.json', pointer: /enabled, on: true, off: false }
  tls:
    ca: $1
${2:+    server_name: $2}
EOF
}
# An old queue for measure_horizon, made over https with the client certificate.
curl -fsS --cacert "$c/ca.pem" --cert "$c/client.pem" --key "$c/client.key" -u guest:guest \
    -X PUT -H 'content-type: application/json' \
    -d '{"durable":true,"arguments":{"x-message-ttl":5000}}' \
    "https://127.0.0.1:$mport/api/queues/%2F/$p.old.5" ||
    fail "could not declare $p.old.5 over https"
steps="measure_horizon, declare_ladder, verify_ladder, canary, flip"
plan "$tmp/flag.yaml" "$mtls" "" "" "$(flag_yaml "$c/ca.pem")" "$steps"
# --new: the cases above declared this plan's ladder, and the static flag
# reads on beside it, which is how a run whose database was lost looks.
expect_ok "flag over https + whole run to the flip over amqps" "step=flip msg=.step.succeeded" \
    "$bin" run --new --db "$tmp/flag.db" "$tmp/flag.yaml"
plan "$tmp/flagca.yaml" "$mtls" "" "" "$(flag_yaml "$c/wrong-ca.pem")" "$steps"
expect_fail "flag over https: unknown CA" "unknown CA" \
    "$bin" run --db "$tmp/flagca.db" "$tmp/flagca.yaml"
# A handshake that failed sent no request: the flip's record calls each
# write "not sent", never "in doubt" (which would hold the plan for the
# flag's settle window).
grep -a -q '"outcome":"in doubt"' "$tmp/flagca.db" &&
	fail "flag over https: unknown CA: a failed handshake recorded as in doubt"
grep -a -q '"outcome":"not sent"' "$tmp/flagca.db" ||
	fail "flag over https: unknown CA: no write recorded as not sent"

plan "$tmp/flagname.yaml" "$mtls" "" "" "$(flag_yaml "$c/ca.pem" flags.example)" "$steps"
expect_fail "flag over https: name mismatch (server_name)" "name mismatch: .*'flags.example'" \
    "$bin" run --db "$tmp/flagname.db" "$tmp/flagname.yaml"

# The passphrase never reaches a database or a log.
for f in "$tmp"/*.db "$tmp/serve.log"; do
	[ -f "$f" ] && grep -a -q -- "$TLS_TEST_PASSPHRASE" "$f" && fail "the passphrase is in $f"
done
row "passphrase in databases and logs" "absent"

# Remove what the run declared on the node (the node goes with the run too).
"$bin" ladder teardown "$tmp/good.yaml" >/dev/null 2>&1 ||
    echo "note: teardown of $p failed; the node is removed with the run" >&2

echo "== TLS matrix"
cat "$tmp/matrix"
if [ $failures -ne 0 ]; then
	echo "FAIL: $failures case(s)" >&2
	exit 1
fi
echo "PASS"
