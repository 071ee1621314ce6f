#!/usr/bin/env bash
# flydb check: a clean database (ingest, tune, sample) passes, with and
# without --quick, and is left byte-identical with no -wal/-shm behind.
# Then, each on a fresh copy damaged with sqlite3, the damage is reported on
# one line naming the data set / bound set / run and the page, column,
# moment or chain, with "1 problem found" and exit status 1: a flipped byte
# in a data page and in a bound page, a missing page, a changed column mean,
# a changed moment, a bound set left 'building', a truncated checkpoint,
# draws of one chain deleted mid-run (two problems: draws and iteration
# rows), the diagnostics of some iterations cleared, a run's run_setting row
# gone, out of its domain or disagreeing with run_config, a run_config line
# disagreeing with the run row.  A newer schema version and files that
# are not flydb databases are refused (exit 1); usage errors exit 2; and
# `flydb sample` on a damaged data page fails naming the page.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=f.db
# 2000 rows in 10 pages of 200 rows, so a page can go missing in the middle;
# 2 chains x (100 warm-up + 200), thin 2: iterations 2, 4, .., 300.
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db --page-rows 200
expect 0 "$FLYDB" sample --db $db --seed 11 --iters 200 --chains 2 --thin 2 \
  --checkpoint-every 50 --quiet
eq "pages" "$(q $db "SELECT count(*) FROM page")" 10
eq "bound pages" "$(q $db "SELECT count(*) FROM bound_page")" 10
eq "run" "$(q $db "SELECT id, status, thin FROM run")" "$(printf '1\tdone\t2')"

# ---- a clean database ---------------------------------------------------
cp $db clean.orig
expect 0 "$FLYDB" check --db $db
out_has "$db: no problems found (1 data set, 1 bound set, 1 run)"
expect 0 "$FLYDB" check --db $db --quick
out_has "no problems found" "quick"
same_file $db clean.orig
only_files . $db clean.orig
rm clean.orig
ok "a clean database passes (and --quick), left byte-identical, no -wal/-shm"

# damaged NAME SQL: a copy of the clean database with SQL applied.
damaged() {
  cp $db "$1.db"
  q "$1.db" "$2"
}

# flip TABLE WHERE: SQL that changes the middle byte of one payload.
flip() {
  local mid="length(payload) / 2"
  echo "UPDATE $1 SET payload = CAST(substr(payload, 1, $mid - 1)
          || CASE WHEN substr(payload, $mid, 1) = X'00' THEN X'01' ELSE X'00' END
          || substr(payload, $mid + 1) AS BLOB) WHERE $2"
}

# reported DB STRING...: check fails with exit 1, one problem (PROBLEMS=n:
# n), every STRING on stdout; --quick sees it too unless QUICK=0.
reported() {
  local d=$1 found="1 problem found"
  shift
  [ "${PROBLEMS:-1}" = 1 ] || found="$PROBLEMS problems found"
  expect 1 "$FLYDB" check --db "$d"
  out_has "$found" "$@"
  ok "$d: $(head -n 1 "$T/out")"
  if [ "${QUICK:-1}" = 1 ]; then
    expect 1 "$FLYDB" check --db "$d" --quick
    out_has "$found" "$@"
  else
    expect 0 "$FLYDB" check --db "$d" --quick
    out_has "no problems found"
  fi
}

# ---- data pages ---------------------------------------------------------
damaged pageflip "$(flip page "dataset_id = 1 AND page_no = 4")"
eq "flipped payload size" "$(q pageflip.db "SELECT length(payload) FROM page WHERE page_no = 4")" \
   "$(q $db "SELECT length(payload) FROM page WHERE page_no = 4")"
[ "$(q pageflip.db "SELECT hex(payload) FROM page WHERE page_no = 4")" != \
  "$(q $db "SELECT hex(payload) FROM page WHERE page_no = 4")" ] || fail "no byte flipped"
reported pageflip.db "data set 'logistic' (id 1): page 4: checksum mismatch"

damaged pagegone "DELETE FROM page WHERE dataset_id = 1 AND page_no = 4"
reported pagegone.db "data set 'logistic' (id 1): page 4 is missing (rows 800..999)"

damaged mean "UPDATE dataset_column SET mean = mean + 1e-6 WHERE dataset_id = 1 AND idx = 1"
QUICK=0 reported mean.db "data set 'logistic' (id 1): column 1 ('x'): mean" "recomputed from the pages"

# ---- bound sets ---------------------------------------------------------
damaged moment "UPDATE moment SET value = value * 1.0001 WHERE bound_set_id = 1
                AND name = 'S' AND i = 1 AND j = 1"
QUICK=0 reported moment.db "bound set 1 (data set 'logistic'" "moment S[1,1] is" \
  "recomputed" "from the data pages and the stored xi"

damaged boundflip "$(flip bound_page "bound_set_id = 1 AND page_no = 5")"
reported boundflip.db "bound set 1 (data set 'logistic'" "page 5: checksum mismatch"

damaged building "UPDATE bound_set SET status = 'building' WHERE id = 1"
reported building.db "bound set 1" "status 'building'"

# ---- runs ---------------------------------------------------------------
damaged ckpt "UPDATE checkpoint SET state = substr(state, 1, 60) WHERE run_id = 1 AND chain = 1"
eq "truncated checkpoint" "$(q ckpt.db "SELECT length(state) FROM checkpoint WHERE chain = 1")" 60
reported ckpt.db "run 1: chain 1: checkpoint of 60 bytes is shorter than its header"

# Draws (draw_chunk: one row a parameter and up to 64 kept iterations) and
# diagnostics (draw_block) lost together: the chunks of chain 1 that hold
# iteration 120, and the diagnostics of their iterations.
lost="run_id = 1 AND chain = 1 AND iter0 <= 120 AND iter0 + (n - 1) * step >= 120"
lo=$(q $db "SELECT min(iter0) FROM draw_chunk WHERE $lost")
hi=$(q $db "SELECT max(iter0 + (n - 1) * step) FROM draw_chunk WHERE $lost")
damaged draws "DELETE FROM draw_chunk WHERE $lost;
               DELETE FROM draw_block WHERE run_id = 1 AND chain = 1 AND iter BETWEEN $lo AND $hi"
PROBLEMS=2 reported draws.db "run 1: chain 1: draw rows missing for iterations $lo..$hi" \
  "run 1: chain 1: iteration rows missing for iterations $lo..$hi"
# A chunk that overlaps another: its draws would count twice.
damaged twice "INSERT INTO draw_chunk(run_id, idx, chain, iter0, step, n, v0)
               SELECT run_id, idx, chain, iter0 + step, step, 1, v1 FROM draw_chunk
               WHERE run_id = 1 AND chain = 0 AND idx = 0 AND n > 1 LIMIT 1"
reported twice.db "draw rows (idx 0.."

# Diagnostics gone, draws kept (what a version-3 draw without an iteration
# row becomes); clearing only some of them is refused by the table.
diag="log_joint = NULL, n_bright = NULL, n_lik_evals = NULL, n_reads = NULL,
      accepted = NULL, step_size = NULL, full_logpost = NULL"
damaged diag "UPDATE draw_block SET $diag WHERE run_id = 1 AND chain = 0 AND iter BETWEEN 20 AND 30"
eq "draws kept" "$(q diag.db "SELECT count(*) FROM draw WHERE run_id = 1 AND chain = 0
                              AND iter BETWEEN 20 AND 30")" 12
reported diag.db "run 1: chain 0: iteration rows missing for iterations 20..30"
cp $db half.db
if sqlite3 half.db "UPDATE draw_block SET n_bright = NULL WHERE run_id = 1 AND iter = 20" 2>"$T/err"; then
  fail "draw_block took an iteration with n_bright NULL and n_reads set"
fi
err_has "CHECK constraint failed: diagnostics"
eq "half.db unchanged" "$(q half.db "SELECT count(*) FROM iteration WHERE iter = 20")" 2
ok "draw_block refuses a row with some diagnostics NULL: $(head -n 1 "$T/err")"

# ---- the run's typed setting ----------------------------------------------
# The schema's CHECKs refuse these edits, so they are made with the CHECKs
# off (as a file edited by other means would hold them); SQLite's own
# integrity check reports the broken CHECK too, hence two problems.
unchecked="PRAGMA ignore_check_constraints = ON;"
damaged setgone "DELETE FROM run_setting WHERE run_id = 1"
reported setgone.db "run 1: no run_setting row: the run cannot be resumed"

damaged setsteps "$unchecked UPDATE run_setting SET theta_steps = 0 WHERE run_id = 1"
PROBLEMS=2 reported setsteps.db "CHECK constraint failed in run_setting" \
  "run 1: run_setting: theta_steps is 0, want an integer >= 1"

damaged setzparam "UPDATE run_setting SET z_param = 0.5 WHERE run_id = 1"
reported setzparam.db "run 1: run_setting: z_param is 0.5, want NULL: the z mode has no parameter"

# Within its domain but not what the run was started with (run_config).
damaged setprior "UPDATE run_setting SET prior = 'laplace' WHERE run_id = 1"
reported setprior.db "run 1: run_config prior is 'normal', but run_setting.prior is 'laplace'"

damaged cfgchains "UPDATE run_config SET value = '3' WHERE run_id = 1 AND key = 'chains'"
reported cfgchains.db "run 1: run_config chains is '3', but run.n_chains is 2"

# ---- refused files --------------------------------------------------------
cp $db v99.db
sqlite3 v99.db "PRAGMA user_version = 99"
cp v99.db v99.orig
expect 1 "$FLYDB" check --db v99.db
err_has "v99.db" "schema version 99" "upgrade flydb"
same_file v99.db v99.orig
ok "user_version 99 refused: $(head -n 1 "$T/err")"

printf 'hello, I am a text file, not a database\n' >text.db
expect 1 "$FLYDB" check --db text.db
err_has "text.db" "not a flydb database"
ok "a text file refused: $(head -n 1 "$T/err")"

sqlite3 other.db "CREATE TABLE t(x); INSERT INTO t VALUES (1);"
expect 1 "$FLYDB" check --db other.db
err_has "other.db" "not a flydb file"
ok "another program's SQLite file refused: $(head -n 1 "$T/err")"

: >empty.db
expect 1 "$FLYDB" check --db empty.db
err_has "empty.db" "not a flydb database"
[ ! -s empty.db ] || fail "check wrote into empty.db"
expect 1 "$FLYDB" check --db missing.db
err_has "missing.db"
[ ! -e missing.db ] || fail "check created missing.db"
ok "an empty file and a missing one refused, neither written"

expect 2 "$FLYDB" check --db $db --bogus
err_has "--bogus"
expect 2 "$FLYDB" check --db $db extra
ok "usage errors exit 2"

# ---- sample reads a damaged page ---------------------------------------
expect 1 "$FLYDB" sample --db pageflip.db --seed 1 --iters 20 --regular --quiet
err_has "data set 1, page 4: checksum mismatch"
ok "sample --regular on a damaged page fails: $(head -n 1 "$T/err")"
expect 1 "$FLYDB" sample --db pageflip.db --seed 1 --iters 20 --quiet
err_has "page 4: checksum mismatch"
ok "sample (gibbs) on a damaged page fails: $(head -n 1 "$T/err")"
