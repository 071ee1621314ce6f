# xi_floor.R -- how many rows a FlyMC chain keeps bright on average under
# other choices of the Jaakkola-Jordan xi, from draws of the exact posterior
# (docs/archive/benchmarks.md, "Could other xi reach 2% of N").  Logistic only.
#
#   sqlite3 DB "SELECT hex(theta_map) FROM bound_set WHERE id = B" > thmap.hex
#   sqlite3 DB "SELECT hex(laplace_cov) FROM bound_set WHERE id = B" > cov.hex
#   flydb export RUN --db DB --format csv --out DIR
#   Rscript tools/xi_floor.R DATA.csv thmap.hex cov.hex DIR/RUN_wide.csv
#
# DATA.csv: features, then the 0/1 target y (as ingested; flydb adds the
# intercept first).  Every 20th post-warm-up draw is used.  For each choice
# of xi the mean over draws of sum_n p_n = sum_n 1 - B_n/L_n is printed: the
# expected bright count of a chain at stationarity.
args <- commandArgs(TRUE)
source(file.path(dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])), "lib.R"))
invisible(list2env(logistic_store(args), environment()))   # th, P, S, X
smap <- drop(X %*% th)
v <- rowSums((X %*% S) * X)                 # Laplace variance of each s_n
w <- read.csv(args[4]); w <- w[w$warmup == 0, ]
Sd <- X %*% t(as.matrix(w[seq(1, nrow(w), by = 20), 4:ncol(w)]))   # N x draws
pbright <- function(s, xi) {
  a <- ifelse(xi < 1e-6, -1/8, -tanh(xi / 2) / (4 * xi))
  logB <- a * s^2 + s / 2 - a * xi^2 + xi / 2 - (xi + log1p(exp(-xi)))
  1 - exp(-pmax(logsig(s) - logB, 0))
}
ev <- function(xi) mean(colSums(pbright(Sd, xi)))
cat(sprintf("draws %d, rows %d\n", ncol(Sd), nrow(Sd)))
cat(sprintf("xi = |s_map| (MAP tuning):             %.1f bright rows\n", ev(abs(smap))))
cat(sprintf("xi^2 = s_map^2 + Laplace var(s):       %.1f\n", ev(sqrt(smap^2 + v))))
cat(sprintf("xi^2 = E[s^2] over the draws (oracle): %.1f\n", ev(sqrt(rowMeans(Sd^2)))))
# Each row's own best xi, from a grid of multiples of its oracle xi above:
# the least expected bright count any Jaakkola-Jordan bounds reach on these
# draws.  Any concave quadratic lower bound of log sigma in s (what collapses
# into moments) lies below one of them: raised until it touches log sigma
# at some s0, its curvature must be at least JJ's at xi = |s0|, or it
# crosses log sigma near -s0.  So this is a floor for every such bound.
xo <- sqrt(rowMeans(Sd^2))
best <- rep(Inf, nrow(Sd))
for (f in seq(0.5, 1.5, by = 0.01))
  best <- pmin(best, rowMeans(pbright(Sd, f * xo)))
cat(sprintf("each row's best xi in (0.5 .. 1.5) x oracle: %.1f (least over the grid)\n", sum(best)))
