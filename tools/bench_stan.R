# tools/bench_stan.R -- the Stan side of `tools/bench stan`: Stan's NUTS
# (Debian's r-cran-rstan) on a flydb CSV with flydb's model and prior.
#
#   Rscript tools/bench_stan.R CSV MODEL DIR ITERS WARMUP SEED [NU SCALE]
#
# MODEL: logistic (y in 0/1), softmax (y in 0..K-1) or robust (Student-t
# with fixed NU and SCALE).  The design matrix is (1, every column but the
# last), the target the last column, as flydb stores it; every coefficient
# (the intercept too) has flydb's default prior N(0, 1); softmax has all K
# class rows, as flydb does (the prior makes them identified).  Logistic
# uses bernoulli_logit_glm, Stan's fastest form.  The compiled model is
# cached in DIR (rstan's auto_write), so compilation is not timed.
#
# 2 chains on 2 cores, ITERS draws after WARMUP warm-up each.  Prints
#   seconds S min_ess E
# (S: the wall time of sampling(), warm-up included; E: the smallest
# posterior::ess_bulk over the coefficients) and writes DIR/stan-MODEL.csv:
# one row per coefficient in flydb's order (softmax class-major) with its
# mean, mcse_mean and ess_bulk.
suppressMessages({ library(rstan); library(posterior); library(data.table) })
a <- commandArgs(trailingOnly = TRUE)
if (length(a) < 6) stop("usage: Rscript tools/bench_stan.R CSV MODEL DIR ITERS WARMUP SEED [NU SCALE]")
csv <- a[1]; model <- a[2]; dir <- a[3]
iters <- as.integer(a[4]); warmup <- as.integer(a[5]); seed <- as.integer(a[6])
rstan_options(auto_write = TRUE)
# Debian's r-cran-bh is an empty shell over libboost-dev; rstan looks for
# Boost inside BH's package directory.
if (!dir.exists(file.path(rstan_options("boost_lib"), "boost")))
  rstan_options(boost_lib = "/usr/include")

d <- as.matrix(fread(csv))
X <- cbind(1, d[, -ncol(d), drop = FALSE]); y <- d[, ncol(d)]
N <- nrow(X); D <- ncol(X)

code <- switch(model,
  logistic = "data { int N; int D; matrix[N, D] X; int<lower=0, upper=1> y[N]; }
    parameters { vector[D] beta; }
    model { beta ~ normal(0, 1); y ~ bernoulli_logit_glm(X, 0, beta); }",
  softmax = "data { int N; int D; int K; matrix[N, D] X; int<lower=1, upper=K> y[N]; }
    parameters { matrix[K, D] beta; }
    model { matrix[N, K] eta = X * beta';
      to_vector(beta) ~ normal(0, 1);
      for (n in 1:N) y[n] ~ categorical_logit(eta[n]'); }",
  robust = "data { int N; int D; matrix[N, D] X; vector[N] y; real nu; real sigma; }
    parameters { vector[D] beta; }
    model { beta ~ normal(0, 1); y ~ student_t(nu, X * beta, sigma); }",
  stop("MODEL: logistic, softmax or robust"))
src <- file.path(dir, paste0("stan-", model, ".stan"))
if (!file.exists(src) || paste(readLines(src), collapse = "\n") != code) writeLines(code, src)
sm <- stan_model(file = src)

data <- list(N = N, D = D, X = X)
if (model == "logistic") data$y <- as.integer(y)
if (model == "softmax") { data$K <- as.integer(max(y) + 1); data$y <- as.integer(y + 1) }
if (model == "robust") { data$y <- y; data$nu <- as.numeric(a[7]); data$sigma <- as.numeric(a[8]) }

t0 <- Sys.time()
fit <- sampling(sm, data = data, chains = 2, cores = 2, iter = warmup + iters,
                warmup = warmup, seed = seed, refresh = 0)
secs <- as.numeric(difftime(Sys.time(), t0, units = "secs"))

dr <- as_draws_array(as.array(fit, pars = "beta"))
if (model == "softmax") {       # Stan's beta[k,d] order is column-major: d slowest
  K <- data$K
  ord <- as.vector(t(matrix(seq_len(K * D), K, D)))
  dr <- dr[, , ord]
}
s <- summarise_draws(dr, mean, mcse_mean, ess_bulk)
write.csv(data.frame(idx = seq_len(nrow(s)) - 1, mean = as.numeric(s$mean),
                     mcse_mean = as.numeric(s$mcse_mean), ess_bulk = as.numeric(s$ess_bulk)),
          file.path(dir, paste0("stan-", model, ".csv")), row.names = FALSE)
cat(sprintf("seconds %.3f min_ess %.1f\n", secs, min(as.numeric(s$ess_bulk))))
