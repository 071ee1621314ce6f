/*
 * coda.c -- spectral effective sample size as coda 0.19 computes it:
 * effectiveSize() of an mcmc.list is the sum over chains of
 *
 *   ESS_c = n var(x_c) / S_c(0)      (0 when S_c(0) == 0),
 *
 * with S_c(0) from spectrum0.ar(): the spectral density at frequency zero
 * of an autoregressive model fitted by stats::ar() (Yule-Walker, order by
 * AIC; Heidelberger & Welch 1981 motivate the AR approach):
 *
 *   1. Fit x_t = a + b t by least squares.  If the residual sd is "all
 *      equal" to 0 in R's sense (all.equal's tolerance sqrt(DBL_EPSILON),
 *      an absolute test since the target is 0), S(0) = 0: constant and
 *      exactly linear chains have ESS 0.
 *   2. ar.yw: demean; biased autocovariances r_k = (1/n) sum x_t x_{t+k}
 *      for k <= p_max = min(n - 1, floor(10 log10 n)); Levinson-Durbin
 *      (Durbin 1960; R's Fortran eureka) gives the AR(p) coefficients
 *      phi_p and innovation variances v_0 = r_0, v_p = v_{p-1}(1 - phi_pp^2)
 *      for every p <= p_max.
 *   3. AIC_p = n log v_p + 2p (+2 for the mean); the first minimum is the
 *      order p.  var.pred = v_p n / (n - (p + 1)).
 *   4. S(0) = var.pred / (1 - sum_j phi_pj)^2.
 * Cost O(n p_max) per chain for the autocovariances, O(p_max^2) for the
 * recursion; p_max is 50 at n = 10^5.  Results agree with R up to rounding
 * unless two orders' AIC tie to the last bits, where R itself would return
 * several orders.  NaN where R stops with an error: n < 2, a non-finite
 * draw.
 */
#include <float.h>
#include <math.h>

#include "stats/stats_int.h"
#include "util/mem.h"

static fly_rc reserve_ar(fly_stats_ws *ws, size_t p, fly_err *err)
{
  if( p + 1 <= ws->cap_ar ) return FLY_OK;
  fly_free(ws->ar_r);
  fly_free(ws->ar_phi);
  fly_free(ws->ar_tmp);
  ws->cap_ar = 0;
  ws->ar_r = fly_alloc_array(p + 1, sizeof *ws->ar_r);
  ws->ar_phi = fly_alloc_array(p + 1, sizeof *ws->ar_phi);
  ws->ar_tmp = fly_alloc_array(p + 1, sizeof *ws->ar_tmp);
  if( !ws->ar_r || !ws->ar_phi || !ws->ar_tmp )
    return fly_fail(err, FLY_NOMEM, "spectrum0_ar: cannot allocate an AR(%zu) "
                    "fit", p);
  ws->cap_ar = p + 1;
  return FLY_OK;
}

/* R's var() of x[0..n), n >= 2. */
static double var_r(const double *x, size_t n)
{
  double m = flys_mean(x, n), s = 0;
  for( size_t t = 0; t < n; t++ ) s += (x[t] - m) * (x[t] - m);
  return s / (double)(n - 1);
}

static fly_rc spec0(fly_stats_ws *ws, const double *x, size_t n, double *spec,
                    int *order, fly_err *err)
{
  double xbar, zbar, szz = 0, szx = 0, b, rss = 0, *xc = ws->y;
  double *r, *phi, *prev, v, best_aic, best_v, best_sum, sum;
  size_t pmax, best_p;
  fly_rc rc;

  *spec = NAN;
  *order = -1;
  if( n < 2 ) return FLY_OK;
  for( size_t t = 0; t < n; t++ ) if( !isfinite(x[t]) ) return FLY_OK;

  /* 1. residual sd of the linear trend fit */
  xbar = flys_mean(x, n);
  zbar = ((double)n + 1) / 2;
  for( size_t t = 0; t < n; t++ ){
    double dz = (double)(t + 1) - zbar;
    szz += dz * dz;
    szx += dz * (x[t] - xbar);
  }
  b = szx / szz;
  for( size_t t = 0; t < n; t++ ){
    double e = (x[t] - xbar) - b * ((double)(t + 1) - zbar);
    rss += e * e;
  }
  if( sqrt(rss / (double)(n - 1)) <= sqrt(DBL_EPSILON) ){
    *spec = 0;
    *order = 0;
    return FLY_OK;
  }

  /* 2. Yule-Walker by Levinson-Durbin */
  pmax = (size_t)floor(10 * log10((double)n));
  if( pmax > n - 1 ) pmax = n - 1;
  rc = reserve_ar(ws, pmax, err);
  if( rc != FLY_OK ) return rc;
  r = ws->ar_r;
  phi = ws->ar_phi;
  prev = ws->ar_tmp;
  for( size_t t = 0; t < n; t++ ) xc[t] = x[t] - xbar;
  for( size_t k = 0; k <= pmax; k++ ){
    double s = 0;
    for( size_t t = 0; t + k < n; t++ ) s += xc[t] * xc[t+k];
    r[k] = s / (double)n;
  }
  if( r[0] == 0 ) return FLY_OK;

  /* 3. AIC over p = 0..pmax; phi[1..p] the current coefficients */
  v = r[0];
  best_p = 0;
  best_v = v;
  best_sum = 0;
  best_aic = (double)n * log(v);
  sum = 0;
  for( size_t p = 1; p <= pmax; p++ ){
    double acc = r[p], kappa, aic;
    for( size_t j = 1; j < p; j++ ) acc -= prev[j] * r[p - j];
    kappa = acc / v;
    for( size_t j = 1; j < p; j++ ) phi[j] = prev[j] - kappa * prev[p - j];
    phi[p] = kappa;
    v *= 1 - kappa * kappa;
    sum = 0;
    for( size_t j = 1; j <= p; j++ ){
      sum += phi[j];
      prev[j] = phi[j];
    }
    aic = (double)n * log(v) + 2 * (double)p;
    if( aic < best_aic ){
      best_aic = aic;
      best_p = p;
      best_v = v;
      best_sum = sum;
    }
  }

  /* 4. spectral density at zero */
  best_v = best_v * (double)n / (double)(n - (best_p + 1));
  *spec = best_v / ((1 - best_sum) * (1 - best_sum));
  *order = (int)best_p;
  return FLY_OK;
}

fly_rc fly_stats_spectrum0_ar(fly_stats_ws *ws, const double *x, size_t n,
                              double *spec, int *order, fly_err *err)
{
  fly_stats_ws *tmp;
  double s = NAN;
  int o = -1;
  fly_rc rc;
  if( spec ) *spec = NAN;
  if( order ) *order = -1;
  rc = flys_begin("spectrum0_ar", &ws, &tmp, x, x, 1, n, err);
  if( rc == FLY_OK ) rc = spec0(ws, x, n, &s, &o, err);
  if( rc == FLY_OK ){
    if( spec ) *spec = s;
    if( order ) *order = o;
  }
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_ess_coda(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err)
{
  fly_stats_ws *tmp;
  double total = 0;
  fly_rc rc;
  if( ess ) *ess = NAN;
  rc = flys_begin("ess_coda", &ws, &tmp, x, ess, n_chains, n_iter, err);
  for( size_t c = 0; rc == FLY_OK && c < n_chains; c++ ){
    const double *xc = x + c * n_iter;
    double s;
    int o;
    rc = spec0(ws, xc, n_iter, &s, &o, err);
    if( rc != FLY_OK ) break;
    total += s == 0 ? 0 : (double)n_iter * var_r(xc, n_iter) / s;
  }
  if( rc == FLY_OK ) *ess = total;
  fly_stats_ws_free(tmp);
  return rc;
}
