# tests/e2e/tarball.sh -- a release tarball on a system without git: the
# source tree's files (copy_tree: what `git archive` would hold, with
# uncommitted changes) unpacked into a directory with no .git, and, with git
# absent from PATH, the README's first command `tools/setup` (install what
# is missing, release build, the main job on the bundled data set), then a
# quick part of the suite in that build: version (commit "unknown"),
# bench_smoke (tools/bench), usage, sample_basic and install.
# Suite "dist": tools/test runs it in the release build (a few minutes).
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$E2E/../.." && pwd)
# The copy's own suite must not start this test again.
if [ -n "${FLYDB_DIST_CHECK:-}" ]; then
  echo "SKIP: already inside a tarball or package check ($FLYDB_DIST_CHECK)"
  exit 77
fi
export FLYDB_DIST_CHECK=$T

ver=$(project_version "$TOP")
src=$T/flydb-$ver
copy_tree "$TOP" "$src"
hide_git
ok "flydb-$ver unpacked without .git, git absent from PATH"

# tools/setup as the README says (as root, or with sudo when packages are
# missing; tools/test has installed them).
(cd "$src" && tools/setup) >"$T/setup.log" 2>&1 ||
  { tail -n 40 "$T/setup.log" >&2; fail "tools/setup failed in the unpacked tarball"; }
grep -q "^tools/setup: done" "$T/setup.log" || { tail -n 20 "$T/setup.log" >&2; fail "tools/setup did not finish"; }
grep -q "ess_bulk\|ESS" "$T/setup.log" || fail "tools/setup printed no posterior summary"
[ -f "$src/out/demo.db" ] || fail "tools/setup wrote no out/demo.db"
expect 0 "$src/build/src/cli/flydb" --version
out_has "flydb $ver" "commit    unknown"
ok "tools/setup: release build, the main job ($(grep -c . "$T/setup.log") lines of output)"

meson test -C "$src/build" --print-errorlogs \
  version bench_smoke usage sample_basic install >"$T/test.log" 2>&1 ||
  { tail -n 60 "$T/test.log" >&2; fail "tests failed in the unpacked tarball"; }
ok "version, bench_smoke, usage, sample_basic, install in the tarball's build: $(grep -E '^(Ok|Skipped):' "$T/test.log" | tr -s ' \n' ' ')"
