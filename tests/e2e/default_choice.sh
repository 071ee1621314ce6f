#!/usr/bin/env bash
# The default that chooses (docs/design.md §16): with no option steering
# the sampler, `flydb sample` pilots FlyMC and picks FlyMC or full-data NUTS.
#  - the choice is printed, stored as run_config's `choice` line, and the
#    chosen z mode and sampler are the run's stored settings;
#  - it is reproducible: the same command twice gives the same choice line
#    and the same draws, and a run forced to the chosen method with the same
#    seed gives the same draws (the pilot leaves no trace);
#  - the Fashion-MNIST pair (N 12,000, P 51, where the gibbs z step must scan)
#    chooses full-data NUTS; tall synthetic logistic data (N 60,000, P 6)
#    chooses FlyMC (with MH or with NUTS);
#  - an option that steers the sampler (--z, --sampler) means no choice.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

BUILD=$(cd "$(dirname "$FLYDB_BIN")/../.." && pwd)
PAIR=$E2E/../../datasets/fmnist-pair/fmnist_pair.csv
draws() { q "$1" "SELECT chain, iter, idx, value FROM draw WHERE run_id = $2" | md5sum; }
conf() { q "$1" "SELECT value FROM run_config WHERE run_id = $2 AND key = '$3'"; }

# The pair: full-data NUTS
db=pair.db
expect 0 "$FLYDB" ingest "$PAIR" --db $db
expect 0 "$FLYDB" sample --db $db --iters 40 --warmup 40 --seed 11
grep -q "^default: full-data NUTS" "$T/err" "$T/out" ||
  fail "no choice message: $(cat "$T/err")"
eq "pair: chosen z and sampler" "$(q $db "SELECT z_mode, sampler FROM run WHERE id = 1")" \
   "$(printf 'regular\tnuts')"
choice=$(conf $db 1 choice)
case $choice in "default: full-data NUTS"*) ;; *) fail "pair: choice line '$choice'" ;; esac
expect 0 "$FLYDB" sample --db $db --iters 40 --warmup 40 --seed 11 --quiet
eq "pair: the same choice again" "$(conf $db 2 choice)" "$choice"
eq "pair: the same draws again" "$(draws $db 2)" "$(draws $db 1)"
expect 0 "$FLYDB" sample --db $db --iters 40 --warmup 40 --seed 11 --quiet --regular --sampler nuts
eq "pair: forced --regular --sampler nuts, no choice" "$(conf $db 3 choice)" ""
eq "pair: forced NUTS draws = chosen NUTS draws" "$(draws $db 3)" "$(draws $db 1)"
ok "the pair chooses full-data NUTS, reproducibly, with the draws of a forced run"

# Tall synthetic data: FlyMC (with MH or NUTS, whichever the pilots favour)
"$BUILD/tools/flydb-gen" --model logistic --rows 60000 --features 5 --seed 2 >tall.csv
db=tall.db
expect 0 "$FLYDB" ingest tall.csv --db $db
expect 0 "$FLYDB" sample --db $db --iters 100 --seed 12 --quiet
eq "tall: chosen z" "$(q $db "SELECT z_mode FROM run WHERE id = 1")" gibbs
sampler=$(q $db "SELECT sampler FROM run WHERE id = 1")
case $(conf $db 1 choice) in "default: FlyMC"*) ;; *) fail "tall: choice '$(conf $db 1 choice)'" ;; esac
expect 0 "$FLYDB" sample --db $db --iters 100 --seed 12 --quiet --z gibbs --sampler "$sampler"
eq "tall: forced --z gibbs --sampler $sampler, no choice" "$(conf $db 2 choice)" ""
eq "tall: forced draws = chosen draws" "$(draws $db 2)" "$(draws $db 1)"
expect 0 "$FLYDB" sample --db $db --iters 20 --seed 12 --quiet --sampler mala
eq "--sampler steers: gibbs with mala, no choice" \
   "$(q $db "SELECT z_mode, sampler FROM run WHERE id = 3")|$(conf $db 3 choice)" \
   "$(printf 'gibbs\tmala')|"
ok "tall data chooses FlyMC with the draws of a forced run; steering options skip the choice"
