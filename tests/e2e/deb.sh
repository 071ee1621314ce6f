# tests/e2e/deb.sh -- the Debian package: debian/changelog's version is the
# project's, Build-Depends names every build package of tools/lib.sh,
# `dpkg-buildpackage -us -uc -b` builds flydb_*.deb from a copy of the tree
# holding the program, flydb-gen, the SQLite extension, a man page per
# subcommand and the bash completion; lintian reports no errors.  In CI
# (CI=true, as .ci/run sets it) or with FLYDB_TEST_INSTALL_DEB=1, as root
# (or with password-less sudo), and unless a flydb package is installed
# already, the package is installed into the system, runs `flydb --version`
# and the main job on the bundled data set (short), and is purged again,
# leaving no file.
# Skipped when dpkg-buildpackage or debhelper is missing (tools/test
# installs them).  Suite "dist".
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$E2E/../.." && pwd)
if [ -n "${FLYDB_DIST_CHECK:-}" ]; then
  echo "SKIP: already inside a tarball or package check ($FLYDB_DIST_CHECK)"
  exit 77
fi
export FLYDB_DIST_CHECK=$T
if ! command -v dpkg-buildpackage >/dev/null 2>&1 || ! command -v dh >/dev/null 2>&1; then
  echo "SKIP: dpkg-buildpackage or debhelper not installed (tools/test installs dpkg-dev, debhelper and lintian)"
  exit 77
fi

# The package's version is the release's.
ver=$(project_version "$TOP")
dver=$(cd "$TOP" && dpkg-parsechangelog -S Version)
eq "debian/changelog version (meson.build has $ver)" "$dver" "$ver"
# Build-Depends holds every package tools/setup installs to build
# (build-essential is implied; the sqlite3 shell is only Recommended).
# shellcheck source=tools/lib.sh
want=$(. "$TOP/tools/lib.sh" && printf '%s\n' "${FLYDB_PACKAGES[@]}" | grep -v -x -e build-essential -e sqlite3)
have=$(awk '/^Build-Depends:/ { on = 1; sub(/^Build-Depends:/, "") }
            on && /^[A-Za-z-]+:/ && !/^Build-Depends:/ { on = 0 }
            on { print }' "$TOP/debian/control" | tr ',' '\n' |
       sed 's/[[(<].*//; s/^[[:space:]]*//; s/[[:space:]]*$//' | sed '/^$/d')
for p in $want; do
  grep -q -x -F "$p" <<<"$have" || fail "debian/control: Build-Depends lacks $p (tools/lib.sh FLYDB_PACKAGES)"
done
ok "debian/changelog $dver; Build-Depends has $(tr "\n" " " <<<"$want")"

# Build in a copy of the tree (the package's own build directory and
# products stay out of the source tree).
src=$T/flydb-$ver
copy_tree "$TOP" "$src"
(cd "$src" && dpkg-checkbuilddeps) 2>"$T/err" || { cat "$T/err" >&2; fail "build dependencies missing"; }
(cd "$src" && DEB_BUILD_OPTIONS="nocheck noddebs" dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1 ||
  { tail -n 60 "$T/build.log" >&2; fail "dpkg-buildpackage -us -uc -b failed"; }
arch=$(dpkg --print-architecture)
deb=$T/flydb_${ver}_$arch.deb
[ -f "$deb" ] || fail "no $deb"
dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$T/files"
cmds=$("$FLYDB" --help | awk '/^usage:/ { u = 1; next } u && /^  [a-z]/ { print $1 }')
want_files="/usr/bin/flydb /usr/bin/flydb-gen /usr/share/bash-completion/completions/flydb
            /usr/share/man/man1/flydb.1.gz /usr/share/man/man1/flydb-gen.1.gz"
for c in $cmds; do want_files="$want_files /usr/share/man/man1/flydb-$c.1.gz"; done
for f in $want_files; do
  grep -q -x -F "$f" "$T/files" || fail "$(basename "$deb") lacks $f"
done
grep -q -x "/usr/lib/[^/]*/flydb/flydb_ext.so" "$T/files" || fail "$(basename "$deb") lacks the extension"
ok "dpkg-buildpackage: $(basename "$deb") with $(grep -c -v '/$' "$T/files") files"
libdeb=$T/libflydb0_${ver}_$arch.deb
devdeb=$T/libflydb-dev_${ver}_$arch.deb
[ -f "$libdeb" ] && [ -f "$devdeb" ] || fail "no $(basename "$libdeb") or $(basename "$devdeb")"
dpkg-deb -c "$libdeb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$T/libfiles"
dpkg-deb -c "$devdeb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$T/devfiles"
grep -q -x "/usr/lib/[^/]*/libflydb.so.0.*" "$T/libfiles" || fail "libflydb0 lacks libflydb.so.0.*"
for f in /usr/include/flydb/flydb.h /usr/include/flydb/run/run.h /usr/include/flydb/util/err.h; do
  grep -q -x -F "$f" "$T/devfiles" || fail "libflydb-dev lacks $f"
done
grep -q -x "/usr/lib/[^/]*/pkgconfig/flydb.pc" "$T/devfiles" || fail "libflydb-dev lacks flydb.pc"
ok "libflydb0 ($(grep -c -v '/$' "$T/libfiles") files) and libflydb-dev ($(grep -c -v '/$' "$T/devfiles") files)"

if command -v lintian >/dev/null 2>&1; then
  lintian --fail-on error "$T/flydb_${ver}_$arch.changes" >"$T/lintian" 2>&1 ||
    { cat "$T/lintian" >&2; fail "lintian reports errors"; }
  ok "lintian: no errors ($(grep -c '^[WIP]:' "$T/lintian" || true) warnings and notes)"
else
  ok "lintian not installed: not run"
fi

# Install, run, purge.
if [ "${CI:-}" != true ] && [ "${FLYDB_TEST_INSTALL_DEB:-}" != 1 ]; then
  ok "not installing into this system outside CI (FLYDB_TEST_INSTALL_DEB=1 does)"
  exit 0
fi
if dpkg-query -W -f='${Status}' flydb 2>/dev/null | grep -q "ok installed"; then
  ok "a flydb package is installed on this system: not replacing it (install not tested)"
  exit 0
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    ok "not root and no password-less sudo: install not tested"
    exit 0
  fi
fi
# dpkg_do ARGS...: dpkg, waiting up to 2 minutes for the lock another
# package manager may hold.
dpkg_do() {
  local _
  for _ in $(seq 60); do
    "${sudo[@]}" dpkg "$@" >"$T/dpkg.log" 2>&1 && return 0
    grep -q -i "lock" "$T/dpkg.log" || break
    sleep 2
  done
  cat "$T/dpkg.log" >&2
  return 1
}
installed=0
deb_cleanup() {
  if [ "$installed" = 1 ]; then
    dpkg_do --purge flydb libflydb-dev libflydb0 || echo "FAIL: dpkg --purge flydb" >&2
  fi
  e2e_cleanup
}
trap deb_cleanup EXIT
installed=1
dpkg_do -i "$deb" "$libdeb" "$devdeb" || fail "dpkg -i of the three packages failed"
expect 0 /usr/bin/flydb --version
out_has "flydb $ver" "commit    unknown"
man -w flydb-sample >/dev/null 2>&1 || ! command -v man >/dev/null || fail "man -w flydb-sample finds no page"
# The main job of tools/setup, short.
data=$TOP/datasets/fmnist-pair/fmnist_pair.csv
[ -f "$data" ] || data=$TOP/datasets/toy/logistic.csv
expect 0 /usr/bin/flydb ingest "$data" --db demo.db
expect 0 /usr/bin/flydb sample --db demo.db --iters 400 --warmup 200 --seed 1
out_has "ess_bulk"
ext=$(grep -x "/usr/lib/[^/]*/flydb/flydb_ext.so" "$T/files")
eq "rhat() of the installed extension over the run" \
   "$(sqlite3 demo.db ".load ${ext%.so}" "SELECT count(*) > 0 FROM (SELECT rhat(chain, iter, value) AS r FROM draws_named WHERE run_id = 1 AND NOT warmup GROUP BY name) WHERE r > 0")" 1
ok "installed: flydb --version, the main job on $(basename "$data") (400 iterations), the extension"
# The library from the packages: the API walkthrough through pkg-config.
flags=$(pkg-config --cflags --libs flydb) || fail "pkg-config finds no installed flydb.pc"
# shellcheck disable=SC2086  # flags are words
${CC:-cc} -std=c11 -D_POSIX_C_SOURCE=200809L -o walk "$TOP/tests/api/api_walkthrough.c" $flags -lm ||
  fail "compiling the API walkthrough against libflydb-dev failed"
expect 0 ./walk "$TOP/datasets/toy/logistic.csv" walk.db
ok "libflydb-dev: the API walkthrough built with pkg-config ($flags) and run"
dpkg_do --purge flydb libflydb-dev libflydb0 || fail "dpkg --purge failed"
installed=0
left=$(cat "$T/files" "$T/libfiles" "$T/devfiles" |
       while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done)
[ -z "$left" ] || fail "left after dpkg --purge: $left"
! dpkg-query -W -f='${Status}' flydb 2>/dev/null | grep -q "ok installed" || fail "flydb still installed"
ok "dpkg --purge flydb: nothing left"
