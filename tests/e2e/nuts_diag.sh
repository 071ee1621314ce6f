#!/usr/bin/env bash
# NUTS's per-iteration statistics (schema 7): ingest -> sample --sampler
# nuts --seed 3 -> the iteration view, the CmdStan export and summary.
#  - every stored iteration of a NUTS run has treedepth in 0..10,
#    n_leapfrog in 1..1023 and at most 2^(treedepth+1) - 1 (a doubling
#    that stopped the tree still counts), divergent 0/1, an energy and
#    accept_stat in [0, 1]; an MH run has them all NULL;
#  - the CmdStan export of the NUTS run has lp__,accept_stat__,stepsize__,
#    treedepth__,n_leapfrog__,divergent__,energy__ in Stan's order, then
#    flydb's columns, with the stored values (python3), and R's read.csv +
#    posterior reads them when they are there; the MH export keeps the
#    header it always had;
#  - summary of this easy posterior warns of no divergence; a step size of
#    50 without warm-up diverges, and summary says so as Stan does.
. "$(dirname "$0")/lib.sh"
set -euo pipefail

TOY=$E2E/../../datasets/toy
db=n.db
expect 0 "$FLYDB" ingest "$TOY/logistic.csv" --db $db
expect 0 "$FLYDB" sample --db $db --regular --sampler nuts --iters 200 --seed 3 --quiet
nuts=$(q $db "SELECT max(id) FROM run")
expect 0 "$FLYDB" sample --db $db --regular --iters 200 --seed 3 --quiet
mh=$(q $db "SELECT max(id) FROM run")

eq "NUTS statistics of every iteration" \
   "$(q $db "SELECT count(*) > 0, count(*) = count(treedepth) AND count(*) = count(n_leapfrog)
                    AND count(*) = count(divergent) AND count(*) = count(energy)
                    AND count(*) = count(accept_stat),
                    sum(treedepth NOT BETWEEN 0 AND 10), sum(n_leapfrog NOT BETWEEN 1 AND 1023),
                    sum(n_leapfrog > (1 << (treedepth + 1)) - 1), sum(divergent NOT IN (0, 1)),
                    sum(accept_stat NOT BETWEEN 0 AND 1)
             FROM iteration WHERE run_id = $nuts")" "$(printf '1\t1\t0\t0\t0\t0\t0')"
eq "no NUTS statistics block rows beyond blk 0" \
   "$(q $db "SELECT count(*) FROM draw_block WHERE blk > 0 AND treedepth IS NOT NULL")" 0
eq "MH iterations carry none" \
   "$(q $db "SELECT count(*) > 0, count(treedepth), count(n_leapfrog), count(divergent),
                    count(energy), count(accept_stat) FROM iteration WHERE run_id = $mh")" \
   "$(printf '1\t0\t0\t0\t0\t0')"
ok "iteration view: NUTS statistics in range, NULL for MH"

# ---- export -------------------------------------------------------------
expect 0 "$FLYDB" export $nuts --db $db --out cn
expect 0 "$FLYDB" export $mh --db $db --out cm
eq "NUTS header" "$(grep -v '^#' cn/${nuts}_chain1.csv | head -1)" \
   "lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,energy__,n_bright__,n_lik_evals__,n_reads__,theta.1,theta.2"
eq "MH header" "$(grep -v '^#' cm/${mh}_chain1.csv | head -1)" \
   "lp__,accept_stat__,stepsize__,n_bright__,n_lik_evals__,n_reads__,theta.1,theta.2"
for k in 1 2; do
  q $db "SELECT printf('%!.17g', accept_stat), treedepth, n_leapfrog, divergent,
                printf('%!.17g', energy) FROM iteration
         WHERE run_id = $nuts AND chain = $((k - 1)) AND iter > 100 ORDER BY iter" >"$T/want$k"
  python3 - "cn/${nuts}_chain$k.csv" "$T/want$k" <<'PY' || fail "export of chain $k"
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
h, rows = rows[0], rows[1:]
want = [l.rstrip('\n').split('\t') for l in open(sys.argv[2])]
assert len(rows) == len(want) == 200, (len(rows), len(want))
ix = [h.index(c) for c in ('accept_stat__', 'treedepth__', 'n_leapfrog__', 'divergent__', 'energy__')]
for r, w in zip(rows, want):
    got = [r[i] for i in ix]
    assert float(got[0]) == float(w[0]) and float(got[4]) == float(w[4]), (got, w)
    assert got[1:4] == w[1:4], (got, w)
PY
done
ok "CmdStan export: Stan's NUTS columns in Stan's order, equal to the iteration view"

if command -v Rscript >/dev/null 2>&1 && Rscript -e 'library(posterior)' >/dev/null 2>&1; then
  div=$(q $db "SELECT sum(divergent) FROM iteration WHERE run_id = $nuts AND iter > 100")
  Rscript - cn "$nuts" "$div" >"$T/r.out" 2>&1 <<'R' || { cat "$T/r.out" >&2; fail "R read of the NUTS export"; }
suppressMessages(library(posterior))
a <- commandArgs(TRUE)
files <- Sys.glob(file.path(a[1], paste0(a[2], "_chain*.csv")))
d <- lapply(files, function(f) read.csv(text = grep("^#", readLines(f), value = TRUE, invert = TRUE)))
x <- as_draws_df(do.call(rbind, lapply(seq_along(d), function(i) cbind(d[[i]], .chain = i))))
stopifnot(all(c("treedepth__", "n_leapfrog__", "divergent__", "energy__") %in% names(x)),
          sum(x$divergent__) == as.numeric(a[3]), all(x$n_leapfrog__ >= 1),
          all(is.finite(x$energy__)))
cat("R reads", nrow(x), "draws with divergent__ summing to", sum(x$divergent__), "\n")
R
  ok "R: $(tail -1 "$T/r.out")"
else
  echo "SKIP: Rscript with the posterior package not found: export not read in R"
fi

# ---- summary warnings ---------------------------------------------------
expect 0 "$FLYDB" summary $nuts --db $db
if grep -q "divergence" "$T/out"; then cat "$T/out" >&2; fail "divergence warning on an easy posterior"; fi
ok "summary: no divergence warning on the easy posterior"

expect 0 "$FLYDB" sample --db $db --regular --sampler nuts --iters 200 --warmup 0 --step 50 \
  --seed 3 --quiet
bad=$(q $db "SELECT max(id) FROM run")
n_div=$(q $db "SELECT sum(divergent) FROM iteration WHERE run_id = $bad")
[ "$n_div" -gt 0 ] || fail "a step size of 50 gave no divergence"
expect 0 "$FLYDB" summary $bad --db $db
out_has "warning: $n_div of 400 post-warm-up iterations ended with a divergence"
ok "summary: $n_div of 400 iterations diverged with --step 50, and it says so"
