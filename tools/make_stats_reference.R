#!/usr/bin/env Rscript
# make_stats_reference.R -- fixed chains and what R says about them, for the
# unit test of src/stats (tests/unit/stats/test_stats.c).
#
# Run once from the repository root, and again only when a case is added:
#
#   Rscript tools/make_stats_reference.R
#
# It writes tests/unit/stats/reference_data.h: the draws of each case as
# C arrays (17 significant digits, so the C test reads exactly the doubles R
# used) and, per case, posterior's and coda's outputs.  R's NA becomes NAN.
# The header is committed so the test needs neither R nor file I/O.
#
# Needs R >= 4.2 with posterior (1.4.0 when generated) and coda (0.19-4);
# the versions used are recorded in the header.

suppressPackageStartupMessages({
  library(posterior)
  library(coda)
})

out_path <- "tests/unit/stats/reference_data.h"
set.seed(20240611)

# Stationary AR(1) with unit marginal variance; innovations from rinnov.
ar1 <- function(n, phi, rinnov = rnorm) {
  x <- numeric(n)
  x[1] <- rinnov(1)
  s <- sqrt(1 - phi^2)
  e <- rinnov(n)
  for (t in seq_len(n)[-1]) x[t] <- phi * x[t - 1] + s * e[t]
  x
}
chains <- function(m, n, phi, ...) sapply(seq_len(m), function(c) ar1(n, phi, ...))

cases <- list()
add <- function(name, x) {
  x <- as.matrix(x)                       # iterations x chains
  storage.mode(x) <- "double"
  cases[[name]] <<- x
}

add("iid_1x100",       chains(1, 100, 0))
add("iid_3x1000",      chains(3, 1000, 0))
add("ar05_4x1000",     chains(4, 1000, 0.5))
add("ar09_4x1001",     chains(4, 1001, 0.9))
add("ar09_1x1001",     chains(1, 1001, 0.9))
add("ar099_2x1000",    chains(2, 1000, 0.99))
add("ar0999_1x1000",   chains(1, 1000, 0.999))
add("anti05_4x100",    chains(4, 100, -0.5))
add("anti09_2x1000",   chains(2, 1000, -0.9))     # ESS hits the S log10 S cap
add("heavy_3x1000",    chains(3, 1000, 0.5, rinnov = function(k) rt(k, df = 1.5)))
add("cauchy_2x500",    matrix(rcauchy(1000), 500, 2))
add("ties_4x1000",     floor(2 * chains(4, 1000, 0.7)))
add("pois_2x1001",     matrix(rpois(2002, 1.2), 1001, 2))
add("shifted_4x1000",  chains(4, 1000, 0.3) + rep(c(0, 0, 0.5, 1), each = 1000))
add("scaled_4x500",    chains(4, 500, 0.6) * rep(c(1, 1, 1, 3), each = 500))
add("onecst_3x100",    cbind(ar1(100, 0.5), rep(0.3, 100), ar1(100, 0.5)))
add("const_2x100",     matrix(1.5, 100, 2))
add("binary_2x100",    matrix(rep(c(-1, 1), 100)[sample(200)], 100, 2))  # fold is constant
add("tiny_2x200",      1e-10 * chains(2, 200, 0.5))  # below coda's sqrt(eps) test
add("trend_1x200",     matrix(0.25 * (1:200) + 3, 200, 1))
add("trendnoise_2x300", chains(2, 300, 0.2) + 0.01 * (1:300))
add("big_1e6_2x400",   1e6 + chains(2, 400, 0.4))
add("short_4x4",       chains(4, 4, 0))
add("short_1x5",       chains(1, 5, 0))
add("short_1x6",       chains(1, 6, 0))
add("short_2x7",       chains(2, 7, 0.3))
add("short_3x9",       chains(3, 9, 0.3))
add("short_2x12",      chains(2, 12, 0.3))
add("mid_4x5000_ar08", chains(4, 5000, 0.8))

# The quantities, in the order of the C enum (names become REF_<NAME>).
na <- function(expr) tryCatch(suppressWarnings(expr), error = function(e) NA_real_)
acf_lag <- function(x, k) na(acf(x, lag.max = k, plot = FALSE)$acf[k + 1])
quantities <- list(
  rhat             = function(x) na(rhat(x)),
  rhat_basic       = function(x) na(rhat_basic(x)),
  rhat_basic_nosplit = function(x) na(rhat_basic(x, split = FALSE)),
  ess_bulk         = function(x) na(ess_bulk(x)),
  ess_tail         = function(x) na(ess_tail(x)),
  ess_basic        = function(x) na(ess_basic(x)),
  ess_basic_nosplit = function(x) na(ess_basic(x, split = FALSE)),
  ess_q05          = function(x) na(ess_quantile(x, 0.05)),
  ess_q50          = function(x) na(ess_quantile(x, 0.5)),
  ess_q95          = function(x) na(ess_quantile(x, 0.95)),
  ess_q0           = function(x) na(ess_quantile(x, 0)),
  ess_q1           = function(x) na(ess_quantile(x, 1)),
  mcse_mean        = function(x) na(mcse_mean(x)),
  mcse_q05         = function(x) na(mcse_quantile(x, 0.05)),
  mcse_q50         = function(x) na(mcse_quantile(x, 0.5)),
  mcse_q95         = function(x) na(mcse_quantile(x, 0.95)),
  mean             = function(x) na(mean(x)),
  sd               = function(x) na(stats::sd(x)),
  median           = function(x) na(median(x)),
  mad              = function(x) na(stats::mad(x)),
  q0               = function(x) na(quantile(x, 0, names = FALSE)),
  q05              = function(x) na(quantile(x, 0.05, names = FALSE)),
  q25              = function(x) na(quantile(x, 0.25, names = FALSE)),
  q50              = function(x) na(quantile(x, 0.5, names = FALSE)),
  q75              = function(x) na(quantile(x, 0.75, names = FALSE)),
  q95              = function(x) na(quantile(x, 0.95, names = FALSE)),
  q1               = function(x) na(quantile(x, 1, names = FALSE)),
  acf1             = function(x) acf_lag(x[, 1], 1),
  acf2             = function(x) acf_lag(x[, 1], 2),
  acf3             = function(x) acf_lag(x[, 1], 3),
  ess_coda         = function(x) na(unname(effectiveSize(
                       mcmc.list(lapply(seq_len(ncol(x)), function(c) mcmc(x[, c])))))),
  spec0            = function(x) na(unname(spectrum0.ar(x[, 1])$spec)),
  spec0_order      = function(x) na(unname(spectrum0.ar(x[, 1])$order))
)

fmt <- function(v) {
  ifelse(is.na(v), "NAN",
         ifelse(is.infinite(v), ifelse(v > 0, "INFINITY", "-INFINITY"),
                sprintf("%.17g", v)))
}

lines <- c(
  "/*",
  " * reference_data.h -- GENERATED by tools/make_stats_reference.R; do not edit.",
  sprintf(" * R %s, posterior %s, coda %s; set.seed(20240611).",
          paste(R.version$major, R.version$minor, sep = "."),
          packageVersion("posterior"), packageVersion("coda")),
  " * Draws are chain-major (x[c*n_iter + t]); NAN is R's NA.",
  " */",
  "#ifndef FLY_STATS_REFERENCE_DATA_H",
  "#define FLY_STATS_REFERENCE_DATA_H",
  "",
  "#include <math.h>",
  "#include <stddef.h>",
  "",
  "enum {",
  paste0("  REF_", toupper(names(quantities)), ","),
  "  REF_COUNT",
  "};",
  "",
  "static const char *const ref_quantity[REF_COUNT] = {",
  paste0("  \"", names(quantities), "\","),
  "};",
  "",
  "typedef struct ref_case {",
  "  const char   *name;",
  "  size_t        n_chains, n_iter;",
  "  const double *x;                 /* n_chains * n_iter draws */",
  "  double        v[REF_COUNT];      /* R's values, NAN for NA */",
  "} ref_case;",
  ""
)

for (name in names(cases)) {
  x <- cases[[name]]
  v <- fmt(as.vector(x))
  body <- vapply(split(v, ceiling(seq_along(v) / 4)),
                 function(r) paste0("  ", paste(r, collapse = ", "), ","), "")
  lines <- c(lines, sprintf("static const double ref_x_%s[%d] = {", name, length(v)),
             body, "};", "")
}

lines <- c(lines, "static const ref_case ref_cases[] = {")
for (name in names(cases)) {
  x <- cases[[name]]
  vals <- vapply(quantities, function(f) as.numeric(f(x))[1], 0)
  lines <- c(lines,
             sprintf("  { \"%s\", %d, %d, ref_x_%s, {", name, ncol(x), nrow(x), name),
             paste0("    ", fmt(vals), ",  /* ", names(quantities), " */"),
             "  } },")
}
lines <- c(lines, "};", "")

# qnorm and qbeta at a few points, including the tails rank normalisation
# reaches and the Beta shapes mcse_quantile uses.
qn_p <- c(1e-300, 1e-20, 1e-8, 6.2e-7, 0.001, 0.02, 0.075, 0.0751, 0.3,
          0.5, 0.574, 0.925, 0.9999, 1 - 1e-12)
qb <- rbind(c(0.1586553, 2, 3), c(0.8413447, 2, 3),
            c(0.1586553, 51, 951), c(0.8413447, 51, 951),
            c(0.1586553, 2001, 2001), c(0.8413447, 380.2, 7220.8),
            c(0.1586553, 1, 40.5), c(0.8413447, 40.5, 1),
            c(0.5, 0.5, 0.5), c(0.01, 0.3, 7), c(0.1586553, 2e5, 3.8e6),
            c(0.8413447, 4e4, 4e4))
lines <- c(lines,
  "static const double ref_qnorm[][2] = {   /* p, qnorm(p) */",
  sprintf("  { %s, %s },", fmt(qn_p), fmt(qnorm(qn_p))),
  "};",
  "",
  "static const double ref_qbeta[][4] = {   /* p, a, b, qbeta(p, a, b) */",
  sprintf("  { %s, %s, %s, %s },", fmt(qb[, 1]), fmt(qb[, 2]), fmt(qb[, 3]),
          fmt(qbeta(qb[, 1], qb[, 2], qb[, 3]))),
  "};",
  "",
  "#endif",
  "")

writeLines(lines, out_path)
cat(sprintf("wrote %s: %d cases, %d bytes\n", out_path, length(cases),
            file.size(out_path)))
