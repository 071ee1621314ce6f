#!/usr/bin/env bash
# kill -9 at random moments during an ingest (a signal that cannot be
# caught, unlike the ^C of sigint.sh; atomic.sh covers failing input).
#
# (a) Into a new database: afterwards the target path holds either no file
#     or a complete database (the kill came after the final link): it opens,
#     `flydb info` works, the data set has every row, its pages are
#     consistent, PRAGMA integrity_check and `flydb check` pass.  Temporary
#     files (<db>.ingest-PID.tmp) may be left by a kill -9 and are counted
#     and reported, not failed on.
# (b) Into an existing database (one in rollback-journal mode, one in WAL
#     mode, alternately): `flydb info` opens it first (rolling back a hot
#     journal itself), the data set count is unchanged or one more with the
#     new data set complete, `flydb dump` of the old data set is identical
#     to before, PRAGMA integrity_check and `flydb check` pass.
#
# The CSV is made by flydb-gen and grown until a reference ingest takes at
# least a second; the kill moments are random fractions of that time.
# FLYDB_TEST_LEVEL=accurate: 50 kill points for each of (a) and (b), else 4.
# FLYDB_TEST_SEED fixes the kill moments (printed either way).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
[ -x "$GEN" ] || fail "no flydb-gen at $GEN"

bg=
crash_cleanup() {
  if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null || true; fi
  e2e_cleanup
}
trap crash_cleanup EXIT

tseed=${FLYDB_TEST_SEED:-$(( ($$ ^ $(date +%s)) & 32767 ))}
RANDOM=$tseed
echo "# kill moments from FLYDB_TEST_SEED=$tseed"
kills=4
[ "${FLYDB_TEST_LEVEL:-}" = accurate ] && kills=50

have_check=0
if "$FLYDB" check --help >/dev/null 2>&1; then
  have_check=1
else
  echo "# flydb check is not available: its assertions are skipped"
fi

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# rand_frac LO HI: $frac = a random number in [LO, HI) with 3 decimals.  Not
# called in $(...): bash reseeds RANDOM in subshells, so FLYDB_TEST_SEED
# would not fix the sequence.
rand_frac() { local r=$((RANDOM % 1000)); frac=$(awk -v lo="$1" -v hi="$2" -v r=$r 'BEGIN { printf "%.3f", lo + (hi - lo) * r / 1000 }'); }
# after FRAC MS: FRAC x MS milliseconds in seconds.
after() { awk -v f="$1" -v ms="$2" 'BEGIN { printf "%.3f", f * ms / 1000 }'; }

# start ARGS...: flydb ingest ARGS in the background; $bg is its pid.
start() {
  "$FLYDB" ingest "$@" >"$T/bg.out" 2>"$T/bg.err" &
  bg=$!
}
# kill9_at SECONDS: SIGKILL $bg after SECONDS unless it ended; status in $rc.
kill9_at() {
  sleep "$1"
  kill -9 "$bg" 2>/dev/null || true
  rc=0
  { wait "$bg"; } 2>/dev/null || rc=$?   # no "Killed" job notice
  bg=
  [ "$rc" = 137 ] || [ "$rc" = 0 ] || { cat "$T/bg.err" >&2; fail "ingest: exit status $rc, want 137 (killed) or 0"; }
}

# check_db DB: PRAGMA integrity_check and (if it exists) `flydb check`.
check_db() {
  eq "integrity of $1" "$(q "$1" "PRAGMA integrity_check")" ok
  if [ $have_check = 1 ]; then
    expect 0 "$FLYDB" check --db "$1"
  fi
}

# complete DB NAME: data set NAME of DB holds all $N rows of big.csv.
complete() {
  eq "rows of '$2' in $1" "$(q "$1" "SELECT n_rows FROM dataset WHERE name = '$2'")" "$N"
  check_pages "$1" "$2"
}

# ---- the CSV: at least a second to ingest ---------------------------------
"$GEN" --model logistic --rows 200000 --features 20 --seed 7 >big.csv
mkdir db
for i in 1 2 3; do   # at most 800,000 rows (150 MB)
  if [ "$i" -gt 1 ]; then   # too quick: twice the rows (before the ingest,
    tail -n +2 big.csv >rows.csv   # so big.csv is what db/ref.db holds)
    cat rows.csv >>big.csv
    rm rows.csv
  fi
  rm -f db/ref.db
  t0=$(now_ms)
  expect 0 "$FLYDB" ingest big.csv --db db/ref.db --name big
  ref_ms=$(( $(now_ms) - t0 ))
  [ $ref_ms -ge 1000 ] && break
done
N=$(( $(wc -l <big.csv) - 1 ))
complete db/ref.db big
# once more with the CSV in the page cache: the shorter time is the scale
rm db/ref.db
t0=$(now_ms)
expect 0 "$FLYDB" ingest big.csv --db db/ref.db --name big
t=$(( $(now_ms) - t0 ))
[ "$t" -lt "$ref_ms" ] && ref_ms=$t
rm db/ref.db
echo "# big.csv: $N rows, $(( $(wc -c <big.csv) / 1000000 )) MB; ingest into a new database: $ref_ms ms"

# ---- (a) into a new database ---------------------------------------------
n_absent=0 n_whole=0 n_tmp=0
for k in $(seq "$kills"); do
  rm -f db/*
  rand_frac 0 1.15
  start big.csv --db db/new.db --name big
  kill9_at "$(after "$frac" "$ref_ms")"
  tmps=$(cd db && find . -maxdepth 1 -name 'new.db.ingest-*.tmp' | wc -l)
  n_tmp=$((n_tmp + tmps))
  others=$(cd db && find . -maxdepth 1 -type f ! -name new.db ! -name 'new.db.ingest-*.tmp' | tr '\n' ' ')
  [ -z "$others" ] || fail "(a) kill at $frac x $ref_ms ms: unexpected files left: $others"
  if [ -e db/new.db ]; then
    # after the link: the whole database, nothing half-written
    expect 0 "$FLYDB" info --db db/new.db
    out_has "data set 'big'"
    complete db/new.db big
    check_db db/new.db
    n_whole=$((n_whole + 1))
    what="complete database"
  else
    [ "$rc" = 137 ] || fail "(a) exit status 0 but no database"
    n_absent=$((n_absent + 1))
    what="no database"
  fi
  [ "$rc" = 0 ] && [ "$tmps" != 0 ] && fail "(a) ingest succeeded but left its temporary file"
  ok "(a) new database, kill -9 at $frac x $ref_ms ms (exit $rc): $what, $tmps temporary file(s) left"
done
echo "# (a) $kills kill points: $n_absent without a database, $n_whole with a complete one; temporary files left: $n_tmp"

# ---- (b) into an existing database ---------------------------------------
# base_j: rollback-journal mode (ingest only); base_w: WAL mode (a run was
# written).  Each has the data set 'old' with its dump saved.
rm -f db/*
"$GEN" --model logistic --rows 20000 --features 5 --seed 8 >old.csv
expect 0 "$FLYDB" ingest old.csv --db base_j.db --name old
expect 0 "$FLYDB" ingest old.csv --db base_w.db --name old
expect 0 "$FLYDB" sample --db base_w.db --iters 20 --seed 1 --quiet
eq "journal mode of base_j.db" "$(q base_j.db "PRAGMA journal_mode")" delete
eq "journal mode of base_w.db" "$(q base_w.db "PRAGMA journal_mode")" wal
expect 0 "$FLYDB" dump --db base_j.db --data old
cp "$T/out" old.dump
[ "$(wc -l <old.dump)" = 20001 ] || fail "dump of 'old' has $(wc -l <old.dump) lines, want 20001"
# reference time of an ingest into an existing database
cp base_j.db db/t.db
t0=$(now_ms)
expect 0 "$FLYDB" ingest big.csv --db db/t.db --name big
refb_ms=$(( $(now_ms) - t0 ))
complete db/t.db big
echo "# ingest into an existing database: $refb_ms ms"

n_same=0 n_plus=0 cur=
for k in $(seq "$kills"); do
  mode=$([ $((k % 2)) = 1 ] && echo j || echo w)
  if [ "$cur" != "$mode" ]; then
    rm -f db/*
    cp "base_$mode.db" db/t.db
    cur=$mode
  fi
  before=$(q db/t.db "SELECT count(*) FROM dataset")
  rand_frac 0.02 1.1
  start big.csv --db db/t.db --name "big$k"
  kill9_at "$(after "$frac" "$refb_ms")"
  left=$(cd db && find . -maxdepth 1 -type f ! -name t.db -printf '%f\n' | sort | paste -sd ' ')
  # flydb first: it must cope with a hot journal or a WAL by itself
  expect 0 "$FLYDB" info --db db/t.db
  out_has "data set 'old'"
  after_n=$(q db/t.db "SELECT count(*) FROM dataset")
  if [ "$after_n" = "$before" ]; then
    [ "$rc" = 137 ] || fail "(b) exit status 0 but no new data set"
    [ -z "$(q db/t.db "SELECT 1 FROM dataset WHERE name = 'big$k'")" ] || fail "(b) 'big$k' is visible"
    n_same=$((n_same + 1))
    what="data sets unchanged ($after_n)"
  elif [ "$after_n" = $((before + 1)) ]; then
    complete db/t.db "big$k"
    n_plus=$((n_plus + 1))
    what="one complete data set more ($after_n)"
  else
    fail "(b) kill at $frac x $refb_ms ms: $after_n data sets, had $before"
  fi
  expect 0 "$FLYDB" dump --db db/t.db --data old
  cmp -s "$T/out" old.dump || fail "(b) kill at $frac x $refb_ms ms: dump of 'old' changed"
  check_db db/t.db
  ok "(b) existing database ($([ "$mode" = j ] && echo rollback journal || echo WAL)), kill -9 at $frac x $refb_ms ms (exit $rc): $what, 'old' dumps identically; left beside it: ${left:-nothing}"
  if [ "$after_n" != "$before" ]; then cur=; fi   # start again from the base
done
echo "# (b) $kills kill points: $n_same unchanged, $n_plus with one complete data set more"
[ $have_check = 1 ] || echo "# flydb check was not available: not run"
