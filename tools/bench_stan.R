# tools/bench_stan.R -- the Stan side of `tools/bench stan`: Stan's NUTS
# (Debian's r-cran-rstan) on a flydb CSV with flydb's model and prior.
#
#   Rscript tools/bench_stan.R CSV MODEL DIR ITERS WARMUP SEED [NU SCALE]
#   Rscript tools/bench_stan.R CSV MODEL DIR check [NU SCALE]
#
# MODEL: logistic (y in 0/1), softmax (y in 0..K-1) or robust (Student-t
# with fixed NU and SCALE).  The design matrix is (1, every column but the
# last), the target the last column, as flydb stores it; every coefficient
# (the intercept too) has flydb's default prior N(0, 1); softmax has all K
# class rows, as flydb does (the prior makes them identified).  The compiled
# model is cached in DIR (rstan's auto_write), so compilation is not timed.
#
# Each model is the fastest form of that posterior we know how to write in
# rstan 2.21, so that the comparison is against a competent Stan user:
# - logistic: bernoulli_logit_glm.
# - softmax (rstan 2.21 has no categorical_logit_glm): vectorised, in
#   coordinates where a diagonal metric suffices.  With s = X beta' (N x K),
#   sum_n log L_n = sum_n s[n, y_n] - sum_n lse(s[n]); the first sum is an
#   inner product with Xy[k] = the sum of x over class k (transformed data),
#   the second adds the K columns with log1p_exp (exact, no overflow).
#   Coordinates: z = Q' beta, Q the K x K orthonormal matrix whose first
#   column is 1/sqrt(K).  z's first row z1 is the class-shift direction:
#   the likelihood does not see it, and Q being orthonormal the N(0, I)
#   prior on beta is N(0, I) on z, so the posterior factorises exactly as
#   N(z1; 0, I) p(z2..zK | y).  z1 is therefore drawn independently in
#   generated quantities (normal_rng), and NUTS samples the contrasts
#   z2..zK only, QR-reparameterised as below (theta = zc R*').  Left in
#   beta's coordinates the shift direction (sd 1, the data pin the rest to
#   about 0.01) needs hundreds of leapfrog steps under a diagonal metric;
#   rstan 2.21 cannot be given an initial metric.  beta = Q z is reported.
# - robust: Stan's QR reparameterisation (Stan User's Guide, "QR
#   reparameterization"): X = Q* R*, theta = R* beta, the likelihood on
#   Q* theta, the prior on beta = R*^-1 theta (a linear map: constant
#   Jacobian, the same posterior).  It removes the correlation of the
#   collinear diamond dimensions, which a diagonal metric cannot.
# Softmax and robust start at 0 (init = 0): Stan's default, uniform(-2, 2)
# on every coefficient, puts these chains far in the tails, where the
# first warm-up iterations run at the maximum tree depth.
#
# `check` compares the model above with the plain one (softmax: the per-row
# categorical_logit loop; robust: student_t on X beta) on the first 500
# rows and on all of them: rstan's log_prob and grad_log_prob at 4 random
# points of beta (z, theta mapped from it), and prints the largest
# differences (they should be rounding, 1e-8 or less).
#
# 2 chains, forked (parallel::mclapply) on 2 cores, ITERS draws after WARMUP
# warm-up each.  Prints
#   seconds S min_ess E cpu C
# (S: the wall time of the sampling, warm-up included; E: the smallest
# posterior::ess_bulk over the coefficients; C: the CPU seconds, user +
# system, of this process and of the two chains, each timing itself) and
# writes DIR/stan-MODEL.csv: one row per coefficient in flydb's order
# (softmax class-major) with its mean, mcse_mean and ess_bulk.
suppressMessages({ library(rstan); library(posterior); library(data.table); library(parallel) })
a <- commandArgs(trailingOnly = TRUE)
check <- length(a) >= 4 && a[4] == "check"
if (length(a) < 6 && !check)
  stop("usage: Rscript tools/bench_stan.R CSV MODEL DIR (ITERS WARMUP SEED | check) [NU SCALE]")
csv <- a[1]; model <- a[2]; dir <- a[3]
extra <- if (check) a[-(1:4)] else a[-(1:6)]
rstan_options(auto_write = TRUE)
# Debian's r-cran-bh is an empty shell over libboost-dev; rstan looks for
# Boost inside BH's package directory.
if (!dir.exists(file.path(rstan_options("boost_lib"), "boost")))
  rstan_options(boost_lib = "/usr/include")

d <- as.matrix(fread(csv))
X <- cbind(1, d[, -ncol(d), drop = FALSE]); y <- d[, ncol(d)]
N <- nrow(X); D <- ncol(X)

plain <- list(
  softmax = "data { int N; int D; int K; matrix[N, D] X; int<lower=1, upper=K> y[N]; }
    parameters { matrix[K, D] beta; }
    model { matrix[N, K] eta = X * beta';
      to_vector(beta) ~ normal(0, 1);
      for (n in 1:N) y[n] ~ categorical_logit(eta[n]'); }",
  robust = "data { int N; int D; matrix[N, D] X; vector[N] y; real nu; real sigma; }
    parameters { vector[D] beta; }
    model { beta ~ normal(0, 1); y ~ student_t(nu, X * beta, sigma); }")
fast <- list(
  logistic = "data { int N; int D; matrix[N, D] X; int<lower=0, upper=1> y[N]; }
    parameters { vector[D] beta; }
    model { beta ~ normal(0, 1); y ~ bernoulli_logit_glm(X, 0, beta); }",
  softmax = "data { int N; int D; int K; matrix[N, D] X; int<lower=1, upper=K> y[N];
      matrix[K, K] Q; }
    transformed data { matrix[N, D] Qs = qr_thin_Q(X) * sqrt(N - 1.0);
      matrix[D, D] Rsi = inverse(qr_thin_R(X) / sqrt(N - 1.0));
      matrix[K, K - 1] Qc = block(Q, 1, 2, K, K - 1);
      matrix[K, D] Qy = rep_matrix(0, K, D);
      for (n in 1:N) Qy[y[n]] += Qs[n]; }
    parameters { matrix[K - 1, D] theta; }
    model { matrix[K, D] b = Qc * theta;
      matrix[N, K] eta = Qs * b';
      vector[N] lse = col(eta, 1);
      for (k in 2:K) lse += log1p_exp(col(eta, k) - lse);
      target += -0.5 * dot_self(to_vector(theta * Rsi'));   // N(0, I) on zc
      target += sum(Qy .* b) - sum(lse); }
    generated quantities { matrix[K, D] beta;
      { matrix[1, D] z1;
        for (d in 1:D) z1[1, d] = normal_rng(0, 1);
        beta = Q * append_row(z1, theta * Rsi'); } }",
  robust = "data { int N; int D; matrix[N, D] X; vector[N] y; real nu; real sigma; }
    transformed data { matrix[N, D] Qs = qr_thin_Q(X) * sqrt(N - 1.0);
      matrix[D, D] Rs = qr_thin_R(X) / sqrt(N - 1.0);
      matrix[D, D] Rsi = inverse(Rs); }
    parameters { vector[D] theta; }
    model { vector[D] beta = Rsi * theta;
      beta ~ normal(0, 1);
      y ~ student_t(nu, Qs * theta, sigma); }
    generated quantities { vector[D] beta = Rsi * theta; }")
if (is.null(fast[[model]])) stop("MODEL: logistic, softmax or robust")

compile <- function(code, tag) {
  src <- file.path(dir, paste0("stan-", tag, ".stan"))
  if (!file.exists(src) || paste(readLines(src), collapse = "\n") != code) writeLines(code, src)
  stan_model(file = src)
}
sm <- compile(fast[[model]], model)

K <- as.integer(max(y) + 1)
# Q: orthonormal, first column 1/sqrt(K) (the sign fixed so that it is +)
Qk <- qr.Q(qr(cbind(1, diag(K)[, -1, drop = FALSE])))
Qk <- Qk * sign(Qk[1, 1])
standata <- function(rows) {
  s <- list(N = length(rows), D = D, X = X[rows, , drop = FALSE])
  switch(model,
    logistic = { s$y <- as.integer(y[rows]) },
    softmax = { s$K <- K; s$y <- as.integer(y[rows] + 1); s$Q <- Qk },
    robust = { s$y <- y[rows]; s$nu <- as.numeric(extra[1]); s$sigma <- as.numeric(extra[2]) })
  s
}

if (check) {
  if (is.null(plain[[model]])) stop("check: softmax or robust")
  sp <- compile(plain[[model]], paste0(model, "-plain"))
  set.seed(1)
  for (n in c(min(500, N), N)) {
    s <- standata(seq_len(n))
    fix <- function(m) sampling(m, data = s, chains = 1, iter = 1, refresh = 0,
                                algorithm = "Fixed_param", init = 0)
    fp <- fix(sp); ff <- fix(sm)
    # beta -> the fast model's parameters u; lp_plain(beta) = lp_fast(u) + off
    # (softmax: -|z1|^2/2, the prior of the shift, which the fast model
    # draws outside NUTS); J = d beta / d u (z1 fixed) for the gradients
    R <- qr.R(qr(s$X)); R <- sign(diag(R)) * R      # Stan's R has a positive diagonal
    Rs <- R / sqrt(n - 1)
    if (model == "softmax") {
      to_fast <- function(b) { z <- crossprod(Qk, matrix(b, K))
        list(u = as.vector(z[-1, , drop = FALSE] %*% t(Rs)), off = -sum(z[1, ]^2) / 2) }
      lin <- function(u) as.vector(Qk %*% rbind(0, matrix(u, K - 1) %*% t(solve(Rs))))
      J <- sapply(seq_len((K - 1) * D), function(j) lin(replace(numeric((K - 1) * D), j, 1)))
    } else {
      to_fast <- function(b) list(u = as.vector(Rs %*% b), off = 0)
      J <- solve(Rs)
    }
    dl <- dg <- 0
    for (sd in c(0.03, 0.3, 1, 3)) {
      b <- rnorm(length(get_inits(fp)[[1]]$beta), sd = sd)
      f <- to_fast(b); lp <- log_prob(fp, b)
      dl <- max(dl, abs(lp - (log_prob(ff, f$u) + f$off)) / max(1, abs(lp)))
      dg <- max(dg, max(abs(as.vector(crossprod(J, grad_log_prob(fp, b))) - grad_log_prob(ff, f$u))))
    }
    cat(sprintf("check %s N %d: max relative log density difference %.2e, max gradient difference %.2e\n",
                model, n, dl, dg))
  }
  quit(save = "no")
}

iters <- as.integer(a[4]); warmup <- as.integer(a[5]); seed <- as.integer(a[6])
data <- standata(seq_len(N))
init <- if (model == "logistic") "random" else 0
# Each chain times its own CPU: the parent's count of its children's CPU
# depends on when parallel reaps them, and misses a chain not yet reaped.
t0 <- Sys.time(); c0 <- proc.time()
runs <- mclapply(1:2, function(ch) {
  c1 <- proc.time()
  fit <- sampling(sm, data = data, chains = 1, chain_id = ch, iter = warmup + iters,
                  warmup = warmup, seed = seed, refresh = 0, init = init)
  list(fit = fit, cpu = sum((proc.time() - c1)[c("user.self", "sys.self")]))
}, mc.cores = 2)
secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))
for (r in runs) if (!is.list(r) || is.null(r$fit)) stop("a chain failed: ", paste(r, collapse = " "))
cpu <- sum((proc.time() - c0)[c("user.self", "sys.self")]) + sum(sapply(runs, `[[`, "cpu"))
fits <- lapply(runs, `[[`, "fit")
fit <- sflist2stanfit(fits)

dr <- as_draws_array(as.array(fit, pars = "beta"))
if (model == "softmax") {       # Stan's beta[k,d] order is column-major: d slowest
  ord <- as.vector(t(matrix(seq_len(K * D), K, D)))
  dr <- dr[, , ord]
}
s <- summarise_draws(dr, mean, mcse_mean, ess_bulk)
write.csv(data.frame(idx = seq_len(nrow(s)) - 1, mean = as.numeric(s$mean),
                     mcse_mean = as.numeric(s$mcse_mean), ess_bulk = as.numeric(s$ess_bulk)),
          file.path(dir, paste0("stan-", model, ".csv")), row.names = FALSE)
cat(sprintf("seconds %.3f min_ess %.1f cpu %.1f\n", secs, min(as.numeric(s$ess_bulk)), cpu))
