#!/bin/sh
# test_architecture: docs/ARCHITECTURE.md stays true of the tree. Every
# folder, file and file pattern it names in backquotes or in its drawing
# must exist (a bare file name anywhere under the source folders, a path
# from the top, a pattern such as `move_old*.c` or `itest_run.[ch]`
# matching at least one file); every table it places in a file
# (`routes[]` in `web/api.c`) must be defined there; every code table it
# names (`BROKER_STATUS_MAP`) must be defined in a header; and it links
# nothing outside the repository. A name in capitals standing for any
# name (`NAME.c`, `itest_AREA.[ch]`) is a placeholder, not a file.
#
# Usage: test_architecture.sh SOURCE_DIR [DOC]. Exit 0 when every name
# holds, 1 naming each one that does not.
set -u

src=${1:?usage: test_architecture.sh SOURCE_DIR [DOC]}
cd "$src" || exit 1
doc=${2:-docs/ARCHITECTURE.md}
[ -f "$doc" ] || { echo "test_architecture: $doc is missing" >&2; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
bad=0
checked=0

# fail WHAT: one name that no longer holds.
fail() {
	echo "test_architecture: $doc: $1" >&2
	bad=$((bad + 1))
}

# The tree's files, once (node_modules and build output are not ours).
find . -path ./build -prune -o -path './build-*' -prune -o -name node_modules -prune \
    -o -path ./.git -prune -o -type f -print | sed 's|^\./||' >"$tmp/files"

# exists NAME: a path from the top (file or folder), a path or a bare
# file name ending one in the tree, or a pattern of either matching
# something.
exists() {
	case $1 in
	*/) [ -d "$1" ] && return 0 ;;
	*/*) [ -e "$1" ] && return 0 ;;
	esac
	# A shell pattern over the tree's paths, from the top or from any
	# folder (`broker/broker_tls.c` is orchestrator/'s, a bare name
	# matches the last component).
	while IFS= read -r f; do
		# shellcheck disable=SC2254 # the doc's name is the pattern
		case $f in
		$1 | */$1) return 0 ;;
		esac
	done <"$tmp/files"
	return 1
}

# Backquoted spans, one a line, and the drawing's folders.
grep -o '`[^`]*`' "$doc" | tr -d '`' | sort -u >"$tmp/spans"
sed -n '/^```$/,/^```$/p' "$doc" | grep -o '[a-z_]*/[a-z_/]*' | sort -u >>"$tmp/spans"

while IFS= read -r s; do
	# A name of a file or folder: letters, digits, _ . / * [ ] - only,
	# with a dot-extension we keep or a slash; no spaces (code, calls).
	case $s in
	*' '* | *'('* | *'='* | *'<'* | *'>'* | *'{'* | *:* | -* | /*) continue ;;
	esac
	case $s in
	*.c | *.h | *.def | *.js | *.cmake | *.md | *.sh | *.allow | *.json | *.txt | *.\[ch\] | */) ;;
	*/*) case $s in *.*) continue ;; esac ;;
	*) continue ;;
	esac
	# Placeholders: a name in capitals standing for any name.
	case $s in
	*NAME* | *AREA* | *MODULE*) continue ;;
	esac
	# DB.lock and the like are files at run time, not in the tree.
	case $s in
	DB.*) continue ;;
	esac
	checked=$((checked + 1))
	exists "$s" || fail "names \`$s\`, which is not in the tree"
done <"$tmp/spans"

# Tables placed in a file: "`name[]` in `path`".
grep -o '`[a-z_]*\[\]` in `[^`]*`' "$doc" | sort -u |
    sed 's/^`\([a-z_]*\)\[\]` in `\([^`]*\)`$/\1 \2/' >"$tmp/tables"
while read -r name file; do
	checked=$((checked + 1))
	if [ ! -f "$file" ]; then
		fail "places the table ${name}[] in $file, which is not in the tree"
	elif ! grep -q "[^a-z_]$name\[\] *=" "$file" && ! grep -q "^$name\[\] *=" "$file"; then
		fail "places the table ${name}[] in $file, which does not define it"
	fi
done <"$tmp/tables"

# Code tables: "`SOMETHING_MAP`" defined as a macro in a header.
grep -o '`[A-Z_]*_MAP`' "$doc" | tr -d '`' | sort -u >"$tmp/maps"
while IFS= read -r m; do
	checked=$((checked + 1))
	grep -rqs "^#define $m(" --include='*.h' orchestrator plans state web ||
	    fail "names the code table $m, which no header defines"
done <"$tmp/maps"

# Nothing outside the repository: a clone holds only what is in it.
if grep -n '\.\./shared\|\.\./\.\./' "$doc" >"$tmp/out"; then
	while IFS= read -r l; do
		fail "links outside the repository (line ${l%%:*})"
	done <"$tmp/out"
fi

[ "$checked" -ge 50 ] || fail "only $checked names found: is the document the map it should be?"
if [ "$bad" -gt 0 ]; then
	echo "test_architecture: $bad of $checked names do not hold; change the document with the tree" >&2
	exit 1
fi
echo "test_architecture: $checked names in $doc hold"
