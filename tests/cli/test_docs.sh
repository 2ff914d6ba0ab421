#!/bin/sh
# test_docs: the documentation cannot drift from the code. docs/commands.md's
# command table is exactly what packaging/gendocs makes of
# docs/commands.txt; every verb of main.c's table is in docs/commands.txt;
# every key the plan loader knows (the keys[] tables of plans/*.c) is in
# docs/plan-format.txt; every serve.yaml key (plans/serve_config.c) is in
# docs/operating.md's serve.yaml; and the man pages the build made read without a
# warning from groff or man. Usage: test_docs.sh SOURCE_DIR MAN_DIR
set -u
src=$1
mandir=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

"$src/packaging/gendocs" check-page "$src/docs/commands.md" "$src/docs/commands.txt" \
    >"$tmp/diff" 2>&1 || fail "docs/commands.md's command table is not docs/commands.txt's: $(cat "$tmp/diff")"

# The verbs: main.c's rows { "NAME", cli_... }, against "@ NAME" (or
# "@ NAME SUBVERB") in docs/commands.txt.
sed -n 's/^[[:space:]]*{ "\([a-z]*\)", cli_.*/\1/p' "$src/orchestrator/cli/main.c" >"$tmp/verbs"
[ -s "$tmp/verbs" ] || fail "no verbs found in orchestrator/cli/main.c"
for v in $(cat "$tmp/verbs"); do
	grep -qE "^@ $v( |\$)" "$src/docs/commands.txt" ||
	    fail "verb '$v' (orchestrator/cli/main.c) is not in docs/commands.txt"
done

# The plan's keys: every string of a keys[] table in plans/*.c (but
# serve_config.c: serve.yaml's keys, docs/operating.md's "serve.yaml"), against
# the last word of the "@ KEY" lines of docs/plan-format.txt.
set --
for f in "$src"/plans/*.c; do
	case $f in */serve_config.c) ;; *) set -- "$@" "$f" ;; esac
done
awk '/keys\[\] = \{/ { on = 1 }
on { s = $0; while (match(s, /"[^"]*"/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } }
on && /};/ { on = 0 }' "$@" | sort -u >"$tmp/keys"
[ "$(wc -l <"$tmp/keys")" -gt 30 ] || fail "only $(wc -l <"$tmp/keys") plan keys found in plans/*.c"
sed -n 's/^@ //p' "$src/docs/plan-format.txt" | sed 's/.*[].]//' | sort -u >"$tmp/documented"
for k in $(comm -23 "$tmp/keys" "$tmp/documented"); do
	fail "plan key '$k' (plans/*.c) is not in docs/plan-format.txt"
done

# serve.yaml's keys: every string of a keys[] table in plans/serve_config.c,
# against the keys of the example under docs/operating.md's "## serve.yaml".
awk '/keys\[\] = \{/ { on = 1 }
on { s = $0; while (match(s, /"[^"]*"/)) { print substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH) } }
on && /};/ { on = 0 }' "$src/plans/serve_config.c" | sort -u >"$tmp/serve_keys"
[ "$(wc -l <"$tmp/serve_keys")" -gt 10 ] || fail "only $(wc -l <"$tmp/serve_keys") serve.yaml keys found in plans/serve_config.c"
awk '/^## serve.yaml/ { on = 1; next } on && /^## / { on = 0 } on' "$src/docs/operating.md" |
    sed -n 's/^[ -]*\([a-z_]*\):.*/\1/p' | sort -u >"$tmp/serve_documented"
for k in $(comm -23 "$tmp/serve_keys" "$tmp/serve_documented"); do
	fail "serve.yaml key '$k' (plans/serve_config.c) is not in docs/operating.md's serve.yaml"
done

# The man pages, as lintian and man read them.
for page in cutover.1 cutover-plan.5; do
	[ -s "$mandir/$page" ] || { fail "$mandir/$page was not generated"; continue; }
	groff -ww -man -z "$mandir/$page" >"$tmp/groff" 2>&1 || fail "groff failed on $page"
	[ -s "$tmp/groff" ] && fail "groff -ww on $page: $(cat "$tmp/groff")"
	for w in 60 80 132; do
		LC_ALL=C.UTF-8 MANWIDTH=$w man --warnings -E UTF-8 -l -Tutf8 "$mandir/$page" \
		    >"$tmp/man" 2>"$tmp/manerr" || fail "man -l $page failed"
		[ -s "$tmp/manerr" ] && fail "man --warnings on $page at $w columns: $(cat "$tmp/manerr")"
	done
	MANWIDTH=80 man -l "$mandir/$page" 2>/dev/null | grep -q '^SEE ALSO' ||
	    fail "$page renders without SEE ALSO"
done
contains "$mandir/cutover.1" 'cutover ladder declare'
contains "$mandir/cutover-plan.5" 'watch.probe_every'

[ "$failures" -eq 0 ] || { echo "test_docs: $failures failure(s)" >&2; exit 1; }
echo "test_docs: ok"
