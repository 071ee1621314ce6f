# shellcheck shell=bash
# tests/e2e/lib.sh -- sourced by every e2e script (tests/e2e/meson.build runs
# `bash script.sh path/to/flydb`).  Gives each script a fresh temporary
# directory as its working directory (removed on exit) and small checks that
# print what they expected and what they got.
set -e

FLYDB=${1:?usage: bash script.sh path/to/flydb}
case $FLYDB in /*) ;; *) FLYDB=$PWD/$FLYDB ;; esac
[ -x "$FLYDB" ] || { echo "FAIL: no flydb program at $FLYDB" >&2; exit 1; }
# The binary itself, for paths beside it (FLYDB may become a wrapper below).
FLYDB_BIN=$FLYDB
E2E=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC2034  # used by the scripts that source this
FIX=$E2E/fixtures
if ! command -v sqlite3 >/dev/null 2>&1; then
  echo "SKIP: the sqlite3 shell is not installed (tools/setup installs it)"
  exit 77
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/flydb-e2e.XXXXXX")
e2e_cleanup() { rm -rf "$T"; }
trap e2e_cleanup EXIT
mkdir "$T/w"
cd "$T/w"

# FLYDB_E2E_WRAPPER (e.g. "valgrind --error-exitcode=99 -q", as
# `tools/test --valgrind` sets it): every flydb command of the script runs
# under it.  The
# wrapper execs, so a test's kill -9 of "$!" still reaches the process.
if [ -n "${FLYDB_E2E_WRAPPER:-}" ]; then
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$FLYDB_E2E_WRAPPER" "$FLYDB" >"$T/flydb"
  chmod +x "$T/flydb"
  FLYDB=$T/flydb
fi

fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

# hide_git: from here on PATH is one directory of links to every program on
# PATH but git, as on a minimal system without git (a release tarball must
# build and test there).
hide_git() {
  local d f IFS=:
  local -a progs
  mkdir -p "$T/nogit"
  for d in $PATH; do
    progs=()
    for f in "$d"/*; do if [ -f "$f" ] && [ -x "$f" ]; then progs+=("$f"); fi; done
    # the first directory on PATH wins: ln does not replace existing links
    if [ "${#progs[@]}" -gt 0 ]; then ln -s "${progs[@]}" "$T/nogit/" 2>/dev/null || true; fi
  done
  rm -f "$T/nogit/git" "$T/nogit"/git-*
  export PATH=$T/nogit
  if command -v git >/dev/null 2>&1; then fail "hide_git: git is still found"; fi
}

# copy_tree TOP DEST: the files of the source tree TOP that a release
# tarball holds, as they are now, into DEST (created), without .git: in a
# git checkout the tracked files and the untracked ones not ignored (so
# uncommitted work is checked too; build directories are ignored); else
# every file but build*/, obj-*/ and out/.
copy_tree() {
  local top=$1 dest=$2
  mkdir -p "$dest"
  if [ -e "$top/.git" ] && command -v git >/dev/null 2>&1; then
    git -C "$top" ls-files -z --cached --others --exclude-standard |
      (cd "$top" && while IFS= read -r -d '' f; do if [ -e "$f" ]; then printf '%s\0' "$f"; fi; done) |
      tar -C "$top" --null -T - -cf - | tar -C "$dest" -xf -
  else
    tar -C "$top" --exclude=./.git --exclude='./build*' --exclude='./obj-*' \
        --exclude=./out -cf - . | tar -C "$dest" -xf -
  fi
  if [ ! -f "$dest/meson.build" ] || [ -e "$dest/.git" ]; then
    fail "copy_tree: $dest is not a source tree without .git"
  fi
}

# project_version TOP: meson.build's project version.
project_version() {
  sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$1/meson.build" | head -1
}

# expect WANT CMD...: run CMD with stdout in $T/out and stderr in $T/err;
# fail unless its exit status is WANT.
expect() {
  local want=$1 got=0
  shift
  "$@" >"$T/out" 2>"$T/err" || got=$?
  if [ "$got" != "$want" ]; then
    echo "--- stdout:" >&2; cat "$T/out" >&2
    echo "--- stderr:" >&2; cat "$T/err" >&2
    if grep -q -i "locked" "$T/err"; then
      # who holds the lock: POSIX locks (pid, inode) and the flydb processes
      echo "--- /proc/locks (inodes here: $(stat -c %i ./*.db* 2>/dev/null | tr '\n' ' ')):" >&2
      cat /proc/locks >&2 2>/dev/null || true
      echo "--- processes:" >&2
      ps -eo pid,ppid,etime,args 2>/dev/null | grep -E "flydb|sqlite3" | grep -v grep >&2 || true
    fi
    fail "exit status $got, want $want: $*"
  fi
}

# err_has STRING...: stderr of the last `expect` contains every STRING.
err_has() {
  local s
  for s in "$@"; do
    grep -q -F -- "$s" "$T/err" || { cat "$T/err" >&2; fail "stderr lacks '$s'"; }
  done
}

# out_has STRING...: the same for stdout.
out_has() {
  local s
  for s in "$@"; do
    grep -q -F -- "$s" "$T/out" || { cat "$T/out" >&2; fail "stdout lacks '$s'"; }
  done
}

# have_r PKG...: 1 when Rscript and every R package named are installed,
# else 0, saying on stderr that the checks against R are skipped (in CI,
# where tools/test installs them, the test fails instead).
have_r() {
  if command -v Rscript >/dev/null 2>&1 &&
     Rscript -e "quit(status = !all(sapply(c($(printf '"%s",' "$@" | sed 's/,$//')), requireNamespace, quietly = TRUE)))" \
       >/dev/null 2>&1; then
    echo 1
  else
    # in CI (tools/test installs them) a missing package fails the test
    [ "${CI:-}" != true ] || fail "R with $* not found: tools/test installs them"
    echo "# R with $* not found: the checks against R are skipped" >&2
    echo 0
  fi
}

# q DB SQL: one query, values separated by tabs, no header.
# A flydb process starting or ending next to the query briefly locks the
# file (WAL set-up, final checkpoint); wait for it as docs/sql.md advises.
q() { sqlite3 -batch -noheader -cmd ".timeout 10000" -separator "$(printf '\t')" "$1" "$2"; }

# eq WHAT GOT WANT
eq() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

# same_file A B: byte-identical (cmp and SHA-256).
same_file() {
  cmp -s "$1" "$2" || fail "$1 differs from $2"
  [ "$(sha256sum <"$1")" = "$(sha256sum <"$2")" ] || fail "$1: SHA-256 differs from $2"
}

# only_files DIR NAME...: DIR holds exactly these entries (nothing left over:
# no journal, -wal, -shm or temporary files).
only_files() {
  local dir=$1 got want
  shift
  # shellcheck disable=SC2012  # plain names, made by the tests
  got=$(cd "$dir" && ls -A | LC_ALL=C sort | tr '\n' ' ')
  want=$(printf '%s\n' "$@" | sed '/^$/d' | LC_ALL=C sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$dir holds '$got', want '$want'"
}

# csv_stats CSV TARGET INTERCEPT: the dataset_column rows flydb should store
# for a plain (unquoted) CSV: idx name role csv_col n mean sd min max, tab
# separated, in stored order ([intercept] features target).  TARGET is the
# target's name ("" = last column); INTERCEPT is 1 or 0.
csv_stats() {
  awk -F, -v target="$2" -v icpt="$3" '
    NR == 1 { nc = NF; for(j = 1; j <= NF; j++) name[j] = $j
              if( target == "" ) target = name[NF]
              for(j = 1; j <= NF; j++) if( name[j] == target ) t = j
              next }
    NF == 0 { next }
    { n++
      for(j = 1; j <= nc; j++){
        v = $j + 0
        d = v - mean[j]; mean[j] += d / n; m2[j] += d * (v - mean[j])
        if( n == 1 || v < min[j] ) min[j] = v
        if( n == 1 || v > max[j] ) max[j] = v
      } }
    function row(idx, j){
      printf "%d\t%s\t%s\t%d\t%d\t%.17g\t%.17g\t%.17g\t%.17g\n", idx, name[j],
             j == t ? "target" : "feature", j, n, mean[j],
             (n > 1 ? sqrt(m2[j] / (n - 1)) : 0), min[j], max[j]
    }
    END { k = 0
      if( icpt ) printf "%d\t(Intercept)\tintercept\t\t%d\t1\t0\t1\t1\n", k++, n
      for(j = 1; j <= nc; j++) if( j != t ) row(k++, j)
      row(k, t) }' "$1"
}

# check_stats DB NAME CSV TARGET INTERCEPT TOL: dataset_column of data set
# NAME matches csv_stats; numbers within TOL relative to the column's scale.
check_stats() {
  local db=$1 name=$2 csv=$3 target=$4 icpt=$5 tol=$6
  csv_stats "$csv" "$target" "$icpt" >"$T/stats.want"
  q "$db" "SELECT c.idx, c.name, c.role, ifnull(c.csv_col, ''), c.n, c.mean,
                  c.sd, c.min, c.max
           FROM dataset_column c JOIN dataset d ON d.id = c.dataset_id
           WHERE d.name = '$name' ORDER BY c.idx" >"$T/stats.got"
  awk -F'\t' -v tol="$tol" '
    function abs(x){ return x < 0 ? -x : x }
    function max2(a, b){ return a > b ? a : b }
    NR == FNR { want[FNR] = $0; nw = FNR; next }
    { ng = FNR
      split(want[FNR], w, "\t")
      for(j = 1; j <= 5; j++) if( $j != w[j] ){
        printf "column %d field %d: got %s, want %s\n", FNR - 1, j, $j, w[j]; bad = 1 }
      scale = max2(max2(abs(w[8]), abs(w[9])), 1e-300)
      for(j = 6; j <= 9; j++) if( abs($j - w[j]) > tol * scale ){
        printf "column %d (%s) field %d: got %s, want %.17g\n", FNR - 1, $2, j, $j, w[j]; bad = 1 } }
    END { if( ng != nw ){ printf "%d columns stored, want %d\n", ng, nw; bad = 1 }
          exit bad }' "$T/stats.want" "$T/stats.got" >&2 ||
    fail "dataset_column of '$name' does not match $(basename "$csv") (tolerance $tol)"
}

# check_pages DB NAME: the page table of data set NAME is consistent with the
# dataset row: pages 0..n_pages-1, each page_rows rows but the last, rows
# contiguous from 0, sizes add up, raw pages hold exactly raw_bytes.
check_pages() {
  local db=$1 name=$2 bad
  bad=$(q "$db" "
    WITH d AS (SELECT * FROM dataset WHERE name = '$name'),
         p AS (SELECT page.* FROM page JOIN d ON page.dataset_id = d.id)
    SELECT 'n_pages' FROM d WHERE n_pages != (SELECT count(*) FROM p)
    UNION ALL SELECT 'page_no' FROM d
      WHERE (SELECT min(page_no) FROM p) != 0 OR (SELECT max(page_no) FROM p) != n_pages - 1
    UNION ALL SELECT 'n_rows' FROM d WHERE n_rows != (SELECT sum(n_rows) FROM p)
    UNION ALL SELECT 'page ' || p.page_no || ' first_row' FROM p, d
      WHERE p.first_row != p.page_no * d.page_rows
    UNION ALL SELECT 'page ' || p.page_no || ' n_rows' FROM p, d
      WHERE p.n_rows != min(d.page_rows, d.n_rows - p.first_row)
    UNION ALL SELECT 'page ' || p.page_no || ' raw_bytes' FROM p, d
      WHERE p.raw_bytes != p.n_rows * d.width * d.prec
    UNION ALL SELECT 'page ' || p.page_no || ' raw payload size' FROM p
      WHERE p.codec = 0 AND length(p.payload) != p.raw_bytes
    UNION ALL SELECT 'raw_bytes' FROM d WHERE raw_bytes != n_rows * width * prec
    UNION ALL SELECT 'stored_bytes' FROM d
      WHERE stored_bytes != (SELECT sum(length(payload)) FROM p)")
  [ -z "$bad" ] || fail "pages of '$name' inconsistent: $(echo "$bad" | tr '\n' ' ')"
}

# gen_csv ROWS COLS SEED: a CSV of ROWS rows, COLS columns x1..x(COLS-1),y,
# values of varied magnitude and sign.
gen_csv() {
  awk -v n="$1" -v c="$2" -v seed="$3" 'BEGIN {
    srand(seed)
    for(j = 1; j < c; j++) printf "x%d,", j
    print "y"
    for(i = 0; i < n; i++){
      for(j = 1; j < c; j++){
        if( j % 3 == 1 ) printf "%.9g,", (rand() - 0.3) * 10 ^ (j % 5)
        else if( j % 3 == 2 ) printf "%d,", int(rand() * 100) - 50
        else printf "%.6e,", rand() * 1e-4
      }
      print (rand() < 0.4) ? 1 : 0
    } }'
}
