# load_plan.sh: sourced by tests/e2e/test_load.sh and bench/load — the plan
# they run through `cutover serve` (declare, verify and canary a ladder of
# their own) and how long it takes. Needs lib.sh, $tmp, $name, $server,
# $token, $bin and the CUTOVER_TEST_* broker variables (or the bench's own).
# shellcheck shell=sh
# $tmp, $name, $server, $token and $bin are the sourcing script's (above):
# shellcheck disable=SC2154

load_write_plan() { # SUFFIX: writes $tmp/planSUFFIX.yaml
	cat >"$tmp/plan$1.yaml" <<PLAN
name: $name$1
$(e2e_broker_yaml)
old:
  queues: { names: [$name$1.old] }
ladder:
  prefix: $name$1
  unit: 100ms
  levels: 8
  destinations: [$name$1.dest]
  create_destinations: true
canary:
  delays: [100ms, 700ms, 1500ms]
steps: [declare_ladder, verify_ladder, canary]
PLAN
}

load_submit() { # SUFFIX: prints the plan's id
	curl -sS -X POST -H "Authorization: Bearer $token" --data-binary @"$tmp/plan$1.yaml" \
	    "$server/api/plans" | jq -r .id
}

# Waits (up to 3 minutes, inside ctest's 300 s) for plan ID to succeed
# and prints the milliseconds from its first event to its last, from its
# history. Prints 0 and returns 1 when it did not succeed.
load_run_time() { # ID
	_t=0
	until [ "$(curl -fsS "$server/api/plans/$1" | jq -r .status)" = succeeded ]; do
		_t=$((_t + 1))
		if [ $_t -gt 1800 ]; then
			curl -fsS "$server/api/plans/$1" | jq -c '.steps[] | {kind, status, error}' >&2
			echo 0
			return 1
		fi
		sleep 0.1
	done
	curl -fsS "$server/api/plans/$1/history" |
	    jq '(.events | map(.ts_ms) | max) - (.events | map(.ts_ms) | min)'
}

# Tears down the ladders of $tmp/plan*.yaml and deletes what else the
# plans left on the broker (destinations, old queues, fences).
load_cleanup_broker() {
	for _plan in "$tmp"/plan*.yaml; do
		[ -f "$_plan" ] || continue
		"$bin" ladder teardown "$_plan" >/dev/null 2>&1
		_q=$(basename "$_plan" .yaml)
		e2e_broker_remove "$name${_q#plan}"
	done
}
