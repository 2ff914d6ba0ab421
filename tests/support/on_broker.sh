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
# that node, then runs the test.
#
# Without a resource spec (ctest run by hand) the environment is left as
# it is: the test runs against whatever CUTOVER_TEST_AMQP names.
#
# Usage: on_broker.sh COMMAND [ARG...]
set -eu

if [ "${CTEST_RESOURCE_GROUP_COUNT:-0}" -ge 1 ]; then
	type=${CTEST_RESOURCE_GROUP_0:-}
	case $type in
	rabbitmq_3_10) version=3.10 ;;
	rabbitmq_4_0) version=4.0 ;;
	*)
		echo "on_broker.sh: ctest lent a resource of type '$type';" \
		    "expected rabbitmq_3_10 or rabbitmq_4_0" >&2
		exit 1
		;;
	esac
	upper=$(printf '%s' "$type" | tr '[:lower:]' '[:upper:]')
	lent=$(printenv "CTEST_RESOURCE_GROUP_0_$upper" || true)
	port=$(printf '%s' "$lent" | sed -n 's/^id:\([0-9][0-9]*\),.*/\1/p')
	if [ -z "$port" ]; then
		echo "on_broker.sh: cannot read a port in" \
		    "CTEST_RESOURCE_GROUP_0_$upper='$lent'" >&2
		exit 1
	fi
	export CUTOVER_TEST_AMQP="amqp://127.0.0.1:$port/%2f"
	export CUTOVER_TEST_MGMT="http://127.0.0.1:$((port + 10000))"
	export CUTOVER_TEST_BROKER_VERSION=$version CUTOVER_BROKER_VERSION=$version
fi
exec "$@"
