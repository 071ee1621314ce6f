/*
 * ess.c -- effective sample size by Geyer's initial monotone sequence, and
 * the ESS and MCSE variants of Vehtari, Gelman, Simpson, Carpenter &
 * Buerkner (2021, Bayesian Analysis 16(2), sections 3.2 and 4.3), exactly as
 * posterior 1.4.0 defines them (.ess, ess_bulk, ess_tail, ess_quantile,
 * ess_basic/ess_mean, mcse_mean, mcse_quantile).
 *
 * .ess of m chains of h draws (h >= 3, else NA; NA also when a value is not
 * finite or max - min < DBL_EPSILON):
 *   acov[k]   mean over chains of the biased autocovariance (acf.c);
 *   W = acov[0] h/(h-1) (mean within-chain variance), var+ = W (h-1)/h,
 *   plus the variance of the chain means when m > 1;
 *   rho[k]    = 1 - (W - acov[k]) / var+;
 *   Geyer: sum the pairs P_t = rho[t] + rho[t+1] (t even) while P_t > 0 and
 *   t < h - 5, dropping a final negative pair; max_t is the last t tried,
 *   and rho[max_t] keeps that pair's even term if positive; then make the
 *   pairs monotone (a pair larger than its predecessor becomes the
 *   predecessor's value, split evenly);
 *   tau = -1 + 2 sum_{k<max_t} rho[k] + rho[max_t], where an empty sum
 *   (max_t = 0) is rho[0] = 1 as R's rho[1:0] reads it;
 *   tau >= 1/log10(m h), so ESS <= m h log10(m h);  ESS = m h / tau.
 * The lags are produced on demand: directly while few, then by one FFT for
 * the rest (see acf.c).  Cost O(m h) per lag needed, at most O(m h log h).
 *
 * ess_bulk  = .ess of the rank-normalised split chains (rank.c);
 * ess_basic = .ess of the (split) chains themselves (= ess_mean);
 * ess_quantile(p) = .ess of the split indicator chains I(x <= q_p), q_p the
 *   type-7 quantile of all draws (p = 1 is taken as (S - 1/2)/S);
 * ess_tail  = min(ess_quantile(0.05), ess_quantile(0.95));
 * mcse_mean = sd(x) / sqrt(ess_mean(x));
 * mcse_quantile(p) = (x(u) - x(l))/2 with x(.) the order statistics of all
 *   S draws, l = max(floor(a1 S), 1), u = min(ceil(a2 S), S), and a1, a2
 *   the 0.1586553 and 0.8413447 quantiles of Beta(ess p + 1, ess (1-p) + 1).
 */
#include <float.h>
#include <math.h>

#include "stats/stats_int.h"

typedef struct lags {      /* autocovariances computed so far */
  fly_stats_ws *ws;
  size_t m2, h;
  size_t have;             /* acov[0..have) are valid */
  size_t K;                /* direct up to here, then FFT */
} lags;

static fly_rc need(lags *l, size_t k, fly_err *err)
{
  const double *acov = l->ws->acov;
  while( k >= l->have ){
    /* direct while cheaper, unless the autocorrelation is still above 1/2
     * (then Geyer will need many times K lags: go to the FFT at once);
     * a forced crossover (tests) is obeyed as it is */
    if( l->have < l->K && !(l->ws->direct_lags == 0 && l->have >= 8
                            && acov[l->have - 1] > 0.5 * acov[0]) ){
      size_t k1 = l->have < 32 ? l->have + 8 : 2 * l->have;
      if( k1 > l->K ) k1 = l->K;
      if( k1 <= k ) k1 = k + 1 < l->K ? k + 1 : l->K;
      flys_acov_direct(l->ws->y, l->m2, l->h, l->have, k1, l->ws->acov);
      l->have = k1;
    }else{
      size_t k1 = flys_fft_lags(l->h, 8 * (k + 1));
      fly_rc rc = flys_acov_fft(l->ws, l->ws->y, l->m2, l->h, l->have, k1,
                                l->ws->acov, err);
      if( rc != FLY_OK ) return rc;
      l->have = k1;
    }
  }
  return FLY_OK;
}

/* Centre each chain of y in place (a constant chain to exact zeros), chain
 * means into cm.  Returns posterior's should_return_NA for all of y (a
 * non-finite value or max - min < DBL_EPSILON), checked in the same pass;
 * y is then left unchanged. */
static int centre(double *y, size_t m2, size_t h, double *cm)
{
  double lo = INFINITY, hi = -INFINITY;
  int nan = 0;
  for( size_t c = 0; c < m2; c++ ){
    double s, a, b;
    flys_sum_range(y + c*h, h, &s, &a, &b);
    cm[c] = s / (double)h;
    nan |= isnan(s);                     /* min/max skip NaN, sums don't */
    lo = a < lo ? a : lo;
    hi = b > hi ? b : hi;
  }
  if( nan || !isfinite(lo) || !isfinite(hi)
      || !(fabs(hi - lo) >= DBL_EPSILON) )
    return 1;
  for( size_t c = 0; c < m2; c++ ){
    double *yc = y + c*h, s = 0, mu = cm[c];
    size_t t = 1;
    while( t < h && yc[t] == yc[0] ) t++;
    if( t == h ){                        /* constant chain */
      cm[c] = yc[0];
      for( t = 0; t < h; t++ ) yc[t] = 0;
      continue;
    }
    for( t = 0; t < h; t++ ) s += yc[t] - mu;
    mu += s / (double)h;
    cm[c] = mu;
    for( t = 0; t < h; t++ ) yc[t] -= mu;
  }
  return 0;
}

fly_rc flys_ess(fly_stats_ws *ws, size_t m2, size_t h, double *ess,
                fly_err *err)
{
  double *acov = ws->acov, *rho = ws->rho, *cm = ws->cm;
  double mean_var, var_plus, rho_even, rho_odd, tau, bound, S;
  long double sum = 0;
  long t, max_t, hl = (long)h;
  lags l;
  fly_rc rc;

  *ess = NAN;
  if( h < 3 || centre(ws->y, m2, h, cm) ) return FLY_OK;
  l.ws = ws;
  l.m2 = m2;
  l.h = h;
  l.have = 0;
  l.K = flys_direct_lags(ws, m2, h);
  rc = need(&l, 1, err);
  if( rc != FLY_OK ) return rc;

  mean_var = acov[0] * (double)h / (double)(h - 1);
  var_plus = mean_var * (double)(h - 1) / (double)h;
  if( m2 > 1 ){
    double mm = 0, v = 0;
    for( size_t c = 0; c < m2; c++ ) mm += cm[c];
    mm /= (double)m2;
    for( size_t c = 0; c < m2; c++ ) v += (cm[c] - mm) * (cm[c] - mm);
    var_plus += v / (double)(m2 - 1);
  }

  t = 0;
  rho_even = 1;
  rho[0] = rho_even;
  rho_odd = 1 - (mean_var - acov[1]) / var_plus;
  rho[1] = rho_odd;
  while( t < hl - 5 && !isnan(rho_even + rho_odd)
         && rho_even + rho_odd > 0 ){
    t += 2;
    rc = need(&l, (size_t)t + 1, err);
    if( rc != FLY_OK ) return rc;
    rho_even = 1 - (mean_var - acov[t]) / var_plus;
    rho_odd = 1 - (mean_var - acov[t+1]) / var_plus;
    if( rho_even + rho_odd >= 0 ){
      rho[t] = rho_even;
      rho[t+1] = rho_odd;
    }else{
      rho[t] = rho[t+1] = 0;
    }
  }
  max_t = t;
  if( rho_even > 0 ) rho[max_t] = rho_even;

  t = 0;
  while( t <= max_t - 4 ){           /* initial monotone sequence */
    t += 2;
    if( rho[t] + rho[t+1] > rho[t-2] + rho[t-1] ){
      rho[t] = (rho[t-2] + rho[t-1]) / 2;
      rho[t+1] = rho[t];
    }
  }

  if( max_t == 0 ) sum = rho[0];
  for( t = 0; t < max_t; t++ ) sum += rho[t];
  tau = -1 + 2 * (double)sum + rho[max_t];
  S = (double)m2 * (double)h;
  bound = 1 / log10(S);
  if( tau < bound ) tau = bound;
  *ess = S / tau;
  return FLY_OK;
}

fly_rc flys_ess_quantile_sorted(fly_stats_ws *ws, size_t n_draws, size_t m2,
                                size_t h, double prob, double *ess,
                                fly_err *err)
{
  double q;
  size_t k = 0;
  if( prob == 1 ) prob = ((double)n_draws - 0.5) / (double)n_draws;
  q = flys_quantile_sorted(ws->xs, n_draws, prob);
  {                                    /* k = #{draws <= q} */
    size_t lo = 0, hi = n_draws;
    while( lo < hi ){
      size_t mid = lo + (hi - lo)/2;
      if( ws->xs[mid] <= q ) lo = mid + 1; else hi = mid;
    }
    k = lo;
  }
  for( size_t i = 0; i < n_draws; i++ ){
    uint32_t p = ws->xi[i];
    if( p != FLYS_DROP ) ws->y[p] = i < k ? 1 : 0;
  }
  return flys_ess(ws, m2, h, ess, err);
}

double flys_mcse_quantile_sorted(const double *s, size_t n, double prob,
                                 double ess)
{
  double a1, a2, lo, hi, S = (double)n;
  if( isnan(ess) ) return NAN;
  a1 = fly_stats_qbeta(0.1586553, ess * prob + 1, ess * (1 - prob) + 1);
  a2 = fly_stats_qbeta(0.8413447, ess * prob + 1, ess * (1 - prob) + 1);
  lo = floor(a1 * S);
  hi = ceil(a2 * S);
  if( lo < 1 ) lo = 1;
  if( hi > S ) hi = S;
  return (s[(size_t)hi - 1] - s[(size_t)lo - 1]) / 2;
}

fly_rc fly_stats_ess_bulk(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  fly_rc rc;
  if( ess ) *ess = NAN;
  rc = flys_begin("ess_bulk", &ws, &tmp, x, ess, n_chains, n_iter, err);
  if( rc != FLY_OK || flys_has_nan(x, N) ) goto done;
  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  flys_zscale(ws, ws->xs, ws->xi, N, m2 * h);
  rc = flys_ess(ws, m2, h, ess, err);
done:
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_ess_quantile(fly_stats_ws *ws, const double *x,
                              size_t n_chains, size_t n_iter, double prob,
                              double *ess, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  fly_rc rc;
  if( ess ) *ess = NAN;
  if( !(prob >= 0 && prob <= 1) )
    return fly_fail(err, FLY_RANGE, "ess_quantile: prob %g, want [0, 1]",
                    prob);
  rc = flys_begin("ess_quantile", &ws, &tmp, x, ess, n_chains, n_iter, err);
  if( rc != FLY_OK || flys_is_na(x, N) ) goto done;
  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  rc = flys_ess_quantile_sorted(ws, N, m2, h, prob, ess, err);
done:
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_ess_tail(fly_stats_ws *ws, const double *x, size_t n_chains,
                          size_t n_iter, double *ess, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  double e5, e95;
  fly_rc rc;
  if( ess ) *ess = NAN;
  rc = flys_begin("ess_tail", &ws, &tmp, x, ess, n_chains, n_iter, err);
  if( rc != FLY_OK || flys_is_na(x, N) ) goto done;
  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  rc = flys_ess_quantile_sorted(ws, N, m2, h, 0.05, &e5, err);
  if( rc == FLY_OK )
    rc = flys_ess_quantile_sorted(ws, N, m2, h, 0.95, &e95, err);
  if( rc == FLY_OK && !isnan(e5) && !isnan(e95) ) *ess = e5 < e95 ? e5 : e95;
done:
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_ess_basic(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, int split, double *ess,
                           fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2 = n_chains, h = n_iter;
  fly_rc rc;
  if( ess ) *ess = NAN;
  rc = flys_begin("ess_basic", &ws, &tmp, x, ess, n_chains, n_iter, err);
  if( rc != FLY_OK ) goto done;
  if( split ){
    h = flys_split_map(ws, n_chains, n_iter, &m2);
    flys_split_copy(ws, x, N);
  }else{
    for( size_t i = 0; i < N; i++ ) ws->y[i] = x[i];
  }
  rc = flys_ess(ws, m2, h, ess, err);
done:
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_mcse_mean(fly_stats_ws *ws, const double *x, size_t n_chains,
                           size_t n_iter, double *mcse, fly_err *err)
{
  double ess = NAN;
  fly_rc rc;
  if( mcse ) *mcse = NAN;
  rc = fly_stats_ess_basic(ws, x, n_chains, n_iter, 1, &ess, err);
  if( rc == FLY_OK )
    *mcse = fly_stats_sd(x, n_chains * n_iter) / sqrt(ess);
  return rc;
}

fly_rc fly_stats_mcse_quantile(fly_stats_ws *ws, const double *x,
                               size_t n_chains, size_t n_iter, double prob,
                               double *mcse, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  double ess;
  fly_rc rc;
  if( mcse ) *mcse = NAN;
  if( !(prob >= 0 && prob <= 1) )
    return fly_fail(err, FLY_RANGE, "mcse_quantile: prob %g, want [0, 1]",
                    prob);
  rc = flys_begin("mcse_quantile", &ws, &tmp, x, mcse, n_chains, n_iter, err);
  if( rc != FLY_OK || flys_is_na(x, N) ) goto done;
  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  rc = flys_ess_quantile_sorted(ws, N, m2, h, prob, &ess, err);
  if( rc == FLY_OK ) *mcse = flys_mcse_quantile_sorted(ws->xs, N, prob, ess);
done:
  fly_stats_ws_free(tmp);
  return rc;
}
