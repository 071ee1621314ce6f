#!/usr/bin/env bash
# --sketch (flymc/sketch.h): gibbs thinning's second stage rejects most
# candidates from 13 in-memory bytes a row, before reading them.  One
# uniform per candidate decides both stages, and the model evaluates the
# candidates read row by row (model.h, FLY_ROWWISE), so with the same seed
# the draws and bright counts with and without a sketch are bit-identical,
# warm-up included, while far fewer rows are read (the checks skip rows
# whose page is in the decoded cache, so the cache is kept at 1 MiB of a
# 14 MB store); a sketch that under-bounds a row would change them.
# Every model gets a sketch by default (softmax: one rho per centred class
# row); --sketch on is a usage error for other z modes; run_config records
# it.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
[ -x "$GEN" ] || fail "no flydb-gen at $GEN"
TOY=$E2E/../../datasets/toy

"$GEN" --model logistic --rows 200000 --features 8 --seed 5 >g.csv
expect 0 "$FLYDB" ingest g.csv --db g.db
expect 0 "$FLYDB" tune --db g.db

# run SKETCH [MORE...]: one gibbs run without warm-up; prints its id
run() {
  local sk=$1
  shift
  expect 0 "$FLYDB" sample --db g.db --quiet --seed 9 --iters 1000 --warmup 500 \
    --chains 2 --cache-mb 1 --sketch "$sk" "$@"
  q g.db "SELECT max(id) FROM run"
}
a=$(run off)
b=$(run on)
nd=$(q g.db "SELECT count(*) FROM draw WHERE run_id = $a")
ns=$(q g.db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $a
             INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $b)")
[ "$nd" -gt 0 ] && [ "$nd" = "$ns" ] || fail "draws with and without a sketch: $ns of $nd equal"
nb=$(q g.db "SELECT count(*) FROM iteration x JOIN iteration y ON y.run_id = $b AND y.chain = x.chain
             AND y.iter = x.iter WHERE x.run_id = $a AND x.n_bright = y.n_bright")
[ "$nb" = 3000 ] || fail "bright counts with and without a sketch: $nb of 3000 iterations agree"
read -r ra rb < <(q g.db "SELECT (SELECT sum(n_reads) FROM iteration WHERE run_id = $a),
                                 (SELECT sum(n_reads) FROM iteration WHERE run_id = $b)" | tr '\t' ' ')
[ "$rb" -gt 0 ] && [ $((3 * rb)) -lt "$ra" ] ||
  fail "rows read: $ra without a sketch, $rb with one (want under a third)"
ok "same draws and bright counts with and without a sketch; rows read $ra -> $rb"

# Rows whose page is in the decoded cache skip the checks (reading them
# costs less), so the rows read depend on --cache-mb; the draws must not,
# warm-up included: the model evaluates those batches row by row, where a
# BLAS block would round a row by its place in a batch the cache decided,
# and step-size adaptation would turn those last bits into another chain
# (without FLY_ROWWISE 1458 of these 14400 draws were equal).
rc() {
  expect 0 "$FLYDB" sample --db g.db --quiet --seed 4 --iters 400 --warmup 400 \
    --chains 2 --cache-mb "$1"
  q g.db "SELECT max(id) FROM run"
}
c1=$(rc 1)
c2=$(rc 64)
nd=$(q g.db "SELECT count(*) FROM draw WHERE run_id = $c1")
ns=$(q g.db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $c1
             INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $c2)")
[ "$nd" -gt 0 ] && [ "$nd" = "$ns" ] ||
  fail "same seed with --cache-mb 1 and 64: $ns of $nd draws equal"
read -r ra rb < <(q g.db "SELECT (SELECT sum(n_reads) FROM iteration WHERE run_id = $c1),
                                 (SELECT sum(n_reads) FROM iteration WHERE run_id = $c2)" | tr '\t' ' ')
[ "$ra" != "$rb" ] || fail "--cache-mb 1 and 64 read the same rows ($ra): the test tests nothing"
ok "same draws with warm-up at --cache-mb 1 and 64; rows read $ra and $rb"

[ "$(q g.db "SELECT value FROM run_config WHERE run_id = $b AND key = 'sketch'")" = on ] &&
  [ "$(q g.db "SELECT value FROM run_config WHERE run_id = $a AND key = 'sketch'")" = off ] ||
  fail "run_config does not record --sketch"
expect 0 "$FLYDB" sample --db g.db --quiet --seed 9 --iters 50 --chains 1
r=$(q g.db "SELECT max(id) FROM run")
[ "$(q g.db "SELECT value, is_default FROM run_config WHERE run_id = $r AND key = 'sketch'")" \
  = "on	1" ] || fail "gibbs with logistic: the sketch is not on by default"
expect 0 "$FLYDB" sample --db g.db --quiet --seed 9 --iters 50 --chains 1 --z implicit
r=$(q g.db "SELECT max(id) FROM run")
[ "$(q g.db "SELECT value FROM run_config WHERE run_id = $r AND key = 'sketch'")" = off ] ||
  fail "implicit: run_config says a sketch was used"
ok "run_config records the sketch; on by default for gibbs with logistic"

n0=$(q g.db "SELECT count(*) FROM run")
expect 2 "$FLYDB" sample --db g.db --sketch on --z implicit
err_has "--sketch on is for --z gibbs"
expect 2 "$FLYDB" sample --db g.db --sketch maybe
err_has "--sketch: 'maybe' is not on or off"
[ "$(q g.db "SELECT count(*) FROM run")" = "$n0" ] || fail "a usage error created a run"

ok "usage errors: --sketch on with implicit, a bad value"

# softmax: one rho per centred class row, the same draws with and without
"$GEN" --model softmax --classes 3 --rows 100000 --features 8 --seed 5 >s.csv
expect 0 "$FLYDB" ingest s.csv --db s.db
expect 0 "$FLYDB" tune --db s.db --model softmax
for sk in off on; do
  expect 0 "$FLYDB" sample --db s.db --model softmax --quiet --seed 9 --iters 600 \
    --warmup 300 --chains 2 --cache-mb 1 --sketch $sk
done
a=$(q s.db "SELECT min(id) FROM run")
b=$(q s.db "SELECT max(id) FROM run")
nd=$(q s.db "SELECT count(*) FROM draw WHERE run_id = $a")
ns=$(q s.db "SELECT count(*) FROM (SELECT chain, iter, idx, value FROM draw WHERE run_id = $a
             INTERSECT SELECT chain, iter, idx, value FROM draw WHERE run_id = $b)")
[ "$nd" -gt 0 ] && [ "$nd" = "$ns" ] || fail "softmax: draws with and without a sketch: $ns of $nd equal"
read -r ra rb < <(q s.db "SELECT (SELECT sum(n_reads) FROM iteration WHERE run_id = $a),
                                 (SELECT sum(n_reads) FROM iteration WHERE run_id = $b)" | tr '\t' ' ')
[ "$rb" -gt 0 ] && [ $((3 * rb)) -lt "$ra" ] ||
  fail "softmax: rows read: $ra without a sketch, $rb with one (want under a third)"
[ "$(q s.db "SELECT value, is_default FROM run_config WHERE run_id = $b AND key = 'sketch'")" \
  = "on	0" ] || fail "softmax: run_config does not record --sketch on"
ok "softmax: same draws with and without a sketch; rows read $ra -> $rb"

# robust regression gets one too, and its chain runs with it
expect 0 "$FLYDB" ingest "$TOY/robust.csv" --db r.db
expect 0 "$FLYDB" sample --db r.db --model robust --quiet --seed 3 --iters 300 --chains 1
r=$(q r.db "SELECT max(id) FROM run")
[ "$(q r.db "SELECT value FROM run_config WHERE run_id = $r AND key = 'sketch'")" = on ] ||
  fail "robust: no sketch by default"
ok "robust regression samples with a sketch"
