#!/bin/sh
# test_doc_pages: what README.md and the pages under docs/ claim that a
# command can check. Every link leads to a file of the repository (nothing
# outside it, nothing missing) and every #anchor to a heading of its page;
# every whole plan they show (a ```yaml block starting with `name:`) passes
# `cutover check`; every `$ cutover encode` example prints what it shows;
# every `cutover VERB` they name is a verb of docs/commands.txt; every
# metric they name (`cutover_...`) is one the code has; README.md stays a
# landing page (at most 200 lines, the two commands as they are invoked);
# and no page, example or comment cites an issue number.
#
# Usage: test_doc_pages.sh CUTOVER_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
# shellcheck source=cli_lib.sh
. "$(dirname "$0")/cli_lib.sh"

cd "$src" || exit 1
pages="README.md $(find docs -name '*.md' | sort | tr '\n' ' ')"

# slug HEADING: the anchor GitHub gives a heading (lower case, spaces to
# '-', punctuation but '-' and '_' dropped).
slug() {
	printf '%s\n' "$1" | tr '[:upper:]' '[:lower:]' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}

# Links: [text](target) outside code blocks; http(s) and mailto are not ours.
links=0
for page in $pages; do
	dir=$(dirname "$page")
	awk '/^```/ { code = !code; next } !code' "$page" |
	    grep -o '](\([^)]*\))' | sed 's/^](//; s/)$//' >"$tmp/links" || true
	while IFS= read -r target; do
		case $target in http://* | https://* | mailto:*) continue ;; esac
		links=$((links + 1))
		file=${target%%#*}
		anchor=
		case $target in *'#'*) anchor=${target#*#} ;; esac
		[ -n "$file" ] && path=$dir/$file || path=$page
		case $target in
		*../shared* | /*) fail "$page links outside the repository: $target"; continue ;;
		esac
		real=$(realpath -m "$path")
		case $real in
		"$(realpath "$src")"/*) ;;
		*) fail "$page links outside the repository: $target"; continue ;;
		esac
		if [ ! -e "$path" ]; then
			# docs/alerts.md is written from the code's alert table by its
			# own generator; a tree without it yet still links it.
			[ "$(realpath -m "$path")" = "$(realpath -m docs/alerts.md)" ] && continue
			fail "$page links $target, which does not exist"
			continue
		fi
		if [ -n "$anchor" ] && [ -f "$path" ]; then
			found=
			while IFS= read -r h; do
				[ "$(slug "$h")" = "$anchor" ] && { found=1; break; }
			done <<EOF
$(awk '/^```/ { code = !code; next } !code && /^#+ / { sub(/^#+ /, ""); print }' "$path")
EOF
			[ -n "$found" ] || fail "$page links $target: $file has no heading with the anchor #$anchor"
		fi
	done <"$tmp/links"
done
[ "$links" -ge 40 ] || fail "only $links links found in the pages"

# Whole plans: each ```yaml block whose first line is `name: ...`.
plans=0
for page in $pages; do
	awk -v out="$tmp/plan" '
	/^```yaml$/ { n++; f = out "." n ".yaml"; on = 1; first = 1; next }
	on && /^```$/ { on = 0; close(f); next }
	on { if (first && $0 !~ /^name: /) { on = 0; next } first = 0; print > f }
	' "$page"
	for f in "$tmp"/plan.*.yaml; do
		[ -f "$f" ] || continue
		plans=$((plans + 1))
		"$bin" check "$f" >"$tmp/check" 2>&1 ||
		    fail "$page: the plan '$(sed -n 's/^name: //p' "$f")' fails cutover check: $(grep -m 3 ':[0-9]*:[0-9]*:' "$tmp/check")"
		rm -f "$f"
	done
done
[ "$plans" -ge 6 ] || fail "only $plans whole plans found (README and the five guides show one each)"

# `$ cutover encode ARGS` examples: the next line is what it prints.
encodes=0
for page in $pages; do
	awk '/^\$ cutover encode / { getline out; print substr($0, 18) "\t" out }' "$page" >"$tmp/encodes"
	while IFS='	' read -r args want; do
		encodes=$((encodes + 1))
		# shellcheck disable=SC2086 # the example's own words
		got=$("$bin" encode $args 2>&1)
		[ "$got" = "$want" ] || fail "$page: cutover encode $args prints '$got', the page shows '$want'"
	done <"$tmp/encodes"
done
[ "$encodes" -ge 2 ] || fail "only $encodes encode examples found"

# `cutover VERB` in backquotes: a verb of docs/commands.txt.
for page in $pages; do
	grep -o '`cutover [a-z][a-z-]*' "$page" | sed 's/^`cutover //' | sort -u >"$tmp/verbs"
	while IFS= read -r v; do
		grep -qE "^@ $v( |\$)" docs/commands.txt || fail "$page names \`cutover $v\`, which is no verb of docs/commands.txt"
	done <"$tmp/verbs"
done

# Metrics (and other cutover_ names) the pages give: the code has them.
for page in $pages; do
	grep -o 'cutover_[a-z_]*[a-z]' "$page" | sort -u >"$tmp/names"
	while IFS= read -r m; do
		grep -rqsF "$m" orchestrator web state plans CMakeLists.txt dashboards ||
		    fail "$page names $m, which nothing in the code has"
	done <"$tmp/names"
done

# README.md: a landing page, and the two commands as they are invoked.
n=$(wc -l <README.md)
[ "$n" -le 200 ] || fail "README.md has $n lines; a landing page has at most 200 (move the rest into docs/)"
for c in scripts/demo scripts/test; do
	grep -q "^$c " README.md || fail "README.md does not show the command $c"
	[ -x "$c" ] || fail "$c is not an executable script"
done
[ -f docs/status-page.png ] || fail "docs/status-page.png, README's picture, is missing"

# No issue numbers: a reader of the tree cannot look them up.
pat='issue ''[0-9]+'
grep -rnIiE "$pat" README.md docs examples plans orchestrator state web tests scripts packaging \
    bench dashboards CMakeLists.txt --exclude-dir=node_modules >"$tmp/issues" 2>/dev/null
[ -s "$tmp/issues" ] && fail "issue numbers in the tree: $(head -n 5 "$tmp/issues")"

[ "$failures" -eq 0 ] || { echo "test_doc_pages: $failures failure(s)" >&2; exit 1; }
echo "test_doc_pages: $links links, $plans plans, $encodes encode examples: ok"
