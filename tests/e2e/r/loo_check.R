# Checks of `flydb loo` and `flydb compare` against R's loo package, run by
# tests/e2e/loo.sh.  Usage:
#   Rscript loo_check.R exact   DB DATA.csv RUN_A RUN_B COMPARE.csv
#   Rscript loo_check.R subsample DB DATA.csv RUN_A RUN_B COMPARE.csv
# DATA.csv is `flydb dump --intercept` (the stored values exactly) of the
# run with the most columns; each run uses those its draws name.  The
# log-likelihood of a logistic run is log plogis((2y - 1) x'theta).  Exits
# non-zero with the differences printed when a check fails.
suppressPackageStartupMessages({ library(RSQLite); library(loo) })
a <- commandArgs(trailingOnly = TRUE)
mode <- a[1]; dbf <- a[2]; dataf <- a[3]
runs <- as.integer(a[4:5]); cmpf <- a[6]
tol <- 1e-6
bad <- 0
check <- function(what, got, want, tol = 1e-6) {
  d <- max(abs(got - want) / pmax(1, abs(want)))
  if (!is.finite(d) || d > tol) {
    cat(sprintf("FAIL %s: max relative difference %g\n", what, d))
    print(head(cbind(got = got, want = want)))
    bad <<- bad + 1
  } else cat(sprintf("ok - %s (%.2g)\n", what, d))
}

# --- the R snippet of docs/r-and-python.md: a run's draws and loo tables ---
con <- dbConnect(SQLite(), dbf)
draws_of <- function(run) {
  d <- dbGetQuery(con, "SELECT chain, iter, name, value FROM draws_named
                        WHERE run_id = ? AND warmup = 0 ORDER BY chain, iter", list(run))
  w <- reshape(d, idvar = c("chain", "iter"), timevar = "name", direction = "wide")
  m <- as.matrix(w[, -(1:2)])
  colnames(m) <- sub("^value\\.", "", colnames(m))
  m
}
loo_of <- function(run) dbGetQuery(con, "SELECT * FROM loo WHERE run_id = ?", list(run))
points_of <- function(run)
  dbGetQuery(con, "SELECT row, elpd_loo, p_loo, pareto_k, plpd FROM loo_point
                   WHERE run_id = ? ORDER BY row", list(run))
# ---------------------------------------------------------------------------

data <- as.matrix(read.csv(dataf, check.names = FALSE))
X <- data[, -ncol(data), drop = FALSE]
y <- data[, ncol(data)]
llfun <- function(data_i, draws) {
  x <- data_i[, -ncol(data_i), drop = FALSE]
  yy <- data_i[, ncol(data_i)]
  as.vector(plogis((2 * yy - 1) * (draws %*% t(x)), log.p = TRUE))
}
N <- nrow(data)
res <- list()
for (run in runs) {
  th <- draws_of(run)                 # the run's columns: a nested model has fewer
  data <- cbind(X[, colnames(th), drop = FALSE], y = y)
  st <- loo_of(run); pt <- points_of(run)
  if (nrow(st) != 1) { cat("FAIL: no loo row for run", run, "\n"); quit(status = 1) }
  if (st$n_draws != nrow(th)) { cat("FAIL: S differs\n"); quit(status = 1) }
  if (mode == "exact") {
    ll <- sapply(seq_len(N), function(i) llfun(data[i, , drop = FALSE], th))
    l <- suppressWarnings(loo(ll, r_eff = rep(st$r_eff, N)))
    check(sprintf("run %d elpd_loo", run), st$elpd_loo, l$estimates["elpd_loo", "Estimate"])
    check(sprintf("run %d se", run), st$se, l$estimates["elpd_loo", "SE"])
    check(sprintf("run %d p_loo", run), st$p_loo, l$estimates["p_loo", "Estimate"])
    check(sprintf("run %d p_loo se", run), st$p_loo_se, l$estimates["p_loo", "SE"])
    check(sprintf("run %d looic", run), st$looic, l$estimates["looic", "Estimate"])
    check(sprintf("run %d rows", run), pt$row + 1, seq_len(N), 0)
    check(sprintf("run %d pointwise elpd_loo", run), pt$elpd_loo, l$pointwise[, "elpd_loo"])
    check(sprintf("run %d pointwise p_loo", run), pt$p_loo, l$pointwise[, "p_loo"])
    check(sprintf("run %d every pareto_k", run), pt$pareto_k, l$diagnostics$pareto_k)
    kc <- table(cut(l$diagnostics$pareto_k, c(-Inf, 0.5, 0.7, 1, Inf)))
    check(sprintf("run %d k bins", run), c(st$k_good, st$k_ok, st$k_bad, st$k_verybad),
          as.vector(kc), 0)
    check(sprintf("run %d plpd", run), pt$plpd, llfun(data, t(colMeans(th))), 1e-9)
  } else {
    idx <- pt$row + 1
    l <- suppressWarnings(loo_subsample(llfun, data = data, draws = th, observations = idx,
                                        r_eff = rep(st$r_eff, N), loo_approximation = "plpd"))
    e <- l$estimates
    check(sprintf("run %d elpd_loo", run), st$elpd_loo, e["elpd_loo", "Estimate"])
    check(sprintf("run %d se", run), st$se, e["elpd_loo", "SE"])
    check(sprintf("run %d subsampling_se", run), st$subsampling_se, e["elpd_loo", "subsampling SE"])
    check(sprintf("run %d p_loo", run), st$p_loo, e["p_loo", "Estimate"])
    check(sprintf("run %d p_loo se", run), st$p_loo_se, e["p_loo", "SE"])
    check(sprintf("run %d sampled pareto_k", run), pt$pareto_k, l$diagnostics$pareto_k)
    check(sprintf("run %d sampled elpd_loo", run), pt$elpd_loo, l$pointwise[, "elpd_loo"])
  }
  res[[length(res) + 1]] <- l
}
cmp <- read.csv(cmpf)
lc <- suppressWarnings(loo_compare(res))
cat("loo_compare:\n"); print(lc)
# rows of lc are "model1", "model2" in the order of runs
ord <- match(paste0("model", match(cmp$run, runs)), rownames(lc))
# loo_compare's elpd_diff is each model's elpd minus the best's (<= 0); for
# subsampled objects loo 2.5.1 reports the opposite sign (stan-dev/loo#390,
# fixed by #391), so the magnitudes are compared and the sign checked apart.
check("compare |elpd_diff|", abs(cmp$elpd_diff), abs(lc[ord, "elpd_diff"]))
check("compare elpd_diff <= 0", as.numeric(any(cmp$elpd_diff > 0)), 0, 0)
check("compare se_diff", cmp$se_diff, lc[ord, "se_diff"])
if (mode != "exact")
  check("compare subsampling_se", cmp$subsampling_se, lc[ord, "subsampling_se_diff"])
dbDisconnect(con)
quit(status = bad > 0)
