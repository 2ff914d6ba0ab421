# lib.sh: what the e2e scripts (and bench/load) share; sourced.

# e2e_broker_yaml prints a plan's broker section for the test broker
# (CUTOVER_TEST_*; the password as the reference env:CUTOVER_TEST_PASSWORD).
e2e_broker_yaml() {
	cat <<YAML
broker:
  amqp: $CUTOVER_TEST_AMQP
  management: $CUTOVER_TEST_MGMT
  username: $CUTOVER_TEST_USER
  password: env:CUTOVER_TEST_PASSWORD
YAML
}

# e2e_free_port prints a TCP port on 127.0.0.1 that nothing listens on,
# starting from one derived from the script's pid (so concurrent runs start
# apart) and moving on from any port that answers: curl's exit status 7 is
# "could not connect". Exits 1 when no port of 200 is free.
e2e_free_port() { # BASE: the first port tried is 20000 + (pid + BASE) % 20000
	_p=$((20000 + ($$ + $1) % 20000))
	_n=0
	while [ $_n -lt 200 ]; do
		curl -s -o /dev/null --connect-timeout 2 "http://127.0.0.1:$_p/" >/dev/null 2>&1
		[ $? -eq 7 ] && { echo "$_p"; return 0; }
		_p=$((_p + 1))
		[ $_p -ge 40000 ] && _p=20000
		_n=$((_n + 1))
	done
	echo "e2e_free_port: no free port near $((20000 + ($$ + $1) % 20000))" >&2
	exit 1
}
