#!/bin/sh
# test_gen: ladder.tsv is what gen_ladder.sh makes from this build's
# `cutover encode`: a change to the ladder's encoding or names that the
# vectors do not show fails here (regenerate them with gen_ladder.sh and
# review the diff).
#
# Usage: test_gen.sh CUTOVER_BINARY SOURCE_DIR
set -u
bin=$1
src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$src/tests/vectors/gen_ladder.sh" "$bin" >"$out" || { echo "test_gen: gen_ladder.sh failed" >&2; exit 1; }
if ! diff -u "$src/tests/vectors/ladder.tsv" "$out"; then
	echo "test_gen: tests/vectors/ladder.tsv differs from what cutover encode says now;" \
	    "regenerate it: tests/vectors/gen_ladder.sh build/cutover > tests/vectors/ladder.tsv" >&2
	exit 1
fi
echo "test_gen: $(grep -vc -e '^#' -e '^naming' "$out") vectors match"
