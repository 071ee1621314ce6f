/*
 * rhat.c -- potential scale reduction R-hat (Gelman & Rubin 1992; split
 * and rank-normalised by Vehtari, Gelman, Simpson, Carpenter & Buerkner
 * 2021, Bayesian Analysis 16(2), sections 3.1 and 4.1-4.2), as posterior
 * 1.4.0 defines .rhat, rhat_basic and rhat.
 *
 * .rhat of m chains of h values (NA when a value is not finite or
 * max - min < DBL_EPSILON, and when m < 2 or h < 2, where R's var() is NA):
 *   B = h var(chain means),  W = mean of the chain variances (h - 1
 *   denominators),  R-hat = sqrt((B/W + h - 1) / h).
 * All chains constant but at different values gives W = 0 and +Inf, as R.
 *
 * rhat_basic(split) = .rhat of the (split) chains;
 * rhat = max(bulk, tail), bulk = .rhat of the rank-normalised split chains,
 *   tail = .rhat of the rank-normalised split chains of the folded draws
 *   |x - median(x)| (median over all draws, taken before splitting).
 *   NA if either is NA.
 * Cost: one sort of the draws (sort.c); the folded draws come sorted by a
 * merge (describe.c), then O(m h).
 */
#include <float.h>
#include <math.h>

#include "stats/stats_int.h"

double flys_rhat(fly_stats_ws *ws, const double *y, size_t m2, size_t h)
{
  double *cm = ws->cm, mm = 0, vb = 0, vw = 0, lo = INFINITY, hi = -INFINITY;
  int nan = 0;
  if( m2 < 2 || h < 2 ) return NAN;
  for( size_t c = 0; c < m2; c++ ){      /* sums, and should_return_NA */
    double s, a, b;
    flys_sum_range(y + c*h, h, &s, &a, &b);
    cm[c] = s / (double)h;
    nan |= isnan(s);                     /* min/max skip NaN, sums don't */
    lo = a < lo ? a : lo;
    hi = b > hi ? b : hi;
  }
  if( nan || !isfinite(lo) || !isfinite(hi)
      || !(fabs(hi - lo) >= DBL_EPSILON) )
    return NAN;
  for( size_t c = 0; c < m2; c++ ){
    const double *yc = y + c*h;
    double s = 0, mu = cm[c], v = 0;
    for( size_t t = 0; t < h; t++ ) s += yc[t] - mu;
    mu += s / (double)h;
    for( size_t t = 0; t < h; t++ ) v += (yc[t] - mu) * (yc[t] - mu);
    vw += v / (double)(h - 1);
    cm[c] = mu;
    mm += mu;
  }
  mm /= (double)m2;
  for( size_t c = 0; c < m2; c++ ) vb += (cm[c] - mm) * (cm[c] - mm);
  vb = (double)h * (vb / (double)(m2 - 1));
  vw /= (double)m2;
  return sqrt((vb / vw + (double)h - 1) / (double)h);
}

fly_rc fly_stats_rhat_basic(fly_stats_ws *ws, const double *x,
                            size_t n_chains, size_t n_iter, int split,
                            double *rhat, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2 = n_chains, h = n_iter;
  fly_rc rc;
  if( rhat ) *rhat = NAN;
  rc = flys_begin("rhat_basic", &ws, &tmp, x, rhat, n_chains, n_iter, err);
  if( rc != FLY_OK ) goto done;
  if( split ){
    h = flys_split_map(ws, n_chains, n_iter, &m2);
    flys_split_copy(ws, x, N);
    *rhat = flys_rhat(ws, ws->y, m2, h);
  }else{
    *rhat = flys_rhat(ws, x, m2, h);
  }
done:
  fly_stats_ws_free(tmp);
  return rc;
}

fly_rc fly_stats_rhat(fly_stats_ws *ws, const double *x, size_t n_chains,
                      size_t n_iter, double *rhat, fly_err *err)
{
  fly_stats_ws *tmp;
  size_t N = n_chains * n_iter, m2, h;
  double bulk, tail;
  fly_rc rc;
  if( rhat ) *rhat = NAN;
  rc = flys_begin("rhat", &ws, &tmp, x, rhat, n_chains, n_iter, err);
  if( rc != FLY_OK || flys_has_nan(x, N) ) goto done;
  h = flys_split_map(ws, n_chains, n_iter, &m2);
  flys_sort(ws, x, N, ws->map);
  flys_zscale(ws, ws->xs, ws->xi, N, m2 * h);
  bulk = flys_rhat(ws, ws->y, m2, h);
  flys_fold_sorted(ws, N, flys_median_sorted(ws->xs, N));
  flys_zscale(ws, ws->fs, ws->fi, N, m2 * h);
  tail = flys_rhat(ws, ws->y, m2, h);
  if( !isnan(bulk) && !isnan(tail) ) *rhat = bulk > tail ? bulk : tail;
done:
  fly_stats_ws_free(tmp);
  return rc;
}
