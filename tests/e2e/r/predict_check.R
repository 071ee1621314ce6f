# Checks of `flydb predict` against R, run by tests/e2e/predict.sh.  Usage:
#   Rscript predict_check.R DB RUN TRAIN.csv NEW.csv PRED.csv FORMULA REF LEVEL S
# The run's post-warm-up draws are read with RSQLite (chains pooled in chain
# order, thinned to S as flydb does: pooled draw floor(j T / S), j < S),
# the new rows' model matrix is model.matrix(FORMULA) on NEW.csv read with
# the levels of TRAIN.csv (REF: "col=level" releveled, or "-"), and every
# predicted mean and interval end of PRED.csv must equal R's to 1e-10:
#   logistic  plogis(X theta_s): mean and quantile(type = 7);
#   softmax   softmax over the classes of X theta_{k,s}, per class;
#   robust    mean of X theta_s, and the quantiles of the t mixture by
#             uniroot on mean(pt((x - mu_s)/sigma, nu)).
# When NEW.csv has the target, the stored prediction row's lpd, Brier, AUC
# (Mann-Whitney through ranks), accuracy and RMSE must equal R's to 1e-10.
# Exits non-zero with the differences printed when a check fails.
suppressPackageStartupMessages(library(RSQLite))
a <- commandArgs(trailingOnly = TRUE)
dbf <- a[1]; run <- as.integer(a[2]); trainf <- a[3]; newf <- a[4]; predf <- a[5]
fml <- as.formula(a[6]); ref <- a[7]; level <- as.numeric(a[8]); S <- as.integer(a[9])
bad <- 0
check <- function(what, got, want, tol = 1e-10) {
  d <- max(abs(got - want) / pmax(1, abs(want)))
  if (!is.finite(d) || d > tol) {
    cat(sprintf("FAIL %s: max relative difference %g\n", what, d))
    print(head(cbind(got = as.vector(got), want = as.vector(want))))
    bad <<- bad + 1
  } else cat(sprintf("ok - %s (%.2g)\n", what, d))
}
lme <- function(l) { m <- max(l); m + log(sum(exp(l - m))) - log(length(l)) }

con <- dbConnect(SQLite(), dbf)
d <- dbGetQuery(con, "SELECT chain, iter, name, value FROM draws_named
                      WHERE run_id = ? AND warmup = 0 ORDER BY chain, iter", list(run))
pn <- dbGetQuery(con, "SELECT name FROM param WHERE run_id = ? ORDER BY idx", list(run))$name
set <- dbGetQuery(con, "SELECT r.model, s.nu, s.scale FROM run r JOIN run_setting s
                        ON s.run_id = r.id WHERE r.id = ?", list(run))
pr <- dbGetQuery(con, "SELECT * FROM prediction WHERE run_id = ? ORDER BY id DESC LIMIT 1",
                 list(run))
dbDisconnect(con)
w <- reshape(d, idvar = c("chain", "iter"), timevar = "name", direction = "wide")
th <- as.matrix(w[, paste0("value.", pn)])
T <- nrow(th)
if (S < T) th <- th[floor((0:(S - 1)) * T / S) + 1, , drop = FALSE]
S <- nrow(th)
if (pr$n_draws != S) { cat("FAIL: n_draws", pr$n_draws, "want", S, "\n"); quit(status = 1) }

train <- read.csv(trainf, stringsAsFactors = TRUE)
new <- read.csv(newf, stringsAsFactors = FALSE)
for (v in names(train)) if (is.factor(train[[v]]) && v %in% names(new))
  new[[v]] <- factor(new[[v]], levels = levels(train[[v]]))
if (ref != "-") for (r in strsplit(ref, ",")[[1]]) {
  kv <- strsplit(r, "=")[[1]]
  train[[kv[1]]] <- relevel(train[[kv[1]]], kv[2])
  new[[kv[1]]] <- relevel(new[[kv[1]]], kv[2])
}
resp <- all.vars(fml)[1]
X <- model.matrix(delete.response(terms(fml, data = train)), data = new)
D <- ncol(X)
pred <- read.csv(predf, check.names = FALSE)
check("row numbers", pred$row, seq_len(nrow(new)), 0)
probs <- c((1 - level) / 2, (1 + level) / 2)
has_y <- resp %in% names(new)
model <- set$model

if (model == "logistic") {
  check("names", 0, as.numeric(!identical(colnames(X), pn)), 0)
  eta <- X %*% t(th)
  p <- plogis(eta)
  q <- apply(p, 1, quantile, probs = probs, type = 7, names = FALSE)
  check("logistic mean", pred$mean, rowMeans(p))
  check("logistic lower", pred$lower, q[1, ])
  check("logistic upper", pred$upper, q[2, ])
  if (has_y) {
    y <- if (is.factor(train[[resp]])) as.integer(new[[resp]] == levels(train[[resp]])[2])
         else new[[resp]]
    ll <- plogis((2 * y - 1) * eta, log.p = TRUE)
    check("lpd", pr$lpd, sum(apply(ll, 1, lme)))
    check("brier", pr$brier, mean((rowMeans(p) - y)^2))
    r <- rank(rowMeans(p)); n1 <- sum(y == 1); n0 <- sum(y == 0)
    check("auc", pr$auc, (sum(r[y == 1]) - n1 * (n1 + 1) / 2) / (n1 * n0))
  }
} else if (model == "softmax") {
  K <- length(pn) / D
  labs <- if (is.factor(train[[resp]])) levels(train[[resp]]) else as.character(0:(K - 1))
  eta <- lapply(1:K, function(k) X %*% t(th[, (k - 1) * D + 1:D, drop = FALSE]))
  m <- Reduce(pmax, eta)
  lse <- m + log(Reduce(`+`, lapply(eta, function(e) exp(e - m))))
  pm <- sapply(1:K, function(k) {
    p <- exp(eta[[k]] - lse)
    q <- apply(p, 1, quantile, probs = probs, type = 7, names = FALSE)
    check(paste("softmax mean", labs[k]), pred[[labs[k]]], rowMeans(p))
    check(paste("softmax lower", labs[k]), pred[[paste0(labs[k], "_lower")]], q[1, ])
    check(paste("softmax upper", labs[k]), pred[[paste0(labs[k], "_upper")]], q[2, ])
    rowMeans(p)
  })
  if (has_y) {
    yk <- if (is.factor(train[[resp]])) as.integer(new[[resp]]) else new[[resp]] + 1
    ll <- t(sapply(seq_along(yk), function(i) eta[[yk[i]]][i, ] - lse[i, ]))
    check("lpd", pr$lpd, sum(apply(ll, 1, lme)))
    check("accuracy", pr$accuracy, mean(max.col(pm, ties.method = "first") == yk))
    check("brier", pr$brier, mean(rowSums((pm - outer(yk, 1:K, "=="))^2)))
  }
} else {
  check("names", 0, as.numeric(!identical(colnames(X), pn)), 0)
  mu <- X %*% t(th); nu <- set$nu; sigma <- set$scale
  check("robust mean", pred$mean, rowMeans(mu))
  qm <- sapply(seq_len(nrow(mu)), function(i) sapply(probs, function(pp) {
    qt0 <- qt(pp, nu)
    lo <- min(mu[i, ]) + sigma * qt0; hi <- max(mu[i, ]) + sigma * qt0
    uniroot(function(x) mean(pt((x - mu[i, ]) / sigma, nu)) - pp, c(lo, hi),
            tol = 1e-15, maxiter = 1000)$root
  }))
  check("robust lower", pred$lower, qm[1, ])
  check("robust upper", pred$upper, qm[2, ])
  if (has_y) {
    y <- new[[resp]]
    ll <- dt((y - mu) / sigma, nu, log = TRUE) - log(sigma)
    check("lpd", pr$lpd, sum(apply(ll, 1, lme)))
    check("rmse", pr$rmse, sqrt(mean((y - rowMeans(mu))^2)))
  }
}
quit(status = bad > 0)
