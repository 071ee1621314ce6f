/*
 * psis.h -- Pareto-smoothed importance sampling (PSIS) of one row's
 * leave-one-out weights, as R's loo package 2.5.1 computes them
 * (Vehtari, Simpson, Gelman, Yao & Gabry, "Pareto smoothed importance
 * sampling", arXiv:1507.02646; loo's psis() and gpdfit()).
 *
 * For S draws th_s of the posterior and one row i, the log ratios are
 * r_s = -log p(y_i | th_s).  PSIS replaces the M largest ratios by the
 * expected order statistics of a generalized Pareto distribution fitted to
 * them (M = ceil(min(0.2 S, 3 sqrt(S / r_eff)))), truncates the smoothed
 * weights at the largest raw one, and reports the fitted shape k-hat: the
 * estimate is reliable for k-hat <= 0.7 (loo's bins: (-inf, 0.5] good,
 * (0.5, 0.7] ok, (0.7, 1] bad, (1, inf) very bad).  k-hat is +inf when
 * the tail is shorter than 5 draws or flat (nothing is smoothed then).
 *
 * Nothing here allocates: the caller passes a fly_psis_ws sized for S.
 * Cost per row: O(S) expected (a selection of the tail) plus O(M log M).
 */
#ifndef FLY_PSIS_H
#define FLY_PSIS_H

#include <stddef.h>

#include "util/err.h"

typedef struct fly_psis_ws fly_psis_ws;

/* A workspace for rows of S draws (S >= 2).  *pw NULL on failure
 * (FLY_NOMEM). */
fly_rc fly_psis_ws_new(size_t S, fly_psis_ws **pw, fly_err *err);
void   fly_psis_ws_free(fly_psis_ws *w);                 /* NULL: no-op */

/* The tail length M of S draws with relative efficiency r_eff (> 0). */
size_t fly_psis_tail_len(size_t S, double r_eff);

/* Smooth the S log ratios lw[0..S) in place into unnormalised log weights
 * (loo's weights(psis(lr), normalize = FALSE)); returns k-hat.
 * S must be the workspace's. */
double fly_psis_smooth(fly_psis_ws *w, double *lw, size_t S, double r_eff);

/* One row's PSIS-LOO from its S log-likelihood values ll[0..S):
 * elpd_loo = log sum_s w_s p_s / sum_s w_s with the smoothed weights of
 * the ratios -ll, p_loo = lpd - elpd_loo where lpd = log mean_s p_s, and
 * k-hat.  ll is not changed. */
typedef struct fly_psis_row {
  double elpd_loo, p_loo, lpd, pareto_k;
} fly_psis_row;
void   fly_psis_loo_row(fly_psis_ws *w, const double *ll, size_t S,
                        double r_eff, fly_psis_row *out);

/* log sum_i exp(x[i]) over n values (max-shifted; -inf when n is 0). */
double fly_psis_logsumexp(const double *x, size_t n);

#endif
