#!/bin/sh
# circles: no source file calls into another that calls back into it,
# directly or around a loop. Reads the build's object files with nm (what
# each defines, what each leaves undefined), draws an arrow from a file to
# every file that defines a symbol it uses, and names every circle: each
# group of files that reach one another (a strongly connected component of
# more than one file), with the symbols on each of its arrows. A circle is
# what makes a file impossible to read, test or change without the others;
# a leaf (a file others call and that calls none of them back) is not.
#
# The allow-list names, one shell pattern a line, the files whose circles
# are tolerated for now; a circle is allowed only when every one of its
# files matches a pattern. Lines starting with # are comments.
#
# Usage: circles.sh ALLOWLIST OBJECT... (CMakeLists.txt's lint.circles
# passes every object of the product's targets). Exit 0 when no circle
# outside the list is left, 1 otherwise, 2 on a usage error.
set -u

allow=${1:?usage: circles.sh ALLOWLIST OBJECT...}
shift
[ -r "$allow" ] || { echo "circles: cannot read the allow-list $allow" >&2; exit 2; }
# Fewer objects than the product has means a wrong list, not a clean one
# (CIRCLES_MIN_OBJECTS: the test of this script, on a few objects).
[ $# -ge "${CIRCLES_MIN_OBJECTS:-20}" ] ||
	{ echo "circles: only $# object files given" >&2; exit 2; }
for o in "$@"; do
	[ -r "$o" ] || { echo "circles: $o is missing (build first)" >&2; exit 2; }
done

# One line per symbol: "D FILE SYMBOL" for a global definition, "U FILE
# SYMBOL" for a use. FILE is the source path: the object's path after
# CMakeFiles/TARGET.dir/, without its ".o".
nm -A "$@" | awk '
{
	obj = $1
	sub(/:[0-9a-fA-F]*$/, "", obj)
	src = obj
	sub(/^.*\/CMakeFiles\/[^\/]*\.dir\//, "", src)
	sub(/\.o$/, "", src)
	if ($2 == "U") print "U", src, $3
	else if (NF == 3 && $2 ~ /^[A-TV-Z]$/) print "D", src, $3
}' | awk -v allowfile="$allow" '
BEGIN {
	npat = 0
	while ((getline line < allowfile) > 0) {
		if (line ~ /^[ \t]*(#|$)/) continue
		gsub(/^[ \t]+|[ \t]+$/, "", line)
		pat[++npat] = line
	}
}
$1 == "D" { def[$3] = $2; files[$2] = 1; next }
{ use[++nuse] = $2 SUBSEP $3; files[$2] = 1 }

# glob_re(p): the shell pattern p (*, ?) as an anchored regular expression.
function glob_re(p,    r, i, c) {
	r = "^"
	for (i = 1; i <= length(p); i++) {
		c = substr(p, i, 1)
		if (c == "*") r = r ".*"
		else if (c == "?") r = r "."
		else if (c ~ /[.+()|^$\\{}\[\]]/) r = r "\\" c
		else r = r c
	}
	return r "$"
}

# allowed(f): 1 when the file f matches a pattern of the allow-list.
function allowed(f,    i) {
	for (i = 1; i <= npat; i++) if (f ~ glob_re(pat[i])) return 1
	return 0
}

# strong(v): Tarjan'\''s strongly connected components from v; each finished
# component of more than one file becomes circle number ncirc.
function strong(v,    k, w, n, i, m) {
	index_of[v] = low[v] = ++counter
	stack[++sp] = v
	on[v] = 1
	for (k = 1; k <= nout[v]; k++) {
		w = out[v, k]
		if (!(w in index_of)) {
			strong(w)
			if (low[w] < low[v]) low[v] = low[w]
		} else if (on[w] && index_of[w] < low[v]) low[v] = index_of[w]
	}
	if (low[v] != index_of[v]) return
	n = 0
	do {
		w = stack[sp--]
		on[w] = 0
		member[++n] = w
	} while (w != v)
	if (n < 2) return
	ncirc++
	csize[ncirc] = n
	for (i = 1; i <= n; i++) {
		circ[ncirc, i] = member[i]
		comp[member[i]] = ncirc
	}
}

END {
	# The arrows, each with the symbols it carries, in the order first seen.
	for (u = 1; u <= nuse; u++) {
		split(use[u], p, SUBSEP)
		from = p[1]; sym = p[2]
		if (!(sym in def)) continue
		to = def[sym]
		if (to == from) continue
		if (!((from, to) in syms)) {
			out[from, ++nout[from]] = to
			syms[from, to] = sym
		} else if (index(" " syms[from, to] " ", " " sym " ") == 0)
			syms[from, to] = syms[from, to] " " sym
	}
	nf = 0
	for (f in files) order[++nf] = f
	# Sorted, so that the report reads the same on every run.
	for (i = 2; i <= nf; i++) {
		f = order[i]
		for (j = i - 1; j >= 1 && order[j] > f; j--) order[j + 1] = order[j]
		order[j + 1] = f
	}
	for (i = 1; i <= nf; i++) {
		f = order[i]
		# Each file'\''s arrows sorted too.
		for (a = 2; a <= nout[f]; a++) {
			t = out[f, a]
			for (b = a - 1; b >= 1 && out[f, b] > t; b--) out[f, b + 1] = out[f, b]
			out[f, b + 1] = t
		}
	}
	for (i = 1; i <= nf; i++) if (!(order[i] in index_of)) strong(order[i])

	bad = 0; tolerated = 0
	for (c = 1; c <= ncirc; c++) {
		ok = 1
		for (i = 1; i <= csize[c]; i++) if (!allowed(circ[c, i])) ok = 0
		# Members sorted for the report.
		for (i = 2; i <= csize[c]; i++) {
			f = circ[c, i]
			for (j = i - 1; j >= 1 && circ[c, j] > f; j--) circ[c, j + 1] = circ[c, j]
			circ[c, j + 1] = f
		}
		if (ok) tolerated++; else bad++
		printf "circles: %s circle of %d files:\n", ok ? "allowed" : "a", csize[c]
		for (i = 1; i <= csize[c]; i++) {
			f = circ[c, i]
			for (k = 1; k <= nout[f]; k++) {
				t = out[f, k]
				if (comp[t] == c) printf "  %s -> %s: %s\n", f, t, syms[f, t]
			}
		}
	}
	printf "circles: %d files, %d circles outside the allow-list, %d allowed\n", nf, bad, tolerated
	if (bad) {
		fflush()
		print "circles: break each circle above: make the file others call a leaf, or give the shared part a file of its own" > "/dev/stderr"
		exit 1
	}
}'
