# tests/e2e/version.sh -- `flydb --version` and `flydb version`: the release
# version of meson.build, the commit built from (a hash when the source tree
# is a git checkout, "unknown" otherwise, e.g. built from a release tarball),
# the schema version that a new database gets as its user_version, and the
# run-time versions of SQLite, LZ4, xxHash and OpenBLAS.
# shellcheck source=tests/e2e/lib.sh
. "$(dirname "$0")/lib.sh"
TOP=$(cd "$E2E/../.." && pwd)

expect 0 "$FLYDB" --version
cp "$T/out" "$T/v1"
expect 0 "$FLYDB" version
cmp -s "$T/v1" "$T/out" || fail "flydb version differs from flydb --version"
[ ! -s "$T/err" ] || fail "flydb version wrote to stderr"

# field NAME: the value of the line "NAME   value"
field() { awk -v k="$1" '$1 == k { sub(/^[^ ]+ +/, ""); print; exit }' "$T/out"; }

want=$(project_version "$TOP")
[ -n "$want" ] || fail "no project version in $TOP/meson.build"
eq "first line" "$(head -1 "$T/out")" "flydb $want"

commit=$(field commit)
if [ -e "$TOP/.git" ] && command -v git >/dev/null 2>&1; then
  [[ $commit =~ ^[0-9a-f]{12}(-dirty)?$ ]] || fail "commit '$commit' is not a 12-digit hash"
  git -C "$TOP" cat-file -e "${commit%-dirty}^{commit}" 2>/dev/null ||
    fail "commit $commit is not in $TOP's history"
else
  eq "commit outside a git checkout" "$commit" unknown
fi
ok "release version $want, commit $commit"

schema=$(field schema)
n=$(find "$TOP/schema" -name '[0-9][0-9][0-9]_*.sql' | wc -l)
eq "schema version" "${schema%% *}" "$n"
"$FLYDB" ingest "$FIX/good.csv" --db v.db >/dev/null 2>&1 || fail "ingest failed"
eq "user_version of a new database" "$(q v.db 'PRAGMA user_version')" "${schema%% *}"
ok "schema $schema"

eq "SQLite" "$(field SQLite)" "$(sqlite3 :memory: 'SELECT sqlite_version()')"
for k in LZ4 xxHash; do
  [[ $(field "$k") =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || fail "$k version '$(field "$k")'"
done
if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists liblz4; then
  eq "LZ4 (run time = the headers' on Debian)" "$(field LZ4)" "$(pkg-config --modversion liblz4)"
fi
[[ $(field BLAS) == OpenBLAS\ [0-9]*\(kernels:\ *\) ]] || fail "BLAS '$(field BLAS)'"
ok "libraries: $(awk 'NR > 4 { printf "%s%s %s", s, $1, $2; s = ", " }' "$T/out")"

expect 0 "$FLYDB" version --help
expect 2 "$FLYDB" version --bogus
ok "version --help, usage error"
