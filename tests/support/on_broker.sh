#!/bin/sh
# on_broker.sh: runs one test against the RabbitMQ node ctest lent it.
#
# scripts/test starts several throwaway nodes and lists them in a ctest
# resource spec (build/brokers.json): resource type rabbitmq_3_10 or
# rabbitmq_4_0, each node's id its AMQP port. A test that needs a node
# asks for one of them (RESOURCE_GROUPS in CMakeLists.txt) and ctest names
# the one it lent in CTEST_RESOURCE_GROUP_0_<TYPE> ("id:PORT,slots:1"), so
# no two tests ever share a node (tests that read node-wide statistics or
# restart the node rely on that) while tests on different nodes run side
# by side. This sets CUTOVER_TEST_AMQP, _MGMT and the broker versions for
# that node, then runs the test. A test lent one node of each version
# (a move between brokers) gets the 3.10 node as its own and the 4.0 node
# as CUTOVER_TEST_TARGET_AMQP and _MGMT.
#
# Without a resource spec (ctest run by hand) the environment is left as
# it is: the test runs against whatever CUTOVER_TEST_AMQP names.
#
# Usage: on_broker.sh COMMAND [ARG...]
set -eu

# lent_port TYPE: the port of the node of TYPE ctest lent (exits when none).
lent_port() {
	_upper=$(printf '%s' "$1" | tr '[:lower:]' '[:upper:]')
	_lent=$(printenv "CTEST_RESOURCE_GROUP_0_$_upper" || true)
	_port=$(printf '%s' "$_lent" | sed -n 's/^id:\([0-9][0-9]*\),.*/\1/p')
	if [ -z "$_port" ]; then
		echo "on_broker.sh: cannot read a port in" \
		    "CTEST_RESOURCE_GROUP_0_$_upper='$_lent'" >&2
		exit 1
	fi
	echo "$_port"
}

if [ "${CTEST_RESOURCE_GROUP_COUNT:-0}" -ge 1 ]; then
	type=${CTEST_RESOURCE_GROUP_0:-}
	case $type in
	rabbitmq_3_10) version=3.10 ;;
	rabbitmq_4_0) version=4.0 ;;
	rabbitmq_3_10,rabbitmq_4_0 | rabbitmq_4_0,rabbitmq_3_10)
		# A move between brokers: the 3.10 node is the source (the
		# test's node), the 4.0 node the target.
		version=3.10
		port4=$(lent_port rabbitmq_4_0)
		export CUTOVER_TEST_TARGET_AMQP="amqp://127.0.0.1:$port4/%2f"
		export CUTOVER_TEST_TARGET_MGMT="http://127.0.0.1:$((port4 + 10000))"
		type=rabbitmq_3_10
		;;
	*)
		echo "on_broker.sh: ctest lent a resource of type '$type';" \
		    "expected rabbitmq_3_10, rabbitmq_4_0 or both" >&2
		exit 1
		;;
	esac
	port=$(lent_port "$type")
	export CUTOVER_TEST_AMQP="amqp://127.0.0.1:$port/%2f"
	export CUTOVER_TEST_MGMT="http://127.0.0.1:$((port + 10000))"
	export CUTOVER_TEST_BROKER_VERSION=$version CUTOVER_BROKER_VERSION=$version
fi
exec "$@"
