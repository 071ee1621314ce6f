#!/usr/bin/env bash
# Softmax (3 classes, MALA, the paper's pairing) and robust Student-t
# regression (heavy-tailed noise, slice sampling) give the same posterior
# means under --regular and under FlyMC (gibbs, implicit): for every
# parameter |mean_fly - mean_reg| <= 4 sqrt(mcse_fly^2 + mcse_reg^2), the
# MCSEs estimated from the chains (flydb summary).  Fixed seeds; longer with
# FLYDB_TEST_LEVEL=accurate.  TAP output.
set -euo pipefail
flydb=$1
here=$(cd "$(dirname "$0")" && pwd)
data=$here/../../datasets/toy
T=$(mktemp -d "${TMPDIR:-/tmp}/flydb-models.XXXXXX")
trap 'rm -rf "$T"' EXIT
iters=20000
[ "${FLYDB_TEST_LEVEL:-quick}" = accurate ] && iters=100000
n=0; failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
notok() { n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $*"; }
echo "# seeds 11 (regular) and 12 (FlyMC); $iters iterations x 2 chains"

# summary_csv DB RUN -> lines "name,mean,mcse_mean"
summary_csv() { "$flydb" summary "$2" --db "$1" --format csv | awk -F, 'NR > 1 { print $1 "," $2 "," $11 }'; }

compare() {   # compare LABEL DB RUN_REG RUN_FLY
  local label=$1 db=$2 a=$3 b=$4
  summary_csv "$db" "$a" > "$T/a.csv"
  summary_csv "$db" "$b" > "$T/b.csv"
  while IFS=, read -r name m1 s1 && IFS=, read -r name2 m2 s2 <&3; do
    z=$(awk -v a="$m1" -v b="$m2" -v s="$s1" -v t="$s2" 'BEGIN { printf "%.2f", (b - a) / sqrt(s * s + t * t) }')
    if awk -v z="$z" 'BEGIN { exit !(z <= 4 && z >= -4) }' && [ "$name" = "$name2" ]; then
      ok "$label $name: z = $z (means $m1 vs $m2)"
    else
      notok "$label $name: z = $z (means $m1 vs $m2, mcse $s1, $s2)"
    fi
  done < "$T/a.csv" 3< "$T/b.csv"
}

run() {   # run DB ARGS... -> prints the run id
  "$flydb" sample --db "$1" --iters "$iters" --chains 2 --quiet "${@:2}" 2> "$T/err" ||
    { cat "$T/err" >&2; return 1; }
  sqlite3 "$1" "SELECT max(id) FROM run"
}

# softmax, K = 3
db=$T/sm.db
"$flydb" ingest "$data/softmax.csv" --db "$db" 2> /dev/null
reg=$(run "$db" --model softmax --sampler mala --regular --seed 11)
for z in gibbs implicit=0.05; do
  fly=$(run "$db" --model softmax --sampler mala --z "$z" --seed 12)
  compare "softmax/mala $z vs regular:" "$db" "$reg" "$fly"
done

# robust Student-t, nu = 4, scale fixed at the generating 0.5
db=$T/rb.db
"$flydb" ingest "$data/robust.csv" --db "$db" 2> /dev/null
reg=$(run "$db" --model robust --nu 4 --scale 0.5 --sampler slice --regular --seed 11)
for z in gibbs implicit=0.05; do
  fly=$(run "$db" --model robust --nu 4 --scale 0.5 --sampler slice --z "$z" --seed 12)
  compare "robust/slice $z vs regular:" "$db" "$reg" "$fly"
done

echo "1..$n"
[ "$failed" -eq 0 ]
