# Checks of `flydb ppc` against R, run by tests/e2e/ppc.sh.  Usage:
#   Rscript ppc_check.R calibration DB DATA.csv RUN
#   Rscript ppc_check.R residual    DB DATA.csv RUN
# DATA.csv is `flydb dump --intercept` of the run's data set (the stored
# values exactly, the target last).  The run's draws are thinned as flydb
# thins them (pooled post-warm-up draw t kept when t = floor(j T / M)).
# calibration (logistic or softmax):
#  - each bin's n, mean predicted probability and observed frequency from
#    the draws and the rows (1e-10), ECE, MCE and accuracy;
#  - each band is the type-7 quantiles of the stored replicated counts
#    (ppc_rep) over n (1e-12), and the replicated counts are distributed as
#    the model says: at draw s a bin's count is Poisson-binomial with the
#    rows' p_s, so z = (count - sum p) / sqrt(sum p(1 - p)) over every
#    (class, bin, draw) has mean 0 and variance 1 (within 4.5 standard
#    errors of each);
# residual (robust): each PIT bin's count from pt() of the standardised
#  residuals, its band as the type-7 quantiles of the stored replicated
#  counts over N (1e-12) and those counts against their Poisson-binomial
#  law at each draw (as above), the QQ points by the same definition (1e-8)
#  and the tails.
# Exits non-zero with the differences printed when a check fails.
suppressPackageStartupMessages(library(RSQLite))
a <- commandArgs(trailingOnly = TRUE)
mode <- a[1]; dbf <- a[2]; dataf <- a[3]; run <- as.integer(a[4])
bad <- 0
check <- function(what, got, want, tol = 1e-10) {
  d <- max(abs(got - want) / pmax(1, abs(want)))
  if (length(got) != length(want) || !is.finite(d) || d > tol) {
    cat(sprintf("FAIL %s: max relative difference %g\n", what, d))
    print(head(cbind(got = got, want = want)))
    bad <<- bad + 1
  } else cat(sprintf("ok - %s (%.2g)\n", what, d))
}
# Standardised replicated counts zs: mean 0 and variance 1 within 4.5
# standard errors.
zcheck <- function(what, zs) {
  nz <- length(zs)
  cat(sprintf("# %s: %d standardised, mean %.4f, variance %.4f\n", what, nz, mean(zs), var(zs)))
  check(paste(what, ": mean of z is 0 (4.5 SE)", sep = ""),
        as.numeric(abs(mean(zs)) <= 4.5 / sqrt(nz)), 1, 0)
  check(paste(what, ": variance of z is 1 (4.5 SE)", sep = ""),
        as.numeric(abs(var(zs) - 1) <= 4.5 * sqrt(2 / nz)), 1, 0)
}

con <- dbConnect(SQLite(), dbf)
hd <- dbGetQuery(con, "SELECT * FROM ppc WHERE run_id = ?", list(run))
bins <- dbGetQuery(con, "SELECT * FROM ppc_bin WHERE run_id = ? ORDER BY part, class, bin",
                   list(run))
d <- dbGetQuery(con, "SELECT dn.chain, dn.iter, p.idx, dn.value FROM draws_named dn
                      JOIN param p ON p.run_id = dn.run_id AND p.name = dn.name
                      WHERE dn.run_id = ? AND dn.warmup = 0 ORDER BY dn.chain, dn.iter, p.idx",
                list(run))
P <- max(d$idx) + 1
th <- matrix(d$value, ncol = P, byrow = TRUE)          # T x P, chain order
Tn <- nrow(th); M <- hd$n_draws
th <- th[floor((0:(M - 1)) * Tn / M) + 1, , drop = FALSE]
data <- as.matrix(read.csv(dataf, check.names = FALSE))
X <- data[, -ncol(data), drop = FALSE]; y <- data[, ncol(data)]
N <- nrow(X); D <- ncol(X); B <- hd$n_bins
check("n_rows", hd$n_rows, N, 0)

if (mode == "calibration") {
  K <- P / D
  if (K == 1) {                                   # logistic: P(y = 1)
    ps <- list(plogis(X %*% t(th)))               # N x M
    cls <- 1; ycls <- list(y == 1)
  } else {                                        # softmax: rows of th are K x D
    eta <- lapply(0:(K - 1), function(k) X %*% t(th[, k * D + 1:D, drop = FALSE]))
    mx <- Reduce(pmax, eta)
    ex <- lapply(eta, function(e) exp(e - mx)); z <- Reduce(`+`, ex)
    ps <- lapply(ex, function(e) e / z)
    cls <- 0:(K - 1); ycls <- lapply(cls, function(k) y == k)
  }
  cal <- bins[bins$part == "calibration", ]
  rep <- dbGetQuery(con, "SELECT class, bin, draw, n_rep FROM ppc_rep WHERE run_id = ?
                          ORDER BY class, bin, draw", list(run))
  ece <- 0; mce <- 0; zs <- c()
  pbar_all <- sapply(ps, rowMeans)
  for (j in seq_along(cls)) {
    p <- ps[[j]]; pbar <- rowMeans(p)
    b <- pmin(floor(pbar * B), B - 1)
    n <- tabulate(b + 1, B)
    pred <- tapply(pbar, factor(b, 0:(B - 1)), mean)
    obs <- tapply(ycls[[j]], factor(b, 0:(B - 1)), mean)
    cj <- cal[cal$class == cls[j], ]
    check(sprintf("class %d: rows of each bin", cls[j]), ifelse(is.na(cj$n), 0, cj$n), n, 0)
    ne <- n > 0
    check(sprintf("class %d: mean predicted probability", cls[j]), cj$predicted[ne], pred[ne])
    check(sprintf("class %d: observed frequency", cls[j]), cj$observed[ne], obs[ne])
    ece <- ece + sum(n[ne] / N * abs(obs[ne] - pred[ne])) / length(cls)
    mce <- max(mce, abs(obs[ne] - pred[ne]))
    # the bands: type-7 quantiles of the stored replicated frequencies
    rj <- rep[rep$class == cls[j], ]
    check(sprintf("class %d: ppc_rep holds bins x draws counts", cls[j]), nrow(rj), B * M, 0)
    lo <- hi <- rep(NA, B)
    for (bb in which(ne)) {
      f <- rj$n_rep[rj$bin == bb - 1] / n[bb]
      q <- quantile(f, c((1 - hd$level) / 2, (1 + hd$level) / 2), names = FALSE)
      lo[bb] <- q[1]; hi[bb] <- q[2]
      # the replicated counts against their Poisson-binomial law at each draw
      rows <- which(b == bb - 1)
      mu <- colSums(p[rows, , drop = FALSE]); v <- colSums(p[rows, , drop = FALSE] *
                                                           (1 - p[rows, , drop = FALSE]))
      ok <- v > 0
      zs <- c(zs, ((rj$n_rep[rj$bin == bb - 1] - mu) / sqrt(v))[ok])
    }
    check(sprintf("class %d: band lower ends (type-7 quantiles of ppc_rep)", cls[j]),
          cj$band_lo[ne], lo[ne], 1e-12)
    check(sprintf("class %d: band upper ends", cls[j]), cj$band_hi[ne], hi[ne], 1e-12)
  }
  check("ECE", hd$ece, ece)
  check("MCE", hd$mce, mce)
  acc <- if (K == 1) mean((pbar_all > 0.5) == (y == 1)) else
    mean(cls[max.col(pbar_all, ties.method = "first")] == y)
  check("accuracy", hd$accuracy, acc)
  zcheck("replicated counts", zs)
} else {
  nu <- hd$nu; sigma <- hd$sigma
  r <- as.vector(y - X %*% colMeans(th)) / sigma
  u <- pt(r, nu)
  pit <- bins[bins$part == "pit", ]
  check("PIT bin counts", pit$n, tabulate(pmin(floor(u * B), B - 1) + 1, B), 0)
  check("PIT expected fractions", pit$predicted, rep(1 / B, B))
  # the PIT bands: type-7 quantiles of the stored replicated counts over N,
  # and those counts distributed as the model says: at draw s the count of
  # bin b is Poisson-binomial with q_i = P(d_is + T in bin b), T ~ t_nu,
  # d_is = x_i'(th_s - bbar)/sigma
  rep <- dbGetQuery(con, "SELECT class, bin, draw, n_rep FROM ppc_rep WHERE run_id = ?
                          ORDER BY class, bin, draw", list(run))
  check("ppc_rep holds bins x draws counts of class 0", c(nrow(rep), unique(rep$class)),
        c(B * M, 0), 0)
  lo <- hi <- numeric(B)
  for (bb in 1:B) {
    q <- quantile(rep$n_rep[rep$bin == bb - 1] / N, c((1 - hd$level) / 2, (1 + hd$level) / 2),
                  names = FALSE)
    lo[bb] <- q[1]; hi[bb] <- q[2]
  }
  check("PIT band lower ends (type-7 quantiles of ppc_rep)", pit$band_lo, lo, 1e-12)
  check("PIT band upper ends", pit$band_hi, hi, 1e-12)
  check("PIT bins outside their band", hd$n_outside,
        sum(pit$observed < lo | pit$observed > hi), 0)
  dl <- (X %*% t(th) - as.vector(X %*% colMeans(th))) / sigma      # N x M
  edges <- c(-Inf, qt((1:(B - 1)) / B, nu), Inf)
  zs <- c()
  for (bb in 1:B) {
    qb <- pt(edges[bb + 1] - dl, nu) - pt(edges[bb] - dl, nu)
    zs <- c(zs, (rep$n_rep[rep$bin == bb - 1] - colSums(qb)) / sqrt(colSums(qb * (1 - qb))))
  }
  zcheck("replicated PIT counts", zs)
  # QQ: counts on the grid of 1000 t quantiles, interpolated within a cell
  G <- 1000
  e <- qt((1:(G - 1)) / G, nu)
  cnt <- tabulate(findInterval(r, e) + 1, G)
  cum <- cumsum(cnt)
  qq <- bins[bins$part == "qq", ]
  pq <- ((1:100) - 0.5) / 100
  want <- sapply(pq, function(p) {
    c <- which(cum >= p * N)[1]
    below <- if (c > 1) cum[c - 1] else 0
    lo <- if (c == 1) min(r) else e[c - 1]
    hi <- if (c == G) max(r) else e[c]
    lo + (p * N - below) / cnt[c] * (hi - lo)
  })
  check("QQ levels", qq$lo, pq, 0)
  check("QQ t quantiles", qq$predicted, qt(pq, nu), 1e-8)
  check("QQ residual quantiles", qq$observed, want, 1e-8)
  tl <- bins[bins$part == "tail", ]
  a <- c(0.10, 0.05, 0.01)
  check("tail thresholds", tl$hi, qt(1 - a / 2, nu), 1e-8)
  check("tail counts", tl$n, sapply(a, function(x) sum(abs(r) > qt(1 - x / 2, nu))), 0)
}
dbDisconnect(con)
quit(status = bad > 0)
