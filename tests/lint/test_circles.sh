#!/bin/sh
# test_circles: tests/lint/circles.sh finds what it must. Compiles a few
# files into objects laid out as CMake lays them out: a loop of three
# (a -> b -> c -> a) with a leaf beside it, which must fail naming the
# three and the symbols on their arrows; the same loop with its files
# allowed, which must pass; and a chain with no loop, which must pass.
#
# Usage: test_circles.sh SOURCE_DIR. Exit 0 when every case holds, 1 not.
set -u

src=${1:?usage: test_circles.sh SOURCE_DIR}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
obj=$tmp/CMakeFiles/t.dir/x
mkdir -p "$obj"
cc=${CC:-cc}
fail=0

# one NAME BODY: x/NAME.c compiled to CMakeFiles/t.dir/x/NAME.c.o.
one() {
	printf '%s\n' "$2" >"$tmp/$1.c"
	"$cc" -c -o "$obj/$1.c.o" "$tmp/$1.c" || exit 1
}
run() {
	CIRCLES_MIN_OBJECTS=1 "$src/tests/lint/circles.sh" "$@" >"$tmp/out" 2>&1
}

one a 'int b_f(void); int a_f(void) { return b_f(); }'
one b 'int c_f(void); int leaf_f(void); int b_f(void) { return c_f() + leaf_f(); }'
one c 'int a_f(void); int c_f(void) { return a_f(); }'
one leaf 'int leaf_f(void) { return 1; }'
: >"$tmp/none"
printf 'x/?.c\n' >"$tmp/some"

if run "$tmp/none" "$obj"/*.o; then
	echo "test_circles: the loop a -> b -> c -> a passed" >&2; fail=1
fi
for want in 'a circle of 3 files' 'x/a.c -> x/b.c: b_f' 'x/b.c -> x/c.c: c_f' \
    'x/c.c -> x/a.c: a_f' '1 circles outside the allow-list'; do
	grep -qF "$want" "$tmp/out" ||
		{ echo "test_circles: no line '$want' in:" >&2; cat "$tmp/out" >&2; fail=1; }
done
if grep -q 'x/leaf.c' "$tmp/out"; then
	echo "test_circles: the leaf was named in a circle" >&2; fail=1
fi
run "$tmp/some" "$obj"/*.o ||
	{ echo "test_circles: the allowed loop failed:" >&2; cat "$tmp/out" >&2; fail=1; }

one c 'int c_f(void) { return 2; }'
run "$tmp/none" "$obj"/*.o ||
	{ echo "test_circles: a chain without a loop failed:" >&2; cat "$tmp/out" >&2; fail=1; }

[ $fail -eq 0 ] && echo "test_circles: every case holds"
exit $fail
