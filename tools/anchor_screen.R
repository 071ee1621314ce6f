# anchor_screen.R -- could a gibbs scan skip most of its single-precision
# product by bounding each row's linear predictor from an earlier theta?
# (docs/archive/benchmarks.md, "A screen anchored at an earlier theta").
# Logistic only; measures, from a chain's own draws, how many rows such a bound would
# let through.
#
#   sqlite3 DB "SELECT hex(theta_map) FROM bound_set WHERE id = B" > thmap.hex
#   sqlite3 DB "SELECT hex(laplace_cov) FROM bound_set WHERE id = B" > cov.hex
#   flydb export RUN --db DB --format csv --out DIR
#   Rscript tools/anchor_screen.R DATA.csv thmap.hex cov.hex DIR/RUN_wide.csv
#
# DATA.csv: features, then the 0/1 target y (as ingested; flydb adds the
# intercept first).  xi_n = |s_n(MAP)| (MAP tuning).  For a lag k, theta_a is
# the draw k iterations before theta (same chain, post-warm-up).  With
# Sigma the Laplace covariance, |x'(theta - theta_a)| <= w_n rho, w_n =
# sqrt(x' Sigma x), rho = the Laplace-metric distance of the two (Cauchy-
# Schwarz), so the scan's bound p_n <= |a_n| (||s_a| - xi_n| + w_n rho)^2
# (logistic.c, scan_upper, with its rounding term replaced by w_n rho) holds
# without computing s_n.  Printed per lag: mean rho, the expected number of
# rows a scan would still have to take a product for (sum_n min(1, bound)),
# and sum_n p_n (the rows that turn bright, about).
args <- commandArgs(TRUE)
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "lib.R"))
invisible(list2env(logistic_store(args), environment()))   # th, P, S, X
Si <- solve(S)
xi <- abs(drop(X %*% th))
w <- sqrt(rowSums((X %*% S) * X))
a <- ifelse(xi < 1e-6, 1/8, tanh(xi / 2) / (4 * xi))         # |a(xi)|
pbright <- function(s) {
  gap <- logsig(s) - logsig(xi) - (s - xi) / 2 + a * (s^2 - xi^2)
  -expm1(-pmax(gap, 0))
}
dr <- read.csv(args[4], check.names = FALSE); dr <- dr[dr$warmup == 0, ]
cat(sprintf("N = %d, P = %d; w_n quantiles (10/50/90%%): %s\n", nrow(X), P,
            paste(signif(quantile(w, c(.1, .5, .9)), 3), collapse = " / ")))
for (k in c(1, 2, 4, 8, 16)) {
  rho <- surv <- pb <- c()
  for (ch in unique(dr$chain)) {
    m <- as.matrix(dr[dr$chain == ch, 4:ncol(dr)])
    for (t in seq(k + 1, nrow(m), by = 97)) {
      del <- m[t, ] - m[t - k, ]
      r <- sqrt(drop(del %*% Si %*% del))
      sa <- drop(X %*% m[t - k, ])
      ub <- pmin(1, a * (abs(abs(sa) - xi) + w * r)^2)
      rho <- c(rho, r); surv <- c(surv, sum(ub)); pb <- c(pb, sum(pbright(drop(X %*% m[t, ]))))
    }
  }
  cat(sprintf("lag %2d: rho %.2f; rows still needing a product %.0f (%.1f%% of N); sum p %.0f\n",
              k, mean(rho), mean(surv), 100 * mean(surv) / nrow(X), mean(pb)))
}
