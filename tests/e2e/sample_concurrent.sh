#!/usr/bin/env bash
# Readers during a run (WAL, docs/design.md §12.6): while `flydb sample`
# writes, `sqlite3` queries and `flydb summary` / `flydb info` on the same
# file succeed (no "database is locked"), the draw count never decreases,
# and every snapshot is transactionally consistent (each chain's draws end
# exactly at its checkpoint).  Readers do not change the draws.
# Writers at once: two `flydb sample` runs started together on one database
# (tuned, and untuned so that both tune) both complete with the draws of
# the same runs made one after the other, or one is refused clearly.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

pids=()
conc_cleanup() {
  local p
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  e2e_cleanup
}
trap conc_cleanup EXIT

TOY=$E2E/../../datasets/toy
db=f.db
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" tune --db $db
P=2

last_run() { q $db "SELECT ifnull(max(id), 0) FROM run"; }

# strict QUERY: sqlite3 with a 3 s busy timeout (as any client of a live
# database sets, flydb included); fails on any error, so a writer holding
# its lock for seconds, or a non-WAL journal, fails the test.
strict() {
  local out
  out=$(sqlite3 -batch -noheader -cmd ".timeout 3000" -separator "$(printf '\t')" $db "$1" \
          2>"$T/q.err") ||
    { cat "$T/q.err" >&2; fail "query failed during a run: $1"; }
  [ ! -s "$T/q.err" ] || { cat "$T/q.err" >&2; fail "query printed an error during a run: $1"; }
  echo "$out"
}

# prober PID: while PID runs, query with no busy timeout at all, one line
# per query in $T/probe: ok, busy, or the error.  Reported, not fatal: SQLite
# itself returns BUSY to such a reader while a connection switches the file
# to WAL or, closing, checkpoints it.
prober() {
  while kill -0 "$1" 2>/dev/null; do
    if sqlite3 -batch $db "SELECT count(*) FROM run" >/dev/null 2>"$T/p.err"; then echo ok
    elif grep -q -i "locked\|busy" "$T/p.err"; then echo busy
    else head -n 1 "$T/p.err"; fi
  done >"$T/probe"
}

# cmp_runs A B: identical draws.
cmp_runs() {
  local na nb nsame
  na=$(q $db "SELECT count(*) FROM draw WHERE run_id = $1")
  nb=$(q $db "SELECT count(*) FROM draw WHERE run_id = $2")
  # INTERSECT, not a join on iter (which the views compute)
  nsame=$(q $db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $1
                 INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $2)")
  [ "$na" -gt 0 ] && [ "$na" = "$nb" ] && [ "$nsame" = "$na" ] ||
    fail "runs $1 and $2: $na and $nb draws, $nsame equal"
}

# ---- readers while one run writes ------------------------------------------
ITERS=40000
before=$(last_run)
"$FLYDB" sample --db $db --seed 9 --iters $ITERS --checkpoint-every 50 --quiet \
  >"$T/bg.out" 2>"$T/bg.err" &
bg=$!
pids+=("$bg")
prober "$bg" &
pids+=("$!")
prev=0 polls=0 running_polls=0 grew=0 summaries=0
while kill -0 "$bg" 2>/dev/null; do
  run=$(strict "SELECT ifnull(max(id), 0) FROM run")
  if [ "$run" = "$before" ]; then sleep 0.05; continue; fi
  polls=$((polls + 1))
  # one statement, one snapshot: status, count, and the checkpoint check
  snap=$(strict "SELECT (SELECT status FROM run WHERE id = $run),
                        (SELECT count(*) FROM draw WHERE run_id = $run),
                        (SELECT count(*) FROM checkpoint c WHERE c.run_id = $run AND
                           (SELECT count(*) FROM draw d WHERE d.run_id = c.run_id
                            AND d.chain = c.chain) != c.iter * $P),
                        (SELECT count(*) FROM (SELECT DISTINCT chain FROM draw WHERE run_id = $run)
                           WHERE chain NOT IN (SELECT chain FROM checkpoint WHERE run_id = $run))")
  IFS=$'\t' read -r status n badck nock <<<"$snap"
  [ "$n" -ge "$prev" ] || fail "poll $polls: draw count went from $prev down to $n"
  [ "$badck" = 0 ] && [ "$nock" = 0 ] ||
    fail "poll $polls: a snapshot shows draws not matching the checkpoints ($badck, $nock)"
  if [ "$status" = running ]; then
    running_polls=$((running_polls + 1))
    eq "journal mode during the run" "$(strict "PRAGMA journal_mode")" wal
    [ "$n" -gt "$prev" ] && [ "$prev" -gt 0 ] && grew=1
  fi
  prev=$n
  # flydb summary of the running run: a table, or (before any post-warm-up
  # draw) a clear refusal; never a lock error
  src=0
  "$FLYDB" summary --db $db >"$T/s.out" 2>"$T/s.err" || src=$?
  if grep -q -i -E "locked|busy" "$T/s.err"; then cat "$T/s.err" >&2; fail "flydb summary during a run: lock error"; fi
  case $src in
    0) grep -q -F "(Intercept)" "$T/s.out" || { cat "$T/s.out" >&2; fail "flydb summary: no table"; }
       summaries=$((summaries + 1)) ;;
    1) grep -q -F "no post-warm-up draws" "$T/s.err" ||
         { cat "$T/s.err" >&2; fail "flydb summary during a run: exit 1"; } ;;
    *) cat "$T/s.err" >&2; fail "flydb summary during a run: exit status $src" ;;
  esac
  src=0
  "$FLYDB" info --db $db >"$T/i.out" 2>"$T/i.err" || src=$?
  [ $src = 0 ] || { cat "$T/i.err" >&2; fail "flydb info during a run: exit status $src"; }
done
rc=0
wait "$bg" || rc=$?
[ $rc = 0 ] || { cat "$T/bg.err" >&2; fail "the sampling run failed (exit status $rc) while being read"; }
run=$(last_run)
eq "status" "$(q $db "SELECT status FROM run WHERE id = $run")" "done"
eq "draws" "$(q $db "SELECT count(*) FROM draw WHERE run_id = $run")" $((2 * (ITERS + ITERS / 2) * P))
[ $running_polls -ge 3 ] && [ $grew = 1 ] ||
  fail "only $running_polls polls during the run (draws grew while polling: $grew): the run is too short to test readers"
ok "$polls reader polls ($running_polls during the run, $summaries summaries): no lock errors, counts never decrease, snapshots consistent"
wait "${pids[-1]}" || true
other=$(grep -v -c -x "ok\|busy" "$T/probe" || true)
[ "$other" = 0 ] || { grep -v -x "ok\|busy" "$T/probe" >&2; fail "queries without a busy timeout failed otherwise"; }
echo "# readers without a busy timeout: $(grep -c -x busy "$T/probe" || true) of $(wc -l <"$T/probe") queries got 'database is locked'"

expect 0 "$FLYDB" sample --db $db --seed 9 --iters $ITERS --checkpoint-every 50 --quiet
cmp_runs "$run" "$(last_run)"
ok "the run read concurrently has the draws of an undisturbed one"

# ---- two writers at once ---------------------------------------------------
# two_at_once DB: start `flydb sample` seeds 31 and 32 together on DB;
# sets $r31/$r32 to their run ids ("" if refused).
two_at_once() {
  local d=$1 p1 p2 rc1=0 rc2=0
  "$FLYDB" sample --db "$d" --seed 31 --iters 8000 --checkpoint-every 50 --quiet \
    >"$T/a.out" 2>"$T/a.err" &
  p1=$!
  "$FLYDB" sample --db "$d" --seed 32 --iters 8000 --checkpoint-every 50 --quiet \
    >"$T/b.out" 2>"$T/b.err" &
  p2=$!
  pids+=("$p1" "$p2")
  wait "$p1" || rc1=$?
  wait "$p2" || rc2=$?
  r31=$(q "$d" "SELECT ifnull(max(id), '') FROM run WHERE seed = 31")
  r32=$(q "$d" "SELECT ifnull(max(id), '') FROM run WHERE seed = 32")
  if [ $rc1 = 0 ] && [ $rc2 = 0 ]; then
    outcome="both succeeded"
  elif [ $rc1 = 0 ] || [ $rc2 = 0 ]; then
    local e=$T/a.err rr=$r31
    [ $rc1 = 0 ] && { e=$T/b.err; rr=$r32; }
    [ -s "$e" ] || fail "a concurrent run failed without a message"
    # a clear refusal leaves no half run behind
    [ -z "$rr" ] || [ "$(q "$d" "SELECT status FROM run WHERE id = $rr")" != running ] ||
      fail "the refused run $rr was left 'running'"
    outcome="one refused: $(head -n 1 "$e")"
    [ $rc1 = 0 ] && r32= || r31=
  else
    cat "$T/a.err" "$T/b.err" >&2
    fail "two concurrent runs both failed (exit status $rc1, $rc2)"
  fi
  eq "integrity" "$(q "$d" "PRAGMA integrity_check")" ok
}

# check_pair DB: completed concurrent runs have the draws of sequential ones.
check_pair() {
  local d=$1 s r ref
  for s in 31 32; do
    r=$([ $s = 31 ] && echo "$r31" || echo "$r32")
    [ -n "$r" ] || continue
    eq "status of run $r" "$(q "$d" "SELECT status FROM run WHERE id = $r")" "done"
    expect 0 "$FLYDB" sample --db "$d" --seed $s --iters 8000 --checkpoint-every 50 --quiet
    ref=$(q "$d" "SELECT max(id) FROM run")
    db=$d cmp_runs "$r" "$ref"
  done
}

two_at_once $db
check_pair $db
ok "two sample runs at once on a tuned database: $outcome; draws as if sequential"

# untuned: both processes tune the same bound set at the same time
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db g.db
two_at_once g.db
eq "bound sets" "$(q g.db "SELECT count(*), min(status) FROM bound_set")" "$(printf '1\tready')"
check_pair g.db
ok "two sample runs at once on an untuned database: $outcome; one bound set"
