#!/usr/bin/env bash
# An interrupted run resumed from its checkpoints yields exactly the draws
# of an uninterrupted one (docs/design.md §11.3).
#
# For each configuration: a reference run R; then the same run killed with
# SIGKILL at a random moment (a random fraction of R's wall time), checked
# for a consistent state (every chain's draws and diagnostics end exactly at
# its checkpoint, status still 'running'), and `flydb sample --resume`, which
# is itself killed again at a random moment on every other kill point, until
# it completes; its draws and per-iteration diagnostics must equal R's in all
# chains and iterations.  Then ^C (SIGINT) and SIGTERM: the program stops at a
# checkpoint, exits 1 with a resume hint, and resuming gives R's draws.
# Then --resume refusals: a complete run, changed options, unknown runs.
# Last, SIGKILL in the other z modes (explicit, implicit[, fixed bounds]).
#
# FLYDB_TEST_LEVEL=accurate: more kill points and more configurations.
# FLYDB_TEST_SEED fixes the random kill moments (printed either way).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

bg=
resume_cleanup() {
  if [ -n "$bg" ]; then kill -9 "$bg" 2>/dev/null || true; fi
  e2e_cleanup
}
trap resume_cleanup EXIT

TOY=$E2E/../../datasets/toy
db=f.db
tseed=${FLYDB_TEST_SEED:-$(( $$ ^ $(date +%s) ))}
RANDOM=$tseed
echo "# kill moments from FLYDB_TEST_SEED=$tseed"
accurate=0
[ "${FLYDB_TEST_LEVEL:-}" = accurate ] && accurate=1

expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" tune --db $db
ITERS=10000
BASE=(--seed 5 --iters "$ITERS" --checkpoint-every 50 --quiet)

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
last_run() { q $db "SELECT ifnull(max(id), 0) FROM run"; }
# rand_frac LO HI R: a number in [LO, HI) with 3 decimals from R = $RANDOM,
# which the caller reads in its own shell: inside $(...) bash reseeds
# RANDOM, and FLYDB_TEST_SEED would not reproduce the kill moments.
rand_frac() { awk -v lo="$1" -v hi="$2" -v r=$(($3 % 1000)) 'BEGIN { printf "%.3f", lo + (hi - lo) * r / 1000 }'; }

# cmp_runs A B: B's draws and diagnostics equal A's, all chains, all iterations.
cmp_runs() {
  local a=$1 b=$2 na nb nsame ia ib isame
  na=$(q $db "SELECT count(*) FROM draw WHERE run_id = $a")
  nb=$(q $db "SELECT count(*) FROM draw WHERE run_id = $b")
  # INTERSECT, not a join on iter: the views compute iter, so a join on it
  # would scan a parameter's draws for every draw
  nsame=$(q $db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $a
                 INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $b)")
  [ "$na" -gt 0 ] && [ "$na" = "$nb" ] && [ "$nsame" = "$na" ] || {
    q $db "SELECT 'first difference: chain ' || chain || ' iter ' || iter || ' idx ' || idx
           || ': ' || value || ' in run $a, not in run $b'
           FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $a
                 EXCEPT SELECT chain, iter, idx, value FROM draw WHERE run_id = $b)
           ORDER BY chain, iter LIMIT 1" >&2
    fail "run $b vs reference $a: $nb and $na draws, $nsame equal"
  }
  ia=$(q $db "SELECT count(*) FROM iteration WHERE run_id = $a")
  ib=$(q $db "SELECT count(*) FROM iteration WHERE run_id = $b")
  isame=$(q $db "SELECT count(*) FROM iteration x JOIN iteration y ON y.run_id = $b
                 AND y.chain = x.chain AND y.iter = x.iter WHERE x.run_id = $a
                 AND x.log_joint IS y.log_joint AND x.n_bright = y.n_bright
                 AND x.accepted = y.accepted AND x.step_size IS y.step_size")
  [ "$ia" = "$ib" ] && [ "$isame" = "$ia" ] ||
    fail "run $b vs reference $a: $ib and $ia iteration rows, $isame equal"
}

# consistent RUN P: after an interruption every chain's draws and iteration
# rows are exactly iterations 1..checkpoint.iter (none for a chain without
# a checkpoint), and status is 'running'.
consistent() {
  local run=$1 P=$2 thin=$3 bad
  bad=$(q $db "
    WITH c(chain) AS (SELECT DISTINCT chain FROM draw WHERE run_id = $run
                      UNION SELECT chain FROM checkpoint WHERE run_id = $run),
         k AS (SELECT c.chain, ifnull(ck.iter, 0) AS it FROM c
               LEFT JOIN checkpoint ck ON ck.run_id = $run AND ck.chain = c.chain)
    SELECT 'chain ' || k.chain || ': checkpoint at ' || k.it || ', draws '
           || (SELECT count(*) || ' up to ' || ifnull(max(iter), 0) FROM draw d
               WHERE d.run_id = $run AND d.chain = k.chain)
           || ', iteration rows ' || (SELECT count(*) FROM iteration i
               WHERE i.run_id = $run AND i.chain = k.chain)
    FROM k
    WHERE (SELECT count(*) FROM draw d WHERE d.run_id = $run AND d.chain = k.chain) != (k.it / $thin) * $P
       OR (SELECT ifnull(max(iter), 0) FROM draw d WHERE d.run_id = $run AND d.chain = k.chain)
          != (k.it / $thin) * $thin
       OR (SELECT count(*) FROM iteration i WHERE i.run_id = $run AND i.chain = k.chain) != k.it / $thin")
  [ -z "$bad" ] || fail "run $run after interruption: $bad"
  eq "status of interrupted run $run" "$(q $db "SELECT status FROM run WHERE id = $run")" running
}

# start ARGS...: flydb sample ARGS in the background; $bg is its pid.
start() {
  "$FLYDB" sample --db $db "$@" >"$T/bg.out" 2>"$T/bg.err" &
  bg=$!
}

# finish: wait for $bg; its exit status in $rc.
finish() {
  rc=0
  { wait "$bg"; } 2>/dev/null || rc=$?   # no "Killed" job notice
  bg=
}

# kill_at SIGNAL SECONDS: send SIGNAL to $bg after SECONDS unless it ended;
# its exit status in $rc.
kill_at() {
  sleep "$2"
  kill -"$1" "$bg" 2>/dev/null || true
  finish
}

# after FRAC MS: FRAC x MS milliseconds in seconds.
after() { awk -v f="$1" -v ms="$2" 'BEGIN { printf "%.3f", f * ms / 1000 }'; }

# resume_until_done RUN REF_MS KILL_AGAIN: --resume RUN; when KILL_AGAIN is
# 1 the first resume is killed at a random moment too.  The number of
# resumes in $nres, $rekilled = 1 if a resume was killed.
resume_until_done() {
  local run=$1 ref_ms=$2 again=$3
  nres=0 rekilled=0
  while :; do
    nres=$((nres + 1))
    [ $nres -le 6 ] || fail "run $run: still not done after 6 resumes"
    start --resume "$run"
    if [ "$again" = 1 ]; then
      again=0
      r=$RANDOM
      kill_at 9 "$(after "$(rand_frac 0.02 0.4 "$r")" "$ref_ms")"
      [ "$rc" = 137 ] || [ "$rc" = 0 ] || { cat "$T/bg.err" >&2; fail "resume of run $run: exit status $rc"; }
      if [ "$rc" = 137 ] && [ "$(q $db "SELECT status FROM run WHERE id = $run")" = running ]; then
        rekilled=1
        consistent "$run" "$P" "$thin"
      fi
    else
      finish
      [ "$rc" = 0 ] || { cat "$T/bg.err" >&2; fail "resume of run $run: exit status $rc"; }
    fi
    [ "$(q $db "SELECT status FROM run WHERE id = $run")" = "done" ] && break
  done
  return 0
}

# kill_test NAME KILLS OPTIONS...: reference run with OPTIONS, then KILLS
# runs killed with SIGKILL at random moments and resumed.
kill_test() {
  local name=$1 kills=$2 ref t0 ref_ms k=0 tries=0 before run frac at
  shift 2
  t0=$(now_ms)
  expect 0 "$FLYDB" sample --db $db "$@"
  ref_ms=$(( $(now_ms) - t0 ))
  ref=$(last_run)
  P=$(q $db "SELECT n_params FROM run WHERE id = $ref")
  thin=$(q $db "SELECT thin FROM run WHERE id = $ref")
  eq "reference status" "$(q $db "SELECT status FROM run WHERE id = $ref")" "done"
  while [ $k -lt "$kills" ]; do
    tries=$((tries + 1))
    [ $tries -le $((3 * kills + 3)) ] || fail "$name: could not kill a run in the middle ($k of $kills)"
    before=$(last_run)
    r=$RANDOM
    frac=$(rand_frac 0.05 0.95 "$r")
    start "$@"
    kill_at 9 "$(after "$frac" "$ref_ms")"
    run=$(last_run)
    if [ "$run" = "$before" ]; then
      echo "# $name: killed at $frac of ${ref_ms} ms, before the run was created; again"
      continue
    fi
    if [ "$rc" = 0 ]; then
      echo "# $name: run $run finished before the kill at $frac of ${ref_ms} ms"
      cmp_runs "$ref" "$run"
      ref_ms=$((ref_ms * 4 / 5))   # runs are quicker than the reference was
      continue
    fi
    [ "$rc" = 137 ] || { cat "$T/bg.err" >&2; fail "$name: exit status $rc, want 137 (SIGKILL)"; }
    if [ "$(q $db "SELECT status FROM run WHERE id = $run")" = "done" ]; then
      echo "# $name: run $run killed at $frac of ${ref_ms} ms, after it was marked done"
      cmp_runs "$ref" "$run"
      continue
    fi
    k=$((k + 1))
    at=$(q $db "SELECT group_concat(iter, '+') FROM checkpoint WHERE run_id = $run")
    consistent "$run" "$P" "$thin"
    resume_until_done "$run" "$ref_ms" $((k % 2 == 0))
    cmp_runs "$ref" "$run"
    ok "$name: kill -9 at $frac x ${ref_ms} ms (checkpoints at iterations ${at:-none}), $nres resume(s)$([ $rekilled = 1 ] && echo ", the first killed too") -> run $run = run $ref"
  done
}

# ---- SIGKILL at random moments (default z mode and --regular) ------------
if [ $accurate = 1 ]; then
  kill_test "gibbs" 30 "${BASE[@]}"
  kill_test "regular" 3 "${BASE[@]}" --regular
  kill_test "3 chains, thin 3" 4 "${BASE[@]}" --chains 3 --thin 3
else
  kill_test "gibbs" 3 "${BASE[@]}"
  kill_test "regular" 1 "${BASE[@]}" --regular
  kill_test "3 chains, thin 3" 1 "${BASE[@]}" --chains 3 --thin 3
fi

# ---- SIGINT and SIGTERM --------------------------------------------------
expect 0 "$FLYDB" sample --db $db "${BASE[@]}"
ref=$(last_run)
P=2 thin=1

# wait_draws RUN MIN: poll (up to 60 s) until RUN has more than MIN draws
# committed; fails if $bg ends first.
wait_draws() {
  local _
  for _ in $(seq 600); do
    [ "$(q $db "SELECT count(*) FROM draw WHERE run_id = $1" 2>/dev/null || echo 0)" -gt "$2" ] && return 0
    kill -0 "$bg" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

for sig in INT TERM; do
  before=$(last_run)
  start "${BASE[@]}"
  for _ in $(seq 600); do
    [ "$(last_run)" != "$before" ] && break
    sleep 0.05
  done
  run=$(last_run)
  [ "$run" != "$before" ] || fail "no run created"
  wait_draws "$run" 0 || { cat "$T/bg.err" >&2; fail "run $run wrote no draws"; }
  kill_at "$sig" 0
  [ "$rc" != 0 ] || fail "SIG$sig: run $run finished before the signal (or exit status 0 after it)"
  [ "$rc" = 1 ] || { cat "$T/bg.err" >&2; fail "SIG$sig: exit status $rc, want 1"; }
  grep -q -F -- "--resume $run" "$T/bg.err" || { cat "$T/bg.err" >&2; fail "SIG$sig: no resume hint"; }
  grep -q -F "interrupted" "$T/bg.err" || { cat "$T/bg.err" >&2; fail "SIG$sig: message lacks 'interrupted'"; }
  consistent "$run" "$P" "$thin"
  eq "message" "$(q $db "SELECT message LIKE '%resume%' FROM run WHERE id = $run")" 1
  at=$(q $db "SELECT group_concat(iter, '+') FROM checkpoint WHERE run_id = $run")
  # interrupt the resumed run too, after it has committed more
  n=$(q $db "SELECT count(*) FROM draw WHERE run_id = $run")
  start --resume "$run"
  if wait_draws "$run" "$n"; then
    kill_at "$sig" 0
  else
    finish
  fi
  [ "$rc" = 1 ] || [ "$rc" = 0 ] || { cat "$T/bg.err" >&2; fail "SIG$sig during resume: exit status $rc"; }
  if [ "$rc" = 1 ]; then
    grep -q -F -- "--resume $run" "$T/bg.err" || { cat "$T/bg.err" >&2; fail "no resume hint after a resume"; }
    consistent "$run" "$P" "$thin"
    expect 0 "$FLYDB" sample --db $db --resume "$run"
  fi
  eq "status after resume" "$(q $db "SELECT status, message IS NULL FROM run WHERE id = $run")" \
     "$(printf 'done\t1')"
  cmp_runs "$ref" "$run"
  ok "SIG$sig: exit 1 with 'flydb sample --db $db --resume $run' (checkpoints at ${at}); resumed -> run $run = run $ref"
done

# ---- refusals ------------------------------------------------------------
expect 1 "$FLYDB" sample --db $db --resume "$ref"
err_has "complete"
eq "draws of the complete run" "$(q $db "SELECT count(*) FROM draw WHERE run_id = $ref")" \
   $((2 * (ITERS + ITERS / 2) * 2))
ok "--resume of a complete run: exit 1, $(head -n 1 "$T/err")"

# an interrupted run to try changed options on
before=$(last_run)
start "${BASE[@]}"
for _ in $(seq 600); do [ "$(last_run)" != "$before" ] && break; sleep 0.05; done
run=$(last_run)
wait_draws "$run" 0 || true
kill_at 9 0
[ "$rc" = 137 ] || fail "run $run not killed (exit status $rc)"
for opt in "--iters 5" "--seed 6" "--chains 3" "--z implicit" "--regular" "--thin 2" "--warmup 10" \
           "--theta-steps 2"; do
  # shellcheck disable=SC2086
  expect 2 "$FLYDB" sample --db $db --resume "$run" $opt
  err_has "${opt%% *}"
done
eq "status untouched" "$(q $db "SELECT status FROM run WHERE id = $run")" running
ok "--resume with a changed option: exit 2 naming the option"
expect 1 "$FLYDB" sample --db $db --resume 999
err_has "999"
expect 2 "$FLYDB" sample --db $db --resume abc
err_has "resume"
expect 1 "$FLYDB" sample --db nosuch.db --resume "$run"
err_has "nosuch.db"
[ ! -e nosuch.db ] || fail "--resume created nosuch.db"
ok "--resume of an unknown run or database fails clearly"
# and the killed run still resumes to the reference draws
expect 0 "$FLYDB" sample --db $db --resume "$run"
cmp_runs "$ref" "$run"
ok "the run killed before the refusals resumes to the reference draws"
eq "integrity" "$(q $db "PRAGMA integrity_check")" ok

# ---- a run stored before --theta-steps existed ---------------------------
# Such runs made one theta update per iteration in every z mode, and their
# run_config has no theta-steps row: --resume must not give them the gibbs
# default.  Emulated by a killed --theta-steps 1 run whose row is removed
# and whose file is taken back to schema version 5 (no typed run_setting,
# no kernel statistics columns: the view and columns of version 7 undone;
# the draws back in draw_block's value columns and the chunks, slots and
# views of version 8 undone; no typed columns, no loo, prediction or ppc
# tables, no view draws_by_iter, no index draw_chunk_key: versions 9 to 14
# undone, 14's rowid table and index with the draw_chunk that undoing 8
# drops), so the migration rebuilds the setting from run_config.
expect 0 "$FLYDB" sample --db $db "${BASE[@]}" --theta-steps 1
ref1=$(last_run)
before=$ref1
start "${BASE[@]}" --theta-steps 1
for _ in $(seq 600); do [ "$(last_run)" != "$before" ] && break; sleep 0.05; done
run=$(last_run)
[ "$run" != "$before" ] || fail "no run created"
wait_draws "$run" 0 || true
kill_at 9 0
[ "$rc" = 137 ] || fail "run $run not killed (exit status $rc)"
SCHEMA=$E2E/../../schema
np=$(q $db "SELECT max(n_params) FROM run")
undo8="DROP VIEW draws_by_iter;
       CREATE TEMP TABLE d(run_id INTEGER, chain INTEGER, iter INTEGER, idx INTEGER, value REAL);
       INSERT INTO d SELECT run_id, chain, iter, idx, value FROM draw;
       CREATE INDEX temp.d_key ON d(run_id, chain, iter, idx);
       $(for k in $(seq 0 63); do printf 'ALTER TABLE draw_block ADD COLUMN v%d REAL; ' "$k"; done)
       UPDATE draw_block SET $(for k in $(seq 0 $((np - 1))); do
         printf 'v%d = (SELECT value FROM temp.d x WHERE x.run_id = draw_block.run_id AND x.chain = draw_block.chain AND x.iter = draw_block.iter AND x.idx = %d)%s' \
           "$k" "$k" "$([ "$k" -lt $((np - 1)) ] && echo ,)"; done);
       DROP VIEW draws_named; DROP VIEW draw; DROP TABLE draw_chunk; DROP TABLE draw_slot;
       DROP INDEX param_name; DELETE FROM sqlite_stat1 WHERE tbl = 'draw_slot';
       $(sed -n '/^CREATE VIEW draw AS/,/;$/p' "$SCHEMA/003_draw_block.sql")
       $(sed -n '/^CREATE VIEW draws_named AS/,/;$/p' "$SCHEMA/001_init.sql")"
q $db "$undo8" >/dev/null
q $db "DELETE FROM run_config WHERE run_id = $run AND key = 'theta-steps';
       DROP TABLE ppc_rep; DROP TABLE ppc_bin; DROP TABLE ppc;
       DROP TABLE prediction; DROP TABLE loo_point; DROP TABLE loo;
       DROP TABLE derived_omit; DROP TABLE derived; DROP TABLE level;
       ALTER TABLE dataset_column DROP COLUMN n_missing;
       ALTER TABLE dataset_column DROP COLUMN type;
       DROP TABLE run_setting; DROP VIEW iteration;
       ALTER TABLE draw_block DROP COLUMN accept_stat;
       ALTER TABLE draw_block DROP COLUMN treedepth;
       ALTER TABLE draw_block DROP COLUMN n_leapfrog;
       ALTER TABLE draw_block DROP COLUMN divergent;
       ALTER TABLE draw_block DROP COLUMN energy;
       CREATE VIEW iteration AS
         SELECT run_id, chain, iter, log_joint, n_bright, n_lik_evals, n_reads,
                accepted, step_size, full_logpost
         FROM draw_block WHERE blk = 0 AND n_bright IS NOT NULL;
       PRAGMA user_version = 5" >/dev/null
expect 0 "$FLYDB" sample --db $db --resume "$run"
eq "migrated theta steps" "$(q $db "SELECT theta_steps FROM run_setting WHERE run_id = $run")" 1
cmp_runs "$ref1" "$run"
ok "a run without a stored --theta-steps resumes with one theta update per iteration"

# ---- SIGKILL in the other z modes ----------------------------------------
if [ $accurate = 1 ]; then
  kill_test "explicit" 3 "${BASE[@]}" --z explicit=0.2
  kill_test "implicit" 3 "${BASE[@]}" --z implicit
  kill_test "fixed bounds (implicit)" 3 "${BASE[@]}" --bounds fixed
else
  kill_test "explicit" 1 "${BASE[@]}" --z explicit=0.2
  kill_test "implicit" 1 "${BASE[@]}" --z implicit
fi

# ---- SIGKILL with the other theta kernels (their adaptation state and
# cached gradients travel in the checkpoint) --------------------------------
if [ $accurate = 1 ]; then
  kill_test "mala, gibbs" 3 "${BASE[@]}" --sampler mala
  kill_test "slice, implicit" 3 "${BASE[@]}" --sampler slice --z implicit
  kill_test "hmc, regular" 3 "${BASE[@]}" --sampler hmc --regular
  kill_test "hmc, gibbs" 3 "${BASE[@]}" --sampler hmc --theta-steps 4
  kill_test "nuts, regular" 3 "${BASE[@]}" --sampler nuts --regular
  kill_test "nuts, gibbs" 3 "${BASE[@]}" --sampler nuts
else
  kill_test "mala, gibbs" 1 "${BASE[@]}" --sampler mala
  kill_test "slice, implicit" 1 "${BASE[@]}" --sampler slice --z implicit
  kill_test "hmc, gibbs" 1 "${BASE[@]}" --sampler hmc --theta-steps 4
  kill_test "nuts, gibbs" 1 "${BASE[@]}" --sampler nuts
fi
