#!/usr/bin/env bash
# flydb ppc (src/ppc): posterior predictive checks stored in tables ppc,
# ppc_bin and ppc_rep, printed, drawn by flydb plot and verified by flydb
# check.
#  - calibration of the logistic and softmax toys against R (every bin's n,
#    mean predicted probability and observed frequency to 1e-10 from the
#    exported draws and rows; the bands as type-7 quantiles of the stored
#    replicated counts, and those counts against their Poisson-binomial law
#    at each draw: tests/e2e/r/ppc_check.R);
#  - the robust toy's residual table (PIT bins, QQ points, tails) against R,
#    and its PIT bands as type-7 quantiles of the stored replicated counts,
#    those counts against their Poisson-binomial law at each draw;
#  - on 20000 rows simulated from a logistic model the observed frequencies
#    lie inside their 90% bands in about 90% of 20 bins; with an omitted
#    quadratic term or a complementary log-log link the check flags many;
#  - flydb plot --kind calibration|residuals writes well-formed SVG;
#  - flydb check finds damaged loo and ppc tables;
#  - a new check replaces the old one; bad input fails and writes nothing.
# The R checks need Rscript and RSQLite (have_r: a failure in CI, else skipped).
. "$(dirname "$0")/lib.sh"
set -euo pipefail

GEN=$(dirname "$FLYDB_BIN")/../../tools/flydb-gen
TOY=$E2E/../../datasets/toy
RCHECK=$E2E/r/ppc_check.R
have_r=$(have_r RSQLite)
rcheck() {   # rcheck WHAT MODE DB DATA RUN
  local what=$1; shift
  [ $have_r = 1 ] || return 0
  Rscript "$RCHECK" "$@" >r.out 2>&1 || { cat r.out >&2; fail "$what differs from R"; }
  grep '^#' r.out || true
  ok "$what agrees with R"
}
svg_ok() {   # svg_ok FILE: present, well-formed, an svg element
  [ -s "$1" ] || fail "$1 missing or empty"
  if command -v xmllint >/dev/null 2>&1; then xmllint --noout "$1" || fail "$1 is not well-formed"; fi
  grep -q '<svg' "$1" && grep -q '</svg>' "$1" || fail "$1 is not an SVG picture"
}

# ---- logistic toy ------------------------------------------------------------
db=toy.db
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --iters 500 --seed 3 --quiet
expect 0 "$FLYDB" ppc --db $db
out_has "run 1: calibration of logistic predictions, 2000 rows, 200 draws, 10 bins" \
  "band of observed" "expected calibration error" "non-empty bins outside their band"
eq "header" "$(q $db "SELECT kind, model, n_rows, n_draws, n_bins, n_classes, seed, level FROM ppc")" \
   "$(printf 'calibration\tlogistic\t2000\t200\t10\t1\t1\t0.9')"
eq "lines" "$(q $db "SELECT count(*), sum(n) FROM ppc_bin WHERE run_id = 1 AND part = 'calibration'")" \
   "$(printf '10\t2000')"
eq "replicated counts" "$(q $db "SELECT count(*) FROM ppc_rep WHERE run_id = 1")" 2000
"$FLYDB" dump --db $db --intercept >toy_rows.csv
rcheck "logistic calibration (10 bins, 200 thinned draws)" calibration $db toy_rows.csv 1
expect 0 "$FLYDB" ppc 1 --db $db --bins 7 --draws 1000 --seed 4 --level 0.8
rcheck "logistic calibration (7 bins, all 1000 draws, 80% bands)" calibration $db toy_rows.csv 1
eq "replaced in one piece" "$(q $db "SELECT n_bins, n_draws, seed, level,
      (SELECT count(*) FROM ppc_bin WHERE run_id = 1), (SELECT count(*) FROM ppc_rep WHERE run_id = 1)
      FROM ppc")" "$(printf '7\t1000\t4\t0.8\t7\t7000')"
expect 0 "$FLYDB" ppc 1 --db $db --seed 4 --bins 7 --draws 1000 --level 0.8
cp "$T/out" again.out
expect 0 "$FLYDB" ppc 1 --db $db --seed 4 --bins 7 --draws 1000 --level 0.8
same_file "$T/out" again.out

# ---- bad input: nothing written ------------------------------------------------
before=$(q $db "SELECT n_bins, seed FROM ppc")
expect 2 "$FLYDB" ppc 1 --db $db --bins 0
expect 2 "$FLYDB" ppc 1 --db $db --bins 1001
expect 2 "$FLYDB" ppc 1 --db $db --level 1
expect 2 "$FLYDB" ppc 1 --db $db --draws 1
expect 1 "$FLYDB" ppc 9 --db $db
err_has "has no run 9"
eq "nothing written by the failures" "$(q $db "SELECT n_bins, seed FROM ppc")" "$before"

# ---- plots -------------------------------------------------------------------
expect 0 "$FLYDB" plot --db $db --out pics --kind calibration
out_has "run 1: 1 SVG files"
svg_ok pics/calibration.svg
grep -q 'calibration.svg' pics/index.html || fail "index.html does not show calibration.svg"
only_files pics calibration.svg index.html
expect 1 "$FLYDB" plot --db $db --out pics2 --kind residuals
err_has "run 1's predictive check is a calibration check, not residuals"
expect 2 "$FLYDB" plot --db $db --out pics2 --kind qq
expect 0 "$FLYDB" plot --db $db --out all
svg_ok all/calibration.svg
svg_ok all/run_lp.svg
ok "flydb plot draws the stored calibration check"

# ---- flydb check of loo and ppc tables ----------------------------------------
expect 0 "$FLYDB" loo 1 --db $db
expect 0 "$FLYDB" check --db $db
out_has "no problems found" "1 loo result, 1 predictive check"
cp $db bad.db
q bad.db "DELETE FROM loo_point WHERE run_id = 1 AND row = 17;
          UPDATE loo SET k_ok = k_ok + 1 WHERE run_id = 1"
expect 1 "$FLYDB" check --db bad.db
out_has "run 1 loo: loo_point holds 1999 rows; the header's m is 2000" \
  "run 1 loo: Pareto k counts add up to 2001, not m = 2000"
cp $db bad.db
q bad.db "UPDATE loo SET elpd_loo = elpd_loo + 1 WHERE run_id = 1"
expect 1 "$FLYDB" check --db bad.db
out_has "run 1 loo: elpd_loo"
cp $db bad.db
q bad.db "DELETE FROM ppc_rep WHERE run_id = 1 AND draw = 3 AND bin = 2;
          UPDATE ppc_bin SET n = n + 1 WHERE run_id = 1 AND bin = 0"
expect 1 "$FLYDB" check --db bad.db
out_has "run 1 ppc: ppc_rep holds 6999 replicated counts" \
  "run 1 ppc: the bins of class 1 hold 2001 rows, not n_rows 2000"
ok "flydb check finds damaged loo and ppc tables"

# ---- softmax toy -------------------------------------------------------------
db=softmax.db
expect 0 "$FLYDB" ingest "$TOY/softmax.csv" --db $db
expect 0 "$FLYDB" sample --db $db --model softmax --iters 300 --seed 1 --quiet
expect 0 "$FLYDB" ppc --db $db --bins 5
out_has "class 2 (one vs rest)" "(mean over classes)"
eq "lines" "$(q $db "SELECT count(DISTINCT class), count(*), sum(n) FROM ppc_bin WHERE part = 'calibration'")" \
   "$(printf '3\t15\t9000')"
"$FLYDB" dump --db $db --intercept >softmax_rows.csv
rcheck "softmax calibration, one vs rest" calibration $db softmax_rows.csv 1
expect 0 "$FLYDB" plot --db $db --out spics --kind calibration
for k in 0 1 2; do svg_ok spics/calibration_class$k.svg; done
expect 0 "$FLYDB" check --db $db

# ---- robust toy --------------------------------------------------------------
db=robust.db
expect 0 "$FLYDB" ingest "$TOY/robust.csv" --db $db
expect 0 "$FLYDB" sample --db $db --model robust --scale 0.5 --iters 300 --seed 1 --quiet
expect 0 "$FLYDB" ppc --db $db
out_has "standardised residuals (y - x'b)/sigma at the posterior mean against Student-t(4), sigma 0.5" \
  "PIT bin" "band of observed" "PIT bins outside their 90% band" "tail |r| >"
eq "lines" "$(q $db "SELECT part, count(*), sum(n) FROM ppc_bin GROUP BY part ORDER BY part")" \
   "$(printf 'pit\t10\t2000\nqq\t100\t\ntail\t3\t%s' "$(q $db "SELECT sum(n) FROM ppc_bin WHERE part = 'tail'")")"
"$FLYDB" dump --db $db --intercept >robust_rows.csv
rcheck "robust residual table (PIT, QQ, tails)" residual $db robust_rows.csv 1
expect 0 "$FLYDB" plot --db $db --out rpics --kind residuals
svg_ok rpics/residuals_qq.svg
svg_ok rpics/residuals_pit.svg
expect 0 "$FLYDB" check --db $db
cp $db bad.db
q bad.db "UPDATE ppc_rep SET n_rep = 2001 WHERE run_id = 1 AND bin = 4 AND draw = 7"
expect 1 "$FLYDB" check --db bad.db
out_has "run 1 ppc: 1 replicated counts outside 0..n of their bin"

# ---- coverage and miscalibration on 20000 rows --------------------------------
# good: y ~ Bernoulli(logistic(0.5 + x1 - x2)); quad: logit 2 x1^2 - 1.5 + x2
# (the linear model omits the square); cll: P(y = 1) = 1 - exp(-exp(2 x1 -
# 2 x2)), an asymmetric link with a big effect.
db=cover.db
"$GEN" --model logistic --rows 20000 --features 2 --seed 5 >base.csv
awk -F, 'BEGIN { srand(5); OFS = "," } NR == 1 { print; next }
         { $3 = (rand() < 1 / (1 + exp(-(0.5 + $1 - $2)))) ? 1 : 0; print }' base.csv >good.csv
awk -F, 'BEGIN { srand(6); OFS = "," } NR == 1 { print; next }
         { $3 = (rand() < 1 / (1 + exp(-(2 * $1 * $1 - 1.5 + $2)))) ? 1 : 0; print }' base.csv >quad.csv
awk -F, 'BEGIN { srand(7); OFS = "," } NR == 1 { print; next }
         { $3 = (rand() < 1 - exp(-exp(2 * $1 - 2 * $2))) ? 1 : 0; print }' base.csv >cll.csv
for d in good quad cll; do
  expect 0 "$FLYDB" ingest $d.csv --db $db --name $d
  expect 0 "$FLYDB" sample --db $db --data $d --iters 500 --seed 1 --quiet
done
for r in 1 2 3; do expect 0 "$FLYDB" ppc $r --db $db --bins 20; done
res=$(q $db "SELECT run_id, n_outside, n_nonempty, printf('%.4f', ece) FROM ppc ORDER BY run_id")
echo "# run, bins outside their band, non-empty bins, ECE:"; echo "$res" | sed 's/^/#   /'
awk -F'\t' '$1 == 1 { exit !($2 <= 5 && $3 == 20) }' <<<"$res" ||
  fail "calibrated model: more than 5 of 20 bins outside their 90% band"
ok "calibrated model: the observed frequencies lie inside their 90% bands in about 90% of the bins"
awk -F'\t' '$1 >= 2 { if( !($2 >= 6) ) bad = 1 } END { exit bad }' <<<"$res" ||
  fail "a misspecified model is not flagged (fewer than 6 bins outside their band)"
ok "an omitted quadratic term and a wrong link are flagged by many bins outside their bands"
expect 0 "$FLYDB" check --db $db
