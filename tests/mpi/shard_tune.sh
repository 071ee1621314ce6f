#!/usr/bin/env bash
# flydb shard --tune-bounds: the MAP, the Laplace precision and the moment totals
# of a 4-shard manifest are the same bits for one process without MPI and
# for mpirun -np 1, 2 and 4 (per-shard sums gathered and added in shard
# order on every rank), agree with the unsharded `flydb tune` to the L-BFGS
# tolerance, and are stored in the manifest; each shard gets an ordinary
# bound set at that MAP (`flydb check` recomputes its moments from its
# xi), and the shards' moments add up to the unsharded ones.  More ranks than shards, or a missing shard, stop every rank
# (exit 1, no hang).  Args: flydb, and 1 if it was built with MPI.
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/mpi/lib.sh
. "$here/lib.sh"

for d in toy/logistic fmnist-pair/fmnist_pair; do
  name=${d#*/}
  "$flydb" ingest "$here/../../datasets/$d.csv" --db $name.db --page-rows 61 2>/dev/null
  "$flydb" shard --db $name.db --shards 4 --out $name 2>/dev/null
  # stored: MAP, H, moment totals, and every shard's bound set
  stored() {
    sqlite3 "$1/manifest.db" "SELECT hex(theta_map), hex(laplace_prec), hex(moments) FROM shard_map"
    for s in "$1"/shard-*.db; do
      sqlite3 "$s" "SELECT hex(theta_map), hex(laplace_prec), hex(laplace_cov) FROM bound_set;
                    SELECT name, i, j, quote(value) FROM moment ORDER BY 1, 2, 3"
    done | md5sum
  }
  rm -rf p0; cp -r $name p0
  "$flydb" shard --tune-bounds --manifest p0/manifest.db --prior-scale 2 2>/dev/null \
    | sed 's/, [0-9]* ranks//' >plain.txt
  want=$(stored p0)
  for R in 1 2 4; do
    rm -rf p$R; cp -r $name p$R
    run $R "$flydb" shard --tune-bounds --manifest p$R/manifest.db --prior-scale 2 2>/dev/null \
      | sed 's/, [0-9]* ranks//' >r$R.txt
    grep -q "^MAP of" r$R.txt || fail "$name: -np $R printed no MAP"
    cmp -s plain.txt r$R.txt || { diff plain.txt r$R.txt | head; fail "$name: -np $R differs from one process"; }
    [ "$(stored p$R)" = "$want" ] || fail "$name: -np $R stored other bits than one process"
  done
  ok "$name: MAP, H, moment totals and the shards' bound sets bit-identical for one process and -np 1, 2, 4 ($(head -1 plain.txt))"
  for s in p2/shard-*.db; do "$flydb" check --db "$s" >/dev/null || fail "check of $s"; done
  # A second run finds the shards' bound sets at its MAP and reuses them.
  run 2 "$flydb" shard --tune-bounds --manifest p2/manifest.db --prior-scale 2 >/dev/null 2>&1
  [ "$(sqlite3 p2/shard-001.db 'SELECT group_concat(id) FROM bound_set')" = 1 ] \
    || fail "$name: a second run rebuilt the shards' bound sets"
  [ "$(stored p2)" = "$want" ] || fail "$name: a second run changed what is stored"
  ok "$name: every shard checks; a second run reuses the shards' bound sets"
  cp -r p0 $name.tuned
  # `flydb tune --db manifest`: the same, through the usual command.
  for R in 0 2; do
    rm -rf t$R; cp -r $name t$R
    if [ $R = 0 ]; then "$flydb" tune --db t$R/manifest.db --prior-scale 2 >/dev/null 2>&1
    else run $R "$flydb" tune --db t$R/manifest.db --prior-scale 2 >/dev/null 2>&1; fi
    [ "$(stored t$R)" = "$want" ] || fail "$name: flydb tune on the manifest (R=$R) stored other bits"
  done
  ok "$name: flydb tune --db manifest (one process, -np 2) stores the same bits"
  # Against the unsharded tune: the same optimum, to the search's tolerance.
  "$flydb" tune --db $name.db --prior-scale 2 >/dev/null 2>&1
  python3 - "$name.db" "$name.tuned/manifest.db" <<'PY'
import sqlite3, struct, sys
def vec(path, sql):
    b = sqlite3.connect(path).execute(sql).fetchone()[0]
    return struct.unpack("<%dd" % (len(b) // 8), b)
a = vec(sys.argv[1], "SELECT theta_map FROM bound_set")
b = vec(sys.argv[2], "SELECT theta_map FROM shard_map WHERE model_opts = 'prior=normal;scale=2'")
worst = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(a, b))
assert len(a) == len(b) and worst < 1e-5, (worst, a[:3], b[:3])
# The shards' moment tables add up to the unsharded one (other MAPs to
# within the search's tolerance, other summation orders: not bit for bit).
import glob, os
d = os.path.dirname(sys.argv[2])
tot = {}
for s in sorted(glob.glob(d + "/shard-*.db")):
    for n, i, j, v in sqlite3.connect(s).execute("SELECT name, i, j, value FROM moment"):
        tot[(n, i, j)] = tot.get((n, i, j), 0.0) + v
one = {(n, i, j): v for n, i, j, v in sqlite3.connect(sys.argv[1]).execute(
    "SELECT name, i, j, value FROM moment")}
scale = max(abs(v) for v in one.values())
mw = max(abs(tot[k] - one[k]) for k in one) / scale
assert set(tot) == set(one) and mw < 1e-4, mw
print("ok - %s: sharded MAP = unsharded MAP to %.1e, moments to %.1e of their scale"
      % (sys.argv[1], worst, mw))
PY
done

rc=0; run 5 "$flydb" shard --tune-bounds --manifest logistic/manifest.db >/dev/null 2>err.txt || rc=$?
[ $rc != 0 ] && grep -q "5 ranks for 4 shards" err.txt || fail "-np 5 on 4 shards: exit $rc"
ok "more ranks than shards refused"
rm logistic/shard-002.db
rc=0; run 2 "$flydb" shard --tune-bounds --manifest logistic/manifest.db >/dev/null 2>err.txt || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "shard 2 (logistic/shard-002.db) is missing" err.txt \
  || fail "a missing shard under mpirun: exit $rc ($(head -3 err.txt))"
ok "a missing shard stops every rank (exit $rc)"

# A rank killed with SIGKILL mid-tune ends the job (no hang), leaves no
# partial bound set or result, and a rerun completes with the bits of an
# uninterrupted run.  1.2 million rows, so the tuning (about 1.5 s on two
# cores) is still running when the kill comes half a second in.
GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
[ -x "$GEN" ] || fail "no flydb-gen at $GEN"
"$GEN" --model logistic --rows 1200000 --features 10 --seed 3 \
  | "$flydb" ingest - --db big.db --name big 2>/dev/null
"$flydb" shard --db big.db --shards 4 --out k 2>/dev/null
cp -r k ref
"$flydb" shard --tune-bounds --manifest ref/manifest.db >/dev/null 2>&1
run 2 "$flydb" shard --tune-bounds --manifest k/manifest.db >/dev/null 2>kill.err &
job=$!
victim=
for _ in $(seq 100); do
  victim=$(pgrep -f "shard --tune-bounds --manifest k/manifest.db" | while read -r p; do
             if [ "$(cat /proc/"$p"/comm 2>/dev/null)" = flydb ]; then echo "$p"; fi
           done | tail -1 || true)
  [ -n "$victim" ] && break
  sleep 0.05
done
[ -n "$victim" ] || fail "no rank to kill"
sleep 0.5
kill -9 "$victim"
t0=$SECONDS
rc=0; wait $job || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] || fail "the killed job exited $rc"
[ $((SECONDS - t0)) -le 20 ] || fail "the job took $((SECONDS - t0)) s to end after the kill"
[ "$(sqlite3 k/manifest.db "SELECT count(*) FROM sqlite_schema WHERE name = 'shard_map'")" = 0 ] \
  || fail "a killed job stored a result"
for s in k/shard-*.db; do
  [ "$(sqlite3 "$s" "SELECT count(*) FROM bound_set WHERE status <> 'ready'")" = 0 ] \
    || fail "$s: a killed job left a partial bound set"
done
run 2 "$flydb" shard --tune-bounds --manifest k/manifest.db >/dev/null 2>&1
[ "$(stored k)" = "$(stored ref)" ] || fail "the rerun after a kill stored other bits"
ok "a rank killed by SIGKILL ends the job (exit $rc, $((SECONDS - t0)) s); the rerun gives the uninterrupted bits"
