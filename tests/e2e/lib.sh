# lib.sh: what the e2e scripts (and bench/load) share; sourced. A run is
# e2e_require and e2e_setup, a plan written with e2e_broker_yaml,
# e2e_plan_body or e2e_flag_yaml and e2e_steps_yaml, e2e_feature_new,
# e2e_operator, e2e_traffic_start, e2e_old_ready, e2e_serve_start and
# e2e_submit; then e2e_step and e2e_api to move the plan along,
# e2e_plan_done, e2e_traffic_stop and e2e_traffic_check; e2e_cleanup_run
# in the EXIT trap.
# shellcheck shell=sh
# The functions read the sourcing script's $tmp, $bin, $server, $id,
# $name, $feature and $token, as each one's comment says, and set some of
# its variables for it (e2e_setup's, id, token, traffic_rc and the
# traffic figures, moved_before):
# shellcheck disable=SC2154,SC2034

# The variables an e2e run needs of scripts/test: the test broker and the
# test Unleash.
e2e_env="CUTOVER_TEST_AMQP CUTOVER_TEST_MGMT CUTOVER_TEST_USER CUTOVER_TEST_PASSWORD
    CUTOVER_TEST_UNLEASH_URL CUTOVER_TEST_UNLEASH_TOKEN CUTOVER_TEST_UNLEASH_CLIENT_TOKEN"

# e2e_require WHO [VAR...]: exits 1, naming WHO, unless every VAR (default
# $e2e_env) is set (scripts/test sets them) and jq is there.
e2e_require() {
	_who=$1
	shift
	[ $# -gt 0 ] || set -- $e2e_env
	for _v in "$@"; do
		eval "_val=\${$_v:-}"
		[ -n "$_val" ] || { echo "$_who: $_v is not set (scripts/test sets it)" >&2; exit 1; }
	done
	command -v jq >/dev/null || { echo "$_who: jq is missing (scripts/setup)" >&2; exit 1; }
}

# fail MESSAGE: reports a failed check on stderr and counts it in $failures.
fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

# e2e_broker_yaml [USER PASSWORD] prints a plan's broker section for the
# test broker (CUTOVER_TEST_*): as USER (default $CUTOVER_TEST_USER) with
# the password reference PASSWORD (default env:CUTOVER_TEST_PASSWORD).
e2e_broker_yaml() {
	cat <<YAML
broker:
  amqp: $CUTOVER_TEST_AMQP
  management: $CUTOVER_TEST_MGMT
  username: ${1:-$CUTOVER_TEST_USER}
  password: ${2:-env:CUTOVER_TEST_PASSWORD}
YAML
}

# e2e_target_yaml prints a plan's target section: the 4.0 node ctest lent
# a test beside its 3.10 one (CUTOVER_TEST_TARGET_AMQP, _MGMT; see
# tests/support/on_broker.sh), as the test user.
e2e_target_yaml() {
	cat <<YAML
target:
  amqp: $CUTOVER_TEST_TARGET_AMQP
  management: $CUTOVER_TEST_TARGET_MGMT
  username: $CUTOVER_TEST_USER
  password: env:CUTOVER_TEST_PASSWORD
YAML
}

# e2e_flag_yaml FEATURE [TOKEN] prints a plan's flag section: the Unleash
# feature FEATURE of the test Unleash, with the token reference TOKEN
# (default env:CUTOVER_TEST_UNLEASH_TOKEN).
e2e_flag_yaml() {
	cat <<YAML
flag:
  kind: unleash
  url: $CUTOVER_TEST_UNLEASH_URL
  project: default
  environment: production
  feature: $1
  token: ${2:-env:CUTOVER_TEST_UNLEASH_TOKEN}
YAML
}

# e2e_serve_start WHO [DB [ARG...]]: starts `$bin serve` on $server's port
# with the database DB (default $tmp/cutover.db), the operators
# $tmp/operators, the ARGs (such as --config FILE) and the log
# $tmp/serve.log (appended: kept across restarts), sets serve_pid, and
# waits for it (e2e_serve_wait).
e2e_serve_start() {
	_who=$1 _db=${2:-$tmp/cutover.db}
	shift
	if [ $# -gt 0 ]; then shift; fi
	_seen=$(e2e_serving_lines "${server##*:}")
	"$bin" serve --db "$_db" --listen "127.0.0.1:${server##*:}" \
	    --operators "$tmp/operators" "$@" 2>>"$tmp/serve.log" &
	serve_pid=$!
	e2e_serve_wait "$_who" "${server##*:}" "$_seen"
}

# e2e_serving_lines PORT: how many "serving ... on port PORT" lines
# $tmp/serve.log holds (0 without the file).
e2e_serving_lines() {
	_n=$(grep -c "serving .* on port $1:" "$tmp/serve.log" 2>/dev/null)
	echo "${_n:-0}"
}

# e2e_serve_wait WHO PORT SEEN: waits up to 30 s for the serve at $serve_pid
# (its log in $tmp/serve.log, which held SEEN serving lines for PORT before
# it started) to answer /healthz on PORT; exits 1 naming WHO, with the log,
# when it exits or does not. The port was free when e2e_free_port looked;
# another test may have bound it since, and its server would answer
# /healthz in this one's place (then refuse this test's token), so this
# serve's own "serving ... on port" line must be logged, and it must still
# run, before it counts.
e2e_serve_wait() {
	_i=0
	until [ "$(e2e_serving_lines "$2")" -gt "$3" ] &&
	    curl -fsS "http://127.0.0.1:$2/healthz" >/dev/null 2>&1; do
		_i=$((_i + 1))
		if ! kill -0 "$serve_pid" 2>/dev/null; then
			echo "$1: serve (pid $serve_pid) exited while starting:" >&2
			cat "$tmp/serve.log" >&2
			exit 1
		fi
		[ $_i -gt 300 ] && { echo "$1: serve did not start within 30 s" >&2;
		    cat "$tmp/serve.log" >&2; exit 1; }
		sleep 0.1
	done
}

# e2e_free_port prints a TCP port on 127.0.0.1 that nothing listens on,
# between 20000 and the kernel's ephemeral range (a port of that range may
# be any client socket's by the time a server binds it: openssl s_server
# then fails with "Address already in use"), starting from one derived from
# the script's pid (so concurrent runs start apart) and moving on from any
# port that answers: curl's exit status 7 is "could not connect". Exits 1
# when no port of 200 is free. The C tests' itest_free_port uses the same
# range. CUTOVER_TEST_E2E_PORT=P starts from P + BASE instead (on a machine
# shared with others, the ports one was given).
e2e_free_port() { # BASE: the first port tried is 20000 + (pid + BASE) % span
	_hi=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
	case $_hi in '' | *[!0-9]*) _hi=32768 ;; esac
	[ "$_hi" -gt 21000 ] || _hi=32768
	_span=$((_hi - 20000))
	_p=$((20000 + ($$ + $1) % _span))
	[ -n "${CUTOVER_TEST_E2E_PORT:-}" ] && _p=$((CUTOVER_TEST_E2E_PORT + $1))
	_n=0
	while [ $_n -lt 200 ]; do
		# Exit 7: nothing listens there. (|| keeps a caller's set -e.)
		_rc=0
		curl -s -o /dev/null --connect-timeout 2 "http://127.0.0.1:$_p/" \
		    >/dev/null 2>&1 || _rc=$?
		[ $_rc -eq 7 ] && { echo "$_p"; return 0; }
		_p=$((_p + 1))
		[ $_p -ge "$_hi" ] && _p=20000
		_n=$((_n + 1))
	done
	echo "e2e_free_port: no free port near $((20000 + ($$ + $1) % _span))" >&2
	exit 1
}

# e2e_mgmt METHOD PATH [MGMT]: one call to the test broker's management
# API (PATH after /api), or to the one at URL MGMT (the target's); prints
# the answer, fails on an HTTP error.
e2e_mgmt() {
	curl -fsS -u "$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD" -X "$1" \
	    "${3:-$CUTOVER_TEST_MGMT}/api$2"
}

# e2e_broker_names KIND NAME [MGMT]: the names (one a line) of the objects
# of plan NAME in vhost / of the test broker (or the one at MGMT) that KIND
# (queues, exchanges, policies) lists: queues and
# exchanges named NAME.*, the probe queue cutover.probe.NAME, the canary's
# queues cutover.canary.NAME[.unbound] (left when a run stops mid-canary),
# the watch's statistics marker cutover.stats.NAME (exchange) and
# cutover.stats.NAME.N (queues: they expire after an hour, but a run that
# stops mid-watch should not leave them that long) and the old path's
# fences cutover.fence=NAME=*.
e2e_broker_names() {
	e2e_mgmt GET "/$1/%2F?columns=name" "${3:-}" 2>/dev/null | jq -r --arg n "$2" \
	    '.[] | select((.name | startswith($n + ".")) or .name == "cutover.probe." + $n
		or .name == "cutover.canary." + $n or .name == "cutover.canary." + $n + ".unbound"
		or .name == "cutover.stats." + $n or (.name | startswith("cutover.stats." + $n + "."))
		or (.name | startswith("cutover.fence=" + $n + "="))) | .name'
}

# e2e_broker_remove NAME [MGMT]: deletes every object of plan NAME from the
# test broker, or the one at MGMT (after `ladder teardown`, what it refused
# or never knew: old queues, the probe queue, destinations, fences). For an
# EXIT trap: never fails.
e2e_broker_remove() {
	for _kind in policies queues exchanges; do
		for _o in $(e2e_broker_names "$_kind" "$1" "${2:-}"); do
			e2e_mgmt DELETE "/$_kind/%2F/$(printf '%s' "$_o" | jq -sRr @uri)" \
			    "${2:-}" >/dev/null 2>&1
		done
	done
	return 0
}

# e2e_unleash METHOD PATH [BODY]: one call to the test Unleash's admin API
# (CUTOVER_TEST_UNLEASH_URL, _TOKEN); prints the answer, fails on an HTTP
# error.
e2e_unleash() {
	curl -fsS -X "$1" -H "Authorization: $CUTOVER_TEST_UNLEASH_TOKEN" \
	    -H 'Content-Type: application/json' ${3:+--data "$3"} \
	    "$CUTOVER_TEST_UNLEASH_URL$2"
}

# e2e_feature_create NAME: creates feature NAME in project default, off,
# with a 100% strategy in production (without one the client API evaluates
# an enabled feature as off). Returns 1 when Unleash refuses.
e2e_feature_create() {
	e2e_unleash POST /api/admin/projects/default/features \
	    "{\"name\":\"$1\",\"type\":\"release\"}" >/dev/null &&
	e2e_unleash POST "/api/admin/projects/default/features/$1/environments/production/strategies" \
	    "{\"name\":\"flexibleRollout\",\"constraints\":[],\"parameters\":{\"rollout\":\"100\",\"stickiness\":\"default\",\"groupId\":\"$1\"}}" \
	    >/dev/null
}

# e2e_feature_delete NAME: archives feature NAME and deletes it from the
# archive once Unleash has recorded both its creation and the archive: it
# adds the feature's "initial" and "archived" lifecycle stages a moment
# after answering (an event listener, later still on a loaded machine), and
# a feature gone by then makes that insert fail and stops the whole server
# (Unleash 7.5.1, seen in suite runs for either stage). Waits up to 30 s
# for the stages, else leaves the feature archived. For an EXIT trap: never
# fails.
e2e_feature_delete() {
	e2e_unleash DELETE "/api/admin/projects/default/features/$1" >/dev/null 2>&1 ||
	    return 0
	_n=0
	until e2e_unleash GET "/api/admin/projects/default/features/$1/lifecycle" 2>/dev/null |
	    jq -e 'any(.[]?; .stage == "archived") and any(.[]?; .stage == "initial")' \
	    >/dev/null 2>&1; do
		_n=$((_n + 1))
		[ $_n -gt 300 ] && {
			echo "e2e_feature_delete: $1 lacks its initial or archived stage after 30 s; left archived" >&2
			return 0
		}
		sleep 0.1
	done
	e2e_unleash DELETE "/api/admin/archive/$1" >/dev/null 2>&1
	return 0
}

# e2e_feature_enabled NAME: prints true or false, whether feature NAME is on
# in production.
e2e_feature_enabled() {
	e2e_unleash GET "/api/admin/projects/default/features/$1" |
	    jq -r '.environments[] | select(.name == "production") | .enabled'
}

# e2e_steps_yaml STEP...: prints a plan's steps section, the STEPs in
# order; a STEP ending in ! is gated (flip! is { step: flip, gate: true }).
e2e_steps_yaml() {
	echo "steps:"
	for _s in "$@"; do
		case $_s in
		*!) echo "  - { step: ${_s%!}, gate: true }" ;;
		*) echo "  - $_s" ;;
		esac
	done
}

# e2e_run_id: a name part unique to this run (the pid and 4 random bytes),
# so that a reused pid does not meet a leftover of an earlier run.
e2e_run_id() {
	printf '%s-%s' "$$" "$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')"
}

# e2e_ladder_yaml NAME FEATURE [prefix=P] [unit=D] [levels=N]
# [destinations=LIST] [delays=LIST] [max_lateness=D] [interval=D]
# [allowance=D] [probe_every=D] prints the ladder, canary, flag and watch
# sections of an e2e plan: a ladder P (default NAME) of N levels (9) of D
# (100ms) to the destinations LIST (NAME.email; a YAML list's items), a
# canary of the delays LIST (100ms, 700ms, 1500ms) with canary.max_lateness
# D when given, the Unleash feature FEATURE of the test Unleash (at
# CUTOVER_TEST_UNLEASH_URL), and a watch looking every D (500ms) with the
# allowance D (2s) and a probe every D (2s).
e2e_ladder_yaml() {
	_feature=$2 _prefix=$1 _unit=100ms _levels=9 _dests=$1.email
	_delays='100ms, 700ms, 1500ms' _late='' _interval=500ms _allowance=2s _probe=2s
	shift 2
	for _o in "$@"; do
		case $_o in
		prefix=*) _prefix=${_o#*=} ;;
		unit=*) _unit=${_o#*=} ;;
		levels=*) _levels=${_o#*=} ;;
		destinations=*) _dests=${_o#*=} ;;
		delays=*) _delays=${_o#*=} ;;
		max_lateness=*) _late=${_o#*=} ;;
		interval=*) _interval=${_o#*=} ;;
		allowance=*) _allowance=${_o#*=} ;;
		probe_every=*) _probe=${_o#*=} ;;
		*) echo "e2e_ladder_yaml: unknown option '$_o'" >&2; return 1 ;;
		esac
	done
	cat <<PLAN
ladder:
  prefix: $_prefix
  unit: $_unit
  levels: $_levels
  destinations: [$_dests]
canary:
  delays: [$_delays]
PLAN
	if [ -n "$_late" ]; then echo "  max_lateness: $_late"; fi
	e2e_flag_yaml "$_feature"
	cat <<PLAN
watch:
  interval: $_interval
  allowance: $_allowance
  probe_every: $_probe
PLAN
}

# e2e_plan_body NAME FEATURE [max_lateness=D] [allowance=D] [gates=no]
# [move_old] prints everything after the broker section of the e2e plan:
# old queues NAME.delay.<n>ms, a 9-level 100 ms ladder (quorum) to
# NAME.email, a short canary (canary.max_lateness D, default the plan's),
# the Unleash feature FEATURE of the test Unleash (at
# CUTOVER_TEST_UNLEASH_URL), a 500 ms watch (allowance D, default 2s),
# flip and remove_old gated (not with gates=no); with move_old, a
# move_old step after the flip that moves every message by its AMQP
# timestamp (200/s, batches of 50, stragglers 5s).
e2e_plan_body() {
	_body_name=$1 _body_feature=$2 _body_late='' _body_allowance=2s _gate=! _move=
	shift 2
	for _o in "$@"; do
		case $_o in
		max_lateness=*) _body_late=$_o ;;
		allowance=*) _body_allowance=${_o#*=} ;;
		gates=no) _gate= ;;
		move_old) _move=move_old ;;
		*) echo "e2e_plan_body: unknown option '$_o'" >&2; return 1 ;;
		esac
	done
	cat <<PLAN
old:
  queues: { match: '^$_body_name\\.delay\\.[0-9]+ms\$' }
PLAN
	e2e_ladder_yaml "$_body_name" "$_body_feature" ${_body_late:+"$_body_late"} \
	    "allowance=$_body_allowance" || return 1
	if [ -n "$_move" ]; then
		cat <<PLAN
move_old:
  rate: 200/s
  prefetch: 50
  stragglers: 5s
  entry:
    - { queues: { match: '^$_body_name\\.delay\\.' }, from: timestamp }
PLAN
	fi
	e2e_steps_yaml measure_horizon declare_ladder verify_ladder canary "flip$_gate" \
	    ${_move:+"$_move"} watch "remove_old$_gate"
}

# e2e_moving N: what step N (1-based, a move_old) of plan $id has moved so
# far, its queues' counts summed (persisted after each batch; its total
# only after each queue), while it runs; nothing when it does not run.
e2e_moving() {
	curl -fsS "$server/api/plans/$id" | jq -r ".steps[$1 - 1] |
	    select(.status == \"running\") | [.result.queues[]?.moved // 0] | add // 0"
}

# e2e_kill_serve_moving WHO N [MIN]: once step N (1-based, a move_old) of
# plan $id runs and has moved MIN messages (default 1; waiting up to 60 s,
# else a failure), kills serve -9 and starts it again on the same
# database; sets moved_before, what the step had moved at the kill.
e2e_kill_serve_moving() {
	_t=0
	until [ "$(e2e_moving "$2")" -ge "${3:-1}" ] 2>/dev/null; do
		_t=$((_t + 1))
		[ $_t -gt 600 ] && { fail "move_old never showed ${3:-1} moved messages while running"; break; }
		sleep 0.1
	done
	moved_before=$(curl -fsS "$server/api/plans/$id" | jq -r "[.steps[$2 - 1].result.queues[]?.moved // 0] | add // 0")
	kill -9 "$serve_pid"
	wait "$serve_pid" 2>/dev/null
	serve_pid=
	e2e_serve_start "$1"
}

# e2e_within SECONDS COMMAND...: runs COMMAND every 0.2 s until it
# succeeds (0) or SECONDS have passed (1).
e2e_within() {
	_n=$(($1 * 5))
	shift
	until "$@"; do
		_n=$((_n - 1))
		[ $_n -le 0 ] && return 1
		sleep 0.2
	done
	return 0
}

# e2e_wait_step SERVER ID N STATUS SECONDS: waits until step N (1-based)
# of plan ID has STATUS; after SECONDS prints the steps and alerts and
# returns 1.
e2e_wait_step() {
	_t=0
	while [ "$(curl -fsS "$1/api/plans/$2" | jq -r ".steps[$3 - 1].status")" != "$4" ]; do
		_t=$((_t + 1))
		if [ $_t -gt $(($5 * 5)) ]; then
			echo "step $3 is not $4 after $5 s" >&2
			curl -fsS "$1/api/plans/$2" | jq -c '.steps[] | {kind, status, error}' >&2
			curl -fsS "$1/api/plans/$2" | jq -c '.alerts' >&2
			return 1
		fi
		sleep 0.2
	done
}

# e2e_cleanup_run: for an EXIT trap of a script that sets tmp, bin, name
# and feature (e2e_setup) and the pids it started: kills `cutover run`
# (engine_pid) and cutover-traffic, stops serve, tears down the plan's
# ladder, removes its objects from the broker and its feature from
# Unleash, and removes $tmp (kept, and named, when CUTOVER_TEST_KEEP is
# set). Never fails.
e2e_cleanup_run() {
	[ -n "${engine_pid:-}" ] && kill -9 "$engine_pid" 2>/dev/null && wait "$engine_pid" 2>/dev/null
	[ -n "${traffic_pid:-}" ] && kill -9 "$traffic_pid" 2>/dev/null && wait "$traffic_pid" 2>/dev/null
	[ -n "${serve_pid:-}" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	[ -f "$tmp/plan.yaml" ] && "$bin" ladder teardown "$tmp/plan.yaml" >/dev/null 2>&1
	e2e_broker_remove "$name"
	[ -n "${CUTOVER_TEST_TARGET_MGMT:-}" ] && e2e_broker_remove "$name" "$CUTOVER_TEST_TARGET_MGMT"
	[ -n "${feature:-}" ] && e2e_feature_delete "$feature"
	if [ -n "${CUTOVER_TEST_KEEP:-}" ]; then
		echo "kept $tmp" >&2
	else
		rm -rf "$tmp"
	fi
	return 0
}

# e2e_begin WHO NAME FEATURE [PORT_BASE]: the start of an e2e test run
# by WHO: the test environment required (e2e_require WHO), the run's
# state (e2e_setup NAME FEATURE PORT_BASE), and, whatever happened, at
# its end what it started stopped and the plan's objects and feature
# removed (e2e_cleanup_run on exit; a signal exits through it too).
e2e_begin() {
	e2e_require "$1"
	shift
	e2e_setup "$@"
	trap e2e_cleanup_run EXIT
	trap 'exit 1' HUP INT TERM
}

# e2e_setup NAME FEATURE [PORT_BASE]: the run's state, for the functions
# here and e2e_cleanup_run: tmp (a new directory), name (the plan's, NAME),
# feature (the Unleash feature's, FEATURE, or empty), with PORT_BASE a
# free port for serve (e2e_free_port PORT_BASE) and server (its URL); no
# pid started yet, no failure counted. Exits 1 when no port is free.
e2e_setup() {
	tmp=$(mktemp -d)
	name=$1
	feature=$2
	if [ -n "${3:-}" ]; then
		port=$(e2e_free_port "$3") || exit 1
		server=http://127.0.0.1:$port
	fi
	serve_pid=
	traffic_pid=
	engine_pid=
	failures=0
}

# e2e_operator: a new operator token in token (`cutover operators add`, as
# on a server), and $tmp/operators, the
# file `serve --operators` reads, naming it "tester".
e2e_operator() {
	rm -f "$tmp/operators"
	token=$("$bin" operators add tester --file "$tmp/operators" 2>"$tmp/operators.log") &&
	    [ -n "$token" ] || {
		echo "e2e_operator: cutover operators add printed no token:" >&2
		cat "$tmp/operators.log" >&2
		exit 1
	}
}

# e2e_feature_new WHO [on]: creates the run's feature ($feature), off, or
# on with `on`, and checks that Unleash says so; exits 1 naming WHO when
# it cannot.
e2e_feature_new() {
	_want=false
	e2e_feature_create "$feature" || { echo "$1: cannot create feature $feature in Unleash" >&2; exit 1; }
	if [ "${2:-}" = on ]; then
		_want=true
		e2e_unleash POST "/api/admin/projects/default/features/$feature/environments/production/on" \
		    >/dev/null || { echo "$1: cannot turn feature $feature on in Unleash" >&2; exit 1; }
	fi
	[ "$(e2e_feature_enabled "$feature")" = $_want ] ||
	    { echo "$1: feature $feature is not $(if [ $_want = true ]; then echo on; else echo off; fi)" >&2; exit 1; }
}

# e2e_api METHOD PATH [BODY]: one call to serve's API at $server as the
# operator ($token), with BODY as JSON; prints the answer.
e2e_api() {
	curl -sS -X "$1" -H "Authorization: Bearer $token" \
	    ${3:+-H 'Content-Type: application/json' --data "$3"} "$server$2"
}

# e2e_plan_json: plan $id as the API shows it.
e2e_plan_json() {
	curl -fsS "$server/api/plans/$id"
}

# e2e_submit WHO: submits $tmp/plan.yaml to serve and sets id; exits 1
# naming WHO, with serve's answer, when serve refuses it.
e2e_submit() {
	curl -sS -X POST -H "Authorization: Bearer $token" --data-binary @"$tmp/plan.yaml" \
	    "$server/api/plans" >"$tmp/submit.json"
	id=$(jq -r .id "$tmp/submit.json" 2>/dev/null)
	[ -n "$id" ] && [ "$id" != null ] ||
	    { echo "$1: submit failed: $(cat "$tmp/submit.json")" >&2; exit 1; }
}

# e2e_show_plan: prints plan $id's steps with their errors, its alerts,
# what the watch says and the last lines serve and cutover-traffic logged,
# on stderr: what a failure is read from.
e2e_show_plan() {
	e2e_plan_json >"$tmp/shown.json" 2>/dev/null || return 0
	jq -c '.steps[] | {kind, status, error}' "$tmp/shown.json" >&2
	jq -c '.alerts[]? | {kind, message}' "$tmp/shown.json" >&2
	jq -c '.steps[] | select(.kind == "watch") | .result.summary // .summary // .result' \
	    "$tmp/shown.json" >&2
	[ -f "$tmp/serve.log" ] && grep -v 'msg="http ' "$tmp/serve.log" | tail -n 20 >&2
	[ -f "$tmp/traffic.log" ] && tail -n 5 "$tmp/traffic.log" >&2
	return 0
}

# e2e_step N STATUS SECONDS: waits until step N (1-based) of plan $id has
# STATUS, keeping the plan's last answer in $tmp/plan.json. The step or
# the plan failing (when STATUS is not failed) or SECONDS passing is a
# failure that ends the script: it shows the plan (e2e_show_plan) and
# exits 1.
e2e_step() {
	_t=0
	while :; do
		if e2e_plan_json >"$tmp/plan.json" 2>/dev/null; then
			_s=$(jq -r ".steps[$1 - 1].status" "$tmp/plan.json")
			[ "$_s" = "$2" ] && return 0
			if [ "$2" != failed ] && { [ "$_s" = failed ] ||
			    [ "$(jq -r .status "$tmp/plan.json")" = failed ]; }; then
				_t=$(($3 * 5))
			fi
		fi
		_t=$((_t + 1))
		if [ $_t -gt $(($3 * 5)) ]; then
			fail "step $1 ($(jq -r ".steps[$1 - 1].kind" "$tmp/plan.json" 2>/dev/null)) is" \
			    "${_s:-unknown}, not $2 (waited up to $3 s)"
			e2e_show_plan
			exit 1
		fi
		sleep 0.2
	done
}

# e2e_plan_done SECONDS: waits until plan $id has succeeded (its status
# follows its last step's in a later turn), keeping its last answer in
# $tmp/plan.json. Returns 0; 1 when it failed or SECONDS passed, after
# counting a failure and showing the plan and every old queue remove_old
# left, with why.
e2e_plan_done() {
	_t=0
	while :; do
		_s=$(e2e_plan_json | tee "$tmp/plan.json" | jq -r .status)
		[ "$_s" = succeeded ] && return 0
		_t=$((_t + 1))
		if [ "$_s" = failed ] || [ $_t -gt $(($1 * 5)) ]; then
			fail "the plan did not succeed (status $_s)"
			e2e_show_plan
			jq -c '.steps[] | select(.kind == "remove_old") | .result.entries[]? |
			    select(.outcome != "removed" and .outcome != "gone") |
			    {name, outcome, messages_seen, reason}' "$tmp/plan.json" >&2
			return 1
		fi
		sleep 0.2
	done
}

# e2e_old_count [messages]: how many of the plan's old queues
# ($name.delay.*) the broker holds (only those holding messages, with
# `messages`).
e2e_old_count() {
	e2e_mgmt GET "/queues/%2F?columns=name,messages" | jq --arg p "$name.delay." --arg m "${1:-}" \
	    '[.[] | select((.name | startswith($p)) and ($m == "" or .messages > 0))] | length'
}

# e2e_old_ready WHO N [messages]: waits up to 60 s until the broker holds
# N old queues (e2e_old_count [messages]): the old path carries traffic
# before the plan starts. Exits 1 naming WHO, with cutover-traffic's log,
# when it does not.
e2e_old_ready() {
	_t=0
	until [ "$(e2e_old_count "${3:-}")" -ge "$2" ] 2>/dev/null; do
		_t=$((_t + 1))
		[ $_t -gt 300 ] && {
			echo "$1: the old path never held $2 queues${3:+ with messages}" >&2
			cat "$tmp/traffic.log" >&2
			exit 1
		}
		sleep 0.2
	done
}

# e2e_traffic_start PLAN OPTION...: starts cutover-traffic (beside $bin)
# on PLAN, old-style on $name.delay.* until the flag flips, with the
# OPTIONs (rate, delays), a JSON report in $tmp/traffic.json and its log
# in $tmp/traffic.log; sets traffic_pid.
e2e_traffic_start() {
	_plan=$1
	shift
	UNLEASH_CLIENT_TOKEN=$CUTOVER_TEST_UNLEASH_CLIENT_TOKEN \
	    "${bin%/*}/cutover-traffic" --plan "$_plan" --old-prefix "$name.delay" \
	    "$@" --progress 0 --json >"$tmp/traffic.json" 2>"$tmp/traffic.log" &
	traffic_pid=$!
}

# e2e_traffic_stop [signalled]: stops cutover-traffic with one signal
# (it drains what is in flight, waits for what it must, then reports; with
# `signalled` the caller sent it already: a second one would end the
# drain) and reads its report: traffic_rc, confirmed, delivered, lost,
# early, dups, old_sent, ladder_sent, p99 and lmax (lateness, ms).
e2e_traffic_stop() {
	[ "${1:-}" = signalled ] || kill -TERM "$traffic_pid"
	wait "$traffic_pid"
	traffic_rc=$?
	traffic_pid=
	confirmed=$(jq .total.confirmed "$tmp/traffic.json")
	delivered=$(jq .total.delivered "$tmp/traffic.json")
	lost=$(jq .total.lost "$tmp/traffic.json")
	early=$(jq .total.early "$tmp/traffic.json")
	dups=$(jq .total.duplicates "$tmp/traffic.json")
	old_sent=$(jq .old.confirmed "$tmp/traffic.json")
	ladder_sent=$(jq .ladder.confirmed "$tmp/traffic.json")
	p99=$(jq .total.lateness_ms.p99 "$tmp/traffic.json")
	lmax=$(jq .total.lateness_ms.max "$tmp/traffic.json")
}

# e2e_traffic_check [both]: what every run's traffic must show (after
# e2e_traffic_stop): cutover-traffic ended well, no message lost, none
# early; with `both`, both paths carried traffic. Counts each failure.
e2e_traffic_check() {
	[ "$traffic_rc" -eq 0 ] || fail "cutover-traffic exited $traffic_rc"
	[ "$lost" = 0 ] || fail "lost $lost"
	[ "$early" = 0 ] || fail "early $early"
	if [ "${1:-}" = both ]; then
		[ "${old_sent:-0}" -gt 0 ] && [ "${ladder_sent:-0}" -gt 0 ] ||
		    fail "both paths must carry traffic (old $old_sent, ladder $ladder_sent)"
	fi
	return 0
}

# e2e_ladder_verifies: `ladder verify` on $tmp/plan.yaml passes, or a
# failure is counted with what did not verify.
e2e_ladder_verifies() {
	"$bin" ladder verify "$tmp/plan.yaml" >"$tmp/verify.txt" 2>&1 || {
		fail "the ladder does not verify"
		grep -v '^ok' "$tmp/verify.txt" >&2
	}
	return 0
}
