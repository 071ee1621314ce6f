#!/usr/bin/env bash
# flydb shard --map: the MAP and Laplace precision of a 4-shard manifest are
# the same bits for one process without MPI and for mpirun -np 1, 2 and 4
# (per-shard sums gathered and added in shard order on every rank), agree
# with the unsharded `flydb tune` to the L-BFGS tolerance, and are stored in
# the manifest.  More ranks than shards, or a missing shard, stop every rank
# (exit 1, no hang).  Args: flydb, and 1 if it was built with MPI.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/e2e/lib.sh
. "$here/../e2e/lib.sh"
flydb=$FLYDB
have_mpi=${2:-0}
if [ "$have_mpi" != 1 ] || ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: flydb built without MPI, or no mpirun (tools/setup installs openmpi-bin)"
  exit 77
fi
# Loopback only, as root in a container, more ranks than cores.
run() { timeout 300 mpirun --oversubscribe --allow-run-as-root --mca btl self,vader,tcp \
          --mca btl_tcp_if_include lo -np "$@"; }

for d in toy/logistic fmnist-pair/fmnist_pair; do
  name=${d#*/}
  "$flydb" ingest "$here/../../datasets/$d.csv" --db $name.db --page-rows 61 2>/dev/null
  "$flydb" shard --db $name.db --shards 4 --out $name 2>/dev/null
  "$flydb" shard --map --manifest $name/manifest.db --prior-scale 2 2>/dev/null \
    | sed 's/, [0-9]* ranks//' >plain.txt
  for R in 1 2 4; do
    run $R "$flydb" shard --map --manifest $name/manifest.db --prior-scale 2 2>/dev/null \
      | sed 's/, [0-9]* ranks//' >r$R.txt
    cmp -s plain.txt r$R.txt || { diff plain.txt r$R.txt | head; fail "$name: -np $R differs from one process"; }
  done
  ok "$name: MAP and H bit-identical for one process and -np 1, 2, 4 ($(head -1 plain.txt))"
  # Against the unsharded tune: the same optimum, to the search's tolerance.
  "$flydb" tune --db $name.db --prior-scale 2 >/dev/null 2>&1
  python3 - "$name.db" "$name/manifest.db" <<'PY'
import sqlite3, struct, sys
def vec(path, sql):
    b = sqlite3.connect(path).execute(sql).fetchone()[0]
    return struct.unpack("<%dd" % (len(b) // 8), b)
a = vec(sys.argv[1], "SELECT theta_map FROM bound_set")
b = vec(sys.argv[2], "SELECT theta_map FROM shard_map WHERE model_opts = 'prior=normal;scale=2'")
worst = max(abs(x - y) / max(1.0, abs(x)) for x, y in zip(a, b))
assert len(a) == len(b) and worst < 1e-5, (worst, a[:3], b[:3])
print("ok - %s: sharded MAP = unsharded MAP to %.1e" % (sys.argv[1], worst))
PY
done

rc=0; run 5 "$flydb" shard --map --manifest logistic/manifest.db >/dev/null 2>err.txt || rc=$?
[ $rc != 0 ] && grep -q "5 ranks for 4 shards" err.txt || fail "-np 5 on 4 shards: exit $rc"
ok "more ranks than shards refused"
rm logistic/shard-002.db
rc=0; run 2 "$flydb" shard --map --manifest logistic/manifest.db >/dev/null 2>err.txt || rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && grep -q "shard 2 (logistic/shard-002.db) is missing" err.txt \
  || fail "a missing shard under mpirun: exit $rc ($(head -3 err.txt))"
ok "a missing shard stops every rank (exit $rc)"
