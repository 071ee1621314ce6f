# lib.R -- what the R scripts of tools/ that read a tuned logistic store
# share: its MAP and Laplace covariance (hex dumps of bound_set's BLOBs), the
# signed design matrix, and log sigma.  source()d by xi_floor.R and
# anchor_screen.R.

# The f64 values of a BLOB dumped by sqlite3's hex() into file f.
hex2dbl <- function(f) {
  h <- readLines(f)
  r <- as.raw(strtoi(substring(h, seq(1, nchar(h), 2), seq(2, nchar(h), 2)), 16L))
  readBin(r, "double", n = length(r) / 8, endian = "little")
}

# From the command line DATA.csv thmap.hex cov.hex: th (the MAP), P, S (the
# Laplace covariance) and X, each row (1, features) times 2y - 1, so that
# s = X th is the signed linear predictor the logistic bounds see.
logistic_store <- function(args) {
  d <- read.csv(args[1])
  th <- hex2dbl(args[2]); P <- length(th)
  list(th = th, P = P, S = matrix(hex2dbl(args[3]), P, P),
       X = cbind(1, as.matrix(d[, setdiff(names(d), "y")])) * (2 * d$y - 1))
}

# log sigma(s), without overflow for large |s|.
logsig <- function(s) ifelse(s > 0, -log1p(exp(-s)), s - log1p(exp(s)))
