#!/usr/bin/env bash
# flydb sample on a shard manifest (issue 28, stage 3): the same seed gives
# bit-identical draws and per-iteration diagnostics for one process without
# MPI and for mpirun -np 1, 2 and 4 on a 4-shard manifest, for every z mode
# and theta kernel; the sharded posterior agrees with the unsharded store's
# within 4 MCSE; what a manifest cannot run is refused; a rank killed with
# SIGKILL at a seeded random point ends the job (no hang), and
# `mpirun ... flydb sample --resume RUN` then gives the uninterrupted draws,
# as it does after SIGINT stopped a run at a checkpoint.
# Args: flydb, and 1 if it was built with MPI.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/mpi/lib.sh
. "$here/lib.sh"
# Draws and per-iteration diagnostics of run 1, every column.
sig() {
  sqlite3 "$1/manifest.db" "SELECT * FROM draws_named WHERE run_id = 1 ORDER BY chain, iter, name;
                            SELECT * FROM iteration WHERE run_id = 1 ORDER BY chain, iter" | md5sum
}

# What a resume must reproduce: the draws and the diagnostics of the chain's
# state (as tests/e2e/sample_resume.sh; row reads and likelihood counts
# differ once, where the resumed gibbs step rebuilds its scan cache).
sig_resume() {
  sqlite3 "$1/manifest.db" "SELECT * FROM draws_named WHERE run_id = 1 ORDER BY chain, iter, name;
                            SELECT chain, iter, log_joint, n_bright, accepted, step_size
                            FROM iteration WHERE run_id = 1 ORDER BY chain, iter" | md5sum
}

# Wait (30 s at most) until the run in DIR/manifest.db has a checkpoint.
wait_checkpoint() {
  for _ in $(seq 600); do
    n=$(sqlite3 "$1/manifest.db" "SELECT count(*) FROM checkpoint" 2>/dev/null || echo 0)
    [ "${n:-0}" -gt 0 ] && return 0
    sleep 0.05
  done
}

"$flydb" ingest "$here/../../datasets/fmnist-pair/fmnist_pair.csv" --db fm.db --page-rows 61 2>/dev/null
"$flydb" shard --db fm.db --shards 4 --out fm 2>/dev/null

# Every z mode and kernel: one process, then -np 1, 2, 4.
short="--iters 12 --warmup 8 --chains 2 --seed 7 --quiet"
for opts in "--theta-steps 2" "--z implicit --theta-steps 2" "--z explicit --theta-steps 2" \
            "--regular" "--sampler mala" "--z implicit --sampler nuts" \
            "--sampler hmc --leapfrog 4" "--sampler slice"; do
  rm -rf p0; cp -r fm p0
  # shellcheck disable=SC2086
  "$flydb" sample --db p0/manifest.db $short $opts 2>err.txt || { cat err.txt; fail "one process ($opts)"; }
  [ "$(sqlite3 p0/manifest.db "SELECT status || count(*) FROM run JOIN iteration ON run_id = id")" = done40 ] \
    || fail "one process ($opts): not 2 x 20 iterations done"
  want=$(sig p0)
  for R in 1 2 4; do
    rm -rf p$R; cp -r fm p$R
    # shellcheck disable=SC2086
    run $R "$flydb" sample --db p$R/manifest.db $short $opts 2>err.txt \
      || { cat err.txt; fail "-np $R ($opts) failed"; }
    [ "$(sig p$R)" = "$want" ] || fail "-np $R ($opts): other draws or diagnostics than one process"
  done
  ok "sample $opts: draws and diagnostics bit-identical for one process and -np 1, 2, 4"
done
"$flydb" summary --db p4/manifest.db >/dev/null || fail "summary of a sharded run"
"$flydb" export --db p4/manifest.db --out exp >/dev/null 2>&1 || fail "export of a sharded run"
for s in p4/shard-*.db; do "$flydb" check --db "$s" >/dev/null || fail "check of $s after sampling"; done
"$flydb" check --db p4/manifest.db >out.txt || { cat out.txt; fail "check of the manifest after sampling"; }
grep -q "a shard manifest: its shards hold the 12000 rows it lists, digests compared" out.txt \
  || fail "check of the manifest: $(cat out.txt)"
cp -r p4 pbad; rm pbad/shard-002.db
rc=0; "$flydb" check --db pbad/manifest.db >out.txt || rc=$?
[ $rc = 1 ] && grep -q "^shards: shard 2 .*missing" out.txt || fail "check of a manifest without shard 2: exit $rc ($(cat out.txt))"
rm -rf pbad
ok "summary and export read the sharded run; the manifest and every shard check; a missing shard is found"

# The result every rank holds is printed once, by rank 0.
rm -rf pq; cp -r fm pq
run 2 "$flydb" tune --db pq/manifest.db >out.txt 2>err.txt || { cat err.txt; fail "tune -np 2"; }
[ "$(grep -c '^bound set' out.txt)" = 1 ] || fail "tune -np 2 printed its result $(grep -c '^bound set' out.txt) times"
run 2 "$flydb" sample --db pq/manifest.db --iters 12 --warmup 8 --chains 2 --seed 7 >out.txt 2>err.txt || { cat err.txt; fail "sample -np 2"; }
[ "$(grep -c 'done in' err.txt)" = 1 ] && [ "$(grep -c '^(Intercept)' out.txt err.txt | awk -F: '{ s += $2 } END { print s }')" = 1 ] \
  || fail "sample -np 2 printed its result more than once: $(grep -c 'done in' err.txt) lines 'done in'"
rm -rf pq
ok "tune and sample with 2 ranks print their result once"

# Refused: more ranks than shards, fixed bounds, the exact log posterior, a formula.
# shellcheck disable=SC2086
rc=0; run 5 "$flydb" sample --db fm/manifest.db $short >/dev/null 2>err.txt || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "5 ranks for 4 shards" err.txt || fail "-np 5 on 4 shards: exit $rc"
for bad in "--bounds fixed" "--full-logpost-every 5" "--formula pc2~pc1"; do
  rc=0
  # shellcheck disable=SC2086
  "$flydb" sample --db fm/manifest.db $short $bad >/dev/null 2>err.txt || rc=$?
  [ $rc = 2 ] && grep -q "shard manifest" err.txt || fail "$bad on a manifest: exit $rc ($(head -2 err.txt))"
done
ok "more ranks than shards, --bounds fixed, --full-logpost-every and --formula refused"

# The sharded posterior against the unsharded one: every mean within 4 MCSE
# (the toy set, where MH mixes well enough for MCSE to be trusted).
"$flydb" ingest "$here/../../datasets/toy/logistic.csv" --db toy.db 2>/dev/null
"$flydb" shard --db toy.db --shards 4 --out toy 2>/dev/null
"$flydb" sample --db toy/manifest.db --iters 2000 --warmup 500 --chains 2 --seed 3 --quiet
"$flydb" sample --db toy.db --iters 2000 --warmup 500 --chains 2 --seed 4 --quiet --z gibbs
"$flydb" summary --db toy/manifest.db --format csv >a.csv
"$flydb" summary --db toy.db --format csv >b.csv
python3 - a.csv b.csv <<'PY'
import csv, math, sys
def read(p):
    return {r["variable"]: r for r in csv.DictReader(open(p))}
a, b = read(sys.argv[1]), read(sys.argv[2])
assert set(a) == set(b), (sorted(a)[:3], sorted(b)[:3])
worst = 0.0
for v in a:
    d = abs(float(a[v]["mean"]) - float(b[v]["mean"]))
    s = math.hypot(float(a[v]["mcse_mean"]), float(b[v]["mcse_mean"]))
    worst = max(worst, d / s)
assert worst < 4, worst
print("ok - sharded and unsharded posterior means agree: largest gap %.2f MCSE over %d parameters"
      % (worst, len(a)))
PY

# Kill -9 of one rank at a seeded random point, then resume.
iters="--iters 60 --warmup 20 --chains 2 --seed 5 --quiet --theta-steps 2 --checkpoint-every 4"
rm -rf ref; cp -r fm ref
# shellcheck disable=SC2086
"$flydb" sample --db ref/manifest.db $iters
want=$(sig_resume ref)
RANDOM=28
for trial in 1 2; do
  rm -rf k; cp -r fm k
  # shellcheck disable=SC2086
  run 2 "$flydb" sample --db k/manifest.db $iters >/dev/null 2>kill.err &
  job=$!
  # once the first checkpoint is in, wait a random while, then kill a random rank
  wait_checkpoint k
  sleep "0.$((RANDOM % 10))"
  pids=$(pgrep -f "sample --db k/manifest.db" | while read -r p; do
           if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = flydb ]; then echo "$p"; fi
         done || true)
  victim=$(echo "$pids" | sed -n "$((RANDOM % 2 + 1))p")
  [ -n "$victim" ] || victim=$(echo "$pids" | head -1)
  if [ -z "$victim" ]; then
    wait $job || true
    echo "# trial $trial: the job ended before the kill"
    continue
  fi
  kill -9 "$victim" 2>/dev/null || true
  t0=$SECONDS
  rc=0; wait $job || rc=$?
  [ $((SECONDS - t0)) -le 30 ] || fail "the job took $((SECONDS - t0)) s to end after the kill"
  status=$(sqlite3 k/manifest.db "SELECT status FROM run WHERE id = 1")
  at=$(sqlite3 k/manifest.db "SELECT group_concat(iter) FROM checkpoint WHERE run_id = 1")
  if [ "$status" = "done" ]; then
    echo "# trial $trial: the kill came after the run was done"
  else
    [ $rc != 0 ] || fail "the killed job exited 0"
    run 2 "$flydb" sample --db k/manifest.db --resume 1 --quiet 2>err.txt \
      || { cat err.txt; fail "resume after the kill"; }
  fi
  [ "$(sig_resume k)" = "$want" ] || fail "trial $trial: resumed after a kill at checkpoints $at: other draws"
  ok "trial $trial: a rank killed (job ended in $((SECONDS - t0)) s, exit $rc, checkpoints at $at); the resumed run has the uninterrupted draws"
done

# Stopped by SIGINT (the progress hook asks, rank 0 passes it on): the run
# stops at a checkpoint, resumable, and its resume gives the same draws.
long="--iters 6000 --warmup 1000 --chains 2 --seed 5 --theta-steps 4 --quiet"
rm -rf i0 i1; cp -r fm i0; cp -r fm i1
# shellcheck disable=SC2086
"$flydb" sample --db i0/manifest.db $long
# shellcheck disable=SC2086
"$flydb" sample --db i1/manifest.db $long 2>int.err &
job=$!
wait_checkpoint i1
kill -INT $job 2>/dev/null || true
rc=0; wait $job || rc=$?
if [ $rc = 0 ]; then
  echo "# the run ended before the signal"
else
  grep -q "interrupted" int.err || fail "SIGINT: exit $rc ($(head -2 int.err))"
  [ "$(sqlite3 i1/manifest.db "SELECT status FROM run")" = running ] || fail "SIGINT: run not resumable"
  "$flydb" sample --db i1/manifest.db --resume 1 --quiet
fi
[ "$(sig_resume i1)" = "$(sig_resume i0)" ] || fail "SIGINT and resume: other draws"
ok "a run stopped by SIGINT (exit $rc) resumes to the uninterrupted draws"

# A rank killed while writing its shard's checkpoint leaves a hot journal:
# the next run's read-only opens must not fail on it (the shard is rolled
# back by one read-write open).
rm -rf h; cp -r fm h
python3 - h/shard-000.db <<'PY' || true
import os, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA cache_size = 2")
c.execute("BEGIN")
c.execute("CREATE TABLE junk (x BLOB)")
for _ in range(200):
    c.execute("INSERT INTO junk VALUES (randomblob(20000))")
os.kill(os.getpid(), 9)
PY
[ -e h/shard-000.db-journal ] || fail "no hot journal made"
# shellcheck disable=SC2086
run 2 "$flydb" sample --db h/manifest.db $short --theta-steps 2 2>err.txt \
  || { cat err.txt; fail "a shard with a hot journal"; }
[ ! -e h/shard-000.db-journal ] && [ "$(sqlite3 h/shard-000.db "SELECT count(*) FROM sqlite_schema WHERE name = 'junk'")" = 0 ] \
  || fail "the hot journal was not rolled back"
ok "a shard left with a hot journal is rolled back and sampled"
