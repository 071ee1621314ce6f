/*
 * stats.h -- posterior diagnostics for one scalar parameter, computed as the
 * R packages posterior (1.4.0) and coda (0.19) compute them: rank-normalised
 * split R-hat, bulk/tail ESS and MCSEs of Vehtari, Gelman, Simpson,
 * Carpenter & Buerkner (2021, Bayesian Analysis 16(2)), coda's spectral
 * ESS, and R's quantile/median/mad/acf.  Definitions in the .c files.
 *
 * Draws come as  const double *x, size_t n_chains, size_t n_iter,  chain
 * major: draw t of chain c is x[c*n_iter + t] (the memory layout of R's
 * iterations x chains matrix).  n_chains * n_iter must be below
 * FLY_STATS_MAX_DRAWS.
 *
 * Where R returns NA (a constant or non-finite input, too few draws) the
 * result is NaN and the return code is still FLY_OK: "no estimate" is an
 * answer, not a failure.  One deliberate difference: with 2 or 3 draws a
 * chain and several chains, posterior's .split_chains() gets the matrix
 * shape wrong (x[1:1, ] drops to a vector, so cbind() makes a chains x 2
 * matrix); here the halves are always split as defined.
 *
 * Failures are FLY_MISUSE (NULL pointer, zero chains or iterations),
 * FLY_RANGE (probability outside [0, 1], too many draws, lag too large) and
 * FLY_NOMEM; on failure every output is NaN.
 *
 * Workspace: every fallible function takes a fly_stats_ws.  It holds the
 * scratch arrays (sort buffers, split chains, FFT buffers) and caches that
 * depend only on the shape (the normal scores of ranks 1..S, FFT plans),
 * so summarising many parameters of one run allocates once.  It grows when a
 * call needs more and never shrinks.  Pass NULL to have the call allocate
 * and free a temporary one.  A workspace is not thread-safe; use one per
 * thread.  Input arrays are borrowed for the duration of the call only.
 */
#ifndef FLY_STATS_H
#define FLY_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

#define FLY_STATS_MAX_DRAWS ((size_t)UINT32_MAX)

typedef struct fly_stats_ws fly_stats_ws;

/* A workspace sized for n_chains x n_iter draws (either may be 0: size on
 * first use).  FLY_RANGE if the product exceeds FLY_STATS_MAX_DRAWS,
 * FLY_NOMEM; *pws NULL on failure. */
fly_rc fly_stats_ws_new(size_t n_chains, size_t n_iter, fly_stats_ws **pws,
                        fly_err *err);
void   fly_stats_ws_free(fly_stats_ws *ws);             /* NULL: no-op */

/* ---- rank-normalised diagnostics (Vehtari et al. 2021; posterior) ---- */

/* posterior::rhat(): max of the rank-normalised split-R-hat of the draws
 * (bulk) and of their absolute deviations from the median (tail). */
fly_rc fly_stats_rhat(fly_stats_ws *ws, const double *x, size_t n_chains,
                      size_t n_iter, double *rhat, fly_err *err);

/* posterior::rhat_basic(): the classic (split when split != 0) R-hat of the
 * raw draws, without rank normalisation. */
fly_rc fly_stats_rhat_basic(fly_stats_ws *ws, const double *x,
                            size_t n_chains, size_t n_iter, int split,
                            double *rhat, fly_err *err);

/* posterior::ess_bulk(): ESS of the rank-normalised split chains. */
fly_rc fly_stats_ess_bulk(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err);

/* posterior::ess_tail(): min of the ESS of the indicators x <= q05 and
 * x <= q95 (quantiles of type 7). */
fly_rc fly_stats_ess_tail(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err);

/* posterior::ess_quantile(x, prob): ESS of the indicator x <= quantile(x,
 * prob).  prob in [0, 1], else FLY_RANGE. */
fly_rc fly_stats_ess_quantile(fly_stats_ws *ws, const double *x,
                              size_t n_chains, size_t n_iter, double prob,
                              double *ess, fly_err *err);

/* posterior::ess_basic(x, split): ESS of the raw draws (split chains when
 * split != 0, which is also posterior::ess_mean()). */
fly_rc fly_stats_ess_basic(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, int split, double *ess,
                           fly_err *err);

/* posterior::mcse_mean(): sd(x) / sqrt(ess_mean(x)). */
fly_rc fly_stats_mcse_mean(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, double *mcse, fly_err *err);

/* posterior::mcse_quantile(x, prob): half the distance between the order
 * statistics at the 16% and 84% points of Beta(ess*p + 1, ess*(1-p) + 1),
 * ess = ess_quantile(x, prob).  prob in [0, 1], else FLY_RANGE. */
fly_rc fly_stats_mcse_quantile(fly_stats_ws *ws, const double *x,
                               size_t n_chains, size_t n_iter, double prob,
                               double *mcse, fly_err *err);

/* ---- spectral ESS (coda) ---- */

/* coda::effectiveSize() of an mcmc.list: the sum over chains of
 * n_iter * var / spectrum0.ar.  A chain whose linear-trend residuals have
 * sd <= sqrt(DBL_EPSILON) contributes 0, as in coda.  NaN if n_iter < 2 or
 * a draw is not finite. */
fly_rc fly_stats_ess_coda(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err);

/* coda::spectrum0.ar() of one chain of n draws: *spec is the spectral
 * density at frequency zero of the AR model that ar() picks (Yule-Walker,
 * order by AIC up to min(n - 1, floor(10 log10 n))) and *order its order
 * (either may be NULL).  spec 0 for a (near) linear chain; NaN if n < 2 or
 * a draw is not finite. */
fly_rc fly_stats_spectrum0_ar(fly_stats_ws *ws, const double *x, size_t n,
                              double *spec, int *order, fly_err *err);

/* ---- plain summaries of n pooled draws (chains concatenated) ---- */

/* R's mean(): NaN if n == 0. */
double fly_stats_mean(const double *x, size_t n);
/* R's sd() (n - 1 denominator): NaN if n < 2. */
double fly_stats_sd(const double *x, size_t n);

/* R's quantile(x, probs, type = 7) into q[0..n_probs).  FLY_RANGE if a
 * prob is outside [0, 1]; NaNs in x give NaN quantiles. */
fly_rc fly_stats_quantile(fly_stats_ws *ws, const double *x, size_t n,
                          const double *probs, size_t n_probs, double *q,
                          fly_err *err);

/* R's median() and mad() (1.4826 * median |x - median(x)|). */
fly_rc fly_stats_median(fly_stats_ws *ws, const double *x, size_t n,
                        double *med, fly_err *err);
fly_rc fly_stats_mad(fly_stats_ws *ws, const double *x, size_t n,
                     double *mad, fly_err *err);

/* R's acf(x, lag.max = max_lag)$acf of one chain: rho[k] for k in
 * 0..max_lag, the biased autocovariance at lag k over that at lag 0, via
 * FFT when many lags are asked for.  FLY_RANGE if max_lag >= n.  NaN for a
 * constant chain. */
fly_rc fly_stats_acf(fly_stats_ws *ws, const double *x, size_t n,
                     size_t max_lag, double *rho, fly_err *err);

/* ---- kernel density (R's density() defaults) ---- */

/* R's bw.nrd0(x): Silverman's bandwidth 0.9 min(sd, IQR/1.34) n^-1/5 (with
 * R's fallbacks when the spread is 0).  NaN when n < 2. */
fly_rc fly_stats_bw_nrd0(fly_stats_ws *ws, const double *x, size_t n,
                         double *bw, fly_err *err);

/* Gaussian kernel density of x[0..n) with bandwidth bw at the G equally
 * spaced points lo .. hi into dens[0..G): linear binning and a direct
 * convolution with the kernel cut at 4 bw (kde.c).  Draws outside [lo, hi]
 * are left out.  FLY_MISUSE for G < 2, hi <= lo, bw <= 0 or n == 0;
 * FLY_NOMEM. */
fly_rc fly_stats_kde(const double *x, size_t n, double bw, double lo,
                     double hi, size_t G, double *dens, fly_err *err);

/* ---- one-call summary, as posterior::summarise_draws() plus MCSEs ---- */

typedef struct fly_stats_summary {
  double mean;       /* mean of all draws */
  double sd;         /* sd of all draws, n - 1 denominator */
  double median;     /* R median() */
  double mad;        /* R mad(): 1.4826 * median absolute deviation */
  double q5, q95;    /* quantile(type = 7) at 0.05, 0.95 */
  double mcse_mean;  /* posterior::mcse_mean */
  double mcse_q5;    /* posterior::mcse_quantile at 0.05 */
  double mcse_q95;   /* posterior::mcse_quantile at 0.95 */
  double ess_bulk;   /* posterior::ess_bulk, draws */
  double ess_tail;   /* posterior::ess_tail, draws */
  double ess_basic;  /* posterior::ess_basic (split), draws */
  double rhat;       /* posterior::rhat */
} fly_stats_summary;

/* All of the above with one sort of the draws: cheaper than the single
 * calls.  Every field as its single function defines it. */
fly_rc fly_stats_summarise(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, fly_stats_summary *out,
                           fly_err *err);

/* ---- distributions used above ---- */

/* R's qnorm(p) (Wichura's AS 241): -Inf at 0, +Inf at 1, NaN outside. */
double fly_stats_qnorm(double p);
/* R's qbeta(p, a, b) for a, b > 0: about 1e-10 relative when a + b is near
 * 10^6, closer for smaller shapes; NaN outside. */
double fly_stats_qbeta(double p, double a, double b);

/* log B(a, b) for a, b > 0. */
double fly_stats_lbeta(double a, double b);
/* R's pt(t, nu) for nu > 0, given lbeta = fly_stats_lbeta(nu/2, 1/2) (so a
 * caller with one nu computes it once): about 1e-15 absolute. */
double fly_stats_pt(double t, double nu, double lbeta);

#endif
