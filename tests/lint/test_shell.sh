#!/bin/sh
# test_shell: shellcheck over every shell script of scripts/, tests/, bench/
# and .ci/ at the warning level (errors and warnings; style and info notes
# are not findings). A script is one with a shell shebang or a name ending
# in .sh (the sourced libraries, which carry a `# shellcheck shell=sh`
# directive); sourced files are followed through their `# shellcheck
# source=` directives (.shellcheckrc). A finding is fixed, or disabled on
# its line with a `# shellcheck disable=SCxxxx` and the reason beside it.
#
# Usage: test_shell.sh SOURCE_DIR. Exit 0 when clean, 1 on any finding.
set -u

src=${1:?usage: test_shell.sh SOURCE_DIR}
cd "$src" || exit 1
command -v shellcheck >/dev/null ||
    { echo "test_shell: shellcheck is missing (scripts/setup installs it)" >&2; exit 1; }

# Every file under the four directories, found by its first line or its
# name: a script without the .sh ending (bench/run, scripts/broker) counts
# too. node_modules (tests/browser, scripts/unleash-server) is not ours.
set --
for f in $(find scripts tests bench .ci -type d -name node_modules -prune -o -type f -print | sort); do
	case $f in
	*.sh) set -- "$@" "$f" ;;
	*)
		case $(head -n 1 "$f" 2>/dev/null) in
		'#!'*/sh | '#!'*/sh' '* | '#!'*/bash* | '#!'*/dash* | '#!'*'env sh'* | '#!'*'env bash'*)
			set -- "$@" "$f" ;;
		esac
		;;
	esac
done
[ $# -ge 30 ] || { echo "test_shell: only $# shell scripts found in $src" >&2; exit 1; }

echo "test_shell: shellcheck $(shellcheck --version | sed -n 's/^version: //p') -S warning over $# scripts"
if shellcheck -S warning "$@"; then
	echo "test_shell: no finding"
	exit 0
fi
echo "test_shell: fix each finding above, or disable it on its line with the reason" >&2
exit 1
