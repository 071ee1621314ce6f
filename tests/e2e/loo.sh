#!/usr/bin/env bash
# flydb loo and flydb compare (src/loo): PSIS-LOO of a run, exact and
# subsampled, stored in tables loo and loo_point, and the comparison of runs.
#  - exact (--subsample all) on the 2000-row toy against R's loo::loo() on
#    the N x S log-likelihood matrix built from the stored draws and the
#    stored rows (elpd_loo, se, p_loo, every pointwise value and every
#    Pareto k to 1e-6), and compare against loo::loo_compare;
#  - subsampled on 20000 generated rows: within 3 reported subsampling SEs
#    of the exact value for five seeds; against loo::loo_subsample on the
#    same rows (estimates, both SEs, the sampled rows' k); compare of two
#    nested models (with and without an intercept, data sets of the same
#    file) picks the true one and agrees with loo_compare of the two
#    subsampled objects;
#  - a new result replaces the run's old one; the same seed samples the
#    same rows for every run of the data; bad input fails and writes nothing.
# The R checks (tests/e2e/r/loo_check.R) skip when Rscript, loo or RSQLite
# is missing; the rest always runs.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
TOY=$E2E/../../datasets/toy
RCHECK=$E2E/r/loo_check.R
have_r=$(have_r loo RSQLite)

# ---- exact, on the toy ------------------------------------------------------
db=toy.db
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --iters 500 --seed 3 --quiet
expect 0 "$FLYDB" sample --db $db --iters 500 --seed 4 --prior-scale 0.05 --quiet
expect 0 "$FLYDB" loo 1 --db $db --subsample all
out_has "run 1: PSIS-LOO of 2000 rows, 1000 draws" "elpd_loo" "(0.5, 0.7]" \
  "r_eff estimated from the chains for each row"
expect 0 "$FLYDB" loo 2 --db $db --r-eff 0.5   # exact by default: N <= 20000
eq "exact rows" "$(q $db "SELECT method, m, n_rows, n_draws, r_eff_source FROM loo ORDER BY run_id")" \
   "$(printf 'exact\t2000\t2000\t1000\tchains\nexact\t2000\t2000\t1000\tgiven')"
eq "given r_eff" "$(q $db "SELECT min(r_eff), max(r_eff) FROM loo_point WHERE run_id = 2")" \
   "$(printf '0.5\t0.5')"
out_has "r_eff 0.5 for every row (given)"
eq "r_eff from the chains: each row's, their mean in loo" \
   "$(q $db "SELECT count(DISTINCT p.r_eff) > 100, abs(avg(p.r_eff) - l.r_eff) < 1e-9
             FROM loo_point p JOIN loo l USING (run_id) WHERE run_id = 1")" "$(printf '1\t1')"
eq "points" "$(q $db "SELECT run_id, count(*), min(row), max(row) FROM loo_point GROUP BY run_id")" \
   "$(printf '1\t2000\t0\t1999\n2\t2000\t0\t1999')"
eq "k bins add up" "$(q $db "SELECT count(*) FROM loo WHERE k_good + k_ok + k_bad + k_verybad = m")" 2
before=$(q $db "SELECT r_eff FROM loo WHERE run_id = 1")
expect 0 "$FLYDB" compare 1 2 --db $db --csv
eq "compare computed run 2 again with r_eff from the chains, kept run 1's" \
   "$(q $db "SELECT group_concat(r_eff_source), (SELECT r_eff FROM loo WHERE run_id = 1)
             FROM loo")" "$(printf 'chains,chains\t%s' "$before")"
cp "$T/out" cmp_exact.csv
eq "compare: run 1 (the wider prior) first" "$(sed -n 2p cmp_exact.csv | cut -d, -f1-2)" "1,0"
"$FLYDB" dump --db $db --intercept >toy_rows.csv
if [ $have_r = 1 ]; then
  Rscript "$RCHECK" exact $db toy_rows.csv 1 2 cmp_exact.csv >r.out 2>&1 ||
    { cat r.out >&2; fail "loo --subsample all differs from loo::loo()"; }
  ok "exact loo and compare agree with R's loo::loo() and loo_compare()"
fi

# a second result replaces the first, in one transaction
expect 0 "$FLYDB" loo 1 --db $db --subsample 100 --seed 5
eq "replaced" "$(q $db "SELECT method, m, seed, (SELECT count(*) FROM loo_point WHERE run_id = 1)
                        FROM loo WHERE run_id = 1")" "$(printf 'subsample\t100\t5\t100')"

# ---- bad input: nothing written ---------------------------------------------
before=$(q $db "SELECT count(*), sum(m) FROM loo")
expect 2 "$FLYDB" loo 1 --db $db --subsample 0
expect 2 "$FLYDB" loo 1 --db $db --subsample some
expect 2 "$FLYDB" compare 1 --db $db
expect 1 "$FLYDB" loo 1 --db $db --subsample 2001
err_has "--subsample 2001: the data set has 2000 rows"
expect 1 "$FLYDB" loo 9 --db $db
err_has "has no run 9"
"$GEN" --model logistic --rows 300 --features 1 --seed 9 >other.csv
expect 0 "$FLYDB" ingest other.csv --db $db
expect 0 "$FLYDB" sample --db $db --data other --iters 200 --seed 1 --quiet
expect 1 "$FLYDB" compare 1 3 --db $db
err_has "runs 1 and 3 model different rows"
expect 1 "$FLYDB" compare 1 1 --db $db
err_has "run 1 is named twice"
eq "nothing written by the failures" "$(q $db "SELECT count(*), sum(m) FROM loo")" "$before"
expect 0 "$FLYDB" check --db $db

# ---- subsampled, on 20000 rows ----------------------------------------------
# y ~ Bernoulli(logistic(1 + x1 - x2)): run 1 has the intercept, run 2 (the
# same file without it, a nested model) lacks a clear effect.
db=tall.db
"$GEN" --model logistic --rows 20000 --features 2 --seed 5 |
  awk -F, 'BEGIN { srand(5); OFS = "," } NR == 1 { print; next }
           { $3 = (rand() < 1 / (1 + exp(-(1 + $1 - $2)))) ? 1 : 0; print }' >tall.csv
expect 0 "$FLYDB" ingest tall.csv --db $db
expect 0 "$FLYDB" ingest tall.csv --db $db --name nested --no-intercept
expect 0 "$FLYDB" sample --db $db --data tall --iters 500 --seed 1 --quiet
expect 0 "$FLYDB" sample --db $db --data nested --iters 500 --seed 2 --quiet
expect 0 "$FLYDB" loo 1 --db $db --subsample all
exact=$(q $db "SELECT printf('%.17g', elpd_loo) FROM loo WHERE run_id = 1")
for seed in 1 2 3 4 5; do
  expect 0 "$FLYDB" loo 1 --db $db --subsample 500 --seed $seed
  out_has "from a subsample of 500 (seed $seed)"
  r=$(q $db "SELECT printf('%.17g %.17g %d', elpd_loo, subsampling_se, m) FROM loo WHERE run_id = 1")
  echo "# seed $seed: elpd_loo, subsampling_se, m = $r; exact $exact"
  awk -v r="$r" -v x="$exact" 'BEGIN { split(r, a, " ")
      d = a[1] - x; if( d < 0 ) d = -d
      exit !(a[3] == 500 && a[2] > 0 && d <= 3 * a[2]) }' ||
    fail "seed $seed: $r is not within 3 subsampling SEs of $exact"
done
ok "subsampled elpd_loo within 3 subsampling SEs of the exact value, 5 seeds"

# the same seed samples the same rows for both runs (compare pairs them)
expect 0 "$FLYDB" loo 2 --db $db --subsample 500 --seed 5
eq "same rows" "$(q $db "SELECT count(*) FROM loo_point a JOIN loo_point b
                         ON a.row = b.row AND a.run_id = 1 AND b.run_id = 2")" 500
expect 0 "$FLYDB" compare 1 2 --db $db --subsample 500 --seed 7 --csv
cp "$T/out" cmp_ss.csv
eq "compare computed both with seed 7" "$(q $db "SELECT group_concat(seed) FROM loo")" "7,7"
awk -F, 'NR == 2 { best = $1 } NR == 3 { exit !(best == 1 && $2 < -5 * $3 && $3 > 0 && $4 > 0) }' \
  cmp_ss.csv || { cat cmp_ss.csv >&2; fail "compare: the model with the intercept is not clearly best"; }
ok "compare picks the model with the true effect, by more than 5 se_diff"
"$FLYDB" dump --db $db --data tall --intercept >tall_rows.csv
if [ $have_r = 1 ]; then
  Rscript "$RCHECK" subsample $db tall_rows.csv 1 2 cmp_ss.csv >r.out 2>&1 ||
    { cat r.out >&2; fail "loo --subsample 500 differs from loo::loo_subsample()"; }
  ok "subsampled loo and compare agree with loo::loo_subsample() and loo_compare()"
fi
