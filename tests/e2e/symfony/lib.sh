# symfony/lib.sh: what the Symfony e2e scripts share (sourced after
# tests/e2e/lib.sh): the app's processes and their report. Needs $tmp,
# $name, $feature and the CUTOVER_TEST_* variables.
# The sourcing script sets those and reads the sf_* results:
# shellcheck disable=SC2154,SC2034
# shellcheck shell=sh

sf_dir=$(dirname "$0")/symfony

# sf_require WHO: exits 1, naming WHO, unless the test broker's and
# Unleash's variables are set and php is there.
sf_require() {
	e2e_require "$1"
	command -v php >/dev/null || { echo "$1: php is missing (scripts/setup)" >&2; exit 1; }
}

# sf_env: exports what the app reads (bootstrap.php): the broker, the
# transport's names after $name, a 100 ms ladder of 8 levels (25.5 s),
# the feature $feature.
sf_env() {
	_hostport=${CUTOVER_TEST_AMQP#amqp://}
	export SF_DSN="amqp://$CUTOVER_TEST_USER:$CUTOVER_TEST_PASSWORD@$_hostport"
	export SF_NAME="$name" SF_UNIT_MS=100 SF_LEVELS=8 SF_FEATURE="$feature"
	export UNLEASH_URL="$CUTOVER_TEST_UNLEASH_URL"
	export UNLEASH_CLIENT_TOKEN="$CUTOVER_TEST_UNLEASH_CLIENT_TOKEN"
}

# sf_worker: starts the worker (log $tmp/worker.log), sets worker_pid.
sf_worker() {
	SF_LOG=$tmp/worker.log SF_STOP_FILE=$tmp/worker.stop \
	    php "$sf_dir/worker.php" 2>>"$tmp/worker.err" &
	worker_pid=$!
}

# sf_producer RATE DELAYS LATE_DELAYS: starts the producer (log
# $tmp/producer.log; the late delays once $tmp/late exists), sets
# producer_pid.
sf_producer() {
	SF_LOG=$tmp/producer.log SF_STOP_FILE=$tmp/producer.stop SF_LATE_FILE=$tmp/late \
	    SF_RATE=$1 SF_DELAYS=$2 SF_DELAYS_LATE=$3 \
	    php "$sf_dir/producer.php" 2>>"$tmp/producer.err" &
	producer_pid=$!
}

# sf_outcomes: one line per send (id and attempt) that was logged:
# PATH STATUS LATENESS_MS, STATUS ok, early or lost; a receive beyond the
# sends of its attempt is a line "dup". Sends are in both logs (the worker
# sends the retries), receives in the worker's. One attempt may be sent
# twice: a message delivered twice (a move that a kill cut between the
# ladder's confirm and the old queue's ack) is handled twice, and a failed
# handling sends its retry again. So each attempt's receives are matched
# to its sends in time order (copies of one attempt wait the same delay,
# so they come out in the order they went in), each receive against the
# due time of its own send; an early one is named on stderr with every
# send and receive of its attempt.
sf_outcomes() {
	cat "$tmp/producer.log" "$tmp/worker.log" 2>/dev/null | awk -F '\t' '
	    function sort(a, k, n, b,    i, j, v, w) {
	        for (i = 2; i <= n; i++) {
	            v = a[k, i]; w = b[k, i]
	            for (j = i - 1; j >= 1 && a[k, j] > v; j--) { a[k, j + 1] = a[k, j]; b[k, j + 1] = b[k, j] }
	            a[k, j + 1] = v; b[k, j + 1] = w
	        }
	    }
	    $1 == "send" { k = $2 ":" $3; n = ++ns[k]; due[k, n] = $4 + $5; path[k, n] = $6 }
	    $1 == "recv" { k = $2 ":" $3; n = ++nr[k]; got[k, n] = $4; none[k, n] = "" }
	    END { for (k in ns) {
	        sort(due, k, ns[k], path); sort(got, k, nr[k] + 0, none)
	        for (i = 1; i <= ns[k]; i++) {
	            if (i > nr[k]) { print path[k, i] "\tlost\t-"; continue }
	            print path[k, i] "\t" (got[k, i] < due[k, i] ? "early" : "ok") "\t" got[k, i] - due[k, i]
	            if (got[k, i] < due[k, i]) {
	                printf "early: %s, sends due", k > "/dev/stderr"
	                for (j = 1; j <= ns[k]; j++) printf " %s (%s)", due[k, j], path[k, j] > "/dev/stderr"
	                printf ", received" > "/dev/stderr"
	                for (j = 1; j <= nr[k]; j++) printf " %s", got[k, j] > "/dev/stderr"
	                printf "\n" > "/dev/stderr"
	            }
	        }
	        for (i = ns[k] + 1; i <= nr[k]; i++) print "dup"
	    } }'
}

# sf_pending: how many sends were not received yet, plus how many
# messages were not handled yet (their last attempt failed, so a retry is
# coming: between that receive and the retry's send nothing is pending).
sf_pending() {
	cat "$tmp/producer.log" "$tmp/worker.log" 2>/dev/null | awk -F '\t' '
	    $1 == "send" { sent[$2 ":" $3] = 1; if ($3 == 0) msg[$2] = 1 }
	    $1 == "recv" { got[$2 ":" $3] = 1 }
	    $1 == "done" { done[$2] = 1 }
	    END { n = 0; for (k in sent) if (!(k in got)) n++
	        for (m in msg) if (!(m in done)) n++
	        print n }'
}

# sf_drained: whether every send was received and every message handled.
sf_drained() {
	[ "$(sf_pending)" -eq 0 ]
}

# sf_stop_producer, sf_stop_worker: stop each by its stop file (the
# worker after the producer has stopped and every send arrived, so that
# it takes every retry).
sf_stop_producer() {
	touch "$tmp/producer.stop"
	[ -n "${producer_pid:-}" ] && wait "$producer_pid" 2>/dev/null
	producer_pid=
}
sf_stop_worker() {
	touch "$tmp/worker.stop"
	[ -n "${worker_pid:-}" ] && wait "$worker_pid" 2>/dev/null
	worker_pid=
}

# sf_report: prints per path (old, ladder, all) the sends, lost, early,
# duplicates and lateness p50/p99/max (nearest rank) in ms, and sets
# sf_lost, sf_early, sf_sends, sf_retries, sf_ladder, sf_old, sf_messages
# and sf_handled (messages whose handler succeeded).
sf_report() {
	sf_outcomes >"$tmp/outcomes"
	printf '%-7s %6s %5s %6s %5s %7s %7s %7s\n' path sends lost early dups p50_ms p99_ms max_ms
	for _p in old ladder all; do
		awk -F '\t' -v p="$_p" '$1 == "dup" { d++ } $1 != "dup" && (p == "all" || $1 == p) {
		    n++; if ($2 == "lost") l++; else { if ($2 == "early") e++; print $3 > "/dev/stderr" } }
		    END { printf "%d %d %d %d\n", n, l, e, (p == "all" ? d : 0) }' "$tmp/outcomes" \
		    2>"$tmp/late.$_p" >"$tmp/counts.$_p"
		sort -n "$tmp/late.$_p" -o "$tmp/late.$_p"
		read -r _n _l _e _d <"$tmp/counts.$_p"
		_c=$(wc -l <"$tmp/late.$_p")
		_p50=- _p99=- _max=-
		if [ "$_c" -gt 0 ]; then
			_p50=$(sed -n "$(((_c * 50 + 99) / 100))p" "$tmp/late.$_p")
			_p99=$(sed -n "$(((_c * 99 + 99) / 100))p" "$tmp/late.$_p")
			_max=$(tail -n 1 "$tmp/late.$_p")
		fi
		printf '%-7s %6s %5s %6s %5s %7s %7s %7s\n' "$_p" "$_n" "$_l" "$_e" "$_d" "$_p50" "$_p99" "$_max"
		case $_p in
		old) sf_old=$_n ;;
		ladder) sf_ladder=$_n ;;
		all) sf_sends=$_n sf_lost=$_l sf_early=$_e ;;
		esac
	done
	sf_messages=$(awk -F '\t' '$1 == "send" && $3 == 0' "$tmp/producer.log" | wc -l)
	sf_retries=$(awk -F '\t' '$1 == "send" && $3 > 0' "$tmp/worker.log" | wc -l)
	sf_handled=$(awk -F '\t' '$1 == "done" { print $2 }' "$tmp/worker.log" | sort -u | wc -l)
	echo "messages $sf_messages (handled $sf_handled), retries $sf_retries" \
	    "(sends $sf_sends: old path $sf_old, ladder $sf_ladder)"
}

# sf_old_queues: the names of Symfony's delay queues of this run.
sf_old_queues() {
	e2e_mgmt GET "/queues/%2F?columns=name" | jq -r --arg p "delay_$name.x_" \
	    '.[] | select(.name | startswith($p)) | .name'
}

# sf_cleanup: for an EXIT trap, before e2e_cleanup_run: stops the app and
# deletes Symfony's delay queues (e2e_broker_remove knows only NAME.*).
sf_cleanup() {
	[ -n "${producer_pid:-}" ] && kill "$producer_pid" 2>/dev/null && wait "$producer_pid" 2>/dev/null
	[ -n "${worker_pid:-}" ] && kill "$worker_pid" 2>/dev/null && wait "$worker_pid" 2>/dev/null
	for _q in $(sf_old_queues 2>/dev/null); do
		e2e_mgmt DELETE "/queues/%2F/$(printf '%s' "$_q" | jq -sRr @uri)" >/dev/null 2>&1
	done
	return 0
}
