#!/bin/sh
# test_demo_ports: scripts/demo --check-ports, without starting the demo.
# Free ports pass; each of the demo's ports (the page, the broker's AMQP,
# management (+10000) and distribution (+20000) ports, Unleash and its
# PostgreSQL (+1000)) held by a silent listener is refused at once, naming
# the port, what it is for, the variable that moves it and (as root) the
# holder; a port held by an earlier demo's own broker passes; a value that
# is not a port is refused. Usage: test_demo_ports.sh SOURCE_DIR
set -u
src=$1
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"
holder=
cleanup() {
	[ -n "$holder" ] && kill "$holder" 2>/dev/null
	cli_cleanup
}
trap cleanup EXIT

command -v python3 >/dev/null || { echo "test_demo_ports: python3 is missing (scripts/setup)" >&2; exit 1; }
export CUTOVER_RUN_DIR="$tmp/run"

# check: the demo's port check with this test's ports, bounded.
check() {
	DEMO_LISTEN=127.0.0.1:$page DEMO_BROKER_PORT=$broker \
	    DEMO_UNLEASH_PORT=$unleash timeout 60 "$src/scripts/demo" --check-ports
}

# Ports nothing listens on, below Linux's ephemeral range (32768-60999):
# the check itself finds them (a few tries).
found=
for _ in 1 2 3 4 5 6 7 8 9 10; do
	r=$(od -An -tu2 -N6 /dev/urandom | tr -s ' ' '\n' | grep .)
	page=$((13000 + $(echo "$r" | sed -n 1p) % 2000))
	broker=$((10000 + $(echo "$r" | sed -n 2p) % 2700))
	unleash=$((15000 + $(echo "$r" | sed -n 3p) % 2000))
	if check >"$tmp/out" 2>"$tmp/err"; then
		found=1
		break
	fi
done
[ -n "$found" ] || { echo "test_demo_ports: found no free ports: $(cat "$tmp/err")" >&2; exit 1; }
contains "$tmp/out" "ports free: page 127.0.0.1:$page, broker $broker"

# listen PORT: a silent listener (accepts, never answers) on 127.0.0.1:PORT,
# with SO_REUSEADDR as servers bind (an outgoing connection's local port
# is then no obstacle).
listen() {
	rm -f "$tmp/ready"
	python3 -c '
import socket, sys, time
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1])))
s.listen(8)
open(sys.argv[2], "w").close()
time.sleep(300)' "$1" "$tmp/ready" &
	holder=$!
	i=0
	while [ ! -e "$tmp/ready" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$tmp/ready" ] || fail "the listener on $1 did not start"
}
unlisten() {
	kill "$holder" 2>/dev/null
	wait "$holder" 2>/dev/null
	holder=
}

for e in "$page|the status page's port (DEMO_LISTEN)|DEMO_LISTEN=127.0.0.1:" \
    "$broker|RabbitMQ's AMQP port (DEMO_BROKER_PORT)|DEMO_BROKER_PORT=" \
    "$((broker + 10000))|RabbitMQ's management port (DEMO_BROKER_PORT + 10000)|DEMO_BROKER_PORT=" \
    "$((broker + 20000))|RabbitMQ's Erlang distribution port (DEMO_BROKER_PORT + 20000)|DEMO_BROKER_PORT=" \
    "$unleash|Unleash's port (DEMO_UNLEASH_PORT)|DEMO_UNLEASH_PORT=" \
    "$((unleash + 1000))|Unleash's PostgreSQL port (DEMO_UNLEASH_PORT + 1000)|DEMO_UNLEASH_PORT="; do
	port=${e%%|*}
	rest=${e#*|}
	what=${rest%|*}
	hint=${rest##*|}
	listen "$port"
	t0=$(date +%s)
	expect 1 check
	[ $(($(date +%s) - t0)) -le 15 ] || fail "the check of a taken port $port took over 15 s"
	contains "$tmp/err" "port $port, $what, is taken by"
	if [ "$(id -u)" -eq 0 ]; then
		contains "$tmp/err" "taken by python3 (pid $holder)"
	fi
	contains "$tmp/err" "nothing was started; choose other ports"
	contains "$tmp/err" "$hint"
	[ "$(grep -c 'is taken by' "$tmp/err")" -eq 1 ] ||
	    fail "port $port: not exactly one port named taken: $(cat "$tmp/err")"
	unlisten
done

# An earlier demo's own broker (its VM's pid in run/broker-PORT/pid) is
# not in the way: the demo stops it before it starts its own.
if [ "$(id -u)" -eq 0 ]; then
	listen "$broker"
	mkdir -p "$CUTOVER_RUN_DIR/broker-$broker"
	echo "$holder" >"$CUTOVER_RUN_DIR/broker-$broker/pid"
	expect 0 check
	contains "$tmp/out" "port $broker, RabbitMQ's AMQP port (DEMO_BROKER_PORT), is an earlier demo's own python3 (pid $holder)"
	unlisten
fi

# Values that are not ports.
good=$broker
broker=abc
expect 1 check
contains "$tmp/err" "DEMO_BROKER_PORT must be a port number, not 'abc'"
broker=50000
expect 1 check
contains "$tmp/err" "DEMO_BROKER_PORT must be within 1..45535, not 50000"
broker=$good
expect 1 env DEMO_LISTEN=8080 timeout 60 "$src/scripts/demo" --check-ports
contains "$tmp/err" "DEMO_LISTEN must be HOST:PORT"
expect 2 timeout 60 "$src/scripts/demo" --no-such-option
contains "$tmp/err" "usage: scripts/demo [--check-ports]"

if [ "$failures" -ne 0 ]; then
	echo "test_demo_ports: $failures failure(s)" >&2
	exit 1
fi
echo "test_demo_ports: ok"
