#!/bin/sh
# test_package: the Debian package, installed on
# this machine as an operator would: CPack builds it from BUILD_DIR into a
# scratch directory, lintian finds no error or warning in it, `apt-get
# install ./cutover_*.deb` installs it with the Depends dpkg-shlibdeps
# computed, and then: `cutover --version`, `cutover check` on the installed
# example plans, the man pages through man, the conffile, the system user,
# `systemd-analyze verify` and `security --offline=yes` on the installed
# unit (its exposure score printed, at most EXPOSURE_MAX), `cutover serve`
# run as the unit's user; `apt-get purge` then leaves no file, directory or
# user behind.
#
# On the host, not in a debootstrap root: the Depends are the libraries
# this machine built with (no mirror needed, seconds instead of minutes),
# the package starts nothing when installed (no service is enabled, and
# there is no systemd here to start one), and the suite runs build/cutover,
# never /usr/bin/cutover. It refuses to run where a cutover package is
# already installed (it would replace an operator's), and needs root.
# Usage: test_package.sh BUILD_DIR VERSION
set -u
build=$1
version=$2
EXPOSURE_MAX=2.0
tmp=$(mktemp -d)
installed=""
failures=0

# shellcheck source=../cli/cli_lib.sh
. "$(dirname "$0")/../cli/cli_lib.sh"

apt() {
	DEBIAN_FRONTEND=noninteractive apt-get -q -y -o DPkg::Lock::Timeout=600 "$@"
}
purge() {
	[ -n "$installed" ] && apt purge cutover >"$tmp/purge.log" 2>&1
	installed=""
}
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; purge; rm -rf "$tmp"' EXIT

[ "$(id -u)" -eq 0 ] || { echo "test_package: needs root (apt-get install)" >&2; exit 1; }
if dpkg-query -W -f '${Status}' cutover 2>/dev/null | grep -q installed; then
	echo "test_package: a cutover package is installed already; this test" \
	    "installs and purges its own: remove it first" >&2
	exit 1
fi

# Build.
cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
    { echo "cpack failed: $(cat "$tmp/cpack.log")" >&2; exit 1; }
deb=$(ls "$tmp"/pkg/cutover_"$version"-1_*.deb 2>/dev/null)
[ -f "$deb" ] || { echo "no cutover_$version-1_*.deb in $(ls "$tmp/pkg")" >&2; exit 1; }
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|; s|/$||' | grep -v '^$' >"$tmp/files"
echo "== the package's files"
dpkg-deb -c "$deb" | awk '{ print $1, $2, $6 }'
for f in /usr/bin/cutover /usr/share/man/man1/cutover.1.gz \
    /usr/share/man/man5/cutover-plan.5.gz /lib/systemd/system/cutover.service \
    /etc/cutover/serve.yaml /usr/share/doc/cutover/copyright \
    /usr/share/doc/cutover/changelog.Debian.gz /usr/share/doc/cutover/examples/orders.yaml; do
	grep -qx "$f" "$tmp/files" || fail "the package lacks $f"
done
dpkg-deb -f "$deb" Depends >"$tmp/depends"
for d in adduser libc6 librabbitmq4 libcurl4 libsqlite3-0 libjansson4 libyaml-0-2 libmicrohttpd12; do
	grep -qE "(^|, )$d( |,|\$)" "$tmp/depends" || fail "Depends lacks $d: $(cat "$tmp/depends")"
done

# lintian: no error and no warning (what is overridden, and why, is in
# packaging/debian/lintian-overrides).
echo "== lintian"
lintian --display-level '>=warning' --show-overrides "$deb" >"$tmp/lintian" 2>&1
grep -v 'running with root privileges' "$tmp/lintian"
grep -qE '^[EW]: ' "$tmp/lintian" && fail "lintian reports errors or warnings (above)"

# Install.
echo "== apt-get install $(basename "$deb")"
cp "$deb" "$tmp/"
(cd "$tmp" && apt install "./$(basename "$deb")") >"$tmp/install.log" 2>&1 ||
    { echo "apt-get install failed: $(cat "$tmp/install.log")" >&2; exit 1; }
installed=yes
expect 0 /usr/bin/cutover --version
head -n 1 "$tmp/out" | grep -qE "^cutover $version \(commit ([0-9a-f]{12}|unknown)\)\$" ||
    fail "/usr/bin/cutover --version: $(head -n 1 "$tmp/out")"
expect 0 /usr/bin/cutover check /usr/share/doc/cutover/examples/*.yaml
contains "$tmp/out" "orders-delays"
dpkg-query -W -f '${Conffiles}\n' cutover | grep -q '^ /etc/cutover/serve.yaml ' ||
    fail "/etc/cutover/serve.yaml is not a conffile: $(dpkg-query -W -f '${Conffiles}' cutover)"
[ "$(man -w cutover)" = /usr/share/man/man1/cutover.1.gz ] || fail "man -w cutover: $(man -w cutover)"
[ "$(man -w 5 cutover-plan)" = /usr/share/man/man5/cutover-plan.5.gz ] ||
    fail "man -w 5 cutover-plan: $(man -w 5 cutover-plan)"
for page in /usr/share/man/man1/cutover.1.gz /usr/share/man/man5/cutover-plan.5.gz; do
	LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l -Tutf8 -Z "$page" >/dev/null 2>"$tmp/manerr"
	[ -s "$tmp/manerr" ] && fail "man --warnings $page: $(cat "$tmp/manerr")"
done
user=$(getent passwd cutover) || fail "no user cutover after install"
uid=$(echo "$user" | cut -d: -f3)
[ "${uid:-1000}" -lt 1000 ] || fail "cutover is not a system user: $user"
case $user in *:/usr/sbin/nologin) ;; *) fail "cutover can log in: $user" ;; esac

# The unit, as systemd 252 reads it.
unit=/lib/systemd/system/cutover.service
echo "== systemd-analyze verify $unit"
systemd-analyze verify "$unit" >"$tmp/verify" 2>&1 || fail "systemd-analyze verify failed"
cat "$tmp/verify"
[ -s "$tmp/verify" ] && fail "systemd-analyze verify printed the above"
systemd-analyze security --offline=yes --no-pager "$unit" >"$tmp/security" 2>&1 ||
    fail "systemd-analyze security failed: $(cat "$tmp/security")"
score=$(sed -n 's/.*Overall exposure level for cutover.service: \([0-9.]*\).*/\1/p' "$tmp/security")
echo "== systemd-analyze security --offline=yes: exposure $score (at most $EXPOSURE_MAX)"
grep '✗' "$tmp/security"
[ -n "$score" ] && awk -v s="$score" -v m="$EXPOSURE_MAX" 'BEGIN { exit !(s <= m) }' ||
    fail "exposure '$score' is above $EXPOSURE_MAX"
for k in 'User=cutover' 'StateDirectory=cutover' 'Restart=on-failure' 'NoNewPrivileges=yes' \
    'ProtectSystem=strict' 'ProtectHome=yes' 'PrivateTmp=yes' \
    'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' 'SystemCallFilter=@system-service' \
    'ExecStart=/usr/bin/cutover serve --config /etc/cutover/serve.yaml'; do
	grep -qx "$k" "$unit" || fail "$unit lacks $k"
done
# The configuration the unit names, once serve reads one (serveconf's
# --config): until then this says so rather than passing.
if /usr/bin/cutover serve --help 2>&1 | grep -q -- '--check-config'; then
	expect 0 /usr/bin/cutover serve --check-config --config /etc/cutover/serve.yaml
else
	echo "NOTE: cutover serve has no --check-config yet: /etc/cutover/serve.yaml not validated"
fi
# serve as the unit's user (setpriv execs it: SIGTERM reaches serve), in
# the state directory systemd would make.
install -d -o cutover -g cutover -m 0750 /var/lib/cutover
# shellcheck source=../e2e/lib.sh
. "$(dirname "$0")/../e2e/lib.sh"
port=$(e2e_free_port 27)
setpriv --reuid=cutover --regid=cutover --init-groups -- /usr/bin/cutover serve --db /var/lib/cutover/cutover.db \
    --listen "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
server=$!
i=0
until curl -fsS -o "$tmp/healthz" "http://127.0.0.1:$port/healthz" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 600 ] && kill -0 "$server" 2>/dev/null ||
	    { fail "serve as cutover did not answer: $(cat "$tmp/serve.log")"; break; }
	sleep 0.1
done
kill "$server" 2>/dev/null
wait "$server" || fail "serve as cutover exited $? on SIGTERM: $(cat "$tmp/serve.log")"
server=""
[ "$(stat -c %U /var/lib/cutover/cutover.db 2>/dev/null)" = cutover ] ||
    fail "the database is not the cutover user's"

# Purge: nothing left.
echo "== apt-get purge cutover"
apt purge cutover >"$tmp/purge.log" 2>&1 || fail "apt-get purge failed: $(cat "$tmp/purge.log")"
installed=""
dpkg-query -W -f '${Status}' cutover 2>/dev/null | grep -q 'installed' &&
    fail "cutover is still installed: $(dpkg-query -W -f '${Status}' cutover)"
while read -r f; do
	case $f in /|/etc|/lib|/lib/systemd|/lib/systemd/system|/usr|/usr/bin|/usr/share|\
	    /usr/share/doc|/usr/share/man|/usr/share/man/man[15]|/usr/share/lintian|\
	    /usr/share/lintian/overrides) continue ;; esac
	[ -e "$f" ] && fail "$f is left after purge"
done <"$tmp/files"
[ -e /var/lib/cutover ] && fail "/var/lib/cutover is left after purge"
getent passwd cutover >/dev/null && fail "user cutover is left after purge"
getent group cutover >/dev/null && fail "group cutover is left after purge"

[ "$failures" -eq 0 ] || { echo "test_package: $failures failure(s)" >&2; exit 1; }
echo "test_package: ok"
