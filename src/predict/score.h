/*
 * score.h -- the pieces of a prediction that are pure arithmetic: R's
 * type-7 quantiles of a row's draws by selection, the quantiles of a
 * Student-t location mixture (the robust model's posterior predictive),
 * and the exact AUC.
 *
 * No allocation but the quantile workspace's.
 */
#ifndef FLY_PREDICT_SCORE_H
#define FLY_PREDICT_SCORE_H

#include <stddef.h>

#include "util/err.h"

/* Scratch for quantiles of up to n values. */
typedef struct fly_qws fly_qws;
fly_rc fly_qws_new(size_t n, fly_qws **pw, fly_err *err);   /* *pw NULL on failure */
void   fly_qws_free(fly_qws *w);                            /* NULL: no-op */

/* R's quantile(x, c(p_lo, p_hi), type = 7), 0 <= p_lo, p_hi <= 1, of
 * x[0..n), 1 <= n <= w's n, without NaN: with index = 1 + (n - 1) p, lo =
 * floor(index), h = index - lo, the lo-th order statistic, or (1 - h)
 * x(lo) + h x(lo+1) when h > 0 and they differ.  x is not changed.  Cost:
 * O(n), no allocation. */
void fly_predict_quantile2(fly_qws *w, const double *x, size_t n, double p_lo,
                           double p_hi, double *q_lo, double *q_hi);

/* The exact AUC of scores pos[0..n1) (class 1) against neg[0..n0) (class
 * 0): the Mann-Whitney statistic P(score of a positive > that of a
 * negative) + P(tie)/2, i.e. (rank sum of the positives with mid-ranks for
 * ties - n1 (n1 + 1)/2) / (n1 n0).  Sorts both arrays in place; O(n log n).
 * NaN when n1 or n0 is 0. */
double fly_predict_auc(double *pos, size_t n1, double *neg, size_t n0);

/* The mixture (1/S) sum_s t_nu(mu_s, sigma) of Student-t laws with common
 * degrees of freedom nu and scale sigma: the posterior predictive of a new
 * row under robust regression, mu_s its linear predictor at draw s. */
typedef struct fly_tmix {
  double nu, sigma;
  double lbeta;      /* log B(nu/2, 1/2) */
  double ldens;      /* log of the standard t density's constant:
                        -lbeta - log(nu)/2 */
  double dens;       /* that constant */
  int    inu;        /* nu when an integer <= 64 (products, no exp), else 0 */
} fly_tmix;

void   fly_tmix_init(fly_tmix *t, double nu, double sigma);
/* log density of t_nu(mu, sigma) at y. */
double fly_tmix_logpdf(const fly_tmix *t, double y, double mu);
/* The p-quantile of the standard t_nu, 0 < p < 1 (to about 1e-15
 * relative: Newton safeguarded by bisection on fly_stats_pt). */
double fly_tmix_qt(const fly_tmix *t, double p);
/* The p-quantile (0 < p < 1) of the mixture of mu[0..S), computed exactly:
 * the root of F(x) = p, F the mixture's distribution function, by Newton
 * steps safeguarded by bisection inside [min mu + sigma q, max mu + sigma
 * q] (q = fly_tmix_qt(p), which brackets the root since every component's
 * CDF is monotone in its location), until a step or the bracket is below
 * 1e-14 of the scale.  Cost: S t-distribution functions and densities per
 * step, a handful of steps. */
double fly_tmix_quantile(const fly_tmix *t, const double *mu, size_t S, double p,
                         double q);

#endif
